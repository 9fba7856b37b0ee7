//! Drives TraceLens over the traces of a run directory.
//!
//! Not built yet: this crate will route each trace found by `trace-discover`
//! to its TraceLens report generator, sanitizing with `trace-sanitize` first,
//! and write the run summary. See the project issue "tracelens-driver".
#![deny(missing_docs)]
