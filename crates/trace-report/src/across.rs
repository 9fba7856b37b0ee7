//! Tables across the traces of a run, from their GPU timelines: rank by rank
//! (the straggler, and the rank the others waited for), GPU by GPU for
//! rocprofv3's processes (which write no rank), and profiling cycle by
//! cycle.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde::Serialize;

use crate::{Cycle, Picked, RunRule, split_runs};

/// What the tables across traces read of one trace: where it is, what tells
/// it apart from the other traces of its run, and its GPU timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// The trace.
    pub trace: PathBuf,
    /// Its rank, where it has one.
    pub rank: Option<u32>,
    /// Its profiling cycle, and the directory of the job whose cycle it is
    /// ([`cycles_of`](crate::cycles_of)), where the job ran several.
    pub cycle: Option<Picked>,
    /// Read as rocprofv3 records: its timeline has TraceLens' rocprof rows
    /// (`kernel`, `memory`, `busy_time`, `idle`, `total_time`).
    pub rocprof: bool,
    /// The GPU its kernels all ran on, by index among the node's GPUs
    /// (rocprofv3).
    pub gpu_index: Option<u32>,
    /// The time of its collective (RCCL/NCCL) kernels, in ms (rocprofv3).
    pub comm_ms: Option<f64>,
    /// The steps it holds, when it marks them.
    pub steps: Option<usize>,
    /// Its gpu_timeline rows, `(type, ms)`; empty when it has none (it
    /// could not be read, or holds no GPU activity).
    pub timeline: Vec<(String, f64)>,
}

impl Timed {
    /// A trace with no timeline yet, nor anything that tells it apart.
    pub fn new(trace: impl Into<PathBuf>, rank: Option<u32>) -> Timed {
        Timed {
            trace: trace.into(),
            rank,
            cycle: None,
            rocprof: false,
            gpu_index: None,
            comm_ms: None,
            steps: None,
            timeline: vec![],
        }
    }

    /// Milliseconds of a gpu_timeline row (0 when absent).
    pub fn ms(&self, row: &str) -> f64 {
        self.timeline.iter().find(|r| r.0 == row).map_or(0.0, |r| r.1)
    }
}

/// One rank of a cross-rank table (ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RankRow {
    /// The run the rank belongs to: the directory its traces share.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run: PathBuf,
    /// Which of torch.profiler's profiling cycles, where the directory
    /// holds several.
    pub cycle: Option<Cycle>,
    /// Its rank.
    pub rank: u32,
    /// The trace behind the row.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub trace: PathBuf,
    /// `computation_time`.
    pub computation: f64,
    /// `exposed_comm_time`.
    pub exposed_comm: f64,
    /// `idle_time`.
    pub idle: f64,
    /// `total_time`.
    pub total: f64,
    /// The run's straggler: its first rank with the longest GPU time,
    /// flagged only when some rank of the run is faster.
    pub slowest: bool,
    /// Its first rank with the least exposed communication, flagged only
    /// when another spent more: in a job that synchronizes, the one the
    /// others waited for.
    pub least_exposed_comm: bool,
}

impl RankRow {
    /// The trace by its path in the run (tables name the run above it).
    pub fn trace_in_run(&self) -> &Path {
        self.trace.strip_prefix(&self.run).unwrap_or(&self.trace)
    }
}

