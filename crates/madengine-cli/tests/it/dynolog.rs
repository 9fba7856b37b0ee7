//! `madengine dynolog ...` and `madengine profile`, end to end against the
//! fake daemon and fake Kineto workload of dynolog-client's tests (they
//! follow reference/dynolog.md: wire protocol, IPC registration, file names).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
};

use crate::cli_snapshot;

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dynolog-client/tests/fixtures").join(name)
}

#[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
pub(crate) fn madengine(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(crate::binary()).args(args).current_dir(dir).output().unwrap()
}

pub(crate) fn fast_policy() -> Vec<OsString> {
    ["--warmup-s", "0.5", "--retry-interval-s", "0.3", "--stable-s", "0.3", "--max-attempts", "20"]
        .iter()
        .map(OsString::from)
        .collect()
}

/// `madengine profile` against the fake daemon; returns (exit code, stderr, traces written).
fn profile(dir: &Path, extra: &[&str], workload: &[&str]) -> (i32, String, Vec<String>) {
    profile_env(dir, extra, workload, &[])
}

/// As [`profile`], with `env` set for madengine and so for the workload.
#[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
pub(crate) fn profile_env(
    dir: &Path,
    extra: &[&str],
    workload: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, Vec<String>) {
    let mut args: Vec<OsString> = vec![
        "profile".into(),
        "--dynolog-bin".into(),
        fixture("fake_dynolog.py").into(),
        "--no-hook".into(),
    ];
    // The fast policy, less what the test sets itself.
    let policy = fast_policy();
    for pair in policy.chunks(2) {
        if !extra.iter().any(|e| pair[0] == *e) {
            args.extend(pair.iter().cloned());
        }
    }
    args.extend(extra.iter().map(OsString::from));
    args.push("--".into());
    args.push("python3".into());
    args.push(fixture("fake_workload.py").into());
    args.extend(workload.iter().map(OsString::from));
    let out = Command::new(crate::binary())
        .args(&args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .unwrap();
    let traces = std::fs::read_dir(dir.join("torch_profiler_output"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned(), traces)
}

#[test]
fn profile_captures_a_trace_and_exits_with_the_workload_status() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, traces) = profile(dir.path(), &[], &["5", "3"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(traces.len(), 1, "{stderr}");
    assert!(
        traces[0].starts_with("libkineto_trace_") && traces[0].ends_with(".json"),
        "{traces:?}"
    );
    // On a loaded machine the workload may register after the first request:
    // which attempt succeeds is timing, not behaviour.
    assert!(stderr.contains("trace request accepted on attempt "), "{stderr}");
    assert!(stderr.contains("madengine report tracelens --root torch_profiler_output"), "{stderr}");
    // and the trace is what report tracelens picks up
    let (_, plan_out) = (
        0,
        madengine(
            dir.path(),
            &["trace".as_ref(), "discover".as_ref(), "torch_profiler_output".as_ref()],
        ),
    );
    assert!(String::from_utf8_lossy(&plan_out.stdout).contains("0 (distributedInfo)"));
}

/// A workload that crashes once its trace is asked for (PyTorch 2.11 on
/// CUDA aborted so when it ended with a trace window open): madengine exits
/// as a shell would (128 + the signal) and says the workload died, and why
/// that can happen, rather than guess that it ended inside the window.
#[test]
fn a_workload_that_dies_while_traced_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, traces) =
        profile_env(dir.path(), &[], &["5"], &[("FAKE_WORKLOAD_DIE_ON_CONFIG", "6")]);
    assert_eq!(code, 134, "{stderr}");
    assert!(traces.is_empty(), "{traces:?}");
    assert!(stderr.contains("double free or corruption"), "the workload's own words: {stderr}");
    assert!(stderr.contains("no torch.profiler traces were captured"), "{stderr}");
    assert!(
        stderr.contains(
            "why: a trace was requested, but the workload was killed by signal 6 (SIGABRT) \
             before kineto wrote it"
        ) && stderr.contains("can crash inside PyTorch's profiler: ask for the trace earlier"),
        "{stderr}"
    );
    assert!(!stderr.contains("may have ended inside the trace window"), "{stderr}");
    assert!(!stderr.contains("analyze with"), "nothing to analyze: {stderr}");

    // Killed from outside (the OOM killer, a scheduler): said, but no crash.
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, _) =
        profile_env(dir.path(), &[], &["5"], &[("FAKE_WORKLOAD_DIE_ON_CONFIG", "9")]);
    assert_eq!(code, 137, "{stderr}");
    assert!(stderr.contains("the workload was killed by signal 9 (SIGKILL) before"), "{stderr}");
    assert!(!stderr.contains("crash inside PyTorch's profiler"), "{stderr}");
}

