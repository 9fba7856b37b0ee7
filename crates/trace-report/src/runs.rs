//! Ranked traces split into runs ([`split_runs`]), and report names
//! ([`report_stem`], [`Stems`]).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Component, Path, PathBuf},
};

use serde::Serialize;

use crate::cycles::{Cycle, NoCycles, profiling_cycles};

/// [`RankedRun::members`] as `[rank, "trace"]` pairs, each path as text
/// ([`trace_discover::lossy`]).
fn members<S: serde::Serializer>(members: &[(u32, PathBuf)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(members.iter().map(|(rank, trace)| (rank, trace.to_string_lossy())))
}

/// The ranked traces of one run, as [`split_runs`] finds them.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RankedRun {
    /// The directory (relative to the root) that holds them all.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub dir: PathBuf,
    /// `(rank, trace)` in rank order.
    #[serde(serialize_with = "crate::runs::members")]
    pub members: Vec<(u32, PathBuf)>,
    /// The run's world size: under [`RunRule::Complete`], the ranks
    /// `0..world_size` the members are; else the number of members.
    pub world_size: u32,
    /// Which of torch.profiler's profiling cycles, where `dir` holds
    /// several (a trace per rank each).
    pub cycle: Option<Cycle>,
    /// Under [`RunRule::Present`], the ranks of the expected world that have
    /// no trace (set by the caller, who knows the world; empty for a
    /// complete run). A consumer that needs ranks `0..n` reads the members
    /// as such, in rank order ([`RankedRun::renumbered`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
}

impl RankedRun {
    /// Whether the members' ranks are not `0..members` (a run with gaps):
    /// a consumer that needs them so numbers them otherwise than their
    /// traces do.
    pub fn renumbered(&self) -> bool {
        self.members.iter().enumerate().any(|(i, (rank, _))| *rank as usize != i)
    }
}

/// The report stem of a trace, as the original's: the path relative to the
/// root, the first of `.json.gz`, `.pt.trace.json`, `.pftrace`, `.json`
/// stripped, runs of characters outside `[A-Za-z0-9._-]` made `_`, leading
/// and trailing `_` removed; `trace` when nothing is left. Unlike the
/// original's, leading dots go too: a stem is a directory or file name in
/// the output directory, and `..` (of a trace named `...json`) would put a
/// report beside it instead, `.` into it, and `.._x` (of `../x.json`) would
/// hide it.
pub fn report_stem(rel: &Path) -> String {
    let text = rel.to_string_lossy();
    let text = [".json.gz", ".pt.trace.json", ".pftrace", ".json"]
        .iter()
        .find_map(|s| text.strip_suffix(s))
        .unwrap_or(&text);
    let mut stem = String::new();
    let mut in_run = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || "._-".contains(c) {
            stem.push(c);
            in_run = false;
        } else if !in_run {
            stem.push('_');
            in_run = true;
        }
    }
    let stem = stem.trim_start_matches(['_', '.']).trim_end_matches('_');
    if stem.is_empty() {
        return "trace".into();
    }
    // A deep relative path would make a name past the file system's 255
    // bytes (with `_memory_copy_csv` and the like after it): its start, and
    // a digest of the whole that keeps it apart from others.
    if stem.len() > MAX_STEM {
        let digest = sha1_smol::Sha1::from(stem).digest().to_string();
        return format!("{}-{}", &stem[..MAX_STEM - 13], &digest[..12]);
    }
    stem.into()
}

/// The longest [`report_stem`]: room for the longest suffix a report's
/// writer (madengine, TraceLens) puts after it, under the 255 bytes of a
/// file name.
pub const MAX_STEM: usize = 200;

/// Report stems made unique within one output directory: a stem already
/// given out gets `_2`, `_3`, ... (`rank0.json` and `rank0.json.gz` side by
/// side would otherwise write into the same report).
#[derive(Debug, Default)]
pub struct Stems(BTreeSet<String>);

impl Stems {
    /// The [`report_stem`] of `rel`, suffixed until it is unused.
    pub fn unique(&mut self, rel: &Path) -> String {
        let base = report_stem(rel);
        let mut stem = base.clone();
        let mut n = 2;
        while !self.0.insert(stem.clone()) {
            stem = format!("{base}_{n}");
            n += 1;
        }
        stem
    }
}

