//! `madengine report summary`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use trace_summary::{Cell, Outcome, Table};

use crate::{
    cli::SummaryArgs,
    error::{Error, Status},
    render,
};

/// What the terminal and JSON views show for one trace.
#[derive(Debug, Serialize)]
pub(crate) struct TraceView {
    pub(crate) trace: PathBuf,
    pub(crate) rank: Option<u32>,
    pub(crate) outcome: Outcome,
    pub(crate) csv_dir: Option<PathBuf>,
    /// `(type, ms, percent)` rows of gpu_timeline.
    pub(crate) timeline: Vec<(String, f64, Option<f64>)>,
    /// `(kernel, total µs, percent of kernel time)`, largest first.
    pub(crate) top_kernels: Vec<(String, f64, Option<f64>)>,
    /// `(op, direct ms, percent)`, largest first.
    pub(crate) top_ops: Vec<(String, f64, Option<f64>)>,
}

/// Kineto timelines split GPU time into these four disjoint parts: `(row, label)`.
const KINETO_PARTS: &[(&str, &str)] = &[
    ("computation_time", "computation"),
    ("exposed_comm_time", "exposed comm"),
    ("exposed_memcpy_time", "exposed memcpy"),
    ("idle_time", "idle"),
];
/// rocprofv3 timelines have no compute/communication split.
const ROCPROF_PARTS: &[(&str, &str)] =
    &[("kernel", "kernel"), ("memory", "memory"), ("busy_time", "busy"), ("idle", "idle")];
const ROCPROF_BAR: &[(&str, &str)] = &[("busy_time", "busy"), ("idle", "idle")];

impl TraceView {
    /// Milliseconds of a gpu_timeline row (0 when absent).
    pub(crate) fn ms(&self, name: &str) -> f64 {
        self.timeline.iter().find(|r| r.0 == name).map_or(0.0, |r| r.1)
    }

    /// Percent of a gpu_timeline row.
    pub(crate) fn percent(&self, name: &str) -> Option<f64> {
        self.timeline.iter().find(|r| r.0 == name).and_then(|r| r.2)
    }

    /// The timeline rows worth showing, `(row, label)`.
    pub(crate) fn parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Outcome::Rocprofv3 { ROCPROF_PARTS } else { KINETO_PARTS }
    }

    /// Disjoint rows that add up to the total, for a stacked bar.
    pub(crate) fn bar_parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Outcome::Rocprofv3 { ROCPROF_BAR } else { KINETO_PARTS }
    }
}

/// One rank of the cross-rank table.
#[derive(Debug)]
pub(crate) struct RankRow {
    pub(crate) rank: u32,
    /// The trace behind the row (two runs can hold the same rank).
    pub(crate) trace: PathBuf,
    pub(crate) computation: f64,
    pub(crate) exposed_comm: f64,
    pub(crate) idle: f64,
    pub(crate) total: f64,
    /// The straggler: the first rank with the longest GPU time, flagged only
    /// when some rank is faster.
    pub(crate) slowest: bool,
}

/// The cross-rank table, by rank; empty unless at least two ranked traces have a timeline.
pub(crate) fn cross_rank(views: &[TraceView]) -> Vec<RankRow> {
    let mut ranked: Vec<&TraceView> =
        views.iter().filter(|v| v.rank.is_some() && !v.timeline.is_empty()).collect();
    if ranked.len() < 2 {
        return vec![];
    }
    ranked.sort_by_key(|v| v.rank);
    let totals: Vec<f64> = ranked.iter().map(|v| v.ms("total_time")).collect();
    let slowest = totals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let fastest = totals.iter().copied().fold(f64::INFINITY, f64::min);
    let flagged = if slowest > fastest { totals.iter().position(|t| *t == slowest) } else { None };
    ranked
        .iter()
        .enumerate()
        .map(|(i, v)| RankRow {
            rank: v.rank.unwrap_or_default(),
            trace: v.trace.clone(),
            computation: v.ms("computation_time"),
            exposed_comm: v.ms("exposed_comm_time"),
            idle: v.ms("idle_time"),
            total: v.ms("total_time"),
            slowest: Some(i) == flagged,
        })
        .collect()
}

fn num(c: &Cell) -> Option<f64> {
    match c {
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(f) => Some(*f),
        _ => None,
    }
}

