//! `madengine report summary`.

use std::{
    borrow::Cow,
    path::{Path, PathBuf},
};

use indicatif::ProgressBar;

use trace_report::{Record, TopRow, TraceView};
use trace_summary::{Outcome, RECORD, Table};

use crate::{
    cli::SummaryArgs,
    error::{Error, Status},
    render,
};

/// What the terminal says of a trace besides its tables.
pub(crate) trait ViewText {
    /// Where op shapes were modelled without a GPU spec to compare them
    /// with: that there is no roofline, and how to get one.
    fn no_roofline_note(&self) -> Option<String>;
    /// Said first: what a trace read with --salvage left out, and what
    /// TraceLens refuses whatever is repaired.
    fn warning(&self) -> Option<String>;
    /// Said when the trace was read through repairs.
    fn repaired_note(&self) -> Option<String>;
    /// The timeline rows worth showing, `(row, label)`.
    fn parts(&self) -> &'static [(&'static str, &'static str)];
    /// What a trace's heading says after its path: ` (rank 0, AMD Instinct
    /// MI300X)`, ` (on GPU 3, AMD Instinct MI350X)`, or nothing.
    fn heading_tags(&self) -> String;
    /// What follows a total of `ms` over the steps it covers: ` over 5
    /// profiler steps (245.814 ms each)`, ` over 1 optimizer step`; empty
    /// without steps.
    fn steps_text(&self, ms: f64) -> String;
    /// What the reader should know about how this trace was read, if anything.
    fn note(&self) -> Option<Cow<'static, str>>;
    /// For a trace without the list its records are in (`kernel_dispatch`
    /// in rocprofv3's buffer_records, Kineto's `traceEvents`): the list
    /// under a key a stray byte changed, else what it holds instead.
    fn missing_list(&self, format: trace_summary::Format) -> Option<String>;
    fn static_note(&self) -> Option<&'static str>;
    /// Disjoint rows that add up to the total, for a stacked bar.
    fn bar_parts(&self) -> &'static [(&'static str, &'static str)];
}

impl ViewText for TraceView {
    /// Where op shapes were modelled without a GPU spec to compare them
    /// with: that there is no roofline, and how to get one.
    fn no_roofline_note(&self) -> Option<String> {
        if self.gpu_arch.is_some() || (self.top_gemms.is_empty() && self.top_shapes.is_empty()) {
            return None;
        }
        if self.gpus.iter().any(|g| trace_summary::GpuArch::for_device(g).is_some()) {
            return Some("no roofline: --gpu-arch none".into());
        }
        let gpus = match self.gpus.is_empty() {
            true => "its GPU".to_string(),
            false => self.gpus.join(", "),
        };
        Some(format!(
            "no roofline: no GPU spec is bundled for {gpus}; --gpu-arch MI300X|MI325X|FILE.json \
             compares the shapes with one"
        ))
    }

