//! Installing dynolog from its release package (`madengine setup dynolog`).

use std::{ffi::OsString, path::Path};

use serde::Serialize;

use crate::{redact::redact as redact_url, session::SessionError};

/// The release the original pinned.
pub const DEFAULT_DEB_URL: &str = "https://github.com/facebookincubator/dynolog/releases/download/v0.5.0/dynolog_0.5.0-0-amd64.deb";

/// How setup ended.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Installed {
    /// `dynolog` and `dyno` were already on PATH.
    AlreadyThere,
    /// The package was installed.
    Installed,
}

#[allow(clippy::disallowed_methods, reason = "this crate's process helper for setup")]
fn cmd(argv: &[OsString]) -> duct::Expression {
    duct::cmd(&argv[0], &argv[1..])
}

fn on_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> bool {
    find_on_path(name, path_var).is_some()
}

/// Where `name` is in `path_var` (a PATH value): the first directory that
/// holds a file of that name.
pub fn find_on_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    std::env::split_paths(path_var?).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Install the package at `url` with dpkg unless `dynolog` and `dyno` are
/// already on `path_var` (the caller's PATH). `apt-get update` runs before
/// the dependency repair. The URL only ever appears redacted.
pub fn install_dynolog(
    url: &str,
    path_var: Option<&std::ffi::OsStr>,
    scratch: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Installed, SessionError> {
    if on_path("dynolog", path_var) && on_path("dyno", path_var) {
        return Ok(Installed::AlreadyThere);
    }
    let shown = redact_url(url);
    let fail = |step: String, output: String| SessionError::Install {
        step,
        detail: redact_text(&output, url, &shown),
    };
    if std::env::consts::ARCH != "x86_64" {
        return Err(fail(
            "dynolog setup".into(),
            "the dynolog release package is for x86_64 only; build dynolog from source, or capture with torch.profiler in the model".into(),
        ));
    }
    let deb = scratch.join("dynolog.deb");
    progress(&format!("downloading {shown}"));
    let run = |argv: Vec<OsString>| -> Result<(), String> {
        match cmd(&argv).stderr_to_stdout().stdout_capture().stdin_null().unchecked().run() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stdout).into_owned()),
            Err(e) => Err(e.to_string()),
        }
    };
    run(vec!["curl".into(), "-fsSL".into(), "-o".into(), deb.clone().into(), url.into()])
        .map_err(|out| fail(format!("curl -fsSL -o {} {shown}", deb.display()), out))?;
    progress("installing the package (dpkg -i)");
    if run(vec!["dpkg".into(), "-i".into(), deb.clone().into()]).is_err() {
        progress("repairing dependencies (apt-get update, apt-get install -f)");
        run(vec!["apt-get".into(), "update".into(), "-qq".into()])
            .map_err(|out| fail("apt-get update -qq".into(), out))?;
        // The package's systemd unit fails in containers: tolerated, as the original.
        let _ =
            run(vec!["apt-get".into(), "install".into(), "-f".into(), "-y".into(), "-qq".into()]);
    }
    if !(on_path("dynolog", path_var) && on_path("dyno", path_var)) {
        return Err(fail(
            "dynolog setup".into(),
            "the package installed, but dynolog or dyno is still not on PATH".into(),
        ));
    }
    Ok(Installed::Installed)
}

fn redact_text(text: &str, secret: &str, shown: &str) -> String {
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    tail[tail.len().saturating_sub(8)..].join("\n").replace(secret, shown)
}
