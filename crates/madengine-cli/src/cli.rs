//! Command-line arguments: clap derive only, plain data.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the command found problems (a trace needs repair with --check)
  2  usage error (bad arguments)
  3  input or I/O error (a missing, unreadable or corrupt file; a failed write)";

/// Turn GPU profiler traces into TraceLens reports.
///
/// madengine finds the traces a benchmark run leaves behind (PyTorch/Kineto,
/// rocprofv3 JSON, Perfetto) and repairs what strict JSON parsers such as
/// TraceLens' orjson reject.
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
