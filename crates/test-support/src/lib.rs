//! What the workspace's tests share (a `publish = false` dev-dependency):
//!
//! - [`public`]: the real public traces and the committed GPU fixtures;
//! - [`required`]: outside tools a test needs, and [`skip::missing`], which
//!   fails such a test under CI and otherwise records it as skipped for
//!   `cargo xtask ci` to count;
//! - [`damage`]: damage done to a file's bytes, for the property tests of
//!   every reader;
//! - [`edit`]: edits of a Kineto trace's text;
//! - [`measured`]: a command run with its own peak memory measured;
//! - [`rocprof`]: small rocprofv3 traces, one process each;
//! - [`standin`]: the TraceLens stand-in, installed into virtual environments.
//!
//! Test code: it reads the environment, prints what it skipped and panics
//! on what it cannot set up.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

pub mod damage;
pub mod edit;
pub mod measured;
pub mod public;
pub mod required;
pub mod rocprof;
pub mod skip;
pub mod standin;

/// The workspace root (this crate is `crates/test-support`), without `..`
/// in it: paths built on it are the ones programs print.
pub fn workspace_root() -> std::path::PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().and_then(std::path::Path::parent).expect("crates/test-support").to_path_buf()
}

/// The names `dir` holds, sorted (panics, naming `dir`, where it cannot be
/// listed).
pub fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
