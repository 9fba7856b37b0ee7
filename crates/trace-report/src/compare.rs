//! Two runs compared ([`compare`]): the traces of the two sides
//! ([`crate::compare_sides`]) paired (rank by rank, GPU by GPU, node by
//! node), read, and their tables set side by side, in all and per rank,
//! with each multi-rank run's collectives matched across its ranks.

use std::{collections::HashMap, path::PathBuf};

use trace_summary::{Diff, DiffRow, Failed, Format, Measure, Progress, Tables};

use crate::{
    ComparedSide, Comparison, Member, PairedBy, RankDiff, Record, RunNote, Side, Sides, TraceView,
};

/// The baseline, or the new side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side compared against.
    Baseline,
    /// The side compared.
    New,
}

impl Role {
    /// `baseline`, `new`.
    pub fn word(self) -> &'static str {
        match self {
            Role::Baseline => "baseline",
            Role::New => "new",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// What [`compare`] compares, and how it reads.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The two sides ([`crate::compare_sides`]).
    pub sides: Sides,
    /// Times and counts divided by each trace's steps.
    pub per_step: bool,
    /// Traces read at a time.
    pub jobs: usize,
    /// How each trace is read (salvage, the flag that cancels the
    /// reading); a comparison compares rates, so no roofline is made.
    pub options: trace_summary::Options,
}

impl CompareConfig {
    /// A comparison of `sides`, as `madengine report diff` makes it by
    /// default: totals (not per step), as many traces at a time as there
    /// are CPUs (8 at most).
    pub fn new(sides: Sides) -> CompareConfig {
        CompareConfig {
            sides,
            per_step: false,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(8),
            options: trace_summary::Options::default(),
        }
    }
}

/// What a comparison says as it goes.
#[derive(Debug)]
pub enum CompareNote {
    /// What the search of a side's directory told ([`RunNote::Unlooked`],
    /// [`RunNote::Skipped`], [`RunNote::NothingToRead`]).
    Search(RunNote),
    /// A report directory's record says it is stale: why.
    StaleReport {
        /// The report directory.
        dir: PathBuf,
        /// Why its trace could not be read when it was last summarized.
        why: String,
    },
    /// A report directory left out: the TraceLens run summary beside it
    /// does not name it (a report an earlier run left there).
    NotThisRuns {
        /// The report directory.
        report: PathBuf,
        /// The run summary.
        summary: PathBuf,
    },
    /// rocprofv3 runs whose GPUs repeat across nodes are paired node by node.
    Nodes(crate::Nodes),
    /// What the pairing left out.
    Unpaired(crate::Unpaired),
    /// A trace could not be read (rocprofv3 runs paired by GPU read every
    /// trace first).
    Unreadable {
        /// The trace.
        trace: PathBuf,
        /// Why ([`CompareEvents::failure`]).
        error: String,
    },
    /// A paired trace, or report, could not be read.
    SideUnreadable {
        /// Its side.
        role: Role,
        /// A report directory, not a trace.
        report: bool,
        /// Why.
        error: String,
    },
    /// A paired trace was read, and has no GPU activity to compare (its
    /// view says why).
    NoGpuActivity {
        /// Its side.
        role: Role,
        /// How it was read.
        view: Box<TraceView>,
    },
    /// A paired trace was read: how (what a reader should be warned of is
    /// in its view: what salvage left out, bytes that are not JSON, ...).
    Read {
        /// How it was read.
        view: Box<TraceView>,
    },
    /// A side's ranks make no collective report, so no collectives are
    /// matched across them.
    NoCollectivesMatched {
        /// The side.
        role: Role,
        /// Why.
        error: crate::CollectiveError,
    },
}

/// Where a comparison reports to its caller: its progress and notes (on the
/// calling thread), and why a trace could not be read (on the thread that
/// read it).
pub trait CompareEvents: Sync {
    /// Reading `traces` starts: every trace of both sides for runs paired
    /// by GPU (only reading tells a trace's GPU), else the traces paired.
    fn reading(&self, _traces: &[PathBuf]) {}

    /// Reading trace `i` of those [`CompareEvents::reading`] named started
    /// or ended.
    fn progress(&self, _progress: Progress) {}

    /// The reading ended: every trace read, or cancelled.
    fn read(&self) {}

    /// Something the comparison tells as it goes.
    fn note(&self, _note: CompareNote) {}

