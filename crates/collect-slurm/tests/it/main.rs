//! Integration tests of collect-slurm: rendering, and real jobs on the private
//! cluster `cargo xtask slurm up` starts (reference/clusters.md). With
//! `CI=true` and no cluster (`MADENGINE_TEST_SLURM` unset) they fail.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod gathered;
mod jobs;
mod render;

use collect_slurm::Slurm;

/// The test cluster, or `None` (and a note) outside CI.
pub(crate) fn cluster() -> Option<Slurm> {
    match std::env::var_os("MADENGINE_TEST_SLURM") {
        Some(conf) if !conf.is_empty() => Some(Slurm { conf: Some(conf.into()) }),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but no SLURM cluster: run `eval \"$(cargo xtask slurm up)\"` first (MADENGINE_TEST_SLURM is unset)"
            );
            eprintln!(
                "skipped: no SLURM cluster (start one with `eval \"$(cargo xtask slurm up)\"`)"
            );
            None
        }
    }
}
