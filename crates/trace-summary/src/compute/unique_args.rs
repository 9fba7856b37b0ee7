//! `ops_unique_args` (TraceLens' perf report, its reference's §4): the
//! kernel launchers grouped by name and argument signature (input shapes,
//! types, strides, concrete values), with their direct and subtree kernel
//! times and a summary of the kernels each launched.

use std::fmt::Write as _;

use rustc_hash::FxHashMap as HashMap;

use super::{Analysis, Ranked, ev, kahan, median, pairwise, sample_std};
use crate::{
    compute::{Cell, Table},
    csv::py_float,
    parse::{Key, Num, shape_of},
};

/// A launcher as `ops_summary` found it: its event, direct and subtree
/// kernel time (µs) and op category.
pub(super) struct Launcher<'a> {
    pub(super) event: usize,
    pub(super) direct: f64,
    pub(super) subtree: f64,
    pub(super) cat: &'a str,
    /// Its direct GPU events.
    pub(super) kernels: &'a [usize],
}

/// One kernel of a launcher's `kernel_details`.
#[derive(Clone, Copy)]
pub(super) struct Detail {
    name: u32,
    stream: Option<Key>,
    dur: Num,
}

impl Detail {
    /// Of the GPU event at `k`.
    pub(super) fn of(p: &crate::parse::Parsed, k: usize) -> Detail {
        let g = ev(p, k);
        Detail { name: g.name, stream: g.stream, dur: g.dur.unwrap_or(Num::Int(0)) }
    }
}

/// The process and thread labels of an op (the reference's §2.1):
/// `process_name` and `process_labels` of its pid (tid 0), `thread_name` of
/// its pid and tid; the later metadata event winning.
pub(super) struct Labels<'p> {
    meta: HashMap<(Option<Key>, Option<Key>, &'p str), u32>,
}

