//! The summary rows and the two summary files.

use std::{
    collections::BTreeMap,
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use serde::Serialize;
use trace_discover::Problem;

use crate::{Error, Result};

/// The CSV summary's file name.
pub const SUMMARY_CSV: &str = trace_report::TRACELENS_SUMMARY_CSV;
/// The JSON summary's file name.
/// The version of this crate's documents' shapes (`tracelens_summary.json`,
/// [`Written`]; [`crate::SetupOutcome`], [`crate::CompareOutcome`],
/// [`crate::Planned`]): raised when a key is renamed or removed or changes
/// its meaning.
pub const DOCUMENT_VERSION: u32 = 1;

pub(crate) const SUMMARY_JSON: &str = trace_report::TRACELENS_SUMMARY_JSON;

/// How a job (or a skipped artifact) ended.
pub use trace_report::JobStatus as Status;

/// One summary row. The CSV has exactly the first six fields.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Row {
    /// The original trace relative to the root (or a label such as `2 per-rank traces`).
    pub trace_file: String,
    /// `pytorch`, `rocprof_json`, `pftrace` or `unsupported`.
    pub kind: String,
    /// The TraceLens entry point (empty for unsupported artifacts).
    pub tracelens_tool: String,
    /// How it ended.
    pub status: Status,
    /// The report written (relative to the root when inside it).
    pub output: String,
    /// Why it was skipped or how it failed.
    pub detail: String,
    /// Seconds the job ran (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The job's combined output (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// What the run itself does with this row (not written out).
    #[serde(skip)]
    pub(crate) cause: Cause,
    /// For a PyTorch trace read by the precheck: the kernels TraceLens'
    /// collective analysis would select in it
    /// ([`trace_summary::Summary::collective_kernels`]); not written out.
    #[serde(skip)]
    pub(crate) collective_kernels: Option<usize>,
}

/// Why a row ended as it did, where the run acts on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Nothing the run acts on (and a row read back).
    #[default]
    Other,
    /// Its trace cannot be parsed (cut short, or data after its end): a
    /// collective over it is not run either. `salvage`: whether
    /// [`crate::Config::salvage`] would analyze what it holds.
    Unparseable {
        /// Whether a salvage reads it.
        salvage: bool,
    },
    /// Its job was stopped because the caller raised the cancel flag: no
    /// result, and not shown.
    Interrupted,
}

impl Row {
    /// Whether its trace failed as one that [`crate::Config::salvage`]
    /// would analyze (cut short, data after its end, a string never
    /// closed). Not written out: false in a row read back.
    pub fn salvageable(&self) -> bool {
        self.cause == Cause::Unparseable { salvage: true }
    }

    pub(crate) fn skipped(trace_file: String, kind: &str, tool: &str, detail: &str) -> Row {
        Row {
            trace_file,
            kind: kind.into(),
            tracelens_tool: tool.into(),
            status: Status::Skipped,
            output: String::new(),
            detail: detail.into(),
            seconds: None,
            log: None,
            cause: Cause::Other,
            collective_kernels: None,
        }
    }
}

/// Counts over all rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counts {
    /// `SUCCESS` rows.
    pub succeeded: usize,
    /// `FAILURE` rows.
    pub failed: usize,
    /// `SKIPPED` rows.
    pub skipped: usize,
}

/// A trace analyzed through a sanitized copy.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Repaired {
    /// The original trace, relative to the root.
    pub trace_file: String,
    /// What was repaired (counts and the first repairs with offsets and keys).
    pub report: trace_sanitize::Report,
}

/// What a run did, as written to `tracelens_summary.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Summary {
    /// The root, absolute.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub root: PathBuf,
    /// The output directory, absolute.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub output_dir: PathBuf,
    /// The mode.
    pub mode: String,
    /// The interpreter that ran TraceLens.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub python: PathBuf,
    /// TraceLens' version, when known.
    pub tracelens_version: Option<String>,
    /// The CSV summary.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub summary_csv: PathBuf,
    /// Traces found per kind (after `max_traces`).
    pub discovered: BTreeMap<String, usize>,
    /// Row counts by status.
    pub counts: Counts,
    /// The rows, as in the CSV: jobs in job order, then unsupported
    /// artifacts, then collective skips.
    pub results: Vec<Row>,
    /// Traces analyzed through a sanitized copy, and what was repaired.
    pub repairs: Vec<Repaired>,
    /// Paths discovery could not read.
    pub problems: Vec<Problem>,
    /// Wall-clock seconds: discovery, sanitizing, jobs, total.
    pub durations: Durations,
}

