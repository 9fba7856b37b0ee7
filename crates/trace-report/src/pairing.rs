//! Which trace of one run compares with which of another: one trace each,
//! or two runs rank by rank; rocprofv3 runs (a file per process, no rank
//! written) GPU by GPU, and node by node where their processes are in a
//! directory per node.

use std::{
    collections::{BTreeMap, HashSet},
    fmt,
    path::{Path, PathBuf},
};

/// What pairs the traces of two runs: their ranks; or, for rocprofv3 runs,
/// the GPU each process ran its kernels on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PairedBy {
    /// Rank by rank.
    Rank,
    /// GPU by GPU.
    Gpu,
    /// GPU by GPU, node by node: rocprofv3 runs whose processes are in
    /// several directories (one per node, `<hostname>/`), the directories
    /// paired as [`by_node`] says. Keys are `node << 16 | gpu`
    /// ([`PairedBy::label`]).
    NodeGpu,
}

impl PairedBy {
    /// `rank` or `GPU`.
    pub fn word(self) -> &'static str {
        match self {
            PairedBy::Rank => "rank",
            PairedBy::Gpu | PairedBy::NodeGpu => "GPU",
        }
    }

    /// `ranks` or `GPUs`.
    pub fn plural(self) -> &'static str {
        match self {
            PairedBy::Rank => "ranks",
            PairedBy::Gpu | PairedBy::NodeGpu => "GPUs",
        }
    }

    /// A key as a sentence names it: `rank 3`, `GPU 3`, `node 1 GPU 3`.
    pub fn label(self, key: u32) -> String {
        match self {
            PairedBy::Rank => format!("rank {key}"),
            PairedBy::Gpu => format!("GPU {key}"),
            PairedBy::NodeGpu => format!("node {} GPU {}", key >> 16, key & 0xffff),
        }
    }

    /// A key as a table shows it: `3`, or `1:3` (node 1, GPU 3).
    pub fn value(self, key: u32) -> String {
        match self {
            PairedBy::NodeGpu => format!("{}:{}", key >> 16, key & 0xffff),
            _ => key.to_string(),
        }
    }

    /// A table's column for it: `RANK`, `GPU`, `NODE:GPU`.
    pub fn column(self) -> &'static str {
        match self {
            PairedBy::Rank => "RANK",
            PairedBy::Gpu => "GPU",
            PairedBy::NodeGpu => "NODE:GPU",
        }
    }

    /// A key as named fields: `[("rank", 3)]`, `[("gpu", 3)]`, `[("node",
    /// 1), ("gpu", 3)]`.
    pub fn fields(self, key: u32) -> Vec<(&'static str, u32)> {
        match self {
            PairedBy::Rank => vec![("rank", key)],
            PairedBy::Gpu => vec![("gpu", key)],
            PairedBy::NodeGpu => vec![("node", key >> 16), ("gpu", key & 0xffff)],
        }
    }

    /// The key of `member`, if it has one.
    pub fn key(self, member: &Member) -> Option<u32> {
        match self {
            PairedBy::Rank => member.rank,
            PairedBy::Gpu | PairedBy::NodeGpu => member.gpu,
        }
    }

    /// Why a trace has no key.
    fn without(self) -> &'static str {
        match self {
            PairedBy::Rank => {
                "without a rank (from its name, a trace's distributedInfo, or a report's \
                 summary.json)"
            }
            PairedBy::Gpu | PairedBy::NodeGpu => "whose kernels ran on no single GPU",
        }
    }
}

/// One trace of a side of a comparison, or one report (a directory of
/// CSVs) read back in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The trace, or the report's directory.
    pub path: PathBuf,
    /// A report, not a trace.
    pub report: bool,
    /// For a report: the trace it was made of, where it says; its
    /// directory is the report's node directory ([`by_node`]).
    pub made_of: Option<PathBuf>,
    /// Its rank, where it has one.
    pub rank: Option<u32>,
    /// The GPU its kernels all ran on (rocprofv3), once known.
    pub gpu: Option<u32>,
    /// A rocprofv3 trace, or a report of one.
    pub rocprof: bool,
}

