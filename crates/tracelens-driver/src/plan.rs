//! Which TraceLens job runs on which trace, with which arguments.

use std::{
    collections::{BTreeMap, BTreeSet},
    ffi::OsString,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde::Serialize;
use trace_discover::{Discovery, RANK_REGEX, Trace, TraceKind};
use trace_report::{RankedRun, RunRule, Stems, numbers, report_stem, split_runs};

use crate::{
    summary::Row,
    tool::{Mode, Tool},
};

/// Everything a run needs. The CLI fills it from arguments and the
/// environment; this crate reads neither.
#[derive(Debug, Clone)]
pub struct Config {
    /// The run directory to analyze.
    pub root: PathBuf,
    /// Where reports, logs and the summaries go (excluded from discovery).
    pub output_dir: PathBuf,
    /// Which traces to analyze.
    pub mode: Mode,
    /// The interpreter that runs TraceLens (see [`crate::resolve_interpreter`]).
    pub python: PathBuf,
    /// `--gpu_arch_platform` for the PyTorch reports.
    pub gpu_arch: Option<String>,
    /// The collective report's world size; 0: the number of ranked traces.
    pub world_size: u32,
    /// Run the collective report on the ranks present when some of
    /// `0..world_size` are missing (each rank still once), rather than skip
    /// it: TraceLens is given the ranks present as a world of their number
    /// ([`RankedRun::missing`] says which were not). What the original
    /// madengine did, less its failure: TraceLens refuses a world with
    /// missing ranks.
    pub partial: bool,
    /// Analyze at most this many traces of each kind (0: all).
    pub max_traces: usize,
    /// Of each directory of torch.profiler's profiling cycles, analyze only
    /// the PyTorch traces of this one ([`trace_report::pick_cycle`]).
    pub cycle: Option<trace_report::CyclePick>,
    /// Jobs run at the same time (at least 1).
    pub jobs: usize,
    /// Memory the TraceLens jobs may take together, in bytes (the caller's
    /// available memory, say): fewer than [`Config::jobs`] run at once when
    /// the largest traces' jobs would not fit in it together, and
    /// [`crate::Event::FewerJobs`] says so. A job takes about
    /// [`crate::job_memory`]. `None`: no limit.
    pub memory_available: Option<u64>,
    /// A job running longer is killed (with the processes it started, as
    /// `/proc` shows them) and reported as a failure.
    pub timeout: Option<Duration>,
    /// Extra TraceLens arguments: each option goes to the tools that document
    /// it, an option none documents to every command (checked by [`run`](crate::run) before anything starts).
    pub extra_args: Vec<OsString>,
    /// Where the per-run scratch directory (sanitized copies, collective
    /// staging) is created; it is removed at the end of the run.
    pub scratch_parent: PathBuf,
    /// Read each PyTorch and rocprofv3 JSON trace with `trace-summary` first:
    /// one cut short is reported FAILURE, and a PyTorch trace that TraceLens
    /// would reject for having no linked GPU activity SKIPPED, without
    /// spending a TraceLens run on it.
    pub precheck: bool,
    /// Analyze a PyTorch or rocprofv3 JSON trace that was cut short (its
    /// writer killed part way, a gzip stream cut off) through a closed copy
    /// ([`trace_sanitize::salvage_file`]): the report then covers the events
    /// before the cut, and its row says so. To find out, every PyTorch and
    /// rocprofv3 JSON trace is copied once through the closer into the
    /// scratch directory (the copy is kept only when it differs). Without it
    /// a cut trace is a FAILURE row.
    pub salvage: bool,
    /// Set by the caller (a Ctrl-C handler) to stop the run: no job starts
    /// after it is raised, running ones are killed, the scratch directory is
    /// removed, and [`crate::run`] returns [`crate::Error::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Config {
    /// Whether the caller asked the run to stop.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::SeqCst))
    }
}

