//! A run summarized twice into one output directory: the second run tells
//! what it did to the first one's reports ([`RunNote::Retired`]), keeps the
//! last good report of a trace it cannot read (marked stale), and removes
//! the report of a trace gone, and its run's collective report.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use trace_report::{
    Record, Retired, RunConfig, RunEvents, RunNote, RunSummary, Why, run_inputs, summarize_run,
};

/// Every note, kept.
#[derive(Default)]
struct Kept(Mutex<Vec<RunNote>>);

impl RunEvents for Kept {
    type Extra = ();
    type Error = trace_report::SetError;

    fn note(&self, note: RunNote) {
        self.0.lock().unwrap().push(note);
    }
}

/// Summarize `root` into `out`: the summary, and what was retired.
fn summarize(root: &Path, out: &Path) -> (RunSummary, Vec<Retired>) {
    let events = Kept::default();
    let found = run_inputs(&[root.to_path_buf()], &[out.to_path_buf()], None, &events).unwrap();
    let config = RunConfig { top: 3, jobs: 2, ..RunConfig::new(found, out.to_path_buf()) };
    let summary = summarize_run(&config, &events).unwrap().expect("not cancelled").summary;
    let retired = events.0.into_inner().unwrap().into_iter().filter_map(|n| match n {
        RunNote::Retired(r) => Some(r),
        _ => None,
    });
    (summary, retired.collect())
}

#[test]
fn a_second_run_keeps_what_it_cannot_read_and_retires_what_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let (root, out) = (dir.path().join("run"), dir.path().join("out"));
    std::fs::create_dir(&root).unwrap();
    let fixtures =
        test_support::workspace_root().join("fixtures/synthetic/run/torch_profiler_output");
    for (from, to) in [
        ("libkineto_trace_rank0_1.json", "rank0.json"),
        ("libkineto_trace_rank1_2.json", "rank1.json"),
    ] {
        std::fs::copy(fixtures.join(from), root.join(to)).unwrap();
    }
    let (first, retired) = summarize(&root, &out);
    assert_eq!((first.traces.len(), first.unreadable, first.cross_rank.len()), (2, 0, 2));
    assert_eq!(retired, []);
    let reports: Vec<PathBuf> = first.traces.iter().map(|t| t.csv_dir.clone().unwrap()).collect();
    assert!(reports.iter().all(|d| d.join(trace_summary::RECORD).is_file()), "{reports:?}");

    // rank 0 cut short, rank 1 gone.
    let text = std::fs::read_to_string(root.join("rank0.json")).unwrap();
    std::fs::write(root.join("rank0.json"), &text[..text.len() / 2]).unwrap();
    std::fs::remove_file(root.join("rank1.json")).unwrap();
    let (second, retired) = summarize(&root, &out);
    assert_eq!((second.traces.len(), second.unreadable), (1, 1));
    assert!(second.traces[0].error.is_some());
    assert_eq!(
        retired,
        [
            Retired::KeptStale { dir: reports[0].clone(), trace: root.join("rank0.json") },
            Retired::Report { dir: reports[1].clone(), why: Why::Gone(root.join("rank1.json")) },
            // One rank left: its run makes no collective report now.
            Retired::Collectives { dir: out.join("run_collectives"), run: root.clone() },
        ]
    );
    assert_eq!(first.collectives[0].csv_dir, out.join("run_collectives"));
    // The last good report stays, marked stale; the other is gone whole.
    let kept = Record::read(&reports[0]).unwrap().unwrap();
    assert!(kept.stale.unwrap().contains("could not be read by a later run"));
    assert_eq!(kept.view.timeline, first.traces[0].timeline);
    assert!(!reports[1].exists());
}
