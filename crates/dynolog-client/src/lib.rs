//! A native client for the dynolog daemon, for on-demand PyTorch (Kineto)
//! capture without changing the model script.
//!
//! [`Client`] speaks dynolog's RPC protocol as observed on a real daemon: TCP,
//! one request per connection, a 4-byte native-endian length prefix then JSON
//! each way. It frames the whole request before connecting (a silent client
//! blocks the daemon's single-threaded server) and never leaves with a reply
//! still due (a client that closes early kills the daemon with SIGPIPE): a
//! reply that does not come in time is left to a background reader. Replies
//! are typed; a `{"status":"failed..."}` reply, a connection closed without a
//! reply, a refused connection, a timeout and a server that is not dynolog
//! (an HTTP one) are distinct [`Error`]s, and absurd reply lengths are
//! refused. [`start_daemon`] refuses a port something listens on (naming it,
//! [`listener_of`]) and takes a daemon as ready from its own log.
//!
//! [`TraceRequest`] builds the kineto config in the real `dyno gputrace` key
//! order and serializes the request with serde; [`kineto_trace_path`] names
//! the file kineto will write; [`trigger`] is the capture policy (warm-up,
//! live workload pids from the daemon's log, stability wait, for an
//! iteration window the wait for each process's first optimizer step,
//! retries, fail-fast on rejection).
//!
//! # Example
//!
//! ```no_run
//! use dynolog_client::{Client, TraceRequest, Window, kineto_trace_path};
//!
//! let client = Client::new("localhost", 1778)?;
//! let mut request = TraceRequest::new("/tmp/run/libkineto_trace.json");
//! request.window = Window::Iterations { count: 5, roundup: 1 };
//! request.check_log_file(None)?;
//! let reply = client.gputrace(&request)?;
//! for pid in &reply.activity_profilers_triggered {
//!     println!("{}", kineto_trace_path(&request.log_file, *pid));
//! }
//! # Ok::<(), dynolog_client::Error>(())
//! ```
#![deny(missing_docs)]

mod client;
mod document;
mod error;
mod lossy;
mod port;
mod redact;
mod registry;
mod request;
mod session;
mod setup;
mod trigger;

pub use crate::{
    client::{Client, DEFAULT_PORT, MAX_REPLY, TraceReply},
    document::{
        Captured, DOCUMENT_VERSION, DaemonStatus, DaemonVersion, Session, SetUp, TriggerEnded,
        Triggered, WorkloadEnv,
    },
    error::{Error, Result},
    port::{Holder, listener_of, port_is_free},
    redact::redact,
    registry::{
        ProcFs, Processes, Registration, is_launcher_or_helper, parse_registrations, runnable,
    },
    request::{TraceRequest, Window, kineto_trace_path},
    session::{
        Daemon, Exit, RunState, SessionError, Started, Stopped, Workload, free_port, hook_module,
        install_hook, is_running, log_tail, proc_stat, remove_hook, site_packages, spawn_detached,
        start_daemon, start_workload, stop_process,
    },
    setup::{DEFAULT_DEB_URL, Installed, find_on_path, install_dynolog},
    trigger::{Clock, Event, Outcome, Policy, Signals, SystemClock, trigger},
};

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
