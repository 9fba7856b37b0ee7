//! `cargo xtask e2e`: the whole path on a GPU node with the real tools —
//! rocprofv3, dynolog, PyTorch, TraceLens, SLURM — and a table that says
//! what ran, what was skipped and why.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use serde_json::{Value, json};

use crate::cmd::{cargo, cmd};

#[derive(Debug, clap::Args)]
pub(crate) struct E2eArgs {
    /// Print the inventory and the plan; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Run only this scenario.
    #[arg(long, value_name = "NAME")]
    only: Option<String>,
    /// Keep each scenario's temp directory.
    #[arg(long)]
    keep: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// The interpreter with TraceLens [default: $TRACELENS_VENV/bin/python3].
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Rehearse without a GPU: the PyTorch scenarios run on the CPU (gloo),
    /// and each trace must get TraceLens' answer to a CPU-only trace (a
    /// SKIPPED row: no GPU activity) instead of a report. Checks the e2e
    /// machinery itself, before a GPU node's time is spent on it.
    #[arg(long)]
    cpu: bool,
    /// Use this madengine binary instead of building target/release/madengine.
    #[arg(long, value_name = "PATH")]
    madengine: Option<PathBuf>,
}

/// What the node has.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Inventory {
    pub(crate) gpu_vendor: Option<String>,
    pub(crate) gpus: Vec<String>,
    pub(crate) rocprofv3: bool,
    pub(crate) traceconv: bool,
    pub(crate) torch: Option<Value>,
    pub(crate) dynolog: bool,
    pub(crate) tracelens_python: Option<PathBuf>,
    pub(crate) slurm_conf: Option<PathBuf>,
}

impl Inventory {
    /// One line per thing looked for: what was found, or where it was looked for.
    pub(crate) fn describe(&self) -> String {
        let found =
            |ok: bool, yes: &str, no: &str| if ok { yes.to_string() } else { no.to_string() };
        let gpus = match (&self.gpu_vendor, self.gpus.len()) {
            (Some(vendor), n) => format!("{n} {vendor}: {}", self.gpus.join("; ")),
            (None, _) => "none found (nvidia-smi -L, amd-smi list, rocm-smi)".into(),
        };
        let torch = match &self.torch {
            None => "not importable by python3".to_string(),
            Some(t) => {
                let backend = match t["hip"].as_str() {
                    Some(hip) => format!("ROCm/HIP {hip}"),
                    None => "CUDA".into(),
                };
                if t["gpu"] == true {
                    format!(
                        "{} ({backend}), sees {} GPU(s)",
                        t["version"].as_str().unwrap_or("?"),
                        t["count"]
                    )
                } else {
                    format!("{} ({backend}), sees no GPU", t["version"].as_str().unwrap_or("?"))
                }
            }
        };
        let rows = [
            ("GPUs", gpus),
            ("rocprofv3", found(self.rocprofv3, "on PATH", "not on PATH")),
            ("traceconv", found(self.traceconv, "on PATH", "not on PATH")),
            ("PyTorch", torch),
            // `dyno` is not needed: madengine sends the requests itself.
            ("dynolog", found(self.dynolog, "on PATH", "not on PATH")),
            (
                "TraceLens",
                self.tracelens_python.as_ref().map_or_else(
                    || "no interpreter that imports it (--python or TRACELENS_VENV)".into(),
                    |p| p.display().to_string(),
                ),
            ),
            (
                "SLURM",
                self.slurm_conf.as_ref().map_or_else(
                    || "no cluster (SLURM_CONF unset, missing, or sinfo fails)".into(),
                    |c| format!("SLURM_CONF={}", c.display()),
                ),
            ),
        ];
        rows.iter().map(|(what, value)| format!("  {what:<14} {value}\n")).collect()
    }
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    if !on_path(program) && !Path::new(program).is_file() {
        return None;
    }
    cmd(program, args).stderr_null().unchecked().read().ok()
}

pub(crate) fn inventory(python: Option<&Path>) -> Inventory {
    let mut inv = Inventory::default();
    if let Some(out) = output("nvidia-smi", &["-L"]) {
        inv.gpus =
            out.lines().filter(|l| l.starts_with("GPU ")).map(|l| l.trim().to_string()).collect();
        if !inv.gpus.is_empty() {
            inv.gpu_vendor = Some("nvidia".into());
        }
    }
    if inv.gpus.is_empty() {
        let amd =
            output("amd-smi", &["list"]).or_else(|| output("rocm-smi", &["--showproductname"]));
        if let Some(out) = amd {
            inv.gpus = out
                .lines()
                .filter(|l| l.trim_start().starts_with("GPU"))
                .map(|l| l.trim().to_string())
                .collect();
            if !inv.gpus.is_empty() {
                inv.gpu_vendor = Some("amd".into());
            }
        }
    }
    inv.rocprofv3 = on_path("rocprofv3");
    inv.traceconv = on_path("traceconv");
    inv.dynolog = on_path("dynolog");
    let probe = "import json, torch; print(json.dumps({'version': torch.__version__, 'gpu': torch.cuda.is_available(), \
                 'count': torch.cuda.device_count(), 'hip': torch.version.hip}))";
    inv.torch = output("python3", &["-c", probe])
        .and_then(|o| serde_json::from_str(o.lines().last()?).ok());
    // Absolute: the scenarios run in directories of their own.
    let tl = python.and_then(|p| std::path::absolute(p).ok()).or_else(|| {
        std::env::var_os("TRACELENS_VENV").map(|v| PathBuf::from(v).join("bin/python3"))
    });
    inv.tracelens_python = tl.filter(|p| {
        cmd(p, ["-c", "import TraceLens"])
            .stdout_null()
            .stderr_null()
            .unchecked()
            .run()
            .is_ok_and(|o| o.status.success())
    });
    inv.slurm_conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .filter(|c| c.is_file() && output("sinfo", &["-h"]).is_some());
    inv
}

/// A scenario and whether this node can run it.
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    /// `Err(reason)` when it must be skipped here.
    pub(crate) runnable: Result<(), String>,
}