#[test]
fn two_profiled_runs_at_once_keep_apart() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| profile(a.path(), &[], &["5"]));
        let hb = s.spawn(|| profile(b.path(), &["--log-name", "other.pt.trace.json"], &["5"]));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert_eq!((ra.0, rb.0), (0, 0), "{}\n{}", ra.1, rb.1);
    assert_eq!(ra.2.len(), 1, "{}", ra.1);
    assert_eq!(rb.2.len(), 1, "{}", rb.1);
    assert!(ra.2[0].starts_with("libkineto_trace_"));
    assert!(rb.2[0].starts_with("other_") && rb.2[0].ends_with(".pt.trace.json"), "{:?}", rb.2);
}

#[test]
fn a_workload_without_kineto_gets_no_trace_and_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<OsString> = vec![
        "profile".into(),
        "--dynolog-bin".into(),
        fixture("fake_dynolog.py").into(),
        "--no-hook".into(),
    ];
    args.extend(fast_policy());
    args.truncate(args.len() - 2);
    args.extend(["--max-attempts", "3", "--", "sh", "-c", "sleep 3"].map(OsString::from));
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let out = madengine(dir.path(), &refs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no torch.profiler traces were captured"), "{stderr}");
    assert!(
        stderr.contains("never matched a PyTorch process") || stderr.contains("workload ended"),
        "{stderr}"
    );
    assert!(stderr.contains("=== ") && stderr.contains("dynolog.log"), "log tails: {stderr}");
}

