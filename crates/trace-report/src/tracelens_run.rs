//! A TraceLens run's summary (`tracelens_summary.csv`), read back: which
//! of the report directories in its output directory are that run's, and
//! which trace each was made of ([`this_runs_reports`]). The TraceLens
//! driver writes it; a comparison of report directories reads it.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The CSV summary's file name.
pub const TRACELENS_SUMMARY_CSV: &str = "tracelens_summary.csv";
/// The JSON summary's file name (it names the run's root).
pub const TRACELENS_SUMMARY_JSON: &str = "tracelens_summary.json";

/// The CSV summary's columns, in order (as the original's).
pub const TRACELENS_SUMMARY_COLUMNS: [&str; 6] =
    ["trace_file", "kind", "tracelens_tool", "status", "output", "detail"];

/// How a TraceLens job (or a skipped artifact) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum JobStatus {
    /// TraceLens wrote its report.
    Success,
    /// Nothing to report (no GPU activity, an unsupported format, a collective
    /// that cannot be built); never a failure.
    Skipped,
    /// TraceLens failed, crashed or timed out.
    Failure,
}

impl JobStatus {
    /// `SUCCESS`, `SKIPPED`, `FAILURE`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Success => "SUCCESS",
            JobStatus::Skipped => "SKIPPED",
            JobStatus::Failure => "FAILURE",
        }
    }

    /// The status [`JobStatus::as_str`] writes as `text`.
    pub fn parse(text: &str) -> Option<JobStatus> {
        [JobStatus::Success, JobStatus::Skipped, JobStatus::Failure]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One row of a TraceLens run's CSV summary, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryRow {
    /// The original trace relative to the root (or a label such as `2 per-rank traces`).
    pub trace_file: String,
    /// `pytorch`, `rocprof_json`, `pftrace` or `unsupported`.
    pub kind: String,
    /// The TraceLens entry point (empty for unsupported artifacts).
    pub tracelens_tool: String,
    /// How it ended.
    pub status: JobStatus,
    /// The report written (relative to the root when inside it).
    pub output: String,
    /// Why it was skipped or how it failed.
    pub detail: String,
}

/// Why a TraceLens run's summary could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum SummaryCsvError {
    /// It could not be read as CSV.
    #[error("cannot read {path}")]
    Read {
        /// The summary.
        path: PathBuf,
        /// The cause, with its line.
        #[source]
        source: csv::Error,
    },
    /// It is CSV, but not a run's summary.
    #[error("{path} is not a TraceLens run summary: {why}")]
    NotASummary {
        /// The summary.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// The rows of a TraceLens run's CSV summary ([`TRACELENS_SUMMARY_CSV`], as
/// the TraceLens driver and the original analyzer write it), read back:
/// what a later command needs to tell this run's reports from those an
/// earlier run left in the same output directory (which are never removed).
pub fn read_tracelens_summary(path: &Path) -> Result<Vec<SummaryRow>, SummaryCsvError> {
    let csv = |source| SummaryCsvError::Read { path: path.to_path_buf(), source };
    let bad = |why: String| SummaryCsvError::NotASummary { path: path.to_path_buf(), why };
    let mut reader = csv::Reader::from_path(path).map_err(csv)?;
    let headers = reader.headers().map_err(csv)?.clone();
    let columns = TRACELENS_SUMMARY_COLUMNS;
    let at: Vec<usize> = columns
        .iter()
        .map(|c| headers.iter().position(|h| h == *c))
        .collect::<Option<_>>()
        .ok_or_else(|| bad(format!("its columns are not {}", columns.join(", "))))?;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv)?;
        let field = |i: usize| record.get(at[i]).unwrap_or_default().to_string();
        let status = JobStatus::parse(&field(3)).ok_or_else(|| {
            let line = record.position().map_or(0, |p| p.line());
            bad(format!("line {line}: status `{}` is none of SUCCESS, SKIPPED, FAILURE", field(3)))
        })?;
        rows.push(SummaryRow {
            trace_file: field(0),
            kind: field(1),
            tracelens_tool: field(2),
            status,
            output: field(4),
            detail: field(5),
        });
    }
    Ok(rows)
}

/// The reports of one run among those in its output directory
/// ([`this_runs_reports`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReports {
    /// The run's [`TRACELENS_SUMMARY_CSV`], which says which they are.
    pub summary: PathBuf,
    /// The reports its `SUCCESS` rows name, each with the trace it was made
    /// of: as the summary names it, under the root its
    /// [`TRACELENS_SUMMARY_JSON`] names where it does.
    pub kept: Vec<(PathBuf, PathBuf)>,
    /// The reports it does not name: an earlier run's.
    pub left_out: Vec<PathBuf>,
}

/// Of `reports`, report directories in `dir` (a TraceLens run's output
/// directory), those of the run its [`TRACELENS_SUMMARY_CSV`] describes: a
/// run never removes the reports an earlier one left there (of a trace gone
/// since, a rank the run no longer has), and a later command must not take
/// them for this run's. `None` when `dir` has no summary, or one whose
/// `SUCCESS` rows name none of them (the original analyzer's name the
/// output directory): all are the run's, as far as can be told.
pub fn this_runs_reports(
    dir: &Path,
    reports: &[PathBuf],
) -> Result<Option<RunReports>, SummaryCsvError> {
    let summary = dir.join(TRACELENS_SUMMARY_CSV);
    if !summary.is_file() {
        return Ok(None);
    }
    let rows = read_tracelens_summary(&summary)?;
    let root: Option<PathBuf> = std::fs::read(dir.join(TRACELENS_SUMMARY_JSON))
        .ok()
        .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
        .and_then(|json| Some(PathBuf::from(json["root"].as_str()?)));
    let named: std::collections::HashMap<&std::ffi::OsStr, &str> = rows
        .iter()
        .filter(|r| r.status == JobStatus::Success)
        .filter_map(|r| Some((Path::new(&r.output).file_name()?, r.trace_file.as_str())))
        .collect();
    let trace_of = |report: &PathBuf| named.get(report.file_name()?).copied();
    if !reports.iter().any(|r| trace_of(r).is_some()) {
        return Ok(None);
    }
    let under_root = |trace: &str| match &root {
        Some(root) => root.join(trace),
        None => PathBuf::from(trace),
    };
    let (mut kept, mut left_out) = (Vec::new(), Vec::new());
    for report in reports {
        match trace_of(report) {
            Some(trace) => kept.push((report.clone(), under_root(trace))),
            None => left_out.push(report.clone()),
        }
    }
    Ok(Some(RunReports { summary, kept, left_out }))
}
