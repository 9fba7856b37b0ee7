//! Where the real public traces are (`../shared/fixtures/public`), and the
//! GPU fixtures the project captured (`fixtures/gpu/`).

use std::path::{Path, PathBuf};

/// `$MADENGINE_PUBLIC_FIXTURES` (set by `.ci/run`, which then requires the
/// traces), else `../shared/fixtures/public` beside the workspace when
/// present; otherwise the test is recorded as skipped ([`crate::skip`]).
pub fn public_fixtures() -> Option<PathBuf> {
    let required = std::env::var_os("MADENGINE_PUBLIC_FIXTURES").map(PathBuf::from);
    let dir = required
        .clone()
        .unwrap_or_else(|| crate::workspace_root().join("../shared/fixtures/public"));
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        required.is_none(),
        "MADENGINE_PUBLIC_FIXTURES names a missing directory: {}",
        dir.display()
    );
    crate::skip::missing(
        "the real public traces (../shared/fixtures/public)",
        "set MADENGINE_PUBLIC_FIXTURES to their directory",
    );
    None
}

/// Every file under `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(files_under(&path)) } else { out.push(path) }
    }
    out.sort();
    out
}

/// The real GPU traces `cargo xtask fixtures --gpu` committed, a set per
/// node kind (`fixtures/gpu/<vendor>-<model>/`): each set's directory name
/// and its files, sorted. At least one set is committed (an NVIDIA H200's).
pub fn gpu_fixture_sets() -> Vec<(String, Vec<PathBuf>)> {
    let root = crate::workspace_root().join("fixtures/gpu");
    let mut sets: Vec<(String, Vec<PathBuf>)> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), files_under(&p)))
        .collect();
    sets.sort();
    assert!(!sets.is_empty(), "no GPU fixture set under {}", root.display());
    sets
}
