//! The interpreter that runs TraceLens, and what it has.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::{Error, Result, cmd::cmd, tool::Tool};

/// Pick the interpreter: `explicit`, else `<venv>/bin/python3` when it
/// exists, else `python3`. The caller reads `TRACELENS_VENV`; this crate
/// reads no environment.
pub fn resolve_interpreter(explicit: Option<&Path>, venv: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    if let Some(venv) = venv.filter(|v| !v.as_os_str().is_empty()) {
        let python = venv.join("bin/python3");
        if python.is_file() {
            return python;
        }
    }
    PathBuf::from("python3")
}

/// What the interpreter reported about itself and TraceLens.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Probe {
    /// The interpreter as chosen.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub python: PathBuf,
    /// Its `sys.executable`.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub executable: PathBuf,
    /// TraceLens, when `import TraceLens` works.
    pub tracelens: Option<TraceLens>,
    /// Why `import TraceLens` failed, when it did.
    pub import_error: Option<String>,
    /// Where `import tracelens` (lower case, an unrelated PyPI project) was found.
    pub lowercase_tracelens: Option<String>,
}

/// An importable TraceLens.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct TraceLens {
    /// Its distribution version, if installed with metadata.
    pub version: Option<String>,
    /// The package directory.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub location: PathBuf,
    /// The `--gpu_arch_platform` names it ships (`Agent/Analysis/utils/arch/*.json`).
    pub archs: Vec<String>,
    /// Whether `TL_EXTENSION` is set in its environment (extensions may add
    /// platforms that cannot be listed).
    pub extension: bool,
}

#[derive(Deserialize)]
struct Answer {
    executable: String,
    tracelens: Option<String>,
    version: Option<String>,
    archs: Option<Vec<String>>,
    extension: bool,
    error: Option<String>,
    lowercase: Option<String>,
}

const PROBE: &str = r#"
import glob, json, os, sys
out = {"executable": sys.executable, "tracelens": None, "version": None, "archs": None,
       "extension": bool(os.environ.get("TL_EXTENSION")), "error": None, "lowercase": None}
try:
    import TraceLens
    where = os.path.dirname(os.path.abspath(TraceLens.__file__))
    out["tracelens"] = where
    try:
        from importlib import metadata
        out["version"] = metadata.version("TraceLens")
    except Exception:
        pass
    arch = os.path.join(where, "Agent", "Analysis", "utils", "arch", "*.json")
    out["archs"] = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(arch))
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    try:
        import tracelens
        out["lowercase"] = str(getattr(tracelens, "__file__", None) or "installed")
    except Exception:
        pass
print("MADENGINE-PROBE " + json.dumps(out))
"#;

/// Ask `python` about itself and TraceLens (one short run).
pub fn probe(python: &Path) -> Result<Probe> {
    let argv: Vec<OsString> = vec![python.into(), "-c".into(), PROBE.into()];
    let output = cmd(&argv)
        .stderr_to_stdout()
        .stdout_capture()
        .stdin_null()
        .unchecked()
        .run()
        .map_err(|source| Error::Python { python: python.to_path_buf(), source })?;
    let text = String::from_utf8_lossy(&output.stdout);
    let answer = text
        .lines()
        .find_map(|l| l.strip_prefix("MADENGINE-PROBE "))
        .and_then(|json| serde_json::from_str::<Answer>(json).ok())
        .ok_or_else(|| Error::Probe {
            python: python.to_path_buf(),
            output: text.trim().to_string(),
        })?;
    Ok(Probe {
        python: python.to_path_buf(),
        executable: PathBuf::from(answer.executable),
        tracelens: answer.tracelens.map(|location| TraceLens {
            version: answer.version,
            location: PathBuf::from(location),
            archs: answer.archs.unwrap_or_default(),
            extension: answer.extension,
        }),
        import_error: answer.error,
        lowercase_tracelens: answer.lowercase,
    })
}

impl Probe {
    /// TraceLens, or the error that says how to install it.
    pub fn require_tracelens(&self) -> Result<&TraceLens> {
        self.tracelens.as_ref().ok_or_else(|| Error::TraceLensMissing {
            python: self.python.clone(),
            detail: self.import_error.clone().unwrap_or_else(|| "import failed".into()),
            lowercase: self.lowercase_tracelens.clone(),
        })
    }

    /// Check a `--gpu-arch` name against the platforms TraceLens ships.
    /// With `TL_EXTENSION` set, unknown names are let through (extensions
    /// may provide them).
    pub fn check_arch(&self, name: &str) -> Result<()> {
        let tl = self.require_tracelens()?;
        if tl.archs.iter().any(|a| a == name) || tl.extension {
            return Ok(());
        }
        Err(Error::UnknownArch {
            name: name.to_string(),
            known: tl.archs.clone(),
            python: self.python.clone(),
        })
    }

    /// The argv that runs `tool` with `args`: the console script beside the
    /// interpreter when it is an executable file, else `python -c` importing
    /// its module. PATH is never searched.
    pub fn command(&self, tool: Tool, args: &[OsString]) -> Vec<OsString> {
        let dir = if self.python.parent().is_some_and(|p| !p.as_os_str().is_empty()) {
            std::path::absolute(&self.python).ok().and_then(|p| p.parent().map(Path::to_path_buf))
        } else {
            self.executable.parent().map(Path::to_path_buf)
        };
        let mut argv: Vec<OsString> =
            match dir.map(|d| d.join(tool.script())).filter(|s| is_executable(s)) {
                Some(script) => vec![script.into()],
                None => vec![
                    self.python.clone().into(),
                    "-c".into(),
                    format!("import sys; from {} import main; sys.exit(main())", tool.module())
                        .into(),
                ],
            };
        argv.extend(args.iter().cloned());
        argv
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}
