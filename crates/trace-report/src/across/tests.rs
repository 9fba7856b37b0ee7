use std::path::PathBuf;

use super::{LeftOut, RankRow, Timed};
use crate::{Cycle, Picked};

/// A Kineto trace of `rank` with these totals (ms).
fn kineto(trace: &str, rank: Option<u32>, total: f64, exposed_comm: f64) -> Timed {
    Timed {
        timeline: vec![
            ("computation_time".into(), total - exposed_comm),
            ("exposed_comm_time".into(), exposed_comm),
            ("total_time".into(), total),
        ],
        ..Timed::new(trace, rank)
    }
}

/// A rocprofv3 trace that ran on `gpu` with `comm` ms of collective kernels.
fn rocprof(trace: &str, gpu: Option<u32>, busy: f64, comm: f64) -> Timed {
    Timed {
        rocprof: true,
        gpu_index: gpu,
        comm_ms: Some(comm),
        timeline: vec![("busy_time".into(), busy), ("total_time".into(), busy + 1.0)],
        ..Timed::new(trace, None)
    }
}

fn rank_row(rank: u32, total: f64, slowest: bool) -> RankRow {
    RankRow { run: "run".into(), rank, total, slowest, ..RankRow::default() }
}

#[test]
fn a_run_flags_its_slowest_rank_and_the_one_the_others_waited_for() {
    let traces = [
        kineto("run/rank1.json", Some(1), 15.0, 0.5),
        kineto("run/rank0.json", Some(0), 10.0, 4.0),
        // No timeline: in no table.
        Timed::new("run/rank2.json", Some(2)),
        // No rank: in no table.
        kineto("run/launcher.json", None, 1.0, 0.0),
    ];
    let (rows, reasons) = super::cross_rank(&traces);
    assert!(reasons.is_empty(), "{reasons:?}");
    let seen: Vec<(u32, &str, f64, bool, bool)> = rows
        .iter()
        .map(|r| {
            let trace = r.trace_in_run().to_str().unwrap();
            (r.rank, trace, r.computation, r.slowest, r.least_exposed_comm)
        })
        .collect();
    assert_eq!(seen, [(0, "rank0.json", 6.0, false, false), (1, "rank1.json", 14.5, true, true)]);
    assert_eq!(rows[0].run, PathBuf::from("run"));
}

#[test]
fn ranks_claimed_twice_split_into_runs_by_directory() {
    let traces = [
        kineto("root/a/rank0.json", Some(0), 10.0, 1.0),
        kineto("root/a/rank1.json", Some(1), 10.0, 1.0),
        kineto("root/b/rank0.json", Some(0), 8.0, 2.0),
        kineto("root/b/rank1.json", Some(1), 9.0, 1.0),
        // Alone in its directory: no run, and no reason (a single-GPU run).
        kineto("root/c/rank0.json", Some(0), 8.0, 2.0),
    ];
    let (rows, reasons) = super::cross_rank(&traces);
    assert!(reasons.is_empty(), "{reasons:?}");
    let runs: Vec<(String, Vec<u32>)> = super::by_run(&rows)
        .into_iter()
        .map(|run| (run[0].run.display().to_string(), run.iter().map(|r| r.rank).collect()))
        .collect();
    assert_eq!(runs, [("root/a".to_string(), vec![0, 1]), ("root/b".to_string(), vec![0, 1])]);
    // All alike: nothing flagged.
    assert!(rows[..2].iter().all(|r| !r.slowest && !r.least_exposed_comm));
    assert!(rows[3].slowest && rows[3].least_exposed_comm);
    // One directory whose rank 0 is claimed twice cannot be split.
    let (rows, reasons) = super::cross_rank(&[
        kineto("x/rank0.json", Some(0), 1.0, 0.0),
        kineto("x/r0.json", Some(0), 1.0, 0.0),
    ]);
    assert!(rows.is_empty());
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].1.contains("rank 0"), "{reasons:?}");
}

