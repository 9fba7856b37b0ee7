//! The job spec and its sbatch script.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The tool output directories each node contributes (the original's list).
pub const DEFAULT_COLLECT: [&str; 5] = [
    "rocprof_output",
    "rpd_output",
    "rocm_trace_lite_output",
    "torch_profiler_output",
    "tracelens_output",
];

/// A profiled multi-node run. Unknown keys in a JSON job file are an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobSpec {
    /// `--job-name`.
    pub name: String,
    /// `--nodes`.
    pub nodes: u32,
    /// `--ntasks-per-node` of the allocation. The workload step itself runs
    /// once per node (`srun --ntasks-per-node=1`): it starts its own ranks
    /// (torchrun), and each node's results go to one directory.
    pub ntasks_per_node: u32,
    /// `--gpus-per-node`.
    pub gpus_per_node: Option<u32>,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time` (SLURM's formats, e.g. `01:00:00`).
    pub time: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// Extra `#SBATCH` lines, without the prefix (e.g. `--exclusive`).
    pub sbatch: Vec<String>,
    /// Environment for the workload, `NAME=value`.
    pub env: Vec<(String, String)>,
    /// Shell commands run once in the batch script before the workload
    /// (e.g. `module load rocm`); given as shell text on purpose.
    pub setup: Vec<String>,
    /// The workload, as an argv (quoted for the shell when rendered).
    pub command: Vec<String>,
    /// Directories (relative to the node's work directory) to collect from
    /// each node whose step succeeded (each tool's output is added).
    pub collect: Vec<String>,
    /// Built-in tools ([`crate::tools::BUILTIN`]) run on each node: a
    /// profiler wraps the workload, an analysis runs after it.
    pub tools: Vec<String>,
    /// Summarize each node's traces on the node (the `summary` tool) and
    /// collect its reports, not its traces (unless `gather_traces`): KB per
    /// rank instead of the traces' hundreds of MB.
    pub summarize_on_nodes: bool,
    /// With `summarize_on_nodes`: collect the traces too.
    pub gather_traces: bool,
    /// Where `<job_id>/node_<N>/` go; must be on a filesystem every node sees.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub results_dir: PathBuf,
}

impl Default for JobSpec {
    fn default() -> JobSpec {
        JobSpec {
            name: "madengine".into(),
            nodes: 1,
            ntasks_per_node: 1,
            gpus_per_node: None,
            partition: None,
            time: None,
            account: None,
            sbatch: vec![],
            env: vec![],
            setup: vec![],
            command: vec![],
            collect: DEFAULT_COLLECT.iter().map(|s| s.to_string()).collect(),
            tools: vec![],
            summarize_on_nodes: false,
            gather_traces: false,
            results_dir: PathBuf::from("slurm_results"),
        }
    }
}

