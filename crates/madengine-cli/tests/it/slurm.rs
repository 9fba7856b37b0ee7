//! `madengine slurm script|submit|gather` (submit and gather on the test
//! cluster from `cargo xtask slurm up`; with CI=true a missing cluster fails).

use std::path::Path;

use crate::cli_snapshot;

fn cluster() -> Option<std::ffi::OsString> {
    crate::required::test_cluster().map(std::path::PathBuf::into_os_string)
}

#[test]
fn script_from_flags_and_a_job_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.json"), r#"{"nodes": 2, "gpus_per_node": 8, "partition": "mi300x", "command": ["python3", "train.py"]}"#).unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"nodes": 2, "gpu_per_node": 8}"#).unwrap();
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "script".as_ref(),
            "--config".as_ref(),
            "job.json".as_ref(),
            "--nodes".as_ref(),
            "4".as_ref(),
            "--results-dir".as_ref(),
            "/shared/r".as_ref(),
        ],
        &[],
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(
        text.contains("#SBATCH --nodes=4")
            && text.contains("#SBATCH --partition=mi300x")
            && text.contains("\npython3 train.py >"),
        "{text}"
    );
    cli_snapshot!(dir.path(), ["slurm", "script", "--config", "bad.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: bad.json: unknown field `gpu_per_node`, expected one of `name`, `nodes`, `ntasks_per_node`, `gpus_per_node`, `partition`, `time`, `account`, `sbatch`, `env`, `setup`, `command`, `collect`, `tools`, `summarize_on_nodes`, `gather_traces`, `results_dir` at line 1 column 27
    ");
}

#[test]
fn gather_salvage_goes_with_an_analysis() {
    let dir = tempfile::tempdir().unwrap();
    cli_snapshot!(dir.path(), ["slurm", "gather", "results/1", "--salvage"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: the following required arguments were not provided:
      <--report|--summary>

    Usage: madengine slurm gather --salvage <--report|--summary> <DIR>

    For more information, try '--help'.
    ");
    cli_snapshot!(dir.path(), ["slurm", "submit", "--summary", "--", "true"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: --report and --summary need --wait (they read the results once the job ends); without it, run `madengine slurm gather <results-dir>/<job_id> --summary` then
    ");
}

/// As [`WORKLOAD`], with an allreduce kernel PyTorch's way (a correlation,
/// the call's args) that each rank enters 10 µs after the one before: a
/// run the collective report matches across ranks.
const COLLECTIVE_WORKLOAD: &str = r#"mkdir -p torch_profiler_output
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "pid": 0, "tid": 7, "ts": %s, "dur": 50, "args": {"correlation": 1, "stream": 7, "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 4}}], "distributedInfo": {"rank": %s, "world_size": 4}}' "$((100 + 10 * SLURM_NODEID))" "$SLURM_NODEID" > "torch_profiler_output/libkineto_trace_$$.json""#;

const WORKLOAD: &str = r#"mkdir -p torch_profiler_output
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {}}], "distributedInfo": {"rank": %s, "world_size": 4}}' "$SLURM_NODEID" > "torch_profiler_output/libkineto_trace_$$.json""#;

#[test]
fn submit_wait_gather_and_the_collective_plan() {
    let Some(conf) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let env = [("SLURM_CONF", conf)];
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "submit".as_ref(),
            "--nodes".as_ref(),
            "4".as_ref(),
            "--gpus-per-node".as_ref(),
            "8".as_ref(),
            "--results-dir".as_ref(),
            "results".as_ref(),
            "--wait".as_ref(),
            "--timeout".as_ref(),
            "120".as_ref(),
            "--summary".as_ref(),
            "--json".as_ref(),
            "--".as_ref(),
            "bash".as_ref(),
            "-c".as_ref(),
            WORKLOAD.as_ref(),
        ],
        &env,
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    insta::assert_snapshot!("json_shape_slurm_submit_wait", crate::json_shape(&text));
    crate::conforms(&crate::stdout_json(&text), "slurm-submit");
    let json: serde_json::Value = crate::stdout_json(&text);
    assert_eq!(json["state"], "COMPLETED");
    let results = Path::new(json["results"].as_str().unwrap()).to_path_buf();
    assert_eq!(json["summary"]["nodes"].as_array().unwrap().len(), 4);
    // --summary: the native tables over what the nodes left, as `gather --summary` makes them
    let ranks: Vec<&serde_json::Value> = json["summary"]["summary"]["cross_rank"]
        .as_array()
        .unwrap_or_else(|| panic!("{json}"))
        .iter()
        .map(|r| &r["rank"])
        .collect();
    assert_eq!(ranks, [0, 1, 2, 3], "{json}");
    assert!(results.join("summary.html").is_file());
    std::fs::remove_file(results.join("summary.html")).unwrap();

    // pid-named traces from four nodes: their distributedInfo ranks make one collective
    let (plan, _) = crate::run_cli(
        dir.path(),
        &[
            "report".as_ref(),
            "tracelens".as_ref(),
            "--root".as_ref(),
            results.as_os_str(),
            "--discover-only".as_ref(),
            "--json".as_ref(),
        ],
        &[],
    );
    let plan: serde_json::Value = crate::stdout_json(&plan);
    let collectives: Vec<_> =
        plan["jobs"].as_array().unwrap().iter().filter(|j| j["tool"] == "Collective").collect();
    assert_eq!(collectives.len(), 1, "{plan:#}");
    assert_eq!(collectives[0]["collective"]["world_size"], 4);

    // gather again, by hand
    let (text, _) = crate::run_cli(
        dir.path(),
        &["slurm".as_ref(), "gather".as_ref(), results.as_os_str()],
        &env,
    );
    assert!(
        text.starts_with("exit code: 0") && text.contains("node_3") && text.contains("1 pytorch"),
        "{text}"
    );

    // and with TraceLens (the stand-in): the kernels launch from nowhere, so
    // each rank is skipped for that reason, and the collective with them
    let python = crate::standin::Standin::python(&crate::standin::standin().scripts);
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "gather".as_ref(),
            results.as_os_str(),
            "--report".as_ref(),
            "--python".as_ref(),
            python.as_os_str(),
        ],
        &env,
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert_eq!(text.matches("none is linked to the CPU launch").count(), 4, "{text}");
    assert!(text.contains("0 succeeded, 0 failed, 5 skipped"), "{text}");
    assert!(results.join("tracelens_report/tracelens_summary.csv").is_file());

    // and natively, with --json: one object, the gather's with the summary's
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "gather".as_ref(),
            results.as_os_str(),
            "--summary".as_ref(),
            "--json".as_ref(),
        ],
        &env,
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    insta::assert_snapshot!("json_shape_slurm_gather", crate::json_shape(&text));
    let value = crate::stdout_json(&text);
    crate::reads_back::<collect_slurm::Summary>(&value, "slurm-gather");
    crate::reads_back::<trace_report::RunSummary>(&value["summary"], "report-summary");
    let json = crate::stdout_json(&text);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 4, "{json}");
    let ranks: Vec<&serde_json::Value> =
        json["summary"]["cross_rank"].as_array().unwrap().iter().map(|r| &r["rank"]).collect();
    assert_eq!(ranks, [0, 1, 2, 3], "{json}");
    assert!(results.join("summary.html").is_file());
}

