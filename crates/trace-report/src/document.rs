//! A run's summary as one document: each trace's view, the tables across
//! them, each run's collective report ([`RunSummary`], what `report summary
//! --json` prints); a comparison of two runs ([`RunComparison`], `report
//! diff --json`); and the record a collective report keeps beside its CSVs
//! ([`CollectivesRecord`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trace_summary::{Cell, Table};

use crate::{CollectiveReport, Cycle, CycleRow, GpuRow, RankRow, TraceView};

/// The version of the documents this module writes ([`RunSummary::version`],
/// [`CollectivesRecord::version`]).
pub const SUMMARY_VERSION: u32 = 1;

/// A run's summary: each trace's view, the cross-rank, cross-GPU and
/// profiling-cycle tables across them, and each multi-rank run's collective
/// report. Its fields are in the order the JSON gives them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct RunSummary {
    /// Each multi-rank run's collective report.
    pub collectives: Vec<RunCollectives>,
    /// rocprofv3's processes, GPU by GPU ([`crate::cross_gpu`]).
    pub cross_gpu: Vec<GpuRow>,
    /// The ranks of each run ([`crate::cross_rank`]).
    pub cross_rank: Vec<RankRow>,
    /// How GPU time moved across profiling cycles ([`crate::cycle_trend`]).
    pub cycles: Vec<CycleRow>,
    /// The paths the search could not look at (a link to a trace that is
    /// gone).
    pub left_out: Vec<trace_discover::Problem>,
    /// Read instead of traces: the reports the nodes made of theirs (their
    /// directories).
    #[serde(
        serialize_with = "trace_discover::lossy::paths",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub node_reports: Vec<PathBuf>,
    /// Each trace's view, in the order they were found.
    pub traces: Vec<TraceView>,
    /// How many traces could not be read.
    pub unreadable: usize,
    /// The version of this format ([`SUMMARY_VERSION`]).
    pub version: u32,
}

impl RunSummary {
    /// An empty summary of this version.
    pub fn new() -> RunSummary {
        RunSummary { version: SUMMARY_VERSION, ..RunSummary::default() }
    }
}

/// A row of a collective report table, as JSON: its columns by name,
/// numbers as numbers.
pub type Object = serde_json::Map<String, serde_json::Value>;

/// The number in `key` of a row, if it holds one.
pub fn number(row: &Object, key: &str) -> Option<f64> {
    row.get(key).and_then(serde_json::Value::as_f64)
}

/// A multi-rank run's collective report ([`crate::collective_report`]),
/// as a run's summary gives it; its CSVs are in `csv_dir`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunCollectives {
    /// The run: the directory its ranks' traces share.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run: PathBuf,
    /// Which of its profiling cycles, where it holds several.
    pub cycle: Option<Cycle>,
    /// Where its CSVs were written.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub csv_dir: PathBuf,
    /// Collectives matched across the ranks (`nccl_implicit_sync` rows).
    pub matched: usize,
    /// Matched by order alone (no process group names in the traces).
    pub simplified: bool,
    /// `straggler_summary`'s rows, as objects (its CSV's columns).
    pub straggler: Vec<Object>,
    /// The matched collectives that cost the most once the last rank
    /// arrived: `nccl_implicit_sync` rows by `comm_latency` (at most
    /// [`RunCollectives::TOP`]), each rank's arrival and duration
    /// (`rank_<r>_ts`, `rank_<r>_dur`) included.
    pub top: Vec<Object>,
}

impl RunCollectives {
    /// The most matched collectives [`RunCollectives::top`] holds.
    pub const TOP: usize = 5;

    /// The columns of `nccl_implicit_sync` [`RunCollectives::top`] keeps,
    /// besides each rank's arrival and duration.
    const KEPT: [&str; 9] = [
        "collective_id",
        "Collective name",
        "dtype",
        "Full msg size (MB)",
        "comm_latency",
        "skew in start time",
        "earliest arrival rank",
        "skew in end time",
        "bus bw (GB/s)",
    ];

