//! The crate's error type.

use std::{io, path::PathBuf};

/// What can go wrong rendering or gathering.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The job file asks for something Kubernetes would refuse.
    #[error("invalid job: {0}")]
    Invalid(String),
    /// A file could not be read or written.
    #[error("cannot use {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// kubectl could not be started.
    #[error("cannot run `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// kubectl failed.
    #[error("`{command}` failed (exit {code}): {stderr}")]
    Kubectl {
        /// The command line.
        command: String,
        /// Its exit code.
        code: i32,
        /// Its stderr, trimmed.
        stderr: String,
    },
    /// kubectl printed something that is not the JSON object asked for.
    #[error("`{command}` printed what is not a JSON object")]
    Unexpected {
        /// The command line.
        command: String,
        /// The parser's error, with its line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The caller raised [`crate::Kubectl::cancel`] while kubectl ran; it
    /// was killed.
    #[error("`{command}` was stopped, as asked")]
    Cancelled {
        /// The command line.
        command: String,
    },
    /// The caller raised [`crate::Kubectl::cancel`] while gathering: the kubectl call in
    /// flight was stopped and nothing more was copied. Copies finished before
    /// are kept; a copy cut short leaves nothing behind.
    #[error("interrupted; the results copied so far are in {}, and no summary was written", results.display())]
    Interrupted {
        /// The local results directory.
        results: PathBuf,
    },
    /// kubectl ran longer than allowed and was killed.
    #[error("`{command}` did not finish within {seconds} s")]
    Timeout {
        /// The command line.
        command: String,
        /// The limit.
        seconds: f64,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
