//! Integration tests of trace-discover, at its public API.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod damaged;
mod gpu;
mod public;
mod tree;

use test_support::{damage, public as public_dir};

use std::path::{Path, PathBuf};

/// The project's synthetic run directory.
pub(crate) fn synthetic_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run")
}

pub(crate) use public_dir::public_fixtures;
