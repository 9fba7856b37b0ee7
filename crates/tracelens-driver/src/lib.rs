//! Drives TraceLens over the traces of a run directory.
//!
//! [`run`] finds the traces (`trace-discover`), routes each kind to its
//! TraceLens generator with the arguments madengine always used, analyzes a
//! sanitized copy of any trace strict JSON parsers reject (`trace-sanitize`),
//! stages rank-labelled links for the multi-rank collective report (one per
//! complete run under the root), runs the jobs in parallel with a log each
//! and an optional timeout, classifies each outcome (SUCCESS, SKIPPED for "No
//! GPU events found in the trace", FAILURE with the last line of output) and
//! writes `tracelens_summary.csv` and `.json` atomically, after removing any
//! left by an earlier run.
//!
//! What needs no TraceLens (splitting ranked traces into runs and cycles,
//! cross-rank tables, pairing two runs, report names) lives in
//! `trace-report`, which this crate uses for the same answers.
//!
//! TraceLens always runs out of process: the console script beside the
//! chosen interpreter, or `python -c` importing its module. PATH is never
//! searched and no shell is involved. This crate reads no environment
//! variable: the caller resolves `TRACELENS_VENV` ([`resolve_interpreter`]).
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use tracelens_driver::{Config, Tool, plan_only};
//!
//! let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run/torch_profiler_output");
//! let config = Config::new(&root, std::env::temp_dir(), 2);
//! // No TraceLens needed to plan: one perf report per trace...
//! let (_, plan) = plan_only(&config)?;
//! assert!(plan.jobs.iter().all(|j| j.tool == Tool::Pytorch));
//! // ...and no collective: rank 1 appears twice (in a name and in a distributedInfo).
//! assert!(plan.skipped[0].detail.starts_with("rank 1 is claimed by 2 traces"));
//! # Ok::<(), tracelens_driver::Error>(())
//! ```
#![deny(missing_docs)]

mod cmd;
mod compare;
mod error;
mod extra;
mod plan;
mod python;
mod run;
mod setup;
mod summary;
mod tool;

pub use trace_report::{RunReports, SummaryCsvError, this_runs_reports};

pub use crate::{
    compare::{CompareConfig, CompareOutcome, compare},
    error::{Error, Managed, Result, SetupFailure},
    plan::{Config, Job, Plan, Planned, ROCPD, plan},
    python::{Probe, TraceLens, probe, resolve_interpreter},
    run::{
        Event, NO_GPU_DETAIL, NO_GPU_EVENTS, NO_GPU_SEEN_DETAIL, NO_ROCPROF_PROCESS_DETAIL,
        discover, job_memory, plan_only, run, tracelens_name,
    },
    setup::{DEFAULT_SPEC, DEFAULT_VENV, SetupConfig, SetupOutcome, setup},
    summary::{
        Counts, DOCUMENT_VERSION, Durations, Repaired, Row, SUMMARY_CSV, Status, Summary, Written,
        read_csv,
    },
    tool::{Mode, Tool},
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