    /// Why a trace could not be read, as a note says it: the error and its
    /// causes, on one line.
    fn failure(&self, failed: Failed) -> String {
        trace_summary::one_line(&failed)
    }

    /// What a side's summary says of how `view`'s trace was read, if
    /// anything (repairs, salvage): nothing by default.
    fn side_notes(&self, _view: &TraceView) -> Vec<String> {
        vec![]
    }
}

/// What a trace or report read as, for [`CompareError::KindsDiffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A PyTorch (Kineto) trace.
    Kineto,
    /// A rocprofv3 trace.
    Rocprofv3,
    /// A report of PyTorch tables.
    KinetoReport,
    /// A report of rocprofv3 tables.
    Rocprofv3Report,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Rocprofv3 => "a rocprofv3 JSON trace",
            Kind::Kineto => "a PyTorch (Kineto) trace",
            Kind::Rocprofv3Report => "a report of rocprofv3 tables",
            Kind::KinetoReport => "a report of PyTorch tables",
        })
    }
}

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A side given is not there, or cannot be looked at.
    #[error("cannot read {path}")]
    Missing {
        /// The path given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A side given is an Excel workbook, which holds no table a
    /// comparison reads.
    #[error("{path} is an Excel workbook: give the report's CSV directory instead, or the trace")]
    Workbook {
        /// The workbook.
        path: PathBuf,
    },
    /// A directory given holds nothing to compare.
    #[error(
        "{path} holds no PyTorch or rocprofv3 trace (JSON, rocpd database or Perfetto trace), \
         nor a report, to compare"
    )]
    NothingToCompare {
        /// The directory.
        path: PathBuf,
    },
    /// A side holds several profiling cycles, and none was picked.
    #[error(
        "{path} holds {of} of torch.profiler's profiling cycles (told apart by the time \
         tensorboard_trace_handler put in the names of {}): runs are compared one cycle at a time",
        if *reports { "the traces its reports were made of" } else { "its traces" }
    )]
    SeveralCycles {
        /// The side.
        path: PathBuf,
        /// How many.
        of: usize,
        /// Its members are reports, named by the traces they were made of.
        reports: bool,
    },
    /// The profiling cycle picked is not one a side holds.
    #[error(transparent)]
    Cycle(#[from] crate::CycleError),
    /// A directory could not be searched.
    #[error(transparent)]
    Discover(#[from] trace_discover::Error),
    /// A report directory's record could not be read.
    #[error(transparent)]
    Record(#[from] crate::RecordError),
    /// The TraceLens run summary beside a directory of reports could not be
    /// read.
    #[error(transparent)]
    RunSummary(#[from] crate::SummaryCsvError),
    /// The sides' traces do not pair.
    #[error(transparent)]
    Pair(#[from] crate::PairError),
    /// A paired trace (or report) could not be read, or has no GPU
    /// activity: each said as a [`CompareNote`].
    #[error("{count} of the traces (or reports) paired could not be compared")]
    Unreadable {
        /// How many.
        count: usize,
    },
    /// Two paired traces were read as different kinds, whose tables differ.
    #[error(
        "the baseline {} is {baseline_kind} and the new {} is {new_kind}: their tables differ; \
         compare traces of one kind",
        baseline.display(),
        new.display()
    )]
    KindsDiffer {
        /// The baseline's trace or report.
        baseline: PathBuf,
        /// What it is.
        baseline_kind: Kind,
        /// The new side's.
        new: PathBuf,
        /// What it is.
        new_kind: Kind,
    },
    /// Per step was asked for, and these traces' steps are not known.
    #[error(
        "the steps of {} are not known (a trace without ProfilerStep# or Optimizer.step# \
         annotations, or a TraceLens report: it does not record them)",
        crate::list_paths(traces)
    )]
    StepsUnknown {
        /// The traces (or reports).
        traces: Vec<PathBuf>,
    },
}

/// A trace read: how (its view, without its top rows), and its tables; or
/// why it could not be.
type Read = Result<(TraceView, Tables), String>;

