//! The view of one trace a run's report gives: how it was read, its
//! timeline, its top kernels, ops, collectives and op shapes, its
//! roofline ([`TraceView`]), as `--json` prints it and the record beside
//! its CSVs keeps it ([`Record`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trace_summary::{Outcome, Table};

use crate::Picked;

/// What the terminal and JSON views show for one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct TraceView {
    /// The trace, as the run named it.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub trace: PathBuf,
    /// Its rank, where its name, its directory or its content gives one.
    pub rank: Option<u32>,
    /// Which of torch.profiler's profiling cycles, where its directory holds
    /// several ([`crate::cycles_of`]: what `--cycle` picks by),
    /// and the directory of the job whose cycle that is (its node
    /// directories' parent, for a multi-node job; not in `--json`).
    #[serde(
        serialize_with = "cycle_only",
        deserialize_with = "cycle_read",
        skip_serializing_if = "Option::is_none",
        default
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<crate::Cycle>"))]
    pub cycle: Option<Picked>,
    /// What the trace was read as; `None` when it could not be read.
    pub format: Option<trace_summary::Format>,
    /// Which rule applied; `None` when the trace could not be read.
    pub outcome: Option<Outcome>,
    /// Events read (rocprofv3: GPU records); `None` when the trace could not
    /// be read.
    pub events: Option<usize>,
    /// GPUs the traced process saw (entries of its `deviceProperties`), when
    /// the trace lists them; 0: it ran on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_devices: Option<usize>,
    /// The GPU models the trace names ([`trace_summary::Summary::gpus`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// The GPU its kernels all ran on, by index among the node's GPUs
    /// ([`trace_summary::Summary::gpu_index`]: rocprofv3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_index: Option<u32>,
    /// The GPU whose roofline its GEMM shapes are compared with
    /// (`--gpu-arch`, else its own GPU's bundled spec), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_arch: Option<String>,
    /// Whether its CPU ops carry their input shapes
    /// ([`trace_summary::Summary::shapes_recorded`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shapes_recorded: Option<bool>,
    /// For rocprofv3: the time of its collective (RCCL/NCCL) kernels, the
    /// kernel table's `COMM` rows added up (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_ms: Option<f64>,
    /// Why the trace could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where a trace read with --salvage was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// Bytes after the end of the JSON document of a trace read with
    /// --salvage, dropped unread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_after_end: Option<u64>,
    /// What was repaired while reading, when anything was: strict parsers
    /// (TraceLens) refuse the file as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<trace_sanitize::Counts>,
    /// The first bare word that is not JSON, in a part of the trace the
    /// tables do not read: TraceLens refuses the trace, repaired or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_json: Option<trace_sanitize::NotJson>,
    /// The first token where the JSON grammar allows none, in a part of the
    /// trace the tables do not read: TraceLens refuses the trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<trace_sanitize::Malformed>,
    /// `traceEvents` lists before the last (the key given twice): not read,
    /// as TraceLens reads only the last.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub earlier_event_lists: u32,
    /// rocpd records left out for want of a time.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub dropped_records: u64,
    /// GPU events with a negative duration.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub negative_durations: usize,
    /// For rocprofv3: the lists its buffer_records hold; for Kineto without
    /// a traceEvents list: its top-level keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record_lists: Vec<String>,
    /// Steps the trace holds, when it marks them ([`trace_summary::Steps`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
    /// What marked them: `ProfilerStep#` or `Optimizer.step#`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_marked_by: Option<trace_summary::StepMarker>,
    /// The directory its report (CSVs and record) was written to.
    #[serde(serialize_with = "trace_discover::lossy::option")]
    pub csv_dir: Option<PathBuf>,
    /// `(type, ms, percent)` rows of gpu_timeline.
    pub timeline: Vec<(String, f64, Option<f64>)>,
    /// Kernels by total µs, largest first.
    pub top_kernels: Vec<TopRow>,
    /// Ops by GPU ms launched directly, largest first.
    pub top_ops: Vec<TopRow>,
    /// Op categories (`GEMM`, `SDPA_fwd`, ...) by the GPU ms their ops
    /// launched directly, largest first ([`trace_summary::op_categories`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_op_categories: Vec<TopRow>,
    /// For rocprofv3: kernel categories (`GEMM`, `Elementwise`, `COMM`, ...)
    /// by GPU ms, largest first ([`trace_summary::kernel_categories`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_kernel_categories: Vec<TopRow>,
    /// Collective calls by total kernel time, largest first
    /// ([`trace_summary::Summary::collective_summary`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_collectives: Vec<CollectiveRow>,
    /// GEMM shapes by total kernel time, largest first, with the TFLOPS/s
    /// and TB/s they reached ([`trace_summary::Summary::gemm`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_gemms: Vec<GemmRow>,
    /// Attention and convolution shapes by total kernel time, largest
    /// first, likewise ([`trace_summary::Summary::perf_sheets`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_shapes: Vec<ShapeRow>,
    /// Its op shapes against the roofline ([`Roofline`]), where any was
    /// modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    /// Its kernels shorter than 10 µs, in all (Kineto traces with a GPU
    /// timeline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_kernels: Option<trace_summary::ShortKernels>,
    /// Its collective kernels, for the run's collective report (not in
    /// `--json`: the report is).
    #[serde(skip)]
    pub collective_events: Vec<trace_summary::CollectiveKernel>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// A trace's cycle as `--json` gives it: `{"number": 2, "of": 3}`.
