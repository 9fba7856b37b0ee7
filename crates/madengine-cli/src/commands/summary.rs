//! `madengine report summary`.

use std::{
    borrow::Cow,
    path::{Path, PathBuf},
    sync::{Arc, atomic::AtomicBool},
};

use indicatif::ProgressBar;

use serde::Serialize;
use trace_summary::{Outcome, RECORD, Table};

use crate::{
    cli::SummaryArgs,
    error::{Error, Status},
    render,
};

/// What the terminal and JSON views show for one trace.
#[derive(Debug, Serialize)]
pub(crate) struct TraceView {
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) trace: PathBuf,
    pub(crate) rank: Option<u32>,
    /// Which of torch.profiler's profiling cycles, where its directory holds
    /// several ([`trace_report::cycles_of`]: what `--cycle` picks by),
    /// and the directory of the job whose cycle that is (its node
    /// directories' parent, for a multi-node job; not in `--json`).
    #[serde(serialize_with = "cycle_only", skip_serializing_if = "Option::is_none")]
    pub(crate) cycle: Option<trace_report::Picked>,
    /// What the trace was read as; `None` when it could not be read.
    pub(crate) format: Option<trace_summary::Format>,
    /// Which rule applied; `None` when the trace could not be read.
    pub(crate) outcome: Option<Outcome>,
    /// Events read (rocprofv3: GPU records); `None` when the trace could not
    /// be read.
    pub(crate) events: Option<usize>,
    /// GPUs the traced process saw (entries of its `deviceProperties`), when
    /// the trace lists them; 0: it ran on the CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_devices: Option<usize>,
    /// The GPU models the trace names ([`trace_summary::Summary::gpus`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) gpus: Vec<String>,
    /// The GPU its kernels all ran on, by index among the node's GPUs
    /// ([`trace_summary::Summary::gpu_index`]: rocprofv3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_index: Option<u32>,
    /// The GPU whose roofline its GEMM shapes are compared with
    /// (`--gpu-arch`, else its own GPU's bundled spec), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_arch: Option<String>,
    /// Whether its CPU ops carry their input shapes
    /// ([`trace_summary::Summary::shapes_recorded`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shapes_recorded: Option<bool>,
    /// For rocprofv3: the time of its collective (RCCL/NCCL) kernels, the
    /// kernel table's `COMM` rows added up (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) comm_ms: Option<f64>,
    /// Why the trace could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// Where a trace read with --salvage was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) truncated: Option<Truncated>,
    /// Bytes after the end of the JSON document of a trace read with
    /// --salvage, dropped unread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_after_end: Option<u64>,
    /// What was repaired while reading, when anything was: strict parsers
    /// (TraceLens) refuse the file as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) repaired: Option<trace_sanitize::Counts>,
    /// The first bare word that is not JSON, in a part of the trace the
    /// tables do not read: TraceLens refuses the trace, repaired or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) not_json: Option<trace_sanitize::NotJson>,
    /// The first token where the JSON grammar allows none, in a part of the
    /// trace the tables do not read: TraceLens refuses the trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) malformed: Option<trace_sanitize::Malformed>,
    /// `traceEvents` lists before the last (the key given twice): not read,
    /// as TraceLens reads only the last.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) earlier_event_lists: u32,
    /// rocpd records left out for want of a time.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub(crate) dropped_records: u64,
    /// GPU events with a negative duration.
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub(crate) negative_durations: usize,
    /// For rocprofv3: the lists its buffer_records hold; for Kineto without
    /// a traceEvents list: its top-level keys.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) record_lists: Vec<String>,
    /// Steps the trace holds, when it marks them ([`trace_summary::Steps`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) steps: Option<usize>,
    /// What marked them: `ProfilerStep#` or `Optimizer.step#`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) steps_marked_by: Option<trace_summary::StepMarker>,
    #[serde(serialize_with = "trace_discover::lossy::option")]
    pub(crate) csv_dir: Option<PathBuf>,
    /// `(type, ms, percent)` rows of gpu_timeline.
    pub(crate) timeline: Vec<(String, f64, Option<f64>)>,
    /// Kernels by total µs, largest first.
    pub(crate) top_kernels: Vec<TopRow>,
    /// Ops by GPU ms launched directly, largest first.
    pub(crate) top_ops: Vec<TopRow>,
    /// Op categories (`GEMM`, `SDPA_fwd`, ...) by the GPU ms their ops
    /// launched directly, largest first ([`trace_summary::op_categories`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) top_op_categories: Vec<TopRow>,
    /// For rocprofv3: kernel categories (`GEMM`, `Elementwise`, `COMM`, ...)
    /// by GPU ms, largest first ([`trace_summary::kernel_categories`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) top_kernel_categories: Vec<TopRow>,
    /// Collective calls by total kernel time, largest first
    /// ([`trace_summary::Summary::collective_summary`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) top_collectives: Vec<CollectiveRow>,
    /// GEMM shapes by total kernel time, largest first, with the TFLOPS/s
    /// and TB/s they reached ([`trace_summary::Summary::gemm`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) top_gemms: Vec<GemmRow>,
    /// Attention and convolution shapes by total kernel time, largest
    /// first, likewise ([`trace_summary::Summary::perf_sheets`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) top_shapes: Vec<ShapeRow>,
    /// Its op shapes against the roofline ([`Roofline`]), where any was
    /// modelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) roofline: Option<Roofline>,
    /// Its kernels shorter than 10 µs, in all (Kineto traces with a GPU
    /// timeline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) short_kernels: Option<trace_summary::ShortKernels>,
    /// Its collective kernels, for the run's collective report (not in
    /// `--json`: the report is).
    #[serde(skip)]
    pub(crate) collective_events: Vec<trace_summary::CollectiveKernel>,
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
fn cycle_only<S: serde::Serializer>(
    picked: &Option<trace_report::Picked>,
    s: S,
) -> Result<S::Ok, S::Error> {
    picked.as_ref().map(|p| p.cycle).serialize(s)
}

/// A row of `collective_summary`: one distinct collective call.
#[derive(Debug, Serialize)]
pub(crate) struct CollectiveRow {
    pub(crate) name: String,
    pub(crate) dtype: String,
    pub(crate) group_size: i64,
    /// The larger of its input and output, as nccl-tests sizes it; `None`
    /// for a dtype madengine does not know.
    pub(crate) bytes: Option<i64>,
    pub(crate) count: i64,
    pub(crate) total_us: f64,
    pub(crate) mean_us: f64,
    pub(crate) busbw_gbps: Option<f64>,
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
    pub(crate) fn call(&self) -> String {
        let size = self.bytes.map(|b| format!(", {}", bytes_text(b))).unwrap_or_default();
        format!("{} {}{size}, {} ranks", self.name, self.dtype, self.group_size)
    }
}

/// A modelled op shape's kernel time, calls and rates, as a perf-model
/// sheet's row gives them ([`GemmRow`], [`ShapeRow`]).
#[derive(Debug, Serialize)]
pub(crate) struct Rated {
    pub(crate) count: i64,
    pub(crate) total_us: f64,
    /// The mean over its calls of each call's rate; `None` where its
    /// kernels took no time, or its bytes are unknown.
    pub(crate) tflops_per_s: Option<f64>,
    pub(crate) tb_per_s: Option<f64>,
    /// With a roofline: the mean over its calls of the share of the
    /// roofline each reached (%), and which roof bounds it (`memory`,
    /// `compute`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pct_roofline: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bound: Option<&'static str>,
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
                Some("MEMORY_BOUND") => Some("memory"),
                Some("COMPUTE_BOUND") => Some("compute"),
                _ => None,
            },
        }
    }
}