/// The cross-rank tables, run after run, in rank order; and `(what, why)`
/// for each set of ranked traces that forms no run.
///
/// Ranked traces with a timeline are split into runs by directory wherever a
/// rank is claimed twice (two jobs under one root), and then by profiling
/// cycle, as the collective report splits them ([`split_runs`]); a run
/// needs two ranks or more.
///
/// # Example
///
/// ```
/// use trace_report::{Timed, cross_rank, spread};
///
/// let rank = |r: u32, total: f64| Timed {
///     timeline: vec![("total_time".into(), total), ("exposed_comm_time".into(), 20.0 - total)],
///     ..Timed::new(format!("run/rank{r}.json"), Some(r))
/// };
/// let (rows, no_run) = cross_rank(&[rank(0, 12.0), rank(1, 15.0), rank(2, 11.0)]);
/// assert!(no_run.is_empty());
/// let (slowest, fastest) = spread(&rows).slowest.unwrap();
/// assert_eq!((slowest.rank, fastest.rank), (1, 2));
/// // Rank 1 spent least in collectives: in a job that synchronizes, the others waited for it.
/// assert_eq!(spread(&rows).waited_for.map(|r| r.rank), Some(1));
/// ```
pub fn cross_rank(traces: &[Timed]) -> (Vec<RankRow>, Vec<(String, String)>) {
    let ranked: Vec<(PathBuf, u32)> = traces
        .iter()
        .filter(|t| !t.timeline.is_empty())
        .filter_map(|t| Some((t.trace.clone(), t.rank?)))
        .collect();
    let (runs, reasons) = split_runs(&ranked, RunRule::DistinctRanks);
    let mut rows = Vec::new();
    for run in runs {
        let members: Vec<&Timed> = run
            .members
            .iter()
            .filter_map(|(_, path)| traces.iter().find(|t| t.trace == *path))
            .collect();
        let totals: Vec<f64> = members.iter().map(|t| t.ms("total_time")).collect();
        let flagged = first_extreme(&totals, f64::max);
        let comms: Vec<f64> = members.iter().map(|t| t.ms("exposed_comm_time")).collect();
        let waited_for = first_extreme(&comms, f64::min);
        let dir = shared_dir(members.iter().map(|t| t.trace.as_path()));
        rows.extend(members.iter().enumerate().map(|(i, t)| RankRow {
            run: dir.clone(),
            cycle: run.cycle,
            rank: t.rank.unwrap_or_default(),
            trace: t.trace.clone(),
            computation: t.ms("computation_time"),
            exposed_comm: t.ms("exposed_comm_time"),
            idle: t.ms("idle_time"),
            total: t.ms("total_time"),
            slowest: Some(i) == flagged,
            least_exposed_comm: Some(i) == waited_for,
        }));
    }
    (rows, reasons)
}

/// Rows of one run each ([`cross_rank`]'s), in order.
pub fn by_run(rows: &[RankRow]) -> Vec<&[RankRow]> {
    rows.chunk_by(|a, b| (&a.run, a.cycle) == (&b.run, b.cycle)).collect()
}

/// What a run of many ranks comes down to, so that its table need not be
/// read row by row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread<'a> {
    /// Its slowest rank and its (first) fastest, when a rank is slower than
    /// another.
    pub slowest: Option<(&'a RankRow, &'a RankRow)>,
    /// The median GPU time of its ranks, when it has 3 or more and one is
    /// slower than another.
    pub median: Option<f64>,
    /// The rank with the least exposed communication, when that varies: in
    /// a job that synchronizes, the ranks that wait for a slow one spend
    /// that time in collective kernels, so the rank with the least is the
    /// one they waited for.
    pub waited_for: Option<&'a RankRow>,
}

/// The [`Spread`] of one run's rows (a [`by_run`] chunk).
pub fn spread(run: &[RankRow]) -> Spread<'_> {
    let slowest = run.iter().find(|r| r.slowest).map(|slowest| {
        let fastest = run.iter().fold(slowest, |f, r| if r.total < f.total { r } else { f });
        (slowest, fastest)
    });
    let median = (slowest.is_some() && run.len() >= 3).then(|| {
        let mut totals: Vec<f64> = run.iter().map(|r| r.total).collect();
        totals.sort_by(f64::total_cmp);
        let mid = totals.len() / 2;
        match totals.len().is_multiple_of(2) {
            true => (totals[mid - 1] + totals[mid]) / 2.0,
            false => totals[mid],
        }
    });
    Spread { slowest, median, waited_for: run.iter().find(|r| r.least_exposed_comm) }
}

/// One profiling cycle of a job that holds several: how its GPU time moved
/// from cycle to cycle (warm-up, then steady state).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CycleRow {
    /// The job's directory (its node directories' parent, for a multi-node
    /// job).
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run: PathBuf,
    /// The cycle.
    pub cycle: Cycle,
    /// Its traces with a GPU timeline.
    pub traces: usize,
    /// The GPU time of its slowest trace (the slowest rank's: the one a
    /// synchronizing job waits for), in ms; per step where every trace of
    /// the job counts its steps.
    pub gpu_ms: f64,
    /// Whether [`CycleRow::gpu_ms`] is per step.
    pub per_step: bool,
    /// That slowest trace.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub slowest: PathBuf,
    /// Its rank.
    pub rank: Option<u32>,
}

