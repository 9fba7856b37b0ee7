//! Runs summarized with the library: which traces make which run's
//! cross-rank (or cross-GPU) table and collective report, a run's spread,
//! and a run summarized twice into one output directory, where the second
//! tells what it did to the first one's reports ([`RunNote::Retired`]),
//! keeps the last good report of a trace it cannot read (marked stale),
//! removes the report of a trace gone, made none, reported elsewhere or no
//! longer read, and its run's collective report, and writes a report again
//! with only its own tables; an output directory that holds the run is
//! refused.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use test_support::names_in;
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

/// Summarize `paths` into `out`: the summary, and every note.
pub(crate) fn summarized(paths: &[PathBuf], out: &Path, top: usize) -> (RunSummary, Vec<RunNote>) {
    let events = Kept::default();
    let found = run_inputs(paths, &[out.to_path_buf()], None, &events).unwrap();
    let config = RunConfig { top, jobs: 2, ..RunConfig::new(found, out.to_path_buf()) };
    let summary = summarize_run(&config, &events).unwrap().expect("not cancelled").summary;
    (summary, events.0.into_inner().unwrap())
}

/// Summarize `root` into `out`: the summary, and what was retired.
fn summarize(root: &Path, out: &Path) -> (RunSummary, Vec<Retired>) {
    let (summary, notes) = summarized(&[root.to_path_buf()], out, 3);
    let retired = notes.into_iter().filter_map(|n| match n {
        RunNote::Retired(r) => Some(r),
        _ => None,
    });
    (summary, retired.collect())
}

/// The project's synthetic Kineto trace `name` (two ranks: `libkineto_trace_rank0_1.json`,
/// `libkineto_trace_rank1_2.json`; a CPU-only one: `libkineto_trace_4242.json`).
fn kineto(name: &str) -> PathBuf {
    test_support::workspace_root().join("fixtures/synthetic/run/torch_profiler_output").join(name)
}

/// `root` made, holding the two ranks of a run as `rank0.json` and `rank1.json`.
fn two_ranks(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::copy(kineto("libkineto_trace_rank0_1.json"), root.join("rank0.json")).unwrap();
    std::fs::copy(kineto("libkineto_trace_rank1_2.json"), root.join("rank1.json")).unwrap();
}

#[test]
fn a_second_run_keeps_what_it_cannot_read_and_retires_what_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let (root, out) = (dir.path().join("run"), dir.path().join("out"));
    two_ranks(&root);
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

/// Under one root, each job's directory is a run of its own wherever a rank
/// is claimed twice: each gets its cross-rank table and its collective
/// report; a directory whose ranks cannot be told apart gets neither, and
/// a note that says why.
#[test]
fn each_run_under_a_root_gets_its_own_cross_rank_table() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(kineto("libkineto_trace_rank0_1.json")).unwrap();
    for file in [
        "job_a/rank0.json",
        "job_a/rank1.json",
        "job_b/node_0/rank0.json",
        "job_b/node_1/rank1.json",
        "job_b/node_1/rank2.json",
        "job_c/rank0.json",
        "job_c/retry_rank0.json",
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &good).unwrap();
    }
    let (summary, notes) = summarized(&[dir.path().to_path_buf()], &dir.path().join("out"), 0);
    let runs: Vec<(PathBuf, u32)> = summary
        .cross_rank
        .iter()
        .map(|r| (r.run.strip_prefix(dir.path()).unwrap().to_owned(), r.rank))
        .collect();
    let expected = [("job_a", 0), ("job_a", 1), ("job_b", 0), ("job_b", 1), ("job_b", 2)];
    assert_eq!(runs, expected.map(|(run, rank)| (PathBuf::from(run), rank)));
    let reports: Vec<&Path> = summary.collectives.iter().map(|c| c.csv_dir.as_path()).collect();
    let out = dir.path().join("out");
    assert_eq!(reports, [out.join("job_a_collectives"), out.join("job_b_collectives")]);
    assert!(summary.collectives.iter().all(|c| c.matched == 1), "{:?}", summary.collectives);
    let job_c = notes.iter().find_map(|n| match n {
        RunNote::NoCrossRank { what, why } if what.contains("job_c") => Some(why.clone()),
        _ => None,
    });
    assert!(job_c.is_some_and(|why| why.contains("rank 0 is claimed by 2 traces")), "{notes:?}");
}

