//! The binary's error type: wraps each crate's errors and classifies them
//! onto the documented exit codes.

use std::{io, process::ExitCode};

/// The documented exit codes (see `madengine --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Success,
    /// The command ran and found problems: a trace needs repair, a
    /// TraceLens job failed, no process matched a trace request.
    Findings,
    /// Bad arguments (clap reports its own with this code too).
    Usage,
    /// A missing, unreadable or corrupt input, or a failed write.
    Io,
    /// TraceLens (or its interpreter) is missing.
    TraceLensMissing,
    /// The dynolog daemon cannot be reached or refused the request.
    Daemon,
    /// `madengine profile`: the workload's own exit code.
    Workload(i32),
    /// Stopped by Ctrl-C (130, as shells report SIGINT).
    Interrupted,
}

/// A report set that could not be written is an output that could not be:
/// said as one.
impl From<trace_report::SetError> for Error {
    fn from(e: trace_report::SetError) -> Error {
        match e {
            trace_report::SetError::Write { path, source } => Error::Io { path, source },
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        let code = match s {
            Status::Success => 0,
            Status::Findings => 1,
            Status::Usage => 2,
            Status::Io => 3,
            Status::TraceLensMissing => 4,
            Status::Daemon => 5,
            Status::Workload(c) => c.clamp(0, 255) as u8,
            Status::Interrupted => crate::interrupt::EXIT_CODE,
        };
        ExitCode::from(code)
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
    #[error(transparent)]
    Dynolog(#[from] dynolog_client::Error),
    #[error(transparent)]
    Session(#[from] dynolog_client::SessionError),
    #[error(transparent)]
    Slurm(#[from] collect_slurm::Error),
    #[error(transparent)]
    K8s(#[from] collect_k8s::Error),
    #[error(transparent)]
    Summary(#[from] trace_summary::Error),
    #[error(transparent)]
    Arch(#[from] trace_summary::ArchError),
    #[error(transparent)]
    Record(#[from] trace_report::RecordError),
    #[error("cannot write {path}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot make the workbook {path}")]
    Workbook {
        path: std::path::PathBuf,
        #[source]
        source: rust_xlsxwriter::XlsxError,
    },
    #[error("cannot read {path}: {detail}")]
    Read { path: std::path::PathBuf, detail: String },
    #[error("{0}")]
    Usage(String),
    #[error("failed to write to standard output")]
    Stdout(#[source] io::Error),
}

/// How to install TraceLens where `import TraceLens` fails.
const INSTALL_TRACELENS: &str = "install TraceLens into an isolated virtual environment: \
`madengine setup tracelens`, or `python3 -m venv /opt/madengine-tracelens-venv && \
/opt/madengine-tracelens-venv/bin/pip install git+https://github.com/AMD-AGI/TraceLens`; then point \
--python at its interpreter or set TRACELENS_VENV=/opt/madengine-tracelens-venv";

impl Error {
    pub(crate) fn status(&self) -> Status {
        use tracelens_driver::Error as T;
        match self {
            Error::Usage(_) => Status::Usage,
            Error::Tracelens(T::TraceLensMissing { .. } | T::Python { .. } | T::Probe { .. }) => {
                Status::TraceLensMissing
            }
            Error::Tracelens(T::Interrupted { .. })
            | Error::Sanitize(
                trace_sanitize::Error::CancelledFile { .. }
                | trace_sanitize::Error::Cancelled { .. },
            ) => Status::Interrupted,
            Error::Tracelens(
                T::UnknownArch { .. } | T::CompareArgs(_) | T::ExtraArg { .. } | T::Cycle(_),
            ) => Status::Usage,
            Error::Dynolog(dynolog_client::Error::InvalidRequest(_)) => Status::Usage,
            Error::Dynolog(_) | Error::Session(dynolog_client::SessionError::Client(_)) => {
                Status::Daemon
            }
            Error::Session(
                dynolog_client::SessionError::DaemonDied { .. }
                | dynolog_client::SessionError::DaemonSilent { .. }
                | dynolog_client::SessionError::DaemonCrippled { .. }
                | dynolog_client::SessionError::PortTaken { .. }
                | dynolog_client::SessionError::Spawn { .. },
            ) => Status::Daemon,
            Error::Slurm(collect_slurm::Error::Spec(_)) => Status::Usage,
            Error::Slurm(_) => Status::Io,
            Error::K8s(collect_k8s::Error::Invalid(_)) => Status::Usage,
            Error::K8s(
                collect_k8s::Error::Interrupted { .. } | collect_k8s::Error::Cancelled { .. },
            ) => Status::Interrupted,
            Error::K8s(_) => Status::Io,
            Error::Summary(trace_summary::Error::Cancelled { .. }) => Status::Interrupted,
            Error::Summary(_) | Error::Record(_) => Status::Io,
            Error::Arch(trace_summary::ArchError::Unknown { .. }) => Status::Usage,
            Error::Arch(_) => Status::Io,
            Error::Sanitize(_)
            | Error::Discover(_)
            | Error::Tracelens(_)
            | Error::Session(_)
            | Error::Io { .. }
            | Error::Workbook { .. }
            | Error::Read { .. }
            | Error::Stdout(_) => Status::Io,
        }
    }

    /// What to do about it, where madengine can tell more than the error
    /// (its commands and flags, which the libraries do not name).
    pub(crate) fn hint(&self) -> Option<String> {
        use dynolog_client::{Error as D, SessionError as S};
        if self.is_unwritable_place() {
            return Some(
                "that place cannot be written here (a read-only mount, another user's \
                 directory?): point --output-dir (or -o) somewhere writable"
                    .into(),
            );
        }
        let client = match self {
            Error::Tracelens(tracelens_driver::Error::TraceLensMissing { .. }) => {
                return Some(INSTALL_TRACELENS.into());
            }
            Error::Tracelens(
                tracelens_driver::Error::Python { .. } | tracelens_driver::Error::Probe { .. },
            ) => {
                return Some(format!(
                    "point --python at a Python 3 interpreter (or set TRACELENS_VENV); \
                     {INSTALL_TRACELENS}"
                ));
            }
            Error::Tracelens(tracelens_driver::Error::ExtraArg { managed, .. }) => {
                use tracelens_driver::Managed as M;
                return Some(
                    match managed {
                        M::Output => "reports go under --output-dir (-o)",
                        M::WorldSize => "use madengine's --world-size",
                        M::GpuArch => "use madengine's --gpu-arch, which checks the name first",
                        M::Traces | M::Staging => {
                            "madengine gives TraceLens the traces it finds under --root"
                        }
                        _ => return None,
                    }
                    .into(),
                );
            }
            Error::Arch(trace_summary::ArchError::Unknown { .. }) => {
                return Some(
                    "for another GPU, write its peaks as TraceLens' arch JSON (name, \
                     mem_bw_gbps, max_achievable_tflops by spec: matrix_bf16, vector_fp32, ...) \
                     and give --gpu-arch FILE.json"
                        .into(),
                );
            }
            Error::Sanitize(trace_sanitize::Error::SqliteFile { path }) => {
                return Some(format!(
                    "`madengine trace convert {}` writes a rocpd database as rocprofv3 JSON",
                    path.display()
                ));
            }
            Error::Slurm(collect_slurm::Error::Exists { .. }) => {
                return Some("give another --results-dir".into());
            }
            Error::Dynolog(e) | Error::Session(S::Client(e)) => e,
            Error::Session(S::PortTaken { port, holder }) => {
                let dynolog = holder.as_ref().is_some_and(|h| h.command.contains("dynolog"));
                return Some(match dynolog {
                    true => format!(
                        "a dynolog already serves port {port} (a node's own service?): \
                         `madengine dynolog trigger --port {port}` asks it for traces as it is, \
                         or start one of madengine's on another --port"
                    ),
                    false => format!("stop it, or start dynolog on another --port than {port}"),
                });
            }
            _ => return None,
        };
        match client {
            D::Refused { .. } => Some(
                "start one with `madengine dynolog start` (or `madengine profile -- <command>`), \
                 or check --port (DYNOLOG_PORT)"
                    .into(),
            ),
            D::Timeout { addr, .. } | D::NotDynolog { addr, .. } => {
                let held = addr
                    .ip()
                    .is_loopback()
                    .then(|| dynolog_client::listener_of(addr.port()))
                    .flatten();
                let who = match held {
                    Some(h) if !h.command.contains("dynolog") => format!(
                        "port {} is held by {h}, which does not look like dynolog: check --port",
                        addr.port()
                    ),
                    Some(h) => format!(
                        "port {} is held by {h}; dynolog answers at once unless another client \
                         holds its one connection: try again, or look for a client stuck on it",
                        addr.port()
                    ),
                    None => "dynolog answers at once unless another client holds its one \
                             connection; check --port and --host"
                        .into(),
                };
                Some(who)
            }
            _ => None,
        }
    }

    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// Whether an output could not be written because the place refuses
    /// writes (a read-only mount, another user's directory), not for want
    /// of space or a bad name: then another place is the remedy.
    pub(crate) fn is_unwritable_place(&self) -> bool {
        let source = match self {
            Error::Io { source, .. }
            | Error::Sanitize(trace_sanitize::Error::WriteFile { source, .. })
            | Error::Tracelens(tracelens_driver::Error::Write { source, .. })
            | Error::Summary(trace_summary::Error::Write { source, .. }) => source,
            _ => return false,
        };
        matches!(source.kind(), io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_refused_by_the_place_is_told_from_other_failures() {
        let write = |kind: io::ErrorKind| Error::Io {
            path: "summary_output/rank0".into(),
            source: io::Error::from(kind),
        };
        assert!(write(io::ErrorKind::ReadOnlyFilesystem).is_unwritable_place());
        assert!(write(io::ErrorKind::PermissionDenied).is_unwritable_place());
        assert!(!write(io::ErrorKind::StorageFull).is_unwritable_place());
        let sanitize = Error::Sanitize(trace_sanitize::Error::WriteFile {
            path: "fixed.json".into(),
            source: io::Error::from(io::ErrorKind::ReadOnlyFilesystem),
        });
        assert!(sanitize.is_unwritable_place());
        // The library says what happened, the CLI which flag changes it.
        let exists =
            Error::Slurm(collect_slurm::Error::Exists { path: "results/7/job.sbatch".into() });
        assert_eq!(
            (exists.to_string(), exists.hint().as_deref()),
            (
                "results/7/job.sbatch already exists, and results are never overwritten".into(),
                Some("give another --results-dir")
            )
        );
        // Reading is not writing.
        let read = Error::Read { path: "x".into(), detail: "Permission denied".into() };
        assert!(!read.is_unwritable_place());
    }
}
