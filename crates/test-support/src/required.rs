//! Outside tools the tests need: an interpreter with a real PyTorch
//! (`.ci/run` installs the PyPI wheel into a venv of its own), the test
//! SLURM cluster, orjson, Chromium, kubectl. Without one, a test that needs
//! it is recorded as skipped ([`crate::skip::missing`]); with `CI=true` it
//! fails.

use std::path::PathBuf;

/// The path `$var` names; `what` it must be, and how to `get` it.
pub fn required_path(var: &str, what: &str, get: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var).filter(|p| !p.is_empty());
    if found.is_none() {
        crate::skip::missing(&format!("{var} ({what})"), get);
    }
    found.map(PathBuf::from)
}

/// `$MADENGINE_TORCH_PYTHON`: an interpreter that imports torch.
pub fn torch_python() -> Option<PathBuf> {
    required_path(
        "MADENGINE_TORCH_PYTHON",
        "an interpreter that imports torch",
        "python3 -m venv V && V/bin/pip install torch numpy, then point it at V/bin/python3",
    )
}

/// `$MADENGINE_TEST_SLURM`: the test cluster's `slurm.conf`.
pub fn test_cluster() -> Option<PathBuf> {
    required_path(
        "MADENGINE_TEST_SLURM",
        "the test SLURM cluster's slurm.conf",
        "as root with Debian's slurmctld slurmd slurm-client munge: eval \"$(cargo xtask slurm up)\"",
    )
}

/// `$MADENGINE_ORJSON_PYTHON`: an interpreter that imports orjson, the
/// parser TraceLens uses.
pub fn orjson_python() -> Option<PathBuf> {
    required_path(
        "MADENGINE_ORJSON_PYTHON",
        "an interpreter that imports orjson",
        "python3 -m venv V && V/bin/pip install orjson==3.13.0, then point it at V/bin/python3",
    )
}

/// A program the tests need: `$var`, else `program` on PATH.
pub fn program(var: &str, program: &str, get: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
    });
    if found.is_none() {
        crate::skip::missing(&format!("{program} (or {var})"), get);
    }
    found
}
