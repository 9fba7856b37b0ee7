//! The one place this crate starts processes: no shell, exact argv.

use std::ffi::OsString;

/// `argv[0] argv[1..]` as a duct expression.
#[allow(clippy::disallowed_methods, reason = "this is the crate's process helper")]
pub(crate) fn cmd(argv: &[OsString]) -> duct::Expression {
    duct::cmd(&argv[0], &argv[1..])
}

/// The command line as a user would type it (for logs and errors).
pub(crate) fn display(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                format!("'{}'", s.replace('\'', r"'\''"))
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