    /// Said first: what a trace read with --salvage left out, and what
    /// TraceLens refuses whatever is repaired.
    fn warning(&self) -> Option<String> {
        let salvaged = match (&self.truncated, self.data_after_end) {
            (Some(truncated), _) => Some(truncated.note()),
            (None, Some(bytes)) => Some(format!(
                "{bytes} bytes of data after the end of its JSON document were not read \
                 (TraceLens refuses the file as it is)"
            )),
            (None, None) => None,
        };
        let not_json = self.not_json.as_ref().map(|word| {
            format!(
                "`{}` at byte {} is a bare word that is not JSON (in a part these tables do not \
                 read): TraceLens refuses the trace, repaired or not",
                word.text, word.offset
            )
        });
        let malformed = self.malformed.as_ref().map(|m| {
            format!(
                "its JSON breaks at byte {}: {} where {} goes ({}), in a part these tables do not \
                 read: TraceLens refuses the trace, repaired or not",
                m.offset,
                m.found,
                m.expected,
                m.likely()
            )
        });
        let lists = (self.earlier_event_lists > 0).then(|| {
            format!(
                "its top object holds `traceEvents` {} times: only the last list is read, as \
                 TraceLens' parser keeps only the last ({} events left out)",
                self.earlier_event_lists + 1,
                match self.earlier_event_lists {
                    1 => "the other list's".to_string(),
                    n => format!("the {n} other lists'"),
                }
            )
        });
        let dropped = (self.dropped_records > 0).then(|| {
            format!(
                "{} left out: without a start or an end that is a time (NULL, text or \
                 negative), which rocprofv3 never writes (a database edited or damaged?)",
                crate::render::plural(self.dropped_records as usize, "record")
            )
        });
        let negative = (self.negative_durations > 0).then(|| {
            format!(
                "{} a negative duration (a clock gone backwards, a trace edited by hand?): \
                 counted as TraceLens counts them, so the timeline's parts can be negative",
                match self.negative_durations {
                    1 => "1 GPU event has".to_string(),
                    n => format!("{n} GPU events have"),
                }
            )
        });
        let said: Vec<String> = [salvaged, not_json, malformed, lists, dropped, negative]
            .into_iter()
            .flatten()
            .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Said when the trace was read through repairs.
    fn repaired_note(&self) -> Option<String> {
        let counts = self.repaired?;
        // A repaired copy would not help: the warning said why.
        if self.not_json.is_some() || self.malformed.is_some() {
            return Some(format!("repaired while reading ({counts})"));
        }
        // Nor would a copy that is still cut short, or has data after its end.
        let (salvage, closed) = match self.truncated.is_some() || self.data_after_end.is_some() {
            true => ("--salvage ", ", closed"),
            false => ("", ""),
        };
        Some(format!(
            "repaired while reading ({counts}); TraceLens refuses it as it is: `madengine trace \
             sanitize {salvage}{}` writes a repaired{closed} copy",
            self.trace.display()
        ))
    }

    /// The timeline rows worth showing, `(row, label)`.
    fn parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_PARTS } else { KINETO_PARTS }
    }

    /// What a trace's heading says after its path: ` (rank 0, AMD Instinct
    /// MI300X)`, ` (on GPU 3, AMD Instinct MI350X)`, or nothing.
    fn heading_tags(&self) -> String {
        let rank = self.rank.map(|r| format!("rank {r}"));
        let cycle = self.cycle.as_ref().map(|p| p.cycle.to_string());
        let gpu = self.gpu_index.map(|i| format!("on GPU {i}"));
        let tags: Vec<String> =
            rank.into_iter().chain(cycle).chain(gpu).chain(self.gpus.iter().cloned()).collect();
        if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) }
    }

    /// What follows a total of `ms` over the steps it covers: ` over 5
    /// profiler steps (245.814 ms each)`, ` over 1 optimizer step`; empty
    /// without steps.
    fn steps_text(&self, ms: f64) -> String {
        let (Some(steps), Some(marker)) = (self.steps, self.steps_marked_by) else {
            return String::new();
        };
        let each = match steps {
            0 | 1 => String::new(),
            n => format!(" ({:.3} ms each)", ms / n as f64),
        };
        format!(" over {}{each}", render::plural(steps, marker.noun()))
    }

    /// What the reader should know about how this trace was read, if anything.
    fn note(&self) -> Option<Cow<'static, str>> {
        if self.outcome == Some(Outcome::NoGpuActivity)
            && let Some(format) = self.format
            && let Some(missing) = self.missing_list(format)
        {
            return Some(Cow::Owned(missing));
        }
        self.static_note().map(Cow::Borrowed)
    }

    /// For a trace without the list its records are in (`kernel_dispatch`
    /// in rocprofv3's buffer_records, Kineto's `traceEvents`): the list
    /// under a key a stray byte changed, else what it holds instead.
    fn missing_list(&self, format: trace_summary::Format) -> Option<String> {
        let database = self.trace.extension().is_some_and(|e| e == "db");
        let (list, within, place, records, guess) = match format {
            // A rocpd database: its record tables, named as the JSON's lists.
            trace_summary::Format::Rocprofv3 if database => (
                "kernel_dispatch",
                "",
                "its database holds records of",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Rocprofv3 => (
                "kernel_dispatch",
                " in its buffer_records",
                "its buffer_records hold",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Kineto => {
                ("traceEvents", "", "its top level holds", "events", "not a Chrome trace?")
            }
            // Its slices' categories (never a key a stray byte changed).
            trace_summary::Format::Perfetto => {
                let lists = &self.record_lists;
                if lists.is_empty() || lists.iter().any(|l| l == "kernel_dispatch") {
                    return None;
                }
                let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
                return Some(format!(
                    "no kernel_dispatch slices: its slices are of {} (not rocprofv3's, or a \
                     rocprofv3 run without --kernel-trace?): nothing to summarize",
                    held.join(", ")
                ));
            }
        };
        let lists = &self.record_lists;
        if lists.is_empty() || lists.iter().any(|l| l == list) {
            return None;
        }
        if let Some(near) = lists.iter().find(|l| strsim::levenshtein(l, list) <= 3) {
            // Quoted as in JSON: a control byte in it shows.
            let near = serde_json::to_string(near).unwrap_or_default();
            return Some(format!(
                "no {list} list{within}, but a {near} one: its key was changed (a stray byte in \
                 the trace?), so its {records} are not read; nothing to summarize"
            ));
        }
        let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
        let kind = if database { "records" } else { "list" };
        Some(format!(
            "no {list} {kind}: {place} {} ({guess}): nothing to summarize",
            held.join(", ")
        ))
    }

    fn static_note(&self) -> Option<&'static str> {
        match self.outcome? {
            Outcome::LegacyCategories => Some(
                "legacy categories or older flows, read as today's (TraceLens rejects this trace)",
            ),
            Outcome::Rocprofv3 if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "rocprofv3 records from Perfetto slices: TraceLens' rocprof tables (no \
                 compute/communication split, no ops); profiled time is the span of its slices",
            ),
            Outcome::Rocprofv3 => Some(
                "rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)",
            ),
            Outcome::Unlinked => Some(
                "no GPU event is linked to a launch (sampled trace?): the timeline counts every GPU \
                 event, kernels have no parent op (TraceLens rejects this trace)",
            ),
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Rocprofv3) => {
                Some(
                    "no kernel dispatch or memory copy records (rocprofv3 run without \
                     --kernel-trace or --memory-copy-trace?): nothing to summarize",
                )
            }
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "no kernel_dispatch or memory_copy slices (not rocprofv3's pftrace, or a \
                     rocprofv3 run without --kernel-trace or --memory-copy-trace?): nothing to \
                     summarize",
            ),
            Outcome::NoGpuActivity if self.truncated.is_some() => {
                Some("no GPU activity before the cut: nothing to summarize")
            }
            Outcome::NoGpuActivity if self.events == Some(0) => {
                Some("no events at all (no traceEvents, or an empty list): nothing to summarize")
            }
            Outcome::NoGpuActivity if self.gpu_devices == Some(0) => Some(
                "no GPU activity, and its process saw no GPU (its deviceProperties list is \
                 empty): the workload ran on the CPU; nothing to summarize",
            ),
            Outcome::NoGpuActivity => {
                Some("no GPU activity (a CPU-only trace): nothing to summarize")
            }
            Outcome::Tables => None,
        }
    }

    /// Disjoint rows that add up to the total, for a stacked bar.
    fn bar_parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_BAR } else { KINETO_PARTS }
    }
}