#[test]
#[allow(clippy::disallowed_methods, reason = "tests run scancel")]
fn ctrl_c_while_waiting_says_the_job_goes_on() {
    let Some(conf) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = ["slurm", "submit", "--nodes", "1", "--results-dir", "results", "--wait", "--"];
    let args: Vec<&std::ffi::OsStr> =
        args.iter().chain(&["sleep", "300"]).map(std::ffi::OsStr::new).collect();
    let (code, line, rest) =
        crate::interrupt_after_first_line(dir.path(), &args, &[("SLURM_CONF", &conf)]);
    let job = line
        .split("submitted job ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no job id in {line:?}"))
        .to_string();
    let _ = std::process::Command::new("scancel").arg(&job).env("SLURM_CONF", &conf).status();
    assert_eq!(code, Some(130), "{rest}");
    assert!(
        rest.contains(&format!("job {job} goes on: `scancel {job}` stops it"))
            && rest.contains("madengine slurm gather "),
        "{rest}"
    );
}

/// Built-in tools around the workload: a profiler wraps it, an analysis
/// runs after it on each node, and their outputs are collected.
#[test]
fn tools_wrap_the_workload_and_analyze_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "script".as_ref(),
            "--tool".as_ref(),
            "torch_profiler_dynolog".as_ref(),
            "--tool".as_ref(),
            "summary".as_ref(),
            "--".as_ref(),
            "python3".as_ref(),
            "train.py".as_ref(),
        ],
        &[],
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(
        text.contains("\nmadengine profile -- python3 train.py > \"$NODE_DIR/stdout.out\""),
        "{text}"
    );
    assert!(
        text.contains(
            "madengine report summary --output-dir summary_output >> \"$NODE_DIR/stdout.out\""
        ),
        "{text}"
    );
    assert!(
        text.contains("tracelens_output torch_profiler_output summary_output; do")
            || text.contains(" summary_output; do"),
        "{text}"
    );
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "script".as_ref(),
            "--tool".as_ref(),
            "nope".as_ref(),
            "--".as_ref(),
            "true".as_ref(),
        ],
        &[],
    );
    assert!(
        text.contains("unknown tool `nope`; the built-in tools are: torch_profiler_dynolog"),
        "{text}"
    );
}