impl Member {
    /// A trace, with nothing known of it but its rank.
    pub fn trace(path: impl Into<PathBuf>, rank: Option<u32>) -> Member {
        Member { path: path.into(), report: false, made_of: None, rank, gpu: None, rocprof: false }
    }

    /// The directory of the trace it is, or stands for.
    fn dir(&self) -> PathBuf {
        let trace = self.made_of.as_ref().unwrap_or(&self.path);
        trace.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// How two runs are paired, before their traces are read: GPU by GPU when
/// neither has a rank and each holds several rocprofv3 traces (or reports
/// of them); else rank by rank.
pub fn paired_by(sides: [&[Member]; 2]) -> PairedBy {
    let rocprof_run = |side: &[Member]| {
        side.len() > 1 && side.iter().all(|m| m.rank.is_none() && (m.rocprof || m.gpu.is_some()))
    };
    match sides.iter().all(|side| rocprof_run(side)) {
        true => PairedBy::Gpu,
        false => PairedBy::Rank,
    }
}

/// The node directories of two rocprofv3 runs, paired ([`by_node`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    /// Paired by the names of their directories (`node_N` as gathered, or
    /// the same hosts); else in the order of their directories.
    pub by_name: bool,
    /// Node after node: its directory in the baseline and in the new run
    /// (`None` where that run has no such node).
    pub dirs: Vec<[Option<PathBuf>; 2]>,
}

impl fmt::Display for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .dirs
            .iter()
            .enumerate()
            .map(|(n, dirs)| {
                let [a, b] = dirs
                    .each_ref()
                    .map(|d| d.as_ref().map_or("-".into(), |d| d.display().to_string()));
                format!("node {n}: {a} and {b}")
            })
            .collect();
        let how = match self.by_name {
            true => "the nodes paired by the name of their directories",
            false => "the nodes in order of their directories",
        };
        write!(
            f,
            "the traces are in a directory per node: compared GPU by GPU within each node, {how} \
             ({})",
            pairs.join("; ")
        )
    }
}

/// For rocprofv3 runs whose GPU-keyed traces are in several directories
/// (a node each, `<hostname>/`) on either side: key each by its node too
/// (`node << 16 | gpu`), and say which pair. Nodes pair by directory name
/// (`node_N` as gathered, or the same hosts) when every node of one run has
/// its name in the other; else the directories of a side are numbered in
/// natural order (`node_2` before `node_10`). A report's node is the
/// directory of the trace it was made of, where it says.
pub fn by_node(sides: &mut [Vec<Member>; 2]) -> Option<Nodes> {
    let dirs: [Vec<PathBuf>; 2] = [0, 1].map(|side| {
        let mut dirs: Vec<PathBuf> =
            sides[side].iter().filter(|m| m.gpu.is_some()).map(Member::dir).collect();
        dirs.sort_by_key(|d| natural(d));
        dirs.dedup();
        dirs
    });
    if dirs.iter().all(|d| d.len() < 2) {
        return None;
    }
    // Each run's nodes by name, when one run's names are all in the other:
    // the same node of both runs then pairs, wherever a node is missing.
    let names = node_names(&dirs);
    let shared = names.as_ref().filter(|[a, b]| {
        let unique =
            |names: &Vec<String>| names.iter().collect::<HashSet<_>>().len() == names.len();
        let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        unique(a) && unique(b) && small.iter().all(|n| large.contains(n))
    });
    let keys: Vec<String> = match shared {
        Some([a, b]) => {
            let mut all: Vec<String> = a.iter().chain(b).cloned().collect();
            all.sort_by_key(|n| natural(Path::new(n)));
            all.dedup();
            all
        }
        None => Vec::new(),
    };
    // The node number of each directory, per side.
    let node_of = |side: usize, dir: &Path| -> Option<usize> {
        let at = dirs[side].iter().position(|d| d == dir)?;
        match shared {
            Some(names) => keys.iter().position(|k| *k == names[side][at]),
            None => Some(at),
        }
    };
    for (side, members) in sides.iter_mut().enumerate() {
        for member in members.iter_mut() {
            if let (Some(gpu), Some(node)) = (member.gpu, node_of(side, &member.dir())) {
                member.gpu = Some((node as u32) << 16 | gpu.min(0xffff));
            }
        }
    }
    let nodes = if shared.is_some() { keys.len() } else { dirs[0].len().max(dirs[1].len()) };
    let pairs = (0..nodes)
        .map(|n| {
            [0, 1].map(|side| dirs[side].iter().find(|d| node_of(side, d) == Some(n)).cloned())
        })
        .collect();
    Some(Nodes { by_name: shared.is_some(), dirs: pairs })
}