/// How [`split_runs`] tells that a set of ranked traces is one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRule {
    /// Ranks exactly `0..world` (`world` 0: as many as there are traces),
    /// each once: what TraceLens' collective report needs.
    Complete {
        /// The expected world size; 0 to take the number of traces.
        world: u32,
    },
    /// No rank claimed twice: enough to put the ranks side by side, even
    /// when some are missing.
    DistinctRanks,
    /// No rank claimed twice, and none at or beyond `world` (when not 0):
    /// the ranks present of a run that misses some.
    Present {
        /// The expected world size; 0: any.
        world: u32,
    },
}

impl RunRule {
    /// `Ok(world_size)` when `traces` form one run under this rule.
    fn accepts(self, traces: &[(PathBuf, u32)]) -> Result<u32, String> {
        match self {
            RunRule::Complete { world } => completeness(traces, world),
            RunRule::DistinctRanks => match duplicate_rank(traces) {
                Some(reason) => Err(reason),
                None => Ok(traces.iter().map(|(_, r)| r + 1).max().unwrap_or(0)),
            },
            RunRule::Present { world } => {
                if let Some(reason) = duplicate_rank(traces) {
                    return Err(reason);
                }
                let beyond: BTreeSet<u32> =
                    traces.iter().map(|(_, r)| *r).filter(|r| world > 0 && *r >= world).collect();
                if !beyond.is_empty() {
                    return Err(format!(
                        "ranks beyond the world size {world}: {}",
                        numbers(beyond)
                    ));
                }
                Ok(traces.len() as u32)
            }
        }
    }
}

/// Split `(trace, rank)` pairs into runs: all of them when they pass `rule`,
/// or else each subdirectory of their common directory on its own (and the
/// files directly in it as one more set), recursively. Where that leaves
/// ranks claimed several times, by traces whose names carry the time
/// `tensorboard_trace_handler` exported them, each profiling cycle is a run
/// ([`RankedRun::cycle`], [`profiling_cycles`]): every rank's first trace,
/// then every rank's second, and so on. Under [`RunRule::Complete`], a
/// cycle is complete with the ranks of all cycles.
///
/// Returns the runs of two or more traces, and `(what, why)` for each set
/// that could not be split further and still fails the rule. Traces left
/// alone in their directory belong to no run and get no reason.
pub fn split_runs(
    traces: &[(PathBuf, u32)],
    rule: RunRule,
) -> (Vec<RankedRun>, Vec<(String, String)>) {
    let mut groups = Vec::new();
    let mut reasons = Vec::new();
    split(traces, 0, rule, &mut groups, &mut reasons);
    (groups, reasons)
}

fn split(
    traces: &[(PathBuf, u32)],
    depth: usize,
    rule: RunRule,
    groups: &mut Vec<RankedRun>,
    reasons: &mut Vec<(String, String)>,
) {
    if traces.len() < 2 {
        return;
    }
    let dir = common_dir(traces, depth);
    let reason = match rule.accepts(traces) {
        Ok(world_size) => {
            groups.push(ranked_run(dir, traces, world_size, None));
            return;
        }
        Err(reason) => reason,
    };
    // Several runs under one root? Try each subdirectory on its own; the
    // files directly in this directory are one more set.
    let mut parts: BTreeMap<Option<PathBuf>, Vec<(PathBuf, u32)>> = BTreeMap::new();
    for (path, rank) in traces {
        let comps: Vec<Component> = path.components().collect();
        let key = (comps.len() > depth + 1).then(|| comps[..=depth].iter().collect::<PathBuf>());
        parts.entry(key).or_default().push((path.clone(), *rank));
    }
    // Directories that share no rank (a node's ranks each, a rank's traces
    // each) are one job's: where their traces are cycles, those are the
    // runs; directories that share ranks are runs of their own first.
    let leaf = parts.keys().all(Option::is_none);
    if parts.len() == 1 && !leaf {
        // All in one subdirectory: the run is named after it.
        return split(traces, depth + 1, rule, groups, reasons);
    }
    match cycles(traces) {
        Ok(cycles) if leaf || ranks_apart(&parts) => {
            return split_cycles(&dir, cycles, rule, groups, reasons);
        }
        Err(hint) if leaf => {
            return reasons.push((runs_label(traces.len(), &dir, None), reason + &hint.hint()));
        }
        _ => {}
    }
    for (key, part) in parts {
        if let ([(path, rank)], false) = (&part[..], rule == RunRule::DistinctRanks) {
            // Alone once split apart: say so, or a trace of each node named
            // `rank0` would make no collective without a word. (A lone
            // trace needs no cross-rank table: single-GPU runs side by side.)
            let within = path.parent().unwrap_or(Path::new(""));
            reasons.push((
                runs_label(1, within, None),
                format!(
                    "rank {rank} ({}) is the only ranked trace there, and a run needs two ranks or more; \
                     its directory was taken apart from the others because {reason}",
                    path.display()
                ),
            ));
            continue;
        }
        // The files directly here cannot be split further: `depth` stays.
        split(&part, depth + usize::from(key.is_some()), rule, groups, reasons);
    }
}