fn cycle_only<S: serde::Serializer>(picked: &Option<Picked>, s: S) -> Result<S::Ok, S::Error> {
    picked.as_ref().map(|p| p.cycle).serialize(s)
}

/// A cycle read back ([`cycle_only`]): its job's directory is not kept.
fn cycle_read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Picked>, D::Error> {
    let cycle = Option::<crate::Cycle>::deserialize(d)?;
    Ok(cycle.map(|cycle| Picked { dir: PathBuf::new(), cycle }))
}

/// A row of `collective_summary`: one distinct collective call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct CollectiveRow {
    /// The collective: `allreduce`, `allgather`, ...
    pub name: String,
    /// Its element type, as the trace names it.
    pub dtype: String,
    /// The ranks of its process group.
    pub group_size: i64,
    /// The larger of its input and output, as nccl-tests sizes it; `None`
    /// for a dtype madengine does not know.
    pub bytes: Option<i64>,
    /// Its calls.
    pub count: i64,
    /// Its kernels' time over all calls (µs).
    pub total_us: f64,
    /// Per call (µs).
    pub mean_us: f64,
    /// The bus bandwidth it reached, as nccl-tests computes it (GB/s).
    pub busbw_gbps: Option<f64>,
}

impl CollectiveRow {
    /// The first `n` rows of a `collective_summary` table.
    fn top(t: &Table, n: usize) -> Vec<CollectiveRow> {
        let at = |name: &str| t.column(name).expect("collective_summary's own header");
        let int = |r: &[trace_summary::Cell], name: &str| r[at(name)].number().map(|v| v as i64);
        t.rows
            .iter()
            .take(n)
            .map(|r| CollectiveRow {
                name: r[at("Collective name")].text(),
                dtype: r[at("dtype")].text(),
                group_size: int(r, "Group size").unwrap_or(0),
                bytes: int(r, "Message bytes"),
                count: int(r, "Count").unwrap_or(0),
                total_us: r[at("Total duration (µs)")].number().unwrap_or(0.0),
                mean_us: r[at("Mean duration (µs)")].number().unwrap_or(0.0),
                busbw_gbps: r[at("busbw (GB/s)")].number(),
            })
            .collect()
    }

    /// `allreduce Float, 26.6 MB, 2 ranks`.
    pub fn call(&self) -> String {
        let size = self.bytes.map(|b| format!(", {}", bytes_text(b))).unwrap_or_default();
        format!("{} {}{size}, {} ranks", self.name, self.dtype, self.group_size)
    }
}