/// For each job of two profiling cycles or more with a GPU timeline, a row
/// per cycle, in order: the GPU time of its slowest trace.
pub fn cycle_trend(traces: &[Timed]) -> Vec<CycleRow> {
    let mut jobs: BTreeMap<&Path, Vec<(&Timed, Cycle)>> = BTreeMap::new();
    for t in traces.iter().filter(|t| !t.timeline.is_empty()) {
        if let Some(picked) = &t.cycle {
            jobs.entry(picked.dir.as_path()).or_default().push((t, picked.cycle));
        }
    }
    let mut rows = Vec::new();
    for (dir, members) in jobs {
        let numbers: BTreeSet<usize> = members.iter().map(|(_, c)| c.number).collect();
        if numbers.len() < 2 {
            continue;
        }
        let per_step = members.iter().all(|(t, _)| t.steps.is_some_and(|s| s > 0));
        let value = |t: &Timed| match (per_step, t.steps) {
            (true, Some(steps)) => t.ms("total_time") / steps as f64,
            _ => t.ms("total_time"),
        };
        for number in numbers {
            let of_cycle: Vec<&(&Timed, Cycle)> =
                members.iter().filter(|(_, c)| c.number == number).collect();
            let values: Vec<f64> = of_cycle.iter().map(|(t, _)| value(t)).collect();
            // The first of the slowest.
            let Some(at) =
                (0..values.len()).reduce(|a, b| if values[b] > values[a] { b } else { a })
            else {
                continue;
            };
            let (slowest, cycle) = of_cycle[at];
            rows.push(CycleRow {
                run: dir.to_path_buf(),
                cycle: *cycle,
                traces: of_cycle.len(),
                gpu_ms: values[at],
                per_step,
                slowest: slowest.trace.clone(),
                rank: slowest.rank,
            });
        }
    }
    rows
}

/// The cycles of each job ([`cycle_trend`]'s rows), job after job.
pub fn by_job(rows: &[CycleRow]) -> Vec<&[CycleRow]> {
    rows.chunk_by(|a, b| a.run == b.run).collect()
}

/// Each cycle of a job (one [`by_job`] chunk) against its first, in
/// percent; `None` for the first, and for all when the first cycle could
/// not be read.
pub fn vs_first(job: &[CycleRow]) -> Vec<Option<f64>> {
    let first = job.first().filter(|c| c.cycle.number == 1 && c.gpu_ms > 0.0).map(|c| c.gpu_ms);
    job.iter()
        .map(|c| match first {
            Some(first) if c.cycle.number > 1 => Some((c.gpu_ms / first - 1.0) * 100.0),
            _ => None,
        })
        .collect()
}

/// One GPU of a cross-GPU table (ms). rocprofv3 writes no rank: it writes
/// a file per process, and a multi-GPU job runs a process per GPU, all in
/// one directory (`<hostname>/<pid>_results.json`), so a directory's
/// processes are told apart by the GPU each ran its kernels on.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GpuRow {
    /// The directory its run's traces are in.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run: PathBuf,
    /// Its index among the node's GPUs.
    pub gpu: u32,
    /// The trace behind the row.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub trace: PathBuf,
    /// `busy_time`.
    pub busy: f64,
    /// `kernel`.
    pub kernel: f64,
    /// Its collective kernels' time ([`Timed::comm_ms`]): in a job that
    /// synchronizes, the GPU the others waited for has the least.
    pub comm: f64,
    /// `memory`.
    pub memory: f64,
    /// `idle`.
    pub idle: f64,
    /// The profiling session (rocprofv3's total_time).
    pub profiled: f64,
    /// The directory's first GPU with the least collective time, flagged
    /// only when another spent more: the one the others waited for, in a
    /// job that synchronizes.
    pub least_comm: bool,
}

impl GpuRow {
    /// The trace by its file name (tables name the run above it).
    pub fn trace_in_run(&self) -> &Path {
        self.trace.strip_prefix(&self.run).unwrap_or(&self.trace)
    }
}

