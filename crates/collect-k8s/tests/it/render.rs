//! Rendering: snapshots, limits, Kubernetes' schemas, kubectl's ConfigMap.

use std::{fs, process::Command};

use collect_k8s::{Bundle, JobFile, bundle};
use serde_json::Value;

use crate::{fixtures, tool};

pub(crate) fn job(extra: &str) -> JobFile {
    let text = format!(
        r#"{{
        "name": "bert-profile", "namespace": "perf", "image": "rocm/pytorch:rocm6.4_ubuntu22.04",
        "nodes": 2, "gpus_per_node": 8, "gpu_vendor": "amd",
        "command": ["madengine", "profile", "--", "torchrun", "--nnodes", "2", "train.py", "--name", "it's"],
        "tools": ["torch_profiler_dynolog", "tracelens"],
        "results_storage": "10Gi",
        "node_selector": {{"amd.com/gpu.product-name": "AMD_Instinct_MI300X"}},
        "tolerations": [{{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}],
        "env": {{"HF_HOME": "/data/hf"}}{extra}
    }}"#
    );
    serde_json::from_str(&text).unwrap()
}

fn scripts() -> Bundle {
    bundle(&fixtures().join("scripts"), &["torch_profiler_dynolog".into(), "tracelens".into()])
        .unwrap()
}

#[test]
fn the_bundle_follows_references_from_pre_and_post_scripts() {
    let b = scripts();
    let paths: Vec<_> = b.files.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "scripts/common/post_scripts/dynolog_stop.sh",
            "scripts/common/post_scripts/tracelens.sh",
            "scripts/common/pre_scripts/dynolog_start.sh",
            "scripts/common/tools/dynolog_trigger.sh",
            "scripts/common/tools/gpu_info.sh",
            "scripts/common/tools/madengine_kineto_hook.py",
            "scripts/common/tools/tracelens_analyze.py",
            "tools.json",
        ]
    );
    assert_eq!(b.files[0].0, "scripts__common__post_scripts__dynolog_stop.sh");
    assert_eq!(b.pre, ["scripts/common/pre_scripts/dynolog_start.sh"]);
}

#[test]
fn rendered_manifests() {
    let objects = job("").render(&scripts()).unwrap();
    insta::assert_json_snapshot!(objects);
}

