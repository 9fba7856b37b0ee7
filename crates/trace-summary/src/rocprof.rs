//! rocprofv3 (rocprofiler-sdk) JSON: TraceLens' rocprof variant of the
//! tables (reference/tracelens-metrics.md section 10), from the
//! `kernel_dispatch` and `memory_copy` buffer records.
//!
//! The scanner under the Kineto reader (`scan.rs`) finds the records the
//! tables need in the stream (each process's metadata, kernel symbols,
//! kernel dispatches and memory copies); each is deserialized from the buffer
//! it was read into (timestamps, kernel ids, symbol names, the session's
//! init/fini time), and everything else is skimmed without being built. Ids
//! are `u64` (`hive_id` and handles exceed `i64`).

use std::{borrow::Cow, io::Read};

use rustc_hash::FxHashMap;
use serde::{Deserialize, de};

use crate::{
    compute::{Cell, Table, length, union},
    scan::{Batch, CHUNK, Shape, scan},
};

#[derive(Deserialize)]
struct Metadata {
    init_time: u64,
    fini_time: u64,
}

/// An element of a process's `agents`: type 2 is a GPU.
#[derive(Deserialize)]
struct Agent {
    #[serde(default)]
    id: Option<Handle>,
    #[serde(rename = "type", default)]
    kind: Option<u64>,
    /// Its index among the node's agents of its type: GPU 0, 1, ...
    #[serde(default)]
    logical_node_type_id: Option<u32>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    product_name: Option<String>,
}

/// rocprofv3's truncated name of a kernel (its JSON's
/// `truncated_kernel_name`, the name TraceLens' rocprof report gives it),
/// from its demangled name (the name of its slices in rocprofv3's Perfetto
/// trace): the argument list and template arguments dropped from its end,
/// then its scope and return type, so that
/// `void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)` is
/// `vectorized_elementwise_kernel`. A name that leaves nothing is kept.
pub fn truncated_kernel_name(demangled: &str) -> &str {
    let bytes = demangled.as_bytes();
    let mut end = bytes.len();
    loop {
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        let (open, close) = match bytes[..end].last() {
            Some(b')') => (b'(', b')'),
            Some(b'>') => (b'<', b'>'),
            Some(b']') => (b'[', b']'),
            _ => break,
        };
        // The bracket that opens the group the last one closes.
        let mut depth = 0usize;
        let opened = bytes[..end].iter().rposition(|&b| {
            if b == close {
                depth += 1;
            } else if b == open {
                depth -= 1;
            }
            depth == 0
        });
        match opened {
            Some(at) => end = at,
            None => break,
        }
    }
    let start = bytes[..end].iter().rposition(|&b| b == b' ' || b == b':').map_or(0, |i| i + 1);
    // Cut at ASCII bytes only, so both ends are char boundaries.
    if start < end { &demangled[start..end] } else { demangled }
}

/// The name a kernel symbol is reported by, as TraceLens' rocprof report
/// names it: its truncated name, else its formatted one, else its own.
pub(crate) fn shown_name<S: AsRef<str>>(truncated: S, formatted: S, kernel_name: S) -> S {
    [truncated, formatted].into_iter().find(|n| !n.as_ref().is_empty()).unwrap_or(kernel_name)
}

#[derive(Deserialize)]
struct Symbol<'a> {
    kernel_id: u64,
    #[serde(default, borrow)]
    kernel_name: Cow<'a, str>,
    #[serde(default, borrow)]
    formatted_kernel_name: Cow<'a, str>,
    #[serde(default, borrow)]
    truncated_kernel_name: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Dispatch {
    start_timestamp: u64,
    end_timestamp: u64,
    dispatch_info: DispatchInfo,
}

#[derive(Deserialize)]
struct DispatchInfo {
    kernel_id: u64,
    #[serde(default)]
    agent_id: Option<Handle>,
}

/// An agent's id (`{"handle": 37946}`).
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
struct Handle {
    handle: u64,
}

#[derive(Deserialize)]
struct Span {
    start_timestamp: u64,
    end_timestamp: u64,
}

/// Whether a trace's first bytes are rocprofv3 JSON's.
pub(crate) fn sniff(head: &[u8]) -> bool {
    let text = head.trim_ascii_start();
    text.strip_prefix(b"{")
        .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"\"rocprofiler-sdk-tool\""))
}

