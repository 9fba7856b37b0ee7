//! Where the real public traces are, for the tests of every crate (included
//! by path from the others' test binaries).

use std::path::{Path, PathBuf};

/// `$MADENGINE_PUBLIC_FIXTURES` (set by `.ci/run`, which then requires the
/// traces), else `../shared/fixtures/public` beside the workspace when
/// present; otherwise the test says it skipped.
pub(crate) fn public_fixtures() -> Option<PathBuf> {
    let required = std::env::var_os("MADENGINE_PUBLIC_FIXTURES").map(PathBuf::from);
    let dir = required.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/public")
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

/// Every file under `dir`, sorted.
#[allow(dead_code, reason = "not every test binary that includes this walks the traces")]
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(files_under(&path)) } else { out.push(path) }
    }
    out.sort();
    out
}