/// On the test cluster: `--tool summary` summarizes each node's traces on
/// the node, and the reports come back with the traces.
#[test]
fn the_summary_tool_runs_on_each_node() {
    let Some(conf) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let env = [("SLURM_CONF", conf)];
    let bin = crate::binary();
    let path = format!("export PATH={}:$PATH", bin.parent().unwrap().display());
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "submit".as_ref(),
            "--nodes".as_ref(),
            "2".as_ref(),
            "--results-dir".as_ref(),
            "results".as_ref(),
            "--setup".as_ref(),
            path.as_ref(),
            "--tool".as_ref(),
            "summary".as_ref(),
            "--wait".as_ref(),
            "--timeout".as_ref(),
            "120".as_ref(),
            "--json".as_ref(),
            "--".as_ref(),
            "bash".as_ref(),
            "-c".as_ref(),
            WORKLOAD.as_ref(),
        ],
        &env,
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    let json: serde_json::Value = crate::stdout_json(&text);
    let results = Path::new(json["results"].as_str().unwrap()).to_path_buf();
    for node in ["node_0", "node_1"] {
        let reports: Vec<_> = std::fs::read_dir(results.join(node).join("summary_output"))
            .unwrap_or_else(|e| panic!("{node}: {e}: {text}"))
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(reports.len(), 1, "{node}: {reports:?}");
        assert!(reports[0].join("summary.json").is_file(), "{:?}", reports[0]);
    }
}

