//! A run's summary, made: each trace read (several at a time), its report
//! (CSVs and record) written as one set in its own directory, the reports
//! of an earlier run that this run's would be mistaken for retired, and the
//! tables across the traces and each run's collective report made
//! ([`summarize_run`]).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use trace_summary::{Failed, Progress, Summary, Table};

use crate::{
    COLLECTIVE_FILES, CollectiveError, CollectivesRecord, CycleRow, GpuRow, LeftOut, Picked,
    RankRow, Record, Retired, RunCollectives, RunSummary, SetError, Staged, Stems, TRACE_FILES,
    ThisRun, Timed, TraceView, keep_stale, own_stem, retire, retire_stale, write_set,
};

/// One trace a run reads, and what names its report's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceInput {
    /// The trace.
    pub trace: PathBuf,
    /// The path its report's name comes from ([`Stems`]): the trace's path
    /// below the directory searched, or as given.
    pub rel: PathBuf,
    /// Its rank, where known.
    pub rank: Option<u32>,
    /// Its profiling cycle, and its job's directory, where the job holds
    /// several ([`crate::cycles_of`]).
    pub cycle: Option<Picked>,
}

impl TraceInput {
    /// `trace`, its report named from `rel`.
    pub fn new(trace: PathBuf, rel: PathBuf, rank: Option<u32>) -> TraceInput {
        TraceInput { trace, rel, rank, cycle: None }
    }
}

/// What [`summarize_run`] reads, and where it writes.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The traces ([`crate::run_inputs`]), in the order the summary lists
    /// them, with what the search left out (carried into the summary) and
    /// where it searched (an earlier run's reports of traces there may be
    /// retired: [`retire_stale`]).
    pub found: crate::Inputs,
    /// Where each trace's report directory, and each run's collective
    /// report, goes.
    pub output_dir: PathBuf,
    /// The rows of each top list in a trace's view.
    pub top: usize,
    /// Traces read at a time.
    pub jobs: usize,
    /// How each trace is read (salvage, the roofline's GPU, the flag that
    /// cancels the reading).
    pub options: trace_summary::Options,
    /// When the run started: a report written since is another run's (two
    /// runs into one output directory at once), and is not retired.
    pub started: std::time::SystemTime,
}

impl RunConfig {
    /// A run of the traces `found` ([`crate::run_inputs`]), its reports in
    /// `output_dir`, as `madengine report summary` runs it by default: the
    /// top 10 rows of each list, as many traces at a time as there are CPUs
    /// (8 at most), the roofline of the GPU each trace names where a spec
    /// is bundled for it.
    pub fn new(found: crate::Inputs, output_dir: PathBuf) -> RunConfig {
        RunConfig {
            found,
            started: std::time::SystemTime::now(),
            output_dir,
            top: 10,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(8),
            options: trace_summary::Options::default()
                .with_gpu_arch(trace_summary::ArchChoice::FromTrace),
        }
    }
}

/// What a run says as it goes, besides its summary.
#[derive(Debug)]
pub enum RunNote {
    /// A path the search could not look at (a link to a trace that is
    /// gone): left out.
    Unlooked(trace_discover::Problem),
    /// A file left out as a trace because its sanitized copy (or the trace
    /// it is a copy of) beside it is read instead.
    Skipped(trace_discover::Unsupported),
    /// A directory holds no trace to read: what it holds instead.
    NothingToRead {
        /// The directory.
        dir: PathBuf,
        /// The files there that no reader takes, with why.
        there: Vec<trace_discover::Unsupported>,
    },
    /// The profiling cycle picked of a job's directory.
    CyclePicked(Picked),
    /// How many PyTorch traces of other profiling cycles were not read.
    OtherCycles(usize),
    /// An earlier run's report retired, or kept marked stale.
    Retired(Retired),
    /// Ranked traces that make no cross-rank table, and why.
    NoCrossRank {
        /// The traces.
        what: String,
        /// Why.
        why: String,
    },
    /// rocprofv3 processes left out of the cross-GPU table.
    LeftOutOfGpus(LeftOut),
    /// A multi-rank run that makes no collective report.
    NoCollectiveReport {
        /// The run (and its cycle).
        run: String,
        /// Why.
        error: CollectiveError,
    },
}

