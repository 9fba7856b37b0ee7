//! Command-line arguments: clap derive only, plain data.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use trace_report::CyclePick;

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    the command found problems (with --check a trace needs repair; a TraceLens job
       failed; no process matched a trace request; GPU time grew more than
       --max-regression allows)
  2    usage error (bad arguments)
  3    input or I/O error (a missing, unreadable or corrupt file; a failed write)
  4    TraceLens is missing for the chosen interpreter (or the interpreter cannot run)
  5    the dynolog daemon cannot be reached, rejected a request, or died at start
  130  interrupted (Ctrl-C); `report tracelens` first stops its jobs and removes its
       scratch files, keeping the reports already written; `trace sanitize` leaves no
       partial output
`madengine profile` exits with the workload's own code (127: not found, 126: cannot run,
as a shell): on Ctrl-C the workload decides, and madengine still stops the daemon,
removes its hook and keeps the traces captured.";

/// What `-h` shows after a command's options: the examples and exit codes
/// of its `--help` text (paragraphs starting `Example` or `Exit code`); the
/// explanation is for `--help`, as ripgrep and uv split them.
fn brief(long: &str) -> String {
    let kept: Vec<&str> = long
        .split("\n\n")
        .filter(|p| p.starts_with("Example") || p.starts_with("Exit code"))
        .collect();
    kept.join("\n\n")
}

/// Turn GPU profiler traces into TraceLens reports.
///
/// madengine finds the traces a benchmark run leaves behind (PyTorch/Kineto,
/// rocprofv3 JSON, Perfetto), repairs what strict JSON parsers such as
/// TraceLens' orjson reject, and drives TraceLens over them.
#[derive(Debug, Parser)]
#[command(name = "madengine", version, propagate_version = true, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The command line, parsed (on an error, clap's message and exit 2).
    /// An environment variable behind a flag that is set but empty counts
    /// as unset, as the original madengine's scripts passed no flag for it
    /// (`TRACELENS_GPU_ARCH=` in a tools config means no GPU arch).
    pub(crate) fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let matches = without_empty_env(Cli::command()).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// `command` and its subcommands without the `env` of each argument whose
/// variable is set to nothing.
fn without_empty_env(mut command: clap::Command) -> clap::Command {
    let empty: Vec<clap::Id> = command
        .get_arguments()
        .filter(|arg| {
            arg.get_env().is_some_and(|name| std::env::var_os(name).is_some_and(|v| v.is_empty()))
        })
        .map(|arg| arg.get_id().clone())
        .collect();
    for id in empty {
        command = command.mut_arg(id, |arg| arg.env(None));
    }
    let subcommands: Vec<String> =
        command.get_subcommands().map(|sub| sub.get_name().to_string()).collect();
    for name in subcommands {
        command = command.mut_subcommand(name, without_empty_env);
    }
    command
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Find, classify and repair trace files.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Turn a run directory's traces into reports.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Install what the other commands need.
    #[command(subcommand)]
    Setup(SetupCommand),
    /// Talk to a dynolog daemon; start, trigger and stop on-demand capture.
    #[command(subcommand)]
    Dynolog(DynologCommand),
    /// Run a PyTorch workload and capture Kineto traces through dynolog, without changing it.
    #[command(after_help = brief(PROFILE_HELP), after_long_help = PROFILE_HELP)]
    Profile(ProfileArgs),
    /// Profiled multi-node runs on SLURM: render, submit, gather.
    #[command(subcommand)]
    Slurm(SlurmCommand),
    /// Profiled runs as Kubernetes Jobs: render, apply, gather.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Print a shell completion script for madengine.
    #[command(after_help = brief(COMPLETIONS_HELP), after_long_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// The JSON Schema of every --json document (for `cargo xtask codegen`).
    #[cfg(feature = "schema")]
    #[command(hide = true)]
    Schemas,
}

const COMPLETIONS_HELP: &str = "\
Examples:
  madengine completions bash > ~/.local/share/bash-completion/completions/madengine
  madengine completions zsh > ~/.zfunc/_madengine    # with fpath+=(~/.zfunc) before compinit
  madengine completions fish > ~/.config/fish/completions/madengine.fish

Subcommands, options and their values complete; paths complete as files.";

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub(crate) enum K8sCommand {
    /// Render the manifests (ConfigMap, Service, PVC, Job) as JSON.
    #[command(after_help = brief(K8S_RENDER_HELP), after_long_help = K8S_RENDER_HELP)]
    Render(K8sRenderArgs),
    /// Render and `kubectl apply` the manifests.
    Apply(K8sApplyArgs),
    /// Copy every pod's results back from the job's results volume.
    Gather(K8sGatherArgs),
}