/// A row of the `GEMM` sheet: one GEMM op and shape.
#[derive(Debug, Serialize)]
pub(crate) struct GemmRow {
    pub(crate) name: String,
    /// `aten::addmm 141x512x512 bf16` ([`trace_summary::gemm_shape`]).
    pub(crate) shape: String,
    /// `M`, `N`, `K` and the batch `B`.
    pub(crate) m: Option<i64>,
    pub(crate) n: Option<i64>,
    pub(crate) k: Option<i64>,
    pub(crate) b: Option<i64>,
    /// Its input dtypes, as TraceLens prints them: `('c10::BFloat16', 'c10::BFloat16')`.
    pub(crate) dtypes: String,
    #[serde(flatten)]
    pub(crate) rated: Rated,
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
#[derive(Debug, Serialize)]
pub(crate) struct ShapeRow {
    /// The sheet it is of.
    pub(crate) sheet: String,
    pub(crate) name: String,
    /// `aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16`
    /// ([`trace_summary::op_shape`]).
    pub(crate) shape: String,
    #[serde(flatten)]
    pub(crate) rated: Rated,
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
#[derive(Debug, Serialize)]
pub(crate) struct Roofline {
    /// The spec's name; `None` without one (points, no roofs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arch: Option<String>,
    /// Its memory roof (TB/s) and compute roofs (TFLOPS/s) by `Compute
    /// Spec`, those of the points' specs it has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) memory_tb_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) compute_tflops_per_s: Vec<(String, f64)>,
    /// The shapes that took the most kernel time (at most
    /// [`Roofline::POINTS`]).
    pub(crate) points: Vec<RooflinePoint>,
}

/// A point of [`Roofline`]: one op and shape.
#[derive(Debug, Serialize)]
pub(crate) struct RooflinePoint {
    pub(crate) name: String,
    pub(crate) category: String,
    /// FLOPs per byte moved.
    pub(crate) flops_per_byte: f64,
    /// TFLOPS/s reached, the mean over its calls.
    pub(crate) tflops_per_s: f64,
    pub(crate) total_us: f64,
    pub(crate) count: i64,
    /// Its input shapes, as the trace records them.
    pub(crate) input_dims: String,
}

impl Roofline {
    const POINTS: usize = 200;

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
#[derive(Debug, Serialize)]
pub(crate) struct Truncated {
    /// Where its JSON text (decompressed) ends.
    pub(crate) bytes: u64,
    /// Events complete before the cut, all summarized.
    pub(crate) events: usize,
    /// Not cut short: its last string never ends (the rest of the file
    /// reads as one string), and the tables stop before it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) unclosed_string: bool,
}

impl Truncated {
    pub(crate) fn note(&self) -> String {
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
    pub(crate) fn new(trace: PathBuf, rank: Option<u32>) -> TraceView {
        TraceView {
            trace,
            rank,
            cycle: None,
            format: None,
            outcome: None,
            events: None,
            gpu_devices: None,
            gpus: vec![],
            gpu_index: None,
            gpu_arch: None,
            shapes_recorded: None,
            comm_ms: None,
            error: None,
            truncated: None,
            data_after_end: None,
            repaired: None,
            not_json: None,
            malformed: None,
            earlier_event_lists: 0,
            dropped_records: 0,
            negative_durations: 0,
            record_lists: vec![],
            steps: None,
            steps_marked_by: None,
            csv_dir: None,
            timeline: vec![],
            top_kernels: vec![],
            top_ops: vec![],
            top_op_categories: vec![],
            top_kernel_categories: vec![],
            top_collectives: vec![],
            top_gemms: vec![],
            top_shapes: vec![],
            roofline: None,
            short_kernels: None,
            collective_events: vec![],
        }
    }

    /// What `summary` says of how the trace was read (not its tables).
    pub(crate) fn read(&mut self, summary: &trace_summary::Summary) {
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

    /// Where op shapes were modelled without a GPU spec to compare them
    /// with: that there is no roofline, and how to get one.
    pub(crate) fn no_roofline_note(&self) -> Option<String> {
        if self.gpu_arch.is_some() || (self.top_gemms.is_empty() && self.top_shapes.is_empty()) {
            return None;
        }
        if self.gpus.iter().any(|g| trace_summary::GpuArch::for_device(g).is_some()) {
            return Some("no roofline: --gpu-arch none".into());
        }
        let gpus = match self.gpus.is_empty() {
            true => "its GPU".to_string(),
            false => self.gpus.join(", "),
        };
        Some(format!(
            "no roofline: no GPU spec is bundled for {gpus}; --gpu-arch MI300X|MI325X|FILE.json \
             compares the shapes with one"
        ))
    }

    /// Said first: what a trace read with --salvage left out, and what
    /// TraceLens refuses whatever is repaired.
    pub(crate) fn warning(&self) -> Option<String> {
        let salvaged = match (&self.truncated, self.data_after_end) {
            (Some(truncated), _) => Some(truncated.note()),
            (None, Some(bytes)) => Some(format!(
                "{bytes} bytes of data after the end of its JSON document were not read \
                 (TraceLens refuses the file as it is)"
            )),
            (None, None) => None,
        };
        let not_json = self.not_json.as_ref().map(|word| {
            format!(
                "`{}` at byte {} is a bare word that is not JSON (in a part these tables do not \
                 read): TraceLens refuses the trace, repaired or not",
                word.text, word.offset
            )
        });
        let malformed = self.malformed.as_ref().map(|m| {
            format!(
                "its JSON breaks at byte {}: {} where {} goes ({}), in a part these tables do not \
                 read: TraceLens refuses the trace, repaired or not",
                m.offset,
                m.found,
                m.expected,
                m.likely()
            )
        });
        let lists = (self.earlier_event_lists > 0).then(|| {
            format!(
                "its top object holds `traceEvents` {} times: only the last list is read, as \
                 TraceLens' parser keeps only the last ({} events left out)",
                self.earlier_event_lists + 1,
                match self.earlier_event_lists {
                    1 => "the other list's".to_string(),
                    n => format!("the {n} other lists'"),
                }
            )
        });
        let dropped = (self.dropped_records > 0).then(|| {
            format!(
                "{} left out: without a start or an end that is a time (NULL, text or \
                 negative), which rocprofv3 never writes (a database edited or damaged?)",
                crate::render::plural(self.dropped_records as usize, "record")
            )
        });
        let negative = (self.negative_durations > 0).then(|| {
            format!(
                "{} a negative duration (a clock gone backwards, a trace edited by hand?): \
                 counted as TraceLens counts them, so the timeline's parts can be negative",
                match self.negative_durations {
                    1 => "1 GPU event has".to_string(),
                    n => format!("{n} GPU events have"),
                }
            )
        });
        let said: Vec<String> = [salvaged, not_json, malformed, lists, dropped, negative]
            .into_iter()
            .flatten()
            .collect();
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Said when the trace was read through repairs.
    pub(crate) fn repaired_note(&self) -> Option<String> {
        let counts = self.repaired?;
        // A repaired copy would not help: the warning said why.
        if self.not_json.is_some() || self.malformed.is_some() {
            return Some(format!("repaired while reading ({counts})"));
        }
        // Nor would a copy that is still cut short, or has data after its end.
        let (salvage, closed) = match self.truncated.is_some() || self.data_after_end.is_some() {
            true => ("--salvage ", ", closed"),
            false => ("", ""),
        };
        Some(format!(
            "repaired while reading ({counts}); TraceLens refuses it as it is: `madengine trace \
             sanitize {salvage}{}` writes a repaired{closed} copy",
            self.trace.display()
        ))
    }
}

/// One row of a top-N list.
#[derive(Debug, Serialize)]
pub(crate) struct TopRow {
    pub(crate) name: String,
    /// µs for kernels, ms for ops.
    pub(crate) value: f64,
    /// Share of kernel time (kernels) or of direct GPU time (ops).
    pub(crate) percent: Option<f64>,
    /// The kernel's stream, where the table groups by it (Kineto).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<String>,
    /// The CPU op that launched the kernel (else its launcher's name), where
    /// the table groups by it (Kineto; empty for a kernel linked to no launch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent_op: Option<String>,
}

/// Each row's name as `shown` (each shown once: demangling is not free),
/// with what tells it apart when another row shows the same name: TraceLens
/// groups kernels by name, parent op and stream, so one kernel can have
/// several rows.
pub(crate) fn labels(rows: &[TopRow], shown: impl Fn(&str) -> String) -> Vec<String> {
    let names: Vec<String> = rows.iter().map(|r| shown(&r.name)).collect();
    rows.iter()
        .zip(&names)
        .map(|(row, name)| {
            let twins: Vec<&TopRow> =
                rows.iter().zip(&names).filter(|(_, n)| *n == name).map(|(r, _)| r).collect();
            let mut tags = Vec::new();
            if twins.iter().any(|r| r.parent_op != row.parent_op) {
                tags.push(match row.parent_op.as_deref() {
                    Some("") | None => "no linked launch".to_string(),
                    Some(op) => format!("under {op}"),
                });
            }
            if twins.iter().any(|r| r.stream != row.stream)
                && let Some(stream) = &row.stream
            {
                tags.push(format!("stream {stream}"));
            }
            if tags.is_empty() { name.clone() } else { format!("{name} [{}]", tags.join(", ")) }
        })
        .collect()
}

/// Kineto timelines split GPU time into these four disjoint parts: `(row, label)`.
pub(crate) const KINETO_PARTS: &[(&str, &str)] = &[
    ("computation_time", "computation"),
    ("exposed_comm_time", "exposed comm"),
    ("exposed_memcpy_time", "exposed memcpy"),
    ("idle_time", "idle"),
];
/// rocprofv3 timelines have no compute/communication split.
const ROCPROF_PARTS: &[(&str, &str)] =
    &[("kernel", "kernel"), ("memory", "memory"), ("busy_time", "busy"), ("idle", "idle")];
pub(crate) const ROCPROF_BAR: &[(&str, &str)] = &[("busy_time", "busy"), ("idle", "idle")];

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
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_PARTS } else { KINETO_PARTS }
    }

