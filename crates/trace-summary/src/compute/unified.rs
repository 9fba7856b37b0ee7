//! `unified_perf_summary` (TraceLens' perf report, its reference's §5): one
//! row per op and argument signature, where the op is the modelled op at or
//! above each kernel launch (the launcher where none is), with the busy time
//! of all its kernels and, where modelled, its FLOPs, bytes, rates and
//! roofline; the kernels no op claims as synthetic ops, communication left
//! out.

use rustc_hash::FxHashMap as HashMap;

use super::perf_model::{Eval, Model, Roofline, modelled, params_dict, rates};
use super::{Analysis, GroupSum, Ranked, ev, is_comm_name, median, sample_std};
use super::{total_order, unique_args};
use crate::{
    compute::{Cell, Table},
    parse::{Cat, Num, shape_of},
};

/// A row's name: its event's, or a synthetic op's
/// (`<parent>-><kernel> (Synthetic Op)`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Name {
    Event(u32),
    Synthetic(u32, u32),
}

/// How a collected op is modelled.
enum Kind {
    /// By its own model.
    Own,
    /// As the sole backward op of the forward op at the index (its
    /// backward figures, over its backward kernels).
    Backward(usize, Model, Vec<usize>),
    /// Not at all.
    None,
}

/// One collected op before grouping (§5.2).
struct Row {
    name: Name,
    /// The event whose args, labels and duration it carries.
    event: usize,
    uid: u32,
    category: &'static str,
    /// Its GPU events, in the order they were launched.
    gpu: Vec<usize>,
    has_model: bool,
    /// Kernel Time (µs), and whether it is an integer.
    time: f64,
    time_int: bool,
    /// Its model's figures: the model, `[GFLOPS, Data Moved (MB),
    /// FLOPS/Byte, TB/s, TFLOPS/s]`, the roofline.
    figures: Option<(Model, [f64; 5], Option<Roofline>)>,
}

/// The host tree's children, as one array (a trace holds millions).
struct Children {
    start: Vec<u32>,
    kids: Vec<u32>,
}

impl Children {
    fn of(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let (a, b) = (self.start[i] as usize, self.start[i + 1] as usize);
        self.kids[a..b].iter().map(|&k| k as usize)
    }
}

/// Per event: whether it launches GPU work, communication, and whether it
/// does so through runtime calls alone ([`Analysis::launches`]).
struct Launches {
    launches: Vec<bool>,
    comm: Vec<bool>,
    leaf: Vec<bool>,
}

