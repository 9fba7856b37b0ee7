//! Gathering against the kubectl test double: exact argv, the collector
//! always deleted, partial results reported, nothing overwritten.

use std::{fs, path::Path, time::Duration};

use collect_k8s::{Kubectl, gather};

use crate::fixtures;

struct Fake {
    dir: tempfile::TempDir,
    kubectl: Kubectl,
}

/// A `kubectl` wrapper around the test double, with its tree and log.
fn fake(fail: &str, fail_cp: &str) -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("pvc");
    for pod in ["bert-profile-0-abcde", "bert-profile-1-fghij"] {
        let t = tree.join(pod).join("torch_profiler_output");
        fs::create_dir_all(&t).unwrap();
        fs::write(
            t.join("libkineto_trace_77.json"),
            r#"{"traceEvents": [], "distributedInfo": {"rank": 0}}"#,
        )
        .unwrap();
        fs::write(tree.join(pod).join("exit_code"), "0\n").unwrap();
    }
    let wrapper = dir.path().join("kubectl");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nFAKE_KUBECTL_TREE='{}' FAKE_KUBECTL_LOG='{}' FAKE_KUBECTL_FAIL='{fail}' FAKE_KUBECTL_FAIL_CP='{fail_cp}' exec python3 '{}' \"$@\"\n",
            tree.display(),
            dir.path().join("calls.jsonl").display(),
            fixtures().join("fake_kubectl.py").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let kubectl = Kubectl {
        program: wrapper,
        context: Some("mi300x-cluster".into()),
        namespace: "perf".into(),
        timeout: Duration::from_secs(30),
        cancel: None,
    };
    Fake { dir, kubectl }
}

fn calls(dir: &Path) -> Vec<String> {
    let tmp = dir.display().to_string();
    fs::read_to_string(dir.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let l = l.replace(&tmp, "[TMP]");
            // The staging directory's random suffix.
            let partial = regex::Regex::new(r"\.partial-[A-Za-z0-9]+/").unwrap();
            partial.replace_all(&l, ".partial-[RANDOM]/").into_owned()
        })
        .collect()
}

#[test]
fn gathers_every_pod_with_exact_commands() {
    let f = fake("", "");
    let results = f.dir.path().join("k8s_results");
    let g = gather(&f.kubectl, "bert-profile", &results, "busybox:1.36").unwrap();
    assert!(g.problems.is_empty(), "{:?}", g.problems);
    assert_eq!(g.pods.len(), 2);
    assert!(
        g.pods
            .iter()
            .all(|p| p.copied && p.exit_code == Some(0) && p.traces.get("pytorch") == Some(&1))
    );
    assert!(results.join("results_summary.json").is_file());
    insta::assert_snapshot!(calls(f.dir.path()).join("\n"), @r#"
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "apply", "-f", "-"], "applied": [["Pod", "bert-profile-collector"]]}
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "wait", "--for=condition=Ready", "pod/bert-profile-collector", "--timeout=120s"]}
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "exec", "bert-profile-collector", "--", "ls", "-1", "/results"]}
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "cp", "perf/bert-profile-collector:/results/bert-profile-0-abcde", "[TMP]/k8s_results/.bert-profile-0-abcde.partial-[RANDOM]/bert-profile-0-abcde"]}
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "cp", "perf/bert-profile-collector:/results/bert-profile-1-fghij", "[TMP]/k8s_results/.bert-profile-1-fghij.partial-[RANDOM]/bert-profile-1-fghij"]}
    {"argv": ["--context=mi300x-cluster", "--namespace=perf", "delete", "pod", "bert-profile-collector", "--wait=false", "--ignore-not-found"]}
    "#);
}

#[test]
fn the_collector_is_deleted_when_gathering_fails() {
    let f = fake("exec", "");
    let err = gather(&f.kubectl, "bert-profile", &f.dir.path().join("out"), "busybox:1.36")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exec bert-profile-collector -- ls -1 /results")
            && err.contains("container not found"),
        "{err}"
    );
    let log = calls(f.dir.path());
    assert!(
        log.last().unwrap().contains(r#""delete", "pod", "bert-profile-collector""#),
        "{log:?}"
    );
}

#[test]
fn partial_results_are_reported_and_nothing_is_overwritten() {
    let f = fake("", "bert-profile-1-fghij");
    let results = f.dir.path().join("out");
    // results of an earlier gathering for pod 0 are already here
    fs::create_dir_all(results.join("bert-profile-0-abcde")).unwrap();
    fs::write(results.join("bert-profile-0-abcde/keep.txt"), "mine").unwrap();
    let g = gather(&f.kubectl, "bert-profile", &results, "busybox:1.36").unwrap();
    assert_eq!(g.problems.len(), 2, "{:?}", g.problems);
    assert!(g.problems[0].contains("already exists; left untouched"));
    assert!(
        g.problems[1].contains("copying bert-profile-1-fghij")
            && g.problems[1].contains("no such file")
    );
    assert_eq!(fs::read_to_string(results.join("bert-profile-0-abcde/keep.txt")).unwrap(), "mine");
    assert!(g.pods.iter().all(|p| !p.copied));
}

