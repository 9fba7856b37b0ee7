//! TraceLens' short-kernel study (`--short_kernel_study`, its reference's
//! §9): the kernels shorter than 10 µs, as a histogram of their durations
//! and grouped by what launched them.

use rustc_hash::FxHashMap as HashMap;

use super::{Analysis, ev, kahan};
use crate::{
    compute::{Cell, Table},
    parse::{Cat, Num, shape_of},
};

/// TraceLens' default `--short_kernel_threshold_us`: shorter is short.
const THRESHOLD_US: f64 = 10.0;
/// TraceLens' default `--short_kernel_histogram_bins`.
const BINS: usize = 100;

/// The kernels shorter than 10 µs of a trace, in all: what
/// `short_kernels_summary` details.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShortKernels {
    /// How many were launched.
    pub launches: usize,
    /// Their time added up (µs).
    pub time_us: f64,
    /// Their share of `gpu_timeline`'s total time (%), where it is not 0.
    pub percent_of_total: Option<f64>,
}

impl Analysis<'_> {
    /// `short_kernel_histogram` and `short_kernels_summary`, over the
    /// kernels (`cat` `kernel`, in file order) shorter than 10 µs;
    /// `total_us` is `gpu_timeline`'s total time, for the percentages.
    pub(crate) fn short_kernels(&self, total_us: f64) -> (Table, Table, ShortKernels) {
        let p = self.p;
        let short: Vec<(usize, Num)> = (0..p.events.len())
            .filter(|&i| ev(p, i).cat == Cat::Kernel)
            .map(|i| (i, ev(p, i).dur.unwrap_or(Num::Int(0))))
            .filter(|(_, d)| d.f() < THRESHOLD_US)
            .collect();
        let values: Vec<f64> = short.iter().map(|(_, d)| d.f()).collect();
        let time_us = kahan(values.iter().copied());
        let said = ShortKernels {
            launches: values.len(),
            time_us,
            percent_of_total: (total_us > 0.0).then(|| time_us / total_us * 100.0),
        };
        (histogram(&values), self.short_summary(&short, total_us), said)
    }

    fn short_summary(&self, short: &[(usize, Num)], total_us: f64) -> Table {
        if short.is_empty() {
            // An empty DataFrame: a line break alone.
            return Table::new(&[], vec![]);
        }
        let p = self.p;
        let gpu_only = !self.has_cpu_ops();
        // The group keys of each short kernel; `None` where one is missing.
        type Key = (Option<u32>, [Option<u32>; 3], u32);
        let key = |k: usize| -> Option<Key> {
            let name = ev(p, k).name;
            if gpu_only {
                return Some((None, [None; 3], name));
            }
            let op = self.parent_cpu_op(k)?;
            let s = shape_of(p, op)?;
            Some((Some(ev(p, op).name), [Some(s.dims?), Some(s.strides?), Some(s.concrete?)], name))
        };
        let mut order: Vec<Key> = Vec::new();
        let mut members: HashMap<Key, Vec<Num>> = HashMap::default();
        for &(k, dur) in short {
            let Some(key) = key(k) else { continue };
            members
                .entry(key)
                .or_insert_with(|| {
                    order.push(key);
                    Vec::new()
                })
                .push(dur);
        }
        if order.is_empty() {
            // pandas' empty grouped result: its two column levels, no rows.
            let level = "Kernel duration (µs)";
            let stats = ["sum", "count", "mean"].map(|s| Cell::Str(s.into())).to_vec();
            return Table::new(&[level, level, level], vec![stats]);
        }
        let all_int = short.iter().all(|(_, d)| d.is_int());
        let total_ms = total_us / 1000.0;
        struct Group {
            key: Key,
            sum: f64,
            count: usize,
            mean: f64,
            pct: f64,
        }
        let mut groups: Vec<Group> = order
            .iter()
            .map(|key| {
                let durs = &members[key];
                let sum = kahan(durs.iter().map(|d| d.f()));
                let count = durs.len();
                let mean = sum / count as f64;
                let pct = sum / (total_ms * 1e3) * 100.0;
                Group { key: *key, sum, count, mean, pct }
            })
            .collect();
        // Stable: complete ties keep their first appearance.
        groups.sort_by(|a, b| {
            b.sum
                .total_cmp(&a.sum)
                .then(a.count.cmp(&b.count))
                .then(a.mean.total_cmp(&b.mean))
                .then(a.pct.total_cmp(&b.pct))
        });
        let text = |id: u32| Cell::Str(p.str(id).to_string());
        let mut header: Vec<&str> = match gpu_only {
            true => vec!["Kernel name"],
            false => {
                vec![
                    "Parent cpu_op",
                    "Input dims",
                    "Input strides",
                    "Concrete Inputs",
                    "Kernel name",
                ]
            }
        };
        header.extend([
            "Short Kernel duration (µs) sum",
            "Short Kernel count",
            "Short Kernel duration (µs) mean",
            "Short Kernel duration (µs) percent of total time",
        ]);
        let rows = groups
            .iter()
            .map(|g| {
                let (op, args, name) = g.key;
                let mut row = Vec::new();
                if !gpu_only {
                    row.push(op.map_or(Cell::Empty, text));
                    row.extend(args.iter().map(|a| a.map_or(Cell::Empty, text)));
                }
                row.push(text(name));
                row.push(if all_int { Cell::Int(g.sum as i64) } else { Cell::Float(g.sum) });
                row.push(Cell::Int(g.count as i64));
                row.push(Cell::Float(g.mean));
                row.push(if g.pct.is_nan() { Cell::Empty } else { Cell::Float(g.pct) });
                row
            })
            .collect();
        Table::new(&header, rows)
    }
}

/// NumPy's `histogram(values, bins=100)`: equal bins over [min, max]
/// (widened by 0.5 each way when they are equal), the last bin closed.
fn histogram(values: &[f64]) -> Table {
    let header = ["bin_start", "bin_end", "count"];
    if values.is_empty() {
        return Table::new(&header, vec![]);
    }
    let (mut first, mut last) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if first == last {
        first -= 0.5;
        last += 0.5;
    }
    // np.linspace: start + i·step, the last edge exactly `last`.
    let step = (last - first) / BINS as f64;
    let mut edges: Vec<f64> = (0..=BINS).map(|i| i as f64 * step + first).collect();
    edges[BINS] = last;
    let mut counts = vec![0i64; BINS];
    let span = last - first;
    for &v in values {
        let mut i = (((v - first) / span) * BINS as f64) as usize;
        if i == BINS {
            i -= 1;
        }
        if v < edges[i] {
            i -= 1;
        } else if v >= edges[i + 1] && i != BINS - 1 {
            i += 1;
        }
        counts[i] += 1;
    }
    let rows = (0..BINS)
        .map(|i| vec![Cell::Float(edges[i]), Cell::Float(edges[i + 1]), Cell::Int(counts[i])])
        .collect();
    Table::new(&header, rows)
}
