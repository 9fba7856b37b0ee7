//! Two summaries side by side: where GPU time moved between a baseline
//! trace and a new one.
//!
//! Rows are matched by name: `gpu_timeline` rows by type, kernels by kernel
//! name (TraceLens' Kineto `kernel_summary` has a row per kernel, parent op
//! and stream; they are added up here), ops by name. A name found in one
//! trace only still gets a row, with the other side empty.
//!
//! Either side can also be a report already written ([`Tables::read_dir`]):
//! the CSVs of `report summary`, or of TraceLens' own `--output_csvs_dir`.

use std::{collections::BTreeMap, path::Path};

use serde::Serialize;

use crate::{
    Error, Result,
    compute::{Cell, Table},
    summary::{Outcome, Summary},
};

/// The tables a comparison reads: a trace's [`Summary`], or a report's
/// CSVs ([`Tables::read_dir`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    /// TraceLens' rocprof tables (a rocprofv3 trace's), not the PyTorch ones.
    pub rocprof: bool,
    /// `gpu_timeline`.
    pub gpu_timeline: Option<Table>,
    /// `kernel_summary`.
    pub kernel_summary: Option<Table>,
    /// `ops_summary`.
    pub ops_summary: Option<Table>,
    /// `collective_summary` ([`Summary::collective_summary`]).
    pub collective_summary: Option<Table>,
    /// `GEMM`, the GEMM perf-model sheet ([`Summary::gemm`]).
    pub gemm: Option<Table>,
    /// The attention and convolution perf-model sheets, by name
    /// ([`SHAPE_SHEETS`]), those there are.
    pub shape_sheets: Vec<(String, Table)>,
    /// The steps the tables cover ([`Summary::steps`], its count); `None`
    /// when not known: a report's CSVs do not hold them (its record does,
    /// `trace_report::Record`, which TraceLens' own reports lack).
    pub steps: Option<usize>,
}

impl From<&Summary> for Tables {
    fn from(s: &Summary) -> Tables {
        Tables {
            rocprof: s.outcome == Outcome::Rocprofv3,
            gpu_timeline: s.gpu_timeline.clone(),
            kernel_summary: s.kernel_summary.clone(),
            ops_summary: s.ops_summary.clone(),
            collective_summary: s.collective_summary.clone(),
            gemm: s.gemm.clone(),
            shape_sheets: s
                .perf_sheets
                .iter()
                .filter(|(n, _)| SHAPE_SHEETS.contains(&n.as_str()))
                .cloned()
                .collect(),
            steps: s.steps.map(|s| s.count),
        }
    }
}

/// The columns a comparison reads from each table, by kind.
const TIMELINE: (&str, &str) = ("type", "time ms");
const KINETO_KERNELS: [&str; 3] =
    ["Kernel name", "Kernel duration (µs)_sum", "Kernel duration (µs)_count"];
// TraceLens' rocprof table: its "(ms)" total is really µs
// (reference/tracelens-metrics.md, section 10).
const ROCPROF_KERNELS: [&str; 3] = ["name", "Total Kernel Time (ms)", "Count"];
const OPS: [&str; 3] = ["name", "total_direct_kernel_time_ms", "Count"];
const GEMM: [&str; 4] = ["name", "GFLOPS_first", "Kernel Time (µs)_sum", "name_count"];

/// The perf-model sheets of attention and convolution shapes a comparison
/// reads beside `GEMM` (their columns are `GEMM`'s too).
pub const SHAPE_SHEETS: [&str; 4] = ["SDPA_fwd", "SDPA_bwd", "CONV_fwd", "CONV_bwd"];

impl Tables {
    /// Whether `dir` holds a report: a `gpu_timeline.csv`.
    pub fn is_report_dir(dir: &Path) -> bool {
        dir.join("gpu_timeline.csv").is_file()
    }

