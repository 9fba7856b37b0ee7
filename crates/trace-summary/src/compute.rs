//! The host tree, GPU linkage and the three tables, as TraceLens defines them
//! (reference/tracelens-metrics.md, sections 3-8).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use crate::{
    parse::{Cat, Event, Key, Num, Parsed},
    registry::REGISTRY,
};

/// A cell of an output table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text.
    Str(String),
    /// An integer column value.
    Int(i64),
    /// A float column value (printed as Python's repr).
    Float(f64),
    /// Missing or NaN.
    Empty,
}

/// A table: header and rows, as TraceLens writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Cell>>,
}

impl Cell {
    /// The cell as a number: integers and floats (NaN included) as they
    /// are, text parsed as a float (a table read back from a CSV); `None`
    /// for an empty cell or text that is no number.
    pub fn number(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            Cell::Str(s) => s.parse().ok(),
            Cell::Empty => None,
        }
    }

    /// The cell as text, numbers as the CSV writes them.
    pub fn text(&self) -> String {
        match self {
            Cell::Str(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Float(f) => crate::py_float(*f),
            Cell::Empty => String::new(),
        }
    }
}

impl Table {
    /// A table of `rows` under the column names `header`.
    pub fn new(header: &[&str], rows: Vec<Vec<Cell>>) -> Table {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows }
    }

    /// The index of the column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Compute,
    Comm,
    Memcpy,
}

fn strip_kd(name: &str) -> &str {
    name.strip_suffix(".kd").unwrap_or(name)
}

fn classify(cat: Cat, name: &str) -> Class {
    if cat == Cat::Memcpy {
        return Class::Memcpy;
    }
    if cat == Cat::Kernel {
        let n = strip_kd(name);
        if matches!(
            n,
            "MEMORY_COPY_HOST_TO_DEVICE"
                | "MEMORY_COPY_DEVICE_TO_HOST"
                | "MEMORY_COPY_DEVICE_TO_DEVICE"
        ) {
            return Class::Memcpy;
        }
        if let Some(rest) = n.strip_prefix("__amd_rocclr_copyBuffer") {
            let rest = rest.strip_prefix("Rect").unwrap_or(rest);
            let rest = rest.strip_prefix("Aligned").unwrap_or(rest);
            if rest.is_empty() {
                return Class::Memcpy;
            }
        }
        if let Some(rest) = n.strip_prefix("__amd_rocclr_fillBuffer")
            && (rest.is_empty() || rest == "Aligned")
        {
            return Class::Compute;
        }
    }
    if is_comm_name(name) {
        return Class::Comm;
    }
    Class::Compute
}

pub(crate) fn is_comm_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("nccl") || lower.contains("rccl") || lower.contains("cross_device_reduce")
}

/// Union of intervals (sorted stably by start; touching intervals merge).
pub(crate) fn union(mut iv: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(iv.len());
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => {
                if e > last.1 {
                    last.1 = e;
                }
            }
            _ => out.push((s, e)),
        }
    }
    out
}

/// Plain left-to-right sum of lengths (Python's built-in `sum`).
pub(crate) fn length(u: &[(f64, f64)]) -> f64 {
    u.iter().fold(0.0, |acc, (s, e)| acc + (e - s))
}

