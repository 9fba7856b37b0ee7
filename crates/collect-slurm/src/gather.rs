//! Gathering: what each node left in `<results>/<job_id>/`.

use std::{
    collections::BTreeMap,
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::{Error, JobSpec, JobState, Result};

/// The summary's file name, in the job's results directory.
pub const SUMMARY: &str = "results_summary.json";
/// What submission records beside the results.
pub const JOB_FILE: &str = "job.json";

/// What submission recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job id.
    pub job_id: String,
    /// The spec it was rendered from.
    pub spec: JobSpec,
}

/// How a node's step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Exit code 0: logs and tool outputs collected.
    Succeeded,
    /// Non-zero exit: logs only.
    Failed,
    /// The step started but never recorded an exit code (killed, cancelled, node failure).
    Unfinished,
    /// No directory at all for a node the job asked for.
    Missing,
}

/// A collected directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Collected {
    /// Its name (e.g. `torch_profiler_output`).
    pub dir: String,
    /// Files in it (recursively).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One node's results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeSummary {
    /// `node_<SLURM_NODEID>`.
    pub name: String,
    /// SLURM's name for the node (`SLURMD_NODENAME`).
    pub slurm_node: Option<String>,
    /// How its step went.
    pub status: NodeStatus,
    /// Its workload's exit code.
    pub exit_code: Option<i32>,
    /// The tool output directories collected.
    pub collected: Vec<Collected>,
    /// Traces found in them, by kind (`pytorch`, `rocprof_json`, `pftrace`,
    /// and `rocpd` for rocprofv3's SQLite databases).
    pub traces: BTreeMap<String, usize>,
}

/// The version of `results_summary.json`'s shape ([`Summary`], and
/// collect-k8s' `Gathered`): raised when a key is renamed or removed or
/// changes its meaning.
pub const SUMMARY_VERSION: u32 = 1;

/// The job's results, as written to `results_summary.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Summary {
    /// [`SUMMARY_VERSION`] (0: a file written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The job id.
    pub job_id: String,
    /// The job's final state, when known.
    pub state: Option<JobState>,
    /// The job's results directory.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub results: PathBuf,
    /// Nodes the job asked for, when known.
    pub expected_nodes: Option<u32>,
    /// Every node, in node order.
    pub nodes: Vec<NodeSummary>,
    /// Nodes whose step failed or did not finish.
    pub failed: Vec<String>,
    /// Nodes with no results at all.
    pub missing: Vec<String>,
}

impl Summary {
    /// Whether every expected node succeeded.
    pub fn complete(&self) -> bool {
        self.failed.is_empty() && self.missing.is_empty()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_path_buf(), source }
}

fn count(dir: &Path) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => {
                    let (f, b) = count(&p);
                    files += f;
                    bytes += b;
                }
                Ok(_) => {
                    files += 1;
                    bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                }
                Err(_) => {}
            }
        }
    }
    (files, bytes)
}

/// Read `<results>/<job_id>/` and write its `results_summary.json`.
pub fn gather(job_dir: &Path, state: Option<JobState>) -> Result<Summary> {
    if !job_dir.is_dir() {
        return Err(Error::Io {
            path: job_dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no results directory for this job",
            ),
        });
    }
    let record: Option<JobRecord> =
        fs::read(job_dir.join(JOB_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let job_id = record
        .as_ref()
        .map(|r| r.job_id.clone())
        .unwrap_or_else(|| job_dir.file_name().unwrap_or_default().to_string_lossy().into_owned());
    let collect: Vec<String> = record
        .as_ref()
        .map(|r| r.spec.collect.clone())
        .unwrap_or_else(|| crate::DEFAULT_COLLECT.iter().map(|s| s.to_string()).collect());
    let expected = record.as_ref().map(|r| r.spec.nodes);

    let mut nodes: BTreeMap<u32, NodeSummary> = BTreeMap::new();
    for entry in fs::read_dir(job_dir).map_err(io(job_dir))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_prefix("node_").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let dir = entry.path();
        let read = |f: &str| fs::read_to_string(dir.join(f)).ok().map(|t| t.trim().to_string());
        let exit_code = read("exit_code").and_then(|t| t.parse().ok());
        let status = match exit_code {
            Some(0) => NodeStatus::Succeeded,
            Some(_) => NodeStatus::Failed,
            None => NodeStatus::Unfinished,
        };
        let mut collected = Vec::new();
        let mut traces = BTreeMap::new();
        for d in &collect {
            let path = dir.join(d);
            if !path.is_dir() {
                continue;
            }
            let (files, bytes) = count(&path);
            collected.push(Collected { dir: d.clone(), files, bytes });
        }
        if !collected.is_empty()
            && let Ok(found) = trace_discover::discover(&dir, &Default::default())
        {
            // rocprofv3's databases counted too (`rocpd`), so a node that
            // wrote only them is not taken for one that wrote nothing.
            traces = found.kind_counts();
        }
        nodes.insert(
            id,
            NodeSummary {
                name,
                slurm_node: read("slurm_node"),
                status,
                exit_code,
                collected,
                traces,
            },
        );
    }
    if let Some(n) = expected {
        for id in 0..n {
            nodes.entry(id).or_insert_with(|| NodeSummary {
                name: format!("node_{id}"),
                slurm_node: None,
                status: NodeStatus::Missing,
                exit_code: None,
                collected: vec![],
                traces: BTreeMap::new(),
            });
        }
    }
    let nodes: Vec<NodeSummary> = nodes.into_values().collect();
    let names = |want: &[NodeStatus]| -> Vec<String> {
        nodes.iter().filter(|n| want.contains(&n.status)).map(|n| n.name.clone()).collect()
    };
    let summary = Summary {
        version: SUMMARY_VERSION,
        job_id,
        state,
        results: job_dir.to_path_buf(),
        expected_nodes: expected,
        failed: names(&[NodeStatus::Failed, NodeStatus::Unfinished]),
        missing: names(&[NodeStatus::Missing]),
        nodes,
    };
    write_summary(job_dir, &summary)?;
    Ok(summary)
}

/// Written through a temporary file beside it and renamed, so it is never half-written.
fn write_summary(job_dir: &Path, summary: &Summary) -> Result<()> {
    let path = job_dir.join(SUMMARY);
    let mut json = serde_json::to_vec_pretty(summary).expect("json");
    json.push(b'\n');
    trace_sanitize::write_atomic(&path, |f| f.write_all(&json)).map_err(io(&path))
}