    /// What a trace's heading says after its path: ` (rank 0, AMD Instinct
    /// MI300X)`, ` (on GPU 3, AMD Instinct MI350X)`, or nothing.
    pub(crate) fn heading_tags(&self) -> String {
        let rank = self.rank.map(|r| format!("rank {r}"));
        let cycle = self.cycle.as_ref().map(|p| p.cycle.to_string());
        let gpu = self.gpu_index.map(|i| format!("on GPU {i}"));
        let tags: Vec<String> =
            rank.into_iter().chain(cycle).chain(gpu).chain(self.gpus.iter().cloned()).collect();
        if tags.is_empty() { String::new() } else { format!(" ({})", tags.join(", ")) }
    }

    /// What follows a total of `ms` over the steps it covers: ` over 5
    /// profiler steps (245.814 ms each)`, ` over 1 optimizer step`; empty
    /// without steps.
    pub(crate) fn steps_text(&self, ms: f64) -> String {
        let (Some(steps), Some(marker)) = (self.steps, self.steps_marked_by) else {
            return String::new();
        };
        let each = match steps {
            0 | 1 => String::new(),
            n => format!(" ({:.3} ms each)", ms / n as f64),
        };
        format!(" over {}{each}", render::plural(steps, marker.noun()))
    }

    /// What the reader should know about how this trace was read, if anything.
    pub(crate) fn note(&self) -> Option<Cow<'static, str>> {
        if self.outcome == Some(Outcome::NoGpuActivity)
            && let Some(format) = self.format
            && let Some(missing) = self.missing_list(format)
        {
            return Some(Cow::Owned(missing));
        }
        self.static_note().map(Cow::Borrowed)
    }

    /// For a trace without the list its records are in (`kernel_dispatch`
    /// in rocprofv3's buffer_records, Kineto's `traceEvents`): the list
    /// under a key a stray byte changed, else what it holds instead.
    fn missing_list(&self, format: trace_summary::Format) -> Option<String> {
        let database = self.trace.extension().is_some_and(|e| e == "db");
        let (list, within, place, records, guess) = match format {
            // A rocpd database: its record tables, named as the JSON's lists.
            trace_summary::Format::Rocprofv3 if database => (
                "kernel_dispatch",
                "",
                "its database holds records of",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Rocprofv3 => (
                "kernel_dispatch",
                " in its buffer_records",
                "its buffer_records hold",
                "records",
                "rocprofv3 run without --kernel-trace?",
            ),
            trace_summary::Format::Kineto => {
                ("traceEvents", "", "its top level holds", "events", "not a Chrome trace?")
            }
            // Its slices' categories (never a key a stray byte changed).
            trace_summary::Format::Perfetto => {
                let lists = &self.record_lists;
                if lists.is_empty() || lists.iter().any(|l| l == "kernel_dispatch") {
                    return None;
                }
                let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
                return Some(format!(
                    "no kernel_dispatch slices: its slices are of {} (not rocprofv3's, or a \
                     rocprofv3 run without --kernel-trace?): nothing to summarize",
                    held.join(", ")
                ));
            }
        };
        let lists = &self.record_lists;
        if lists.is_empty() || lists.iter().any(|l| l == list) {
            return None;
        }
        if let Some(near) = lists.iter().find(|l| strsim::levenshtein(l, list) <= 3) {
            // Quoted as in JSON: a control byte in it shows.
            let near = serde_json::to_string(near).unwrap_or_default();
            return Some(format!(
                "no {list} list{within}, but a {near} one: its key was changed (a stray byte in \
                 the trace?), so its {records} are not read; nothing to summarize"
            ));
        }
        let held: Vec<String> = lists.iter().map(|l| format!("`{l}`")).collect();
        let kind = if database { "records" } else { "list" };
        Some(format!(
            "no {list} {kind}: {place} {} ({guess}): nothing to summarize",
            held.join(", ")
        ))
    }

    fn static_note(&self) -> Option<&'static str> {
        match self.outcome? {
            Outcome::LegacyCategories => Some(
                "legacy categories or older flows, read as today's (TraceLens rejects this trace)",
            ),
            Outcome::Rocprofv3 if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "rocprofv3 records from Perfetto slices: TraceLens' rocprof tables (no \
                 compute/communication split, no ops); profiled time is the span of its slices",
            ),
            Outcome::Rocprofv3 => Some(
                "rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)",
            ),
            Outcome::Unlinked => Some(
                "no GPU event is linked to a launch (sampled trace?): the timeline counts every GPU \
                 event, kernels have no parent op (TraceLens rejects this trace)",
            ),
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Rocprofv3) => {
                Some(
                    "no kernel dispatch or memory copy records (rocprofv3 run without \
                     --kernel-trace or --memory-copy-trace?): nothing to summarize",
                )
            }
            Outcome::NoGpuActivity if self.format == Some(trace_summary::Format::Perfetto) => Some(
                "no kernel_dispatch or memory_copy slices (not rocprofv3's pftrace, or a \
                     rocprofv3 run without --kernel-trace or --memory-copy-trace?): nothing to \
                     summarize",
            ),
            Outcome::NoGpuActivity if self.truncated.is_some() => {
                Some("no GPU activity before the cut: nothing to summarize")
            }
            Outcome::NoGpuActivity if self.events == Some(0) => {
                Some("no events at all (no traceEvents, or an empty list): nothing to summarize")
            }
            Outcome::NoGpuActivity if self.gpu_devices == Some(0) => Some(
                "no GPU activity, and its process saw no GPU (its deviceProperties list is \
                 empty): the workload ran on the CPU; nothing to summarize",
            ),
            Outcome::NoGpuActivity => {
                Some("no GPU activity (a CPU-only trace): nothing to summarize")
            }
            Outcome::Tables => None,
        }
    }

    /// What the tables across traces read of it.
    pub(crate) fn timed(&self) -> trace_report::Timed {
        trace_report::Timed {
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

    /// Disjoint rows that add up to the total, for a stacked bar.
    pub(crate) fn bar_parts(&self) -> &'static [(&'static str, &'static str)] {
        if self.outcome == Some(Outcome::Rocprofv3) { ROCPROF_BAR } else { KINETO_PARTS }
    }
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

/// Write, as one set, the files a command keeps together in `dir` (a
/// trace's CSVs and its record; a diff's CSVs), of those it may write
/// (`ours`): each is written to a staging directory in `dir` first, so a
/// failure part way (a full disk) leaves `dir` as it was; then each is
/// renamed into place, and those of `ours` this run did not write are
/// removed, so none is left from an earlier run to be read as this one's
/// (a trace without collectives after one with them). Other files in `dir`
/// are left alone.
pub(crate) fn write_set(
    dir: &Path,
    ours: &[&str],
    files: &[(String, Vec<u8>)],
) -> Result<(), Error> {
    Staged::new(dir, ours, files)?.commit()
}

/// A set of files ([`write_set`]) written to its staging directory in
/// `dir`, not yet in place: [`Staged::commit`] puts it there. Dropped
/// uncommitted (Ctrl-C while other traces are read, an error), it leaves
/// nothing: its staging directory goes, and the directories made for it,
/// where that left them empty.
pub(crate) struct Staged {
    dir: PathBuf,
    ours: Vec<String>,
    names: Vec<String>,
    staging: Option<tempfile::TempDir>,
    /// The directories made for it, deepest first.
    made: Vec<PathBuf>,
}

impl Staged {
    /// Write `files` to a new staging directory in `dir` (made, with its
    /// parents, if it is not there).
    pub(crate) fn new(
        dir: &Path,
        ours: &[&str],
        files: &[(String, Vec<u8>)],
    ) -> Result<Staged, Error> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let ours = ours.iter().map(|n| n.to_string()).collect();
        let made = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
            .map(Path::to_path_buf)
            .collect();
        let mut staged =
            Staged { dir: dir.to_path_buf(), ours, names: vec![], staging: None, made };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let staging = tempfile::Builder::new()
            .prefix(".madengine-")
            .suffix(".partial")
            .tempdir_in(dir)
            .map_err(io(dir))?;
        // The staging directory is what makes the set atomic: each file is
        // written straight into it.
        let into = staging.path().to_path_buf();
        staged.staging = Some(staging);
        for (name, bytes) in files {
            debug_assert!(staged.ours.contains(name), "{name} is not one of {:?}", staged.ours);
            let path = into.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))?;
            staged.names.push(name.clone());
        }
        Ok(staged)
    }

    /// Rename each file into place, and remove those of its command's
    /// files it does not hold.
    pub(crate) fn commit(mut self) -> Result<(), Error> {
        let staging = self.staging.take().expect("a staged set is committed once");
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let done = (|| {
            for name in &self.ours {
                let to = self.dir.join(name);
                let done = match self.names.iter().any(|n| n == name) {
                    true => std::fs::rename(staging.path().join(name), &to),
                    false => match std::fs::remove_file(&to) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                        done => done,
                    },
                };
                done.map_err(io(&to))?;
            }
            staging.close().map_err(io(&self.dir))
        })();
        if done.is_ok() {
            // In place: the directories made for it are its.
            self.made.clear();
        }
        done
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        drop(self.staging.take());
        for dir in &self.made {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Remove the report an earlier run wrote in `dir` of a trace this run
/// made none of (it could not be read, or has no GPU timeline now), so that
/// it is not read as this run's (by `report diff`, or by hand), and say so.
/// Only a directory holding `report summary`'s record is touched, and only
/// its files: a file of the user's own keeps the directory.
fn retire(dir: &Path, trace: &Path) -> Result<(), Error> {
    if !dir.join(RECORD).is_file() {
        return Ok(());
    }
    remove_report(dir, &made_none(trace))
}

/// `stem` for the report of the trace at `absolute` in `out`, unless its
/// directory holds the report of another trace that is still there (a run
/// into the same `--output-dir` of another `rank0.json`): then `Err` of a
/// name of this trace's own (the stem and a digest of its path), so neither
/// overwrites the other.
fn own_stem(out: &Path, stem: String, absolute: Option<&Path>) -> Result<String, String> {
    let Some(absolute) = absolute else { return Ok(stem) };
    let recorded = trace_summary::Record::read(&out.join(&stem)).ok().flatten();
    let other = recorded.and_then(|r| r.trace_absolute).filter(|t| t != absolute);
    match other {
        Some(other) if std::fs::symlink_metadata(&other).is_ok() => {
            let digest = sha1_smol::Sha1::from(absolute.as_os_str().as_encoded_bytes()).digest();
            Err(format!("{stem}-{}", &digest.to_string()[..12]))
        }
        _ => Ok(stem),
    }
}

/// Keep the earlier report in `dir` of `trace`, which this run could not
/// read (`err`): marked stale in its record (`report diff` warns of it), and
/// said so. A directory without `report summary`'s record is left alone.
fn keep_stale(dir: &Path, trace: &Path, err: &str) -> Result<(), Error> {
    let record = dir.join(RECORD);
    let Ok(text) = std::fs::read(&record) else { return Ok(()) };
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&text) else { return Ok(()) };
    let first = err.lines().next().unwrap_or(err);
    let why = format!("{} could not be read by a later run: {first}", trace.display());
    value[trace_summary::Record::STALE] = serde_json::json!(why);
    let bytes = serde_json::to_vec_pretty(&value).expect("a value serializes");
    write_atomic(&record, &bytes)?;
    render::note(&format!(
        "kept the earlier report in {}, marked stale: {} could not be read this time",
        dir.display(),
        trace.display()
    ));
    Ok(())
}