    /// Read a report directory as `report summary` writes it (and TraceLens'
    /// perf and rocprof reports with `--output_csvs_dir`): `gpu_timeline.csv`,
    /// and `kernel_summary.csv`, `ops_summary.csv` and
    /// `collective_summary.csv` where present (not the steps: see
    /// [`Tables::steps`]). The rocprof tables are told by their timeline's
    /// `kernel` row.
    pub fn read_dir(dir: &Path) -> Result<Tables> {
        let path = dir.join("gpu_timeline.csv");
        let timeline = read_csv(&path)?.ok_or(Error::CsvColumn {
            path: path.clone(),
            table: "gpu_timeline",
            column: TIMELINE.0,
        })?;
        require(&timeline, &path, "gpu_timeline", &[TIMELINE.0, TIMELINE.1])?;
        let rocprof = named(&timeline, TIMELINE.0, TIMELINE.1, None)
            .is_some_and(|rows| rows.iter().any(|(name, _)| name == "kernel"));
        let optional = |file: &str, table: &'static str, columns: &[&'static str]| {
            let path = dir.join(file);
            if !path.is_file() {
                return Ok(None);
            }
            let t = read_csv(&path)?;
            if let Some(t) = &t {
                require(t, &path, table, columns)?;
            }
            Ok::<_, Error>(t)
        };
        let kernels = if rocprof { &ROCPROF_KERNELS } else { &KINETO_KERNELS };
        Ok(Tables {
            rocprof,
            gpu_timeline: Some(timeline),
            kernel_summary: optional("kernel_summary.csv", "kernel_summary", kernels)?,
            ops_summary: optional("ops_summary.csv", "ops_summary", &OPS)?,
            collective_summary: optional(
                "collective_summary.csv",
                "collective_summary",
                &crate::collective::HEADER,
            )?,
            gemm: optional("GEMM.csv", "GEMM", &GEMM)?,
            shape_sheets: SHAPE_SHEETS
                .iter()
                .map(|&n| Ok(optional(&format!("{n}.csv"), n, &GEMM)?.map(|t| (n.to_string(), t))))
                .filter_map(Result::transpose)
                .collect::<Result<_>>()?,
            steps: None,
        })
    }
}

/// A CSV as a table of text cells (empty ones [`Cell::Empty`]); `None` for
/// the 1-byte file TraceLens writes for a table without rows or columns.
fn read_csv(path: &Path) -> Result<Option<Table>> {
    let file = std::fs::File::open(path)
        .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let csv_error = |source| Error::Csv { path: path.to_path_buf(), source };
    let mut reader = csv::Reader::from_reader(std::io::BufReader::new(file));
    let header: Vec<String> =
        reader.headers().map_err(csv_error)?.iter().map(String::from).collect();
    if header.iter().all(String::is_empty) {
        return Ok(None);
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        rows.push(
            record
                .iter()
                .map(|f| if f.is_empty() { Cell::Empty } else { Cell::Str(f.to_string()) })
                .collect(),
        );
    }
    Ok(Some(Table { header, rows }))
}

fn require(t: &Table, path: &Path, table: &'static str, columns: &[&'static str]) -> Result<()> {
    match columns.iter().find(|c| t.column(c).is_none()) {
        Some(column) => Err(Error::CsvColumn { path: path.to_path_buf(), table, column }),
        None => Ok(()),
    }
}

/// A row's time (and count, where its table has one) in one trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Measure {
    /// Milliseconds for timeline rows and ops, microseconds for kernels.
    pub time: f64,
    /// Kernel launches, or op calls; `None` for timeline rows. Whole,
    /// unless divided by the steps ([`Diff::per_step`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
}

/// One name in both traces.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DiffRow {
    /// The timeline row type, kernel name or op name.
    pub name: String,
    /// In the baseline; `None` when the baseline has no such row.
    #[serde(rename = "baseline")]
    pub base: Option<Measure>,
    /// In the new trace; `None` when it has no such row.
    pub new: Option<Measure>,
}

impl DiffRow {
    /// New time minus baseline time (a missing side counts as 0).
    pub fn delta(&self) -> f64 {
        self.new.map_or(0.0, |m| m.time) - self.base.map_or(0.0, |m| m.time)
    }

    /// New time over baseline time, when both exist and the baseline's is
    /// not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.base, self.new) {
            (Some(b), Some(n)) if b.time != 0.0 => Some(n.time / b.time),
            _ => None,
        }
    }
}

