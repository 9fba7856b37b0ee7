//! torch.profiler's profiling cycles: its schedule repeats unless
//! `repeat=1`, and its `tensorboard_trace_handler` writes a trace per rank
//! each cycle into one directory, named by the time it wrote it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde::Serialize;

/// One of the profiling cycles of a directory that holds several:
/// torch.profiler's schedule repeats (unless `repeat=1`), and its
/// `tensorboard_trace_handler` writes a trace per rank each cycle, named by
/// the time of its export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cycle {
    /// From 1, in the order the traces were written.
    pub number: usize,
    /// How many cycles the directory holds.
    pub of: usize,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "profiling cycle {} of {}", self.number, self.of)
    }
}

/// Why a set of traces is not told apart into profiling cycles
/// ([`profiling_cycles`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCycles {
    /// No rank is claimed twice or more; or, where the names carry no
    /// time to tell cycles by, not every rank the same number of times.
    NotAlike,
    /// Every rank is claimed the same number of times, twice or more, but
    /// some names carry no time of `tensorboard_trace_handler`'s.
    Unnamed,
    /// A rank wrote its trace of cycle `n` after another rank wrote its
    /// trace of cycle `n + 1`.
    Interleaved(usize),
}

impl NoCycles {
    /// How the reason a set of traces forms no run goes on, for the
    /// profiling cycles it names ([`NoCycles::NotAlike`]: it names none).
    pub(crate) fn hint(&self) -> String {
        match self {
            NoCycles::NotAlike => String::new(),
            NoCycles::Unnamed => " Each cycle's traces in a directory of their own form a run, as \
                                  do traces named by tensorboard_trace_handler \
                                  (<worker>.<time>.pt.trace.json), whose times tell the cycles \
                                  apart"
                .into(),
            NoCycles::Interleaved(n) => format!(
                " The times in their names (tensorboard_trace_handler's) do not tell the cycles \
                 apart: a rank wrote its trace of cycle {n} after another wrote its trace of \
                 cycle {}",
                n + 1
            ),
        }
    }
}

/// `traces` as torch.profiler's profiling cycles, in the order they were
/// written: some key (a rank; `None` for a process without one) claimed by
/// two traces or more, each named with the time `tensorboard_trace_handler`
/// exported it ([`trace_discover::export_time_from_file_name`]). Each key's
/// first trace is the first cycle, and so on; a cycle is written, on every
/// rank, before any rank's trace of the next. A key of fewer traces than
/// the others (a job stopped part way) is missing from the last cycles.
///
/// ```
/// use std::path::PathBuf;
/// use trace_report::{NoCycles, profiling_cycles};
///
/// let traces: Vec<(PathBuf, u32)> = [
///     ("r0.1764720005000000000.pt.trace.json", 0),
///     ("r0.1764720000000000000.pt.trace.json", 0),
///     ("r1.1764720000000000001.pt.trace.json", 1),
///     ("r1.1764720005000000001.pt.trace.json", 1),
/// ]
/// .map(|(p, r)| (PathBuf::from(p), r))
/// .into();
/// let cycles = profiling_cycles(&traces).unwrap();
/// assert_eq!(cycles[0], [traces[1].clone(), traces[2].clone()]);
/// // Rank 1 wrote no trace of the second cycle.
/// let cycles = profiling_cycles(&traces[..3]).unwrap();
/// assert_eq!(cycles[1], [traces[0].clone()]);
/// assert_eq!(profiling_cycles(&traces[1..3]), Err(NoCycles::NotAlike));
/// ```
pub fn profiling_cycles<K: Ord + Copy>(
    traces: &[(PathBuf, K)],
) -> Result<Vec<Vec<(PathBuf, K)>>, NoCycles> {
    let cycles = cycle_indices(traces)?;
    Ok(cycles
        .into_iter()
        .map(|cycle| cycle.into_iter().map(|i| traces[i].clone()).collect())
        .collect())
}

