//! The workspace's automation entry point: `cargo xtask <command>`.
//!
//! - `ci`: what CI runs (format, lints, docs, tests); the README's test command.
//! - `tidy`: the workspace shape rules of STYLE.md (also run by `cargo test`).
//! - `fixtures [--check]`: write (or verify) the synthetic fixtures;
//!   `fixtures --gpu [--dry-run]`: capture real ones on a GPU node.
//! - `codegen [--check]`: the CLI reference in docs/, from `--help`; the JSON Schemas of the
//!   documents in docs/schemas/, from the types that write them.
//! - `trim IN -o OUT`: cut a real trace down to the fixture size cap.
//! - `slurm up|down`: a private SLURM cluster for the tests.
//! - `e2e [--dry-run]`: the whole path on a GPU node, with the real tools.
//! - `bench [sanitize|discover|summary|collective|gzip|all]`: benchmarks against named baselines
//!   (`summary` includes `report diff`; `collective`: the multi-rank collective report of 8,
//!   64 and 256 ranks).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "xtask is a command-line tool")]
// The doc comments on the clap types are help text, where <placeholders> are plain text.
#![allow(rustdoc::invalid_html_tags)]

mod bench;
#[cfg(test)]
mod built;
mod cmd;
mod codegen;
mod e2e;
mod fixtures;
mod gpu;
mod schemas;
mod slurm;
mod tidy;
mod trim;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "madengine's automation")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SlurmAction {
    Up,
    Down,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Run what CI runs: cargo fmt --check, clippy -D warnings, cargo doc -D warnings, the tests.
    Ci,
    /// Check the workspace shape (layers, lints, docs, test layout).
    Tidy,
    /// Regenerate docs/cli-reference.md from the CLI's --help, and docs/schemas/.
    Codegen {
        /// Only check that it is up to date.
        #[arg(long)]
        check: bool,
    },
    /// End-to-end scenarios with the real tools on a GPU node (see docs/user-guide.md).
    E2e(e2e::E2eArgs),
    /// Write the synthetic fixtures under fixtures/synthetic; with --gpu,
    /// capture real traces on this GPU node into fixtures/gpu/<vendor>-<model>.
    Fixtures {
        /// Only verify that the committed synthetic fixtures are up to date.
        #[arg(long, conflicts_with = "gpu")]
        check: bool,
        /// Capture real traces with the GPU (torch.profiler 1 and 2 processes,
        /// rocprofv3 on AMD), trimmed to the size cap, checked, with provenance.
        #[arg(long)]
        gpu: bool,
        #[command(flatten)]
        gpu_args: gpu::GpuArgs,
    },
    /// Trim a Kineto or rocprofv3 JSON trace to a size cap, keeping it valid
    /// and every kept GPU event with its launch (what `fixtures --gpu` does).
    Trim {
        /// The trace (.json; .json.gz is read too).
        input: PathBuf,
        /// Where to write the trimmed trace.
        #[arg(short, long)]
        output: PathBuf,
        /// Size cap in KiB.
        #[arg(long, default_value_t = 256)]
        cap_kib: usize,
    },
    /// Start or stop a private 4-node SLURM cluster with fake GPUs (for the tests).
    Slurm {
        /// up or down.
        #[arg(value_enum)]
        action: SlurmAction,
        /// Where the cluster lives (config, state, logs, fake devices).
        #[arg(long, default_value = "target/slurm-cluster")]
        dir: PathBuf,
    },
    /// Benchmarks, each against a named baseline in the same run.
    Bench {
        /// Which benchmark.
        #[arg(value_enum, default_value_t = bench::Which::All)]
        which: bench::Which,
        /// Size of the generated trace for `sanitize`, in MB.
        #[arg(long, default_value_t = 300)]
        size_mb: u64,
        /// Number of files in the generated tree for `discover`.
        #[arg(long, default_value_t = 100_000)]
        files: usize,
        /// Runs of each command; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = project_root();
    let result = match cli.command {
        Task::Ci => cmd::ci(&root),
        Task::Tidy => tidy::run(&root),
        Task::Codegen { check } => codegen::run(&root, check),
        Task::E2e(args) => e2e::run(&root, &args),
        Task::Fixtures { gpu: true, gpu_args, .. } => gpu::run(&root, &gpu_args),
        Task::Fixtures { check, .. } => fixtures::run(&root, check),
        Task::Trim { input, output, cap_kib } => trim::run(&input, &output, cap_kib << 10),
        Task::Bench { which, size_mb, files, runs } => {
            bench::run(&root, which, size_mb, files, runs)
        }
        Task::Slurm { action, dir } => {
            let dir = if dir.is_absolute() { dir } else { root.join(dir) };
            match action {
                SlurmAction::Up => slurm::up(&dir),
                SlurmAction::Down => slurm::down(&dir),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// For tests: the public traces (`../shared/fixtures/public`), which CI
/// always has; elsewhere, without them, a skipped check.
#[cfg(test)]
pub(crate) fn public_fixtures() -> Option<PathBuf> {
    test_support::public::public_fixtures()
}

/// The workspace root: where xtask was built or, for a binary carried to a
/// node without cargo (`target/release/xtask e2e` there), the checkout it
/// is run from.
pub(crate) fn project_root() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf();
    root_of(built, std::env::current_dir().ok())
}

fn root_of(built: PathBuf, cwd: Option<PathBuf>) -> PathBuf {
    let is_root = |d: &Path| d.join("xtask/Cargo.toml").is_file();
    if is_root(&built) {
        return built;
    }
    cwd.filter(|d| is_root(d)).unwrap_or(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary built elsewhere (its build's checkout absent here) finds the
    /// checkout it runs in; where the build's checkout exists, that one.
    #[test]
    fn root_is_the_build_checkout_or_the_one_run_from() {
        let here = project_root();
        let gone = PathBuf::from("/nonexistent/build/checkout");
        assert_eq!(root_of(gone.clone(), Some(here.clone())), here);
        assert_eq!(root_of(here.clone(), Some(PathBuf::from("/"))), here);
        // Run from a directory that is no checkout: the build's path, for
        // the error that names it.
        assert_eq!(root_of(gone.clone(), Some(std::env::temp_dir())), gone);
        assert_eq!(root_of(gone.clone(), None), gone);
    }
}
