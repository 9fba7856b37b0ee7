//! Integration tests of trace-discover, at its public API.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod public;
mod tree;

use std::path::{Path, PathBuf};

/// The project's synthetic run directory.
pub(crate) fn synthetic_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run")
}

/// The real public traces: `$MADENGINE_PUBLIC_FIXTURES` (set by `.ci/run`,
/// which then requires them), else `../shared/fixtures/public` beside the
/// workspace when present; otherwise the test says it skipped.
pub(crate) fn public_fixtures() -> Option<std::path::PathBuf> {
    let required = std::env::var_os("MADENGINE_PUBLIC_FIXTURES").map(std::path::PathBuf::from);
    let dir = required.clone().unwrap_or_else(|| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/public")
    });
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        required.is_none(),
        "MADENGINE_PUBLIC_FIXTURES names a missing directory: {}",
        dir.display()
    );
    eprintln!(
        "skipped: public traces not found at {} (set MADENGINE_PUBLIC_FIXTURES to require them)",
        dir.display()
    );
    None
}
