//! The documents this crate owns (a trace's record, a run's summary, a
//! comparison, a collective report's record) read back what they wrote, and keep their
//! shape: a snapshot of each, made from public multi-rank traces.

use std::path::{Path, PathBuf};

use trace_report::{
    CollectivesRecord, ComparedRank, ComparedRow, ComparedShape, ComparedSide, RankKernels, Record,
    Regression, RunCollectives, RunComparison, RunSummary, SUMMARY_VERSION, SidesLeftOut,
    TraceView, collective_report, cross_rank,
};

/// Two ranks of PARAM's DLRM run (public traces, with NCCL collectives),
/// read as a run; `None` (said) without the public traces.
fn views() -> Option<Vec<TraceView>> {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return None;
    };
    let dir = Path::new("param-dlrm-8rank");
    let names = [
        "worker0_step_12.1694128201545.pt.trace.json",
        "worker1_step_12.1694128201556.pt.trace.json",
    ];
    let views = names.iter().zip(0..).map(|(name, rank)| {
        let trace = dir.join(name);
        let summary =
            trace_summary::summarize_file(&public.join("kineto-multirank").join(&trace)).unwrap();
        let mut view = TraceView::new(trace, Some(rank));
        view.read(&summary);
        view.fill(&summary, 3);
        view.csv_dir = Some(PathBuf::from(format!("summary_output/worker{rank}")));
        view
    });
    Some(views.collect())
}

#[test]
fn a_trace_s_record_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let Some(views) = views() else { return };
    let view = &views[1];
    assert!(!view.collective_events.is_empty() && !view.top_kernels.is_empty());
    let record = Record::new(view, Some(PathBuf::from("/runs/dlrm/worker1.pt.trace.json")));
    std::fs::write(dir.path().join(trace_summary::RECORD), record.to_bytes()).unwrap();
    let read = Record::read(dir.path()).unwrap().unwrap();
    assert_eq!(read, record);
    assert_eq!(read.view.collective_events, view.collective_events);
    let value: serde_json::Value = serde_json::from_slice(&record.to_bytes()).unwrap();
    insta::assert_snapshot!("trace_record", serde_json::to_string_pretty(&shape(value)).unwrap());
    assert_eq!((read.version, read.view.rank, read.view.steps), (1, Some(1), view.steps));
    // No record: none; a record written before versions (fewer keys) reads.
    assert_eq!(Record::read(&dir.path().join("none")).unwrap(), None);
    std::fs::write(dir.path().join(trace_summary::RECORD), r#"{"trace": "t.json", "steps": 5}"#)
        .unwrap();
    let old = Record::read(dir.path()).unwrap().unwrap();
    assert_eq!(
        (old.version, old.view.trace.as_path(), old.view.steps),
        (0, "t.json".as_ref(), Some(5))
    );
    // Not one: the file is named, the parser's message is its cause.
    std::fs::write(dir.path().join(trace_summary::RECORD), "[1, 2]").unwrap();
    let err = Record::read(dir.path()).unwrap_err();
    let path = dir.path().join(trace_summary::RECORD);
    assert_eq!(
        err.to_string(),
        format!("{} is not the record a trace's report keeps beside its CSVs", path.display())
    );
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.starts_with("invalid type: sequence"), "{cause}");
}

#[test]
fn a_run_s_summary_reads_back_what_it_wrote_and_keeps_its_shape() {
    let Some(views) = views() else { return };
    let timed: Vec<_> = views.iter().map(TraceView::timed).collect();
    let (ranks, no_run) = cross_rank(&timed);
    assert!(no_run.is_empty(), "{no_run:?}");
    let kernels: Vec<RankKernels<'_>> = views
        .iter()
        .map(|v| RankKernels { rank: v.rank.unwrap(), kernels: &v.collective_events })
        .collect();
    let report = collective_report(&kernels, None).unwrap();
    let collectives = RunCollectives::of(&ranks[0], &report, PathBuf::from("out/x_collectives"));
    assert!(collectives.matched > 0 && !collectives.straggler.is_empty());
    // Each trace's collective kernels are the record's, not the summary's.
    let traces = views.into_iter().map(|v| TraceView { collective_events: vec![], ..v }).collect();
    let summary = RunSummary {
        traces,
        cross_rank: ranks,
        collectives: vec![collectives],
        ..RunSummary::new()
    };
    let text = serde_json::to_string_pretty(&summary).unwrap();
    let read: RunSummary = serde_json::from_str(&text).unwrap();
    assert_eq!(read, summary);
    insta::assert_snapshot!("run_summary", text);
}