/// Each node directory's name: the first part of its path below what all of
/// its run's node directories share (`node_3` of `run/node_3/host`). A run
/// with one node directory takes as many parts from its end as the other
/// run's names are deep. `None` when that cannot be told.
fn node_names(dirs: &[Vec<PathBuf>; 2]) -> Option<[Vec<String>; 2]> {
    let parts_of = |d: &Path| -> Vec<String> {
        d.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect()
    };
    let below = |dirs: &[PathBuf]| -> Option<Vec<Vec<String>>> {
        let parts: Vec<Vec<String>> = dirs.iter().map(|d| parts_of(d)).collect();
        let first = parts.first()?;
        let common = (0..first.len())
            .take_while(|&i| parts.iter().all(|p| p.get(i) == Some(&first[i])))
            .count();
        Some(parts.into_iter().map(|p| p[common..].to_vec()).collect())
    };
    let mut rel = [below(&dirs[0])?, below(&dirs[1])?];
    let depth = |rel: &Vec<Vec<String>>| rel.iter().map(Vec::len).max().unwrap_or(0);
    for side in 0..2 {
        if dirs[side].len() == 1 && dirs[1 - side].len() > 1 {
            let depth = depth(&rel[1 - side]);
            let parts = parts_of(&dirs[side][0]);
            rel[side] = vec![parts[parts.len().saturating_sub(depth)..].to_vec()];
        }
    }
    let names = rel.map(|side| side.into_iter().map(|p| p.first().cloned()).collect());
    let [Some(a), Some(b)]: [Option<Vec<String>>; 2] = names else { return None };
    Some([a, b])
}

/// A path's text with its runs of digits compared as numbers (`node_2`
/// before `node_10`).
fn natural(path: &Path) -> Vec<(String, u128)> {
    let text = path.to_string_lossy();
    let mut parts = Vec::new();
    let mut rest = text.as_ref();
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits > 0 {
            parts.push((String::new(), rest[..digits].parse().unwrap_or(u128::MAX)));
            rest = &rest[digits..];
        } else {
            let text = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
            parts.push((rest[..text].to_string(), 0));
            rest = &rest[text..];
        }
    }
    parts
}

/// What two runs compare ([`pair`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// `(key, baseline index, new index)` in key order; one trace each is
    /// `(None, 0, 0)`.
    pub pairs: Vec<(Option<u32>, usize, usize)>,
    /// What was left out, and why.
    pub unpaired: Vec<Unpaired>,
}

/// What [`pair`] left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpaired {
    /// Keys (ranks, GPUs) only one run has.
    OnlyIn {
        /// What they are keys of.
        by: PairedBy,
        /// The keys.
        keys: Vec<u32>,
        /// Only in the new run (else only in the baseline).
        new: bool,
    },
    /// Traces without a key beside keyed ones: a launcher's, say.
    Keyless {
        /// What they have no key of.
        by: PairedBy,
        /// The traces.
        traces: Vec<PathBuf>,
    },
}

impl fmt::Display for Unpaired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unpaired::OnlyIn { by, keys, new } => {
                let role = if *new { "new" } else { "baseline" };
                let said = match by {
                    PairedBy::NodeGpu => {
                        keys.iter().map(|k| by.label(*k)).collect::<Vec<_>>().join(", ")
                    }
                    _ => format!("{} {}", by.word(), crate::numbers(keys.iter().copied())),
                };
                write!(f, "{said} only in the {role} run")
            }
            Unpaired::Keyless { by, traces } => {
                let n = match traces.len() {
                    1 => "1 trace".to_string(),
                    n => format!("{n} traces"),
                };
                write!(f, "{n} {}: {}", by.without(), list_paths(traces))
            }
        }
    }
}