/// `a \ b` for merged interval sets.
fn difference(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            if cur >= e {
                break;
            }
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

/// NumPy's pairwise sum (`pairwise_sum` in its reduction loops).
pub(crate) fn pairwise(v: &[f64]) -> f64 {
    let n = v.len();
    if n < 8 {
        let mut res = 0.0;
        for x in v {
            res += x;
        }
        return res;
    }
    if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&v[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for k in 0..8 {
                r[k] += v[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += v[i];
            i += 1;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    pairwise(&v[..n2]) + pairwise(&v[n2..])
}

/// pandas' sample standard deviation (ddof 1), by Welford's update in
/// order, so the last digits agree; `None` for fewer than two values.
pub(crate) fn sample_std(values: &[f64]) -> Option<f64> {
    let (mut n, mut mean, mut m2) = (0.0f64, 0.0f64, 0.0f64);
    for &x in values {
        n += 1.0;
        let delta = x - mean;
        mean += delta / n;
        m2 += delta * (x - mean);
    }
    (n >= 2.0).then(|| (m2 / (n - 1.0)).sqrt())
}

/// The median: the middle value, or the mean of the middle two.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

/// pandas' Kahan-compensated group sum.
/// A summarized group's row with its sort key: the most time first, then
/// the smallest UID (the order of `ops_unique_args` and the perf sheets).
pub(crate) struct Ranked {
    pub(crate) cells: Vec<Cell>,
    pub(crate) sum: f64,
    pub(crate) uid: u32,
}

impl Ranked {
    /// Sort by the sum, descending, then the UID: a total order.
    pub(crate) fn sort(rows: &mut [Ranked]) {
        rows.sort_by(|a, b| b.sum.total_cmp(&a.sum).then(a.uid.cmp(&b.uid)));
    }

    /// `rows` sorted ([`Ranked::sort`]), each with its `Percentage (%)` of
    /// all the sums (NumPy's pairwise total) and the running `Cumulative
    /// Percentage (%)` after its cells.
    pub(crate) fn with_percentages(mut rows: Vec<Ranked>) -> Vec<Vec<Cell>> {
        Ranked::sort(&mut rows);
        let total = pairwise(&rows.iter().map(|o| o.sum).collect::<Vec<_>>());
        let mut cumulative = 0.0;
        let number = |v: f64| if v.is_nan() { Cell::Empty } else { Cell::Float(v) };
        rows.into_iter()
            .map(|mut o| {
                let pct = o.sum / total * 100.0;
                cumulative += pct;
                o.cells.push(number(pct));
                o.cells.push(number(cumulative));
                o.cells
            })
            .collect()
    }
}

/// pandas' sum of a group's float values: the first plus NumPy's pairwise
/// sum of the rest, uncompensated, when the rows come grouped contiguously
/// in sorted key order (`sorted`; METRICS §8), else Kahan's compensated sum.
#[derive(Clone, Copy)]
pub(crate) struct GroupSum {
    pub(crate) sorted: bool,
}

impl GroupSum {
    /// Whether rows whose groups are `group_of` (in row order) come
    /// grouped in the order of `rank` (each group's place by its key).
    pub(crate) fn of(group_of: &[usize], rank: &[usize]) -> GroupSum {
        GroupSum { sorted: group_of.windows(2).all(|w| rank[w[0]] <= rank[w[1]]) }
    }

    pub(crate) fn sum(self, v: &[f64]) -> f64 {
        match (self.sorted, v.split_first()) {
            (true, Some((first, rest))) => first + pairwise(rest),
            _ => kahan(v.iter().copied()),
        }
    }

    /// mean, median, std, min, max of the values that are numbers (NaN
    /// skipped); empty cells without any.
    pub(crate) fn stats(self, values: Vec<f64>) -> [Cell; 5] {
        let v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return std::array::from_fn(|_| Cell::Empty);
        }
        let mean = self.sum(&v) / v.len() as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        [
            Cell::Float(mean),
            Cell::Float(median(&v)),
            sample_std(&v).map_or(Cell::Empty, Cell::Float),
            Cell::Float(min),
            Cell::Float(max),
        ]
    }
}

pub(crate) fn kahan(v: impl IntoIterator<Item = f64>) -> f64 {
    let mut sum = 0.0f64;
    let mut comp = 0.0f64;
    for x in v {
        let y = x - comp;
        let t = sum + y;
        comp = t - sum - y;
        sum = t;
    }
    sum
}

mod modelled;
mod perf_model;
mod short;
mod unified;
mod unique_args;

pub use perf_model::PERF_SHEETS;
pub use short::ShortKernels;

/// The analysed trace.
pub(crate) struct Analysis<'p> {
    p: &'p Parsed,
    end: Vec<Option<f64>>,
    /// Host-tree parent of each event.
    parent: Vec<Option<usize>>,
    /// Runtime parent of a linked GPU event.
    gpu_parent: Vec<Option<usize>>,
    /// `(runtime event, GPU event)` links, in the order they were made.
    links: Vec<(usize, usize)>,
    /// Count unlinked GPU events in the timeline too (TraceLens'
    /// `--include_unlinked_kernels`).
    include_unlinked: bool,
    /// See [`Analysis::direct_map`].
    direct: std::cell::OnceCell<DirectMap>,
    /// See [`Analysis::modelled`].
    modelled: std::cell::OnceCell<perf_model::Modelled>,
    /// See [`Analysis::annotation_of`].
    annotations: std::cell::OnceCell<perf_model::Annotations>,
    /// See [`Analysis::conv_forward`].
    conv_forwards: std::cell::OnceCell<HashMap<i64, Vec<usize>>>,
}

/// Launchers in order, and each launcher's direct GPU events.
type DirectMap = (Vec<usize>, HashMap<usize, Vec<usize>>);

fn ev(p: &Parsed, i: usize) -> &Event {
    &p.events[i]
}

/// An integer that orders like `f64::total_cmp`.
fn total_order(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

impl<'p> Analysis<'p> {
    pub(crate) fn new(p: &'p Parsed) -> Analysis<'p> {
        let n = p.events.len();
        let end: Vec<Option<f64>> = p.events.iter().map(|e| Some(e.ts?.f() + e.dur?.f())).collect();
        // 4.1 linking key
        let use_corr = p
            .events
            .iter()
            .find(|e| e.cat.is_runtime() && p.str(e.name).to_ascii_lowercase().contains("launch"))
            .is_some_and(|e| e.correlation.is_some());
        let key_of = |e: &Event| if use_corr { e.correlation } else { e.external_id };
        let is_flow = |e: &Event| e.ph == b's' || e.ph == b'f';

        // 4.2 indices. TraceLens maps (pid, tid, key) to the last event with
        // it and looks up the (pid, tid) of a key's flow end, for flows with
        // both ends: keep only the flow ends and events that lookup can find.
        let mut flow_s: rustc_hash::FxHashSet<Key> = Default::default();
        for f in &p.flows {
            if f.cat == Cat::Ac2g && f.ph == b's' {
                flow_s.extend(f.id);
            }
        }
        let mut flow_f: HashMap<Key, (Option<Key>, Option<Key>)> = HashMap::default();
        for f in &p.flows {
            if f.cat == Cat::Ac2g
                && f.ph == b'f'
                && let Some(id) = f.id
                && flow_s.contains(&id)
            {
                flow_f.insert(id, (f.pid, f.tid));
            }
        }
        let interned = |s: &str| p.lookup.get(s).copied();
        let graph_ids = [interned("cudaGraphLaunch"), interned("hipGraphLaunch")];
        let graph_launch = |name: u32| graph_ids.contains(&Some(name));
        let any_graph = p.events.iter().any(|e| e.cat.is_runtime() && graph_launch(e.name));
        // The threads those flows end on (GPU streams): few, a cheap first test.
        let ends: rustc_hash::FxHashSet<(Option<Key>, Option<Key>)> =
            flow_f.values().copied().collect();
        let mut flow_target: HashMap<Key, usize> = HashMap::default();
        let mut gpu_by_key: HashMap<Key, Vec<usize>> = HashMap::default();
        for (i, e) in p.events.iter().enumerate() {
            if is_flow(e) {
                continue;
            }
            if let Some(k) = key_of(e) {
                if ends.contains(&(e.pid, e.tid))
                    && flow_f.get(&k).is_some_and(|&(fp, ft)| fp == e.pid && ft == e.tid)
                {
                    flow_target.insert(k, i);
                }
                if any_graph && e.cat.is_gpu() {
                    gpu_by_key.entry(k).or_default().push(i);
                }
            }
        }

        // 4.3 host tree, by start time (ties in file order)
        let mut host: Vec<(i64, usize)> = p
            .events
            .iter()
            .enumerate()
            .filter(|&(i, e)| {
                matches!(e.cat, Cat::CpuOp | Cat::Runtime | Cat::Driver) && end[i].is_some()
            })
            .map(|(i, e)| (total_order(e.ts.map(Num::f).unwrap_or(0.0)), i))
            .collect();
        host.sort_unstable();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut stacks: HashMap<(Option<Key>, Option<Key>), Vec<usize>> = HashMap::default();
        for &(_, i) in &host {
            let e = ev(p, i);
            let ts = e.ts.map(Num::f).unwrap_or(0.0);
            let my_end = end[i].unwrap_or(ts);
            let stack = stacks.entry((e.pid, e.tid)).or_default();
            while let Some(&top) = stack.last() {
                if end[top].unwrap_or(f64::NEG_INFINITY) <= ts {
                    stack.pop();
                } else {
                    break;
                }
            }
            if let Some(&top) = stack.last() {
                let top_end = end[top].unwrap_or(f64::NEG_INFINITY);
                if my_end > top_end {
                    if top_end - ts < 1.0 && stack.len() >= 2 {
                        stack.pop();
                    } else {
                        continue;
                    }
                }
            }
            parent[i] = stack.last().copied();
            stack.push(i);
        }

        // 4.4 GPU linkage
        let mut gpu_parent: Vec<Option<usize>> = vec![None; n];
        let mut links: Vec<(usize, usize)> = Vec::new();
        for (i, e) in p.events.iter().enumerate() {
            if !e.cat.is_runtime() || is_flow(e) {
                continue;
            }
            let Some(k) = key_of(e) else { continue };
            let mut link = |t: usize| {
                if ev(p, t).cat.is_gpu() {
                    gpu_parent[t] = Some(i);
                    links.push((i, t));
                }
            };
            if graph_launch(e.name) {
                gpu_by_key.get(&k).into_iter().flatten().for_each(|&t| link(t));
            } else if let Some(&t) = flow_target.get(&k) {
                link(t);
            }
        }
        Analysis {
            p,
            end,
            parent,
            gpu_parent,
            links,
            include_unlinked: false,
            direct: Default::default(),
            modelled: Default::default(),
            annotations: Default::default(),
            conv_forwards: Default::default(),
        }
    }

    /// Count every GPU event in the timeline, linked or not.
    pub(crate) fn include_unlinked(mut self) -> Self {
        self.include_unlinked = true;
        self
    }

    fn name(&self, i: usize) -> &str {
        self.p.str(ev(self.p, i).name)
    }

    fn interval(&self, i: usize) -> (f64, f64) {
        let e = ev(self.p, i);
        let s = e.ts.map(Num::f).unwrap_or(0.0);
        (s, self.end[i].unwrap_or(s))
    }

    /// The busy time of GPU events `gpu` (the union of their intervals,
    /// µs; the reference's §2.2), and whether it is an integer (every
    /// `ts` and `dur` is, or there are none).
    fn busy(&self, gpu: &[usize]) -> (f64, bool) {
        let time = length(&union(gpu.iter().map(|&g| self.interval(g)).collect()));
        let int = gpu.iter().all(|&g| {
            let e = ev(self.p, g);
            e.ts.is_some_and(Num::is_int) && e.dur.is_some_and(Num::is_int)
        });
        (time, int)
    }

    pub(crate) fn linked_gpu(&self) -> Vec<usize> {
        (0..self.p.events.len())
            .filter(|&i| {
                ev(self.p, i).cat.is_gpu()
                    && (self.include_unlinked || self.gpu_parent[i].is_some())
            })
            .collect()
    }

    pub(crate) fn has_cpu_ops(&self) -> bool {
        self.p.events.iter().any(|e| e.cat == Cat::CpuOp)
    }

    /// 4.6: the launcher of a linked GPU event.
    fn launcher(&self, gpu: usize) -> Option<usize> {
        let rt = self.gpu_parent[gpu]?;
        let mut cur = self.parent[rt];
        while let Some(c) = cur {
            let e = ev(self.p, c);
            match e.cat {
                Cat::CpuOp if self.name(c) == "execute" => {}
                Cat::CpuOp => return Some(c),
                Cat::PythonFunction => {}
                _ => break,
            }
            cur = self.parent[c];
        }
        Some(rt)
    }

    /// 4.5: the parent cpu_op of a kernel (starting at its launcher, inclusive).
    pub(crate) fn parent_cpu_op(&self, gpu: usize) -> Option<usize> {
        let mut cur = self.gpu_parent[gpu];
        while let Some(c) = cur {
            if ev(self.p, c).cat == Cat::CpuOp {
                return Some(c);
            }
            cur = self.parent[c];
        }
        None
    }

    /// launcher -> its direct (non-communication, linked) GPU events, in file
    /// order, with the launchers in order of their first; computed once for
    /// both tables that need it.
    fn direct_map(&self) -> &DirectMap {
        self.direct.get_or_init(|| self.compute_direct_map())
    }

    fn compute_direct_map(&self) -> DirectMap {
        let mut map: HashMap<usize, Vec<usize>> = HashMap::default();
        let mut order: Vec<usize> = Vec::new();
        for g in self.linked_gpu().into_iter().filter(|&g| self.gpu_parent[g].is_some()) {
            if is_comm_name(self.name(g)) {
                continue;
            }
            if let Some(l) = self.launcher(g) {
                let entry = map.entry(l).or_default();
                if entry.is_empty() {
                    order.push(l);
                }
                entry.push(g);
            }
        }
        (order, map)
    }

    fn category(&self, op: usize, direct: &HashMap<usize, Vec<usize>>) -> &'static str {
        self.category_of(self.name(op), direct.get(&op).map(Vec::as_slice))
    }

    /// The op category of an op named `name` whose `kernel_details` are
    /// `kernels` (METRICS §6.1): the registry's, a prefix's, else its first
    /// kernel's kind.
    fn category_of(&self, name: &str, kernels: Option<&[usize]>) -> &'static str {
        if let Ok(i) = REGISTRY.binary_search_by(|(n, _)| n.cmp(&name)) {
            return REGISTRY[i].1;
        }
        if name.starts_with("triton") {
            return "triton";
        }
        if name.starts_with("record_param_comms") {
            return "record_param_comms";
        }
        if let Some(list) = kernels {
            let first = list
                .iter()
                .copied()
                .min_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0).then(a.cmp(&b)));
            if let Some(f) = first {
                let kname = self.name(f);
                if kname.starts_with("void at::native") {
                    for c in ["elementwise", "reduce", "multi_tensor_apply"] {
                        if kname.contains(c) {
                            return c;
                        }
                    }
                }
            }
        }
        "other"
    }

    /// `gpu_timeline` (None when there are no linked GPU events) and total µs.
    pub(crate) fn gpu_timeline(&self) -> Option<(Table, f64)> {
        let linked = self.linked_gpu();
        if linked.is_empty() {
            return None;
        }
        let (mut c, mut m, mut y, mut a) = (vec![], vec![], vec![], vec![]);
        for &g in &linked {
            let iv = self.interval(g);
            a.push(iv);
            match classify(ev(self.p, g).cat, self.name(g)) {
                Class::Compute => c.push(iv),
                Class::Comm => m.push(iv),
                Class::Memcpy => y.push(iv),
            }
        }
        let (c, m, y, a) = (union(c), union(m), union(y), union(a));
        let comp = length(&c);
        let exposed_comm = length(&difference(&m, &c));
        let exposed_memcpy = length(&difference(&difference(&y, &c), &m));
        let busy = length(&a);
        let total = a.last().map(|l| l.1).unwrap_or(0.0) - a.first().map(|f| f.0).unwrap_or(0.0);
        let idle = total - busy;
        let rows = [
            ("computation_time", comp),
            ("exposed_comm_time", exposed_comm),
            ("exposed_memcpy_time", exposed_memcpy),
            ("busy_time", busy),
            ("idle_time", idle),
            ("total_time", total),
            ("total_comm_time", length(&m)),
            ("total_memcpy_time", length(&y)),
        ];
        let table = Table {
            header: vec!["type".into(), "time ms".into(), "percent".into()],
            rows: rows
                .iter()
                .map(|(name, us)| {
                    let pct = us / total * 100.0;
                    vec![
                        Cell::Str(name.to_string()),
                        Cell::Float(us / 1000.0),
                        if pct.is_nan() { Cell::Empty } else { Cell::Float(pct) },
                    ]
                })
                .collect(),
        };
        Some((table, total))
    }

    /// `kernel_summary`, or None when TraceLens would omit it.
    pub(crate) fn kernel_summary(&self, total_us: f64) -> Option<Table> {
        let (_, direct) = self.direct_map();
        let kernels: Vec<usize> =
            (0..self.p.events.len()).filter(|&i| ev(self.p, i).cat == Cat::Kernel).collect();
        if kernels.is_empty() || kernels.iter().any(|&k| !ev(self.p, k).has_args) {
            return None;
        }
        struct Row {
            cat: Option<&'static str>,
            /// Name of the parent cpu_op, else of the launcher.
            op: Option<u32>,
            name: u32,
            stream: Option<Key>,
            dur: Num,
        }
        let mut rows = Vec::with_capacity(kernels.len());
        let mut any_op = false;
        for &k in &kernels {
            let e = ev(self.p, k);
            let launcher = self.gpu_parent[k];
            let op = self.parent_cpu_op(k);
            any_op |= op.is_some();
            let cat = match op {
                Some(o) => Some(self.category(o, direct)),
                None => launcher.map(|l| {
                    let n = self.name(l).to_ascii_lowercase();
                    if n.contains("cudagraph") || n.contains("graphlaunch") {
                        "graph"
                    } else {
                        "runtime"
                    }
                }),
            };
            rows.push(Row {
                cat,
                op: op.or(launcher).map(|o| ev(self.p, o).name),
                name: e.name,
                stream: e.stream,
                dur: e.dur.unwrap_or(Num::Int(0)),
            });
        }
        if !any_op {
            for r in &mut rows {
                r.op = None;
            }
        }
        let all_int = rows.iter().all(|r| r.dur.is_int());
        let stream_missing = rows.iter().any(|r| r.stream.is_none());
        let has = |f: &dyn Fn(&Row) -> bool| rows.iter().any(f);
        let has_cat = has(&|r| r.cat.is_some());
        let has_op = has(&|r| r.op.is_some());
        let has_stream = has(&|r| r.stream.is_some());

        // Group by (cat, op, name, stream) in sorted key order (missing last).
        type IdKey = (Option<&'static str>, Option<u32>, u32, Option<StreamKey>);
        let mut groups: Vec<(IdKey, Vec<usize>)> = Vec::new();
        let mut index: HashMap<IdKey, usize> = HashMap::default();
        for (i, r) in rows.iter().enumerate() {
            let key: IdKey = (
                if has_cat { r.cat } else { None },
                if has_op { r.op } else { None },
                r.name,
                if has_stream { r.stream.map(StreamKey::of) } else { None },
            );
            let g = *index.entry(key).or_insert_with(|| {
                groups.push((key, vec![]));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
        let p = self.p;
        let text = |k: &IdKey| (k.0, k.1.map(|o| p.str(o)), p.str(k.2), k.3.map(|s| s.text(p)));
        groups.sort_by(|a, b| cmp_key(&text(&a.0), &text(&b.0)));
        // pandas' fast path when rows already come grouped in sorted order
        let mut rank = vec![0usize; rows.len()];
        for (gi, (_, members)) in groups.iter().enumerate() {
            for &m in members {
                rank[m] = gi;
            }
        }
        let sorted_input = rank.windows(2).all(|w| w[0] <= w[1]);
        let durs: Vec<f64> = rows.iter().map(|r| r.dur.f()).collect();
        let all_sum = pairwise(&durs);
        let total_ms = total_us / 1000.0;
        struct Out {
            key: IdKey,
            sum: f64,
            count: usize,
            min: f64,
            max: f64,
        }
        let mut out: Vec<Out> = groups
            .into_iter()
            .map(|(key, members)| {
                let vals: Vec<f64> = members.iter().map(|&m| durs[m]).collect();
                let sum = if sorted_input {
                    vals[0] + pairwise(&vals[1..])
                } else {
                    kahan(vals.iter().copied())
                };
                let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
                let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Out { key, sum, count: members.len(), min, max }
            })
            .collect();
        out.sort_by(|a, b| b.sum.total_cmp(&a.sum));
        let mut header = Vec::new();
        if has_cat {
            header.push("Parent op category".to_string());
        }
        if has_op {
            header.push("Parent cpu_op".to_string());
        }
        header.push("Kernel name".to_string());
        if has_stream {
            header.push("Kernel stream".to_string());
        }
        for c in ["sum", "count", "mean", "min", "max"] {
            header.push(format!("Kernel duration (µs)_{c}"));
        }
        header.push("Percent of kernels time (%)".into());
        header.push("Percent of total time (%)".into());
        let num = |v: f64| if all_int { Cell::Int(v as i64) } else { Cell::Float(v) };
        let table_rows = out
            .into_iter()
            .map(|o| {
                let mut row = Vec::new();
                if has_cat {
                    row.push(o.key.0.map_or(Cell::Empty, |c| Cell::Str(c.to_string())));
                }
                if has_op {
                    row.push(o.key.1.map_or(Cell::Empty, |op| Cell::Str(p.str(op).to_string())));
                }
                row.push(Cell::Str(p.str(o.key.2).to_string()));
                if has_stream {
                    row.push(match o.key.3 {
                        Some(StreamKey::Num(v)) if !stream_missing && v.fract() == 0.0 => {
                            Cell::Int(v as i64)
                        }
                        Some(StreamKey::Num(v)) => Cell::Float(v),
                        Some(StreamKey::Str(s)) => Cell::Str(p.str(s).to_string()),
                        None => Cell::Empty,
                    });
                }
                row.push(num(o.sum));
                row.push(Cell::Int(o.count as i64));
                row.push(Cell::Float(o.sum / o.count as f64));
                row.push(num(o.min));
                row.push(num(o.max));
                let pk = o.sum / all_sum * 100.0;
                row.push(if pk.is_nan() { Cell::Empty } else { Cell::Float(pk) });
                let pt = o.sum / (total_ms * 1000.0) * 100.0;
                row.push(if pt.is_nan() { Cell::Empty } else { Cell::Float(pt) });
                row
            })
            .collect();
        Some(Table { header, rows: table_rows })
    }

    /// `ops_summary`, `ops_summary_by_category` and `ops_unique_args`, for
    /// traces with cpu_op events.
    pub(crate) fn ops_summary(&self) -> Option<(Table, Table, Table)> {
        if !self.has_cpu_ops() {
            return None;
        }
        let (order, direct) = self.direct_map();
        if order.is_empty() {
            return None;
        }
        let mut launchers = order.clone();
        let first_gpu: HashMap<usize, usize> = direct
            .iter()
            .map(|(&l, v)| (l, v.iter().copied().min().unwrap_or(usize::MAX)))
            .collect();
        launchers.sort_by(|&a, &b| {
            let (ta, tb) = (self.interval(a).0, self.interval(b).0);
            ta.total_cmp(&tb).then(first_gpu[&a].cmp(&first_gpu[&b]))
        });
        // GPU events below each launcher: a runtime launcher's own links; a
        // cpu_op's, those of every runtime event under it (in link order).
        let mut slot: Vec<u32> = vec![u32::MAX; self.p.events.len()];
        for (li, &l) in launchers.iter().enumerate() {
            slot[l] = li as u32;
        }
        let mut pairs: Vec<(u32, usize)> = Vec::new();
        for &(rt, t) in &self.links {
            if slot[rt] != u32::MAX {
                pairs.push((slot[rt], t));
            }
            let mut cur = self.parent[rt];
            while let Some(c) = cur {
                if slot[c] != u32::MAX && !ev(self.p, c).cat.is_runtime() {
                    pairs.push((slot[c], t));
                }
                cur = self.parent[c];
            }
        }
        pairs.sort_by_key(|&(li, _)| li); // stable: link order within a launcher
        let mut sub_start = vec![0usize; launchers.len() + 1];
        for &(li, _) in &pairs {
            sub_start[li as usize + 1] += 1;
        }
        for li in 0..launchers.len() {
            sub_start[li + 1] += sub_start[li];
        }
        struct L<'a> {
            name: u32,
            direct: f64,
            subtree: f64,
            direct_int: bool,
            subtree_int: bool,
            cat: &'a str,
        }
        let is_int_iv = |i: usize| {
            let e = ev(self.p, i);
            e.ts.is_some_and(Num::is_int) && e.dur.is_some_and(Num::is_int)
        };
        let ls: Vec<L<'_>> = launchers
            .iter()
            .enumerate()
            .map(|(li, &l)| {
                let d = &direct[&l];
                let direct_len = length(&union(d.iter().map(|&g| self.interval(g)).collect()));
                let sub = &pairs[sub_start[li]..sub_start[li + 1]];
                let subtree_len =
                    length(&union(sub.iter().map(|&(_, g)| self.interval(g)).collect()));
                L {
                    name: ev(self.p, l).name,
                    direct: direct_len,
                    subtree: subtree_len,
                    direct_int: d.iter().all(|&g| is_int_iv(g)),
                    subtree_int: sub.iter().all(|&(_, g)| is_int_iv(g)),
                    cat: self.category(l, direct),
                }
            })
            .collect();
        let by_category = by_category(ls.iter().map(|l| (l.cat, l.direct)));
        let direct_int = ls.iter().all(|l| l.direct_int);
        let subtree_int = ls.iter().all(|l| l.subtree_int);
        let unique_args: Vec<unique_args::Launcher<'_>> = launchers
            .iter()
            .zip(&ls)
            .map(|(&l, row)| unique_args::Launcher {
                event: l,
                direct: row.direct,
                subtree: row.subtree,
                cat: row.cat,
                kernels: &direct[&l],
            })
            .collect();
        let unique_args = self.unique_args(&unique_args, (direct_int, subtree_int));
        // group by name, name order; sums in launcher order
        let mut group_of: HashMap<u32, usize> = HashMap::default();
        let mut members: Vec<Vec<&L<'_>>> = Vec::new();
        for l in &ls {
            let g = *group_of.entry(l.name).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            members[g].push(l);
        }
        struct G<'a> {
            name: &'a str,
            direct: f64,
            subtree: f64,
            count: usize,
            cats: BTreeSet<&'a str>,
        }
        let mut groups: Vec<G<'_>> = members
            .iter()
            .map(|m| G {
                name: self.p.str(m[0].name),
                direct: kahan(m.iter().map(|l| l.direct)),
                subtree: kahan(m.iter().map(|l| l.subtree)),
                count: m.len(),
                cats: m.iter().map(|l| l.cat).collect(),
            })
            .collect();
        groups.sort_by(|a, b| a.name.cmp(b.name));
        groups.sort_by(|a, b| b.direct.total_cmp(&a.direct));
        let direct_ms: Vec<f64> = groups.iter().map(|g| g.direct / 1000.0).collect();
        let total_ms = pairwise(&direct_ms);
        let mut cumulative = 0.0;
        let rows = groups
            .iter()
            .zip(&direct_ms)
            .map(|(g, dms)| {
                let pct = dms / total_ms * 100.0;
                cumulative += pct;
                let cats = g.cats.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ");
                vec![
                    Cell::Str(g.name.to_string()),
                    if direct_int { Cell::Int(g.direct as i64) } else { Cell::Float(g.direct) },
                    if subtree_int { Cell::Int(g.subtree as i64) } else { Cell::Float(g.subtree) },
                    Cell::Float(*dms),
                    Cell::Float(g.subtree / 1000.0),
                    Cell::Int(g.count as i64),
                    Cell::Str(format!("[{cats}]")),
                    if pct.is_nan() { Cell::Empty } else { Cell::Float(pct) },
                    if cumulative.is_nan() { Cell::Empty } else { Cell::Float(cumulative) },
                ]
            })
            .collect();
        let header = [
            "name",
            "total_direct_kernel_time_sum",
            "total_subtree_kernel_time_sum",
            "total_direct_kernel_time_ms",
            "total_subtree_kernel_time_ms",
            "Count",
            "Categories",
            "Percentage (%)",
            "Cumulative Percentage (%)",
        ];
        Some((Table::new(&header, rows), by_category, unique_args))
    }
}

/// `ops_summary_by_category`: the launchers (category, direct kernel µs,
/// in launcher order) added up by category, the most time first
/// (reference/tracelens-perf-model.md §3).
fn by_category<'a>(launchers: impl Iterator<Item = (&'a str, f64)>) -> Table {
    let mut members: Vec<(&str, Vec<f64>)> = Vec::new();
    for (cat, direct) in launchers {
        match members.iter_mut().find(|(c, _)| *c == cat) {
            Some((_, v)) => v.push(direct),
            None => members.push((cat, vec![direct])),
        }
    }
    // Groups in key order, then by the µs sum, largest first.
    members.sort_by(|a, b| a.0.cmp(b.0));
    let mut groups: Vec<(&str, usize, f64)> =
        members.iter().map(|(c, v)| (*c, v.len(), kahan(v.iter().copied()))).collect();
    groups.sort_by(|a, b| b.2.total_cmp(&a.2));
    let ms: Vec<f64> = groups.iter().map(|g| g.2 / 1000.0).collect();
    let total = pairwise(&ms);
    let mut cumulative = 0.0;
    let rows = groups
        .iter()
        .zip(&ms)
        .map(|((cat, count, _), ms)| {
            let pct = ms / total * 100.0;
            cumulative += pct;
            let number = |v: f64| if v.is_nan() { Cell::Empty } else { Cell::Float(v) };
            vec![
                Cell::Str(cat.to_string()),
                Cell::Int(*count as i64),
                Cell::Float(*ms),
                number(pct),
                number(cumulative),
            ]
        })
        .collect();
    let header = [
        "op category",
        "Count",
        "total_direct_kernel_time_ms",
        "Percentage (%)",
        "Cumulative Percentage (%)",
    ];
    Table::new(&header, rows)
}

