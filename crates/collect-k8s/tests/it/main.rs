//! Integration tests of collect-k8s. No Kubernetes API server can run in CI:
//! rendered manifests are validated against Kubernetes' strict JSON schemas
//! (PyPI `kubernetes-validate`), the ConfigMap is compared with what the real
//! `kubectl create configmap --dry-run=client` writes, and gathering runs
//! against a kubectl test double.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod gather;
mod render;

use std::path::{Path, PathBuf};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A tool the tests need: from `$var`, else `default` on PATH; under CI
/// (`CI=true`) its absence fails the test instead of skipping it.
pub(crate) fn tool(var: &str, default: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|d| d.join(default)).find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {default} is missing (set {var})"
        );
        eprintln!("skipped: {default} not found (set {var})");
    }
    found
}
