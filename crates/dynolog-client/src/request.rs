//! The on-demand trace request: kineto config text, wire body, file names.

use serde::Serialize;

use crate::{Error, Result};

/// When the trace window opens and how long it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// A time window (`--duration-ms`, `--profile-start-time`).
    Duration {
        /// Window length in milliseconds (dyno's default 500).
        ms: u64,
        /// Unix time in ms to start at; 0: as soon as possible.
        start_time_ms: u64,
    },
    /// A number of optimizer steps (`--iterations`, needs `torch.profiler`
    /// imported in the workload so the step hook exists).
    Iterations {
        /// Steps to trace.
        count: u32,
        /// Start at the next multiple of this step (dyno's default 1).
        roundup: u32,
    },
}

/// What `dyno gputrace` asks for, as typed data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceRequest {
    /// `ACTIVITIES_LOG_FILE`: where kineto writes (it inserts `_<pid>`).
    pub log_file: String,
    /// The trace window.
    pub window: Window,
    /// `PROFILE_REPORT_INPUT_SHAPES`.
    pub record_shapes: bool,
    /// `PROFILE_PROFILE_MEMORY` (duration windows only).
    pub profile_memory: bool,
    /// `PROFILE_WITH_STACK`.
    pub with_stacks: bool,
    /// `PROFILE_WITH_FLOPS`.
    pub with_flops: bool,
    /// `PROFILE_WITH_MODULES`.
    pub with_modules: bool,
    /// The job id processes registered with (`SLURM_JOB_ID` or 0).
    pub job_id: u64,
    /// Processes to trace (a process matches when any of its registered
    /// ancestors is listed); empty: every process of the job.
    pub pids: Vec<u32>,
    /// At most this many processes get the config. dyno's default is 3,
    /// which silently drops ranks on an 8-GPU node; ours is 64.
    pub process_limit: u32,
}

impl TraceRequest {
    /// dyno's defaults (500 ms window, all processes of job 0), except the
    /// process limit (64).
    pub fn new(log_file: impl Into<String>) -> TraceRequest {
        TraceRequest {
            log_file: log_file.into(),
            window: Window::Duration { ms: 500, start_time_ms: 0 },
            record_shapes: false,
            profile_memory: false,
            with_stacks: false,
            with_flops: false,
            with_modules: false,
            job_id: 0,
            pids: Vec::new(),
            process_limit: 64,
        }
    }

    /// The kineto config text, lines in the real CLI's order: log file,
    /// trigger, shapes, memory, stacks, flops, modules.
    pub fn config_text(&self) -> Result<String> {
        let mut lines = vec![format!("ACTIVITIES_LOG_FILE={}", self.log_file)];
        match self.window {
            Window::Duration { ms, start_time_ms } => {
                lines.push(format!("PROFILE_START_TIME={start_time_ms}"));
                lines.push(format!("ACTIVITIES_DURATION_MSECS={ms}"));
            }
            Window::Iterations { count, roundup } => {
                if count == 0 {
                    return Err(Error::InvalidRequest(
                        "an iteration window needs at least 1 iteration".into(),
                    ));
                }
                lines.push("PROFILE_START_ITERATION=0".into());
                lines.push(format!("PROFILE_START_ITERATION_ROUNDUP={roundup}"));
                lines.push(format!("ACTIVITIES_ITERATIONS={count}"));
            }
        }
        lines.push(format!("PROFILE_REPORT_INPUT_SHAPES={}", self.record_shapes));
        if self.profile_memory {
            let Window::Duration { ms, .. } = self.window else {
                return Err(Error::InvalidRequest(
                    "memory profiling needs a duration window (--duration-ms), not --iterations"
                        .into(),
                ));
            };
            lines.push("PROFILE_PROFILE_MEMORY=true".into());
            lines.push("PROFILE_MEMORY=true".into());
            lines.push(format!("PROFILE_MEMORY_DURATION_MSECS={ms}"));
        }
        lines.push(format!("PROFILE_WITH_STACK={}", self.with_stacks));
        lines.push(format!("PROFILE_WITH_FLOPS={}", self.with_flops));
        lines.push(format!("PROFILE_WITH_MODULES={}", self.with_modules));
        Ok(lines.join("\n"))
    }