/// [`profiling_cycles`], each trace by its index in `traces`.
fn cycle_indices<K: Ord + Copy>(traces: &[(PathBuf, K)]) -> Result<Vec<Vec<usize>>, NoCycles> {
    // Each key's traces: (export time, path, index).
    type Written<'a> = (Option<u64>, &'a PathBuf, usize);
    let mut by_key: BTreeMap<K, Vec<Written<'_>>> = BTreeMap::new();
    for (i, (path, key)) in traces.iter().enumerate() {
        let time = path
            .file_name()
            .and_then(|n| trace_discover::export_time_from_file_name(n.as_encoded_bytes()));
        by_key.entry(*key).or_default().push((time, path, i));
    }
    let k = by_key.values().map(Vec::len).max().unwrap_or(0);
    if k < 2 {
        return Err(NoCycles::NotAlike);
    }
    if by_key.values().flatten().any(|(time, ..)| time.is_none()) {
        let alike = by_key.values().all(|v| v.len() == k);
        return Err(if alike { NoCycles::Unnamed } else { NoCycles::NotAlike });
    }
    for v in by_key.values_mut() {
        v.sort();
    }
    let span = |i: usize| {
        let times = by_key.values().filter_map(|v| v.get(i)?.0);
        (times.clone().min().unwrap_or(0), times.max().unwrap_or(0))
    };
    if let Some(i) = (1..k).find(|&i| span(i - 1).1 >= span(i).0) {
        return Err(NoCycles::Interleaved(i));
    }
    Ok((0..k).map(|i| by_key.values().filter_map(|v| Some(v.get(i)?.2)).collect()).collect())
}

/// Which profiling cycle to keep of a directory of several (`--cycle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CyclePick {
    /// The n-th, from 1.
    Number(usize),
    /// The last one written.
    Last,
}

/// Why [`pick_cycle`] cannot pick the cycle asked for in a directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CycleError {
    /// The directory holds fewer cycles.
    #[error("{}", beyond(dir, *number, *of))]
    Beyond {
        /// The directory.
        dir: PathBuf,
        /// The cycle asked for.
        number: usize,
        /// How many it holds.
        of: usize,
    },
    /// Its traces claim ranks several times, but their names do not tell
    /// the cycles apart.
    #[error("{}", untold(dir, why))]
    Untold {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        why: NoCycles,
    },
}

fn shown(dir: &Path) -> String {
    match dir.as_os_str().is_empty() {
        true => ".".into(),
        false => dir.display().to_string(),
    }
}

fn beyond(dir: &Path, number: usize, of: usize) -> String {
    match of {
        1 => format!(
            "{} holds one profiling cycle (a trace per rank), so there is no cycle {number}: \
             ask for 1 or last",
            shown(dir)
        ),
        of => format!(
            "{} holds {of} profiling cycles, so there is no cycle {number}: ask for 1 to {of}, \
             or last",
            shown(dir)
        ),
    }
}

fn untold(dir: &Path, why: &NoCycles) -> String {
    let why = match why {
        NoCycles::Interleaved(n) => format!(
            "the times in their names do not tell the cycles apart (a rank wrote its trace of \
             cycle {n} after another wrote its trace of cycle {})",
            n + 1
        ),
        _ => "their names carry no time of tensorboard_trace_handler's \
              (<worker>.<time>.pt.trace.json) to order the cycles by"
            .into(),
    };
    format!(
        "{} holds several PyTorch traces of each rank, but {why}: give the directory of one cycle",
        shown(dir)
    )
}

/// A profiling cycle of a job's directory (one directory, or the node
/// directories of a multi-node job) that holds several: the one
/// [`pick_cycle`] kept, or the one a trace belongs to ([`cycles_of`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Picked {
    /// The directory.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub dir: PathBuf,
    /// The cycle kept.
    pub cycle: Cycle,
}

/// The jobs of `traces`, in path order: a job is a directory, with the
/// directories after it that share none of its ranks (a node's ranks each,
/// or a rank's traces each); its directory is the one they all are under.
fn jobs(traces: &[(PathBuf, Option<u32>)]) -> Vec<(PathBuf, Vec<usize>)> {
    let mut by_dir: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, (path, _)) in traces.iter().enumerate() {
        by_dir.entry(path.parent().unwrap_or(Path::new("")).to_path_buf()).or_default().push(i);
    }
    let mut jobs: Vec<(PathBuf, BTreeSet<Option<u32>>, Vec<usize>)> = Vec::new();
    for (dir, members) in by_dir {
        let ranks: BTreeSet<Option<u32>> = members.iter().map(|&i| traces[i].1).collect();
        match jobs.last_mut() {
            Some((shared, held, all)) if held.is_disjoint(&ranks) => {
                *shared =
                    shared.ancestors().find(|a| dir.starts_with(a)).unwrap_or(Path::new("")).into();
                held.extend(ranks);
                all.extend(members);
            }
            _ => jobs.push((dir, ranks, members)),
        }
    }
    jobs.into_iter().map(|(dir, _, members)| (dir, members)).collect()
}