/// Why the earlier report of `trace`, read this time, goes.
fn made_none(trace: &Path) -> String {
    format!("{} made none this time", trace.display())
}

/// Remove `report summary`'s files from `dir`, and `dir` if that empties
/// it, saying `why` on stderr.
fn remove_report(dir: &Path, why: &str) -> Result<(), Error> {
    write_set(dir, &TRACE_FILES, &[])?;
    let _ = std::fs::remove_dir(dir);
    render::note(&format!("removed the earlier report in {}: {why}", dir.display()));
    Ok(())
}

/// The directories a run searches, as given: its directory PATHs, or the
/// current directory when none is given.
fn searched(args: &SummaryArgs) -> Vec<&Path> {
    let given: Vec<&Path> = args.root.iter().chain(&args.paths).map(PathBuf::as_path).collect();
    let paths = if given.is_empty() { vec![Path::new(".")] } else { given };
    paths.into_iter().filter(|p| p.is_dir()).collect()
}

/// What a run did, for [`retire_stale`]: the report directories it wrote
/// (or would have: the traces it could not read hold theirs too), by name,
/// and each trace it read (absolute) with its directory; the directories it
/// searched (absolute), and what in them it could not look at or left out
/// (the traces of the profiling cycles `--cycle` did not pick).
struct ThisRun {
    /// When it started.
    started: std::time::SystemTime,
    dirs: std::collections::HashSet<std::ffi::OsString>,
    read: std::collections::HashMap<PathBuf, PathBuf>,
    searched: Vec<PathBuf>,
    left_out: Vec<PathBuf>,
}

/// Remove the reports an earlier run left in `out` that this run, which
/// searched where their traces lie, did not write: left, `report diff`
/// would read them as this run's (a rank the run no longer has, or a trace
/// twice). That is a trace's directory whose record says its trace lay in a
/// directory this run searched ([`ThisRun::searched`]), and whose trace is
/// gone (removed, renamed, a link removed), is read under another name now
/// (given alone before; or it made no report this time), or is no longer
/// read as a trace (a copy `trace sanitize` wrote beside it is read). A
/// trace in what this run could not look at or left out (another profiling
/// cycle than `--cycle`'s), or that cannot be looked up, keeps its report;
/// so does a directory without `report summary`'s record, or with a record
/// of a version that did not keep where its trace was.
fn retire_stale(out: &Path, run: &ThisRun) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(out) else { return Ok(()) };
    // A report written since this run started is another run's (two runs
    // into one --output-dir at once): it stays.
    let since_start = |dir: &Path| {
        std::fs::metadata(dir.join(RECORD))
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= run.started)
    };
    let mut earlier: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && !run.dirs.contains(&e.file_name()))
        .map(|e| e.path())
        .collect();
    earlier.sort();
    for dir in earlier {
        if since_start(&dir) {
            continue;
        }
        // A run's collective report whose run lay where this run searched,
        // and made none this time (fewer ranks now, no collective).
        if let Some((named, run_dir, cycle)) = collectives_run(&dir) {
            // A cycle's report stays where --cycle read another cycle of
            // its run (the traces of that run this run left out).
            let other_cycle = cycle && run.left_out.iter().any(|p| p.starts_with(&run_dir));
            if run.searched.iter().any(|s| run_dir.starts_with(s))
                && !run.left_out.iter().any(|p| run_dir.starts_with(p))
                && !other_cycle
            {
                write_set(&dir, &COLLECTIVE_SET, &[])?;
                let _ = std::fs::remove_dir(&dir);
                render::note(&format!(
                    "removed the earlier collective report in {}: its run {named} made none \
                     this time",
                    dir.display(),
                ));
            }
            continue;
        }
        // A record this version cannot read is not one to act on.
        let Ok(Some(recorded)) = trace_summary::Record::read(&dir) else { continue };
        let Some(trace) = recorded.trace_absolute else { continue };
        if !run.searched.iter().any(|s| trace.starts_with(s))
            || run.left_out.iter().any(|p| trace.starts_with(p))
        {
            continue;
        }
        let named = recorded.trace.unwrap_or_else(|| trace.clone());
        let shown = named.display();
        let why = match (std::fs::symlink_metadata(&trace), run.read.get(&trace)) {
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("its trace {shown} is gone")
            }
            (Err(_), _) => continue,
            (Ok(_), Some(now)) if now.join(RECORD).is_file() => {
                format!("its trace {shown} has its report in {} now", now.display())
            }
            // Read under another name, and no report made (as [`retire`]).
            (Ok(_), Some(_)) => made_none(&named),
            (Ok(_), None) => format!(
                "its trace {shown} is no longer read as one (`madengine trace discover` says why)"
            ),
        };
        remove_report(&dir, &why)?;
    }
    Ok(())
}

/// The files `report summary` writes in a trace's directory.
const TRACE_FILES: [&str; 38] = [
    "gpu_timeline.csv",
    "kernel_summary.csv",
    "ops_summary.csv",
    "ops_summary_by_category.csv",
    "ops_unique_args.csv",
    "unified_perf_summary.csv",
    "GEMM.csv",
    "SDPA_fwd.csv",
    "SDPA_bwd.csv",
    "CONV_fwd.csv",
    "CONV_bwd.csv",
    "InferenceAttention_fwd.csv",
    "BinaryElementwise.csv",
    "GroupedGEMM_fwd.csv",
    "MoE_comm_fwd.csv",
    "MoE_comm_bwd.csv",
    "SSM_fwd.csv",
    "SSM_bwd.csv",
    "RoPE_fwd.csv",
    "CrossEntropy_fwd.csv",
    "UnaryElementwise.csv",
    "MoE_fused_fwd.csv",
    "MoE_unfused_fwd.csv",
    "MoE_aux_fwd.csv",
    "RMSNorm_fwd.csv",
    "elementwise_fwd.csv",
    "GroupQuant_fwd.csv",
    "FusedRoPE_fwd.csv",
    "CustomCollective_fwd.csv",
    "mHC_fwd.csv",
    "Normalization.csv",
    "Reduce_fwd.csv",
    "Reduce_bwd.csv",
    "coll_analysis.csv",
    "short_kernel_histogram.csv",
    "short_kernels_summary.csv",
    "collective_summary.csv",
    RECORD,
];

/// One trace to read, and what names its CSV directory.
#[derive(Clone)]
pub(crate) struct Input {
    pub(crate) trace: PathBuf,
    /// The path the report stem comes from.
    pub(crate) rel: PathBuf,
    pub(crate) rank: Option<u32>,
    /// Its profiling cycle, and its job's directory, where the job holds
    /// several.
    pub(crate) cycle: Option<trace_report::Picked>,
}

impl Input {
    pub(crate) fn new(trace: PathBuf, rel: PathBuf, rank: Option<u32>) -> Input {
        Input { trace, rel, rank, cycle: None }
    }
}

