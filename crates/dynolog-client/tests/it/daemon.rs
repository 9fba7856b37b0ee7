//! Starting a daemon of our own ([`dynolog_client::start_daemon`]) against
//! the fake dynolog (`tests/fixtures/fake_dynolog.py`, which fails as the
//! real one does: a port or an IPC endpoint already taken, SIGPIPE).

use std::{net::TcpListener, path::PathBuf, time::Duration};

use dynolog_client::{RunState, SessionError, start_daemon};

fn fake_dynolog() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_dynolog.py")
}

fn free_port() -> u16 {
    dynolog_client::free_port().unwrap()
}

fn session(dir: &std::path::Path, name: &str) -> RunState {
    RunState::create(dir.join(name)).unwrap()
}

/// Ready when its own log says it listens on our port: no request is sent
/// (a request abandoned by a readiness poll kills a daemon held by another
/// client), and the daemon we stop is the one we started.
#[test]
fn a_daemon_is_ready_by_its_own_log_with_no_request_sent() {
    let dir = tempfile::tempdir().unwrap();
    let state = session(dir.path(), "a");
    let port = free_port();
    let daemon = start_daemon(
        &state,
        &fake_dynolog(),
        port,
        Some(&state.ipc_dir()),
        Duration::from_secs(15),
    )
    .unwrap();
    assert!(dynolog_client::is_running(daemon.pid()));
    let log = std::fs::read_to_string(state.daemon_log()).unwrap();
    assert!(log.contains(&format!("Listening to connections on port {port}")), "{log}");
    assert!(!log.contains("Received connection"), "a request was sent: {log}");
    dynolog_client::stop_process(daemon.detach(), Duration::from_secs(5));
}

/// A port something listens on is refused before any daemon is started,
/// naming who holds it: a dynolog started there would run without its RPC
/// server, and a readiness check would be answered by the other process.
#[test]
fn a_taken_port_is_refused_naming_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let state = session(dir.path(), "a");
    let held = TcpListener::bind("[::]:0").or_else(|_| TcpListener::bind("0.0.0.0:0")).unwrap();
    let port = held.local_addr().unwrap().port();
    let err = start_daemon(&state, &fake_dynolog(), port, None, Duration::from_secs(15))
        .expect_err("a taken port");
    let SessionError::PortTaken { port: p, holder } = &err else { panic!("{err:?}") };
    assert_eq!(*p, port);
    assert_eq!(holder.as_ref().map(|h| h.pid), Some(std::process::id()), "{err}");
    assert!(
        err.to_string().starts_with(&format!("port {port} is taken by pid {}", std::process::id())),
        "{err}"
    );
    // Nothing was started: no log.
    assert!(!state.daemon_log().exists());
}

/// Another dynolog with its IPC monitor on the host-wide endpoint (the
/// abstract `dynolog` socket, as a node's own service): one more started
/// without sockets of its own runs without IPC (no PyTorch process could
/// register with it), so it is stopped and said so.
#[test]
fn a_daemon_without_its_ipc_endpoint_is_stopped_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let crippled = |result: Result<dynolog_client::Daemon, SessionError>| match result {
        Err(SessionError::DaemonCrippled { what, .. }) => {
            assert!(what.contains("without its IPC endpoint"), "{what}");
            true
        }
        Err(e) => panic!("{e}"),
        Ok(daemon) => {
            dynolog_client::stop_process(daemon.detach(), Duration::from_secs(5));
            false
        }
    };
    let wait = Duration::from_secs(15);
    let first = session(dir.path(), "first");
    match start_daemon(&first, &fake_dynolog(), free_port(), None, wait) {
        // A dynolog on this host holds the endpoint already: so it goes.
        Err(e) => assert!(crippled(Err(e))),
        Ok(system) => {
            let second = session(dir.path(), "second");
            let result = start_daemon(&second, &fake_dynolog(), free_port(), None, wait);
            dynolog_client::stop_process(system.detach(), Duration::from_secs(5));
            assert!(crippled(result), "a second daemon on the same IPC endpoint was accepted");
        }
    }
}

/// A daemon that dies during start-up is named with how it ended, and why
/// that likely happened.
#[test]
fn a_daemon_that_dies_is_named_by_its_signal() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = session(dir.path(), "a");
    let script = dir.path().join("dynolog");
    std::fs::write(&script, "#!/bin/sh\necho 'I1205 starting'\nkill -PIPE $$\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = start_daemon(&state, &script, free_port(), None, Duration::from_secs(15))
        .expect_err("it died");
    let text = err.to_string();
    assert!(
        text.contains("was killed by signal 13 (SIGPIPE) during start-up (dynolog dies of SIGPIPE when a client closes its connection before the daemon writes its reply"),
        "{text}"
    );
    assert!(text.ends_with("I1205 starting"), "{text}");
    // One that prints nothing and exits: its empty log is said so.
    std::fs::write(&script, "#!/bin/sh\nexit 1\n").unwrap();
    let err = start_daemon(&state, &script, free_port(), None, Duration::from_secs(15))
        .expect_err("it exited");
    assert!(
        err.to_string().ends_with("exited with status 1 during start-up; it printed nothing"),
        "{err}"
    );
}
