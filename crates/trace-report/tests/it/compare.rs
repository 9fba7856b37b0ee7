//! Two runs compared with the library: rank by rank, what each side given
//! stands for, and what stops a comparison (typed, each failure told).

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use trace_report::{
    CompareConfig, CompareError, CompareEvents, CompareNote, Comparison, CyclePick, Kind, PairedBy,
    Role, compare, compare_sides,
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
