//! Integration tests of trace-summary: fidelity against TraceLens' real
//! outputs on the public traces.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod breaks;
mod collectives;
mod damaged;
mod diff;
mod fidelity;
mod gpu;
mod mangled;
mod perf_report;
mod pftrace;
mod rocpd;
mod truncated;

use test_support::{damage, public as public_dir};