/// The two tables of a rocprofv3 trace, and what else was in it.
pub(crate) struct Tables {
    pub(crate) timeline: Table,
    pub(crate) kernels: Option<Table>,
    /// GPU records: kernel dispatches and memory copies.
    pub(crate) records: usize,
    /// Where more than whitespace follows the JSON document: the offset of
    /// what follows.
    pub(crate) data_after_end: Option<u64>,
    /// The JSON ended early, after this many bytes.
    pub(crate) truncated_at: Option<u64>,
    /// The keys of the processes' `buffer_records` ([`Layout::lists`]).
    pub(crate) lists: Vec<String>,
    /// The GPU agents' product names (else names), each once.
    pub(crate) gpus: Vec<String>,
    /// The GPU every kernel was dispatched on, by its index among the
    /// node's GPUs, when they all ran on one ([`crate::Summary::gpu_index`]).
    pub(crate) gpu_index: Option<u32>,
    /// The processes recorded ([`crate::Summary::processes`]).
    pub(crate) processes: usize,
    /// Records dropped for want of a time ([`crate::Summary::dropped_records`]).
    pub(crate) dropped: u64,
}

/// What the tables read of a rocprofv3 trace, as the scanner finds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Record {
    /// A process's `metadata` object.
    Metadata,
    /// An element of a process's `agents`.
    Agent,
    /// An element of a process's `kernel_symbols`.
    Symbol,
    /// An element of its `buffer_records.kernel_dispatch`.
    Dispatch,
    /// An element of its `buffer_records.memory_copy`.
    Copy,
    /// The end of a process's object (a mark, no record).
    ProcessEnd,
}

impl Record {
    /// Where a record at byte `at` is, for an error to say.
    fn place(self, at: u64) -> String {
        let list = match self {
            Record::Metadata => "metadata",
            Record::Agent => "agents",
            Record::Symbol => "kernel_symbols",
            Record::Dispatch => "kernel_dispatch",
            Record::Copy => "memory_copy",
            Record::ProcessEnd => return format!("in the process whose object ends at byte {at}"),
        };
        format!("in the {list} record at byte {at}")
    }
}

/// What a level of the document is, as far as the tables care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    /// The `rocprofiler-sdk-tool` list: an object per process.
    Tool,
    Process,
    Agents,
    Symbols,
    /// `buffer_records`.
    Buffers,
    Dispatches,
    Copies,
    Other,
}

/// The keys the tables follow.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Tool,
    Metadata,
    Agents,
    Symbols,
    Buffers,
    Dispatches,
    Copies,
}

/// Where a rocprofv3 trace's records are:
/// `{"rocprofiler-sdk-tool": [{"metadata": {..}, "kernel_symbols": [..],
/// "buffer_records": {"kernel_dispatch": [..], "memory_copy": [..]}}]}`.
/// The keys of the top object, of each process and of its buffer_records
/// matter; everything else is skimmed.
#[derive(Default)]
struct Layout {
    levels: Vec<Level>,
    /// The key whose `:` was just seen at a keyed level.
    pending: Option<Key>,
    /// Whether the process list was seen.
    tool: bool,
    /// The keys of the processes' `buffer_records` (`kernel_dispatch`,
    /// `hip_api`, ...), each once, in the order first seen, at most
    /// [`MAX_LISTS`]: what a trace without dispatch records holds instead.
    lists: Vec<String>,
}

/// How many of the `buffer_records` keys are kept ([`Layout::lists`]).
const MAX_LISTS: usize = 32;

impl Shape for Layout {
    type Tag = Record;

    #[inline(always)]
    fn open(&mut self, _depth: usize, b: u8) -> Result<Option<Record>, serde_json::Error> {
        let key = self.pending.take();
        let (level, record) = match (self.levels.last(), key, b) {
            (None, _, _) => (Level::Root, None),
            (Some(Level::Root), Some(Key::Tool), b'[') => {
                self.tool = true;
                (Level::Tool, None)
            }
            (Some(Level::Root), Some(Key::Tool), _) => {
                return Err(de::Error::custom("`rocprofiler-sdk-tool` is not a list"));
            }
            (Some(Level::Tool), _, b'{') => (Level::Process, None),
            (Some(Level::Process), Some(Key::Metadata), b'{') => {
                (Level::Other, Some(Record::Metadata))
            }
            (Some(Level::Process), Some(Key::Agents), b'[') => (Level::Agents, None),
            (Some(Level::Process), Some(Key::Symbols), b'[') => (Level::Symbols, None),
            (Some(Level::Process), Some(Key::Buffers), b'{') => (Level::Buffers, None),
            (Some(Level::Buffers), Some(Key::Dispatches), b'[') => (Level::Dispatches, None),
            (Some(Level::Buffers), Some(Key::Copies), b'[') => (Level::Copies, None),
            (Some(Level::Agents), _, b'{') => (Level::Other, Some(Record::Agent)),
            (Some(Level::Symbols), _, b'{') => (Level::Other, Some(Record::Symbol)),
            (Some(Level::Dispatches), _, b'{') => (Level::Other, Some(Record::Dispatch)),
            (Some(Level::Copies), _, b'{') => (Level::Other, Some(Record::Copy)),
            _ => (Level::Other, None),
        };
        self.levels.push(level);
        Ok(record)
    }

