//! The crate's error type.

use std::{io, path::PathBuf};

/// Why a discovery could not start. Problems below the root are not errors:
/// they are reported in [`crate::Discovery::problems`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The root cannot be read.
    #[error("cannot read the root directory {path}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The root is not a directory.
    #[error("{path} is not a directory")]
    NotADirectory {
        /// The root as given.
        path: PathBuf,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
