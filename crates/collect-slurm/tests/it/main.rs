//! Integration tests of collect-slurm: rendering, and real jobs on the private
//! cluster `cargo xtask slurm up` starts (reference/clusters.md). With
//! `CI=true` and no cluster (`MADENGINE_TEST_SLURM` unset) they fail.

mod gathered;
mod jobs;
mod render;

use collect_slurm::Slurm;

/// The test cluster, or `None` (a skipped check) outside CI.
pub(crate) fn cluster() -> Option<Slurm> {
    test_support::required::test_cluster().map(|conf| Slurm { conf: Some(conf) })
}
