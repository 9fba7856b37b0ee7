//! Profiled multi-node runs on SLURM: render, submit, follow, gather.
//!
//! A [`JobSpec`] renders to an sbatch script in which every value is
//! shell-quoted. The workload runs once per node in a node-local work
//! directory; after its step each node writes its logs, and when the step
//! succeeded its tool output directories, into
//! `<results>/<job_id>/node_<SLURM_NODEID>/` (named by SLURM's node id, never
//! by `hostname`, which several nodes may share). [`submit`] creates the
//! results directory first (SLURM fails a job whose output directory is
//! missing) and runs `sbatch --parsable`; [`follow`] polls `squeue` and reads
//! `scontrol show job` (no `sacct` needed), cancelling past a deadline;
//! [`gather`] writes `results_summary.json`. Every command goes through one
//! helper that quotes the command and its stderr in errors.
//!
//! # Example
//!
//! ```
//! use collect_slurm::JobSpec;
//!
//! let spec = JobSpec {
//!     nodes: 2,
//!     gpus_per_node: Some(8),
//!     command: vec!["madengine".into(), "profile".into(), "--".into(), "torchrun".into(), "train.py".into()],
//!     results_dir: "/shared/results".into(),
//!     ..JobSpec::default()
//! };
//! let script = spec.render()?;
//! assert!(script.contains("#SBATCH --nodes=2"));
//! assert!(script.contains("madengine profile -- torchrun train.py"));
//! # Ok::<(), collect_slurm::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
mod gather;
mod slurm;
mod spec;
mod submit;
pub mod tools;

pub use crate::{
    error::{Error, Result},
    gather::{
        Collected, JOB_FILE, JobRecord, NodeStatus, NodeSummary, SUMMARY, SUMMARY_VERSION, Summary,
        gather,
    },
    slurm::{JobState, MAX_POLL, Slurm},
    spec::{DEFAULT_COLLECT, JobSpec},
    submit::{Submitted, follow, follow_with, submit},
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
