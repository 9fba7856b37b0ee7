//! What a capture through dynolog tells a script: each step's `--json`
//! document, versioned ([`DOCUMENT_VERSION`]) and read back as written.
//! Paths are text, their bytes that are not UTF-8 as U+FFFD ([`crate::lossy`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Installed, Outcome, RunState, Started, TraceReply};

/// The version of these documents' shapes: raised when a key is renamed or
/// removed or changes its meaning (a new key does not raise it).
pub const DOCUMENT_VERSION: u32 = 1;

/// What the daemon answered to `getStatus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DaemonStatus {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The daemon's status (1: running).
    pub status: i64,
}

/// What the daemon answered to `getVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DaemonVersion {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The daemon's version (`version` is this document's).
    pub dynolog_version: String,
}

/// A trace request sent once (`dyno gputrace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Triggered {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The traces the processes triggered will write.
    pub files: Vec<String>,
    /// The daemon's reply.
    pub reply: TraceReply,
}

/// A session started: the daemon, the trigger and the hook, and what the
/// workload's environment needs to register with the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Session {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The daemon's pid.
    pub daemon_pid: Option<u32>,
    /// Where the Kineto hook was installed.
    #[serde(serialize_with = "crate::lossy::option")]
    pub hook_site: Option<PathBuf>,
    /// The daemon's RPC port.
    pub port: u16,
    /// The session's state directory.
    #[serde(serialize_with = "crate::lossy::path")]
    pub state_dir: PathBuf,
    /// The background trigger's log, where one was started.
    #[serde(serialize_with = "crate::lossy::option")]
    pub trigger_log: Option<PathBuf>,
    /// The background trigger's pid.
    pub trigger_pid: Option<u32>,
    /// The workload's environment.
    pub workload_env: WorkloadEnv,
}

/// The environment a workload registers with the session's daemon under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WorkloadEnv {
    /// `KINETO_IPC_SOCKET_DIR`: the daemon's IPC sockets.
    #[serde(rename = "KINETO_IPC_SOCKET_DIR", serialize_with = "crate::lossy::path")]
    pub ipc_socket_dir: PathBuf,
    /// `KINETO_USE_DAEMON`: `1`.
    #[serde(rename = "KINETO_USE_DAEMON")]
    pub use_daemon: String,
}

impl Session {
    /// The session `started` in `state`.
    pub fn of(state: &RunState, started: &Started) -> Session {
        Session {
            version: DOCUMENT_VERSION,
            daemon_pid: started.daemon_pid,
            hook_site: started.hook_site.clone(),
            port: started.port,
            state_dir: state.dir.clone(),
            trigger_log: started.trigger_pid.map(|_| state.trigger_log()),
            trigger_pid: started.trigger_pid,
            workload_env: WorkloadEnv { ipc_socket_dir: state.ipc_dir(), use_daemon: "1".into() },
        }
    }
}

/// How a session's trigger ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TriggerEnded {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// How it ended.
    pub outcome: Outcome,
    /// The session's state directory.
    #[serde(serialize_with = "crate::lossy::path")]
    pub state_dir: PathBuf,
}

impl TriggerEnded {
    /// `outcome`, of the session in `state`.
    pub fn new(outcome: Outcome, state: &RunState) -> TriggerEnded {
        TriggerEnded { version: DOCUMENT_VERSION, outcome, state_dir: state.dir.clone() }
    }
}

/// The traces a session captured, copied out of its state directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Captured {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// How its trigger ended, where it did.
    pub outcome: Option<Outcome>,
    /// Where the traces were copied.
    #[serde(serialize_with = "crate::lossy::path")]
    pub output_dir: PathBuf,
    /// The copies.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub traces: Vec<PathBuf>,
}

impl Captured {
    /// The `traces` copied into `output_dir`, the trigger ended as `outcome`.
    pub fn new(
        outcome: Option<Outcome>,
        output_dir: &Path,
        traces: &[impl AsRef<Path>],
    ) -> Captured {
        Captured {
            version: DOCUMENT_VERSION,
            outcome,
            output_dir: output_dir.to_path_buf(),
            traces: traces.iter().map(|t| t.as_ref().to_path_buf()).collect(),
        }
    }
}

/// dynolog set up from its package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SetUp {
    /// [`DOCUMENT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The package's URL, its credentials redacted.
    pub deb_url: String,
    /// Where `dyno` is now, if on the path.
    #[serde(serialize_with = "crate::lossy::option")]
    pub dyno: Option<PathBuf>,
    /// Where `dynolog` is now, if on the path.
    #[serde(serialize_with = "crate::lossy::option")]
    pub dynolog: Option<PathBuf>,
    /// Whether it was installed, or already there.
    pub outcome: Installed,
}

impl SetUp {
    /// `outcome`, from `deb_url` (redacted here), `dyno` and `dynolog`
    /// found where they are.
    pub fn new(
        deb_url: &str,
        dyno: Option<&Path>,
        dynolog: Option<&Path>,
        outcome: Installed,
    ) -> SetUp {
        SetUp {
            version: DOCUMENT_VERSION,
            deb_url: crate::redact(deb_url),
            dyno: dyno.map(Path::to_path_buf),
            dynolog: dynolog.map(Path::to_path_buf),
            outcome,
        }
    }
}