/// Compare the two sides of `config`: pair their traces (rank by rank; GPU
/// by GPU for rocprofv3 runs, whose traces are all read first to tell
/// their GPUs; node by node where GPUs repeat), read those paired (`jobs`
/// at a time) or their reports back, and set their tables side by side:
/// added up over the pairs, per rank, per step if asked. `None` when the
/// reading was cancelled.
pub fn compare(
    config: &CompareConfig,
    events: &impl CompareEvents,
) -> Result<Option<Comparison>, CompareError> {
    let Sides { sides, records } = &config.sides;
    let paths = [sides[0].path.as_path(), sides[1].path.as_path()];
    let mut found = [sides[0].members.clone(), sides[1].members.clone()];
    let mut by = crate::paired_by([&found[0], &found[1]]);
    // rocprofv3 runs pair by the GPU each trace ran its kernels on, which
    // only reading them tells: every trace is read first (once).
    let mut read_first: HashMap<PathBuf, Read> = HashMap::new();
    if by == PairedBy::Gpu {
        let Some(read) = read_for_gpus(config, &mut found, events)? else { return Ok(None) };
        read_first = read;
        if let Some(nodes) = crate::by_node(&mut found) {
            by = PairedBy::NodeGpu;
            events.note(CompareNote::Nodes(nodes));
        }
    }
    let pairing = crate::pair(paths, [&found[0], &found[1]], by)?;
    let pairs = pairing.pairs;
    let unpaired: Vec<String> = pairing.unpaired.iter().map(ToString::to_string).collect();
    for left in pairing.unpaired {
        events.note(CompareNote::Unpaired(left));
    }
    // Only the traces paired are read: baselines first, then the new ones.
    let paired: Vec<&Member> = (pairs.iter().map(|p| &found[0][p.1]))
        .chain(pairs.iter().map(|p| &found[1][p.2]))
        .collect();
    let traces: Vec<&Member> = paired.iter().copied().filter(|m| !m.report).collect();
    let results = match by == PairedBy::Gpu || by == PairedBy::NodeGpu {
        true => traces
            .iter()
            .map(|m| read_first.get(&m.path).cloned().expect("every trace was read first"))
            .collect(),
        false => match read_traces(config, &traces, events) {
            Some(results) => results,
            None => return Ok(None),
        },
    };
    let n = pairs.len();
    let (views, tables) = read_sides(&paired, results, n, records, events)?;
    let reports: Vec<bool> = paired.iter().map(|m| m.report).collect();
    let (base, new) = tables.split_at(n);
    for (i, (b, nw)) in base.iter().zip(new).enumerate() {
        if b.rocprof != nw.rocprof {
            let kind = |k: usize, t: &Tables| match (reports[k], t.rocprof) {
                (false, true) => Kind::Rocprofv3,
                (false, false) => Kind::Kineto,
                (true, true) => Kind::Rocprofv3Report,
                (true, false) => Kind::KinetoReport,
            };
            return Err(CompareError::KindsDiffer {
                baseline: paired[i].path.clone(),
                baseline_kind: kind(i, b),
                new: paired[n + i].path.clone(),
                new_kind: kind(n + i, nw),
            });
        }
    }
    let pairs_of: Vec<(&Tables, &Tables)> = base.iter().zip(new).collect();
    let totals = Diff::summed(&pairs_of);
    let between = |pair: &[(&Tables, &Tables)]| match config.per_step {
        true => Diff::per_step(pair),
        false => Some(Diff::summed(pair)),
    };
    let Some(diff) = between(&pairs_of) else {
        let traces = paired
            .iter()
            .zip(&tables)
            .filter(|(_, t)| t.steps.is_none())
            .map(|(m, _)| m.path.clone())
            .collect();
        return Err(CompareError::StepsUnknown { traces });
    };
    let ranks: Vec<RankDiff> = match n {
        1 => vec![],
        _ => pairs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let d = between(&pairs_of[i..=i]).unwrap_or_default();
                RankDiff {
                    key: p.0.unwrap_or_default(),
                    baseline: paired[i].path.clone(),
                    new: paired[n + i].path.clone(),
                    timeline: d.timeline,
                    collective_kernels: d.collective_kernels,
                }
            })
            .collect(),
    };
    let side = |k: usize, role: Role, measure: fn(&DiffRow) -> Option<Measure>| {
        let at = k * n..(k + 1) * n;
        let launches = launches(&totals.kernels, measure);
        let of = Of { role, side: &sides[k], n };
        side_of(of, &views[at.clone()], &tables[at.clone()], &reports[at], launches, events)
    };
    let sides_compared = [side(0, Role::Baseline, |r| r.base), side(1, Role::New, |r| r.new)];
    let keys: Vec<u32> = pairs.iter().map(|p| p.0.unwrap_or_default()).collect();
    let matched = match config.per_step {
        // Per step, the report's totals would not be.
        true => vec![],
        false => matched_collectives(&views, &keys, &reports, by, events),
    };
    Ok(Some(Comparison {
        sides: sides_compared,
        ranks,
        by,
        diff,
        unpaired,
        per_step: config.per_step,
        matched,
        left_out: [sides[0].left_out.clone(), sides[1].left_out.clone()],
    }))
}

