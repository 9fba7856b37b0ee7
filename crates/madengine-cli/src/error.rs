//! The binary's error type: wraps each crate's errors and classifies them
//! onto the documented exit codes.

use std::{io, process::ExitCode};

/// The documented exit codes (see `madengine --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Success = 0,
    /// The command ran and found problems: a trace needs repair, a
    /// TraceLens job failed.
    Findings = 1,
    /// Bad arguments (clap reports its own with this code too).
    Usage = 2,
    /// A missing, unreadable or corrupt input, or a failed write.
    Io = 3,
    /// TraceLens (or its interpreter) is missing.
    TraceLensMissing = 4,
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
    #[error(transparent)]
    Tracelens(#[from] tracelens_driver::Error),
    #[error("{0}")]
    Usage(String),
    #[error("failed to write to standard output")]
    Stdout(#[source] io::Error),
}

impl Error {
    pub(crate) fn status(&self) -> Status {
        use tracelens_driver::Error as T;
        match self {
            Error::Usage(_) => Status::Usage,
            Error::Tracelens(T::TraceLensMissing { .. } | T::Python { .. } | T::Probe { .. }) => {
                Status::TraceLensMissing
            }
            Error::Tracelens(T::UnknownArch { .. } | T::CompareArgs(_)) => Status::Usage,
            Error::Sanitize(_) | Error::Discover(_) | Error::Tracelens(_) | Error::Stdout(_) => {
                Status::Io
            }
        }
    }

    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}
