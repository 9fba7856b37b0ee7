//! Gathering a results directory as nodes left it (no cluster needed).

use std::{fs, path::Path};

use collect_slurm::{NodeStatus, gather};

/// A node whose rocprofv3 wrote only its default output, a rocpd database,
/// has a trace to show for it, not none.
#[test]
fn a_node_with_rocpd_databases_counts_them() {
    let job = tempfile::tempdir().unwrap();
    let node = job.path().join("node_0");
    let host = node.join("rocprof_output/host");
    fs::create_dir_all(&host).unwrap();
    fs::write(node.join("exit_code"), "0\n").unwrap();
    let db = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/synthetic/run/rocprof_output/1e4d92661463/1234_results.db");
    fs::copy(&db, host.join("1234_results.db")).unwrap();
    fs::copy(&db, host.join("1235_results.db")).unwrap();
    let summary = gather(job.path(), None).unwrap();
    let node = &summary.nodes[0];
    assert_eq!(node.status, NodeStatus::Succeeded);
    assert_eq!(node.traces.get("rocpd"), Some(&2), "{node:?}");
    assert_eq!(node.traces.len(), 1, "{node:?}");
}