/// Why two runs cannot be compared as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairError {
    /// One side holds several traces and the other one.
    OneAndMany {
        /// The side of several.
        many: PathBuf,
        /// Its traces (or reports).
        members: Vec<PathBuf>,
        /// Reports, not traces.
        reports: bool,
        /// The side of one.
        one: PathBuf,
    },
    /// None of a side's traces has a key.
    NoKeys {
        /// The side.
        side: PathBuf,
        /// Its traces (or reports).
        count: usize,
        /// Reports, not traces.
        reports: bool,
        /// What they have no key of.
        by: PairedBy,
        /// Some are rocprofv3 Perfetto traces, which name their GPU only
        /// when asked to.
        perfetto: bool,
    },
    /// Two traces of a side have the same key.
    KeyTwice {
        /// The side.
        side: PathBuf,
        /// Reports, not traces.
        reports: bool,
        /// What the key is of.
        by: PairedBy,
        /// The key.
        key: u32,
        /// The two traces.
        traces: [PathBuf; 2],
    },
    /// The runs share no key.
    NothingShared {
        /// The baseline and the new run.
        paths: [PathBuf; 2],
        /// What the keys are of.
        by: PairedBy,
        /// The keys each has.
        unpaired: Vec<Unpaired>,
    },
}

impl std::error::Error for PairError {}

impl fmt::Display for PairError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let these = |reports: bool| if reports { "reports" } else { "traces" };
        match self {
            PairError::OneAndMany { many, members, reports, one } => write!(
                f,
                "{} holds {} {} ({}) and {} one: name the {} to compare, or give two runs to \
                 compare rank by rank",
                many.display(),
                members.len(),
                these(*reports),
                list_paths(members),
                one.display(),
                if *reports { "report" } else { "trace" }
            ),
            PairError::NoKeys { side, count, reports, by, perfetto } => {
                let why = match by {
                    PairedBy::Rank => {
                        "none has a rank (from its name, a trace's distributedInfo, or a \
                         report's summary.json)"
                    }
                    PairedBy::Gpu | PairedBy::NodeGpu => {
                        "none has a rank, nor ran its kernels on one GPU alone"
                    }
                };
                let perfetto = match perfetto {
                    true => {
                        " (rocprofv3's Perfetto traces name their GPU only when it ran with \
                         --agent-index type-relative)"
                    }
                    false => "",
                };
                write!(
                    f,
                    "{} holds {count} {} and {why}{perfetto}: runs are compared rank by rank \
                     (rocprofv3 runs GPU by GPU); name the two to compare",
                    side.display(),
                    these(*reports)
                )
            }
            PairError::KeyTwice { side, reports, by, key, traces: [a, b] } => write!(
                f,
                "{} holds two {} of {} ({} and {}): runs are compared {word} by {word}; give \
                 the directory of one run, or name the two to compare",
                side.display(),
                these(*reports),
                by.label(*key),
                a.display(),
                b.display(),
                word = by.word()
            ),
            PairError::NothingShared { paths: [a, b], by, unpaired } => {
                let unpaired: Vec<String> = unpaired.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} and {} share no {word} ({}): nothing to compare {word} by {word}",
                    a.display(),
                    b.display(),
                    unpaired.join("; "),
                    word = by.word()
                )
            }
        }
    }
}

/// Up to 4 paths, then how many more: `a, b, c, d, and 3 more`, as
/// messages name a set of traces.
pub fn list_paths<P: AsRef<Path>>(paths: &[P]) -> String {
    const NAMED: usize = 4;
    let mut names: Vec<String> =
        paths.iter().take(NAMED).map(|p| p.as_ref().display().to_string()).collect();
    if paths.len() > NAMED {
        names.push(format!("and {} more", paths.len() - NAMED));
    }
    names.join(", ")
}

