//! The tools madengine provides itself, as steps around the workload on
//! each node (SLURM) or pod (Kubernetes): a profiler wraps the workload's
//! command, an analysis runs after it, and each names the directory it
//! leaves for collection. Nothing from the Python madengine is needed: the
//! node runs `madengine` (and, for rocprofv3, `rocprofv3`).

/// One built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// Its name, as the original madengine's `tools.json` has it where it
    /// has one.
    pub name: &'static str,
    /// What it does, in a few words.
    pub about: &'static str,
    /// The words put before the workload's command (its wrapper), if any.
    pub wrap: &'static [&'static str],
    /// Shell lines run after the workload, in its directory.
    pub after: &'static [&'static str],
    /// The directory it leaves there, to collect.
    pub output: &'static str,
}

/// The built-in tools, in the order they are listed.
pub const BUILTIN: &[Tool] = &[
    Tool {
        name: "torch_profiler_dynolog",
        about: "PyTorch traces on demand through dynolog (`madengine profile`)",
        wrap: &["madengine", "profile", "--"],
        after: &[],
        output: "torch_profiler_output",
    },
    Tool {
        name: "rocprofv3",
        about: "rocprofv3 kernel and memory-copy traces, as JSON",
        wrap: ROCPROF_JSON,
        after: &[],
        output: "rocprof_output",
    },
    Tool {
        name: "rocprofv3_lightweight",
        about: "the same as rocprofv3 (the original's name)",
        wrap: ROCPROF_JSON,
        after: &[],
        output: "rocprof_output",
    },
    Tool {
        name: "rocprofv3_perfetto",
        about: "rocprofv3 kernel and memory-copy traces, as Perfetto",
        wrap: &[
            "rocprofv3",
            "--kernel-trace",
            "--memory-copy-trace",
            "--output-format",
            "pftrace",
            "-d",
            "rocprof_output",
            "--",
        ],
        after: &[],
        output: "rocprof_output",
    },
    Tool {
        name: "summary",
        about: "TraceLens' core tables of every trace, natively (`madengine report summary`)",
        wrap: &[],
        after: &["madengine report summary --output-dir summary_output"],
        output: "summary_output",
    },
    Tool {
        name: "tracelens",
        about: "TraceLens' reports (`madengine report tracelens`; TraceLens in the image)",
        wrap: &[],
        after: &["madengine report tracelens --root . --output-dir tracelens_output --no-fail"],
        output: "tracelens_output",
    },
];

const ROCPROF_JSON: &[&str] = &[
    "rocprofv3",
    "--kernel-trace",
    "--memory-copy-trace",
    "--output-format",
    "json",
    "-d",
    "rocprof_output",
    "--",
];

/// The directories profilers leave their traces in (the original's tool
/// outputs, less the reports): what summarizing on the nodes spares the
/// gathering.
pub const TRACE_DIRS: &[&str] =
    &["rocprof_output", "rpd_output", "rocm_trace_lite_output", "torch_profiler_output"];

/// The built-in tool of this name.
pub fn builtin(name: &str) -> Option<&'static Tool> {
    BUILTIN.iter().find(|t| t.name == name)
}

/// The names of the built-in tools, for a message.
pub fn builtin_names() -> String {
    BUILTIN.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

/// `command` wrapped by each tool's wrapper, the first tool's outermost
/// (`torch_profiler_dynolog` then `rocprofv3`: `madengine profile --
/// rocprofv3 ... -- command`).
pub fn wrapped(tools: &[&Tool], command: &[String]) -> Vec<String> {
    let mut argv: Vec<String> =
        tools.iter().flat_map(|t| t.wrap.iter().map(|w| w.to_string())).collect();
    argv.extend(command.iter().cloned());
    argv
}

/// `collect` with each tool's output directory added where it is missing.
pub fn with_outputs(tools: &[&Tool], collect: &[String]) -> Vec<String> {
    let mut all = collect.to_vec();
    for tool in tools {
        if !all.iter().any(|c| c == tool.output) {
            all.push(tool.output.to_string());
        }
    }
    all
}

/// The built-in tools of `names` (unknown names left out: a job checks
/// them first), with `summary` added where the nodes summarize.
pub fn chosen(names: &[String], summarize_on_nodes: bool) -> Vec<&'static Tool> {
    let mut tools: Vec<&Tool> = names.iter().filter_map(|t| builtin(t)).collect();
    let summary = builtin("summary").expect("a built-in tool");
    if summarize_on_nodes && !tools.contains(&summary) {
        tools.push(summary);
    }
    tools
}

/// What a node copies back: `collect` and the tools' outputs, less the
/// traces where the nodes summarize them and `gather_traces` is not asked.
pub fn collected(
    tools: &[&Tool],
    collect: &[String],
    summarize_on_nodes: bool,
    gather_traces: bool,
) -> Vec<String> {
    let mut all = with_outputs(tools, collect);
    if summarize_on_nodes && !gather_traces {
        all.retain(|d| !TRACE_DIRS.contains(&d.as_str()));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profilers_wrap_in_order_and_outputs_are_collected() {
        let tools = [builtin("torch_profiler_dynolog").unwrap(), builtin("summary").unwrap()];
        let argv = wrapped(&tools, &["python3".into(), "train.py".into()]);
        assert_eq!(argv, ["madengine", "profile", "--", "python3", "train.py"]);
        let collect = with_outputs(&tools, &["torch_profiler_output".into()]);
        assert_eq!(collect, ["torch_profiler_output", "summary_output"]);
        assert!(builtin("nope").is_none());
        // Every name once.
        let mut names: Vec<_> = BUILTIN.iter().map(|t| t.name).collect();
        names.dedup();
        assert_eq!(names.len(), BUILTIN.len());
    }
}