/// Each row's name as `shown` (each shown once: demangling is not free),
/// with what tells it apart when another row shows the same name: TraceLens
/// groups kernels by name, parent op and stream, so one kernel can have
/// several rows.
pub(crate) fn labels(rows: &[TopRow], shown: impl Fn(&str) -> String) -> Vec<String> {
    let names: Vec<String> = rows.iter().map(|r| shown(&r.name)).collect();
    rows.iter()
        .zip(&names)
        .map(|(row, name)| {
            let twins: Vec<&TopRow> =
                rows.iter().zip(&names).filter(|(_, n)| *n == name).map(|(r, _)| r).collect();
            let mut tags = Vec::new();
            if twins.iter().any(|r| r.parent_op != row.parent_op) {
                tags.push(match row.parent_op.as_deref() {
                    Some("") | None => "no linked launch".to_string(),
                    Some(op) => format!("under {op}"),
                });
            }
            if twins.iter().any(|r| r.stream != row.stream)
                && let Some(stream) = &row.stream
            {
                tags.push(format!("stream {stream}"));
            }
            if tags.is_empty() { name.clone() } else { format!("{name} [{}]", tags.join(", ")) }
        })
        .collect()
}

/// Kineto timelines split GPU time into these four disjoint parts: `(row, label)`.
pub(crate) const KINETO_PARTS: &[(&str, &str)] = &[
    ("computation_time", "computation"),
    ("exposed_comm_time", "exposed comm"),
    ("exposed_memcpy_time", "exposed memcpy"),
    ("idle_time", "idle"),
];
/// rocprofv3 timelines have no compute/communication split.
const ROCPROF_PARTS: &[(&str, &str)] =
    &[("kernel", "kernel"), ("memory", "memory"), ("busy_time", "busy"), ("idle", "idle")];
