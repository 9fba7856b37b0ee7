//! A capture session's moving parts: its per-run state directory, the
//! dynolog daemon's lifecycle, and the Kineto hook in the workload's
//! site-packages.

use std::{
    ffi::OsString,
    fs,
    io::{self, Read, Seek, SeekFrom},
    net::TcpListener,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};

use crate::{Client, Error as ClientError, Outcome, Signals};

/// What can go wrong managing a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// A state file or directory could not be read or written.
    #[error("cannot use {path}")]
    State {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The daemon could not be started.
    #[error("cannot start `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The daemon exited during start-up.
    #[error(
        "the dynolog daemon (pid {pid}) {how} during start-up{}; {}",
        why_died(*how).map(|w| format!(" ({w})")).unwrap_or_default(),
        log_said(log, tail)
    )]
    DaemonDied {
        /// Its pid.
        pid: u32,
        /// How it ended.
        how: Exit,
        /// Its log.
        log: PathBuf,
        /// The last lines.
        tail: String,
    },
    /// Something already listens on the port asked for: a daemon started
    /// there runs without its RPC server (dynolog logs `bind(): Address
    /// already in use` and stays up), and requests would reach the other.
    #[error(
        "port {port} is taken{}: a dynolog started there would run without its RPC server, and \
         trace requests would reach the other process",
        holder.as_ref().map(|h| format!(" by {h}")).unwrap_or_default()
    )]
    PortTaken {
        /// The port.
        port: u16,
        /// Who listens there, when `/proc` tells.
        holder: Option<crate::Holder>,
    },
    /// The daemon started, but says in its log that it cannot serve: no RPC
    /// server (its port was taken as it bound it) or no IPC endpoint
    /// (another dynolog with `--enable_ipc_monitor` holds it).
    #[error("the dynolog daemon (pid {pid}) {what}; {}", log_said(log, tail))]
    DaemonCrippled {
        /// Its pid (stopped again).
        pid: u32,
        /// What its log says it lacks.
        what: String,
        /// Its log.
        log: PathBuf,
        /// The last lines.
        tail: String,
    },
    /// The daemon did not answer getStatus in time.
    #[error(
        "the dynolog daemon (pid {pid}) did not answer on port {port} within {seconds} s; the end of its log ({log}):\n{tail}"
    )]
    DaemonSilent {
        /// Its pid.
        pid: u32,
        /// The port.
        port: u16,
        /// The wait.
        seconds: f64,
        /// Its log.
        log: PathBuf,
        /// The last lines.
        tail: String,
    },
    /// The workload's interpreter could not tell where its site-packages are.
    #[error("cannot find the site-packages of {python}: {detail}")]
    SitePackages {
        /// The interpreter.
        python: PathBuf,
        /// What it printed.
        detail: String,
    },
    /// Installing dynolog failed.
    #[error("installing dynolog failed at `{step}`: {detail}")]
    Install {
        /// The step, with the URL redacted.
        step: String,
        /// The end of its output, redacted.
        detail: String,
    },
    /// A client error while checking the daemon.
    #[error(transparent)]
    Client(#[from] ClientError),
}

type Result<T, E = SessionError> = std::result::Result<T, E>;

/// Why a daemon that ended so likely did.
fn why_died(how: Exit) -> Option<&'static str> {
    match how {
        Exit::Signal(13) => Some(
            "dynolog dies of SIGPIPE when a client closes its connection before the daemon \
             writes its reply: a client on its port gave up on it",
        ),
        Exit::Signal(9) => Some("killed from outside: the OOM killer, or a kill -9"),
        Exit::Signal(6 | 11) => Some("a crash of dynolog itself"),
        _ => None,
    }
}

/// `the end of its log (<path>):\n<tail>`, or that it printed nothing.
fn log_said(log: &Path, tail: &str) -> String {
    match tail.trim().is_empty() {
        true => "it printed nothing".to_string(),
        false => format!("the end of its log ({}):\n{tail}", log.display()),
    }
}

/// The files of one capture session, all under one directory, so two
/// profiled runs on one host never share state, traces or daemon.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunState {
    /// The directory.
    #[serde(serialize_with = "crate::lossy::path")]
    pub dir: PathBuf,
}

