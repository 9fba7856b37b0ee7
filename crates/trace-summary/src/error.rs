//! The crate's error type.

use std::{io, path::PathBuf};

/// Why a trace could not be summarized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace could not be opened.
    #[error("cannot open {path}")]
    Open {
        /// The trace.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The trace is not a Chrome trace JSON (after sanitizing).
    #[error("{path} is not a readable Chrome trace: {detail}")]
    Parse {
        /// The trace.
        path: PathBuf,
        /// The parser's message, with line and column.
        detail: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
