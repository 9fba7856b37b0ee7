//! The CLI's answers are the libraries': `report summary --json` prints
//! what `trace_report::summarize_run` returns for the same traces, as the
//! crate's example (`examples/summarize_run.rs`) runs it.

use std::path::{Path, PathBuf};

use trace_report::{RunConfig, RunEvents, run_inputs, summarize_run};

/// Nothing said, nothing else made.
struct Silent;

impl RunEvents for Silent {
    type Extra = ();
    type Error = trace_report::SetError;
}

/// The library's summary of `paths`, its reports in `out`, as JSON.
fn library(paths: &[PathBuf], out: &Path) -> serde_json::Value {
    let found = run_inputs(paths, &[out.to_path_buf()], None, &Silent).unwrap();
    let config = RunConfig { jobs: 2, ..RunConfig::new(found, out.to_path_buf()) };
    let summary = summarize_run(&config, &Silent).unwrap().unwrap().summary;
    serde_json::to_value(&summary).unwrap()
}

/// The CLI's, its reports in `out`, with `out` written as `instead` (where
/// the library's went).
fn cli(paths: &[PathBuf], out: &Path, instead: &Path) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["report".to_string(), "summary".into()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), out.display().to_string(), "--json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = crate::madengine(dir.path(), &args);
    assert!(code == 0 || code == 3, "{code}: {stderr}");
    let text = stdout.replace(&out.display().to_string(), &instead.display().to_string());
    serde_json::from_str(&text).unwrap()
}

fn same_as_the_cli(paths: &[PathBuf]) {
    let dir = tempfile::tempdir().unwrap();
    let (by_cli, by_library) = (dir.path().join("cli"), dir.path().join("library"));
    let expected = cli(paths, &by_cli, &by_library);
    let found = library(paths, &by_library);
    assert_eq!(found, expected);
    // And the same files, byte for byte.
    let files = |root: &Path| {
        let mut all: Vec<(PathBuf, Vec<u8>)> = test_support::public::files_under(root)
            .into_iter()
            .map(|f| (f.strip_prefix(root).unwrap().to_path_buf(), std::fs::read(&f).unwrap()))
            .collect();
        all.sort();
        all
    };
    let text = |files: Vec<(PathBuf, Vec<u8>)>, from: &Path| {
        files
            .into_iter()
            .map(|(name, bytes)| {
                let text =
                    String::from_utf8_lossy(&bytes).replace(&from.display().to_string(), "OUT");
                (name, text)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(text(files(&by_library), &by_library), text(files(&by_cli), &by_cli));
    // What was printed and every record written are what their schemas say.
    crate::conforms(&expected, "report-summary");
    let mut records = 0;
    for (name, bytes) in files(&by_cli) {
        let schema = match name.file_name().and_then(|n| n.to_str()) {
            Some("summary.json") => "summary-record",
            Some("collectives.json") => "collectives-record",
            _ => continue,
        };
        crate::conforms(&serde_json::from_slice(&bytes).unwrap(), schema);
        records += 1;
    }
    assert!(records > 0, "no record under {}", by_cli.display());
}

#[test]
fn report_summary_is_the_library_s_summary_of_a_run_of_many_kinds() {
    // Kineto traces by rank, rocprofv3's JSON and database, Perfetto, and
    // files no reader takes: the project's synthetic run directory.
    same_as_the_cli(&[std::path::absolute(crate::synthetic().join("run")).unwrap()]);
}

#[test]
fn report_summary_is_the_library_s_summary_of_a_multi_rank_run() {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return;
    };
    same_as_the_cli(&[public.join("kineto-multirank/param-dlrm-8rank")]);
}

/// Nothing said, no notes of how a trace was read (the CLI's texts).
struct Quiet;

impl trace_report::CompareEvents for Quiet {}

/// The library's comparison of `baseline` and `new`, as JSON.
fn library_compared(baseline: &Path, new: &Path) -> serde_json::Value {
    let sides = trace_report::compare_sides(baseline, new, [None, None], &Quiet).unwrap();
    let config = trace_report::CompareConfig { jobs: 2, ..trace_report::CompareConfig::new(sides) };
    let compared = trace_report::compare(&config, &Quiet).unwrap().unwrap();
    serde_json::to_value(compared.document(&[], None, None, [vec![], vec![]])).unwrap()
}

/// `report diff --json`'s, run in `cwd`.
fn cli_compared(cwd: &Path, baseline: &Path, new: &Path) -> serde_json::Value {
    let (baseline, new) = (baseline.display().to_string(), new.display().to_string());
    let args = ["report", "diff", &baseline, &new, "--json"];
    let (code, stdout, stderr) = crate::madengine(cwd, &args);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn compares_as_the_cli(baseline: &Path, new: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let expected = cli_compared(dir.path(), baseline, new);
    let found = library_compared(baseline, new);
    assert_eq!(found, expected);
    let timeline = expected["timeline"].as_array();
    assert!(timeline.is_some_and(|rows| !rows.is_empty()), "{expected}");
}

#[test]
fn report_diff_is_the_library_s_comparison_of_two_traces() {
    let h200 = std::path::absolute(crate::synthetic().join("../gpu/nvidia-h200")).unwrap();
    compares_as_the_cli(&h200.join("ddp_rank0.pt.trace.json"), &h200.join("single.pt.trace.json"));
}

#[test]
fn report_diff_is_the_library_s_comparison_of_two_runs_and_of_their_reports() {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return;
    };
    let run = public.join("kineto-multirank/param-dlrm-8rank");
    // The run with itself, rank by rank, and its collectives matched.
    compares_as_the_cli(&run, &run);
    // Its reports, as the library's summary wrote them, with its traces.
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    library(std::slice::from_ref(&run), &reports);
    compares_as_the_cli(&reports, &run);
    let compared = library_compared(&reports, &run);
    assert_eq!(compared["baseline"]["report"], true);
    assert_eq!(compared["ranks"].as_array().map(Vec::len), Some(8));
}