/// The traces behind the PATHs: directories are searched, files taken as
/// given; what the search could not look at is added to `left_out`, and
/// the traces of the profiling cycles `--cycle` does not pick to
/// `other_cycles`.
fn inputs(
    args: &SummaryArgs,
    left_out: &mut Vec<trace_discover::Problem>,
    other_cycles: &mut Vec<PathBuf>,
) -> Result<Vec<Input>, Error> {
    let mut paths: Vec<PathBuf> = args.root.iter().chain(&args.paths).cloned().collect();
    // With no PATH, traces are shown as `a/rank0.json`, not `./a/rank0.json`
    // (as ripgrep does).
    let defaulted = paths.is_empty();
    if defaulted {
        paths.push(PathBuf::from("."));
    }
    if let Some(root) = args.root.as_ref().filter(|r| !r.is_dir()) {
        // --root names a directory: discovery says what is wrong with it.
        trace_discover::discover(root, &Default::default())?;
    }
    // One directory alone names CSVs relative to itself, as `--root` always
    // did; with several PATHs each directory's own name comes first.
    let alone = paths.len() == 1;
    let mut inputs = Vec::new();
    // The PyTorch traces, found by searching or named (a shell's glob of a
    // directory is the directory), whose profiling cycles are told apart.
    let mut pytorch = Vec::new();
    for path in paths {
        if !path.is_dir() {
            // What it is, and its rank, read once; a file discovery does not
            // claim is read all the same, its rank from its name or content.
            let claimed = trace_discover::classify(&path, &Default::default())
                .ok()
                .and_then(|mut d| (!d.traces.is_empty()).then(|| d.traces.swap_remove(0)));
            // A pipe or a device is not opened here (reading it would
            // never end, or take what the summary reads): the summary says
            // what it is.
            let special = std::fs::metadata(&path)
                .is_ok_and(|m| trace_discover::special(m.file_type()).is_some());
            let rank = match &claimed {
                Some(trace) => trace.rank,
                None if special => None,
                None => trace_discover::find_rank(&path).ok().flatten(),
            };
            if claimed.is_some_and(|t| t.kind == trace_discover::TraceKind::Pytorch) {
                pytorch.push(inputs.len());
            }
            let rel = short_name(&path);
            inputs.push(Input::new(path, rel, rank.map(|r| r.rank)));
            continue;
        }
        let prefix = if alone { PathBuf::new() } else { dir_name(&path) };
        let traces = super::summary_traces(&path, vec![args.output_dir.clone()], left_out)?;
        for t in traces {
            let rel = prefix.join(t.path.strip_prefix(&path).unwrap_or(&t.path));
            let trace = match t.path.strip_prefix(".") {
                Ok(inside) if defaulted => inside.to_path_buf(),
                _ => t.path,
            };
            if t.kind == trace_discover::TraceKind::Pytorch {
                pytorch.push(inputs.len());
            }
            inputs.push(Input::new(trace, rel, t.rank.map(|r| r.rank)));
        }
    }
    // A trace named twice (a file inside a directory also given) is read
    // once, and counted once.
    let mut seen = std::collections::HashSet::new();
    let once: Vec<bool> = inputs
        .iter()
        .map(|i| seen.insert(i.trace.canonicalize().unwrap_or_else(|_| i.trace.clone())))
        .collect();
    pytorch.retain(|&i| once[i]);
    let traces: Vec<(PathBuf, Option<u32>)> =
        pytorch.iter().map(|&i| (inputs[i].trace.clone(), inputs[i].rank)).collect();
    for (&i, cycle) in pytorch.iter().zip(trace_report::cycles_of(&traces)) {
        inputs[i].cycle = cycle;
    }
    // With --cycle, whether to read each: not the other cycles' traces.
    let mut read = vec![true; inputs.len()];
    if let Some(pick) = args.cycle {
        let mut entries = vec![None; inputs.len()];
        for (&i, trace) in pytorch.iter().zip(traces) {
            entries[i] = Some(trace);
        }
        let picked;
        (read, picked) =
            trace_report::keep_cycle(&entries, pick).map_err(|e| Error::Usage(e.to_string()))?;
        for p in &picked {
            render::note(&format!("{}: {} (--cycle)", p.dir.display(), p.cycle));
        }
        let other = read.iter().filter(|r| !**r).count();
        if other > 0 {
            render::note(&format!(
                "{} of other profiling cycles not read (--cycle)",
                render::plural(other, "PyTorch trace")
            ));
        }
    }
    let mut kept = Vec::new();
    for (i, input) in std::mem::take(&mut inputs).into_iter().enumerate() {
        match (once[i], read[i]) {
            (false, _) => {}
            (true, false) => other_cycles.push(input.trace),
            (true, true) => kept.push(input),
        }
    }
    Ok(kept)
}

/// What names a trace file's CSVs: the path as given, or for an absolute
/// path its last two components.
fn short_name(path: &Path) -> PathBuf {
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    let mut parts: Vec<_> = path.components().rev().take(2).collect();
    parts.reverse();
    parts.iter().collect()
}

/// A directory's own name, also for `.` and `..`.
fn dir_name(dir: &Path) -> PathBuf {
    dir.file_name()
        .map(PathBuf::from)
        .or_else(|| dir.canonicalize().ok()?.file_name().map(PathBuf::from))
        .unwrap_or_default()
}

/// How many of `inputs` to read at a time: `--jobs`, else as many as the
/// CPUs (8 at most) and half the available memory allow, said in a note
/// when memory is what limits it.
fn jobs(chosen: Option<u32>, inputs: &[Input]) -> usize {
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

/// A trace's summary, or why there is none (the error and its causes).
pub(crate) type Read = Result<trace_summary::Summary, String>;

/// Why a trace has no summary, on one line: the error and its causes, and
/// what `--salvage` would summarize of it, where it would.
fn failed(why: trace_summary::Failed, salvage: bool) -> String {
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

/// Each input's summary, `jobs` at a time, the bar naming the traces being
/// read. Once `cancel` is raised, the traces being read stop and no other
/// is started: `None`.
fn summarize_all<T: Send>(
    inputs: &[Input],
    jobs: usize,
    salvage: bool,
    gpu_arch: &trace_summary::ArchChoice,
    cancel: &Arc<AtomicBool>,
    bar: Option<&ProgressBar>,
    into: &(dyn Fn(usize, Read) -> T + Sync),
) -> Option<Vec<T>> {
    let options = match salvage {
        true => trace_summary::Options::salvaging(),
        false => trace_summary::Options::default(),
    };
    let options = options.cancelled_by(Arc::clone(cancel)).with_gpu_arch(gpu_arch.clone());
    let paths: Vec<PathBuf> = inputs.iter().map(|i| i.trace.clone()).collect();
    let mut running = Vec::new();
    let read = |i: usize, result: Result<trace_summary::Summary, trace_summary::Failed>| {
        into(i, result.map_err(|f| failed(f, salvage)))
    };
    trace_summary::summarize_files_into(
        &paths,
        jobs,
        &options,
        &mut |progress| {
            match progress {
                trace_summary::Progress::Started(i) => running.push(i),
                trace_summary::Progress::Done(i) => {
                    running.retain(|r| *r != i);
                    if let Some(bar) = bar {
                        bar.inc(1);
                    }
                }
            }
            if let Some(bar) = bar {
                let names: Vec<String> =
                    running.iter().map(|r| inputs[*r].rel.display().to_string()).collect();
                bar.set_message(names.join(", "));
            }
        },
        &read,
    )
}

/// Read `inputs`, `chosen` at a time (else as many as [`jobs`] allows),
/// with a progress bar when `show`, each result handed to `into` on the
/// thread that read it, and what that made kept. Ctrl-C (`interrupt`, set up before the
/// traces were looked for, which opens them) stops the reading, and nothing
/// is to be written then: `None`, said. (Writing the results afterwards
/// takes milliseconds, and goes to its end.)
pub(crate) fn read_all<T: Send>(
    interrupt: crate::interrupt::Guard,
    inputs: &[Input],
    chosen: Option<u32>,
    salvage: bool,
    gpu_arch: &trace_summary::ArchChoice,
    show: bool,
    into: &(dyn Fn(usize, Read) -> T + Sync),
) -> Option<Vec<T>> {
    let jobs = jobs(chosen, inputs);
    let progress = render::Progress::new(
        inputs.len() as u64,
        "{spinner} read {pos}/{len} traces [{elapsed}] {wide_msg}",
        show && !inputs.is_empty(),
    );
    let results =
        summarize_all(inputs, jobs, salvage, gpu_arch, &interrupt.flag(), progress.bar(), into);
    drop(progress);
    drop(interrupt);
    if results.is_none() {
        render::error_line("interrupted while reading the traces: nothing was written");
    }
    results
}

/// The error and its causes on one line.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    for cause in render::causes(err) {
        text.push_str(&format!(": {cause}"));
    }
    text
}

