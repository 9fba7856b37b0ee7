//! dynolog beside a node's own dynolog service, a daemon never killed by
//! madengine's client, and failures named for what happened: against the
//! fake daemon, which fails as the real one does (reference/dynolog.md: a
//! taken port or IPC endpoint logged and lived with, SIGPIPE when a client
//! leaves before its reply, one connection served at a time).

use std::{
    ffi::OsString,
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::dynolog::{
    Daemon, fast_policy, fixture, madengine, profile_env, start_args, throwaway_python,
};

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn run(dir: &Path, args: &[OsString]) -> (i32, String, String) {
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let out = madengine(dir, &refs);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A process the test started, killed however the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fake dynolog listening on `port`, its IPC sockets in `ipc` (else the
/// host-wide abstract endpoint, as a node's own service); its log.
#[allow(clippy::disallowed_methods, reason = "tests start the fake daemon")]
fn fake_daemon(dir: &Path, port: u16, ipc: Option<&Path>) -> (Killed, std::path::PathBuf) {
    let log = dir.join(format!("daemon-{port}.log"));
    let mut command = Command::new(fixture("fake_dynolog.py"));
    command
        .args(["--enable_ipc_monitor", "--port", &port.to_string()])
        .stdout(std::fs::File::create(&log).unwrap());
    match ipc {
        Some(dir) => command.env("KINETO_IPC_SOCKET_DIR", dir),
        None => command.env_remove("KINETO_IPC_SOCKET_DIR"),
    };
    let child = Killed(command.spawn().unwrap());
    for _ in 0..200 {
        if std::fs::read_to_string(&log).is_ok_and(|l| l.contains("Listening to connections")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    (child, log)
}

fn service(dir: &Path, port: u16) -> (Killed, std::path::PathBuf) {
    fake_daemon(dir, port, None)
}

/// `dynolog start` beside a node's dynolog service: its daemon gets IPC
/// sockets of its own (the service holds the host-wide endpoint), the
/// workload is pointed at them (the Kineto hook, and the environment said),
/// and the capture works; before, the daemon ran without IPC and the
/// workload registered with the service.
#[test]
fn start_beside_a_dynolog_service_keeps_its_workload() {
    let dir = tempfile::tempdir().unwrap();
    let (system, system_log) = service(dir.path(), free_port());
    let state = dir.path().join("state");
    let python = throwaway_python(dir.path());
    let mut args = start_args(&state, &fixture("fake_dynolog.py"), &python);
    args.extend(os(&["--port", &free_port().to_string(), "--json"]));
    args.extend(fast_policy());
    let (code, stdout, stderr) = run(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let ipc = state.join("ipc");
    assert!(
        stderr.contains(&format!(
            "the workload reaches it with KINETO_USE_DAEMON=1 KINETO_IPC_SOCKET_DIR={}",
            ipc.display()
        )),
        "{stderr}"
    );
    let session: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(session["workload_env"]["KINETO_IPC_SOCKET_DIR"], ipc.to_str().unwrap());
    let ours = std::fs::read_to_string(state.join("dynolog.log")).unwrap();
    assert!(!ours.contains("FabricManager"), "{ours}");

    // The model command as the original's tools config runs it: only
    // KINETO_USE_DAEMON set; the hook in its interpreter does the rest.
    #[allow(clippy::disallowed_methods, reason = "the workload")]
    let workload = Command::new(&python)
        .arg(fixture("fake_workload.py"))
        .arg("4")
        .env("KINETO_USE_DAEMON", "1")
        .env_remove("KINETO_IPC_SOCKET_DIR")
        .env("FAKE_WORKLOAD_TRACED_WITHIN", "30")
        .output()
        .unwrap();
    assert!(workload.status.success(), "{}", String::from_utf8_lossy(&workload.stderr));
    let (code, _, stderr) = run(
        dir.path(),
        &[os(&["dynolog", "stop", "--state"]), vec![state.clone().into()]].concat(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("captured 1 torch.profiler trace(s)"), "{stderr}");
    let system_log = std::fs::read_to_string(system_log).unwrap();
    assert!(!system_log.contains("Registered process"), "the service took it: {system_log}");
    drop(system);
}

/// `dynolog start` on a port a dynolog service holds: refused at start,
/// naming the holder (before, the service answered the readiness check,
/// start said it was up, and the trigger asked the service for every
/// process of job 0).
#[test]
fn start_on_a_taken_port_names_who_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (system, _) = service(dir.path(), port);
    let state = dir.path().join("state");
    let python = throwaway_python(dir.path());
    let mut args = start_args(&state, &fixture("fake_dynolog.py"), &python);
    args.extend(os(&["--port", &port.to_string()]));
    let (code, _, stderr) = run(dir.path(), &args);
    assert_eq!(code, 5, "{stderr}");
    let pid = system.0.id();
    assert!(stderr.contains(&format!("error: port {port} is taken by pid {pid} (")), "{stderr}");
    assert!(
        stderr.contains(&format!("`madengine dynolog trigger --port {port}` asks it for traces")),
        "{stderr}"
    );
    assert!(!state.join("started.json").exists(), "a session was left");
    drop(system);
}

/// A client holding the daemon (it serves one connection at a time): a
/// status request times out, is left to a background reader, and the
/// daemon lives to answer the next one. Before, madengine closed with the
/// request in flight, and the daemon died of SIGPIPE when it answered.
#[test]
fn a_status_that_times_out_never_kills_the_daemon() {
    let daemon = Daemon::start();
    let dir = tempfile::tempdir().unwrap();
    let port = daemon.port.to_string();
    let silent = TcpStream::connect(("127.0.0.1", daemon.port)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (code, _, stderr) =
        run(dir.path(), &os(&["dynolog", "status", "--port", &port, "--timeout", "1"]));
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("did not answer within 1 s"), "{stderr}");
    assert!(stderr.contains("left to a background reader"), "{stderr}");
    drop(silent);
    std::thread::sleep(Duration::from_millis(500));
    let (code, stdout, stderr) = run(dir.path(), &os(&["dynolog", "status", "--port", &port]));
    assert_eq!((code, stdout.as_str()), (0, "status: 1\n"), "the daemon died: {stderr}");
    let mut daemon = daemon;
    assert!(daemon.child.try_wait().unwrap().is_none(), "the daemon died");
}

/// Something else on the port: a web server that answers at once is named
/// as one (not "a reply length of 1347703880 bytes"); one that waits for
/// more (Python's http.server) times out, and the hint names the process
/// that holds the port.
#[test]
#[allow(clippy::disallowed_methods, reason = "tests start servers")]
fn a_port_that_answers_but_not_as_dynolog_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 64];
        let _ = conn.read(&mut buf);
        let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let (code, _, stderr) =
        run(dir.path(), &os(&["dynolog", "status", "--port", &port.to_string()]));
    server.join().unwrap();
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: 127.0.0.1:{port} answers, but not as dynolog: an HTTP server (`HTTP/1.1 400 Bad Request`)"
        )) || stderr.contains("answers, but not as dynolog: an HTTP server (`HTTP/1.1 400 Bad Request`)"),
        "{stderr}"
    );

    let port = free_port();
    let http = Killed(
        Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let (code, _, stderr) = run(
        dir.path(),
        &os(&[
            "dynolog",
            "status",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--timeout",
            "1",
        ]),
    );
    let pid = http.0.id();
    drop(http);
    assert_eq!(code, 5, "{stderr}");
    assert!(
        stderr.contains(&format!("port {port} is held by pid {pid} ("))
            && stderr.contains("http.server")
            && stderr.contains("which does not look like dynolog"),
        "{stderr}"
    );
}

/// The daemon dies during the warm-up: said so, with how it ended, not
/// "rejected ... start one with `madengine dynolog start`" nor a trigger
/// log `profile` does not have.
#[test]
fn a_daemon_that_dies_before_the_request_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, traces) = profile_env(
        dir.path(),
        &["--warmup-s", "2"],
        &["4"],
        &[("FAKE_DYNOLOG_EXIT_AFTER_S", "1")],
    );
    assert_eq!(code, 0, "the workload's own status: {stderr}");
    assert!(traces.is_empty());
    assert!(
        stderr.contains("why: the dynolog daemon (pid ")
            && stderr.contains(") exited with status 1 before a trace was requested; the workload exited with status 0 later"),
        "{stderr}"
    );
    assert!(!stderr.contains("madengine dynolog start"), "{stderr}");
    assert!(!stderr.contains("see the trigger log"), "{stderr}");
    assert!(!stderr.contains("rejected"), "{stderr}");
}