/// What `start` recorded, for `trigger` and `stop`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Started {
    /// The daemon's pid.
    pub daemon_pid: Option<u32>,
    /// Its RPC port.
    pub port: u16,
    /// The background trigger's pid, if one was started.
    pub trigger_pid: Option<u32>,
    /// Where the Kineto hook was installed (a site-packages directory):
    /// read back by `stop` to remove it, so written exactly.
    #[serde(
        serialize_with = "crate::lossy::exact::option",
        deserialize_with = "crate::lossy::exact::read_option",
        default
    )]
    pub hook_site: Option<PathBuf>,
}

impl RunState {
    /// Use (and create) `dir` for a session.
    pub fn create(dir: impl Into<PathBuf>) -> Result<RunState> {
        let state = RunState { dir: dir.into() };
        for d in [state.dir.clone(), state.kineto_dir(), state.ipc_dir(), state.steps_dir()] {
            fs::create_dir_all(&d)
                .map_err(|source| SessionError::State { path: d.clone(), source })?;
        }
        Ok(state)
    }

    /// The daemon's combined output.
    pub fn daemon_log(&self) -> PathBuf {
        self.dir.join("dynolog.log")
    }
    /// The trigger's log.
    pub fn trigger_log(&self) -> PathBuf {
        self.dir.join("trigger.log")
    }
    /// Where kineto writes the traces (also `KINETO_ONDEMAND_TRACE_DIR` for the workload).
    pub fn kineto_dir(&self) -> PathBuf {
        self.dir.join("kineto")
    }
    /// `KINETO_IPC_SOCKET_DIR` for the daemon and the workload: their own
    /// sockets instead of the host-wide abstract `dynolog` name.
    pub fn ipc_dir(&self) -> PathBuf {
        self.dir.join("ipc")
    }
    /// Where the Kineto hook marks each workload process: `<pid>.hooked`
    /// once it has the hook, `<pid>.stepped` after its first optimizer step.
    pub fn steps_dir(&self) -> PathBuf {
        self.dir.join("steps")
    }
    /// What the trigger reads about the workload: the daemon's log and the
    /// hook's step marks.
    pub fn signals(&self) -> Signals {
        Signals { daemon_log: Some(self.daemon_log()), steps_dir: Some(self.steps_dir()) }
    }
    fn started_file(&self) -> PathBuf {
        self.dir.join("started.json")
    }
    fn result_file(&self) -> PathBuf {
        self.dir.join("result.json")
    }

    /// What `start` recorded, if it ran.
    pub fn started(&self) -> Result<Option<Started>> {
        read_json(&self.started_file())
    }
    /// Record what `start` did.
    pub fn set_started(&self, started: &Started) -> Result<()> {
        write_json(&self.started_file(), started)
    }
    /// Forget `start` (after `stop`).
    pub fn clear_started(&self) -> Result<()> {
        remove(&self.started_file())
    }
    /// The trigger's outcome, if it finished.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        read_json(&self.result_file())
    }
    /// Record the trigger's outcome.
    pub fn set_outcome(&self, outcome: &Outcome) -> Result<()> {
        write_json(&self.result_file(), outcome)
    }
    /// Forget an earlier outcome (before a new trigger).
    pub fn clear_outcome(&self) -> Result<()> {
        remove(&self.result_file())
    }

    /// Forget the step marks of an earlier session in this directory (a
    /// reused pid must not look as if it had stepped).
    pub fn clear_steps(&self) -> Result<()> {
        let dir = self.steps_dir();
        let entries = fs::read_dir(&dir)
            .map_err(|source| SessionError::State { path: dir.clone(), source })?;
        for entry in entries.flatten() {
            remove(&entry.path())?;
        }
        Ok(())
    }

    /// The traces kineto finished (`*.json`, `*.json.gz`; not its `.tmp` files).
    pub fn traces(&self) -> Result<Vec<PathBuf>> {
        let dir = self.kineto_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
            Err(source) => return Err(SessionError::State { path: dir, source }),
        };
        let mut out: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().unwrap_or_default().to_string_lossy();
                p.is_file() && (n.ends_with(".json") || n.ends_with(".json.gz"))
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| SessionError::State {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SessionError::State { path: path.to_path_buf(), source }),
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write_whole(path, &serde_json::to_vec_pretty(value).expect("plain data serializes"))
}