/// Where a run reports to its caller: its progress and notes (on the calling
/// thread); why a trace could not be read, and what else to make of a trace
/// read (on the thread that read it).
pub trait RunEvents: Sync {
    /// What [`RunEvents::made`] makes of a trace read (a workbook, say).
    type Extra: Send;
    /// What can go wrong: writing the reports ([`SetError`]), or what
    /// [`RunEvents::made`] makes.
    type Error: Send + From<SetError>;

    /// Reading a trace started or ended.
    fn progress(&self, _progress: Progress) {}

    /// The reading ended: every trace read, or cancelled. What the run
    /// tells after this (retired reports, the tables across traces) comes
    /// once no trace is being read.
    fn read(&self) {}

    /// Something the run tells as it goes.
    fn note(&self, _note: RunNote) {}

    /// Why a trace could not be read, as its view says it
    /// ([`TraceView::error`]).
    fn failure(&self, failed: Failed) -> String {
        trace_summary::one_line(&failed)
    }

    /// What else to make of trace `i`, read, with a report in `dir` (its
    /// `coll_analysis` table, where it has one): nothing by default. An
    /// error stops the run before any report is put in place.
    fn made(
        &self,
        _i: usize,
        _summary: &Summary,
        _coll_analysis: Option<&Table>,
        _dir: &Path,
    ) -> Result<Option<Self::Extra>, Self::Error> {
        Ok(None)
    }
}

/// What [`summarize_run`] made: the run's summary, and for each trace what
/// [`RunEvents::made`] made of it.
#[derive(Debug)]
pub struct RunReport<X> {
    /// The summary.
    pub summary: RunSummary,
    /// Per trace, in the order of [`RunConfig::found`]'s inputs.
    pub extras: Vec<Option<X>>,
}

/// Where a trace's report goes: its directory, and the trace's absolute
/// path (recorded, for a later run to tell it is gone).
struct Planned {
    dir: PathBuf,
    absolute: Option<PathBuf>,
}

/// What was made of a trace's report.
enum Made {
    /// Staged in its directory, to be put in place.
    Staged(Staged),
    /// It could not be read (why).
    Unreadable(String),
    /// It was read, and has no GPU timeline: no report.
    Nothing,
}

/// A trace read: its view, its report staged, and what else was made of it.
struct Prepared<X> {
    view: TraceView,
    made: Made,
    extra: Option<X>,
}