pub(crate) const ROCPROF_BAR: &[(&str, &str)] = &[("busy_time", "busy"), ("idle", "idle")];

/// Write `bytes` to `path` atomically (temp file beside it, then a rename),
/// its directory made first if it is not there (as `-o DIR` is).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let write = || {
        trace_sanitize::write_atomic(path, |f| std::io::Write::write_all(f, bytes))
            .map_err(|source| Error::Io { path: path.to_path_buf(), source })
    };
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => super::in_dir(dir, write),
        None => write(),
    }
}

/// The directories a run searches, as given: its directory PATHs, or the
/// current directory when none is given.
fn searched(args: &SummaryArgs) -> Vec<&Path> {
    let given: Vec<&Path> = args.root.iter().chain(&args.paths).map(PathBuf::as_path).collect();
    let paths = if given.is_empty() { vec![Path::new(".")] } else { given };
    paths.into_iter().filter(|p| p.is_dir()).collect()
}

/// One trace to read, and what names its CSV directory.
pub(crate) type Input = trace_report::TraceInput;

/// The traces behind the PATHs ([`trace_report::run_inputs`]): directories
/// are searched (not the output directory), files taken as given.
fn inputs(args: &SummaryArgs) -> Result<trace_report::Inputs, Error> {
    if let Some(root) = args.root.as_ref().filter(|r| !r.is_dir()) {
        // --root names a directory: discovery says what is wrong with it.
        trace_discover::discover(root, &Default::default())?;
    }
    let paths: Vec<PathBuf> = args.root.iter().chain(&args.paths).cloned().collect();
    let exclude = [args.output_dir.clone()];
    trace_report::run_inputs(&paths, &exclude, args.cycle, &Notes).map_err(|e| match e {
        trace_report::InputError::Discover(e) => Error::Discover(e),
        trace_report::InputError::Cycle(e) => Error::Usage(e.to_string()),
    })
}

/// How many of `inputs` to read at a time: `--jobs`, else as many as the
/// CPUs (8 at most) and half the available memory allow, said in a note
/// when memory is what limits it.
pub(crate) fn jobs(chosen: Option<u32>, inputs: &[Input]) -> usize {
    match chosen {
        Some(jobs) => jobs as usize,
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
            let estimates: Vec<u64> = inputs.iter().map(|i| memory_estimate(&i.trace)).collect();
            let available = crate::settings::mem_available();
            // Half of what is available: the machine is doing other work too.
            let jobs = trace_discover::at_once(cpus, &estimates, available.map(|a| a / 2));
            if jobs < cpus.min(inputs.len()) {
                render::note(&format!(
                    "reading {jobs} trace(s) at a time, not {}: the largest take about {} each to \
                 read and the machine has {} available (--jobs to choose)",
                    cpus.min(inputs.len()),
                    render::size(estimates.iter().copied().max().unwrap_or(0)),
                    render::size(available.unwrap_or(0)),
                ));
            }
            jobs
        }
    }
}

/// Memory to read a trace, by its format and JSON size.
fn memory_estimate(path: &Path) -> u64 {
    trace_summary::memory_needed(path, trace_discover::json_size(path))
}

/// Why a trace has no summary, on one line: the error and its causes, and
/// what `--salvage` would summarize of it, where it would.
pub(crate) fn failed(why: trace_summary::Failed, salvage: bool) -> String {
    match why {
        trace_summary::Failed::Error(err) => match err.salvage_reads() {
            Some(what) if !salvage => format!("{} (--salvage summarizes {what})", chain(&err)),
            _ => chain(&err),
        },
        trace_summary::Failed::Panicked { path, message } => format!(
            "madengine's trace reader failed on {} (a bug; please report it with the trace): \
             {message}",
            path.display()
        ),
    }
}

/// The error and its causes on one line.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    trace_summary::one_line(err)
}