/// `bytes` to `path` through `<path>.partial` and a rename: never half a file
/// (a half-written hook would break every Python start in that environment).
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    fs::write(&tmp, bytes)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(|source| SessionError::State { path: path.to_path_buf(), source })
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(SessionError::State { path: path.to_path_buf(), source: e })
        }
        _ => Ok(()),
    }
}

/// The last `lines` lines of a log (reading at most its last 64 KiB).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut file) = fs::File::open(path) else {
        return format!("({} does not exist)", path.display());
    };
    let len = file.seek(SeekFrom::End(0)).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 << 10)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A free TCP port on this host (for a daemon of our own).
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The one place this crate starts processes.
#[allow(clippy::disallowed_methods, reason = "this is the crate's process helper")]
pub(crate) fn cmd(argv: &[OsString]) -> duct::Expression {
    duct::cmd(&argv[0], &argv[1..])
}

/// A dynolog daemon this process started ([`start_daemon`]).
#[derive(Debug)]
pub struct Daemon {
    pid: u32,
    handle: duct::Handle,
}

impl Daemon {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How it ended, if it has (without waiting).
    pub fn exited(&self) -> Option<Exit> {
        match self.handle.try_wait() {
            Ok(Some(out)) => Some(Exit::of(out.status)),
            _ => None,
        }
    }

    /// Let it run on after this process ends (`dynolog start`); its pid.
    pub fn detach(self) -> u32 {
        let pid = self.pid;
        std::mem::forget(self.handle);
        pid
    }
}

/// What a daemon's log says of its start-up.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    /// `Listening to connections on port <port>`: its RPC server is up.
    Listening,
    /// Its port was taken as it bound it: it runs without an RPC server.
    NoRpc,
    /// Its IPC endpoint is taken (another dynolog with the IPC monitor).
    NoIpc,
    /// Nothing yet.
    Nothing,
}

/// What the log text of a daemon started on `port` says.
fn said(log: &str, port: u16) -> Said {
    if log.contains("Error when initializing FabricManager") {
        Said::NoIpc
    } else if log.contains("bind(): Address already in use") || log.contains("socket(): ") {
        Said::NoRpc
    } else if log.contains(&format!("Listening to connections on port {port}")) {
        Said::Listening
    } else {
        Said::Nothing
    }
}