#[test]
fn a_daemon_that_dies_at_start_is_reported_with_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("dynolog");
    std::fs::write(
        &bad,
        // Its log says so a moment before it exits (as a real failure
        // flushes it): read before the exit is seen, it is still a death.
        "#!/bin/sh\necho 'E1130 dynolog: bind(): Address already in use'\nsleep 0.05\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = madengine(
        dir.path(),
        &[
            "profile".as_ref(),
            "--dynolog-bin".as_ref(),
            bad.as_os_str(),
            "--no-hook".as_ref(),
            "--".as_ref(),
            "true".as_ref(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("exited with status 1 during start-up")
            && stderr.contains("Address already in use"),
        "{stderr}"
    );
    // The log the error names is kept (the session's temp directory would go).
    let log = stderr.split("the end of its log (").nth(1).unwrap().split("):").next().unwrap();
    assert!(Path::new(log).is_file(), "{log}: {stderr}");
    assert!(stderr.contains("the session directory is kept"), "{stderr}");
    let _ = std::fs::remove_dir_all(Path::new(log).parent().unwrap());

    // One that prints nothing (`--dynolog-bin /bin/false`): said so, and no
    // path to a log that is gone.
    let out = madengine(
        dir.path(),
        &[
            "profile".as_ref(),
            "--dynolog-bin".as_ref(),
            "/bin/false".as_ref(),
            "--no-hook".as_ref(),
            "--".as_ref(),
            "true".as_ref(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("exited with status 1 during start-up; it printed nothing"),
        "{stderr}"
    );
    assert!(!stderr.contains("dynolog.log"), "{stderr}");
}

/// A fake daemon of our own on a free port, for the one-shot commands.
pub(crate) struct Daemon {
    pub(crate) child: std::process::Child,
    pub(crate) port: u16,
}

impl Daemon {
    #[allow(clippy::disallowed_methods, reason = "tests start the fake daemon")]
    pub(crate) fn start() -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(fixture("fake_dynolog.py"))
            .args(["--port", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let client = dynolog_client_probe(port);
        assert!(client, "the fake daemon did not come up");
        Daemon { child, port }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn dynolog_client_probe(port: u16) -> bool {
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn status_version_and_gputrace() {
    let daemon = Daemon::start();
    let dir = tempfile::tempdir().unwrap();
    let port = daemon.port.to_string();
    cli_snapshot!(dir.path(), ["dynolog", "status", "--port", &port], @r"
    exit code: 0
    ----- stdout -----
    status: 1
    ----- stderr -----
    ");
    cli_snapshot!(dir.path(), ["dynolog", "version", "--port", &port, "--json"], @r#"
    exit code: 0
    ----- stdout -----
    {
      "version": 1,
      "dynolog_version": "0.6.0"
    }
    ----- stderr -----
    "#);
    // nothing registered: exit 1 with what to check
    cli_snapshot!(dir.path(), ["dynolog", "gputrace", "--port", &port, "--log-file", "/tmp/x.pt.trace.json", "--iterations", "3"], @r"
    exit code: 1
    ----- stdout -----
    no process matched: check --job-id and --pids, and that the workload runs with KINETO_USE_DAEMON=1
    ----- stderr -----
    ");
    let args = ["dynolog", "gputrace", "--port", &port, "--log-file", "/tmp/x.json", "--json"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    insta::assert_snapshot!("json_shape_dynolog_gputrace", crate::json_shape(&text));
    crate::reads_back::<dynolog_client::Triggered>(&crate::stdout_json(&text), "dynolog-gputrace");
    // kineto would ignore this path: refused before anything is sent
    cli_snapshot!(dir.path(), ["dynolog", "gputrace", "--port", &port, "--log-file", "/workspace/trace.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: kineto only writes on-demand traces under /tmp/ (it would ignore /workspace/trace.json and write /tmp/libkineto_activities_<pid>.json instead); use a path under /tmp/, or set KINETO_ONDEMAND_TRACE_DIR in the workload's environment to the directory you want
    ");
    drop(daemon);
}

#[test]
fn a_trigger_run_by_hand_gives_its_outcome_as_json() {
    let daemon = Daemon::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let port = daemon.port.to_string();
    let args =
        ["dynolog", "trigger", "--port", &port, "--warmup-s", "0", "--retry-interval-s", "0.1"]
            .map(OsString::from)
            .into_iter()
            .chain(["--max-attempts".into(), "2".into(), "--json".into(), "--state".into()])
            .chain([state.clone().into_os_string()])
            .collect::<Vec<OsString>>();
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let out = madengine(dir.path(), &refs);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // Nothing registered: exit 1, and no retry promised after the last attempt.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no PyTorch process matched yet (attempt 1); retrying"), "{stderr}");
    assert!(!stderr.contains("(attempt 2); retrying"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "version": 1,
            "outcome": {"result": "no_process", "attempts": 2},
            "state_dir": state.to_str().unwrap(),
        })
    );
    crate::reads_back::<dynolog_client::TriggerEnded>(&json, "dynolog-trigger");
    drop(daemon);
}

#[test]
fn no_daemon_exits_5() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = crate::run_cli(
        dir.path(),
        &["dynolog".as_ref(), "status".as_ref(), "--port".as_ref(), port.as_ref()],
        &[],
    );
    assert!(text.starts_with("exit code: 5"), "{text}");
    assert!(
        text.contains("connection refused") && text.contains("madengine dynolog start"),
        "{text}"
    );
}

/// The interpreter of a venv of its own under `dir`, so the Kineto hook goes
/// into a throw-away site-packages.
pub(crate) fn throwaway_python(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    #[allow(clippy::disallowed_methods, reason = "test setup")]
    let made =
        Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().unwrap();
    assert!(made.success());
    venv.join("bin/python3")
}

/// The Kineto hook's files in `site`.
pub(crate) fn hook_files(site: impl AsRef<Path>) -> Vec<String> {
    std::fs::read_dir(site.as_ref())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("madengine_kineto_hook"))
        .collect()
}

#[test]
fn start_trigger_stop_as_pre_and_post_steps() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    // stop without start: a warning, exit 0
    let out = madengine(
        dir.path(),
        &["dynolog".as_ref(), "stop".as_ref(), "--state".as_ref(), state.as_os_str()],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dynolog was not started"));

    let python = throwaway_python(dir.path());

    let mut args = start_args(&state, &fixture("fake_dynolog.py"), &python);
    args.extend(["--port".into(), port.clone().into()]);
    args.extend(fast_policy());
    args.push("--json".into());
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let out = madengine(dir.path(), &refs);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("installed the Kineto optimizer-step hook"), "{stderr}");
    let site = stderr.split("hook in ").nth(1).unwrap().lines().next().unwrap().trim().to_string();
    let pth: Vec<_> = hook_files(&site).into_iter().filter(|n| n.ends_with(".pth")).collect();
    assert_eq!(pth.len(), 1, "{pth:?}");
    // --json: the session, as stop will find it.
    let stdout = String::from_utf8_lossy(&out.stdout);
    insta::assert_snapshot!("json_shape_dynolog_start", crate::json_shape(&stdout));
    crate::reads_back::<dynolog_client::Session>(
        &serde_json::from_str(&stdout).unwrap(),
        "dynolog-start",
    );
    let session: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(session["state_dir"], state.to_str().unwrap(), "{session}");
    assert_eq!(session["port"].to_string(), port, "{session}");
    assert_eq!(session["hook_site"], site.as_str(), "{session}");
    assert_eq!(session["trigger_log"], state.join("trigger.log").to_str().unwrap(), "{session}");
    for pid in ["daemon_pid", "trigger_pid"] {
        let pid = session[pid].as_u64().unwrap_or_else(|| panic!("{pid}: {session}"));
        assert!(Path::new(&format!("/proc/{pid}")).exists(), "{pid} is not running: {session}");
    }

    // the workload, as the model command would run (abstract IPC socket, /tmp trace dir)
    #[allow(clippy::disallowed_methods, reason = "the workload")]
    let workload = Command::new(&python)
        .arg(fixture("fake_workload.py"))
        .arg("4")
        .env("KINETO_USE_DAEMON", "1")
        .env("FAKE_WORKLOAD_TRACED_WITHIN", "30")
        .output()
        .unwrap();
    assert!(workload.status.success(), "{}", String::from_utf8_lossy(&workload.stderr));

    let out = madengine(
        dir.path(),
        &[
            "dynolog".as_ref(),
            "stop".as_ref(),
            "--state".as_ref(),
            state.as_os_str(),
            "--port".as_ref(),
            port.as_ref(),
            "--json".as_ref(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    insta::assert_snapshot!("json_shape_dynolog_stop", crate::json_shape(&stdout));
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    crate::reads_back::<dynolog_client::Captured>(&value, "dynolog-stop");
    assert!(
        stderr.contains("captured 1 torch.profiler trace(s)"),
        "{stderr}\ntrigger log:\n{}",
        std::fs::read_to_string(state.join("trigger.log")).unwrap_or_default()
    );
    assert!(stderr.contains("removed the Kineto hook"), "{stderr}");
    assert_eq!(hook_files(&site), Vec::<String>::new());
}

/// `madengine dynolog start` with its state directory, daemon and interpreter.
pub(crate) fn start_args(state: &Path, dynolog: &Path, python: &Path) -> Vec<OsString> {
    ["dynolog", "start", "--state"]
        .map(OsString::from)
        .into_iter()
        .chain([state.into(), "--dynolog-bin".into(), dynolog.into(), "--python".into()])
        .chain([python.into()])
        .collect()
}

#[test]
fn a_start_that_fails_leaves_no_hook_and_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let python = throwaway_python(dir.path());
    let missing = dir.path().join("no_such_dynolog");
    let args = start_args(&state, &missing, &python);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    let out = madengine(dir.path(), &refs);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].contains("installed the Kineto optimizer-step hook"), "{stderr}");
    assert!(lines[1].starts_with("error: cannot start `"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`{}` was not found: install dynolog with `madengine setup dynolog`",
            missing.display()
        )),
        "{stderr}"
    );
    assert!(lines.last().unwrap().contains("removed the Kineto hook"), "{stderr}");
    let site = stderr.split("hook in ").nth(1).unwrap().lines().next().unwrap().trim().to_string();
    assert_eq!(hook_files(&site), Vec::<String>::new());
    // No session is left to stop.
    let out = madengine(
        dir.path(),
        &["dynolog".as_ref(), "stop".as_ref(), "--state".as_ref(), state.as_os_str()],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("dynolog was not started"));
}

#[test]
fn setup_dynolog_skips_when_installed_and_never_shows_the_token() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = |name: &str, body: &str| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // a curl that fails and echoes what it was given (as curl does in its errors)
    tool("curl", "echo \"curl: (22) The requested URL returned error: 403 for $5\" >&2; exit 22");
    let path = std::env::join_paths([bin.clone(), "/usr/bin".into(), "/bin".into()]).unwrap();
    let url = "https://me:hunter2@packages.example/dynolog.deb?token=abc";
    let (text, _) = crate::run_cli(
        dir.path(),
        &["setup".as_ref(), "dynolog".as_ref(), "--deb-url".as_ref(), url.as_ref()],
        &[("PATH", path.clone())],
    );
    assert!(!text.contains("hunter2") && !text.contains("token=abc"), "{text}");
    assert!(text.contains("https://me:***@packages.example/dynolog.deb?token=***"), "{text}");
    assert!(text.starts_with("exit code: 3"), "{text}");

    tool("dynolog", "exit 0");
    tool("dyno", "exit 0");
    let (text, _) = crate::run_cli(
        dir.path(),
        &["setup".as_ref(), "dynolog".as_ref(), "--deb-url".as_ref(), url.as_ref()],
        &[("PATH", path.clone())],
    );
    assert!(text.starts_with("exit code: 0") && text.contains("already installed"), "{text}");
    let args = ["setup", "dynolog", "--deb-url", url, "--json"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[("PATH", path)]);
    let json = text.split("----- stdout -----\n").nth(1).unwrap().split("----- stderr").next();
    let json: serde_json::Value = serde_json::from_str(json.unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "version": 1,
            "outcome": "already_there",
            "dynolog": bin.join("dynolog"),
            "dyno": bin.join("dyno"),
            "deb_url": "https://me:***@packages.example/dynolog.deb?token=***",
        })
    );
    crate::reads_back::<dynolog_client::SetUp>(&json, "setup-dynolog");
}

/// `madengine profile` in its own process group with TMPDIR in `dir`, until
/// its workload runs (and with `traced`, until the session holds a trace);
/// then madengine gets SIGINT, or with `group` the whole group, as from a
/// terminal's Ctrl-C. Returns (exit code, stderr, traces written).
#[allow(clippy::disallowed_methods, reason = "tests run the real binary and kill(1)")]
fn interrupted_profile(
    dir: &Path,
    seconds: &str,
    group: bool,
    traced: bool,
) -> (Option<i32>, String, usize) {
    use std::{os::unix::process::CommandExt, time::Duration};
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let child = Command::new(crate::binary())
        .arg("profile")
        .arg("--dynolog-bin")
        .arg(fixture("fake_dynolog.py"))
        .arg("--no-hook")
        .args(fast_policy())
        .args(["--", "python3"])
        .arg(fixture("fake_workload.py"))
        .arg(seconds)
        .current_dir(dir)
        .env("TMPDIR", &tmp)
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let workload = || !crate::children(pid, "fake_workload").is_empty();
    let trace = || {
        let Ok(sessions) = std::fs::read_dir(&tmp) else { return false };
        sessions.flatten().any(|s| {
            std::fs::read_dir(s.path().join("kineto")).is_ok_and(|d| {
                d.flatten().any(|t| t.file_name().to_string_lossy().ends_with(".json"))
            })
        })
    };
    let mut tries = 0;
    while !(workload() && (!traced || trace())) && tries < 1200 {
        std::thread::sleep(Duration::from_millis(50));
        tries += 1;
    }
    let target = if group { format!("-{pid}") } else { pid.to_string() };
    Command::new("kill").args(["-INT", "--", &target]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let traces = std::fs::read_dir(dir.join("torch_profiler_output")).map_or(0, |d| d.count());
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the session's state was left behind");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), traces)
}

#[test]
fn ctrl_c_during_profile_lets_the_workload_decide_and_still_cleans_up() {
    // Only madengine is signalled: the workload goes on and its exit code is
    // madengine's.
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, _) = interrupted_profile(dir.path(), "2", false, false);
    assert_eq!(code, Some(0), "{stderr}");
    // The terminal's Ctrl-C once a trace was captured: the workload dies of
    // it; madengine stops the daemon, keeps the trace, removes its state and
    // exits as the workload did.
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, traces) = interrupted_profile(dir.path(), "60", true, true);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("dynolog daemon (pid "), "{stderr}");
    assert_eq!(traces, 1, "{stderr}");
}

#[test]
fn traces_that_cannot_be_collected_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A file where the output directory should go: the copy fails after
    // the capture.
    std::fs::write(dir.path().join("blocked"), "").unwrap();
    let mut args: Vec<OsString> = vec![
        "profile".into(),
        "--dynolog-bin".into(),
        fixture("fake_dynolog.py").into(),
        "--no-hook".into(),
        "--output-dir".into(),
        "blocked/traces".into(),
    ];
    args.extend(fast_policy());
    args.extend(["--", "python3"].map(OsString::from));
    args.push(fixture("fake_workload.py").into());
    args.push("5".into());
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let out = Command::new(crate::binary())
        .args(&args)
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let kept = stderr
        .split("they are kept in ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("{stderr}"));
    let traces: Vec<_> = std::fs::read_dir(kept).unwrap().flatten().collect();
    assert_eq!(traces.len(), 1, "{stderr}");
    assert!(Path::new(kept).starts_with(&tmp));
}

#[test]
#[allow(clippy::disallowed_methods, reason = "tests run the real binary and kill(1)")]
fn ctrl_c_before_the_workload_starts_runs_nothing_and_cleans_up() {
    use std::{os::unix::fs::PermissionsExt, time::Duration};
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A daemon that takes two seconds to come up.
    let slow = dir.path().join("slow_dynolog");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\nsleep 2\nexec python3 '{}' \"$@\"\n",
            fixture("fake_dynolog.py").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = Command::new(crate::binary())
        .arg("profile")
        .arg("--dynolog-bin")
        .arg(&slow)
        .arg("--no-hook")
        .args(fast_policy())
        .args(["--", "touch", "workload_ran"])
        .current_dir(dir.path())
        .env("TMPDIR", &tmp)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    // Once the daemon is starting, before the workload: Ctrl-C.
    let starting = || !crate::children(child.id(), "slow_dynolog").is_empty();
    let mut tries = 0;
    while !starting() && tries < 600 {
        std::thread::sleep(Duration::from_millis(20));
        tries += 1;
    }
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted before the workload started; it was not run"), "{stderr}");
    assert!(stderr.contains("dynolog daemon (pid "), "the daemon was not stopped: {stderr}");
    assert!(!dir.path().join("workload_ran").exists(), "the workload ran");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the session's state was left behind");
}

#[test]
fn a_workload_that_cannot_start_exits_as_a_shell_would() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not_executable.sh"), "true\n").unwrap();
    for (program, code) in [("no_such_program_xyz", 127), ("./not_executable.sh", 126)] {
        let args: Vec<OsString> = vec![
            "profile".into(),
            "--dynolog-bin".into(),
            fixture("fake_dynolog.py").into(),
            "--no-hook".into(),
            "--".into(),
            program.into(),
        ];
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
        let out = madengine(dir.path(), &refs);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        assert!(stderr.contains(&format!("cannot run the workload `{program}`")), "{stderr}");
        assert!(stderr.contains("dynolog daemon (pid "), "the daemon was not stopped: {stderr}");
        // Nothing ran: no trace request, and no hint about a workload that
        // ended too soon.
        for noise in ["requesting a trace", "warmup", "ended before", "captured"] {
            assert!(!stderr.contains(noise), "{noise:?} in {stderr}");
        }
    }
}