/// rocprofv3 processes (no ranks) are set side by side GPU by GPU, per
/// directory: the GPU with the least collective time marked; a process
/// whose kernels ran on several GPUs is left out, and a directory where
/// two processes ran on one GPU (a job run twice) makes no table.
#[test]
fn rocprofv3_processes_are_told_apart_by_gpu() {
    let dir = tempfile::tempdir().unwrap();
    test_support::rocprof::write_rocprof_processes(
        dir.path(),
        &[
            ("node_a/101_results.json", 101, 1, 300, 100),
            ("node_a/100_results.json", 100, 0, 200, 200),
            ("node_a/102_results.json", 102, 2, 200, 200),
            ("node_b/7_results.json", 7, 0, 200, 100),
            ("retried/1_results.json", 1, 0, 200, 100),
            ("retried/2_results.json", 2, 0, 250, 100),
        ],
    );
    // A process that ran kernels on GPUs 0 and 3.
    let one = test_support::rocprof::rocprof_process(103, 3, 100);
    let at = one.find("kernel_dispatch").unwrap();
    let dispatches = one[at..].replacen(r#"{"handle":13}"#, r#"{"handle":10}"#, 1);
    std::fs::write(
        dir.path().join("node_a/103_results.json"),
        format!("{}{dispatches}", &one[..at]),
    )
    .unwrap();
    let (summary, notes) = summarized(&[dir.path().to_path_buf()], &dir.path().join("out"), 1);
    let gpus: Vec<(u32, f64, bool, bool)> = summary
        .cross_gpu
        .iter()
        .map(|r| (r.gpu, r.comm, r.least_comm, r.run.ends_with("node_a")))
        .collect();
    assert_eq!(gpus, [(0, 0.2, false, true), (1, 0.1, true, true), (2, 0.2, false, true)]);
    assert!(summary.cross_rank.is_empty());
    let left_out: Vec<&trace_report::LeftOut> = notes
        .iter()
        .filter_map(|n| match n {
            RunNote::LeftOutOfGpus(l) => Some(l),
            _ => None,
        })
        .collect();
    assert!(
        matches!(left_out[..], [
        trace_report::LeftOut::SeveralGpus { trace: a },
        trace_report::LeftOut::GpuTwice { gpu: 0, traces: 2, .. },
    ] if a.ends_with("node_a/103_results.json")),
        "{left_out:?}"
    );
}

/// A real 8-rank DLRM job (public traces): its slowest rank against its
/// fastest and the median, and the rank the others waited for (the least
/// exposed communication); its collectives matched by order (the traces
/// name no process group).
#[test]
fn a_runs_spread_and_whom_the_others_waited_for() {
    let Some(public) = test_support::public::public_fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = public.join("kineto-multirank/param-dlrm-8rank");
    let (summary, _) = summarized(&[run], &dir.path().join("out"), 0);
    assert_eq!(summary.cross_rank.len(), 8);
    let spread = trace_report::spread(&summary.cross_rank);
    let (slowest, fastest) = spread.slowest.unwrap();
    // In ms, as the terminal says them.
    let ms = |v: f64| format!("{v:.3}");
    assert_eq!((slowest.rank, ms(slowest.total)), (1, "18.467".into()));
    assert_eq!((fastest.rank, ms(fastest.total)), (7, "10.967".into()));
    assert_eq!(spread.median.map(ms).as_deref(), Some("14.700"));
    let waited_for = spread.waited_for.unwrap();
    assert_eq!((waited_for.rank, ms(waited_for.exposed_comm)), (7, "1.580".into()));
    let flagged: Vec<u32> =
        summary.cross_rank.iter().filter(|r| r.least_exposed_comm).map(|r| r.rank).collect();
    assert_eq!(flagged, [7]);
    let collectives = &summary.collectives[0];
    assert_eq!((collectives.matched, collectives.simplified), (8, true));
    assert_eq!(collectives.top.len(), trace_report::RunCollectives::TOP);
}

/// An output directory that is, or holds, a directory to search is refused
/// before anything is read (what lies in it is never searched, so nothing
/// would be found), symbolic links resolved; one inside the run is fine.
#[test]
fn an_output_directory_that_holds_the_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(kineto("libkineto_trace_rank0_1.json"), run.join("rank0.json")).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&run, &link).unwrap();
    for (output, is_run) in [(run.clone(), true), (dir.path().to_path_buf(), false), (link, true)] {
        let found = run_inputs(
            std::slice::from_ref(&run),
            std::slice::from_ref(&output),
            None,
            &Kept::default(),
        );
        let expected = trace_report::HoldsRun { output, run: run.clone(), is_run };
        assert!(
            matches!(&found, Err(trace_report::InputError::HoldsRun(r)) if *r == expected),
            "{found:?}"
        );
    }
    let inside =
        run_inputs(std::slice::from_ref(&run), &[run.join("reports")], None, &Kept::default());
    assert_eq!(inside.unwrap().inputs.len(), 1);
}