pub(crate) fn summary(args: &SummaryArgs) -> Result<Status, Error> {
    let Some(summarized) = summarize(args)? else { return Ok(Status::Interrupted) };
    if args.json {
        render::json(&summarized.json())?;
    } else {
        summarized.print()?;
    }
    Ok(summarized.finish())
}

/// What `report summary` found and wrote (CSVs, the page), before it is
/// printed.
pub(crate) struct Summarized {
    views: Vec<TraceView>,
    /// Read instead of traces: the reports the nodes made of theirs
    /// ([`from_node_reports`]).
    node_reports: Vec<PathBuf>,
    ranks: Vec<trace_report::RankRow>,
    gpus: Vec<trace_report::GpuRow>,
    cycles: Vec<trace_report::CycleRow>,
    /// Each multi-rank run's collective report.
    collectives: Vec<RunCollectives>,
    unreadable: usize,
    /// The paths the search could not look at (a link to a trace that is
    /// gone): warned about, and in `--json`.
    left_out: Vec<trace_discover::Problem>,
}

impl Summarized {
    /// As `--json` prints it.
    pub(crate) fn json(&self) -> serde_json::Value {
        let mut json = serde_json::json!({
            "traces": self.views,
            "cross_rank": self.ranks,
            "cross_gpu": self.gpus,
            "cycles": self.cycles,
            "collectives": self.collectives,
            "unreadable": self.unreadable,
            "left_out": self.left_out,
        });
        if !self.node_reports.is_empty() {
            let reports: Vec<String> =
                self.node_reports.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            json["node_reports"] = serde_json::json!(reports);
        }
        json
    }

    /// As the terminal shows it.
    pub(crate) fn print(&self) -> Result<(), Error> {
        if !self.node_reports.is_empty() {
            render::node_reports(&self.node_reports)?;
        }
        render::summaries(&self.views, &self.ranks, &self.cycles, &self.gpus, &self.collectives)
    }

    /// The status to exit with: Io when a trace could not be read, which
    /// it says on stderr.
    pub(crate) fn finish(&self) -> Status {
        if self.unreadable == 0 {
            return Status::Success;
        }
        let n = self.views.len();
        render::error_line(&format!("{} of {n} traces could not be read", self.unreadable));
        Status::Io
    }
}

/// `report summary` up to what it prints: the traces read, their CSVs (and
/// the page) written. `None` when interrupted (nothing written).
/// Where a trace's report goes: its directory, and the trace's absolute
/// path (recorded, for a later run to tell it is gone).
struct Planned {
    dir: PathBuf,
    absolute: Option<PathBuf>,
}

/// A trace read: its view, and its report staged.
struct Prepared {
    view: TraceView,
    made: Made,
    /// Its workbook (`--xlsx`): where, and its bytes.
    workbook: Option<(PathBuf, Vec<u8>)>,
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

/// TraceLens' per-trace collective table, where it writes one: traces
/// with CPU ops whose collective kernels carry its args.
fn coll_analysis(summary: &trace_summary::Summary) -> Option<Table> {
    summary.ops_summary.as_ref()?;
    trace_report::coll_analysis(&summary.collective_events)
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

/// What was made of a trace's report.
enum Made {
    /// Staged in its directory, to be put in place.
    Staged(Staged),
    /// It could not be read (why).
    Unreadable(String),
    /// It was read, and has no GPU timeline: no report.
    Nothing,
}

/// The files of the report of a trace read (`summary`): its CSVs and its
/// record, `view` filled in as they are made; `None` when it has no GPU
/// timeline (no report).
fn report_files(
    view: &mut TraceView,
    summary: &trace_summary::Summary,
    coll: Option<&Table>,
    plan: &Planned,
    n: usize,
) -> Option<Vec<(String, Vec<u8>)>> {
    view.read(summary);
    let t = summary.gpu_timeline.as_ref()?;
    // TraceLens' tables, madengine's collective table, TraceLens'
    // collective table.
    let tables = summary.tracelens_tables().into_iter();
    let ours = summary.collective_summary.as_ref().map(|c| ("collective_summary", c));
    let files = tables
        .chain(ours)
        .chain(coll.map(|c| ("coll_analysis", c)))
        .map(|(name, table)| (format!("{name}.csv"), table.to_csv().into_bytes()));
    let mut files: Vec<(String, Vec<u8>)> = files.collect();
    view.timeline =
        t.rows.iter().map(|r| (r[0].text(), r[1].number().unwrap_or(0.0), r[2].number())).collect();
    if let Some(k) = &summary.kernel_summary {
        view.top_kernels = if summary.outcome == Outcome::Rocprofv3 {
            // TraceLens' rocprof table: its "(ms)" total is really µs.
            let value = "Total Kernel Time (ms)";
            let categories = trace_summary::kernel_categories(k);
            // Its collective kernels: TraceLens' COMM category.
            view.comm_ms = categories
                .as_ref()
                .map(|all| all.iter().find(|c| c.name == "COMM").map_or(0.0, |c| c.ms));
            view.top_kernel_categories = top_categories(categories, n);
            top(k, "name", value, "Percentage (%)", Grouped::default(), n)
        } else {
            let grouped =
                Grouped { stream: Some("Kernel stream"), parent_op: Some("Parent cpu_op") };
            let (value, pct) = ("Kernel duration (µs)_sum", "Percent of kernels time (%)");
            top(k, "Kernel name", value, pct, grouped, n)
        };
    }
    if let Some(c) = &summary.collective_summary {
        view.top_collectives = CollectiveRow::top(c, n);
    }
    if let Some(g) = &summary.gemm {
        view.top_gemms = GemmRow::top(g, n);
    }
    view.top_shapes = ShapeRow::top(&summary.perf_sheets, n);
    view.roofline = summary
        .unified_perf_summary
        .as_ref()
        .and_then(|u| Roofline::of(u, summary.gpu_arch.as_ref()));
    if let Some(o) = &summary.ops_summary {
        view.top_ops =
            top(o, "name", "total_direct_kernel_time_ms", "Percentage (%)", Grouped::default(), n);
        view.top_op_categories = top_categories(trace_summary::op_categories(o), n);
    }
    view.csv_dir = Some(plan.dir.clone());
    // What the CSVs do not hold (the rank, the steps), for `report diff` to
    // read back: the trace's --json object, and where the trace was (for a
    // later run to tell it is gone).
    let mut recorded = serde_json::to_value(&*view).expect("a view serializes");
    if let Some(absolute) = &plan.absolute {
        recorded[trace_summary::Record::TRACE_ABSOLUTE] =
            serde_json::json!(absolute.to_string_lossy());
    }
    // Its collective kernels, for a run's collective report from the
    // records (`gather --summary` of reports made on the nodes).
    if !view.collective_events.is_empty() {
        recorded[COLLECTIVE_EVENTS] =
            serde_json::to_value(&view.collective_events).expect("collective kernels serialize");
    }
    let recorded = serde_json::to_vec_pretty(&recorded).expect("a value serializes");
    files.push((RECORD.to_string(), recorded));
    Some(files)
}

pub(crate) fn summarize(args: &SummaryArgs) -> Result<Option<Summarized>, Error> {
    let started = std::time::SystemTime::now();
    // Before reading traces (minutes for a large run), not after.
    super::check_output(&args.output_dir, true)?;
    let searched = searched(args);
    super::check_not_searched(&args.output_dir, &searched)?;
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
    let (mut left_out, mut other_cycles) = (Vec::new(), Vec::new());
    let inputs = inputs(args, &mut left_out, &mut other_cycles)?;
    for file in args.html.iter().chain(&args.xlsx) {
        super::check_not_an_input(file, inputs.iter().map(|i| i.trace.as_path()))?;
    }
    let mut stems = trace_report::Stems::default();
    let mut this_run = ThisRun {
        started,
        dirs: Default::default(),
        read: Default::default(),
        searched: searched.into_iter().filter_map(|p| std::path::absolute(p).ok()).collect(),
        // The traces of other profiling cycles (--cycle) keep their reports.
        left_out: left_out
            .iter()
            .map(|p| &p.path)
            .chain(&other_cycles)
            .filter_map(|p| std::path::absolute(p).ok())
            .collect(),
    };
    // Each trace's report directory, named before any is read: every trace
    // holds its name, read or not, so that a trace's directory does not
    // change with whether another could be read.
    let mut planned = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let absolute = std::path::absolute(&input.trace).ok();
        let stem = own_stem(&args.output_dir, stems.unique(&input.rel), absolute.as_deref());
        let stem = match stem {
            Ok(stem) => stem,
            // Another trace's report holds the name: one of this trace's own.
            Err(alternative) => stems.unique(Path::new(&alternative)),
        };
        let dir = args.output_dir.join(&stem);
        this_run.dirs.insert(std::ffi::OsString::from(stem));
        if let Some(absolute) = &absolute {
            this_run.read.insert(absolute.clone(), dir.clone());
        }
        planned.push(Planned { dir, absolute });
    }
    // Each trace's report is made, and staged in its directory, by the
    // worker that read it, as soon as it is read: what is held until the
    // last trace is read is its view (the top rows, its collective
    // kernels), not its tables. The sets are put in place once all are
    // read; Ctrl-C before that leaves none.
    let prepare = |i: usize, read: Read| -> Result<Prepared, Error> {
        let input = &inputs[i];
        let mut view = TraceView::new(input.trace.clone(), input.rank);
        view.cycle = input.cycle.clone();
        let mut workbook_made = None;
        let made = match read {
            Err(err) => Made::Unreadable(err),
            Ok(summary) => {
                let coll = coll_analysis(&summary);
                match report_files(&mut view, &summary, coll.as_ref(), &planned[i], args.top) {
                    Some(files) => {
                        if let Some(xlsx) = &args.xlsx {
                            let path = workbook_path(xlsx, &planned[i].dir, inputs.len());
                            workbook_made =
                                Some((path.clone(), workbook(&summary, coll.as_ref(), &path)?));
                        }
                        Made::Staged(Staged::new(&planned[i].dir, &TRACE_FILES, &files)?)
                    }
                    None => Made::Nothing,
                }
            }
        };
        Ok(Prepared { view, made, workbook: workbook_made })
    };
    let Some(results) =
        read_all(interrupt, &inputs, args.jobs, args.salvage, &gpu_arch, !args.json, &prepare)
    else {
        return Ok(None);
    };
    let mut views = Vec::new();
    let mut unreadable = 0;
    // Errors first (a set that could not be staged), before any is put in
    // place; each trace's set then, in the order of the traces.
    let results = results.into_iter().collect::<Result<Vec<Prepared>, Error>>()?;
    let mut workbooks = Vec::new();
    for (Prepared { mut view, made, workbook }, plan) in results.into_iter().zip(&planned) {
        workbooks.extend(workbook);
        match made {
            Made::Staged(staged) => staged.commit()?,
            // Its last good report stays (marked stale): a trace that
            // cannot be read now (cut short while still being written,
            // a pipe, a file gone unreadable) must not cost it.
            Made::Unreadable(err) => {
                unreadable += 1;
                keep_stale(&plan.dir, &view.trace, &err)?;
                view.error = Some(err);
            }
            Made::Nothing => retire(&plan.dir, &view.trace)?,
        }
        views.push(view);
    }
    let timed: Vec<trace_report::Timed> = views.iter().map(TraceView::timed).collect();
    let (ranks, gpus, cycles) = across(&timed);
    let traces: Vec<Collectives<'_>> = views
        .iter()
        .map(|v| Collectives {
            trace: &v.trace,
            kernels: &v.collective_events,
            gpu_devices: v.gpu_devices,
        })
        .collect();
    let collectives = run_collectives(&traces, &ranks, &args.output_dir, &mut this_run.dirs)?;
    retire_stale(&args.output_dir, &this_run)?;
    for (path, bytes) in &workbooks {
        write_atomic(path, bytes)?;
    }
    if let Some(html) = &args.html {
        crate::html::write(html, &views, &ranks, &cycles, &gpus, &collectives, &left_out)?;
    }
    Ok(Some(Summarized {
        views,
        node_reports: vec![],
        ranks,
        gpus,
        cycles,
        collectives,
        unreadable,
        left_out,
    }))
}

/// A multi-rank run's collective report ([`trace_report::collective_report`]),
/// as `--json` gives it; its CSVs are in `csv_dir`.
#[derive(Debug, Serialize)]
pub(crate) struct RunCollectives {
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) run: PathBuf,
    pub(crate) cycle: Option<trace_report::Cycle>,
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) csv_dir: PathBuf,
    /// Collectives matched across the ranks (`nccl_implicit_sync` rows).
    pub(crate) matched: usize,
    /// Matched by order alone (no process group names in the traces).
    pub(crate) simplified: bool,
    /// `straggler_summary`'s rows, as objects (its CSV's columns).
    pub(crate) straggler: Vec<serde_json::Map<String, serde_json::Value>>,
    /// The matched collectives that cost the most once the last rank
    /// arrived: `nccl_implicit_sync` rows by `comm_latency` (at most 5),
    /// each rank's arrival and duration (`rank_<r>_ts`, `rank_<r>_dur`)
    /// included.
    pub(crate) top: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// A row of a collective report table as `--json` carries it.
