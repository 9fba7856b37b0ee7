//! Command-line arguments: clap derive only, plain data.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the command found problems (with --check a trace needs repair; a TraceLens job failed)
  2  usage error (bad arguments)
  3  input or I/O error (a missing, unreadable or corrupt file; a failed write)
  4  TraceLens is missing for the chosen interpreter (or the interpreter cannot run)";

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
}

#[derive(Debug, Subcommand)]
pub(crate) enum ReportCommand {
    /// Run TraceLens over every trace under a run directory.
    #[command(after_help = TRACELENS_HELP)]
    Tracelens(TracelensArgs),
    /// Compare two or more TraceLens PyTorch reports.
    #[command(name = "tracelens-compare", after_help = COMPARE_HELP)]
    TracelensCompare(CompareArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum SetupCommand {
    /// Create an isolated virtual environment with TraceLens in it.
    #[command(after_help = SETUP_HELP)]
    Tracelens(SetupTracelensArgs),
}

const TRACELENS_HELP: &str = "\
Each trace gets its TraceLens report: PyTorch traces the perf report (with
--enable_kernel_summary), rocprofv3 JSON the rocprof report, Perfetto traces
the hip_activity, hip_api and memory_copy reports; the PyTorch traces of each
complete multi-rank run (ranks from file names or distributedInfo) get one
collective report. Traces strict JSON parsers reject are analyzed through a
sanitized copy; the originals are never modified.

TraceLens runs with --python, else $TRACELENS_VENV/bin/python3, else python3;
its console scripts are taken beside that interpreter (never from PATH).

Writes <output-dir>/<report>..., <output-dir>/logs/<report>.<tool>.log and
<output-dir>/tracelens_summary.csv / .json (earlier summaries are removed
first; the new ones are written when the run ends).

Examples:
  madengine report tracelens --root runs/llama --gpu-arch MI300X
  madengine report tracelens --mode collective --world-size 8
  madengine report tracelens --discover-only --json
  madengine report tracelens -- --topk_ops 20     # forwarded to every TraceLens command
  # in a container, as the post-run step:
  TRACELENS_VENV=/opt/madengine-tracelens-venv madengine report tracelens --no-fail

Exit codes: 0 no job failed (SKIPPED is not a failure), 1 a job failed,
2 usage error, 3 input or I/O error, 4 TraceLens missing.";

const COMPARE_HELP: &str = "\
Reports are what `report tracelens` wrote for PyTorch traces: <stem>.xlsx
files or <stem>_csv directories. The first one must hold a kernel_summary
sheet (TraceLens' comparison requires it).

Example:
  madengine report tracelens-compare base/tracelens_output/x_csv new/tracelens_output/x_csv --names base new

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
    /// The run directory to search for traces.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub(crate) root: PathBuf,
    /// Where reports, logs and summaries go (never searched for traces).
    #[arg(long, default_value = "tracelens_output", value_name = "DIR")]
    pub(crate) output_dir: PathBuf,
    /// Which traces to analyze.
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub(crate) mode: ModeArg,
    /// The interpreter that has TraceLens [default: $TRACELENS_VENV/bin/python3, else python3].
    #[arg(long, value_name = "PATH")]
    pub(crate) python: Option<PathBuf>,
    /// GPU platform for roofline columns (checked against what TraceLens knows, e.g. MI300X).
    #[arg(long, value_name = "NAME")]
    pub(crate) gpu_arch: Option<String>,
    /// World size of the collective report [default: the number of ranked traces].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub(crate) world_size: u32,
    /// Analyze at most N traces of each kind [default: all].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub(crate) max_traces: usize,
    /// TraceLens jobs at a time [default: number of CPUs, at most 4; TraceLens is memory-hungry].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) jobs: Option<u32>,
    /// Kill a job running longer than this and report it as failed.
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
    /// Arguments forwarded verbatim to every TraceLens command (after `--`).
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
    #[arg(long, value_name = "SPEC")]
    pub(crate) spec: Option<String>,
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
    #[command(after_help = DISCOVER_HELP)]
    Discover(DiscoverArgs),
    /// Repair a trace that strict JSON parsers (TraceLens' orjson) reject.
    #[command(after_help = SANITIZE_HELP)]
    Sanitize(SanitizeArgs),
}

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
Unreadable paths below the root are listed as problems, not errors.";

const SANITIZE_HELP: &str = "\
Repairs: invalid UTF-8 becomes U+FFFD (exactly as Python's
bytes.decode('utf-8', 'replace')); raw control bytes inside strings become
\\u00XX; lone UTF-16 surrogate escapes become \\ufffd. A clean trace is copied
unchanged. The input is never modified; the output is written to a temporary
file beside it and renamed when complete. .json.gz stays .json.gz.

Examples:
  madengine trace sanitize 4242_results.json        # writes 4242_results.sanitized.json
  madengine trace sanitize rank0.json.gz -o /tmp/rank0.json.gz
  madengine trace sanitize --check run.pt.trace.json && echo clean

Exit codes: 0 success (with --check: clean), 1 with --check: repair needed,
2 usage error, 3 input or I/O error.";

#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// The run directory to search.
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
pub(crate) struct SanitizeArgs {
    /// The trace to repair (.json or .json.gz).
    pub(crate) input: PathBuf,
    /// Where to write the repaired trace [default: beside the input, with
    /// `.sanitized` before the extension].
    #[arg(short, long, value_name = "PATH", conflicts_with = "check")]
    pub(crate) output: Option<PathBuf>,
    /// Only tell whether the trace needs repair; write nothing.
    #[arg(long)]
    pub(crate) check: bool,
    /// With --check, stop at the first problem instead of counting them all.
    #[arg(long, requires = "check")]
    pub(crate) first: bool,
    /// How many repairs to list in detail.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub(crate) max_listed: usize,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
