//! Integration tests of xtask.
//!
//! `cargo xtask e2e --cpu`, run for real: the native reports of
//! torch.profiler traces, the `madengine profile`, 2-rank `torchrun` and
//! SLURM scenarios with a real PyTorch on the CPU (gloo), the test cluster
//! from `cargo xtask slurm up`, the fake dynolog daemon and the TraceLens
//! stand-in (the two that cannot run here), so the e2e's own machinery is
//! checked before a GPU node's time is spent on it. Needs
//! `MADENGINE_TORCH_PYTHON` and `MADENGINE_TEST_SLURM`: without them the test
//! says it skipped, and with `CI=true` it fails.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

#[path = "../../src/built.rs"]
mod built;

use std::path::Path;

use test_support::{required, standin};

use serde_json::Value;

#[test]
fn a_cpu_rehearsal_runs_the_pytorch_and_slurm_scenarios() {
    let Some(torch) = required::torch_python() else { return };
    let Some(conf) = required::test_cluster() else { return };
    // The venv's python3 and torchrun first on PATH, as on a node with
    // PyTorch, and the fake dynolog daemon (no real one runs here) as `dynolog`.
    let venv_bin = torch.parent().unwrap().to_path_buf();
    let fakes = std::env::temp_dir().join(format!("xtask-e2e-bin-{}", std::process::id()));
    std::fs::create_dir_all(&fakes).unwrap();
    let fake_dynolog = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/dynolog-client/tests/fixtures/fake_dynolog.py");
    let _ = std::fs::remove_file(fakes.join("dynolog"));
    std::os::unix::fs::symlink(fake_dynolog.canonicalize().unwrap(), fakes.join("dynolog"))
        .unwrap();
    let path = std::env::join_paths(
        [venv_bin, fakes.clone()]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let tracelens = standin::Standin::python(&standin::standin().scripts);
    #[allow(clippy::disallowed_methods, reason = "the test runs the xtask binary")]
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["e2e", "--cpu", "--json", "--madengine"])
        .arg(built::madengine())
        .arg("--python")
        .arg(&tracelens)
        .env("PATH", path)
        .env("SLURM_CONF", &conf)
        .env_remove("TRACELENS_VENV")
        .output()
        .unwrap();
    std::fs::remove_dir_all(&fakes).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "e2e failed:\n{stdout}\n{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let by_name = |name: &str| {
        result["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["scenario"] == name)
            .unwrap()
            .clone()
    };
    // The profiled process's trace (its 3 optimizer steps checked); two
    // per-rank rows and the collective: each SKIPPED, as TraceLens answers
    // CPU traces.
    for (name, rows) in [("dynolog-profile", 1), ("torchrun-2rank", 3), ("slurm", 3)] {
        let s = by_name(name);
        assert!(s["ran"] == true && s["ok"] == true, "{name}: {s}\n{stderr}");
        let detail = s["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("{rows} row(s) SKIPPED, as for CPU traces")),
            "{name}: {detail}"
        );
    }
    // The native reports need no TraceLens: both ranks read, each without
    // GPU activity.
    let s = by_name("torch-native");
    assert!(s["ran"] == true && s["ok"] == true, "torch-native: {s}\n{stderr}");
    let detail = s["detail"].as_str().unwrap();
    assert_eq!(detail, "2 traces without GPU activity, as for CPU traces");
    // Without rocprofv3 and an AMD GPU the others say what they need.
    for name in ["rocprof-json", "rocprof-pftrace"] {
        let s = by_name(name);
        assert!(s["ran"] == false, "{name}: {s}");
        assert!(s["detail"].as_str().unwrap().starts_with("skipped: needs "), "{name}: {s}");
    }
    assert!(stderr.contains("sees no GPU"), "the inventory names the CPU-only PyTorch:\n{stderr}");
}
