//! `nccl_all2allv` and `nccl_summary_all2allv`: the `all_to_allv`
//! collectives, whose ranks each send a different amount, matched across
//! ranks (TraceLens' reference §11.8). No public trace holds one; the rules
//! are the reference's, tested on hand-built ranks.

use std::collections::{BTreeMap, BTreeSet};

use trace_summary::{Cell, Table};

use super::{
    CollectiveError, Field, GROUP_FIELDS, Row, V, by_collective, check_agree, column, extreme,
    mean, median, mixed, node_span, shown_cell, sizes, sum, text,
};

/// `nccl_all2allv`, and what its summary reads of it.
pub(super) struct All2allv {
    pub(super) table: Table,
    rows: Vec<Measured>,
}

/// One `all_to_allv` as the summary groups and aggregates it.
struct Measured {
    group: String,
    dtype: Option<String>,
    group_ranks: Option<String>,
    name: Option<String>,
    group_size: V,
    total_mb: V,
    wall: V,
    throughput: V,
    imbalance: V,
    max_dur: V,
    skew_start: V,
    skew_end: V,
}

const GENERAL: [&str; 20] = [
    "collective_id",
    "Process Group Name",
    "Process Group Ranks",
    "Collective name",
    "Group size",
    "dtype",
    "stream",
    "total data communicated (MB)",
    "total nelems communicated",
    "wall_time (us)",
    "max_rank_dur (us)",
    "min_rank_dur (us)",
    "avg_rank_dur (us)",
    "throughput (GB/s)",
    "max_rank_throughput (GB/s)",
    "min_rank_throughput (GB/s)",
    "size_imbalance",
    "skew in start time",
    "skew in end time",
    "node_span",
];