pub(crate) fn summary(args: &SummaryArgs) -> Result<Status, Error> {
    let Some(summarized) = summarize(args)? else { return Ok(Status::Interrupted) };
    if args.json {
        render::json(&summarized.json())?;
    } else {
        summarized.print()?;
    }
    Ok(summarized.finish())
}

/// What `report summary` found and wrote (CSVs, the page), before it is
/// printed: the run's summary, which `--json` prints.
pub(crate) struct Summarized(pub(crate) trace_report::RunSummary);

impl Summarized {
    /// As `--json` prints it.
    pub(crate) fn json(&self) -> &trace_report::RunSummary {
        &self.0
    }

    /// As the terminal shows it.
    pub(crate) fn print(&self) -> Result<(), Error> {
        let s = &self.0;
        if !s.node_reports.is_empty() {
            render::node_reports(&s.node_reports)?;
        }
        render::summaries(&s.traces, &s.cross_rank, &s.cycles, &s.cross_gpu, &s.collectives)
    }

    /// The status to exit with: Io when a trace could not be read, which
    /// it says on stderr.
    pub(crate) fn finish(&self) -> Status {
        let s = &self.0;
        if s.unreadable == 0 {
            return Status::Success;
        }
        let n = s.traces.len();
        render::error_line(&format!("{} of {n} traces could not be read", s.unreadable));
        Status::Io
    }
}

/// Where trace `dir`'s workbook goes: `xlsx` itself for a single trace,
/// else `xlsx` with the report's name before its extension.
fn workbook_path(xlsx: &Path, dir: &Path, traces: usize) -> PathBuf {
    if traces <= 1 {
        return xlsx.to_path_buf();
    }
    let stem = xlsx.file_stem().unwrap_or_default().to_string_lossy();
    let report = dir.file_name().unwrap_or_default().to_string_lossy();
    let name = match xlsx.extension() {
        Some(ext) => format!("{stem}_{report}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{report}"),
    };
    xlsx.with_file_name(name)
}

/// The workbook of a trace's TraceLens tables, `coll_analysis` last where
/// the report has it.
fn workbook(
    summary: &trace_summary::Summary,
    coll: Option<&Table>,
    path: &Path,
) -> Result<Vec<u8>, Error> {
    let mut sheets = summary.tracelens_tables();
    sheets.extend(coll.map(|c| ("coll_analysis", c)));
    crate::render::xlsx::workbook(&sheets)
        .map_err(|source| Error::Workbook { path: path.to_path_buf(), source })
}

pub(crate) fn summarize(args: &SummaryArgs) -> Result<Option<Summarized>, Error> {
    let started = std::time::SystemTime::now();
    // Before reading traces (minutes for a large run), not after.
    super::check_output(&args.output_dir, true)?;
    let searched = searched(args);
    super::check_not_searched(&args.output_dir, &searched)?;
    for file in args.html.iter().chain(&args.xlsx) {
        super::check_output(file, false)?;
    }
    // The roofline (a bundled spec, or an arch file read now: before the
    // traces, not after).
    let gpu_arch = match args.gpu_arch.as_deref() {
        None => trace_summary::ArchChoice::FromTrace,
        Some(none) if none.eq_ignore_ascii_case("none") => trace_summary::ArchChoice::None,
        Some(spec) => {
            trace_summary::ArchChoice::Given(trace_summary::GpuArch::named_or_file(spec)?)
        }
    };
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let found = inputs(args)?;
    for file in args.html.iter().chain(&args.xlsx) {
        super::check_not_an_input(file, found.inputs.iter().map(|i| i.trace.as_path()))?;
    }
    let options = match args.salvage {
        true => trace_summary::Options::salvaging(),
        false => trace_summary::Options::default(),
    };
    let jobs = jobs(args.jobs, &found.inputs);
    let config = trace_report::RunConfig {
        // Started before the outputs were checked: a report written since
        // is another run's.
        started,
        jobs,
        options: options.cancelled_by(interrupt.flag()).with_gpu_arch(gpu_arch),
        top: args.top,
        ..trace_report::RunConfig::new(found, args.output_dir.clone())
    };
    let progress = render::Progress::new(
        config.found.inputs.len() as u64,
        "{spinner} read {pos}/{len} traces [{elapsed}] {wide_msg}",
        !args.json && !config.found.inputs.is_empty(),
    );
    let events = Events {
        inputs: &config.found.inputs,
        bar: progress.bar(),
        running: Default::default(),
        salvage: args.salvage,
        xlsx: args.xlsx.as_deref(),
    };
    let report = trace_report::summarize_run(&config, &events)?;
    drop(progress);
    drop(interrupt);
    let Some(report) = report else {
        render::error_line("interrupted while reading the traces: nothing was written");
        return Ok(None);
    };
    for (path, bytes) in report.extras.iter().flatten() {
        write_atomic(path, bytes)?;
    }
    let summary = report.summary;
    if let Some(html) = &args.html {
        let s = &summary;
        crate::html::write(
            html,
            &s.traces,
            &s.cross_rank,
            &s.cycles,
            &s.cross_gpu,
            &s.collectives,
            &s.left_out,
        )?;
    }
    Ok(Some(Summarized(summary)))
}