impl Analysis<'_> {
    /// `unified_perf_summary`: `None` when no op was collected.
    pub(crate) fn unified_perf_summary(&self, arch: Option<&crate::GpuArch>) -> Option<Table> {
        let p = self.p;
        let n = p.events.len();
        let cat = |i: usize| ev(p, i).cat;
        let (host, children) = self.host_tree();
        let Launches { launches, comm, leaf } = self.launches();
        let mut named: HashMap<u32, bool> = HashMap::default();
        let mut has_model = vec![false; n];
        for &i in &host {
            if cat(i) == Cat::CpuOp {
                let name = ev(p, i).name;
                has_model[i] = match self.name(i).starts_with("triton_") {
                    true => self.has_model(i),
                    false => *named.entry(name).or_insert_with(|| self.has_model(i)),
                };
            }
        }
        let is_op = |i: usize| cat(i) == Cat::CpuOp;
        // A descendant with its own model that launches GPU work, through
        // CPU ops alone; children after their parents in `host`.
        let mut below = vec![false; n];
        for &i in host.iter().rev() {
            if let Some(q) = self.parent[i]
                && is_op(i)
                && is_op(q)
                && ((has_model[i] && launches[i]) || below[i])
            {
                below[q] = true;
            }
        }
        let links = self.backward_links();
        let forward_of: HashMap<usize, usize> =
            links.iter().flat_map(|(&f, bs)| bs.iter().map(move |&b| (b, f))).collect();
        // Each runtime event's GPU events, for the backward kernels.
        let mut launched: HashMap<usize, Vec<usize>> = HashMap::default();
        for &(rt, g) in &self.links {
            launched.entry(rt).or_default().push(g);
        }
        let subtree = |root: usize, visit: &mut dyn FnMut(usize)| {
            let mut stack = vec![root];
            while let Some(c) = stack.pop() {
                visit(c);
                stack.extend(children.of(c));
            }
        };
        // Whether the op at `e` is the sole backward op of a modelled
        // forward op (§5.1): that op, its backward figures and kernels.
        let sole_backward = |e: usize| -> Option<(usize, Model, Vec<usize>)> {
            let mut cur = self.parent[e];
            let mut wrapper = None;
            for _ in 0..5 {
                let Some(c) = cur else { break };
                if forward_of.contains_key(&c) {
                    wrapper = Some(c);
                    break;
                }
                cur = self.parent[c];
            }
            let w = wrapper?;
            let f = forward_of[&w];
            if !has_model[f] && !self.has_model(f) {
                return None;
            }
            let wanted = self.name(w).split_once(": ").map(|(_, b)| b);
            let mut count = 0;
            let mut stack: Vec<usize> = children.of(w).filter(|&c| is_op(c)).collect();
            while let Some(c) = stack.pop() {
                if launches[c] && wanted.is_none_or(|b| self.name(c) == b) {
                    count += 1;
                }
                stack.extend(children.of(c).filter(|&k| is_op(k)));
            }
            if count != 1 {
                return None;
            }
            modelled(self.name(f)).and_then(|m| m.2)?;
            // The backward events of f's subtree, then their GPU events.
            let mut backward: Vec<usize> = Vec::new();
            subtree(f, &mut |c| backward.extend(links.get(&c).into_iter().flatten()));
            backward.sort_unstable();
            backward.dedup();
            let mut kernels: Vec<usize> = Vec::new();
            for &b in &backward {
                subtree(b, &mut |c| kernels.extend(launched.get(&c).into_iter().flatten()));
            }
            kernels.sort_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0));
            match self.evaluate(f, &kernels, true) {
                Eval::Model(m) => Some((f, m, kernels)),
                _ => None,
            }
        };
        // The traversal (§5.1), from each root CPU op in start order.
        let mut collected: Vec<(usize, Kind)> = Vec::new();
        let mut visited = vec![false; n];
        let mut cpu_above = vec![false; n];
        for &i in &host {
            if let Some(q) = self.parent[i] {
                cpu_above[i] = is_op(q) || cpu_above[q];
            }
        }
        for &root in host.iter().filter(|&&i| is_op(i) && !cpu_above[i]) {
            let mut stack = vec![root];
            while let Some(e) = stack.pop() {
                if std::mem::replace(&mut visited[e], true) || !is_op(e) || !launches[e] {
                    continue;
                }
                let recurse = if has_model[e] {
                    collected.push((e, Kind::Own));
                    false
                } else if let Some((f, m, k)) = sole_backward(e) {
                    if !below[e] {
                        collected.push((e, Kind::Backward(f, m, k)));
                    }
                    below[e]
                } else if below[e] {
                    true
                } else if leaf[e] {
                    if !comm[e] {
                        collected.push((e, Kind::None));
                    }
                    false
                } else {
                    true
                };
                if recurse {
                    let at = stack.len();
                    stack.extend(children.of(e));
                    stack[at..].reverse();
                }
            }
        }
        if collected.is_empty() {
            return None;
        }
        let (mut rows, claimed) = self.collected_rows(collected, arch);
        self.leftover_rows(&claimed, &mut rows);
        Some(self.unified_table(&rows))
    }

    /// The host events (CPU ops, runtime and driver calls) in start order,
    /// a parent before its children, and each one's children.
    fn host_tree(&self) -> (Vec<usize>, Children) {
        let p = self.p;
        let n = p.events.len();
        let mut host: Vec<(i64, usize)> = (0..n)
            .filter(|&i| matches!(ev(p, i).cat, Cat::CpuOp | Cat::Runtime | Cat::Driver))
            .filter(|&i| self.end[i].is_some())
            .map(|i| (total_order(ev(p, i).ts.map(Num::f).unwrap_or(0.0)), i))
            .collect();
        host.sort_unstable();
        let host: Vec<usize> = host.into_iter().map(|(_, i)| i).collect();
        let mut start = vec![0u32; n + 1];
        for &i in &host {
            if let Some(q) = self.parent[i] {
                start[q + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut kids = vec![0u32; start[n] as usize];
        for &i in &host {
            if let Some(q) = self.parent[i] {
                kids[fill[q] as usize] = i as u32;
                fill[q] += 1;
            }
        }
        (host, Children { start, kids })
    }

    /// Which events launch GPU work, launch communication, and launch it
    /// through runtime calls alone (leaves, §5.1), up to 10 levels.
    fn launches(&self) -> Launches {
        let p = self.p;
        let n = p.events.len();
        let cat = |i: usize| ev(p, i).cat;
        let mut launches = vec![false; n];
        let mut comm = vec![false; n];
        let mut leaf = vec![false; n];
        for &(rt, g) in &self.links {
            let is_comm = is_comm_name(self.name(g));
            let mut cur = Some(rt);
            while let Some(c) = cur {
                if launches[c] && (!is_comm || comm[c]) {
                    break;
                }
                launches[c] = true;
                comm[c] |= is_comm;
                cur = self.parent[c];
            }
            if cat(rt) == Cat::Runtime {
                let (mut cur, mut level) = (self.parent[rt], 2);
                while let Some(c) = cur {
                    match cat(c) {
                        Cat::CpuOp => {
                            leaf[c] |= level <= 10;
                            break;
                        }
                        Cat::Runtime => {
                            level += 1;
                            cur = self.parent[c];
                        }
                        _ => break,
                    }
                }
            }
        }
        Launches { launches, comm, leaf }
    }

    /// The rows of the ops collected (§5.2): each one's GPU events, kernel
    /// time and model figures; and which GPU events the rows claimed.
    fn collected_rows(
        &self,
        collected: Vec<(usize, Kind)>,
        arch: Option<&crate::GpuArch>,
    ) -> (Vec<Row>, Vec<bool>) {
        let p = self.p;
        let n = p.events.len();
        let ops: Vec<usize> = collected.iter().map(|(e, _)| *e).collect();
        let gpu_lists = self.subtree_gpu_events(&ops);
        let (_, direct) = self.direct_map();
        let mut rows: Vec<Row> = Vec::with_capacity(collected.len());
        let mut claimed = vec![false; n];
        for ((e, kind), gpu) in collected.into_iter().zip(gpu_lists) {
            for &g in &gpu {
                claimed[g] = true;
            }
            let mut by_start = gpu.clone();
            by_start.sort_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0));
            let modelled_here = !matches!(kind, Kind::None);
            let (model, kernels, category) = match kind {
                Kind::Own => match self.evaluate(e, &by_start, false) {
                    Eval::NotImplemented => continue,
                    Eval::Failed => (None, by_start, None),
                    Eval::Model(m) => (Some(m), by_start, None),
                },
                Kind::Backward(f, m, k) => (Some(m), k, modelled(self.name(f)).and_then(|m| m.2)),
                Kind::None => (None, by_start, None),
            };
            let (time, time_int) = self.busy(&kernels);
            let figures = model.map(|m| {
                let r = rates(&m, time);
                let roof = Roofline::of(arch, &m, time);
                (m, r, roof)
            });
            let category = category.unwrap_or_else(|| self.category(e, direct));
            rows.push(Row {
                name: Name::Event(ev(p, e).name),
                event: e,
                uid: ev(p, e).uid,
                category,
                gpu,
                has_model: modelled_here,
                time,
                time_int,
                figures,
            });
        }
        (rows, claimed)
    }

    /// Leftover kernels, claimed by no row, as synthetic ops added to
    /// `rows`: under their CPU op, else their runtime call; fresh UIDs, the
    /// runtime calls' first.
    fn leftover_rows(&self, claimed: &[bool], rows: &mut Vec<Row>) {
        let p = self.p;
        let (_, direct) = self.direct_map();
        let cat = |i: usize| ev(p, i).cat;
        let is_op = |i: usize| cat(i) == Cat::CpuOp;
        let mut by_runtime: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut runtime_slot: HashMap<usize, usize> = HashMap::default();
        let mut by_op: Vec<(usize, usize)> = Vec::new();
        for (g, &taken) in claimed.iter().enumerate() {
            if taken || !cat(g).is_gpu() || is_comm_name(self.name(g)) {
                continue;
            }
            let Some(rt) = self.gpu_parent[g] else { continue };
            let mut cur = Some(rt);
            let op = loop {
                match cur {
                    Some(c) if is_op(c) => break Some(c),
                    Some(c) => cur = self.parent[c],
                    None => break None,
                }
            };
            match op {
                Some(o) => by_op.push((o, g)),
                None => {
                    let slot = *runtime_slot.entry(rt).or_insert_with(|| {
                        by_runtime.push((rt, Vec::new()));
                        by_runtime.len() - 1
                    });
                    by_runtime[slot].1.push(g);
                }
            }
        }
        // The next UIDs after every element's (flows' and metadata's too).
        let last =
            p.elements().saturating_sub(1).max(p.events.iter().map(|e| e.uid).max().unwrap_or(0));
        let runtime =
            by_runtime.into_iter().flat_map(|(rt, gs)| gs.into_iter().map(move |g| (rt, g)));
        for (uid, (parent, g)) in (last + 1..).zip(runtime.chain(by_op)) {
            let (time, time_int) = self.busy(&[g]);
            let name = Name::Synthetic(ev(p, parent).name, ev(p, g).name);
            let text = format!("{}->", self.name(parent));
            rows.push(Row {
                name,
                event: parent,
                uid,
                category: self.category_of(&text, direct.get(&parent).map(Vec::as_slice)),
                gpu: vec![g],
                has_model: false,
                time,
                time_int,
                figures: None,
            });
        }
    }

    /// The rows grouped and summarized (§5.4).
    fn unified_table(&self, rows: &[Row]) -> Table {
        let p = self.p;
        let labels = unique_args::Labels::new(p);
        type Key = (Name, &'static str, [Option<u32>; 3], [Option<u32>; 4]);
        let key_of = |r: &Row| -> Key {
            let e = ev(p, r.event);
            let s = shape_of(p, r.event).unwrap_or_default();
            (r.name, r.category, labels.of(e.pid, e.tid), [s.dims, s.types, s.strides, s.concrete])
        };
        let name_text = |n: Name| match n {
            Name::Event(id) => p.str(id).to_string(),
            Name::Synthetic(a, b) => format!("{}->{} (Synthetic Op)", p.str(a), p.str(b)),
        };
        let mut order: Vec<Vec<usize>> = Vec::new();
        let mut keys: Vec<Key> = Vec::new();
        let mut group_of: Vec<usize> = Vec::with_capacity(rows.len());
        let mut index: HashMap<Key, usize> = HashMap::default();
        for (i, r) in rows.iter().enumerate() {
            let k = key_of(r);
            let g = *index.entry(k).or_insert_with(|| {
                order.push(Vec::new());
                keys.push(k);
                order.len() - 1
            });
            order[g].push(i);
            group_of.push(g);
        }
        // Each group's place by its key's text (pandas' sorted groups).
        let texts: Vec<Vec<String>> = keys
            .iter()
            .map(|(name, cat, l, a)| {
                let mut t = vec![name_text(*name), cat.to_string()];
                t.extend(l.iter().map(|l| l.map_or_else(|| "Unknown".into(), |l| p.str(l).into())));
                t.extend(a.iter().map(|a| a.map_or_else(|| "None".into(), |a| p.str(a).into())));
                t
            })
            .collect();
        let mut by_key: Vec<usize> = (0..keys.len()).collect();
        by_key.sort_by(|&a, &b| texts[a].cmp(&texts[b]));
        let mut rank = vec![0usize; keys.len()];
        for (r, &g) in by_key.iter().enumerate() {
            rank[g] = r;
        }
        let sums = GroupSum::of(&group_of, &rank);
        let dur_of = |r: &Row| ev(p, r.event).dur.unwrap_or(Num::Int(0));
        let dur_int = rows.iter().all(|r| dur_of(r).is_int());
        let time_int = rows.iter().all(|r| r.time_int);
        let modelled = rows.iter().any(|r| r.figures.is_some());
        let rooflines = rows.iter().any(|r| r.figures.as_ref().is_some_and(|f| f.2.is_some()));
        let number = |v: f64, int: bool| if int { Cell::Int(v as i64) } else { Cell::Float(v) };
        let float = |v: Option<f64>| v.filter(|x| !x.is_nan()).map_or(Cell::Empty, Cell::Float);
        let out: Vec<Ranked> = order
            .iter()
            .enumerate()
            .map(|(g, members)| {
                let group: Vec<&Row> = members.iter().map(|&m| &rows[m]).collect();
                let (name, cat, _, a) = keys[g];
                let first = group[0];
                let mut cells = vec![Cell::Str(name_text(name)), Cell::Str(cat.into())];
                cells.extend(texts[g][2..5].iter().map(|t| Cell::Str(t.clone())));
                cells.extend(
                    a.iter().map(|a| a.map_or(Cell::Empty, |a| Cell::Str(p.str(a).into()))),
                );
                cells.push(Cell::Int(i64::from(first.uid)));
                cells.push(Cell::Int(group.len() as i64));
                let durs: Vec<f64> = group.iter().map(|r| dur_of(r).f()).collect();
                let dur_sum = if dur_int { durs.iter().sum() } else { sums.sum(&durs) };
                cells.push(number(dur_sum, dur_int));
                cells.push(Cell::Float(dur_sum / durs.len() as f64));
                cells.push(float(sample_std(&durs)));
                let figure = |i: usize| -> Vec<f64> {
                    group.iter().map(|r| r.figures.as_ref().map_or(f64::NAN, |f| f.1[i])).collect()
                };
                let first_of = |i: usize| figure(i).into_iter().find(|x| !x.is_nan());
                let spec = group.iter().find_map(|r| r.figures.as_ref().map(|f| f.0.spec.clone()));
                let roofs: Vec<Option<Roofline>> =
                    group.iter().map(|r| r.figures.as_ref().and_then(|f| f.2)).collect();
                let roof = roofs.iter().find_map(|r| *r);
                if modelled {
                    cells.extend([float(first_of(0)), float(first_of(1)), float(first_of(2))]);
                    cells.push(spec.map_or(Cell::Empty, Cell::Str));
                }
                if rooflines {
                    cells.push(roof.map_or(Cell::Empty, |r| {
                        Cell::Str(if r.compute { "COMPUTE_BOUND" } else { "MEMORY_BOUND" }.into())
                    }));
                }
                let [tb_mean, tb_median, tb_std, tb_min, tb_max] = sums.stats(figure(3));
                let [tf_mean, tf_median, tf_std, tf_min, tf_max] = sums.stats(figure(4));
                if modelled {
                    cells.extend([tb_mean, tb_std, tf_mean, tf_std]);
                }
                let times: Vec<f64> = group.iter().map(|r| r.time).collect();
                let sum = if time_int { times.iter().sum() } else { sums.sum(&times) };
                cells.push(Cell::Float(sum / times.len() as f64));
                cells.push(float(sample_std(&times)));
                cells.push(number(sum, time_int));
                cells.push(Cell::Float(median(&durs)));
                let (lo, hi) = range(&durs);
                cells.extend([number(lo, dur_int), number(hi, dur_int)]);
                if modelled {
                    cells.extend([tb_median, tb_min, tb_max, tf_median, tf_min, tf_max]);
                }
                if rooflines {
                    cells.push(float(roof.map(|r| r.time)));
                    let pct: Vec<f64> =
                        roofs.iter().map(|r| r.map_or(f64::NAN, |r| r.pct)).collect();
                    cells.extend(sums.stats(pct));
                }
                let (lo, hi) = range(&times);
                cells.extend([
                    Cell::Float(median(&times)),
                    number(lo, time_int),
                    number(hi, time_int),
                ]);
                let lists: Vec<Vec<unique_args::Detail>> = group
                    .iter()
                    .map(|r| r.gpu.iter().map(|&k| unique_args::Detail::of(p, k)).collect())
                    .collect();
                let lists: Vec<&[unique_args::Detail]> = lists.iter().map(Vec::as_slice).collect();
                let (summary, trunc) = unique_args::kernel_details(p, &lists);
                cells.push(summary.map_or(Cell::Empty, Cell::Str));
                cells.push(trunc.map_or(Cell::Empty, Cell::Str));
                let params = group.iter().find_map(|r| {
                    r.figures
                        .as_ref()
                        .filter(|f| !f.0.params.is_empty())
                        .map(|f| params_dict(&f.0.params))
                });
                cells.push(params.map_or(Cell::Empty, Cell::Str));
                cells.push(Cell::Str(if first.has_model { "True" } else { "False" }.into()));
                Ranked { cells, sum, uid: first.uid }
            })
            .collect();
        let rows = Ranked::with_percentages(out);
        Table::new(&unified_header(modelled, rooflines), rows)
    }
}

/// `unified_perf_summary`'s columns: the key columns, the counts and
/// durations, the model's figures (`modelled`) and the roofline's
/// (`rooflines`) where any row has them, the kernel times and details.
fn unified_header(modelled: bool, rooflines: bool) -> Vec<&'static str> {
    let mut header: Vec<&str> = unique_args::KEY_COLUMNS.to_vec();
    header.extend([
        "ex_UID",
        "operation_count",
        "total_duration_us",
        "mean_duration_us",
        "std_duration_us",
    ]);
    if modelled {
        header.extend(["GFLOPS", "Data Moved (MB)", "FLOPS/Byte", "Compute Spec"]);
    }
    if rooflines {
        header.push("Roofline Bound");
    }
    if modelled {
        header.extend(["TB/s_mean", "TB/s_std", "TFLOPS/s_mean", "TFLOPS/s_std"]);
    }
    header.extend([
        "Kernel Time (µs)_mean",
        "Kernel Time (µs)_std",
        "Kernel Time (µs)_sum",
        "duration_us_median",
        "duration_us_min",
        "duration_us_max",
    ]);
    if modelled {
        header.extend([
            "TB/s_median",
            "TB/s_min",
            "TB/s_max",
            "TFLOPS/s_median",
            "TFLOPS/s_min",
            "TFLOPS/s_max",
        ]);
    }
    if rooflines {
        header.extend([
            "Roofline Time (µs)_first",
            "Pct Roofline_mean",
            "Pct Roofline_median",
            "Pct Roofline_std",
            "Pct Roofline_min",
            "Pct Roofline_max",
        ]);
    }
    header.extend([
        "Kernel Time (µs)_median",
        "Kernel Time (µs)_min",
        "Kernel Time (µs)_max",
        "kernel_details_summary",
        "trunc_kernel_details",
        "perf_params",
        "has_perf_model",
        "Percentage (%)",
        "Cumulative Percentage (%)",
    ]);
    header
}

/// The least and the greatest of `values`.
fn range(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}
