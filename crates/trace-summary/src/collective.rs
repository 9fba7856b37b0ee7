//! `collective_summary`: madengine's own table of the NCCL/RCCL collectives
//! a Kineto trace holds (not one of TraceLens'), from the args PyTorch 2.x
//! writes on each collective kernel: `Collective name`, `dtype`, `In msg
//! nelems`, `Out msg nelems`, `Group size`.
//!
//! One row per distinct call (collective, dtype, group size, message
//! sizes): its kernels' count and durations, and the bandwidths
//! nccl-tests reports for such a call: `algbw` = message bytes / mean
//! duration, `busbw` = algbw × the collective's bus factor. The message is
//! the larger of the input and output (the whole gathered buffer of an
//! all-gather, the whole input of a reduce-scatter), as nccl-tests sizes
//! it. A kernel's duration includes the time it waits for the other ranks
//! to arrive, so a rank that waits shows a lower bandwidth than its links
//! carry: compare ranks, or take the fastest.

use rustc_hash::FxHashMap;

use crate::{
    compute::{Cell, Table},
    parse::{Cat, CollectiveArgs, Key, Parsed},
};

/// Bytes per element of a PyTorch dtype as Kineto names it (`c10`'s
/// ScalarType names), `None` when unknown.
fn dtype_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "Double" | "Long" | "ComplexFloat" | "UInt64" => 8,
        "Float" | "Int" | "ComplexHalf" | "UInt32" => 4,
        "Half" | "BFloat16" | "Short" | "UInt16" => 2,
        "Byte" | "Char" | "Bool" | "QInt8" | "QUInt8" => 1,
        "ComplexDouble" => 16,
        d if d.starts_with("Float8") => 1,
        _ => return None,
    })
}

/// nccl-tests' bus bandwidth factor of a collective in a group of `n`
/// (1 or more): what each rank's links carry relative to the message.
fn bus_factor(name: &str, n: u64) -> f64 {
    let n = n.max(1) as f64;
    let name: String =
        name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_lowercase();
    if name.contains("allreduce") {
        2.0 * (n - 1.0) / n
    } else if name.contains("allgather")
        || name.contains("reducescatter")
        || name.contains("alltoall")
    {
        (n - 1.0) / n
    } else {
        // broadcast, reduce, send/recv: the message crosses once.
        1.0
    }
}

/// The header of `collective_summary.csv`.
pub(crate) const HEADER: [&str; 11] = [
    "Collective name",
    "dtype",
    "Group size",
    "In msg nelems",
    "Out msg nelems",
    "Message bytes",
    "Count",
    "Total duration (µs)",
    "Mean duration (µs)",
    "algbw (GB/s)",
    "busbw (GB/s)",
];

/// The table, largest total duration first (`None` without collective
/// kernels).
/// How many kernels TraceLens' collective analysis selects
/// ([`crate::Summary::collective_kernels`]): the category as written (a
/// legacy `Kernel` is none), a communication name, a linking id not null.
pub(crate) fn selected_kernels(p: &Parsed) -> usize {
    let linked = |k: Option<Key>| k.is_some_and(|k| k != Key::Null);
    p.events
        .iter()
        .filter(|e| {
            e.cat == Cat::Kernel
                && (linked(e.correlation) || linked(e.external_id))
                && crate::compute::is_comm_name(p.str(e.name))
        })
        .count()
}

