//! Integration tests of trace-sanitize, at its public API.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod cases;
mod chunks;
mod files;
mod public;
mod python;
mod snapshots;

use trace_sanitize::{Options, Report, sanitize};

/// Sanitize `input` in one piece with default options.
pub(crate) fn run(input: &[u8]) -> (Vec<u8>, Report) {
    run_with(input, &Options::default())
}

pub(crate) fn run_with(input: &[u8], options: &Options) -> (Vec<u8>, Report) {
    let mut out = Vec::new();
    let report = sanitize(input, &mut out, options).expect("in-memory sanitize cannot fail");
    (out, report)
}

/// The project's fixtures directory.
pub(crate) fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
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
