//! Run-level analysis of GPU profiler traces: what a set of traces says
//! that no single trace does, and the documents a run's report is made of.
//! No TraceLens, no Python: it works on paths, ranks and the tables
//! `trace-summary` reads, and reads and writes only its own records.
//!
//! - [`TraceView`] is what a run's report says of one trace (how it was
//!   read, its timeline, its top kernels, ops, collectives and op shapes,
//!   its roofline); [`Record`] is what the report keeps beside the trace's
//!   CSVs (`summary.json`), read back by a later run; [`RunSummary`] is the
//!   whole run's (`--json`), with each run's [`RunCollectives`];
//!   [`RunComparison`] is two runs compared. Each is versioned, and read
//!   back as written.
//! - [`write_set`] and [`Staged`] put a report's files in place as one set
//!   (whole or not at all); [`retire_stale`], [`retire`] and [`keep_stale`]
//!   deal with the reports an earlier run left, telling each ([`Retired`]).
//! - [`split_runs`] splits ranked traces into runs: by directory wherever a
//!   rank is claimed twice (two jobs under one root), then by the profiling
//!   cycles of torch.profiler's schedule ([`profiling_cycles`]), with the
//!   reason each set that forms no run fails ([`RunRule`]).
//! - [`cross_rank`], [`cross_gpu`] and [`cycle_trend`] set a run's traces
//!   side by side from their GPU timelines ([`Timed`]): the straggler rank
//!   and the one the others waited for, rocprofv3's processes GPU by GPU,
//!   and how GPU time moved across profiling cycles.
//! - [`pair`] says which trace of one run compares with which of another
//!   (rank by rank; rocprofv3 processes GPU by GPU, node by node).
//! - [`collective_report`] matches each NCCL/RCCL collective across a run's
//!   ranks, as TraceLens' multi-rank collective report does: its latency
//!   once the last rank arrived, the skew of the arrivals, the straggler;
//!   [`compare_collectives`] sets two runs' reports side by side.
//! - [`compare_sides`] says what each side of a comparison stands for, and
//!   [`compare`] compares two runs: their traces paired, read and set side
//!   by side, in all and per rank ([`Comparison`]).
//! - [`report_stem`] and [`Stems`] name a trace's report in an output
//!   directory, as the original madengine did, unique and short enough.
//!
//! # Example
//!
//! ```
//! use std::path::PathBuf;
//! use trace_report::{RunRule, split_runs};
//!
//! // Two jobs under one root, each of ranks 0 and 1.
//! let traces: Vec<(PathBuf, u32)> = ["job_1", "job_2"]
//!     .iter()
//!     .flat_map(|job| (0..2).map(move |r| (PathBuf::from(format!("{job}/rank{r}.json")), r)))
//!     .collect();
//! let (runs, no_run) = split_runs(&traces, RunRule::Complete { world: 0 });
//! assert!(no_run.is_empty());
//! let dirs: Vec<_> = runs.iter().map(|r| (r.dir.display().to_string(), r.world_size)).collect();
//! assert_eq!(dirs, [("job_1".to_string(), 2), ("job_2".to_string(), 2)]);
//! ```
#![deny(missing_docs)]

mod across;
mod collective;
mod compare;
mod comparison;
mod cycles;
mod document;
mod inputs;
mod pairing;
mod run;
mod runs;
mod sets;
mod sides;
mod tracelens_run;
mod view;

pub use crate::{
    across::{
        CycleRow, GpuRow, LeftOut, RankRow, Spread, Timed, by_dir, by_job, by_run, cross_gpu,
        cross_rank, cycle_trend, spread, vs_first,
    },
    collective::{
        CollectiveDiff, CollectiveError, CollectiveReport, CollectiveSide, RankKernels,
        coll_analysis, collective_report, compare_collectives,
    },
    compare::{CompareConfig, CompareError, CompareEvents, CompareNote, Kind, Role, compare},
    comparison::{Comparison, Headline, RankDiff, timed},
    cycles::{
        Cycle, CycleError, CyclePick, NoCycles, Picked, cycles_of, keep_cycle, pick_cycle,
        profiling_cycles,
    },
    document::{
        CollectivesRecord, ComparedRank, ComparedRow, ComparedShape, ComparedSide, Object,
        Regression, RunCollectives, RunComparison, RunSummary, SUMMARY_VERSION, ShapeRegression,
        SidesLeftOut, number,
    },
    inputs::{HoldsRun, InputError, Inputs, check_not_searched, run_inputs},
    pairing::{
        Member, Nodes, PairError, PairedBy, Pairing, Unpaired, by_node, list_paths, pair, paired_by,
    },
    run::{
        Collectives, RunConfig, RunEvents, RunNote, RunReport, TraceInput, across,
        coll_analysis_of, run_collectives, summarize_run,
    },
    runs::{MAX_STEM, RankedRun, RunRule, Stems, numbers, report_stem, split_runs},
    sets::{
        COLLECTIVE_FILES, Retired, SetError, Staged, TRACE_FILES, ThisRun, Why, keep_stale,
        own_stem, retire, retire_stale, write_set,
    },
    sides::{Side, Sides, compare_sides},
    tracelens_run::{
        JobStatus, RunReports, SummaryCsvError, SummaryRow, TRACELENS_SUMMARY_COLUMNS,
        TRACELENS_SUMMARY_CSV, TRACELENS_SUMMARY_JSON, read_tracelens_summary, this_runs_reports,
    },
    view::{
        Bound, CollectiveRow, GemmRow, RECORD_VERSION, Rated, Record, RecordError, Roofline,
        RooflinePoint, ShapeRow, TopRow, TraceView, Truncated,
    },
};

/// What can go wrong here: a profiling cycle asked for that a directory
/// does not hold, or two runs whose traces do not pair.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// See [`CycleError`].
    #[error(transparent)]
    Cycle(#[from] CycleError),
    /// See [`PairError`].
    #[error(transparent)]
    Pair(#[from] PairError),
    /// See [`CollectiveError`].
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// See [`RecordError`].
    #[error(transparent)]
    Record(#[from] RecordError),
    /// See [`SetError`].
    #[error(transparent)]
    Set(#[from] SetError),
}

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
