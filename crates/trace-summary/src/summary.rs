//! Reading a trace and computing its tables.

use std::{
    fs::File,
    io::{BufRead, BufReader, Read},
    path::Path,
    sync::{Arc, atomic::AtomicBool},
};

use serde::Serialize;

use crate::{
    Error, Result,
    chan::{ChanReader, chan_pipe},
    compute::{Analysis, Table},
    parse::parse,
};

/// Which rule produced the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// TraceLens' rules applied: the tables are what TraceLens writes.
    Tables,
    /// TraceLens gives up on this trace ("No GPU events found in the trace"),
    /// but its legacy categories (`Kernel`/`Runtime`/`Operator`) or older
    /// flows (`async`, `async_cpu_to_gpu`) read as today's link it: the
    /// tables follow TraceLens' rules on the translated events.
    LegacyCategories,
    /// GPU events exist but none is linked to a launch (an event-sampled
    /// trace whose flows are gone): the timeline counts every GPU event, and
    /// kernels have no parent op (empty category and op). No `ops_summary`.
    Unlinked,
    /// No GPU activity at all: no table. For Kineto a CPU-only trace; for
    /// rocprofv3 no kernel dispatch or memory copy records (captured
    /// without `--kernel-trace` / `--memory-copy-trace`).
    NoGpuActivity,
    /// A rocprofv3 JSON trace: TraceLens' rocprof variant of `gpu_timeline`
    /// (total / kernel / memory / busy / idle) and `kernel_summary`; no
    /// `ops_summary` (rocprofv3 records no operators).
    Rocprofv3,
}

/// The iterations a trace covers ([`Summary::steps`]), and what marked them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Steps {
    /// How many.
    pub count: usize,
    /// The annotations they were counted from.
    pub marker: StepMarker,
}

/// The annotations a trace's steps were counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StepMarker {
    /// `ProfilerStep#N`, which torch.profiler writes for each step it
    /// records: the distinct N are counted.
    #[serde(rename = "ProfilerStep#")]
    ProfilerStep,
    /// `Optimizer.step#<Class>.step` (`user_annotation`), which PyTorch
    /// writes for each optimizer step: what marks iterations in a trace
    /// captured without a step schedule (on demand through dynolog, by
    /// iteration). The calls of the optimizer called most are counted (a
    /// wrapper such as an EMA optimizer steps once with the one it wraps).
    #[serde(rename = "Optimizer.step#")]
    OptimizerStep,
}

impl StepMarker {
    /// What one step is called in a sentence: `profiler step`,
    /// `optimizer step`.
    pub fn noun(self) -> &'static str {
        match self {
            StepMarker::ProfilerStep => "profiler step",
            StepMarker::OptimizerStep => "optimizer step",
        }
    }
}

/// What a trace was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// A Kineto (PyTorch profiler) Chrome trace.
    Kineto,
    /// rocprofv3 output: a JSON trace (`rocprofiler-sdk-tool`), or its rocpd
    /// SQLite database (`<pid>_results.db`), which hold the same records.
    Rocprofv3,
    /// A Perfetto protobuf trace (`.pftrace`, as rocprofv3 `--output-format
    /// pftrace` writes): read into rocprofv3's tables, its `kernel_dispatch`
    /// slices the kernels, its `memory_copy` slices the copies.
    Perfetto,
}

impl Format {
    /// What [`summarize_file`] reads the trace at `path` as, from its first
    /// bytes (decompressed when gzip): rocprofv3 JSON by its first key, a
    /// rocpd database by SQLite's header, a Perfetto trace as
    /// [`trace_sanitize::is_perfetto`] tells one, anything else as Kineto
    /// (also when they cannot be read).
    pub fn of_file(path: &Path) -> Format {
        match head(path) {
            Ok(Some(head)) => Format::of_head(&head),
            _ => Format::Kineto,
        }
    }

    /// [`Format::of_file`] of a trace whose first bytes are `head`.
    fn of_head(head: &[u8]) -> Format {
        if crate::rocprof::sniff(head) || trace_sanitize::is_sqlite(head) {
            Format::Rocprofv3
        } else if trace_sanitize::is_perfetto(head) {
            Format::Perfetto
        } else {
            Format::Kineto
        }
    }

    /// Whether the trace's tables are rocprofv3's (`gpu_timeline` and
    /// `kernel_summary` of its GPU records; no ops, no compute/communication
    /// split): a rocprofv3 or Perfetto trace.
    pub fn rocprof_tables(self) -> bool {
        matches!(self, Format::Rocprofv3 | Format::Perfetto)
    }

    /// About how much memory [`summarize_file`] takes to read a trace of
    /// this format whose JSON text is `json` bytes, buffers included: a
    /// Kineto trace's events are kept, about 0.75 of its size for traces as
    /// profilers write them (217 MiB for a 302.6 MB trace; 0.7-0.95 on the
    /// public traces). A trace of many small events takes more, as each
    /// event costs about 320 bytes whatever its text: [`memory_needed`]
    /// (of a file) counts the events in its first MiB and plans with the
    /// larger figure (3.0 times the size for 300k kernels of 100 bytes
    /// each). One long string (200 MB of a kernel name) takes about 1.9
    /// times its size and is not foreseen. Of a rocprofv3 trace only its records' times and
    /// kernel names, about a sixth (50 MiB for a 298 MB trace, 21 MiB for
    /// 37 MB); the same of a Perfetto trace, whose slices take fewer bytes,
    /// at most about half its size (40 MiB for a 93 MB trace of 571k kernels
    /// annotated as rocprofv3 annotates them, 41 MiB for 39 MB with their
    /// times only).
    pub fn memory_needed(self, json: u64) -> u64 {
        const BUFFERS: u64 = 16 << 20;
        match self {
            Format::Kineto => json / 4 * 3 + BUFFERS,
            Format::Rocprofv3 => json / 6 + BUFFERS,
            Format::Perfetto => json / 2 + BUFFERS,
        }
    }
}