impl<'p> Labels<'p> {
    pub(super) fn new(p: &'p crate::parse::Parsed) -> Labels<'p> {
        let mut meta = HashMap::default();
        for m in &p.metadata {
            meta.insert((m.pid, m.tid, p.str(m.name)), m.value);
        }
        Labels { meta }
    }

    /// `[process_name, process_label, thread_name]` (`None`: Unknown).
    pub(super) fn of(&self, pid: Option<Key>, tid: Option<Key>) -> [Option<u32>; 3] {
        let at = |tid: Option<Key>, name: &str| self.meta.get(&(pid, tid, name)).copied();
        [
            at(Some(Key::Int(0)), "process_name"),
            at(Some(Key::Int(0)), "process_labels"),
            at(tid, "thread_name"),
        ]
    }
}

impl Analysis<'_> {
    /// `ops_unique_args` over `launchers` (in launcher order); `ints`:
    /// whether every direct and every subtree time is an integer.
    pub(super) fn unique_args(&self, launchers: &[Launcher<'_>], ints: (bool, bool)) -> Table {
        let p = self.p;
        let labels = Labels::new(p);
        // Small and Copy: a trace holds up to millions of launchers.
        #[derive(Clone, Copy)]
        struct RowData<'c> {
            name: u32,
            cat: &'c str,
            /// process_name, process_label, thread_name (`None`: Unknown).
            labels: [Option<u32>; 3],
            args: [Option<u32>; 4],
            uid: u32,
            direct: f64,
            subtree: f64,
        }
        let rows: Vec<RowData<'_>> = launchers
            .iter()
            .map(|l| {
                let e = ev(p, l.event);
                let s = shape_of(p, l.event).unwrap_or_default();
                RowData {
                    name: e.name,
                    cat: l.cat,
                    labels: labels.of(e.pid, e.tid),
                    args: [s.dims, s.types, s.strides, s.concrete],
                    uid: e.uid,
                    direct: l.direct,
                    subtree: l.subtree,
                }
            })
            .collect();
        // A launcher's `kernel_details`: its direct GPU events in `ts`
        // order (ties in file order).
        let details = |l: &Launcher<'_>| -> Vec<Detail> {
            let mut kernels: Vec<usize> = l.kernels.to_vec();
            kernels.sort_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0));
            kernels.iter().map(|&k| Detail::of(p, k)).collect()
        };
        // Groups by the text of the nine keys, in first-appearance order.
        type GroupKey<'c> = (u32, &'c str, [Option<u32>; 3], [Option<u32>; 4]);
        let mut order: Vec<Vec<usize>> = Vec::new();
        let mut index: HashMap<GroupKey<'_>, usize> = HashMap::default();
        for (i, r) in rows.iter().enumerate() {
            let g = *index.entry((r.name, r.cat, r.labels, r.args)).or_insert_with(|| {
                order.push(Vec::new());
                order.len() - 1
            });
            order[g].push(i);
        }
        let (direct_int, subtree_int) = ints;
        let out: Vec<Ranked> = order
            .iter()
            .map(|members| {
                let first = &rows[members[0]];
                let text = |id: u32| Cell::Str(p.str(id).to_string());
                let mut cells: Vec<Cell> = vec![text(first.name), Cell::Str(first.cat.to_string())];
                cells.extend(
                    first
                        .labels
                        .iter()
                        .map(|l| l.map_or_else(|| Cell::Str("Unknown".into()), text)),
                );
                cells.extend(
                    first
                        .args
                        .iter()
                        .map(|a| a.map_or(Cell::Empty, |a| Cell::Str(p.str(a).into()))),
                );
                cells.push(Cell::Int(members.len() as i64));
                let direct: Vec<f64> = members.iter().map(|&m| rows[m].direct).collect();
                let subtree: Vec<f64> = members.iter().map(|&m| rows[m].subtree).collect();
                let number =
                    |v: f64, int: bool| if int { Cell::Int(v as i64) } else { Cell::Float(v) };
                let float = |v: Option<f64>| v.map_or(Cell::Empty, Cell::Float);
                let stats = |v: &[f64]| {
                    let sum = kahan(v.iter().copied());
                    let n = v.len() as f64;
                    let (min, max) =
                        v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                            (lo.min(x), hi.max(x))
                        });
                    (sum, sum / n, median(v), sample_std(v), min, max)
                };
                let (ds, dmean, dmed, dstd, dmin, dmax) = stats(&direct);
                let (ss, smean, smed, sstd, smin, smax) = stats(&subtree);
                cells.extend([
                    Cell::Float(dmean),
                    Cell::Float(smean),
                    Cell::Float(dmed),
                    Cell::Float(smed),
                    float(dstd),
                    float(sstd),
                    number(dmin, direct_int),
                    number(smin, subtree_int),
                    number(dmax, direct_int),
                    number(smax, subtree_int),
                    number(ds, direct_int),
                    number(ss, subtree_int),
                    Cell::Int(i64::from(first.uid)),
                ]);
                let lists: Vec<Vec<Detail>> =
                    members.iter().map(|&m| details(&launchers[m])).collect();
                let lists: Vec<&[Detail]> = lists.iter().map(Vec::as_slice).collect();
                let (summary, trunc) = kernel_details(p, &lists);
                cells.push(summary.map_or(Cell::Empty, Cell::Str));
                cells.push(trunc.map_or(Cell::Empty, Cell::Str));
                Ranked { cells, sum: ds, uid: first.uid }
            })
            .collect();
        let rows = Ranked::with_percentages(out);
        let mut header: Vec<&str> = KEY_COLUMNS.to_vec();
        header.extend([
            "operation_count",
            "total_direct_kernel_time_mean",
            "total_subtree_kernel_time_mean",
            "total_direct_kernel_time_median",
            "total_subtree_kernel_time_median",
            "total_direct_kernel_time_std",
            "total_subtree_kernel_time_std",
            "total_direct_kernel_time_min",
            "total_subtree_kernel_time_min",
            "total_direct_kernel_time_max",
            "total_subtree_kernel_time_max",
            "total_direct_kernel_time_sum",
            "total_subtree_kernel_time_sum",
            "ex_UID",
            "kernel_details_summary",
            "trunc_kernel_details",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ]);
        Table::new(&header, rows)
    }
}

/// The nine columns `ops_unique_args` and `unified_perf_summary` group
/// by (the reference's §4.1), in order.
pub(super) const KEY_COLUMNS: [&str; 9] = [
    "name",
    "op category",
    "process_name",
    "process_label",
    "thread_name",
    "Input Dims",
    "Input type",
    "Input Strides",
    "Concrete Inputs",
];