/// The scenarios, and whether `inv` can run them (`cpu`: see
/// [`E2eArgs::cpu`]).
pub(crate) fn plan(inv: &Inventory, cpu: bool) -> Vec<Scenario> {
    let need = |checks: &[(bool, &str)]| -> Result<(), String> {
        let missing: Vec<&str> =
            checks.iter().filter(|(ok, _)| !ok).map(|(_, what)| *what).collect();
        if missing.is_empty() { Ok(()) } else { Err(format!("needs {}", missing.join(", "))) }
    };
    // TraceLens reports nothing for CPU-only traces ("No GPU events found"),
    // so every scenario needs PyTorch to see a GPU (a rehearsal, PyTorch).
    let torch_gpu = inv.torch.as_ref().is_some_and(|t| cpu || t["gpu"] == true);
    let torch_need = if cpu { "PyTorch" } else { "PyTorch seeing a GPU" };
    let amd = inv.gpu_vendor.as_deref() == Some("amd");
    let tl = inv.tracelens_python.is_some();
    vec![
        Scenario {
            name: "rocprof-json",
            what: "rocprofv3 --kernel-trace --hip-trace --output-format json, then report tracelens --mode rocprof and report summary; a run written as JSON and rocpd database, whose summaries must agree, as must TraceLens' reports of each alone (with 2+ GPUs, also a 2-rank job under rocprofv3: its processes told apart by GPU)",
            runnable: need(&[
                (amd, "an AMD GPU"),
                (inv.rocprofv3, "rocprofv3"),
                (torch_gpu, torch_need),
                (tl, "TraceLens (--python or TRACELENS_VENV)"),
            ]),
        },
        Scenario {
            name: "rocprof-pftrace",
            what: "rocprofv3 --output-format pftrace, then the three pftrace reports; report summary reads a pftrace as its JSON",
            runnable: need(&[
                (amd, "an AMD GPU"),
                (inv.rocprofv3, "rocprofv3"),
                (torch_gpu, torch_need),
                (tl, "TraceLens"),
                (inv.traceconv, "traceconv on PATH (TraceLens would try to download it)"),
            ]),
        },
        Scenario {
            name: "torch-native",
            what: "torch.profiler traces of one process and of a 2-rank torchrun job, then report summary and report diff natively (no TraceLens): every trace's tables, the cross-rank table, the comparison; and a job of 2 profiling cycles, a cross-rank table each",
            runnable: need(&[(torch_gpu, torch_need)]),
        },
        Scenario {
            name: "dynolog-profile",
            what: "madengine profile -- python workload.py through a real dynolog: 3 optimizer steps traced, which report summary counts as its steps; then, with TraceLens, its perf report",
            runnable: need(&[(inv.dynolog, "dynolog on PATH"), (torch_gpu, torch_need)]),
        },
        Scenario {
            name: "torchrun-2rank",
            what: "a 2-rank torchrun job (NCCL/RCCL with 2+ GPUs, gloo otherwise), then per-rank reports and, with NCCL/RCCL, the collective report",
            runnable: need(&[(torch_gpu, torch_need), (tl, "TraceLens")]),
        },
        Scenario {
            name: "slurm",
            what: "the 2-rank job through madengine slurm submit --wait, then slurm gather --report",
            runnable: need(&[
                (inv.slurm_conf.is_some(), "a SLURM cluster (SLURM_CONF)"),
                // gather --report includes the collective report, which needs
                // NCCL/RCCL (a rehearsal expects it SKIPPED).
                (torch_gpu, torch_need),
                (
                    cpu || gpus_for_nccl(inv),
                    "2+ GPUs PyTorch sees (NCCL/RCCL for the collective report)",
                ),
                (tl, "TraceLens"),
            ]),
        },
    ]
}

/// Whether the 2-rank job gets NCCL/RCCL (one GPU per rank), without which
/// TraceLens' collective report fails (`KeyError: 'collective_id'` on gloo).
fn gpus_for_nccl(inv: &Inventory) -> bool {
    inv.torch.as_ref().is_some_and(|t| t["gpu"] == true && t["count"].as_u64() >= Some(2))
}

struct Outcome {
    name: &'static str,
    ran: bool,
    detail: String,
    ok: bool,
    seconds: f64,
}

pub(crate) fn run(root: &Path, args: &E2eArgs) -> Result<(), String> {
    let inv = inventory(args.python.as_deref());
    eprintln!("inventory of this node:\n{}", inv.describe());
    let outcomes = execute(root, args, &inv)?;
    if args.json {
        let rows: Vec<Value> = outcomes
            .iter()
            .map(|o| json!({ "scenario": o.name, "ran": o.ran, "ok": o.ok, "detail": o.detail, "seconds": o.seconds }))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "inventory": inv, "scenarios": rows }))
                .expect("json")
        );
    } else {
        println!("| scenario | ran | result | time | detail |\n|---|---|---|---|---|");
        for o in &outcomes {
            let result = if !o.ran {
                "-"
            } else if o.ok {
                "ok"
            } else {
                "FAILED"
            };
            println!(
                "| {} | {} | {result} | {:.1} s | {} |",
                o.name,
                if o.ran { "yes" } else { "no" },
                o.seconds,
                o.detail
            );
        }
    }
    if outcomes.iter().any(|o| o.ran && !o.ok) {
        return Err("a scenario failed".into());
    }
    Ok(())
}