/// Read `config.found.inputs`, `config.jobs` at a time, and write each trace's
/// report (its CSVs and record) as one set in its own directory of
/// `config.output_dir`, named before any trace is read (so that it does not
/// change with whether another could be read). A trace that cannot be read
/// keeps its last good report, marked stale; a trace read without a GPU
/// timeline retires its earlier one; so does an earlier run's report that
/// this run's would be mistaken for ([`retire_stale`]). Then the tables
/// across the traces, and each multi-rank run's collective report (written
/// beside the traces' reports). `None` when the reading was cancelled:
/// nothing is written then.
pub fn summarize_run<E: RunEvents>(
    config: &RunConfig,
    events: &E,
) -> Result<Option<RunReport<E::Extra>>, E::Error> {
    let inputs = &config.found.inputs;
    let mut this_run = ThisRun { started: config.started, ..config.found.this_run() };
    let planned = plan(config, &mut this_run);
    // Each trace's report is made, and staged in its directory, by the
    // worker that read it, as soon as it is read: what is held until the
    // last trace is read is its view (the top rows, its collective
    // kernels), not its tables. The sets are put in place once all are
    // read; a cancel before that leaves none.
    let prepare = |i: usize, read: Result<Summary, Failed>| {
        let input = &inputs[i];
        let mut view = TraceView::new(input.trace.clone(), input.rank);
        view.cycle = input.cycle.clone();
        let mut extra = None;
        let made = match read {
            Err(failed) => Made::Unreadable(events.failure(failed)),
            Ok(summary) => {
                let coll = coll_analysis_of(&summary);
                match report_files(&mut view, &summary, coll.as_ref(), &planned[i], config.top) {
                    Some(files) => {
                        extra = events.made(i, &summary, coll.as_ref(), &planned[i].dir)?;
                        Made::Staged(Staged::new(&planned[i].dir, &TRACE_FILES, &files)?)
                    }
                    None => Made::Nothing,
                }
            }
        };
        Ok::<_, E::Error>(Prepared { view, made, extra })
    };
    let paths: Vec<PathBuf> = inputs.iter().map(|i| i.trace.clone()).collect();
    let results = {
        let mut progress = |p: Progress| events.progress(p);
        let read = trace_summary::summarize_files_into(
            &paths,
            config.jobs,
            &config.options,
            &mut progress,
            &prepare,
        );
        events.read();
        let Some(read) = read else { return Ok(None) };
        read
    };
    // Errors first (a set that could not be staged), before any is put in
    // place; each trace's set then, in the order of the traces.
    let results = results.into_iter().collect::<Result<Vec<_>, E::Error>>()?;
    let mut summary = RunSummary { left_out: config.found.left_out.clone(), ..RunSummary::new() };
    let mut extras = Vec::with_capacity(results.len());
    for (Prepared { mut view, made, extra }, plan) in results.into_iter().zip(&planned) {
        extras.push(extra);
        let retired = match made {
            Made::Staged(staged) => {
                staged.commit()?;
                None
            }
            // Its last good report stays (marked stale): a trace that
            // cannot be read now (cut short while still being written, a
            // pipe, a file gone unreadable) must not cost it.
            Made::Unreadable(err) => {
                summary.unreadable += 1;
                let kept = keep_stale(&plan.dir, &view.trace, &err)?;
                view.error = Some(err);
                kept
            }
            Made::Nothing => retire(&plan.dir, &view.trace)?,
        };
        if let Some(retired) = retired {
            events.note(RunNote::Retired(retired));
        }
        summary.traces.push(view);
    }
    let timed: Vec<Timed> = summary.traces.iter().map(TraceView::timed).collect();
    let (ranks, gpus, cycles) = across(&timed, events);
    let kernels: Vec<Collectives<'_>> = summary
        .traces
        .iter()
        .map(|v| Collectives {
            trace: &v.trace,
            kernels: &v.collective_events,
            gpu_devices: v.gpu_devices,
        })
        .collect();
    let collectives =
        run_collectives(&kernels, &ranks, &config.output_dir, &mut this_run.dirs, events)?;
    (summary.cross_rank, summary.cross_gpu, summary.cycles) = (ranks, gpus, cycles);
    summary.collectives = collectives;
    retire_stale(&config.output_dir, &this_run, &mut |r| events.note(RunNote::Retired(r)))?;
    Ok(Some(RunReport { summary, extras }))
}

/// Each trace's report directory, named before any is read; this run's
/// directories and traces added to `this_run`.
fn plan(config: &RunConfig, this_run: &mut ThisRun) -> Vec<Planned> {
    let mut stems = Stems::default();
    let mut planned = Vec::with_capacity(config.found.inputs.len());
    for input in &config.found.inputs {
        let absolute = std::path::absolute(&input.trace).ok();
        let stem = own_stem(&config.output_dir, stems.unique(&input.rel), absolute.as_deref());
        let stem = match stem {
            Ok(stem) => stem,
            // Another trace's report holds the name: one of this trace's own.
            Err(alternative) => stems.unique(Path::new(&alternative)),
        };
        let dir = config.output_dir.join(&stem);
        this_run.dirs.insert(OsString::from(stem));
        if let Some(absolute) = &absolute {
            this_run.read.insert(absolute.clone(), dir.clone());
        }
        planned.push(Planned { dir, absolute });
    }
    planned
}

/// TraceLens' per-trace collective table, where it writes one: traces
/// with CPU ops whose collective kernels carry its args.
pub fn coll_analysis_of(summary: &Summary) -> Option<Table> {
    summary.ops_summary.as_ref()?;
    crate::coll_analysis(&summary.collective_events)
}

/// The files of the report of a trace read (`summary`): its CSVs and its
/// record, `view` filled in as they are made; `None` when it has no GPU
/// timeline (no report).
fn report_files(
    view: &mut TraceView,
    summary: &Summary,
    coll: Option<&Table>,
    plan: &Planned,
    n: usize,
) -> Option<Vec<(String, Vec<u8>)>> {
    view.read(summary);
    summary.gpu_timeline.as_ref()?;
    // TraceLens' tables, the per-call collective table, TraceLens'
    // collective table.
    let tables = summary.tracelens_tables().into_iter();
    let ours = summary.collective_summary.as_ref().map(|c| ("collective_summary", c));
    let files = tables
        .chain(ours)
        .chain(coll.map(|c| ("coll_analysis", c)))
        .map(|(name, table)| (format!("{name}.csv"), table.to_csv().into_bytes()));
    let mut files: Vec<(String, Vec<u8>)> = files.collect();
    view.fill(summary, n);
    view.csv_dir = Some(plan.dir.clone());
    // What the CSVs do not hold (the rank, the steps), for a comparison to
    // read back: the trace's view, where the trace was (for a later run to
    // tell it is gone), and its collective kernels (for a run's collective
    // report from the records of reports made on the nodes).
    let recorded = Record::new(view, plan.absolute.clone()).to_bytes();
    files.push((trace_summary::RECORD.to_string(), recorded));
    Some(files)
}