    /// The summary of `report`, the collective report of the run of
    /// `row` (its first rank's row), written to `csv_dir`.
    pub fn of(row: &RankRow, report: &CollectiveReport, csv_dir: PathBuf) -> RunCollectives {
        let implicit =
            report.table("nccl_implicit_sync").cloned().unwrap_or(Table::new(&[], vec![]));
        let mut top = implicit.clone();
        if let Some(latency) = top.column("comm_latency") {
            top.rows.sort_by(|a, b| {
                let key = |r: &Vec<Cell>| r[latency].number().unwrap_or(0.0);
                key(b).total_cmp(&key(a))
            });
        }
        RunCollectives {
            run: row.run.clone(),
            cycle: row.cycle,
            csv_dir,
            matched: implicit.rows.len(),
            simplified: report.simplified,
            straggler: report
                .table("straggler_summary")
                .map(|t| objects(t, usize::MAX, |_| true))
                .unwrap_or_default(),
            top: objects(&top, RunCollectives::TOP, |h| {
                RunCollectives::KEPT.contains(&h)
                    || (h.starts_with("rank_") && (h.ends_with("_ts") || h.ends_with("_dur")))
            }),
        }
    }

    /// Whether the ranks span nodes (their straggler rows name more than
    /// one `node_id`).
    pub fn spans_nodes(&self) -> bool {
        let nodes: std::collections::BTreeSet<Option<u64>> =
            self.straggler.iter().map(|s| number(s, "node_id").map(f64::to_bits)).collect();
        nodes.len() > 1
    }

    /// The straggler rows, the rank that arrived last most often first.
    pub fn stragglers(&self) -> Vec<&Object> {
        let mut rows: Vec<&Object> = self.straggler.iter().collect();
        let last = |m: &Object| number(m, "times_arrived_last").unwrap_or(0.0);
        rows.sort_by(|a, b| last(b).total_cmp(&last(a)));
        rows
    }
}

/// The rows of `table` as objects (numbers as numbers), the first `n`,
/// of the columns `keep` keeps.
fn objects(table: &Table, n: usize, keep: impl Fn(&str) -> bool) -> Vec<Object> {
    let value = |c: &Cell| match c {
        Cell::Int(i) => serde_json::Value::from(*i),
        Cell::Float(f) if f.is_finite() => serde_json::Value::from(*f),
        Cell::Str(s) => serde_json::Value::from(s.as_str()),
        _ => serde_json::Value::Null,
    };
    let rows = table.rows.iter().take(n);
    rows.map(|row| {
        let cells = table.header.iter().zip(row).filter(|(h, _)| keep(h));
        cells.map(|(h, c)| (h.clone(), value(c))).collect()
    })
    .collect()
}

/// What a collective report's directory keeps besides its CSVs
/// ([`CollectivesRecord::FILE`]): the run it is of, as named and absolute,
/// for a later run to retire it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CollectivesRecord {
    /// The version of this format ([`SUMMARY_VERSION`]); 0 in records
    /// written before it was kept.
    pub version: u32,
    /// The run, as the run that wrote it named it.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run: PathBuf,
    /// Its absolute path.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub run_absolute: PathBuf,
    /// Which of its profiling cycles, where it holds several.
    pub cycle: Option<Cycle>,
}

impl CollectivesRecord {
    /// Its file name.
    pub const FILE: &str = "collectives.json";

    /// The record of `run`'s report (`cycle` of it, if any).
    pub fn new(run: &Path, cycle: Option<Cycle>) -> CollectivesRecord {
        CollectivesRecord {
            version: SUMMARY_VERSION,
            run: run.to_path_buf(),
            run_absolute: std::path::absolute(run).unwrap_or_else(|_| run.to_path_buf()),
            cycle,
        }
    }

    /// The record in `dir`, when it is a collective report's directory
    /// whose record this version reads.
    pub fn read(dir: &Path) -> Option<CollectivesRecord> {
        let text = std::fs::read(dir.join(CollectivesRecord::FILE)).ok()?;
        let record: CollectivesRecord = serde_json::from_slice(&text).ok()?;
        (!record.run_absolute.as_os_str().is_empty()).then_some(record)
    }