/// `value` as one shell word (sbatch reads `#SBATCH` lines the same way).
/// A NUL byte is the one thing a shell word cannot hold: `validate` refuses
/// a spec with one, and a command line shown in an error keeps it as is.
pub(crate) fn shell_quote(value: &str) -> String {
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(value)
        .map_or_else(|_| value.to_string(), |q| q.into_owned())
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl JobSpec {
    /// The first field whose text holds a NUL byte (a JSON job file can say `\u0000`).
    fn nul_field(&self) -> Option<String> {
        let has_nul = |s: &str| s.contains('\0');
        let optional = [("name", Some(&self.name)), ("partition", self.partition.as_ref())]
            .into_iter()
            .chain([("time", self.time.as_ref()), ("account", self.account.as_ref())]);
        for (field, value) in optional {
            if value.is_some_and(|v| has_nul(v)) {
                return Some(format!("`{field}`"));
            }
        }
        let lists = [
            ("sbatch", &self.sbatch),
            ("setup", &self.setup),
            ("command", &self.command),
            ("collect", &self.collect),
        ];
        for (field, values) in lists {
            if let Some(v) = values.iter().find(|v| has_nul(v)) {
                return Some(format!("`{field}` entry {v:?}"));
            }
        }
        if let Some((k, _)) = self.env.iter().find(|(k, v)| has_nul(k) || has_nul(v)) {
            return Some(format!("`env` entry {k:?}"));
        }
        has_nul(&self.results_dir.to_string_lossy()).then(|| "`results_dir`".to_string())
    }

    /// Check what SLURM or the shell would trip over.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Spec(what));
        if self.command.is_empty() {
            return bad("the job has no workload command".into());
        }
        if self.nodes == 0 || self.ntasks_per_node == 0 {
            return bad("--nodes and --ntasks-per-node must be at least 1".into());
        }
        if let Some(field) = self.nul_field() {
            return bad(format!("{field} has a NUL byte, which a shell script cannot hold"));
        }
        if self.name.is_empty() || self.name.contains(['\n', '\r']) {
            return bad(format!("job name {:?} is empty or has a line break", self.name));
        }
        for (k, _) in &self.env {
            if !is_env_name(k) {
                return bad(format!("`{k}` is not a valid environment variable name"));
            }
        }
        // Each goes on an #SBATCH line (results_dir in --output), which a
        // control character would break or split.
        let results = self.results_dir.to_string_lossy();
        for line in self
            .sbatch
            .iter()
            .chain(self.partition.iter())
            .chain(self.time.iter())
            .chain(self.account.iter())
            .map(String::as_str)
            .chain([results.as_ref()])
        {
            if line.chars().any(char::is_control) {
                return bad(format!(
                    "{line:?} has a control character (a line break?); each #SBATCH value must \
                     be one line of text"
                ));
            }
        }
        if self.gather_traces && !self.summarize_on_nodes {
            return bad("gather_traces goes with summarize_on_nodes (traces are gathered \
                        unless the nodes summarize them)"
                .into());
        }
        for name in &self.tools {
            if crate::tools::builtin(name).is_none() {
                return bad(format!(
                    "unknown tool `{name}`; the built-in tools are: {}",
                    crate::tools::builtin_names()
                ));
            }
        }
        for dir in &self.collect {
            if dir.is_empty() || dir.starts_with('/') || dir.split('/').any(|c| c == "..") {
                return bad(format!(
                    "collect directory `{dir}` must be relative and stay inside the node's work directory"
                ));
            }
        }
        Ok(())
    }

    /// The sbatch script. A relative `results_dir` is made absolute (from
    /// the current directory): each node writes into it after changing to
    /// its own work directory. Paths are quoted, `%j` is the job id. The
    /// node step is written by a here-document whose delimiter no line of
    /// it is, so no value (a workload argument with a line break) can end
    /// it early.
    pub fn render(&self) -> Result<String> {
        self.validate()?;
        let q = shell_quote;
        let results = std::path::absolute(&self.results_dir)
            .unwrap_or_else(|_| self.results_dir.clone())
            .display()
            .to_string();
        let mut s = String::from("#!/bin/bash\n# Rendered by madengine (collect-slurm).\n");
        let mut directive = |d: String| s.push_str(&format!("#SBATCH {d}\n"));
        directive(format!("--job-name={}", q(&self.name)));
        directive(format!("--nodes={}", self.nodes));
        directive(format!("--ntasks-per-node={}", self.ntasks_per_node));
        if let Some(g) = self.gpus_per_node {
            directive(format!("--gpus-per-node={g}"));
        }
        if let Some(p) = &self.partition {
            directive(format!("--partition={}", q(p)));
        }
        if let Some(t) = &self.time {
            directive(format!("--time={}", q(t)));
        }
        if let Some(a) = &self.account {
            directive(format!("--account={}", q(a)));
        }
        // sbatch does not expand variables here; a quoted path with spaces works.
        directive(format!("--output={}", q(&format!("{results}/slurm-%j.out"))));
        for line in &self.sbatch {
            directive(line.clone());
        }
        s.push_str("\nset -u\n");
        s.push_str(&format!("RESULTS={}/\"$SLURM_JOB_ID\"\n", q(&results)));
        s.push_str("mkdir -p \"$RESULTS\"\n");
        s.push_str("export MADENGINE_SUBMIT_DIR=\"${SLURM_SUBMIT_DIR:-$PWD}\"\n");
        for (k, v) in &self.env {
            s.push_str(&format!("export {k}={}\n", q(v)));
        }
        if !self.setup.is_empty() {
            s.push_str("\n# setup\n");
            for line in &self.setup {
                s.push_str(line);
                s.push('\n');
            }
        }
        let tools = crate::tools::chosen(&self.tools, self.summarize_on_nodes);
        let command = crate::tools::wrapped(&tools, &self.command);
        let command = command.iter().map(|a| q(a)).collect::<Vec<_>>().join(" ");
        let collect = crate::tools::collected(
            &tools,
            &self.collect,
            self.summarize_on_nodes,
            self.gather_traces,
        );
        let collect = collect.iter().map(|d| q(d)).collect::<Vec<_>>().join(" ");
        // The tools' analyses, after the workload (a failure is a warning),
        // their output beside it: into the node's logs.
        let mut after = String::new();
        for tool in &tools {
            for line in tool.after {
                after.push_str(&format!(
                    "{line} >> \"$NODE_DIR/stdout.out\" 2>> \"$NODE_DIR/stderr.err\" || echo \"node $SLURM_NODEID: {name} failed ($?)\" >&2\n",
                    name = tool.name
                ));
            }
        }
        let step = format!(
            r#"set -u
NODE_DIR="$RESULTS/node_$SLURM_NODEID"
mkdir -p "$NODE_DIR"
printf '%s\n' "${{SLURMD_NODENAME:-unknown}}" > "$NODE_DIR/slurm_node"
WORK="${{NODE_LOCAL_SCRATCH:-${{TMPDIR:-/tmp}}}}/madengine-$SLURM_JOB_ID-node$SLURM_NODEID"
mkdir -p "$WORK" && cd "$WORK" || exit 1
{command} > "$NODE_DIR/stdout.out" 2> "$NODE_DIR/stderr.err"
rc=$?
printf '%s\n' "$rc" > "$NODE_DIR/exit_code"
if [ "$rc" -eq 0 ]; then
{after}    for d in {collect}; do
        if [ -d "$d" ]; then cp -r "$d" "$NODE_DIR/" && echo "node $SLURM_NODEID: collected $d"; fi
    done
else
    echo "node $SLURM_NODEID: the workload exited with $rc; collecting its logs only" >&2
fi
exit "$rc"
"#
        );
        let end = delimiter(&step);
        s.push_str(&format!(
            r#"
# The step each node runs: the workload in a node-local directory (nodes
# never collide, even on one host), then its logs always and its tool output
# directories when it succeeded, into $RESULTS/node_$SLURM_NODEID.
cat > "$RESULTS/node_step.sh" <<'{end}'
{step}{end}
export RESULTS
srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 --kill-on-bad-exit=0 bash "$RESULTS/node_step.sh"
"#,
            nodes = self.nodes,
        ));
        Ok(s)
    }
}