/// A job's traces that its cycles are told by (its ranked ones; all, where
/// none has a rank), the others (a launcher's beside ranked ones), and its
/// cycles, each trace by its index in `traces`.
struct JobCycles {
    candidates: Vec<usize>,
    keyless: Vec<usize>,
    cycles: Result<Vec<Vec<usize>>, NoCycles>,
}

fn job_cycles(traces: &[(PathBuf, Option<u32>)], members: &[usize]) -> JobCycles {
    let ranked = members.iter().any(|&i| traces[i].1.is_some());
    let (candidates, keyless): (Vec<usize>, Vec<usize>) =
        members.iter().partition(|&&i| !ranked || traces[i].1.is_some());
    let by_rank: Vec<(PathBuf, Option<u32>)> =
        candidates.iter().map(|&i| traces[i].clone()).collect();
    let cycles = cycle_indices(&by_rank).map(|cycles| {
        cycles.into_iter().map(|c| c.into_iter().map(|at| candidates[at]).collect()).collect()
    });
    JobCycles { candidates, keyless, cycles }
}

/// Each trace's profiling cycle, and the directory of its job, where the
/// job holds several, as [`pick_cycle`] tells them apart (`--cycle N` keeps
/// the traces of cycle N); `None` for the traces of a job of one cycle, or
/// whose cycles cannot be told apart, and for a trace without a rank beside
/// ranked ones.
///
/// ```
/// use std::path::PathBuf;
/// use trace_report::{Cycle, cycles_of};
///
/// let traces: Vec<(PathBuf, Option<u32>)> = [
///     ("run/r0.1764720005000000000.pt.trace.json", Some(0)),
///     ("run/r0.1764720000000000000.pt.trace.json", Some(0)),
///     ("one/rank0.json", Some(0)),
/// ]
/// .map(|(p, r)| (PathBuf::from(p), r))
/// .into();
/// let cycles: Vec<Option<Cycle>> = cycles_of(&traces).into_iter().map(|p| Some(p?.cycle)).collect();
/// assert_eq!(cycles, [Some(Cycle { number: 2, of: 2 }), Some(Cycle { number: 1, of: 2 }), None]);
/// assert_eq!(cycles_of(&traces)[0].as_ref().unwrap().dir, PathBuf::from("run"));
/// ```
pub fn cycles_of(traces: &[(PathBuf, Option<u32>)]) -> Vec<Option<Picked>> {
    let mut of = vec![None; traces.len()];
    for (dir, members) in jobs(traces) {
        let Ok(cycles) = job_cycles(traces, &members).cycles else { continue };
        let n = cycles.len();
        for (number, cycle) in cycles.into_iter().enumerate() {
            for i in cycle {
                of[i] =
                    Some(Picked { dir: dir.clone(), cycle: Cycle { number: number + 1, of: n } });
            }
        }
    }
    of
}

/// Of `traces` (PyTorch traces and their ranks), the indices of those to
/// keep: in each job, the traces of the profiling cycle `pick` names
/// ([`profiling_cycles`] of the job's ranked traces; a trace without a rank
/// beside ranked ones is kept), and for each job that holds several, which
/// it kept. A job is a directory, with the directories after it (in path
/// order) that share none of its ranks: a node's ranks each, or a rank's
/// traces each. A job of one cycle (each rank once) is its first and its
/// last.
pub fn pick_cycle(
    traces: &[(PathBuf, Option<u32>)],
    pick: CyclePick,
) -> Result<(Vec<usize>, Vec<Picked>), CycleError> {
    let (mut keep, mut picked) = (Vec::new(), Vec::new());
    for (dir, members) in jobs(traces) {
        let JobCycles { candidates, keyless, cycles } = job_cycles(traces, &members);
        keep.extend(keyless);
        let cycles = match cycles {
            Ok(cycles) => cycles,
            Err(NoCycles::NotAlike) => match pick {
                CyclePick::Number(1) | CyclePick::Last => {
                    keep.extend(candidates);
                    continue;
                }
                CyclePick::Number(number) => {
                    return Err(CycleError::Beyond { dir, number, of: 1 });
                }
            },
            Err(why) => return Err(CycleError::Untold { dir, why }),
        };
        let of = cycles.len();
        let number = match pick {
            CyclePick::Number(n) if n > of => {
                return Err(CycleError::Beyond { dir, number: n, of });
            }
            CyclePick::Number(n) => n,
            CyclePick::Last => of,
        };
        keep.extend(&cycles[number - 1]);
        picked.push(Picked { dir, cycle: Cycle { number, of } });
    }
    keep.sort_unstable();
    Ok((keep, picked))
}