/// Run (or with --dry-run, only plan) the scenarios `args` selects that
/// `inv` supports; one outcome per selected scenario.
fn execute(root: &Path, args: &E2eArgs, inv: &Inventory) -> Result<Vec<Outcome>, String> {
    let scenarios: Vec<Scenario> = plan(inv, args.cpu)
        .into_iter()
        .filter(|s| args.only.as_deref().is_none_or(|o| o == s.name))
        .collect();
    if scenarios.is_empty() {
        return Err(format!("no scenario named {:?}", args.only.as_deref().unwrap_or_default()));
    }
    let mut outcomes = Vec::new();
    let madengine = match &args.madengine {
        // Absolute: the scenarios run in directories of their own.
        Some(given) => {
            std::path::absolute(given).map_err(|e| format!("{}: {e}", given.display()))?
        }
        None => {
            if !args.dry_run {
                cmd(cargo(), ["build", "--quiet", "--release", "-p", "madengine-cli"])
                    .dir(root)
                    .run()
                    .map_err(|e| format!("building madengine: {e}"))?;
            }
            root.join("target/release/madengine")
        }
    };
    let workload = root.join("xtask/e2e/workload.py");
    for s in &scenarios {
        let started = Instant::now();
        let (ran, ok, detail) = match (&s.runnable, args.dry_run) {
            (Err(why), _) => (false, true, format!("skipped: {why}")),
            (Ok(()), true) => (false, true, format!("would run: {}", s.what)),
            (Ok(()), false) => {
                let dir = tempfile_dir(s.name)?;
                let result = run_scenario(s.name, &dir, &madengine, &workload, inv, args.cpu);
                if !args.keep {
                    let _ = std::fs::remove_dir_all(&dir);
                } else {
                    eprintln!("kept {}", dir.display());
                }
                match result {
                    Ok(d) => (true, true, d),
                    Err(e) => (true, false, e),
                }
            }
        };
        outcomes.push(Outcome {
            name: s.name,
            ran,
            detail,
            ok,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok(outcomes)
}

fn tempfile_dir(name: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("madengine-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Lines that say why a program failed: a C++ exception that ended it
/// (gloo's, say), a Python exception and its traceback.
const FAILURE_LINES: [&str; 5] =
    ["terminate called", "what():", "Traceback (most recent call last)", "Error: ", "Exception: "];

/// Run `program args` in `dir`; Ok(stdout) or Err(the command and its
/// output: the first lines that say why, then its last lines). Notes on
/// stderr stay out of the stdout a caller parses.
fn step(dir: &Path, program: &Path, args: &[&str]) -> Result<String, String> {
    let out = cmd(program, args)
        .dir(dir)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        let text = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(15)..];
        // What went wrong is often above the tail (torchrun ends with its
        // own summary of which rank died): the first lines that say why.
        let causes: Vec<&str> = lines[..lines.len() - tail.len()]
            .iter()
            .filter(|l| FAILURE_LINES.iter().any(|f| l.contains(f)))
            .take(5)
            .copied()
            .collect();
        let causes = if causes.is_empty() {
            String::new()
        } else {
            format!("{} / ... / ", causes.join(" / "))
        };
        Err(format!(
            "`{} {}` exited {:?}: {causes}{}",
            program.display(),
            args.join(" "),
            out.status.code(),
            tail.join(" / ")
        ))
    }
}

/// `report tracelens` over `dir`, then [`check_rows`].
fn report(
    madengine: &Path,
    dir: &Path,
    inv: &Inventory,
    mode: &str,
    expect: &[(&str, usize)],
    cpu: bool,
) -> Result<String, String> {
    let python =
        inv.tracelens_python.as_ref().expect("planned only with TraceLens").display().to_string();
    let out = step(
        dir,
        madengine,
        &["report", "tracelens", "--root", ".", "--mode", mode, "--python", &python, "--json"],
    )?;
    let summary: Value = parsed("report", &out)?;
    check_rows(&summary, expect, cpu)
}

/// A `report tracelens` summary must hold, for each `(tool, n)` of `expect`,
/// `n` SUCCESS rows of that tool. On the CPU ([`E2eArgs::cpu`]) they are
/// SKIPPED rows instead, as TraceLens answers CPU-only traces, and nothing may
/// succeed or fail.
fn check_rows(summary: &Value, expect: &[(&str, usize)], cpu: bool) -> Result<String, String> {
    let rows = summary["results"].as_array().cloned().unwrap_or_default();
    let want_status = if cpu { "SKIPPED" } else { "SUCCESS" };
    let shown = || serde_json::to_string(&rows).unwrap_or_default();
    for (tool, n) in expect {
        let found = rows
            .iter()
            .filter(|r| {
                r["status"] == want_status
                    && r["tracelens_tool"].as_str().unwrap_or("").contains(tool)
            })
            .count();
        if found != *n {
            return Err(format!("{found} {want_status} row(s) for {tool}, not {n}: {}", shown()));
        }
    }
    if cpu && rows.iter().any(|r| r["status"] != "SKIPPED") {
        return Err(format!("on the CPU every row is SKIPPED: {}", shown()));
    }
    let n = rows.iter().filter(|r| r["status"] == want_status).count();
    let repaired = summary["repairs"].as_array().map_or(0, Vec::len);
    Ok(format!(
        "{n} {}{}",
        if cpu { "row(s) SKIPPED, as for CPU traces" } else { "report(s)" },
        if repaired > 0 { format!(", {repaired} trace(s) sanitized") } else { String::new() }
    ))
}

fn run_scenario(
    name: &str,
    dir: &Path,
    madengine: &Path,
    workload: &Path,
    inv: &Inventory,
    cpu: bool,
) -> Result<String, String> {
    let w = workload.display().to_string();
    let run = Setting { dir, madengine, w: &w, inv, cpu };
    match name {
        "rocprof-json" | "rocprof-pftrace" => rocprof(name, &run),
        "torch-native" => torch_native(&run),
        "dynolog-profile" => dynolog_profile(&run),
        "torchrun-2rank" => torchrun_2rank(&run),
        "slurm" => slurm(&run),
        other => Err(format!("unknown scenario {other}")),
    }
}

/// What a scenario runs in and with: its directory, the binary, the
/// workload (`w`), the node's inventory, whether it has no GPU (`cpu`).
#[derive(Clone, Copy)]
struct Setting<'a> {
    dir: &'a Path,
    madengine: &'a Path,
    w: &'a str,
    inv: &'a Inventory,
    cpu: bool,
}

/// `out`, a command's `--json`, parsed; else an error naming `what`.
fn parsed(what: &str, out: &str) -> Result<Value, String> {
    serde_json::from_str(out).map_err(|e| format!("{what} JSON: {e}: {out}"))
}

/// The torchrun to start the 2-rank job with.
fn torchrun() -> String {
    which("torchrun").unwrap_or_else(|| "torchrun".into())
}

/// The 2-rank job of workload `w`, run directly or through SLURM.
fn two_ranks(w: &str, torchrun: &str) -> Vec<String> {
    [torchrun, "--nproc-per-node", "2", w, "--distributed", "--steps", "8"]
        .into_iter()
        .chain(["--profile-dir", "torch_profiler_output"])
        .map(str::to_string)
        .collect()
}

/// `rocprof-json` and `rocprof-pftrace`: rocprofv3 traces of one process (and, with two GPUs, of
/// the 2-rank job), reported by TraceLens and read natively.
fn rocprof(name: &str, run: &Setting<'_>) -> Result<String, String> {
    let Setting { dir, madengine, w, inv, cpu } = *run;
    let format = if name == "rocprof-json" { "json" } else { "pftrace" };
    step(
        dir,
        Path::new("rocprofv3"),
        &[
            "--kernel-trace",
            "--hip-trace",
            "--output-format",
            format,
            "-d",
            "rocprof_output",
            "--",
            "python3",
            w,
            "--steps",
            "5",
        ],
    )?;
    if name == "rocprof-json" {
        let said = report(madengine, dir, inv, "rocprof", &[("rocprof", 1)], cpu)?;
        if cpu {
            return Ok(said);
        }
        // The native summary tells which GPU the process ran on and,
        // with two GPUs, a 2-rank job's processes apart by their GPUs.
        gpus_of(madengine, dir, "rocprof_output", 1)?;
        // rocprofv3's default output, its rocpd database, read as its JSON.
        let said = format!("{said}; {}", read_as_json(madengine, dir, w, "rocpd")?);
        let said = format!("{said}; {}", tracelens_reads_rocpd(madengine, dir, inv)?);
        if !gpus_for_nccl(inv) {
            return Ok(said);
        }
        let argv = two_ranks(w, &torchrun());
        let rocprof = ["--kernel-trace", "--output-format", "json", "-d", "rocprof_2rank"];
        let args: Vec<&str> =
            rocprof.into_iter().chain(["--"]).chain(argv.iter().map(String::as_str)).collect();
        step(dir, Path::new("rocprofv3"), &args)?;
        let gpus = gpus_of(madengine, dir, "rocprof_2rank", 2)?;
        Ok(format!("{said}; report summary: the 2-rank job's processes on GPUs {gpus:?}"))
    } else {
        let tools = [("hip_activity", 1), ("hip_api", 1), ("memory_copy", 1)];
        let said = report(madengine, dir, inv, "pftrace", &tools, cpu)?;
        if cpu {
            return Ok(said);
        }
        // `report summary` reads the pftrace without traceconv.
        Ok(format!("{said}; {}", read_as_json(madengine, dir, w, "pftrace")?))
    }
}

/// `torch-native`: one process and the 2-rank job traced by torch.profiler, summarized and compared
/// natively, and a job of two profiling cycles.
fn torch_native(run: &Setting<'_>) -> Result<String, String> {
    let Setting { dir, madengine, w, cpu, .. } = *run;
    let single = [w, "--steps", "6", "--profile-dir", "single"];
    step(dir, Path::new("python3"), &single)?;
    let argv = two_ranks(w, &torchrun());
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    step(dir, Path::new(&argv[0]), &args)?;
    let args = ["report", "summary", "torch_profiler_output", "-o", "summary", "--json"];
    let out = step(dir, madengine, &args)?;
    let summary: Value = parsed("summary", &out)?;
    let said = check_native(&summary, dir, cpu)?;
    if cpu {
        return Ok(said);
    }
    // The one process against rank 0 of the job: the same steps, the
    // job's all-reduce added.
    let rank0 = summary["traces"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["rank"] == 0))
        .and_then(|t| t["trace"].as_str())
        .ok_or("no rank 0 in the summary")?
        .to_string();
    let args = ["report", "diff", "single", &rank0, "--json", "--html", "diff.html"];
    let out = step(dir, madengine, &args)?;
    let diff: Value = parsed("diff", &out)?;
    let rows = diff["timeline"].as_array().map_or(0, Vec::len);
    let steps = (&diff["baseline"]["steps"], &diff["new"]["steps"]);
    if rows == 0 || steps != (&3.into(), &3.into()) || !dir.join("diff.html").is_file() {
        return Err(format!(
            "report diff single {rank0}: {rows} timeline rows, steps {steps:?}, page \
             written: {}",
            dir.join("diff.html").is_file()
        ));
    }
    let said = format!("{said}; report diff of one process and rank 0: {rows} timeline rows");
    // torch.profiler's schedule repeated: a trace per rank each
    // cycle in one directory, each cycle a run of its own.
    let job = [&torchrun(), "--nproc-per-node", "2", w, "--distributed", "--steps", "10"];
    let job: Vec<&str> =
        job.into_iter().chain(["--cycles", "2", "--profile-dir", "cycles"]).collect();
    step(dir, Path::new(job[0]), &job[1..])?;
    let args = ["report", "summary", "cycles", "-o", "cycles_summary", "--json"];
    let out = step(dir, madengine, &args)?;
    let summary: Value = parsed("summary", &out)?;
    let cycles = check_cycles(&summary)?;
    // Its last cycle against the one-cycle job, rank by rank.
    let args = ["report", "diff", "torch_profiler_output", "cycles", "--cycle", "last"];
    let out = step(dir, madengine, &[&args[..], &["--json"]].concat())?;
    let diff: Value = parsed("diff", &out)?;
    let ranks = diff["ranks"].as_array().map_or(0, Vec::len);
    if diff["new"]["cycle"] != serde_json::json!({"number": 2, "of": 2}) || ranks != 2 {
        return Err(format!("report diff --cycle last: {out}"));
    }
    Ok(format!("{said}; {cycles}, the last compared with the job's 2 ranks"))
}

/// `dynolog-profile`: `madengine profile` captures 3 iterations through dynolog; the native summary
/// counts them as steps.
fn dynolog_profile(run: &Setting<'_>) -> Result<String, String> {
    let Setting { dir, madengine, w, inv, cpu } = *run;
    let dynolog = which("dynolog").ok_or("dynolog vanished")?;
    step(
        dir,
        madengine,
        &[
            "profile",
            "--dynolog-bin",
            &dynolog,
            "--warmup-s",
            "10",
            "--iterations",
            "3",
            "--",
            "python3",
            w,
            "--steps",
            "400",
            "--sleep",
            "0.05",
        ],
    )?;
    let traces = dir.join("torch_profiler_output");
    let steps = optimizer_steps(&traces)?;
    if steps.is_empty() || steps.iter().any(|(_, n)| *n != 3) {
        return Err(format!("asked for 3 iterations; optimizer steps traced: {steps:?}"));
    }
    if !cpu {
        // The native summary counts those iterations as the trace's
        // steps (it holds no ProfilerStep#).
        let args = ["report", "summary", "torch_profiler_output", "-o", "summary", "--json"];
        let out = step(dir, madengine, &args)?;
        let summary: Value = parsed("summary", &out)?;
        let counted: Vec<(&Value, &Value)> = summary["traces"]
            .as_array()
            .map(|t| t.iter().map(|t| (&t["steps"], &t["steps_marked_by"])).collect())
            .unwrap_or_default();
        if counted.is_empty()
            || counted.iter().any(|c| *c != (&3.into(), &"Optimizer.step#".into()))
        {
            return Err(format!("report summary counted (steps, marker): {counted:?}"));
        }
    }
    let said = if cpu {
        "3 optimizer steps traced".to_string()
    } else {
        "3 optimizer steps traced, and counted as its steps by report summary".to_string()
    };
    if inv.tracelens_python.is_none() {
        return Ok(format!("{said}; no perf report: no TraceLens on this node"));
    }
    report(madengine, &traces, inv, "pytorch", &[("perf_report_pytorch", 1)], cpu)
        .map(|r| format!("{said}; {r}"))
}

/// `torchrun-2rank`: the 2-rank job's traces reported by TraceLens, with its collective report
/// where NCCL/RCCL ran.
fn torchrun_2rank(run: &Setting<'_>) -> Result<String, String> {
    let Setting { dir, madengine, w, inv, cpu } = *run;
    let argv = two_ranks(w, &torchrun());
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    step(dir, Path::new(&argv[0]), &args)?;
    if !gpus_for_nccl(inv) && !cpu {
        return report(madengine, dir, inv, "pytorch", &[("perf_report_pytorch", 2)], cpu)
            .map(|r| format!("{r}; no collective report (gloo: one GPU)"));
    }
    let tools = [("perf_report_pytorch", 2), ("collective", 1)];
    let said = report(madengine, dir, inv, "auto", &tools, cpu)?;
    if !cpu {
        // The native summary's collective calls (NCCL/RCCL kernels
        // with PyTorch's collective args): said, not required, as
        // only the PyTorch version decides whether it writes them.
        let out = dir.join("summary_2rank").display().to_string();
        let args =
            ["report", "summary", "torch_profiler_output", "-o", &out, "--top", "1000", "--json"];
        let json = step(dir, madengine, &args)?;
        let summary: Value = parsed("summary", &json)?;
        let calls: Vec<usize> = summary["traces"]
            .as_array()
            .map(|t| {
                t.iter().map(|t| t["top_collectives"].as_array().map_or(0, Vec::len)).collect()
            })
            .unwrap_or_default();
        return Ok(format!("{said}; report summary: collective calls per rank {calls:?}"));
    }
    Ok(said)
}

/// `slurm`: the 2-rank job submitted through SLURM, gathered and reported.
fn slurm(run: &Setting<'_>) -> Result<String, String> {
    let Setting { dir, madengine, w, inv, cpu } = *run;
    let python =
        inv.tracelens_python.as_ref().expect("planned with TraceLens").display().to_string();
    let job = two_ranks(w, &torchrun());
    let mut args = vec![
        "slurm",
        "submit",
        "--nodes",
        "1",
        "--results-dir",
        "results",
        "--wait",
        "--timeout",
        "900",
        "--json",
        "--",
    ];
    args.extend(job.iter().map(String::as_str));
    let out = step(dir, madengine, &args)?;
    let v: Value = serde_json::from_str(&out).map_err(|e| format!("{e}: {out}"))?;
    let results = v["results"].as_str().unwrap_or("").to_string();
    step(dir, madengine, &["slurm", "gather", &results, "--report", "--python", &python])?;
    let written = dir.join(&results).join("tracelens_report/tracelens_summary.json");
    let summary: Value = std::fs::read(&written)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}", written.display()))?;
    let tools = [("perf_report_pytorch", 2), ("collective", 1)];
    let rows = check_rows(&summary, &tools, cpu)?;
    Ok(format!("job {} gathered; {rows}", v["job_id"]))
}