    /// As it is written: pretty JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        pretty(self)
    }
}

/// A document as it is written: pretty JSON, ending with a newline.
pub(crate) fn pretty<T: Serialize>(document: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(document).expect("the documents serialize");
    bytes.push(b'\n');
    bytes
}

/// A comparison of two traces or runs (a baseline and a new one), as one
/// document: each side, their tables' rows side by side (added up over
/// every pair of traces), rank by rank (or GPU by GPU) where two runs were
/// compared, their collectives matched across ranks, their op shapes'
/// rates, and what the gates found. Its fields are in the order the JSON
/// gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunComparison {
    /// The baseline.
    pub baseline: ComparedSide,
    /// rocprofv3: the COMM kernels' time (ms), all ranks or GPUs.
    pub collective_kernels: Option<ComparedRow>,
    /// Collective calls' rows (per call, added up over the ranks).
    pub collectives: Vec<ComparedRow>,
    /// Multi-rank runs of traces: collectives matched across ranks, per
    /// type, dtype and size, each side's.
    pub collectives_matched: Vec<crate::CollectiveDiff>,
    /// The CSVs written (`-o`).
    #[serde(serialize_with = "trace_discover::lossy::paths")]
    pub csvs: Vec<PathBuf>,
    /// GEMM shapes past the GEMM gate, the most lost first.
    pub gemm_regressions: Vec<ShapeRegression>,
    /// GEMM shapes (µs, calls; TFLOPS/s each side), all ranks.
    pub gemms: Vec<ComparedShape>,
    /// The page written, if any.
    #[serde(serialize_with = "trace_discover::lossy::option")]
    pub html: Option<PathBuf>,
    /// Kernel categories' rows (rocprofv3).
    pub kernel_categories: Vec<ComparedRow>,
    /// Kernels' rows.
    pub kernels: Vec<ComparedRow>,
    /// What each side's search could not look at.
    pub left_out: SidesLeftOut,
    /// The new side.
    pub new: ComparedSide,
    /// Op categories' rows.
    pub op_categories: Vec<ComparedRow>,
    /// Attention and convolution shapes, as [`RunComparison::gemms`].
    pub op_shapes: Vec<ComparedShape>,
    /// Ops' rows.
    pub ops: Vec<ComparedRow>,
    /// What paired the runs' traces: `rank`, or `gpu` (rocprofv3).
    pub paired_by: String,
    /// Times and counts are per step.
    pub per_step: bool,
    /// Rank by rank (or GPU by GPU), when two runs were compared.
    pub ranks: Vec<ComparedRank>,
    /// What the overall regression gate found, when it was asked for.
    pub regression: Option<Regression>,
    /// The sides' tables are TraceLens' rocprof ones.
    pub rocprof: bool,
    /// Shapes past the shape gate (GEMM, attention, convolution).
    pub shape_regressions: Vec<ShapeRegression>,
    /// The timeline's rows (ms).
    pub timeline: Vec<ComparedRow>,
    /// Ranks (or GPUs) of one run only, left out, as said.
    pub unpaired: Vec<String>,
    /// The version of this format ([`SUMMARY_VERSION`]).
    pub version: u32,
}

/// One side of a comparison (the baseline, or the new run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComparedSide {
    /// `baseline` or `new`.
    pub role: String,
    /// The path given.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub path: PathBuf,
    /// The traces compared, in rank order (or the report directory).
    #[serde(serialize_with = "trace_discover::lossy::paths")]
    pub traces: Vec<PathBuf>,
    /// The profiling cycle compared, of a directory of several.
    pub cycle: Option<Cycle>,
    /// A report read back (its CSVs), not a trace.
    pub report: bool,
    /// What its traces were read as.
    pub format: trace_summary::Format,
    /// Kernel launches in all (when the traces have kernel tables).
    pub kernel_launches: Option<u64>,
    /// Steps per trace, when every trace of the side has the same known
    /// number ([`trace_summary::Steps`]).
    pub steps: Option<usize>,
    /// The GPU models its traces name, each once.
    pub gpus: Vec<String>,
    /// What the reader should know about how its traces were read, each
    /// once, with the trace it is about.
    pub notes: Vec<String>,
}

