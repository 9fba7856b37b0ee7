//! `dynolog ...` and `madengine profile`: the daemon's answers and a capture's report.

use super::*;

/// What the daemon answered to `getStatus` or `getVersion`: `status: 1`,
/// or with `json` its document (`dynolog_client::DaemonStatus`,
/// `DaemonVersion`).
pub(crate) enum DaemonValue {
    Status(i64),
    Version(String),
}

pub(crate) fn daemon_value(json: bool, value: &DaemonValue) -> Result<(), Error> {
    use dynolog_client::{DOCUMENT_VERSION as version, DaemonStatus, DaemonVersion};
    if json {
        return match value {
            DaemonValue::Status(status) => json_as_is(&DaemonStatus { version, status: *status }),
            DaemonValue::Version(v) => {
                json_as_is(&DaemonVersion { version, dynolog_version: v.clone() })
            }
        };
    }
    match value {
        DaemonValue::Status(status) => out(&format!("status: {status}\n")),
        DaemonValue::Version(v) => out(&format!("version: {v}\n")),
    }
}

pub(crate) fn gputrace(reply: &dynolog_client::TraceReply, files: &[String]) -> Result<(), Error> {
    let list = |pids: &[u32]| pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    let mut text = String::new();
    if reply.processes_matched.is_empty() {
        text.push_str("no process matched: check --job-id and --pids, and that the workload runs with KINETO_USE_DAEMON=1\n");
        return out(&text);
    }
    text.push_str(&format!(
        "matched {} process(es): {}\n",
        reply.processes_matched.len(),
        list(&reply.processes_matched)
    ));
    if reply.activity_profilers_busy > 0 {
        text.push_str(&format!(
            "{} process(es) still had an earlier request pending and were not triggered again\n",
            reply.activity_profilers_busy
        ));
    }
    if !files.is_empty() {
        text.push_str("trace files kineto will write:\n");
        for f in files {
            text.push_str(&format!("    {f}\n"));
        }
    }
    out(&text)
}

pub(crate) fn trigger_outcome(outcome: &dynolog_client::Outcome) {
    use dynolog_client::Outcome;
    match outcome {
        Outcome::Accepted { attempts, reply, .. } => note(&format!(
            "trace request accepted on attempt {attempts}: {} process(es) triggered",
            reply.activity_profilers_triggered.len()
        )),
        Outcome::NoProcess { attempts } => note(&format!(
            "gave up after {attempts} attempts: no PyTorch process registered. The workload needs PyTorch >= 1.13 \
             running with KINETO_USE_DAEMON=1; a short run may end before --warmup-s (TORCH_PROFILE_WARMUP_S) \
             or before --max-attempts (TORCH_PROFILE_MAX_ATTEMPTS) run out"
        )),
        Outcome::RequestRejected { reason, .. } => {
            note(&format!("the daemon rejected the trace request; not retrying: {reason}"))
        }
        Outcome::DaemonUnreachable { reason, .. } => {
            note(&format!("the dynolog daemon could not be reached; not retrying: {reason}"))
        }
        Outcome::WorkloadEnded { attempts } => note(&format!(
            "the workload ended before a trace was requested ({attempts} attempts); lower --warmup-s for short runs"
        )),
    }
}

pub(crate) fn stopped(how: dynolog_client::Stopped) -> &'static str {
    match how {
        dynolog_client::Stopped::Terminated => "stopped",
        dynolog_client::Stopped::Killed => "did not stop gracefully; killed",
        dynolog_client::Stopped::NotRunning => "was no longer running",
    }
}

/// How a capture session's parts ended, for [`capture_report`].
#[derive(Debug)]
pub(crate) struct Ended {
    /// A trigger ran (a `dynolog start --no-trigger` session has none).
    pub(crate) trigger: bool,
    /// The session's daemon, where it had one.
    pub(crate) daemon: Option<DaemonEnd>,
    /// How the workload ended, where the session started it (`profile`).
    pub(crate) workload: Option<dynolog_client::Exit>,
}

/// The daemon of a session, as it was before the session stopped it.
#[derive(Debug)]
pub(crate) struct DaemonEnd {
    pub(crate) pid: u32,
    /// It was no longer running.
    pub(crate) gone: bool,
    /// How it ended, where this process started it and could tell.
    pub(crate) how: Option<dynolog_client::Exit>,
}

impl DaemonEnd {
    /// `the dynolog daemon (pid N) was killed by signal 13 (SIGPIPE)`, or
    /// `... had ended`.
    fn ended(&self) -> String {
        match self.how {
            Some(how) => format!("the dynolog daemon (pid {}) {how}", self.pid),
            None => format!("the dynolog daemon (pid {}) had ended", self.pid),
        }
    }
}