/// A here-document delimiter that no line of `body` is: the body cannot
/// end the document early (a workload argument holding a line break and the
/// delimiter would run what follows it as the batch script).
fn delimiter(body: &str) -> String {
    let taken = |d: &str| body.lines().any(|l| l == d);
    let mut end = "MADENGINE_NODE_STEP".to_string();
    let mut n = 1;
    while taken(&end) {
        n += 1;
        end = format!("MADENGINE_NODE_STEP_{n}");
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::disallowed_methods, reason = "bash reads the quoted words back")]
    fn quoting() {
        assert_eq!(shell_quote("python3"), "python3");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote(""), "''");
        // Whatever the style, bash reads the word back as it was.
        for value in ["it's $HOME", "a\nb", "`id` $(id) \\ \"q\"", "%j,x=y", "ünï côdé"] {
            let echoed = std::process::Command::new("bash")
                .args(["-c", &format!("printf %s {}", shell_quote(value))])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(echoed.stdout).unwrap(), value);
        }
    }

    #[test]
    fn validation_names_the_problem() {
        let mut spec = JobSpec { command: vec!["true".into()], ..JobSpec::default() };
        assert!(spec.validate().is_ok());
        spec.env.push(("BAD-NAME".into(), "x".into()));
        assert!(spec.validate().unwrap_err().to_string().contains("BAD-NAME"));
        spec.env.clear();
        spec.command.push("a\0b".into());
        let err = spec.validate().unwrap_err().to_string();
        assert!(err.contains("`command` entry \"a\\0b\" has a NUL byte"), "{err}");
        spec.command.pop();
        spec.collect.push("../etc".into());
        assert!(spec.validate().is_err());
        spec.collect.pop();
        spec.sbatch.push("--exclusive\n#SBATCH --x".into());
        assert!(spec.validate().is_err());
    }
}
