//! Running a plan: sanitizing, staging, parallel jobs, outcomes, summaries.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    fs,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use trace_discover::TraceKind;

use crate::{
    Error, Result,
    cmd::{cmd, display},
    plan::{Config, Job, Plan, plan, relative},
    python::{Probe, probe},
    summary::{self, Cause, Durations, Repaired, Row, SUMMARY_CSV, SUMMARY_JSON, Status, Summary},
};

/// What TraceLens prints for a trace without GPU activity.
pub const NO_GPU_EVENTS: &str = "No GPU events found in the trace";

/// [`NO_GPU_DETAIL`] for a trace whose process saw no GPU at all (an empty
/// `deviceProperties` list): not the launcher, the whole run was on the CPU.
pub const NO_GPU_SEEN_DETAIL: &str = "the trace holds no GPU activity, and its process saw no GPU (its deviceProperties list is empty): the workload ran on the CPU. Check that the node's GPUs reach the workload: in a container, the devices passed in (ROCm: --device /dev/kfd --device /dev/dri; NVIDIA: --gpus), and HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES.";
/// The detail of a SKIPPED row for a trace without GPU activity.
pub const NO_GPU_DETAIL: &str = "the trace holds no GPU activity, so there is nothing to report. One common cause: dynolog configures every process that registered with it, which for a torchrun job includes the launcher, and the launcher only supervises its children and runs no kernels.";

/// The detail of a SKIPPED rocprof row for a rocprofv3 trace that recorded
/// no process.
pub const NO_ROCPROF_PROCESS_DETAIL: &str = "the rocprofv3 trace records no process (its rocprofiler-sdk-tool list is empty), so there is nothing to report: rocprofv3 ran, but recorded nothing. Check that the workload ran under it and dispatched GPU work (rocprofv3 --kernel-trace -- <command>).";

/// What TraceLens' collective report prints before it fails (`KeyError:
/// 'collective_id'`) on traces without NCCL/RCCL collective kernels.
pub(crate) const NO_COLLECTIVES: &str = "No NCCL collective events found";

/// The detail of a SKIPPED collective row for such traces.
pub(crate) const NO_COLLECTIVES_DETAIL: &str = "the traces hold no NCCL/RCCL collective kernels, so there is no collective to analyze (TraceLens: \"No NCCL collective events found\"). A gloo run has none: its collectives run on the CPU.";