#[test]
fn one_node_needs_no_service_and_an_image_with_madengine_no_init_container() {
    let mut j = job(r#", "image_has_madengine": true"#);
    j.nodes = 1;
    let objects = j.render(&Bundle::default()).unwrap();
    let kinds: Vec<_> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Job"]);
    assert!(objects[2]["spec"]["template"]["spec"].get("initContainers").is_none());
}

#[track_caller]
fn refused(j: &JobFile, b: &Bundle, needle: &str) {
    let err = j.render(b).unwrap_err().to_string();
    assert!(err.contains(needle), "{err}");
}

#[test]
fn limits_are_enforced_at_render_time() {
    let mut j = job("");
    j.name = "Bert_Profile".into();
    refused(&j, &Bundle::default(), "not a valid Kubernetes name");
    j.name = "b".repeat(53);
    refused(&j, &Bundle::default(), "at most 52 characters");
    let mut j = job("");
    j.namespace = "perf.team".into();
    refused(&j, &Bundle::default(), "namespace `perf.team`");
    let mut j = job("");
    j.env.insert("1BAD".into(), "x".into());
    refused(&j, &Bundle::default(), "`1BAD` is not a valid environment variable name");
    let mut j = job("");
    j.command.push("a\0b".into());
    refused(&j, &Bundle::default(), "command \"a\\0b\" has a NUL byte");

    // unknown keys name themselves
    let err =
        serde_json::from_str::<JobFile>(r#"{"name": "x", "nodez": 2}"#).unwrap_err().to_string();
    assert!(err.contains("unknown field `nodez`"), "{err}");

    // a ConfigMap over 1 MiB
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("tools.json"), r#"{"big": {"pre_scripts": ["big.sh"]}}"#).unwrap();
    fs::write(dir.path().join("big.sh"), "#".repeat(1 << 20)).unwrap();
    let err = bundle(dir.path(), &["big".into()]).unwrap_err().to_string();
    assert!(err.contains("a ConfigMap holds at most 1048576"), "{err}");
    // keys that collide once nested paths are encoded
    fs::write(dir.path().join("tools.json"), r#"{"t": {"pre_scripts": ["a/b.sh", "a__b.sh"]}}"#)
        .unwrap();
    fs::create_dir_all(dir.path().join("a")).unwrap();
    fs::write(dir.path().join("a/b.sh"), "").unwrap();
    fs::write(dir.path().join("a__b.sh"), "").unwrap();
    let err = bundle(dir.path(), &["t".into()]).unwrap_err().to_string();
    assert!(err.contains("would share the ConfigMap key `a__b.sh`"), "{err}");
    // a tool that does not exist
    let err = bundle(&fixtures().join("scripts"), &["nope".into()]).unwrap_err().to_string();
    assert!(err.contains("unknown tool `nope`") && err.contains("tracelens"), "{err}");
}

/// Validate with kubernetes-validate, strictly (unknown fields are errors).
fn validate(objects: &[Value]) -> Result<(), String> {
    let Some(validator) = tool("MADENGINE_K8S_VALIDATE", "kubernetes-validate") else {
        return Ok(());
    };
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let path = dir.path().join(format!("{i}.json"));
        fs::write(&path, serde_json::to_vec_pretty(o).unwrap()).unwrap();
        files.push(path);
    }
    #[allow(clippy::disallowed_methods, reason = "the schema validator")]
    let out = Command::new(&validator)
        .args(["--strict", "--kubernetes-version", "1.32.0", "--no-warn"])
        .args(&files)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn every_manifest_passes_kubernetes_strict_schemas() {
    for j in [job(""), job(r#", "image_has_madengine": true, "storage_class": "nfs""#)] {
        let objects = j.render(&scripts()).unwrap();
        validate(&objects).unwrap();
    }
    let mut one = job("");
    one.nodes = 1;
    one.gpu_vendor = collect_k8s::GpuVendor::Nvidia;
    validate(&one.render(&Bundle::default()).unwrap()).unwrap();
}

#[test]
fn the_validator_catches_typos_and_wrong_types() {
    if tool("MADENGINE_K8S_VALIDATE", "kubernetes-validate").is_none() {
        return;
    }
    let objects = job("").render(&scripts()).unwrap();
    let mut typo = objects[3].clone();
    typo["spec"]["completionMod"] = typo["spec"]["completionMode"].take();
    typo["spec"].as_object_mut().unwrap().remove("completionMode");
    assert!(validate(&[typo]).is_err(), "a misspelled field must fail");
    let mut wrong = objects[3].clone();
    wrong["spec"]["parallelism"] = Value::from("two");
    assert!(validate(&[wrong]).is_err(), "a string where an integer belongs must fail");
}

#[test]
fn the_configmap_is_what_kubectl_writes() {
    let Some(kubectl) = tool("MADENGINE_KUBECTL", "kubectl") else { return };
    let b = scripts();
    let objects = job("").render(&b).unwrap();
    let scripts_dir = fixtures().join("scripts");
    let mut args: Vec<String> =
        vec!["create".into(), "configmap".into(), "bert-profile-scripts".into()];
    for (key, path) in &b.files {
        args.push(format!("--from-file={key}={}", scripts_dir.join(path).display()));
    }
    args.extend(["--dry-run=client".into(), "-o".into(), "json".into()]);
    #[allow(clippy::disallowed_methods, reason = "the real kubectl, offline")]
    let out = Command::new(&kubectl).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(objects[0]["data"], theirs["data"]);
    assert_eq!(objects[0].get("binaryData"), theirs.get("binaryData"));
}

/// Only the scripts directory's own files are bundled: a pre-script named
/// `/etc/passwd` or `sub/../../../etc/hostname`, or a link inside it to a
/// file outside, is refused naming it, never read into the ConfigMap.
#[test]
fn files_outside_the_scripts_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scripts = dir.path().join("scripts");
    std::fs::create_dir_all(scripts.join("sub")).unwrap();
    std::fs::write(dir.path().join("secret.sh"), "echo secret\n").unwrap();
    std::os::unix::fs::symlink("../secret.sh", scripts.join("linked.sh")).unwrap();
    for (script, named) in [
        ("/etc/passwd", "`/etc/passwd`"),
        ("sub/../../secret.sh", "`sub/../../secret.sh`"),
        ("linked.sh", "`linked.sh`"),
    ] {
        std::fs::write(
            scripts.join("tools.json"),
            format!(r#"{{"t": {{"pre_scripts": ["{script}"]}}}}"#),
        )
        .unwrap();
        let err = bundle(&scripts, &["t".into()]).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{named} is not inside the scripts directory")),
            "{script}: {err}"
        );
    }
}

/// Built-in tools need no scripts directory: the workload runs under
/// `madengine profile`, `report summary` runs after it, and their output
/// directories are collected; the manifests pass the strict schemas. A
/// tools.json may define a tool of its own beside a built-in one.
#[test]
fn built_in_tools_need_no_scripts() {
    let mut j = job("");
    j.command = vec!["torchrun".into(), "--nnodes".into(), "2".into(), "train.py".into()];
    j.tools = vec!["torch_profiler_dynolog".into(), "summary".into()];
    j.collect = vec!["rocprof_output".into()];
    let b = collect_k8s::builtin_bundle(&j.tools).unwrap();
    assert!(b.files.is_empty());
    let script = j.pod_script(&b);
    assert!(
        script.contains("\nmadengine profile -- torchrun --nnodes 2 train.py\nrc=$?\n"),
        "{script}"
    );
    assert!(
        script.contains(
            "madengine report summary --output-dir summary_output || echo \"warning: tool summary failed ($?); continuing\" >&2\n"
        ),
        "{script}"
    );
    assert!(
        script.contains("for d in rocprof_output torch_profiler_output summary_output; do"),
        "{script}"
    );
    let objects = j.render(&b).unwrap();
    validate(&objects).unwrap();
    // Not a built-in one, and no scripts: refused, naming what there is.
    let err = collect_k8s::builtin_bundle(&["nope".into()]).unwrap_err().to_string();
    assert!(err.contains("unknown tool `nope`") && err.contains("torch_profiler_dynolog"), "{err}");
    // With a scripts directory: its tools run their scripts, a built-in one beside them.
    let mixed =
        bundle(&fixtures().join("scripts"), &["tracelens".into(), "summary".into()]).unwrap();
    assert_eq!(mixed.post, ["scripts/common/post_scripts/tracelens.sh"]);
    assert_eq!(mixed.builtin, ["summary"]);
}

/// `summarize_on_nodes`: the summary tool runs in each pod, and only its
/// reports are copied to the results volume (`gather_traces` copies the
/// traces too).
#[test]
fn summarized_in_the_pods_only_reports_are_copied() {
    let mut j = job(r#", "summarize_on_nodes": true"#);
    j.tools = vec!["torch_profiler_dynolog".into()];
    let b = collect_k8s::builtin_bundle(&j.tools).unwrap();
    let script = j.pod_script(&b);
    assert!(script.contains("madengine report summary --output-dir summary_output"), "{script}");
    assert!(script.contains("for d in tracelens_output summary_output; do"), "{script}");
    validate(&j.render(&b).unwrap()).unwrap();
    j.gather_traces = true;
    let script = j.pod_script(&b);
    assert!(
        script.contains("torch_profiler_output tracelens_output summary_output; do"),
        "{script}"
    );
}