impl Config {
    /// Defaults as the original's: root `.`, output `tracelens_output`, mode
    /// auto, `python3`, one job per CPU up to 4 (`cpus`).
    pub fn new(
        root: impl Into<PathBuf>,
        scratch_parent: impl Into<PathBuf>,
        cpus: usize,
    ) -> Config {
        Config {
            root: root.into(),
            output_dir: PathBuf::from("tracelens_output"),
            mode: Mode::Auto,
            python: PathBuf::from("python3"),
            gpu_arch: None,
            world_size: 0,
            partial: false,
            max_traces: 0,
            cycle: None,
            jobs: cpus.clamp(1, 4),
            memory_available: None,
            timeout: None,
            extra_args: Vec::new(),
            scratch_parent: scratch_parent.into(),
            precheck: true,
            salvage: false,
            cancel: None,
        }
    }
}

/// One planned TraceLens job.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Job {
    /// The entry point.
    pub tool: Tool,
    /// `pytorch`, `rocprof_json` or `pftrace`.
    pub kind: TraceKind,
    /// The trace (for per-trace jobs), as discovered.
    #[serde(serialize_with = "trace_discover::lossy::option")]
    pub trace: Option<PathBuf>,
    /// What the summary names: the trace relative to the root, or
    /// `<k> per-rank traces` for a collective job.
    pub label: String,
    /// Output base: reports are `<out_base>.xlsx`, `<out_base>_csv`, ...
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub out_base: PathBuf,
    /// The name of its log: `logs/<log_name>`.
    pub log_name: String,
    /// For a collective job: the ranked traces and the world size.
    pub collective: Option<RankedRun>,
}

/// The jobs of a run, in the order the summary lists them.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Plan {
    /// Per-trace jobs (kinds alphabetically, traces sorted), then collective jobs.
    pub jobs: Vec<Job>,
    /// Rows for what will not run: unsupported artifacts, then collective skips.
    pub skipped: Vec<Row>,
    /// Traces found per kind (after [`Config::cycle`] and `max_traces`).
    pub discovered: BTreeMap<String, usize>,
    /// With [`Config::cycle`]: the cycle kept of each run of several.
    pub cycles: Vec<trace_report::Picked>,
    /// With [`Config::cycle`]: how many PyTorch traces of the other cycles
    /// were left out.
    pub other_cycles: usize,
}

impl Job {
    /// The arguments after the entry point, for a readable `input` (the trace
    /// or its sanitized copy; for a collective, the staging directory).
    pub fn args(&self, config: &Config, input: &Path) -> Vec<OsString> {
        let outputs = self
            .output_args()
            .into_iter()
            .flat_map(|(option, path)| [OsString::from(option), path.into_os_string()]);
        let mut args: Vec<OsString> = match self.tool {
            Tool::Pytorch => {
                let mut a: Vec<OsString> = vec!["--profile_json_path".into(), input.into()];
                a.extend(outputs);
                a.push("--enable_kernel_summary".into());
                if let Some(arch) = &config.gpu_arch {
                    a.extend(["--gpu_arch_platform".into(), arch.into()]);
                }
                a
            }
            Tool::Rocprof => ["--profile_json_path".into(), input.into()]
                .into_iter()
                .chain(outputs)
                .chain(["--kernel_details".into(), "--short_kernel_study".into()])
                .collect(),
            Tool::PftraceHipActivity | Tool::PftraceHipApi | Tool::PftraceMemoryCopy => {
                ["--trace_path".into(), input.into()].into_iter().chain(outputs).collect()
            }
            Tool::Collective => {
                let world = self.collective.as_ref().map_or(0, |c| c.world_size);
                let mut glob = input.as_os_str().to_owned();
                glob.push("/**/*.json*");
                let mut a: Vec<OsString> = vec![
                    "--trace_glob".into(),
                    glob,
                    "--rank_regex".into(),
                    RANK_REGEX.into(),
                    "--world_size".into(),
                    world.to_string().into(),
                ];
                a.extend(outputs);
                a.push("--use_multiprocessing".into());
                a
            }
            Tool::Compare => vec![],
        };
        args.extend(crate::extra::for_tool(&config.extra_args, self.tool));
        args
    }

