//! The one place xtask spawns processes.

use std::{ffi::OsString, path::Path};

/// `program args...` through duct, with the argv kept for error messages.
#[allow(clippy::disallowed_methods, reason = "this is xtask's process helper")]
pub(crate) fn cmd<I, S>(program: &str, args: I) -> duct::Expression
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    duct::cmd(program, args)
}

pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Run and fail with the command line when it fails.
pub(crate) fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let line = format!("{program} {}", args.join(" "));
    eprintln!("$ {line}");
    cmd(program, args).dir(dir).run().map_err(|e| format!("`{line}` failed: {e}"))?;
    Ok(())
}

pub(crate) fn ci(root: &Path) -> Result<(), String> {
    let cargo = cargo();
    run(root, &cargo, &["fmt", "--all", "--check"])?;
    run(
        root,
        &cargo,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    run(root, &cargo, &["test", "--workspace", "--locked"])
}
