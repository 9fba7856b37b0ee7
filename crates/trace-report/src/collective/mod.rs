//! TraceLens' multi-rank collective report, natively: every NCCL/RCCL
//! collective matched across a run's ranks, how long it took once the last
//! rank arrived, how skewed the arrivals were, and which rank the others
//! waited for. The tables and their rules are those of
//! `TraceLens_generate_multi_rank_collective_report_pytorch` (its
//! reference's §10-§11): `nccl_long`, `nccl_implicit_sync`,
//! `nccl_summary_implicit_sync`, `nccl_summary_long`,
//! `straggler_summary`, and `nccl_all2allv` with `nccl_summary_all2allv`
//! where some collective is an `all_to_allv`, with the same columns, rows
//! and values (pandas' types and aggregation arithmetic included).

use std::collections::BTreeMap;

mod all2allv;
mod compare;

pub use compare::{CollectiveDiff, CollectiveSide, compare_collectives};

use trace_summary::{Cell, CollectiveKernel, Table};

/// One rank's collective kernels ([`trace_summary::Summary::collective_events`]).
#[derive(Debug, Clone, Copy)]
pub struct RankKernels<'a> {
    /// Its rank.
    pub rank: u32,
    /// Its collective kernels, in file order.
    pub kernels: &'a [CollectiveKernel],
}

/// Why a run has no collective report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectiveError {
    /// No rank holds a collective kernel TraceLens selects (a gloo job's
    /// collectives run on the CPU; NCCL kernels with neither `correlation`
    /// nor `External id`). TraceLens fails here (`KeyError:
    /// 'collective_id'`).
    #[error(
        "no rank holds an NCCL/RCCL collective kernel (with a correlation or External id), so \
         there is nothing to match: a gloo job's collectives run on the CPU"
    )]
    NoCollectives,
    /// A collective matched across ranks whose ranks disagree on what it
    /// is: TraceLens aborts the report (`ValueError: Metadata mismatch`).
    #[error("the ranks disagree on the {field} of collective {collective}: {values}")]
    MetadataMismatch {
        /// The `collective_id`.
        collective: String,
        /// The column (`Collective name`, `In msg nelems`, ...).
        field: &'static str,
        /// The values the ranks give, as a list.
        values: String,
    },
}

/// The report: its tables, by file name, in the order TraceLens writes
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveReport {
    /// `(file stem, table)`: `nccl_summary_implicit_sync`,
    /// `nccl_summary_long`, `nccl_summary_all2allv` (when some collective
    /// is an `all_to_allv`), `nccl_long`, `nccl_implicit_sync`,
    /// `nccl_all2allv` (as its summary) and `straggler_summary` (when some
    /// collective synchronizes the ranks).
    pub tables: Vec<(&'static str, Table)>,
    /// Whether TraceLens' simplified matching applied (no process group
    /// names, one stream per rank): collectives matched by their order in
    /// each rank alone.
    pub simplified: bool,
}

impl CollectiveReport {
    /// The table of this file stem.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|(n, _)| *n == name).map(|(_, t)| t)
    }
}

/// A number as pandas holds it in a column: an integer, a float, or
/// missing (NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    I(i64),
    F(f64),
    Missing,
}

impl V {
    fn of(cell: &Cell) -> V {
        match cell {
            Cell::Int(i) => V::I(*i),
            Cell::Float(f) if f.is_nan() => V::Missing,
            Cell::Float(f) => V::F(*f),
            _ => V::Missing,
        }
    }
    fn f(self) -> Option<f64> {
        match self {
            V::I(i) => Some(i as f64),
            V::F(f) => Some(f),
            V::Missing => None,
        }
    }
    fn from_u64(n: Option<u64>) -> V {
        n.map_or(V::Missing, |n| i64::try_from(n).map_or(V::F(n as f64), V::I))
    }
    fn sub(self, other: V) -> V {
        match (self, other) {
            (V::I(a), V::I(b)) => V::I(a - b),
            (a, b) => match (a.f(), b.f()) {
                (Some(a), Some(b)) => V::F(a - b),
                _ => V::Missing,
            },
        }
    }
    fn add(self, other: V) -> V {
        match (self, other) {
            (V::I(a), V::I(b)) => V::I(a + b),
            (a, b) => match (a.f(), b.f()) {
                (Some(a), Some(b)) => V::F(a + b),
                _ => V::Missing,
            },
        }
    }
    fn cmp_key(self) -> f64 {
        self.f().unwrap_or(f64::NAN)
    }
}

/// A column of numbers as pandas prints it: integers while every value is
/// one, floats as soon as one is a float or missing.
fn column(values: &[V]) -> Vec<Cell> {
    let float = values.iter().any(|v| !matches!(v, V::I(_)));
    values
        .iter()
        .map(|v| match (v, float) {
            (V::I(i), false) => Cell::Int(*i),
            (V::Missing, _) => Cell::Empty,
            (v, _) => Cell::Float(v.f().expect("a number")),
        })
        .collect()
}

