//! Two runs compared with the library: rank by rank, GPU by GPU, node by
//! node; what each side given stands for (traces, a run, its kept
//! reports); steps, op shapes, matched collectives and the regression
//! verdicts; and what stops a comparison (typed, each failure told). The
//! CLI's tests of `report diff` check its words; these, its answers.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use trace_report::{
    CompareConfig, CompareError, CompareEvents, CompareNote, Comparison, CyclePick, Kind, PairedBy,
    Role, Unpaired, compare, compare_sides,
};

/// Every note, kept.
#[derive(Default)]
struct Kept(Mutex<Vec<CompareNote>>);

impl CompareEvents for Kept {
    fn note(&self, note: CompareNote) {
        self.0.lock().unwrap().push(note);
    }
}

fn synthetic(name: &str) -> PathBuf {
    test_support::workspace_root().join("fixtures/synthetic/run/torch_profiler_output").join(name)
}

/// `dir/<to>`: the synthetic trace `from`, with `edits` made to its text.
fn trace(dir: &Path, to: &str, from: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(synthetic(from)).unwrap();
    for (old, new) in edits {
        assert!(text.contains(old), "{from} has no {old}");
        text = text.replace(old, new);
    }
    let path = dir.join(to);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// Two runs of two ranks; in the new one the GEMM takes half the time on
/// both ranks.
fn runs(dir: &Path) {
    let gemm = [(r#""ts": 121.000, "dur": 8.500"#, r#""ts": 121.000, "dur": 4.250"#)];
    for (run, edits) in [("base", &[][..]), ("new", &gemm[..])] {
        trace(dir, &format!("{run}/rank0_trace.json"), "libkineto_trace_rank0_1.json", edits);
        trace(dir, &format!("{run}/rank1_trace.json"), "libkineto_trace_rank1_2.json", edits);
    }
}

fn compared(
    baseline: &Path,
    new: &Path,
    cycles: [Option<CyclePick>; 2],
    per_step: bool,
) -> (Result<Option<Comparison>, CompareError>, Vec<CompareNote>) {
    let events = Kept::default();
    let result = compare_sides(baseline, new, cycles, &events).and_then(|sides| {
        let config = CompareConfig { jobs: 2, per_step, ..CompareConfig::new(sides) };
        compare(&config, &events)
    });
    (result, events.0.into_inner().unwrap())
}

#[test]
fn two_runs_compare_rank_by_rank() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let (result, notes) = compared(&base, &new, [None, None], false);
    let compared = result.unwrap().expect("not cancelled");
    assert_eq!(compared.by, PairedBy::Rank);
    let keys: Vec<u32> = compared.ranks.iter().map(|r| r.key).collect();
    assert_eq!(keys, [0, 1]);
    assert_eq!(compared.ranks[1].new, new.join("rank1_trace.json"));
    // The GEMM lost half its time on each rank: 8.5 µs -> 4.25 µs, twice (µs).
    let gemm = compared.diff.kernels.iter().find(|r| r.name.starts_with("Cijk_")).unwrap();
    let (b, n) = (gemm.base.unwrap(), gemm.new.unwrap());
    assert_eq!((b.time, n.time, b.count), (17.0, 8.5, Some(2.0)));
    let headline = compared.headline_times().unwrap();
    assert!(headline.new < headline.base, "{headline:?}");
    assert!(compared.ranks.iter().all(|r| r.timeline.iter().any(|row| row.name == "total_time")));
    let regression = compared.regression(0.0).unwrap();
    assert!(!regression.exceeded, "{regression:?}");
    assert_eq!([&compared.sides[0].role, &compared.sides[1].role], ["baseline", "new"]);
    // Nothing read badly: no note said so.
    let bad = notes
        .iter()
        .any(|n| matches!(n, CompareNote::Unreadable { .. } | CompareNote::SideUnreadable { .. }));
    assert!(!bad, "{notes:?}");
    // Its CSVs: the timeline per rank, with a rank column first.
    let csvs = compared.write_csvs(&dir.path().join("diff")).unwrap();
    let timeline = std::fs::read_to_string(&csvs[0]).unwrap();
    assert!(timeline.starts_with("rank,type,"), "{timeline}");
}

#[test]
fn a_trace_that_cannot_be_read_is_told_and_stops_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    let cut = dir.path().join("new/rank1_trace.json");
    let text = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let (result, notes) =
        compared(&dir.path().join("base"), &dir.path().join("new"), [None, None], false);
    assert!(matches!(result, Err(CompareError::Unreadable { count: 1 })), "{result:?}");
    let told: Vec<(Role, bool)> = notes
        .iter()
        .filter_map(|n| match n {
            CompareNote::SideUnreadable { role, report, .. } => Some((*role, *report)),
            _ => None,
        })
        .collect();
    assert_eq!(told, [(Role::New, false)]);
}

#[test]
fn what_cannot_be_compared_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    let rocprof = test_support::workspace_root()
        .join("fixtures/synthetic/run/rocprof_output/9999_results.json");
    let kineto = dir.path().join("base/rank0_trace.json");
    let (result, _) = compared(&rocprof, &kineto, [None, None], false);
    match result {
        Err(CompareError::KindsDiffer { baseline_kind, new_kind, .. }) => {
            assert_eq!((baseline_kind, new_kind), (Kind::Rocprofv3, Kind::Kineto));
        }
        other => panic!("{other:?}"),
    }
    // A side not there is named before either is looked into.
    let (result, _) = compared(&dir.path().join("gone"), &kineto, [None, None], false);
    assert!(
        matches!(result, Err(CompareError::Missing { ref path, .. }) if path.ends_with("gone"))
    );
    // A workbook holds no table a comparison reads.
    let book = dir.path().join("base.xlsx");
    std::fs::write(&book, b"PK").unwrap();
    let (result, _) = compared(&book, &kineto, [None, None], false);
    assert!(matches!(result, Err(CompareError::Workbook { .. })), "{result:?}");
    // One trace against a run of two: nothing to pair them by.
    let (result, _) = compared(&kineto, &dir.path().join("new"), [None, None], false);
    assert!(matches!(result, Err(CompareError::Pair(_))), "{result:?}");
}

