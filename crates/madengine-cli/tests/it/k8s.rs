//! `madengine k8s render|gather` (no API server in CI: gather uses the kubectl test double).

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::cli_snapshot;

fn k8s_fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../collect-k8s/tests/fixtures")
}

fn job_file(dir: &Path, extra: &str) {
    fs::write(
        dir.join("job.json"),
        format!(
            r#"{{"name": "bert", "namespace": "perf", "image": "rocm/pytorch:latest", "nodes": 2, "gpus_per_node": 8,
               "gpu_vendor": "amd", "command": ["python3", "train.py"], "results_storage": "1Gi",
               "tools": ["tracelens"], "scripts_dir": "{}"{extra}}}"#,
            k8s_fixtures().join("scripts").display()
        ),
    )
    .unwrap();
}

#[test]
fn render_writes_one_manifest_per_object() {
    let dir = tempfile::tempdir().unwrap();
    job_file(dir.path(), "");
    cli_snapshot!(dir.path(), ["k8s", "render", "--config", "job.json", "-o", "manifests"], @r"
    exit code: 0
    ----- stdout -----
    ----- stderr -----
    [madengine] wrote manifests/01-configmap.json
    [madengine] wrote manifests/02-service.json
    [madengine] wrote manifests/03-persistentvolumeclaim.json
    [madengine] wrote manifests/04-job.json
    ");
    let job: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("manifests/04-job.json")).unwrap())
            .unwrap();
    assert_eq!(job["spec"]["completionMode"], "Indexed");
}

#[test]
fn unknown_keys_and_bad_names_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    job_file(dir.path(), r#", "gpu_count": 8"#);
    let (text, _) = crate::run_cli(
        dir.path(),
        &["k8s".as_ref(), "render".as_ref(), "--config".as_ref(), "job.json".as_ref()],
        &[],
    );
    assert!(
        text.starts_with("exit code: 2") && text.contains("unknown field `gpu_count`"),
        "{text}"
    );
}