    #[inline(always)]
    fn close(&mut self, _depth: usize) -> Option<Record> {
        self.pending = None;
        (self.levels.pop() == Some(Level::Process)).then_some(Record::ProcessEnd)
    }

    #[inline(always)]
    fn keyed(&self, _depth: usize) -> bool {
        matches!(self.levels.last(), Some(Level::Root | Level::Process | Level::Buffers))
    }

    fn key(&mut self, key: &[u8]) {
        if self.levels.last() == Some(&Level::Buffers) && self.lists.len() < MAX_LISTS {
            let name = crate::scan::key_text(key);
            if !self.lists.contains(&name) {
                self.lists.push(name);
            }
        }
        self.pending = match key {
            b"rocprofiler-sdk-tool" => Some(Key::Tool),
            b"metadata" => Some(Key::Metadata),
            b"agents" => Some(Key::Agents),
            b"kernel_symbols" => Some(Key::Symbols),
            b"buffer_records" => Some(Key::Buffers),
            b"kernel_dispatch" => Some(Key::Dispatches),
            b"memory_copy" => Some(Key::Copies),
            _ => None,
        };
    }

    fn comma(&mut self) {
        self.pending = None;
    }
}

/// What is read of the process being read, until its object ends.
#[derive(Default)]
struct Process {
    metadata: Option<Metadata>,
    names: FxHashMap<u64, String>,
    /// `(start, end, kernel id)` of its kernel dispatches, in record order.
    dispatches: Vec<(u64, u64, u64)>,
    /// Its GPU agents' indices among the node's GPUs, by agent handle.
    gpu_agents: FxHashMap<u64, u32>,
    /// The agents its kernels were dispatched on (`None`: a dispatch that
    /// names none).
    used: rustc_hash::FxHashSet<Option<u64>>,
}

/// What is read of the whole trace.
#[derive(Default)]
struct Reading {
    process: Process,
    records: Records,
}

/// The GPU records of a rocprofv3 run, whatever it was written as (JSON
/// here, a rocpd database in `rocpd.rs`): what its tables are made of.
#[derive(Default)]
pub(crate) struct Records {
    /// The earliest process start (ns).
    pub(crate) init: Option<u64>,
    /// The latest process end (ns).
    pub(crate) fini: u64,
    /// Kernel dispatches (start, end), µs.
    pub(crate) kernels: Vec<(f64, f64)>,
    /// Memory copies (start, end), µs.
    pub(crate) copies: Vec<(f64, f64)>,
    /// Durations in ns in record order, grouped by kernel name.
    pub(crate) groups: FxHashMap<String, Vec<u64>>,
    /// GPU agents' names, as read.
    pub(crate) gpus: Vec<String>,
    /// The GPUs kernels were dispatched on, by index (`None`: an agent that
    /// is not a GPU of its process, or none named).
    pub(crate) devices: std::collections::BTreeSet<Option<u32>>,
    /// Processes recorded ([`Records::process`] calls).
    pub(crate) processes: usize,
    /// Records dropped: without a start or an end a time can be read from
    /// (NULL, text, negative).
    pub(crate) dropped: u64,
}

impl Records {
    /// A kernel dispatch named `name`, from `start` to `end` (ns).
    pub(crate) fn kernel(&mut self, name: &str, start: u64, end: u64) {
        self.kernels.push(us(start, end));
        let duration = end.saturating_sub(start);
        match self.groups.get_mut(name) {
            Some(durations) => durations.push(duration),
            None => {
                self.groups.insert(name.to_string(), vec![duration]);
            }
        }
    }

    /// A memory copy from `start` to `end` (ns).
    pub(crate) fn copy(&mut self, start: u64, end: u64) {
        self.copies.push(us(start, end));
    }

    /// A process that ran from `init` to `fini` (ns).
    pub(crate) fn process(&mut self, init: u64, fini: u64) {
        self.init = Some(self.init.map_or(init, |i| i.min(init)));
        self.fini = self.fini.max(fini);
        self.processes += 1;
    }