#[test]
fn a_side_of_several_profiling_cycles_is_compared_one_cycle_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    // tensorboard_trace_handler's names: a trace per rank each cycle.
    for stamp in ["1764720000000000000", "1764720005000000000"] {
        for rank in 0..2 {
            let from = format!("libkineto_trace_rank{rank}_{}.json", rank + 1);
            trace(dir.path(), &format!("run/host_{rank}.{stamp}.pt.trace.json"), &from, &[]);
        }
    }
    let run = dir.path().join("run");
    let (result, _) = compared(&run, &run, [None, None], false);
    match result {
        Err(CompareError::SeveralCycles { of, reports, .. }) => {
            assert_eq!((of, reports), (2, false))
        }
        other => panic!("{other:?}"),
    }
    let (result, _) =
        compared(&run, &run, [Some(CyclePick::Number(1)), Some(CyclePick::Last)], false);
    let compared = result.unwrap().unwrap();
    let cycles = compared.sides.each_ref().map(|s| s.cycle.map(|c| (c.number, c.of)));
    assert_eq!(cycles, [Some((1, 2)), Some((2, 2))]);
    assert_eq!(compared.ranks.len(), 2);
}

#[test]
fn per_step_needs_the_steps_a_report_without_a_record_does_not_keep() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    // A report directory of TraceLens' CSVs only (no record): its steps are
    // not known (nor are the synthetic trace's: it marks no step).
    let report = dir.path().join("rank0_trace_csv");
    std::fs::create_dir(&report).unwrap();
    let trace = dir.path().join("base/rank0_trace.json");
    let summary = trace_summary::summarize_file(&trace).unwrap();
    for (name, table) in summary.tracelens_tables() {
        std::fs::write(report.join(format!("{name}.csv")), table.to_csv()).unwrap();
    }
    let (result, _) = compared(&report, &trace, [None, None], true);
    match result {
        Err(CompareError::StepsUnknown { traces }) => {
            assert_eq!(traces, [report.clone(), trace.clone()])
        }
        other => panic!("{other:?}"),
    }
    // Totals compare all the same.
    let (result, _) = compared(&report, &trace, [None, None], false);
    let compared = result.unwrap().unwrap();
    assert!(compared.sides[0].report && !compared.sides[1].report);
    assert!(compared.diff.timeline.iter().all(|r| r.base == r.new), "{:?}", compared.diff.timeline);
}