/// `report summary --json` of the 2-rank job's traces, run in `dir`: two
/// traces, ranks 0 and 1, each with TraceLens' tables (`tables`), the 3
/// steps the profiler's schedule made active, kernels and its CSVs
/// (`csv_dir`), and a cross-rank table of both ranks with one slowest. On
/// the CPU ([`E2eArgs::cpu`]) each says it has no GPU activity, and no
/// table is made.
fn check_native(summary: &Value, dir: &Path, cpu: bool) -> Result<String, String> {
    let traces = summary["traces"].as_array().cloned().unwrap_or_default();
    let shown = || serde_json::to_string(summary).unwrap_or_default();
    let mut ranks: Vec<u64> = traces.iter().filter_map(|t| t["rank"].as_u64()).collect();
    ranks.sort_unstable();
    if ranks != [0, 1] || traces.len() != 2 {
        return Err(format!(
            "ranks {ranks:?} of {} trace(s), not 0 and 1: {}",
            traces.len(),
            shown()
        ));
    }
    let want = if cpu { "no_gpu_activity" } else { "tables" };
    let cross = summary["cross_rank"].as_array().cloned().unwrap_or_default();
    if cpu {
        if traces.iter().any(|t| t["outcome"] != want) || !cross.is_empty() {
            return Err(format!("on the CPU every trace has no GPU activity: {}", shown()));
        }
        return Ok("2 traces without GPU activity, as for CPU traces".into());
    }
    for t in &traces {
        let name = t["trace"].as_str().unwrap_or("?");
        let kernels = t["top_kernels"].as_array().map_or(0, Vec::len);
        if t["outcome"] != want || kernels == 0 {
            return Err(format!("{name}: outcome {}, {kernels} kernel(s)", t["outcome"]));
        }
        if (&t["steps"], &t["steps_marked_by"]) != (&3.into(), &"ProfilerStep#".into()) {
            return Err(format!(
                "{name}: steps {} marked by {}, not 3 ProfilerStep#",
                t["steps"], t["steps_marked_by"]
            ));
        }
        let csvs = dir.join(t["csv_dir"].as_str().unwrap_or_default());
        for table in ["gpu_timeline.csv", "kernel_summary.csv", "ops_summary.csv"] {
            if !csvs.join(table).is_file() {
                return Err(format!("{name}: no {table} in {}", csvs.display()));
            }
        }
    }
    let slowest = cross.iter().filter(|r| r["slowest"] == true).count();
    let timed = cross.iter().all(|r| r["total"].as_f64().is_some_and(|t| t > 0.0));
    if cross.len() != 2 || slowest != 1 || !timed {
        return Err(format!(
            "cross-rank table: {}",
            serde_json::to_string(&cross).unwrap_or_default()
        ));
    }
    Ok("2 ranks summarized, 3 steps each, cross-rank table".into())
}

