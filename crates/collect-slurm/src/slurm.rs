//! Talking to SLURM: sbatch, squeue, scontrol, scancel, through one helper.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};

use crate::{Error, Result, spec::shell_quote};

/// The longest pause between two `squeue` calls while following a job.
pub const MAX_POLL: Duration = Duration::from_secs(10);

/// Where the SLURM client commands are and which cluster they talk to.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// `SLURM_CONF` for the commands (the caller's environment otherwise).
    pub conf: Option<PathBuf>,
}

/// How a job ended (or where it is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobState {
    /// The job id.
    pub job_id: String,
    /// `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, `PENDING`, `RUNNING`, ...
    pub state: String,
    /// The batch script's exit code (`ExitCode=a:b`: a), or 128 + b when a signal ended it.
    pub exit_code: Option<i32>,
    /// SLURM's reason, when it gives one.
    pub reason: Option<String>,
}

impl JobState {
    /// Whether the job ended well.
    pub fn succeeded(&self) -> bool {
        self.state == "COMPLETED" && self.exit_code.unwrap_or(0) == 0
    }
}

impl Slurm {
    /// The one place this crate runs a command: argv exact, no shell; a
    /// failure quotes the command and its stderr.
    #[allow(clippy::disallowed_methods, reason = "this is the crate's process helper")]
    fn run(&self, argv: &[&str]) -> Result<String> {
        let command = argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
        let args: Vec<OsString> = argv[1..].iter().map(OsString::from).collect();
        let mut e =
            duct::cmd(argv[0], args).stdout_capture().stderr_capture().stdin_null().unchecked();
        if let Some(conf) = &self.conf {
            e = e.env("SLURM_CONF", conf);
        }
        let out = e.run().map_err(|source| Error::Spawn { command: command.clone(), source })?;
        if !out.status.success() {
            return Err(Error::Command {
                command,
                code: out.status.code().unwrap_or(-1),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `sbatch --parsable SCRIPT`: the job id.
    pub fn submit(&self, script: &Path) -> Result<String> {
        let path = script.display().to_string();
        let out = self.run(&["sbatch", "--parsable", &path])?;
        // `<id>` or `<id>;<cluster>`
        let id = out.trim().split(';').next().unwrap_or("").to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(Error::Unexpected {
                command: format!("sbatch --parsable {path}"),
                output: out,
            });
        }
        Ok(id)
    }

    /// Whether the job is still queued or running (`squeue -h -j ID`).
    pub fn in_queue(&self, job_id: &str) -> Result<bool> {
        Ok(self.queue_state(job_id)?.is_some())
    }

    /// The job's state while SLURM lists it (`PENDING`, `RUNNING`,
    /// `COMPLETING`, ...: squeue's `%T`); `None` once it left the queue.
    pub fn queue_state(&self, job_id: &str) -> Result<Option<String>> {
        match self.run(&["squeue", "-h", "-j", job_id, "-o", "%T"]) {
            Ok(out) => Ok(Some(out.trim().to_string()).filter(|s| !s.is_empty())),
            // squeue errors for ids it has forgotten: no longer queued.
            Err(Error::Command { stderr, .. }) if stderr.contains("Invalid job id") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `scontrol show job ID`, parsed.
    pub fn show(&self, job_id: &str) -> Result<JobState> {
        let out = self.run(&["scontrol", "show", "job", job_id])?;
        let field = |key: &str| {
            out.split_whitespace().find_map(|w| w.strip_prefix(key).map(str::to_string))
        };
        let state = field("JobState=").ok_or_else(|| Error::Unexpected {
            command: format!("scontrol show job {job_id}"),
            output: out.clone(),
        })?;
        let exit_code = field("ExitCode=").and_then(|v| {
            let (code, signal) = v.split_once(':')?;
            let (code, signal): (i32, i32) = (code.parse().ok()?, signal.parse().ok()?);
            Some(if signal > 0 { 128 + signal } else { code })
        });
        let reason = field("Reason=").filter(|r| r != "None");
        Ok(JobState { job_id: job_id.to_string(), state, exit_code, reason })
    }

    /// `scancel ID`.
    pub fn cancel(&self, job_id: &str) -> Result<()> {
        self.run(&["scancel", job_id]).map(|_| ())
    }

    /// Poll until the job leaves the queue, then its final state. Past
    /// `deadline` the job is cancelled and reported as such. Polls start
    /// `poll` apart and back off to [`MAX_POLL`], so a job of hours does not
    /// query the controller several times a second; `on_state` hears each
    /// queue state as it changes (`PENDING`, `RUNNING`, ...).
    pub fn wait(
        &self,
        job_id: &str,
        deadline: Option<Duration>,
        poll: Duration,
        on_state: &mut dyn FnMut(&str),
    ) -> Result<(JobState, bool)> {
        let started = Instant::now();
        let mut cancelled = false;
        let mut interval = poll;
        let mut last = String::new();
        while let Some(state) = self.queue_state(job_id)? {
            if state != last {
                on_state(&state);
                last = state;
            }
            if !cancelled && deadline.is_some_and(|d| started.elapsed() > d) {
                self.cancel(job_id)?;
                cancelled = true;
                // It leaves the queue soon: look again soon.
                interval = poll;
            }
            // Never sleep past the deadline.
            let left = deadline.map(|d| d.saturating_sub(started.elapsed()));
            let nap = match left {
                Some(left) if !cancelled => interval.min(left.max(poll)),
                _ => interval,
            };
            std::thread::sleep(nap);
            interval = (interval * 3 / 2).min(MAX_POLL);
        }
        Ok((self.show(job_id)?, cancelled))
    }
}