/// Where the time went.
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Durations {
    /// Finding the traces.
    pub discovery_s: f64,
    /// Checking and sanitizing.
    pub sanitize_s: f64,
    /// Running TraceLens.
    pub jobs_s: f64,
    /// Everything.
    pub total_s: f64,
}

impl Summary {
    /// Whether any job failed.
    pub fn any_failed(&self) -> bool {
        self.counts.failed > 0
    }

    /// The summary as `tracelens_summary.json` (and `report tracelens
    /// --json`) writes it ([`Written`]).
    pub fn written(&self) -> Written<'_> {
        Written {
            version: DOCUMENT_VERSION,
            summary: self,
            succeeded: self.counts.succeeded,
            failed: self.counts.failed,
            skipped: self.counts.skipped,
            exit_code: i32::from(self.any_failed()),
        }
    }
}

pub(crate) fn count(rows: &[Row]) -> Counts {
    let mut c = Counts::default();
    for r in rows {
        match r.status {
            Status::Success => c.succeeded += 1,
            Status::Failure => c.failed += 1,
            Status::Skipped => c.skipped += 1,
        }
    }
    c
}

/// Remove summaries left by an earlier run, so a crash of this one can never
/// be read as that run's success.
pub(crate) fn remove_stale(output_dir: &Path) -> Result<()> {
    for name in [SUMMARY_CSV, SUMMARY_JSON] {
        let path = output_dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Write { path, source }),
        }
    }
    Ok(())
}

/// The CSV summary's columns, in order (as the original's).
const COLUMNS: [&str; 6] = trace_report::TRACELENS_SUMMARY_COLUMNS;

/// The rows of a run's CSV summary ([`SUMMARY_CSV`], as this crate and the
/// original analyzer write it), read back
/// ([`trace_report::read_tracelens_summary`]). `seconds` and `log` are the
/// JSON summary's only, so `None`.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let rows = trace_report::read_tracelens_summary(path)?;
    Ok(rows
        .into_iter()
        .map(|r| Row {
            trace_file: r.trace_file,
            kind: r.kind,
            tracelens_tool: r.tracelens_tool,
            status: r.status,
            output: r.output,
            detail: r.detail,
            seconds: None,
            log: None,
            cause: Cause::Other,
            collective_kernels: None,
        })
        .collect())
}

pub(crate) fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    atomic_write(path, |file| {
        let mut w = csv::Writer::from_writer(file);
        w.write_record(COLUMNS)?;
        for r in rows {
            w.write_record([
                &r.trace_file,
                &r.kind,
                &r.tracelens_tool,
                r.status.as_str(),
                &r.output,
                &r.detail,
            ])?;
        }
        w.flush()?;
        Ok(())
    })
}

pub(crate) fn write_json(path: &Path, summary: &Summary) -> Result<()> {
    atomic_write(path, |file| {
        serde_json::to_writer_pretty(&mut *file, &summary.written())
            .map_err(std::io::Error::from)?;
        file.write_all(b"\n")
    })
}

/// `tracelens_summary.json` as written: the [`Summary`], and the fields the
/// original madengine's file has at its top level, for the scripts that
/// read them (its analyzer's `succeeded`, `failed` and `skipped` counts, and
/// the `exit_code` its host wrapper added: 1 when a job failed).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Written<'a> {
    /// The version of this file's shape ([`DOCUMENT_VERSION`]); the original
    /// madengine's file has none.
    pub version: u32,
    /// The summary.
    #[serde(flatten)]
    pub summary: &'a Summary,
    /// `SUCCESS` rows (as [`Counts::succeeded`]).
    pub succeeded: usize,
    /// `FAILURE` rows.
    pub failed: usize,
    /// `SKIPPED` rows.
    pub skipped: usize,
    /// What the original's analyzer exited with: 1 when a job failed, else 0.
    pub exit_code: i32,
}

/// Write through a temporary file beside `path`, renamed into place.
pub(crate) fn atomic_write(
    path: &Path,
    fill: impl FnOnce(&mut fs::File) -> std::result::Result<(), std::io::Error>,
) -> Result<()> {
    trace_sanitize::write_atomic(path, fill)
        .map_err(|source| Error::Write { path: path.to_path_buf(), source })
}
