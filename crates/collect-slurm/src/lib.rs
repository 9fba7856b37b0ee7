//! Profiled multi-node runs on SLURM: batch script, submission, gathering.
//!
//! Not built yet: see the project issue "collect-slurm and `madengine slurm`".
#![deny(missing_docs)]