#[test]
fn a_collective_report_s_record_reads_back_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let record = CollectivesRecord::new(Path::new("runs/ddp"), None);
    assert!(record.run_absolute.is_absolute() && record.run_absolute.ends_with("runs/ddp"));
    std::fs::write(dir.path().join(CollectivesRecord::FILE), record.to_bytes()).unwrap();
    assert_eq!(CollectivesRecord::read(dir.path()), Some(record.clone()));
    let cwd = std::env::current_dir().unwrap();
    let text = String::from_utf8(record.to_bytes()).unwrap();
    insta::assert_snapshot!("collectives_record", text.replace(&cwd.display().to_string(), "CWD"));
    // One without where its run was is not one to act on.
    std::fs::write(dir.path().join(CollectivesRecord::FILE), r#"{"run": "runs/ddp"}"#).unwrap();
    assert_eq!(CollectivesRecord::read(dir.path()), None);
}

#[test]
fn a_comparison_reads_back_what_it_wrote() {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return;
    };
    let dir = public.join("kineto-multirank/param-dlrm-8rank");
    let tables = |name: &str| {
        trace_summary::Tables::from(&trace_summary::summarize_file(&dir.join(name)).unwrap())
    };
    let (base, new) = (
        tables("worker0_step_12.1694128201545.pt.trace.json"),
        tables("worker1_step_12.1694128201556.pt.trace.json"),
    );
    let diff = trace_summary::Diff::between(&base, &new);
    assert!(!diff.gemms.is_empty() && !diff.kernels.is_empty());
    let side = |role: &str| ComparedSide {
        role: role.into(),
        path: PathBuf::from(format!("{role}.json")),
        traces: vec![PathBuf::from(format!("{role}.json"))],
        cycle: None,
        report: false,
        format: trace_summary::Format::Kineto,
        kernel_launches: Some(10),
        steps: Some(1),
        gpus: vec!["Tesla V100-SXM2-32GB".into()],
        notes: vec![],
    };
    let comparison = RunComparison {
        baseline: side("baseline"),
        new: side("new"),
        rocprof: false,
        per_step: false,
        timeline: ComparedRow::all(&diff.timeline),
        ranks: vec![ComparedRank {
            baseline: "base.json".into(),
            new: "new.json".into(),
            timeline: ComparedRow::all(&diff.timeline),
            ..ComparedRank::keyed(trace_report::PairedBy::NodeGpu, (1 << 16) | 3)
        }],
        paired_by: "gpu".into(),
        unpaired: vec![],
        kernels: ComparedRow::all(&diff.kernels),
        ops: ComparedRow::all(&diff.ops),
        op_categories: ComparedRow::all(&diff.op_categories),
        kernel_categories: vec![],
        collectives: ComparedRow::all(&diff.collectives),
        collectives_matched: vec![],
        collective_kernels: None,
        gemms: ComparedShape::all(&diff.gemms),
        gemm_regressions: vec![],
        shape_regressions: vec![],
        op_shapes: ComparedShape::all(&diff.shapes),
        csvs: vec![],
        html: None,
        regression: Some(Regression { limit_percent: 5.0, change_percent: 42.0, exceeded: true }),
        left_out: SidesLeftOut::default(),
        version: SUMMARY_VERSION,
    };
    let text = serde_json::to_string(&comparison).unwrap();
    assert_eq!(serde_json::from_str::<RunComparison>(&text).unwrap(), comparison);
    // A pair keyed by node and GPU names both.
    let rank = &serde_json::from_str::<serde_json::Value>(&text).unwrap()["ranks"][0];
    assert_eq!((&rank["node"], &rank["gpu"], rank.get("rank")), (&1.into(), &3.into(), None));
}

/// `value` with each list cut to its first two items: a document's shape.
fn shape(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Array(items) => Value::Array(items.into_iter().take(2).map(shape).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, shape(v))).collect()),
        other => other,
    }
}

#[test]
fn a_comparison_of_two_traces_keeps_its_shape() {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return;
    };
    struct Quiet;
    impl trace_report::CompareEvents for Quiet {}
    let dir = public.join("kineto-multirank/param-dlrm-8rank");
    let (base, new) = (
        dir.join("worker0_step_12.1694128201545.pt.trace.json"),
        dir.join("worker1_step_12.1694128201556.pt.trace.json"),
    );
    let sides = trace_report::compare_sides(&base, &new, [None, None], &Quiet).unwrap();
    let config = trace_report::CompareConfig { jobs: 2, ..trace_report::CompareConfig::new(sides) };
    let compared = trace_report::compare(&config, &Quiet).unwrap().unwrap();
    let regression = compared.regression(5.0);
    let shapes = [compared.shape_regressions(0.0, false), compared.shape_regressions(0.0, true)];
    let document =
        compared.document(&[PathBuf::from("diff/kernel_diff.csv")], None, regression, shapes);
    let text = serde_json::to_string_pretty(&document).unwrap();
    assert_eq!(serde_json::from_str::<RunComparison>(&text).unwrap(), document);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let text = serde_json::to_string_pretty(&shape(value)).unwrap();
    let text = text.replace(&format!("{}/", dir.display()), "");
    insta::assert_snapshot!("run_comparison", text);
}
