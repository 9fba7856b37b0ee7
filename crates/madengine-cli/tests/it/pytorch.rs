//! Real PyTorch on the CPU, with the workload `cargo xtask e2e` ships: the
//! Kineto client inside the PyPI wheel registers with the fake dynolog
//! daemon over the IPC fabric and writes what an on-demand request asks for,
//! and `torchrun` writes rank-labelled traces of today's format. Only the
//! daemon is a stand-in here (reference/dynolog.md §4.1 was observed with
//! the same wheel against a real one).
//!
//! The interpreter comes from `$MADENGINE_TORCH_PYTHON` (see
//! dynolog-client's `tests/it/required.rs`).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use dynolog_client::site_packages;
use serde_json::Value;

use crate::{
    dynolog::{fixture, hook_files},
    madengine,
    required::torch_python,
    run,
};

fn workload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../xtask/e2e/workload.py")
}

fn names(events: &[Value], cat: &str, prefix: &str) -> usize {
    events
        .iter()
        .filter(|e| e["cat"] == cat && e["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .count()
}

/// An interpreter of a venv of its own under `dir` that imports the torch
/// of `python` (a `.pth` names torch's site-packages), so each test's Kineto
/// hook goes into a site-packages no other test uses.
fn venv_with_torch(python: &Path, dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let (code, _, err) = run(
        dir,
        python,
        &["-m".into(), "venv".into(), "--without-pip".into(), venv.clone().into()],
    );
    assert_eq!(code, 0, "{err}");
    let own = venv.join("bin/python3");
    // Sorted before the hook's .pth, so torch is importable when the hook runs.
    let torch_site = site_packages(python).unwrap();
    std::fs::write(
        site_packages(&own).unwrap().join("00_torch.pth"),
        torch_site.as_os_str().as_encoded_bytes(),
    )
    .unwrap();
    own
}

/// `madengine profile` over `workload` (run by a venv of its own that
/// imports torch) with an iteration window of 3 steps; its stderr and the
/// traces it copied, one for each pid the trigger found runnable.
fn profile(torch: &Path, dir: &Path, workload: &[&str]) -> (String, Vec<(u32, Value)>) {
    profile_with(torch, dir, &[], workload)
}

/// As [`profile`], with more `madengine profile` options.
fn profile_with(
    torch: &Path,
    dir: &Path,
    options: &[&str],
    workload: &[&str],
) -> (String, Vec<(u32, Value)>) {
    let python = venv_with_torch(torch, dir);
    let python = python.as_path();
    // Where `profile` installs the hook.
    let site = site_packages(python).unwrap();
    let mut args: Vec<OsString> = ["profile", "--dynolog-bin"].map(OsString::from).to_vec();
    args.push(fixture("fake_dynolog.py").into());
    args.extend(["--python".into(), python.into()]);
    args.extend(
        ["--warmup-s", "2", "--retry-interval-s", "1", "--stable-s", "2", "--iterations", "3"]
            .map(OsString::from),
    );
    args.extend(options.iter().map(OsString::from));
    args.extend(["--".into(), python.into()]);
    args.extend(workload.iter().map(OsString::from));
    let (code, _, stderr) = run(dir, &crate::binary(), &args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("Registering daemon config loader"), "{stderr}");
    assert!(hook_files(&site).is_empty(), "the hook stays in {}", site.display());
    let out = dir.join("torch_profiler_output");
    let mut traces: Vec<(u32, Value)> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("libkineto_trace_")
                .and_then(|t| t.strip_suffix(".json"))
                .and_then(|p| p.parse::<u32>().ok())
                .unwrap_or_else(|| panic!("kineto names it libkineto_trace_<pid>.json: {name}"));
            let trace: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
            assert!(
                trace["traceName"].as_str().unwrap().ends_with(&format!("/{name}")),
                "{}",
                trace["traceName"]
            );
            (pid, trace)
        })
        .collect();
    traces.sort_by_key(|t| t.0);
    let pids: Vec<u32> = traces.iter().map(|t| t.0).collect();
    assert_eq!(pids, runnable_pids(&stderr), "{stderr}");
    (stderr, traces)
}

/// The pids the trigger found runnable, from its notes.
fn runnable_pids(stderr: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = stderr
        .lines()
        .filter_map(|l| l.split("runnable workload pid ").nth(1)?.split(':').next()?.parse().ok())
        .collect();
    pids.sort();
    pids.dedup();
    pids
}

