//! TraceLens' core tables computed natively from Kineto and rocprofv3 traces.
//!
//! [`summarize_file`] reads a Kineto / PyTorch profiler trace (`.json` or
//! `.json.gz`) in one streaming pass, through `trace-sanitize` so invalid
//! UTF-8, raw control bytes and lone surrogates never fail it, and computes
//! `gpu_timeline`, `kernel_summary` and `ops_summary` with TraceLens' exact
//! definitions (reference/tracelens-metrics.md): GPU events by `cat`,
//! communication and memcpy by kernel name, linking through `ac2g` flows and
//! graph-launch correlation, parent ops by time nesting, the op category
//! registry, Kahan and pairwise sums, and Python's float formatting.
//! Beside them, `collective_summary` ([`Summary::collective_summary`]) is
//! madengine's own: the NCCL/RCCL calls a trace's collective kernels
//! describe, with nccl-tests' bandwidths.
//! rocprofv3 JSON traces get TraceLens' rocprof variant of `gpu_timeline` and
//! `kernel_summary`, from their kernel dispatch and memory copy records.
//! So do rocprofv3's SQLite databases (rocpd, `<pid>_results.db`, its
//! default output since ROCm 7), read through the views rocprofv3 writes
//! into them; [`summarize_file`] tells them by their first bytes, and
//! [`rocpd_to_json`] writes one as the rocprofv3 JSON TraceLens reads. And so do
//! Perfetto traces (`.pftrace`, rocprofv3 `--output-format pftrace`), read
//! packet by packet: their `kernel_dispatch` and `memory_copy` slices.
//! [`op_categories`] adds `ops_summary` up by op category (`GEMM`,
//! `SDPA_fwd`, ...), which traces of different GPUs share;
//! [`kernel_categories`] a rocprof `kernel_summary` by its kernel category.
//! [`summarize_files`] reads many traces at once, on worker threads, a
//! failure (or a panic) of one being that trace's alone.
//! [`Diff`] sets two traces' tables side by side, where GPU time moved; a
//! side can also be a report's CSVs read back ([`Tables::read_dir`]).
//!
//! # Example
//!
//! ```
//! let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
//!     .join("../../fixtures/synthetic/run/torch_profiler_output/libkineto_trace_rank0_1.json");
//! let summary = trace_summary::summarize_file(&trace)?;
//! let timeline = summary.gpu_timeline.as_ref().unwrap();
//! assert_eq!(timeline.header, ["type", "time ms", "percent"]);
//! assert!(timeline.to_csv().starts_with("type,time ms,percent\ncomputation_time,"));
//! # Ok::<(), trace_summary::Error>(())
//! ```
#![deny(missing_docs)]

mod arch;
mod category;
mod chan;
mod collective;
mod compute;
mod csv;
mod diff;
mod error;
mod many;
mod parse;
mod pftrace;
mod record;
mod registry;
mod rocpd;
mod rocprof;
mod scan;
mod summary;

pub use crate::{
    arch::{ArchChoice, ArchError, GpuArch},
    category::{Category, kernel_categories, op_categories},
    collective::CollectiveKernel,
    compute::{Cell, PERF_SHEETS, ShortKernels, Table},
    csv::py_float,
    diff::{Diff, DiffRow, GemmDiffRow, Measure, SHAPE_SHEETS, Tables, gemm_shape, op_shape},
    error::{DatabaseError, Error, ParseError, Result, one_line},
    many::{Failed, Progress, summarize_files, summarize_files_into},
    record::RECORD,
    rocpd::{CONVERTED_VERSION, Converted, ConvertedFile, ConvertedFiles},
    rocprof::truncated_kernel_name,
    summary::{
        Format, Options, Outcome, StepMarker, Steps, Summary, memory_needed, parse_file,
        rocpd_to_json, summarize, summarize_file, summarize_file_with, summarize_with,
    },
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