pub(crate) type Object = serde_json::Map<String, serde_json::Value>;

/// The number in `key` of a row, if it holds one.
pub(crate) fn number(row: &Object, key: &str) -> Option<f64> {
    row.get(key).and_then(serde_json::Value::as_f64)
}

/// A number with `digits` decimals, `-` where there is none.
pub(crate) fn shown(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

impl RunCollectives {
    /// Whether the ranks span nodes (their straggler rows name more than
    /// one `node_id`): then each row says its node.
    pub(crate) fn spans_nodes(&self) -> bool {
        let nodes: std::collections::BTreeSet<String> =
            self.straggler.iter().map(|s| shown(number(s, "node_id"), 0)).collect();
        nodes.len() > 1
    }

    /// The straggler rows, the rank that arrived last most often first.
    pub(crate) fn stragglers(&self) -> Vec<&Object> {
        let mut rows: Vec<&Object> = self.straggler.iter().collect();
        let last = |m: &Object| number(m, "times_arrived_last").unwrap_or(0.0);
        rows.sort_by(|a, b| last(b).total_cmp(&last(a)));
        rows
    }
}

/// The rows of `table` as objects (numbers as numbers), the first `n`.
fn objects(
    table: &Table,
    n: usize,
    keep: impl Fn(&str) -> bool,
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    table
        .rows
        .iter()
        .take(n)
        .map(|row| {
            table
                .header
                .iter()
                .zip(row)
                .filter(|(h, _)| keep(h))
                .map(|(h, c)| {
                    let value = match c {
                        trace_summary::Cell::Int(i) => serde_json::json!(i),
                        trace_summary::Cell::Float(f) if f.is_finite() => serde_json::json!(f),
                        trace_summary::Cell::Str(s) => serde_json::json!(s),
                        _ => serde_json::Value::Null,
                    };
                    (h.clone(), value)
                })
                .collect()
        })
        .collect()
}

/// A trace's collective kernels, for its run's collective report: read
/// from the trace, or from the record of its report.
struct Collectives<'a> {
    trace: &'a Path,
    kernels: &'a [trace_summary::CollectiveKernel],
    /// Its GPUs (`deviceProperties`): the GPUs per node of its run.
    gpu_devices: Option<usize>,
}