/// About how much memory [`summarize_file`] takes to read the trace at
/// `path`, whose JSON text is `json` bytes: [`Format::memory_needed`] of its
/// format; for a rocpd database (SQLite, by its first bytes) about three
/// times its size (its records read took 38 MiB for a 21 MB database of
/// 571k kernels, 68 MiB for 27 MB and a million).
pub fn memory_needed(path: &Path, json: u64) -> u64 {
    const BUFFERS: u64 = 16 << 20;
    match head(path) {
        Ok(Some(head)) if trace_sanitize::is_sqlite(&head) => {
            std::fs::metadata(path).map_or(0, |m| m.len()) * 3 + BUFFERS
        }
        Ok(Some(head)) => match Format::of_head(&head) {
            Format::Kineto => {
                Format::Kineto.memory_needed(json).max(by_events(path, json) + BUFFERS)
            }
            format => format.memory_needed(json),
        },
        _ => Format::Kineto.memory_needed(json),
    }
}

/// What a Kineto trace's events take in memory, about 320 bytes each (307
/// measured for 100-byte kernels, 217-228 for the events of real traces),
/// their number taken from how densely its first MiB holds them; 0 when
/// that MiB holds too few to tell (metadata, one long string).
fn by_events(path: &Path, json: u64) -> u64 {
    const SAMPLE: u64 = 1 << 20;
    const PER_EVENT: f64 = 320.0;
    let Ok((input, _)) = decompressed(path) else { return 0 };
    let mut sample = Vec::new();
    if input.take(SAMPLE).read_to_end(&mut sample).is_err() && sample.is_empty() {
        return 0;
    }
    let events = memchr::memmem::find_iter(&sample, b"\"ph\"").count();
    if events < 100 {
        return 0;
    }
    let per_byte = events as f64 / sample.len() as f64;
    (json as f64 * per_byte * PER_EVENT) as u64
}

/// How to read a trace.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Options {
    /// Summarize a truncated trace (its writer killed part way, a gzip
    /// stream cut short) from the records complete before the cut, read
    /// through [`trace_sanitize::salvage`], instead of failing with
    /// [`Error::Truncated`]; [`Summary::truncated_at`] then says where it was
    /// cut. Kineto writes CPU ops first and GPU activity in time order after
    /// them, rocprofv3 its kernel dispatches last: what is lost is the end of
    /// the GPU timeline.
    pub salvage: bool,
    /// Raised by the caller (a Ctrl-C handler) to stop: [`summarize_file_with`]
    /// then ends with [`Error::Cancelled`] after the chunk it is reading.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Whose roofline the perf-model sheets compare each op with
    /// ([`crate::ArchChoice`]; none by default, as TraceLens).
    pub gpu_arch: crate::ArchChoice,
    /// Leave out the perf-model tables ([`Summary::gemm`],
    /// [`Summary::perf_sheets`], [`Summary::unified_perf_summary`]): the
    /// core tables alone, sooner.
    pub skip_perf_models: bool,
}

impl Options {
    /// Options that salvage truncated traces ([`Options::salvage`]).
    pub fn salvaging() -> Options {
        Options { salvage: true, ..Options::default() }
    }

    /// These options, stopping when `cancel` is raised ([`Options::cancel`];
    /// `None`: never).
    pub fn cancelled_by(self, cancel: impl Into<Option<Arc<AtomicBool>>>) -> Options {
        Options { cancel: cancel.into(), ..self }
    }

    /// These options, with the perf-model tables left out or not
    /// ([`Options::skip_perf_models`]).
    pub fn skipping_perf_models(self, skip: bool) -> Options {
        Options { skip_perf_models: skip, ..self }
    }

    /// These options, with the perf-model sheets compared with a roofline
    /// ([`Options::gpu_arch`]).
    pub fn with_gpu_arch(self, gpu_arch: crate::ArchChoice) -> Options {
        Options { gpu_arch, ..self }
    }
}