const K8S_RENDER_HELP: &str = "\
The job file (JSON) holds: name, namespace, image, nodes, gpus_per_node,
gpu_vendor (amd|nvidia), command (argv list), results_storage (e.g. \"10Gi\"),
and optionally tools, scripts_dir, node_selector, tolerations, env,
storage_class, tools_image, image_has_madengine, workdir, collect,
summarize_on_nodes (each pod summarizes its traces and copies its reports,
not its traces), gather_traces (with it, the traces too). Unknown keys are
an error.

tools are built in, and need no scripts: torch_profiler_dynolog (the command
runs under `madengine profile`), rocprofv3 and rocprofv3_perfetto (under
rocprofv3), summary (`madengine report summary` after it), tracelens
(`madengine report tracelens --no-fail` after it); each tool's output
directory is collected. A custom tool needs a scripts_dir whose tools.json
maps it to its pre_scripts and post_scripts (which may also override a
built-in one); a relative scripts_dir is relative to the job file.

Examples:
  madengine k8s render --config job.json -o manifests/
  madengine k8s render --config job.json | kubectl apply -f -";

#[derive(Debug, Args)]
pub(crate) struct K8sRenderArgs {
    /// The job file.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: std::path::PathBuf,
    /// Write one manifest per object into this directory instead of a List on stdout.
    #[arg(short, long, value_name = "DIR")]
    pub(crate) output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct KubectlArgs {
    /// The kubectl binary.
    #[arg(long, default_value = "kubectl", value_name = "PATH")]
    pub(crate) kubectl: std::path::PathBuf,
    /// The kubeconfig context.
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// Seconds each kubectl call may take.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub(crate) kubectl_timeout: f64,
}

/// The collector pod's image unless `--collector-image` says otherwise.
const COLLECTOR_IMAGE: &str = "busybox:1.36";

#[derive(Debug, Args)]
pub(crate) struct K8sApplyArgs {
    /// The job file.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: std::path::PathBuf,
    /// Follow the Job until it completes or fails, showing each change, and
    /// exit with its outcome (0 complete, 1 failed).
    #[arg(long)]
    pub(crate) wait: bool,
    /// With --wait: delete the Job (and its pods; the results volume stays)
    /// if it runs longer than this.
    #[arg(long, value_name = "SECS", requires = "wait")]
    pub(crate) timeout: Option<f64>,
    /// With --wait: then gather each pod's results here (<dir>/<pod>/), as
    /// `k8s gather` does, through a collector pod; --summary and --report
    /// then go on as there.
    #[arg(long, value_name = "DIR", requires = "wait")]
    pub(crate) results_dir: Option<std::path::PathBuf>,
    /// The image of the short-lived collector pod.
    #[arg(long, default_value = COLLECTOR_IMAGE, value_name = "IMAGE")]
    pub(crate) collector_image: String,
    #[command(flatten)]
    pub(crate) report: GatherReportArgs,
    /// Print the outcome as JSON.
    ///
    /// The Job, its namespace, the objects applied and, with --wait, its
    /// last status and whether --timeout deleted it; with --results-dir,
    /// `gathered`: what `k8s gather --json` prints.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) kubectl: KubectlArgs,
}

#[derive(Debug, Args)]
pub(crate) struct K8sGatherArgs {
    /// The Job's name.
    pub(crate) job: String,
    /// Where each pod's results go (<dir>/<pod>/).
    #[arg(long, value_name = "DIR")]
    pub(crate) results_dir: std::path::PathBuf,
    /// The namespace.
    #[arg(long, default_value = "default")]
    pub(crate) namespace: String,
    /// The image of the short-lived collector pod.
    #[arg(long, default_value = COLLECTOR_IMAGE, value_name = "IMAGE")]
    pub(crate) collector_image: String,
    /// Copy from the job's pods directly (still running or kept), from their workspace,
    /// instead of from the results volume.
    #[arg(long)]
    pub(crate) live: bool,
    /// With --live: the pods' workspace.
    #[arg(long, default_value = "/workspace", value_name = "DIR")]
    pub(crate) workdir: String,
    #[command(flatten)]
    pub(crate) kubectl: KubectlArgs,
    #[command(flatten)]
    pub(crate) report: GatherReportArgs,
    /// Print the summary as JSON: one object, with `summary` and `tracelens`
    /// holding what --summary and --report made.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SlurmCommand {
    /// Print (or write) the sbatch script of a profiled run.
    Script(SlurmScriptArgs),
    /// Submit a profiled run; with --wait, follow it and gather its results.
    #[command(after_help = brief(SLURM_SUBMIT_HELP), after_long_help = SLURM_SUBMIT_HELP)]
    Submit(SlurmSubmitArgs),
    /// Summarize what each node of a finished job left (results_summary.json).
    Gather(SlurmGatherArgs),
}

const SLURM_SUBMIT_HELP: &str = "\
Each node runs the workload once, in a node-local directory, then copies its
logs and (when it succeeded) its tool output directories into
<results-dir>/<job_id>/node_<SLURM_NODEID>/. The results directory must be on
a filesystem every node sees.

With --wait, --summary and --report go on as `slurm gather` does once the
job ends: the native tables (no Python) or TraceLens over what the nodes left.

Examples:
  madengine slurm submit --nodes 2 --gpus-per-node 8 --results-dir /shared/results \\
      --wait --summary -- madengine profile -- torchrun --nproc-per-node 8 /shared/train.py
  madengine slurm submit --nodes 2 --results-dir /shared/results -- ./train.sh
  madengine slurm gather /shared/results/12345 --report

Exit codes: 0 submitted (with --wait: the job completed), 1 the job failed,
was cancelled or timed out (or, with --summary/--report, a trace could not be
read or a TraceLens job failed), 2 usage error, 3 SLURM refused the job or a
command failed.";

/// The job, from flags and/or a JSON job file (flags win).
#[derive(Debug, Clone, Args)]
pub(crate) struct JobArgs {
    /// A JSON job file with any of: name, nodes, ntasks_per_node, gpus_per_node, partition, time,
    /// account, sbatch, env ([[K, V]...]), setup, command, collect, tools, summarize_on_nodes,
    /// gather_traces, results_dir.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Nodes to allocate.
    #[arg(long, value_name = "N")]
    pub(crate) nodes: Option<u32>,
    /// Tasks per node of the allocation (the workload step runs once per node).
    #[arg(long, value_name = "N")]
    pub(crate) ntasks_per_node: Option<u32>,
    /// GPUs per node.
    #[arg(long, value_name = "N")]
    pub(crate) gpus_per_node: Option<u32>,
    /// The partition to run in.
    #[arg(long, value_name = "NAME")]
    pub(crate) partition: Option<String>,
    /// Time limit (SLURM's format, e.g. 01:00:00).
    #[arg(long, value_name = "LIMIT")]
    pub(crate) time: Option<String>,
    /// The account to charge.
    #[arg(long, value_name = "NAME")]
    pub(crate) account: Option<String>,
    /// Job name.
    #[arg(long, value_name = "NAME")]
    pub(crate) job_name: Option<String>,
    /// Environment for the workload (repeatable).
    #[arg(long = "env", value_name = "K=V")]
    pub(crate) env: Vec<String>,
    /// A tool output directory to collect from each node (repeatable; replaces the default list).
    #[arg(long = "collect", value_name = "DIR")]
    pub(crate) collect: Vec<String>,
    /// An extra #SBATCH line, without the prefix (repeatable).
    #[arg(long = "sbatch", value_name = "LINE")]
    pub(crate) sbatch: Vec<String>,
    /// A shell command to run before the workload (repeatable).
    #[arg(long = "setup", value_name = "CMD")]
    pub(crate) setup: Vec<String>,
    /// A built-in tool to run on each node (repeatable): torch_profiler_dynolog
    /// (the workload under `madengine profile`), rocprofv3, rocprofv3_perfetto
    /// (under rocprofv3), summary (`report summary` after it), tracelens
    /// (`report tracelens --no-fail` after it). Each tool's output directory
    /// is collected.
    #[arg(long = "tool", value_name = "NAME")]
    pub(crate) tools: Vec<String>,
    /// Summarize each node's traces on the node (the summary tool) and
    /// gather its reports (KB per rank), not its traces: `gather --summary`
    /// builds the cross-rank tables from them.
    #[arg(long)]
    pub(crate) summarize_on_nodes: bool,
    /// With --summarize-on-nodes: gather the traces too.
    #[arg(long, requires = "summarize_on_nodes")]
    pub(crate) gather_traces: bool,
    /// The workload command (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct SlurmScriptArgs {
    #[command(flatten)]
    pub(crate) job: JobArgs,
    /// Where results go [default: slurm_results].
    #[arg(long, value_name = "DIR")]
    pub(crate) results_dir: Option<std::path::PathBuf>,
    /// Write the script here instead of printing it.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SlurmSubmitArgs {
    #[command(flatten)]
    pub(crate) job: JobArgs,
    /// Where results go (on a filesystem every node sees).
    #[arg(long, value_name = "DIR")]
    pub(crate) results_dir: Option<std::path::PathBuf>,
    /// Follow the job until it ends, gather its results and exit with its outcome.
    #[arg(long)]
    pub(crate) wait: bool,
    /// With --wait: cancel the job if it runs longer than this.
    #[arg(long, value_name = "SECS", requires = "wait")]
    pub(crate) timeout: Option<f64>,
    /// With --wait, what `slurm gather` makes of the results once the job ends.
    #[command(flatten)]
    pub(crate) report: GatherReportArgs,
    /// Print the outcome as JSON (id, state, exit code, results path; with
    /// --wait, `summary`: what `slurm gather --json` prints).
    #[arg(long)]
    pub(crate) json: bool,
}

/// `gather --report` / `--summary`: TraceLens, or the native summary, over
/// what was gathered.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("analysis").multiple(true)))]
pub(crate) struct GatherReportArgs {
    /// Then run `report tracelens` over the gathered results (reports in
    /// <results>/tracelens_report).
    #[arg(long, group = "analysis")]
    pub(crate) report: bool,
    /// Then run `report summary` over the gathered results (no Python
    /// needed).
    ///
    /// TraceLens' core tables natively: CSVs in <results>/summary_output,
    /// the page in <results>/summary.html.
    #[arg(long, group = "analysis")]
    pub(crate) summary: bool,
    /// With --report: the interpreter that has TraceLens.
    #[arg(long, value_name = "PATH", requires = "report")]
    pub(crate) python: Option<std::path::PathBuf>,
    /// With --report or --summary: read traces cut short up to the cut.
    ///
    /// A trace cut short (its job killed at its time limit while writing
    /// it) is read as `report tracelens --salvage` and `report summary
    /// --salvage` do.
    #[arg(long, requires = "analysis")]
    pub(crate) salvage: bool,
    /// With --report or --summary: of torch.profiler's profiling cycles,
    /// only cycle N (1: the first) or the last, as `report tracelens --cycle`.
    #[arg(long, value_name = "N|last", value_parser = cycle_pick, requires = "analysis")]
    pub(crate) cycle: Option<CyclePick>,
    /// With --summary: read the traces the nodes left even where the nodes
    /// summarized them (--summarize-on-nodes); by default their reports
    /// are read, and no trace is read again.
    #[arg(long, requires = "summary")]
    pub(crate) from_traces: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SlurmGatherArgs {
    /// The job's results directory: <results-dir>/<job_id>.
    pub(crate) dir: std::path::PathBuf,
    #[command(flatten)]
    pub(crate) report: GatherReportArgs,
    /// Print the summary as JSON: one object, with `summary` and `tracelens`
    /// holding what --summary and --report made.
    #[arg(long)]
    pub(crate) json: bool,
}

const PROFILE_HELP: &str = "\
Starts a dynolog daemon of its own (free port, private IPC sockets), installs
the Kineto hook into the workload interpreter's site-packages, runs the
command with KINETO_USE_DAEMON=1, asks for a trace in the background once the
workload's processes have registered and settled, then stops everything,
removes the hook and copies the traces into the output directory.

The capture settings default to the original madengine's environment
variables (shown in [env: ...]).

Examples:
  madengine profile -- python train.py --epochs 1
  madengine profile --iterations 10 --warmup-s 30 -- torchrun --nproc-per-node 8 train.py
  madengine report tracelens --root torch_profiler_output

Exit code: the workload's own (madengine's errors: 3 and above when it could
not run the workload at all).";

#[derive(Debug, Subcommand)]
pub(crate) enum DynologCommand {
    /// Ask the daemon for its status (getStatus).
    Status(DaemonArgs),
    /// Ask the daemon for its version (getVersion).
    Version(DaemonArgs),
    /// Ask the daemon to trace matching PyTorch processes now (like `dyno gputrace`).
    Gputrace(GputraceArgs),
    /// Pre-step: start a daemon, install the Kineto hook, arm a background trigger.
    Start(StartArgs),
    /// Ask for a trace once the workload has registered (what `start` runs in the background).
    Trigger(TriggerArgs),
    /// Post-step: stop the trigger and the daemon, remove the hook, collect the traces.
    Stop(StopArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DaemonArgs {
    /// The daemon's host.
    #[arg(long, default_value = "localhost")]
    pub(crate) host: String,
    /// The daemon's RPC port.
    #[arg(long, env = "DYNOLOG_PORT", default_value_t = 1778)]
    pub(crate) port: u16,
    /// How long to wait for the daemon's reply. It answers at once unless
    /// another client holds it (it serves one connection at a time); a reply
    /// still due then is left to a background reader, as dynolog dies of
    /// SIGPIPE when a client leaves before its reply.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub(crate) timeout: f64,
    /// Print the reply as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What to capture: `dyno gputrace`'s options.
#[derive(Debug, Clone, Args)]
pub(crate) struct CaptureArgs {
    /// Trace this many optimizer steps (iteration mode; wins over --duration-ms). 0: a time window.
    #[arg(long, value_name = "STEPS", env = "TORCH_PROFILE_ITERATIONS", default_value_t = 5)]
    pub(crate) iterations: u32,
    /// The time window in milliseconds (when --iterations is 0).
    #[arg(long, value_name = "MS", env = "TORCH_PROFILE_DURATION_MS", default_value_t = 500)]
    pub(crate) duration_ms: u64,
    /// Start a time window at this Unix time in ms (0: as soon as possible).
    #[arg(long, value_name = "UNIX_MS", default_value_t = 0)]
    pub(crate) profile_start_time: u64,
    /// Start an iteration window at the next multiple of this step.
    #[arg(long, value_name = "STEP", default_value_t = 1)]
    pub(crate) profile_start_iteration_roundup: u32,
    /// At most this many processes are traced (dyno's default 3 drops ranks).
    #[arg(long, value_name = "N", env = "TORCH_PROFILE_PROCESS_LIMIT", default_value_t = 64)]
    pub(crate) process_limit: u32,
    /// The job id processes registered with [default: $SLURM_JOB_ID, else 0].
    #[arg(long, value_name = "ID", env = "TORCH_PROFILE_JOB_ID")]
    pub(crate) job_id: Option<u64>,
    /// Record input shapes.
    #[arg(long, value_name = "0|1", env = "TORCH_PROFILE_RECORD_SHAPES", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set)]
    pub(crate) record_shapes: bool,
    /// Record Python stacks.
    #[arg(long, value_name = "0|1", env = "TORCH_PROFILE_WITH_STACKS", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set)]
    pub(crate) with_stacks: bool,
    /// Record module hierarchy.
    #[arg(long, value_name = "0|1", env = "TORCH_PROFILE_WITH_MODULES", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set)]
    pub(crate) with_modules: bool,
    /// Estimate FLOPs.
    #[arg(long, value_name = "0|1", env = "TORCH_PROFILE_WITH_FLOPS", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set)]
    pub(crate) with_flops: bool,
    /// Profile memory (time windows only).
    #[arg(long, value_name = "0|1", env = "TORCH_PROFILE_PROFILE_MEMORY", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set)]
    pub(crate) profile_memory: bool,
    /// File name kineto writes (it inserts _<pid>).
    #[arg(
        long,
        value_name = "NAME",
        env = "TORCH_PROFILE_LOG_FILE",
        default_value = "libkineto_trace.json"
    )]
    pub(crate) log_name: String,
}

fn flag01(value: &str) -> Result<bool, String> {
    match value.trim() {
        "1" | "true" => Ok(true),
        "0" | "false" | "" => Ok(false),
        other => Err(format!("expected 1 or 0, not `{other}`")),
    }
}

/// When to ask: the trigger's patience.
#[derive(Debug, Clone, Args)]
pub(crate) struct PolicyArgs {
    /// Wait this long for steady state before the first request.
    #[arg(long, env = "TORCH_PROFILE_WARMUP_S", default_value_t = 60.0, value_name = "SECS")]
    pub(crate) warmup_s: f64,
    /// Between attempts.
    #[arg(
        long,
        env = "TORCH_PROFILE_RETRY_INTERVAL_S",
        default_value_t = 15.0,
        value_name = "SECS"
    )]
    pub(crate) retry_interval_s: f64,
    /// Give up after this many requests.
    #[arg(long, value_name = "N", env = "TORCH_PROFILE_MAX_ATTEMPTS", default_value_t = 40)]
    pub(crate) max_attempts: u32,
    /// The workload's processes must stay unchanged this long before a request.
    #[arg(long, env = "TORCH_PROFILE_STABLE_S", default_value_t = 5.0, value_name = "SECS")]
    pub(crate) stable_s: f64,
    /// With --iterations, wait up to this long for each workload process's first optimizer step
    /// (Kineto counts iterations only from then on; asked earlier, it traces 500 ms instead).
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub(crate) first_step_s: f64,
}

#[derive(Debug, Args)]
pub(crate) struct GputraceArgs {
    #[command(flatten)]
    pub(crate) daemon: DaemonArgs,
    /// Where kineto writes (under /tmp/, or $KINETO_ONDEMAND_TRACE_DIR of the workload).
    #[arg(long, value_name = "PATH", required = true)]
    pub(crate) log_file: String,
    /// Comma-separated pids (a process matches when any of its ancestors is listed) [default: all].
    #[arg(long, value_name = "PID,...", value_delimiter = ',')]
    pub(crate) pids: Vec<u32>,
    /// The job id [default: $SLURM_JOB_ID, else 0].
    #[arg(long, value_name = "ID")]
    pub(crate) job_id: Option<u64>,
    /// Time window in ms.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    pub(crate) duration_ms: u64,
    /// Trace this many steps instead of a time window.
    #[arg(long, value_name = "STEPS")]
    pub(crate) iterations: Option<u32>,
    /// Unix time in ms to start a time window at.
    #[arg(long, value_name = "UNIX_MS", default_value_t = 0)]
    pub(crate) profile_start_time: u64,
    /// Round an iteration window's start up to a multiple of this.
    #[arg(long, value_name = "STEP", default_value_t = 1)]
    pub(crate) profile_start_iteration_roundup: u32,
    /// At most this many processes.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) process_limit: u32,
    /// Record input shapes.
    #[arg(long)]
    pub(crate) record_shapes: bool,
    /// Profile memory.
    #[arg(long)]
    pub(crate) profile_memory: bool,
    /// Record Python stacks.
    #[arg(long)]
    pub(crate) with_stacks: bool,
    /// Estimate FLOPs.
    #[arg(long)]
    pub(crate) with_flops: bool,
    /// Record module hierarchy.
    #[arg(long)]
    pub(crate) with_modules: bool,
    /// The workload's KINETO_ONDEMAND_TRACE_DIR, if it sets one.
    #[arg(long, env = "KINETO_ONDEMAND_TRACE_DIR", value_name = "DIR")]
    pub(crate) ondemand_trace_dir: Option<String>,
    /// Wait until the trace files appear.
    #[arg(long)]
    pub(crate) wait: bool,
    /// How long --wait waits.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub(crate) wait_timeout: f64,
}

#[derive(Debug, Args)]
pub(crate) struct StateArgs {
    /// The session's state directory (pid files, logs, result, traces)
    /// [default: /tmp/madengine-dynolog-<port>].
    #[arg(long, env = "MADENGINE_DYNOLOG_STATE", value_name = "DIR")]
    pub(crate) state: Option<std::path::PathBuf>,
    /// The daemon's RPC port.
    #[arg(long, env = "DYNOLOG_PORT", default_value_t = 1778)]
    pub(crate) port: u16,
}

/// How the daemon and the Kineto hook are set up (`dynolog start`, `profile`).
#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// The dynolog daemon binary.
    #[arg(long, env = "DYNOLOG_BIN", default_value = "dynolog", value_name = "PATH")]
    pub(crate) dynolog_bin: std::path::PathBuf,
    /// The workload's interpreter (the Kineto hook goes into its site-packages).
    #[arg(long, default_value = "python3", value_name = "PATH")]
    pub(crate) python: std::path::PathBuf,
    /// Do not install the Kineto hook (the workload imports torch.profiler itself).
    #[arg(long)]
    pub(crate) no_hook: bool,
}