#[test]
fn a_copy_cut_short_leaves_nothing_and_is_copied_again_next_time() {
    let f = fake("", "");
    let results = f.dir.path().join("out");
    let wrapper = f.kubectl.program.clone();
    let text = fs::read_to_string(&wrapper).unwrap();
    let cut =
        text.replace("exec python3", "FAKE_KUBECTL_CUT_CP='bert-profile-1-fghij' exec python3");
    fs::write(&wrapper, cut).unwrap();
    let g = gather(&f.kubectl, "bert-profile", &results, "busybox:1.36").unwrap();
    assert!(g.problems.len() == 1 && g.problems[0].contains("unexpected EOF"), "{:?}", g.problems);
    // Half a copy would read as "already there" next time: nothing is left.
    let mut names: Vec<String> = fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bert-profile-0-abcde", "results_summary.json"]);
    // The connection is back: the missing pod is copied, the other kept.
    fs::write(&wrapper, text).unwrap();
    let g = gather(&f.kubectl, "bert-profile", &results, "busybox:1.36").unwrap();
    let copied: Vec<_> = g.pods.iter().map(|p| (p.name.as_str(), p.copied)).collect();
    assert_eq!(copied, [("bert-profile-0-abcde", false), ("bert-profile-1-fghij", true)]);
}

#[test]
fn an_interrupted_gather_still_deletes_the_collector() {
    use std::sync::{Arc, atomic::AtomicBool};
    let mut f = fake("", "");
    f.kubectl.cancel = Some(Arc::new(AtomicBool::new(true)));
    let results = f.dir.path().join("out");
    let err = gather(&f.kubectl, "bert-profile", &results, "busybox:1.36").unwrap_err();
    assert!(
        matches!(&err, collect_k8s::Error::Interrupted { results: r } if *r == results),
        "{err:?}"
    );
    assert!(err.to_string().contains("no summary was written"), "{err}");
    let log = calls(f.dir.path());
    assert!(
        log.last().unwrap().contains(r#""delete", "pod", "bert-profile-collector""#),
        "{log:?}"
    );
    assert!(!results.join("results_summary.json").exists());
}

#[test]
fn live_pods_are_copied_from_their_workspace() {
    let f = fake("", "");
    // pods as `kubectl get pods` and `kubectl cp` see them
    let pods = f.dir.path().join("pods");
    fs::create_dir_all(pods.join("bert-profile-0-abcde/torch_profiler_output")).unwrap();
    fs::write(
        pods.join("bert-profile-0-abcde/torch_profiler_output/rank0_trace.json"),
        r#"{"traceEvents": []}"#,
    )
    .unwrap();
    fs::create_dir_all(pods.join("bert-profile-1-fghij")).unwrap();
    let wrapper = f.kubectl.program.clone();
    let text = fs::read_to_string(&wrapper)
        .unwrap()
        .replace("exec python3", &format!("FAKE_KUBECTL_PODS='{}' exec python3", pods.display()));
    fs::write(&wrapper, text).unwrap();
    let results = f.dir.path().join("live");
    let dirs = vec!["torch_profiler_output".to_string(), "tracelens_output".to_string()];
    let g = collect_k8s::gather_live(&f.kubectl, "bert-profile", &results, "/workspace", &dirs)
        .unwrap();
    let summary: Vec<_> = g
        .pods
        .iter()
        .map(|p| (p.name.as_str(), p.copied, p.traces.get("pytorch").copied()))
        .collect();
    assert_eq!(
        summary,
        [("bert-profile-0-abcde", true, Some(1)), ("bert-profile-1-fghij", false, None)]
    );
    let log = calls(f.dir.path());
    assert!(
        log[0].contains(r#""get", "pods", "-l", "batch.kubernetes.io/job-name=bert-profile""#),
        "{log:?}"
    );
    assert!(log.iter().any(|l| {
        l.contains(r#""cp", "perf/bert-profile-0-abcde:/workspace/torch_profiler_output""#)
    }));
    assert!(results.join("results_summary.json").is_file());
}

/// A kubectl that hangs past its time limit is killed, and gone (not left
/// a zombie, nor still writing) by the time the error comes back.
#[test]
fn a_hung_kubectl_is_killed_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    // `sleep` under a name of its own, to be told from other tests' children
    // (`cargo test` runs them all in this process).
    let hung = dir.path().join("kubectl-hung");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"].into_iter().find(|p| Path::new(p).exists());
    std::os::unix::fs::symlink(sleep.expect("sleep(1)"), &hung).unwrap();
    let program = dir.path().join("kubectl");
    fs::write(&program, format!("#!/bin/sh\nexec '{}' 30\n", hung.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    let kubectl = Kubectl {
        program,
        context: None,
        namespace: "perf".into(),
        timeout: Duration::from_millis(300),
        cancel: None,
    };
    let err = kubectl.run(&["get", "pods"], None).unwrap_err();
    assert!(matches!(err, collect_k8s::Error::Timeout { .. }), "{err:?}");
    // Our hung child, as /proc lists it (a zombie stays listed until reaped).
    let me = std::process::id().to_string();
    let left: Vec<String> = fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| stat.contains(" (kubectl-hung) "))
        .filter(|stat| stat.rsplit(") ").next().unwrap().split(' ').nth(1) == Some(me.as_str()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
