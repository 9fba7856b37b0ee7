//! Following a Job to its end: `kubectl get job NAME -o json`, polled.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::{Error, Kubectl, Result};

/// The longest wait between two looks at a Job: a Job of hours is asked
/// about every 10 s, not several times a second.
pub const MAX_POLL: Duration = Duration::from_secs(10);

/// Where a Job stands: its `.status` (and `.spec.completions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobStatus {
    /// Pods running.
    pub active: u64,
    /// Pods that succeeded.
    pub succeeded: u64,
    /// Pods that failed.
    pub failed: u64,
    /// Pods that must succeed (`.spec.completions`).
    pub completions: Option<u64>,
    /// `Complete` or `Failed` once the Job ended (its condition of that type
    /// is `True`); `None` while it runs.
    pub ended: Option<String>,
    /// Why it failed: the `Failed` condition's reason and message
    /// (`BackoffLimitExceeded: Job has reached the specified backoff limit`).
    pub reason: Option<String>,
    /// Its pods that are stuck, each with why ([`stuck_pods`]); filled by
    /// [`Kubectl::follow`] while the Job runs.
    pub stuck: Vec<String>,
    /// Why its pods could not be listed (kubectl's error: most often no
    /// permission to list pods); `stuck` then tells nothing. Filled by
    /// [`Kubectl::follow`], which asks once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pods_unlisted: Option<String>,
}

impl JobStatus {
    /// The status of a Job object as `kubectl get job -o json` prints it;
    /// counts Kubernetes leaves out are 0.
    pub fn of(job: &Value) -> JobStatus {
        let status = &job["status"];
        let count = |key: &str| status[key].as_u64().unwrap_or(0);
        let ended =
            status["conditions"].as_array().into_iter().flatten().find(|c| {
                c["status"] == "True" && (c["type"] == "Complete" || c["type"] == "Failed")
            });
        let text =
            |c: &Value, key: &str| c[key].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let reason = ended.filter(|c| c["type"] == "Failed").and_then(|c| {
            match (text(c, "reason"), text(c, "message")) {
                (Some(r), Some(m)) => Some(format!("{r}: {m}")),
                (r, m) => r.or(m),
            }
        });
        JobStatus {
            active: count("active"),
            succeeded: count("succeeded"),
            failed: count("failed"),
            completions: job["spec"]["completions"].as_u64(),
            ended: ended.and_then(|c| c["type"].as_str()).map(str::to_string),
            reason,
            stuck: vec![],
            pods_unlisted: None,
        }
    }

    /// Whether the Job completed: every pod it needed succeeded.
    pub fn complete(&self) -> bool {
        self.ended.as_deref() == Some("Complete")
    }

    /// One line: `2 active, 0 succeeded, 0 failed (of 2)`, `Complete: 2
    /// succeeded, 0 failed (of 2)`, `Failed (BackoffLimitExceeded: ...): ...`.
    pub fn describe(&self) -> String {
        let of = self.completions.map(|n| format!(" (of {n})")).unwrap_or_default();
        let counts = format!("{} succeeded, {} failed{of}", self.succeeded, self.failed);
        match (&self.ended, &self.reason) {
            (Some(ended), Some(reason)) => format!("{ended} ({reason}): {counts}"),
            (Some(ended), None) => format!("{ended}: {counts}"),
            (None, _) => format!("{} active, {counts}", self.active),
        }
    }
}

/// Container waiting reasons that are a pod on its way, not stuck.
const ON_ITS_WAY: [&str; 2] = ["ContainerCreating", "PodInitializing"];

/// The pods of a pod list (`kubectl get pods -o json`) that are stuck, each
/// as `POD: REASON (MESSAGE)`: one the scheduler cannot place
/// (`Unschedulable`), or with a container, init container included, waiting
/// for a reason other than being created (`ImagePullBackOff`,
/// `CrashLoopBackOff`, `CreateContainerConfigError`, ...).
pub fn stuck_pods(pods: &Value) -> Vec<String> {
    let text = |v: &Value, key: &str| v[key].as_str().filter(|s| !s.is_empty()).map(str::to_string);
    let why = |v: &Value| match (text(v, "reason"), text(v, "message")) {
        (Some(r), Some(m)) => Some(format!("{r} ({m})")),
        (r, m) => r.or(m),
    };
    let mut stuck = Vec::new();
    for pod in pods["items"].as_array().into_iter().flatten() {
        let name = text(&pod["metadata"], "name").unwrap_or_else(|| "a pod".into());
        let status = &pod["status"];
        let unschedulable = status["conditions"].as_array().into_iter().flatten().find(|c| {
            c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable"
        });
        let waiting = ["initContainerStatuses", "containerStatuses"]
            .iter()
            .flat_map(|key| status[*key].as_array().into_iter().flatten())
            .map(|c| &c["state"]["waiting"])
            .find(|w| text(w, "reason").is_some_and(|r| !ON_ITS_WAY.contains(&r.as_str())));
        if let Some(why) = unschedulable.or(waiting).and_then(why) {
            stuck.push(format!("{name}: {why}"));
        }
    }
    stuck
}

impl Kubectl {
    /// `kubectl get job JOB -o json`: where the Job stands.
    pub fn job_status(&self, job: &str) -> Result<JobStatus> {
        let args = ["get", "job", job, "-o", "json"];
        let out = self.run(&args, None)?;
        let value: Value = serde_json::from_str(&out).map_err(|source| Error::Unexpected {
            command: format!("kubectl {}", args.join(" ")),
            source,
        })?;
        Ok(JobStatus::of(&value))
    }