/// Where `report summary` reports as it reads: the progress bar naming the
/// traces being read, notes on stderr, and each trace's workbook
/// (`--xlsx`), made on the thread that read it.
struct Events<'a> {
    inputs: &'a [Input],
    bar: Option<&'a ProgressBar>,
    running: std::sync::Mutex<Vec<usize>>,
    salvage: bool,
    xlsx: Option<&'a Path>,
}

impl trace_report::RunEvents for Events<'_> {
    type Extra = (PathBuf, Vec<u8>);
    type Error = Error;

    fn progress(&self, progress: trace_summary::Progress) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match progress {
            trace_summary::Progress::Started(i) => running.push(i),
            trace_summary::Progress::Done(i) => {
                running.retain(|r| *r != i);
                if let Some(bar) = self.bar {
                    bar.inc(1);
                }
            }
        }
        if let Some(bar) = self.bar {
            let names: Vec<String> =
                running.iter().map(|r| self.inputs[*r].rel.display().to_string()).collect();
            bar.set_message(names.join(", "));
        }
    }

    fn read(&self) {
        // The notes that follow (retired reports) print on a cleared line.
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }

    fn note(&self, note: trace_report::RunNote) {
        render::run_note(note);
    }

    fn failure(&self, failed: trace_summary::Failed) -> String {
        self::failed(failed, self.salvage)
    }

    fn made(
        &self,
        _i: usize,
        summary: &trace_summary::Summary,
        coll: Option<&Table>,
        dir: &Path,
    ) -> Result<Option<(PathBuf, Vec<u8>)>, Error> {
        let Some(xlsx) = self.xlsx else { return Ok(None) };
        let path = workbook_path(xlsx, dir, self.inputs.len());
        let bytes = workbook(summary, coll, &path)?;
        Ok(Some((path, bytes)))
    }
}

pub(crate) use trace_report::{Object, RunCollectives, number};