pub(crate) fn capture_report(
    copied: &[std::path::PathBuf],
    output_dir: &std::path::Path,
    outcome: Option<&dynolog_client::Outcome>,
    ended: &Ended,
    state: &dynolog_client::RunState,
) {
    use dynolog_client::Outcome;
    if !copied.is_empty() {
        note(&format!(
            "captured {} torch.profiler trace(s) in {}:",
            copied.len(),
            output_dir.display()
        ));
        for c in copied {
            say(format_args!("    {}", c.display()));
        }
        return;
    }
    warning(&format!("no torch.profiler traces were captured in {}", output_dir.display()));
    // Killed by a signal after its trace was requested: a crash (often in
    // the profiler itself), Ctrl-C, the OOM killer.
    let killed = ended.workload.filter(|w| {
        matches!(w, dynolog_client::Exit::Signal(_))
            && matches!(outcome, Some(Outcome::Accepted { .. }))
    });
    // The daemon gone before the session stopped it, and whether kineto had
    // fetched the request's config from it (its log says when it hands one out).
    let gone = ended.daemon.as_ref().filter(|d| d.gone);
    let fetched = std::fs::read_to_string(state.daemon_log())
        .is_ok_and(|log| log.contains("Returning activity profiler config"));
    let died_how = |d: &DaemonEnd| {
        let why = match d.how {
            Some(dynolog_client::Exit::Signal(13)) => {
                ": dynolog dies of SIGPIPE when a client closes its connection before the daemon \
                 writes its reply"
            }
            _ => "",
        };
        format!("{}{why}", d.ended())
    };
    let workload_then = match ended.workload {
        Some(exit) => format!("; the workload {exit} later"),
        None => String::new(),
    };
    let why = match (outcome, killed, gone) {
        (Some(Outcome::Accepted { .. }), _, Some(d)) if !fetched => format!(
            "{} after it accepted the trace request, before kineto fetched its config{workload_then}",
            died_how(d)
        ),
        (Some(Outcome::DaemonUnreachable { .. }), _, Some(d)) => {
            format!("{} before a trace was requested{workload_then}", died_how(d))
        }
        (Some(Outcome::DaemonUnreachable { reason, .. }), _, None) => {
            format!("the dynolog daemon could not be reached when a trace was to be requested ({reason})")
        }
        (Some(Outcome::NoProcess { .. }), _, _) => {
            "the trigger never matched a PyTorch process (not PyTorch, PyTorch before 1.13, KINETO_USE_DAEMON unset, or the run ended before the warm-up)".to_string()
        }
        (Some(Outcome::RequestRejected { .. }), _, _) => {
            let log = match state.trigger_log().is_file() {
                true => "; see the trigger log",
                false => "",
            };
            format!("the daemon rejected the trace request itself, so no trace was ever requested{log}")
        }
        (Some(Outcome::WorkloadEnded { .. }), _, _) => {
            "the workload ended before a trace was requested".to_string()
        }
        (Some(Outcome::Accepted { .. }), Some(exit), _) => {
            format!("a trace was requested, but the workload {exit} before kineto wrote it")
        }
        (Some(Outcome::Accepted { .. }), None, _) => {
            "a trace was requested, but kineto wrote nothing: the workload may have ended inside the trace window, or (iteration mode) never imported torch.profiler".to_string()
        }
        (None, _, _) if !ended.trigger => {
            "no trace was requested: the session was started with --no-trigger (request one with \
             `madengine dynolog trigger` or `madengine dynolog gputrace` while the workload runs)"
                .to_string()
        }
        (None, _, Some(d)) => format!("{} before the trigger finished", died_how(d)),
        (None, _, None) => "the trigger never finished".to_string(),
    };
    say(format_args!("  why: {why}"));
    if killed.is_some_and(dynolog_client::Exit::crashed) {
        // PyTorch 2.11 on CUDA (an H200) aborted or segfaulted so when it
        // ended with a time window still open (docs/user-guide.md).
        eprintln!(
            "  a process that ends while Kineto still traces it can crash inside PyTorch's \
             profiler: ask for the trace earlier (--warmup-s), or let the workload run past the \
             trace window"
        );
    }
    for log in [state.daemon_log(), state.trigger_log()] {
        if log.is_file() {
            let tail = dynolog_client::log_tail(&log, 40);
            say(format_args!("=== {} ===\n{tail}\n===", log.display()));
        }
    }
}
