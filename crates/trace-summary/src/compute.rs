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

/// pandas' Kahan-compensated group sum.
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

/// The analysed trace.
pub(crate) struct Analysis<'p> {
    p: &'p Parsed,
    end: Vec<Option<f64>>,
    /// Host-tree parent of each event.
    parent: Vec<Option<usize>>,
    /// Runtime parent of a linked GPU event.
    gpu_parent: Vec<Option<usize>>,
    /// GPU events (indices) below each event.
    below: HashMap<usize, Vec<usize>>,
    /// Children that are GPU events, per runtime event.
    gpu_children: HashMap<usize, Vec<usize>>,
    /// Count unlinked GPU events in the timeline too (TraceLens'
    /// `--include_unlinked_kernels`).
    include_unlinked: bool,
}

fn ev(p: &Parsed, i: usize) -> &Event {
    &p.events[i]
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

        // 4.2 indices
        let mut flow_s: HashMap<Key, (Option<Key>, Option<Key>)> = HashMap::default();
        let mut flow_f: HashMap<Key, (Option<Key>, Option<Key>)> = HashMap::default();
        let mut by_ptk: HashMap<(Option<Key>, Option<Key>, Key), usize> = HashMap::default();
        let mut gpu_by_key: HashMap<Key, Vec<usize>> = HashMap::default();
        for (i, e) in p.events.iter().enumerate() {
            if e.cat == Cat::Ac2g && (e.ph == b's' || e.ph == b'f') {
                if let Some(id) = e.id {
                    let m = if e.ph == b's' { &mut flow_s } else { &mut flow_f };
                    m.insert(id, (e.pid, e.tid));
                }
                continue;
            }
            if e.ph == b's' || e.ph == b'f' {
                continue;
            }
            if let Some(k) = key_of(e) {
                by_ptk.insert((e.pid, e.tid, k), i);
                if e.cat.is_gpu() {
                    gpu_by_key.entry(k).or_default().push(i);
                }
            }
        }

        // 4.3 host tree
        let mut host: Vec<usize> = (0..n)
            .filter(|&i| {
                let e = ev(p, i);
                matches!(e.cat, Cat::CpuOp | Cat::Runtime | Cat::Driver) && end[i].is_some()
            })
            .collect();
        let ts_of: Vec<f64> = p.events.iter().map(|e| e.ts.map(Num::f).unwrap_or(0.0)).collect();
        host.sort_by(|&a, &b| ts_of[a].total_cmp(&ts_of[b]));
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut stacks: HashMap<(Option<Key>, Option<Key>), Vec<usize>> = HashMap::default();
        for &i in &host {
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
        let mut below: HashMap<usize, Vec<usize>> = HashMap::default();
        let mut gpu_children: HashMap<usize, Vec<usize>> = HashMap::default();
        for (i, e) in p.events.iter().enumerate() {
            if !e.cat.is_runtime() || e.ph == b's' || e.ph == b'f' {
                continue;
            }
            let Some(k) = key_of(e) else { continue };
            let name = p.str(e.name);
            let targets: Vec<usize> = if name == "cudaGraphLaunch" || name == "hipGraphLaunch" {
                gpu_by_key.get(&k).cloned().unwrap_or_default()
            } else {
                match (flow_s.get(&k), flow_f.get(&k)) {
                    (Some(_), Some(&(fp, ft))) => {
                        by_ptk.get(&(fp, ft, k)).copied().into_iter().collect()
                    }
                    _ => vec![],
                }
            };
            for t in targets {
                if !ev(p, t).cat.is_gpu() {
                    continue;
                }
                gpu_parent[t] = Some(i);
                gpu_children.entry(i).or_default().push(t);
                let mut cur = Some(i);
                while let Some(c) = cur {
                    below.entry(c).or_default().push(t);
                    cur = parent[c];
                }
            }
        }
        Analysis { p, end, parent, gpu_parent, below, gpu_children, include_unlinked: false }
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
    fn parent_cpu_op(&self, gpu: usize) -> Option<usize> {
        let mut cur = self.gpu_parent[gpu];
        while let Some(c) = cur {
            if ev(self.p, c).cat == Cat::CpuOp {
                return Some(c);
            }
            cur = self.parent[c];
        }
        None
    }

    /// launcher -> its direct (non-communication, linked) GPU events, in file order.
    fn direct_map(&self) -> (Vec<usize>, HashMap<usize, Vec<usize>>) {
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

    fn category(&self, op: usize, direct: &HashMap<usize, Vec<usize>>) -> String {
        let name = self.name(op);
        if let Ok(i) = REGISTRY.binary_search_by(|(n, _)| n.cmp(&name)) {
            return REGISTRY[i].1.to_string();
        }
        if name.starts_with("triton") {
            return "triton".into();
        }
        if name.starts_with("record_param_comms") {
            return "record_param_comms".into();
        }
        if let Some(list) = direct.get(&op) {
            let first = list
                .iter()
                .copied()
                .min_by(|&a, &b| self.interval(a).0.total_cmp(&self.interval(b).0).then(a.cmp(&b)));
            if let Some(f) = first {
                let kname = self.name(f);
                if kname.starts_with("void at::native") {
                    for c in ["elementwise", "reduce", "multi_tensor_apply"] {
                        if kname.contains(c) {
                            return c.into();
                        }
                    }
                }
            }
        }
        "other".into()
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
            cat: Option<String>,
            op: Option<String>,
            name: String,
            stream: Option<Key>,
            dur: Num,
        }
        let mut rows = Vec::new();
        let mut any_op = false;
        for &k in &kernels {
            let e = ev(self.p, k);
            let launcher = self.gpu_parent[k];
            let op = self.parent_cpu_op(k);
            if op.is_some() {
                any_op = true;
            }
            let cat = match op {
                Some(o) => Some(self.category(o, &direct)),
                None => launcher.map(|l| {
                    let n = self.name(l).to_ascii_lowercase();
                    if n.contains("cudagraph") || n.contains("graphlaunch") {
                        "graph".to_string()
                    } else {
                        "runtime".to_string()
                    }
                }),
            };
            rows.push(Row {
                cat,
                op: op.map(|o| self.name(o).to_string()),
                name: self.name(k).to_string(),
                stream: e.stream,
                dur: e.dur.unwrap_or(Num::Int(0)),
                // launcher name kept for the fallback below
            });
            if op.is_none() {
                let last = rows.last_mut().expect("just pushed");
                last.op = launcher.map(|l| self.name(l).to_string());
            }
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
        type GKey = (Option<String>, Option<String>, String, Option<StreamKey>);
        let mut groups: Vec<(GKey, Vec<usize>)> = Vec::new();
        let mut index: HashMap<GKey, usize> = HashMap::default();
        for (i, r) in rows.iter().enumerate() {
            let key: GKey = (
                if has_cat { r.cat.clone() } else { None },
                if has_op { r.op.clone() } else { None },
                r.name.clone(),
                if has_stream { r.stream.map(|s| StreamKey::of(s, self.p)) } else { None },
            );
            let g = *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, vec![]));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
        groups.sort_by(|a, b| cmp_key(&a.0, &b.0));
        // pandas' fast path when rows already come grouped in sorted order
        let rank: HashMap<usize, usize> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, (_, members))| members.iter().map(move |&m| (m, gi)))
            .collect();
        let sorted_input = (1..rows.len()).all(|i| rank[&(i - 1)] <= rank[&i]);
        let durs: Vec<f64> = rows.iter().map(|r| r.dur.f()).collect();
        let all_sum = pairwise(&durs);
        let total_ms = total_us / 1000.0;
        struct Out {
            key: GKey,
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
                    row.push(o.key.0.clone().map_or(Cell::Empty, Cell::Str));
                }
                if has_op {
                    row.push(o.key.1.clone().map_or(Cell::Empty, Cell::Str));
                }
                row.push(Cell::Str(o.key.2.clone()));
                if has_stream {
                    row.push(match &o.key.3 {
                        Some(StreamKey::Num(v)) if !stream_missing && v.fract() == 0.0 => {
                            Cell::Int(*v as i64)
                        }
                        Some(StreamKey::Num(v)) => Cell::Float(*v),
                        Some(StreamKey::Str(s)) => Cell::Str(s.clone()),
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

    /// `ops_summary`, for traces with cpu_op events.
    pub(crate) fn ops_summary(&self) -> Option<Table> {
        if !self.has_cpu_ops() {
            return None;
        }
        let (order, direct) = self.direct_map();
        if order.is_empty() {
            return None;
        }
        let mut launchers = order;
        let first_gpu: HashMap<usize, usize> = direct
            .iter()
            .map(|(&l, v)| (l, v.iter().copied().min().unwrap_or(usize::MAX)))
            .collect();
        launchers.sort_by(|&a, &b| {
            let (ta, tb) = (self.interval(a).0, self.interval(b).0);
            ta.total_cmp(&tb).then(first_gpu[&a].cmp(&first_gpu[&b]))
        });
        struct L {
            name: String,
            direct: f64,
            subtree: f64,
            direct_int: bool,
            subtree_int: bool,
            cat: String,
        }
        let is_int_iv = |i: usize| {
            let e = ev(self.p, i);
            e.ts.is_some_and(Num::is_int) && e.dur.is_some_and(Num::is_int)
        };
        let ls: Vec<L> = launchers
            .iter()
            .map(|&l| {
                let d = &direct[&l];
                let direct_len = length(&union(d.iter().map(|&g| self.interval(g)).collect()));
                let sub: Vec<usize> = if ev(self.p, l).cat.is_runtime() {
                    self.gpu_children.get(&l).cloned().unwrap_or_default()
                } else {
                    self.below.get(&l).cloned().unwrap_or_default()
                };
                let subtree_len = length(&union(sub.iter().map(|&g| self.interval(g)).collect()));
                L {
                    name: self.name(l).to_string(),
                    direct: direct_len,
                    subtree: subtree_len,
                    direct_int: d.iter().all(|&g| is_int_iv(g)),
                    subtree_int: sub.iter().all(|&g| is_int_iv(g)),
                    cat: self.category(l, &direct),
                }
            })
            .collect();
        let direct_int = ls.iter().all(|l| l.direct_int);
        let subtree_int = ls.iter().all(|l| l.subtree_int);
        // group by name, name order; sums in launcher order
        let mut names: Vec<&str> =
            ls.iter().map(|l| l.name.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
        names.sort();
        struct G {
            name: String,
            direct: f64,
            subtree: f64,
            count: usize,
            cats: BTreeSet<String>,
        }
        let mut groups: Vec<G> = names
            .iter()
            .map(|n| {
                let members: Vec<&L> = ls.iter().filter(|l| l.name == *n).collect();
                G {
                    name: n.to_string(),
                    direct: kahan(members.iter().map(|l| l.direct)),
                    subtree: kahan(members.iter().map(|l| l.subtree)),
                    count: members.len(),
                    cats: members.iter().map(|l| l.cat.clone()).collect(),
                }
            })
            .collect();
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
                    Cell::Str(g.name.clone()),
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
        Some(Table {
            header: [
                "name",
                "total_direct_kernel_time_sum",
                "total_subtree_kernel_time_sum",
                "total_direct_kernel_time_ms",
                "total_subtree_kernel_time_ms",
                "Count",
                "Categories",
                "Percentage (%)",
                "Cumulative Percentage (%)",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
        })
    }
}

/// A stream value for grouping: numbers sort numerically.
#[derive(Debug, Clone, PartialEq)]
enum StreamKey {
    Num(f64),
    Str(String),
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

impl StreamKey {
    fn of(k: Key, p: &Parsed) -> StreamKey {
        match k {
            Key::Int(i) => StreamKey::Num(i as f64),
            Key::Big(u) => StreamKey::Num(u as f64),
            Key::Float(b) => StreamKey::Num(f64::from_bits(b)),
            Key::Str(s) => StreamKey::Str(p.str(s).to_string()),
            Key::Bool(b) => StreamKey::Num(b as u8 as f64),
            Key::Null => StreamKey::Str(String::new()),
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

#[allow(clippy::type_complexity)]
fn cmp_key(
    a: &(Option<String>, Option<String>, String, Option<StreamKey>),
    b: &(Option<String>, Option<String>, String, Option<StreamKey>),
) -> std::cmp::Ordering {
    cmp_opt(&a.0, &b.0, |x, y| x.cmp(y))
        .then_with(|| cmp_opt(&a.1, &b.1, |x, y| x.cmp(y)))
        .then_with(|| a.2.cmp(&b.2))
        .then_with(|| {
            cmp_opt(&a.3, &b.3, |x, y| match (x, y) {
                (StreamKey::Num(p), StreamKey::Num(q)) => p.total_cmp(q),
                (StreamKey::Str(p), StreamKey::Str(q)) => p.cmp(q),
                (StreamKey::Num(_), StreamKey::Str(_)) => std::cmp::Ordering::Less,
                (StreamKey::Str(_), StreamKey::Num(_)) => std::cmp::Ordering::Greater,
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
