//! rocprofv3 (rocprofiler-sdk) JSON: TraceLens' rocprof variant of the
//! tables (reference/tracelens-metrics.md section 10), from the
//! `kernel_dispatch` and `memory_copy` buffer records.
//!
//! The reader deserializes only what the tables need (timestamps, kernel ids,
//! symbol names, the session's init/fini time) and skips everything else
//! without building it; ids are `u64` (`hive_id` and handles exceed `i64`).

use std::io::Read;

use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::compute::{Cell, Table, length, union};

#[derive(Deserialize)]
struct Root {
    #[serde(rename = "rocprofiler-sdk-tool")]
    tool: Vec<Process>,
}

#[derive(Deserialize)]
struct Process {
    metadata: Metadata,
    #[serde(default)]
    kernel_symbols: Vec<Symbol>,
    #[serde(default)]
    buffer_records: Buffers,
}

#[derive(Deserialize)]
struct Metadata {
    init_time: u64,
    fini_time: u64,
}

#[derive(Deserialize)]
struct Symbol {
    kernel_id: u64,
    #[serde(default)]
    kernel_name: String,
    #[serde(default)]
    formatted_kernel_name: String,
    #[serde(default)]
    truncated_kernel_name: String,
}

#[derive(Deserialize, Default)]
struct Buffers {
    #[serde(default)]
    kernel_dispatch: Vec<Dispatch>,
    #[serde(default)]
    memory_copy: Vec<Span>,
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
    /// what follows (for a whole second document, where the first ends).
    pub(crate) data_after_end: Option<u64>,
}

/// The tables of a rocprofv3 trace.
pub(crate) fn tables(reader: impl Read) -> serde_json::Result<Tables> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let root = Root::deserialize(&mut de)?;
    // Only whitespace may follow. The stream's offset, once it fails on
    // what does, is where that starts; a whole second document it reads
    // (without keeping it) and then is past, so that one is told by where
    // the first ends.
    let mut rest = de.into_iter::<serde::de::IgnoredAny>();
    let end = rest.byte_offset() as u64;
    let data_after_end = match rest.next() {
        None => None,
        Some(Err(e)) if e.is_io() => return Err(e),
        Some(Err(_)) => Some(rest.byte_offset() as u64),
        Some(Ok(_)) => Some(end),
    };
    let mut init = u64::MAX;
    let mut fini = 0;
    let mut kernels = Vec::new();
    let mut copies = Vec::new();
    // (name, durations in ns in record order), grouped by name.
    let mut groups: FxHashMap<String, Vec<u64>> = FxHashMap::default();
    for process in root.tool {
        init = init.min(process.metadata.init_time);
        fini = fini.max(process.metadata.fini_time);
        let names: FxHashMap<u64, String> = process
            .kernel_symbols
            .into_iter()
            .map(|s| {
                let name = [s.truncated_kernel_name, s.formatted_kernel_name, s.kernel_name]
                    .into_iter()
                    .find(|n| !n.is_empty())
                    .unwrap_or_default();
                (s.kernel_id, name)
            })
            .collect();
        for d in process.buffer_records.kernel_dispatch {
            kernels.push(us(d.start_timestamp, d.end_timestamp));
            let name = names.get(&d.dispatch_info.kernel_id).cloned().unwrap_or_default();
            groups.entry(name).or_default().push(d.end_timestamp.saturating_sub(d.start_timestamp));
        }
        copies.extend(
            process
                .buffer_records
                .memory_copy
                .iter()
                .map(|c| us(c.start_timestamp, c.end_timestamp)),
        );
    }
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
    let timeline = Table {
        header: vec!["type".into(), "time ms".into(), "percent".into()],
        rows: vec![
            row("total_time", total),
            row("kernel", kernel),
            row("memory", memory),
            row("busy_time", busy),
            row("idle", idle),
        ],
    };
    Ok(Tables { timeline, kernels: kernel_summary(groups), records, data_after_end })
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

/// Sample standard deviation by Welford's update, in record order (pandas'
/// groupby `std`, so the last digits agree).
fn std_dev(values: &[u64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let (mut n, mut mean, mut ssqdm) = (0.0f64, 0.0f64, 0.0f64);
    for &v in values {
        let v = v as f64;
        n += 1.0;
        let old = mean;
        mean += (v - old) / n;
        ssqdm += (v - mean) * (v - old);
    }
    Some((ssqdm / (n - 1.0)).sqrt())
}

fn median(values: &[u64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid] as f64
    } else {
        (sorted[mid - 1] as f64 + sorted[mid] as f64) / 2.0
    }
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
                Cell::Float(median(v)),
                std_dev(v).map_or(Cell::Empty, Cell::Float),
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
    Some(Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows: rows.into_iter().map(|(_, r)| r).collect(),
    })
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
    fn small_trace_tables() {
        let trace = br#"{"rocprofiler-sdk-tool":[{"metadata":{"init_time":1000,"fini_time":11000},
          "agents":[{"hive_id":17332996360099338395}],
          "kernel_symbols":[{"kernel_id":0,"kernel_name":""},
                            {"kernel_id":7,"kernel_name":"k.kd","truncated_kernel_name":"k"}],
          "buffer_records":{"kernel_dispatch":[
            {"start_timestamp":2000,"end_timestamp":3000,"dispatch_info":{"kernel_id":7}},
            {"start_timestamp":2500,"end_timestamp":4000,"dispatch_info":{"kernel_id":7}}],
            "memory_copy":[{"start_timestamp":5000,"end_timestamp":6000,"bytes":8}]}}]}"#;
        let Tables { timeline, kernels, records, data_after_end } = tables(&trace[..]).unwrap();
        assert_eq!((records, data_after_end), (3, None));
        // Whitespace after the document is nothing; anything else is noticed,
        // where it starts (a whole second document: where the first ends).
        assert_eq!(tables(&[&trace[..], b" \n\t\r"].concat()[..]).unwrap().data_after_end, None);
        let len = trace.len() as u64;
        for (after, at) in [(&b"x"[..], len + 1), (b"\0", len + 1), (b"{}", len), (b"]", len + 1)] {
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
}