/// rocprofv3 runs pair GPU by GPU: a GPU only one run has is told and left
/// out, each pair keeps its collective kernels, and the headline is the
/// busiest GPU's busy time. Two processes of one GPU are no run to pair;
/// a trace that cannot be read stops the comparison before it.
#[test]
fn rocprofv3_runs_compare_gpu_by_gpu() {
    let dir = tempfile::tempdir().unwrap();
    test_support::rocprof::write_rocprof_processes(
        dir.path(),
        &[
            ("base/host/100_results.json", 100, 0, 200, 100),
            ("base/host/101_results.json", 101, 1, 300, 100),
            ("base/host/102_results.json", 102, 2, 200, 100),
            ("new/host/201_results.json", 201, 1, 450, 150),
            ("new/host/200_results.json", 200, 0, 200, 100),
        ],
    );
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let (result, notes) = compared(&base, &new, [None, None], false);
    let c = result.unwrap().unwrap();
    assert_eq!(c.by, PairedBy::Gpu);
    let keys: Vec<u32> = c.ranks.iter().map(|r| r.key).collect();
    assert_eq!(keys, [0, 1]);
    assert_eq!(c.ranks[1].new, new.join("host/201_results.json"));
    let only_base = notes.iter().any(|n| {
        matches!(n, CompareNote::Unpaired(Unpaired::OnlyIn { by: PairedBy::Gpu, keys, new: false })
            if keys == &[2])
    });
    assert!(only_base, "{notes:?}");
    // The busiest GPU: 0.4 -> 0.6 ms, of which its collectives 0.1 -> 0.15.
    let headline = c.headline_times().unwrap();
    assert_eq!((headline.base, headline.new, headline.ranks), (0.4, 0.6, Some((1, 1))));
    let comm = c.ranks[1].collectives().unwrap();
    assert_eq!((comm.base.unwrap().time, comm.new.unwrap().time), (0.1, 0.15));
    assert_eq!(c.ranks[0].collectives().map(|c| c.delta()), Some(0.0));
    let gemm = c.diff.kernel_categories.iter().find(|r| r.name == "GEMM").unwrap();
    assert_eq!((gemm.base.unwrap().time, gemm.new.unwrap().time), (0.5, 0.65));
    let regression = c.regression(5.0).unwrap();
    assert!(regression.exceeded && (regression.change_percent - 50.0).abs() < 1e-9);

    // Two processes of the new run on GPU 1.
    let second = test_support::rocprof::rocprof_process(202, 1, 10);
    std::fs::write(new.join("host/202_results.json"), &second).unwrap();
    let (result, _) = compared(&base, &new, [None, None], false);
    assert!(matches!(result, Err(CompareError::Pair(_))), "{result:?}");
    // Cut short instead: read first, told, and nothing c.
    std::fs::write(new.join("host/202_results.json"), &second[..second.len() / 2]).unwrap();
    let (result, notes) = compared(&base, &new, [None, None], false);
    assert!(matches!(result, Err(CompareError::Unreadable { count: 1 })), "{result:?}");
    let told = notes.iter().any(|n| {
        matches!(n, CompareNote::Unreadable { trace, .. } if trace.ends_with("202_results.json"))
    });
    assert!(told, "{notes:?}");
}