/// Start `binary --enable_ipc_monitor --port <port>` in the background, its
/// output in the daemon log; with `ipc_dir`, it and the workload (which must
/// get the same `KINETO_IPC_SOCKET_DIR`) use sockets there instead of the
/// host-wide abstract name. A port something already listens on is refused
/// first ([`SessionError::PortTaken`], naming who): dynolog would run on
/// without its RPC server, and a readiness check would be answered by the
/// other process. Ready when its log says it listens on `port` (a dynolog
/// whose log says no such thing: when it answers getStatus there, the port
/// having been free); a daemon that dies is reported with how and its log,
/// one whose log says it cannot serve is stopped and reported.
pub fn start_daemon(
    state: &RunState,
    binary: &Path,
    port: u16,
    ipc_dir: Option<&Path>,
    wait: Duration,
) -> Result<Daemon> {
    if !crate::port_is_free(port) {
        return Err(SessionError::PortTaken { port, holder: crate::listener_of(port) });
    }
    let argv: Vec<OsString> = vec![
        binary.into(),
        "--enable_ipc_monitor".into(),
        "--port".into(),
        port.to_string().into(),
    ];
    let command = argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let log = state.daemon_log();
    let mut expression = cmd(&argv);
    if let Some(dir) = ipc_dir {
        expression = expression.env("KINETO_IPC_SOCKET_DIR", dir);
    }
    let handle = expression
        .stdin_null()
        .stderr_to_stdout()
        .stdout_path(&log)
        .unchecked()
        .start()
        .map_err(|source| SessionError::Spawn { command: command.clone(), source })?;
    let pid = *handle.pids().first().expect("one process");
    let daemon = Daemon { pid, handle };
    let stop = |daemon: Daemon| {
        // duct's kill only signals: reap it too (its output is a file).
        let _ = daemon.handle.kill();
        let _ = daemon.handle.wait();
    };
    let started = Instant::now();
    loop {
        if let Some(how) = daemon.exited() {
            return Err(SessionError::DaemonDied { pid, how, tail: log_tail(&log, 40), log });
        }
        let text = fs::read_to_string(&log).unwrap_or_default();
        match said(&text, port) {
            // Its IPC monitor starts on a thread of its own: a moment for
            // it to say it could not.
            Said::Listening if started.elapsed() < Duration::from_millis(300) => {}
            Said::Listening => return Ok(daemon),
            Said::NoRpc | Said::NoIpc => {
                // A daemon that exits after saying so died of it: a moment
                // to tell the one from the other (the real dynolog runs on
                // without the server; a log flushed just before the exit
                // is read before the exit is seen).
                let grace = Instant::now();
                while grace.elapsed() < Duration::from_millis(200) {
                    if let Some(how) = daemon.exited() {
                        let tail = log_tail(&log, 40);
                        return Err(SessionError::DaemonDied { pid, how, tail, log });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                let what = match said(&text, port) {
                    Said::NoRpc => format!(
                        "runs without its RPC server: port {port} was taken as it bound it{}",
                        crate::listener_of(port).map(|h| format!(" (by {h})")).unwrap_or_default()
                    ),
                    _ => "runs without its IPC endpoint, so no PyTorch process can register \
                          with it: another dynolog with --enable_ipc_monitor holds it"
                        .to_string(),
                };
                stop(daemon);
                return Err(SessionError::DaemonCrippled {
                    pid,
                    what,
                    tail: log_tail(&log, 40),
                    log,
                });
            }
            Said::Nothing => {}
        }
        // A dynolog whose log says nothing of the kind: the port was free,
        // so what answers getStatus there now is the process just started.
        // The wait for its reply is the rest of the start-up wait: a request
        // is never abandoned while the daemon may still answer it.
        let left = wait.saturating_sub(started.elapsed());
        if started.elapsed() > Duration::from_secs(1) && !left.is_zero() {
            let client = Client::new("127.0.0.1", port)?.with_timeout(left);
            if client.status().is_ok() && daemon.exited().is_none() {
                return Ok(daemon);
            }
        }
        if started.elapsed() > wait {
            stop(daemon);
            return Err(SessionError::DaemonSilent {
                pid,
                port,
                seconds: wait.as_secs_f64(),
                tail: log_tail(&log, 40),
                log,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start `argv` in the background with `env`, its output appended to `log`;
/// it outlives this process. Returns its pid.
pub fn spawn_detached(argv: &[OsString], env: &[(&str, OsString)], log: &Path) -> Result<u32> {
    let command = argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|source| SessionError::State { path: log.to_path_buf(), source })?;
    let mut expression = cmd(argv).stdin_null().stderr_to_stdout().stdout_file(file).unchecked();
    for (k, v) in env {
        expression = expression.env(k, v);
    }
    let handle = expression.start().map_err(|source| SessionError::Spawn { command, source })?;
    let pid = *handle.pids().first().expect("one process");
    std::mem::forget(handle);
    Ok(pid)
}

/// A workload started in the foreground by [`start_workload`].
#[derive(Debug)]
pub struct Workload {
    handle: duct::Handle,
    command: String,
}

impl Workload {
    /// Wait for it to end; how it ended.
    pub fn wait(self) -> Result<Exit> {
        let out = self
            .handle
            .wait()
            .map_err(|source| SessionError::Spawn { command: self.command.clone(), source })?;
        Ok(Exit::of(out.status))
    }
}

/// How a process ended (a workload, a daemon).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// This signal killed it: a crash (SIGSEGV, SIGABRT) or a kill.
    Signal(i32),
}

impl Exit {
    /// How a process with `status` ended.
    pub fn of(status: std::process::ExitStatus) -> Exit {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                return Exit::Signal(sig);
            }
        }
        Exit::Code(status.code().unwrap_or(1))
    }

    /// The status a shell gives it: the exit status, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            Exit::Code(code) => code,
            Exit::Signal(sig) => 128 + sig,
        }
    }

    /// Whether a signal of a crash killed it (SIGSEGV, SIGABRT, SIGBUS,
    /// SIGILL, SIGFPE), not one sent to end it (SIGINT, SIGTERM, SIGKILL).
    pub fn crashed(self) -> bool {
        matches!(self, Exit::Signal(4 | 6 | 7 | 8 | 11))
    }
}

/// `exited with status 3`, `was killed by signal 6 (SIGABRT)`.
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Exit::Code(code) => write!(f, "exited with status {code}"),
            Exit::Signal(sig) => {
                // Linux's numbers for the signals that end a workload.
                let name = match sig {
                    1 => "SIGHUP",
                    2 => "SIGINT",
                    3 => "SIGQUIT",
                    4 => "SIGILL",
                    6 => "SIGABRT",
                    7 => "SIGBUS",
                    8 => "SIGFPE",
                    9 => "SIGKILL",
                    11 => "SIGSEGV",
                    13 => "SIGPIPE",
                    15 => "SIGTERM",
                    _ => return write!(f, "was killed by signal {sig}"),
                };
                write!(f, "was killed by signal {sig} ({name})")
            }
        }
    }
}