    /// The files and directories its TraceLens command writes (the values of
    /// its `--output_*` options), the report ([`Job::main_output`]) among
    /// them.
    pub fn outputs(&self) -> Vec<PathBuf> {
        self.output_args().into_iter().map(|(_, path)| path).collect()
    }

    /// Each `--output_*` option of its command, with its path.
    fn output_args(&self) -> Vec<(&'static str, PathBuf)> {
        let with = |suffix: &str| -> PathBuf {
            let mut s = self.out_base.as_os_str().to_owned();
            s.push(suffix);
            s.into()
        };
        // The CSV directory is the report the summary names.
        let csv = ("--output_csvs_dir", self.main_output());
        match self.tool {
            Tool::Pytorch | Tool::Rocprof | Tool::Collective => {
                vec![("--output_xlsx_path", with(".xlsx")), csv]
            }
            Tool::PftraceHipActivity => vec![csv, ("--output_md_path", with("_activity.md"))],
            Tool::PftraceHipApi => vec![("--output_xlsx_path", with("_hip_api.xlsx")), csv],
            Tool::PftraceMemoryCopy => vec![("--output_xlsx_path", with("_memory_copy.xlsx")), csv],
            Tool::Compare => vec![],
        }
    }

    /// Whether its trace is a rocpd database, which TraceLens reads through
    /// the rocprofv3 JSON written for it.
    pub fn is_rocpd(&self) -> bool {
        self.trace.as_deref().is_some_and(trace_discover::is_rocpd)
    }

    /// What its row's `kind` says: the trace kind, or [`ROCPD`].
    pub fn row_kind(&self) -> &'static str {
        if self.is_rocpd() { ROCPD } else { self.kind.as_str() }
    }

    /// The report a successful job leaves (what the summary's `output` names).
    pub fn main_output(&self) -> PathBuf {
        let suffix = match self.tool {
            Tool::PftraceHipActivity => "_activity_csv",
            Tool::PftraceHipApi => "_hip_api_csv",
            Tool::PftraceMemoryCopy => "_memory_copy_csv",
            _ => "_csv",
        };
        let mut s = self.out_base.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    }
}

pub(crate) fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}

/// The kind a rocpd database's rows name (its job's [`Job::kind`] is
/// [`TraceKind::RocprofJson`]: the JSON TraceLens reads is rocprofv3's).
pub const ROCPD: &str = "rocpd";

