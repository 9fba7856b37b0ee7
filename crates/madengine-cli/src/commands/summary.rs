//! `madengine report summary`.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

use trace_report::Record;
use trace_summary::{RECORD, Table};

use crate::{
    cli::SummaryArgs,
    error::{Error, Status},
    render,
};

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
        trace_report::InputError::HoldsRun(refused) => super::holds_run(&refused),
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
        render::json_as_is(&summarized.json())?;
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
        let gpu_devices = view.gpu_devices;
        kernels.push((record.view.collective_events, gpu_devices));
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
    use crate::render::labels;
    use trace_report::TopRow;

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
