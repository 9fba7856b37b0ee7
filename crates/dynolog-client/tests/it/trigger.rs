//! The capture policy, with a fake clock, fake processes and a daemon log.

use std::{collections::HashMap, path::PathBuf, time::Duration};

use dynolog_client::{
    Clock, Event, Outcome, Policy, Processes, Signals, TraceRequest, Window, trigger,
};

use crate::fake::{FakeDaemon, NO_MATCH, Reply, json, matched};

/// Time that passes only in `sleep`, writing each of `files` (its text)
/// once its time comes.
struct FakeClock(Duration, Vec<(Duration, PathBuf, String)>);

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0
    }
    fn sleep(&mut self, d: Duration) {
        self.0 += d;
        for (at, file, text) in &self.1 {
            if *at <= self.0 && std::fs::read_to_string(file).ok().as_ref() != Some(text) {
                std::fs::write(file, text).unwrap();
            }
        }
    }
}

struct FakeProcs(HashMap<u32, &'static str>);

impl Processes for FakeProcs {
    fn cmdline(&self, pid: u32) -> Option<String> {
        self.0.get(&pid).map(|s| s.to_string())
    }
}

fn policy() -> Policy {
    Policy {
        warmup: Duration::from_secs(60),
        retry_interval: Duration::from_secs(15),
        max_attempts: 4,
        stable_for: Duration::from_secs(5),
        first_step: Duration::from_secs(120),
        registration: Duration::from_secs(120),
    }
}

fn registration(pids: &[u32]) -> String {
    let list = pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    format!(
        "I20260701 10:00:05.000001 1 LibkinetoConfigManager.cpp:238] Registered process ({list}) for job '0'. Leaf PID: {}\n",
        pids[0]
    )
}

struct Run {
    outcome: Outcome,
    events: Vec<Event>,
    bodies: Vec<String>,
    elapsed: Duration,
}

#[track_caller]
fn run(replies: Vec<Reply>, log: Option<&str>, procs: &[(u32, &'static str)]) -> Run {
    run_with(&TraceRequest::new("/tmp/run/libkineto_trace.json"), replies, log, procs, &[])
}

/// As `run`, with this request, and the hook's step marks: `(seconds, "<pid>.hooked")`
/// appears at that time (0: from the start).
#[track_caller]
fn run_with(
    request: &TraceRequest,
    replies: Vec<Reply>,
    log: Option<&str>,
    procs: &[(u32, &'static str)],
    marks: &[(u64, &str)],
) -> Run {
    run_full(request, replies, log, None, procs, marks)
}

/// As `run_with`, and the daemon's log becomes `later.1` at `later.0` seconds.
#[track_caller]
fn run_full(
    request: &TraceRequest,
    replies: Vec<Reply>,
    log: Option<&str>,
    later: Option<(u64, &str)>,
    procs: &[(u32, &'static str)],
    marks: &[(u64, &str)],
) -> Run {
    let daemon = FakeDaemon::serve(replies);
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("dynolog.log");
    if let Some(text) = log {
        std::fs::write(&log_path, text).unwrap();
    }
    let steps = dir.path().join("steps");
    std::fs::create_dir(&steps).unwrap();
    let mut files: Vec<(Duration, PathBuf, String)> = marks
        .iter()
        .map(|(at, name)| (Duration::from_secs(*at), steps.join(name), String::new()))
        .collect();
    if let Some((at, text)) = later {
        files.push((Duration::from_secs(at), log_path.clone(), text.to_string()));
    }
    let mut clock = FakeClock(Duration::ZERO, files);
    clock.sleep(Duration::ZERO);
    let mut events = Vec::new();
    let outcome = trigger(
        &daemon.client(),
        request,
        &policy(),
        &Signals { daemon_log: Some(log_path), steps_dir: Some(steps) },
        &FakeProcs(procs.iter().copied().collect()),
        &mut clock,
        &mut |e| events.push(e),
    );
    let bodies = daemon.bodies();
    drop(daemon);
    Run { outcome, events, bodies, elapsed: clock.0 }
}

fn pids_of(body: &str) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(body).unwrap()["pids"].clone()
}

#[test]
fn retries_until_a_process_matches() {
    let r = run(vec![json(NO_MATCH), json(NO_MATCH), matched(&[4242])], None, &[]);
    assert!(matches!(&r.outcome, Outcome::Accepted { attempts: 3, .. }), "{:?}", r.outcome);
    assert_eq!(r.outcome.as_str(), "accepted");
    // no registrations known: every process of the job
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([0]));
    assert_eq!(r.elapsed, Duration::from_secs(60 + 15 + 15));
}

#[test]
fn a_rejected_request_is_not_retried() {
    let r = run(vec![json(r#"{"status":"failed"}"#), json(NO_MATCH)], None, &[]);
    assert!(
        matches!(&r.outcome, Outcome::RequestRejected { attempts: 1, reason } if reason.ends_with("rejected setKinetOnDemandRequest: failed")),
        "{:?}",
        r.outcome
    );
    assert_eq!(r.bodies.len(), 1);
}

/// A daemon that is gone (it died during the warm-up) is no rejection:
/// the outcome says it could not be reached, and the front end can say so
/// (and exit as for any unreachable daemon).
#[test]
fn a_daemon_that_is_gone_is_unreachable_not_a_rejection() {
    let port = dynolog_client::free_port().unwrap();
    let client = dynolog_client::Client::new("127.0.0.1", port).unwrap();
    let mut clock = FakeClock(Duration::ZERO, Vec::new());
    let outcome = trigger(
        &client,
        &TraceRequest::new("/tmp/t.json"),
        &policy(),
        &Signals::default(),
        &FakeProcs(HashMap::new()),
        &mut clock,
        &mut |_| {},
    );
    assert!(
        matches!(&outcome, Outcome::DaemonUnreachable { attempts: 1, reason } if reason.contains("connection refused")),
        "{outcome:?}"
    );
    assert_eq!(outcome.as_str(), "daemon_unreachable");
}

#[test]
fn gives_up_after_the_attempt_cap() {
    let r = run(vec![json(NO_MATCH); 4], None, &[]);
    assert_eq!(r.outcome, Outcome::NoProcess { attempts: 4 });
    assert_eq!(r.outcome.as_str(), "no_process");
    // Retried three times; the last attempt ends it, without a wait.
    let retried = r.events.iter().filter(|e| matches!(e, Event::NothingMatched { .. })).count();
    assert_eq!(retried, 3, "{:?}", r.events);
    assert_eq!(r.elapsed, Duration::from_secs(60 + 3 * 15));
}

#[test]
fn only_live_workload_pids_are_requested_once_stable() {
    // launcher 100 (torchrun) with workers 101 and 102; 103 registered but is gone;
    // 104 is a multiprocessing helper.
    let log = [
        registration(&[100, 50]),
        registration(&[101, 100, 50]),
        registration(&[102, 100, 50]),
        registration(&[103, 100]),
        registration(&[104, 101]),
    ]
    .concat();
    let procs = [
        (100, "/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node 2 train.py"),
        (101, "/usr/bin/python3 -u train.py"),
        (102, "/usr/bin/python3 -u train.py"),
        (
            104,
            "/usr/bin/python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)",
        ),
    ];
    let r = run(vec![matched(&[101, 102])], Some(&log), &procs);
    // the helper 104 registered under 101, but being a helper it does not hide 101
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([101, 102]));
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }));
    // it waited for the set to be stable (--stable-s, not a whole retry
    // interval) before asking
    assert_eq!(r.elapsed, Duration::from_secs(60 + 5));
    assert!(r.events.iter().any(|e| matches!(e, Event::Workload(w) if w.len() == 2)));
}

#[test]
fn a_worker_that_registers_during_the_stability_wait_restarts_it() {
    // 101 is there after the warm-up; 102 registers at 63 s, inside the
    // 5 s wait, and is seen at 65 s: asked of both 5 s after that.
    let later = workers_log();
    let r = run_full(
        &TraceRequest::new("/tmp/run/libkineto_trace.json"),
        vec![matched(&[101, 102])],
        Some(&registration(&[101, 1])),
        Some((63, &later)),
        &WORKER,
        &[],
    );
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([101, 102]));
    let sets: Vec<usize> = r
        .events
        .iter()
        .filter_map(|e| if let Event::Workload(w) = e { Some(w.len()) } else { None })
        .collect();
    assert_eq!(sets, [1, 2]);
    assert_eq!(r.elapsed, Duration::from_secs(65 + 5));
}

#[test]
fn an_unlabelled_launcher_is_known_by_its_children() {
    // `python launch.py` starts two workers: its command line says nothing, but
    // it is the ancestor of runnable registrants.
    let log =
        [registration(&[200, 1]), registration(&[201, 200]), registration(&[202, 200])].concat();
    let procs =
        [(200, "python3 launch.py"), (201, "python3 worker.py"), (202, "python3 worker.py")];
    let r = run(vec![matched(&[201, 202])], Some(&log), &procs);
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([201, 202]));
}

#[test]
fn registrations_without_a_runnable_workload_use_attempts_without_requests() {
    let log = registration(&[100, 50]);
    let procs = [(100, "torchrun train.py")];
    let r = run(vec![], Some(&log), &procs);
    assert_eq!(r.outcome, Outcome::NoProcess { attempts: 4 });
    assert!(r.bodies.is_empty());
    assert!(r.events.contains(&Event::NoRunnableWorkload));
    assert_eq!(r.elapsed, Duration::from_secs(60 + 3 * 15));
}

fn iterations() -> TraceRequest {
    let mut request = TraceRequest::new("/tmp/run/libkineto_trace.json");
    request.window = Window::Iterations { count: 3, roundup: 1 };
    request
}

const WORKER: [(u32, &str); 2] = [(101, "python3 train.py"), (102, "python3 train.py")];

fn workers_log() -> String {
    [registration(&[101, 1]), registration(&[102, 1])].concat()
}

#[test]
fn an_iteration_window_waits_for_every_first_optimizer_step() {
    // Both have the hook; 101 steps at 90 s, 102 at 130 s (after the 60 s
    // warm-up and the 5 s stability wait).
    let marks = [(0, "101.hooked"), (0, "102.hooked"), (90, "101.stepped"), (130, "102.stepped")];
    let r =
        run_with(&iterations(), vec![matched(&[101, 102])], Some(&workers_log()), &WORKER, &marks);
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
    assert_eq!(r.elapsed, Duration::from_secs(130), "asked at the second first step");
    let waits: Vec<&Event> =
        r.events.iter().filter(|e| matches!(e, Event::AwaitingFirstStep(_))).collect();
    assert_eq!(
        waits,
        [&Event::AwaitingFirstStep(vec![101, 102]), &Event::AwaitingFirstStep(vec![102])]
    );
    assert!(!r.events.iter().any(|e| matches!(e, Event::NoFirstStep(_))));
}

#[test]
fn a_process_that_never_steps_is_asked_after_the_limit() {
    // An inference workload: it has the hook but no optimizer.
    let marks = [(0, "101.hooked"), (0, "102.hooked"), (0, "102.stepped")];
    let r =
        run_with(&iterations(), vec![matched(&[101, 102])], Some(&workers_log()), &WORKER, &marks);
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
    assert_eq!(r.elapsed, Duration::from_secs(60 + 5 + 120), "warm-up, stability, the limit");
    assert!(r.events.contains(&Event::AwaitingFirstStep(vec![101])));
    assert!(r.events.contains(&Event::NoFirstStep(vec![101])));
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([101, 102]));
}

#[test]
fn no_step_wait_for_a_time_window_or_processes_without_the_hook() {
    let hooked = [(0, "101.hooked"), (0, "102.hooked")];
    let time_window = TraceRequest::new("/tmp/run/libkineto_trace.json");
    // Unhooked: `--no-hook`, or torch not importable by the hook.
    for (request, marks) in [(&time_window, &hooked[..]), (&iterations(), &[][..])] {
        let r = run_with(request, vec![matched(&[101, 102])], Some(&workers_log()), &WORKER, marks);
        assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
        assert_eq!(r.elapsed, Duration::from_secs(60 + 5));
        assert!(!r.events.iter().any(|e| matches!(e, Event::AwaitingFirstStep(_))));
    }
}

/// The daemon's first lines, before any process registers.
const STARTED: &str = "I20260701 10:00:00.000001 1 Main.cpp:150] Starting dynolog, version 0.5.0\n";

#[test]
fn an_iteration_window_waits_for_the_first_registration() {
    // The workers register at 100 s, 40 s after the warm-up; they have stepped.
    let marks = [(0, "101.hooked"), (0, "102.hooked"), (0, "101.stepped"), (0, "102.stepped")];
    let later = [STARTED.to_string(), workers_log()].concat();
    let r = run_full(
        &iterations(),
        vec![matched(&[101, 102])],
        Some(STARTED),
        Some((100, &later)),
        &WORKER,
        &marks,
    );
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
    // Asked of them by pid, never of every process before they registered.
    assert_eq!(r.bodies.len(), 1);
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([101, 102]));
    assert_eq!(r.events[1], Event::AwaitingRegistration(Duration::from_secs(120)));
    assert!(!r.events.iter().any(|e| matches!(e, Event::NoRegistration(_))));
    assert_eq!(r.elapsed, Duration::from_secs(100 + 5), "registered, then stable");
}

#[test]
fn without_a_registration_every_process_is_asked_after_the_limit() {
    let r = run_with(&iterations(), vec![matched(&[4242])], Some(STARTED), &[], &[]);
    assert!(matches!(r.outcome, Outcome::Accepted { attempts: 1, .. }), "{:?}", r.outcome);
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([0]));
    assert!(r.events.contains(&Event::NoRegistration(Duration::from_secs(120))));
    assert_eq!(r.elapsed, Duration::from_secs(60 + 120));
    // A time window (as the original) asks every process at once.
    let time_window = TraceRequest::new("/tmp/run/libkineto_trace.json");
    let r = run_with(&time_window, vec![matched(&[4242])], Some(STARTED), &[], &[]);
    assert_eq!(pids_of(&r.bodies[0]), serde_json::json!([0]));
    assert!(!r.events.iter().any(|e| matches!(e, Event::AwaitingRegistration(_))));
    assert_eq!(r.elapsed, Duration::from_secs(60));
}