/// The three tables of one trace.
#[derive(Debug, Clone)]
pub struct Summary {
    /// What the trace was read as.
    pub format: Format,
    /// What happened.
    pub outcome: Outcome,
    /// `gpu_timeline`.
    pub gpu_timeline: Option<Table>,
    /// `kernel_summary` (TraceLens omits it for kernels without `args`).
    pub kernel_summary: Option<Table>,
    /// `ops_summary` (traces with `cpu_op` events).
    pub ops_summary: Option<Table>,
    /// `ops_summary_by_category`: `ops_summary`'s launchers added up by op
    /// category (GEMM, elementwise, ...), with their share of the time;
    /// where `ops_summary` is.
    pub ops_summary_by_category: Option<Table>,
    /// `ops_unique_args`: the launchers grouped by name and argument
    /// signature (input shapes, types, strides, concrete values), with
    /// their direct and subtree kernel times and their kernels summarized;
    /// where `ops_summary` is.
    pub ops_unique_args: Option<Table>,
    /// `unified_perf_summary`: one row per op and argument signature,
    /// where the op is the modelled op at or above each kernel launch (a
    /// GEMM above its launcher, say), else the launcher, with the busy
    /// time of all its kernels and, where modelled, FLOPs, bytes, TFLOPS/s,
    /// TB/s and the roofline; kernels no op claims as synthetic ops,
    /// communication left out. Where `ops_summary` is.
    pub unified_perf_summary: Option<Table>,
    /// `GEMM` (TraceLens' perf-model sheet): each GEMM op (`aten::mm`,
    /// `addmm`, `bmm`, `baddbmm`, `_scaled_mm`, vLLM's unquantized GEMM)
    /// grouped by its M, N, K, bias, strides and dtypes, with its FLOPs,
    /// bytes moved and the TFLOPS/s and TB/s its kernels reached; Kineto
    /// traces holding such ops with their input shapes (`record_shapes`).
    pub gemm: Option<Table>,
    /// The other perf-model sheets this crate models, by file stem
    /// (`CONV_fwd`, `CONV_bwd`, `SDPA_fwd`, `UnaryElementwise`,
    /// `BinaryElementwise`, `Normalization`, `Reduce_fwd`, `Reduce_bwd`):
    /// the aten convolution, attention, element-wise, normalization and
    /// reduction ops with their shapes, FLOPs, bytes,
    /// TFLOPS/s and TB/s, as TraceLens writes them; those with rows.
    pub perf_sheets: Vec<(String, Table)>,
    /// The roofline the perf-model sheets were compared with
    /// ([`Options::gpu_arch`]), if any.
    pub gpu_arch: Option<crate::GpuArch>,
    /// Whether its CPU ops carry their input shapes (`Input Dims`: what
    /// torch.profiler's `record_shapes=True` records, and what the
    /// perf-model sheets and `ops_unique_args` are made of); `None` for a
    /// trace without CPU ops (rocprofv3, a GPU-only trace).
    pub shapes_recorded: Option<bool>,
    /// `short_kernel_histogram` (TraceLens' `--short_kernel_study`): the
    /// kernels shorter than 10 µs, their durations in 100 equal bins; a
    /// header alone without any. Kineto traces with a GPU timeline.
    pub short_kernel_histogram: Option<Table>,
    /// `short_kernels_summary`: those kernels grouped by parent op, its
    /// input shapes and the kernel's name (by name alone in a trace without
    /// CPU ops), the most time first: launches too short to be worth their
    /// overhead. As TraceLens writes it, empty shapes included.
    pub short_kernels_summary: Option<Table>,
    /// The kernels shorter than 10 µs in all, where the tables are.
    pub short_kernels: Option<crate::ShortKernels>,
    /// `collective_summary`: madengine's own table (not TraceLens') of the
    /// NCCL/RCCL collective calls whose kernels carry PyTorch's collective
    /// args (`Collective name`, message sizes, `Group size`): count,
    /// durations and nccl-tests' algorithm and bus bandwidths per distinct
    /// call. `None` without such kernels (rocprofv3; PyTorch before 2.x).
    pub collective_summary: Option<Table>,
    /// Events read.
    pub events: usize,
    /// GPU events (kernel, memcpy, memset), linked or not.
    pub gpu_events: usize,
    /// The kernels TraceLens' collective analysis selects: category
    /// `kernel`, a name with `nccl`, `rccl` or `cross_device_reduce` in it
    /// (any case), and a `correlation` or `External id` that is not null in
    /// its `args`. Its multi-rank report fails (`KeyError:
    /// 'collective_id'`) when no rank has one; 0 for rocprofv3 and Perfetto.
    pub collective_kernels: usize,
    /// Those kernels, in file order, as TraceLens' collective analysis
    /// reads them (the input of a run's multi-rank collective report);
    /// empty for rocprofv3 and Perfetto.
    pub collective_events: Vec<crate::CollectiveKernel>,
    /// For rocprofv3 (its JSON, database or Perfetto trace): the processes
    /// it recorded, `Some(0)` for a run whose tool recorded nothing (an
    /// empty `rocprofiler-sdk-tool` list, on which TraceLens' rocprof report
    /// fails with `IndexError`); `None` for Kineto.
    pub processes: Option<usize>,
    /// `traceEvents` lists before the last one (the key given twice in the
    /// trace's top object): TraceLens' parser keeps only the last, and so do
    /// the tables; 0 for a trace with one.
    pub earlier_event_lists: u32,
    /// For a rocpd database: its kernel dispatches and memory copies left
    /// out for want of a time (a start or an end that is NULL, text or
    /// negative), which rocprofv3 never writes.
    pub dropped_records: u64,
    /// GPU events with a negative `dur` (a clock gone backwards, a trace
    /// edited by hand): counted as TraceLens counts them, so the timeline's
    /// parts can come out negative.
    pub negative_durations: usize,
    /// For a trace read with [`Options::salvage`] that was cut short: its
    /// JSON text (decompressed) ends after this many bytes, and the tables
    /// cover the [`Summary::events`] complete before the cut.
    pub truncated_at: Option<u64>,
    /// For a trace read with [`Options::salvage`] that ended inside a
    /// string though its last byte is `}` or `]`
    /// ([`trace_sanitize::Report::unclosed_string`]): not cut short, but a
    /// string that never ends (a quote or a backslash broke it), the rest of
    /// the file read as one string; [`Summary::truncated_at`] says where the
    /// tables stop.
    pub unclosed_string: bool,
    /// For a trace read with [`Options::salvage`] whose JSON document was
    /// followed by more than whitespace: how many bytes of that were dropped
    /// unread (the tables cover the whole document).
    pub data_after_end: Option<u64>,
    /// Entries of the trace's `deviceProperties` list. Kineto writes one per
    /// GPU its process saw, so `Some(0)` says the process saw none: the
    /// workload ran on the CPU (no GPU driver, or no device passed into its
    /// container). `None` when the trace has no such list (rocprofv3, the
    /// oldest Kineto traces).
    pub gpu_devices: Option<usize>,
    /// The GPU models the trace names, each once, in the order first named:
    /// Kineto's `deviceProperties` names (`NVIDIA H100 80GB HBM3`, `AMD
    /// Instinct MI300X`), rocprofv3's GPU agents' product names. Empty where
    /// it names none (older traces; a vLLM trace's empty names).
    pub gpus: Vec<String>,
    /// The GPU the trace's kernels all ran on, by its index among the node's
    /// GPUs (rocprofv3's agent `logical_node_type_id`): in a multi-GPU job
    /// profiled with rocprofv3, each process's file stands for one GPU, and
    /// this tells which, as no rank is written. `None` when they ran on
    /// several GPUs (or the trace says not which), and for Kineto traces,
    /// which carry their rank instead.
    pub gpu_index: Option<u32>,
    /// What was repaired on the way in ([`summarize_file`] reads through
    /// `trace_sanitize`): a trace strict JSON parsers, TraceLens among them,
    /// refuse as it is. All zero for a clean trace, and for [`summarize`],
    /// whose reader the caller prepared.
    pub repaired: trace_sanitize::Counts,
    /// The first bare word that is not JSON ([`trace_sanitize::NotJson`]),
    /// found by [`summarize_file`] in a part of the trace its tables do not
    /// read (one in a part they read is [`Error::NotJson`]): no repair
    /// applies, so strict parsers, TraceLens among them, refuse the trace.
    pub not_json: Option<trace_sanitize::NotJson>,
    /// The first token where the JSON grammar allows none
    /// ([`trace_sanitize::Malformed`]: a string a stray quote ended early),
    /// found by [`summarize_file`] in a part of the trace its tables do not
    /// read (Kineto's log lines after the events, say; one in a part they
    /// read is [`Error::Malformed`]): strict parsers refuse the trace.
    pub malformed: Option<trace_sanitize::Malformed>,
    /// For rocprofv3: the lists its processes' `buffer_records` hold
    /// (`kernel_dispatch`, `memory_copy`, `hip_api`, ...), each once, in the
    /// order first seen (at most 32): what a trace without dispatch records
    /// holds instead. For Kineto, only when it has no `traceEvents` list:
    /// its top-level keys.
    pub record_lists: Vec<String>,
    /// The steps (iterations) the trace holds: its distinct
    /// `ProfilerStep#N` annotations (torch.profiler marks each step it
    /// records), or without them its optimizer steps (a trace captured on
    /// demand by iteration); see [`StepMarker`]. `None` without either (a
    /// trace captured outside a training loop; rocprofv3).
    pub steps: Option<Steps>,
}