/// One collective kernel as TraceLens' collective analysis reads it (its
/// reference's §10.1): what its `args` say of the call, each field `None`
/// where the kernel does not say it, and its time.
///
/// It serializes to JSON and back unchanged (`report summary` keeps each
/// trace's in its record, for a run's collective report from the records).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CollectiveKernel {
    /// `ts` (µs), an integer or a float as the trace wrote it.
    #[serde(serialize_with = "cell_number", deserialize_with = "number_cell")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "cell_schema"))]
    pub ts: Cell,
    /// `dur` (µs), as `ts`.
    #[serde(serialize_with = "cell_number", deserialize_with = "number_cell")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "cell_schema"))]
    pub dur: Cell,
    /// `stream`: an integer, or text.
    #[serde(serialize_with = "cell_number", deserialize_with = "number_cell")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "cell_schema"))]
    pub stream: Cell,
    /// `Process Group Name`.
    pub process_group_name: Option<String>,
    /// `Process Group Ranks`, as written (`[0, 1]`).
    pub process_group_ranks: Option<String>,
    /// `Collective name` (`allreduce` for a `cross_device_reduce` kernel
    /// that names none).
    pub collective_name: Option<String>,
    /// `Group size`.
    pub group_size: Option<u64>,
    /// `dtype`.
    pub dtype: Option<String>,
    /// `In msg nelems`.
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`.
    pub out_nelems: Option<u64>,
    /// `In split size`, as written.
    pub in_split: Option<String>,
    /// `Out split size`, as written.
    pub out_split: Option<String>,
}

/// What [`cell_number`] writes, for the JSON Schema.
#[cfg(feature = "schema")]
fn cell_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["integer", "number", "string", "null"] })
}

/// A cell [`cell_number`] wrote: an integer, a float, text or null.
fn number_cell<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cell, D::Error> {
    use serde::Deserialize;
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Cell::Str(s),
        _ => Cell::Empty,
    })
}

fn cell_number<S: serde::Serializer>(cell: &Cell, s: S) -> Result<S::Ok, S::Error> {
    match cell {
        Cell::Int(i) => s.serialize_i64(*i),
        Cell::Float(f) => s.serialize_f64(*f),
        Cell::Str(t) => s.serialize_str(t),
        Cell::Empty => s.serialize_none(),
    }
}

impl CollectiveKernel {
    /// Bytes per element of its `dtype` as TraceLens' collective analysis
    /// knows them (`Float` 4, `Int` 4, `Long` 8, `BFloat16` 2, `Bool` 1,
    /// `Byte` 1, `Double` 8, `Half` 2, `Short` 2); `None` for any other.
    pub fn dtype_bytes(&self) -> Option<u64> {
        Some(match self.dtype.as_deref()? {
            "Float" | "Int" => 4,
            "Long" | "Double" => 8,
            "BFloat16" | "Half" | "Short" => 2,
            "Bool" | "Byte" => 1,
            _ => return None,
        })
    }

    /// `In msg size (MB)` and `Out msg size (MB)` (MiB, as TraceLens
    /// divides by 1024²): where the dtype is known and `In msg nelems` said.
    pub fn msg_sizes_mb(&self) -> (Option<f64>, Option<f64>) {
        match (self.dtype_bytes(), self.in_nelems) {
            (Some(bytes), Some(inn)) => {
                let mb = |n: u64| match n.checked_mul(bytes) {
                    Some(b) => b as f64 / (1024.0 * 1024.0),
                    None => n as f64 * bytes as f64 / (1024.0 * 1024.0),
                };
                (Some(mb(inn)), self.out_nelems.map(mb))
            }
            _ => (None, None),
        }
    }
}

/// The kernels TraceLens' collective analysis selects ([`selected_kernels`]),
/// in file order, with what their args say.
pub(crate) fn collective_kernels(p: &Parsed) -> Vec<CollectiveKernel> {
    let linked = |k: Option<Key>| k.is_some_and(|k| k != Key::Null);
    let args: FxHashMap<usize, CollectiveArgs> = p.collectives.iter().copied().collect();
    let text = |id: Option<u32>| id.map(|i| p.str(i).to_string());
    let number = |n: Option<crate::parse::Num>| match n {
        Some(crate::parse::Num::Int(i)) => Cell::Int(i),
        Some(crate::parse::Num::Float(f)) => Cell::Float(f),
        None => Cell::Empty,
    };
    p.events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.cat == Cat::Kernel
                && (linked(e.correlation) || linked(e.external_id))
                && crate::compute::is_comm_name(p.str(e.name))
        })
        .map(|(i, e)| {
            let a = args.get(&i).copied().unwrap_or_default();
            let mut collective_name = text(a.name);
            if collective_name.is_none()
                && p.str(e.name).to_ascii_lowercase().contains("cross_device_reduce")
            {
                collective_name = Some("allreduce".into());
            }
            CollectiveKernel {
                ts: number(e.ts),
                dur: number(e.dur),
                stream: match e.stream {
                    Some(Key::Int(i)) => Cell::Int(i),
                    Some(Key::Big(u)) => Cell::Str(u.to_string()),
                    Some(Key::Str(s)) => Cell::Str(p.str(s).to_string()),
                    _ => Cell::Empty,
                },
                process_group_name: text(a.pg_name),
                process_group_ranks: text(a.pg_ranks),
                collective_name,
                group_size: a.group_size,
                dtype: text(a.dtype),
                in_nelems: a.in_nelems,
                out_nelems: a.out_nelems,
                in_split: text(a.in_split),
                out_split: text(a.out_split),
            }
        })
        .collect()
}

pub(crate) fn collective_summary(p: &Parsed) -> Option<Table> {
    // A dtype is an interned string, or not said.
    type Call = (u32, Option<u32>, u64, u64, u64);
    let mut calls: FxHashMap<Call, Vec<f64>> = FxHashMap::default();
    let mut order: Vec<Call> = Vec::new();
    for (index, args) in &p.collectives {
        let CollectiveArgs { name: Some(name), dtype, in_nelems, out_nelems, group_size, .. } =
            *args
        else {
            continue;
        };
        let Some(dur) = p.events[*index].dur else { continue };
        let call =
            (name, dtype, group_size.unwrap_or(0), in_nelems.unwrap_or(0), out_nelems.unwrap_or(0));
        calls
            .entry(call)
            .or_insert_with(|| {
                order.push(call);
                Vec::new()
            })
            .push(dur.f());
    }
    if order.is_empty() {
        return None;
    }
    let mut rows: Vec<(f64, Vec<Cell>)> = order
        .into_iter()
        .map(|call| {
            let (name, dtype, group, inn, out) = call;
            let durations = &calls[&call];
            let total: f64 = durations.iter().sum();
            let mean = total / durations.len() as f64;
            let (name, dtype) = (p.str(name), dtype.map_or("", |d| p.str(d)));
            let bytes = dtype_bytes(dtype).map(|b| b * inn.max(out));
            // bytes / µs = MB/s; / 1000 = GB/s.
            // (No bandwidth for a call of no bytes, or whose sizes are not said.)
            let algbw = bytes.filter(|b| *b > 0 && mean > 0.0).map(|b| b as f64 / mean / 1000.0);
            let cell = |v: Option<f64>| v.map_or(Cell::Empty, Cell::Float);
            let int = |v: u64| Cell::Int(i64::try_from(v).unwrap_or(i64::MAX));
            (
                total,
                vec![
                    Cell::Str(name.to_string()),
                    Cell::Str(dtype.to_string()),
                    int(group),
                    int(inn),
                    int(out),
                    bytes.map_or(Cell::Empty, int),
                    int(durations.len() as u64),
                    Cell::Float(total),
                    Cell::Float(mean),
                    cell(algbw),
                    // Without the group's size the factor is unknown.
                    cell(algbw.filter(|_| group > 0).map(|a| a * bus_factor(name, group))),
                ],
            )
        })
        .collect();
    // Largest total first; ties keep the order first seen.
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    Some(Table::new(&HEADER, rows.into_iter().map(|(_, r)| r).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_follow_nccl_tests() {
        assert_eq!(bus_factor("allreduce", 8), 1.75);
        assert_eq!(bus_factor("all_reduce", 2), 1.0);
        assert_eq!(bus_factor("_allgather_base", 8), 0.875);
        assert_eq!(bus_factor("reduce_scatter_tensor_coalesced", 4), 0.75);
        assert_eq!(bus_factor("all_to_all", 4), 0.75);
        assert_eq!(bus_factor("broadcast", 8), 1.0);
        assert_eq!(bus_factor("reduce", 8), 1.0);
        assert_eq!(bus_factor("send", 2), 1.0);
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
        assert_eq!(dtype_bytes("Float8_e4m3fn"), Some(1));
        assert_eq!(dtype_bytes("Float"), Some(4));
        assert_eq!(dtype_bytes("Mystery"), None);
    }

    /// A kernel's collective args as a trace has them, with what it lacks
    /// left out: the table says what it can, and leaves empty what it cannot.
    #[test]
    fn what_a_call_does_not_say_is_left_empty() {
        let trace = |args: &str| {
            format!(
                r#"{{"traceEvents":[{{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce","pid":0,"tid":7,"ts":10,"dur":8,"args":{{{args}}}}}]}}"#
            )
        };
        let table = |args: &str| {
            let parsed = crate::parse::parse(trace(args).as_bytes()).unwrap();
            collective_summary(&parsed).map(|t| t.to_csv())
        };
        let full = r#""Collective name":"allreduce","dtype":"Float","In msg nelems":1000,"Out msg nelems":1000,"Group size":4"#;
        let csv = table(full).unwrap();
        // 4000 bytes in 8 µs: 0.5 GB/s, times 2 * 3 / 4.
        assert!(csv.ends_with("\nallreduce,Float,4,1000,1000,4000,1,8.0,8.0,0.5,0.75\n"), "{csv}");
        let csv = table(r#""Collective name":"allreduce","dtype":"Float","In msg nelems":1000,"Out msg nelems":1000"#).unwrap();
        assert!(csv.ends_with("\nallreduce,Float,0,1000,1000,4000,1,8.0,8.0,0.5,\n"), "{csv}");
        let csv = table(r#""Collective name":"allreduce","dtype":"Mystery","In msg nelems":1000,"Out msg nelems":1000,"Group size":4"#).unwrap();
        assert!(csv.ends_with("\nallreduce,Mystery,4,1000,1000,,1,8.0,8.0,,\n"), "{csv}");
        let csv = table(r#""Collective name":"barrier","dtype":"Float","Group size":4"#).unwrap();
        assert!(csv.ends_with("\nbarrier,Float,4,0,0,0,1,8.0,8.0,,\n"), "{csv}");
        // Without a collective's name, no call; without args, no table.
        assert_eq!(table(r#""dtype":"Float","Group size":4"#), None);
        assert_eq!(table(""), None);
    }

    /// A collective kernel written to JSON reads back as it was: integer
    /// and float times, numeric and text streams, missing fields.
    #[test]
    fn a_collective_kernel_round_trips_through_json() {
        let kernel = |ts: Cell, stream: Cell| CollectiveKernel {
            ts,
            dur: Cell::Float(44.096000000000004),
            stream,
            process_group_name: Some("0".into()),
            process_group_ranks: Some("[0, 1]".into()),
            collective_name: Some("allreduce".into()),
            group_size: Some(2),
            dtype: None,
            in_nelems: Some(u64::MAX),
            out_nelems: None,
            in_split: Some("[]".into()),
            out_split: None,
        };
        for k in [
            kernel(Cell::Int(1694128201436454), Cell::Int(7)),
            kernel(Cell::Float(9072000000000.123), Cell::Str("7:3".into())),
            kernel(Cell::Float(1.5), Cell::Empty),
        ] {
            let text = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<CollectiveKernel>(&text).unwrap(), k, "{text}");
        }
    }
}