/// Whether no rank has traces in two of `parts`.
fn ranks_apart(parts: &BTreeMap<Option<PathBuf>, Vec<(PathBuf, u32)>>) -> bool {
    let mut holder: BTreeMap<u32, &Option<PathBuf>> = BTreeMap::new();
    parts
        .iter()
        .all(|(key, part)| part.iter().all(|(_, r)| *holder.entry(*r).or_insert(key) == key))
}

fn ranked_run(
    dir: PathBuf,
    traces: &[(PathBuf, u32)],
    world_size: u32,
    cycle: Option<Cycle>,
) -> RankedRun {
    let mut members: Vec<(u32, PathBuf)> = traces.iter().map(|(p, r)| (*r, p.clone())).collect();
    members.sort();
    RankedRun { dir, members, world_size, cycle, missing: Vec::new() }
}

/// What a set of ranked traces that forms no run is called in its reason.
fn runs_label(n: usize, dir: &Path, cycle: Option<Cycle>) -> String {
    let mut label = match n {
        1 => "1 ranked PyTorch trace".to_string(),
        n => format!("{n} ranked PyTorch traces"),
    };
    if !dir.as_os_str().is_empty() {
        label.push_str(&format!(" in {}", dir.display()));
    }
    if let Some(cycle) = cycle {
        label.push_str(&format!(", {cycle}"));
    }
    label
}

/// Each of [`cycles`]' cycles as a run, or with its reason.
fn split_cycles(
    dir: &Path,
    cycles: Vec<Vec<(PathBuf, u32)>>,
    rule: RunRule,
    groups: &mut Vec<RankedRun>,
    reasons: &mut Vec<(String, String)>,
) {
    let of = cycles.len();
    // A cycle some ranks wrote no trace of (a job stopped part way) is no
    // complete run of fewer ranks: the job's ranks are those of all cycles.
    let ranks: BTreeSet<u32> = cycles.iter().flatten().map(|(_, r)| *r).collect();
    let rule = match rule {
        RunRule::Complete { world: 0 } => RunRule::Complete { world: ranks.len() as u32 },
        rule => rule,
    };
    for (i, traces) in cycles.iter().enumerate() {
        let cycle = Some(Cycle { number: i + 1, of });
        if let [(_, rank)] = traces[..] {
            let reason = format!(
                "only rank {rank} wrote a trace of this cycle (the job stopped part way?), and a \
                 run needs two ranks or more"
            );
            reasons.push((runs_label(1, dir, cycle), reason));
            continue;
        }
        match rule.accepts(traces) {
            Ok(world_size) => groups.push(ranked_run(dir.to_path_buf(), traces, world_size, cycle)),
            Err(reason) => reasons.push((runs_label(traces.len(), dir, cycle), reason)),
        }
    }
}

/// [`profiling_cycles`] of two ranks or more: a single rank's traces are
/// not a run's, whatever their cycles.
fn cycles(traces: &[(PathBuf, u32)]) -> Result<Vec<Vec<(PathBuf, u32)>>, NoCycles> {
    let ranks: BTreeSet<u32> = traces.iter().map(|(_, r)| *r).collect();
    if ranks.len() < 2 {
        return Err(NoCycles::NotAlike);
    }
    profiling_cycles(traces)
}

fn common_dir(traces: &[(PathBuf, u32)], depth: usize) -> PathBuf {
    let first: Vec<Component> = traces[0].0.components().collect();
    first[..depth.min(first.len().saturating_sub(1))].iter().collect()
}