/// Where collected traces go (`dynolog stop`, `profile`).
#[derive(Debug, Args)]
pub(crate) struct TraceOutputArgs {
    /// Where the traces are copied.
    #[arg(
        long,
        env = "TORCH_PROFILE_OUTPUT_DIR",
        default_value = "torch_profiler_output",
        value_name = "DIR"
    )]
    pub(crate) output_dir: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    #[command(flatten)]
    pub(crate) state: StateArgs,
    #[command(flatten)]
    pub(crate) launch: LaunchArgs,
    /// Do not arm the background trigger.
    #[arg(long)]
    pub(crate) no_trigger: bool,
    #[command(flatten)]
    pub(crate) capture: CaptureArgs,
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// Print the session as JSON: its state directory, port, the daemon's
    /// and the trigger's pids, the trigger's log and where the hook went.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TriggerArgs {
    #[command(flatten)]
    pub(crate) state: StateArgs,
    #[command(flatten)]
    pub(crate) capture: CaptureArgs,
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// The workload's KINETO_ONDEMAND_TRACE_DIR, if it sets one.
    #[arg(long, env = "KINETO_ONDEMAND_TRACE_DIR", value_name = "DIR")]
    pub(crate) ondemand_trace_dir: Option<String>,
    /// Print the outcome as JSON (as `stop --json` gives it).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StopArgs {
    #[command(flatten)]
    pub(crate) state: StateArgs,
    #[command(flatten)]
    pub(crate) output: TraceOutputArgs,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ProfileArgs {
    #[command(flatten)]
    pub(crate) output: TraceOutputArgs,
    #[command(flatten)]
    pub(crate) launch: LaunchArgs,
    #[command(flatten)]
    pub(crate) capture: CaptureArgs,
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// The workload command.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(crate) command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ReportCommand {
    /// Run TraceLens over every trace under a run directory.
    #[command(after_help = brief(TRACELENS_HELP), after_long_help = TRACELENS_HELP)]
    Tracelens(TracelensArgs),
    /// Compare two or more TraceLens PyTorch reports.
    #[command(name = "tracelens-compare", after_help = brief(COMPARE_HELP), after_long_help = COMPARE_HELP)]
    TracelensCompare(CompareArgs),
    /// TraceLens' core tables computed natively, in seconds, without Python.
    #[command(after_help = brief(SUMMARY_HELP), after_long_help = SUMMARY_HELP)]
    Summary(SummaryArgs),
    /// Where GPU time moved between two traces (a baseline and a new run), natively.
    #[command(after_help = brief(DIFF_HELP), after_long_help = DIFF_HELP)]
    Diff(DiffArgs),
}