/// Where GPU time moved between two traces' tables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Diff {
    /// `gpu_timeline` rows (ms), in the baseline's order, then rows only the
    /// new trace has.
    pub timeline: Vec<DiffRow>,
    /// Kernels by name (µs, all launches added up), the largest change
    /// first. Empty unless both traces have a `kernel_summary`.
    pub kernels: Vec<DiffRow>,
    /// Ops by name (GPU ms of the kernels they launched directly, as
    /// `ops_summary`'s `total_direct_kernel_time_ms`), the largest change
    /// first. Empty unless both traces have an `ops_summary`.
    pub ops: Vec<DiffRow>,
    /// Op categories ([`crate::op_categories`]: ms of the kernels their ops
    /// launched directly, op calls), the largest change first: what traces
    /// of different GPUs, whose kernels have other names, share. Empty
    /// unless both traces have an `ops_summary` with `Categories`.
    pub op_categories: Vec<DiffRow>,
    /// rocprofv3 tables: kernel categories ([`crate::kernel_categories`]:
    /// ms, launches), the largest change first. Empty unless both traces
    /// have a rocprof `kernel_summary` with `Category`.
    pub kernel_categories: Vec<DiffRow>,
    /// Collective calls by call ([`Summary::collective_summary`]: µs of
    /// their kernels, calls), named `allreduce Float[2049000], 2 ranks`
    /// (elements in, `->` out where they differ), the largest change
    /// first. Empty unless both traces have collective tables.
    pub collectives: Vec<DiffRow>,
    /// rocprofv3 tables: the kernels TraceLens' `kernel_summary`
    /// categorizes `COMM` (NCCL/RCCL collectives), added up into one row
    /// named `collectives` (ms, launches). Their time is part of the
    /// timeline's `kernel` row, which does not tell it apart. `None` for
    /// Kineto tables (their timeline has `exposed_comm_time`), or unless
    /// both sides have a `kernel_summary` with its `Category` column.
    pub collective_kernels: Option<DiffRow>,
    /// GEMM shapes ([`Summary::gemm`]: µs of their kernels, calls), named
    /// by op, shape and dtypes ([`gemm_shape`]), the largest change first,
    /// with the TFLOPS/s each side reached. Empty unless both sides have a
    /// GEMM sheet.
    pub gemms: Vec<GemmDiffRow>,
    /// The attention and convolution shapes ([`SHAPE_SHEETS`], named by
    /// [`op_shape`]), likewise; empty unless both sides are PyTorch traces'
    /// tables.
    pub shapes: Vec<GemmDiffRow>,
}

/// One GEMM (or other modelled op) shape in both traces: its time and
/// calls each side, and the FLOPs of one call, so each side's TFLOPS/s.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GemmDiffRow {
    /// Times (µs) and calls.
    #[serde(flatten)]
    pub row: DiffRow,
    /// GFLOPs of one call.
    pub gflops: f64,
}

impl GemmDiffRow {
    /// TFLOPS/s of one side: its calls' FLOPs over their kernel time;
    /// `None` without calls or time.
    pub fn tflops(&self, side: Option<Measure>) -> Option<f64> {
        let m = side?;
        let calls = m.count?;
        (m.time > 0.0).then(|| (self.gflops * calls / 1e3) / (m.time / 1e6))
    }

    /// How the TFLOPS/s changed, in % of the baseline's (negative: slower);
    /// `None` unless both sides have a rate.
    pub fn change_pct(&self) -> Option<f64> {
        let (b, n) = (self.tflops(self.row.base)?, self.tflops(self.row.new)?);
        (b > 0.0).then(|| (n / b - 1.0) * 100.0)
    }
}

/// A GEMM sheet row's shape, as the comparison names it: `aten::addmm
/// 141x512x512 bf16` (`8x...` for a batch of 8; both dtypes where they
/// differ). `None` for a table without the GEMM columns.
pub fn gemm_shape(t: &Table, row: &[Cell]) -> Option<String> {
    let text = |name: &str| t.column(name).map(|c| row[c].text()).filter(|s| !s.is_empty());
    let dims = ["param: M", "param: N", "param: K"].map(|c| text(c).unwrap_or_else(|| "?".into()));
    let batch = text("param: B").filter(|b| b != "1" && b != "1.0").map(|b| format!("{b}x"));
    let dtypes = text("param: dtype_A_B").unwrap_or_default();
    Some(format!(
        "{} {}{} {}",
        row[t.column("name")?].text(),
        batch.unwrap_or_default(),
        dims.join("x"),
        short_dtypes(&dtypes)
    ))
}

