//! Validation and conversion of arguments (and the environment) into
//! library settings. The only place the CLI reads environment variables.

use std::{path::PathBuf, time::Duration};

use dynolog_client::{Policy, TraceRequest, Window};
use tracelens_driver::{Config, Mode};

use crate::{
    cli::{
        CaptureArgs, DiscoverArgs, GputraceArgs, JobArgs, ModeArg, PolicyArgs, SanitizeArgs,
        SetupTracelensArgs, TracelensArgs,
    },
    error::Error,
};

pub(crate) fn discover_options(args: &DiscoverArgs) -> trace_discover::Options {
    trace_discover::Options {
        exclude: args.exclude.clone(),
        follow_links: args.follow_links,
        names_only: args.names_only,
    }
}

pub(crate) fn sanitize_options(args: &SanitizeArgs) -> trace_sanitize::Options {
    trace_sanitize::Options {
        max_recorded: args.max_listed,
        stop_at_first: args.first,
        ..Default::default()
    }
}

/// `$TRACELENS_VENV`, trimmed, when set and non-empty.
fn tracelens_venv() -> Option<PathBuf> {
    std::env::var_os("TRACELENS_VENV")
        .map(|v| PathBuf::from(v.to_string_lossy().trim()))
        .filter(|v| !v.as_os_str().is_empty())
}

/// `--python`, else `$TRACELENS_VENV/bin/python3`, else `python3`.
pub(crate) fn interpreter(explicit: Option<&PathBuf>) -> PathBuf {
    tracelens_driver::resolve_interpreter(
        explicit.map(PathBuf::as_path),
        tracelens_venv().as_deref(),
    )
}

pub(crate) fn tracelens_config(args: &TracelensArgs) -> Result<Config, String> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let root = args.dir.as_ref().unwrap_or(&args.root);
    let mut config = Config::new(root, std::env::temp_dir(), cpus);
    config.output_dir = args.output_dir.clone();
    config.mode = match args.mode {
        ModeArg::Auto => Mode::Auto,
        ModeArg::Pytorch => Mode::Pytorch,
        ModeArg::Rocprof => Mode::Rocprof,
        ModeArg::Pftrace => Mode::Pftrace,
        ModeArg::Collective => Mode::Collective,
    };
    config.python = interpreter(args.python.as_ref());
    config.gpu_arch = args.gpu_arch.clone();
    config.world_size = args.world_size;
    config.partial = args.partial;
    config.max_traces = args.max_traces;
    config.cycle = args.cycle;
    config.precheck = !args.no_precheck;
    config.salvage = args.salvage;
    match args.jobs {
        Some(jobs) => config.jobs = jobs as usize,
        // Chosen for the user: no more than fit in half the available
        // memory together (the machine does other work too).
        None => config.memory_available = mem_available().map(|m| m / 2),
    }
    config.timeout = match args.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => return Err(format!("--timeout must be a positive number of seconds, not {t}")),
        None => None,
    };
    config.extra_args = args.extra.clone();
    Ok(config)
}

pub(crate) fn setup_config(args: &SetupTracelensArgs) -> tracelens_driver::SetupConfig {
    tracelens_driver::SetupConfig {
        venv: args
            .venv
            .clone()
            .or_else(tracelens_venv)
            .unwrap_or_else(|| PathBuf::from(tracelens_driver::DEFAULT_VENV)),
        spec: match (&args.spec, &args.git_ref) {
            (Some(spec), _) => spec.clone(),
            (None, Some(git_ref)) => format!("git+https://github.com/AMD-AGI/TraceLens@{git_ref}"),
            (None, None) => tracelens_driver::DEFAULT_SPEC.into(),
        },
        base_python: args.python.clone(),
    }
}

/// `--job-id`, else `$SLURM_JOB_ID`, else 0 (what kineto registers with).
fn job_id(explicit: Option<u64>) -> u64 {
    explicit.or_else(|| std::env::var("SLURM_JOB_ID").ok()?.trim().parse().ok()).unwrap_or(0)
}