/// `report summary --json` of a 2-rank job that profiled 2 cycles: four
/// traces with TraceLens' tables, and a cross-rank table per cycle (cycle
/// 1 of 2, then 2 of 2), each of ranks 0 and 1 with one slowest.
fn check_cycles(summary: &Value) -> Result<String, String> {
    let shown = || serde_json::to_string(summary).unwrap_or_default();
    let n = |v: &Value| v.as_u64().unwrap_or(u64::MAX);
    let traces = summary["traces"].as_array().cloned().unwrap_or_default();
    if traces.len() != 4 || traces.iter().any(|t| t["outcome"] != "tables") {
        return Err(format!("2 ranks, 2 cycles: not 4 traces with tables: {}", shown()));
    }
    // Each trace labelled with its cycle: two of each.
    let mut labels: Vec<(u64, u64)> =
        traces.iter().map(|t| (n(&t["cycle"]["number"]), n(&t["cycle"]["of"]))).collect();
    labels.sort_unstable();
    if labels != [(1, 2), (1, 2), (2, 2), (2, 2)] {
        return Err(format!("2 ranks, 2 cycles: traces labelled {labels:?}: {}", shown()));
    }
    let cross = summary["cross_rank"].as_array().cloned().unwrap_or_default();
    let seen: Vec<(u64, u64, u64, bool)> = cross
        .iter()
        .map(|r| {
            (n(&r["cycle"]["number"]), n(&r["cycle"]["of"]), n(&r["rank"]), r["slowest"] == true)
        })
        .collect();
    let cycle = |number: u64| -> Vec<(u64, bool)> {
        seen.iter().filter(|s| (s.0, s.1) == (number, 2)).map(|s| (s.2, s.3)).collect()
    };
    let good = |rows: Vec<(u64, bool)>| {
        rows.iter().map(|r| r.0).collect::<Vec<_>>() == [0, 1]
            && rows.iter().filter(|r| r.1).count() == 1
    };
    if seen.len() != 4 || !good(cycle(1)) || !good(cycle(2)) {
        return Err(format!("cross-rank tables of 2 cycles: {}", shown()));
    }
    // And the cycles side by side: a row each, per step (torch.profiler
    // marks its steps).
    let rows: Vec<(u64, bool)> = summary["cycles"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (n(&c["cycle"]["number"]), c["per_step"] == true))
        .collect();
    if rows != [(1, true), (2, true)] {
        return Err(format!("the cycles side by side: {rows:?}: {}", shown()));
    }
    Ok("2 profiling cycles, a cross-rank table each, side by side".into())
}

/// One rocprofv3 run written both as JSON and as `other`, its rocpd
/// database (`rocpd`, its default output since ROCm 7) or its Perfetto
/// trace (`pftrace`): `report summary` must read it as the JSON, the same
/// GPU records, the same `gpu_timeline.csv` and the same kernels by name
/// and launch count in `kernel_summary.csv` (the truncated names TraceLens
/// gives them), so what it reads is checked against the rocprofv3 of this
/// node. (A Perfetto trace's profiled time is the span of its slices, not
/// the process's: of its timeline, the kernel, memory and busy rows must be
/// the same.)
fn read_as_json(
    madengine: &Path,
    dir: &Path,
    workload: &str,
    other: &str,
) -> Result<String, String> {
    let args = ["--kernel-trace", "--memory-copy-trace", "--output-format", "json", other];
    let to = format!("rocprof_{other}");
    let args: Vec<&str> =
        args.into_iter().chain(["-d", &to, "--", "python3", workload, "--steps", "5"]).collect();
    step(dir, Path::new("rocprofv3"), &args)?;
    agrees_with_json(madengine, dir, &to, other)
}

/// What [`read_as_json`] checks of the outputs rocprofv3 wrote under
/// `dir/to`: one `*_results.json` and one `*_results.db` (`other` is
/// `rocpd`) or `*_results.pftrace`.
fn agrees_with_json(madengine: &Path, dir: &Path, to: &str, other: &str) -> Result<String, String> {
    let found = crate::fixtures::files_under(&dir.join(to));
    let one = |suffix: &str| -> Result<PathBuf, String> {
        match found.iter().filter(|p| p.to_string_lossy().ends_with(suffix)).collect::<Vec<_>>()[..]
        {
            [p] => Ok(p.clone()),
            ref all => {
                Err(format!("rocprofv3 wrote {} *{suffix} file(s), not 1: {all:?}", all.len()))
            }
        }
    };
    let suffix = if other == "rocpd" { "_results.db" } else { "_results.pftrace" };
    let (db, json) = (one(suffix)?, one("_results.json")?);
    let mut read = Vec::new();
    for (trace, out) in [(&db, format!("{to}_summary")), (&json, format!("{to}_json_summary"))] {
        let trace = trace.display().to_string();
        let said = step(dir, madengine, &["report", "summary", &trace, "-o", &out, "--json"])?;
        let summary: Value =
            serde_json::from_str(&said).map_err(|e| format!("summary JSON: {e}: {said}"))?;
        let written = crate::fixtures::files_under(&dir.join(out));
        let table = |name: &str| {
            written
                .iter()
                .find(|p| p.ends_with(name))
                .and_then(|p| std::fs::read_to_string(p).ok())
                .ok_or_else(|| format!("report summary {trace} wrote no {name}: {said}"))
        };
        let timeline = table("gpu_timeline.csv")?;
        // Kernels by name, with their launch counts.
        let mut kernels: Vec<(String, String)> =
            csv::Reader::from_reader(table("kernel_summary.csv")?.as_bytes())
                .records()
                .filter_map(Result::ok)
                .map(|r| (r.get(0).unwrap_or("").to_string(), r.get(1).unwrap_or("").to_string()))
                .collect();
        kernels.sort();
        read.push((summary["traces"][0]["events"].clone(), timeline, kernels));
    }
    // rocprofv3 moves the end of a kernel that overlaps the next on its
    // queue (a firmware timestamp bug) in its pftrace only: there, the
    // times agree to 1%.
    let rows = |timeline: &str| -> Vec<(String, f64)> {
        timeline
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut cells = l.split(',');
                Some((cells.next()?.to_string(), cells.next()?.parse().ok()?))
            })
            .filter(|(row, _)| {
                other == "rocpd" || ["kernel", "memory", "busy_time"].contains(&row.as_str())
            })
            .collect()
    };
    let agree = |a: f64, b: f64| match other {
        "rocpd" => a == b,
        _ => (a - b).abs() <= 0.01 * a.abs().max(b.abs()),
    };
    let (a, b) = (rows(&read[0].1), rows(&read[1].1));
    let same = read[0].0 == read[1].0
        && a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| x.0 == y.0 && agree(x.1, y.1))
        && read[0].2 == read[1].2;
    if !same {
        return Err(format!(
            "report summary of {} (records, gpu_timeline.csv, kernels and launches): {:?}; \
             of its JSON: {:?}",
            db.display(),
            read[0],
            read[1]
        ));
    }
    Ok(format!(
        "its {other} output read as its JSON ({} GPU records, {} kernels by name)",
        read[0].0,
        read[0].2.len()
    ))
}