/// A NumPy scalar as it prints inside a list (`np.int64(2)`,
/// `np.float64(2.0)`).
fn np(v: f64, int: bool) -> String {
    if int { format!("np.int64({})", v as i64) } else { format!("np.float64({})", py_float(v)) }
}

/// `kernel_details_summary` and `trunc_kernel_details` of a group's
/// per-launcher kernel lists (the reference's §2.8); `None` for an empty
/// summary.
pub(super) fn kernel_details(
    p: &crate::parse::Parsed,
    lists: &[&[Detail]],
) -> (Option<String>, Option<String>) {
    let Some(template) = lists.iter().find(|l| !l.is_empty()) else {
        return (Some("[]".into()), None);
    };
    let n = template.len();
    let mut durs: Vec<Vec<Num>> = vec![Vec::new(); n];
    for list in lists {
        if list.len() != n {
            continue;
        }
        for (i, d) in list.iter().enumerate() {
            durs[i].push(d.dur);
        }
    }
    struct Stat {
        name: u32,
        stream: Option<Key>,
        count: usize,
        total: f64,
        mean: f64,
        median: f64,
        std: f64,
        min: f64,
        max: f64,
        int: bool,
    }
    let mut stats: Vec<Stat> = template
        .iter()
        .zip(&durs)
        .map(|(t, d)| {
            let v: Vec<f64> = d.iter().map(|x| x.f()).collect();
            let count = v.len();
            let total = pairwise(&v);
            let mean = total / count as f64;
            let deviations: Vec<f64> = v.iter().map(|x| (x - mean) * (x - mean)).collect();
            let std = (pairwise(&deviations) / count as f64).sqrt();
            Stat {
                name: t.name,
                stream: t.stream,
                count,
                total,
                mean,
                median: median(&v),
                std,
                min: v.iter().copied().fold(f64::INFINITY, f64::min),
                max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                int: d.iter().all(|x| x.is_int()),
            }
        })
        .collect();
    // Stable: equal (total, name) keep the template's order.
    stats.sort_by(|a, b| a.total.total_cmp(&b.total).then(p.str(a.name).cmp(p.str(b.name))));
    let stream = |s: Option<Key>| match s {
        Some(Key::Int(i)) => i.to_string(),
        Some(Key::Big(u)) => u.to_string(),
        Some(Key::Str(id)) => crate::parse::py_str_repr(p.str(id)),
        Some(Key::Float(bits)) => py_float(f64::from_bits(bits)),
        Some(Key::Bool(b)) => if b { "True" } else { "False" }.into(),
        Some(Key::Null) | None => "None".into(),
    };
    let mut summary = String::from("[");
    let mut trunc = String::from("[");
    for (i, s) in stats.iter().enumerate() {
        if i > 0 {
            summary.push_str(", ");
            trunc.push_str(", ");
        }
        let name = p.str(s.name);
        let _ = write!(
            summary,
            "{{'name': {}, 'stream': {}, 'count': {}, 'total_duration_us': {}, 'mean_duration_us': {}, 'median_duration_us': {}, 'std_dev_duration_us': {}, 'min_duration_us': {}, 'max_duration_us': {}}}",
            crate::parse::py_str_repr(name),
            stream(s.stream),
            s.count,
            np(s.total, s.int),
            np(s.mean, false),
            np(s.median, false),
            np(s.std, false),
            np(s.min, s.int),
            np(s.max, s.int),
        );
        let short: String = match name.chars().count() {
            c if c <= 64 => name.to_string(),
            _ => name.chars().take(64).chain("...".chars()).collect(),
        };
        let rounded = (s.mean * 100.0).round_ties_even() / 100.0;
        let _ = write!(
            trunc,
            "{{'name': {}, 'stream': {}, 'mean_duration_us': {}}}",
            crate::parse::py_str_repr(&short),
            stream(s.stream),
            np(rounded, false),
        );
    }
    summary.push(']');
    trunc.push(']');
    (Some(summary), Some(trunc))
}
