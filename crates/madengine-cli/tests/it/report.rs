//! `madengine report tracelens|tracelens-compare` and `setup tracelens`.

use std::{ffi::OsString, fs, path::Path};

use crate::{
    cli_snapshot,
    standin::{Standin, standin},
    synthetic,
};

/// A run directory with two ranks, a CPU-only launcher trace, a broken
/// rocprofv3 trace and a rocpd database, in a temp dir.
fn run_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    for (to, from) in [
        ("run/rank0_trace.json", "torch_profiler_output/libkineto_trace_rank0_1.json"),
        ("run/rank1_trace.json", "torch_profiler_output/libkineto_trace_rank1_2.json"),
        (
            "run/launcher/libkineto_trace_4242.json",
            "torch_profiler_output/libkineto_trace_4242.json",
        ),
        ("run/rocprof_output/9999_results.json", "rocprof_output/9999_results.json"),
        ("run/host/1234_results.db", "rocprof_output/1e4d92661463/1234_results.db"),
    ] {
        let path = dir.path().join(to);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::copy(synthetic().join("run").join(from), path).unwrap();
    }
    let _ = run;
    dir
}

fn python(venv: &Path) -> OsString {
    Standin::python(venv).into()
}

#[test]
fn report_table() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    cli_snapshot!(
        dir.path(),
        [
            "report",
            "tracelens",
            "--root",
            "run",
            "--output-dir",
            "run/tracelens_output",
            "--python",
            &py,
            "--jobs",
            "1"
        ]
    );
    let csv =
        fs::read_to_string(dir.path().join("run/tracelens_output/tracelens_summary.csv")).unwrap();
    assert!(csv.starts_with("trace_file,kind,tracelens_tool,status,output,detail\n"), "{csv}");
}

#[test]
fn report_json() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    cli_snapshot!(
        dir.path(),
        ["report", "tracelens", "--root", "run", "--python", &py, "--mode", "rocprof", "--json"]
    );
}