/// The ranks' agreement TraceLens checks before an `all_to_allv` row.
fn check_consistent(id: &str, rows: &[&Row<'_>]) -> Result<(), CollectiveError> {
    let stream: Field = ("stream", |r| shown_cell(&r.kernel.stream));
    check_agree(id, rows, &[&GROUP_FIELDS[..], &[stream]].concat())
}

fn div(a: V, b: V) -> V {
    match (a.f(), b.f()) {
        (Some(a), Some(b)) if b != 0.0 => V::F(a / b),
        _ => V::Missing,
    }
}

/// GB/s of `mb` MiB in `us` µs.
fn rate(mb: V, us: V) -> V {
    match (mb.f(), us.f()) {
        (Some(mb), Some(us)) if us != 0.0 => V::F((mb / 1024.0) / (us / 1e6)),
        _ => V::Missing,
    }
}

/// `nccl_all2allv`, when some collective is named `all_to_allv`: one row
/// per such collective, the largest total first.
pub(super) fn table(
    rows: &[Row<'_>],
    gpus_per_node: Option<usize>,
) -> Result<Option<All2allv>, CollectiveError> {
    let (order, members) = by_collective(rows);
    let ids: Vec<&str> = order
        .into_iter()
        .filter(|id| members[id][0].kernel.collective_name.as_deref() == Some("all_to_allv"))
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    let ranks: BTreeSet<u32> =
        ids.iter().flat_map(|id| members[id].iter().map(|r| r.rank)).collect();
    // The values of each row, column by column (typed across rows after).
    let per_rank_names = [
        "ts",
        "dur",
        "In msg nelems",
        "Out msg nelems",
        "In msg size (MB)",
        "Out msg size (MB)",
        "In split size",
        "Out split size",
        "skew in start time",
        "skew in end time",
    ];
    let mut general: Vec<Vec<V>> = vec![Vec::new(); 12];
    let mut meta: Vec<Vec<Cell>> = Vec::new();
    let mut per_rank: BTreeMap<u32, Vec<Vec<Cell>>> =
        ranks.iter().map(|r| (*r, vec![Vec::new(); per_rank_names.len()])).collect();
    let mut measured = Vec::new();
    for id in &ids {
        let rs = &members[id];
        check_consistent(id, rs)?;
        let k = rs[0].kernel;
        let in_mb: Vec<V> = rs.iter().map(|r| sizes(r).0).collect();
        let in_nelems: Vec<V> = rs.iter().map(|r| V::from_u64(r.kernel.in_nelems)).collect();
        let starts: Vec<V> = rs.iter().map(|r| r.ts()).collect();
        let ends: Vec<V> = rs.iter().map(|r| r.end()).collect();
        let durs: Vec<V> = rs.iter().map(|r| r.dur()).collect();
        let (first, last) = (extreme(&starts, false), extreme(&starts, true));
        let (first_end, last_end) = (extreme(&ends, false), extreme(&ends, true));
        let total_mb = sum(&in_mb);
        let wall = last_end.sub(first);
        let rank_rates: Vec<V> = rs
            .iter()
            .zip(&in_mb)
            .filter(|(r, mb)| {
                mb.f().is_some_and(|m| m > 0.0) && r.dur().f().is_some_and(|d| d > 0.0)
            })
            .map(|(r, mb)| rate(*mb, r.dur()))
            .collect();
        let imbalance = div(extreme(&in_mb, true), mean(&in_mb));
        let values = [
            total_mb,
            sum(&in_nelems),
            wall,
            extreme(&durs, true),
            extreme(&durs, false),
            mean(&durs),
            rate(total_mb, wall),
            extreme(&rank_rates, true),
            extreme(&rank_rates, false),
            imbalance,
            last.sub(first),
            last_end.sub(first_end),
        ];
        for (c, v) in general.iter_mut().zip(values) {
            c.push(v);
        }
        meta.push(vec![
            Cell::Str((*id).to_string()),
            Cell::Str(rs[0].group.clone()),
            text(&k.process_group_ranks),
            text(&k.collective_name),
        ]);
        measured.push(Measured {
            group: rs[0].group.clone(),
            dtype: k.dtype.clone(),
            group_ranks: k.process_group_ranks.clone(),
            name: k.collective_name.clone(),
            group_size: V::from_u64(k.group_size),
            total_mb,
            wall,
            throughput: values[6],
            imbalance,
            max_dur: values[3],
            skew_start: values[10],
            skew_end: values[11],
        });
        for (rank, cols) in per_rank.iter_mut() {
            let row = rs.iter().find(|r| r.rank == *rank);
            let number = |v: Option<V>| match v.unwrap_or(V::Missing) {
                V::I(i) => Cell::Int(i),
                V::F(f) => Cell::Float(f),
                V::Missing => Cell::Empty,
            };
            let cells = [
                number(row.map(|r| r.ts())),
                number(row.map(|r| r.dur())),
                number(row.map(|r| V::from_u64(r.kernel.in_nelems))),
                number(row.map(|r| V::from_u64(r.kernel.out_nelems))),
                number(row.map(|r| sizes(r).0)),
                number(row.map(|r| sizes(r).1)),
                row.map_or(Cell::Empty, |r| text(&r.kernel.in_split)),
                row.map_or(Cell::Empty, |r| text(&r.kernel.out_split)),
                number(row.map(|r| r.ts().sub(first))),
                number(row.map(|r| last_end.sub(r.end()))),
            ];
            for (c, cell) in cols.iter_mut().zip(cells) {
                c.push(cell);
            }
        }
    }
    // Typed as pandas types each column.
    let group_size = column(
        &ids.iter().map(|id| V::from_u64(members[id][0].kernel.group_size)).collect::<Vec<_>>(),
    );
    let stream =
        mixed(&ids.iter().map(|id| members[id][0].kernel.stream.clone()).collect::<Vec<_>>());
    let general: Vec<Vec<Cell>> = general.iter().map(|c| column(c)).collect();
    let per_rank: BTreeMap<u32, Vec<Vec<Cell>>> = per_rank
        .into_iter()
        .map(|(r, cols)| (r, cols.iter().map(|c| mixed(c)).collect()))
        .collect();
    let mut header: Vec<String> = GENERAL[..19].iter().map(|s| s.to_string()).collect();
    for r in per_rank.keys() {
        for name in per_rank_names {
            header.push(format!("rank_{r}_{name}"));
        }
    }
    if gpus_per_node.is_some() {
        header.push(GENERAL[19].into());
    }
    let mut out: Vec<(f64, Vec<Cell>)> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let k = members[id][0].kernel;
        let mut row = meta[i].clone();
        row.push(group_size[i].clone());
        row.push(text(&k.dtype));
        row.push(stream[i].clone());
        row.extend(general.iter().map(|c| c[i].clone()));
        for cols in per_rank.values() {
            row.extend(cols.iter().map(|c| c[i].clone()));
        }
        if let Some(g) = gpus_per_node {
            row.push(node_span(&k.process_group_ranks, g));
        }
        out.push((measured[i].total_mb.cmp_key(), row));
    }
    // Largest total first; NaN last.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (out[a].0, out[b].0);
        a.is_nan().cmp(&b.is_nan()).then(b.total_cmp(&a))
    });
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    // The summary reads the rows in the table's order (its firsts).
    let mut slots: Vec<Option<(Vec<Cell>, Measured)>> =
        out.into_iter().zip(measured).map(|((_, row), m)| Some((row, m))).collect();
    let (sorted, measured): (Vec<Vec<Cell>>, Vec<Measured>) =
        order.iter().map(|&i| slots[i].take().expect("each row once")).unzip();
    Ok(Some(All2allv { table: Table::new(&header, sorted), rows: measured }))
}