/// Run again over a directory, the report of a trace that makes none now
/// (read, without a GPU timeline) goes with its run's collective report,
/// and a file of the user's own in it stays, with its directory.
#[test]
fn a_trace_that_makes_no_report_now_takes_its_earlier_one_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (root, out) = (dir.path().join("run"), dir.path().join("out"));
    two_ranks(&root);
    let (first, _) = summarize(&root, &out);
    assert_eq!(names_in(&out), ["rank0", "rank1", "run_collectives"]);
    let rank1 = first.traces[1].csv_dir.clone().unwrap();
    std::fs::write(out.join("rank0/notes.txt"), "mine").unwrap();
    std::fs::write(out.join("rank1/notes.txt"), "mine").unwrap();
    // Rank 1 now only its CPU side.
    std::fs::copy(kineto("libkineto_trace_4242.json"), root.join("rank1.json")).unwrap();
    let (second, retired) = summarize(&root, &out);
    assert_eq!((second.traces.len(), second.unreadable), (2, 0));
    assert_eq!(second.traces[1].csv_dir, None);
    assert_eq!(
        retired,
        [
            Retired::Report { dir: rank1.clone(), why: Why::MadeNone(root.join("rank1.json")) },
            Retired::Collectives { dir: out.join("run_collectives"), run: root.clone() },
        ]
    );
    // Its files went; the user's stayed, and so did its directory.
    assert_eq!(names_in(&rank1), ["notes.txt"]);
    assert!(names_in(&out.join("rank0")).contains(&"notes.txt".to_string()));
}

/// Run again over a directory, the reports an earlier run left of traces
/// it searched that this run did not write go, each with why: a trace gone
/// (a link removed, though what it led to is there), one reported under
/// another name now (given alone before), one no longer read (its
/// sanitized copy is read instead). A report of a trace outside what this
/// run searched stays.
#[test]
fn a_report_this_run_did_not_write_of_a_trace_it_searched_goes() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    let (root, other, out) = (job.join("run"), job.join("other"), dir.path().join("out"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir(&other).unwrap();
    let trace = kineto("libkineto_trace_rank0_1.json");
    std::fs::copy(&trace, root.join("rank0.json")).unwrap();
    std::fs::copy(kineto("libkineto_trace_rank1_2.json"), other.join("rank1.json")).unwrap();
    // Rank 1 of this run, a link to a trace elsewhere (a scratch space).
    std::os::unix::fs::symlink(other.join("rank1.json"), root.join("rank1.json")).unwrap();
    summarize(&root, &out);
    // rank 0 and the other directory's trace, given as files: named by
    // their paths, a run of their own (their common directory).
    summarized(&[root.join("rank0.json"), other.join("rank1.json")], &out, 0);
    assert_eq!(
        names_in(&out),
        ["job_collectives", "other_rank1", "rank0", "rank1", "run_collectives", "run_rank0"]
    );

    std::fs::remove_file(root.join("rank1.json")).unwrap();
    let (_, retired) = summarize(&root, &out);
    let reported = |name: &str| out.join(name);
    assert_eq!(
        retired,
        [
            Retired::Report { dir: reported("rank1"), why: Why::Gone(root.join("rank1.json")) },
            // One rank left: the run makes no collective report now.
            Retired::Collectives { dir: out.join("run_collectives"), run: root.clone() },
            Retired::Report {
                dir: reported("run_rank0"),
                why: Why::ReportedIn { trace: root.join("rank0.json"), now: out.join("rank0") },
            },
        ]
    );
    // The other directory's trace was not searched: its report stays, as
    // does the report of the run it was given in.
    assert_eq!(names_in(&out), ["job_collectives", "other_rank1", "rank0"]);

    // Its sanitized copy beside it, written since, is read instead.
    std::fs::copy(&trace, root.join("rank0.sanitized.json")).unwrap();
    let (summary, retired) = summarize(&root, &out);
    assert_eq!(summary.traces[0].trace, root.join("rank0.sanitized.json"));
    assert_eq!(
        retired,
        [Retired::Report {
            dir: out.join("rank0"),
            why: Why::NoLongerRead(root.join("rank0.json"))
        }]
    );
    assert_eq!(names_in(&out), ["job_collectives", "other_rank1", "rank0.sanitized"]);
}

/// A trace's report written again holds only this run's tables: one the
/// first run wrote and this one did not (`collective_summary.csv`, once
/// the trace's collective kernels lack their arguments) is gone; a file of
/// the user's own stays.
#[test]
fn a_report_written_again_holds_none_of_the_first_runs_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, out) = (dir.path().join("rank1.json"), dir.path().join("out"));
    std::fs::copy(kineto("libkineto_trace_rank1_2.json"), &trace).unwrap();
    let (first, _) = summarized(std::slice::from_ref(&trace), &out, 0);
    let report = first.traces[0].csv_dir.clone().unwrap();
    assert!(names_in(&report).contains(&"collective_summary.csv".to_string()));
    std::fs::write(report.join("notes.txt"), "mine").unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    let args = r#""Collective name": "allreduce", "#;
    assert!(text.contains(args));
    std::fs::write(&trace, text.replace(args, "")).unwrap();
    let (second, _) = summarized(std::slice::from_ref(&trace), &out, 0);
    assert_eq!(second.traces[0].csv_dir.as_ref(), Some(&report));
    assert_eq!(
        names_in(&report),
        [
            "gpu_timeline.csv",
            "kernel_summary.csv",
            "notes.txt",
            "ops_summary.csv",
            "ops_summary_by_category.csv",
            "ops_unique_args.csv",
            "short_kernel_histogram.csv",
            "short_kernels_summary.csv",
            "summary.json",
            "unified_perf_summary.csv",
        ]
    );
}