/// `traces` read as a run's are (no roofline: a comparison compares
/// rates), each to its view and tables; `None` if cancelled.
fn read_traces(
    config: &CompareConfig,
    traces: &[&Member],
    events: &impl CompareEvents,
) -> Option<Vec<Read>> {
    let paths: Vec<PathBuf> = traces.iter().map(|m| m.path.clone()).collect();
    let options = config.options.clone().with_gpu_arch(trace_summary::ArchChoice::None);
    let read = |i: usize, result: Result<trace_summary::Summary, Failed>| match result {
        Ok(summary) => {
            let mut view = TraceView::new(paths[i].clone(), traces[i].rank);
            view.read(&summary);
            Ok((view, Tables::from(&summary)))
        }
        Err(failed) => Err(events.failure(failed)),
    };
    events.reading(&paths);
    let results = trace_summary::summarize_files_into(
        &paths,
        config.jobs,
        &options,
        &mut |p| events.progress(p),
        &read,
    );
    events.read();
    results
}

/// rocprofv3 runs pair by the GPU each trace ran its kernels on, which
/// only reading them tells: every trace of both sides read (once), each
/// member given its GPU. `None` when the reading was cancelled;
/// [`CompareError::Unreadable`] when a trace could not be read (each told).
fn read_for_gpus(
    config: &CompareConfig,
    found: &mut [Vec<Member>; 2],
    events: &impl CompareEvents,
) -> Result<Option<HashMap<PathBuf, Read>>, CompareError> {
    let mut seen = std::collections::HashSet::new();
    let traces: Vec<&Member> =
        found.iter().flatten().filter(|m| !m.report && seen.insert(m.path.clone())).collect();
    let Some(results) = read_traces(config, &traces, events) else { return Ok(None) };
    let mut read_first = HashMap::new();
    let mut failed = 0;
    for (member, result) in traces.iter().zip(results) {
        if let Err(error) = &result {
            let (trace, error) = (member.path.clone(), error.clone());
            events.note(CompareNote::Unreadable { trace, error });
            failed += 1;
        }
        read_first.insert(member.path.clone(), result);
    }
    if failed > 0 {
        return Err(CompareError::Unreadable { count: failed });
    }
    for member in found.iter_mut().flatten() {
        if let Some(Ok((view, _))) = read_first.get(&member.path) {
            member.gpu = view.gpu_index;
        }
    }
    Ok(Some(read_first))
}

/// Each paired member's view and tables, baselines first (`n` of them): a
/// report directory read back (its record's GPUs and steps with it), a
/// trace from its `results` (in order). [`CompareError::Unreadable`], each
/// failure told, when one could not be read or has no GPU activity.
fn read_sides(
    paired: &[&Member],
    results: Vec<Read>,
    n: usize,
    records: &HashMap<PathBuf, Record>,
    events: &impl CompareEvents,
) -> Result<(Vec<TraceView>, Vec<Tables>), CompareError> {
    let mut results = results.into_iter();
    let role = |i: usize| if i < n { Role::Baseline } else { Role::New };
    let mut failed = 0;
    let mut views = Vec::new();
    let mut tables = Vec::new();
    for (i, member) in paired.iter().enumerate() {
        let mut view = TraceView::new(member.path.clone(), member.rank);
        if member.report {
            // (A directory given as both sides is looked up twice.)
            let recorded = records.get(&member.path).map(|r| &r.view);
            if let Some(recorded) = recorded {
                view.gpus.clone_from(&recorded.gpus);
                view.gpu_index = recorded.gpu_index;
            }
            match Tables::read_dir(&member.path) {
                Ok(mut read) => {
                    // The steps its CSVs cover, which its record keeps.
                    read.steps = recorded.and_then(|r| r.steps);
                    view.format =
                        Some(if read.rocprof { Format::Rocprofv3 } else { Format::Kineto });
                    tables.push(read);
                }
                Err(err) => {
                    let error = trace_summary::one_line(&err);
                    events.note(CompareNote::SideUnreadable { role: role(i), report: true, error });
                    failed += 1;
                }
            }
            views.push(view);
            continue;
        }
        match results.next().expect("a result per trace") {
            Ok((read, table)) => {
                view = read;
                if table.gpu_timeline.is_none() {
                    let view = Box::new(view.clone());
                    events.note(CompareNote::NoGpuActivity { role: role(i), view });
                    failed += 1;
                }
                events.note(CompareNote::Read { view: Box::new(view.clone()) });
                tables.push(table);
            }
            Err(error) => {
                events.note(CompareNote::SideUnreadable { role: role(i), report: false, error });
                failed += 1;
            }
        }
        views.push(view);
    }
    match failed {
        0 => Ok((views, tables)),
        count => Err(CompareError::Unreadable { count }),
    }
}