/// `nccl_summary_all2allv`: the `all_to_allv` rows grouped by process
/// group and dtype (a row of no dtype in no group, as pandas drops it),
/// the longest total wall time first.
pub(super) fn summary(all: &All2allv) -> Table {
    let mut groups: BTreeMap<(String, String), Vec<&Measured>> = BTreeMap::new();
    for m in &all.rows {
        if let Some(dtype) = &m.dtype {
            groups.entry((m.group.clone(), dtype.clone())).or_default().push(m);
        }
    }
    let four = ["mean", "median", "min", "max"];
    let two = ["mean", "max"];
    type Get = fn(&Measured) -> V;
    let stats: [(&str, Get, &[&str]); 7] = [
        ("total data communicated (MB)", |m| m.total_mb, &four),
        ("wall_time (us)", |m| m.wall, &four),
        ("throughput (GB/s)", |m| m.throughput, &four),
        ("size_imbalance", |m| m.imbalance, &two),
        ("max_rank_dur (us)", |m| m.max_dur, &two),
        ("skew in start time", |m| m.skew_start, &two),
        ("skew in end time", |m| m.skew_end, &two),
    ];
    let mut header: Vec<String> = vec!["Process Group Name".into(), "dtype".into()];
    for (name, _, which) in &stats {
        for s in *which {
            header.push(format!("{name}_{s}"));
        }
    }
    for name in [
        "count",
        "Process Group Ranks",
        "Collective name",
        "Group size",
        "Total wall_time (us)",
        "Total wall_time (ms)",
    ] {
        header.push(name.into());
    }
    let mut numeric: Vec<Vec<V>> = Vec::new();
    let mut texts: Vec<[Cell; 4]> = Vec::new();
    let mut totals: Vec<f64> = Vec::new();
    for ((group, dtype), ms) in &groups {
        let mut values = Vec::new();
        for (_, get, which) in &stats {
            let v: Vec<V> = ms.iter().map(|m| get(m)).collect();
            for s in *which {
                values.push(match *s {
                    "mean" => mean(&v),
                    "median" => median(&v),
                    "min" => extreme(&v, false),
                    _ => extreme(&v, true),
                });
            }
        }
        values.push(V::I(ms.len() as i64));
        let walls: Vec<V> = ms.iter().map(|m| m.wall).collect();
        let total = sum(&walls);
        values
            .push(ms.iter().map(|m| m.group_size).find(|v| *v != V::Missing).unwrap_or(V::Missing));
        values.push(total);
        let ms_total = total.f().map_or(V::Missing, |t| V::F(t / 1000.0));
        values.push(ms_total);
        totals.push(ms_total.cmp_key());
        numeric.push(values);
        texts.push([
            Cell::Str(group.clone()),
            Cell::Str(dtype.clone()),
            ms.iter().find_map(|m| m.group_ranks.clone()).map_or(Cell::Empty, Cell::Str),
            ms.iter().find_map(|m| m.name.clone()).map_or(Cell::Empty, Cell::Str),
        ]);
    }
    let width = numeric.first().map_or(0, Vec::len);
    let typed: Vec<Vec<Cell>> =
        (0..width).map(|c| column(&numeric.iter().map(|v| v[c]).collect::<Vec<_>>())).collect();
    let stats_len = width - 4; // count, Group size, the two totals
    let mut rows: Vec<(f64, Vec<Cell>)> = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let mut row = vec![t[0].clone(), t[1].clone()];
        row.extend(typed[..stats_len].iter().map(|c| c[i].clone()));
        row.push(typed[stats_len][i].clone()); // count
        row.push(t[2].clone());
        row.push(t[3].clone());
        row.extend(typed[stats_len + 1..].iter().map(|c| c[i].clone()));
        rows.push((totals[i], row));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    Table::new(&header, rows.into_iter().map(|(_, r)| r).collect())
}