    /// The Job's pods that are stuck ([`stuck_pods`]); the error when they
    /// cannot be listed (no permission to, ...).
    fn pods_stuck(&self, job: &str) -> Result<Vec<String>> {
        let selector = format!("batch.kubernetes.io/job-name={job}");
        let args = ["get", "pods", "-l", &selector, "-o", "json"];
        let out = self.run(&args, None)?;
        let pods: Value = serde_json::from_str(&out).map_err(|source| Error::Unexpected {
            command: format!("kubectl {}", args.join(" ")),
            source,
        })?;
        Ok(stuck_pods(&pods))
    }

    /// Look at the Job until it ends (its `Complete` or `Failed` condition),
    /// then its last status. Looks start `poll` apart and back off to
    /// [`MAX_POLL`]; `on_change` hears each status that differs from the
    /// one before (pods stuck included). Pods that cannot be listed are not
    /// asked for again ([`JobStatus::pods_unlisted`] says why, from then
    /// on): the Job is still followed. Past `deadline` the Job is deleted
    /// (its pods with it; the results volume stays) and its last status
    /// returned with `true`.
    pub fn follow(
        &self,
        job: &str,
        deadline: Option<Duration>,
        poll: Duration,
        on_change: &mut dyn FnMut(&JobStatus),
    ) -> Result<(JobStatus, bool)> {
        let started = Instant::now();
        let mut interval = poll;
        let mut last: Option<JobStatus> = None;
        let mut unlisted: Option<String> = None;
        loop {
            let mut status = self.job_status(job)?;
            if status.ended.is_none() && unlisted.is_none() {
                match self.pods_stuck(job) {
                    Ok(stuck) => status.stuck = stuck,
                    Err(e @ Error::Cancelled { .. }) => return Err(e),
                    Err(e) => unlisted = Some(e.to_string()),
                }
            }
            status.pods_unlisted.clone_from(&unlisted);
            if last.as_ref() != Some(&status) {
                on_change(&status);
            }
            if status.ended.is_some() {
                return Ok((status, false));
            }
            if deadline.is_some_and(|d| started.elapsed() > d) {
                self.run(&["delete", "job", job, "--wait=false", "--ignore-not-found"], None)?;
                return Ok((status, true));
            }
            last = Some(status);
            // Never sleep past the deadline.
            let left = deadline.map(|d| d.saturating_sub(started.elapsed()));
            std::thread::sleep(left.map_or(interval, |left| interval.min(left.max(poll))));
            interval = (interval * 3 / 2).min(MAX_POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn statuses_read_as_kubernetes_writes_them() {
        // A Job just created: no counts yet.
        let status = JobStatus::of(&json!({"spec": {"completions": 2}, "status": {}}));
        assert_eq!(status.describe(), "0 active, 0 succeeded, 0 failed (of 2)");
        assert!(!status.complete());

        // SuccessCriteriaMet comes before Complete (Kubernetes 1.31+): not the end yet.
        let status = JobStatus::of(&json!({"spec": {"completions": 2}, "status": {
            "succeeded": 2,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}}));
        assert_eq!(status.ended, None);
        let status = JobStatus::of(&json!({"spec": {"completions": 2}, "status": {
            "succeeded": 2,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                           {"type": "Complete", "status": "True"}]}}));
        assert!(status.complete());
        assert_eq!(status.describe(), "Complete: 2 succeeded, 0 failed (of 2)");

        let status = JobStatus::of(&json!({"spec": {"completions": 2}, "status": {
            "active": 1, "failed": 4,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                            "message": "Job has reached the specified backoff limit"}]}}));
        assert!(!status.complete());
        assert_eq!(
            status.describe(),
            "Failed (BackoffLimitExceeded: Job has reached the specified backoff limit): 0 \
             succeeded, 4 failed (of 2)"
        );
        // A condition that is no longer true does not end it.
        let status = JobStatus::of(&json!({"status": {
            "active": 2, "conditions": [{"type": "Failed", "status": "False"}]}}));
        assert_eq!(status.describe(), "2 active, 0 succeeded, 0 failed");
    }

    #[test]
    fn stuck_pods_say_why() {
        let pods = json!({"kind": "List", "items": [
            {"metadata": {"name": "bert-0-a"}, "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/4 nodes are available: 4 Insufficient amd.com/gpu."}]}},
            {"metadata": {"name": "bert-1-b"}, "status": {"phase": "Pending",
                "initContainerStatuses": [{"name": "madengine", "state": {"waiting": {
                    "reason": "ImagePullBackOff",
                    "message": "Back-off pulling image \"madengine/tools:bad\""}}}]}},
            {"metadata": {"name": "bert-2-c"}, "status": {"phase": "Running",
                "containerStatuses": [{"name": "model", "state": {"waiting": {
                    "reason": "CrashLoopBackOff"}}}]}},
            // On its way: not stuck.
            {"metadata": {"name": "bert-3-d"}, "status": {"phase": "Pending",
                "containerStatuses": [{"name": "model", "state": {"waiting": {
                    "reason": "ContainerCreating"}}}]}},
            {"metadata": {"name": "bert-4-e"}, "status": {"phase": "Running",
                "containerStatuses": [{"name": "model", "state": {"running": {}}}]}}
        ]});
        assert_eq!(
            stuck_pods(&pods),
            [
                "bert-0-a: Unschedulable (0/4 nodes are available: 4 Insufficient amd.com/gpu.)",
                "bert-1-b: ImagePullBackOff (Back-off pulling image \"madengine/tools:bad\")",
                "bert-2-c: CrashLoopBackOff",
            ]
        );
        assert!(stuck_pods(&json!({"items": []})).is_empty());
    }
}
