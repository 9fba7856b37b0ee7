//! The capture policy: when to ask the daemon for a trace, and for whom.

use std::{path::PathBuf, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{
    Client, Error, TraceReply, TraceRequest, Window,
    registry::{Processes, parse_registrations, runnable},
};

/// How patiently to wait for the workload (the original's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Wait this long before the first request, for the workload to reach
    /// steady state (`TORCH_PROFILE_WARMUP_S`, 60 s).
    pub warmup: Duration,
    /// Between attempts (`TORCH_PROFILE_RETRY_INTERVAL_S`, 15 s).
    pub retry_interval: Duration,
    /// Give up after this many requests (`TORCH_PROFILE_MAX_ATTEMPTS`, 40).
    pub max_attempts: u32,
    /// The set of workload pids must stay unchanged this long before a request
    /// (`TORCH_PROFILE_STABLE_S`, 5 s), so late ranks are not left out.
    pub stable_for: Duration,
    /// For an iteration window, wait up to this long for every hooked
    /// workload process to run its first optimizer step (120 s; not in the
    /// original): asked earlier, Kineto traces a 500 ms time window instead.
    pub first_step: Duration,
    /// For an iteration window, when the daemon's log can be read but names
    /// no registered process yet, wait up to this long for one to register
    /// (120 s; not in the original, which asks every process of the job at
    /// once): a process that registers just as such a request goes out is
    /// asked before its first optimizer step.
    pub registration: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            warmup: Duration::from_secs(60),
            retry_interval: Duration::from_secs(15),
            max_attempts: 40,
            stable_for: Duration::from_secs(5),
            first_step: Duration::from_secs(120),
            registration: Duration::from_secs(120),
        }
    }
}

/// How a trigger ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// Processes matched: traces will be written.
    Accepted {
        /// Requests made.
        attempts: u32,
        /// The pids requested (empty: every registered process).
        requested: Vec<u32>,
        /// The daemon's reply.
        reply: TraceReply,
    },
    /// No PyTorch process ever matched.
    NoProcess {
        /// Requests made.
        attempts: u32,
    },
    /// The daemon refused the request (a `failed` status, a reply that is
    /// not dynolog's): not retried.
    RequestRejected {
        /// Requests made.
        attempts: u32,
        /// Why.
        reason: String,
    },
    /// The daemon could not be reached (gone, or not answering): not retried.
    DaemonUnreachable {
        /// Requests made (the last one unanswered).
        attempts: u32,
        /// Why.
        reason: String,
    },
    /// The trigger was told to stop (the workload ended) before a request matched.
    WorkloadEnded {
        /// Requests made.
        attempts: u32,
    },
}

impl Outcome {
    /// `accepted`, `no_process`, `request_rejected` (the original's result
    /// words), `daemon_unreachable`, `workload_ended`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Accepted { .. } => "accepted",
            Outcome::NoProcess { .. } => "no_process",
            Outcome::RequestRejected { .. } => "request_rejected",
            Outcome::DaemonUnreachable { .. } => "daemon_unreachable",
            Outcome::WorkloadEnded { .. } => "workload_ended",
        }
    }
}

/// What the trigger is doing, for a log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Waiting for steady state.
    WarmingUp(Duration),
    /// The workload pids changed; waiting for them to settle.
    Workload(Vec<(u32, String)>),
    /// Processes registered, but none is a runnable workload yet.
    NoRunnableWorkload,
    /// A request is going out.
    Requesting {
        /// Which attempt.
        attempt: u32,
        /// The pids (empty: all).
        pids: Vec<u32>,
    },
    /// Nothing matched; retrying after the interval.
    NothingMatched {
        /// Which attempt.
        attempt: u32,
    },
    /// An iteration window: these hooked processes have not run their first
    /// optimizer step yet, so Kineto cannot count iterations; waiting.
    AwaitingFirstStep(Vec<u32>),
    /// These processes ran no optimizer step within [`Policy::first_step`]
    /// (an inference workload?): requesting anyway, and Kineto will trace a
    /// 500 ms time window instead of iterations.
    NoFirstStep(Vec<u32>),
    /// An iteration window: the daemon's log names no registered process
    /// yet; waiting up to this long ([`Policy::registration`]) for one.
    AwaitingRegistration(Duration),
    /// No process registered within [`Policy::registration`]: asking every
    /// process of the job, as the original does (one that has not stepped
    /// by then gets Kineto's time window).
    NoRegistration(Duration),
}