/// A modelled op shape's kernel time, calls and rates, as a perf-model
/// sheet's row gives them ([`GemmRow`], [`ShapeRow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Rated {
    /// Its calls.
    pub count: i64,
    /// Its kernels' time over all calls (µs).
    pub total_us: f64,
    /// The mean over its calls of each call's rate; `None` where its
    /// kernels took no time, or its bytes are unknown.
    pub tflops_per_s: Option<f64>,
    /// Likewise, of the bytes it moved (TB/s).
    pub tb_per_s: Option<f64>,
    /// With a roofline: the mean over its calls of the share of the
    /// roofline each reached (%), and which roof bounds it (`memory`,
    /// `compute`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct_roofline: Option<f64>,
    /// The roof that bounds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
}

/// Which roof of the roofline bounds an op shape ([`Rated::bound`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Its arithmetic intensity is below the ridge point: memory bandwidth
    /// bounds it (TraceLens' `MEMORY_BOUND`).
    Memory,
    /// Above it: the compute peak does (`COMPUTE_BOUND`).
    Compute,
}

impl Bound {
    /// `memory`, `compute`.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Rated {
    /// Of row `r` of a perf-model sheet (table `t`).
    fn of(t: &Table, r: &[trace_summary::Cell]) -> Rated {
        let cell = |name: &str| t.column(name).map(|c| r[c].clone());
        let number = |name: &str| cell(name).and_then(|c| c.number());
        Rated {
            count: number("name_count").map_or(0, |v| v as i64),
            total_us: number("Kernel Time (µs)_sum").unwrap_or(0.0),
            tflops_per_s: number("TFLOPS/s_mean"),
            tb_per_s: number("TB/s_mean"),
            pct_roofline: number("Pct Roofline_mean"),
            bound: match cell("Roofline Bound_first").map(|c| c.text()).as_deref() {
                Some("MEMORY_BOUND") => Some(Bound::Memory),
                Some("COMPUTE_BOUND") => Some(Bound::Compute),
                _ => None,
            },
        }
    }
}

/// A row of the `GEMM` sheet: one GEMM op and shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct GemmRow {
    /// The op.
    pub name: String,
    /// `aten::addmm 141x512x512 bf16` ([`trace_summary::gemm_shape`]).
    pub shape: String,
    /// `M`.
    pub m: Option<i64>,
    /// `N`.
    pub n: Option<i64>,
    /// `K`.
    pub k: Option<i64>,
    /// The batch `B`.
    pub b: Option<i64>,
    /// Its input dtypes, as TraceLens prints them: `('c10::BFloat16', 'c10::BFloat16')`.
    pub dtypes: String,
    /// Its time, calls and rates.
    #[serde(flatten)]
    pub rated: Rated,
}

impl GemmRow {
    /// The first `n` rows of a `GEMM` table.
    fn top(t: &Table, n: usize) -> Vec<GemmRow> {
        let cell = |r: &[trace_summary::Cell], name: &str| t.column(name).map(|c| r[c].clone());
        let int = |r: &[trace_summary::Cell], name: &str| {
            cell(r, name).and_then(|c| c.number()).map(|v| v as i64)
        };
        t.rows
            .iter()
            .take(n)
            .map(|r| GemmRow {
                name: r[0].text(),
                shape: trace_summary::gemm_shape(t, r).unwrap_or_else(|| r[0].text()),
                m: int(r, "param: M"),
                n: int(r, "param: N"),
                k: int(r, "param: K"),
                b: int(r, "param: B"),
                dtypes: cell(r, "param: dtype_A_B").map(|c| c.text()).unwrap_or_default(),
                rated: Rated::of(t, r),
            })
            .collect()
    }
}

/// A row of an attention or convolution perf-model sheet (`SDPA_fwd`,
/// `SDPA_bwd`, `CONV_fwd`, `CONV_bwd`): one op and shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ShapeRow {
    /// The sheet it is of.
    pub sheet: String,
    /// The op.
    pub name: String,
    /// `aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16`
    /// ([`trace_summary::op_shape`]).
    pub shape: String,
    /// Its time, calls and rates.
    #[serde(flatten)]
    pub rated: Rated,
}

