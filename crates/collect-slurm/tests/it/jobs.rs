//! Real jobs on the test cluster.

use std::{fs, path::Path, time::Duration};

use collect_slurm::{Error, JobSpec, NodeStatus, follow, gather, submit};

use crate::cluster;

/// A node's fake workload: GPU-looking traces with its rank in the name, a
/// TraceLens output, and its environment.
const WORKLOAD: &str = r#"set -e
mkdir -p torch_profiler_output tracelens_output
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {}}], "distributedInfo": {"rank": %s, "world_size": 4}}' "$SLURM_NODEID" > "torch_profiler_output/rank${SLURM_NODEID}_trace.json"
echo "type,time ms" > tracelens_output/gpu_timeline.csv
echo "node $SLURMD_NODENAME rank $SLURM_NODEID gpus ${CUDA_VISIBLE_DEVICES:-none} weird=$WEIRD"
"#;

fn job(results: &Path, nodes: u32, script: &str) -> JobSpec {
    JobSpec {
        name: "madengine-test".into(),
        nodes,
        gpus_per_node: Some(8),
        env: vec![("WEIRD".into(), "it's $HOME \"q\"".into())],
        command: vec!["bash".into(), "-c".into(), script.into()],
        results_dir: results.to_path_buf(),
        ..JobSpec::default()
    }
}

#[test]
fn four_nodes_gather_into_node_dirs() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let submitted = submit(&job(dir.path(), 4, WORKLOAD), &slurm).unwrap();
    let (state, cancelled) = follow(&submitted, &slurm, Some(Duration::from_secs(120))).unwrap();
    assert!(!cancelled);
    assert!(
        state.succeeded(),
        "{state:?}\n{}",
        fs::read_to_string(dir.path().join(format!("slurm-{}.out", submitted.job_id)))
            .unwrap_or_default()
    );
    let summary = gather(&submitted.results, Some(state)).unwrap();
    assert!(summary.complete(), "{summary:#?}");
    let names: Vec<_> = summary.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node_0", "node_1", "node_2", "node_3"]);
    let slurm_nodes: std::collections::BTreeSet<_> =
        summary.nodes.iter().filter_map(|n| n.slurm_node.clone()).collect();
    assert_eq!(slurm_nodes.len(), 4, "four distinct SLURM nodes: {slurm_nodes:?}");
    for node in &summary.nodes {
        assert_eq!(node.status, NodeStatus::Succeeded);
        let dirs: Vec<_> = node.collected.iter().map(|c| c.dir.as_str()).collect();
        assert_eq!(dirs, ["torch_profiler_output", "tracelens_output"]);
        assert_eq!(node.traces.get("pytorch"), Some(&1));
        let out =
            fs::read_to_string(submitted.results.join(&node.name).join("stdout.out")).unwrap();
        assert!(
            out.contains("gpus 0,1,2,3,4,5,6,7") && out.contains("weird=it's $HOME \"q\""),
            "{out}"
        );
    }
    let written: serde_json::Value =
        serde_json::from_slice(&fs::read(submitted.results.join("results_summary.json")).unwrap())
            .unwrap();
    assert_eq!(written["state"]["state"], "COMPLETED");
}

#[test]
fn a_failed_node_contributes_logs_only() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script =
        format!("{WORKLOAD}\nif [ \"$SLURM_NODEID\" = 1 ]; then echo boom >&2; exit 3; fi\n");
    let submitted = submit(&job(dir.path(), 2, &script), &slurm).unwrap();
    let (state, _) = follow(&submitted, &slurm, Some(Duration::from_secs(120))).unwrap();
    assert_eq!(state.state, "FAILED", "{state:?}");
    assert_eq!(state.exit_code, Some(3));
    let summary = gather(&submitted.results, Some(state)).unwrap();
    assert_eq!(summary.failed, ["node_1"]);
    let failed = &summary.nodes[1];
    assert_eq!((failed.status, failed.exit_code), (NodeStatus::Failed, Some(3)));
    assert!(failed.collected.is_empty());
    assert_eq!(
        fs::read_to_string(submitted.results.join("node_1/stderr.err")).unwrap().trim(),
        "boom"
    );
    assert_eq!(summary.nodes[0].status, NodeStatus::Succeeded);
}

#[test]
fn a_job_past_its_deadline_is_cancelled() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let submitted = submit(&job(dir.path(), 1, "sleep 120"), &slurm).unwrap();
    let mut states = Vec::new();
    let (state, cancelled) =
        collect_slurm::follow_with(&submitted, &slurm, Some(Duration::from_secs(2)), &mut |s| {
            states.push(s.to_string())
        })
        .unwrap();
    assert!(cancelled);
    // Each state once, as it changed, from the first poll on (PENDING while
    // other tests hold the nodes, else RUNNING).
    assert!(
        matches!(states.first().map(String::as_str), Some("PENDING" | "RUNNING")),
        "{states:?}"
    );
    let mut deduped = states.clone();
    deduped.dedup();
    assert_eq!(deduped, states);

    assert_eq!(state.state, "CANCELLED", "{state:?}");
    let summary = gather(&submitted.results, Some(state)).unwrap();
    assert!(!summary.complete());
}

#[test]
fn asking_more_gpus_than_a_node_has_is_rejected_with_slurms_reason() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut spec = job(dir.path(), 1, "true");
    spec.gpus_per_node = Some(9);
    let err = submit(&spec, &slurm).unwrap_err();
    assert!(matches!(err, Error::Command { .. }), "{err:?}");
    assert!(err.to_string().contains("Requested node configuration is not available"), "{err}");
    // nothing half-made is left: only the (empty) results directory
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}