#[test]
fn a_runs_spread_is_its_slowest_against_its_fastest_and_median() {
    let two = [rank_row(0, 10.0, false), rank_row(1, 15.0, true)];
    let spread = super::spread(&two);
    let (slowest, fastest) = spread.slowest.unwrap();
    assert_eq!((slowest.rank, fastest.rank, spread.median), (1, 0, None));
    let four = [
        rank_row(0, 12.0, false),
        rank_row(1, 20.0, true),
        rank_row(2, 8.0, false),
        rank_row(3, 14.0, false),
    ];
    let spread = super::spread(&four);
    assert_eq!(spread.slowest.map(|(s, f)| (s.rank, f.rank)), Some((1, 2)));
    assert_eq!(spread.median, Some(13.0));
    let mut three = [rank_row(0, 9.0, false), rank_row(1, 11.0, true), rank_row(2, 10.0, false)];
    assert_eq!(super::spread(&three).median, Some(10.0));
    assert_eq!(super::spread(&three).waited_for, None);
    three[2].least_exposed_comm = true;
    assert_eq!(super::spread(&three).waited_for.map(|r| r.rank), Some(2));
    // All alike: nothing to say.
    let alike = [rank_row(0, 5.0, false), rank_row(1, 5.0, false), rank_row(2, 5.0, false)];
    let spread = super::spread(&alike);
    assert!(spread.slowest.is_none() && spread.median.is_none() && spread.waited_for.is_none());
}

#[test]
fn each_cycle_of_a_job_is_its_slowest_trace_against_the_first() {
    // (job, cycle, of, rank, total ms, steps)
    let trace = |job: &str, number, of, rank: Option<u32>, total: f64, steps| Timed {
        cycle: Some(Picked { dir: job.into(), cycle: Cycle { number, of } }),
        steps,
        ..kineto(&format!("{job}/r{}_{number}.json", rank.unwrap_or(9)), rank, total, 0.0)
    };
    let traces = [
        // Two ranks, 3 cycles of 5 steps; rank 1 slowest in the last.
        trace("a", 1, 3, Some(0), 50.0, Some(5)),
        trace("a", 1, 3, Some(1), 40.0, Some(5)),
        trace("a", 2, 3, Some(0), 45.0, Some(5)),
        trace("a", 2, 3, Some(1), 45.0, Some(5)),
        trace("a", 3, 3, Some(0), 40.0, Some(5)),
        trace("a", 3, 3, Some(1), 60.0, Some(5)),
        // One process; its first cycle could not be read, and one trace
        // counts no steps: times are totals.
        trace("b", 2, 3, None, 10.0, None),
        trace("b", 3, 3, None, 8.0, Some(2)),
        // A job of which one cycle was read (--cycle) has no rows.
        trace("c", 2, 2, Some(0), 1.0, Some(1)),
    ];
    let rows = super::cycle_trend(&traces);
    let seen: Vec<(&str, usize, f64, bool, Option<u32>)> = rows
        .iter()
        .map(|r| (r.run.to_str().unwrap(), r.cycle.number, r.gpu_ms, r.per_step, r.rank))
        .collect();
    assert_eq!(
        seen,
        [
            ("a", 1, 10.0, true, Some(0)),
            ("a", 2, 9.0, true, Some(0)),
            ("a", 3, 12.0, true, Some(1)),
            ("b", 2, 10.0, false, None),
            ("b", 3, 8.0, false, None),
        ]
    );
    assert_eq!(rows[2].slowest, PathBuf::from("a/r1_3.json"));
    assert_eq!(rows[2].traces, 2);
    let jobs = super::by_job(&rows);
    let said: Vec<String> = super::vs_first(jobs[0]).iter().map(|p| format!("{p:.1?}")).collect();
    assert_eq!(said, ["None", "Some(-10.0)", "Some(20.0)"]);
    assert_eq!(super::vs_first(jobs[1]), [None, None], "no first cycle to compare with");
}