impl ShapeRow {
    /// The attention and convolution shapes of `sheets` that took the
    /// most kernel time, at most `n`.
    fn top(sheets: &[(String, Table)], n: usize) -> Vec<ShapeRow> {
        let mut rows: Vec<ShapeRow> = Vec::new();
        for (sheet, t) in sheets {
            if !trace_summary::SHAPE_SHEETS.contains(&sheet.as_str()) {
                continue;
            }
            rows.extend(t.rows.iter().take(n).map(|r| ShapeRow {
                sheet: sheet.clone(),
                name: r[0].text(),
                shape: trace_summary::op_shape(sheet, t, r).unwrap_or_else(|| r[0].text()),
                rated: Rated::of(t, r),
            }));
        }
        rows.sort_by(|a, b| b.rated.total_us.total_cmp(&a.rated.total_us));
        rows.truncate(n);
        rows
    }
}

/// The op shapes of a trace against its roofline: a point per modelled
/// op and shape of `unified_perf_summary` (its arithmetic intensity and
/// rate), and the roofs of the spec it was compared with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Roofline {
    /// The spec's name; `None` without one (points, no roofs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Its memory roof (TB/s) and compute roofs (TFLOPS/s) by `Compute
    /// Spec`, those of the points' specs it has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_tb_per_s: Option<f64>,
    /// Its compute roofs, `(Compute Spec, TFLOPS/s)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_tflops_per_s: Vec<(String, f64)>,
    /// The shapes that took the most kernel time (at most
    /// [`Roofline::POINTS`]).
    pub points: Vec<RooflinePoint>,
}

/// A point of [`Roofline`]: one op and shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct RooflinePoint {
    /// The op.
    pub name: String,
    /// Its perf-model category (`GEMM`, `SDPA_fwd`, ...).
    pub category: String,
    /// FLOPs per byte moved.
    pub flops_per_byte: f64,
    /// TFLOPS/s reached, the mean over its calls.
    pub tflops_per_s: f64,
    /// Its kernels' time over all calls (µs).
    pub total_us: f64,
    /// Its calls.
    pub count: i64,
    /// Its input shapes, as the trace records them.
    pub input_dims: String,
}

impl Roofline {
    /// The most points a roofline holds.
    pub const POINTS: usize = 200;

    /// Of a trace's `unified_perf_summary` and the spec it was compared
    /// with; `None` without a point.
    fn of(unified: &Table, arch: Option<&trace_summary::GpuArch>) -> Option<Roofline> {
        let col = |name: &str| unified.column(name);
        let (intensity, rate) = (col("FLOPS/Byte")?, col("TFLOPS/s_mean")?);
        let number = |r: &[trace_summary::Cell], c: Option<usize>| c.and_then(|c| r[c].number());
        let text = |r: &[trace_summary::Cell], c: Option<usize>| {
            c.map(|c| r[c].text()).unwrap_or_default()
        };
        let mut specs: Vec<String> = Vec::new();
        let points: Vec<RooflinePoint> = unified
            .rows
            .iter()
            .filter_map(|r| {
                let (ai, tflops) = (r[intensity].number()?, r[rate].number()?);
                if !(ai > 0.0 && tflops > 0.0 && ai.is_finite() && tflops.is_finite()) {
                    return None;
                }
                let spec = text(r, col("Compute Spec"));
                if !spec.is_empty() && !specs.contains(&spec) {
                    specs.push(spec);
                }
                Some(RooflinePoint {
                    name: r[0].text(),
                    category: text(r, col("op category")),
                    flops_per_byte: ai,
                    tflops_per_s: tflops,
                    total_us: number(r, col("Kernel Time (µs)_sum")).unwrap_or(0.0),
                    count: number(r, col("operation_count")).map_or(0, |c| c as i64),
                    input_dims: text(r, col("Input Dims")),
                })
            })
            .take(Roofline::POINTS)
            .collect();
        if points.is_empty() {
            return None;
        }
        let compute = arch.map_or_else(Vec::new, |a| {
            specs
                .iter()
                .filter_map(|s| Some((s.clone(), *a.max_achievable_tflops.get(s)?)))
                .collect()
        });
        Some(Roofline {
            arch: arch.map(|a| a.name.clone()),
            memory_tb_per_s: arch.map(|a| a.mem_bw_gbps / 1000.0),
            compute_tflops_per_s: compute,
            points,
        })
    }
}