    /// The request body: `{"fn":"setKinetOnDemandRequest","config":...,"job_id":...,"pids":[...],"process_limit":...}`,
    /// serialized by serde, so a `"` or `\` in the log path stays valid JSON.
    pub fn body(&self) -> Result<Vec<u8>> {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(rename = "fn")]
            function: &'static str,
            config: &'a str,
            job_id: u64,
            pids: &'a [u32],
            process_limit: u32,
        }
        if self.job_id > i32::MAX as u64 {
            return Err(Error::InvalidRequest(format!(
                "job id {} does not fit the daemon's C int (at most {})",
                self.job_id,
                i32::MAX
            )));
        }
        let config = self.config_text()?;
        // dyno sends [0] for "every process"; so do we.
        let all = [0u32];
        let pids = if self.pids.is_empty() { &all[..] } else { &self.pids };
        let body = Body {
            function: "setKinetOnDemandRequest",
            config: &config,
            job_id: self.job_id,
            pids,
            process_limit: self.process_limit,
        };
        Ok(serde_json::to_vec(&body).expect("plain data serializes"))
    }

    /// Refuse a log file kineto would ignore: on-demand configs may only
    /// write under `/tmp/` (kineto PR #1426, PyTorch 2.15 and later) unless
    /// the workload sets `KINETO_ONDEMAND_TRACE_DIR` (pass it as `allowed_dir`),
    /// and never through `..`.
    pub fn check_log_file(&self, allowed_dir: Option<&str>) -> Result<()> {
        let dir = allowed_dir
            .map(|d| format!("{}/", d.trim_end_matches('/')))
            .unwrap_or_else(|| "/tmp/".into());
        if self.log_file.split('/').any(|c| c == "..") {
            return Err(Error::InvalidRequest(format!(
                "kineto ignores on-demand log files with `..` in them: {}",
                self.log_file
            )));
        }
        if !self.log_file.starts_with(&dir) {
            return Err(Error::InvalidRequest(format!(
                "kineto only writes on-demand traces under {dir} (it would ignore {} and write \
                 /tmp/libkineto_activities_<pid>.json instead); use a path under {dir}, or set \
                 KINETO_ONDEMAND_TRACE_DIR in the workload's environment to the directory you want",
                self.log_file
            )));
        }
        Ok(())
    }
}

/// The file kineto writes for process `pid` given `ACTIVITIES_LOG_FILE`:
/// the first `.pt.trace.json` becomes `_<pid>.pt.trace.json`, else the first
/// `.json` becomes `_<pid>.json`; a path without `.json` gets no pid. (The
/// real `dyno` CLI prints a wrong name for `.pt.trace.json`.)
pub fn kineto_trace_path(log_file: &str, pid: u32) -> String {
    if let Some(at) = log_file.find(".pt.trace.json") {
        return format!("{}_{pid}{}", &log_file[..at], &log_file[at..]);
    }
    if let Some(at) = log_file.find(".json") {
        return format!("{}_{pid}{}", &log_file[..at], &log_file[at..]);
    }
    log_file.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_paths() {
        let check =
            |log: &str, expected: &str| assert_eq!(kineto_trace_path(log, 4242), expected, "{log}");
        check("/tmp/libkineto_trace.json", "/tmp/libkineto_trace_4242.json");
        check("/tmp/x.pt.trace.json", "/tmp/x_4242.pt.trace.json");
        check("/tmp/a.json.d/t.json", "/tmp/a_4242.json.d/t.json");
        check("/tmp/trace", "/tmp/trace");
        check("/tmp/it.pt.trace.json.gz", "/tmp/it_4242.pt.trace.json.gz");
    }

    #[test]
    fn config_text_in_dyno_order() {
        let mut r = TraceRequest::new("/tmp/dynotest_trace.json");
        assert_eq!(
            r.config_text().unwrap(),
            "ACTIVITIES_LOG_FILE=/tmp/dynotest_trace.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\n\
             PROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=false"
        );
        r.window = Window::Iterations { count: 3, roundup: 1 };
        r.record_shapes = true;
        r.with_stacks = true;
        assert_eq!(
            r.config_text().unwrap(),
            "ACTIVITIES_LOG_FILE=/tmp/dynotest_trace.json\nPROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=1\n\
             ACTIVITIES_ITERATIONS=3\nPROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_WITH_STACK=true\nPROFILE_WITH_FLOPS=false\n\
             PROFILE_WITH_MODULES=false"
        );
        r.profile_memory = true;
        assert!(r.config_text().unwrap_err().to_string().contains("duration window"));
        r.window = Window::Duration { ms: 800, start_time_ms: 0 };
        assert!(r.config_text().unwrap().contains(
            "PROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_PROFILE_MEMORY=true\nPROFILE_MEMORY=true\nPROFILE_MEMORY_DURATION_MSECS=800\nPROFILE_WITH_STACK=true"
        ));
    }

    #[test]
    fn log_files_outside_tmp_are_refused_with_the_reason() {
        let ok = TraceRequest::new("/tmp/run/trace.json");
        assert!(ok.check_log_file(None).is_ok());
        let elsewhere = TraceRequest::new("/workspace/trace.json");
        let err = elsewhere.check_log_file(None).unwrap_err().to_string();
        assert!(
            err.contains("only writes on-demand traces under /tmp/")
                && err.contains("KINETO_ONDEMAND_TRACE_DIR"),
            "{err}"
        );
        assert!(elsewhere.check_log_file(Some("/workspace")).is_ok());
        assert!(TraceRequest::new("/tmp/../etc/x.json").check_log_file(None).is_err());
        assert!(TraceRequest::new("/tmpfoo/x.json").check_log_file(None).is_err());
    }
}