impl Summary {
    /// TraceLens' perf-report tables this summary holds, by sheet name, in
    /// the order TraceLens writes them (its reference's §1): the timeline,
    /// the op tables, `unified_perf_summary`, the perf-model sheets,
    /// `kernel_summary`, the short-kernel study. (`coll_analysis`, made of
    /// [`Summary::collective_events`], is `trace_report`'s.)
    pub fn tracelens_tables(&self) -> Vec<(&str, &Table)> {
        let mut out: Vec<(&str, &Table)> = Vec::new();
        let named = [
            ("gpu_timeline", &self.gpu_timeline),
            ("ops_summary_by_category", &self.ops_summary_by_category),
            ("ops_summary", &self.ops_summary),
            ("ops_unique_args", &self.ops_unique_args),
            ("unified_perf_summary", &self.unified_perf_summary),
            ("GEMM", &self.gemm),
        ];
        out.extend(named.into_iter().filter_map(|(n, t)| Some((n, t.as_ref()?))));
        out.extend(self.perf_sheets.iter().map(|(n, t)| (n.as_str(), t)));
        let named = [
            ("kernel_summary", &self.kernel_summary),
            ("short_kernel_histogram", &self.short_kernel_histogram),
            ("short_kernels_summary", &self.short_kernels_summary),
        ];
        out.extend(named.into_iter().filter_map(|(n, t)| Some((n, t.as_ref()?))));
        out
    }
}