/// Bytes in decimal units, as bandwidths are: `26.6 MB`.
fn bytes_text(bytes: i64) -> String {
    let b = bytes as f64;
    match bytes {
        ..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", b / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.2} GB", b / 1e9),
    }
}

/// A truncated trace, summarized from the events before the cut.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Truncated {
    /// Where its JSON text (decompressed) ends.
    pub bytes: u64,
    /// Events complete before the cut, all summarized.
    pub events: usize,
    /// Not cut short: its last string never ends (the rest of the file
    /// reads as one string), and the tables stop before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unclosed_string: bool,
}

impl Truncated {
    /// What the tables of a trace cut short cover, in a sentence.
    pub fn note(&self) -> String {
        // GPU activity is written last, in time order.
        let missing = "the end of the GPU timeline is missing";
        match self.unclosed_string {
            true => format!(
                "{} ({}): the tables cover the {} records complete before it ({missing}; \
                 TraceLens refuses the file as it is)",
                trace_sanitize::Report::UNCLOSED_STRING,
                trace_sanitize::Malformed::LIKELY,
                self.events
            ),
            false => format!(
                "truncated: its JSON ends after {} bytes; the tables cover the {} records \
                 complete before the cut (GPU activity is written last, in time order: {missing})",
                self.bytes, self.events
            ),
        }
    }
}

impl TraceView {
    /// A trace's view before it is read.
    pub fn new(trace: PathBuf, rank: Option<u32>) -> TraceView {
        TraceView { trace, rank, ..TraceView::default() }
    }

    /// What `summary` says of how the trace was read (not its tables).
    pub fn read(&mut self, summary: &trace_summary::Summary) {
        self.format = Some(summary.format);
        self.outcome = Some(summary.outcome);
        self.events = Some(summary.events);
        self.gpu_devices = summary.gpu_devices;
        self.gpus = summary.gpus.clone();
        self.gpu_index = summary.gpu_index;
        self.gpu_arch = summary.gpu_arch.as_ref().map(|a| a.name.clone());
        self.shapes_recorded = summary.shapes_recorded;
        self.truncated = summary.truncated_at.map(|bytes| Truncated {
            bytes,
            events: summary.events,
            unclosed_string: summary.unclosed_string,
        });
        self.data_after_end = summary.data_after_end;
        self.repaired = (summary.repaired.total() > 0).then_some(summary.repaired);
        self.not_json = summary.not_json.clone();
        self.malformed = summary.malformed.clone();
        self.record_lists = summary.record_lists.clone();
        self.earlier_event_lists = summary.earlier_event_lists;
        self.dropped_records = summary.dropped_records;
        self.negative_durations = summary.negative_durations;
        self.steps = summary.steps.map(|s| s.count);
        self.steps_marked_by = summary.steps.map(|s| s.marker);
        self.collective_events = summary.collective_events.clone();
        self.short_kernels = summary.short_kernels;
    }

