//! The interpreter with a real PyTorch for the tests that run one:
//! `$MADENGINE_TORCH_PYTHON` (`.ci/run` installs the PyPI wheel into a venv of
//! its own). Without it those tests say they skipped; with `CI=true` they
//! fail. Also included by madengine-cli's tests.

use std::path::PathBuf;

pub(crate) fn torch_python() -> Option<PathBuf> {
    let found = std::env::var_os("MADENGINE_TORCH_PYTHON").filter(|p| !p.is_empty());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but MADENGINE_TORCH_PYTHON is unset (an interpreter that imports torch)"
        );
        #[allow(clippy::print_stderr, reason = "tests say what they skipped")]
        {
            eprintln!(
                "skipped: MADENGINE_TORCH_PYTHON is unset (an interpreter that imports torch)"
            );
        }
    }
    found.map(PathBuf::from)
}
