//! `madengine dynolog ...`, `madengine profile`, `madengine setup dynolog`.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use dynolog_client::{Client, Clock, Event, Outcome, ProcFs, RunState, Started, kineto_trace_path};

use crate::{
    cli::{
        CaptureArgs, DaemonArgs, GputraceArgs, LaunchArgs, PolicyArgs, ProfileArgs,
        SetupDynologArgs, StartArgs, StateArgs, StopArgs, TriggerArgs,
    },
    error::{Error, Status},
    render, settings,
};

/// The client `args` describe.
fn client(args: &DaemonArgs) -> Result<Client, Error> {
    let timeout = Duration::from_secs_f64(args.timeout.max(0.1));
    Ok(Client::new(&args.host, args.port)?.with_timeout(timeout))
}

pub(crate) fn status(args: &DaemonArgs) -> Result<Status, Error> {
    let status = client(args)?.status()?;
    render::daemon_value(args.json, &render::DaemonValue::Status(status))?;
    Ok(Status::Success)
}

pub(crate) fn version(args: &DaemonArgs) -> Result<Status, Error> {
    let version = client(args)?.version()?;
    render::daemon_value(args.json, &render::DaemonValue::Version(version))?;
    Ok(Status::Success)
}

pub(crate) fn gputrace(args: &GputraceArgs) -> Result<Status, Error> {
    let request = settings::gputrace_request(args);
    request.check_log_file(args.ondemand_trace_dir.as_deref())?;
    let reply = client(&args.daemon)?.gputrace(&request)?;
    let files: Vec<String> = reply
        .activity_profilers_triggered
        .iter()
        .map(|pid| kineto_trace_path(&request.log_file, *pid))
        .collect();
    if args.daemon.json {
        render::json_as_is(&dynolog_client::Triggered {
            version: dynolog_client::DOCUMENT_VERSION,
            files: files.clone(),
            reply: reply.clone(),
        })?;
    } else {
        render::gputrace(&reply, &files)?;
    }
    // Nothing triggered (none matched, or every match still had a request
    // pending): no trace will come of this request.
    if reply.activity_profilers_triggered.is_empty() {
        return Ok(Status::Findings);
    }
    if args.wait {
        wait_for(&files, Duration::from_secs_f64(args.wait_timeout.max(0.0)))?;
    }
    Ok(Status::Success)
}

