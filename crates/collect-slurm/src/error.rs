//! The crate's error type.

use std::{io, path::PathBuf};

/// What can go wrong rendering, submitting, following or gathering a job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The job spec cannot be rendered safely.
    #[error("invalid job: {0}")]
    Spec(String),
    /// A SLURM command could not be started (is SLURM installed here?).
    #[error("cannot run `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A SLURM command failed; `stderr` says why (e.g. sbatch's rejection).
    #[error("`{command}` failed (exit {code}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit code.
        code: i32,
        /// What it printed on stderr, trimmed.
        stderr: String,
    },
    /// A SLURM command answered something unexpected.
    #[error("`{command}` printed something unexpected: {output}")]
    Unexpected {
        /// The command line.
        command: String,
        /// The output.
        output: String,
    },
    /// A file or directory could not be read or written.
    #[error("cannot use {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Results for this job are already there; they are never overwritten.
    #[error("{path} already exists, and results are never overwritten")]
    Exists {
        /// The path.
        path: PathBuf,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