fn text(value: &Option<String>) -> Cell {
    value.as_ref().map_or(Cell::Empty, |t| Cell::Str(t.clone()))
}

/// A column of cells that are numbers or text (`stream`): numbers as
/// [`column`], text as it is.
fn mixed(cells: &[Cell]) -> Vec<Cell> {
    if cells.iter().any(|c| matches!(c, Cell::Str(_))) {
        return cells.to_vec();
    }
    column(&cells.iter().map(V::of).collect::<Vec<_>>())
}

/// A collective kernel as a row of `nccl_long`.
struct Row<'a> {
    rank: u32,
    kernel: &'a CollectiveKernel,
    group: String,
    index: usize,
    id: String,
}

impl Row<'_> {
    fn ts(&self) -> V {
        V::of(&self.kernel.ts)
    }
    fn dur(&self) -> V {
        V::of(&self.kernel.dur)
    }
    fn end(&self) -> V {
        self.ts().add(self.dur())
    }
}

/// What TraceLens' implicit-sync table calls the collective a name is.
fn kind(name: Option<&str>) -> Option<&'static str> {
    Some(match name? {
        "allreduce" | "allreduce_coalesced" => "allreduce",
        "reducescatter" | "_reduce_scatter_base" | "reduce_scatter_tensor_coalesced" => {
            "reducescatter"
        }
        "allgather"
        | "all_gather"
        | "_allgather_base"
        | "all_gather_into_tensor_coalesced"
        | "allgather_into_tensor_coalesced" => "allgather",
        "all_to_all" => "alltoall",
        "all_to_allv" => "alltoallv",
        _ => return None,
    })
}