/// A number with `digits` decimals, `-` where there is none.
pub(crate) fn shown(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// Where a run made of reports tells what it does: notes on stderr.
struct Notes;

impl trace_report::RunEvents for Notes {
    type Extra = ();
    type Error = Error;

    fn note(&self, note: trace_report::RunNote) {
        render::run_note(note);
    }
}

/// The tables across a gathered run's traces from the reports its nodes
/// made of them (`<node>/summary_output/<report>/summary.json`, the
/// `summary` tool's), each read back as the trace it was made of
/// (`<node>/<trace>`): the same cross-rank, cross-GPU and cycle tables as
/// reading the traces, without reading one. `None` when no node holds such
/// reports.
pub(crate) fn from_node_reports(root: &Path, out: &Path) -> Result<Option<Summarized>, Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut reports = Vec::new();
    let mut nodes: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(io(root))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary_output").is_dir())
        .collect();
    nodes.sort();
    for node in &nodes {
        let out = node.join("summary_output");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&out)
            .map_err(io(&out))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join(RECORD).is_file())
            .collect();
        dirs.sort();
        reports.extend(dirs.into_iter().map(|d| (node.clone(), d)));
    }
    if reports.is_empty() {
        return Ok(None);
    }
    let mut timed = Vec::new();
    let mut read = Vec::new();
    let mut kernels: Vec<(Vec<trace_summary::CollectiveKernel>, Option<usize>)> = Vec::new();
    for (node, dir) in reports {
        let Some(record) = Record::read(&dir)? else { continue };
        let view = &record.view;
        if view.trace.as_os_str().is_empty() {
            continue;
        }
        // As the node named it, from its work directory: under the node's.
        let trace: PathBuf = node.join(
            view.trace
                .components()
                .filter(|c| *c != std::path::Component::CurDir)
                .collect::<PathBuf>(),
        );
        // Its profiling cycle: as the traces' names tell them apart, below.
        timed.push(trace_report::Timed { trace, cycle: None, ..view.timed() });
        kernels.push((record.collective_events, view.gpu_devices));
        read.push(dir);
    }
    // Profiling cycles, as the traces' names tell them apart.
    let pytorch: Vec<usize> = (0..timed.len()).filter(|&i| !timed[i].rocprof).collect();
    let named: Vec<(PathBuf, Option<u32>)> =
        pytorch.iter().map(|&i| (timed[i].trace.clone(), timed[i].rank)).collect();
    for (&i, cycle) in pytorch.iter().zip(trace_report::cycles_of(&named)) {
        timed[i].cycle = cycle;
    }
    let (ranks, gpus, cycles) = trace_report::across(&timed, &Notes);
    // Each run's collective report, from the kernels the records keep.
    let traces: Vec<trace_report::Collectives<'_>> = timed
        .iter()
        .zip(&kernels)
        .map(|(t, (events, gpu_devices))| trace_report::Collectives {
            trace: &t.trace,
            kernels: events,
            gpu_devices: *gpu_devices,
        })
        .collect();
    let collectives =
        trace_report::run_collectives(&traces, &ranks, out, &mut Default::default(), &Notes)?;
    Ok(Some(Summarized(trace_report::RunSummary {
        node_reports: read,
        cross_rank: ranks,
        cross_gpu: gpus,
        cycles,
        collectives,
        ..trace_report::RunSummary::new()
    })))
}

#[cfg(test)]
mod tests {
    use super::{TopRow, labels};

    fn row(name: &str, stream: Option<&str>) -> TopRow {
        TopRow {
            name: name.into(),
            value: 1.0,
            percent: None,
            stream: stream.map(Into::into),
            parent_op: None,
        }
    }

    #[test]
    fn a_panic_while_reading_is_that_traces_error_asking_for_a_report() {
        let panicked = trace_summary::Failed::Panicked {
            path: "run/rank3.json".into(),
            message: "index out of bounds".into(),
        };
        let err = super::failed(panicked, false);
        assert_eq!(
            err,
            "madengine's trace reader failed on run/rank3.json (a bug; please report it with the \
             trace): index out of bounds"
        );
    }

    #[test]
    fn a_kernel_name_shown_twice_gets_what_tells_its_rows_apart() {
        let same = |s: &str| s.to_string();
        let rows = [row("nccl", Some("84")), row("nccl", Some("203")), row("gemm", Some("7"))];
        assert_eq!(labels(&rows, same), ["nccl [stream 84]", "nccl [stream 203]", "gemm"]);
        // Ops have no stream column: names stay as they are.
        let ops = [row("aten::mm", None), row("aten::mm", None)];
        assert_eq!(labels(&ops, same), ["aten::mm", "aten::mm"]);
        // The same kernel under two ops (or none), on one stream or two.
        let under = |name: &str, stream: &str, op: &str| TopRow {
            parent_op: Some(op.into()),
            ..row(name, Some(stream))
        };
        let rows = [
            under("sqrt_kernel", "7", "aten::sqrt"),
            under("sqrt_kernel", "7", ""),
            under("add_kernel", "7", "aten::add_"),
            under("add_kernel", "9", "aten::add_"),
            under("add_kernel", "9", "aten::sum"),
        ];
        assert_eq!(
            labels(&rows, same),
            [
                "sqrt_kernel [under aten::sqrt]",
                "sqrt_kernel [no linked launch]",
                "add_kernel [under aten::add_, stream 7]",
                "add_kernel [under aten::add_, stream 9]",
                "add_kernel [under aten::sum, stream 9]",
            ]
        );
        // Names that differ only past what the console shows are twins there.
        let rows = [under("kernel_long_a", "7", "aten::a"), under("kernel_long_b", "7", "aten::b")];
        let cut = |s: &str| s[..6].to_string();
        assert_eq!(labels(&rows, cut), ["kernel [under aten::a]", "kernel [under aten::b]"]);
        assert_eq!(labels(&rows, same), ["kernel_long_a", "kernel_long_b"]);
    }
}
