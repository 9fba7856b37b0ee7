//! Integration tests of tracelens-driver, against the TraceLens stand-in.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod public;
mod runs;

use test_support::{edit, public as public_dir, standin};

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde_json::Value;
use tracelens_driver::{Config, Summary};

/// A run directory in a temp dir, an output directory beside it, and the
/// stand-in's call log.
/// The traceconv test double (`tests/fixtures/traceconv`).
pub(crate) fn traceconv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traceconv")
}

pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) config: Config,
}

impl Case {
    pub(crate) fn new() -> Case {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("run");
        fs::create_dir_all(&root).unwrap();
        let mut config = Config::new(&root, dir.path(), 2);
        config.output_dir = dir.path().join("out");
        config.python = standin::Standin::python(&standin::standin().scripts);
        fs::create_dir_all(&config.output_dir).unwrap();
        let case = Case { dir, config };
        case.control(serde_json::json!({}));
        case
    }

    pub(crate) fn root(&self) -> &Path {
        &self.config.root
    }

    /// Stand-in controls (log, fail, crash, memory_error, sleep); the log is always on.
    pub(crate) fn control(&self, mut value: Value) {
        value["log"] = Value::from(self.dir.path().join("calls.jsonl").display().to_string());
        fs::write(self.config.output_dir.join("standin-control.json"), value.to_string()).unwrap();
    }

    pub(crate) fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }

    pub(crate) fn fixture(&self, rel: &str, from: &str) -> PathBuf {
        let bytes = fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run").join(from),
        )
        .unwrap();
        self.write(rel, bytes)
    }

    pub(crate) fn run(&self) -> Summary {
        tracelens_driver::run(&self.config, &mut |_| {}).unwrap()
    }

    /// The stand-in's calls, paths made stable.
    pub(crate) fn calls(&self) -> Vec<String> {
        let text = fs::read_to_string(self.dir.path().join("calls.jsonl")).unwrap_or_default();
        let mut lines: Vec<String> = text.lines().map(|l| self.redact(l)).collect();
        lines.sort();
        lines
    }

    /// Whether the stand-in was called with `tool` (a TraceLens entry point).
    pub(crate) fn ran(&self, tool: &str) -> bool {
        self.calls().iter().any(|c| c.contains(tool))
    }

    pub(crate) fn redact(&self, text: &str) -> String {
        let tmp = self.dir.path().display().to_string();
        let standin = standin::standin().scripts.parent().unwrap().display().to_string();
        let mut out = text.replace(&tmp, "[TMP]").replace(&standin, "[STANDIN]");
        // Scratch dirs: [TMP]/madengine-tracelens-XXXXXX
        while let Some(at) = out.find("madengine-tracelens-") {
            let end = at + "madengine-tracelens-".len() + 6;
            out.replace_range(at..end.min(out.len()), "[SCRATCH]");
        }
        out
    }
}

/// Rows as `STATUS kind trace_file | detail` lines.
pub(crate) fn rows(summary: &Summary) -> Vec<String> {
    summary
        .results
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} | {}",
                r.status.as_str(),
                r.kind,
                r.trace_file,
                r.tracelens_tool,
                r.detail
            )
        })
        .collect()
}