    /// Its tables' rows, the first `n` of each top list, from `summary`:
    /// the timeline, its kernels, ops, categories, collectives, op shapes
    /// and roofline. Nothing where it has no GPU timeline.
    pub fn fill(&mut self, summary: &trace_summary::Summary, n: usize) {
        let Some(t) = summary.gpu_timeline.as_ref() else { return };
        self.timeline = t
            .rows
            .iter()
            .map(|r| (r[0].text(), r[1].number().unwrap_or(0.0), r[2].number()))
            .collect();
        if let Some(k) = &summary.kernel_summary {
            self.top_kernels = if summary.outcome == Outcome::Rocprofv3 {
                // TraceLens' rocprof table: its "(ms)" total is really µs.
                let value = "Total Kernel Time (ms)";
                let categories = trace_summary::kernel_categories(k);
                // Its collective kernels: TraceLens' COMM category.
                self.comm_ms = categories
                    .as_ref()
                    .map(|all| all.iter().find(|c| c.name == "COMM").map_or(0.0, |c| c.ms));
                self.top_kernel_categories = top_categories(categories, n);
                top(k, "name", value, "Percentage (%)", Grouped::default(), n)
            } else {
                let grouped =
                    Grouped { stream: Some("Kernel stream"), parent_op: Some("Parent cpu_op") };
                let (value, pct) = ("Kernel duration (µs)_sum", "Percent of kernels time (%)");
                top(k, "Kernel name", value, pct, grouped, n)
            };
        }
        if let Some(c) = &summary.collective_summary {
            self.top_collectives = CollectiveRow::top(c, n);
        }
        if let Some(g) = &summary.gemm {
            self.top_gemms = GemmRow::top(g, n);
        }
        self.top_shapes = ShapeRow::top(&summary.perf_sheets, n);
        self.roofline = summary
            .unified_perf_summary
            .as_ref()
            .and_then(|u| Roofline::of(u, summary.gpu_arch.as_ref()));
        if let Some(o) = &summary.ops_summary {
            self.top_ops = top(
                o,
                "name",
                "total_direct_kernel_time_ms",
                "Percentage (%)",
                Grouped::default(),
                n,
            );
            self.top_op_categories = top_categories(trace_summary::op_categories(o), n);
        }
    }

    /// Milliseconds of a gpu_timeline row (0 when absent).
    pub fn ms(&self, name: &str) -> f64 {
        self.timeline.iter().find(|r| r.0 == name).map_or(0.0, |r| r.1)
    }

    /// Percent of a gpu_timeline row.
    pub fn percent(&self, name: &str) -> Option<f64> {
        self.timeline.iter().find(|r| r.0 == name).and_then(|r| r.2)
    }

    /// What the tables across traces read of it.
    pub fn timed(&self) -> crate::Timed {
        crate::Timed {
            trace: self.trace.clone(),
            rank: self.rank,
            cycle: self.cycle.clone(),
            rocprof: self.outcome == Some(Outcome::Rocprofv3),
            gpu_index: self.gpu_index,
            comm_ms: self.comm_ms,
            steps: self.steps,
            timeline: self.timeline.iter().map(|(row, ms, _)| (row.clone(), *ms)).collect(),
        }
    }
}

/// One row of a top-N list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct TopRow {
    /// The kernel, op or category.
    pub name: String,
    /// µs for kernels, ms for ops.
    pub value: f64,
    /// Share of kernel time (kernels) or of direct GPU time (ops).
    pub percent: Option<f64>,
    /// The kernel's stream, where the table groups by it (Kineto).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The CPU op that launched the kernel (else its launcher's name), where
    /// the table groups by it (Kineto; empty for a kernel linked to no launch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_op: Option<String>,
}

/// The first `n` rows of `t` as [`TopRow`]s, from its `label`, `value` and
/// `pct` columns, and its `grouped` ones (stream, parent op) where it has them.
fn top(t: &Table, label: &str, value: &str, pct: &str, grouped: Grouped, n: usize) -> Vec<TopRow> {
    let (Some(l), Some(v), Some(p)) = (t.column(label), t.column(value), t.column(pct)) else {
        return vec![];
    };
    let s = grouped.stream.and_then(|name| t.column(name));
    let o = grouped.parent_op.and_then(|name| t.column(name));
    t.rows
        .iter()
        .take(n)
        .map(|r| TopRow {
            name: r[l].text(),
            value: r[v].number().unwrap_or(0.0),
            percent: r[p].number(),
            stream: s.map(|s| r[s].text()),
            parent_op: o.map(|o| r[o].text()),
        })
        .collect()
}

