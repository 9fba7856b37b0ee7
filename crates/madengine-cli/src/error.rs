//! The binary's error type: wraps each crate's errors and classifies them
//! onto the documented exit codes.

use std::{io, process::ExitCode};

/// The documented exit codes (see `madengine --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Success = 0,
    /// The command ran and found problems (e.g. `trace sanitize --check`).
    Findings = 1,
    // 2: bad arguments, reported by clap itself.
    /// A missing, unreadable or corrupt input, or a failed write.
    Io = 3,
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s as u8)
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Sanitize(#[from] trace_sanitize::Error),
    #[error(transparent)]
    Discover(#[from] trace_discover::Error),
    #[error("failed to write to standard output")]
    Stdout(#[source] io::Error),
}

impl Error {
    pub(crate) fn status(&self) -> Status {
        match self {
            Error::Sanitize(_) | Error::Discover(_) | Error::Stdout(_) => Status::Io,
        }
    }

    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}