/// `madengine profile` on an unmodified PyTorch script: the hook makes the
/// real Kineto count optimizer steps, so an iteration request traces exactly
/// that many; the hook leaves the interpreter's site-packages afterwards.
#[test]
fn profile_traces_a_real_pytorch_process_by_iteration() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = workload().display().to_string();
    // At least 15 s of steps: the request lands on Kineto's next poll (5 s).
    let (stderr, traces) = profile(&python, dir.path(), &[&w, "--steps", "300", "--sleep", "0.05"]);
    assert!(stderr.contains("madengine: Kineto optimizer-step hook registered (pid "), "{stderr}");
    assert!(!stderr.contains("ran no optimizer step"), "{stderr}");
    assert_eq!(traces.len(), 1, "{stderr}");
    let events = traces[0].1["traceEvents"].as_array().unwrap();
    assert_eq!(names(events, "user_annotation", "Optimizer.step#"), 3, "three iterations");
    assert!(names(events, "cpu_op", "aten::") > 100);
    // --with-stacks is on by default: Python frames are recorded.
    assert!(names(events, "python_function", "") > 0);

    let (code, stdout, stderr) =
        madengine(dir.path(), &["report", "summary", "torch_profiler_output", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["traces"][0]["outcome"], "no_gpu_activity", "{stdout}");
    // Kineto lists no device: the process saw no GPU.
    assert_eq!(summary["traces"][0]["gpu_devices"], 0, "{stdout}");
}

/// `madengine profile -- python -m torch.distributed.run ...`: the launcher
/// stays off the daemon, both workers are traced for the same 3 steps.
#[test]
fn profile_traces_every_torchrun_worker_and_not_the_launcher() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = workload().display().to_string();
    let (stderr, traces) = profile(
        &python,
        dir.path(),
        &[
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            &w,
            "--distributed",
            "--steps",
            "300",
            "--sleep",
            "0.05",
        ],
    );
    assert!(!stderr.contains("ran no optimizer step"), "{stderr}");
    assert_eq!(traces.len(), 2, "{stderr}");
    assert!(!stderr.contains("processes registered, but no runnable"), "the launcher registered");
    for (pid, trace) in &traces {
        let events = trace["traceEvents"].as_array().unwrap();
        assert_eq!(names(events, "user_annotation", "Optimizer.step#"), 3, "pid {pid}");
    }
}

/// An iteration window over a workload without an optimizer (inference):
/// after `--first-step-s` the request goes out with a warning, and Kineto,
/// which has no step count, traces its fallback time window instead.
#[test]
fn an_inference_workload_is_asked_after_the_first_step_wait() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let w = workload().display().to_string();
    let (stderr, traces) = profile_with(
        &python,
        dir.path(),
        &["--first-step-s", "3"],
        &[&w, "--inference", "--steps", "300", "--sleep", "0.05"],
    );
    assert_eq!(traces.len(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "pid(s) {} ran no optimizer step in time (--first-step-s); requesting anyway",
            traces[0].0
        )),
        "{stderr}"
    );
    let events = traces[0].1["traceEvents"].as_array().unwrap();
    assert!(names(events, "cpu_op", "aten::") > 10, "the fallback window traced the forwards");
    assert_eq!(names(events, "user_annotation", "Optimizer.step#"), 0);
}

/// The workload as a 2-rank `torchrun` job (gloo on the CPU) in `dir`,
/// with `args`; it must succeed.
fn torchrun(python: &Path, dir: &Path, args: &[&str]) {
    let mut argv: Vec<OsString> =
        ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
            .map(OsString::from)
            .to_vec();
    argv.push(workload().into());
    argv.push("--distributed".into());
    argv.extend(args.iter().map(OsString::from));
    let (code, _, stderr) = run(dir, python, &argv);
    assert_eq!(code, 0, "{stderr}");
}