/// What the trigger reads about the workload besides `/proc`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signals {
    /// The daemon's log, whose `Registered process (...)` lines name the
    /// workload's processes; without it, every process of the job is asked.
    pub daemon_log: Option<PathBuf>,
    /// Where the Kineto hook marks `<pid>.hooked` and `<pid>.stepped`; see
    /// [`hook_module`](crate::hook_module).
    pub steps_dir: Option<PathBuf>,
}

impl Signals {
    /// Of `pids`, those that have the hook but have not stepped yet.
    pub fn unstepped(&self, pids: &[u32]) -> Vec<u32> {
        let Some(dir) = &self.steps_dir else { return Vec::new() };
        let marked = |pid: u32, what: &str| dir.join(format!("{pid}.{what}")).exists();
        pids.iter().copied().filter(|&p| marked(p, "hooked") && !marked(p, "stepped")).collect()
    }
}

/// Time, injectable so tests need not wait.
pub trait Clock {
    /// Time since some fixed start.
    fn now(&self) -> Duration;
    /// Wait.
    fn sleep(&mut self, d: Duration);
    /// Whether to give up now (checked after every wait).
    fn cancelled(&self) -> bool {
        false
    }
}

/// The real clock.
#[derive(Debug)]
pub struct SystemClock(std::time::Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(std::time::Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// Ask for a trace as the original's newest trigger did: warm up; request
/// only live workload pids read from the daemon's `Registered process` lines
/// (never a launcher, helper, zombie or a process that is gone); wait until
/// that set is stable; retry while nothing matches, up to `max_attempts`
/// requests (and three times as many polls); stop at once when the daemon
/// rejects the request. Beyond the original, an iteration window also waits
/// (up to [`Policy::first_step`]) for every hooked process's first optimizer
/// step, so Kineto traces iterations rather than its fallback time window,
/// and, while the daemon's log names no process yet, for one to register
/// (up to [`Policy::registration`]) rather than asking every process.
pub fn trigger(
    client: &Client,
    template: &TraceRequest,
    policy: &Policy,
    signals: &Signals,
    processes: &dyn Processes,
    clock: &mut dyn Clock,
    events: &mut dyn FnMut(Event),
) -> Outcome {
    events(Event::WarmingUp(policy.warmup));
    clock.sleep(policy.warmup);
    if clock.cancelled() {
        return Outcome::WorkloadEnded { attempts: 0 };
    }
    let mut attempts = 0;
    let mut polls = 0;
    let cap = policy.max_attempts.saturating_mul(3);
    let mut last: Option<Vec<u32>> = None;
    let mut stable_since = clock.now();
    let pause = policy.retry_interval.max(Duration::from_secs(1));
    let iterations = matches!(template.window, Window::Iterations { .. });
    let mut first_step = FirstStep::default();
    let mut registering = Registering::default();
    while attempts < policy.max_attempts && polls < cap {
        if clock.cancelled() {
            return Outcome::WorkloadEnded { attempts };
        }
        polls += 1;
        let log = signals.daemon_log.as_deref().and_then(|p| std::fs::read_to_string(p).ok());
        let registrations = log.as_deref().map(parse_registrations).unwrap_or_default();
        let pids = if registrations.is_empty() {
            // The log can be read and names no process yet: the workload has
            // not registered, and a request for every process could reach it
            // as it does, before its first step.
            if iterations && log.is_some() && registering.wait(policy, clock, events) {
                polls -= 1; // bounded by its own limit
                continue;
            }
            Vec::new()
        } else {
            let live = runnable(&registrations, processes);
            if live.is_empty() {
                attempts += 1;
                last = None;
                events(Event::NoRunnableWorkload);
                if attempts < policy.max_attempts {
                    clock.sleep(policy.retry_interval);
                }
                continue;
            }
            let pids: Vec<u32> = live.iter().map(|(p, _)| *p).collect();
            if last.as_ref() != Some(&pids) {
                last = Some(pids.clone());
                stable_since = clock.now();
                events(Event::Workload(live));
            }
            let stable = clock.now().saturating_sub(stable_since);
            if !policy.stable_for.is_zero() && stable < policy.stable_for {
                // Look again once the set has been unchanged for
                // `stable_for`, not a whole retry interval later as the
                // original does (15 s where 5 were asked for: a short
                // workload ends first).
                clock.sleep((policy.stable_for - stable).min(pause));
                continue;
            }
            if iterations && first_step.wait(&signals.unstepped(&pids), policy, clock, events) {
                polls -= 1; // waiting for a step is bounded by its own limit
                continue;
            }
            pids
        };
        attempts += 1;
        events(Event::Requesting { attempt: attempts, pids: pids.clone() });
        let request = TraceRequest { pids: pids.clone(), ..template.clone() };
        match client.gputrace(&request) {
            Ok(reply) if !reply.processes_matched.is_empty() => {
                return Outcome::Accepted { attempts, requested: pids, reply };
            }
            // The last attempt is not followed by a wait: the outcome says it.
            Ok(_) if attempts < policy.max_attempts => {
                events(Event::NothingMatched { attempt: attempts });
                clock.sleep(policy.retry_interval);
            }
            Ok(_) => {}
            Err(
                e @ (Error::Rejected { .. } | Error::BadReply { .. } | Error::InvalidRequest(_)),
            ) => {
                return Outcome::RequestRejected { attempts, reason: chain(&e) };
            }
            Err(e) => return Outcome::DaemonUnreachable { attempts, reason: chain(&e) },
        }
    }
    Outcome::NoProcess { attempts }
}

/// A wait of one-second polls, over once `limit` has passed since its
/// first poll.
#[derive(Default)]
struct Bounded {
    since: Option<Duration>,
    over: bool,
}

impl Bounded {
    /// Whether the wait has not started yet.
    fn unstarted(&self) -> bool {
        self.since.is_none()
    }

    /// Poll a wait not [`Bounded::over`]: wait a second (at most `limit`)
    /// and `true`; or, once `limit` has passed since the first poll,
    /// `false`, and the wait is over for good.
    fn poll(&mut self, limit: Duration, clock: &mut dyn Clock) -> bool {
        let since = *self.since.get_or_insert(clock.now());
        if clock.now().saturating_sub(since) >= limit {
            self.over = true;
            return false;
        }
        clock.sleep(Duration::from_secs(1).min(limit));
        true
    }
}

/// The wait for the workload's first optimizer steps.
#[derive(Default)]
struct FirstStep {
    wait: Bounded,
    told: Vec<u32>,
}

impl FirstStep {
    /// Whether to wait (a short poll) for `unstepped` before requesting.
    fn wait(
        &mut self,
        unstepped: &[u32],
        policy: &Policy,
        clock: &mut dyn Clock,
        events: &mut dyn FnMut(Event),
    ) -> bool {
        if unstepped.is_empty() || self.wait.over {
            return false;
        }
        if !self.wait.poll(policy.first_step, clock) {
            events(Event::NoFirstStep(unstepped.to_vec()));
            return false;
        }
        if self.told != unstepped {
            self.told = unstepped.to_vec();
            events(Event::AwaitingFirstStep(self.told.clone()));
        }
        true
    }
}

/// The wait for the workload's first registration.
#[derive(Default)]
struct Registering {
    wait: Bounded,
}

impl Registering {
    /// Whether to wait (a short poll) for a process to register.
    fn wait(
        &mut self,
        policy: &Policy,
        clock: &mut dyn Clock,
        events: &mut dyn FnMut(Event),
    ) -> bool {
        if self.wait.over || policy.registration.is_zero() {
            return false;
        }
        if self.wait.unstarted() {
            events(Event::AwaitingRegistration(policy.registration));
        }
        let waiting = self.wait.poll(policy.registration, clock);
        if !waiting {
            events(Event::NoRegistration(policy.registration));
        }
        waiting
    }
}

fn chain(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}
