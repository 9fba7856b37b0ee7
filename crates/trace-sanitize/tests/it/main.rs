//! Integration tests of trace-sanitize, at its public API.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod cases;
mod chunks;
mod damaged;
mod files;
mod gpu;
mod public;
mod python;
mod snapshots;
mod strict;

use test_support::{damage, public as public_dir, required};

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

pub(crate) use public_dir::public_fixtures;