/// The daemon dies after it accepted the request, before kineto fetched
/// its config: said so, not "the workload may have ended inside the trace
/// window" (it ran on).
#[test]
fn a_daemon_that_dies_after_accepting_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, traces) =
        profile_env(dir.path(), &[], &["4"], &[("FAKE_DYNOLOG_EXIT_AFTER_REQUEST", "1")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(traces.is_empty(), "{stderr}");
    assert!(
        stderr.contains(") exited with status 1 after it accepted the trace request, before kineto fetched its config; the workload exited with status 0 later"),
        "{stderr}"
    );
    assert!(!stderr.contains("may have ended inside the trace window"), "{stderr}");
}

/// `dynolog trigger` with no daemon exits 5 (as every command that cannot
/// reach it), saying it could not be reached, not that it rejected anything.
#[test]
fn a_trigger_without_a_daemon_exits_5() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let args = [
        os(&[
            "dynolog",
            "trigger",
            "--port",
            &free_port().to_string(),
            "--warmup-s",
            "0",
            "--state",
        ]),
        vec![state.into()],
    ]
    .concat();
    let (code, _, stderr) = run(dir.path(), &args);
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("the dynolog daemon could not be reached"), "{stderr}");
    assert!(!stderr.contains("rejected"), "{stderr}");
}