/// Each name once, in order, without empty ones.
pub(crate) fn distinct(names: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let name = name.trim();
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Summarize a trace read from `reader` (already decompressed and sanitized).
///
/// rocprofv3 JSON is recognized by its first key and summarized with
/// TraceLens' rocprof rules ([`Outcome::Rocprofv3`]); anything else is read
/// as a Kineto trace.
pub fn summarize<R: Read + Send>(reader: R, label: &Path) -> Result<Summary> {
    summarize_with(reader, label, &Options::default())
}

/// [`summarize`] with [`Options`].
pub fn summarize_with<R: Read + Send>(
    reader: R,
    label: &Path,
    options: &Options,
) -> Result<Summary> {
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let head = reader.fill_buf().map_err(|e| Error::Parse {
        path: label.to_path_buf(),
        format: None,
        source: e.into(),
    })?;
    if trace_sanitize::is_perfetto(head) {
        return perfetto_summary(reader, label, options, false);
    }
    if trace_sanitize::is_sqlite(head) {
        return Err(Error::Database {
            path: label.to_path_buf(),
            source: crate::DatabaseError::NotRocpd(
                "a SQLite database is read from its file (summarize_file), not a stream".into(),
            ),
        });
    }
    if let Some(format) = trace_sanitize::compressed_format(head) {
        return Err(Error::Compressed { path: label.to_path_buf(), format, twice: false });
    }
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if let Some(&first) = text.iter().find(|b| !b.is_ascii_whitespace())
        && !matches!(first, b'{' | b'[')
    {
        return Err(Error::NotADocument { path: label.to_path_buf(), first });
    }
    if crate::rocprof::sniff(head) {
        let tables = crate::rocprof::tables(reader).map_err(|e| Error::Parse {
            path: label.to_path_buf(),
            format: Some(Format::Rocprofv3),
            source: e.into(),
        })?;
        if let Some(bytes) = tables.truncated_at {
            return Err(Error::Truncated { path: label.to_path_buf(), bytes, events: None });
        }
        if let Some(offset) = tables.data_after_end {
            return Err(Error::DataAfterEnd { path: label.to_path_buf(), offset: Some(offset) });
        }
        return Ok(rocprof_summary(tables));
    }
    kineto_summary(reader, label, options)
}

/// A Kineto (Chrome trace JSON) trace's summary, read from `reader` (its
/// first bytes seen to open a JSON document): TraceLens' rules; else its
/// legacy categories read as today's; else its GPU events without links;
/// else no GPU activity.
fn kineto_summary<R: Read + Send>(reader: R, label: &Path, options: &Options) -> Result<Summary> {
    let mut parsed = parse(reader).map_err(|e| Error::Parse {
        path: label.to_path_buf(),
        format: Some(Format::Kineto),
        source: e.into(),
    })?;
    let events = parsed.read;
    let steps = parsed.steps();
    let truncated_at = parsed.truncated_at;
    let gpu_devices = parsed.devices;
    let gpus = distinct(std::mem::take(&mut parsed.device_names));
    if let Some(offset) = parsed.after_end {
        return Err(Error::DataAfterEnd { path: label.to_path_buf(), offset: Some(offset) });
    }
    if let Some(bytes) = truncated_at
        && !options.salvage
    {
        return Err(Error::Truncated { path: label.to_path_buf(), bytes, events: Some(events) });
    }
    let facts = Facts {
        collectives: crate::collective::collective_summary(&parsed),
        collective_kernels: crate::collective::selected_kernels(&parsed),
        collective_events: crate::collective::collective_kernels(&parsed),
        earlier_event_lists: parsed.earlier_event_lists,
        negative_durations: parsed
            .events
            .iter()
            .filter(|e| e.cat.modern().is_gpu() && e.dur.is_some_and(|d| d.f() < 0.0))
            .count(),
        shapes_recorded: parsed
            .events
            .iter()
            .any(|e| e.cat == crate::parse::Cat::CpuOp)
            .then(|| parsed.shapes.iter().any(|(_, s)| s.dims.is_some())),
        gpu_arch: match &options.gpu_arch {
            crate::ArchChoice::None => None,
            crate::ArchChoice::Given(arch) => Some(arch.clone()),
            crate::ArchChoice::FromTrace => gpus.iter().find_map(|g| crate::GpuArch::for_device(g)),
        },
        events,
        steps,
        truncated_at,
        gpu_devices,
        gpus,
        skip_perf_models: options.skip_perf_models,
    };
    let tables =
        |analysis: &Analysis<'_>, outcome, gpu_events| facts.tables(analysis, outcome, gpu_events);
    // 1. TraceLens' own rules.
    let gpu_events = parsed.events.iter().filter(|e| e.cat.is_gpu()).count();
    if let Some(s) = tables(&Analysis::new(&parsed), Outcome::Tables, gpu_events) {
        return Ok(s);
    }
    // 2. Legacy categories and older flows, read as today's.
    let mut gpu_events = gpu_events;
    if parsed.events.iter().any(|e| e.cat.is_legacy())
        || parsed.flows.iter().any(|f| f.cat.is_legacy())
    {
        for e in &mut parsed.events {
            e.cat = e.cat.modern();
        }
        for f in &mut parsed.flows {
            f.cat = f.cat.modern();
        }
        gpu_events = parsed.events.iter().filter(|e| e.cat.is_gpu()).count();
        if let Some(s) = tables(&Analysis::new(&parsed), Outcome::LegacyCategories, gpu_events) {
            return Ok(s);
        }
    }
    // 3. GPU events without links: the timeline from all of them.
    if let Some(s) =
        tables(&Analysis::new(&parsed).include_unlinked(), Outcome::Unlinked, gpu_events)
    {
        return Ok(s);
    }
    // Without a traceEvents list: what its top level holds instead.
    let lists = if parsed.has_trace_events { Vec::new() } else { parsed.keys };
    Ok(facts.no_gpu_activity(gpu_events, lists))
}

/// What a Kineto trace's summary says of it whichever rule made its tables.
struct Facts {
    collectives: Option<Table>,
    collective_kernels: usize,
    collective_events: Vec<crate::CollectiveKernel>,
    earlier_event_lists: u32,
    negative_durations: usize,
    shapes_recorded: Option<bool>,
    gpu_arch: Option<crate::GpuArch>,
    events: usize,
    steps: Option<Steps>,
    truncated_at: Option<u64>,
    gpu_devices: Option<usize>,
    gpus: Vec<String>,
    skip_perf_models: bool,
}

impl Facts {
    /// The summary of `analysis`, by the rule `outcome` names; `None`
    /// without a GPU timeline.
    fn tables(
        &self,
        analysis: &Analysis<'_>,
        outcome: Outcome,
        gpu_events: usize,
    ) -> Option<Summary> {
        let (timeline, total) = analysis.gpu_timeline()?;
        let (short_histogram, short_summary, short) = analysis.short_kernels(total);
        let (ops_summary, ops_summary_by_category, ops_unique_args) =
            match if outcome == Outcome::Unlinked { None } else { analysis.ops_summary() } {
                Some((ops, by_category, unique)) => (Some(ops), Some(by_category), Some(unique)),
                None => (None, None, None),
            };
        let models = outcome != Outcome::Unlinked && !self.skip_perf_models;
        let unified_perf_summary = match &ops_summary {
            Some(_) if models => analysis.unified_perf_summary(self.gpu_arch.as_ref()),
            _ => None,
        };
        Some(Summary {
            kernel_summary: analysis.kernel_summary(total),
            ops_summary,
            ops_summary_by_category,
            unified_perf_summary,
            ops_unique_args,
            gemm: match models {
                false => None,
                true => analysis.gemm_sheet(self.gpu_arch.as_ref()),
            },
            perf_sheets: match models {
                false => vec![],
                true => analysis
                    .perf_sheets(self.gpu_arch.as_ref())
                    .into_iter()
                    .map(|(n, t)| (n.to_string(), t))
                    .collect(),
            },
            gpu_arch: self.gpu_arch.clone(),
            shapes_recorded: self.shapes_recorded,
            short_kernel_histogram: Some(short_histogram),
            short_kernels_summary: Some(short_summary),
            short_kernels: Some(short),
            gpu_timeline: Some(timeline),
            collective_summary: self.collectives.clone(),
            events: self.events,
            gpu_events,
            collective_kernels: self.collective_kernels,
            collective_events: self.collective_events.clone(),
            earlier_event_lists: self.earlier_event_lists,
            negative_durations: self.negative_durations,
            truncated_at: self.truncated_at,
            gpu_devices: self.gpu_devices,
            gpus: self.gpus.clone(),
            steps: self.steps,
            ..Summary::without_tables(Format::Kineto, outcome)
        })
    }

    /// The summary of a trace without GPU activity: no table; `record_lists`
    /// what its top level holds instead of a traceEvents list.
    fn no_gpu_activity(self, gpu_events: usize, record_lists: Vec<String>) -> Summary {
        Summary {
            collective_summary: self.collectives,
            events: self.events,
            gpu_events,
            collective_kernels: self.collective_kernels,
            collective_events: self.collective_events,
            earlier_event_lists: self.earlier_event_lists,
            negative_durations: self.negative_durations,
            truncated_at: self.truncated_at,
            gpu_devices: self.gpu_devices,
            gpus: self.gpus,
            record_lists,
            steps: self.steps,
            ..Summary::without_tables(Format::Kineto, Outcome::NoGpuActivity)
        }
    }
}

impl Summary {
    /// A summary of a trace read as `format`, by the rule `outcome` names,
    /// with no table and nothing known of it yet: what each reader fills in.
    fn without_tables(format: Format, outcome: Outcome) -> Summary {
        Summary {
            format,
            outcome,
            gpu_timeline: None,
            kernel_summary: None,
            ops_summary: None,
            ops_summary_by_category: None,
            ops_unique_args: None,
            unified_perf_summary: None,
            short_kernel_histogram: None,
            short_kernels_summary: None,
            gemm: None,
            perf_sheets: vec![],
            gpu_arch: None,
            shapes_recorded: None,
            short_kernels: None,
            collective_summary: None,
            events: 0,
            gpu_events: 0,
            collective_kernels: 0,
            collective_events: Vec::new(),
            processes: None,
            earlier_event_lists: 0,
            dropped_records: 0,
            negative_durations: 0,
            truncated_at: None,
            data_after_end: None,
            gpu_devices: None,
            gpus: Vec::new(),
            gpu_index: None,
            repaired: Default::default(),
            not_json: None,
            malformed: None,
            unclosed_string: false,
            record_lists: Vec::new(),
            steps: None,
        }
    }
}

/// The summary of rocprofv3 records' tables (its JSON or its database).
fn rocprof_summary(tables: crate::rocprof::Tables) -> Summary {
    let crate::rocprof::Tables {
        timeline,
        kernels,
        records,
        lists,
        gpus,
        gpu_index,
        processes,
        dropped,
        ..
    } = tables;
    let outcome = if records == 0 { Outcome::NoGpuActivity } else { Outcome::Rocprofv3 };
    Summary {
        gpu_timeline: (outcome == Outcome::Rocprofv3).then_some(timeline),
        kernel_summary: kernels,
        events: records,
        gpu_events: records,
        processes: Some(processes),
        dropped_records: dropped,
        gpus,
        gpu_index,
        record_lists: lists,
        ..Summary::without_tables(Format::Rocprofv3, outcome)
    }
}

/// The summary of the Perfetto trace `input` (from `label`; `gzip`: its
/// bytes are gunzipped ones).
fn perfetto_summary(
    input: impl Read,
    label: &Path,
    options: &Options,
    gzip: bool,
) -> Result<Summary> {
    let path = label.to_path_buf();
    let tables = crate::pftrace::tables(input, options.salvage, options.cancel.as_deref())
        .map_err(|failure| match failure {
            crate::pftrace::Failure::Cancelled => Error::Cancelled { path: path.clone() },
            crate::pftrace::Failure::Read(offset, source) => Error::Read {
                path: path.clone(),
                gzip,
                source: trace_sanitize::Error::Read { offset, source },
            },
            crate::pftrace::Failure::Said(detail) => Error::Parse {
                path: path.clone(),
                format: Some(Format::Perfetto),
                source: crate::ParseError::Said(detail),
            },
            crate::pftrace::Failure::Truncated(bytes) => {
                Error::CutPacket { path: path.clone(), bytes }
            }
        })?;
    let truncated_at = tables.truncated_at;
    Ok(Summary { format: Format::Perfetto, truncated_at, ..rocprof_summary(tables) })
}

/// Summarize a `.json` or `.json.gz` trace file, sanitizing on the fly on a
/// second thread (decompression and repair there, parsing here); a rocprofv3
/// rocpd database (SQLite, by its first bytes), through its views; or a
/// Perfetto trace (`.pftrace`, gzipped or not), packet by packet.
pub fn summarize_file(path: &Path) -> Result<Summary> {
    summarize_file_with(path, &Options::default())
}

/// Writes the rocpd database `db` (rocprofv3's SQLite output,
/// `<pid>_results.db`) to `output` as the rocprofv3 JSON trace
/// (`--output-format json`) of the same records: what TraceLens' rocprof
/// report reads (`TraceLens_generate_perf_report_rocprof`), which reads no
/// database. The JSON holds the process's metadata (pid, init and fini
/// times, host, command), its agents, kernel symbols, kernel dispatches
/// (times, agent, queue, stream, grid and workgroup sizes) and memory
/// copies; rocprofv3's API call records and counters are not carried over.
/// The rows are streamed, and `output` is written through a temporary file
/// beside it, renamed into place when complete: a failure or `cancel`
/// leaves nothing there. The database is opened read-only.
///
/// # Errors
///
/// [`Error::Open`] when `db` cannot be opened, [`Error::Database`] when it
/// is not a readable rocpd database (in the words [`summarize_file`] uses),
/// [`Error::Write`] when `output` cannot be
/// written, [`Error::Cancelled`] when `cancel` was raised.
pub fn rocpd_to_json(
    db: &Path,
    output: &Path,
    cancel: Option<&std::sync::atomic::AtomicBool>,
) -> Result<crate::Converted> {
    // SQLite would say only "unable to open database file".
    let opened = std::fs::File::open(db).and_then(|f| f.metadata());
    match opened {
        Err(source) => return Err(Error::Open { path: db.to_path_buf(), source }),
        Ok(m) if m.is_dir() => {
            let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory");
            return Err(Error::Open { path: db.to_path_buf(), source });
        }
        Ok(_) => {}
    }
    let mut failed = None;
    let mut converted = crate::Converted::default();
    let written = trace_sanitize::write_atomic(output, |file| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        match crate::rocpd::write_json(db, &mut out, cancel) {
            Ok(c) => converted = c,
            Err(crate::rocpd::Written::Write(e)) => return Err(e),
            Err(crate::rocpd::Written::Read(failure)) => {
                failed = Some(failure);
                return Err(std::io::Error::other("the database could not be read"));
            }
        }
        std::io::Write::flush(&mut out)
    });
    match (failed, written) {
        (Some(crate::rocpd::Failure::Cancelled), _) => {
            Err(Error::Cancelled { path: db.to_path_buf() })
        }
        (Some(crate::rocpd::Failure::Said(source)), _) => {
            Err(Error::Database { path: db.to_path_buf(), source })
        }
        (None, Err(source)) => Err(Error::Write { path: output.to_path_buf(), source }),
        (None, Ok(())) => Ok(converted),
    }
}