/// A stream value for grouping: numbers sort numerically; a string is
/// interned (`null` reads as the empty string, id 0).
#[derive(Debug, Clone, Copy, PartialEq)]
enum StreamKey {
    Num(f64),
    Str(u32),
}

impl Eq for StreamKey {}

impl std::hash::Hash for StreamKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            StreamKey::Num(v) => v.to_bits().hash(h),
            StreamKey::Str(s) => s.hash(h),
        }
    }
}

/// A stream value for sorting.
enum StreamText<'a> {
    Num(f64),
    Str(&'a str),
}

impl StreamKey {
    fn of(k: Key) -> StreamKey {
        match k {
            Key::Int(i) => StreamKey::Num(i as f64),
            Key::Big(u) => StreamKey::Num(u as f64),
            Key::Float(b) => StreamKey::Num(f64::from_bits(b)),
            Key::Str(s) => StreamKey::Str(s),
            Key::Bool(b) => StreamKey::Num(b as u8 as f64),
            Key::Null => StreamKey::Str(0),
        }
    }
    fn text(self, p: &Parsed) -> StreamText<'_> {
        match self {
            StreamKey::Num(v) => StreamText::Num(v),
            StreamKey::Str(s) => StreamText::Str(p.str(s)),
        }
    }
}

fn cmp_opt<T>(
    a: &Option<T>,
    b: &Option<T>,
    f: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => f(x, y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

type TextKey<'a> = (Option<&'a str>, Option<&'a str>, &'a str, Option<StreamText<'a>>);

fn cmp_key(a: &TextKey<'_>, b: &TextKey<'_>) -> std::cmp::Ordering {
    cmp_opt(&a.0, &b.0, |x, y| x.cmp(y))
        .then_with(|| cmp_opt(&a.1, &b.1, |x, y| x.cmp(y)))
        .then_with(|| a.2.cmp(b.2))
        .then_with(|| {
            cmp_opt(&a.3, &b.3, |x, y| match (x, y) {
                (StreamText::Num(p), StreamText::Num(q)) => p.total_cmp(q),
                (StreamText::Str(p), StreamText::Str(q)) => p.cmp(q),
                (StreamText::Num(_), StreamText::Str(_)) => std::cmp::Ordering::Less,
                (StreamText::Str(_), StreamText::Num(_)) => std::cmp::Ordering::Greater,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_and_differences() {
        let u = union(vec![(3.0, 5.0), (0.0, 1.0), (1.0, 2.0), (4.0, 6.0)]);
        assert_eq!(u, [(0.0, 2.0), (3.0, 6.0)]);
        assert_eq!(
            difference(&[(0.0, 10.0)], &[(2.0, 3.0), (5.0, 12.0)]),
            [(0.0, 2.0), (3.0, 5.0)]
        );
        assert_eq!(difference(&[(0.0, 1.0), (4.0, 5.0)], &[(1.0, 4.0)]), [(0.0, 1.0), (4.0, 5.0)]);
    }

    #[test]
    fn sums() {
        assert_eq!(kahan([0.1, 0.2, 0.3]), 0.6);
        let v: Vec<f64> = (0..300).map(|i| i as f64 * 0.1).collect();
        assert!((pairwise(&v) - v.iter().sum::<f64>()).abs() < 1e-9);
    }
}
