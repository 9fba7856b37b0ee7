use std::path::{Path, PathBuf};

use super::{Member, PairError, PairedBy, Unpaired, by_node, list_paths, pair, paired_by};

fn paths() -> [&'static Path; 2] {
    [Path::new("base"), Path::new("new")]
}

fn ranked(path: &str, rank: Option<u32>) -> Member {
    Member::trace(path, rank)
}

/// A rocprofv3 trace that ran its kernels on `gpu`.
fn on(path: &str, gpu: Option<u32>) -> Member {
    Member { gpu, rocprof: true, ..Member::trace(path, None) }
}

/// `(key, baseline index, new index)`.
type Pair = (Option<u32>, usize, usize);

#[track_caller]
fn pairs(base: &[Member], new: &[Member], by: PairedBy) -> (Vec<Pair>, Vec<String>) {
    let pairing = pair(paths(), [base, new], by).unwrap();
    (pairing.pairs, pairing.unpaired.iter().map(ToString::to_string).collect())
}

#[track_caller]
fn refused(base: &[Member], new: &[Member], by: PairedBy) -> String {
    pair(paths(), [base, new], by).unwrap_err().to_string()
}

#[test]
fn runs_pair_by_rank_and_say_which_ranks_one_of_them_lacks() {
    let base = [ranked("base/r1", Some(1)), ranked("base/r0", Some(0)), ranked("base/r2", Some(2))];
    let new = [ranked("new/r0", Some(0)), ranked("new/r1", Some(1)), ranked("new/r3", Some(3))];
    let (pairs, unpaired) = pairs(&base, &new, PairedBy::Rank);
    assert_eq!(pairs, [(Some(0), 1, 0), (Some(1), 0, 1)]);
    assert_eq!(unpaired, ["rank 2 only in the baseline run", "rank 3 only in the new run"]);
    // A trace without a rank beside ranked ones (a launcher's) is left out, and named.
    let new = [ranked("new/r0", Some(0)), ranked("new/launcher", None), ranked("new/r2", Some(2))];
    let (pairs, unpaired) = super::tests::pairs(&base, &new, PairedBy::Rank);
    assert_eq!(pairs, [(Some(0), 1, 0), (Some(2), 2, 2)]);
    assert_eq!(
        unpaired,
        [
            "rank 1 only in the baseline run",
            "1 trace without a rank (from its name, a trace's distributedInfo, or a report's \
             summary.json): new/launcher"
        ]
    );
    // A run diffed with itself: its trace without a rank is named once (it
    // was "2 traces" for one).
    let same = [ranked("run/r0", Some(0)), ranked("run/launcher", None), ranked("run/r1", Some(1))];
    let (pairs, unpaired) = super::tests::pairs(&same, &same, PairedBy::Rank);
    assert_eq!(pairs.len(), 2);
    assert_eq!(
        unpaired,
        ["1 trace without a rank (from its name, a trace's distributedInfo, or a report's \
          summary.json): run/launcher"]
    );
    // A scaling run: ranks 8 to 15 are new, said as a range.
    let eight: Vec<Member> = (0..8).map(|r| ranked(&format!("base/r{r}"), Some(r))).collect();
    let sixteen: Vec<Member> = (0..16).map(|r| ranked(&format!("new/r{r}"), Some(r))).collect();
    let (pairs, unpaired) = super::tests::pairs(&eight, &sixteen, PairedBy::Rank);
    assert_eq!((pairs.len(), unpaired), (8, vec!["rank 8-15 only in the new run".to_string()]));
    // One trace each: compared whatever their ranks.
    let (pairs, _) = super::tests::pairs(&base[..1], &new[..1], PairedBy::Rank);
    assert_eq!(pairs, [(None, 0, 0)]);
}