    /// TraceLens' rocprof `gpu_timeline` and `kernel_summary` of these
    /// records; `lists`: what the run's record lists were.
    pub(crate) fn tables(self, lists: Vec<String>) -> Tables {
        let Records { init, fini, mut kernels, copies, groups, gpus, devices, processes, dropped } =
            self;
        let gpu_index = match devices.len() {
            1 => devices.into_iter().next().flatten(),
            _ => None,
        };
        let init = init.unwrap_or(u64::MAX);
        let records = kernels.len() + copies.len();
        // TraceLens converts ns to µs floats first; doing the same keeps every digit.
        let total = if fini > init { fini as f64 / 1000.0 - init as f64 / 1000.0 } else { 0.0 };
        let kernel = length(&union(kernels.clone()));
        let memory = length(&union(copies.clone()));
        kernels.extend(copies);
        let busy = length(&union(kernels));
        let idle = (total - busy).max(0.0);
        let row = |name: &str, value: f64| {
            let pct = if total == 0.0 { 0.0 } else { value / total * 100.0 };
            vec![Cell::Str(name.into()), Cell::Float(value / 1000.0), Cell::Float(pct)]
        };
        let timeline = Table::new(
            &["type", "time ms", "percent"],
            vec![
                row("total_time", total),
                row("kernel", kernel),
                row("memory", memory),
                row("busy_time", busy),
                row("idle", idle),
            ],
        );
        Tables {
            timeline,
            kernels: kernel_summary(groups),
            records,
            data_after_end: None,
            truncated_at: None,
            lists,
            gpus: crate::summary::distinct(gpus),
            gpu_index,
            processes,
            dropped,
        }
    }
}

impl Reading {
    fn batch(&mut self, batch: &Batch<Record>) -> Result<(), serde_json::Error> {
        let (Some(&(lo, ..)), Some(&(_, hi, _))) = (batch.elements.first(), batch.elements.last())
        else {
            return Ok(());
        };
        // Validate UTF-8 once (the sanitizer upstream makes it so): names
        // are then borrowed from the buffer without checking each again.
        let text = simdutf8::basic::from_utf8(&batch.bytes[lo..hi]).ok();
        for &(s, e, record) in &batch.elements {
            let read = match text {
                Some(text) => self
                    .record(record, &mut serde_json::Deserializer::from_str(&text[s - lo..e - lo])),
                None => self
                    .record(record, &mut serde_json::Deserializer::from_slice(&batch.bytes[s..e])),
            };
            read.map_err(|err| {
                // Where in the record is its own line and column: say where
                // the record is instead.
                let said = err.to_string();
                let said = said
                    .strip_suffix(&format!(" at line {} column {}", err.line(), err.column()))
                    .unwrap_or(&said);
                de::Error::custom(format!("{said}, {}", record.place(batch.base + s as u64)))
            })?;
        }
        Ok(())
    }

    fn record<'de, R: serde_json::de::Read<'de>>(
        &mut self,
        record: Record,
        json: &mut serde_json::Deserializer<R>,
    ) -> Result<(), serde_json::Error> {
        match record {
            Record::Metadata => self.process.metadata = Some(Metadata::deserialize(json)?),
            Record::Agent => {
                // Only its name is taken; an agent that does not read as one
                // (another rocprofv3's fields) is no reason to refuse the trace.
                let Ok(a) = Agent::deserialize(json) else { return Ok(()) };
                if a.kind != Some(2) {
                    return Ok(());
                }
                if let (Some(id), Some(index)) = (a.id, a.logical_node_type_id) {
                    self.process.gpu_agents.insert(id.handle, index);
                }
                if let Some(name) = a.product_name.filter(|n| !n.trim().is_empty()).or(a.name) {
                    self.records.gpus.push(name);
                }
            }
            Record::Symbol => {
                let s = Symbol::deserialize(json)?;
                let name =
                    shown_name(s.truncated_kernel_name, s.formatted_kernel_name, s.kernel_name);
                self.process.names.insert(s.kernel_id, name.into_owned());
            }
            Record::Dispatch => {
                let d = Dispatch::deserialize(json)?;
                self.process.used.insert(d.dispatch_info.agent_id.map(|a| a.handle));
                self.process.dispatches.push((
                    d.start_timestamp,
                    d.end_timestamp,
                    d.dispatch_info.kernel_id,
                ));
            }
            Record::Copy => {
                let c = Span::deserialize(json)?;
                self.records.copy(c.start_timestamp, c.end_timestamp);
            }
            Record::ProcessEnd => self.end_process()?,
        }
        Ok(())
    }

    /// A process's object ended: its kernels are named by its symbols
    /// (wherever they stood in it).
    fn end_process(&mut self) -> Result<(), serde_json::Error> {
        let Process { metadata, names, dispatches, gpu_agents, used } =
            std::mem::take(&mut self.process);
        let records = &mut self.records;
        records.devices.extend(used.into_iter().map(|a| gpu_agents.get(&a?).copied()));
        let Some(metadata) = metadata else {
            return Err(de::Error::missing_field("metadata"));
        };
        records.process(metadata.init_time, metadata.fini_time);
        for (start, end, kernel) in dispatches {
            records.kernel(names.get(&kernel).map_or("", String::as_str), start, end);
        }
        Ok(())
    }
}

