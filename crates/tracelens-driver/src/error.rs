//! The crate's error type.

use std::{io, path::PathBuf};

/// What stops a TraceLens run before or outside its jobs. A job that fails
/// is not an error: it is a `FAILURE` row in the summary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The traces could not be discovered (the root is missing or unreadable).
    #[error(transparent)]
    Discover(#[from] trace_discover::Error),
    /// [`crate::Config::output_dir`] is, or holds, [`crate::Config::root`]:
    /// nothing would be found.
    #[error(transparent)]
    HoldsRun(#[from] trace_report::HoldsRun),
    /// [`crate::Config::cycle`] names a profiling cycle a directory does not
    /// hold, or one its traces' names do not tell apart.
    #[error(transparent)]
    Cycle(#[from] trace_report::CycleError),
    /// The interpreter could not be started.
    #[error("cannot run the Python interpreter {python}")]
    Python {
        /// The interpreter.
        python: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The interpreter ran the probe but its answer made no sense.
    #[error("the Python interpreter {python} did not answer the probe as expected: {output}")]
    Probe {
        /// The interpreter.
        python: PathBuf,
        /// What it printed.
        output: String,
    },
    /// `import TraceLens` fails with the chosen interpreter.
    #[error("{}", missing_message(python, detail, lowercase.as_deref()))]
    TraceLensMissing {
        /// The interpreter.
        python: PathBuf,
        /// The import error.
        detail: String,
        /// Where `import tracelens` (the unrelated PyPI project) was found, if it was.
        lowercase: Option<String>,
    },
    /// `--gpu-arch` names a platform this TraceLens does not know.
    #[error("TraceLens at {python} knows no GPU arch `{name}`; it knows: {}", known.join(", "))]
    UnknownArch {
        /// The name given.
        name: String,
        /// The names TraceLens knows.
        known: Vec<String>,
        /// The interpreter.
        python: PathBuf,
    },
    /// A file or directory the run needs could not be created or written.
    #[error("cannot write {path}")]
    Write {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A summary an earlier run wrote could not be read back
    /// ([`trace_report::SummaryCsvError`]).
    #[error(transparent)]
    Summary(#[from] trace_report::SummaryCsvError),
    /// A compare input is missing or unusable.
    #[error("{reason}: {}", path.display())]
    CompareInput {
        /// The report.
        path: PathBuf,
        /// What is wrong with it, and what to do.
        reason: String,
    },
    /// An extra TraceLens argument ([`crate::Config::extra_args`]) names an
    /// option the driver sets itself.
    #[error("cannot pass `{arg}` to TraceLens: the driver sets {option} itself ({managed})")]
    ExtraArg {
        /// The option as given (an abbreviation, maybe).
        arg: String,
        /// The TraceLens option it names.
        option: &'static str,
        /// Why the driver sets it.
        managed: Managed,
    },
    /// Bad compare arguments.
    #[error("{0}")]
    CompareArgs(String),
    /// The caller raised [`crate::Config::cancel`]. Reports finished before
    /// are kept; no summary is written.
    #[error(
        "interrupted: {finished} of {total} TraceLens jobs had finished; their reports and logs are in {}, and no summary was written",
        output_dir.display()
    )]
    Interrupted {
        /// Jobs that finished (succeeded or were skipped) before the stop.
        finished: usize,
        /// Jobs planned.
        total: usize,
        /// Where the finished reports are.
        output_dir: PathBuf,
    },
    /// Creating the TraceLens environment failed.
    #[error("{what} (TraceLens spec {spec})")]
    Setup {
        /// What failed, with the command.
        what: String,
        /// The spec, with credentials redacted.
        spec: String,
        /// The tail of the command's output, redacted.
        #[source]
        source: SetupFailure,
    },
}

/// The output of a failed setup step.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupFailure(pub String);

fn missing_message(python: &std::path::Path, detail: &str, lowercase: Option<&str>) -> String {
    let mut m = format!("TraceLens is not importable by {} ({detail})", python.display());
    if let Some(found) = lowercase {
        m.push_str(&format!(
            "; `import tracelens` (lower case) works ({found}): that is the PyPI package `tracelens`, \
             an unrelated project; TraceLens comes from github.com/AMD-AGI/TraceLens"
        ));
    }
    m
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the driver sets a TraceLens option itself ([`Error::ExtraArg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Managed {
    /// The trace a job reads: each one discovered under [`crate::Config::root`].
    Traces,
    /// The ranked traces a collective report reads: staged by the driver.
    Staging,
    /// Where a report goes: under [`crate::Config::output_dir`].
    Output,
    /// The world size: [`crate::Config::world_size`].
    WorldSize,
    /// The GPU arch: [`crate::Config::gpu_arch`], checked by name first.
    GpuArch,
}

impl std::fmt::Display for Managed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Managed::Traces => "each job reads a trace discovered under the root",
            Managed::Staging => "it stages the ranked traces for the collective report",
            Managed::Output => "reports go under the output directory",
            Managed::WorldSize => "the world size is a setting of the run",
            Managed::GpuArch => "the GPU arch is a setting of the run, checked by name first",
        })
    }
}