/// A multi-node rocprofv3 run (a directory per node): GPU by GPU within
/// each node, the nodes paired by their directories' names when one run's
/// are all in the other's, else in order; a node one run lacks is left out.
#[test]
fn multi_node_rocprofv3_runs_compare_node_by_node() {
    let dir = tempfile::tempdir().unwrap();
    let write = |file: String, gpu: u32, gemm: u64| {
        test_support::rocprof::write_rocprof_process(&dir.path().join(file), 100 + gpu, gpu, gemm);
    };
    for (run, hosts, slow) in [("base", ["h1", "h2"], 300), ("new", ["h7", "h3"], 400)] {
        for (node, host) in [2, 10].into_iter().zip(hosts) {
            for gpu in 0..2 {
                let gemm = if node == 10 && gpu == 1 { slow } else { 200 };
                write(format!("{run}/node_{node}/{host}/{}_results.json", 100 + gpu), gpu, gemm);
            }
        }
    }
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let (result, notes) = compared(&base, &new, [None, None], false);
    let c = result.unwrap().unwrap();
    assert_eq!(c.by, PairedBy::NodeGpu);
    let keys: Vec<(u32, u32)> = c.ranks.iter().map(|r| (r.key >> 16, r.key & 0xffff)).collect();
    assert_eq!(keys, [(0, 0), (0, 1), (1, 0), (1, 1)]);
    let nodes = notes.iter().find_map(|n| match n {
        CompareNote::Nodes(nodes) => Some(nodes.clone()),
        _ => None,
    });
    let nodes = nodes.unwrap_or_else(|| panic!("{notes:?}"));
    assert!(nodes.by_name);
    let names =
        |d: &Option<PathBuf>| d.as_ref().map(|d| d.strip_prefix(dir.path()).unwrap().to_owned());
    let dirs: Vec<[Option<PathBuf>; 2]> =
        nodes.dirs.iter().map(|[a, b]| [names(a), names(b)]).collect();
    assert_eq!(
        dirs,
        [
            [Some("base/node_2/h1".into()), Some("new/node_2/h7".into())],
            [Some("base/node_10/h2".into()), Some("new/node_10/h3".into())]
        ]
    );
    let headline = c.headline_times().unwrap();
    assert_eq!((headline.base, headline.new), (0.4, 0.5));

    // The first node gone from the new run: the second still pairs with its
    // namesake, the first's GPUs told as only in the baseline.
    std::fs::remove_dir_all(new.join("node_2")).unwrap();
    let (result, notes) = compared(&base, &new, [None, None], false);
    let c = result.unwrap().unwrap();
    let keys: Vec<(u32, u32)> = c.ranks.iter().map(|r| (r.key >> 16, r.key & 0xffff)).collect();
    assert_eq!(keys, [(1, 0), (1, 1)]);
    let left_out = notes.iter().any(|n| {
        matches!(n, CompareNote::Unpaired(Unpaired::OnlyIn { by: PairedBy::NodeGpu, keys, new: false })
            if keys == &[0, 1])
    });
    assert!(left_out, "{notes:?}");

    // Hosts of other names, not gathered: the nodes pair in order.
    for (run, hosts) in [("raw_base", ["h1", "h2"]), ("raw_new", ["h7", "h3"])] {
        for host in hosts {
            write(format!("{run}/{host}/100_results.json"), 0, 200);
        }
    }
    let (result, notes) =
        compared(&dir.path().join("raw_base"), &dir.path().join("raw_new"), [None, None], false);
    assert_eq!(result.unwrap().unwrap().ranks.len(), 2);
    let in_order = notes.iter().any(|n| {
        matches!(n, CompareNote::Nodes(nodes) if !nodes.by_name
        && nodes.dirs[0][1].as_ref().is_some_and(|d| d.ends_with("raw_new/h3")))
    });
    assert!(in_order, "{notes:?}");
}