/// A row of both sides, with its delta and ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComparedRow {
    /// The row: its name and each side's time and count.
    #[serde(flatten)]
    pub row: trace_summary::DiffRow,
    /// New time minus the baseline's ([`trace_summary::DiffRow::delta`]).
    pub delta: f64,
    /// New time over the baseline's ([`trace_summary::DiffRow::ratio`]).
    pub ratio: Option<f64>,
}

impl ComparedRow {
    /// `row`, with its delta and ratio.
    pub fn of(row: &trace_summary::DiffRow) -> ComparedRow {
        ComparedRow { row: row.clone(), delta: row.delta(), ratio: row.ratio() }
    }

    /// Each of `rows`.
    pub fn all(rows: &[trace_summary::DiffRow]) -> Vec<ComparedRow> {
        rows.iter().map(ComparedRow::of).collect()
    }
}

/// An op shape of both sides: its row, the GFLOPs of one call, and each
/// side's TFLOPS/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComparedShape {
    /// Its row (µs, calls).
    #[serde(flatten)]
    pub row: ComparedRow,
    /// GFLOPs of one call.
    pub gflops_per_call: f64,
    /// The baseline's TFLOPS/s.
    pub baseline_tflops: Option<f64>,
    /// The new side's.
    pub new_tflops: Option<f64>,
    /// How its TFLOPS/s changed, in % of the baseline's.
    pub tflops_change_pct: Option<f64>,
}

impl ComparedShape {
    /// Each of `rows`.
    pub fn all(rows: &[trace_summary::GemmDiffRow]) -> Vec<ComparedShape> {
        let shape = |g: &trace_summary::GemmDiffRow| ComparedShape {
            row: ComparedRow::of(&g.row),
            gflops_per_call: g.gflops,
            baseline_tflops: g.tflops(g.row.base),
            new_tflops: g.tflops(g.row.new),
            tflops_change_pct: g.change_pct(),
        };
        rows.iter().map(shape).collect()
    }
}

/// One rank (or GPU) of two runs compared rank by rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ComparedRank {
    /// Its rank, when the runs were paired by rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its node, when paired node by node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// Its GPU, when paired by GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// The baseline's trace.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub baseline: PathBuf,
    /// The new run's.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub new: PathBuf,
    /// Its timeline's rows side by side (ms).
    pub timeline: Vec<ComparedRow>,
    /// rocprofv3: its collective kernels' time, side by side (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective_kernels: Option<ComparedRow>,
}

impl ComparedRank {
    /// The pair keyed `key` ([`crate::PairedBy::fields`]).
    pub fn keyed(by: crate::PairedBy, key: u32) -> ComparedRank {
        let mut rank = ComparedRank::default();
        for (name, value) in by.fields(key) {
            match name {
                "rank" => rank.rank = Some(value),
                "node" => rank.node = Some(value),
                _ => rank.gpu = Some(value),
            }
        }
        rank
    }
}

/// The overall regression gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Regression {
    /// The limit asked for (%; negative: a gain asked for).
    pub limit_percent: f64,
    /// How the headline changed (%).
    pub change_percent: f64,
    /// Whether the change is past the limit.
    pub exceeded: bool,
}

/// An op shape whose TFLOPS/s fell by more than a gate's limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShapeRegression {
    /// The shape, as its row names it.
    pub shape: String,
    /// The baseline's TFLOPS/s.
    pub baseline_tflops: f64,
    /// The new side's.
    pub new_tflops: f64,
    /// The change, in % of the baseline's (negative: slower).
    pub change_pct: f64,
}

/// What each side's search could not look at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct SidesLeftOut {
    /// The baseline's.
    pub baseline: Vec<trace_discover::Problem>,
    /// The new side's.
    pub new: Vec<trace_discover::Problem>,
}
