//! Finds and classifies the GPU profiler artifacts under a run directory.
//!
//! The classification is the original madengine analyzer's (kinds, name
//! patterns and their precedence, the sniffing of `trace.json[.gz]`, the
//! unsupported formats with their guidance, the skip list, exclusion of the
//! output directory, sorted results), done in ONE walk of the tree, plus:
//!
//! - any other `.json`/`.json.gz` is classified by content: a bounded,
//!   decompressed head read that shows `"traceEvents"` is a PyTorch trace,
//!   one that shows `"rocprofiler-sdk-tool"` is a rocprofv3 trace
//!   ([`Claim`] records which rule claimed it; [`Options::names_only`]
//!   restores the original's name-only behaviour);
//! - each PyTorch trace carries its [`Rank`] when one can be known, from its
//!   file name ([`RANK_REGEX`]) or its `distributedInfo`;
//! - symlinked directories are not followed unless asked (with loop
//!   detection), unreadable paths and symbolic links named as traces that
//!   lead nowhere become [`Problem`]s, and non-UTF-8 names are handled;
//! - what reading a trace will cost can be told first: its JSON size
//!   ([`json_size`], a gzip file's from its trailer) and how many such jobs
//!   fit in memory together ([`at_once`]).
//! - a reader of every rocprofv3 output (trace-summary) takes rocpd
//!   databases as traces too, one output per process
//!   ([`Discovery::with_databases`]).
//!
//! # Example
//!
//! ```
//! use trace_discover::{Options, TraceKind, discover};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("model_rank1.pt.trace.json"), r#"{"traceEvents": []}"#)?;
//! std::fs::write(dir.path().join("run.rpd"), b"")?;
//!
//! let found = discover(dir.path(), &Options::default())?;
//! assert_eq!(found.traces[0].kind, TraceKind::Pytorch);
//! assert_eq!(found.traces[0].rank.map(|r| r.rank), Some(1));
//! assert!(found.unsupported[0].reason.contains("RPD"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod classify;
mod error;
pub mod lossy;
mod rank;
mod size;
mod walk;
mod written;

pub use crate::{
    classify::{Claim, TraceKind, is_rocpd, rocprof_json_name, same_rocprof_output},
    error::{Error, Result},
    rank::{RANK_REGEX, Rank, RankSource, find_rank, rank_from_file_name},
    size::{at_once, json_size},
    walk::{
        DISCOVERY_VERSION, Discovery, Options, Problem, SANITIZED_COPY, SANITIZED_ORIGINAL, Trace,
        Unsupported, classify, discover, special,
    },
    written::export_time_from_file_name,
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