/// [`summarize_file`] with [`Options`]. With [`Options::salvage`] a gzip
/// stream cut short is salvaged too, up to where it could be read.
pub fn summarize_file_with(path: &Path, options: &Options) -> Result<Summary> {
    refuse_special(path)?;
    // What the file is, by its first bytes (a head that cannot be read is
    // left to the JSON reader, which says why).
    let head = head(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let head = head.unwrap_or_default();
    if trace_sanitize::is_sqlite(&head) {
        return crate::rocpd::tables(path, options.cancel.as_deref()).map(rocprof_summary).map_err(
            |failure| match failure {
                crate::rocpd::Failure::Cancelled => Error::Cancelled { path: path.to_path_buf() },
                crate::rocpd::Failure::Said(source) => {
                    Error::Database { path: path.to_path_buf(), source }
                }
            },
        );
    }
    if Format::of_head(&head) == Format::Perfetto {
        let (input, gz) = decompressed(path)
            .map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        return perfetto_summary(input, path, options, gz);
    }
    let (summary, repaired) =
        match with_sanitized(path, options, |reader| summarize_with(reader, path, options)) {
            Ok(read) => read,
            // A bare word that is not JSON, or a string that a quote in it
            // ended early, stops the parser where it stands; a second pass
            // finds it (and where), to say so rather than where the parser
            // stopped in the repaired text. A string that never ends reads
            // as a cut.
            Err(e @ Error::Parse { .. }) => return Err(unrepairable_in(path, true).unwrap_or(e)),
            // So does a string that never ends, read as a cut; and a token
            // where the grammar allows none (a stray bracket, a comma for a
            // colon) throws the nesting the reader follows off, so that it
            // sees the document end early, or never: that token is the
            // cause. (A bare word is no such token: the trace may well be
            // cut, or followed by more, besides.)
            Err(e @ (Error::Truncated { .. } | Error::DataAfterEnd { .. })) => {
                return Err(unrepairable_in(path, false).unwrap_or(e));
            }
            // Said of the file's own first byte, not of what its repair
            // made of it (an invalid byte read as U+FFFD starts with 0xef).
            Err(Error::NotADocument { path, first }) => {
                let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
                let raw = text.iter().copied().find(|b| !b.is_ascii_whitespace());
                return Err(Error::NotADocument { path, first: raw.unwrap_or(first) });
            }
            Err(e) => return Err(e),
        };
    let repaired = repaired.unwrap_or_default();
    // Salvaged, the reader saw a closed copy: the sanitizer knows where the
    // cut was. (Not salvaged, the cut is only how a salvage would close it.)
    let (cut, data_after_end) = match repaired.cut.filter(|_| options.salvage) {
        Some(c) if c.kind == trace_sanitize::CutKind::CutShort => (Some(c.at), None),
        Some(c) => (None, Some(c.dropped)),
        None => (None, None),
    };
    Ok(Summary {
        truncated_at: summary.truncated_at.or(cut),
        data_after_end,
        repaired: repaired.counts,
        not_json: repaired.first_not_json,
        malformed: repaired.malformed,
        unclosed_string: options.salvage && repaired.unclosed_string,
        ..summary
    })
}

/// What no repair mends in the trace at `path` (where salvage would keep
/// it), if anything: its first bare word that is not JSON
/// ([`Error::NotJson`]), else the first break in its JSON
/// ([`Error::Malformed`]), else a last string that never ends
/// ([`Error::UnclosedString`]). Without `all`, only what throws a reader's
/// nesting off: a token where the grammar allows none (and a bare word
/// before it), or that string.
fn unrepairable_in(path: &Path, all: bool) -> Option<Error> {
    let checked =
        trace_sanitize::check_file(path, &trace_sanitize::Options::default(), &mut |_, _| {});
    let report = checked.ok()?.report;
    let path = path.to_path_buf();
    let malformed =
        report.malformed.clone().filter(|m| all || m.kind == trace_sanitize::Break::Token);
    let first = |word: &trace_sanitize::NotJson| {
        all || malformed.as_ref().is_some_and(|m| word.offset <= m.offset)
    };
    if let Some(word) = report.first_not_json.clone().filter(first) {
        let expected = word.expected(report.malformed.as_ref()).to_string();
        let (offset, text, key) = (word.offset, word.text, word.key);
        return Some(Error::NotJson { path, offset, text, key, expected });
    }
    if let Some(m) = malformed {
        let (offset, found, expected, kind) =
            (m.offset, m.found.into_owned(), m.expected.into_owned(), m.kind);
        return Some(Error::Malformed { path, offset, found, expected, kind });
    }
    report.unclosed_string.then_some(Error::UnclosedString { path })
}

/// Read a trace file only: decompress, sanitize and parse its events, and
/// return how many were kept, computing no table. For measuring the reader
/// alone (`cargo xtask bench summary`).
#[doc(hidden)]
pub fn parse_file(path: &Path) -> Result<usize> {
    with_sanitized(path, &Options::default(), |reader| {
        parse(BufReader::with_capacity(1 << 20, reader)).map(|p| p.read).map_err(|e| Error::Parse {
            path: path.to_path_buf(),
            format: Some(Format::Kineto),
            source: e.into(),
        })
    })
    .map(|(read, _)| read)
}

/// The first 256 bytes of the file, gunzipped when it is gzip: what tells
/// its format. `None` where they cannot be read (a damaged gzip stream);
/// an error where the file cannot be opened.
/// [`Error::NotAFile`] for a path that is a pipe, a device or a socket
/// (through links): it is never opened.
fn refuse_special(path: &Path) -> Result<()> {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if t.is_fifo() {
            "a FIFO (a pipe)"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            return Ok(());
        };
        return Err(Error::NotAFile { path: path.to_path_buf(), what });
    }
    Ok(())
}