/// The tables of a rocprofv3 trace: its records found in the stream by the
/// scanner ([`scan`]) and deserialized each from the buffer it was read
/// into; everything else skimmed. A trace cut short gives the tables of the
/// processes complete before the cut, with [`Tables::truncated_at`] set.
pub(crate) fn tables(reader: impl Read + Send) -> serde_json::Result<Tables> {
    tables_in_chunks(reader, CHUNK)
}

/// [`tables`], reading `chunk` bytes at a time (tests vary it).
fn tables_in_chunks(reader: impl Read + Send, chunk: usize) -> serde_json::Result<Tables> {
    let mut read = Reading::default();
    let scanned = scan(reader, chunk, Layout::default(), |batch| read.batch(batch))?;
    if !scanned.shape.tool && scanned.truncated_at.is_none() {
        return Err(de::Error::missing_field("rocprofiler-sdk-tool"));
    }
    Ok(Tables {
        data_after_end: scanned.after_end,
        truncated_at: scanned.truncated_at,
        ..read.records.tables(scanned.shape.lists)
    })
}

fn us(start: u64, end: u64) -> (f64, f64) {
    (start as f64 / 1000.0, end as f64 / 1000.0)
}

/// The category by kernel-name keyword (case-insensitive), first match in
/// TraceLens' order.
fn category(name: &str) -> &'static str {
    const RULES: &[(&str, &[&str])] = &[
        ("GEMM", &["gemm", "cijk"]),
        ("Elementwise", &["elementwise"]),
        ("Reduction", &["reduce", "sum"]),
        ("Convolution", &["conv"]),
        ("Normalization", &["norm"]),
        ("Attention", &["attn", "attention", "fmha"]),
        ("Memory", &["copy", "memcpy", "memset"]),
        ("COMM", &["nccl", "rccl"]),
    ];
    let lower = name.to_ascii_lowercase();
    RULES
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map_or("Other", |(c, _)| c)
}

fn as_f64(values: &[u64]) -> Vec<f64> {
    values.iter().map(|&v| v as f64).collect()
}