/// Build the plan for `found` (already discovered with the output
/// directory excluded).
pub fn plan(config: &Config, found: &Discovery) -> Plan {
    let root = &config.root;
    let wanted: &[TraceKind] = match config.mode {
        Mode::Auto => &[TraceKind::Pftrace, TraceKind::Pytorch, TraceKind::RocprofJson],
        Mode::Pytorch | Mode::Collective => &[TraceKind::Pytorch],
        Mode::Rocprof => &[TraceKind::RocprofJson],
        Mode::Pftrace => &[TraceKind::Pftrace],
    };
    let mut by_kind: BTreeMap<&str, Vec<&Trace>> = BTreeMap::new();
    for kind in wanted {
        let mut traces: Vec<&Trace> = found.of_kind(*kind).collect();
        if config.max_traces > 0 {
            traces.truncate(config.max_traces);
        }
        by_kind.insert(kind.as_str(), traces);
    }
    let discovered = by_kind.iter().map(|(k, v)| (k.to_string(), v.len())).collect();

    let mut jobs = Vec::new();
    let mut stems = Stems::default();
    // Kinds in alphabetical order (pftrace, pytorch, rocprof_json), as the original.
    for (kind_name, traces) in &by_kind {
        for trace in traces {
            let rel = relative(root, &trace.path);
            let stem = stems.unique(&rel);
            let tools: &[Tool] = match trace.kind {
                TraceKind::Pytorch if config.mode == Mode::Collective => &[],
                TraceKind::Pytorch => &[Tool::Pytorch],
                TraceKind::RocprofJson => &[Tool::Rocprof],
                TraceKind::Pftrace => {
                    &[Tool::PftraceHipActivity, Tool::PftraceHipApi, Tool::PftraceMemoryCopy]
                }
            };
            for &tool in tools {
                jobs.push(Job {
                    tool,
                    kind: trace.kind,
                    trace: Some(trace.path.clone()),
                    label: rel.display().to_string(),
                    out_base: config.output_dir.join(&stem),
                    log_name: format!("{stem}.{}.log", tool.short()),
                    collective: None,
                });
            }
            let _ = kind_name;
        }
    }

    // rocpd databases: TraceLens reads none, but their rocprofv3 JSON
    // (written by `trace-summary` when the job runs) its rocprof report does.
    // One whose run also wrote that JSON is left to it.
    let mut databases = 0;
    let mut skipped = Vec::new();
    let rocprof_json = by_kind.get(TraceKind::RocprofJson.as_str()).cloned().unwrap_or_default();
    for u in &found.unsupported {
        let rel = relative(root, &u.path);
        let label = rel.display().to_string();
        if !trace_discover::is_rocpd(&u.path) || !matches!(config.mode, Mode::Auto | Mode::Rocprof)
        {
            skipped.push(Row::skipped(label, "unsupported", "", &u.reason));
            continue;
        }
        if let Some(twin) =
            rocprof_json.iter().find(|t| trace_discover::same_rocprof_output(&u.path, &t.path))
        {
            let twin = relative(root, &twin.path);
            let reason =
                format!("the same run's rocprofv3 JSON, {}, is reported instead", twin.display());
            skipped.push(Row::skipped(label, ROCPD, "", &reason));
            continue;
        }
        if config.max_traces > 0 && databases >= config.max_traces {
            continue;
        }
        databases += 1;
        let stem = stems.unique(&rel);
        jobs.push(Job {
            tool: Tool::Rocprof,
            kind: TraceKind::RocprofJson,
            trace: Some(u.path.clone()),
            label,
            out_base: config.output_dir.join(&stem),
            log_name: format!("{stem}.{}.log", Tool::Rocprof.short()),
            collective: None,
        });
    }
    let mut discovered: BTreeMap<String, usize> = discovered;
    if databases > 0 {
        discovered.insert(ROCPD.into(), databases);
    }

    if matches!(config.mode, Mode::Auto | Mode::Collective) {
        let pytorch = by_kind.get("pytorch").cloned().unwrap_or_default();
        let (groups, reasons) =
            collective_groups(root, &pytorch, config.world_size, config.partial);
        let several = groups.len() > 1;
        for group in groups {
            let mut name = if several && !group.dir.as_os_str().is_empty() {
                format!("multi_rank_collective_{}", report_stem(&group.dir))
            } else {
                "multi_rank_collective".to_string()
            };
            if let Some(cycle) = group.cycle {
                name.push_str(&format!("_cycle{}", cycle.number));
            }
            // Not a trace's report (of `multi_rank_collective.json`), which
            // the job would remove before it runs.
            let name = stems.unique(Path::new(&name));
            let traces = match group.missing.len() {
                0 => format!("{} per-rank traces", group.members.len()),
                missing => format!(
                    "{} of {} per-rank traces",
                    group.members.len(),
                    group.members.len() + missing
                ),
            };
            let mut label = if several && !group.dir.as_os_str().is_empty() {
                format!("{traces} in {}", group.dir.display())
            } else {
                traces
            };
            if let Some(cycle) = group.cycle {
                label.push_str(&format!(", {cycle}"));
            }
            jobs.push(Job {
                tool: Tool::Collective,
                kind: TraceKind::Pytorch,
                trace: None,
                label,
                out_base: config.output_dir.join(&name),
                log_name: format!("{name}.collective.log"),
                collective: Some(group),
            });
        }
        for (label, reason) in reasons {
            skipped.push(Row::skipped(label, "pytorch", Tool::Collective.script(), &reason));
        }
    }
    Plan { jobs, skipped, discovered, cycles: Vec::new(), other_cycles: 0 }
}