/// [`pick_cycle`] over a list of which only some entries are PyTorch
/// traces (`Some((trace, rank))`): whether to keep each entry (the others,
/// `None`, are kept), and the cycle kept of each job of several.
///
/// ```
/// use std::path::PathBuf;
/// use trace_report::{CyclePick, keep_cycle};
///
/// let entries = [
///     Some((PathBuf::from("run/r0.1764720000000000000.pt.trace.json"), Some(0))),
///     None, // a rocprofv3 trace, say
///     Some((PathBuf::from("run/r0.1764720005000000000.pt.trace.json"), Some(0))),
/// ];
/// let (keep, picked) = keep_cycle(&entries, CyclePick::Last).unwrap();
/// assert_eq!(keep, [false, true, true]);
/// assert_eq!(picked[0].cycle.number, 2);
/// ```
pub fn keep_cycle(
    entries: &[Option<(PathBuf, Option<u32>)>],
    pick: CyclePick,
) -> Result<(Vec<bool>, Vec<Picked>), CycleError> {
    let (at, traces): (Vec<usize>, Vec<(PathBuf, Option<u32>)>) =
        entries.iter().enumerate().filter_map(|(i, e)| Some((i, e.clone()?))).unzip();
    let (keep, picked) = pick_cycle(&traces, pick)?;
    let mut kept: Vec<bool> = entries.iter().map(Option::is_none).collect();
    for k in keep {
        kept[at[k]] = true;
    }
    Ok((kept, picked))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces(items: &[(&str, Option<u32>)]) -> Vec<(PathBuf, Option<u32>)> {
        items.iter().map(|(p, r)| (PathBuf::from(p), *r)).collect()
    }

    /// `tensorboard_trace_handler`'s name, in `dir`, of a trace written in
    /// `cycle` by `rank`.
    fn exported(dir: &str, rank: u32, cycle: u64) -> String {
        let ns = 1_764_720_000_000_000_000 + cycle * 5_000_000_000 + u64::from(rank);
        format!("{dir}/host_{}.{ns}.pt.trace.json", 100 + rank)
    }

    #[test]
    fn each_directory_keeps_the_cycle_picked() {
        let mut items: Vec<(String, Option<u32>)> = Vec::new();
        for cycle in 0..3 {
            for rank in 0..2 {
                items.push((exported("a", rank, cycle), Some(rank)));
            }
        }
        items.push(("a/launcher.json".into(), None));
        items.push(("b/rank0.json".into(), Some(0)));
        items.push(("b/rank1.json".into(), Some(1)));
        let items: Vec<(&str, Option<u32>)> = items.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        let all = traces(&items);
        let kept = |pick| {
            pick_cycle(&all, pick).map(|(keep, picked)| {
                let kept: Vec<&Path> = keep.iter().map(|&i| all[i].0.as_path()).collect();
                (kept.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(), picked)
            })
        };
        let (last, picked) = kept(CyclePick::Last).unwrap();
        assert_eq!(
            last,
            [
                exported("a", 0, 2),
                exported("a", 1, 2),
                "a/launcher.json".into(),
                "b/rank0.json".into(),
                "b/rank1.json".into()
            ]
        );
        assert_eq!(picked, [Picked { dir: "a".into(), cycle: Cycle { number: 3, of: 3 } }]);
        let (first, _) = kept(CyclePick::Number(1)).unwrap();
        assert_eq!(first[..2], [exported("a", 0, 0), exported("a", 1, 0)]);
        // Two nodes of one job, the second stopped a cycle earlier: the
        // last cycle of the job, not of each node.
        let nodes: Vec<(String, Option<u32>)> = [(0, 0, 3), (1, 1, 3), (2, 2, 2), (3, 3, 2)]
            .iter()
            .flat_map(|&(node, rank, cycles)| {
                let dir = format!("job/node_{}", node / 2);
                (0..cycles).map(move |c| (exported(&dir, rank, c), Some(rank)))
            })
            .collect();
        let nodes: Vec<(PathBuf, Option<u32>)> =
            nodes.into_iter().map(|(p, r)| (PathBuf::from(p), r)).collect();
        let (keep, picked) = pick_cycle(&nodes, CyclePick::Last).unwrap();
        let node_kept: Vec<&PathBuf> = keep.iter().map(|&i| &nodes[i].0).collect();
        assert_eq!(node_kept, [&nodes[2].0, &nodes[5].0], "ranks 0 and 1 wrote the third");
        assert_eq!(picked, [Picked { dir: "job".into(), cycle: Cycle { number: 3, of: 3 } }]);
        // b holds one cycle, a three.
        let err = kept(CyclePick::Number(2)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "b holds one profiling cycle (a trace per rank), so there is no cycle 2: ask for 1 or \
             last"
        );
        let err = pick_cycle(&all[..6], CyclePick::Number(4)).unwrap_err();
        assert_eq!(err, CycleError::Beyond { dir: "a".into(), number: 4, of: 3 });
    }

    #[test]
    fn a_directory_whose_cycles_cannot_be_told_apart_is_refused() {
        let all = traces(&[
            ("r0_a.json", Some(0)),
            ("r0_b.json", Some(0)),
            ("r1_a.json", Some(1)),
            ("r1_b.json", Some(1)),
        ]);
        let err = pick_cycle(&all, CyclePick::Last).unwrap_err();
        assert_eq!(
            err.to_string(),
            ". holds several PyTorch traces of each rank, but their names carry no time of \
             tensorboard_trace_handler's (<worker>.<time>.pt.trace.json) to order the cycles by: \
             give the directory of one cycle"
        );
        // A process without a rank: each of its traces a cycle.
        let single = traces(&[(&exported("s", 0, 1), None), (&exported("s", 0, 0), None)]);
        let (keep, picked) = pick_cycle(&single, CyclePick::Last).unwrap();
        let last = Picked { dir: "s".into(), cycle: Cycle { number: 2, of: 2 } };
        assert_eq!((keep, picked), (vec![0], vec![last]));
    }

    #[test]
    fn each_trace_is_labelled_with_the_cycle_pick_cycle_keeps_it_in() {
        let mut items: Vec<(String, Option<u32>)> = Vec::new();
        // Two nodes of one job, the second stopped a cycle earlier.
        for (node, rank, cycles) in [(0, 0, 2), (0, 1, 2), (1, 2, 1), (1, 3, 1)] {
            for c in 0..cycles {
                items.push((exported(&format!("job/node_{node}"), rank, c), Some(rank)));
            }
        }
        items.push(("job/node_0/launcher.json".into(), None));
        items.push(("one/rank0.json".into(), Some(0)));
        items.push(("one/rank1.json".into(), Some(1)));
        let items: Vec<(&str, Option<u32>)> = items.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        let all = traces(&items);
        let c = |number| Some(Cycle { number, of: 2 });
        let cycles = |t: &[(PathBuf, Option<u32>)]| -> Vec<Option<Cycle>> {
            cycles_of(t).into_iter().map(|p| Some(p?.cycle)).collect()
        };
        assert_eq!(cycles(&all), [c(1), c(2), c(1), c(2), c(1), c(1), None, None, None]);
        assert!(cycles_of(&all)[..6].iter().all(|p| p.as_ref().unwrap().dir == Path::new("job")));
        // (`one` holds one cycle: --cycle 2 is refused there.)
        let job = &all[..7];
        for pick in [1, 2] {
            let (keep, _) = pick_cycle(job, CyclePick::Number(pick)).unwrap();
            let labelled: Vec<usize> =
                (0..job.len()).filter(|&i| cycles(job)[i] == c(pick)).collect();
            let kept: Vec<usize> = keep.into_iter().filter(|&i| cycles(job)[i].is_some()).collect();
            assert_eq!(kept, labelled, "cycle {pick}");
        }
        // Cycles that cannot be told apart are labelled with none.
        let untold = traces(&[("r0_a.json", Some(0)), ("r0_b.json", Some(0))]);
        assert_eq!(cycles(&untold), [None, None]);
    }
}