/// A 2-rank `torchrun` job (gloo on the CPU) with torch.profiler: each
/// trace's rank is found from its name, and from `distributedInfo` once the
/// name no longer says it; the traces are strict JSON; the native summary
/// names them CPU-only instead of failing.
#[test]
fn torchrun_ranks_are_found_by_name_and_by_content() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    torchrun(&python, dir.path(), &["--steps", "6", "--profile-dir", "run"]);

    let ranks = |root: &str| -> Vec<(String, u64, String)> {
        let (code, stdout, stderr) = madengine(dir.path(), &["trace", "discover", root, "--json"]);
        assert_eq!(code, 0, "{stderr}");
        let found: Value = serde_json::from_str(&stdout).unwrap();
        let mut ranks: Vec<_> = found["traces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert_eq!(t["kind"], "pytorch", "{t}");
                let name = Path::new(t["path"].as_str().unwrap()).file_name().unwrap();
                (
                    name.to_string_lossy().into_owned(),
                    t["rank"]["rank"].as_u64().unwrap(),
                    t["rank"]["source"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        ranks.sort_by_key(|r| r.1);
        ranks
    };
    let by_name = ranks("run");
    assert_eq!(by_name.len(), 2, "{by_name:?}");
    for (rank, (file, found, source)) in by_name.iter().enumerate() {
        assert!(file.starts_with(&format!("rank{rank}.")) && file.ends_with(".pt.trace.json"));
        assert_eq!((*found, source.as_str()), (rank as u64, "file_name"), "{file}");
        // Renamed so that only the content can tell.
        let renamed = dir.path().join("renamed");
        std::fs::create_dir_all(&renamed).unwrap();
        std::fs::copy(
            dir.path().join("run").join(file),
            renamed.join(format!("{}.json", 7 - rank)),
        )
        .unwrap();
    }
    let by_content: Vec<(u64, String)> =
        ranks("renamed").into_iter().map(|(_, rank, source)| (rank, source)).collect();
    assert_eq!(
        by_content,
        [(0, "distributed_info".to_string()), (1, "distributed_info".to_string())]
    );

    let (code, stdout, stderr) = madengine(dir.path(), &["trace", "sanitize", "--check", "run"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = madengine(dir.path(), &["report", "summary", "run", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let outcomes: Vec<&Value> =
        summary["traces"].as_array().unwrap().iter().map(|t| &t["outcome"]).collect();
    assert_eq!(outcomes, ["no_gpu_activity", "no_gpu_activity"], "{stdout}");
    let (_, text, _) = madengine(dir.path(), &["report", "summary", "run"]);
    assert_eq!(text.matches("its process saw no GPU").count(), 2, "{text}");
}

/// torch.profiler's schedule repeated (`repeat=2`) in a 2-rank `torchrun`
/// job: `tensorboard_trace_handler` writes a trace per rank each cycle into
/// one directory, named by the time it wrote it (this wheel's format), and
/// each cycle is planned as a run of its own with its collective report.
#[test]
fn torchrun_profiling_cycles_are_runs_of_their_own() {
    let Some(python) = torch_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    torchrun(&python, dir.path(), &["--steps", "10", "--cycles", "2", "--profile-dir", "run"]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("run"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    for name in &names {
        let time = trace_discover::export_time_from_file_name(name.as_bytes());
        assert!(time.is_some(), "{name}: no time of tensorboard_trace_handler's found");
    }

    let (code, stdout, stderr) =
        madengine(dir.path(), &["report", "tracelens", "run", "--discover-only", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    let cycles: Vec<(u64, u64, Vec<String>)> = plan["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["tool"] == "Collective")
        .map(|j| {
            let c = &j["collective"];
            let members = c["members"].as_array().unwrap();
            let traces = members.iter().map(|m| m[1].as_str().unwrap().to_string()).collect();
            (c["cycle"]["number"].as_u64().unwrap(), c["cycle"]["of"].as_u64().unwrap(), traces)
        })
        .collect();
    // Each rank's first trace is the first cycle (the names sort by rank,
    // then by time).
    let expected = vec![
        (1, 2, vec![names[0].clone(), names[2].clone()]),
        (2, 2, vec![names[1].clone(), names[3].clone()]),
    ];
    assert_eq!(cycles, expected, "{stdout}");

    // `report summary` labels each trace with its cycle (read or not: on
    // the CPU, the traces hold no GPU activity).
    let (code, stdout, stderr) =
        madengine(dir.path(), &["report", "summary", "run", "--top", "0", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let labels: Vec<(String, u64, u64)> = summary["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let trace = t["trace"].as_str().unwrap().trim_start_matches("run/").to_string();
            (trace, t["cycle"]["number"].as_u64().unwrap(), t["cycle"]["of"].as_u64().unwrap())
        })
        .collect();
    let expected: Vec<(String, u64, u64)> =
        names.iter().zip([1, 2, 1, 2]).map(|(name, n)| (name.clone(), n, 2)).collect();
    assert_eq!(labels, expected, "{stdout}");
}
