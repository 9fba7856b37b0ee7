//! Integration tests of collect-k8s. No Kubernetes API server can run in CI:
//! rendered manifests are validated against Kubernetes' strict JSON schemas
//! (PyPI `kubernetes-validate`), the ConfigMap is compared with what the real
//! `kubectl create configmap --dry-run=client` writes, and gathering runs
//! against a kubectl test double.

mod gather;
mod render;

use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A tool the tests need: from `$var`, else `default` on PATH; under CI
/// (`CI=true`) its absence fails the test, elsewhere it is a skipped check.
pub(crate) fn tool(var: &str, default: &str) -> Option<PathBuf> {
    let get = match default {
        "kubernetes-validate" => {
            "python3 -m venv V && V/bin/pip install kubernetes-validate==1.37.0, then point MADENGINE_K8S_VALIDATE at V/bin/kubernetes-validate"
        }
        _ => "install kubectl (its client alone), or point MADENGINE_KUBECTL at it",
    };
    test_support::required::program(var, default, get)
}