#[test]
fn what_cannot_pair_is_an_error_naming_the_traces() {
    let two = [ranked("base/a", Some(0)), ranked("base/b", Some(1))];
    let text = refused(&two, &[ranked("new/x", Some(0))], PairedBy::Rank);
    assert_eq!(
        text,
        "base holds 2 traces (base/a, base/b) and new one: name the trace to compare, or give two \
         runs to compare rank by rank"
    );
    let six: Vec<Member> = (0..6).map(|r| ranked(&format!("new/{r}"), Some(r))).collect();
    let text = refused(&[ranked("base/a", None)], &six, PairedBy::Rank);
    assert!(
        text.starts_with("new holds 6 traces (new/0, new/1, new/2, new/3, and 2 more)"),
        "{text}"
    );
    let text = refused(&two, &[ranked("new/x", None), ranked("new/y", None)], PairedBy::Rank);
    assert!(text.starts_with("new holds 2 traces and none has a rank"), "{text}");
    let text = refused(&two, &[ranked("new/x", Some(0)), ranked("new/y", Some(0))], PairedBy::Rank);
    assert!(text.contains("two traces of rank 0 (new/x and new/y)"), "{text}");
    let text = refused(&two, &[ranked("new/x", Some(5)), ranked("new/y", Some(6))], PairedBy::Rank);
    assert_eq!(
        text,
        "base and new share no rank (rank 0, 1 only in the baseline run; rank 5, 6 only in the \
         new run): nothing to compare rank by rank"
    );
    // Reports are named as reports.
    let reports: Vec<Member> =
        two.iter().map(|m| Member { report: true, rank: None, ..m.clone() }).collect();
    let text = refused(&reports, &two, PairedBy::Rank);
    assert!(text.starts_with("base holds 2 reports and none has a rank"), "{text}");
    // Perfetto traces without a GPU: how to get one.
    let pftraces = [on("new/1.pftrace", None), on("new/2.pftrace", None)];
    let err =
        pair(paths(), [&[on("base/1", Some(0)), on("base/2", Some(1))], &pftraces], PairedBy::Gpu)
            .unwrap_err();
    assert!(matches!(err, PairError::NoKeys { perfetto: true, count: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("--agent-index type-relative"), "{err}");
}

#[test]
fn rocprofv3_runs_pair_gpu_by_gpu() {
    let base = vec![on("base/7", Some(1)), on("base/8", Some(0)), on("base/9", None)];
    let new = vec![on("new/3", Some(0)), on("new/4", Some(2)), on("new/5", Some(1))];
    // Decided before the traces are read (it is what reading them is for).
    let unread = |side: &[Member]| -> Vec<Member> {
        side.iter().map(|m| Member { gpu: None, ..m.clone() }).collect()
    };
    assert_eq!(paired_by([&unread(&base), &unread(&new)]), PairedBy::Gpu);
    let (pairs, unpaired) = pairs(&base, &new, PairedBy::Gpu);
    assert_eq!(pairs, [(Some(0), 1, 0), (Some(1), 0, 2)]);
    assert_eq!(
        unpaired,
        ["GPU 2 only in the new run", "1 trace whose kernels ran on no single GPU: base/9"]
    );
    // A ranked trace, or a PyTorch one, on either side: rank by rank.
    let kineto = [ranked("new/a", None), ranked("new/b", None)];
    assert_eq!(paired_by([&base, &kineto]), PairedBy::Rank);
    let with_rank = [on("new/a", None), Member { rank: Some(1), ..on("new/b", None) }];
    assert_eq!(paired_by([&base, &with_rank]), PairedBy::Rank);
    // One trace each needs no pairing.
    assert_eq!(paired_by([&base[..1], &new[..1]]), PairedBy::Rank);
    let twice = [on("new/x", Some(1)), on("new/y", Some(1))];
    let text = refused(&base, &twice, PairedBy::Gpu);
    assert!(text.contains("two traces of GPU 1 (new/x and new/y)"), "{text}");
    assert!(text.contains("compared GPU by GPU"), "{text}");
}

#[test]
fn nodes_pair_by_the_names_of_their_directories() {
    let mut sides = [
        vec![
            on("base/node_10/a", Some(0)),
            on("base/node_2/b", Some(0)),
            on("base/node_2/c", Some(1)),
        ],
        vec![
            on("new/node_2/x", Some(1)),
            on("new/node_2/y", Some(0)),
            on("new/node_10/z", Some(0)),
        ],
    ];
    let nodes = by_node(&mut sides).unwrap();
    assert!(nodes.by_name);
    let dir = |d: &str| Some(PathBuf::from(d));
    // node_2 before node_10.
    assert_eq!(
        nodes.dirs,
        [[dir("base/node_2"), dir("new/node_2")], [dir("base/node_10"), dir("new/node_10")]]
    );
    let keys = |side: &[Member]| -> Vec<Option<u32>> { side.iter().map(|m| m.gpu).collect() };
    assert_eq!(keys(&sides[0]), [Some(1 << 16), Some(0), Some(1)]);
    assert_eq!(keys(&sides[1]), [Some(1), Some(0), Some(1 << 16)]);
    let pairing = pair(paths(), [&sides[0], &sides[1]], PairedBy::NodeGpu).unwrap();
    assert_eq!(pairing.pairs, [(Some(0), 1, 1), (Some(1), 2, 0), (Some(1 << 16), 0, 2)]);
    assert_eq!(
        nodes.to_string(),
        "the traces are in a directory per node: compared GPU by GPU within each node, the nodes \
         paired by the name of their directories (node 0: base/node_2 and new/node_2; node 1: \
         base/node_10 and new/node_10)"
    );
    assert_eq!(PairedBy::NodeGpu.label(1 << 16 | 3), "node 1 GPU 3");
    assert_eq!(PairedBy::NodeGpu.value(1 << 16 | 3), "1:3");
}

#[test]
fn nodes_of_other_names_pair_in_order_and_a_missing_one_is_said() {
    // Hosts of another cluster: by order. A report's node is its trace's.
    let report = Member {
        report: true,
        made_of: Some("base/hostB/1_results.json".into()),
        ..on("reports/1_results", Some(0))
    };
    let mut sides = [
        vec![on("base/hostA/1", Some(0)), report],
        vec![on("new/gpu-07/1", Some(0)), on("new/gpu-08/1", Some(0)), on("new/gpu-09/1", Some(0))],
    ];
    let nodes = by_node(&mut sides).unwrap();
    assert!(!nodes.by_name);
    assert_eq!(nodes.dirs.len(), 3);
    assert_eq!(nodes.dirs[1][0], Some(PathBuf::from("base/hostB")));
    assert_eq!(nodes.dirs[2][0], None);
    assert!(nodes.to_string().ends_with("node 2: - and new/gpu-09)"), "{nodes}");
    let pairing = pair(paths(), [&sides[0], &sides[1]], PairedBy::NodeGpu).unwrap();
    assert_eq!(pairing.pairs.len(), 2);
    assert_eq!(
        pairing.unpaired,
        [Unpaired::OnlyIn { by: PairedBy::NodeGpu, keys: vec![2 << 16], new: true }]
    );
    assert_eq!(pairing.unpaired[0].to_string(), "node 2 GPU 0 only in the new run");
    // One directory a side: no nodes.
    let mut one = [vec![on("a/1", Some(0)), on("a/2", Some(1))], vec![on("b/1", Some(0))]];
    assert_eq!(by_node(&mut one), None);
}

mod properties {
    use std::collections::BTreeSet;

    use proptest::{collection::vec, option, prelude::*};

    use super::{paths, ranked};
    use crate::pairing::{Member, PairError, PairedBy, Unpaired, pair};

    fn side(name: &str, ranks: &[Option<u32>]) -> Vec<Member> {
        ranks.iter().enumerate().map(|(i, r)| ranked(&format!("{name}/{i}"), *r)).collect()
    }

    fn keys(ranks: &[Option<u32>]) -> BTreeSet<u32> {
        ranks.iter().flatten().copied().collect()
    }

    fn has_twice(ranks: &[Option<u32>]) -> bool {
        keys(ranks).len() < ranks.iter().flatten().count()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

        /// Two runs pair each rank both have, each trace once, in rank
        /// order, and say what they left out; or are refused for a reason
        /// that holds.
        #[test]
        fn two_runs_pair_each_shared_rank_once_or_are_refused_for_a_reason_that_holds(
            base in vec(option::weighted(0.8, 0u32..6), 2..8),
            new in vec(option::weighted(0.8, 0u32..6), 2..8),
        ) {
            let ranks = [&base, &new];
            let sides = [side("base", &base), side("new", &new)];
            let no_keys = ranks.map(|r| r.iter().all(Option::is_none));
            let twice = ranks.map(|r| has_twice(r));
            let shared: BTreeSet<u32> = keys(&base).intersection(&keys(&new)).copied().collect();
            match pair(paths(), [&sides[0], &sides[1]], PairedBy::Rank) {
                Ok(pairing) => {
                    prop_assert!(!no_keys[0] && !no_keys[1] && !twice[0] && !twice[1]);
                    let paired: Vec<u32> = pairing.pairs.iter().map(|p| p.0.unwrap()).collect();
                    prop_assert_eq!(&paired, &shared.iter().copied().collect::<Vec<_>>());
                    for (key, b, n) in &pairing.pairs {
                        prop_assert_eq!(base[*b], *key);
                        prop_assert_eq!(new[*n], *key);
                    }
                    let mut only = [BTreeSet::new(), BTreeSet::new()];
                    let mut keyless = 0;
                    for u in &pairing.unpaired {
                        match u {
                            Unpaired::OnlyIn { keys, new, .. } => only[usize::from(*new)].extend(keys.iter().copied()),
                            Unpaired::Keyless { traces, .. } => keyless += traces.len(),
                        }
                    }
                    prop_assert_eq!(&only[0], &keys(&base).difference(&keys(&new)).copied().collect());
                    prop_assert_eq!(&only[1], &keys(&new).difference(&keys(&base)).copied().collect());
                    prop_assert_eq!(keyless, base.iter().chain(&new).filter(|r| r.is_none()).count());
                }
                Err(PairError::NoKeys { side, .. }) => {
                    let i = usize::from(side == std::path::Path::new("new"));
                    prop_assert!(no_keys[i]);
                }
                Err(PairError::KeyTwice { side, key, traces, .. }) => {
                    let i = usize::from(side == std::path::Path::new("new"));
                    prop_assert!(twice[i] && traces[0] != traces[1]);
                    prop_assert_eq!(ranks[i].iter().filter(|r| **r == Some(key)).count() >= 2, true);
                }
                Err(PairError::NothingShared { .. }) => {
                    prop_assert!(shared.is_empty() && !twice[0] && !twice[1]);
                }
                Err(err @ PairError::OneAndMany { .. }) => prop_assert!(false, "{err}"),
            }
        }
    }
}

/// Sets of traces in messages: up to four named, then how many more.
#[test]
fn a_long_list_of_paths_names_four_and_counts_the_rest() {
    let six: Vec<PathBuf> = (0..6).map(|i| PathBuf::from(format!("r{i}.json"))).collect();
    assert_eq!(list_paths(&six), "r0.json, r1.json, r2.json, r3.json, and 2 more");
    assert_eq!(list_paths(&[Path::new("a.json")]), "a.json");
    assert_eq!(list_paths::<&Path>(&[]), "");
}