fn head(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    // A pipe or a device is not opened (to look at it would take what a
    // reader reads, or never end).
    if refuse_special(path).is_err() {
        return Ok(None);
    }
    let (input, _) = decompressed(path)?;
    let mut head = Vec::with_capacity(256);
    Ok(input.take(256).read_to_end(&mut head).ok().map(|_| head))
}

/// The file's bytes, gunzipped when it is gzip (by its magic bytes), and
/// whether it is.
fn decompressed(path: &Path) -> std::io::Result<(Box<dyn Read + Send>, bool)> {
    let mut file = File::open(path)?;
    let mut magic = [0u8; 2];
    let gz = file.read(&mut magic)? == 2 && magic == [0x1f, 0x8b];
    let file = File::open(path)?;
    Ok(if gz {
        (Box::new(trace_sanitize::Gunzip::new(BufReader::new(file))), true)
    } else {
        (Box::new(file), false)
    })
}

/// Run `f` on the file's bytes, gunzipped when gzip and sanitized (and with
/// `salvage`, closed where they were cut short), produced by a second
/// thread; a parse error after a read error reports the read error. Also
/// returns the sanitizer's report, when it finished.
fn with_sanitized<T>(
    path: &Path,
    options: &Options,
    f: impl FnOnce(ChanReader) -> Result<T>,
) -> Result<(T, Option<trace_sanitize::Report>)> {
    let (input, gz) =
        decompressed(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
    let (reader, writer) = chan_pipe();
    std::thread::scope(|s| {
        let repairing = s.spawn(move || {
            let sanitizing =
                trace_sanitize::Options { cancel: options.cancel.clone(), ..Default::default() };
            if options.salvage {
                trace_sanitize::salvage(input, writer, &sanitizing)
            } else {
                trace_sanitize::sanitize(input, writer, &sanitizing)
            }
        });
        let result = f(reader);
        let repaired = repairing.join().expect("the sanitizer thread does not panic");
        match (result, repaired) {
            // Stopped: whatever the parser made of the stream's early end.
            (_, Err(trace_sanitize::Error::Cancelled { .. })) => {
                Err(Error::Cancelled { path: path.to_path_buf() })
            }
            (_, Err(trace_sanitize::Error::NotUtf8 { encoding })) => {
                Err(Error::NotUtf8 { path: path.to_path_buf(), encoding })
            }
            (_, Err(trace_sanitize::Error::Perfetto)) => Err(Error::Parse {
                path: path.to_path_buf(),
                format: None,
                source: crate::ParseError::Said(
                    "a Perfetto trace, read as JSON (it became one while being read?)".into(),
                ),
            }),
            (_, Err(trace_sanitize::Error::Sqlite)) => Err(Error::Database {
                path: path.to_path_buf(),
                source: crate::DatabaseError::NotRocpd(
                    "a SQLite database, read as JSON (it became one while being read?)".into(),
                ),
            }),
            (_, Err(trace_sanitize::Error::Compressed { format })) => {
                Err(Error::Compressed { path: path.to_path_buf(), format, twice: gz })
            }
            (Err(_), Err(trace_sanitize::Error::NothingComplete { offset })) => Err(Error::Parse {
                path: path.to_path_buf(),
                format: None,
                source: crate::ParseError::Said(format!(
                    "the trace ends after {offset} bytes, before anything in it is complete: nothing to salvage"
                )),
            }),
            // The sanitizer's only write failure is the reader gone: the
            // parser stopped first (text before the trace, not an object),
            // and its error is the cause.
            (Err(e), Err(trace_sanitize::Error::Write { .. })) => Err(e),
            // The parser only saw the stream end early: the read error is the cause.
            (Err(_), Err(source)) => {
                Err(Error::Read { path: path.to_path_buf(), gzip: gz, source })
            }
            // Where the parser met the end of the repaired text is told in
            // the input's bytes (decompressed), as a salvage tells a cut.
            (Err(Error::Truncated { path, events, .. }), Ok(report)) => {
                Err(Error::Truncated { path, bytes: report.bytes_read, events })
            }
            // The document was read whole, but the gzip stream fails after
            // it: a checksum that does not match (the content is damaged:
            // its tables cannot be trusted), or data after the stream that
            // Python's gzip refuses. Either way TraceLens refuses the file.
            (Ok(_), Err(source @ trace_sanitize::Error::Read { .. })) if gz => {
                Err(Error::Read { path: path.to_path_buf(), gzip: true, source })
            }
            (r, repaired) => r.map(|t| (t, repaired.ok())),
        }
    })
}