/// `report tracelens --mode rocprof` on the rocpd database of
/// [`read_as_json`] alone (TraceLens reads it through the rocprofv3 JSON
/// madengine writes for it) and on its JSON twin alone: TraceLens' own
/// `gpu_timeline` must be the same, and its `kernel_summary` count the same
/// kernels.
fn tracelens_reads_rocpd(madengine: &Path, dir: &Path, inv: &Inventory) -> Result<String, String> {
    let python =
        inv.tracelens_python.as_ref().expect("planned only with TraceLens").display().to_string();
    let found = crate::fixtures::files_under(&dir.join("rocprof_rocpd"));
    let mut tables = Vec::new();
    for (suffix, kind) in [("_results.db", "rocpd"), ("_results.json", "rocprof_json")] {
        let trace = found
            .iter()
            .find(|p| p.to_string_lossy().ends_with(suffix))
            .ok_or_else(|| format!("no *{suffix} under rocprof_rocpd"))?;
        let root = dir.join(format!("alone_{kind}"));
        let copy = root.join(trace.file_name().unwrap_or_default());
        std::fs::create_dir_all(&root)
            .and_then(|()| std::fs::copy(trace, &copy))
            .map_err(|e| format!("copying {} to {}: {e}", trace.display(), copy.display()))?;
        let root = root.display().to_string();
        let out = format!("{root}_tracelens");
        let args =
            ["report", "tracelens", "--root", &root, "-o", &out, "--mode", "rocprof", "--json"];
        let said = step(dir, madengine, &[&args[..], &["--python", &python]].concat())?;
        let summary: Value =
            serde_json::from_str(&said).map_err(|e| format!("report JSON: {e}: {said}"))?;
        let row = &summary["results"][0];
        if summary["results"].as_array().map(Vec::len) != Some(1)
            || row["status"] != "SUCCESS"
            || row["kind"] != kind
        {
            return Err(format!("report tracelens on {} alone: {said}", copy.display()));
        }
        let report = PathBuf::from(row["output"].as_str().unwrap_or_default());
        let report = if report.is_absolute() { report } else { dir.join(&root).join(report) };
        let read = |name: &str| {
            std::fs::read_to_string(report.join(name))
                .map_err(|e| format!("{}: {e}", report.join(name).display()))
        };
        // Each kernel's name and count (the first two columns).
        let text = read("kernel_summary.csv")?;
        let mut kernels: Vec<String> = csv::Reader::from_reader(text.as_bytes())
            .records()
            .flatten()
            .map(|r| format!("{} x{}", r.get(0).unwrap_or(""), r.get(1).unwrap_or("")))
            .collect();
        kernels.sort();
        tables.push((read("gpu_timeline.csv")?, kernels));
    }
    if tables[0] != tables[1] {
        return Err(format!(
            "TraceLens' tables of the rocpd database and of its JSON differ: {:?} vs {:?}",
            tables[0], tables[1]
        ));
    }
    Ok(format!(
        "report tracelens on the rocpd database alone: TraceLens' tables are its JSON's ({} kernels)",
        tables[0].1.len()
    ))
}

/// `report summary` of the rocprofv3 traces under `dir/traces`: each
/// process that ran kernels must say the GPU it ran them on, and `n`
/// processes must have; with two or more, on distinct GPUs, in one
/// cross-GPU table. The GPUs, in order.
fn gpus_of(madengine: &Path, dir: &Path, traces: &str, n: usize) -> Result<Vec<u64>, String> {
    let out = dir.join(format!("{traces}_summary"));
    let out = out.display().to_string();
    let json = step(dir, madengine, &["report", "summary", traces, "-o", &out, "--json"])?;
    let summary: Value = parsed("summary", &json)?;
    let ran: Vec<&Value> = summary["traces"]
        .as_array()
        .map(|t| t.iter().filter(|t| t["outcome"] == "rocprofv3").collect())
        .unwrap_or_default();
    let gpus: Vec<u64> = ran.iter().filter_map(|t| t["gpu_index"].as_u64()).collect();
    if ran.len() != n || gpus.len() != n {
        return Err(format!(
            "report summary of {traces}: {} trace(s) with kernels, {} saying their GPU (gpu_index), \
             not {n}: {json}",
            ran.len(),
            gpus.len()
        ));
    }
    if n > 1 {
        let table: Vec<u64> = summary["cross_gpu"]
            .as_array()
            .map(|rows| rows.iter().filter_map(|r| r["gpu"].as_u64()).collect())
            .unwrap_or_default();
        let mut distinct = gpus.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != n || table != distinct {
            return Err(format!(
                "report summary of {traces}: GPUs {gpus:?}, cross-GPU table {table:?}: {json}"
            ));
        }
    }
    Ok(gpus)
}

/// Each trace in `dir` with the optimizer steps it holds (Kineto's
/// `Optimizer.step#...` annotations): an iteration window must hold exactly
/// its count, not Kineto's silent 500 ms fallback.
fn optimizer_steps(dir: &Path) -> Result<Vec<(String, usize)>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for path in entries.flatten().map(|e| e.path()) {
        let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let trace: Value =
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let steps = trace["traceEvents"].as_array().map_or(0, |events| {
            events
                .iter()
                .filter(|e| {
                    e["cat"] == "user_annotation"
                        && e["name"].as_str().is_some_and(|n| n.starts_with("Optimizer.step#"))
                })
                .count()
        });
        out.push((path.file_name().unwrap_or_default().to_string_lossy().into_owned(), steps));
    }
    out.sort();
    Ok(out)
}