/// A run's reports (`summarize_run`'s, each with its record) compare with
/// another run rank by rank as its traces do; the record keeps what the
/// CSVs do not (rank, steps), so a kept run of traces named without ranks
/// still pairs, and per step.
#[test]
fn a_runs_kept_reports_compare_as_its_traces_do() {
    let dir = tempfile::tempdir().unwrap();
    let steps = (
        "\"traceEvents\": [",
        r#""traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 4242, "tid": 4242, "ts": 100, "dur": 90},"#,
    );
    let gemm = (r#""ts": 121.000, "dur": 8.500"#, r#""ts": 121.000, "dur": 4.250"#);
    for (run, edits) in [("base", &[steps][..]), ("new", &[steps, gemm][..])] {
        // Named without ranks: `worker_a` is rank 0 by its distributedInfo.
        for (name, from) in
            [("a", "libkineto_trace_rank0_1.json"), ("b", "libkineto_trace_rank1_2.json")]
        {
            trace(dir.path(), &format!("{run}/worker_{name}.pt.trace.json"), from, edits);
        }
    }
    let (base, new, kept) =
        (dir.path().join("base"), dir.path().join("new"), dir.path().join("kept"));
    crate::run::summarized(std::slice::from_ref(&base), &kept, 3);

    let (from_reports, _) = compared(&kept, &new, [None, None], true);
    let (from_traces, _) = compared(&base, &new, [None, None], true);
    let (from_reports, from_traces) =
        (from_reports.unwrap().unwrap(), from_traces.unwrap().unwrap());
    assert!(from_reports.sides[0].report && !from_traces.sides[0].report);
    assert_eq!(from_reports.sides[0].steps, Some(1));
    let ranks: Vec<(u32, PathBuf)> =
        from_reports.ranks.iter().map(|r| (r.key, r.baseline.clone())).collect();
    assert_eq!(ranks, [(0, kept.join("worker_a")), (1, kept.join("worker_b"))]);
    for (a, b) in [
        (&from_reports.diff.kernels, &from_traces.diff.kernels),
        (&from_reports.diff.ops, &from_traces.diff.ops),
    ] {
        assert_eq!(a, b);
    }
    for (a, b) in from_reports.ranks.iter().zip(&from_traces.ranks) {
        assert_eq!(a.timeline, b.timeline);
    }
    // Per step: the GEMM's 8.5 µs -> 4.25 µs a step, the slowest rank's.
    let headline = from_reports.headline_times().unwrap();
    assert!((headline.base - 0.0085).abs() < 1e-4 && headline.new < headline.base, "{headline:?}");

    // A record that is not one is an error naming it, not a report without one.
    std::fs::write(kept.join("worker_a").join(trace_summary::RECORD), "{").unwrap();
    let (result, _) = compared(&kept, &new, [None, None], false);
    let error = result.unwrap_err();
    assert!(error.to_string().contains("worker_a/summary.json"), "{error}");
}

/// `regression(limit)`: the headline's change against a limit in percent;
/// a negative limit asks for a gain of at least that much.
#[test]
fn the_regression_verdict_is_against_the_headline() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let (faster, _) = compared(&base, &new, [None, None], false);
    let (slower, _) = compared(&new, &base, [None, None], false);
    let (faster, slower) = (faster.unwrap().unwrap(), slower.unwrap().unwrap());
    let verdict = |c: &Comparison, limit: f64| {
        let r = c.regression(limit).unwrap();
        (r.exceeded, (r.change_percent * 10.0).round() / 10.0, r.limit_percent)
    };
    assert_eq!(verdict(&faster, 0.0), (false, -50.0, 0.0));
    assert_eq!(verdict(&slower, 5.0), (true, 100.0, 5.0));
    assert_eq!(verdict(&slower, 200.0), (false, 100.0, 200.0));
    assert_eq!(verdict(&faster, -5.0), (false, -50.0, -5.0));
    assert_eq!(verdict(&faster, -60.0), (true, -50.0, -60.0));
    assert!(verdict(&slower, -5.0).0);
}

/// Traces of two GPU models: each side names its GPUs; their kernels
/// hardly share a name, their op categories do (public traces of one model).
#[test]
fn traces_of_different_gpus_compare_by_op_category() {
    let Some(root) = test_support::public::public_fixtures() else { return };
    let trace = |gpu: &str| {
        root.join(format!("kineto/tracelens/{gpu}/gaunernst_bert-small-uncased__1016001.json.gz"))
    };
    let (result, _) = compared(&trace("mi300"), &trace("h100"), [None, None], false);
    let c = result.unwrap().unwrap();
    let gpus = c.sides.each_ref().map(|s| s.gpus.clone());
    assert!(gpus[0][0].contains("MI300"), "{gpus:?}");
    assert!(gpus[1][0].contains("H100"), "{gpus:?}");
    let shared: Vec<&str> = c
        .diff
        .kernels
        .iter()
        .filter(|r| r.base.is_some() && r.new.is_some())
        .map(|r| r.name.as_str())
        .collect();
    // Only PyTorch's own kernels (built for both) share a name.
    assert!(shared.iter().all(|k| k.contains("at::native")), "{shared:?}");
    assert!(shared.len() * 4 < c.diff.kernels.len(), "{shared:?}");
    let gemm = c.diff.op_categories.iter().find(|r| r.name == "GEMM").unwrap();
    assert_eq!(gemm.new.unwrap().count, Some(26.0));
    assert!(gemm.base.is_some());
}

