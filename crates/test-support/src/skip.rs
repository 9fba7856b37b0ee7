//! Checks skipped for a missing tool, counted: a test that needs what this
//! machine lacks says so, and `cargo xtask ci` (which points
//! `$MADENGINE_TEST_SKIPS` at a file) lists them in its closing line, so
//! "0 skipped" is never said of a run that tested nothing real.

use std::io::Write as _;

/// The file a skipped check is recorded in, one line each (`what`, a tab,
/// `get`), where set.
pub const SKIPS_VAR: &str = "MADENGINE_TEST_SKIPS";

/// A check that cannot run here: `what` is missing, and `get` says how to
/// provide it. Under CI (`CI=true`) that is a failure; elsewhere it is said
/// on stderr and recorded in `$MADENGINE_TEST_SKIPS`.
#[track_caller]
pub fn missing(what: &str, get: &str) {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {what} is missing ({get})");
    eprintln!("skipped: {what} is missing ({get})");
    let Some(path) = std::env::var_os(SKIPS_VAR).filter(|p| !p.is_empty()) else { return };
    // One write per line, appended: test threads and binaries share the file.
    let line = format!("{}\t{}\n", what.replace(['\t', '\n'], " "), get.replace(['\t', '\n'], " "));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("cannot record a skipped check in {}: {e}", std::path::Path::new(&path).display());
    }
}
