//! The capture policy: when to ask the daemon for a trace, and for whom.

use std::{path::Path, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{
    Client, Error, TraceReply, TraceRequest,
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
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            warmup: Duration::from_secs(60),
            retry_interval: Duration::from_secs(15),
            max_attempts: 40,
            stable_for: Duration::from_secs(5),
        }
    }
}

/// How a trigger ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The daemon refused the request or could not be reached: not retried.
    RequestRejected {
        /// Requests made.
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
    /// `accepted`, `no_process`, `request_rejected` (the original's result words).
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Accepted { .. } => "accepted",
            Outcome::NoProcess { .. } => "no_process",
            Outcome::RequestRejected { .. } => "request_rejected",
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
/// rejects the request.
pub fn trigger(
    client: &Client,
    template: &TraceRequest,
    policy: &Policy,
    daemon_log: Option<&Path>,
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
    while attempts < policy.max_attempts && polls < cap {
        if clock.cancelled() {
            return Outcome::WorkloadEnded { attempts };
        }
        polls += 1;
        let registrations = daemon_log
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| parse_registrations(&text))
            .unwrap_or_default();
        let pids = if registrations.is_empty() {
            Vec::new()
        } else {
            let live = runnable(&registrations, processes);
            if live.is_empty() {
                attempts += 1;
                last = None;
                events(Event::NoRunnableWorkload);
                clock.sleep(policy.retry_interval);
                continue;
            }
            let pids: Vec<u32> = live.iter().map(|(p, _)| *p).collect();
            if last.as_ref() != Some(&pids) {
                last = Some(pids.clone());
                stable_since = clock.now();
                events(Event::Workload(live));
            }
            if !policy.stable_for.is_zero()
                && clock.now().saturating_sub(stable_since) < policy.stable_for
            {
                clock.sleep(pause);
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
            Ok(_) => {
                events(Event::NothingMatched { attempt: attempts });
                clock.sleep(policy.retry_interval);
            }
            Err(e) => return Outcome::RequestRejected { attempts, reason: chain(&e) },
        }
    }
    Outcome::NoProcess { attempts }
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