/// Two runs' collectives matched across their ranks, side by side: rank
/// 1's allreduce took twice as long in the new run, so the matched call's
/// latency once the last rank arrived doubled and its bus bandwidth halved.
#[test]
fn collectives_matched_across_ranks_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let nccl = [(r#""ts": 150.000, "dur": 20.000"#, r#""ts": 150.000, "dur": 40.000"#)];
    for (run, edits) in [("base", &[][..]), ("new", &nccl[..])] {
        trace(
            dir.path(),
            &format!("{run}/rank0_trace.json"),
            "libkineto_trace_rank0_1.json",
            edits,
        );
        trace(
            dir.path(),
            &format!("{run}/rank1_trace.json"),
            "libkineto_trace_rank1_2.json",
            edits,
        );
    }
    let (result, _) =
        compared(&dir.path().join("base"), &dir.path().join("new"), [None, None], false);
    let c = result.unwrap().unwrap();
    let [matched] = &c.matched[..] else { panic!("{:?}", c.matched) };
    assert_eq!((&matched.collective[..], &matched.in_nelems[..]), ("allreduce", "1048576"));
    let (base, new) = (matched.base.as_ref().unwrap(), matched.new.as_ref().unwrap());
    assert_eq!((base.count, new.count), (1, 1));
    assert_eq!((base.latency_mean_us, new.latency_mean_us), (Some(20.0), Some(40.0)));
    let ratio = base.bus_bw_mean_gbs.unwrap() / new.bus_bw_mean_gbs.unwrap();
    assert!((ratio - 2.0).abs() < 1e-9, "{matched:?}");
    assert_eq!(matched.ratio(), Some(2.0));
}

/// GEMM shapes compare by TFLOPS/s (the same BERT on an MI300X and an
/// H100, public traces): the shapes that lost more than a limit, the most
/// first; attention and convolution shapes only when asked for. The same
/// from the runs' kept reports.
#[test]
fn op_shapes_compare_by_tflops_and_regress_past_a_limit() {
    let Some(root) = test_support::public::public_fixtures() else { return };
    let trace = |gpu: &str| {
        root.join(format!("kineto/tracelens/{gpu}/gaunernst_bert-small-uncased__1016001.json.gz"))
    };
    let (mi300, h100) = (trace("mi300"), trace("h100"));
    let (result, _) = compared(&mi300, &h100, [None, None], false);
    let c = result.unwrap().unwrap();
    let gemm = &c.diff.gemms[0];
    assert_eq!(gemm.row.name, "aten::addmm 141x30522x512 bf16");
    assert!((gemm.change_pct().unwrap() + 38.137).abs() < 1e-3, "{gemm:?}");
    let lost: Vec<(String, i64)> = c
        .shape_regressions(30.0, false)
        .into_iter()
        .map(|r| (r.shape, r.change_pct.round() as i64))
        .collect();
    assert_eq!(lost, [("aten::addmm 141x30522x512 bf16".to_string(), -38)]);
    assert_eq!(c.shape_regressions(40.0, true), []);
    // H100 -> MI300X: its attention ran at a third of the rate.
    let (result, _) = compared(&h100, &mi300, [None, None], false);
    let c = result.unwrap().unwrap();
    let attention = "aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16";
    assert!(c.shape_regressions(50.0, false).iter().all(|r| r.shape != attention));
    assert!(c.shape_regressions(50.0, true).iter().any(|r| r.shape == attention));

    // From the reports each trace's summary kept: the same shapes and rates.
    let dir = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    for (side, t) in [("a", &mi300), ("b", &h100)] {
        let (summary, _) = crate::run::summarized(&[t.to_path_buf()], &dir.path().join(side), 0);
        reports.push(summary.traces[0].csv_dir.clone().unwrap());
    }
    let (result, _) = compared(&reports[0], &reports[1], [None, None], false);
    let from_reports = result.unwrap().unwrap();
    let (result, _) = compared(&mi300, &h100, [None, None], false);
    let from_traces = result.unwrap().unwrap();
    assert_eq!(
        from_reports.shape_regressions(30.0, true),
        from_traces.shape_regressions(30.0, true)
    );
}

/// ProfilerStep# annotations are counted (else optimizer steps, each
/// counted once however it is annotated): each side says its steps, and
/// per step divides each side by its own.
#[test]
fn steps_are_counted_and_per_step_divides_by_them() {
    let dir = tempfile::tempdir().unwrap();
    let marked = |n: usize, cat: &str, name: &dyn Fn(usize) -> String| -> String {
        (1..=n)
            .map(|i| {
                format!(
                    r#"{{"ph": "X", "cat": "{cat}", "name": "{}", "pid": 4242, "tid": 4242, "ts": {}, "dur": 1}},"#,
                    name(i),
                    i * 10
                )
            })
            .collect()
    };
    let open = "\"traceEvents\": [";
    let two = format!("{open}{}", marked(2, "user_annotation", &|i| format!("ProfilerStep#{i}")));
    // Optimizer steps, each also annotated on the GPU: three, not six.
    let sgd = marked(3, "user_annotation", &|_| "Optimizer.step#SGD.step".into());
    let gpu = marked(3, "gpu_user_annotation", &|_| "Optimizer.step#SGD.step".into());
    let three = format!("{open}{sgd}{gpu}");
    let two = trace(dir.path(), "two.json", "libkineto_trace_rank1_2.json", &[(open, &two)]);
    let three = trace(dir.path(), "three.json", "libkineto_trace_rank1_2.json", &[(open, &three)]);
    let (totals, _) = compared(&two, &three, [None, None], false);
    let totals = totals.unwrap().unwrap();
    assert_eq!(totals.sides.each_ref().map(|s| s.steps), [Some(2), Some(3)]);
    let headline = totals.headline_times().unwrap();
    assert_eq!(headline.base, headline.new);
    let (per_step, _) = compared(&two, &three, [None, None], true);
    let per_step = per_step.unwrap().unwrap();
    assert!(per_step.per_step);
    let headline = per_step.headline_times().unwrap();
    assert!((headline.base / headline.new - 1.5).abs() < 1e-9, "{headline:?}");
    let gemm = per_step.diff.ops.iter().find(|r| r.name == "aten::mm").unwrap();
    assert_eq!(gemm.base.unwrap().count, Some(0.5));
    assert!((gemm.new.unwrap().count.unwrap() - 1.0 / 3.0).abs() < 1e-9, "{gemm:?}");
}

/// A report directory stands for its trace: it compares as the trace does;
/// a directory of one report stands for that report, one of several
/// against one trace pairs with nothing.
#[test]
fn a_report_directory_stands_for_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    runs(dir.path());
    let (base, new) =
        (dir.path().join("base/rank1_trace.json"), dir.path().join("new/rank1_trace.json"));
    let summary = dir.path().join("summary");
    let (written, _) = crate::run::summarized(std::slice::from_ref(&base), &summary, 0);
    let report = written.traces[0].csv_dir.clone().unwrap();
    assert_eq!(report, summary.join("base_rank1_trace"));

    let (from_report, _) = compared(&report, &new, [None, None], false);
    let (from_trace, _) = compared(&base, &new, [None, None], false);
    let (from_report, from_trace) = (from_report.unwrap().unwrap(), from_trace.unwrap().unwrap());
    assert!(from_report.sides[0].report);
    assert_eq!(from_report.sides[0].gpus, from_trace.sides[0].gpus);
    let d = (&from_report.diff, &from_trace.diff);
    assert_eq!((&d.0.timeline, &d.0.kernels, &d.0.ops), (&d.1.timeline, &d.1.kernels, &d.1.ops));
    // The directory holding the one report stands for it.
    let (result, _) = compared(&summary, &new, [None, None], false);
    assert_eq!(result.unwrap().unwrap().sides[0].traces, std::slice::from_ref(&report));
    // Two reports there: against one trace, nothing to pair them by.
    std::fs::create_dir(summary.join("other")).unwrap();
    std::fs::copy(report.join("gpu_timeline.csv"), summary.join("other/gpu_timeline.csv")).unwrap();
    let (result, _) = compared(&summary, &new, [None, None], false);
    assert!(matches!(result, Err(CompareError::Pair(_))), "{result:?}");
}
