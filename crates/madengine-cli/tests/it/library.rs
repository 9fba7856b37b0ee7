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
