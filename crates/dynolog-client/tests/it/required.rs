//! Interpreters the tests need from outside: `$MADENGINE_TORCH_PYTHON`, one
//! with a real PyTorch (`.ci/run` installs the PyPI wheel into a venv of its
//! own), and the like. Without one those tests say they skipped; with
//! `CI=true` they fail. Also included by madengine-cli's, trace-sanitize's and
//! xtask's tests.

use std::path::PathBuf;

/// The path `$var` names (`what`: what it must be).
pub(crate) fn required_path(var: &str, what: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var).filter(|p| !p.is_empty());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but {var} is unset ({what})"
        );
        #[allow(clippy::print_stderr, reason = "tests say what they skipped")]
        {
            eprintln!("skipped: {var} is unset ({what})");
        }
    }
    found.map(PathBuf::from)
}

#[allow(dead_code, reason = "not every test binary that includes this runs PyTorch")]
pub(crate) fn torch_python() -> Option<PathBuf> {
    required_path("MADENGINE_TORCH_PYTHON", "an interpreter that imports torch")
}

#[allow(dead_code, reason = "not every test binary that includes this submits jobs")]
pub(crate) fn test_cluster() -> Option<PathBuf> {
    required_path(
        "MADENGINE_TEST_SLURM",
        "the test SLURM cluster's slurm.conf: start it with `eval \"$(cargo xtask slurm up)\"`",
    )
}
