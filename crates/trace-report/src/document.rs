//! A run's summary as one document: each trace's view, the tables across
//! them, each run's collective report ([`RunSummary`], what `--json`
//! prints), and the record a collective report keeps beside its CSVs
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
    #[serde(serialize_with = "lossy_paths", skip_serializing_if = "Vec::is_empty")]
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

/// Paths as text, lossily where they are not UTF-8.
fn lossy_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.to_string_lossy()))
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
        let mut bytes = serde_json::to_vec_pretty(self).expect("a record serializes");
        bytes.push(b'\n');
        bytes
    }
}
