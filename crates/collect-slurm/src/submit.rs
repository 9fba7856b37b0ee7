//! Submission: the results directory first, then sbatch.

use std::{fs, path::PathBuf, time::Duration};

use serde::Serialize;

use crate::{Error, JOB_FILE, JobRecord, JobSpec, JobState, Result, Slurm};

/// A submitted job.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Submitted {
    /// The job id.
    pub job_id: String,
    /// `<results>/<job_id>`.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub results: PathBuf,
    /// The script that was submitted (kept beside the results).
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub script: PathBuf,
}

/// Render `spec`, create its results directory (SLURM fails a job whose
/// output directory is missing), submit with `sbatch --parsable`, and record
/// the spec in `<results>/<job_id>/job.json`.
pub fn submit(spec: &JobSpec, slurm: &Slurm) -> Result<Submitted> {
    let results_dir = std::path::absolute(&spec.results_dir)
        .map_err(|source| Error::Io { path: spec.results_dir.clone(), source })?;
    let spec = JobSpec { results_dir: results_dir.clone(), ..spec.clone() };
    let script_text = spec.render()?;
    fs::create_dir_all(&results_dir)
        .map_err(|source| Error::Io { path: results_dir.clone(), source })?;
    let pending = tempfile::Builder::new()
        .prefix(".madengine-job-")
        .suffix(".sbatch")
        .tempfile_in(&results_dir)
        .map_err(|source| Error::Io { path: results_dir.clone(), source })?;
    fs::write(pending.path(), &script_text)
        .map_err(|source| Error::Io { path: pending.path().to_path_buf(), source })?;
    let (_, pending_path) =
        pending.keep().map_err(|e| Error::Io { path: results_dir.clone(), source: e.error })?;
    let submitted = slurm.submit(&pending_path);
    let job_id = match submitted {
        Ok(id) => id,
        Err(e) => {
            let _ = fs::remove_file(&pending_path);
            return Err(e);
        }
    };
    let results = results_dir.join(&job_id);
    fs::create_dir_all(&results).map_err(|source| Error::Io { path: results.clone(), source })?;
    let script = results.join("job.sbatch");
    if script.exists() {
        return Err(Error::Exists { path: script });
    }
    fs::rename(&pending_path, &script)
        .map_err(|source| Error::Io { path: script.clone(), source })?;
    let record = JobRecord { job_id: job_id.clone(), spec };
    let job_file = results.join(JOB_FILE);
    let bytes = serde_json::to_vec_pretty(&record).expect("plain data");
    trace_sanitize::write_atomic(&job_file, |f| std::io::Write::write_all(f, &bytes))
        .map_err(|source| Error::Io { path: job_file, source })?;
    Ok(Submitted { job_id, results, script })
}

/// Follow a submitted job until it ends (or `deadline`, which cancels it).
pub fn follow(
    submitted: &Submitted,
    slurm: &Slurm,
    deadline: Option<Duration>,
) -> Result<(JobState, bool)> {
    follow_with(submitted, slurm, deadline, &mut |_| {})
}

/// [`follow`], telling `on_state` each queue state as it changes
/// (`PENDING`, `RUNNING`, `COMPLETING`, ...).
pub fn follow_with(
    submitted: &Submitted,
    slurm: &Slurm,
    deadline: Option<Duration>,
    on_state: &mut dyn FnMut(&str),
) -> Result<(JobState, bool)> {
    slurm.wait(&submitted.job_id, deadline, Duration::from_millis(200), on_state)
}