fn which(name: &str) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the rocprof scenarios check of rocprofv3's outputs, on the
    /// public rocprofv3 trace (a real MI-series run) with the same records
    /// written as rocprofv3's rocpd database and Perfetto trace (as `cargo
    /// xtask bench` writes them), laid out as rocprofv3 lays them out: they
    /// agree, a process's GPU is found, and a database that lost a kernel
    /// is caught.
    #[test]
    fn rocprofv3_outputs_of_one_run_read_as_its_json() {
        let Some(public) = crate::public_fixtures() else {
            return;
        };
        // Trimmed to 2 MiB as `cargo xtask fixtures --gpu` trims (a debug
        // build reads it six times).
        let mut text = String::new();
        let public = std::fs::File::open(public.join("rocprofv3/tracelens/908_results.json.gz"));
        let gz = flate2::read::GzDecoder::new(public.unwrap());
        std::io::Read::read_to_string(&mut std::io::BufReader::new(gz), &mut text).unwrap();
        let json = crate::trim::trim(&text, 2 << 20).unwrap().text;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("908_results.json.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, json.as_bytes()).unwrap();
        std::fs::write(&source, gz.finish().unwrap()).unwrap();
        let records = crate::bench::Tiled::read(&source, 1).unwrap();
        let madengine = crate::built::madengine();
        for other in ["rocpd", "pftrace"] {
            // `-d rocprof_<other>`: <host>/<pid>_results.*
            let host = dir.path().join(format!("rocprof_{other}/node-1"));
            std::fs::create_dir_all(&host).unwrap();
            std::fs::write(host.join("908_results.json"), &json).unwrap();
            match other {
                "rocpd" => records.rocpd(&host.join("908_results.db")).unwrap(),
                _ => records.pftrace(&host.join("908_results.pftrace")).unwrap(),
            }
            let said = agrees_with_json(&madengine, dir.path(), &format!("rocprof_{other}"), other)
                .unwrap_or_else(|e| panic!("{other}: {e}"));
            let head = format!("its {other} output read as its JSON (");
            assert!(said.starts_with(&head) && !said.contains("(0 GPU records"), "{said}");
        }
        let gpus = gpus_of(&madengine, dir.path(), "rocprof_rocpd", 1).unwrap();
        assert_eq!(gpus.len(), 1);
        // One kernel fewer in the database: the scenario fails, saying so.
        let db = dir.path().join("rocprof_rocpd/node-1/908_results.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let table: String = conn
            .query_row(
                "SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%' AND type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute(
            &format!("DELETE FROM {table} WHERE rowid = (SELECT MAX(rowid) FROM {table})"),
            [],
        )
        .unwrap();
        drop(conn);
        let err = agrees_with_json(&madengine, dir.path(), "rocprof_rocpd", "rocpd").unwrap_err();
        assert!(err.starts_with("report summary of ") && err.contains("908_results.db"), "{err}");
        // And two databases where rocprofv3 writes one: said, not guessed.
        std::fs::copy(&db, db.with_file_name("909_results.db")).unwrap();
        let err = agrees_with_json(&madengine, dir.path(), "rocprof_rocpd", "rocpd").unwrap_err();
        assert!(err.starts_with("rocprofv3 wrote 2 *_results.db file(s), not 1"), "{err}");
    }

    #[test]
    fn a_failed_step_says_why_though_its_tail_does_not() {
        // As a worker's abort then torchrun's summary of it look.
        let script = "echo ERROR: gpuGetDeviceCount failed with code 35; \
            echo \"terminate called after throwing an instance of 'gloo::IoException'\"; \
            echo '  what():  Connection closed by peer'; \
            for i in $(seq 1 20); do echo summary line $i; done; exit 1";
        let dir = std::env::temp_dir();
        let err = step(&dir, Path::new("sh"), &["-c", script]).unwrap_err();
        assert!(
            err.contains(
                "exited Some(1): terminate called after throwing an instance of \
                 'gloo::IoException' /   what():  Connection closed by peer / ... / \
                 summary line 6 / "
            ),
            "{err}"
        );
        assert!(err.ends_with("summary line 20"), "{err}");
        let said = err.split_once("exited").unwrap().1;
        assert!(!said.contains("gpuGetDeviceCount"), "Kineto's noise is no cause: {err}");
        // Nothing above the tail: the tail alone.
        let err = step(&dir, Path::new("sh"), &["-c", "echo only; exit 2"]).unwrap_err();
        assert!(err.ends_with("exited Some(2): only"), "{err}");
    }

    #[test]
    fn the_plan_says_why_each_scenario_is_skipped() {
        let inv = Inventory::default();
        let plan = plan(&inv, false);
        let names: Vec<_> = plan.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "rocprof-json",
                "rocprof-pftrace",
                "torch-native",
                "dynolog-profile",
                "torchrun-2rank",
                "slurm"
            ]
        );
        for s in &plan {
            let why = s.runnable.as_ref().unwrap_err();
            assert!(why.starts_with("needs "), "{}: {why}", s.name);
        }
        assert!(plan[0].runnable.as_ref().unwrap_err().contains("an AMD GPU"));
        assert!(plan[5].runnable.as_ref().unwrap_err().contains("SLURM_CONF"));
    }

    #[test]
    fn dry_run_on_this_machine_runs_nothing() {
        let root = crate::project_root();
        let mut args = E2eArgs {
            dry_run: true,
            only: None,
            keep: false,
            json: true,
            python: None,
            cpu: false,
            madengine: None,
        };
        run(&root, &args).unwrap();
        // Even on a node that has everything, a dry run only plans.
        for inv in [inventory(None), full_node()] {
            let outcomes = execute(&root, &args, &inv).unwrap();
            assert_eq!(outcomes.len(), 6);
            for o in &outcomes {
                assert!(!o.ran && o.ok, "{}: {}", o.name, o.detail);
                assert!(
                    o.detail.starts_with("skipped: needs ") || o.detail.starts_with("would run: "),
                    "{}: {}",
                    o.name,
                    o.detail
                );
            }
        }
        let planned = execute(&root, &args, &full_node()).unwrap();
        assert!(planned.iter().all(|o| o.detail.starts_with("would run: ")));
        args.only = Some("torchrun-2rank".into());
        let only = execute(&root, &args, &full_node()).unwrap();
        assert_eq!(only.iter().map(|o| o.name).collect::<Vec<_>>(), ["torchrun-2rank"]);
        args.only = Some("no-such-scenario".into());
        let err = execute(&root, &args, &full_node()).err().unwrap();
        assert!(err.contains("no scenario named \"no-such-scenario\""), "{err}");
    }

    fn full_node() -> Inventory {
        Inventory {
            gpu_vendor: Some("amd".into()),
            gpus: vec!["GPU 0".into(), "GPU 1".into()],
            rocprofv3: true,
            traceconv: true,
            torch: Some(json!({"gpu": true, "count": 2})),
            dynolog: true,
            tracelens_python: Some("/opt/tl/bin/python3".into()),
            slurm_conf: Some("/etc/slurm/slurm.conf".into()),
        }
    }

    #[test]
    fn a_full_node_runs_everything() {
        let inv = full_node();
        assert!(plan(&inv, false).iter().all(|s| s.runnable.is_ok()));
        let described = inv.describe();
        assert!(described.contains("  GPUs           2 amd: GPU 0; GPU 1\n"), "{described}");
        assert!(described.contains("  PyTorch        ? (CUDA), sees 2 GPU(s)\n"), "{described}");
        assert!(described.contains("  TraceLens      /opt/tl/bin/python3\n"), "{described}");
        let bare = Inventory::default().describe();
        assert_eq!(bare.lines().count(), 7, "{bare}");
        assert!(bare.contains("  PyTorch        not importable by python3\n"), "{bare}");
    }

    #[test]
    fn optimizer_steps_are_counted_per_trace() {
        let dir = std::env::temp_dir().join(format!("xtask-e2e-steps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let step = json!({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step"});
        let other = json!({"ph": "X", "cat": "cpu_op", "name": "Optimizer.step#SGD.step"});
        let trace = |n: usize| {
            let events: Vec<Value> = [vec![step.clone(); n], vec![other.clone()]].concat();
            json!({ "traceEvents": events })
        };
        std::fs::write(dir.join("a_1.json"), trace(3).to_string()).unwrap();
        std::fs::write(dir.join("b_2.json"), trace(2).to_string()).unwrap();
        let steps = optimizer_steps(&dir).unwrap();
        assert_eq!(steps, [("a_1.json".to_string(), 3), ("b_2.json".to_string(), 2)]);
        std::fs::write(dir.join("c.json"), "{").unwrap();
        assert!(optimizer_steps(&dir).unwrap_err().contains("c.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_step_returns_stdout_alone_and_fails_with_both() {
        // A bare name as a Path is found on PATH, as the scenarios' `rocprofv3` must be.
        let sh = std::path::Path::new("sh");
        let dir = std::env::temp_dir();
        let ok = step(&dir, sh, &["-c", "echo '{\"a\": 1}'; echo '[madengine] a note' >&2"]);
        assert_eq!(ok.unwrap(), "{\"a\": 1}\n", "notes on stderr must not reach the JSON");
        let err = step(&dir, sh, &["-c", "echo partial; echo 'error: it broke' >&2; exit 3"])
            .unwrap_err();
        assert!(
            err.contains("exited Some(3)") && err.contains("partial") && err.contains("it broke"),
            "{err}"
        );
    }

    #[test]
    fn cpu_only_torch_runs_nothing_and_one_gpu_skips_slurm() {
        // TraceLens rejects CPU-only traces: every scenario would fail there.
        let mut inv = Inventory {
            torch: Some(json!({"gpu": false, "count": 0})),
            dynolog: true,
            tracelens_python: Some("/opt/tl/bin/python3".into()),
            slurm_conf: Some("/etc/slurm/slurm.conf".into()),
            ..Default::default()
        };
        for s in plan(&inv, false) {
            let why = s.runnable.unwrap_err();
            assert!(why.contains("GPU"), "{}: {why}", s.name);
        }
        // One GPU: the 2-rank job runs on gloo; the SLURM gather's collective report cannot.
        inv.torch = Some(json!({"gpu": true, "count": 1}));
        let runnable: Vec<_> =
            plan(&inv, false).into_iter().filter(|s| s.runnable.is_ok()).map(|s| s.name).collect();
        assert_eq!(runnable, ["torch-native", "dynolog-profile", "torchrun-2rank"]);
        // Without TraceLens (PyTorch and a GPU only, as on most NVIDIA
        // nodes): the native reports still run, and with dynolog the
        // capture on demand.
        let mut bare =
            Inventory { torch: Some(json!({"gpu": true, "count": 8})), ..Default::default() };
        let runnable: Vec<_> =
            plan(&bare, false).into_iter().filter(|s| s.runnable.is_ok()).map(|s| s.name).collect();
        assert_eq!(runnable, ["torch-native"]);
        bare.dynolog = true;
        let runnable: Vec<_> =
            plan(&bare, false).into_iter().filter(|s| s.runnable.is_ok()).map(|s| s.name).collect();
        assert_eq!(runnable, ["torch-native", "dynolog-profile"]);
        // A rehearsal (--cpu) runs the PyTorch scenarios without a GPU; the
        // rocprofv3 ones still need theirs.
        inv.torch = Some(json!({"gpu": false, "count": 0}));
        let rehearsed: Vec<_> =
            plan(&inv, true).into_iter().filter(|s| s.runnable.is_ok()).map(|s| s.name).collect();
        assert_eq!(rehearsed, ["torch-native", "dynolog-profile", "torchrun-2rank", "slurm"]);
        inv.torch = None;
        for s in plan(&inv, true) {
            let why = s.runnable.unwrap_err();
            assert!(why.contains("PyTorch") && !why.contains("seeing a GPU"), "{}: {why}", s.name);
        }
    }

    #[test]
    fn native_summaries_are_checked_per_rank_and_on_the_cpu_have_no_gpu_activity() {
        let dir = std::env::temp_dir().join(format!("xtask-e2e-native-{}", std::process::id()));
        let trace = |rank: u64, outcome: &str| {
            let csvs = format!("summary/rank{rank}");
            std::fs::create_dir_all(dir.join(&csvs)).unwrap();
            for table in ["gpu_timeline.csv", "kernel_summary.csv", "ops_summary.csv"] {
                std::fs::write(dir.join(&csvs).join(table), "").unwrap();
            }
            json!({"trace": format!("rank{rank}.json"), "rank": rank, "outcome": outcome,
                   "steps": 3, "steps_marked_by": "ProfilerStep#", "csv_dir": csvs,
                   "top_kernels": [{"name": "k"}]})
        };
        let row =
            |rank: u64, slowest: bool| json!({"rank": rank, "total": 1.5, "slowest": slowest});
        let gpu = json!({"traces": [trace(0, "tables"), trace(1, "tables")],
                         "cross_rank": [row(0, false), row(1, true)]});
        assert_eq!(
            check_native(&gpu, &dir, false).unwrap(),
            "2 ranks summarized, 3 steps each, cross-rank table"
        );
        let err = check_native(&gpu, &dir, true).unwrap_err();
        assert!(err.starts_with("on the CPU every trace has no GPU activity"), "{err}");
        let mut no_slowest = gpu.clone();
        no_slowest["cross_rank"][1]["slowest"] = false.into();
        assert!(
            check_native(&no_slowest, &dir, false).unwrap_err().starts_with("cross-rank table")
        );
        let mut one_step = gpu.clone();
        one_step["traces"][1]["steps"] = 1.into();
        let err = check_native(&one_step, &dir, false).unwrap_err();
        assert_eq!(err, "rank1.json: steps 1 marked by \"ProfilerStep#\", not 3 ProfilerStep#");
        std::fs::remove_file(dir.join("summary/rank1/ops_summary.csv")).unwrap();
        let err = check_native(&gpu, &dir, false).unwrap_err();
        assert!(err.starts_with("rank1.json: no ops_summary.csv in "), "{err}");
        let one_rank = json!({"traces": [trace(0, "tables")], "cross_rank": []});
        assert!(check_native(&one_rank, &dir, false).unwrap_err().starts_with("ranks [0] of 1"));
        let cpu = json!({"traces": [trace(0, "no_gpu_activity"), trace(1, "no_gpu_activity")],
                         "cross_rank": []});
        assert_eq!(
            check_native(&cpu, &dir, true).unwrap(),
            "2 traces without GPU activity, as for CPU traces"
        );
        assert!(check_native(&cpu, &dir, false).unwrap_err().starts_with("rank0.json: outcome"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn profiling_cycles_need_a_cross_rank_table_each() {
        let trace = |cycle: u64| json!({"outcome": "tables", "cycle": {"number": cycle, "of": 2}});
        let row = |cycle: u64, rank: u64, slowest: bool| json!({"cycle": {"number": cycle, "of": 2}, "rank": rank, "slowest": slowest});
        let side = |cycle: u64| json!({"cycle": {"number": cycle, "of": 2}, "per_step": true});
        let good = json!({"traces": [trace(1), trace(2), trace(1), trace(2)],
                          "cross_rank": [row(1, 0, true), row(1, 1, false),
                                         row(2, 0, false), row(2, 1, true)],
                          "cycles": [side(1), side(2)]});
        assert_eq!(
            check_cycles(&good).unwrap(),
            "2 profiling cycles, a cross-rank table each, side by side"
        );
        let mut unsided = good.clone();
        unsided["cycles"] = json!([]);
        assert!(check_cycles(&unsided).unwrap_err().starts_with("the cycles side by side"));
        // One table of all four (cycles not told apart).
        let mut one = good.clone();
        for r in one["cross_rank"].as_array_mut().unwrap() {
            r["cycle"] = Value::Null;
        }
        assert!(check_cycles(&one).unwrap_err().starts_with("cross-rank tables of 2 cycles"));
        let mut unflagged = good.clone();
        unflagged["cross_rank"][3]["slowest"] = false.into();
        assert!(check_cycles(&unflagged).is_err());
        let mut cpu = good.clone();
        cpu["traces"][2]["outcome"] = "no_gpu_activity".into();
        assert!(check_cycles(&cpu).unwrap_err().starts_with("2 ranks, 2 cycles"));
        let mut unlabelled = good.clone();
        unlabelled["traces"][3]["cycle"] = Value::Null;
        let err = check_cycles(&unlabelled).unwrap_err();
        assert!(err.starts_with("2 ranks, 2 cycles: traces labelled"), "{err}");
    }

    #[test]
    fn rows_are_checked_per_tool_and_on_the_cpu_all_skipped() {
        let row = |tool: &str, status: &str| json!({"tracelens_tool": tool, "status": status});
        let perf = "TraceLens_generate_perf_report_pytorch";
        let coll = "TraceLens_generate_multi_rank_collective_report_pytorch";
        let want = [("perf_report_pytorch", 2), ("collective", 1)];
        let gpu =
            json!({"results": [row(perf, "SUCCESS"), row(perf, "SUCCESS"), row(coll, "SUCCESS")]});
        assert_eq!(check_rows(&gpu, &want, false).unwrap(), "3 report(s)");
        let err = check_rows(&gpu, &want, true).unwrap_err();
        assert!(err.starts_with("0 SKIPPED row(s) for perf_report_pytorch, not 2"), "{err}");
        let cpu = json!({"results": [row(perf, "SKIPPED"), row(perf, "SKIPPED"), row(coll, "SKIPPED")], "repairs": [{}]});
        assert_eq!(
            check_rows(&cpu, &want, true).unwrap(),
            "3 row(s) SKIPPED, as for CPU traces, 1 trace(s) sanitized"
        );
        let one_rank = json!({"results": [row(perf, "SUCCESS"), row(coll, "SUCCESS")]});
        assert!(
            check_rows(&one_rank, &want, false)
                .unwrap_err()
                .starts_with("1 SUCCESS row(s) for perf_report_pytorch, not 2")
        );
        let failed = json!({"results": [row(perf, "SKIPPED"), row(perf, "SKIPPED"), row(coll, "SKIPPED"), row("x", "FAILURE")]});
        assert!(
            check_rows(&failed, &want, true)
                .unwrap_err()
                .starts_with("on the CPU every row is SKIPPED")
        );
    }
}
