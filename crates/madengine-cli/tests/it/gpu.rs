//! The real GPU traces under `fixtures/gpu/<vendor>-<model>/`, committed by
//! `cargo xtask fixtures --gpu` with their provenance in `fixtures/README.md`:
//! each node's set goes through every command that reads traces, so a set
//! committed from a GPU node is tested by the next `cargo test` with nothing
//! else to write.

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde_json::Value;

use crate::{madengine, standin::Standin, standin::standin};

const NONE_YET: &str = "None are committed so far.";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Each node's directory under `fixtures/gpu/`, by name.
fn nodes() -> Vec<PathBuf> {
    let mut nodes: Vec<PathBuf> = match fs::read_dir(fixtures().join("gpu")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("fixtures/gpu: {e}"),
    };
    nodes.sort();
    nodes
}

/// What a fixture is, by the name `capture_fixtures.py` gives it: its kind
/// as `trace discover` says it, and the rank its name holds
/// (`ddp_rank1`; none for `single`).
fn expected(file: &str) -> (&'static str, Option<u64>) {
    if file.starts_with("rocprofv3_") {
        return ("rocprof_json", None);
    }
    let rank = file
        .split_once("_rank")
        .and_then(|(_, rest)| rest.split('.').next())
        .map(|n| n.parse().unwrap_or_else(|_| panic!("{file}: no rank in its name")));
    ("pytorch", rank)
}

#[test]
fn gpu_fixtures_have_provenance_and_go_through_every_command() {
    let readme = fs::read_to_string(fixtures().join("README.md")).unwrap();
    let nodes = nodes();
    if nodes.is_empty() {
        // The state until a GPU node runs `cargo xtask fixtures --gpu`: the
        // README must say so, and list no set.
        assert!(readme.contains(NONE_YET), "fixtures/gpu/ is empty, fixtures/README.md not");
        assert!(!readme.contains("<!-- BEGIN gpu/"), "a set is listed, none is committed");
        eprintln!(
            "fixtures/gpu/ holds no GPU fixtures yet: their provenance is all there is to check"
        );
        return;
    }
    assert!(!readme.contains(NONE_YET), "fixtures/README.md says none are committed");
    for node in &nodes {
        check_node(node, &readme);
    }
}

fn check_node(node: &Path, readme: &str) {
    let slug = node.file_name().unwrap().to_string_lossy().into_owned();
    let mut files: Vec<(String, u64)> = fs::read_dir(node)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fixtures/gpu/{slug} is empty");

    // Provenance: a section of its own, naming each file with its size.
    let begin = format!("<!-- BEGIN gpu/{slug} ");
    let section = readme
        .split_once(&begin)
        .and_then(|(_, rest)| rest.split_once(&format!("<!-- END gpu/{slug} -->")))
        .unwrap_or_else(|| panic!("fixtures/README.md has no section for gpu/{slug}"))
        .0;
    for (file, len) in &files {
        assert!(
            section.contains(&format!("| `{file}` | {len} |")),
            "gpu/{slug}/{file} ({len} bytes) is not in its provenance section:\n{section}"
        );
    }
    let listed = section.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(listed, files.len(), "gpu/{slug}: files listed that are not there:\n{section}");

    // Each found as what it is, ddp ranks by their names.
    let dir = node.to_str().unwrap();
    let (code, stdout, stderr) = madengine(node, &["trace", "discover", dir, "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let found: Value = serde_json::from_str(&stdout).unwrap();
    let mut kinds: Vec<(String, &str, Option<u64>)> = found["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = Path::new(t["path"].as_str().unwrap()).file_name().unwrap();
            (
                name.to_string_lossy().into_owned(),
                t["kind"].as_str().unwrap(),
                t["rank"]["rank"].as_u64(),
            )
        })
        .collect();
    kinds.sort();
    let want: Vec<(String, &str, Option<u64>)> = files
        .iter()
        .map(|(f, _)| {
            let (kind, rank) = expected(f);
            (f.clone(), kind, rank)
        })
        .collect();
    assert_eq!(kinds, want, "gpu/{slug}: {stdout}");

    // Strict JSON as committed: nothing to repair, nothing cut.
    let (code, stdout, stderr) = madengine(node, &["trace", "sanitize", "--check", dir]);
    assert_eq!(code, 0, "gpu/{slug}: {stdout}{stderr}");

    // TraceLens' tables natively, with GPU activity in every trace.
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().unwrap();
    let (code, stdout, stderr) =
        madengine(node, &["report", "summary", dir, "--output-dir", out_dir, "--json"]);
    assert_eq!(code, 0, "gpu/{slug}: {stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let traces = summary["traces"].as_array().unwrap();
    assert_eq!(traces.len(), files.len(), "gpu/{slug}: {stdout}");
    for t in traces {
        let outcome = t["outcome"].as_str().unwrap();
        assert!(matches!(outcome, "tables" | "rocprofv3"), "gpu/{slug}: {t}");
    }

    // Every TraceLens job planned and run (the stand-in follows TraceLens'
    // CLI contract): one per trace, and one collective report for the ranks
    // (the single-process trace, without a rank, is left out of it).
    let py = Standin::python(&standin().scripts);
    let reports = out.path().join("tracelens");
    let (code, stdout, stderr) = madengine(
        node,
        &[
            "report",
            "tracelens",
            "--root",
            dir,
            "--output-dir",
            reports.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "gpu/{slug}: {stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    let collective = "TraceLens_generate_multi_rank_collective_report_pytorch";
    let (collectives, per_trace): (Vec<&Value>, Vec<&Value>) =
        results.iter().partition(|r| r["tracelens_tool"] == collective);
    assert_eq!(per_trace.len(), files.len(), "gpu/{slug}: {stdout}");
    assert!(per_trace.iter().all(|r| r["status"] == "SUCCESS"), "gpu/{slug}: {stdout}");
    let ranked = want.iter().filter(|(_, _, rank)| rank.is_some()).count();
    let ran: Vec<&&Value> = collectives.iter().filter(|r| r["status"] == "SUCCESS").collect();
    assert_eq!(ran.len(), usize::from(ranked > 1), "gpu/{slug}: {stdout}");
    // The only other row: the traces without a rank, named as such.
    for r in collectives.iter().filter(|r| r["status"] != "SUCCESS") {
        assert_eq!(r["status"], "SKIPPED", "gpu/{slug}: {r}");
        assert!(r["detail"].as_str().unwrap().contains("carry no rank"), "gpu/{slug}: {r}");
    }
}