/// The ranks a `Process Group Ranks` text names: a list (`[0, 1]`, a
/// tuple's repr), else every run of digits.
fn group_ranks(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

fn node_span(ranks: &Option<String>, gpus_per_node: usize) -> Cell {
    let parsed = ranks.as_deref().map(group_ranks).unwrap_or_default();
    let nodes: std::collections::BTreeSet<u64> =
        parsed.iter().map(|r| r / gpus_per_node as u64).collect();
    Cell::Str(
        match nodes.len() {
            0 => "unknown",
            1 => "intra_node",
            _ => "inter_node",
        }
        .into(),
    )
}

/// pandas' Kahan-compensated sum (of floats; integers sum exactly).
fn sum(values: &[V]) -> V {
    if values.iter().all(|v| matches!(v, V::I(_))) {
        return V::I(values.iter().map(|v| if let V::I(i) = v { *i } else { 0 }).sum());
    }
    let (mut total, mut c) = (0.0f64, 0.0f64);
    for v in values.iter().filter_map(|v| v.f()) {
        let y = v - c;
        let t = total + y;
        c = (t - total) - y;
        total = t;
    }
    V::F(total)
}

fn mean(values: &[V]) -> V {
    let present: Vec<V> = values.iter().copied().filter(|v| *v != V::Missing).collect();
    if present.is_empty() {
        return V::Missing;
    }
    match sum(&present) {
        V::I(i) => V::F(i as f64 / present.len() as f64),
        V::F(f) => V::F(f / present.len() as f64),
        V::Missing => V::Missing,
    }
}

fn median(values: &[V]) -> V {
    let mut v: Vec<f64> = values.iter().filter_map(|v| v.f()).collect();
    if v.is_empty() {
        return V::Missing;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    V::F(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn extreme(values: &[V], max: bool) -> V {
    let present: Vec<V> = values.iter().copied().filter(|v| *v != V::Missing).collect();
    let mut best: Option<V> = None;
    for v in present {
        best = match best {
            None => Some(v),
            Some(b) => {
                let better =
                    if max { v.cmp_key() > b.cmp_key() } else { v.cmp_key() < b.cmp_key() };
                Some(if better { v } else { b })
            }
        };
    }
    // A float column keeps its type.
    match (best, values.iter().any(|v| matches!(v, V::F(_)))) {
        (Some(V::I(i)), true) => V::F(i as f64),
        (Some(v), _) => v,
        (None, _) => V::Missing,
    }
}

/// Sample standard deviation (ddof 1) by Welford's algorithm, in order.
fn std(values: &[V]) -> V {
    let (mut n, mut m, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for x in values.iter().filter_map(|v| v.f()) {
        n += 1.0;
        let delta = x - m;
        m += delta / n;
        m2 += delta * (x - m);
    }
    if n < 2.0 { V::Missing } else { V::F((m2 / (n - 1.0)).sqrt()) }
}

/// NumPy's `round(x, 1)`: `x·10` rounded half to even, `÷10`; an integer
/// stays one.
fn round1(v: V) -> V {
    match v {
        V::F(f) => V::F((f * 10.0).round_ties_even() / 10.0),
        v => v,
    }
}

/// The tables of a run's ranks, in rank order; `gpus_per_node` adds the
/// `node_id` and `node_span` columns (TraceLens takes it from rank 0's
/// `deviceProperties` when not given).
pub fn collective_report(
    ranks: &[RankKernels<'_>],
    gpus_per_node: Option<usize>,
) -> Result<CollectiveReport, CollectiveError> {
    if ranks.iter().all(|r| r.kernels.is_empty()) {
        return Err(CollectiveError::NoCollectives);
    }
    let gpus_per_node = gpus_per_node.filter(|g| *g > 0);
    let (rows, simplified) = matched_rows(ranks);
    let mut tables = Vec::new();
    let implicit = implicit_sync(&rows, simplified, gpus_per_node)?;
    tables.push(("nccl_summary_implicit_sync", implicit_summary(&implicit)));
    tables.push(("nccl_summary_long", summary_long(&rows, gpus_per_node)));
    let all2allv = all2allv::table(&rows, gpus_per_node)?;
    if let Some(t) = &all2allv {
        tables.push(("nccl_summary_all2allv", all2allv::summary(t)));
    }
    tables.push(("nccl_long", long(&rows, gpus_per_node)));
    let straggler = straggler(&implicit, &rows, gpus_per_node);
    tables.push(("nccl_implicit_sync", implicit.table));
    if let Some(t) = all2allv {
        tables.push(("nccl_all2allv", t.table));
    }
    if let Some(straggler) = straggler {
        tables.push(("straggler_summary", straggler));
    }
    Ok(CollectiveReport { tables, simplified })
}

/// The rows of `nccl_long`: each rank's kernels with their group, index
/// and `collective_id`; and whether the simplified matching applied.
fn matched_rows<'a>(ranks: &[RankKernels<'a>]) -> (Vec<Row<'a>>, bool) {
    // Simplified matching: no process group names, one stream per rank.
    let unnamed = ranks
        .iter()
        .flat_map(|r| r.kernels)
        .all(|k| k.process_group_name.as_deref().is_none_or(|n| n == "Unknown_Group"));
    let one_stream = ranks.iter().all(|r| {
        let mut streams: Vec<String> = r
            .kernels
            .iter()
            .filter(|k| k.stream != Cell::Empty)
            .map(|k| format!("{:?}", k.stream))
            .collect();
        streams.sort();
        streams.dedup();
        streams.len() <= 1
    });
    let simplified = unnamed && one_stream;
    let mut rows: Vec<Row<'_>> = Vec::new();
    for r in ranks {
        let first = rows.len();
        for kernel in r.kernels {
            let group = match (&kernel.process_group_name, simplified) {
                (_, true) => "all".to_string(),
                (Some(name), false) => name.clone(),
                (None, false) => "Unknown_Group".to_string(),
            };
            rows.push(Row { rank: r.rank, kernel, group, index: 0, id: String::new() });
        }
        // The index of each in ts order, within the rank (and its group):
        // ties keep their row order.
        let mut by_group: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, row) in rows.iter().enumerate().skip(first) {
            by_group.entry(row.group.clone()).or_default().push(i);
        }
        for members in by_group.values() {
            let mut order = members.clone();
            order.sort_by(|&a, &b| rows[a].ts().cmp_key().total_cmp(&rows[b].ts().cmp_key()));
            for (index, &i) in order.iter().enumerate() {
                rows[i].index = index;
                rows[i].id = match simplified {
                    true => index.to_string(),
                    false => format!("{}_{index}", rows[i].group),
                };
            }
        }
    }
    (rows, simplified)
}

/// `coll_analysis`, the per-trace collective table of TraceLens' perf
/// report (its reference's §10): one trace's collective kernels grouped by
/// call, as rank 0. `None` when no kernel has every key (TraceLens then
/// writes no file). TraceLens writes it for traces with CPU ops only.
pub fn coll_analysis(kernels: &[CollectiveKernel]) -> Option<Table> {
    let (rows, _) = matched_rows(&[RankKernels { rank: 0, kernels }]);
    let table = summary_long(&rows, None);
    (!table.rows.is_empty()).then_some(table)
}

/// The columns of `nccl_long`, before the node columns.
const LONG: [&str; 17] = [
    "collective_id",
    "index_in_group",
    "rank",
    "Process Group Name",
    "Process Group Ranks",
    "Collective name",
    "Group size",
    "dtype",
    "In msg nelems",
    "In msg size (MB)",
    "Out msg nelems",
    "Out msg size (MB)",
    "In split size",
    "Out split size",
    "stream",
    "ts",
    "dur",
];

/// Columns of numbers, each as [`column`] makes it, by name.
fn numbers(rows: &[Row<'_>], get: impl Fn(&Row<'_>) -> V) -> Vec<Cell> {
    column(&rows.iter().map(get).collect::<Vec<_>>())
}

fn sizes(row: &Row<'_>) -> (V, V) {
    let (inn, out) = row.kernel.msg_sizes_mb();
    (inn.map_or(V::Missing, V::F), out.map_or(V::Missing, V::F))
}

fn long(rows: &[Row<'_>], gpus_per_node: Option<usize>) -> Table {
    let group_size = numbers(rows, |r| V::from_u64(r.kernel.group_size));
    let in_nelems = numbers(rows, |r| V::from_u64(r.kernel.in_nelems));
    let out_nelems = numbers(rows, |r| V::from_u64(r.kernel.out_nelems));
    let in_mb = numbers(rows, |r| sizes(r).0);
    let out_mb = numbers(rows, |r| sizes(r).1);
    let stream = mixed(&rows.iter().map(|r| r.kernel.stream.clone()).collect::<Vec<_>>());
    let ts = mixed(&rows.iter().map(|r| r.kernel.ts.clone()).collect::<Vec<_>>());
    let dur = mixed(&rows.iter().map(|r| r.kernel.dur.clone()).collect::<Vec<_>>());
    let mut out: Vec<Vec<Cell>> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let k = r.kernel;
        let mut row = vec![
            Cell::Str(r.id.clone()),
            Cell::Int(r.index as i64),
            Cell::Int(i64::from(r.rank)),
            Cell::Str(r.group.clone()),
            text(&k.process_group_ranks),
            text(&k.collective_name),
            group_size[i].clone(),
            text(&k.dtype),
            in_nelems[i].clone(),
            in_mb[i].clone(),
            out_nelems[i].clone(),
            out_mb[i].clone(),
            text(&k.in_split),
            text(&k.out_split),
            stream[i].clone(),
            ts[i].clone(),
            dur[i].clone(),
        ];
        if let Some(g) = gpus_per_node {
            row.push(Cell::Int(i64::from(r.rank) / g as i64));
            row.push(node_span(&k.process_group_ranks, g));
        }
        out.push(row);
    }
    with_nodes(&LONG, out, gpus_per_node.is_some() && !rows.is_empty(), true, true)
}

/// A table of `header` (plus `node_id` and `node_span` where asked).
fn with_nodes(
    header: &[&str],
    rows: Vec<Vec<Cell>>,
    nodes: bool,
    node_id: bool,
    span: bool,
) -> Table {
    let mut header: Vec<&str> = header.to_vec();
    if nodes {
        if node_id {
            header.push("node_id");
        }
        if span {
            header.push("node_span");
        }
    }
    Table::new(&header, rows)
}

/// `nccl_implicit_sync`, and what the summaries read of it.
struct Implicit {
    table: Table,
    /// Per row: the waits by rank, the earliest arrival rank.
    waits: Vec<(Vec<(u32, V)>, u32)>,
    /// Per row, for the summary: the group keys and the values.
    summary: Vec<ImplicitRow>,
}

/// A column of the implicit-sync summary: its name and how a row gives it.
type Measured = (&'static str, fn(&ImplicitRow) -> V);

struct ImplicitRow {
    keys: [Option<String>; 3],
    group: Option<String>,
    group_size: V,
    full_mb: V,
    latency: V,
    skew_start: V,
    skew_end: V,
    algo: V,
    bus: V,
}

const IMPLICIT: [&str; 18] = [
    "collective_id",
    "Process Group Name",
    "Process Group Ranks",
    "Collective name",
    "Group size",
    "dtype",
    "In msg nelems",
    "Out msg nelems",
    "In msg size (MB)",
    "Out msg size (MB)",
    "Full msg size (MB)",
    "comm_latency",
    "skew in start time",
    "earliest arrival rank",
    "avg_wait_time",
    "skew in end time",
    "algo bw (GB/s)",
    "bus bw (GB/s)",
];

fn implicit_sync(
    rows: &[Row<'_>],
    simplified: bool,
    gpus_per_node: Option<usize>,
) -> Result<Implicit, CollectiveError> {
    let (order, members) = by_collective(rows);
    let mut kept: Vec<(&str, Option<&'static str>)> = Vec::new();
    for id in &order {
        let first = members[id][0].kernel;
        let kind = kind(first.collective_name.as_deref());
        let synchronizing =
            matches!(kind, Some("allreduce" | "reducescatter" | "allgather" | "alltoall"));
        if synchronizing || (simplified && kind.is_none()) {
            kept.push((id, kind));
        }
    }
    if kept.is_empty() {
        return Ok(Implicit { table: Table::new(&[], vec![]), waits: vec![], summary: vec![] });
    }
    let ranks: Vec<u32> = {
        let mut r: Vec<u32> = rows.iter().map(|r| r.rank).collect();
        r.sort_unstable();
        r.dedup();
        r
    };
    // The values first, then each column typed as pandas types it.
    struct Values {
        meta: Vec<Cell>,
        numbers: Vec<V>,
        ts: BTreeMap<u32, V>,
        dur: BTreeMap<u32, V>,
        wait: BTreeMap<u32, V>,
        earliest: u32,
    }
    let mut all = Vec::new();
    let mut summary = Vec::new();
    let mut waits = Vec::new();
    for (id, kind) in &kept {
        let rs = &members[id];
        let k = rs[0].kernel;
        if !simplified {
            check_consistent(id, rs)?;
        }
        let ts: BTreeMap<u32, V> = rs.iter().map(|r| (r.rank, r.ts())).collect();
        let dur: BTreeMap<u32, V> = rs.iter().map(|r| (r.rank, r.dur())).collect();
        let durs: Vec<V> = dur.values().copied().collect();
        let latency = extreme(&durs, false);
        let latest = extreme(&ts.values().copied().collect::<Vec<_>>(), true);
        let wait: BTreeMap<u32, V> = ts.iter().map(|(r, t)| (*r, latest.sub(*t))).collect();
        let wait_values: Vec<V> = wait.values().copied().collect();
        let skew_start = extreme(&wait_values, true);
        // Ties go to the highest rank.
        let earliest = wait
            .iter()
            .filter(|(_, w)| w.cmp_key() == skew_start.cmp_key())
            .map(|(r, _)| *r)
            .max()
            .unwrap_or(0);
        let avg_wait = mean(&wait_values);
        let ends: Vec<V> = rs.iter().map(|r| r.end()).collect();
        let skew_end = extreme(&ends, true).sub(extreme(&ends, false));
        let (in_mb, out_mb) = sizes(rs[0]);
        let full = if *kind == Some("allgather") { out_mb } else { in_mb };
        let (full, algo, bus) = match (full, kind) {
            (V::F(full_mb), Some(kind)) => {
                let algo = match latency.f() {
                    Some(l) if l != 0.0 => V::F((full_mb / 1024.0) / (l / 1e6)),
                    _ => V::Missing,
                };
                let bus = match (algo, k.group_size) {
                    (V::F(a), Some(n)) => {
                        let n = n as f64;
                        let factor =
                            if *kind == "allreduce" { 2.0 * (n - 1.0) / n } else { (n - 1.0) / n };
                        V::F(a * factor)
                    }
                    _ => V::Missing,
                };
                (V::F(full_mb), algo, bus)
            }
            _ => (V::Missing, V::Missing, V::Missing),
        };
        summary.push(ImplicitRow {
            keys: [k.collective_name.clone(), k.dtype.clone(), k.in_nelems.map(|n| n.to_string())],
            group: Some(rs[0].group.clone()),
            group_size: V::from_u64(k.group_size),
            full_mb: full,
            latency,
            skew_start,
            skew_end,
            algo,
            bus,
        });
        waits.push((wait.iter().map(|(r, w)| (*r, *w)).collect(), earliest));
        all.push(Values {
            meta: vec![
                Cell::Str((*id).to_string()),
                Cell::Str(rs[0].group.clone()),
                text(&k.process_group_ranks),
                text(&k.collective_name),
            ],
            numbers: vec![
                V::from_u64(k.group_size),
                V::Missing, // dtype: text, below
                V::from_u64(k.in_nelems),
                V::from_u64(k.out_nelems),
                in_mb,
                out_mb,
                full,
                latency,
                skew_start,
                V::I(i64::from(earliest)),
                avg_wait,
                skew_end,
                algo,
                bus,
            ],
            ts,
            dur,
            wait,
            earliest,
        });
    }
    let n = all.len();
    let col = |i: usize| column(&all.iter().map(|v| v.numbers[i]).collect::<Vec<_>>());
    let numeric: Vec<Vec<Cell>> = (0..14).map(col).collect();
    let per_rank = |get: &dyn Fn(&Values) -> &BTreeMap<u32, V>, r: u32| {
        column(
            &all.iter().map(|v| get(v).get(&r).copied().unwrap_or(V::Missing)).collect::<Vec<_>>(),
        )
    };
    let mut header: Vec<String> = IMPLICIT.iter().map(|s| s.to_string()).collect();
    let mut rank_columns: Vec<Vec<Cell>> = Vec::new();
    for &r in &ranks {
        header.push(format!("rank_{r}_ts"));
        rank_columns.push(per_rank(&|v| &v.ts, r));
        header.push(format!("rank_{r}_dur"));
        rank_columns.push(per_rank(&|v| &v.dur, r));
    }
    for &r in &ranks {
        header.push(format!("rank_{r}_wait_time"));
        rank_columns.push(per_rank(&|v| &v.wait, r));
    }
    let nodes = gpus_per_node.is_some();
    if nodes {
        header.push("node_span".into());
    }
    let mut out = Vec::with_capacity(n);
    for (i, v) in all.iter().enumerate() {
        let dtype = text(&kept_kernel(&members, kept[i].0).dtype);
        let mut row = v.meta.clone();
        row.push(numeric[0][i].clone()); // Group size
        row.push(dtype);
        for c in &numeric[2..] {
            row.push(c[i].clone());
        }
        for c in &rank_columns {
            row.push(c[i].clone());
        }
        if let Some(g) = gpus_per_node {
            row.push(node_span(&kept_kernel(&members, kept[i].0).process_group_ranks, g));
        }
        let _ = v.earliest;
        out.push(row);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Ok(Implicit { table: Table::new(&header, out), waits, summary })
}

/// Each `collective_id` in first-appearance order, and its rows.
type Members<'r, 'a> = (Vec<&'r str>, BTreeMap<&'r str, Vec<&'r Row<'a>>>);

fn by_collective<'r, 'a>(rows: &'r [Row<'a>]) -> Members<'r, 'a> {
    let mut order: Vec<&str> = Vec::new();
    let mut members: BTreeMap<&str, Vec<&Row<'_>>> = BTreeMap::new();
    for r in rows {
        members
            .entry(&r.id)
            .or_insert_with(|| {
                order.push(&r.id);
                Vec::new()
            })
            .push(r);
    }
    (order, members)
}

fn kept_kernel<'a>(members: &BTreeMap<&str, Vec<&Row<'a>>>, id: &str) -> &'a CollectiveKernel {
    members[id][0].kernel
}

/// A value as a mismatch error names it.
fn shown<T: std::fmt::Display>(value: &Option<T>) -> String {
    value.as_ref().map_or_else(|| "missing".to_string(), T::to_string)
}

fn shown_cell(cell: &Cell) -> String {
    if *cell == Cell::Empty { "missing".to_string() } else { cell.text() }
}

/// A field of a matched collective the ranks must agree on, and how a
/// row gives it.
type Field = (&'static str, fn(&Row<'_>) -> String);

/// TraceLens' check that the ranks agree on what a matched collective is:
/// each of `fields` has one value across `rows`.
fn check_agree(id: &str, rows: &[&Row<'_>], fields: &[Field]) -> Result<(), CollectiveError> {
    for (field, get) in fields {
        let values: std::collections::BTreeSet<String> = rows.iter().map(|r| get(r)).collect();
        if values.len() > 1 {
            return Err(CollectiveError::MetadataMismatch {
                collective: id.to_string(),
                field,
                values: values.into_iter().collect::<Vec<_>>().join(", "),
            });
        }
    }
    Ok(())
}

/// What the ranks of every matched collective must agree on: its group,
/// what it is, its size and dtype.
const GROUP_FIELDS: [Field; 5] = [
    ("Process Group Name", |r| r.group.clone()),
    ("Process Group Ranks", |r| shown(&r.kernel.process_group_ranks)),
    ("Collective name", |r| shown(&r.kernel.collective_name)),
    ("Group size", |r| shown(&r.kernel.group_size)),
    ("dtype", |r| shown(&r.kernel.dtype)),
];

/// [`check_agree`] on what an implicit-sync collective's ranks agree on.
fn check_consistent(id: &str, rows: &[&Row<'_>]) -> Result<(), CollectiveError> {
    let sizes: [Field; 4] = [
        ("In msg nelems", |r| shown(&r.kernel.in_nelems)),
        ("Out msg nelems", |r| shown(&r.kernel.out_nelems)),
        ("In msg size (MB)", |r| shown(&r.kernel.msg_sizes_mb().0)),
        ("Out msg size (MB)", |r| shown(&r.kernel.msg_sizes_mb().1)),
    ];
    check_agree(id, rows, &[&GROUP_FIELDS[..], &sizes[..]].concat())
}

/// `nccl_summary_implicit_sync`: the implicit-sync rows grouped by
/// collective, dtype and size, with the default `--agg_metrics` (mean,
/// median, min, max).
fn implicit_summary(implicit: &Implicit) -> Table {
    if implicit.summary.is_empty() {
        return Table::new(&[], vec![]);
    }
    let key = |r: &ImplicitRow| -> Vec<String> {
        r.keys.iter().map(|k| k.clone().unwrap_or_else(|| "Unknown".into())).collect()
    };
    // Groups in sorted key order (pandas' groupby), rows in row order.
    let mut groups: BTreeMap<Vec<String>, Vec<&ImplicitRow>> = BTreeMap::new();
    for r in &implicit.summary {
        groups.entry(key(r)).or_default().push(r);
    }
    let bandwidths = implicit.summary.iter().any(|r| r.algo != V::Missing);
    let mut header: Vec<String> = [
        "Collective name",
        "dtype",
        "In msg nelems",
        "Process Group Name",
        "Group size",
        "Full msg size (MB)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut measured: Vec<Measured> = vec![
        ("comm_latency", |r| r.latency),
        ("skew in start time", |r| r.skew_start),
        ("skew in end time", |r| r.skew_end),
    ];
    if bandwidths {
        measured.push(("algo bw (GB/s)", |r| r.algo));
        measured.push(("bus bw (GB/s)", |r| r.bus));
    }
    for (name, _) in &measured {
        for stat in ["mean", "median", "min", "max"] {
            header.push(format!("{name}_{stat}"));
        }
    }
    header.push("count".into());
    header.push("Total comm latency (ms)".into());
    // Each group's values, then each column typed across groups.
    let mut columns: Vec<Vec<V>> = vec![Vec::new(); header.len() - 4];
    let mut keys: Vec<Vec<String>> = Vec::new();
    let mut groups_first: Vec<Option<String>> = Vec::new();
    let mut totals: Vec<f64> = Vec::new();
    for (k, rows) in &groups {
        keys.push(k.clone());
        groups_first.push(rows.iter().find_map(|r| r.group.clone()));
        let first = |get: fn(&ImplicitRow) -> V| {
            rows.iter().map(|r| get(r)).find(|v| *v != V::Missing).unwrap_or(V::Missing)
        };
        let mut c = 0;
        columns[c].push(first(|r| r.group_size));
        c += 1;
        columns[c].push(first(|r| r.full_mb));
        c += 1;
        for (_, get) in &measured {
            let values: Vec<V> = rows.iter().map(|r| get(r)).collect();
            for v in
                [mean(&values), median(&values), extreme(&values, false), extreme(&values, true)]
            {
                columns[c].push(v);
                c += 1;
            }
        }
        let latencies: Vec<V> = rows.iter().map(|r| r.latency).collect();
        let count = latencies.iter().filter(|v| **v != V::Missing).count();
        columns[c].push(V::I(count as i64));
        c += 1;
        let total = sum(&latencies).f().unwrap_or(0.0) / 1000.0;
        columns[c].push(V::F(total));
        totals.push(total);
    }
    // Typed per column; min and max keep an integer column's type.
    let typed: Vec<Vec<Cell>> = columns.iter().map(|c| column(c)).collect();
    let mut rows: Vec<(f64, Vec<Cell>)> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let mut row: Vec<Cell> = k.iter().map(|s| Cell::Str(s.clone())).collect();
        row.push(groups_first[i].as_ref().map_or(Cell::Empty, |g| Cell::Str(g.clone())));
        for c in &typed {
            row.push(c[i].clone());
        }
        rows.push((totals[i], row));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Table::new(&header, rows.into_iter().map(|(_, r)| r).collect())
}

const SUMMARY_LONG: [&str; 19] = [
    "rank",
    "Process Group Name",
    "Process Group Ranks",
    "Collective name",
    "Group size",
    "dtype",
    "In msg nelems",
    "Out msg nelems",
    "In split size",
    "Out split size",
    "stream",
    "In msg size (MB)_first",
    "Out msg size (MB)_first",
    "dur_sum",
    "dur_mean",
    "dur_std",
    "dur_min",
    "dur_max",
    "operation_count",
];

/// `nccl_summary_long`: the per-trace collective table over every rank;
/// an event missing any key is left out (as pandas' groupby drops it).
fn summary_long(rows: &[Row<'_>], gpus_per_node: Option<usize>) -> Table {
    // The key columns are typed over all rows, dropped ones included.
    let group_size = numbers(rows, |r| V::from_u64(r.kernel.group_size));
    let in_nelems = numbers(rows, |r| V::from_u64(r.kernel.in_nelems));
    let out_nelems = numbers(rows, |r| V::from_u64(r.kernel.out_nelems));
    let stream = mixed(&rows.iter().map(|r| r.kernel.stream.clone()).collect::<Vec<_>>());
    let mut groups: BTreeMap<Vec<String>, (Vec<Cell>, Vec<usize>)> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let k = r.kernel;
        let cells = vec![
            Cell::Int(i64::from(r.rank)),
            Cell::Str(r.group.clone()),
            text(&k.process_group_ranks),
            text(&k.collective_name),
            group_size[i].clone(),
            text(&k.dtype),
            in_nelems[i].clone(),
            out_nelems[i].clone(),
            text(&k.in_split),
            text(&k.out_split),
            stream[i].clone(),
        ];
        if cells.contains(&Cell::Empty) {
            continue;
        }
        // Sorted as the values sort (numbers as numbers).
        let sort_key: Vec<String> = cells
            .iter()
            .map(|c| match c {
                Cell::Int(i) => format!("{:020}", i + (1 << 62)),
                Cell::Float(f) => format!("{:030.10}", f + 1e18),
                Cell::Str(s) => s.clone(),
                Cell::Empty => String::new(),
            })
            .collect();
        groups.entry(sort_key).or_insert_with(|| (cells, Vec::new())).1.push(i);
    }
    let mut out: Vec<(f64, Vec<Cell>)> = Vec::new();
    let mut dur_columns: Vec<Vec<V>> = vec![Vec::new(); 6];
    let mut firsts: Vec<(V, V)> = Vec::new();
    let mut keys: Vec<Vec<Cell>> = Vec::new();
    for (cells, members) in groups.values() {
        let durs: Vec<V> = members.iter().map(|&i| rows[i].dur()).collect();
        let first = |get: fn(&Row<'_>) -> V| {
            members.iter().map(|&i| get(&rows[i])).find(|v| *v != V::Missing).unwrap_or(V::Missing)
        };
        firsts.push((first(|r| sizes(r).0), first(|r| sizes(r).1)));
        for (c, v) in
            [sum(&durs), mean(&durs), std(&durs), extreme(&durs, false), extreme(&durs, true)]
                .into_iter()
                .enumerate()
        {
            dur_columns[c].push(v);
        }
        dur_columns[5].push(V::I(durs.iter().filter(|v| **v != V::Missing).count() as i64));
        keys.push(cells.clone());
    }
    let in_first = column(&firsts.iter().map(|f| f.0).collect::<Vec<_>>());
    let out_first = column(&firsts.iter().map(|f| f.1).collect::<Vec<_>>());
    let typed: Vec<Vec<Cell>> = dur_columns.iter().map(|c| column(c)).collect();
    for (i, cells) in keys.into_iter().enumerate() {
        let mut row = cells;
        let rank = match row[0] {
            Cell::Int(r) => r,
            _ => 0,
        };
        let ranks_text = match &row[2] {
            Cell::Str(s) => Some(s.clone()),
            _ => None,
        };
        row.push(in_first[i].clone());
        row.push(out_first[i].clone());
        for c in &typed {
            row.push(c[i].clone());
        }
        if let Some(g) = gpus_per_node {
            row.push(Cell::Int(rank / g as i64));
            row.push(node_span(&ranks_text, g));
        }
        out.push((dur_columns[0][i].f().unwrap_or(0.0), row));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    let nodes = gpus_per_node.is_some() && !out.is_empty();
    let rows: Vec<Vec<Cell>> = out.into_iter().map(|(_, r)| r).collect();
    with_nodes(&SUMMARY_LONG, rows, nodes, true, true)
}

/// `straggler_summary`: per rank, how long it waited and how often it
/// arrived last (made the others wait) or first.
fn straggler(implicit: &Implicit, rows: &[Row<'_>], gpus_per_node: Option<usize>) -> Option<Table> {
    if implicit.waits.is_empty() {
        return None;
    }
    let num = implicit.waits.len();
    let mut ranks: Vec<u32> =
        implicit.waits.iter().flat_map(|(w, _)| w.iter().map(|(r, _)| *r)).collect();
    ranks.sort_unstable();
    ranks.dedup();
    // The straggler of each collective: the least wait (ties: lowest rank).
    let stragglers: Vec<Option<u32>> = implicit
        .waits
        .iter()
        .map(|(w, _)| {
            let least = extreme(&w.iter().map(|(_, v)| *v).collect::<Vec<_>>(), false);
            w.iter()
                .find(|(_, v)| *v != V::Missing && v.cmp_key() == least.cmp_key())
                .map(|(r, _)| *r)
        })
        .collect();
    let mut values: Vec<(u32, V, V, i64, i64, f64, V)> = Vec::new();
    for &rank in &ranks {
        let waits: Vec<V> = implicit
            .waits
            .iter()
            .filter_map(|(w, _)| w.iter().find(|(r, _)| *r == rank).map(|(_, v)| *v))
            .collect();
        let last = stragglers.iter().filter(|s| **s == Some(rank)).count() as i64;
        let first = implicit.waits.iter().filter(|(_, e)| *e == rank).count() as i64;
        let durs: Vec<V> = rows.iter().filter(|r| r.rank == rank).map(|r| r.dur()).collect();
        values.push((
            rank,
            round1(sum(&waits.iter().copied().filter(|v| *v != V::Missing).collect::<Vec<_>>())),
            round1(mean(&waits)),
            last,
            first,
            (100.0 * last as f64 / num as f64 * 10.0).round_ties_even() / 10.0,
            round1(sum(&durs.iter().copied().filter(|v| *v != V::Missing).collect::<Vec<_>>())),
        ));
    }
    // Sorted by total wait, ascending (ranks numerically first).
    values.sort_by(|a, b| a.1.cmp_key().total_cmp(&b.1.cmp_key()));
    let total = column(&values.iter().map(|v| v.1).collect::<Vec<_>>());
    let mean_wait = column(&values.iter().map(|v| v.2).collect::<Vec<_>>());
    let dur = column(&values.iter().map(|v| v.6).collect::<Vec<_>>());
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let mut row = vec![
            Cell::Int(i64::from(v.0)),
            total[i].clone(),
            mean_wait[i].clone(),
            Cell::Int(v.3),
            Cell::Int(v.4),
            Cell::Float(v.5),
            Cell::Int(num as i64),
            dur[i].clone(),
        ];
        if let Some(g) = gpus_per_node {
            row.push(Cell::Int(i64::from(v.0) / g as i64));
        }
        out.push(row);
    }
    let header = [
        "rank",
        "total_wait_time_us",
        "mean_wait_time_us",
        "times_arrived_last",
        "times_arrived_first",
        "pct_arrived_last",
        "num_collectives",
        "total_nccl_dur_us",
    ];
    Some(with_nodes(&header, out, gpus_per_node.is_some(), true, false))
}