/// The first `n` categories as top rows (ms).
fn top_categories(categories: Option<Vec<trace_summary::Category>>, n: usize) -> Vec<TopRow> {
    let rows = categories.unwrap_or_default().into_iter().take(n);
    rows.map(|c| TopRow {
        name: c.name,
        value: c.ms,
        percent: c.percent,
        stream: None,
        parent_op: None,
    })
    .collect()
}

/// The columns besides the name a table groups its rows by.
#[derive(Default)]
struct Grouped {
    stream: Option<&'static str>,
    parent_op: Option<&'static str>,
}

/// The version of the record ([`Record::version`]) this crate writes.
pub const RECORD_VERSION: u32 = 1;

/// What a trace's report keeps beside its CSVs ([`trace_summary::RECORD`],
/// `summary.json`): the trace's view as `--json` gives it, and what a later
/// run reads back: where the trace was, its collective kernels (the view's
/// [`TraceView::collective_events`], which `--json` leaves out: for a run's
/// collective report made from the records of reports made on the nodes),
/// and why a later run that could not read the trace kept this report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The version of this format ([`RECORD_VERSION`]); 0 in records
    /// written before it was kept.
    pub version: u32,
    /// The trace's view, its collective kernels with it.
    pub view: TraceView,
    /// That trace's absolute path (symbolic links not followed: a link
    /// removed is a trace gone); absent in records written before it was
    /// kept.
    pub trace_absolute: Option<PathBuf>,
    /// Why the report is stale, where a later run could not read its trace
    /// and kept this one (the last good report) rather than delete it.
    pub stale: Option<String>,
}

/// A [`Record`] as it is written: the view's fields, then the collective
/// kernels its `--json` leaves out.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct Written<'a> {
    version: u32,
    #[serde(flatten)]
    view: &'a TraceView,
    #[serde(
        serialize_with = "trace_discover::lossy::option",
        skip_serializing_if = "Option::is_none"
    )]
    trace_absolute: &'a Option<PathBuf>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    collective_events: &'a [trace_summary::CollectiveKernel],
    #[serde(skip_serializing_if = "Option::is_none")]
    stale: &'a Option<String>,
}

/// A [`Record`] as it is read (every key optional: older records lack
/// some).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Read {
    version: u32,
    #[serde(flatten)]
    view: TraceView,
    trace_absolute: Option<PathBuf>,
    collective_events: Vec<trace_summary::CollectiveKernel>,
    stale: Option<String>,
}

impl Serialize for Record {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            version: self.version,
            view: &self.view,
            trace_absolute: &self.trace_absolute,
            collective_events: &self.view.collective_events,
            stale: &self.stale,
        }
        .serialize(serializer)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Record {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Record".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Written::json_schema(generator)
    }
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Record, D::Error> {
        let Read { version, mut view, trace_absolute, collective_events, stale } =
            Read::deserialize(deserializer)?;
        view.collective_events = collective_events;
        Ok(Record { version, view, trace_absolute, stale })
    }
}

impl Record {
    /// The record of `view`, its trace at `absolute`.
    pub fn new(view: &TraceView, absolute: Option<PathBuf>) -> Record {
        Record {
            version: RECORD_VERSION,
            view: view.clone(),
            trace_absolute: absolute,
            stale: None,
        }
    }

    /// The record of the report in `dir`; `None` when it has none
    /// (TraceLens' reports do not).
    pub fn read(dir: &Path) -> Result<Option<Record>, RecordError> {
        Record::read_file(&dir.join(trace_summary::RECORD))
    }

    /// The record at `path`; `None` when there is no file there.
    pub fn read_file(path: &Path) -> Result<Option<Record>, RecordError> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(RecordError::Read { path: path.to_path_buf(), source }),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|source| RecordError::Format { path: path.to_path_buf(), source })
    }

    /// As it is written: pretty JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        crate::document::pretty(self)
    }
}

/// A report's record ([`Record`]) that cannot be read, or is not one.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// It could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The record.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It is not JSON, or not a record.
    #[error("{path} is not the record a trace's report keeps beside its CSVs")]
    Format {
        /// The record.
        path: PathBuf,
        /// The cause, with its line and column.
        #[source]
        source: serde_json::Error,
    },
}