/// A dtype tuple as TraceLens prints it (`('c10::BFloat16', 'float')`)
/// in short: `bf16*fp32`, a repeated one once.
fn short_dtypes(tuple: &str) -> String {
    let mut short: Vec<&str> = tuple
        .trim_matches(|c| c == '(' || c == ')')
        .split(", ")
        .map(|d| d.trim_matches('\''))
        .filter(|d| !d.is_empty() && *d != "None")
        .map(|d| match d {
            "float" => "fp32",
            "double" => "fp64",
            "c10::BFloat16" => "bf16",
            "c10::Half" => "fp16",
            other => other.strip_prefix("c10::").unwrap_or(other),
        })
        .collect();
    short.dedup();
    short.join("*")
}

/// A row of a perf-model sheet in short, by its sheet (`GEMM`,
/// `SDPA_fwd`, `SDPA_bwd`, `CONV_fwd`, `CONV_bwd`): a GEMM's
/// [`gemm_shape`]; an attention's `B×H×N_Q×N_KV×d` (`causal` where it is)
/// and dtype; a convolution's input and filter shapes, stride, padding and
/// dtype. `None` for another sheet, or a row without its parameters.
pub fn op_shape(sheet: &str, t: &Table, row: &[Cell]) -> Option<String> {
    let text = |name: &str| t.column(name).map(|c| row[c].text()).filter(|s| !s.is_empty());
    let name = row[t.column("name")?].text();
    match sheet {
        "GEMM" => gemm_shape(t, row),
        "SDPA_fwd" | "SDPA_bwd" => {
            let dims = ["param: B", "param: H_Q", "param: N_Q", "param: N_KV", "param: d_h_qk"]
                .map(|c| text(c).unwrap_or_else(|| "?".into()));
            let causal = match text("param: causal").as_deref() {
                Some("True") => " causal",
                _ => "",
            };
            let dtypes = short_dtypes(&text("param: dtype_A_B").unwrap_or_default());
            let pass = if sheet == "SDPA_bwd" { " backward" } else { "" };
            Some(format!("{name}{pass} {}{causal} {dtypes}", dims.join("x")))
        }
        "CONV_fwd" | "CONV_bwd" => {
            let input = text("param: input_shape")?;
            let filter = text("param: filter_shape")?;
            let stride = text("param: stride").unwrap_or_default();
            let padding = text("param: padding").unwrap_or_default();
            let dtypes = short_dtypes(&text("param: dtype_input_weight").unwrap_or_default());
            Some(format!("{name} {input} * {filter} stride {stride} padding {padding} {dtypes}"))
        }
        _ => None,
    }
}

impl Diff {
    /// Compare `base` with `new`. Tables of different kinds (a Kineto and
    /// a rocprofv3 trace's) have different rows: they then mostly match
    /// nothing, so callers should refuse such a pair.
    pub fn between(base: &Tables, new: &Tables) -> Diff {
        Diff::summed(&[(base, new)])
    }

    /// Compare several pairs at once (the ranks of two runs, rank by rank):
    /// each row's times and counts are added up over the baselines, and
    /// over the new sides. Kernels and ops count only when every side has
    /// the table.
    pub fn summed(pairs: &[(&Tables, &Tables)]) -> Diff {
        Diff::build(pairs, false)
    }

    /// [`Diff::summed`] per profiler step: each side's times and counts
    /// divided by its [`Tables::steps`] first, so traces of different step
    /// counts compare. `None` when a side's steps are not known.
    pub fn per_step(pairs: &[(&Tables, &Tables)]) -> Option<Diff> {
        let known = pairs.iter().all(|(b, n)| b.steps.is_some() && n.steps.is_some());
        known.then(|| Diff::build(pairs, true))
    }