const DIFF_HELP: &str = "\
Reads both traces as `report summary` does (TraceLens' gpu_timeline,
kernel_summary and ops_summary, in seconds, through the sanitizer) and
matches their rows by name: the timeline by row, kernels by kernel name (all
launches added up, whatever op or stream launched them), ops by name (GPU
time of the kernels they launched directly). Shown: the timeline side by
side, then the kernels, ops and op categories (GEMM, SDPA_fwd, elementwise,
...: what traces of different GPUs share; rocprofv3: kernel categories)
whose time changed most, either way, and the collective calls (NCCL/RCCL
kernels with PyTorch's collective args, by collective, dtype, sizes and
group); a name in one trace only counts as 0 in the other. Ratios are new
over baseline.

Two run directories are compared rank by rank (ranks from file names or
distributedInfo, as `trace discover` shows them): each rank's GPU time side
by side, the slowest rank of each run, then the kernels and ops added up
over the ranks both runs have. Two rocprofv3 runs, which write no rank,
are compared GPU by GPU: by the GPU each process ran its kernels on (with a
directory per node, within each node, the nodes paired by directory name,
node_N as gathered, or else in order). rocprofv3 kernel time holds the
collective kernels' (TraceLens' COMM category): their change is shown
beside it, per GPU and in all (`collective_kernels` in --json). A
directory holding one trace stands for it. A directory of torch.profiler's
profiling cycles (tensorboard_trace_handler's traces, a trace per rank each
cycle) is compared one cycle at a time: --cycle N or --cycle last, or a
cycle of each side (--cycle 1,last: a run given twice, its first cycle
against its last).

