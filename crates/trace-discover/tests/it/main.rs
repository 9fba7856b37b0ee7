//! Integration tests of trace-discover, at its public API.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

#[path = "../../../trace-sanitize/tests/it/damage.rs"]
mod damage;
mod damaged;
mod gpu;
mod public;
#[path = "../../../trace-sanitize/tests/it/public_dir.rs"]
mod public_dir;
mod tree;

use std::path::{Path, PathBuf};

/// The project's synthetic run directory.
pub(crate) fn synthetic_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run")
}

pub(crate) use public_dir::public_fixtures;