    fn build(pairs: &[(&Tables, &Tables)], per_step: bool) -> Diff {
        let base: Vec<&Tables> = pairs.iter().map(|p| p.0).collect();
        let new: Vec<&Tables> = pairs.iter().map(|p| p.1).collect();
        let of = |side: &[&Tables], table: fn(&Tables) -> Option<Named>| -> Option<Named> {
            let lists: Option<Vec<Named>> = side
                .iter()
                .map(|s| {
                    let steps = match per_step {
                        true => s.steps.unwrap_or(1).max(1) as f64,
                        false => 1.0,
                    };
                    let mut rows = table(s)?;
                    for (_, m) in &mut rows {
                        m.time /= steps;
                        m.count = m.count.map(|c| c / steps);
                    }
                    Some(rows)
                })
                .collect();
            Some(add_up(lists?.into_iter()))
        };
        let timeline = merge(
            of(&base, |s| Some(timeline(s))).unwrap_or_default(),
            of(&new, |s| Some(timeline(s))).unwrap_or_default(),
            false,
        );
        let both = |table: fn(&Tables) -> Option<Named>| match (of(&base, table), of(&new, table)) {
            (Some(b), Some(n)) => merge(b, n, true),
            _ => vec![],
        };
        Diff {
            timeline,
            kernels: both(kernels),
            ops: both(ops_of),
            op_categories: both(categories_of),
            kernel_categories: both(kernel_categories_of),
            collectives: both(collectives),
            collective_kernels: both(collective_kernels).pop(),
            gemms: rated_rows(&base, &new, both(gemms), gemm_sheet),
            shapes: match base.iter().chain(&new).any(|s| s.rocprof) {
                true => vec![],
                false => rated_rows(&base, &new, both(shapes), other_sheets),
            },
        }
    }

    /// The GEMM shapes as a table: `shape`, `baseline count`, `new count`,
    /// `baseline µs`, `new µs`, `delta µs`, `ratio`, `GFLOPS per call`,
    /// `baseline TFLOPS/s`, `new TFLOPS/s`, `TFLOPS/s change %`.
    pub fn gemms_table(&self) -> Table {
        rated_table(&self.gemms)
    }

    /// The attention and convolution shapes as a table, with the columns
    /// of [`Diff::gemms_table`].
    pub fn shapes_table(&self) -> Table {
        rated_table(&self.shapes)
    }

    /// The timeline rows as a table: `type`, `baseline ms`, `new ms`,
    /// `delta ms`, `ratio`.
    pub fn timeline_table(&self) -> Table {
        table(&self.timeline, "type", "ms", false)
    }

    /// The kernel rows as a table: `name`, `baseline count`, `new count`,
    /// `baseline µs`, `new µs`, `delta µs`, `ratio`.
    pub fn kernels_table(&self) -> Table {
        table(&self.kernels, "name", "µs", true)
    }

    /// The op rows as a table: `name`, `baseline count`, `new count`,
    /// `baseline ms`, `new ms`, `delta ms`, `ratio`.
    pub fn ops_table(&self) -> Table {
        table(&self.ops, "name", "ms", true)
    }

    /// The op category rows as a table: `category`, `baseline count`, `new
    /// count`, `baseline ms`, `new ms`, `delta ms`, `ratio`.
    pub fn op_categories_table(&self) -> Table {
        table(&self.op_categories, "category", "ms", true)
    }

    /// The kernel category rows as a table: `category`, `baseline count`,
    /// `new count`, `baseline ms`, `new ms`, `delta ms`, `ratio`.
    pub fn kernel_categories_table(&self) -> Table {
        table(&self.kernel_categories, "category", "ms", true)
    }

    /// The collective rows as a table: `call`, `baseline count`, `new
    /// count`, `baseline µs`, `new µs`, `delta µs`, `ratio`.
    pub fn collectives_table(&self) -> Table {
        table(&self.collectives, "call", "µs", true)
    }

    /// The [`Diff::collective_kernels`] row as a table: `name`, `baseline
    /// count`, `new count`, `baseline ms`, `new ms`, `delta ms`, `ratio`
    /// (no row for Kineto tables).
    pub fn collective_kernels_table(&self) -> Table {
        table(self.collective_kernels.as_slice(), "name", "ms", true)
    }
}

