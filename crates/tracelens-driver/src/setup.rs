//! Creating the isolated TraceLens environment (`madengine setup tracelens`).

use std::{
    ffi::OsString,
    fs,
    path::{Path, PathBuf},
};

use serde::Serialize;

use dynolog_client::redact;

use crate::{Error, Result, cmd::cmd, error::SetupFailure, python::probe};

/// TraceLens at the commit the project's reference was written against.
pub const DEFAULT_SPEC: &str =
    "git+https://github.com/AMD-AGI/TraceLens@171dd74721ca1ec45709e5805b68ae1f65e27811";

/// Where the environment goes unless told otherwise.
pub const DEFAULT_VENV: &str = "/opt/madengine-tracelens-venv";

/// What to install, where, with which base interpreter.
#[derive(Debug, Clone)]
pub struct SetupConfig {
    /// The virtual environment (created without system site-packages).
    pub venv: PathBuf,
    /// What `pip install` gets: a git URL, a local path or a wheel. It may
    /// carry a token: it is only ever shown redacted.
    pub spec: String,
    /// The interpreter that creates the environment.
    pub base_python: PathBuf,
}

/// How setup ended.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetupOutcome {
    /// [`crate::DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The environment.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub venv: PathBuf,
    /// Its interpreter: what `--python` or `TRACELENS_VENV` should point at.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub python: PathBuf,
    /// False when TraceLens was already importable and nothing was done.
    pub installed: bool,
    /// Whether this run created the environment.
    pub created_venv: bool,
    /// TraceLens' version.
    pub tracelens_version: Option<String>,
    /// The spec, redacted.
    pub spec: String,
}

/// Create the environment if needed, install the spec, verify `import TraceLens`.
/// A failed install removes the environment only if this run created it.
pub fn setup(config: &SetupConfig, progress: &mut dyn FnMut(&str)) -> Result<SetupOutcome> {
    let spec = redact(&config.spec);
    let python = config.venv.join("bin/python3");
    if python.is_file()
        && let Ok(p) = probe(&python)
        && let Some(tl) = p.tracelens
    {
        return Ok(SetupOutcome {
            venv: config.venv.clone(),
            python,
            installed: false,
            created_venv: false,
            version: crate::DOCUMENT_VERSION,
            tracelens_version: tl.version,
            spec,
        });
    }
    let created = !python.is_file();
    let fail = |what: String, output: String| Error::Setup {
        what,
        spec: spec.clone(),
        source: SetupFailure(tail(&redact(&output))),
    };
    if created {
        progress(&format!("creating the virtual environment {}", config.venv.display()));
        let argv: Vec<OsString> = vec![
            config.base_python.clone().into(),
            "-m".into(),
            "venv".into(),
            config.venv.clone().into(),
        ];
        if let Err(output) = run(&argv) {
            remove_created(&config.venv, created);
            return Err(fail(
                format!(
                    "`{} -m venv {}` failed",
                    config.base_python.display(),
                    config.venv.display()
                ),
                output,
            ));
        }
    }
    progress(&format!("installing {spec} (this can take a few minutes)"));
    let argv: Vec<OsString> = vec![
        python.clone().into(),
        "-m".into(),
        "pip".into(),
        "install".into(),
        "--disable-pip-version-check".into(),
        config.spec.clone().into(),
    ];
    if let Err(output) = run(&argv) {
        remove_created(&config.venv, created);
        return Err(fail(format!("`{} -m pip install <spec>` failed", python.display()), output));
    }
    let probed = probe(&python)?;
    let Some(tl) = probed.tracelens else {
        remove_created(&config.venv, created);
        return Err(fail(
            "the install finished but `import TraceLens` still fails".into(),
            probed.import_error.unwrap_or_default(),
        ));
    };
    Ok(SetupOutcome {
        venv: config.venv.clone(),
        python,
        installed: true,
        created_venv: created,
        version: crate::DOCUMENT_VERSION,
        tracelens_version: tl.version,
        spec,
    })
}

fn run(argv: &[OsString]) -> std::result::Result<(), String> {
    match cmd(argv).stderr_to_stdout().stdout_capture().stdin_null().unchecked().run() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stdout).into_owned()),
        Err(e) => Err(e.to_string()),
    }
}

fn remove_created(venv: &Path, created: bool) {
    if created {
        let _ = fs::remove_dir_all(venv);
    }
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}