/// An executable `kubectl` in `dir` running the test double with `var`
/// set to `dir/rel`.
fn fake_kubectl(dir: &Path, var: &str, rel: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let wrapper = dir.join("kubectl");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{var}='{}' exec python3 '{}' \"$@\"\n",
            dir.join(rel).display(),
            k8s_fixtures().join("fake_kubectl.py").display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

#[test]
fn gather_through_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("pvc/bert-0-xyz/torch_profiler_output");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("rank0_trace.json"), r#"{"traceEvents": []}"#).unwrap();
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_TREE", "pvc");
    cli_snapshot!(dir.path(), ["k8s", "gather", "bert", "--namespace", "perf", "--results-dir", "k8s_results", "--kubectl", &wrapper], @r"
    exit code: 0
    ----- stdout -----
    ----- stderr -----
    [madengine] bert-0-xyz: copied (1 pytorch)
    [madengine] summary: k8s_results/results_summary.json
    ");
}

#[test]
fn gather_live_copies_each_pods_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("pods/bert-0-xyz/torch_profiler_output");
    fs::create_dir_all(&tree).unwrap();
    fs::write(tree.join("rank0_trace.json"), r#"{"traceEvents": []}"#).unwrap();
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_PODS", "pods");
    cli_snapshot!(dir.path(), ["k8s", "gather", "bert", "--live", "--namespace", "perf", "--results-dir", "live", "--kubectl", &wrapper], @r"
    exit code: 0
    ----- stdout -----
    ----- stderr -----
    [madengine] bert-0-xyz: copied (1 pytorch)
    [madengine] summary: live/results_summary.json
    ");
}

#[test]
fn apply_sends_the_rendered_list_to_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    job_file(dir.path(), "");
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_LOG", "calls.jsonl");
    cli_snapshot!(dir.path(), ["k8s", "apply", "--config", "job.json", "--kubectl", &wrapper, "--context", "lab"], @r"
    exit code: 0
    ----- stdout -----
    configmap/bert-scripts created
    service/bert created
    persistentvolumeclaim/bert-results created
    job/bert created
    ----- stderr -----
    ");
    let log = fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    assert!(
        log.contains(r#""argv": ["--context=lab", "--namespace=perf", "apply", "-f", "-"]"#),
        "{log}"
    );
}

/// `apply --wait` follows the Job through its statuses as Kubernetes writes
/// them, to its end: 0 when it completed, 1 when it failed or ran past
/// --timeout (then it is deleted).
#[test]
fn apply_wait_follows_the_job_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    job_file(dir.path(), "");
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_LOG", "calls.jsonl");
    let job = dir.path().join("job_statuses.json");
    // `k8s apply --wait EXTRA`, the Job going through `statuses`, with the
    // kubectl double's `env` besides.
    let apply_with = |statuses: serde_json::Value, extra: &[&str], env: &[(&str, &str)]| {
        let file =
            serde_json::json!({"name": "bert", "spec": {"completions": 2}, "statuses": statuses});
        fs::write(&job, file.to_string()).unwrap();
        let mut args = vec!["k8s", "apply", "--config", "job.json", "--wait"];
        args.extend(extra);
        args.extend(["--kubectl", wrapper.to_str().unwrap()]);
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let mut envs: Vec<(&str, std::ffi::OsString)> =
            vec![("FAKE_KUBECTL_JOB", job.clone().into())];
        envs.extend(env.iter().map(|(k, v)| (*k, (*v).into())));
        crate::run_cli(dir.path(), &args, &envs).0
    };
    let apply = |statuses: serde_json::Value, extra: &[&str]| apply_with(statuses, extra, &[]);
    let complete = serde_json::json!([
        {},
        {"active": 2, "ready": 0},
        {"active": 2, "ready": 2},
        {"active": 1, "succeeded": 1},
        {"succeeded": 2, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"}]},
        {"succeeded": 2, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True"}]}
    ]);
    insta::assert_snapshot!(apply(complete, &[]), @r"
    exit code: 0
    ----- stdout -----
    configmap/bert-scripts created
    service/bert created
    persistentvolumeclaim/bert-results created
    job/bert created
    ----- stderr -----
    [madengine] job bert: 0 active, 0 succeeded, 0 failed (of 2)
    [madengine] job bert: 2 active, 0 succeeded, 0 failed (of 2)
    [madengine] job bert: 1 active, 1 succeeded, 0 failed (of 2)
    [madengine] job bert: 0 active, 2 succeeded, 0 failed (of 2)
    [madengine] job bert: Complete: 2 succeeded, 0 failed (of 2)
    [madengine] `madengine k8s gather bert --namespace perf --results-dir <dir>` collects its results
    ");

    let failed = serde_json::json!([
        {"active": 2},
        {"active": 1, "failed": 1, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]}
    ]);
    let text = apply(failed, &[]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    assert!(
        text.contains(
            "job bert: Failed (BackoffLimitExceeded: Job has reached the specified backoff \
             limit): 0 succeeded, 1 failed (of 2)"
        ),
        "{text}"
    );

    // A pod that cannot start is named, with why, once, and again when that changes.
    let pods = dir.path().join("pods.json");
    let stuck = serde_json::json!({"kind": "List", "items": [
        {"metadata": {"name": "bert-1-b"}, "status": {"phase": "Pending",
            "initContainerStatuses": [{"name": "madengine", "state": {"waiting": {
                "reason": "ImagePullBackOff",
                "message": "Back-off pulling image \"madengine/tools:bad\""}}}]}}]});
    fs::write(&pods, stuck.to_string()).unwrap();
    let statuses = serde_json::json!([
        {"active": 2}, {"active": 2}, {"active": 2},
        {"failed": 2, "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}]);
    let text = apply_with(statuses, &[], &[("FAKE_KUBECTL_PODS_JSON", pods.to_str().unwrap())]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    let stderr = &text[text.find("----- stderr -----\n").unwrap()..];
    insta::assert_snapshot!(stderr, @r#"
    ----- stderr -----
    [madengine] job bert: 2 active, 0 succeeded, 0 failed (of 2)
    warning: job bert: pod bert-1-b: ImagePullBackOff (Back-off pulling image "madengine/tools:bad")
    [madengine] job bert: Failed (DeadlineExceeded): 0 succeeded, 2 failed (of 2)
    [madengine] `madengine k8s gather bert --namespace perf --results-dir <dir>` collects its results
    "#);

    // Pods it may not list (RBAC): said once, asked once, and the Job is
    // still followed to its end.
    let statuses = serde_json::json!([
        {"active": 2}, {"active": 1, "succeeded": 1},
        {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}]);
    fs::remove_file(dir.path().join("calls.jsonl")).unwrap();
    let text = apply_with(statuses, &[], &[("FAKE_KUBECTL_FAIL", "list-pods")]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let stderr = &text[text.find("----- stderr -----\n").unwrap()..];
    assert_eq!(stderr.matches("warning: ").count(), 1, "{stderr}");
    for said in [
        "\n[madengine] job bert: 2 active, 0 succeeded, 0 failed (of 2)\nwarning: job bert: its \
         pods cannot be listed, so a pod that cannot start (unschedulable, an image that cannot be \
         pulled) is not named; waiting on the Job alone: `",
        " get pods -l 'batch.kubernetes.io/job-name=bert' -o json` failed (exit 1): Error from \
         server (Forbidden): pods is forbidden: User \"system:serviceaccount:perf:runner\" cannot \
         list resource \"pods\" in API group \"\" in the namespace \"perf\"\n",
        "\n[madengine] job bert: Complete: 2 succeeded, 0 failed (of 2)\n",
    ] {
        assert!(stderr.contains(said), "{said:?} not in {stderr}");
    }
    let log = fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    assert_eq!(log.matches(r#""get", "pods""#).count(), 1, "{log}");

    // Still running at --timeout: deleted, and said so.
    let text = apply(serde_json::json!([{"active": 2}]), &["--timeout", "1", "--json"]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    let json = crate::stdout_json(&text);
    assert_eq!(json["job"], "bert", "{json}");
    assert_eq!(json["applied"][3], "job/bert created", "{json}");
    assert_eq!(json["status"]["active"], 2, "{json}");
    assert_eq!(json["status"]["ended"], serde_json::Value::Null, "{json}");
    assert_eq!(json["timed_out"], true, "{json}");
    assert!(text.contains("Job bert ran past --timeout and was deleted"), "{text}");
    let log = fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    assert!(
        log.contains(r#""argv": ["--namespace=perf", "delete", "job", "bert", "--wait=false", "--ignore-not-found"]"#),
        "{log}"
    );
    assert_eq!(log.matches(r#""delete""#).count(), 1, "{log}");

    // With --results-dir: then gathered and summarized, as `k8s gather --summary` does.
    let tree = dir.path().join("pvc/bert-0-xyz/torch_profiler_output");
    fs::create_dir_all(&tree).unwrap();
    fs::copy(
        crate::synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"),
        tree.join("rank0_trace.json"),
    )
    .unwrap();
    let statuses = serde_json::json!([
        {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}]);
    let pvc = dir.path().join("pvc");
    let extra = ["--results-dir", "got", "--summary", "--json"];
    let text = apply_with(statuses, &extra, &[("FAKE_KUBECTL_TREE", pvc.to_str().unwrap())]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    insta::assert_snapshot!("json_shape_k8s_apply_wait", crate::json_shape(&text));
    crate::conforms(&crate::stdout_json(&text), "k8s-apply");
    let json = crate::stdout_json(&text);
    assert_eq!(json["status"]["ended"], "Complete", "{json}");
    assert_eq!(json["gathered"]["pods"][0]["name"], "bert-0-xyz", "{json}");
    assert_eq!(json["gathered"]["summary"]["traces"].as_array().map(Vec::len), Some(1), "{json}");
    assert!(dir.path().join("got/bert-0-xyz/torch_profiler_output/rank0_trace.json").is_file());
    assert!(dir.path().join("got/summary.html").is_file());
    let args = ["k8s", "apply", "--config", "job.json", "--summary", "--kubectl", "kubectl"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(text.starts_with("exit code: 2\n"), "{text}");
    assert!(text.contains("--report and --summary need --wait and --results-dir"), "{text}");

    // A Job that is gone (deleted by hand) is an error naming the command.
    fs::remove_file(&job).unwrap();
    let args =
        ["k8s", "apply", "--config", "job.json", "--wait", "--kubectl", wrapper.to_str().unwrap()];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(text.starts_with("exit code: 3\n"), "{text}");
    assert!(text.contains("get job bert -o json` failed (exit 1): Error from server (NotFound): jobs.batch \"bert\" not found"), "{text}");
}

/// A results volume holding one pod's trace, the fake kubectl that serves
/// it, and the TraceLens stand-in's interpreter.
fn gathered_tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("pvc/bert-0-xyz/torch_profiler_output");
    fs::create_dir_all(&tree).unwrap();
    fs::copy(
        crate::synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"),
        tree.join("rank0_trace.json"),
    )
    .unwrap();
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_TREE", "pvc");
    let python = crate::standin::Standin::python(&crate::standin::standin().scripts);
    (dir, wrapper, python)
}

#[test]
fn gather_report_runs_tracelens_over_the_gathered_tree() {
    let (dir, wrapper, python) = gathered_tree();
    cli_snapshot!(dir.path(), ["k8s", "gather", "bert", "--namespace", "perf", "--results-dir", "k8s_results", "--kubectl", &wrapper, "--report", "--python", &python], @r"
    exit code: 0
    ----- stdout -----
    STATUS   TRACE                                              KIND     REPORT                                                             DETAIL
    SUCCESS  bert-0-xyz/torch_profiler_output/rank0_trace.json  pytorch  tracelens_report/bert-0-xyz_torch_profiler_output_rank0_trace_csv
    1 succeeded, 0 failed, 0 skipped in [TIME] s; summary: [DIR]/k8s_results/tracelens_report/tracelens_summary.csv
    ----- stderr -----
    [madengine] bert-0-xyz: copied (1 pytorch)
    [madengine] summary: k8s_results/results_summary.json
    ");
    assert!(dir.path().join("k8s_results/tracelens_report/tracelens_summary.csv").is_file());
}

/// `gather --summary` (natively, no Python) and `--report` with `--json`:
/// one JSON object on stdout, the gather's with what each analysis made.
#[test]
fn gather_summary_and_report_print_one_json_object() {
    let (dir, wrapper, python) = gathered_tree();
    let gather = ["k8s", "gather", "bert", "--namespace", "perf", "--results-dir", "k8s_results"];
    let args: Vec<&std::ffi::OsStr> = gather
        .iter()
        .map(std::ffi::OsStr::new)
        .chain(["--kubectl".as_ref(), wrapper.as_os_str()])
        .chain(["--summary", "--report", "--json", "--python"].map(std::ffi::OsStr::new))
        .chain([python.as_os_str()])
        .collect();
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    insta::assert_snapshot!("json_shape_k8s_gather", crate::json_shape(&text));
    let value = crate::stdout_json(&text);
    crate::reads_back::<collect_k8s::Gathered>(&value, "k8s-gather");
    crate::reads_back::<tracelens_driver::Summary>(&value["tracelens"], "report-tracelens");
    let json = crate::stdout_json(&text);
    assert_eq!(json["pods"][0]["name"], "bert-0-xyz", "{json}");
    let traces = json["summary"]["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1, "{json}");
    assert_eq!(traces[0]["gpus"], serde_json::json!(["AMD Instinct MI300X"]), "{json}");
    assert_eq!(json["tracelens"]["results"][0]["status"], "SUCCESS", "{json}");
    let results = dir.path().join("k8s_results");
    assert!(results.join("summary.html").is_file());
    let csvs = fs::read_dir(results.join("summary_output")).unwrap().count();
    assert_eq!(csvs, 1, "one report directory per trace");
    // Without --json, each says its own: the summary's heading, then TraceLens' table.
    let again = ["k8s", "gather", "bert", "--namespace", "perf", "--results-dir", "again"];
    let args: Vec<&std::ffi::OsStr> = again
        .iter()
        .map(std::ffi::OsStr::new)
        .chain(["--kubectl".as_ref(), wrapper.as_os_str(), "--summary".as_ref()])
        .collect();
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(
        text.contains("== again/bert-0-xyz/torch_profiler_output/rank0_trace.json (rank 0, AMD Instinct MI300X)\n"),
        "{text}"
    );
}

/// Ctrl-C while `apply --wait` follows the Job stops the waiting only: the
/// Job goes on (nothing deletes it), and madengine says how to stop or
/// gather it.
#[test]
fn ctrl_c_while_following_says_the_job_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    job_file(dir.path(), "");
    let wrapper = fake_kubectl(dir.path(), "FAKE_KUBECTL_LOG", "calls.jsonl");
    let job = dir.path().join("job_statuses.json");
    let statuses = serde_json::json!({"name": "bert", "spec": {}, "statuses": [{"active": 2}]});
    fs::write(&job, statuses.to_string()).unwrap();
    let args = ["k8s", "apply", "--config", "job.json", "--wait", "--context", "lab", "--kubectl"];
    let args: Vec<&std::ffi::OsStr> =
        args.iter().map(std::ffi::OsStr::new).chain([wrapper.as_os_str()]).collect();
    let (code, line, rest) = crate::interrupt_after_first_line(
        dir.path(),
        &args,
        &[("FAKE_KUBECTL_JOB", job.as_os_str())],
    );
    assert!(line.contains("job bert: 2 active"), "{line}");
    assert_eq!(code, Some(130), "{rest}");
    assert!(
        rest.contains(
            "stopped waiting; Job bert goes on: `kubectl delete job bert --namespace perf \
             --context lab` stops it, `madengine k8s gather bert --namespace perf --context lab \
             --results-dir <dir>` collects its results once it ends"
        ),
        "{rest}"
    );
    let log = fs::read_to_string(dir.path().join("calls.jsonl")).unwrap();
    assert!(!log.contains("\"delete\""), "{log}");
}