/// Rows by name, in first-seen order, with what is added up per name.
type Named = Vec<(String, Measure)>;

fn table(rows: &[DiffRow], label: &str, unit: &str, counted: bool) -> Table {
    let mut header = vec![label.to_string()];
    if counted {
        header.extend(["baseline count".to_string(), "new count".to_string()]);
    }
    header.extend(
        ["baseline", "new", "delta"]
            .iter()
            .map(|side| format!("{side} {unit}"))
            .chain(["ratio".into()]),
    );
    let time = |m: Option<Measure>| m.map_or(Cell::Empty, |m| Cell::Float(m.time));
    let count = |m: Option<Measure>| match m.and_then(|m| m.count) {
        Some(c) if c.fract() == 0.0 => Cell::Int(c as i64),
        Some(c) => Cell::Float(c),
        None => Cell::Empty,
    };
    let rows = rows
        .iter()
        .map(|r| {
            let mut cells = vec![Cell::Str(r.name.clone())];
            if counted {
                cells.extend([count(r.base), count(r.new)]);
            }
            cells.extend([
                time(r.base),
                time(r.new),
                Cell::Float(r.delta()),
                r.ratio().map_or(Cell::Empty, Cell::Float),
            ]);
            cells
        })
        .collect();
    Table { header, rows }
}

/// Join two sides by name. `by_change`: sort by the size of the change,
/// largest first (ties by name); else keep the baseline's order.
fn merge(base: Named, new: Named, by_change: bool) -> Vec<DiffRow> {
    let mut new_at: BTreeMap<String, Measure> = new.iter().cloned().collect();
    let mut rows: Vec<DiffRow> = base
        .into_iter()
        .map(|(name, m)| {
            let other = new_at.remove(&name);
            DiffRow { name, base: Some(m), new: other }
        })
        .collect();
    rows.extend(new.into_iter().filter_map(|(name, _)| {
        let m = new_at.remove(&name)?;
        Some(DiffRow { name, base: None, new: Some(m) })
    }));
    if by_change {
        rows.sort_by(|a, b| {
            b.delta().abs().total_cmp(&a.delta().abs()).then_with(|| a.name.cmp(&b.name))
        });
    }
    rows
}

/// A cell's number, NaN as none (TraceLens writes NaN as an empty field).
fn num(c: &Cell) -> Option<f64> {
    c.number().filter(|f| !f.is_nan())
}

/// `label`, `time` and `count` columns of `t`, added up per label.
fn named(t: &Table, label: &str, time: &str, count: Option<&str>) -> Option<Named> {
    let (l, v) = (t.column(label)?, t.column(time)?);
    let c = match count {
        Some(name) => Some(t.column(name)?),
        None => None,
    };
    let rows = t.rows.iter().map(|row| {
        let time = num(&row[v]).unwrap_or(0.0);
        let count = c.map(|c| num(&row[c]).unwrap_or(0.0));
        (row[l].text(), Measure { time, count })
    });
    Some(add_up(std::iter::once(rows.collect())))
}

/// The rows of `lists`, one per name (in first-seen order), times and
/// counts added up.
fn add_up(lists: impl Iterator<Item = Named>) -> Named {
    let mut out: Named = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for (name, m) in lists.flatten() {
        match at.get(&name) {
            Some(&i) => {
                out[i].1.time += m.time;
                out[i].1.count = out[i].1.count.zip(m.count).map(|(a, b)| a + b);
            }
            None => {
                at.insert(name.clone(), out.len());
                out.push((name, m));
            }
        }
    }
    out
}

fn timeline(s: &Tables) -> Named {
    let named = |t| named(t, TIMELINE.0, TIMELINE.1, None);
    s.gpu_timeline.as_ref().and_then(named).unwrap_or_default()
}

fn kernels(s: &Tables) -> Option<Named> {
    let [name, time, count] = if s.rocprof { ROCPROF_KERNELS } else { KINETO_KERNELS };
    named(s.kernel_summary.as_ref()?, name, time, Some(count))
}