Either side can also be a report already written: a directory of
gpu_timeline.csv, kernel_summary.csv and ops_summary.csv, as `report summary`
writes them (<output-dir>/<trace stem>/) and TraceLens' perf and rocprof
reports do (`report tracelens`' <stem>_csv/). Keep the baseline's small CSVs
and compare each new trace with them, without the baseline trace. A
directory of several reports is a run's: compared rank by rank, by the ranks
`report summary` recorded in each one's summary.json, else by the ranks in
their names (TraceLens' rank3_trace_csv/), else by the rank of the trace
`report tracelens`' summary names, where it still is. Of a `report
tracelens` output directory, the reports its tracelens_summary.csv names as
SUCCESS are read.

Compare traces of one kind (PyTorch with PyTorch, rocprofv3 with rocprofv3:
JSON, rocpd database or pftrace) that cover the same work: totals add up
every step a trace holds, so a trace of twice the steps shows twice the
time. Each trace's steps are counted from its ProfilerStep# annotations
(torch.profiler's schedule), else its Optimizer.step# ones (a trace captured
on demand by iteration, as `madengine profile` does): a note says when the
two sides hold different numbers (else when their kernel launches differ by
more than 10%), and --per-step divides each side by its steps. Traces of
different GPUs compare by timeline, ops and op categories; their kernels
have other names.

Examples:
  madengine report diff base/rank0.json.gz new/rank0.json.gz
  madengine report diff runs/base runs/new --top 5     # rank by rank
  madengine report diff base.json new.json -o diff/    # every row as CSVs
  madengine report diff summary_output/base_rank0 new/rank0.json.gz
  madengine report diff runs/base runs/new --html diff.html
  madengine report diff base_results.json new_results.json --json
  madengine report diff kept/ nightly/ --max-regression 5   # exit 1: 5% slower
  madengine report diff kept/ nightly/ --max-gemm-regression 10  # a GEMM shape 10% slower
  madengine report diff kept/ nightly/ --max-shape-regression 10 # or attention, convolution
  madengine report diff base/ new/ --cycle last   # torch.profiler's cycles
  madengine report diff run/ run/ --cycle 1,last  # warm-up against steady state

Exit codes: 0 compared; 1 GPU time grew more than --max-regression allows, or a GEMM
shape (any op shape) lost more TFLOPS/s than --max-gemm-regression (--max-shape-regression)
allows;
2 usage error (traces of different kinds, traces that cannot be paired);
3 a trace cannot be read or has no GPU activity.";

/// `--cycle N|last`.
fn cycle_pick(text: &str) -> Result<CyclePick, String> {
    match text.trim() {
        "last" => Ok(CyclePick::Last),
        n => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(CyclePick::Number(n)),
            _ => Err(format!("`{text}` is not a cycle: 1 for the first, 2, ..., or last")),
        },
    }
}

/// `report diff --cycle`: the cycle of each side, the same or one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SideCycles(pub(crate) [CyclePick; 2]);

/// `--cycle N|last`, or `BASE,NEW` (`1,last`).
fn side_cycles(text: &str) -> Result<SideCycles, String> {
    let Some((base, new)) = text.split_once(',') else {
        return cycle_pick(text).map(|pick| SideCycles([pick; 2]));
    };
    let pick = |side: &str| {
        cycle_pick(side).map_err(|_| {
            format!(
                "`{text}` is not a cycle of each side: N or last, or the baseline's and the \
                 new one's as BASE,NEW (1,last)"
            )
        })
    };
    Ok(SideCycles([pick(base)?, pick(new)?]))
}

/// A percentage: `5`, `2.5`, `5%` or `-5`.
fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%');
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() => Ok(p),
        _ => Err(format!("`{text}` is not a percentage such as 5, 2.5% or -5")),
    }
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The baseline trace, the run directory of the baseline, or its report
    /// (a directory of CSVs).
    #[arg(value_name = "BASELINE")]
    pub(crate) baseline: PathBuf,
    /// The trace, run directory or report to compare with it.
    #[arg(value_name = "NEW")]
    pub(crate) new: PathBuf,
    /// Also write every row as CSVs to DIR.
    ///
    /// gpu_timeline_diff.csv, kernel_diff.csv, ops_diff.csv,
    /// op_category_diff.csv, collective_diff.csv; for rocprofv3:
    /// kernel_category_diff.csv, collective_kernels_diff.csv.
    #[arg(short, long, value_name = "DIR")]
    pub(crate) output_dir: Option<PathBuf>,
    /// How many kernels, ops, categories and collective calls to show,
    /// largest change first (0: the timeline only).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub(crate) top: usize,
    /// Compare profiling cycle N of each side (1: the first), or the last;
    /// BASE,NEW picks one for each side.
    ///
    /// torch.profiler's schedule repeats unless repeat=1, and its
    /// tensorboard_trace_handler writes a trace per rank each cycle into one
    /// directory, each named by the time it was written: those times tell the
    /// cycles apart. A side with a trace per rank is one cycle; later cycles
    /// run warm (caches, allocator, autotuning): `run/ run/ --cycle 1,last`
    /// compares a run's first cycle with its last.
    #[arg(long, value_name = "N|last|BASE,NEW", value_parser = side_cycles)]
    pub(crate) cycle: Option<SideCycles>,
    /// Compare per step, for traces of different step counts.
    ///
    /// Each trace's times and counts are divided by its steps (ProfilerStep#,
    /// else Optimizer.step# annotations).
    #[arg(long)]
    pub(crate) per_step: bool,
    /// Also write one self-contained HTML page.
    ///
    /// Inline SVG, no scripts, no network: the timelines as bars on one
    /// scale, rank by rank for runs, and the --top kernels, ops and op
    /// categories that moved most.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Exit 1 when the new GPU time is more than PCT percent above the
    /// baseline's: a gate for nightly runs.
    ///
    /// The GPU time compared: the slowest rank's, for two runs; GPU busy time
    /// for rocprofv3, the busiest GPU's for two rocprofv3 runs; per step with
    /// --per-step. The comparison is printed and written all the same. A
    /// negative PCT asks for a gain: `--max-regression -5` exits 1 unless
    /// the new run is at least 5% faster (a change that must keep its win).
    #[arg(long, value_name = "PCT", value_parser = percent, allow_negative_numbers = true)]
    pub(crate) max_regression: Option<f64>,
    /// Exit 1 when a GEMM shape in both sides lost more than PCT percent of
    /// its TFLOPS/s: a gate on the shapes, not on the total.
    ///
    /// The shapes are GEMM.csv's (PyTorch traces recorded with
    /// record_shapes), all ranks added up; each offending shape is named.
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub(crate) max_gemm_regression: Option<f64>,
    /// Exit 1 when an op shape in both sides, a GEMM's, an attention's or a
    /// convolution's, lost more than PCT percent of its TFLOPS/s.
    ///
    /// As --max-gemm-regression, over GEMM.csv, SDPA_fwd/SDPA_bwd.csv and
    /// CONV_fwd/CONV_bwd.csv alike; each offending shape is named.
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub(crate) max_shape_regression: Option<f64>,
    /// Traces read at the same time [default: as `report summary`].
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs: Option<u32>,
    /// Print the comparison as JSON (every row).
    #[arg(long)]
    pub(crate) json: bool,
    /// Read a truncated trace from the records complete before the cut (as
    /// `report summary --salvage`), instead of refusing it.
    #[arg(long)]
    pub(crate) salvage: bool,
}

const SUMMARY_HELP: &str = "\
For every PyTorch (Kineto) trace: gpu_timeline, kernel_summary and
ops_summary with TraceLens' exact definitions, written as CSVs to
<output-dir>/<trace stem>/, and a compact view here: where GPU time went,
the top kernels, ops and op categories (GEMM, SDPA_fwd, elementwise, ...,
as TraceLens assigns them), and a cross-rank table per run when the traces
carry ranks (runs are told apart by directory wherever a rank appears twice,
and torch.profiler's profiling cycles by the time tensorboard_trace_handler
puts in their names), with the run's spread under it: its slowest rank
against its fastest, the median, and the rank with the least exposed comm
(in a job that synchronizes, the one the others waited for). A run of
several profiling cycles also gets them side by side: the GPU time of each
cycle's slowest trace, against the first cycle's (warm-up against steady
state). Traces whose
NCCL/RCCL kernels carry PyTorch's collective args also get
collective_summary.csv (madengine's own: calls by collective and message
size, with nccl-tests' algbw and busbw).

rocprofv3 traces get TraceLens' rocprof tables instead (gpu_timeline as
total/kernel/memory/busy/idle, and kernel_summary), and their kernels by
category (GEMM, Elementwise, COMM, ...), from any of its outputs:
  - JSON (--output-format json);
  - SQLite databases (rocpd, <pid>_results.db, its default output since
    ROCm 7, which TraceLens cannot read), opened read-only;
  - Perfetto traces (--output-format pftrace), read packet by packet without
    traceconv: their kernel_dispatch and memory_copy slices, the profiled
    time the span of all their slices (a Perfetto trace holds no process
    start and end, nor the GPU's name; the GPU index only with rocprofv3
    --agent-index type-relative).
rocprofv3 writes no rank but a file per process, and a multi-GPU job runs a
process per GPU: each trace says the GPU its kernels ran on (`on GPU 3`),
and a directory's processes get a cross-GPU table (the GPU with the least
time in collective kernels flagged: the one the others waited for).

A directory is searched for PyTorch and rocprofv3 JSON traces, rocpd
databases and Perfetto traces (the output directory excepted; of one
rocprofv3 process's outputs side by side, <pid>_results.json, else .db, else
.pftrace, is read); a file is read whatever its name. Traces are read in
parallel (--jobs). A run's reports written before and no longer made (their
trace gone, or read under another name) are removed, each with a line why.

Broken traces are read through the sanitizer. Traces TraceLens rejects still
get an answer, and each trace says which rule applied (`outcome` in --json).
A trace that cannot be read (truncated, not JSON) is reported with its error
and does not stop the others; the exit code is then 3. With --salvage a
truncated trace (its writer killed part way, a .json.gz cut short) is
summarized from the records complete before the cut and marked `truncated`
(profilers write GPU activity last: the end of the timeline is lost); one
with data after the end of its JSON document is summarized without it, and
one whose last string never ends from the records before that string.

Examples:
  madengine report summary runs/llama
  madengine report summary rank0.json.gz rank1.json.gz --top 5 --json
  madengine report summary run/ --html run/summary.html
  madengine report summary run/ --top 0     # many ranks: the cross-rank table";

#[derive(Debug, Args)]
pub(crate) struct SummaryArgs {
    /// Trace files, or run directories to search [default: .].
    #[arg(value_name = "PATH")]
    pub(crate) paths: Vec<PathBuf>,
    /// A run directory to search (the same as giving it as a PATH).
    #[arg(short, long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// Where the CSVs go, one directory per trace with its summary.json
    /// (never searched for traces).
    #[arg(short, long, default_value = "summary_output", value_name = "DIR")]
    pub(crate) output_dir: PathBuf,
    /// How many kernels, ops, categories and collective calls to show per
    /// trace.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub(crate) top: usize,
    /// Of torch.profiler's profiling cycles, summarize only cycle N (1: the
    /// first) or the last, in each run searched that holds several.
    ///
    /// Its schedule repeats unless repeat=1, and tensorboard_trace_handler
    /// writes a trace per rank each cycle into one directory, named by the
    /// time it was written. The other cycles' traces are not read (a note
    /// says how many). Trace files named as PATHs count as their directory's
    /// (a shell's `run/*.json` is `run/`).
    #[arg(long, value_name = "N|last", value_parser = cycle_pick)]
    pub(crate) cycle: Option<CyclePick>,
    /// Traces read at the same time [default: number of CPUs, at most 8].
    ///
    /// Fewer by default when the largest would not fit in half the available
    /// memory: each takes about 0.75 times its uncompressed size while read,
    /// a rocprofv3 trace about a sixth.
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs: Option<u32>,
    /// Print the results as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write one self-contained HTML page.
    ///
    /// Inline SVG, no scripts, no network: GPU time per trace, top kernels,
    /// ops and collective calls, the cross-rank and cross-GPU views.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Summarize a trace cut short from its complete records, instead of
    /// reporting it unreadable.
    ///
    /// A truncated trace (its writer killed part way, a .json.gz cut short)
    /// is summarized from the records complete before the cut, marked as
    /// truncated; one with data after its JSON document without that; one
    /// whose last string never ends (a stray quote or backslash) from the
    /// records before that string.
    #[arg(long)]
    pub(crate) salvage: bool,
    /// Compare each GEMM shape with this GPU's roofline: a bundled spec
    /// (MI300X, MI325X) or TraceLens' arch JSON file; `none` for no roofline
    /// [default: the trace's own GPU, where a bundled spec matches it].
    ///
    /// GEMM.csv then gains TraceLens' roofline columns (the time the op
    /// would take at the roofline, the roof that bounds it, the share of it
    /// reached), and the view says how close each shape came.
    #[arg(long, value_name = "NAME|FILE.json|none")]
    pub(crate) gpu_arch: Option<String>,
    /// Also write each trace's TraceLens tables as one Excel workbook.
    ///
    /// A sheet per table, named and ordered as TraceLens' perf report names
    /// and orders them (gpu_timeline first), numbers as numbers: the file
    /// TraceLens' users open. With several traces, one workbook each, the
    /// trace's report name put before the extension (`perf.xlsx` becomes
    /// `perf_rank0_trace.xlsx`).
    #[arg(long, value_name = "FILE")]
    pub(crate) xlsx: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SetupCommand {
    /// Create an isolated virtual environment with TraceLens in it.
    #[command(after_help = brief(SETUP_HELP), after_long_help = SETUP_HELP)]
    Tracelens(SetupTracelensArgs),
    /// Install the pinned dynolog release package (dpkg) when dynolog is missing.
    Dynolog(SetupDynologArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SetupDynologArgs {
    /// The .deb to install (may carry a token; never printed unredacted).
    #[arg(
        long,
        env = "DYNOLOG_DEB_URL",
        value_name = "URL",
        default_value = "https://github.com/facebookincubator/dynolog/releases/download/v0.5.0/dynolog_0.5.0-0-amd64.deb",
        hide_env_values = true
    )]
    pub(crate) deb_url: String,
    /// Print the outcome as JSON: `outcome` (already_there or installed),
    /// where `dynolog` and `dyno` are, and the URL (redacted).
    #[arg(long)]
    pub(crate) json: bool,
}

const TRACELENS_HELP: &str = "\
Each trace gets its TraceLens report: PyTorch traces the perf report (with
--enable_kernel_summary), rocprofv3 JSON the rocprof report, Perfetto traces
the hip_activity, hip_api and memory_copy reports; the PyTorch traces of each
complete multi-rank run (ranks from file names or distributedInfo) get one
collective report. Runs under one root are told apart by directory, and
torch.profiler's profiling cycles in one directory by the time
tensorboard_trace_handler puts in their names (multi_rank_collective_cycle1,
...). Traces strict JSON parsers reject are analyzed through a sanitized copy;
the originals are never modified.

TraceLens runs with --python, else $TRACELENS_VENV/bin/python3, else python3;
its console scripts are taken beside that interpreter (never from PATH).

Extra TraceLens options go after `--`. Each goes, with its values, to the
report tools that document it (exact name or argparse abbreviation), so a
PyTorch-only option does not break the collective or rocprof reports; one no
tool documents goes to every command, with a note. Options madengine sets
itself (inputs, outputs, --world_size, --gpu_arch_platform) are refused.

Writes <output-dir>/<report>..., <output-dir>/logs/<report>.<tool>.log and
<output-dir>/tracelens_summary.csv / .json (earlier summaries are removed
first; the new ones are written when the run ends).

Examples:
  madengine report tracelens runs/llama --gpu-arch MI300X
  madengine report tracelens --mode collective --world-size 8
  madengine report tracelens --discover-only --json
  madengine report tracelens -- --topk_ops 20 --topk_kernels 20  # PyTorch / rocprof reports
  # in a container, as the post-run step:
  TRACELENS_VENV=/opt/madengine-tracelens-venv madengine report tracelens --no-fail

Exit codes: 0 no job failed (SKIPPED is not a failure), 1 a job failed,
2 usage error, 3 input or I/O error, 4 TraceLens missing.";

const COMPARE_HELP: &str = "\
Reports are what `report tracelens` wrote for PyTorch traces: <stem>.xlsx
files or <stem>_csv directories. The first one must hold a kernel_summary
sheet (TraceLens' comparison requires it).

Example:
  madengine report tracelens-compare base/tracelens_output/x_csv \\
      new/tracelens_output/x_csv --names base new

Exit codes: 0 success, 1 TraceLens failed, 2 usage error, 3 a report is
missing or unusable, 4 TraceLens missing.";

const SETUP_HELP: &str = "\
Creates the venv (without system site-packages) unless it exists, pip-installs
the spec into it and checks `import TraceLens`. Does nothing when TraceLens is
already importable there. A failed install removes the venv only if this run
created it. The spec is never printed with its credentials.

Examples:
  madengine setup tracelens
  madengine setup tracelens --venv ~/.venvs/tracelens --spec ./TraceLens-0.1.0-py3-none-any.whl
  export TRACELENS_VENV=/opt/madengine-tracelens-venv

Exit codes: 0 ready, 2 usage error, 3 the install failed.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    Auto,
    Pytorch,
    Rocprof,
    Pftrace,
    Collective,
}

#[derive(Debug, Args)]
pub(crate) struct TracelensArgs {
    /// The run directory to search for traces [default: .].
    #[arg(value_name = "DIR", conflicts_with = "root")]
    pub(crate) dir: Option<PathBuf>,
    /// The run directory to search for traces (the same as giving it as DIR).
    #[arg(short, long, default_value = ".", value_name = "DIR")]
    pub(crate) root: PathBuf,
    /// Where reports, logs and summaries go (never searched for traces).
    #[arg(
        short,
        long,
        env = "TRACELENS_OUTPUT_DIR",
        default_value = "tracelens_output",
        value_name = "DIR"
    )]
    pub(crate) output_dir: PathBuf,
    /// Which traces to analyze.
    #[arg(long, env = "TRACELENS_MODE", value_enum, default_value_t = ModeArg::Auto)]
    pub(crate) mode: ModeArg,
    /// The interpreter that has TraceLens [default: $TRACELENS_VENV/bin/python3, else python3].
    #[arg(long, value_name = "PATH")]
    pub(crate) python: Option<PathBuf>,
    /// GPU platform for roofline columns (checked against what TraceLens knows, e.g. MI300X).
    #[arg(long, env = "TRACELENS_GPU_ARCH", value_name = "NAME")]
    pub(crate) gpu_arch: Option<String>,
    /// World size of the collective report [default: the number of ranked traces].
    #[arg(
        long,
        env = "TRACELENS_WORLD_SIZE",
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub(crate) world_size: u32,
    /// With --world-size, run the collective report on the ranks present when
    /// some are missing (with a warning), as the original madengine did,
    /// rather than skip it.
    #[arg(long)]
    pub(crate) partial: bool,
    /// Analyze at most N traces of each kind [default: all].
    #[arg(
        long,
        env = "TRACELENS_MAX_TRACES",
        value_name = "N",
        default_value_t = 0,
        hide_default_value = true
    )]
    pub(crate) max_traces: usize,
    /// Of torch.profiler's profiling cycles, analyze only cycle N (1: the
    /// first) or the last, in each run that holds several.
    ///
    /// Its schedule repeats unless repeat=1, and tensorboard_trace_handler
    /// writes a trace per rank each cycle into one directory, named by the
    /// time it was written: a long run leaves dozens. The other cycles'
    /// traces are left out (a note says how many); a directory of one cycle
    /// is its first and its last.
    #[arg(long, value_name = "N|last", value_parser = cycle_pick)]
    pub(crate) cycle: Option<CyclePick>,
    /// TraceLens jobs at a time [default: number of CPUs, at most 4].
    ///
    /// Fewer by default when the largest jobs would not fit in half the
    /// available memory together: TraceLens takes about 17 times a trace's
    /// JSON size.
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs: Option<u32>,
    /// Kill a job running longer than this (with the processes it started, such as traceconv) and
    /// report it as failed.
    #[arg(long, value_name = "SECS")]
    pub(crate) timeout: Option<f64>,
    /// Only list the traces and the planned jobs; TraceLens is not needed.
    #[arg(long)]
    pub(crate) discover_only: bool,
    /// Print the summary JSON on stdout instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Exit 0 even when jobs fail (for post-run steps that must not fail a passing run).
    #[arg(long)]
    pub(crate) no_fail: bool,
    /// Run TraceLens on every trace, even one madengine's own pass rules out.
    ///
    /// Without it, a trace found cut short or (PyTorch) without GPU activity
    /// TraceLens can use is FAILURE or SKIPPED up front, saving a TraceLens
    /// run each.
    #[arg(long)]
    pub(crate) no_precheck: bool,
    /// Analyze a trace cut short through a copy of its complete events; its
    /// rows say `salvaged`.
    ///
    /// A trace cut short (a job killed while writing it, a .json.gz cut off)
    /// goes through a closed copy holding its complete events, one with data
    /// after its JSON document through a copy without that, and one whose
    /// last string never ends through a copy of the events before it. Costs
    /// one more pass over each trace (a copy in the scratch directory, kept
    /// only for traces that need it).
    #[arg(long)]
    pub(crate) salvage: bool,
    /// Extra TraceLens options (after `--`), each to the report tools that take it.
    #[arg(last = true, value_name = "EXTRA")]
    pub(crate) extra: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// Two or more reports (.xlsx files or _csv directories); the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "REPORT")]
    pub(crate) reports: Vec<PathBuf>,
    /// The comparison workbook to write.
    #[arg(short, long, default_value = "tracelens_comparison.xlsx", value_name = "PATH")]
    pub(crate) output: PathBuf,
    /// One name per report, used in column names.
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub(crate) names: Vec<String>,
    /// The interpreter that has TraceLens [default: $TRACELENS_VENV/bin/python3, else python3].
    #[arg(long, value_name = "PATH")]
    pub(crate) python: Option<PathBuf>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SetupTracelensArgs {
    /// The virtual environment [default: $TRACELENS_VENV, else /opt/madengine-tracelens-venv].
    #[arg(long, value_name = "PATH")]
    pub(crate) venv: Option<PathBuf>,
    /// What to pip-install: a git URL, a local path or a wheel [default: TraceLens at a pinned commit].
    #[arg(long, value_name = "SPEC", env = "TRACELENS_PIP_SPEC", hide_env_values = true)]
    pub(crate) spec: Option<String>,
    /// Install TraceLens from its GitHub repository at this commit, tag or
    /// branch instead of the pinned commit (--spec wins).
    #[arg(long, value_name = "REF", env = "TRACELENS_GIT_REF")]
    pub(crate) git_ref: Option<String>,
    /// The interpreter that creates the venv.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub(crate) python: PathBuf,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TraceCommand {
    /// List the traces under a run directory, with their kind and rank.
    #[command(after_help = brief(DISCOVER_HELP), after_long_help = DISCOVER_HELP)]
    Discover(DiscoverArgs),
    /// Repair a trace that strict JSON parsers (TraceLens' orjson) reject.
    #[command(after_help = brief(SANITIZE_HELP), after_long_help = SANITIZE_HELP)]
    Sanitize(SanitizeArgs),
    /// Write a rocpd database (rocprofv3's SQLite output) as rocprofv3 JSON,
    /// which TraceLens reads.
    #[command(after_help = brief(CONVERT_HELP), after_long_help = CONVERT_HELP)]
    Convert(ConvertArgs),
}

const CONVERT_HELP: &str = "\
rocprofv3 writes a SQLite database (<pid>_results.db, rocpd) by default since
ROCm 7, and TraceLens reads no database. This writes the same records as the
rocprofv3 JSON of --output-format json: the process's metadata (pid, init and
fini times, host, command), its agents, kernel symbols, kernel dispatches
(times, agent, queue, stream, grid and workgroup sizes) and memory copies;
not its API calls or counters. TraceLens_generate_perf_report_rocprof reads
it. `report tracelens` does this itself for the databases it finds; `report
summary` and `report diff` read databases as they are.

The rows are streamed, the database is opened read-only, and the JSON is
written through a temporary file renamed into place: a failure or Ctrl-C
leaves nothing. An existing file is not replaced without --force (beside the
database, <pid>_results.json may be the run's own JSON).

Several databases (or a run directory) are converted one after the other; one
that cannot be read is named and the others are still written.

Examples:
  madengine trace convert host/1234_results.db          # host/1234_results.json
  madengine trace convert host/1234_results.db -o /tmp/run.json --json
  madengine trace convert runs/llama/rocprof_output     # every <pid>_results.db under it

Exit codes: 0 written, 2 usage error (an output exists: nothing is written),
3 a database cannot be read (not SQLite, not rocprofv3's, cut short) or a JSON
cannot be written, 130 interrupted.";

const DISCOVER_HELP: &str = "\
Kinds: pytorch (Kineto / torch.profiler JSON), rocprof_json (rocprofv3 JSON),
pftrace (Perfetto). Files named like the original madengine's patterns are
claimed by name; any other .json/.json.gz whose first 64 KiB show a Chrome
trace or a rocprofv3 trace is claimed by content. Formats TraceLens cannot
read (.db, .rpd, .pb) are listed with what to do instead.

Examples:
  madengine trace discover runs/2026-11-30
  madengine trace discover . --exclude tracelens_output --json | jq '.traces[].path'

Exit codes: 0 success, 2 usage error, 3 the root cannot be read.
Unreadable paths below the root, and symbolic links named as traces that
lead nowhere, are listed as problems, not errors; the reports warn that they
left them out.";

const SANITIZE_HELP: &str = "\
Repairs:
  - invalid UTF-8 becomes U+FFFD (exactly as Python's
    bytes.decode('utf-8', 'replace'));
  - raw control bytes inside strings become \\u00XX;
  - lone UTF-16 surrogate escapes become \\ufffd;
  - a backslash that starts no JSON escape (C:\\Users written raw, \\u
    without four hex digits) is doubled, so the string keeps it as text;
  - a bare inf, -inf, nan, NaN or Infinity where a number goes becomes null;
  - a quote written unescaped into a string (a name holding say \"hi\", a log
    line holding JSON) is escaped: a quote ends its string only when what
    follows it (after whitespace) may follow a string there;
  - a UTF-8 byte order mark before the document (a trace re-saved on
    Windows) is dropped;
  - a bare N/A (early Kineto's) becomes the string \"N/A\".
A clean trace is copied unchanged.

Not repaired, but named by its byte offset, left as it is, and the trace (or
its copy) said to be unparseable: any other bare word where a value goes
(None, True, undefined); a quote that ended its string early (one right
before , : } or ], which cannot be told from a string's end) or a backslash
that kept it open (the JSON grammar is followed, and the first token with no
place there is named); a number JSON does not have (a version such as 6.2.4,
an address such as 0x1f, 007, 1.), written bare where a string was meant;
and what orjson, TraceLens' parser, refuses though JSON allows it: a number
beyond a double's range (1e400) and brackets nested 1,025 levels deep.

Refused, with what to do: a UTF-16 or UTF-32 trace (re-saved by Windows
PowerShell; convert it with iconv); a Perfetto trace (protobuf, rocprofv3's
pftrace: it is not JSON, and TraceLens and `report summary` read it as it
is); compressed data where the JSON goes (a .json.gz compressed twice; zstd,
xz, bzip2 or zip), with how to decompress it.

The input is never modified; the output is written to a temporary file
beside it and renamed when complete. The output's name says its compression:
gzip when it ends in .gz, else plain JSON (so -o trace.json of a .json.gz
writes JSON you can read as it is).

Several inputs are handled one after the other; one that cannot be read does
not stop the others (exit 3 at the end). With --check a directory is searched
for PyTorch and rocprofv3 JSON traces (as `trace discover`; the Perfetto
traces found are named in a note); to repair, name the files. A check of
several traces ends with one line: `29 traces checked: 27 clean, 1 needs
repair, 1 TraceLens cannot parse`. --json prints one report object for a
single file, else one object whose `traces` lists them.

With --salvage a trace cut short is closed after its last complete event and
the report says where it was cut and what closed it; data after the end of the
JSON document (a second trace appended, a log line, the zeros a crash leaves)
is dropped; a complete trace gets the same copy as without it. --check also
says when a trace is cut short (its JSON ends inside an unfinished value) or
has data after its end, which TraceLens cannot parse either way, and what
--salvage would drop. Without either, such a copy is still written whole, and
said to be unparseable.

Examples:
  madengine trace sanitize 4242_results.json   # writes 4242_results.sanitized.json
  madengine trace sanitize rank0.json.gz -o /tmp/rank0.json.gz
  madengine trace sanitize rank0.json.gz -o rank0.json   # gunzipped too
  madengine trace sanitize --salvage cut.pt.trace.json.gz   # a job killed
  madengine trace sanitize --check run.pt.trace.json && echo clean
  madengine trace sanitize --check runs/llama    # every trace of a run

Exit codes: 0 success (with --check: all clean and complete), 1 with --check:
a trace needs repair, is cut short, has data after its end or holds bare words
that are not JSON; without: a copy is still cut short or holds such words
(TraceLens cannot parse it), 2 usage error, 3 input or I/O error.";

#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// The run directory to search, or one file to classify.
    #[arg(default_value = ".")]
    pub(crate) root: PathBuf,
    /// Ignore everything under this directory (repeatable).
    #[arg(long, value_name = "DIR")]
    pub(crate) exclude: Vec<PathBuf>,
    /// Follow symlinked directories (loops are detected and reported).
    #[arg(long)]
    pub(crate) follow_links: bool,
    /// Classify by file name only, as the original madengine did.
    #[arg(long)]
    pub(crate) names_only: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// The rocpd databases (<pid>_results.db); a directory: every one under it.
    #[arg(required = true, value_name = "DATABASE")]
    pub(crate) inputs: Vec<PathBuf>,
    /// Where to write the JSON (a file, or a directory for several)
    /// [default: beside the database, .json instead of .db].
    ///
    /// A file, for a single database. A directory (one that exists, or a
    /// path ending in /) takes each database's JSON under the name it gets
    /// beside it.
    #[arg(short, long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub(crate) force: bool,
    /// Print what was written as JSON on stdout (several databases: one
    /// object whose `traces` lists them).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct SanitizeArgs {
    /// The traces to repair (.json or .json.gz); with --check also run directories.
    #[arg(required = true, value_name = "INPUT")]
    pub(crate) inputs: Vec<PathBuf>,
    /// Where to write the repaired trace (a file, or a directory for several)
    /// [default: beside the input, with `.sanitized` before the extension].
    ///
    /// A file, for a single input: gzip when it ends in .gz. A directory (one
    /// that exists, or a path ending in /) takes each input's copy under the
    /// input's own name.
    #[arg(short, long, value_name = "PATH", conflicts_with = "check")]
    pub(crate) output: Option<PathBuf>,
    /// Only tell whether the trace needs repair; write nothing.
    #[arg(long)]
    pub(crate) check: bool,
    /// With --check, stop at the first problem instead of counting them all.
    #[arg(long, requires = "check")]
    pub(crate) first: bool,
    /// Also close a trace that was cut short, so TraceLens can read it.
    ///
    /// A trace cut short (a profiler killed while writing it, a .json.gz cut
    /// off) keeps everything up to its last complete event: the partial one
    /// is dropped and the brackets left open are closed. Data after the end
    /// of the JSON document is dropped; so is a last string that never ends,
    /// from the event it is in.
    #[arg(long, conflicts_with = "check")]
    pub(crate) salvage: bool,
    /// How many repairs to list in detail (at most 10,000; the rest are counted).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub(crate) max_listed: usize,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(test)]
mod tests {
    use std::{fs, path::Path};

    use clap::{CommandFactory, Parser, error::ErrorKind};

    #[test]
    fn cli_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// Where each documented `madengine` command line stands, and the line.
    fn documented() -> Vec<(String, String)> {
        let mut found = Vec::new();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for doc in ["README.md", "docs/user-guide.md"] {
            let text = fs::read_to_string(root.join(doc)).unwrap();
            let mut code = false;
            for (n, line) in text.lines().enumerate() {
                if line.trim_start().starts_with("```") {
                    code = !code;
                } else if code {
                    found.push((format!("{doc}:{}", n + 1), line.to_string()));
                }
            }
        }
        fn help(cmd: &clap::Command, path: &str, found: &mut Vec<(String, String)>) {
            for text in [cmd.get_after_help(), cmd.get_after_long_help()].into_iter().flatten() {
                for line in text.to_string().lines() {
                    found.push((format!("`{path} --help`"), line.to_string()));
                }
            }
            for sub in cmd.get_subcommands() {
                help(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        help(&super::Cli::command(), "madengine", &mut found);
        // A line ending in `\` goes on in the next.
        let mut joined: Vec<(String, String)> = Vec::new();
        let mut open = false;
        for (place, line) in found {
            match joined.last_mut() {
                Some((_, last)) if open => last.push_str(line.trim()),
                _ => joined.push((place, line.trim().to_string())),
            }
            let last = &mut joined.last_mut().unwrap().1;
            open = last.ends_with('\\');
            if open {
                last.pop();
                last.push(' ');
            }
        }
        joined
            .into_iter()
            .filter_map(|(place, line)| {
                let line = line.strip_prefix("$ ").unwrap_or(&line);
                let at = line.find("madengine ")?;
                // At the start, after `NAME=value` words, or after `eval
                // "$(`, `| ` and the like (not in prose: "`madengine
                // profile` exits ...").
                let before = line[..at].trim_end();
                let starts = before.split_whitespace().all(|w| w.contains('='))
                    || before.ends_with(['(', '|', ';', '&']);
                let mut command = &line[at..];
                for end in [" | ", " > ", " >> ", " 2>", " # ", " && ", " || ", "; ", ")\""] {
                    command = command.split(end).next().unwrap();
                }
                starts.then(|| (place, command.trim_end_matches(')').to_string()))
            })
            .collect()
    }

    /// Every `madengine ...` command line that README.md and the user guide
    /// show in code blocks, and every example in `--help`, parses: a renamed
    /// flag or subcommand fails here instead of in a user's shell.
    #[test]
    fn documented_command_lines_parse() {
        let lines = documented();
        assert!(lines.len() > 50, "too few command lines found: {lines:?}");
        let mut bad = Vec::new();
        for (place, line) in &lines {
            let Some(words) = shlex::split(line) else {
                bad.push(format!("{place}: unbalanced quotes: {line}"));
                continue;
            };
            if let Err(e) = super::Cli::try_parse_from(&words)
                && !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
            {
                bad.push(format!("{place}: {line}\n    {}", e.render().to_string().trim()));
            }
        }
        assert!(
            bad.is_empty(),
            "{} of {} documented command lines do not parse:\n{}",
            bad.len(),
            lines.len(),
            bad.join("\n")
        );
    }
}
