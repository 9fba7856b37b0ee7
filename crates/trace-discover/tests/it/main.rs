//! Integration tests of trace-discover, at its public API.

mod public;
mod tree;

use std::path::{Path, PathBuf};

/// The project's synthetic run directory.
pub(crate) fn synthetic_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run")
}

/// `../shared/fixtures/public` beside the workspace, when present. Under CI
/// (`CI=true`) its absence is a failure, not a skip.
pub(crate) fn public_fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("MADENGINE_PUBLIC_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/public"));
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the public traces are missing at {} (set MADENGINE_PUBLIC_FIXTURES)",
        dir.display()
    );
    eprintln!("skipped: public traces not found at {}", dir.display());
    None
}