/// The tables across traces: cross-rank, cross-GPU and profiling cycles;
/// what makes no table is told to `events`.
pub fn across(
    timed: &[Timed],
    events: &impl RunEvents,
) -> (Vec<RankRow>, Vec<GpuRow>, Vec<CycleRow>) {
    let (ranks, no_run) = crate::cross_rank(timed);
    for (what, why) in no_run {
        events.note(RunNote::NoCrossRank { what, why });
    }
    let (gpus, left_out_of_gpus) = crate::cross_gpu(timed);
    for left in left_out_of_gpus {
        events.note(RunNote::LeftOutOfGpus(left));
    }
    (ranks, gpus, crate::cycle_trend(timed))
}

/// A trace's collective kernels, for its run's collective report: read
/// from the trace, or from the record of its report.
#[derive(Debug)]
pub struct Collectives<'a> {
    /// The trace.
    pub trace: &'a Path,
    /// Its collective kernels.
    pub kernels: &'a [trace_summary::CollectiveKernel],
    /// Its GPUs (`deviceProperties`): the GPUs per node of its run.
    pub gpu_devices: Option<usize>,
}

/// The collective report of each run of two ranks or more whose traces
/// hold collective kernels, its CSVs written beside the traces' reports
/// (`<out>/<run>_collectives/`), its directory's name added to `dirs`.
pub fn run_collectives(
    traces: &[Collectives<'_>],
    ranks: &[RankRow],
    out: &Path,
    dirs: &mut std::collections::HashSet<OsString>,
    events: &impl RunEvents,
) -> Result<Vec<RunCollectives>, SetError> {
    let mut reports = Vec::new();
    for run in crate::by_run(ranks) {
        let members: Vec<(u32, &Collectives<'_>)> = run
            .iter()
            .filter_map(|r| Some((r.rank, traces.iter().find(|t| t.trace == r.trace)?)))
            .collect();
        if members.len() < 2 {
            continue;
        }
        let kernels: Vec<crate::RankKernels<'_>> = members
            .iter()
            .map(|(rank, t)| crate::RankKernels { rank: *rank, kernels: t.kernels })
            .collect();
        let gpus_per_node = members[0].1.gpu_devices.filter(|n| *n > 0);
        let report = match crate::collective_report(&kernels, gpus_per_node) {
            Ok(report) => report,
            Err(error) => {
                let run = match run[0].cycle {
                    Some(cycle) => format!("run {}, {cycle}", run[0].run.display()),
                    None => format!("run {}", run[0].run.display()),
                };
                events.note(RunNote::NoCollectiveReport { run, error });
                continue;
            }
        };
        // Named after the run's directory (two runs of one name apart).
        let name =
            run[0].run.file_name().map_or("run".into(), |n| n.to_string_lossy().into_owned());
        let mut stem = crate::report_stem(Path::new(&name));
        if let Some(cycle) = run[0].cycle {
            stem.push_str(&format!("_cycle{}", cycle.number));
        }
        let mut stem = format!("{stem}_collectives");
        if dirs.contains(std::ffi::OsStr::new(&stem)) {
            let digest = sha1_smol::Sha1::from(run[0].run.as_os_str().as_encoded_bytes()).digest();
            stem = format!("{stem}-{}", &digest.to_string()[..12]);
        }
        let dir = out.join(&stem);
        dirs.insert(OsString::from(&stem));
        let mut files: Vec<(String, Vec<u8>)> = report
            .tables
            .iter()
            .map(|(n, t)| (format!("{n}.csv"), t.to_csv().into_bytes()))
            .collect();
        let record = CollectivesRecord::new(&run[0].run, run[0].cycle);
        files.push((CollectivesRecord::FILE.into(), record.to_bytes()));
        write_set(&dir, &COLLECTIVE_FILES, &files)?;
        reports.push(RunCollectives::of(&run[0], &report, dir));
    }
    Ok(reports)
}
