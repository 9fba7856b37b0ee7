//! The record `madengine report summary` keeps beside a trace's CSVs.

use std::path::{Path, PathBuf};

use crate::{Error, Format, Result};

/// The file beside a trace's CSVs (`gpu_timeline.csv`, ...) that records
/// what else `madengine report summary` found of it: the trace's `--json`
/// object (rank, steps, GPUs, ...), and where the trace was.
pub const RECORD: &str = "summary.json";

/// What a [`RECORD`] holds that is read back: by `report diff`, which
/// compares a report as the trace it was made of; and by a later `report
/// summary`, which removes the reports of traces gone.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Record {
    /// The trace the report was made of, as `report summary` named it.
    pub trace: Option<PathBuf>,
    /// That trace's absolute path (symbolic links not followed: a link
    /// removed is a trace gone); absent in records written before it was
    /// kept.
    pub trace_absolute: Option<PathBuf>,
    /// What the trace was read as.
    pub format: Option<Format>,
    /// Its rank.
    pub rank: Option<u32>,
    /// The GPU its kernels all ran on ([`crate::Summary::gpu_index`]).
    pub gpu_index: Option<u32>,
    /// Its steps ([`crate::Steps::count`]).
    pub steps: Option<usize>,
    /// The GPU models it names ([`crate::Summary::gpus`]).
    pub gpus: Vec<String>,
    /// Why the report is stale, where a later run could not read its trace
    /// and kept this one (the last good report) rather than delete it.
    pub stale: Option<String>,
}

impl Record {
    /// The key [`Record::trace_absolute`] is written under.
    pub const TRACE_ABSOLUTE: &'static str = "trace_absolute";
    /// The key [`Record::stale`] is written under.
    pub const STALE: &'static str = "stale";

    /// The record of the report in `dir`; `None` when it has none
    /// (TraceLens' reports do not).
    pub fn read(dir: &Path) -> Result<Option<Record>> {
        let path = dir.join(RECORD);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::Record { path, detail: e.to_string() }),
        };
        serde_json::from_slice(&text).map(Some).map_err(|e| Error::Record {
            path: path.clone(),
            detail: format!("not the record `report summary` writes beside its CSVs ({e})"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{RECORD, Record};
    use crate::Format;

    #[test]
    fn a_record_reads_back_what_it_keeps_and_ignores_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Record::read(dir.path()).unwrap(), None, "no record");
        std::fs::write(
            dir.path().join(RECORD),
            r#"{"trace": "run/rank1.json", "trace_absolute": "/x/run/rank1.json",
                "rank": 1, "format": "kineto", "steps": 5, "gpus": ["H200"],
                "timeline": [["total_time", 1.0, 100.0]]}"#,
        )
        .unwrap();
        let record = Record::read(dir.path()).unwrap().unwrap();
        assert_eq!(record.trace.as_deref(), Some("run/rank1.json".as_ref()));
        assert_eq!(record.trace_absolute.as_deref(), Some("/x/run/rank1.json".as_ref()));
        assert_eq!((record.rank, record.steps, record.gpu_index), (Some(1), Some(5), None));
        assert_eq!(record.format, Some(Format::Kineto));
        assert_eq!(record.gpus, ["H200"]);
        // An older record, with fewer fields, still reads.
        std::fs::write(dir.path().join(RECORD), r#"{"rank": null, "steps": null}"#).unwrap();
        assert_eq!(Record::read(dir.path()).unwrap().unwrap(), Record::default());
        std::fs::write(dir.path().join(RECORD), "[1, 2]").unwrap();
        let err = Record::read(dir.path()).unwrap_err().to_string();
        let path = dir.path().join(RECORD);
        assert!(
            err.starts_with(&format!(
                "cannot read {}: not the record `report summary` writes",
                path.display()
            )),
            "{err}"
        );
    }
}