/// Progress of a run, for a front end to show.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// Something worth telling the user (a sanitized copy, a skipped collective).
    Note(String),
    /// Fewer jobs run at once than [`Config::jobs`], so that the largest
    /// fit in [`Config::memory_available`] together.
    FewerJobs {
        /// Jobs at once.
        jobs: usize,
        /// What [`Config::jobs`] asked for (or the number of jobs, if fewer).
        wanted: usize,
        /// What the largest job takes, by [`job_memory`].
        largest: u64,
        /// [`Config::memory_available`].
        available: u64,
    },
    /// [`Config::cycle`] picked this profiling cycle of a directory that
    /// holds several.
    CyclePicked(&'a trace_report::Picked),
    /// [`Config::cycle`] left out this many PyTorch traces, of the other
    /// profiling cycles.
    OtherCycles(usize),
    /// The run's scratch directory was made (sanitized copies of traces,
    /// the collective report's staged inputs): it is removed when the run
    /// ends, however it ends, unless the process itself is killed or exits
    /// at once (a caller that exits on a second Ctrl-C removes it first).
    Scratch(&'a Path),
    /// The jobs are about to start.
    Planned {
        /// How many jobs will run.
        jobs: usize,
    },
    /// A job started.
    Started {
        /// Its index in the plan.
        index: usize,
        /// The job.
        job: &'a Job,
    },
    /// A job finished.
    Finished {
        /// Its index in the plan.
        index: usize,
        /// Its row.
        row: &'a Row,
        /// Jobs finished so far.
        done: usize,
        /// All jobs.
        total: usize,
    },
}

/// Discover, plan, run TraceLens and write the summaries.
///
/// Fails before anything runs when the output directory is or holds the
/// root ([`Error::HoldsRun`]), the root is missing, the interpreter
/// cannot run, TraceLens is missing or `gpu_arch` is unknown. Job failures
/// are rows, not errors. Summaries left by an earlier run are removed first;
/// the new ones are written atomically at the end. Each job's report (its
/// [`Job::outputs`]) left by an earlier run is removed just before the job
/// runs, so it holds only what this run wrote, and what a job stopped part
/// way (cancelled) wrote is removed. The scratch directory is removed on
/// every path out.
pub fn run(config: &Config, events: &mut dyn FnMut(Event<'_>)) -> Result<Summary> {
    let started = Instant::now();
    trace_report::check_not_searched(&config.output_dir, &[&config.root])?;
    let unknown = crate::extra::check_extra_args(&config.extra_args)?;
    if !config.root.is_dir() {
        // Let discovery produce the error that names the root as given.
        trace_discover::discover(&config.root, &Default::default())?;
    }
    let config = &absolute_config(config);
    // A --cycle the traces do not hold is refused before anything is removed.
    let mut found = discover(config)?;
    let (other_cycles, cycles) = leave_other_cycles(config, &mut found)?;
    let discovery_s = started.elapsed().as_secs_f64();
    // Whatever happens next, an earlier run's summary must not be read as this one's.
    summary::remove_stale(&config.output_dir)?;
    let probe = probe(&config.python)?;
    let tracelens = probe.require_tracelens()?.clone();
    if let Some(arch) = &config.gpu_arch {
        probe.check_arch(arch)?;
    }
    fs::create_dir_all(config.output_dir.join("logs"))
        .map_err(|source| Error::Write { path: config.output_dir.join("logs"), source })?;

    let plan = Plan { cycles, other_cycles, ..plan(config, &found) };
    for picked in &plan.cycles {
        events(Event::CyclePicked(picked));
    }
    if plan.other_cycles > 0 {
        events(Event::OtherCycles(plan.other_cycles));
    }
    for option in unknown {
        events(Event::Note(format!(
            "{option} is not an option TraceLens documents for any report tool; it goes to every command"
        )));
    }
    let planned: Vec<crate::Tool> = plan.jobs.iter().map(|j| j.tool).collect();
    for (option, takers) in crate::extra::unused(&config.extra_args, &planned) {
        events(Event::Note(format!(
            "{option} goes to no job of this run: only the {} report(s) take it",
            takers.join("/")
        )));
    }

    let scratch = tempfile::Builder::new()
        .prefix("madengine-tracelens-")
        .tempdir_in(&config.scratch_parent)
        .map_err(|source| Error::Write { path: config.scratch_parent.clone(), source })?;
    events(Event::Scratch(scratch.path()));

    let sanitize_start = Instant::now();
    let Readable { inputs: readable, repairs, unstaged } =
        readable_inputs(config, &plan, scratch.path(), events);
    let mut inputs: Vec<Option<PathBuf>> = plan
        .jobs
        .iter()
        .map(|j| j.trace.as_ref().map(|t| readable.get(t).unwrap_or(t).clone()))
        .collect();
    let sanitize_s = sanitize_start.elapsed().as_secs_f64();
    let interrupted = |rows: &[Option<Row>]| Error::Interrupted {
        finished: rows
            .iter()
            .flatten()
            .filter(|r| matches!(r.status, Status::Success | Status::Skipped))
            .count(),
        total: plan.jobs.len(),
        output_dir: absolute(&config.output_dir),
    };

    let jobs_start = Instant::now();
    events(Event::Planned { jobs: plan.jobs.len() });
    for job in &plan.jobs {
        if let Some(note) = job.collective.as_ref().and_then(crate::plan::partial_note) {
            events(Event::Note(format!("{}: {note}", job.label)));
        }
    }
    let mut rows: Vec<Option<Row>> = vec![None; plan.jobs.len()];
    let done = AtomicUsize::new(0);
    let mut per_trace = Vec::new();
    for i in (0..plan.jobs.len()).filter(|&i| plan.jobs[i].collective.is_none()) {
        let job = &plan.jobs[i];
        match job.trace.as_ref().and_then(|t| unstaged.get(t)) {
            Some(detail) => {
                let log = config.output_dir.join("logs").join(&job.log_name);
                let text = format!("madengine: {detail}\n");
                let row = not_run_row(
                    job,
                    &log,
                    Instant::now(),
                    (Status::Failure, Cause::Other),
                    detail.clone(),
                    text,
                );
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                events(Event::Finished { index: i, row: &row, done: n, total: plan.jobs.len() });
                rows[i] = Some(row);
            }
            None => per_trace.push(i),
        }
    }
    let collective: Vec<usize> =
        (0..plan.jobs.len()).filter(|&i| plan.jobs[i].collective.is_some()).collect();
    for (k, wave) in waves(&plan, &per_trace).iter().enumerate() {
        if k > 0 {
            converted_once(&plan, wave, &rows, &mut inputs, scratch.path());
        }
        let jobs = jobs_at_once(config, &plan, wave, events);
        run_parallel(config, jobs, &probe, &plan, wave, &inputs, &mut rows, &done, events);
        if config.cancelled() {
            // `scratch` is dropped on the way out: the sanitized copies go too.
            return Err(interrupted(&rows));
        }
    }

    // Collectives run after the per-rank reports they depend on.
    let mut ready = Vec::new();
    let mut staged = inputs.clone();
    for &i in &collective {
        match collective_inputs(config, &plan, i, &rows, &readable, scratch.path()) {
            Collective::Staged(dir) => {
                staged[i] = Some(dir);
                ready.push(i);
            }
            Collective::NotRun(row) => {
                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                events(Event::Finished { index: i, row: &row, done: n, total: plan.jobs.len() });
                rows[i] = Some(row);
            }
        }
    }
    let jobs = jobs_at_once(config, &plan, &ready, events);
    run_parallel(config, jobs, &probe, &plan, &ready, &staged, &mut rows, &done, events);
    if config.cancelled() {
        return Err(interrupted(&rows));
    }
    let jobs_s = jobs_start.elapsed().as_secs_f64();

    let mut results: Vec<Row> = rows.into_iter().map(|r| r.expect("every job has a row")).collect();
    note_salvaged(&mut results, &plan, config, &repairs);
    note_partial(&mut results, &plan);
    results.extend(plan.skipped.iter().cloned());
    for row in &plan.skipped {
        if row.tracelens_tool == crate::Tool::Collective.script() {
            events(Event::Note(format!("skipping the collective report: {}", row.detail)));
        } else {
            events(Event::Note(format!("skipping {}: {}", row.trace_file, row.detail)));
        }
    }
    drop(scratch);

    let root = absolute(&config.root);
    let output_dir = absolute(&config.output_dir);
    let summary = Summary {
        summary_csv: output_dir.join(SUMMARY_CSV),
        root,
        output_dir: output_dir.clone(),
        mode: config.mode.as_str().into(),
        python: config.python.clone(),
        tracelens_version: tracelens.version,
        discovered: plan.discovered.clone(),
        counts: summary::count(&results),
        results,
        repairs,
        problems: found.problems,
        durations: Durations {
            discovery_s,
            sanitize_s,
            jobs_s,
            total_s: started.elapsed().as_secs_f64(),
        },
    };
    summary::write_csv(&output_dir.join(SUMMARY_CSV), &summary.results)?;
    summary::write_json(&output_dir.join(SUMMARY_JSON), &summary)?;
    Ok(summary)
}

/// What becomes of a collective job once its per-rank reports have run.
enum Collective {
    /// Its traces are staged in this directory: run it.
    Staged(PathBuf),
    /// Not run, and this row says why.
    NotRun(Row),
}

/// Stage collective job `i`'s traces, unless a member trace was cut short
/// (TraceLens cannot parse it) or every member was skipped.
fn collective_inputs(
    config: &Config,
    plan: &Plan,
    i: usize,
    rows: &[Option<Row>],
    readable: &BTreeMap<PathBuf, PathBuf>,
    scratch: &Path,
) -> Collective {
    let job = &plan.jobs[i];
    let group = job.collective.as_ref().expect("a collective job");
    let members: Vec<&Row> = plan
        .jobs
        .iter()
        .zip(rows)
        .filter(|(j, _)| {
            j.tool == crate::Tool::Pytorch
                && j.trace
                    .as_ref()
                    .is_some_and(|t| group.members.iter().any(|(_, m)| config.root.join(m) == *t))
        })
        .filter_map(|(_, r)| r.as_ref())
        .collect();
    let not_run = |status, detail: String| Row {
        status,
        ..Row::skipped(job.label.clone(), "pytorch", job.tool.script(), &detail)
    };
    let unparseable: Vec<&str> = members
        .iter()
        .filter(|r| matches!(r.cause, Cause::Unparseable { .. }))
        .map(|r| r.trace_file.as_str())
        .collect();
    if !unparseable.is_empty() {
        return Collective::NotRun(not_run(
            Status::Failure,
            format!(
                "not run: TraceLens cannot parse per-rank trace(s) ({})",
                unparseable.join(", ")
            ),
        ));
    }
    // Decided on what the collective report reads (each rank's NCCL/RCCL
    // kernels), not on the per-rank reports: TraceLens refuses those of an
    // event-sampled trace whose collectives it still matches. Where a
    // member was not read (no precheck), TraceLens decides.
    if members.len() == group.members.len()
        && members.iter().all(|r| r.collective_kernels == Some(0))
    {
        return Collective::NotRun(not_run(Status::Skipped, NO_COLLECTIVES_DETAIL.into()));
    }
    match stage_collective(config, job, readable, scratch, i) {
        Ok(dir) => Collective::Staged(dir),
        Err(e) => {
            Collective::NotRun(not_run(Status::Failure, format!("could not stage the traces: {e}")))
        }
    }
}

/// Rows of traces analyzed through a closed copy say so: their reports cover
/// only the events before the cut.
fn note_salvaged(results: &mut [Row], plan: &Plan, config: &Config, repairs: &[Repaired]) {
    // Each cut, and whether it was a last string that never ends.
    let cut: BTreeMap<&str, (&trace_sanitize::Cut, bool)> = repairs
        .iter()
        .filter_map(|r| {
            let cut = r.report.cut.as_ref()?;
            Some((r.trace_file.as_str(), (cut, r.report.unclosed_string)))
        })
        .collect();
    if cut.is_empty() {
        return;
    }
    for (row, job) in results.iter_mut().zip(&plan.jobs) {
        let mut traces: Vec<String> =
            job.trace.iter().map(|t| relative(&config.root, t).display().to_string()).collect();
        if let Some(group) = &job.collective {
            traces.extend(group.members.iter().map(|(_, m)| m.display().to_string()));
        }
        let cuts: Vec<(&String, (&trace_sanitize::Cut, bool))> =
            traces.iter().filter_map(|t| cut.get(t.as_str()).map(|c| (t, *c))).collect();
        if cuts.is_empty() {
            continue;
        }
        let salvaged: Vec<String> = cuts
            .iter()
            .map(|(t, (c, unclosed))| format!("{t} {}", what_was_cut(c, *unclosed)))
            .collect();
        let covers = if cuts.iter().any(|(_, (c, _))| c.kind == trace_sanitize::CutKind::CutShort) {
            "the events before the cut"
        } else {
            "the whole JSON document"
        };
        let note = format!("salvaged ({}): the report covers {covers}", salvaged.join("; "));
        row.detail = if row.detail.is_empty() { note } else { format!("{note}; {}", row.detail) };
    }
}

/// The row of each partial collective run ([`Config::partial`]) says what
/// it leaves out.
fn note_partial(results: &mut [Row], plan: &Plan) {
    for (row, job) in results.iter_mut().zip(&plan.jobs) {
        if let Some(note) = job.collective.as_ref().and_then(crate::plan::partial_note) {
            row.detail =
                if row.detail.is_empty() { note } else { format!("{note}; {}", row.detail) };
        }
    }
}

/// What a salvaged copy left out, after the trace's name; `unclosed`: the
/// trace's last string never ends.
fn what_was_cut(cut: &trace_sanitize::Cut, unclosed: bool) -> String {
    match cut.kind {
        trace_sanitize::CutKind::CutShort if unclosed => {
            "cut before its last string, which never ends".to_string()
        }
        trace_sanitize::CutKind::CutShort => format!("cut short after byte {}", cut.at),
        trace_sanitize::CutKind::DataAfterEnd => {
            format!("with {} bytes of data after the end of its JSON document", cut.dropped)
        }
    }
}

/// Discovery with the output directory excluded.
pub fn discover(config: &Config) -> Result<trace_discover::Discovery> {
    let options =
        trace_discover::Options { exclude: vec![config.output_dir.clone()], ..Default::default() };
    Ok(trace_discover::discover(&config.root, &options)?)
}

/// The plan without running anything (no TraceLens needed).
pub fn plan_only(config: &Config) -> Result<(trace_discover::Discovery, Plan)> {
    trace_report::check_not_searched(&config.output_dir, &[&config.root])?;
    crate::extra::check_extra_args(&config.extra_args)?;
    let mut found = discover(config)?;
    let (other_cycles, cycles) = leave_other_cycles(config, &mut found)?;
    let plan = Plan { cycles, other_cycles, ..plan(config, &found) };
    Ok((found, plan))
}

/// With [`Config::cycle`], leave out of `found` the PyTorch traces of the
/// other profiling cycles ([`trace_report::keep_cycle`]): how many, and which
/// cycle each directory of several kept.
fn leave_other_cycles(
    config: &Config,
    found: &mut trace_discover::Discovery,
) -> Result<(usize, Vec<trace_report::Picked>)> {
    let Some(pick) = config.cycle else { return Ok((0, Vec::new())) };
    let entries: Vec<Option<(PathBuf, Option<u32>)>> = found
        .traces
        .iter()
        .map(|t| (t.kind == TraceKind::Pytorch).then(|| (t.path.clone(), t.rank.map(|r| r.rank))))
        .collect();
    let (keep, picked) = trace_report::keep_cycle(&entries, pick)?;
    let before = found.traces.len();
    let mut keep = keep.into_iter();
    found.traces.retain(|_| keep.next().unwrap_or(true));
    Ok((before - found.traces.len(), picked))
}

/// The same config with absolute root and output paths, so every argument
/// TraceLens gets is absolute, whatever its working directory.
fn absolute_config(config: &Config) -> Config {
    Config {
        root: absolute(&config.root),
        output_dir: absolute(&config.output_dir),
        ..config.clone()
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn digest(path: &Path) -> String {
    let abs = absolute(path);
    let hex = sha1_smol::Sha1::from(abs.as_os_str().as_encoded_bytes()).digest().to_string();
    hex[..12].to_string()
}

/// What TraceLens reads of a run's traces.
struct Readable {
    /// For each trace a job reads (collective members included), the file
    /// TraceLens should read: the trace, a sanitized copy in
    /// `<scratch>/<digest>/<basename>` when strict parsers would reject it,
    /// or a Perfetto trace's staged copy ([`staged_pftrace`]).
    inputs: BTreeMap<PathBuf, PathBuf>,
    /// The repairs made in sanitized copies.
    repairs: Vec<Repaired>,
    /// Perfetto traces that could not be staged, and why: their reports
    /// are not run, as TraceLens would write its conversion beside them.
    unstaged: BTreeMap<PathBuf, String>,
}

fn readable_inputs(
    config: &Config,
    plan: &Plan,
    scratch: &Path,
    events: &mut dyn FnMut(Event<'_>),
) -> Readable {
    let mut repairs = Vec::new();
    let mut readable = BTreeMap::new();
    let mut unstaged = BTreeMap::new();
    let traces = plan.jobs.iter().flat_map(|job| {
        let members = job
            .collective
            .iter()
            .flat_map(|c| c.members.iter().map(|(_, m)| (config.root.join(m), TraceKind::Pytorch)));
        job.trace.clone().map(|t| (t, job.kind)).into_iter().chain(members)
    });
    for (trace, kind) in traces.collect::<Vec<_>>() {
        if config.cancelled() {
            break;
        }
        if readable.contains_key(&trace) {
            continue;
        }
        let input = if trace_discover::is_rocpd(&trace) {
            // Written when its job runs (`converted`).
            converted_path(&trace, scratch)
        } else if matches!(kind, TraceKind::Pytorch | TraceKind::RocprofJson) {
            sanitized(config, &trace, scratch, events, &mut repairs)
        } else if kind == TraceKind::Pftrace && trace.extension().is_some_and(|e| e == "gz") {
            decompressed(config, &trace, scratch, events)
        } else if kind == TraceKind::Pftrace {
            match staged_pftrace(&trace, scratch) {
                Ok(staged) => staged,
                Err(e) => {
                    unstaged.insert(
                        trace.clone(),
                        format!(
                            "cannot stage a copy of it in the scratch directory ({e}): TraceLens' \
                             pftrace reports write their JSON conversion (and a downloaded \
                             traceconv) beside the trace they read, so they were not run on it"
                        ),
                    );
                    trace.clone()
                }
            }
        } else {
            trace.clone()
        };
        readable.insert(trace, input);
    }
    Readable { inputs: readable, repairs, unstaged }
}

/// A Perfetto trace as TraceLens' pftrace reports should read it: a hard
/// link in `<scratch>/<digest>/` (a copy where the scratch directory is on
/// another file system). Each report converts its input to `<stem>.json`
/// beside it, with the path resolved first (a symbolic link would lead it
/// back to the run directory), and downloads `traceconv` there when it finds
/// none: the run directory must not gain those files, nor three reports
/// write the same one at once.
fn staged_pftrace(trace: &Path, scratch: &Path) -> std::io::Result<PathBuf> {
    let dir = scratch.join(digest(trace));
    let staged = dir.join(trace.file_name().unwrap_or_default());
    fs::create_dir_all(&dir)?;
    let real = fs::canonicalize(trace)?;
    if fs::hard_link(&real, &staged).is_err() {
        fs::copy(&real, &staged)?;
    }
    Ok(staged)
}

/// The per-trace jobs in the waves they run in: every job in the first,
/// but the second and third reports of a Perfetto trace, which run in the
/// second and third wave ([`converted_once`]).
fn waves(plan: &Plan, per_trace: &[usize]) -> Vec<Vec<usize>> {
    let mut waves: Vec<Vec<usize>> = vec![Vec::new()];
    let mut seen: BTreeMap<&Path, usize> = BTreeMap::new();
    for &i in per_trace {
        let job = &plan.jobs[i];
        let wave = match (&job.trace, job.kind) {
            (Some(trace), TraceKind::Pftrace) => {
                let n = seen.entry(trace).or_insert(0);
                *n += 1;
                *n - 1
            }
            _ => 0,
        };
        if waves.len() <= wave {
            waves.resize(wave + 1, Vec::new());
        }
        waves[wave].push(i);
    }
    waves
}

/// Before a later wave: a Perfetto trace's next report reads the JSON an
/// earlier one converted its staged copy to (TraceLens reads a `.json` as
/// it is), so the conversion runs once per trace, not once per report.
fn converted_once(
    plan: &Plan,
    wave: &[usize],
    rows: &[Option<Row>],
    inputs: &mut [Option<PathBuf>],
    scratch: &Path,
) {
    for &i in wave {
        let job = &plan.jobs[i];
        let Some(staged) = inputs[i].clone().filter(|p| p.starts_with(scratch)) else { continue };
        let converted_ok = plan.jobs.iter().zip(rows).any(|(other, row)| {
            other.trace == job.trace
                && other.kind == TraceKind::Pftrace
                && row.as_ref().is_some_and(|r| r.status == Status::Success)
        });
        let json = staged.with_extension("json");
        if converted_ok && staged.extension().is_some_and(|e| e == "pftrace") && json.is_file() {
            inputs[i] = Some(json);
        }
    }
}

/// A gzipped Perfetto trace, decompressed into `<scratch>/<digest>/` under
/// its name without `.gz`: TraceLens' pftrace reports convert only a
/// `.pftrace` with `traceconv` (any other name they read as JSON). A trace
/// that cannot be decompressed is left as it is, with a note that says why.
fn decompressed(
    config: &Config,
    trace: &Path,
    scratch: &Path,
    events: &mut dyn FnMut(Event<'_>),
) -> PathBuf {
    let dir = scratch.join(digest(trace));
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    let copy = dir.join(name.strip_suffix(".gz").unwrap_or(&name));
    let written = fs::create_dir_all(&dir).and_then(|()| {
        let mut gz = flate2::read::MultiGzDecoder::new(BufReader::new(fs::File::open(trace)?));
        trace_sanitize::write_atomic(&copy, |out| std::io::copy(&mut gz, out).map(drop))
    });
    match written {
        Ok(()) => copy,
        Err(e) => {
            let rel = relative(&config.root, trace);
            events(Event::Note(format!(
                "cannot decompress {}: {e}; TraceLens' pftrace reports read it as it is",
                rel.display()
            )));
            trace.to_path_buf()
        }
    }
}

/// Where the rocprofv3 JSON of the rocpd database `db` is written:
/// `<scratch>/<digest>/<pid>_results.json`.
fn converted_path(db: &Path, scratch: &Path) -> PathBuf {
    scratch.join(digest(db)).join(trace_discover::rocprof_json_name(db))
}

/// Write the rocprofv3 JSON of the rocpd database `db` at `json`, which
/// TraceLens' rocprof report then reads: what was written, for the log; a
/// row saying why when it cannot be.
fn convert(
    config: &Config,
    job: &Job,
    db: &Path,
    json: &Path,
    log: &Path,
) -> Result<String, Box<Row>> {
    let started = Instant::now();
    let written = json
        .parent()
        .map_or(Ok(()), fs::create_dir_all)
        .map_err(|source| trace_summary::Error::Write { path: json.to_path_buf(), source })
        .and_then(|()| trace_summary::rocpd_to_json(db, json, config.cancel.as_deref()));
    let error = match written {
        Ok(converted) => {
            return Ok(format!(
                "madengine: wrote {} as rocprofv3 JSON ({} kernel dispatches, {} memory copies) \
                 to {} in {:.3} s\n",
                db.display(),
                converted.kernels,
                converted.copies,
                json.display(),
                started.elapsed().as_secs_f64()
            ));
        }
        Err(e) => e,
    };
    let cancelled = matches!(error, trace_summary::Error::Cancelled { .. });
    let detail = match &error {
        trace_summary::Error::Database { source, .. } => {
            format!("not a readable rocpd database: {source}; TraceLens was not run")
        }
        other => format!("{}; TraceLens was not run", trace_summary::one_line(other)),
    };
    let cause = if cancelled { Cause::Interrupted } else { Cause::Other };
    Err(Box::new(not_run_row(
        job,
        log,
        started,
        (Status::Failure, cause),
        detail.clone(),
        format!("madengine: {detail}\n"),
    )))
}

/// The file TraceLens should read for `trace`: a repaired copy when strict
/// parsers would reject it; with [`Config::salvage`] also a closed copy of
/// a trace cut short (which shows only at its end, so every trace is copied
/// through the closer and the copy kept only when it differs).
fn sanitized(
    config: &Config,
    trace: &Path,
    scratch: &Path,
    events: &mut dyn FnMut(Event<'_>),
    repairs: &mut Vec<Repaired>,
) -> PathBuf {
    let options = trace_sanitize::Options { cancel: config.cancel.clone(), ..Default::default() };
    if !config.salvage {
        let first = trace_sanitize::Options { stop_at_first: true, ..options.clone() };
        match trace_sanitize::check_file(trace, &first, &mut |_, _| {}) {
            Ok(r) if !r.report.needs_repair() => {
                return named_for_tracelens(config, trace, r.compression, scratch, events);
            }
            Ok(_) => {}
            // Unreadable here: TraceLens will say why in its own row.
            Err(_) => return trace.to_path_buf(),
        }
    }
    let write =
        if config.salvage { trace_sanitize::salvage_file } else { trace_sanitize::sanitize_file };
    let dir = scratch.join(digest(trace));
    // Gzipped when its name ends with `.gz`, so what TraceLens' suffix rule
    // needs is a name that ends with `json` before it.
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    let copy = dir.join(tracelens_name(&name, name.ends_with(".gz")).unwrap_or(name.into_owned()));
    let result = fs::create_dir_all(&dir)
        .map_err(|source| trace_sanitize::Error::WriteFile { path: dir.clone(), source })
        .and_then(|()| write(trace, &copy, &options, &mut |_, _| {}));
    let rel = relative(&config.root, trace).display().to_string();
    // A plain copy keeps everything: its report's cut is only how a
    // salvage would close it (and TraceLens will not parse it: the
    // precheck says why).
    let result = result.map(|mut copy| {
        if !config.salvage {
            copy.report.cut = None;
        }
        copy
    });
    match result {
        // Salvaging a complete, clean trace: the original will do.
        Ok(report) if report.report.cut.is_none() && !report.report.needs_repair() => {
            let _ = fs::remove_dir_all(&dir);
            named_for_tracelens(config, trace, report.compression, scratch, events)
        }
        Ok(report) => {
            events(Event::Note(match &report.report.cut {
                Some(cut) if cut.kind == trace_sanitize::CutKind::DataAfterEnd => format!(
                    "{rel} has data after the end of its JSON document: analyzing a copy without its last {} bytes",
                    cut.dropped
                ),
                Some(cut) if report.report.unclosed_string => format!(
                    "{rel}: {} ({}): analyzing a closed copy, without its last {} bytes",
                    trace_sanitize::Report::UNCLOSED_STRING,
                    trace_sanitize::Malformed::LIKELY,
                    cut.dropped
                ),
                Some(cut) => format!(
                    "{rel} was cut short after byte {}: analyzing a closed copy, without its last {} bytes (an incomplete event)",
                    cut.at, cut.dropped
                ),
                None => format!(
                    "{rel} would be rejected by TraceLens' strict JSON parser ({}); analyzing a sanitized copy",
                    report.report.counts
                ),
            }));
            repairs.push(Repaired { trace_file: rel, report: report.report });
            copy
        }
        // Stopped by the caller: the run ends before any job reads it.
        Err(trace_sanitize::Error::CancelledFile { .. }) => trace.to_path_buf(),
        Err(e) => {
            let _ = fs::remove_dir_all(&dir);
            let what = if config.salvage { "salvage" } else { "sanitize" };
            events(Event::Note(format!("could not {what} {rel}: {e}; analyzing the original")));
            trace.to_path_buf()
        }
    }
}

/// The name TraceLens reads a trace of this content (`gzip`) by, where the
/// file name `name` is not one: its loader goes by the suffix alone
/// (`json.gz`: gzip; `json`: plain; any other refused as an unknown file
/// type), where madengine reads what the bytes are. `None` when `name` fits.
///
/// ```
/// use tracelens_driver::tracelens_name;
/// assert_eq!(tracelens_name("rank0.json", true).as_deref(), Some("rank0.json.gz"));
/// assert_eq!(tracelens_name("rank0.json.gz", false).as_deref(), Some("rank0.json"));
/// assert_eq!(tracelens_name("rank0.trace", false).as_deref(), Some("rank0.trace.json"));
/// assert_eq!(tracelens_name("rank0.json.gz", true), None);
/// ```
pub fn tracelens_name(name: &str, gzip: bool) -> Option<String> {
    let fits = if gzip { name.ends_with("json.gz") } else { name.ends_with("json") };
    if fits {
        return None;
    }
    let base = name.strip_suffix(".gz").unwrap_or(name);
    let base = if base.ends_with("json") { base.to_string() } else { format!("{base}.json") };
    Some(if gzip { format!("{base}.gz") } else { base })
}

/// A clean trace as TraceLens should read it: the trace itself, or where
/// its name misleads TraceLens' loader (a gzipped `.json`, a plain
/// `.json.gz`: a download that was decompressed on the way keeps its
/// `.gz`), a link to it in `<scratch>/<digest>/` under the name that fits,
/// with a note that says so.
fn named_for_tracelens(
    config: &Config,
    trace: &Path,
    compression: trace_sanitize::Compression,
    scratch: &Path,
    events: &mut dyn FnMut(Event<'_>),
) -> PathBuf {
    let gzip = compression == trace_sanitize::Compression::Gzip;
    let name = trace.file_name().unwrap_or_default().to_string_lossy();
    let Some(fitting) = tracelens_name(&name, gzip) else { return trace.to_path_buf() };
    let dir = scratch.join(digest(trace));
    let link = dir.join(&fitting);
    let rel = relative(&config.root, trace);
    let what = match (gzip, name.ends_with(".gz")) {
        (true, _) => "is gzip-compressed",
        (false, true) => "is not gzip-compressed",
        (false, false) => "is JSON",
    };
    let linked = fs::create_dir_all(&dir).and_then(|()| link_or_copy(&absolute(trace), &link));
    match linked {
        Ok(()) => {
            events(Event::Note(format!(
                "{} {what}, but TraceLens goes by the name (.json: plain JSON, .json.gz: gzip): \
                 analyzing it as {fitting}",
                rel.display()
            )));
            link
        }
        Err(e) => {
            events(Event::Note(format!(
                "{} {what}, but TraceLens goes by the name, and it cannot be linked as {}: {e}",
                rel.display(),
                link.display()
            )));
            trace.to_path_buf()
        }
    }
}

/// A symbolic link at `link` to `target`, or a copy where links fail.
fn link_or_copy(target: &Path, link: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    let linked = std::os::unix::fs::symlink(target, link);
    #[cfg(not(unix))]
    let linked: std::io::Result<()> = Err(std::io::Error::other("no symlinks"));
    if linked.is_err() {
        fs::copy(target, link)?;
    }
    Ok(())
}

/// `<scratch>/collective-<i>/<digest>/<rank-bearing name>` links to each
/// member's readable trace (copies where links fail), so TraceLens' rank
/// regex finds every rank and nothing else matches the glob.
fn stage_collective(
    config: &Config,
    job: &Job,
    readable: &BTreeMap<PathBuf, PathBuf>,
    scratch: &Path,
    index: usize,
) -> std::io::Result<PathBuf> {
    let group = job.collective.as_ref().expect("a collective job");
    let dir = scratch.join(format!("collective-{index}"));
    let renumbered = group.renumbered();
    for (i, (rank, member)) in group.members.iter().enumerate() {
        let original = config.root.join(member);
        let input = readable.get(&original).unwrap_or(&original);
        // The name of what TraceLens reads: the trace's, or the one its
        // copy or link was given for TraceLens' loader. A partial run's
        // ranks are given as 0..members: TraceLens' regex takes the first
        // `rank<N>` of the name.
        let base = input.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let name = if renumbered {
            format!("rank{i}_{base}")
        } else if trace_discover::rank_from_file_name(base.as_bytes()).is_some() {
            base
        } else {
            format!("rank{rank}_{base}")
        };
        let sub = dir.join(digest(&original));
        fs::create_dir_all(&sub)?;
        link_or_copy(&absolute(input), &sub.join(name))?;
    }
    Ok(dir)
}

/// What a TraceLens job over traces of `json_bytes` (their JSON, together)
/// takes in memory at its peak: 100 MiB and 17 times that JSON. Measured on
/// the PyTorch report: 506 MiB for a 25.8 MB trace, 4.9 GiB for a 302.6 MB
/// one (pandas frames of every event, and the collective analysis loading
/// the trace again).
pub fn job_memory(json_bytes: u64) -> u64 {
    (100 << 20) + json_bytes.saturating_mul(17)
}

/// What `job` takes in memory, by [`job_memory`] of its traces' JSON.
fn job_need(job: &Job) -> u64 {
    let traces: Vec<&PathBuf> = match &job.collective {
        Some(c) => c.members.iter().map(|(_, t)| t).collect(),
        None => job.trace.iter().collect(),
    };
    let json = |t: &&PathBuf| match trace_discover::is_rocpd(t) {
        true => fs::metadata(t).map_or(0, |m| m.len()).saturating_mul(ROCPD_AS_JSON),
        false => trace_discover::json_size(t),
    };
    job_memory(traces.iter().map(json).sum())
}

/// How many times its size a rocpd database's rocprofv3 JSON is, at most
/// (3.4 measured on `cargo xtask bench`'s database of kernels and copies
/// only; a real one also holds API calls, which its JSON leaves out).
const ROCPD_AS_JSON: u64 = 4;

/// How many of the jobs `which` run at once: [`Config::jobs`], or fewer
/// when the largest would not fit in [`Config::memory_available`] together
/// (said with [`Event::FewerJobs`]).
fn jobs_at_once(
    config: &Config,
    plan: &Plan,
    which: &[usize],
    events: &mut dyn FnMut(Event<'_>),
) -> usize {
    let wanted = config.jobs.max(1).min(which.len());
    let Some(available) = config.memory_available else { return wanted };
    let needs: Vec<u64> = which.iter().map(|&i| job_need(&plan.jobs[i])).collect();
    let jobs = trace_discover::at_once(wanted, &needs, Some(available));
    if jobs < wanted {
        let largest = needs.iter().copied().max().unwrap_or(0);
        events(Event::FewerJobs { jobs, wanted, largest, available });
    }
    jobs
}

#[allow(clippy::too_many_arguments)]
fn run_parallel(
    config: &Config,
    jobs: usize,
    probe: &Probe,
    plan: &Plan,
    which: &[usize],
    inputs: &[Option<PathBuf>],
    rows: &mut [Option<Row>],
    done: &AtomicUsize,
    events: &mut dyn FnMut(Event<'_>),
) {
    if which.is_empty() {
        return;
    }
    let next = AtomicUsize::new(0);
    let total = plan.jobs.len();
    let (tx, rx) = mpsc::channel::<(usize, Option<Row>)>();
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(which.len()) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                while !config.cancelled() {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = which.get(k) else { break };
                    let _ = tx.send((i, None));
                    let job = &plan.jobs[i];
                    let input = inputs[i].clone().unwrap_or_default();
                    let row = run_job(config, probe, job, &input);
                    let _ = tx.send((i, Some(row)));
                }
            });
        }
        drop(tx);
        for (i, row) in rx {
            match row {
                None => events(Event::Started { index: i, job: &plan.jobs[i] }),
                // A job stopped by the caller is no result: nothing to show.
                Some(row) if row.cause == Cause::Interrupted => {}
                Some(row) => {
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    events(Event::Finished { index: i, row: &row, done: n, total });
                    results.lock().expect("not poisoned").push((i, row));
                }
            }
        }
    });
    for (i, row) in results.into_inner().expect("not poisoned") {
        rows[i] = Some(row);
    }
}

/// Run one job; its combined stdout and stderr go to its log.
fn run_job(config: &Config, probe: &Probe, job: &Job, input: &Path) -> Row {
    let argv = probe.command(job.tool, &job.args(config, input));
    let log = config.output_dir.join("logs").join(&job.log_name);
    let started = Instant::now();
    // Its report is what this run writes: none of an earlier run's tables
    // (of a trace since replaced) is left in it to be read as this one's.
    // Removed once the trace is known to be readable: the last good report
    // of a trace that cannot be read now is kept (this run's summary names
    // no report of it, so none is read as this run's).
    let remove = || match remove_outputs(job) {
        Ok(()) => None,
        Err((path, e)) => {
            let detail = format!("cannot remove the earlier report {}: {e}", path.display());
            let text = format!("madengine: {detail}; TraceLens was not run\n");
            Some(not_run_row(job, &log, started, (Status::Failure, Cause::Other), detail, text))
        }
    };
    // The precheck reads the trace itself (repairing, and with --salvage
    // closing, on the fly, as the copy was made): its offsets and paths are
    // the ones the user has.
    let original = job.trace.as_deref().unwrap_or(input);
    // A database: its JSON is written here, in the job's thread (a
    // database that cannot be read is this job's FAILURE row).
    let note = match job.is_rocpd() {
        true => match convert(config, job, original, input, &log) {
            Ok(note) => note,
            Err(row) => return kept_stale(job, *row),
        },
        false => String::new(),
    };
    let mut collective_kernels = None;
    if config.precheck
        && !job.is_rocpd()
        && matches!(job.tool, crate::Tool::Pytorch | crate::Tool::Rocprof)
        && let Some(row) = precheck(config, job, original, &log, started, &mut collective_kernels)
    {
        // Nothing to report now (no GPU activity): the earlier report goes.
        if row.status == Status::Skipped
            && let Some(failed) = remove()
        {
            return failed;
        }
        let row = Row { collective_kernels, ..row };
        return match row.status {
            Status::Failure => kept_stale(job, row),
            _ => row,
        };
    }
    if let Some(failed) = remove() {
        return failed;
    }
    let outcome = execute(config, &argv, &log, &note);
    if job.is_rocpd() {
        // Read: its disk space is not held until the run ends.
        let _ = fs::remove_file(input);
    }
    if matches!(outcome, Outcome::Cancelled) {
        // Stopped part way: what it wrote is no report.
        let _ = remove_outputs(job);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (status, detail) = classify(&outcome, &log, job_need(job));
    let output = match status {
        Status::Skipped => String::new(),
        _ => relative(&absolute(&config.root), &absolute(&job.main_output())).display().to_string(),
    };
    Row {
        trace_file: job.label.clone(),
        kind: job.row_kind().into(),
        tracelens_tool: job.tool.script().into(),
        status,
        output,
        detail,
        seconds: Some((seconds * 1000.0).round() / 1000.0),
        log: Some(log.display().to_string()),
        cause: if matches!(outcome, Outcome::Cancelled) {
            Cause::Interrupted
        } else {
            Cause::Other
        },
        collective_kernels,
    }
}

/// `row` of a trace that could not be read, saying that the report an
/// earlier run made of it (where there is one) is kept, stale.
fn kept_stale(job: &Job, mut row: Row) -> Row {
    let report = job.main_output();
    if report.exists() {
        row.detail.push_str(&format!(
            "; the report an earlier run made of it is kept, stale: {}",
            report.display()
        ));
    }
    row
}

/// The row of a job TraceLens was not run for (`log_text` its log), started
/// at `started`.
fn not_run_row(
    job: &Job,
    log: &Path,
    started: Instant,
    (status, cause): (Status, Cause),
    detail: String,
    log_text: String,
) -> Row {
    let _ = fs::write(log, log_text);
    Row {
        trace_file: job.label.clone(),
        kind: job.row_kind().into(),
        tracelens_tool: job.tool.script().into(),
        status,
        output: String::new(),
        detail,
        seconds: Some((started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0),
        log: Some(log.display().to_string()),
        cause,
        collective_kernels: None,
    }
}

/// Remove what `job`'s command writes, where an earlier run left it: the
/// path that could not be, and why.
fn remove_outputs(job: &Job) -> std::result::Result<(), (PathBuf, std::io::Error)> {
    for path in job.outputs() {
        let removed = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
        };
        removed.map_err(|e| (path, e))?;
    }
    Ok(())
}

/// A FAILURE row when the trace is cut short (TraceLens cannot parse it);
/// for a PyTorch trace, a SKIPPED row when `trace-summary` finds no GPU
/// activity TraceLens can link (TraceLens would stop with "No GPU events
/// found in the trace"); None when TraceLens should run (including when the
/// trace cannot be read here for another reason: TraceLens then says why).
/// `kernels`: the collective kernels found in the trace, when it was read.
fn precheck(
    config: &Config,
    job: &Job,
    input: &Path,
    log: &Path,
    started: Instant,
    kernels: &mut Option<usize>,
) -> Option<Row> {
    let row = |status, cause, detail: String, log_text: String| {
        Some(not_run_row(job, log, started, (status, cause), detail, log_text))
    };
    // What is wrong, and what to do instead.
    let failed = |what: String, remedy: &str, salvage: bool| {
        let detail = format!("{what}; TraceLens cannot parse it and was not run ({remedy})");
        let cause = Cause::Unparseable { salvage };
        row(Status::Failure, cause, detail.clone(), format!("madengine: {detail}\n"))
    };
    let unparseable = |what: String, remedy: &str| failed(what, remedy, false);
    let cut_short = |what: String| {
        failed(format!("cut short: {what}"), "a salvage analyzes the events before the cut", true)
    };
    let not_json = |offset: u64, text: &str, key: Option<&str>, expected: &str| {
        let key = key.map(|k| format!(" (the value of \"{k}\")")).unwrap_or_default();
        unparseable(
            format!(
                "not JSON: `{text}`{key} at byte {offset} is a bare word where {expected} goes ({})",
                trace_sanitize::NotJson::LIKELY
            ),
            "no repair applies: replace it with a JSON value, such as null, in a copy",
        )
    };
    let malformed = |offset: u64, found: &str, expected: &str, kind: trace_sanitize::Break| {
        let likely = kind.likely();
        unparseable(
            format!("not JSON: at byte {offset}, {found} where {expected} goes ({likely})"),
            &format!("no repair applies: {}", kind.mend()),
        )
    };
    // Ctrl-C stops the reading too (`Cancelled`: no row; the job then stops).
    let options = match config.salvage {
        true => trace_summary::Options::salvaging(),
        false => trace_summary::Options::default(),
    };
    let options = options.cancelled_by(config.cancel.clone());
    // trace-summary reads one, TraceLens' JSON tools do not (by its first
    // bytes: no need to read it whole to say so).
    if trace_summary::Format::of_file(input) == trace_summary::Format::Perfetto {
        return unparseable(
            "a Perfetto protobuf trace, not JSON".into(),
            "name it `.pftrace`: TraceLens' pftrace reports read it",
        );
    }
    let summary = match trace_summary::summarize_file_with(input, &options) {
        Ok(summary) => summary,
        Err(trace_summary::Error::Truncated { bytes, events, .. }) => {
            let events = events
                .map(|n| format!(", with {n} complete events before the cut"))
                .unwrap_or_default();
            return cut_short(format!("its JSON ends after {bytes} bytes{events}"));
        }
        Err(trace_summary::Error::NotUtf8 { encoding, .. }) => {
            return unparseable(
                format!("{encoding} text, not UTF-8 (re-saved on Windows?)"),
                &format!("convert it first, e.g. with `iconv -f {encoding} -t UTF-8`"),
            );
        }
        Err(trace_summary::Error::Compressed { format, twice, .. }) => {
            let what = match twice {
                true => format!("compressed twice (its gzip holds {format} data again), not JSON"),
                false => format!("{format}-compressed data, not JSON"),
            };
            let command = trace_sanitize::decompress_command(input, format, twice);
            return unparseable(
                what,
                &format!("decompress it first, `{command}`, then analyze that"),
            );
        }
        Err(trace_summary::Error::NotADocument { first, .. }) => {
            return unparseable(
                format!(
                    "not a trace: it starts with {}, not a JSON object (a log line before the \
                     trace?)",
                    trace_sanitize::DisplayByte(first)
                ),
                "remove what was written before the trace's first `{`",
            );
        }
        Err(trace_summary::Error::DataAfterEnd { offset, .. }) => {
            let at = offset.map(|n| format!(", {n} bytes in")).unwrap_or_default();
            return failed(
                format!("data after the end of its JSON document{at}"),
                "a salvage analyzes the document without it",
                true,
            );
        }
        Err(trace_summary::Error::NotJson { offset, text, key, expected, .. }) => {
            return not_json(offset, &text, key.as_deref(), &expected);
        }
        Err(trace_summary::Error::Malformed { offset, found, expected, kind, .. }) => {
            return malformed(offset, &found, &expected, kind);
        }
        Err(trace_summary::Error::UnclosedString { .. }) => {
            return failed(
                format!(
                    "not JSON: {} ({})",
                    trace_sanitize::Report::UNCLOSED_STRING,
                    trace_sanitize::Malformed::LIKELY
                ),
                "no repair applies: mend that string in a copy, or a salvage analyzes the events \
                 before it",
                true,
            );
        }
        Err(trace_summary::Error::Read { gzip: true, source, .. }) => {
            let mut why = source.to_string();
            for cause in std::iter::successors(std::error::Error::source(&source), |e| e.source()) {
                why.push_str(&format!(": {cause}"));
            }
            // A checksum that fails, or data after the stream: no cut.
            if trace_sanitize::damaged_gzip(&source) {
                return unparseable(
                    format!("its gzip stream is damaged ({why})"),
                    "fetch or copy the trace again; the damaged file cannot be trusted",
                );
            }
            return cut_short(format!("its gzip stream ends early ({why})"));
        }
        Err(_) => return None,
    };
    *kernels = Some(summary.collective_kernels);
    // In a part trace-summary does not read, but TraceLens' parser does.
    if let Some(word) = &summary.not_json {
        let expected = word.expected(summary.malformed.as_ref());
        return not_json(word.offset, &word.text, word.key.as_deref(), expected);
    }
    if let Some(m) = &summary.malformed {
        return malformed(m.offset, &m.found, &m.expected, m.kind);
    }
    // A rocprofv3 run whose tool recorded nothing: TraceLens' rocprof report
    // reads the list's first process, and fails (`IndexError`).
    if job.tool == crate::Tool::Rocprof && summary.processes == Some(0) {
        return row(
            Status::Skipped,
            Cause::Other,
            NO_ROCPROF_PROCESS_DETAIL.into(),
            format!(
                "madengine: read {} with trace-summary: its rocprofiler-sdk-tool list holds no \
                 process.\nTraceLens would fail with IndexError; it was not run.\n",
                input.display()
            ),
        );
    }
    // Other rocprofv3 traces are checked for cuts only: what TraceLens'
    // rocprof report needs is not what trace-summary's outcome describes.
    if job.tool != crate::Tool::Pytorch || summary.outcome == trace_summary::Outcome::Tables {
        return None;
    }
    row(
        Status::Skipped,
        Cause::Other,
        precheck_detail(&summary),
        format!(
            "madengine: read {} with trace-summary: {} events, {} GPU events, none linked the way \
             TraceLens requires (outcome: {:?}).\nTraceLens would stop with \"{NO_GPU_EVENTS}\"; it was not run.\n",
            input.display(),
            summary.events,
            summary.gpu_events,
            summary.outcome
        ),
    )
}

/// Why TraceLens was not run on a trace trace-summary read: the trace may
/// hold GPU activity that TraceLens cannot see, which is not the launcher's
/// empty trace that [`NO_GPU_DETAIL`] explains.
fn precheck_detail(summary: &trace_summary::Summary) -> String {
    use trace_summary::Outcome as O;
    let then = format!(
        "TraceLens would stop with \"{NO_GPU_EVENTS}\"; the native summary (trace-summary) still computes its tables."
    );
    match summary.outcome {
        O::NoGpuActivity if summary.gpu_devices == Some(0) => NO_GPU_SEEN_DETAIL.into(),
        O::NoGpuActivity => NO_GPU_DETAIL.into(),
        O::Unlinked => format!(
            "the trace holds {} GPU events, but none is linked to the CPU launch that issued it \
             (no ac2g flow events, as in an event-sampled or filtered trace). {then}",
            summary.gpu_events
        ),
        O::LegacyCategories => format!(
            "the trace holds {} GPU events in an older profiler's format (legacy event \
             categories or flows) that TraceLens does not read. {then}",
            summary.gpu_events
        ),
        O::Tables | O::Rocprofv3 => format!(
            "trace-summary found no GPU activity linked the way TraceLens requires (outcome: {:?}). {then}",
            summary.outcome
        ),
    }
}

/// SIGKILL to `root` and every process descended from it, as `/proc` shows
/// them (only `root` where there is no `/proc`). They are stopped first
/// (SIGSTOP), until none is left running: a stopped process starts no
/// other, so one started while the tree was read is not missed (killed
/// first, `root`'s children would be orphaned, no longer its descendants).
fn kill_tree(root: u32) {
    let mut stopped: Vec<u32> = Vec::new();
    // Bounded: a tree that keeps growing faster than it is read is killed
    // as far as it was found.
    for _ in 0..50 {
        let family: Vec<u32> = std::iter::once(root).chain(descendants(root)).collect();
        let new: Vec<u32> = family.iter().copied().filter(|p| !stopped.contains(p)).collect();
        if new.is_empty() && family.iter().all(|&p| !runs(p)) {
            break;
        }
        send("STOP", &new);
        stopped.extend(new);
        std::thread::sleep(Duration::from_millis(2));
    }
    send("KILL", &stopped);
    // Until they are gone (or zombies, their exit done), for a second at
    // most: not the caller's children, they cannot be waited for.
    for _ in 0..100 {
        if !stopped.iter().any(|&p| dynolog_client::is_running(p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The processes descended from `pid` (its children, theirs, ...), as
/// `/proc` shows them; none where there is no `/proc`.
fn descendants(pid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return vec![] };
    let parents: Vec<(u32, u32)> = entries
        .flatten()
        .filter_map(|entry| {
            let child = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let (_, parent) = dynolog_client::proc_stat(child)?;
            Some((child, parent))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while let Some(&parent) = found.get(i) {
        found.extend(parents.iter().filter(|(_, p)| *p == parent).map(|(c, _)| *c));
        i += 1;
    }
    found.split_off(1)
}

/// Whether a process may still run: not stopped, traced, a zombie or gone.
fn runs(pid: u32) -> bool {
    dynolog_client::proc_stat(pid)
        .is_some_and(|(state, _)| !matches!(state, 'T' | 't' | 'Z' | 'X' | 'x'))
}

/// `kill -<name>` to each of `pids` (those already gone are passed over).
fn send(name: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let mut argv: Vec<OsString> = vec!["kill".into(), format!("-{name}").into()];
    argv.extend(pids.iter().map(|p| p.to_string().into()));
    let _ = cmd(&argv).stdin_null().stdout_null().stderr_null().unchecked().run();
}

/// The detail of a job killed because the caller raised the cancel flag.
const INTERRUPTED: &str = "interrupted";

enum Outcome {
    /// Its exit code, or the signal that killed it.
    Exited(Result<i32, Option<i32>>),
    Cancelled,
    TimedOut(Duration),
    NotStarted(String),
}

fn execute(config: &Config, argv: &[OsString], log: &Path, note: &str) -> Outcome {
    let mut file = match fs::File::create(log) {
        Ok(f) => f,
        Err(e) => {
            return Outcome::NotStarted(format!("cannot create the log {}: {e}", log.display()));
        }
    };
    let _ = file.write_all(note.as_bytes());
    let _ = writeln!(file, "$ {}", display(argv));
    let handle = match cmd(argv)
        .dir(&config.output_dir)
        .stdin_null()
        .stderr_to_stdout()
        .stdout_file(file)
        .unchecked()
        .start()
    {
        Ok(h) => h,
        Err(e) => {
            return Outcome::NotStarted(format!("cannot run {}: {e}", argv[0].to_string_lossy()));
        }
    };
    let started = Instant::now();
    loop {
        match handle.try_wait() {
            Ok(Some(output)) => {
                return Outcome::Exited(output.status.code().ok_or_else(|| signal(output.status)));
            }
            Ok(None) => {}
            Err(e) => {
                return Outcome::NotStarted(format!(
                    "waiting for {}: {e}",
                    argv[0].to_string_lossy()
                ));
            }
        }
        // duct's kill only sends SIGKILL to the job: its own processes
        // (TraceLens runs traceconv) would go on, orphaned, so they are
        // killed too. Wait as well, so the job is gone (and reaped) before
        // its report directory or the scratch copies go.
        let stop = || {
            for pid in handle.pids() {
                kill_tree(pid);
            }
            let _ = handle.kill();
            let _ = handle.wait();
        };
        if let Some(limit) = config.timeout
            && started.elapsed() > limit
        {
            stop();
            return Outcome::TimedOut(limit);
        }
        if config.cancelled() {
            stop();
            return Outcome::Cancelled;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What to do when a job of `need` bytes ([`job_memory`]) ran out of memory.
fn memory_hint(need: u64) -> String {
    format!(
        "TraceLens takes about {:.1} GiB for this job: run fewer at once, `report tracelens \
         --jobs`, or on a machine with more memory",
        need as f64 / f64::from(1u32 << 30)
    )
}

/// The signal that ended a process, where the platform tells.
fn signal(status: std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    return std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    return None;
}

/// `outcome` as a row's status and detail. `need` is what the job takes in
/// memory by [`job_memory`], said when the kernel may have killed it for
/// memory.
fn classify(outcome: &Outcome, log: &Path, need: u64) -> (Status, String) {
    let (nothing_to_report, last) = scan_log(log);
    match outcome {
        Outcome::Exited(Ok(0)) => (Status::Success, String::new()),
        Outcome::Exited(_) if let Some(why) = nothing_to_report => (Status::Skipped, why.into()),
        Outcome::Exited(Ok(code)) => (
            Status::Failure,
            match last {
                // Python's own out-of-memory error, the last line of its traceback.
                Some(last) if last.starts_with("MemoryError") => {
                    format!("{last} ({})", memory_hint(need))
                }
                // A pftrace tool that could not download traceconv.
                Some(last) if last.contains("URLError") || last.contains("urlopen error") => {
                    format!("{last} ({TRACECONV_HINT})")
                }
                Some(last) => last,
                None => format!("exit code {code}"),
            },
        ),
        // Killed: say so first, whatever it printed last.
        Outcome::Exited(Err(signal)) => {
            let killed = match signal {
                Some(9) => {
                    format!(
                        "killed by SIGKILL (the kernel's out-of-memory killer? {})",
                        memory_hint(need)
                    )
                }
                Some(n) => {
                    let name = match n {
                        2 => " (SIGINT)",
                        6 => " (SIGABRT)",
                        7 => " (SIGBUS)",
                        11 => " (SIGSEGV)",
                        15 => " (SIGTERM)",
                        _ => "",
                    };
                    format!("killed by signal {n}{name}")
                }
                None => "killed by a signal".into(),
            };
            let last = last.map(|l| format!("; its last output: {l}")).unwrap_or_default();
            (Status::Failure, format!("{killed}{last}"))
        }
        Outcome::TimedOut(limit) => {
            (Status::Failure, format!("timed out after {} s", limit.as_secs_f64()))
        }
        Outcome::NotStarted(why) => (Status::Failure, why.clone()),
        Outcome::Cancelled => (Status::Failure, INTERRUPTED.into()),
    }
}

/// What a failed download means, for the pftrace reports: TraceLens
/// downloads Perfetto's `traceconv` when it is not on PATH.
pub(crate) const TRACECONV_HINT: &str = "TraceLens' pftrace reports read a .pftrace through Perfetto's \
    traceconv, which TraceLens downloads when it is not on PATH, and the download failed: an \
    offline node? Put traceconv on PATH, or give TraceLens `--traceconv /path/to/traceconv` as an \
    extra argument; the native summary (trace-summary) reads the trace without it";

/// Why there was nothing to report, if TraceLens said so in the log ("no
/// GPU events", "no NCCL collective events"), and its last non-empty line
/// (not counting the command line written first).
fn scan_log(log: &Path) -> (Option<&'static str>, Option<String>) {
    let Ok(file) = fs::File::open(log) else { return (None, None) };
    let mut nothing = None;
    let mut last = None;
    for (n, line) in BufReader::new(file).split(b'\n').enumerate() {
        let Ok(line) = line else { break };
        let text = String::from_utf8_lossy(&line);
        if text.contains(NO_GPU_EVENTS) {
            nothing = Some(NO_GPU_DETAIL);
        } else if text.contains(NO_COLLECTIVES) {
            nothing = Some(NO_COLLECTIVES_DETAIL);
        }
        if n > 0 && !text.trim().is_empty() {
            last = Some(text.trim().to_string());
        }
    }
    (nothing, last)
}