/// Split the ranked PyTorch traces into complete runs; the rest gets reasons.
fn collective_groups(
    root: &Path,
    pytorch: &[&Trace],
    world: u32,
    partial: bool,
) -> (Vec<RankedRun>, Vec<(String, String)>) {
    let n = pytorch.len();
    if n < 2 {
        return (vec![], vec![]);
    }
    let label = format!("{n} PyTorch traces");
    let ranked: Vec<(PathBuf, u32)> =
        pytorch.iter().filter_map(|t| Some((relative(root, &t.path), t.rank?.rank))).collect();
    let k = ranked.len();
    if k < 2 {
        return (
            vec![],
            vec![(
                label,
                format!(
                    "the collective report needs each trace's rank, from its filename or its distributedInfo, and only {k} of {n} carry one. Traces captured on demand through dynolog are named after the process id."
                ),
            )],
        );
    }
    if world == 1 {
        return (
            vec![],
            vec![(
                label,
                "the world size is 1, but a collective report needs at least 2 ranks.".into(),
            )],
        );
    }
    let rule = if partial { RunRule::Present { world } } else { RunRule::Complete { world } };
    let (mut groups, mut reasons) = split_runs(&ranked, rule);
    if !partial {
        // What runs it anyway.
        for (_, reason) in &mut reasons {
            if reason.contains("; missing ") && !reason.contains("beyond the world size") {
                reason.push_str(" (--partial runs it on the ranks present)");
            }
        }
    }
    if partial {
        for group in &mut groups {
            let present: BTreeSet<u32> = group.members.iter().map(|(r, _)| *r).collect();
            let expected = match world {
                0 => present.last().map_or(0, |r| r + 1),
                world => world,
            };
            group.missing = (0..expected).filter(|r| !present.contains(r)).collect();
            group.world_size = group.members.len() as u32;
        }
    }
    if k < n && !groups.is_empty() {
        // Say what was left out, but still run the complete groups.
        reasons.push((
            format!("{} PyTorch traces without a rank", n - k),
            format!("{} of {n} traces carry no rank (in their filename or distributedInfo) and are not part of any collective report", n - k),
        ));
    }
    (groups, reasons)
}

/// What a partial collective run ([`Config::partial`]) leaves out, as a
/// warning; `None` for a complete one.
pub(crate) fn partial_note(run: &RankedRun) -> Option<String> {
    if run.missing.is_empty() {
        return None;
    }
    let present = numbers(run.members.iter().map(|(r, _)| *r));
    let expected = run.members.len() + run.missing.len();
    let mut note = format!(
        "partial: ranks {} of {expected} have no trace; the collective report covers the {} ranks present ({present}) as a world of {}",
        numbers(run.missing.iter().copied()),
        run.members.len(),
        run.members.len(),
    );
    if run.renumbered() {
        note.push_str(&format!(
            ", so its ranks 0-{} are the traces' ranks {present}",
            run.members.len() - 1
        ));
    }
    note.push_str("; collectives that waited on a missing rank are measured from one side only");
    Some(note)
}

/// What a run found and the jobs it would start ([`crate::plan_only`]), as
/// one document (`report tracelens --discover-only --json`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Planned {
    /// [`crate::DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// Traces found per kind ([`Plan::discovered`]).
    pub discovered: BTreeMap<String, usize>,
    /// The jobs a run would start.
    pub jobs: Vec<Job>,
    /// Paths that could not be looked at.
    pub problems: Vec<trace_discover::Problem>,
    /// The root searched.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub root: PathBuf,
    /// Rows for what will not run.
    pub skipped: Vec<Row>,
    /// The traces found.
    pub traces: Vec<trace_discover::Trace>,
    /// The artifacts TraceLens cannot read.
    pub unsupported: Vec<trace_discover::Unsupported>,
}

impl Planned {
    /// `plan` of what was `found`.
    pub fn new(found: trace_discover::Discovery, plan: Plan) -> Planned {
        Planned {
            version: crate::DOCUMENT_VERSION,
            discovered: plan.discovered,
            jobs: plan.jobs,
            problems: found.problems,
            root: found.root,
            skipped: plan.skipped,
            traces: found.traces,
            unsupported: found.unsupported,
        }
    }
}
