//! `TraceLens_compare_perf_reports_pytorch` over two or more reports.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use serde::Serialize;

use crate::{
    Error, Result,
    cmd::{cmd, display},
    python::Probe,
    summary::Status,
    tool::Tool,
};

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// Reports written by the PyTorch perf report: `.xlsx` files or CSV directories.
    pub reports: Vec<PathBuf>,
    /// The comparison workbook (`-o`).
    pub output: PathBuf,
    /// One tag per report (`--names`), or none for TraceLens' defaults.
    pub names: Vec<String>,
}

/// How the comparison went.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompareOutcome {
    /// [`crate::DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The reports compared.
    #[serde(serialize_with = "trace_discover::lossy::paths")]
    pub reports: Vec<PathBuf>,
    /// The workbook written.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub output: PathBuf,
    /// `SUCCESS` or `FAILURE`.
    pub status: Status,
    /// TraceLens' whole output on failure, else empty.
    pub detail: String,
    /// The command that ran.
    pub command: String,
}

impl CompareConfig {
    /// The checks that need no interpreter: at least two reports, one name
    /// per report (or none), and every report present. Run them before
    /// looking for TraceLens, so a typo is named first.
    pub fn validate(&self) -> Result<()> {
        if self.reports.len() < 2 {
            return Err(Error::CompareArgs(format!(
                "a comparison needs at least two reports, {} given",
                self.reports.len()
            )));
        }
        if !self.names.is_empty() && self.names.len() != self.reports.len() {
            return Err(Error::CompareArgs(format!(
                "{} names for {} reports: give one name per report, or none",
                self.names.len(),
                self.reports.len()
            )));
        }
        for report in &self.reports {
            if !report.exists() {
                return Err(Error::CompareInput {
                    path: report.clone(),
                    reason: "no such report".into(),
                });
            }
        }
        let tags = self.tags();
        for (i, tag) in tags.iter().enumerate() {
            let Some(j) = tags[..i].iter().position(|t| t == tag) else { continue };
            let (a, b) = (self.reports[j].display(), self.reports[i].display());
            return Err(Error::CompareArgs(match self.names.is_empty() {
                true => {
                    let suggested = suggested_names(&self.reports)
                        .map(|names| format!(", e.g. `--names {}`", names.join(" ")))
                        .unwrap_or_default();
                    format!(
                        "{a} and {b} would both be tagged `{tag}` (TraceLens tags each report by \
                         its file or directory name, without extension, and needs the tags \
                         unique): name every report with --names{suggested}"
                    )
                }
                false => {
                    format!("`{tag}` is given twice in --names: TraceLens needs the tags unique")
                }
            }));
        }
        Ok(())
    }

    /// The tag TraceLens gives each report: its `--names` entry, else its
    /// file or directory name without extension (Python's `splitext`).
    pub fn tags(&self) -> Vec<String> {
        if !self.names.is_empty() {
            return self.names.clone();
        }
        self.reports.iter().map(|r| default_tag(r)).collect()
    }
}

/// TraceLens' default tag of a report: its last path component without the
/// extension (`base/x_csv` is `x_csv`, `a.xlsx` is `a`).
fn default_tag(report: &Path) -> String {
    let name = report.file_name().unwrap_or(report.as_os_str()).to_string_lossy();
    match name.rfind('.') {
        // Python's splitext: a leading dot starts no extension.
        Some(dot) if name[..dot].chars().any(|c| c != '.') => name[..dot].to_string(),
        _ => name.into_owned(),
    }
}

/// Names that tell the reports apart by the directories they are in (the
/// nearest that differ), when there are such.
fn suggested_names(reports: &[PathBuf]) -> Option<Vec<String>> {
    let absolute: Vec<PathBuf> =
        reports.iter().map(|r| std::path::absolute(r).unwrap_or_else(|_| r.clone())).collect();
    for up in 1..8 {
        let names: Vec<String> = absolute
            .iter()
            .map(|r| {
                r.ancestors()
                    .nth(up)
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let unique =
            names.iter().enumerate().all(|(i, n)| !n.is_empty() && !names[..i].contains(n));
        if unique && names.iter().all(|n| !n.chars().any(char::is_whitespace)) {
            return Some(names);
        }
    }
    None
}

/// Check the inputs before TraceLens sees them: at least two existing
/// reports, as many names as reports, and a `kernel_summary` sheet in the
/// first one (TraceLens fails with a ValueError otherwise).
pub(crate) fn check_compare_inputs(config: &CompareConfig, probe: &Probe) -> Result<()> {
    config.validate()?;
    let first = &config.reports[0];
    if !has_kernel_summary(first, probe)? {
        return Err(Error::CompareInput {
            path: first.clone(),
            reason: "the first report has no kernel_summary sheet, which TraceLens' comparison requires; \
                     regenerate it with TraceLens' --enable_kernel_summary (the reports this driver \
                     writes have it)"
                .into(),
        });
    }
    Ok(())
}

fn has_kernel_summary(report: &std::path::Path, probe: &Probe) -> Result<bool> {
    if report.is_dir() {
        return Ok(report.join("kernel_summary.csv").is_file());
    }
    // An .xlsx is a zip: list its sheets with the interpreter's zipfile
    // (standard library), without needing openpyxl.
    let script = "import re, sys, zipfile\n\
                  names = re.findall(r'<sheet [^>]*name=\"([^\"]+)\"', zipfile.ZipFile(sys.argv[1]).read('xl/workbook.xml').decode('utf-8', 'replace'))\n\
                  print('\\n'.join(names))";
    let argv: Vec<OsString> =
        vec![probe.python.clone().into(), "-c".into(), script.into(), report.into()];
    let out = cmd(&argv)
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|source| Error::Python { python: probe.python.clone(), source })?;
    if !out.status.success() {
        return Err(Error::CompareInput {
            path: report.to_path_buf(),
            reason: format!(
                "not a readable .xlsx workbook ({})",
                String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == "kernel_summary"))
}

/// Run the comparison, its inputs checked first.
pub fn compare(config: &CompareConfig, probe: &Probe) -> Result<CompareOutcome> {
    probe.require_tracelens()?;
    check_compare_inputs(config, probe)?;
    let mut args: Vec<OsString> = config.reports.iter().map(Into::into).collect();
    args.extend(["-o".into(), config.output.clone().into()]);
    if !config.names.is_empty() {
        args.push("--names".into());
        args.extend(config.names.iter().map(Into::into));
    }
    let argv = probe.command(Tool::Compare, &args);
    let out = cmd(&argv)
        .stderr_to_stdout()
        .stdout_capture()
        .stdin_null()
        .unchecked()
        .run()
        .map_err(|source| Error::Python { python: probe.python.clone(), source })?;
    let ok = out.status.success();
    Ok(CompareOutcome {
        version: crate::DOCUMENT_VERSION,
        reports: config.reports.clone(),
        output: config.output.clone(),
        status: if ok { Status::Success } else { Status::Failure },
        detail: if ok {
            String::new()
        } else {
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        },
        command: display(&argv),
    })
}
