//! Integration tests of trace-summary: fidelity against TraceLens' real
//! outputs on the public traces.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod breaks;
mod collectives;
#[path = "../../../trace-sanitize/tests/it/damage.rs"]
mod damage;
mod damaged;
mod diff;
mod fidelity;
mod gpu;
mod mangled;
mod pftrace;
#[path = "../../../trace-sanitize/tests/it/public_dir.rs"]
mod public_dir;
mod rocpd;
mod truncated;