/// `kernel_summary` with TraceLens' rocprof quirks kept: the "µs" statistics
/// are ns, "Total Kernel Time (ms)" is µs, and the cumulative percentage runs
/// in name order before the rows are sorted by total.
fn kernel_summary(groups: FxHashMap<String, Vec<u64>>) -> Option<Table> {
    if groups.is_empty() {
        return None;
    }
    let mut groups: Vec<(String, Vec<u64>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    let all: u64 = groups.iter().map(|(_, v)| v.iter().sum::<u64>()).sum();
    let mut cumulative = 0.0;
    let mut rows: Vec<(u64, Vec<Cell>)> = groups
        .iter()
        .map(|(name, v)| {
            let sum: u64 = v.iter().sum();
            let pct = if all == 0 { 0.0 } else { sum as f64 / all as f64 * 100.0 };
            cumulative += pct;
            let row = vec![
                Cell::Str(name.clone()),
                Cell::Int(v.len() as i64),
                Cell::Float(sum as f64 / v.len() as f64),
                Cell::Float(crate::compute::median(&as_f64(v))),
                crate::compute::sample_std(&as_f64(v)).map_or(Cell::Empty, Cell::Float),
                Cell::Int(v.iter().copied().min().unwrap_or(0) as i64),
                Cell::Int(v.iter().copied().max().unwrap_or(0) as i64),
                Cell::Float(pct),
                Cell::Float(cumulative),
                Cell::Float(sum as f64 / 1000.0),
                Cell::Str(category(name).into()),
            ];
            (sum, row)
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let header = [
        "name",
        "Count",
        "Mean Kernel Time (µs)",
        "Median Kernel Time (µs)",
        "Std Kernel Time (µs)",
        "Min Kernel Time (µs)",
        "Max Kernel Time (µs)",
        "Percentage (%)",
        "Cumulative Percentage (%)",
        "Total Kernel Time (ms)",
        "Category",
    ];
    Some(Table::new(&header, rows.into_iter().map(|(_, r)| r).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_rocprofv3_only() {
        assert!(sniff(br#"{"rocprofiler-sdk-tool":[{"metadata":{}}]}"#));
        assert!(sniff(b"  {\n  \"rocprofiler-sdk-tool\": []}"));
        assert!(!sniff(br#"{"traceEvents":[]}"#));
        assert!(!sniff(b"[]"));
    }

    #[test]
    fn truncated_names_are_rocprofv3s() {
        for (demangled, truncated) in [
            // rocprofiler-sdk's own example.
            ("Foo<int, float>::foo(a[], int (int))", "foo"),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
                 std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
                "vectorized_elementwise_kernel",
            ),
            ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_Generic"),
            ("void at::native::reduce_kernel<512, 1>(int) [clone .kd]", "reduce_kernel"),
            ("__amd_rocclr_copyBufferRect.kd", "__amd_rocclr_copyBufferRect.kd"),
            ("Cijk_Alik_Bljk_HHS_BH_MT64x64x32", "Cijk_Alik_Bljk_HHS_BH_MT64x64x32"),
            ("ns::kernel_é<int>() ", "kernel_é"),
            // Nothing left, or a bracket that opens nothing: kept.
            ("(int)", "(int)"),
            ("kernel)", "kernel)"),
            ("", ""),
        ] {
            assert_eq!(truncated_kernel_name(demangled), truncated, "{demangled}");
        }
    }

    #[test]
    fn categories_follow_the_keyword_order() {
        assert_eq!(category("Cijk_Ailk_Bljk_BBS_BH_MT64x32x256"), "GEMM");
        assert_eq!(category("vectorized_layer_norm_kernel"), "Normalization");
        assert_eq!(category("sum_and_scatter"), "Reduction");
        assert_eq!(category("__amd_rocclr_copyBuffer.kd"), "Memory");
        assert_eq!(category("__amd_rocclr_fillBufferAligned.kd"), "Other");
        assert_eq!(category("ncclDevKernel_Generic_1"), "COMM");
        assert_eq!(category("attn_fwd.kd"), "Attention");
    }

    #[test]
    fn gpu_agents_are_named_and_odd_ones_skipped() {
        let trace = br#"{"rocprofiler-sdk-tool":[{"metadata":{"init_time":1,"fini_time":2},
          "agents":[{"type":1,"name":"AMD EPYC 9575F","product_name":"AMD EPYC 9575F"},
                    {"type":"GPU","name":7},
                    {"type":2,"name":"gfx942","product_name":" "},
                    {"type":2,"name":"gfx942","product_name":"AMD Instinct MI300X"},
                    {"type":2,"name":"gfx942","product_name":"AMD Instinct MI300X"}]}]}"#;
        let read = tables(&trace[..]).unwrap();
        assert_eq!(read.gpus, ["gfx942", "AMD Instinct MI300X"]);
    }

    /// A process's file stands for the GPU its kernels ran on, by index
    /// among the node's GPUs (the CPU agents are numbered apart), only when
    /// they all ran on one it names as a GPU.
    #[test]
    fn the_gpu_kernels_ran_on_is_found() {
        let trace = |process: &str| {
            format!(
                r#"{{"rocprofiler-sdk-tool":[{{"metadata":{{"init_time":1,"fini_time":9}},
                  "agents":[{{"id":{{"handle":10}},"type":1,"logical_node_type_id":0}},
                            {{"id":{{"handle":11}},"type":2,"logical_node_type_id":0}},
                            {{"id":{{"handle":12}},"type":2,"logical_node_type_id":1}}],
                  "kernel_symbols":[{{"kernel_id":1,"kernel_name":"k"}}],
                  "buffer_records":{{"kernel_dispatch":[{process}]}}}}]}}"#
            )
        };
        let on = |agent: &str| {
            format!(
                r#"{{"start_timestamp":2,"end_timestamp":3,"dispatch_info":{{"kernel_id":1{agent}}}}}"#
            )
        };
        let index = |dispatches: &[String]| {
            tables(trace(&dispatches.join(",")).as_bytes()).unwrap().gpu_index
        };
        let gpu = |h: u64| on(&format!(r#","agent_id":{{"handle":{h}}}"#));
        assert_eq!(index(&[gpu(12), gpu(12)]), Some(1));
        assert_eq!(index(&[gpu(11)]), Some(0));
        assert_eq!(index(&[gpu(11), gpu(12)]), None, "two GPUs");
        assert_eq!(index(&[gpu(10)]), None, "a CPU agent");
        assert_eq!(index(&[gpu(99)]), None, "an agent not listed");
        assert_eq!(index(&[gpu(12), on("")]), None, "a dispatch naming none");
        assert_eq!(index(&[]), None, "no kernels");
    }

    #[test]
    fn small_trace_tables() {
        let trace = br#"{"rocprofiler-sdk-tool":[{"metadata":{"init_time":1000,"fini_time":11000},
          "agents":[{"hive_id":17332996360099338395}],
          "kernel_symbols":[{"kernel_id":0,"kernel_name":""},
                            {"kernel_id":7,"kernel_name":"k.kd","truncated_kernel_name":"k"}],
          "buffer_records":{"kernel_dispatch":[
            {"start_timestamp":2000,"end_timestamp":3000,"dispatch_info":{"kernel_id":7}},
            {"start_timestamp":2500,"end_timestamp":4000,"dispatch_info":{"kernel_id":7}}],
            "memory_copy":[{"start_timestamp":5000,"end_timestamp":6000,"bytes":8}]}}]}"#;
        let Tables { timeline, kernels, records, data_after_end, truncated_at, .. } =
            tables(&trace[..]).unwrap();
        assert_eq!((records, data_after_end, truncated_at), (3, None, None));
        // Whitespace after the document is nothing; anything else is noticed,
        // where it starts (a whole second document too).
        assert_eq!(tables(&[&trace[..], b" \n\t\r"].concat()[..]).unwrap().data_after_end, None);
        let len = trace.len() as u64;
        for after in [&b"x"[..], b"\0", b"{}", b"]"] {
            let at = len + 1;
            let found = tables(&[&trace[..], b"\n", after].concat()[..]).unwrap().data_after_end;
            assert_eq!(found, Some(at), "{after:?}");
        }
        assert_eq!(
            timeline.to_csv(),
            "type,time ms,percent\ntotal_time,0.01,100.0\nkernel,0.002,20.0\nmemory,0.001,10.0\nbusy_time,0.003,30.0\nidle,0.007,70.0\n"
        );
        let kernels = kernels.unwrap().to_csv();
        assert!(
            kernels.ends_with(
                "\nk,2,1250.0,1250.0,353.5533905932738,1000,1500,100.0,100.0,2.5,Other\n"
            ),
            "{kernels}"
        );
    }

    /// A trace whose records hide brackets, quotes and backslashes in
    /// strings, with two processes, symbols after the dispatches that use
    /// them, lists the tables skip, and keys that look like the ones they
    /// follow where those mean nothing; shifted by `pad` bytes so that every
    /// construct meets every 64-byte block boundary.
    fn tricky_trace(pad: usize) -> String {
        let process = |pid: u64, base: u64| {
            let mut dispatches = Vec::new();
            for i in 0..12u64 {
                let id = i % 3;
                dispatches.push(format!(
                    r#"{{"kind": 11, "correlation_id": {{"internal": {i}, "external": 0}}, "start_timestamp": {}, "end_timestamp": {}, "dispatch_info": {{"kernel_id": {id}, "grid_size": {{"x": 1, "y": [1]}}}}, "note": "] \" {{ [ \\"}}"#,
                    base + 100 * i,
                    base + 100 * i + 10 * (i + 1)
                ));
            }
            format!(
                r#"{{"metadata": {{"pid": {pid}, "node": {{"hostname": "h]}}"}}, "init_time": {base}, "fini_time": {}, "kernel_dispatch": []}},
  "agents": [{{"kernel_symbols": [{{"kernel_id": 0, "kernel_name": "agent, not a symbol"}}]}}],
  "buffer_records": {{"kernel_dispatch": [{}],
    "hip_api": [{{"start_timestamp": 1, "end_timestamp": 999999999, "args": "[{{\"memory_copy\": []}}]"}}],
    "memory_copy": [{{"start_timestamp": {}, "end_timestamp": {}}}]}},
  "kernel_symbols": [{{"kernel_id": 0, "kernel_name": "gemm\"[0]{{x}}", "truncated_kernel_name": ""}},
    {{"kernel_id": 1, "formatted_kernel_name": "attn\\ \u00e9 🙂", "truncated_kernel_name": "attn"}},
    {{"kernel_id": 2, "kernel_name": "{}"}}]}}"#,
                base + 5000,
                dispatches.join(",\n    "),
                base + 4000,
                base + 4100,
                "w".repeat(pad % 70)
            )
        };
        format!(
            "{{\"rocprofiler-sdk-tool\": [{},\n{}], \"pad\": \"{}\", \"summary\": [{{\"metadata\": 1}}]}}",
            process(1, 1_000_000),
            process(2, 2_000_000),
            " ".repeat(pad)
        )
    }

    /// The groups of kernel durations, as a whole-document parse finds them.
    fn expected(trace: &str) -> (usize, Vec<(String, Vec<u64>)>) {
        let doc: serde_json::Value = serde_json::from_str(trace).unwrap();
        let mut records = 0;
        let mut groups: Vec<(String, Vec<u64>)> = Vec::new();
        for p in doc["rocprofiler-sdk-tool"].as_array().unwrap() {
            let name = |id: &serde_json::Value| {
                let s =
                    p["kernel_symbols"].as_array().unwrap().iter().find(|s| s["kernel_id"] == *id);
                ["truncated_kernel_name", "formatted_kernel_name", "kernel_name"]
                    .iter()
                    .filter_map(|k| s.and_then(|s| s[*k].as_str()))
                    .find(|n| !n.is_empty())
                    .unwrap_or_default()
                    .to_string()
            };
            for d in p["buffer_records"]["kernel_dispatch"].as_array().unwrap() {
                let n = name(&d["dispatch_info"]["kernel_id"]);
                let dur =
                    d["end_timestamp"].as_u64().unwrap() - d["start_timestamp"].as_u64().unwrap();
                match groups.iter_mut().find(|(g, _)| *g == n) {
                    Some((_, v)) => v.push(dur),
                    None => groups.push((n, vec![dur])),
                }
                records += 1;
            }
            records += p["buffer_records"]["memory_copy"].as_array().unwrap().len();
        }
        groups.sort();
        (records, groups)
    }

    #[test]
    fn records_are_found_whatever_the_block_and_read_boundaries() {
        for pad in [0, 1, 7, 31, 63] {
            let trace = tricky_trace(pad);
            let (records, groups) = expected(&trace);
            assert_eq!(records, 26);
            assert_eq!(groups.len(), 3, "{groups:?}");
            let whole = tables_in_chunks(trace.as_bytes(), 1 << 20).unwrap();
            // Each kernel's name, count, min and max, as the whole document has them.
            let mut got: Vec<(String, i64, i64, i64)> = whole
                .kernels
                .as_ref()
                .unwrap()
                .rows
                .iter()
                .map(|r| match (&r[0], &r[1], &r[5], &r[6]) {
                    (Cell::Str(name), Cell::Int(n), Cell::Int(min), Cell::Int(max)) => {
                        (name.clone(), *n, *min, *max)
                    }
                    other => panic!("{other:?}"),
                })
                .collect();
            got.sort();
            let want: Vec<(String, i64, i64, i64)> = groups
                .iter()
                .map(|(name, d)| {
                    let (min, max) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
                    (name.clone(), d.len() as i64, min as i64, max as i64)
                })
                .collect();
            assert_eq!(got, want, "pad {pad}");
            // The lists of buffer_records, each once: not the keys of the
            // same names elsewhere (in metadata, in a string).
            assert_eq!(whole.lists, ["kernel_dispatch", "hip_api", "memory_copy"]);
            for chunk in [1, 5, 64, 100, 1000] {
                let t = tables_in_chunks(trace.as_bytes(), chunk).unwrap();
                assert_eq!(t.records, records, "pad {pad}, chunk {chunk}");
                assert_eq!(t.kernels, whole.kernels, "pad {pad}, chunk {chunk}");
                assert_eq!(t.timeline, whole.timeline, "pad {pad}, chunk {chunk}");
                assert_eq!(t.lists, whole.lists, "pad {pad}, chunk {chunk}");
                assert_eq!((t.truncated_at, t.data_after_end), (None, None));
            }
        }
    }

    #[test]
    fn a_cut_trace_and_a_process_without_metadata_are_told() {
        let trace = tricky_trace(3);
        for cut in [10, trace.len() / 2, trace.len() - 1] {
            for chunk in [7, 1 << 20] {
                let t = tables_in_chunks(&trace.as_bytes()[..cut], chunk).unwrap();
                assert_eq!(t.truncated_at, Some(cut as u64), "cut {cut}, chunk {chunk}");
            }
        }
        let bare = trace.replacen(r#""metadata": {"pid": 1,"#, r#""meta": {"pid": 1,"#, 1);
        let err = tables(bare.as_bytes()).err().unwrap().to_string();
        assert!(
            err.starts_with("missing field `metadata`, in the process whose object ends at byte "),
            "{err}"
        );
        let at: usize = err.rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!(&bare[at - 1..at + 2], "]},", "where the first process ends");
        let endless = trace.replacen(r#""end_timestamp": 1000010"#, r#""end": 1000010"#, 1);
        let err = tables(endless.as_bytes()).err().unwrap().to_string();
        assert!(
            err.starts_with(
                "missing field `end_timestamp`, in the kernel_dispatch record at byte "
            ),
            "{err}"
        );
        let not_a_list = r#"{"rocprofiler-sdk-tool": {"metadata": {}}}"#;
        let err = tables(not_a_list.as_bytes()).err().unwrap().to_string();
        assert!(err.contains("is not a list"), "{err}");
        let err = tables(&br#"{"rocprofiler-sdk-tool": null}"#[..]).err().unwrap().to_string();
        assert!(err.contains("missing field `rocprofiler-sdk-tool`"), "{err}");
    }
}