/// Why a rocprofv3 trace without a rank is in no cross-GPU table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// Its kernels ran on several GPUs (its directory has a table).
    SeveralGpus {
        /// The trace.
        trace: PathBuf,
    },
    /// Two traces of its directory ran their kernels on one GPU, so they
    /// are not one run's (a job run twice into one directory): the
    /// directory has no table.
    GpuTwice {
        /// The directory (empty: the current one).
        dir: PathBuf,
        /// Its traces with a GPU.
        traces: usize,
        /// The GPU claimed twice.
        gpu: u32,
        /// The two traces that claim it.
        claimed_by: [PathBuf; 2],
    },
}

/// The cross-GPU tables of the rocprofv3 traces without a rank, directory
/// by directory, in GPU order; and what was left out of them. A table needs
/// two GPUs or more; a trace whose kernels ran on several GPUs is in none.
pub fn cross_gpu(traces: &[Timed]) -> (Vec<GpuRow>, Vec<LeftOut>) {
    let mut dirs: BTreeMap<&Path, Vec<(u32, &Timed)>> = BTreeMap::new();
    // Traces whose kernels ran on several GPUs, by directory.
    let mut spread: BTreeMap<&Path, Vec<&Path>> = BTreeMap::new();
    for t in traces.iter().filter(|t| t.rank.is_none() && t.rocprof) {
        let dir = t.trace.parent().unwrap_or(Path::new(""));
        match t.gpu_index {
            Some(gpu) => dirs.entry(dir).or_default().push((gpu, t)),
            None => spread.entry(dir).or_default().push(&t.trace),
        }
    }
    let (mut rows, mut left_out) = (Vec::new(), Vec::new());
    for (dir, mut members) in dirs {
        if members.len() < 2 {
            continue;
        }
        for trace in spread.get(dir).into_iter().flatten() {
            left_out.push(LeftOut::SeveralGpus { trace: trace.to_path_buf() });
        }
        members.sort_by_key(|(gpu, t)| (*gpu, &t.trace));
        if let Some(pair) = members.windows(2).find(|w| w[0].0 == w[1].0) {
            left_out.push(LeftOut::GpuTwice {
                dir: dir.to_path_buf(),
                traces: members.len(),
                gpu: pair[0].0,
                claimed_by: [pair[0].1.trace.clone(), pair[1].1.trace.clone()],
            });
            continue;
        }
        let comms: Vec<f64> = members.iter().map(|(_, t)| t.comm_ms.unwrap_or(0.0)).collect();
        let flagged = first_extreme(&comms, f64::min);
        rows.extend(members.iter().enumerate().map(|(i, (gpu, t))| GpuRow {
            run: dir.to_path_buf(),
            gpu: *gpu,
            trace: t.trace.clone(),
            busy: t.ms("busy_time"),
            kernel: t.ms("kernel"),
            comm: t.comm_ms.unwrap_or(0.0),
            memory: t.ms("memory"),
            idle: t.ms("idle"),
            profiled: t.ms("total_time"),
            least_comm: Some(i) == flagged,
        }));
    }
    (rows, left_out)
}

/// The rows of each directory's cross-GPU table ([`cross_gpu`]'s).
pub fn by_dir(rows: &[GpuRow]) -> Vec<&[GpuRow]> {
    rows.chunk_by(|a, b| a.run == b.run).collect()
}

/// The first of `values` that `pick` (`f64::max`, `f64::min`) picks out of
/// all, when they are not all equal: the row a table flags.
fn first_extreme(values: &[f64], pick: fn(f64, f64) -> f64) -> Option<usize> {
    let picked = values.iter().copied().reduce(pick)?;
    let varies = values.iter().any(|v| *v != picked);
    varies.then(|| values.iter().position(|v| *v == picked)).flatten()
}

/// The deepest directory all `traces` are in ("." when none).
fn shared_dir<'a>(mut traces: impl Iterator<Item = &'a Path>) -> PathBuf {
    let parent = |p: &'a Path| p.parent().unwrap_or(Path::new(""));
    let Some(first) = traces.next() else { return PathBuf::from(".") };
    let mut shared: Vec<std::path::Component> = parent(first).components().collect();
    for trace in traces {
        let n = shared.iter().zip(parent(trace).components()).take_while(|(a, b)| *a == b).count();
        shared.truncate(n);
    }
    if shared.is_empty() { PathBuf::from(".") } else { shared.iter().collect() }
}

#[cfg(test)]
mod tests;