pub(crate) fn gputrace_request(args: &GputraceArgs) -> TraceRequest {
    let mut r = TraceRequest::new(&args.log_file);
    r.window = match args.iterations {
        Some(n) if n > 0 => {
            Window::Iterations { count: n, roundup: args.profile_start_iteration_roundup }
        }
        _ => Window::Duration { ms: args.duration_ms, start_time_ms: args.profile_start_time },
    };
    r.record_shapes = args.record_shapes;
    r.profile_memory = args.profile_memory;
    r.with_stacks = args.with_stacks;
    r.with_flops = args.with_flops;
    r.with_modules = args.with_modules;
    r.job_id = job_id(args.job_id);
    r.pids = args.pids.clone();
    r.process_limit = args.process_limit;
    r
}

pub(crate) fn capture_request(c: &CaptureArgs, log_file: String) -> TraceRequest {
    let mut r = TraceRequest::new(log_file);
    r.window = if c.iterations > 0 {
        Window::Iterations { count: c.iterations, roundup: c.profile_start_iteration_roundup }
    } else {
        Window::Duration { ms: c.duration_ms, start_time_ms: c.profile_start_time }
    };
    r.record_shapes = c.record_shapes;
    r.profile_memory = c.profile_memory;
    r.with_stacks = c.with_stacks;
    r.with_flops = c.with_flops;
    r.with_modules = c.with_modules;
    r.job_id = job_id(c.job_id);
    r.process_limit = c.process_limit;
    r
}

pub(crate) fn policy(p: &PolicyArgs) -> Policy {
    let secs = |s: f64| Duration::from_secs_f64(if s.is_finite() && s > 0.0 { s } else { 0.0 });
    Policy {
        warmup: secs(p.warmup_s),
        retry_interval: secs(p.retry_interval_s),
        max_attempts: p.max_attempts,
        stable_for: secs(p.stable_s),
        first_step: secs(p.first_step_s),
        ..Policy::default()
    }
}

/// The job: the JSON job file (unknown keys are an error), then the flags over it.
pub(crate) fn job_spec(
    args: &JobArgs,
    results_dir: Option<&PathBuf>,
) -> Result<collect_slurm::JobSpec, Error> {
    let mut spec = match &args.config {
        Some(path) => {
            let bytes =
                std::fs::read(path).map_err(|source| Error::Io { path: path.clone(), source })?;
            serde_json::from_slice(&bytes)
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?
        }
        None => collect_slurm::JobSpec::default(),
    };
    if let Some(v) = args.nodes {
        spec.nodes = v;
    }
    if let Some(v) = args.ntasks_per_node {
        spec.ntasks_per_node = v;
    }
    if args.gpus_per_node.is_some() {
        spec.gpus_per_node = args.gpus_per_node;
    }
    if args.partition.is_some() {
        spec.partition = args.partition.clone();
    }
    if args.time.is_some() {
        spec.time = args.time.clone();
    }
    if args.account.is_some() {
        spec.account = args.account.clone();
    }
    if let Some(v) = &args.job_name {
        spec.name = v.clone();
    }
    for kv in &args.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--env {kv}: expected NAME=value")))?;
        spec.env.retain(|(name, _)| name != k);
        spec.env.push((k.to_string(), v.to_string()));
    }
    if !args.collect.is_empty() {
        spec.collect = args.collect.clone();
    }
    spec.sbatch.extend(args.sbatch.iter().cloned());
    spec.setup.extend(args.setup.iter().cloned());
    spec.summarize_on_nodes |= args.summarize_on_nodes;
    spec.gather_traces |= args.gather_traces;
    for tool in &args.tools {
        if !spec.tools.contains(tool) {
            spec.tools.push(tool.clone());
        }
    }
    if !args.command.is_empty() {
        spec.command = args.command.clone();
    }
    if let Some(dir) = results_dir {
        spec.results_dir = dir.clone();
    }
    Ok(spec)
}

/// `MemAvailable` of /proc/meminfo, in bytes (what the kernel can give
/// without swapping); `None` where there is no such file.
pub(crate) fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
