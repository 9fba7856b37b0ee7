//! The one place this crate starts processes: no shell, exact argv.

use std::ffi::OsString;

/// `argv[0] argv[1..]` as a duct expression.
#[allow(clippy::disallowed_methods, reason = "this is the crate's process helper")]
pub(crate) fn cmd(argv: &[OsString]) -> duct::Expression {
    duct::cmd(&argv[0], &argv[1..])
}

/// The command line as a user would type it (for logs and errors).
pub(crate) fn display(argv: &[OsString]) -> String {
    let quoter = shlex::Quoter::new().allow_nul(true);
    argv.iter()
        .map(|a| {
            let s = a.to_string_lossy();
            quoter.quote(&s).map_or_else(|_| s.to_string(), |q| q.into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}