#[test]
fn report_uses_tracelens_venv_and_never_a_decoy_on_path() {
    let dir = run_dir();
    let decoys = dir.path().join("decoys");
    fs::create_dir_all(&decoys).unwrap();
    let marker = dir.path().join("decoy-ran");
    for tool in [
        "TraceLens_generate_perf_report_pytorch",
        "TraceLens_generate_perf_report_rocprof",
        "python3",
    ] {
        let script = decoys.join(tool);
        if tool == "python3" {
            // python3 itself stays the real one: only TraceLens scripts are decoys
            continue;
        }
        fs::write(&script, format!("#!/bin/sh\ntouch '{}'\nexit 99\n", marker.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(decoys.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    // The module-only venv has no scripts beside its python: the -c fallback must run, not the decoy.
    let env = [("PATH", path), ("TRACELENS_VENV", standin().module_only.clone().into_os_string())];
    cli_snapshot!(
        dir.path(),
        env = &env,
        ["report", "tracelens", "--root", "run", "--output-dir", "run/out", "--mode", "rocprof"]
    );
    assert!(!marker.exists(), "a TraceLens script from PATH ran");
}

#[test]
fn discover_only_lists_traces_and_the_collective_plan() {
    let dir = run_dir();
    cli_snapshot!(dir.path(), ["report", "tracelens", "--root", "run", "--discover-only"]);
}

/// Two ranks' traces of two profiling cycles in one directory, named by
/// torch.profiler's `tensorboard_trace_handler` (the rank only in their
/// `distributedInfo`): a collective report for each cycle.
#[test]
fn each_profiling_cycle_gets_its_collective_report() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("run")).unwrap();
    for (cycle, rank) in [(0u64, 0u32), (0, 1), (1, 0), (1, 1)] {
        let from =
            format!("run/torch_profiler_output/libkineto_trace_rank{rank}_{}.json", rank + 1);
        let ns = 1_764_720_000_000_000_000 + cycle * 5_000_000_000 + u64::from(rank);
        let to = dir.path().join(format!("run/gpu-node_{}.{ns}.pt.trace.json", 4242 + rank));
        fs::copy(synthetic().join(from), to).unwrap();
    }
    cli_snapshot!(dir.path(), ["report", "tracelens", "--root", "run", "--discover-only"], @r"
    exit code: 0
    ----- stdout -----
    pytorch	run/gpu-node_4242.1764720000000000000.pt.trace.json
    pytorch	run/gpu-node_4242.1764720005000000000.pt.trace.json
    pytorch	run/gpu-node_4243.1764720000000000001.pt.trace.json
    pytorch	run/gpu-node_4243.1764720005000000001.pt.trace.json
    collective	2 per-rank traces, profiling cycle 1 of 2 (world size 2)	rank 0: gpu-node_4242.1764720000000000000.pt.trace.json; rank 1: gpu-node_4243.1764720000000000001.pt.trace.json
    collective	2 per-rank traces, profiling cycle 2 of 2 (world size 2)	rank 0: gpu-node_4242.1764720005000000000.pt.trace.json; rank 1: gpu-node_4243.1764720005000000001.pt.trace.json
    6 TraceLens job(s) planned for 4 traces under run
    ----- stderr -----
    ");
    let py = python(&standin().scripts);
    let args = ["report", "tracelens", "run", "-o", "run/out", "--python"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    args.push(&py);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let csv = fs::read_to_string(dir.path().join("run/out/tracelens_summary.csv")).unwrap();
    let rows: Vec<&str> =
        csv.lines().skip(1).filter(|r| r.contains("multi_rank_collective")).collect();
    insta::assert_snapshot!(rows.join("\n"), @r#"
    "2 per-rank traces, profiling cycle 1 of 2",pytorch,TraceLens_generate_multi_rank_collective_report_pytorch,SUCCESS,out/multi_rank_collective_cycle1_csv,
    "2 per-rank traces, profiling cycle 2 of 2",pytorch,TraceLens_generate_multi_rank_collective_report_pytorch,SUCCESS,out/multi_rank_collective_cycle2_csv,
    "#);
    // A cycle the directory does not hold: refused, and the run before is
    // left as it was.
    let args = ["report", "tracelens", "run", "-o", "run/out", "--cycle", "5", "--python"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    args.push(&py);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 2\n"), "{text}");
    assert!(text.contains("run holds 2 profiling cycles, so there is no cycle 5: ask for 1"));
    assert_eq!(fs::read_to_string(dir.path().join("run/out/tracelens_summary.csv")).unwrap(), csv);
    // The per-rank reports compare cycle by cycle too: the summary names
    // the trace each was made of, and that trace its rank.
    let args = ["report", "diff", "run/out", "run/out", "--cycle", "2", "--json"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let json = crate::stdout_json(&text);
    assert_eq!(json["new"]["cycle"], serde_json::json!({"number": 2, "of": 2}));
    let traces: Vec<&str> =
        json["new"]["traces"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        traces,
        [
            "run/out/gpu-node_4242.1764720005000000000_csv",
            "run/out/gpu-node_4243.1764720005000000001_csv"
        ]
    );
    // --cycle last: only the last cycle's traces are analyzed.
    let args = ["report", "tracelens", "run", "-o", "out2", "--mode", "collective", "--cycle"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    args.extend(["last".as_ref(), "--python".as_ref(), py.as_os_str()]);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(text.contains("/run: profiling cycle 2 of 2 (--cycle)"), "{text}");
    assert!(text.contains("2 PyTorch traces of other profiling cycles left out (--cycle)"));
    let csv = fs::read_to_string(dir.path().join("out2/tracelens_summary.csv")).unwrap();
    assert!(csv.contains("\n2 per-rank traces,pytorch,"), "{csv}");
    // --cycle 1: only the first cycle's traces are planned.
    cli_snapshot!(dir.path(), ["report", "tracelens", "--root", "run", "--discover-only", "--cycle", "1"], @r"
    exit code: 0
    ----- stdout -----
    pytorch	run/gpu-node_4242.1764720000000000000.pt.trace.json
    pytorch	run/gpu-node_4243.1764720000000000001.pt.trace.json
    collective	2 per-rank traces (world size 2)	rank 0: gpu-node_4242.1764720000000000000.pt.trace.json; rank 1: gpu-node_4243.1764720000000000001.pt.trace.json
    cycle	run	profiling cycle 1 of 2
    2 PyTorch traces of other profiling cycles left out (--cycle)
    3 TraceLens job(s) planned for 2 traces under run
    ----- stderr -----
    ");
    // Paired by the ranks in the traces' distributedInfo (the reports'
    // names carry none).
    let ranks: Vec<u64> =
        json["ranks"].as_array().unwrap().iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [0, 1]);
}

/// madengine's own `-r`/`-o` (and the run directory given as DIR) plan the
/// same jobs as `--root`/`--output-dir`.
#[test]
fn short_flags_and_a_positional_root_mean_root_and_output_dir() {
    let dir = run_dir();
    let long =
        ["report", "tracelens", "--root", "run", "--output-dir", "run/out", "--discover-only"];
    let (expected, _) = crate::run_cli(dir.path(), &long.map(AsRef::as_ref), &[]);
    assert!(expected.starts_with("exit code: 0\n"), "{expected}");
    for args in [
        &["report", "tracelens", "-r", "run", "-o", "run/out", "--discover-only"][..],
        &["report", "tracelens", "run", "-o", "run/out", "--discover-only"],
        &[
            "report",
            "tracelens",
            "--discover-only",
            "-o",
            "run/out",
            "run",
            "--",
            "--topk_ops",
            "3",
        ],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
        assert_eq!(crate::run_cli(dir.path(), &args, &[]).0, expected, "{args:?}");
    }
    cli_snapshot!(dir.path(), ["report", "tracelens", "run", "--root", "run"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: the argument '[DIR]' cannot be used with '--root <DIR>'

    Usage: madengine report tracelens <DIR> [-- <EXTRA>...]

    For more information, try '--help'.
    ");
}

#[test]
fn failures_exit_1_unless_no_fail() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    let env = [("DUMMY_TRACELENS_FAIL", OsString::from("TraceLens_generate_perf_report_rocprof"))];
    cli_snapshot!(
        dir.path(),
        env = &env,
        [
            "report",
            "tracelens",
            "--root",
            "run",
            "--output-dir",
            "run/out",
            "--python",
            &py,
            "--mode",
            "rocprof"
        ]
    );
    cli_snapshot!(
        dir.path(),
        env = &env,
        [
            "report",
            "tracelens",
            "--root",
            "run",
            "--output-dir",
            "run/out",
            "--python",
            &py,
            "--mode",
            "rocprof",
            "--no-fail"
        ]
    );
}

#[test]
fn missing_tracelens_exits_4_with_how_to_install() {
    let dir = run_dir();
    let py = python(&standin().wrong_package);
    cli_snapshot!(dir.path(), ["report", "tracelens", "--root", "run", "--python", &py]);
}

#[test]
fn bad_arguments_fail_before_anything_runs() {
    let dir = run_dir();
    cli_snapshot!(dir.path(), ["report", "tracelens", "--root", "no/such/run"]);
    cli_snapshot!(dir.path(), ["report", "tracelens", "--mode", "everything"]);
    let py = python(&standin().scripts);
    cli_snapshot!(
        dir.path(),
        ["report", "tracelens", "--root", "run", "--python", &py, "--gpu-arch", "H100"]
    );
    cli_snapshot!(
        dir.path(),
        ["report", "tracelens", "--root", "run", "--python", &py, "--", "--world", "4"],
        @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: cannot pass `--world` to TraceLens: the driver sets --world_size itself (the world size is a setting of the run)
    [madengine] use madengine's --world-size
    "
    );
    assert!(!dir.path().join("tracelens_output").exists(), "a refused run wrote output");
}

#[test]
fn compare_reports() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    cli_snapshot!(
        dir.path(),
        ["report", "tracelens", "--root", "run", "--python", &py, "--mode", "pytorch", "--json"]
    );
    let a = dir.path().join("tracelens_output/rank0_trace_csv");
    let b = dir.path().join("tracelens_output/rank1_trace_csv");
    cli_snapshot!(
        dir.path(),
        [
            "report",
            "tracelens-compare",
            &a,
            &b,
            "--names",
            "r0",
            "r1",
            "--python",
            &py,
            "-o",
            "cmp.xlsx"
        ]
    );
    cli_snapshot!(dir.path(), ["report", "tracelens-compare", &a, "missing_csv", "--python", &py]);
    cli_snapshot!(
        dir.path(),
        ["report", "tracelens-compare", &a, &b, "--names", "only-one", "--python", &py]
    );
    // Two reports TraceLens would tag alike (its tags are the folder names):
    // refused before it runs, with names to pass (TraceLens itself ends in
    // "ValueError: Tags must be unique").
    for side in ["base", "new"] {
        let to = dir.path().join(side).join("x_csv");
        fs::create_dir_all(&to).unwrap();
        for entry in fs::read_dir(&a).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    cli_snapshot!(dir.path(), ["report", "tracelens-compare", "base/x_csv", "new/x_csv", "--python", &py], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: base/x_csv and new/x_csv would both be tagged `x_csv` (TraceLens tags each report by its file or directory name, without extension, and needs the tags unique): name every report with --names, e.g. `--names base new`
    ");
    cli_snapshot!(dir.path(), ["report", "tracelens-compare", "base/x_csv", "new/x_csv", "--names", "a", "a", "--python", &py], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: `a` is given twice in --names: TraceLens needs the tags unique
    ");
    cli_snapshot!(
        dir.path(),
        [
            "report",
            "tracelens-compare",
            "base/x_csv",
            "new/x_csv",
            "--names",
            "base",
            "new",
            "--python",
            &py,
            "-o",
            "cmp2.xlsx"
        ]
    );
    // A missing report is named before TraceLens is looked for.
    cli_snapshot!(dir.path(), ["report", "tracelens-compare", &a, "missing_csv", "--python", "/no/python"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: no such report: missing_csv
    ");
}

/// `report tracelens` keeps the reports an earlier run left in its output
/// directory (as the original does); `report diff` of that directory
/// compares only those its summary names, and says which it left out.
#[test]
fn a_tracelens_output_diffs_as_the_run_its_summary_names() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    let tracelens = || {
        let args = ["report", "tracelens", "--root", "run", "--mode", "pytorch", "-o", "out"];
        let mut args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        args.extend([std::ffi::OsStr::new("--python"), &py]);
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        assert!(text.starts_with("exit code: 0"), "{text}");
    };
    tracelens();
    fs::remove_file(dir.path().join("run/rank1_trace.json")).unwrap();
    tracelens();
    assert!(dir.path().join("out/rank1_trace_csv/gpu_timeline.csv").is_file());
    cli_snapshot!(dir.path(), ["report", "diff", "out", "run/rank0_trace.json", "--top", "0"]);
}

#[test]
fn setup_tracelens_installs_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let wheel = standin().wheel.clone();
    cli_snapshot!(dir.path(), ["setup", "tracelens", "--venv", &venv, "--spec", &wheel]);
    cli_snapshot!(
        dir.path(),
        [
            "setup",
            "tracelens",
            "--venv",
            &venv,
            "--spec",
            "git+https://me:hunter2@example.invalid/TraceLens"
        ]
    );
}

#[test]
fn ctrl_c_stops_the_jobs_and_removes_the_sanitized_copies() {
    stopped_by("INT");
}

/// SIGTERM (`kill`, a batch system's cancel) and SIGHUP (a closed terminal)
/// stop the run as Ctrl-C does: no TraceLens job left running under PID 1,
/// no scratch directory left behind.
#[test]
fn sigterm_and_sighup_stop_the_jobs_as_ctrl_c_does() {
    stopped_by("TERM");
    stopped_by("HUP");
}

/// `report tracelens` with two TraceLens jobs running, sent SIG`signal`.
#[allow(clippy::disallowed_methods, reason = "tests run the real binary and kill(1)")]
fn stopped_by(signal: &str) {
    use std::{process::Command, time::Duration};
    let dir = run_dir();
    let scratch = dir.path().join("tmp");
    fs::create_dir(&scratch).unwrap();
    let child = Command::new(crate::binary())
        .args(["report", "tracelens", "--root", "run", "--output-dir", "out", "--jobs", "2"])
        .arg("--python")
        .arg(python(&standin().scripts))
        .current_dir(dir.path())
        .env("TMPDIR", &scratch)
        .env("DUMMY_TRACELENS_SLEEP", "600")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until two TraceLens jobs run; the broken rocprofv3 trace has a
    // sanitized copy in the scratch directory by then.
    let pid = child.id();
    let mut running = vec![];
    for _ in 0..600 {
        running = crate::children(pid, "");
        if running.len() == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running.len(), 2, "the jobs did not start");
    let copies = fs::read_dir(&scratch).unwrap().count();
    assert_eq!(copies, 1, "no scratch directory while the jobs run");
    // The signal to madengine alone: the jobs (sleeping for 10 minutes)
    // must be stopped by madengine itself.
    let Ok(out) = send(child, signal) else {
        for job in &running {
            let _ = Command::new("kill").args(["-KILL", &job.to_string()]).status();
        }
        panic!("madengine did not stop within a minute of SIG{signal}");
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // The launcher's CPU-only trace was skipped without TraceLens: finished.
    assert!(stderr.contains("error: interrupted: 1 of 6 TraceLens jobs had finished"), "{stderr}");
    for job in running {
        // Gone, or a zombie nobody reaps (a container's PID 1 may not).
        let stat = fs::read_to_string(format!("/proc/{job}/stat")).unwrap_or_default();
        assert!(!dynolog_client::is_running(job), "job {job} still runs: {stat}");
    }
    assert_eq!(fs::read_dir(&scratch).unwrap().count(), 0, "the scratch directory was left");
    assert!(!dir.path().join("out/tracelens_summary.csv").exists());
}

/// SIGINT to `child` alone, then its output; `Err` (after killing it) when it
/// has not stopped within a minute: a guard against a hang, not a timing check.
fn sigint(child: std::process::Child) -> Result<std::process::Output, ()> {
    send(child, "INT")
}

/// SIG`signal` to `child` alone, as [`sigint`].
#[allow(clippy::disallowed_methods, reason = "kill(1)")]
fn send(mut child: std::process::Child, signal: &str) -> Result<std::process::Output, ()> {
    let pid = child.id().to_string();
    let kill =
        std::process::Command::new("kill").arg(format!("-{signal}")).arg(&pid).status().unwrap();
    assert!(kill.success());
    let mut waited = 0;
    while child.try_wait().unwrap().is_none() && waited < 1200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        return Err(());
    }
    Ok(child.wait_with_output().unwrap())
}

#[test]
fn ctrl_c_while_report_summary_reads_writes_nothing() {
    let names: Vec<String> = (0..20).map(|i| format!("t{i:02}.json")).collect();
    let mut args: Vec<&str> = vec!["report", "summary", "--jobs", "1"];
    args.extend(names.iter().map(String::as_str));
    interrupted_while_reading(&names, &args);
}

#[test]
fn ctrl_c_while_report_diff_reads_writes_nothing() {
    let names: Vec<String> = ["base", "new"]
        .iter()
        .flat_map(|run| (0..10).map(move |rank| format!("{run}/rank{rank}.json")))
        .collect();
    interrupted_while_reading(&names, &["report", "diff", "base", "new", "--jobs", "1"]);
}

/// `madengine <args> --output-dir out`, reading a trace of about 10 MB
/// through each of the hard links `names` (a symbolic link would be read
/// once: the release build reads that in less time than a poll takes),
/// stopped by Ctrl-C once it reads: exit 130, said, nothing written.
#[allow(clippy::disallowed_methods, reason = "the test runs the real binary")]
fn interrupted_while_reading(names: &[String], args: &[&str]) {
    use std::{process::Command, time::Duration};
    let dir = tempfile::tempdir().unwrap();
    let mut trace = String::from("{\"traceEvents\": [");
    for i in 0..120_000 {
        trace.push_str(&format!(
            r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {i}, "dur": 1}},"#
        ));
    }
    trace.push_str("{}]}");
    let big = dir.path().join("big.json");
    fs::write(&big, trace).unwrap();
    for name in names {
        let link = dir.path().join(name);
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        fs::hard_link(&big, link).unwrap();
    }
    let traces = dir.path().canonicalize().unwrap();
    let mut child = Command::new(crate::binary())
        .args(args)
        .args(["--output-dir", "out"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once a trace is being read (open in the process), Ctrl-C.
    let pid = child.id();
    let reading = || {
        fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(&traces)))
    };
    // Asked once a poll: asking again after the loop could fall between
    // two traces (the one read closed, the next not yet open).
    let mut polls = 0;
    let mut seen = reading();
    while !seen && polls < 12_000 && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
        polls += 1;
        seen = reading();
    }
    if !seen {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "madengine was not seen reading a trace ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sigint(child).expect("madengine stops within a minute of SIGINT");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted while reading the traces: nothing was written"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists(), "output was written");
}

#[test]
fn a_cut_trace_fails_and_salvage_analyzes_it() {
    let dir = run_dir();
    let rank1 = dir.path().join("run/rank1_trace.json");
    let body = fs::read(&rank1).unwrap();
    fs::write(&rank1, &body[..body.len() - 150]).unwrap();
    let py = python(&standin().scripts);
    let args = |salvage: bool| -> Vec<OsString> {
        let mut args: Vec<OsString> =
            ["report", "tracelens", "--root", "run", "--mode", "pytorch", "--python"]
                .into_iter()
                .map(OsString::from)
                .collect();
        args.push(py.clone());
        if salvage {
            args.push("--salvage".into());
        }
        args
    };
    let run = |args: Vec<OsString>| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let refused = run(args(false));
    assert!(refused.starts_with("exit code: 1\n"), "{refused}");
    assert!(refused.contains("cut short: its JSON ends after"), "{refused}");
    // The library's row says a salvage would read it; madengine says how.
    assert!(refused.contains("(a salvage analyzes the events before the cut)"), "{refused}");
    assert!(
        refused.contains("[madengine] `madengine report tracelens --salvage` analyzes what such"),
        "{refused}"
    );
    let salvaged = run(args(true));
    assert!(salvaged.starts_with("exit code: 0\n"), "{salvaged}");
    assert!(
        salvaged.contains("[madengine] rank1_trace.json was cut short after byte"),
        "{salvaged}"
    );
    assert!(!salvaged.contains("FAILURE"), "{salvaged}");
}

/// A run directory whose name is not UTF-8 (Latin-1 bytes, as an old
/// tool's locale writes them): every `--json` names its paths as text, the
/// bytes that are not UTF-8 as U+FFFD, instead of panicking (serde refuses
/// such a path).
#[test]
fn paths_that_are_not_utf8_are_named_lossily_in_every_json() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"r\xe9sultat");
    let run = dir.path().join(name);
    fs::create_dir(&run).unwrap();
    for (rank, pid) in [(0, 1), (1, 2)] {
        let from = format!("run/torch_profiler_output/libkineto_trace_rank{rank}_{pid}.json");
        fs::copy(synthetic().join(from), run.join(format!("rank{rank}_trace.json"))).unwrap();
    }
    let trace = Path::new(name).join("rank0_trace.json");
    let page = std::ffi::OsStr::from_bytes(b"r\xe9sultat.html");
    let commands: [Vec<&std::ffi::OsStr>; 5] = [
        vec!["trace".as_ref(), "discover".as_ref(), name, "--json".as_ref()],
        vec![
            "report".as_ref(),
            "summary".as_ref(),
            name,
            "--top".as_ref(),
            "0".as_ref(),
            "--json".as_ref(),
        ],
        vec![
            "report".as_ref(),
            "tracelens".as_ref(),
            name,
            "--discover-only".as_ref(),
            "--json".as_ref(),
        ],
        vec![
            "trace".as_ref(),
            "sanitize".as_ref(),
            trace.as_os_str(),
            "-o".as_ref(),
            "out.json".as_ref(),
            "--json".as_ref(),
        ],
        vec![
            "report".as_ref(),
            "diff".as_ref(),
            name,
            name,
            "--html".as_ref(),
            page,
            "--json".as_ref(),
        ],
    ];
    // Each document's shape is kept (but trace-report's, which its own
    // snapshots keep: the run summary and the comparison).
    let names = ["discover", "", "tracelens_planned", "sanitize", ""];
    for (args, name) in commands.into_iter().zip(names) {
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        assert!(text.starts_with("exit code: 0\n"), "{args:?}: {text}");
        let json = crate::stdout_json(&text).to_string();
        assert!(json.contains("r\u{fffd}sultat"), "{args:?}: {json}");
        let shape = crate::json_shape(&text);
        // Read back by the library type that owns the format.
        let value = crate::stdout_json(&text);
        match name {
            "discover" => drop(crate::reads_back::<trace_discover::Discovery>(&value, "discover")),
            "sanitize" => drop(crate::reads_back::<trace_sanitize::FileReport>(&value, "sanitize")),
            "tracelens_planned" => drop(crate::reads_back::<tracelens_driver::Planned>(
                &value,
                "report-tracelens-plan",
            )),
            _ if args[1] == "summary" => {
                drop(crate::reads_back::<trace_report::RunSummary>(&value, "report-summary"))
            }
            _ => drop(crate::reads_back::<trace_report::RunComparison>(&value, "report-diff")),
        }
        if !name.is_empty() {
            insta::assert_snapshot!(format!("json_shape_{name}"), shape);
        }
    }
    // The report summary kept records where its trace was, as text too.
    let record = dir.path().join("summary_output/rank0_trace/summary.json");
    let record: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    crate::conforms(&record, "summary-record");
    assert!(
        record["trace_absolute"].as_str().unwrap().ends_with("r\u{fffd}sultat/rank0_trace.json")
    );
}

use crate::{ORIGINAL_VARIABLES, TRACELENS_DEFAULTS as ORIGINAL_ENV};

/// `madengine args` in `dir` with `env` (and none of [`ORIGINAL_ENV`] but
/// those): exit code, stdout, stderr.
fn with_env(dir: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> (i32, String, String) {
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let mut command = std::process::Command::new(crate::binary());
    command.args(args).current_dir(dir).env_remove("TRACELENS_VENV").env("NO_COLOR", "1");
    for key in ORIGINAL_VARIABLES {
        command.env_remove(key);
    }
    let out = command.envs(env.iter().copied()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A tools config moved over from the original keeps its meaning: each
/// `TRACELENS_*` variable is its flag's default, shown in `--help`, and a
/// flag given wins; an empty variable is no value, as the original passed
/// none.
#[test]
fn the_originals_tracelens_environment_is_read_as_defaults() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    let calls = dir.path().join("calls.jsonl");
    let calls_env = calls.to_str().unwrap();
    let args = |extra: &[&str]| -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["report".into(), "tracelens".into(), "--root".into(), "run".into()];
        args.extend(["--python".into(), py.clone(), "--json".into()]);
        args.extend(extra.iter().map(OsString::from));
        args
    };

    let env = [
        ("TRACELENS_OUTPUT_DIR", "run/configured"),
        ("TRACELENS_MODE", "pytorch"),
        ("TRACELENS_GPU_ARCH", "MI300X"),
        ("TRACELENS_MAX_TRACES", "2"),
        ("DUMMY_TRACELENS_LOG", calls_env),
    ];
    let (code, stdout, stderr) = with_env(dir.path(), &os(&args(&[])), &env);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["mode"], "pytorch");
    assert!(summary["output_dir"].as_str().unwrap().ends_with("run/configured"), "{summary}");
    assert!(dir.path().join("run/configured/tracelens_summary.json").is_file());
    assert!(!dir.path().join("tracelens_output").exists());
    assert_eq!(summary["discovered"], serde_json::json!({"pytorch": 2}));
    let logged = fs::read_to_string(&calls).unwrap();
    assert!(logged.contains(r#""--gpu_arch_platform", "MI300X""#), "{logged}");
    assert!(!logged.contains("perf_report_rocprof"), "--mode pytorch: {logged}");

    // A flag given wins over its variable.
    fs::remove_file(&calls).unwrap();
    let (code, stdout, _) =
        with_env(dir.path(), &os(&args(&["--mode", "rocprof", "--output-dir", "run/flag"])), &env);
    assert_eq!(code, 0);
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["mode"], "rocprof");
    assert!(summary["output_dir"].as_str().unwrap().ends_with("run/flag"), "{summary}");

    // TRACELENS_WORLD_SIZE asks for ranks that are not there: the row says
    // so; `--world-size` wins, and `--partial` runs on the ranks present.
    let env = [("TRACELENS_WORLD_SIZE", "4"), ("TRACELENS_MODE", "collective")];
    let collective = |stdout: &str| {
        let summary: serde_json::Value = serde_json::from_str(stdout).unwrap();
        // The run's ranks 0 and 1 (the launcher's trace, in a folder of
        // its own, gets a row of its own saying why it makes no run).
        let rows = summary["results"].as_array().unwrap();
        let run: Vec<_> = rows
            .iter()
            .filter(|r| {
                r["tracelens_tool"] == "TraceLens_generate_multi_rank_collective_report_pytorch"
                    && !r["trace_file"].as_str().unwrap().contains("launcher")
            })
            .collect();
        assert_eq!(run.len(), 1, "{rows:#?}");
        (
            run[0]["status"].as_str().unwrap().to_string(),
            run[0]["detail"].as_str().unwrap().to_string(),
        )
    };
    let (_, stdout, _) = with_env(dir.path(), &os(&args(&[])), &env);
    let (status, detail) = collective(&stdout);
    assert_eq!(status, "SKIPPED");
    assert!(detail.contains("do not form 0..3; missing 2, 3 (--partial"), "{detail}");
    let (_, stdout, _) = with_env(dir.path(), &os(&args(&["--world-size", "2"])), &env);
    assert_eq!(collective(&stdout), ("SUCCESS".into(), String::new()));
    let (_, stdout, stderr) = with_env(dir.path(), &os(&args(&["--partial"])), &env);
    let (status, detail) = collective(&stdout);
    assert_eq!(status, "SUCCESS", "{stdout}");
    assert!(detail.starts_with("partial: ranks 2, 3 of 4 have no trace"), "{detail}");
    assert!(stderr.contains("2 of 4 per-rank traces: partial"), "{stderr}");

    // Empty values are no values.
    let env = [
        ("TRACELENS_OUTPUT_DIR", ""),
        ("TRACELENS_MODE", ""),
        ("TRACELENS_GPU_ARCH", ""),
        ("TRACELENS_WORLD_SIZE", ""),
        ("TRACELENS_MAX_TRACES", ""),
    ];
    let (code, stdout, stderr) = with_env(dir.path(), &os(&args(&[])), &env);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["mode"], "auto");
    assert!(summary["output_dir"].as_str().unwrap().ends_with("/tracelens_output"), "{summary}");

    // A bad value names its variable.
    let (code, _, stderr) =
        with_env(dir.path(), &os(&args(&[])), &[("TRACELENS_MODE", "everything")]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("everything") && stderr.contains("--mode"), "{stderr}");

    // --help shows each variable.
    let (_, help, _) =
        with_env(dir.path(), &[os_str("report"), os_str("tracelens"), os_str("--help")], &[]);
    for key in ORIGINAL_ENV {
        assert!(help.contains(&format!("[env: {key}=]")), "{key} in {help}");
    }
}

fn os(args: &[OsString]) -> Vec<&std::ffi::OsStr> {
    args.iter().map(|a| a.as_os_str()).collect()
}

fn os_str(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// `tracelens_summary.json` read as the original's consumers read it: its
/// analyzer's top-level counts, its results rows, and the `exit_code` its
/// host wrapper added; and `--json` prints the same document.
#[test]
fn the_summary_json_keeps_the_originals_fields() {
    let dir = run_dir();
    let py = python(&standin().scripts);
    let fail = [("DUMMY_TRACELENS_FAIL", "TraceLens_generate_perf_report_rocprof")];
    let (code, stdout, _) = with_env(
        dir.path(),
        &[
            os_str("report"),
            os_str("tracelens"),
            os_str("--root"),
            os_str("run"),
            os_str("--python"),
            &py,
            os_str("--json"),
        ],
        &fail,
    );
    assert_eq!(code, 1);
    // What madengine's report command and the scripts around it do with
    // the file (reference/madengine.md §3-§4).
    let consumer = r#"
import json, sys
summary = json.load(open(sys.argv[1]))
s, f, k = summary.get("succeeded", 0), summary.get("failed", 0), summary.get("skipped", 0)
rows = summary["results"]
assert {"trace_file", "kind", "tracelens_tool", "status", "output", "detail"} <= set(rows[0])
assert f == sum(1 for r in rows if r["status"] == "FAILURE")
assert s == sum(1 for r in rows if r["status"] == "SUCCESS")
assert k == sum(1 for r in rows if r["status"] == "SKIPPED")
for key in ("root", "output_dir", "mode", "python", "summary_csv", "discovered"):
    assert key in summary, key
print(f"{s} report(s) generated, {f} failed, {k} skipped; exit_code {summary['exit_code']}")
"#;
    let file = dir.path().join("tracelens_output/tracelens_summary.json");
    let stdout_file = dir.path().join("stdout.json");
    fs::write(&stdout_file, &stdout).unwrap();
    for path in [&file, &stdout_file] {
        #[allow(clippy::disallowed_methods, reason = "the consumer is a Python script")]
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(consumer)
            .arg(path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let said = String::from_utf8_lossy(&out.stdout);
        // The rocprofv3 JSON trace and the rocpd database.
        assert!(said.contains(" 2 failed, ") && said.ends_with("exit_code 1\n"), "{said}");
    }
    // And a run without failures says exit_code 0.
    let (code, stdout, _) = with_env(
        dir.path(),
        &[
            os_str("report"),
            os_str("tracelens"),
            os_str("--root"),
            os_str("run"),
            os_str("--python"),
            &py,
            os_str("--json"),
        ],
        &[],
    );
    assert_eq!(code, 0);
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["exit_code"], 0);
    assert_eq!(summary["failed"], 0);
    assert_eq!(summary["counts"]["succeeded"], summary["succeeded"]);
}

/// `setup tracelens` installs `$TRACELENS_PIP_SPEC` as the original's
/// installer did (the spec never printed), and `$TRACELENS_GIT_REF` names
/// the commit of the GitHub repository otherwise.
#[test]
fn setup_tracelens_reads_the_originals_pip_spec_and_git_ref() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let wheel = standin().wheel.clone();
    let setup = [os_str("setup"), os_str("tracelens"), os_str("--venv"), venv.as_os_str()];
    let mut json = setup.to_vec();
    json.push(os_str("--json"));
    let (code, stdout, stderr) =
        with_env(dir.path(), &json, &[("TRACELENS_PIP_SPEC", wheel.to_str().unwrap())]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    insta::assert_snapshot!("json_shape_setup_tracelens", crate::json_shape(&stdout));
    let value = serde_json::from_str(&stdout).unwrap();
    crate::reads_back::<tracelens_driver::SetupOutcome>(&value, "setup-tracelens");
    let outcome: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(outcome["installed"], true, "{outcome}");
    assert_eq!(outcome["spec"], wheel.to_str().unwrap());
    assert!(venv.join("bin/python3").exists());
    // The ref makes the spec; an unreachable GitHub fails, naming it
    // without a token.
    let other = dir.path().join("other");
    let (code, stdout, stderr) = with_env(
        dir.path(),
        &[os_str("setup"), os_str("tracelens"), os_str("--venv"), other.as_os_str()],
        &[("TRACELENS_GIT_REF", "v0.0.0-none"), ("PIP_NO_INDEX", "1")],
    );
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert!(
        stderr.contains("git+https://github.com/AMD-AGI/TraceLens@v0.0.0-none"),
        "{stdout}{stderr}"
    );
}

/// The GEMM shapes of a public MI300X trace against the roofline: its own
/// GPU's bundled spec by default, another's with `--gpu-arch`, an arch
/// file's, none with `none`; GEMM.csv carries TraceLens' roofline columns
/// then, and an unknown name is refused before any trace is read.
#[test]
fn gemm_shapes_are_compared_with_the_roofline() {
    let Some(public) = crate::public_dir::public_fixtures() else { return };
    let trace = public.join("kineto/tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let summary = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["report", "summary", trace.to_str().unwrap(), "-o", "out", "--json"];
        args.extend(extra);
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        let json = text.split("----- stdout -----\n").nth(1).unwrap();
        let json = json.split("----- stderr -----").next().unwrap();
        assert!(text.starts_with("exit code: 0"), "{text}");
        serde_json::from_str(json).unwrap()
    };
    let csv = || {
        let out = dir.path().join("out");
        let report = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
        std::fs::read_to_string(report.join("GEMM.csv")).unwrap()
    };
    let own = summary(&[]);
    let view = &own["traces"][0];
    assert_eq!(view["gpu_arch"], "MI300X");
    let top = &view["top_gemms"][0];
    assert_eq!(
        (top["name"].as_str(), top["m"].as_i64(), top["count"].as_i64()),
        (Some("aten::addmm"), Some(141), Some(17))
    );
    assert_eq!(top["bound"], "memory");
    assert!((top["pct_roofline"].as_f64().unwrap() - 3.0512).abs() < 1e-3, "{top}");
    assert!(csv().lines().next().unwrap().contains("Roofline Bound_first"));
    let other = summary(&["--gpu-arch", "MI325X"]);
    assert_eq!(other["traces"][0]["gpu_arch"], "MI325X");
    let none = summary(&["--gpu-arch", "none"]);
    assert!(none["traces"][0].get("gpu_arch").is_none());
    assert!(none["traces"][0]["top_gemms"][0].get("pct_roofline").is_none());
    assert!(!csv().contains("Roofline"));
    std::fs::write(
        dir.path().join("h100.json"),
        r#"{"name": "H100", "mem_bw_gbps": 3350, "max_achievable_tflops": {"matrix_bf16": 989}}"#,
    )
    .unwrap();
    let file = summary(&["--gpu-arch", "h100.json"]);
    assert_eq!(file["traces"][0]["gpu_arch"], "H100");
    cli_snapshot!(dir.path(), ["report", "summary", "nowhere.json", "--gpu-arch", "H100"], @"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: no bundled GPU arch is named `H100`; bundled: MI300X, MI325X
    [madengine] for another GPU, write its peaks as TraceLens' arch JSON (name, mem_bw_gbps, max_achievable_tflops by spec: matrix_bf16, vector_fp32, ...) and give --gpu-arch FILE.json
    ");
}

/// A Python that imports openpyxl (the reader pandas, and TraceLens' users,
/// open workbooks with), if this machine has one.
fn openpyxl() -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|python| {
        #[allow(clippy::disallowed_methods, reason = "a probe of the machine's Python")]
        let probe = std::process::Command::new(python).args(["-c", "import openpyxl"]).output();
        probe.is_ok_and(|o| o.status.success())
    })
}

/// A workbook as openpyxl reads it: its sheets in order, each its rows of
/// cells (numbers, text, null).
fn read_workbook(
    python: &str,
    path: &std::path::Path,
) -> Vec<(String, Vec<Vec<serde_json::Value>>)> {
    let script = "import json, sys, openpyxl\n\
        book = openpyxl.load_workbook(sys.argv[1], read_only=True)\n\
        print(json.dumps([[s.title, [list(r) for r in s.iter_rows(values_only=True)]] for s in book.worksheets]))";
    #[allow(clippy::disallowed_methods, reason = "the reader is Python's")]
    let out = std::process::Command::new(python).args(["-c", script]).arg(path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `--xlsx`: the workbook holds a sheet per TraceLens table, in TraceLens'
/// order (gpu_timeline first, the perf-model sheets after
/// unified_perf_summary), each cell what the CSV says (numbers as
/// numbers), read back by openpyxl; with two traces, one workbook each,
/// named after its report.
#[test]
fn the_tables_come_as_one_workbook_in_tracelens_order() {
    let Some(public) = crate::public_dir::public_fixtures() else { return };
    let Some(python) = openpyxl() else {
        return test_support::skip::missing("openpyxl", "apt-get install python3-openpyxl");
    };
    let traces = [
        public.join("kineto/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        public.join("kineto/hta/triton_example/triton_example.json.gz"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let run = |traces: &[&std::path::Path], xlsx: &str| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["report".as_ref(), "summary".as_ref()];
        args.extend(traces.iter().map(|t| t.as_os_str()));
        args.extend(["-o", "out", "--xlsx", xlsx].map(std::ffi::OsStr::new));
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        assert!(text.starts_with("exit code: 0"), "{text}");
    };
    run(&[&traces[0]], "perf.xlsx");
    let out = dir.path().join("out");
    let report = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    let book = read_workbook(python, &dir.path().join("perf.xlsx"));
    let names: Vec<&str> = book.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "gpu_timeline",
            "ops_summary_by_category",
            "ops_summary",
            "ops_unique_args",
            "unified_perf_summary",
            "GEMM",
            "SDPA_fwd",
            "BinaryElementwise",
            "Normalization",
            "kernel_summary",
            "short_kernel_histogram",
            "short_kernels_summary",
        ]
    );
    for (name, sheet) in &book {
        let csv = std::fs::read(report.join(format!("{name}.csv"))).unwrap();
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(&csv[..]);
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(sheet.len(), rows.len(), "{name}");
        for (r, (row, cells)) in rows.iter().zip(sheet).enumerate() {
            for (c, text) in row.iter().enumerate() {
                let cell = cells.get(c).cloned().unwrap_or_default();
                let same = match &cell {
                    serde_json::Value::Number(n) => text.parse::<f64>().ok() == n.as_f64(),
                    serde_json::Value::String(s) => s == text,
                    serde_json::Value::Null => text.is_empty(),
                    other => panic!("{name} ({r}, {c}): {other:?}"),
                };
                assert!(same, "{name} row {r} column {c}: {cell:?} against {text:?}");
            }
        }
    }
    let paths: Vec<&std::path::Path> = traces.iter().map(|t| t.as_path()).collect();
    run(&paths, "both.xlsx");
    let mut made: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("both"))
        .collect();
    made.sort();
    assert_eq!(made.len(), 2, "{made:?}");
    for name in &made {
        let stem = name.strip_prefix("both_").unwrap().strip_suffix(".xlsx").unwrap();
        assert!(out.join(stem).is_dir(), "{name}: {:?}", std::fs::read_dir(&out).unwrap());
        let book = read_workbook(python, &dir.path().join(name));
        assert_eq!(book[0].0, "gpu_timeline");
    }
}

/// A trace with input shapes: its attention shapes next to the GEMMs, and
/// its op shapes against the MI300X roofline, in the view (`--json`) and on
/// the page, a chart that renders in headless Chromium.
#[test]
fn op_shapes_are_drawn_against_the_roofline() {
    let Some(public) = crate::public_dir::public_fixtures() else { return };
    let trace = public.join("kineto/tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("page.html");
    let args = ["report", "summary", trace.to_str().unwrap(), "-o", "out", "--json", "--html"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    args.push(html.as_os_str());
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0"), "{text}");
    let json = text.split("----- stdout -----\n").nth(1).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(json.split("----- stderr -----").next().unwrap()).unwrap();
    let view = &json["traces"][0];
    let attention = &view["top_shapes"][0];
    assert_eq!(attention["sheet"], "SDPA_fwd");
    assert_eq!(attention["shape"], "aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16");
    assert_eq!(attention["count"], 4);
    let roofline = &view["roofline"];
    assert_eq!(roofline["arch"], "MI300X");
    assert_eq!(roofline["memory_tb_per_s"], 5.3);
    let roofs = roofline["compute_tflops_per_s"].as_array().unwrap();
    assert!(roofs.contains(&serde_json::json!(["matrix_bf16", 708.0])), "{roofs:?}");
    let points = roofline["points"].as_array().unwrap();
    assert!(points.len() >= 5, "{points:?}");
    assert!(points.iter().all(|p| p["flops_per_byte"].as_f64().unwrap() > 0.0));
    let page = std::fs::read_to_string(&html).unwrap();
    for expected in [
        "<h3>Roofline (MI300X)</h3>",
        "matrix_bf16 roof: 708 TFLOPS/s, 5.3 TB/s",
        "Attention and convolutions (by shape; rates per call, mean)",
        "aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16",
    ] {
        assert!(page.contains(expected), "{expected} missing from the page");
    }
    assert_eq!(page.matches("<circle").count(), points.len());
    crate::trace::renders_in_chromium(&html, dir.path());
    // Without a spec, the view says there is no roofline, and why.
    let args = ["report", "summary", trace.to_str().unwrap(), "-o", "out", "--gpu-arch", "none"];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.contains("   no roofline: --gpu-arch none\n"), "{text}");
}