/// The pairs to compare of the baseline's `sides[0]` and the new run's
/// `sides[1]` (given as `paths`), and what only one run has: one trace
/// each, or two runs key by key ([`PairedBy`]). A trace without a key
/// beside keyed ones is left out.
///
/// # Example
///
/// ```
/// use std::path::Path;
/// use trace_report::{Member, PairedBy, pair, paired_by};
///
/// let base = [Member::trace("base/rank0.json", Some(0)), Member::trace("base/rank1.json", Some(1))];
/// let new = [Member::trace("new/rank1.json", Some(1)), Member::trace("new/rank2.json", Some(2))];
/// let by = paired_by([&base, &new]);
/// assert_eq!(by, PairedBy::Rank);
/// let pairing = pair([Path::new("base"), Path::new("new")], [&base, &new], by)?;
/// // Rank 1: the baseline's second trace and the new run's first.
/// assert_eq!(pairing.pairs, [(Some(1), 1, 0)]);
/// let unpaired: Vec<String> = pairing.unpaired.iter().map(|u| u.to_string()).collect();
/// assert_eq!(unpaired, ["rank 0 only in the baseline run", "rank 2 only in the new run"]);
/// # Ok::<(), trace_report::PairError>(())
/// ```
pub fn pair(paths: [&Path; 2], sides: [&[Member]; 2], by: PairedBy) -> Result<Pairing, PairError> {
    let reports = |i: usize| sides[i].iter().all(|m| m.report);
    match sides.map(<[Member]>::len) {
        [1, 1] => return Ok(Pairing { pairs: vec![(None, 0, 0)], unpaired: vec![] }),
        [1, _] | [_, 1] => {
            let many = if sides[0].len() > 1 { 0 } else { 1 };
            return Err(PairError::OneAndMany {
                many: paths[many].to_path_buf(),
                members: sides[many].iter().map(|m| m.path.clone()).collect(),
                reports: reports(many),
                one: paths[1 - many].to_path_buf(),
            });
        }
        _ => {}
    }
    let mut by_key = [BTreeMap::new(), BTreeMap::new()];
    let mut keyless: Vec<PathBuf> = Vec::new();
    for (i, members) in sides.iter().enumerate() {
        if members.iter().all(|m| by.key(m).is_none()) {
            // rocprofv3's Perfetto traces name their GPU only when asked to.
            let perfetto = by != PairedBy::Rank
                && members.iter().any(|m| {
                    let name = m.path.to_string_lossy();
                    name.ends_with(".pftrace") || name.ends_with(".pftrace.gz")
                });
            return Err(PairError::NoKeys {
                side: paths[i].to_path_buf(),
                count: members.len(),
                reports: reports(i),
                by,
                perfetto,
            });
        }
        for (at, member) in members.iter().enumerate() {
            let Some(key) = by.key(member) else {
                keyless.push(member.path.clone());
                continue;
            };
            if let Some(before) = by_key[i].insert(key, at) {
                return Err(PairError::KeyTwice {
                    side: paths[i].to_path_buf(),
                    reports: reports(i),
                    by,
                    key,
                    traces: [members[before].path.clone(), member.path.clone()],
                });
            }
        }
    }
    let [base, new] = by_key;
    let pairs: Vec<_> =
        base.iter().filter_map(|(key, b)| Some((Some(*key), *b, *new.get(key)?))).collect();
    let only = |mine: &BTreeMap<u32, usize>, other: &BTreeMap<u32, usize>, new: bool| {
        let keys: Vec<u32> = mine.keys().filter(|k| !other.contains_key(k)).copied().collect();
        (!keys.is_empty()).then_some(Unpaired::OnlyIn { by, keys, new })
    };
    let mut unpaired: Vec<Unpaired> =
        [only(&base, &new, false), only(&new, &base, true)].into_iter().flatten().collect();
    if pairs.is_empty() {
        return Err(PairError::NothingShared { paths: paths.map(Path::to_path_buf), by, unpaired });
    }
    if !keyless.is_empty() {
        // A run diffed with itself holds each trace on both sides: named once.
        let mut seen = std::collections::BTreeSet::new();
        keyless.retain(|p| seen.insert(p.clone()));
        unpaired.push(Unpaired::Keyless { by, traces: keyless });
    }
    Ok(Pairing { pairs, unpaired })
}

#[cfg(test)]
mod tests;