/// Wait until every file exists (kineto writes `<name>.tmp`, then renames).
fn wait_for(files: &[String], timeout: Duration) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        let missing: Vec<&String> = files.iter().filter(|f| !Path::new(f).is_file()).collect();
        if missing.is_empty() {
            render::note(&format!("{} trace file(s) written", files.len()));
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(Error::Usage(format!(
                "waited {} s; still missing: {}",
                timeout.as_secs_f64(),
                missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn state_dir(args: &StateArgs) -> PathBuf {
    args.state
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/madengine-dynolog-{}", args.port)))
}

pub(crate) fn start(args: &StartArgs) -> Result<Status, Error> {
    let state = RunState::create(state_dir(&args.state))?;
    if let Some(old) = state.started()?
        && old.daemon_pid.is_some_and(dynolog_client::is_running)
    {
        return Err(Error::Usage(format!(
            "a session is already running in {} (daemon pid {}); stop it first with `madengine dynolog stop --state {}`",
            state.dir.display(),
            old.daemon_pid.unwrap_or_default(),
            state.dir.display()
        )));
    }
    state.clear_outcome()?;
    state.clear_steps()?;
    let mut started = Started { port: args.state.port, ..Default::default() };
    // The hook first: checking the interpreter must not register with a daemon.
    started.hook_site = install_hook(&args.launch, &state)?;
    if let Some(site) = &started.hook_site {
        render::note(&format!("installed the Kineto optimizer-step hook in {}", site.display()));
    }
    state.set_started(&started)?;
    let Err(err) = start_with(args, &state, &mut started) else {
        if args.json {
            render::json_as_is(&dynolog_client::Session::of(&state, &started))?;
        }
        return Ok(Status::Success);
    };
    // A start that failed leaves nothing behind: no hook in the interpreter
    // (it would configure every Python process), no trigger, no daemon.
    render::error(&err);
    missing_daemon_hint(&err, &args.launch);
    if let Some(hint) = err.hint() {
        render::note(&hint);
    }
    for (name, pid) in
        [("trace trigger", started.trigger_pid), ("dynolog daemon", started.daemon_pid)]
    {
        if let Some(pid) = pid {
            stop_noted(name, pid);
        }
    }
    if let Some(site) = &started.hook_site {
        dynolog_client::remove_hook(&state, site)?;
        render::note(&format!("removed the Kineto hook from {}", site.display()));
    }
    state.clear_started()?;
    Ok(err.status())
}

/// The daemon and the trigger of `start`, recorded in `started` as they run.
fn start_with(args: &StartArgs, state: &RunState, started: &mut Started) -> Result<Status, Error> {
    // Sockets of its own, as `profile`'s: a node's dynolog service holds the
    // host-wide IPC endpoint, and a workload registering there would never
    // reach this daemon.
    let pid = dynolog_client::start_daemon(
        state,
        &args.launch.dynolog_bin,
        args.state.port,
        Some(&state.ipc_dir()),
        Duration::from_secs(15),
    )?
    .detach();
    started.daemon_pid = Some(pid);
    state.set_started(started)?;
    render::note(&format!("dynolog daemon started (pid {pid}, port {})", args.state.port));
    let hooked = match started.hook_site {
        Some(_) => " (the Kineto hook sets the second in the workload's interpreter)",
        None => "",
    };
    render::note(&format!(
        "the workload reaches it with KINETO_USE_DAEMON=1 KINETO_IPC_SOCKET_DIR={} in its \
         environment{hooked}",
        state.ipc_dir().display()
    ));
    if !args.no_trigger {
        let mut argv: Vec<OsString> = vec![
            std::env::current_exe()
                .map_err(|e| Error::Usage(format!("cannot find madengine itself: {e}")))?
                .into(),
            "dynolog".into(),
            "trigger".into(),
            "--state".into(),
            state.dir.clone().into(),
            "--port".into(),
            args.state.port.to_string().into(),
        ];
        argv.extend(capture_argv(&args.capture));
        argv.extend(policy_argv(&args.policy));
        let trigger = dynolog_client::spawn_detached(&argv, &[], &state.trigger_log())?;
        started.trigger_pid = Some(trigger);
        state.set_started(started)?;
        render::note(&format!(
            "trace trigger armed (pid {trigger}); log: {}",
            state.trigger_log().display()
        ));
    }
    render::note(&format!("session state in {}", state.dir.display()));
    Ok(Status::Success)
}

fn capture_argv(c: &CaptureArgs) -> Vec<OsString> {
    let b = |v: bool| if v { "1" } else { "0" };
    let mut argv: Vec<String> = vec![
        format!("--iterations={}", c.iterations),
        format!("--duration-ms={}", c.duration_ms),
        format!("--profile-start-time={}", c.profile_start_time),
        format!("--profile-start-iteration-roundup={}", c.profile_start_iteration_roundup),
        format!("--process-limit={}", c.process_limit),
        format!("--record-shapes={}", b(c.record_shapes)),
        format!("--with-stacks={}", b(c.with_stacks)),
        format!("--with-modules={}", b(c.with_modules)),
        format!("--with-flops={}", b(c.with_flops)),
        format!("--profile-memory={}", b(c.profile_memory)),
        format!("--log-name={}", c.log_name),
    ];
    if let Some(job) = c.job_id {
        argv.push(format!("--job-id={job}"));
    }
    argv.into_iter().map(OsString::from).collect()
}

fn policy_argv(p: &PolicyArgs) -> Vec<OsString> {
    [
        format!("--warmup-s={}", p.warmup_s),
        format!("--retry-interval-s={}", p.retry_interval_s),
        format!("--max-attempts={}", p.max_attempts),
        format!("--stable-s={}", p.stable_s),
        format!("--first-step-s={}", p.first_step_s),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// A clock whose waits end early once `stop` is set.
struct CancellableClock {
    start: Instant,
    stop: Arc<AtomicBool>,
}

impl Clock for CancellableClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
    fn sleep(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until && !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
        }
    }
    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

fn run_trigger(
    state: &RunState,
    port: u16,
    capture: &CaptureArgs,
    policy: &PolicyArgs,
    allowed_dir: Option<&str>,
    stop: Arc<AtomicBool>,
) -> Result<Outcome, Error> {
    let log_file = state.kineto_dir().join(&capture.log_name).display().to_string();
    let request = settings::capture_request(capture, log_file);
    request.check_log_file(allowed_dir)?;
    let client = Client::new("127.0.0.1", port)?;
    let mut clock = CancellableClock { start: Instant::now(), stop };
    let outcome = dynolog_client::trigger(
        &client,
        &request,
        &settings::policy(policy),
        &state.signals(),
        &ProcFs,
        &mut clock,
        &mut |event| trigger_event(&event),
    );
    state.set_outcome(&outcome)?;
    render::trigger_outcome(&outcome);
    Ok(outcome)
}

fn trigger_event(event: &Event) {
    match event {
        Event::WarmingUp(d) => render::note(&format!(
            "waiting {} s for the workload to reach steady state",
            d.as_secs_f64()
        )),
        Event::Workload(pids) => {
            for (pid, cmd) in pids {
                render::note(&format!("runnable workload pid {pid}: {cmd}"));
            }
            render::note("waiting for the workload's processes to finish registering");
        }
        Event::NoRunnableWorkload => {
            render::note("processes registered, but no runnable workload process yet")
        }
        Event::Requesting { attempt, pids } => render::note(&format!(
            "requesting a trace (attempt {attempt}) for {}",
            if pids.is_empty() {
                "every registered process".to_string()
            } else {
                format!("pids {}", join_pids(pids))
            }
        )),
        Event::NothingMatched { attempt } => {
            render::note(&format!("no PyTorch process matched yet (attempt {attempt}); retrying"))
        }
        Event::AwaitingFirstStep(pids) => render::note(&format!(
            "waiting for the first optimizer step of pid(s) {} (Kineto counts iterations from there)",
            join_pids(pids)
        )),
        Event::NoFirstStep(pids) => render::warning(&format!(
            "pid(s) {} ran no optimizer step in time (--first-step-s); requesting anyway: Kineto will \
             trace a 500 ms window instead of iterations (for a workload without an optimizer, use \
             --iterations 0 and --duration-ms)",
            join_pids(pids)
        )),
        Event::AwaitingRegistration(limit) => render::note(&format!(
            "waiting up to {} s for a PyTorch process to register with the daemon (an iteration \
             window is asked of each process after its first optimizer step)",
            limit.as_secs_f64()
        )),
        Event::NoRegistration(limit) => render::warning(&format!(
            "no PyTorch process registered with the daemon in {} s; requesting for every \
             process of the job anyway",
            limit.as_secs_f64()
        )),
        _ => {}
    }
}

fn join_pids(pids: &[u32]) -> String {
    pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
}

pub(crate) fn trigger(args: &TriggerArgs) -> Result<Status, Error> {
    let state = RunState::create(state_dir(&args.state))?;
    state.clear_outcome()?;
    let outcome = run_trigger(
        &state,
        args.state.port,
        &args.capture,
        &args.policy,
        args.ondemand_trace_dir.as_deref(),
        Arc::new(AtomicBool::new(false)),
    )?;
    if args.json {
        render::json_as_is(&dynolog_client::TriggerEnded::new(outcome.clone(), &state))?;
    }
    Ok(match outcome {
        Outcome::Accepted { .. } => Status::Success,
        // As for every command that cannot reach the daemon.
        Outcome::DaemonUnreachable { .. } => Status::Daemon,
        _ => Status::Findings,
    })
}

pub(crate) fn stop(args: &StopArgs) -> Result<Status, Error> {
    let state = RunState { dir: state_dir(&args.state) };
    let started = state.started()?;
    // The hook goes first, even after a partial start.
    if let Some(site) = started.as_ref().and_then(|s| s.hook_site.as_ref()) {
        dynolog_client::remove_hook(&state, site)?;
        render::note(&format!("removed the Kineto hook from {}", site.display()));
    }
    let Some(started) = started else {
        render::warning(&format!(
            "dynolog was not started (no session in {}); nothing to stop",
            state.dir.display()
        ));
        return Ok(Status::Success);
    };
    // Gone before it was stopped: the report says so, with what it means.
    let daemon = started.daemon_pid.map(|pid| {
        let gone = !dynolog_client::is_running(pid);
        render::DaemonEnd { pid, gone, how: None }
    });
    for (name, pid) in
        [("trace trigger", started.trigger_pid), ("dynolog daemon", started.daemon_pid)]
    {
        if let Some(pid) = pid {
            stop_noted(name, pid);
        }
    }
    state.clear_started()?;
    let ended = render::Ended { trigger: started.trigger_pid.is_some(), daemon, workload: None };
    collect(&state, &args.output.output_dir, args.json, &ended)?;
    Ok(Status::Success)
}

/// Stop `pid` (SIGTERM, then SIGKILL after 10 s) and say how it went.
fn stop_noted(name: &str, pid: u32) {
    let how = dynolog_client::stop_process(pid, Duration::from_secs(10));
    render::note(&format!("{name} (pid {pid}): {}", render::stopped(how)));
}

/// Copy the session's traces into `output_dir` and say what happened
/// (`ended`: how the session's parts ended); the copies.
fn collect(
    state: &RunState,
    output_dir: &Path,
    json: bool,
    ended: &render::Ended,
) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(output_dir)
        .map_err(|source| Error::Io { path: output_dir.to_path_buf(), source })?;
    let mut copied = Vec::new();
    for trace in state.traces()? {
        let to = output_dir.join(trace.file_name().unwrap_or_default());
        // Through a temp file beside `to`: a failed copy (a full disk) leaves
        // no truncated trace for a report to choke on.
        trace_sanitize::write_atomic(&to, |out| {
            let mut from = std::fs::File::open(&trace)?;
            std::io::copy(&mut from, out).map(|_| ())
        })
        .map_err(|source| Error::Io { path: to.clone(), source })?;
        copied.push(to);
    }
    let outcome = state.outcome()?;
    if json {
        render::json_as_is(&dynolog_client::Captured::new(outcome.clone(), output_dir, &copied))?;
    }
    render::capture_report(&copied, output_dir, outcome.as_ref(), ended, state);
    Ok(copied)
}

/// When the daemon binary was not found: how to get it.
fn missing_daemon_hint(err: &Error, launch: &LaunchArgs) {
    if let Error::Session(dynolog_client::SessionError::Spawn { source, .. }) = err
        && source.kind() == std::io::ErrorKind::NotFound
    {
        render::note(&format!(
            "`{}` was not found: install dynolog with `madengine setup dynolog`, or point \
             --dynolog-bin (or DYNOLOG_BIN) at it",
            launch.dynolog_bin.display()
        ));
    }
}

/// Install the Kineto hook into the workload interpreter's site-packages,
/// unless --no-hook; an interpreter that cannot take it is a warning.
fn install_hook(launch: &LaunchArgs, state: &RunState) -> Result<Option<PathBuf>, Error> {
    if launch.no_hook {
        return Ok(None);
    }
    match dynolog_client::site_packages(&launch.python) {
        Ok(site) => {
            dynolog_client::install_hook(state, &site)?;
            Ok(Some(site))
        }
        Err(e) => {
            render::warning(&format!("not installing the Kineto hook: {e}"));
            Ok(None)
        }
    }
}

pub(crate) fn profile(args: &ProfileArgs) -> Result<Status, Error> {
    // Ctrl-C before the workload starts: it is not started, and the daemon,
    // the hook and the session directory are cleaned up as after a run.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let tmp = tempfile::Builder::new()
        .prefix("madengine-profile-")
        .tempdir()
        .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
    let state = RunState::create(tmp.path())?;
    let port = dynolog_client::free_port()
        .map_err(|source| Error::Io { path: "127.0.0.1:0".into(), source })?;
    let hook_site = install_hook(&args.launch, &state)?;
    let mut keep_log = false;
    let result = profile_with(args, &state, port, &interrupt, &mut keep_log);
    // Traces captured but not collected (a failed copy) must not go with the
    // session's temp directory; nor the log of a daemon that failed to start,
    // which the error points at.
    if result.is_err() && state.traces().is_ok_and(|t| !t.is_empty()) {
        let kept = tmp.keep();
        render::warning(&format!(
            "the captured traces were not collected; they are kept in {}",
            kept.join("kineto").display()
        ));
    } else if keep_log {
        let kept = tmp.keep();
        render::note(&format!("the session directory is kept: {}", kept.display()));
    }
    if let Some(site) = &hook_site {
        dynolog_client::remove_hook(&state, site)?;
    }
    result
}

fn profile_with(
    args: &ProfileArgs,
    state: &RunState,
    port: u16,
    interrupt: &crate::interrupt::Guard,
    keep_log: &mut bool,
) -> Result<Status, Error> {
    let handle = match dynolog_client::start_daemon(
        state,
        &args.launch.dynolog_bin,
        port,
        Some(&state.ipc_dir()),
        Duration::from_secs(15),
    ) {
        Ok(handle) => handle,
        Err(e) => {
            let err = Error::from(e);
            render::error(&err);
            missing_daemon_hint(&err, &args.launch);
            if let Some(hint) = err.hint() {
                render::note(&hint);
            }
            // The error names the daemon's log: keep it, where it says something.
            *keep_log = std::fs::metadata(state.daemon_log()).is_ok_and(|m| m.len() > 0);
            return Ok(err.status());
        }
    };
    let daemon = handle.pid();
    render::note(&format!("dynolog daemon started (pid {daemon}, port {port})"));
    if interrupt.cancelled() {
        stop_noted("dynolog daemon", daemon);
        render::error_line("interrupted before the workload started; it was not run");
        return Ok(Status::Interrupted);
    }
    let kineto_dir = state.kineto_dir().display().to_string();
    let env: Vec<(&str, OsString)> = vec![
        ("KINETO_USE_DAEMON", "1".into()),
        ("KINETO_IPC_SOCKET_DIR", state.ipc_dir().into()),
        ("KINETO_ONDEMAND_TRACE_DIR", kineto_dir.clone().into()),
    ];
    // Ctrl-C reaches the workload too; it decides, and the daemon, the hook
    // and the traces are then dealt with as after any exit.
    let foreground = crate::interrupt::Guard::new(crate::interrupt::Mode::Child);
    let workload = match dynolog_client::start_workload(&args.command, &env) {
        Ok(workload) => workload,
        // As a shell (and env, nohup, time) reports it: 127 not found, 126
        // found but not runnable. Nothing ran, so there is nothing to
        // trigger or collect.
        Err(dynolog_client::SessionError::Spawn { command, source }) => {
            drop(foreground);
            stop_noted("dynolog daemon", daemon);
            render::error_line(&format!("cannot run the workload `{command}`: {source}"));
            let code = if source.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            return Ok(Status::Workload(code));
        }
        Err(e) => return Err(e.into()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (code, outcome) = std::thread::scope(|scope| {
        let trigger = {
            let stop = Arc::clone(&stop);
            scope.spawn(move || {
                run_trigger(state, port, &args.capture, &args.policy, Some(&kineto_dir), stop)
            })
        };
        let code = workload.wait();
        stop.store(true, Ordering::SeqCst);
        let outcome = trigger
            .join()
            .unwrap_or_else(|_| Err(Error::Usage("the trigger thread panicked".into())));
        (code, outcome)
    });
    drop(foreground);
    // How the daemon ended, if it did before its time: the report names it.
    let how = handle.exited();
    let daemon_end = render::DaemonEnd { pid: daemon, gone: how.is_some(), how };
    stop_noted("dynolog daemon", daemon);
    let exit = code?;
    if let Err(e) = outcome {
        render::warning(&format!("the trace trigger failed: {e}"));
    }
    let ended = render::Ended { trigger: true, daemon: Some(daemon_end), workload: Some(exit) };
    if !collect(state, &args.output.output_dir, false, &ended)?.is_empty() {
        let dir = args.output.output_dir.display();
        render::note(&format!(
            "analyze with: madengine report summary {dir} (TraceLens' core tables, no Python), \
             or madengine report tracelens --root {dir} (its full reports)"
        ));
    }
    Ok(Status::Workload(exit.code()))
}

pub(crate) fn setup(args: &SetupDynologArgs) -> Result<Status, Error> {
    let scratch =
        tempfile::tempdir().map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
    let path = std::env::var_os("PATH");
    let done = dynolog_client::install_dynolog(
        &args.deb_url,
        path.as_deref(),
        scratch.path(),
        &mut |s| render::note(s),
    )?;
    let find = |name| dynolog_client::find_on_path(name, path.as_deref());
    if args.json {
        render::json_as_is(&dynolog_client::SetUp::new(
            &args.deb_url,
            find("dyno").as_deref(),
            find("dynolog").as_deref(),
            done.clone(),
        ))?;
    } else {
        render::note(match done {
            dynolog_client::Installed::AlreadyThere => "dynolog and dyno are already installed",
            _ => "dynolog installed",
        });
    }
    Ok(Status::Success)
}