/// Start the workload `argv` in the foreground (inheriting stdio) with `env`
/// added. Fails with [`SessionError::Spawn`] when it cannot be started (not
/// found, not executable), before anything else has to happen.
pub fn start_workload(argv: &[OsString], env: &[(&str, OsString)]) -> Result<Workload> {
    let command = argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let mut expression = cmd(argv).unchecked();
    for (k, v) in env {
        expression = expression.env(k, v);
    }
    let handle = expression
        .start()
        .map_err(|source| SessionError::Spawn { command: command.clone(), source })?;
    Ok(Workload { handle, command })
}

/// How stopping a process went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// It ended after SIGTERM.
    Terminated,
    /// It ignored SIGTERM for the whole grace period and was killed.
    Killed,
    /// It was not running (gone, or a zombie nobody reaped).
    NotRunning,
}

/// Whether `pid` is alive: it exists and is not a zombie (processes
/// reparented to a container's PID 1 may never be reaped).
pub fn is_running(pid: u32) -> bool {
    proc_stat(pid).is_some_and(|(state, _)| !matches!(state, 'Z' | 'X'))
}

/// A process's state letter (`R`, `S`, `T`, `Z`, ...) and parent pid, from
/// `/proc/<pid>/stat` (`pid (comm) state ppid ...`; comm may hold spaces and
/// parentheses); `None` when the process is gone or there is no `/proc`.
pub fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// SIGTERM, wait up to `grace` (zombie-aware), then SIGKILL.
pub fn stop_process(pid: u32, grace: Duration) -> Stopped {
    if !is_running(pid) {
        return Stopped::NotRunning;
    }
    let signal = |sig: &str| {
        let argv: Vec<OsString> =
            vec!["kill".into(), format!("-{sig}").into(), pid.to_string().into()];
        let _ = cmd(&argv).stdout_null().stderr_null().unchecked().run();
    };
    signal("TERM");
    let started = Instant::now();
    while started.elapsed() < grace {
        if !is_running(pid) {
            return Stopped::Terminated;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal("KILL");
    let started = Instant::now();
    while is_running(pid) && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    Stopped::Killed
}

/// The Kineto hook for a session whose step marks go to `steps_dir` and
/// whose daemon's IPC sockets are in `ipc_dir`: imported from a `.pth` at
/// interpreter start, it points a worker's Kineto at the session's daemon
/// (`KINETO_IPC_SOCKET_DIR`, unless the worker sets one), so a node's own
/// dynolog service, which holds the host-wide endpoint, does not take its
/// registration; it keeps the torchrun
/// launcher and startup helpers off the daemon, and imports `torch.profiler`
/// in the worker so iteration capture has its optimizer-step hook
/// (unmodified workloads never import it). It marks the worker
/// `<pid>.hooked`, then `<pid>.stepped` after its first optimizer step: Kineto
/// counts iterations only from then on, and an iteration request that comes
/// earlier gets a 500 ms time window instead.
pub fn hook_module(steps_dir: &Path, ipc_dir: &Path) -> String {
    let literal = |p: &Path| serde_json::to_string(&p.to_string_lossy()).expect("a string");
    HOOK_TEMPLATE
        .replace("@STEPS_DIR@", &literal(steps_dir))
        .replace("@IPC_DIR@", &literal(ipc_dir))
}

const HOOK_TEMPLATE: &str = r#""""madengine's Kineto hook (installed by `madengine dynolog start`, removed by `stop`)."""
import os
import sys

_STEPS_DIR = @STEPS_DIR@
_IPC_DIR = @IPC_DIR@


def _mark(what, on=True):
    path = os.path.join(_STEPS_DIR, "%d.%s" % (os.getpid(), what))
    try:
        if on:
            open(path, "w").close()
        else:
            os.remove(path)
    except OSError:
        pass


def _madengine_kineto_hook():
    if not (os.environ.get("KINETO_USE_DAEMON") or os.environ.get("MADENGINE_KINETO_USE_DAEMON")):
        return
    argv = sys.argv or [""]
    base = os.path.basename(argv[0] or "")
    # `python -m torch.distributed.run ...` shows as ['-m', ...] here: the
    # module's name is only in the process's own command line.
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = argv + [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        pass
    joined = " ".join(argv)
    launcher = (
        base == "torchrun" or base.startswith("torchrun.")
        or "torch.distributed.run" in joined or "torch.distributed.elastic" in joined
        or "torch/distributed/run.py" in joined
    )
    if launcher:
        # The launcher only supervises: keep it off the daemon, pass the
        # setting on to its children.
        if os.environ.get("KINETO_USE_DAEMON"):
            os.environ["MADENGINE_KINETO_USE_DAEMON"] = os.environ.pop("KINETO_USE_DAEMON")
        return
    if any(os.path.basename(a) in ("rocenv_tool.py", "pip", "pip3", "rocm-sdk") for a in argv):
        os.environ.pop("KINETO_USE_DAEMON", None)
        return
    if not os.environ.get("KINETO_USE_DAEMON") and os.environ.get("MADENGINE_KINETO_USE_DAEMON"):
        os.environ["KINETO_USE_DAEMON"] = os.environ["MADENGINE_KINETO_USE_DAEMON"]
    if not os.environ.get("KINETO_USE_DAEMON"):
        return
    # The session's daemon, not a node's own dynolog service (which holds
    # the host-wide endpoint), unless the worker names sockets of its own.
    os.environ.setdefault("KINETO_IPC_SOCKET_DIR", _IPC_DIR)
    # Marked before torch is imported: Kineto registers with the daemon while
    # torch loads, and the trigger must know at once that a step will follow.
    _mark("hooked")
    try:
        import torch.profiler  # noqa: F401  (registers Kineto's optimizer.step hook)
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except Exception:
        _mark("hooked", on=False)
        return
    stepped = []

    # Runs after Kineto's own hook (registered first): by now Kineto counts steps.
    def first_step(optimizer, args, kwargs):
        if not stepped:
            stepped.append(True)
            _mark("stepped")

    register_optimizer_step_post_hook(first_step)
    sys.stderr.write("madengine: Kineto optimizer-step hook registered (pid %d)\n" % os.getpid())


_madengine_kineto_hook()
"#;

/// The hook's module and `.pth` names for a session (per session, so two
/// sessions sharing an interpreter never remove each other's hook).
fn hook_names(state: &RunState) -> (String, String) {
    let id: u64 = state
        .dir
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let module = format!("madengine_kineto_hook_{id:016x}");
    (format!("{module}.py"), format!("{module}.pth"))
}

/// The first site-packages directory of `python`, asked with
/// `KINETO_USE_DAEMON` unset (the question must not register with a daemon).
pub fn site_packages(python: &Path) -> Result<PathBuf> {
    let argv: Vec<OsString> =
        vec![python.into(), "-c".into(), "import site; print(site.getsitepackages()[0])".into()];
    let out = cmd(&argv)
        .env_remove("KINETO_USE_DAEMON")
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|e| SessionError::SitePackages {
            python: python.to_path_buf(),
            detail: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = PathBuf::from(text.lines().last().unwrap_or(""));
    if !out.status.success() || !dir.is_dir() {
        return Err(SessionError::SitePackages { python: python.to_path_buf(), detail: text });
    }
    Ok(dir)
}

/// Install the hook into `site` (a site-packages directory); returns the files written.
pub fn install_hook(state: &RunState, site: &Path) -> Result<Vec<PathBuf>> {
    let (module, pth) = hook_names(state);
    let module_path = site.join(&module);
    let pth_path = site.join(&pth);
    let import = format!("import {}\n", module.trim_end_matches(".py"));
    // The module first: the .pth that imports it must never come alone.
    let module_text = hook_module(&state.steps_dir(), &state.ipc_dir());
    for (path, text) in [(&module_path, module_text.as_str()), (&pth_path, import.as_str())] {
        write_whole(path, text.as_bytes())?;
    }
    Ok(vec![module_path, pth_path])
}

/// Remove the session's hook from `site` (nothing to do is fine).
pub fn remove_hook(state: &RunState, site: &Path) -> Result<()> {
    let (module, pth) = hook_names(state);
    remove(&site.join(pth))?;
    remove(&site.join(module))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let state = RunState::create(dir.path().join("run")).unwrap();
        assert_eq!(state.started().unwrap(), None);
        let started =
            Started { daemon_pid: Some(7), port: 1778, trigger_pid: None, hook_site: None };
        state.set_started(&started).unwrap();
        assert_eq!(state.started().unwrap(), Some(started));
        state.clear_started().unwrap();
        assert_eq!(state.started().unwrap(), None);
        fs::write(state.steps_dir().join("42.hooked"), "").unwrap();
        state.clear_steps().unwrap();
        assert_eq!(fs::read_dir(state.steps_dir()).unwrap().count(), 0);
        fs::write(state.kineto_dir().join("trace_1.json"), "{}").unwrap();
        fs::write(state.kineto_dir().join("trace_2.json.tmp"), "{").unwrap();
        assert_eq!(state.traces().unwrap(), [state.kineto_dir().join("trace_1.json")]);
    }

    #[test]
    fn hook_names_differ_per_session() {
        let a = hook_names(&RunState { dir: "/tmp/a".into() });
        let b = hook_names(&RunState { dir: "/tmp/b".into() });
        assert_ne!(a, b);
        assert!(a.1.ends_with(".pth") && a.0.starts_with("madengine_kineto_hook_"));
    }

    /// A real workload's end, as a shell would give its status, and named.
    #[test]
    fn a_workload_ends_with_a_status_or_a_signal() {
        let ended = |script: &str| {
            start_workload(&["sh".into(), "-c".into(), script.into()], &[]).unwrap().wait().unwrap()
        };
        let exited = ended("exit 3");
        assert_eq!((exited, exited.code()), (Exit::Code(3), 3));
        assert_eq!(exited.to_string(), "exited with status 3");
        let aborted = ended("kill -ABRT $$");
        assert_eq!((aborted, aborted.code()), (Exit::Signal(6), 134));
        assert_eq!(aborted.to_string(), "was killed by signal 6 (SIGABRT)");
        assert!(aborted.crashed() && !exited.crashed());
        let killed = ended("kill -KILL $$");
        assert_eq!(killed.to_string(), "was killed by signal 9 (SIGKILL)");
        assert!(!killed.crashed(), "sent, not a crash");
        assert_eq!(Exit::Signal(64).to_string(), "was killed by signal 64");
    }

    #[test]
    fn stopping_a_process_that_is_gone() {
        assert_eq!(stop_process(u32::MAX - 1, Duration::from_millis(10)), Stopped::NotRunning);
    }
}