/// Kernel launches in all, from the kernel rows (of a diff not per step).
fn launches(rows: &[DiffRow], side: fn(&DiffRow) -> Option<Measure>) -> Option<u64> {
    (!rows.is_empty()).then(|| rows.iter().filter_map(|r| side(r)?.count).sum::<f64>() as u64)
}

/// What names a side: its role, what it stands for, the pairs.
struct Of<'a> {
    role: Role,
    side: &'a Side,
    n: usize,
}

/// A side of `of.n` pairs: its traces' views, tables and whether each is a
/// report read back; its notes ([`CompareEvents::side_notes`]), each said
/// once (a note every trace shares without a trace's name).
fn side_of(
    of: Of<'_>,
    mine: &[TraceView],
    tables: &[Tables],
    reports: &[bool],
    kernel_launches: Option<u64>,
    events: &impl CompareEvents,
) -> ComparedSide {
    let said_all: Vec<Vec<String>> = mine.iter().map(|v| events.side_notes(v)).collect();
    let mut notes: Vec<String> = Vec::new();
    for (v, said) in mine.iter().zip(&said_all) {
        for note in said {
            let all = said_all.iter().all(|s| s.contains(note));
            let note = if all || of.n == 1 {
                note.clone()
            } else {
                format!("{}: {note}", v.trace.display())
            };
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    let steps: Vec<Option<usize>> = tables.iter().map(|t| t.steps).collect();
    ComparedSide {
        role: of.role.word().into(),
        path: of.side.path.clone(),
        traces: mine.iter().map(|v| v.trace.clone()).collect(),
        cycle: of.side.cycle,
        report: reports.iter().any(|r| *r),
        format: if tables[0].rocprof { Format::Rocprofv3 } else { Format::Kineto },
        kernel_launches,
        steps: steps.iter().all(|s| *s == steps[0]).then_some(steps[0]).flatten(),
        gpus: mine.iter().flat_map(|v| &v.gpus).fold(Vec::new(), |mut all, gpu| {
            if !all.contains(gpu) {
                all.push(gpu.clone());
            }
            all
        }),
        notes,
    }
}

/// Each side's collective report, when two runs of traces (not reports)
/// were compared rank by rank and both have collective kernels; what stops
/// one is told.
fn matched_collectives(
    views: &[TraceView],
    keys: &[u32],
    reports: &[bool],
    by: PairedBy,
    events: &impl CompareEvents,
) -> Vec<crate::CollectiveDiff> {
    let n = keys.len();
    if n < 2 || by != PairedBy::Rank || reports.iter().any(|r| *r) {
        return vec![];
    }
    let report = |side: &[TraceView], role: Role| {
        let kernels: Vec<crate::RankKernels<'_>> = side
            .iter()
            .zip(keys)
            .map(|(v, rank)| crate::RankKernels { rank: *rank, kernels: &v.collective_events })
            .collect();
        match crate::collective_report(&kernels, side[0].gpu_devices.filter(|g| *g > 0)) {
            Ok(r) => Some(r),
            Err(crate::CollectiveError::NoCollectives) => None,
            Err(error) => {
                events.note(CompareNote::NoCollectivesMatched { role, error });
                None
            }
        }
    };
    match (report(&views[..n], Role::Baseline), report(&views[n..], Role::New)) {
        (Some(b), Some(nw)) => crate::compare_collectives(&b, &nw),
        _ => vec![],
    }
}