fn text(c: &Cell) -> String {
    match c {
        Cell::Str(s) => s.clone(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => trace_summary::py_float(*f),
        Cell::Empty => String::new(),
    }
}

fn column(t: &Table, name: &str) -> Option<usize> {
    t.header.iter().position(|h| h == name)
}

/// Top rows of a table by `value` column: (label, value, percent).
fn top(
    t: &Table,
    label: &str,
    value: &str,
    pct: &str,
    n: usize,
) -> Vec<(String, f64, Option<f64>)> {
    let (Some(l), Some(v), Some(p)) = (column(t, label), column(t, value), column(t, pct)) else {
        return vec![];
    };
    t.rows.iter().take(n).map(|r| (text(&r[l]), num(&r[v]).unwrap_or(0.0), num(&r[p]))).collect()
}

/// Write `bytes` to `path` atomically (temp file beside it, then a rename).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    trace_sanitize::write_atomic(path, |f| std::io::Write::write_all(f, bytes))
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

fn write_csv(dir: &Path, name: &str, table: &Table) -> Result<(), Error> {
    write_atomic(&dir.join(format!("{name}.csv")), table.to_csv().as_bytes())
}

pub(crate) fn summary(args: &SummaryArgs) -> Result<Status, Error> {
    let (root, traces): (PathBuf, Vec<(PathBuf, Option<u32>)>) = if args.traces.is_empty() {
        let root = args.root.clone().unwrap_or_else(|| PathBuf::from("."));
        let options = trace_discover::Options {
            exclude: vec![args.output_dir.clone()],
            ..Default::default()
        };
        let found = trace_discover::discover(&root, &options)?;
        let traces = found
            .traces
            .iter()
            .filter(|t| {
                matches!(
                    t.kind,
                    trace_discover::TraceKind::Pytorch | trace_discover::TraceKind::RocprofJson
                )
            })
            .map(|t| (t.path.clone(), t.rank.map(|r| r.rank)))
            .collect();
        (root, traces)
    } else {
        let traces = args
            .traces
            .iter()
            .map(|p| {
                let rank = trace_discover::find_rank(p).ok().flatten().map(|r| r.rank);
                (p.clone(), rank)
            })
            .collect();
        (PathBuf::from("."), traces)
    };
    let mut views = Vec::new();
    for (trace, rank) in traces {
        let summary = trace_summary::summarize_file(&trace)?;
        let rel = trace.strip_prefix(&root).unwrap_or(&trace);
        let mut view = TraceView {
            trace: trace.clone(),
            rank,
            outcome: summary.outcome,
            csv_dir: None,
            timeline: vec![],
            top_kernels: vec![],
            top_ops: vec![],
        };
        if let Some(t) = &summary.gpu_timeline {
            let dir = args.output_dir.join(tracelens_driver::report_stem(rel));
            std::fs::create_dir_all(&dir)
                .map_err(|source| Error::Io { path: dir.clone(), source })?;
            write_csv(&dir, "gpu_timeline", t)?;
            view.timeline = t
                .rows
                .iter()
                .map(|r| (text(&r[0]), num(&r[1]).unwrap_or(0.0), num(&r[2])))
                .collect();
            if let Some(k) = &summary.kernel_summary {
                write_csv(&dir, "kernel_summary", k)?;
                view.top_kernels = if summary.outcome == Outcome::Rocprofv3 {
                    // TraceLens' rocprof table: its "(ms)" total is really µs.
                    top(k, "name", "Total Kernel Time (ms)", "Percentage (%)", args.top)
                } else {
                    top(
                        k,
                        "Kernel name",
                        "Kernel duration (µs)_sum",
                        "Percent of kernels time (%)",
                        args.top,
                    )
                };
            }
            if let Some(o) = &summary.ops_summary {
                write_csv(&dir, "ops_summary", o)?;
                view.top_ops =
                    top(o, "name", "total_direct_kernel_time_ms", "Percentage (%)", args.top);
            }
            view.csv_dir = Some(dir);
        }
        views.push(view);
    }
    if let Some(html) = &args.html {
        crate::html::write(html, &views)?;
    }
    if args.json {
        render::json(&views)?;
    } else {
        render::summaries(&views)?;
    }
    Ok(Status::Success)
}