/// Rated shapes as a table: `shape`, `baseline count`, `new count`,
/// `baseline µs`, `new µs`, `delta µs`, `ratio`, `GFLOPS per call`,
/// `baseline TFLOPS/s`, `new TFLOPS/s`, `TFLOPS/s change %`.
fn rated_table(shapes: &[GemmDiffRow]) -> Table {
    let rows: Vec<DiffRow> = shapes.iter().map(|g| g.row.clone()).collect();
    let mut t = table(&rows, "shape", "µs", true);
    t.header.extend(
        ["GFLOPS per call", "baseline TFLOPS/s", "new TFLOPS/s", "TFLOPS/s change %"]
            .map(String::from),
    );
    let cell = |v: Option<f64>| v.map_or(Cell::Empty, Cell::Float);
    for (cells, g) in t.rows.iter_mut().zip(shapes) {
        cells.extend([
            Cell::Float(g.gflops),
            cell(g.tflops(g.row.base)),
            cell(g.tflops(g.row.new)),
            cell(g.change_pct()),
        ]);
    }
    t
}

/// A side's sheets of one kind, by name.
type Sheets<'a> = fn(&'a Tables) -> Vec<(&'a str, &'a Table)>;

fn gemm_sheet(s: &Tables) -> Vec<(&str, &Table)> {
    s.gemm.iter().map(|t| ("GEMM", t)).collect()
}

fn other_sheets(s: &Tables) -> Vec<(&str, &Table)> {
    s.shape_sheets.iter().map(|(n, t)| (n.as_str(), t)).collect()
}

/// A side's shapes of `sheets` ([`op_shape`]): kernel time (µs) and calls.
fn rated_shapes<'a>(s: &'a Tables, sheets: Sheets<'a>) -> Option<Named> {
    let mut lists = Vec::new();
    for (sheet, t) in sheets(s) {
        let (time, count) = (t.column(GEMM[2])?, t.column(GEMM[3])?);
        let rows: Option<Named> = t
            .rows
            .iter()
            .map(|row| {
                let m = Measure { time: num(&row[time]).unwrap_or(0.0), count: num(&row[count]) };
                Some((op_shape(sheet, t, row)?, m))
            })
            .collect();
        lists.push(rows?);
    }
    Some(add_up(lists.into_iter()))
}

/// A GEMM sheet's shapes ([`gemm_shape`]); `None` without one.
fn gemms(s: &Tables) -> Option<Named> {
    s.gemm.as_ref()?;
    rated_shapes(s, gemm_sheet)
}

/// The attention and convolution shapes, of the sheets a side has.
fn shapes(s: &Tables) -> Option<Named> {
    rated_shapes(s, other_sheets)
}