/// The collective report of each run of two ranks or more whose traces
/// hold collective kernels, its CSVs written beside the traces' reports
/// (`<output-dir>/<run>_collectives/`).
fn run_collectives(
    traces: &[Collectives<'_>],
    ranks: &[trace_report::RankRow],
    out: &Path,
    dirs: &mut std::collections::HashSet<std::ffi::OsString>,
) -> Result<Vec<RunCollectives>, Error> {
    let mut reports = Vec::new();
    for run in trace_report::by_run(ranks) {
        let members: Vec<(u32, &Collectives<'_>)> = run
            .iter()
            .filter_map(|r| Some((r.rank, traces.iter().find(|t| t.trace == r.trace)?)))
            .collect();
        if members.len() < 2 {
            continue;
        }
        let kernels: Vec<trace_report::RankKernels<'_>> = members
            .iter()
            .map(|(rank, t)| trace_report::RankKernels { rank: *rank, kernels: t.kernels })
            .collect();
        let gpus_per_node = members[0].1.gpu_devices.filter(|n| *n > 0);
        let what = match run[0].cycle {
            Some(cycle) => format!("run {}, {cycle}", run[0].run.display()),
            None => format!("run {}", run[0].run.display()),
        };
        let report = match trace_report::collective_report(&kernels, gpus_per_node) {
            Ok(report) => report,
            Err(e) => {
                render::note(&format!("no collective report for {what}: {e}"));
                continue;
            }
        };
        // Named after the run's directory (two runs of one name apart).
        let name =
            run[0].run.file_name().map_or("run".into(), |n| n.to_string_lossy().into_owned());
        let mut stem = trace_report::report_stem(Path::new(&name));
        if let Some(cycle) = run[0].cycle {
            stem.push_str(&format!("_cycle{}", cycle.number));
        }
        let mut stem = format!("{stem}_collectives");
        if dirs.contains(std::ffi::OsStr::new(&stem)) {
            let digest = sha1_smol::Sha1::from(run[0].run.as_os_str().as_encoded_bytes()).digest();
            stem = format!("{stem}-{}", &digest.to_string()[..12]);
        }
        let dir = out.join(&stem);
        dirs.insert(std::ffi::OsString::from(&stem));
        let mut files: Vec<(String, Vec<u8>)> = report
            .tables
            .iter()
            .map(|(n, t)| (format!("{n}.csv"), t.to_csv().into_bytes()))
            .collect();
        let absolute = std::path::absolute(&run[0].run).unwrap_or_else(|_| run[0].run.clone());
        let record = serde_json::json!({
            "run": run[0].run.to_string_lossy(),
            "run_absolute": absolute.to_string_lossy(),
            "cycle": run[0].cycle,
        });
        files.push((COLLECTIVE_RECORD.into(), serde_json::to_vec_pretty(&record).expect("json")));
        write_set(&dir, &COLLECTIVE_SET, &files)?;
        let implicit =
            report.table("nccl_implicit_sync").cloned().unwrap_or(Table::new(&[], vec![]));
        let mut top = implicit.clone();
        if let Some(latency) = top.column("comm_latency") {
            top.rows.sort_by(|a, b| {
                let key = |r: &Vec<trace_summary::Cell>| r[latency].number().unwrap_or(0.0);
                key(b).total_cmp(&key(a))
            });
        }
        let keep = [
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
        reports.push(RunCollectives {
            run: run[0].run.clone(),
            cycle: run[0].cycle,
            csv_dir: dir,
            matched: implicit.rows.len(),
            simplified: report.simplified,
            straggler: report
                .table("straggler_summary")
                .map(|t| objects(t, usize::MAX, |_| true))
                .unwrap_or_default(),
            top: objects(&top, 5, |h| {
                keep.contains(&h)
                    || (h.starts_with("rank_") && (h.ends_with("_ts") || h.ends_with("_dur")))
            }),
        });
    }
    Ok(reports)
}

/// The key of a trace's collective kernels in its report's record.
const COLLECTIVE_EVENTS: &str = "collective_events";

/// What a collective report's directory holds besides its CSVs: where its
/// run was (absolute), for a later run to retire it.
const COLLECTIVE_RECORD: &str = "collectives.json";

/// Every file of a collective report's directory.
const COLLECTIVE_SET: [&str; 8] = [
    "nccl_summary_implicit_sync.csv",
    "nccl_summary_long.csv",
    "nccl_summary_all2allv.csv",
    "nccl_long.csv",
    "nccl_implicit_sync.csv",
    "nccl_all2allv.csv",
    "straggler_summary.csv",
    COLLECTIVE_RECORD,
];

/// The run a collective report's directory is of (as named, and
/// absolute), when `dir` is one.
fn collectives_run(dir: &Path) -> Option<(String, PathBuf, bool)> {
    let text = std::fs::read(dir.join(COLLECTIVE_RECORD)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let absolute = PathBuf::from(value["run_absolute"].as_str()?);
    let named = value["run"].as_str().map_or_else(|| absolute.display().to_string(), String::from);
    Some((named, absolute, !value["cycle"].is_null()))
}

/// The tables across traces: cross-rank, cross-GPU and profiling cycles;
/// what makes no table is said in a note.
fn across(
    timed: &[trace_report::Timed],
) -> (Vec<trace_report::RankRow>, Vec<trace_report::GpuRow>, Vec<trace_report::CycleRow>) {
    let (ranks, no_run) = trace_report::cross_rank(timed);
    for (what, why) in no_run {
        render::note(&format!("no cross-rank table for {what}: {why}"));
    }
    let (gpus, left_out_of_gpus) = trace_report::cross_gpu(timed);
    for left in &left_out_of_gpus {
        render::note(&render::left_out_of_gpus(left));
    }
    (ranks, gpus, trace_report::cycle_trend(timed))
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
        let path = dir.join(RECORD);
        let text = std::fs::read(&path).map_err(io(&path))?;
        let record: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not the record `report summary` writes ({e})",
                path.display()
            ))
        })?;
        let Some(trace) = record["trace"].as_str() else { continue };
        // As the node named it, from its work directory: under the node's.
        let trace: PathBuf = node.join(
            Path::new(trace)
                .components()
                .filter(|c| *c != std::path::Component::CurDir)
                .collect::<PathBuf>(),
        );
        let timeline: Vec<(String, f64)> = record["timeline"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|row| Some((row[0].as_str()?.to_string(), row[1].as_f64()?)))
            .collect();
        let number = |key: &str| record[key].as_u64();
        timed.push(trace_report::Timed {
            rocprof: record["outcome"] == "rocprofv3",
            gpu_index: number("gpu_index").map(|n| n as u32),
            comm_ms: record["comm_ms"].as_f64(),
            steps: number("steps").map(|n| n as usize),
            timeline,
            ..trace_report::Timed::new(trace, number("rank").map(|n| n as u32))
        });
        let events = match record.get(COLLECTIVE_EVENTS) {
            None => vec![],
            Some(events) => serde_json::from_value(events.clone()).map_err(|e| {
                Error::Usage(format!(
                    "{}: its {COLLECTIVE_EVENTS} are not what `report summary` writes ({e})",
                    path.display()
                ))
            })?,
        };
        kernels.push((events, number("gpu_devices").map(|n| n as usize)));
        read.push(dir);
    }
    // Profiling cycles, as the traces' names tell them apart.
    let pytorch: Vec<usize> = (0..timed.len()).filter(|&i| !timed[i].rocprof).collect();
    let named: Vec<(PathBuf, Option<u32>)> =
        pytorch.iter().map(|&i| (timed[i].trace.clone(), timed[i].rank)).collect();
    for (&i, cycle) in pytorch.iter().zip(trace_report::cycles_of(&named)) {
        timed[i].cycle = cycle;
    }
    let (ranks, gpus, cycles) = across(&timed);
    // Each run's collective report, from the kernels the records keep.
    let traces: Vec<Collectives<'_>> = timed
        .iter()
        .zip(&kernels)
        .map(|(t, (events, gpu_devices))| Collectives {
            trace: &t.trace,
            kernels: events,
            gpu_devices: *gpu_devices,
        })
        .collect();
    let collectives = run_collectives(&traces, &ranks, out, &mut Default::default())?;
    Ok(Some(Summarized {
        views: vec![],
        node_reports: read,
        ranks,
        gpus,
        cycles,
        collectives,
        unreadable: 0,
        left_out: vec![],
    }))
}

#[cfg(test)]
mod tests {
    use super::{TopRow, labels};

    /// Every perf-model sheet the library writes is one of a report's
    /// files (owned, staged and retired with it).
    #[test]
    fn a_report_owns_every_sheet() {
        for sheet in trace_summary::PERF_SHEETS {
            assert!(super::TRACE_FILES.contains(&format!("{sheet}.csv").as_str()), "{sheet}");
        }
    }

    #[test]
    fn a_set_that_fails_part_way_leaves_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.csv"), "old a").unwrap();
        std::fs::write(d.join("b.csv"), "old b").unwrap();
        // The second file cannot be written (its directory does not exist).
        let ours = ["a.csv", "b.csv", "no/c.csv"];
        let files = [("a.csv".to_string(), b"new a".to_vec()), ("no/c.csv".into(), vec![])];
        let err = super::write_set(d, &ours, &files).unwrap_err();
        assert!(err.to_string().contains("no/c.csv"), "{err}");
        let listed = || {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listed(), ["a.csv", "b.csv"], "no staging directory is left");
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "old a");
        // Written whole: the new a, and no b.
        let files = [("a.csv".to_string(), b"new a".to_vec())];
        super::write_set(d, &ours, &files).unwrap();
        assert_eq!(listed(), ["a.csv"]);
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "new a");
    }

    /// A set that fails into directories made for it (a full disk on a
    /// fresh `-o`) takes them with it: no empty report directory is left.
    #[test]
    fn a_set_that_fails_leaves_no_directory_made_for_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), "kept").unwrap();
        let into = dir.path().join("out/rank0_trace");
        let files = [("a.csv".to_string(), b"new a".to_vec()), ("no/c.csv".into(), vec![])];
        super::write_set(&into, &["a.csv", "no/c.csv"], &files).unwrap_err();
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["mine.txt"]);
        // Into a directory that was there, it is kept.
        std::fs::create_dir(dir.path().join("out")).unwrap();
        super::write_set(&into, &["a.csv", "no/c.csv"], &files).unwrap_err();
        assert!(dir.path().join("out").is_dir());
        assert!(!into.exists());
    }

    /// A set staged while other traces are read, and dropped (Ctrl-C),
    /// leaves nothing: not its staging directory, not the directories made
    /// for it; one that was there keeps its files.
    #[test]
    fn a_staged_set_dropped_uncommitted_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("out/rank0_trace");
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("a.csv"), "old a").unwrap();
        let files = [("a.csv".to_string(), b"new a".to_vec())];
        let staged = [
            super::Staged::new(&fresh, &["a.csv"], &files).unwrap(),
            super::Staged::new(&kept, &["a.csv"], &files).unwrap(),
        ];
        assert!(fresh.is_dir(), "staged in its directory");
        drop(staged);
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["kept"]);
        let names: Vec<_> =
            std::fs::read_dir(&kept).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.csv"]);
        assert_eq!(std::fs::read_to_string(kept.join("a.csv")).unwrap(), "old a");
        // Committed, it is in place, its directories with it.
        super::Staged::new(&fresh, &["a.csv"], &files).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_to_string(fresh.join("a.csv")).unwrap(), "new a");
        assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 1);
    }

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
