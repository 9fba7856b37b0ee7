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

use crate::{madengine, public_dir::public_fixtures, standin::Standin, standin::standin};

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

/// cuDNN names a kernel of the H200 fixture as the mangled
/// `_ZN17cutlass__5x_cudnn6Kernel...`: people read it demangled in `report
/// summary` and `report diff` (the page too), and scripts get the trace's
/// name in `--json` and the CSVs, as TraceLens writes it.
#[test]
fn a_mangled_kernel_name_is_shown_demangled_and_kept_as_is_in_the_data() {
    let node = fixtures().join("gpu/nvidia-h200");
    let single = node.join("single.pt.trace.json");
    let rank0 = node.join("ddp_rank0.pt.trace.json");
    let (mangled, shown) = ("_ZN17cutlass__5x_cudnn6KernelI", "void cutlass__5x_cudnn::Kernel<");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let (code, text, stderr) =
        madengine(out.path(), &["report", "summary", single.to_str().unwrap(), "-o", dir]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains(shown) && !text.contains(mangled), "{text}");
    let (code, json, stderr) = madengine(
        out.path(),
        &["report", "summary", single.to_str().unwrap(), "-o", dir, "--json"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(json.contains(mangled) && !json.contains(shown), "{json}");
    let csv = fs::read_to_string(out.path().join("nvidia-h200_single/kernel_summary.csv")).unwrap();
    assert!(csv.contains(mangled), "{csv}");

    let page = out.path().join("diff.html");
    let (code, text, stderr) = madengine(
        out.path(),
        &[
            "report",
            "diff",
            single.to_str().unwrap(),
            rank0.to_str().unwrap(),
            "--top",
            "100",
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains(shown) && !text.contains(mangled), "{text}");
    let html = fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!(">{}", shown.replace('<', "&lt;"))),
        "shown demangled (HTML-escaped)"
    );
    assert!(html.contains(&format!("title=\"{mangled}")), "the trace's name in the tooltip");
}

/// The checks above, rehearsed on a set shaped like what the import writes
/// (`fixtures/gpu/<slug>/` and a provenance section), made of public traces:
/// an H100 single-process trace and two ranks of an 8-GPU DLRM job. So the
/// per-set half cannot rot, nor fail for the first time on real fixtures,
/// while `fixtures/gpu/` is empty.
#[test]
fn a_set_shaped_like_an_import_goes_through_every_command() {
    let Some(public) = public_fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let slug = "nvidia-h100";
    let node = tmp.path().join(slug);
    fs::create_dir(&node).unwrap();
    let gz = public.join("kineto/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz");
    let mut single = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(fs::File::open(&gz).unwrap()),
        &mut single,
    )
    .unwrap();
    fs::write(node.join("single.pt.trace.json"), single).unwrap();
    let dlrm = public.join("kineto-multirank/param-dlrm-8rank");
    for (worker, rank) in
        [("worker0_step_12.1694128201545", 0), ("worker1_step_12.1694128201556", 1)]
    {
        fs::copy(
            dlrm.join(format!("{worker}.pt.trace.json")),
            node.join(format!("ddp_rank{rank}.pt.trace.json")),
        )
        .unwrap();
    }
    // The provenance section as the import writes it: a row per file with
    // its size, and one for what was not captured.
    let mut rows = String::new();
    for name in ["ddp_rank0.pt.trace.json", "ddp_rank1.pt.trace.json", "single.pt.trace.json"] {
        let len = fs::metadata(node.join(name)).unwrap().len();
        rows.push_str(&format!("| `{name}` | {len} | `python3 workload.py` | all |\n"));
    }
    let readme = format!(
        "## `gpu/`\n\n<!-- BEGIN gpu/{slug} (generated by `cargo xtask fixtures --gpu`) -->\n\
         ### `gpu/{slug}/`\n\n| file | bytes | command | kept |\n|---|---|---|---|\n{rows}\
         | (rocprofv3: not captured) | | | needs an AMD GPU |\n<!-- END gpu/{slug} -->\n"
    );
    check_node(&node, &readme);

    // And a file the section does not list is caught.
    fs::write(node.join("extra.pt.trace.json"), "{}").unwrap();
    let caught = std::panic::catch_unwind(|| check_node(&node, &readme)).unwrap_err();
    let message = caught.downcast_ref::<String>().unwrap();
    assert!(
        message.contains("extra.pt.trace.json (2 bytes) is not in its provenance"),
        "{message}"
    );
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
    // A job on one GPU ran on gloo: its collectives ran on the CPU, and
    // TraceLens has none to analyze.
    let ranked: Vec<&str> =
        want.iter().filter(|(_, _, rank)| rank.is_some()).map(|(f, _, _)| f.as_str()).collect();
    let backends: Vec<String> = ranked.iter().map(|f| backend(&node.join(f))).collect();
    let gloo = backends.iter().any(|b| b == "gloo");
    let ran: Vec<&&Value> = collectives.iter().filter(|r| r["status"] == "SUCCESS").collect();
    assert_eq!(ran.len(), usize::from(ranked.len() > 1 && !gloo), "gpu/{slug}: {stdout}");
    // The other rows: the traces without a rank, and a gloo job, each named
    // as such.
    let mut reasons: Vec<&str> = collectives
        .iter()
        .filter(|r| r["status"] != "SUCCESS")
        .map(|r| {
            assert_eq!(r["status"], "SKIPPED", "gpu/{slug}: {r}");
            let detail = r["detail"].as_str().unwrap();
            if detail.contains("carry no rank") {
                "no rank"
            } else if detail.contains("A gloo run has none") {
                "gloo"
            } else {
                panic!("gpu/{slug}: {r}")
            }
        })
        .collect();
    reasons.sort_unstable();
    let mut want_reasons = Vec::new();
    if ranked.len() > 1 && gloo {
        want_reasons.push("gloo");
    }
    if ranked.len() < files.len() {
        want_reasons.push("no rank");
    }
    assert_eq!(reasons, want_reasons, "gpu/{slug} ({backends:?}): {stdout}");
}

/// The backend a rank's trace names in its `distributedInfo`: `nccl`,
/// `gloo`; empty where it names none.
fn backend(trace: &Path) -> String {
    let v: Value = serde_json::from_slice(&fs::read(trace).unwrap()).unwrap();
    v["distributedInfo"]["backend"].as_str().unwrap_or_default().to_string()
}