/// `--summarize-on-nodes`: each node summarizes its traces, and `gather
/// --summary` builds the cross-rank table from the reports that came back,
/// reading no trace: the table the traces give (`--from-traces`, with
/// `--gather-traces`). Without `--gather-traces` no trace comes back.
#[test]
fn summarized_on_the_nodes_the_cross_rank_table_reads_no_trace() {
    let Some(conf) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let env = [("SLURM_CONF", conf)];
    let bin = crate::binary();
    let path = format!("export PATH={}:$PATH", bin.parent().unwrap().display());
    let submit = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = [
            "slurm",
            "submit",
            "--nodes",
            "4",
            "--results-dir",
            "results",
            "--setup",
            &path,
            "--summarize-on-nodes",
            "--wait",
            "--timeout",
            "120",
            "--summary",
            "--json",
        ]
        .into_iter()
        .map(std::ffi::OsStr::new)
        .collect();
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend(["--", "bash", "-c", COLLECTIVE_WORKLOAD].iter().map(std::ffi::OsStr::new));
        let (text, _) = crate::run_cli(dir.path(), &args, &env);
        assert!(text.starts_with("exit code: 0"), "{text}");
        crate::stdout_json(&text)
    };
    let json = submit(&["--gather-traces"]);
    let summary = &json["summary"]["summary"];
    assert_eq!(summary["node_reports"].as_array().map(Vec::len), Some(4), "{json:#}");
    let ranks: Vec<&serde_json::Value> =
        summary["cross_rank"].as_array().unwrap().iter().map(|r| &r["rank"]).collect();
    assert_eq!(ranks, [0, 1, 2, 3], "{json:#}");
    // The collective report from the kernels the nodes' records keep: rank
    // 3 entered last, and the others waited 30, 20 and 10 µs for it.
    let collectives = &summary["collectives"][0];
    assert_eq!(collectives["matched"], 1, "{json:#}");
    let waits: Vec<(u64, u64)> = collectives["straggler"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rank"].as_u64().unwrap(), r["total_wait_time_us"].as_u64().unwrap()))
        .collect();
    assert_eq!(waits, [(3, 0), (2, 10), (1, 20), (0, 30)], "{json:#}");
    let results = Path::new(json["results"].as_str().unwrap()).to_path_buf();
    let csv_dir = Path::new(collectives["csv_dir"].as_str().unwrap());
    assert!(csv_dir.starts_with(results.join("summary_output")), "{}", csv_dir.display());
    assert!(csv_dir.join("straggler_summary.csv").is_file());
    // The same tables from the traces.
    let (text, _) = crate::run_cli(
        dir.path(),
        &[
            "slurm".as_ref(),
            "gather".as_ref(),
            results.as_os_str(),
            "--summary".as_ref(),
            "--from-traces".as_ref(),
            "--json".as_ref(),
        ],
        &env,
    );
    let from_traces = crate::stdout_json(&text);
    assert!(from_traces["summary"].get("node_reports").is_none(), "{from_traces:#}");
    assert_eq!(from_traces["summary"]["cross_rank"], summary["cross_rank"]);
    assert_eq!(from_traces["summary"]["collectives"], summary["collectives"]);
    // Reports only: no trace came back, and the table is the same.
    let json = submit(&[]);
    let results = Path::new(json["results"].as_str().unwrap()).to_path_buf();
    for node in ["node_0", "node_1", "node_2", "node_3"] {
        assert!(results.join(node).join("summary_output").is_dir(), "{node}");
        assert!(!results.join(node).join("torch_profiler_output").exists(), "{node}");
    }
    let ranks: Vec<&serde_json::Value> = json["summary"]["summary"]["cross_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["rank"])
        .collect();
    assert_eq!(ranks, [0, 1, 2, 3], "{json:#}");
}

/// A profiled 2-node job with nothing but madengine: `--tool
/// torch_profiler_dynolog --tool summary --summarize-on-nodes` captures on each node
/// through a dynolog daemon of its own (the fake one, with the fake Kineto
/// workload of dynolog-client's tests), summarizes there, and the
/// cross-rank table comes from the reports gathered; no trace comes back.
#[test]
fn a_profiled_job_with_built_in_tools_ends_in_a_cross_rank_table() {
    let Some(conf) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let env = [("SLURM_CONF", conf)];
    let bin = crate::binary();
    let path = format!("export PATH={}:$PATH", bin.parent().unwrap().display());
    let daemon = format!("DYNOLOG_BIN={}", crate::dynolog::fixture("fake_dynolog.py").display());
    let workload = format!(
        "RANK=$SLURM_NODEID exec python3 {} 5",
        crate::dynolog::fixture("fake_workload.py").display()
    );
    let args: Vec<&str> = vec![
        "slurm",
        "submit",
        "--nodes",
        "2",
        "--results-dir",
        "results",
        "--setup",
        &path,
        "--env",
        &daemon,
        "--env",
        "WORLD_SIZE=2",
        "--env",
        "TORCH_PROFILE_WARMUP_S=0.5",
        "--env",
        "TORCH_PROFILE_RETRY_INTERVAL_S=0.3",
        "--env",
        "TORCH_PROFILE_STABLE_S=0.3",
        "--env",
        "TORCH_PROFILE_MAX_ATTEMPTS=20",
        "--tool",
        "torch_profiler_dynolog",
        "--tool",
        "summary",
        "--summarize-on-nodes",
        "--wait",
        "--timeout",
        "180",
        "--summary",
        "--json",
        "--",
        "bash",
        "-c",
        &workload,
    ];
    let args: Vec<&std::ffi::OsStr> = args.into_iter().map(std::ffi::OsStr::new).collect();
    let (text, _) = crate::run_cli(dir.path(), &args, &env);
    assert!(text.starts_with("exit code: 0"), "{text}");
    let json = crate::stdout_json(&text);
    let results = Path::new(json["results"].as_str().unwrap()).to_path_buf();
    let logs = || {
        ["node_0", "node_1"]
            .iter()
            .map(|n| {
                std::fs::read_to_string(results.join(n).join("stderr.err")).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let summary = &json["summary"]["summary"];
    assert_eq!(summary["node_reports"].as_array().map(Vec::len), Some(2), "{json:#}\n{}", logs());
    let ranks: Vec<&serde_json::Value> =
        summary["cross_rank"].as_array().unwrap().iter().map(|r| &r["rank"]).collect();
    assert_eq!(ranks, [0, 1], "{json:#}");
    for node in ["node_0", "node_1"] {
        assert!(!results.join(node).join("torch_profiler_output").exists(), "{node}");
    }
}