/// `rows` with each shape's GFLOPs per call, from the first side's sheet
/// that has the shape.
fn rated_rows<'a>(
    base: &[&'a Tables],
    new: &[&'a Tables],
    rows: Vec<DiffRow>,
    sheets: Sheets<'a>,
) -> Vec<GemmDiffRow> {
    let mut gflops: BTreeMap<String, f64> = BTreeMap::new();
    for (sheet, t) in base.iter().chain(new).flat_map(|s| sheets(s)) {
        let Some(g) = t.column(GEMM[1]) else { continue };
        for row in &t.rows {
            if let (Some(shape), Some(v)) = (op_shape(sheet, t, row), num(&row[g])) {
                gflops.entry(shape).or_insert(v);
            }
        }
    }
    rows.into_iter()
        .map(|row| GemmDiffRow { gflops: gflops.get(&row.name).copied().unwrap_or(0.0), row })
        .collect()
}

/// A collective table's calls, named by what tells them apart.
fn collectives(s: &Tables) -> Option<Named> {
    let t = s.collective_summary.as_ref()?;
    let at = |name: &str| t.column(name);
    let [name, dtype, group, inn, out, count, total] = [
        "Collective name",
        "dtype",
        "Group size",
        "In msg nelems",
        "Out msg nelems",
        "Count",
        "Total duration (µs)",
    ]
    .map(at);
    let (name, dtype, group, inn, out) = (name?, dtype?, group?, inn?, out?);
    let (count, total) = (count?, total?);
    let rows = t.rows.iter().map(|row| {
        let (i, o) = (row[inn].text(), row[out].text());
        let elements = if i == o { i } else { format!("{i}->{o}") };
        let call = format!(
            "{} {}[{elements}], {} ranks",
            row[name].text(),
            row[dtype].text(),
            row[group].text()
        );
        let m = Measure { time: num(&row[total]).unwrap_or(0.0), count: num(&row[count]) };
        (call, m)
    });
    Some(add_up(std::iter::once(rows.collect())))
}

/// A rocprof kernel table's `COMM` category as one row, `collectives`
/// (0 ms when it has none).
fn collective_kernels(s: &Tables) -> Option<Named> {
    let comm = kernel_categories_of(s)?.into_iter().find(|(name, _)| name == "COMM");
    let m = comm.map_or(Measure { time: 0.0, count: Some(0.0) }, |(_, m)| m);
    Some(vec![("collectives".to_string(), m)])
}

fn categories_of(s: &Tables) -> Option<Named> {
    named_categories(crate::op_categories(s.ops_summary.as_ref()?)?)
}

fn kernel_categories_of(s: &Tables) -> Option<Named> {
    let t = s.kernel_summary.as_ref().filter(|_| s.rocprof)?;
    named_categories(crate::kernel_categories(t)?)
}

fn named_categories(categories: Vec<crate::Category>) -> Option<Named> {
    let named = categories
        .into_iter()
        .map(|c| (c.name, Measure { time: c.ms, count: Some(c.count as f64) }));
    Some(named.collect())
}

fn ops_of(s: &Tables) -> Option<Named> {
    let [name, time, count] = OPS;
    named(s.ops_summary.as_ref()?, name, time, Some(count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(time: f64, count: Option<u64>) -> Measure {
        Measure { time, count: count.map(|c| c as f64) }
    }

    #[test]
    fn rows_join_by_name_and_sort_by_the_size_of_the_change() {
        let base = vec![
            ("gemm".to_string(), m(100.0, Some(2))),
            ("add".to_string(), m(10.0, Some(5))),
            ("gone".to_string(), m(30.0, Some(1))),
        ];
        let new = vec![
            ("add".to_string(), m(12.0, Some(5))),
            ("gemm".to_string(), m(50.0, Some(2))),
            ("fresh".to_string(), m(40.0, Some(3))),
        ];
        let rows = merge(base.clone(), new.clone(), true);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["gemm", "fresh", "gone", "add"]);
        assert_eq!(rows[0].delta(), -50.0);
        assert_eq!(rows[0].ratio(), Some(0.5));
        assert_eq!((rows[1].base, rows[1].ratio()), (None, None));
        assert_eq!(rows[2].new, None);
        assert_eq!(rows[2].delta(), -30.0);
        // The timeline keeps the baseline's order, new rows after.
        let kept: Vec<String> = merge(base, new, false).into_iter().map(|r| r.name).collect();
        assert_eq!(kept, ["gemm", "add", "gone", "fresh"]);
    }

    #[test]
    fn rows_of_one_name_add_up() {
        let t = Table {
            header: vec!["Kernel name".into(), "sum".into(), "count".into()],
            rows: vec![
                vec![Cell::Str("k".into()), Cell::Int(3), Cell::Int(1)],
                vec![Cell::Str("j".into()), Cell::Float(1.5), Cell::Int(2)],
                vec![Cell::Str("k".into()), Cell::Float(4.5), Cell::Int(3)],
            ],
        };
        let rows = named(&t, "Kernel name", "sum", Some("count")).unwrap();
        assert_eq!(rows, [("k".to_string(), m(7.5, Some(4))), ("j".to_string(), m(1.5, Some(2)))]);
        assert_eq!(named(&t, "Kernel name", "missing", None), None);
    }

    #[test]
    fn tables_have_a_column_per_side() {
        let rows = vec![DiffRow { name: "k,1".into(), base: Some(m(2.0, Some(1))), new: None }];
        let csv = table(&rows, "name", "µs", true).to_csv();
        assert_eq!(
            csv,
            "name,baseline count,new count,baseline µs,new µs,delta µs,ratio\n\"k,1\",1,,2.0,,-2.0,\n"
        );
    }
}