/// The first rank two or more traces claim, as a reason.
fn duplicate_rank(traces: &[(PathBuf, u32)]) -> Option<String> {
    let mut by_rank: BTreeMap<u32, Vec<&Path>> = BTreeMap::new();
    for (path, rank) in traces {
        by_rank.entry(*rank).or_default().push(path);
    }
    let (rank, paths) = by_rank.iter().find(|(_, p)| p.len() > 1)?;
    let mut reason = format!(
        "rank {rank} is claimed by {} traces ({})",
        paths.len(),
        paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    // Every rank the same number of times: the cycles of torch.profiler's
    // schedule (repeat=0, its default, profiles cycle after cycle, a trace
    // per rank each), not two jobs.
    if by_rank.len() > 1 && by_rank.values().all(|p| p.len() == paths.len()) {
        reason.push_str(&format!(
            ", as is each of the {} ranks: {} profiling cycles (torch.profiler's schedule \
             repeats unless repeat=1)?",
            by_rank.len(),
            paths.len()
        ));
    }
    Some(reason)
}

/// `Ok(world_size)` when the ranks are exactly 0..world_size-1, each once.
fn completeness(traces: &[(PathBuf, u32)], world: u32) -> Result<u32, String> {
    if let Some(reason) = duplicate_rank(traces) {
        return Err(reason);
    }
    let by_rank: BTreeMap<u32, ()> = traces.iter().map(|(_, r)| (*r, ())).collect();
    let expected = if world > 0 { world } else { traces.len() as u32 };
    let missing: Vec<u32> = (0..expected).filter(|r| !by_rank.contains_key(r)).collect();
    let extra: Vec<u32> = by_rank.keys().filter(|r| **r >= expected).copied().collect();
    if !missing.is_empty() || !extra.is_empty() {
        let mut reason = format!(
            "the ranks found ({}) do not form 0..{}",
            numbers(by_rank.keys().copied()),
            expected.saturating_sub(1)
        );
        if !missing.is_empty() {
            reason.push_str(&format!("; missing {}", numbers(missing.iter().copied())));
        }
        if world > 0 && !extra.is_empty() {
            reason.push_str(&format!("; beyond the world size {world}: {}", numbers(extra)));
        }
        return Err(reason);
    }
    Ok(expected)
}

/// Ranks (or GPUs), ascending, as a sentence lists them: runs of three or
/// more in a row as ranges, so that the 32 ranks a job misses read as
/// `32-63`: `0, 1, 4-7, 9`.
pub fn numbers(sorted: impl IntoIterator<Item = u32>) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for n in sorted {
        match runs.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(n) => *last = n,
            _ => runs.push((n, n)),
        }
    }
    let mut said = Vec::new();
    for (first, last) in runs {
        match last - first {
            0 => said.push(first.to_string()),
            1 => said.extend([first.to_string(), last.to_string()]),
            _ => said.push(format!("{first}-{last}")),
        }
    }
    said.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems() {
        let check =
            |rel: &str, expected: &str| assert_eq!(report_stem(Path::new(rel)), expected, "{rel}");
        check("traces/model_rank0.pt.trace.json", "traces_model_rank0");
        check(
            "torch_profiler_output/libkineto_trace_1234.json",
            "torch_profiler_output_libkineto_trace_1234",
        );
        check("node_0/trace.json", "node_0_trace");
        check("a.pt.trace.json.gz", "a.pt.trace");
        check("x y/[rank 1].json", "x_y_rank_1");
        check("@@.json", "trace");
        check("m.pftrace", "m");
        // Never a name that leaves or hides in the output directory.
        check("...json", "trace");
        check("..json", "trace");
        check("../x/y.json", "x_y");
        check("./rank0.json", "rank0");
        check(".hidden.json", "hidden");
        check("a/../b.json", "a_.._b");
        // Too long for a file name with its suffixes: cut, with a digest.
        let deep = format!("{}/rank0.json", ["level"; 60].join("/"));
        let stem = report_stem(Path::new(&deep));
        assert_eq!(stem.len(), MAX_STEM, "{stem}");
        assert!(stem.starts_with("level_level_"), "{stem}");
        let other = report_stem(Path::new(&format!("{}/rank1.json", ["level"; 60].join("/"))));
        assert_ne!(stem, other);
    }

    fn set(items: &[(&str, u32)]) -> Vec<(PathBuf, u32)> {
        items.iter().map(|(p, r)| (PathBuf::from(p), *r)).collect()
    }

    #[test]
    fn numbers_collapse_runs_of_three_or_more() {
        assert_eq!(numbers([]), "");
        assert_eq!(numbers([3]), "3");
        assert_eq!(numbers([0, 1]), "0, 1");
        assert_eq!(numbers([0, 1, 2]), "0-2");
        assert_eq!(numbers([0, 1, 4, 5, 6, 7, 9]), "0, 1, 4-7, 9");
        assert_eq!(numbers(32..64), "32-63");
        assert_eq!(numbers([u32::MAX - 1, u32::MAX]), format!("{}, {}", u32::MAX - 1, u32::MAX));
    }

    #[test]
    fn completeness_names_the_clash() {
        assert_eq!(completeness(&set(&[("a", 0), ("b", 1)]), 0), Ok(2));
        assert_eq!(
            completeness(&set(&[("a", 0), ("b", 0)]), 0),
            Err("rank 0 is claimed by 2 traces (a, b)".into())
        );
        assert_eq!(
            completeness(&set(&[("a", 0), ("b", 2)]), 0),
            Err("the ranks found (0, 2) do not form 0..1; missing 1".into())
        );
        assert_eq!(
            completeness(&set(&[("a", 0), ("b", 1)]), 8),
            Err("the ranks found (0, 1) do not form 0..7; missing 2-7".into())
        );
        assert_eq!(
            completeness(&set(&[("a", 0), ("b", 1)]), 4),
            Err("the ranks found (0, 1) do not form 0..3; missing 2, 3".into())
        );
    }

    #[test]
    fn runs_under_one_root_are_split() {
        let traces = set(&[
            ("run_a/rank0.json", 0),
            ("run_a/rank1.json", 1),
            ("run_b/x/rank0.json", 0),
            ("run_b/y/rank1.json", 1),
            ("run_c/rank0.json", 0),
            ("run_c/rank2.json", 2),
        ]);
        let (groups, reasons) = split_runs(&traces, RunRule::Complete { world: 0 });
        let dirs: Vec<_> =
            groups.iter().map(|g| (g.dir.display().to_string(), g.world_size)).collect();
        assert_eq!(dirs, [("run_a".to_string(), 2), ("run_b".to_string(), 2)]);
        assert_eq!(reasons.len(), 1);
        assert!(
            reasons[0].0.contains("run_c") && reasons[0].1.contains("missing 1"),
            "{reasons:?}"
        );
    }

    #[test]
    fn a_multi_node_job_is_one_group() {
        let traces = set(&[
            ("node_0/torch_profiler_output/rank0.json", 0),
            ("node_0/torch_profiler_output/rank1.json", 1),
            ("node_1/torch_profiler_output/rank2.json", 2),
            ("node_1/torch_profiler_output/rank3.json", 3),
        ]);
        let (groups, reasons) = split_runs(&traces, RunRule::Complete { world: 0 });
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].world_size, 4);
        assert!(reasons.is_empty());
    }

    #[test]
    fn distinct_ranks_split_only_where_ranks_clash() {
        let traces = set(&[
            ("a/rank0.json", 0),
            ("a/rank1.json", 1),
            ("b/rank0.json", 0),
            ("b/rank2.json", 2),
            ("b/rank5.json", 5),
        ]);
        let (groups, reasons) = split_runs(&traces, RunRule::DistinctRanks);
        let dirs: Vec<_> =
            groups.iter().map(|g| (g.dir.display().to_string(), g.world_size)).collect();
        // Rank 0 twice: two runs. b misses ranks but is still a run (largest rank + 1).
        assert_eq!(dirs, [("a".to_string(), 2), ("b".to_string(), 6)]);
        assert!(reasons.is_empty(), "{reasons:?}");
        // Without a clash, one run; the complete rule would refuse it.
        let (groups, _) = split_runs(&traces[2..], RunRule::DistinctRanks);
        assert_eq!(groups.len(), 1);
        let (groups, reasons) = split_runs(&traces[2..], RunRule::Complete { world: 0 });
        assert!(groups.is_empty());
        assert!(reasons[0].1.contains("missing 0") || reasons[0].1.contains("missing 1"));
        // A clash in one directory cannot be split: a reason, no run.
        let (groups, reasons) =
            split_runs(&set(&[("r0.json", 0), ("r0b.json", 0)]), RunRule::DistinctRanks);
        assert!(groups.is_empty());
        assert!(reasons[0].1.contains("rank 0 is claimed by 2 traces"), "{reasons:?}");
        assert!(!reasons[0].1.contains("cycles"), "{reasons:?}");
        // Every rank twice: profiling cycles, and the reason says so.
        let cycles = set(&[
            ("rank0.1.json", 0),
            ("rank0.2.json", 0),
            ("rank1.1.json", 1),
            ("rank1.2.json", 1),
        ]);
        let (groups, reasons) = split_runs(&cycles, RunRule::DistinctRanks);
        assert!(groups.is_empty());
        assert_eq!(
            reasons[0].1,
            "rank 0 is claimed by 2 traces (rank0.1.json, rank0.2.json), as is each of the 2 \
             ranks: 2 profiling cycles (torch.profiler's schedule repeats unless repeat=1)? Each \
             cycle's traces in a directory of their own form a run, as do traces named by \
             tensorboard_trace_handler (<worker>.<time>.pt.trace.json), whose times tell the \
             cycles apart"
        );
    }

    /// `tensorboard_trace_handler`'s name for a trace `pid` wrote `ms` into
    /// a day (ns since the epoch).
    fn exported(dir: &str, pid: u32, ms: u64) -> String {
        format!("{dir}host_{pid}.{}.pt.trace.json", (1_764_720_000_000 + ms) * 1_000_000)
    }

    #[test]
    fn profiling_cycles_named_by_their_export_time_are_runs_of_their_own() {
        // Two ranks, three cycles, written a second apart; rank 1 a little
        // later each time, and listed in no particular order.
        let mut traces = Vec::new();
        for (cycle, at) in [(2, 3_000), (0, 1_000), (1, 2_000)] {
            traces.push((exported("t/", 11, at + 40), 1, cycle));
            traces.push((exported("t/", 10, at), 0, cycle));
        }
        let ranked: Vec<(PathBuf, u32)> =
            traces.iter().map(|(p, r, _)| (PathBuf::from(p), *r)).collect();
        for rule in [RunRule::Complete { world: 2 }, RunRule::DistinctRanks] {
            let (groups, reasons) = split_runs(&ranked, rule);
            assert!(reasons.is_empty(), "{reasons:?}");
            assert_eq!(groups.len(), 3);
            for (i, group) in groups.iter().enumerate() {
                assert_eq!(group.cycle, Some(Cycle { number: i + 1, of: 3 }));
                assert_eq!(group.dir, Path::new("t"));
                assert_eq!(group.world_size, 2);
                let expected: Vec<(u32, PathBuf)> = traces
                    .iter()
                    .filter(|(_, _, c)| *c == i)
                    .map(|(p, r, _)| (*r, PathBuf::from(p)))
                    .rev()
                    .collect();
                assert_eq!(group.members, expected, "cycle {}", i + 1);
            }
        }
        assert_eq!(Cycle { number: 2, of: 3 }.to_string(), "profiling cycle 2 of 3");

        // Each rank's traces in a directory of its own: still the cycles.
        let ranked = set(&[
            (&exported("rank0/", 10, 1_000), 0),
            (&exported("rank0/", 10, 2_000), 0),
            (&exported("rank1/", 11, 1_001), 1),
            (&exported("rank1/", 11, 2_001), 1),
        ]);
        let (groups, reasons) = split_runs(&ranked, RunRule::Complete { world: 0 });
        assert!(reasons.is_empty(), "{reasons:?}");
        let members: Vec<Vec<u32>> =
            groups.iter().map(|g| g.members.iter().map(|(r, _)| *r).collect()).collect();
        assert_eq!(members, [[0, 1], [0, 1]]);
        assert_eq!(groups[1].members[1].1, PathBuf::from(exported("rank1/", 11, 2_001)));

        // A cycle that misses a rank of the world size is named on its own.
        let (groups, reasons) = split_runs(&ranked, RunRule::Complete { world: 3 });
        assert!(groups.is_empty());
        assert_eq!(reasons.len(), 2);
        assert_eq!(reasons[0].0, "2 ranked PyTorch traces, profiling cycle 1 of 2");
        assert!(reasons[0].1.contains("missing 2"), "{reasons:?}");

        // A job of two nodes, each with its ranks' cycles: a run of both
        // nodes per cycle, not a node per run.
        let mut items = Vec::new();
        for (node, ranks) in [("node_0/t/", [0, 1]), ("node_1/t/", [2, 3])] {
            for rank in ranks {
                for c in 1..=2 {
                    items.push((exported(node, 10 + rank, 1_000 * c + u64::from(rank)), rank));
                }
            }
        }
        let ranked: Vec<(PathBuf, u32)> =
            items.iter().map(|(p, r)| (PathBuf::from(p), *r)).collect();
        let (groups, reasons) = split_runs(&ranked, RunRule::Complete { world: 0 });
        assert!(reasons.is_empty(), "{reasons:?}");
        let runs: Vec<_> = groups.iter().map(|g| (g.cycle.unwrap().number, g.world_size)).collect();
        assert_eq!(runs, [(1, 4), (2, 4)]);

        // Two jobs' runs in their own directories (the same ranks in each)
        // stay the runs: cycles are only looked for where directories do
        // not part them.
        let ranked = set(&[
            (&exported("a/", 10, 1_000), 0),
            (&exported("a/", 11, 1_001), 1),
            (&exported("b/", 20, 5_000), 0),
            (&exported("b/", 21, 5_001), 1),
        ]);
        let (groups, _) = split_runs(&ranked, RunRule::Complete { world: 0 });
        let runs: Vec<_> = groups.iter().map(|g| (g.dir.display().to_string(), g.cycle)).collect();
        assert_eq!(runs, [("a".to_string(), None), ("b".to_string(), None)]);
    }

    #[test]
    fn cycles_whose_times_interleave_or_ranks_differ_are_not_guessed() {
        // Rank 1's first trace was written after rank 0's second.
        let ranked = set(&[
            (&exported("", 10, 1_000), 0),
            (&exported("", 10, 2_000), 0),
            (&exported("", 11, 2_500), 1),
            (&exported("", 11, 3_000), 1),
        ]);
        let (groups, reasons) = split_runs(&ranked, RunRule::DistinctRanks);
        assert!(groups.is_empty());
        assert_eq!(reasons[0].0, "4 ranked PyTorch traces");
        assert!(
            reasons[0].1.ends_with(
                "repeat=1)? The times in their names (tensorboard_trace_handler's) do not tell \
                 the cycles apart: a rank wrote its trace of cycle 1 after another wrote its \
                 trace of cycle 2"
            ),
            "{reasons:?}"
        );
        // Rank 0 three times, rank 1 twice, without times: no cycles, no hint.
        let ranked = set(&[
            ("r0_a.json", 0),
            ("r0_b.json", 0),
            ("r0_c.json", 0),
            ("r1_a.json", 1),
            ("r1_b.json", 1),
        ]);
        let (groups, reasons) = split_runs(&ranked, RunRule::DistinctRanks);
        assert!(groups.is_empty());
        assert!(reasons[0].1.starts_with("rank 0 is claimed by 3 traces"), "{reasons:?}");
        assert!(!reasons[0].1.contains("cycle"), "{reasons:?}");
    }

    #[test]
    fn a_cycle_some_ranks_did_not_write_is_named_and_never_a_smaller_run() {
        // Three ranks; the job stopped in the third cycle, after rank 0
        // wrote its trace, and in the second rank 2's is missing.
        let mut items = Vec::new();
        for (rank, cycles) in [(0u32, 3u64), (1, 2), (2, 1)] {
            for c in 0..cycles {
                items.push((exported("", 10 + rank, 1_000 * (c + 1) + u64::from(rank)), rank));
            }
        }
        let ranked: Vec<(PathBuf, u32)> =
            items.iter().map(|(p, r)| (PathBuf::from(p), *r)).collect();
        let (groups, reasons) = split_runs(&ranked, RunRule::Complete { world: 0 });
        let runs: Vec<_> = groups.iter().map(|g| (g.cycle.unwrap().number, g.world_size)).collect();
        assert_eq!(runs, [(1, 3)], "the complete cycle only, of the job's 3 ranks");
        let said: Vec<(&str, &str)> =
            reasons.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(
            said,
            [
                (
                    "2 ranked PyTorch traces, profiling cycle 2 of 3",
                    "the ranks found (0, 1) do not form 0..2; missing 2"
                ),
                (
                    "1 ranked PyTorch trace, profiling cycle 3 of 3",
                    "only rank 0 wrote a trace of this cycle (the job stopped part way?), and a \
                     run needs two ranks or more"
                ),
            ]
        );
        // Side by side, the second cycle's two ranks are a run.
        let (groups, reasons) = split_runs(&ranked, RunRule::DistinctRanks);
        let runs: Vec<_> =
            groups.iter().map(|g| (g.cycle.unwrap().number, g.members.len())).collect();
        assert_eq!(runs, [(1, 3), (2, 2)]);
        assert_eq!(reasons.len(), 1, "{reasons:?}");
    }
}