#[test]
fn rocprofv3_processes_are_set_side_by_side_gpu_by_gpu() {
    let traces = [
        rocprof("node/2_results.json", Some(2), 30.0, 9.0),
        rocprof("node/1_results.json", Some(0), 30.0, 3.0),
        rocprof("node/3_results.json", Some(1), 31.0, 5.0),
        // Its kernels ran on several GPUs.
        rocprof("node/4_results.json", None, 31.0, 5.0),
        // A rank: the cross-rank table's.
        Timed { rank: Some(0), ..rocprof("node/rank0.json", Some(3), 1.0, 1.0) },
        // Alone in its directory.
        rocprof("other/5_results.json", Some(0), 1.0, 1.0),
    ];
    let (rows, left_out) = super::cross_gpu(&traces);
    let seen: Vec<(u32, &str, f64, bool)> = rows
        .iter()
        .map(|r| (r.gpu, r.trace_in_run().to_str().unwrap(), r.comm, r.least_comm))
        .collect();
    assert_eq!(
        seen,
        [
            (0, "1_results.json", 3.0, true),
            (1, "3_results.json", 5.0, false),
            (2, "2_results.json", 9.0, false)
        ]
    );
    assert_eq!((rows[0].busy, rows[0].profiled), (30.0, 31.0));
    assert_eq!(super::by_dir(&rows).len(), 1);
    assert_eq!(left_out, [LeftOut::SeveralGpus { trace: "node/4_results.json".into() }]);
}

#[test]
fn a_directory_whose_processes_share_a_gpu_has_no_table() {
    let traces = [
        rocprof("1_results.json", Some(0), 1.0, 1.0),
        rocprof("2_results.json", Some(1), 1.0, 1.0),
        rocprof("3_results.json", Some(0), 1.0, 1.0),
    ];
    let (rows, left_out) = super::cross_gpu(&traces);
    assert!(rows.is_empty());
    assert_eq!(
        left_out,
        [LeftOut::GpuTwice {
            dir: "".into(),
            traces: 3,
            gpu: 0,
            claimed_by: ["1_results.json".into(), "3_results.json".into()],
        }]
    );
}

mod properties {
    use std::collections::BTreeSet;

    use proptest::{collection::vec, prelude::*, sample::select};

    use super::kineto;
    use crate::across::{by_run, cross_rank, spread};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

        /// Each ranked trace is in one run at most; a run's ranks are
        /// distinct and in order; it flags one slowest rank exactly when
        /// its ranks' times differ, and that rank is the slowest.
        #[test]
        fn each_run_holds_distinct_ranks_and_flags_its_slowest_when_times_differ(
            traces in vec((select(vec!["a", "b", "a/x"]), 0u32..4, select(vec![1.0, 2.0, 3.0])), 0..12),
        ) {
            let traces: Vec<_> = traces
                .iter()
                .enumerate()
                .map(|(i, (dir, rank, total))| kineto(&format!("{dir}/t{i}.json"), Some(*rank), *total, 0.0))
                .collect();
            let (rows, _) = cross_rank(&traces);
            let rows_traces: BTreeSet<_> = rows.iter().map(|r| &r.trace).collect();
            prop_assert_eq!(rows_traces.len(), rows.len(), "a trace in two rows");
            for run in by_run(&rows) {
                prop_assert!(run.len() >= 2);
                prop_assert!(run.windows(2).all(|w| w[0].rank < w[1].rank), "ranks out of order");
                let flagged: Vec<_> = run.iter().filter(|r| r.slowest).collect();
                let times: BTreeSet<u64> = run.iter().map(|r| r.total.to_bits()).collect();
                prop_assert_eq!(flagged.len(), usize::from(times.len() > 1));
                if let Some(slowest) = flagged.first() {
                    prop_assert!(run.iter().all(|r| r.total <= slowest.total));
                    let (s, fastest) = spread(run).slowest.unwrap();
                    prop_assert_eq!(s.rank, slowest.rank);
                    prop_assert!(run.iter().all(|r| r.total >= fastest.total));
                }
            }
        }
    }
}