/// A `req` datagram from a fake Kineto process `pid` to the daemon whose IPC
/// sockets are in `dir` (reference/dynolog.md §4): it registers.
fn register(dir: &Path, pid: i32) {
    let me = std::os::unix::net::UnixDatagram::bind(dir.join(format!("client{pid}"))).unwrap();
    let mut payload = Vec::new();
    payload.extend(2i32.to_ne_bytes());
    payload.extend(1i32.to_ne_bytes());
    payload.extend(0i64.to_ne_bytes());
    payload.extend(pid.to_ne_bytes());
    let mut message = (payload.len() as u64).to_ne_bytes().to_vec();
    let mut kind = [0u8; 32];
    kind[..3].copy_from_slice(b"req");
    message.extend(kind);
    message.extend(payload);
    me.send_to(&message, dir.join("dynolog")).unwrap();
    me.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = [0u8; 256];
    me.recv(&mut reply).unwrap();
}

/// `dynolog gputrace` that triggers nothing (the matched process still has
/// an earlier request pending) fails, with or without `--wait`: no trace
/// will come of it.
#[test]
fn a_gputrace_that_triggers_nothing_fails() {
    let dir = tempfile::tempdir().unwrap();
    let ipc = dir.path().join("ipc");
    std::fs::create_dir(&ipc).unwrap();
    let port = free_port();
    let (daemon, _) = fake_daemon(dir.path(), port, Some(&ipc));
    register(&ipc, 4242);
    let gputrace = |wait: bool| {
        let mut args = os(&[
            "dynolog",
            "gputrace",
            "--port",
            &port.to_string(),
            "--log-file",
            "/tmp/madengine-test-trace.json",
        ]);
        if wait {
            args.extend(os(&["--wait", "--wait-timeout", "1"]));
        }
        run(dir.path(), &args)
    };
    let (code, stdout, stderr) = gputrace(false);
    assert_eq!(code, 0, "{stdout}{stderr}");
    for wait in [false, true] {
        let (code, stdout, stderr) = gputrace(wait);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stdout.contains("1 process(es) still had an earlier request pending"), "{stdout}");
        assert!(!stderr.contains("trace file(s) written"), "{stderr}");
    }
    drop(daemon);
}

/// `stop` of a `--no-trigger` session with no trace says why: nothing was
/// requested (not "the trigger never finished").
#[test]
fn stop_of_a_session_without_a_trigger_says_nothing_was_requested() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let python = throwaway_python(dir.path());
    let mut args = start_args(&state, &fixture("fake_dynolog.py"), &python);
    args.extend(os(&["--port", &free_port().to_string(), "--no-trigger"]));
    let (code, _, stderr) = run(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) =
        run(dir.path(), &[os(&["dynolog", "stop", "--state"]), vec![state.into()]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("why: no trace was requested: the session was started with --no-trigger"),
        "{stderr}"
    );
    assert!(!stderr.contains("the trigger never finished"), "{stderr}");
}
