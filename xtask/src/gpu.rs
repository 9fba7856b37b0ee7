//! `cargo xtask fixtures --gpu`: small real traces captured on this GPU node
//! with the workload `cargo xtask e2e` ships (torch.profiler in one process
//! and in two; rocprofv3 JSON on AMD), trimmed to the size cap while staying
//! valid and linked (`trim.rs`), checked with trace-summary, and written
//! under `fixtures/gpu/<vendor>-<model>/` with their provenance in
//! `fixtures/README.md`.

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde_json::Value;

use crate::{cmd::cmd, e2e, trim};

#[derive(Debug, clap::Args)]
pub(crate) struct GpuArgs {
    /// With --gpu: print what this node has and what would be captured; capture nothing.
    #[arg(long, requires = "gpu")]
    pub(crate) dry_run: bool,
    /// With --gpu: the interpreter with PyTorch [default: python3].
    #[arg(long, value_name = "PATH", requires = "gpu")]
    pub(crate) python: Option<PathBuf>,
    /// With --gpu: size cap per trace, in KiB.
    #[arg(long, default_value_t = 256)]
    pub(crate) cap_kib: usize,
}

/// The node, for the provenance line.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct Node {
    pub(crate) vendor: String,
    /// GPU model as the driver names it, e.g. `NVIDIA H200`.
    pub(crate) gpu: String,
    pub(crate) gpu_count: usize,
    pub(crate) driver: String,
    /// `CUDA 12.8` or `ROCm 6.4.1`, as PyTorch was built.
    pub(crate) runtime: String,
    pub(crate) torch: String,
    pub(crate) python: String,
}

impl Node {
    /// `nvidia-h200`, `amd-mi300x`: the fixture directory.
    pub(crate) fn slug(&self) -> String {
        let model = self.gpu.split_whitespace().last().unwrap_or("gpu").to_ascii_lowercase();
        let model: String =
            model.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        format!("{}-{model}", self.vendor)
    }
}

/// One capture and what it needs.
struct Capture {
    name: &'static str,
    what: &'static str,
    runnable: Result<(), String>,
}

fn plan(inv: &e2e::Inventory, torch_gpu: bool) -> Vec<Capture> {
    let amd = inv.gpu_vendor.as_deref() == Some("amd");
    let need = |ok: bool, what: &str| if ok { Ok(()) } else { Err(format!("needs {what}")) };
    vec![
        Capture {
            name: "single",
            what: "torch.profiler, one process: workload.py --profile-dir",
            runnable: need(torch_gpu, "PyTorch seeing a GPU"),
        },
        Capture {
            name: "ddp",
            what: "torch.profiler, two processes: torchrun --nproc-per-node 2 workload.py --distributed (NCCL/RCCL with 2+ GPUs, gloo otherwise)",
            runnable: need(torch_gpu, "PyTorch seeing a GPU"),
        },
        Capture {
            name: "rocprofv3",
            what: "rocprofv3 --kernel-trace --hip-trace --output-format json -- python workload.py",
            runnable: need(torch_gpu, "PyTorch seeing a GPU")
                .and(need(amd, "an AMD GPU"))
                .and(need(inv.rocprofv3, "rocprofv3")),
        },
    ]
}

fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let out = cmd(program, args).stderr_null().unchecked().read().ok()?;
    out.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

fn node(inv: &e2e::Inventory, torch: &Value, python: &Path) -> Node {
    let vendor = inv.gpu_vendor.clone().unwrap_or_else(|| "unknown".into());
    let (gpu, driver) = if vendor == "nvidia" {
        let q =
            first_line("nvidia-smi", &["--query-gpu=name,driver_version", "--format=csv,noheader"])
                .unwrap_or_default();
        let mut parts = q.splitn(2, ',').map(|s| s.trim().to_string());
        (parts.next().unwrap_or_default(), parts.next().unwrap_or_default())
    } else if vendor == "amd" {
        // `GPU[0] : Card Series: AMD Instinct MI300X` and the like.
        let name = inv
            .gpus
            .first()
            .and_then(|l| l.rsplit(':').next())
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let rocm = fs::read_to_string("/opt/rocm/.info/version").unwrap_or_default();
        (name, format!("ROCm {}", rocm.trim()))
    } else {
        (String::new(), String::new())
    };
    let runtime = match (torch["cuda"].as_str(), torch["hip"].as_str()) {
        (_, Some(hip)) => format!("ROCm/HIP {hip}"),
        (Some(cuda), _) => format!("CUDA {cuda}"),
        _ => "unknown".into(),
    };
    Node {
        vendor,
        gpu,
        gpu_count: torch["count"].as_u64().unwrap_or(0) as usize,
        driver,
        runtime,
        torch: torch["version"].as_str().unwrap_or("").to_string(),
        python: first_line(
            &python.display().to_string(),
            &["-c", "import platform; print(platform.python_version())"],
        )
        .unwrap_or_default(),
    }
}

fn torch_probe(python: &Path) -> Option<Value> {
    let probe = "import json, torch; print(json.dumps({'version': torch.__version__, 'gpu': torch.cuda.is_available(), \
                 'count': torch.cuda.device_count(), 'cuda': torch.version.cuda, 'hip': torch.version.hip}))";
    let out = cmd(python, ["-c", probe]).stderr_null().unchecked().read().ok()?;
    serde_json::from_str(out.lines().last()?).ok()
}

pub(crate) fn run(root: &Path, args: &GpuArgs) -> Result<(), String> {
    let python = args.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
    let inv = e2e::inventory(None);
    let torch = torch_probe(&python);
    let torch_gpu = torch.as_ref().is_some_and(|t| t["gpu"] == true);
    let captures = plan(&inv, torch_gpu);
    let node = node(&inv, torch.as_ref().unwrap_or(&Value::Null), &python);
    let dest = root.join("fixtures/gpu").join(node.slug());
    eprintln!("node: {}", serde_json::to_string(&node).unwrap_or_default());
    eprintln!(
        "torch ({}): {}",
        python.display(),
        torch.as_ref().map_or("not importable".into(), |t| t.to_string())
    );
    eprintln!("destination: {} (cap {} KiB per trace)", dest.display(), args.cap_kib);
    for c in &captures {
        match &c.runnable {
            Ok(()) => eprintln!("  capture  {:10} {}", c.name, c.what),
            Err(why) => eprintln!("  skip     {:10} {why}", c.name),
        }
    }
    if args.dry_run {
        return Ok(());
    }
    if !torch_gpu {
        return Err("no capture can run here: PyTorch does not see a GPU (see --python)".into());
    }
    let work = tempdir()?;
    let result = capture_all(root, &python, &captures, &work, args.cap_kib << 10, &node, &dest);
    let _ = fs::remove_dir_all(&work);
    result
}

fn tempdir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("madengine-gpu-fixtures.{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// A fixture written: its name under the destination and how it was made.
struct Made {
    file: String,
    bytes: usize,
    command: String,
    note: String,
}

fn capture_all(
    root: &Path,
    python: &Path,
    captures: &[Capture],
    work: &Path,
    cap: usize,
    node: &Node,
    dest: &Path,
) -> Result<(), String> {
    let workload = root.join("xtask/e2e/workload.py");
    let py = python.display().to_string();
    let wl = workload.display().to_string();
    let mut made: Vec<(Made, String)> = Vec::new();
    for c in captures.iter().filter(|c| c.runnable.is_ok()) {
        let dir = work.join(c.name);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let d = dir.display().to_string();
        let (argv, outputs): (Vec<String>, Vec<(&str, String)>) = match c.name {
            "single" => (
                vec![
                    py.clone(),
                    wl.clone(),
                    "--steps".into(),
                    "6".into(),
                    "--profile-dir".into(),
                    d.clone(),
                ],
                vec![("rank0.", "single_rank0.pt.trace.json".into())],
            ),
            "ddp" => (
                vec![
                    py.clone(),
                    "-m".into(),
                    "torch.distributed.run".into(),
                    "--standalone".into(),
                    "--nproc-per-node".into(),
                    "2".into(),
                    wl.clone(),
                    "--distributed".into(),
                    "--steps".into(),
                    "6".into(),
                    "--profile-dir".into(),
                    d.clone(),
                ],
                vec![
                    ("rank0.", "ddp_rank0.pt.trace.json".into()),
                    ("rank1.", "ddp_rank1.pt.trace.json".into()),
                ],
            ),
            _ => (
                vec![
                    "rocprofv3".into(),
                    "--kernel-trace".into(),
                    "--hip-trace".into(),
                    "--output-format".into(),
                    "json".into(),
                    "-d".into(),
                    d.clone(),
                    "-o".into(),
                    "fixture".into(),
                    "--".into(),
                    py.clone(),
                    wl.clone(),
                    "--steps".into(),
                    "3".into(),
                ],
                vec![("fixture", "rocprofv3_results.json".into())],
            ),
        };
        eprintln!("$ {}", argv.join(" "));
        let out = cmd(&argv[0], &argv[1..])
            .dir(&dir)
            .stderr_to_stdout()
            .stdout_capture()
            .unchecked()
            .run()
            .map_err(|e| format!("{}: {e}", argv[0]))?;
        if !out.status.success() {
            return Err(format!(
                "capture `{}` failed ({}):\n{}",
                c.name,
                out.status,
                tail(&String::from_utf8_lossy(&out.stdout), 40)
            ));
        }
        for (prefix, name) in outputs {
            let found = find_json(&dir, prefix).ok_or_else(|| {
                format!("capture `{}` wrote no {prefix}*.json under {}", c.name, dir.display())
            })?;
            let text =
                fs::read_to_string(&found).map_err(|e| format!("{}: {e}", found.display()))?;
            let t = trim::trim(&text, cap).map_err(|e| format!("{}: {e}", found.display()))?;
            let staged = work.join(&name);
            fs::write(&staged, &t.text).map_err(|e| format!("{}: {e}", staged.display()))?;
            let s = trace_summary::summarize_file(&staged).map_err(|e| format!("{name}: {e}"))?;
            let outcome = serde_json::to_value(s.outcome).unwrap_or_default();
            if s.gpu_events == 0 || !(outcome == "tables" || outcome == "rocprofv3") {
                return Err(format!(
                    "{name}: the trimmed trace summarizes as {outcome} with {} GPU events; not a useful fixture",
                    s.gpu_events
                ));
            }
            let note = format!(
                "{} of {} events kept ({:.0} {} window{}); trace-summary: {outcome}, {} GPU events",
                t.events_kept,
                t.events_in,
                t.window,
                if c.name == "rocprofv3" { "ns" } else { "µs" },
                if t.dropped_python { ", python_function events left out" } else { "" },
                s.gpu_events
            );
            let m = Made {
                file: name,
                bytes: t.text.len(),
                command: argv_for_readme(&argv, root, work),
                note,
            };
            made.push((m, t.text));
        }
    }
    // Only now replace the committed set: a failed capture leaves it as it was.
    let _ = fs::remove_dir_all(dest);
    fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    for (m, text) in &made {
        let path = dest.join(&m.file);
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {} ({} bytes)", path.display(), text.len());
    }
    let made: Vec<Made> = made.into_iter().map(|(m, _)| m).collect();
    let readme_path = root.join("fixtures/README.md");
    let current =
        fs::read_to_string(&readme_path).map_err(|e| format!("{}: {e}", readme_path.display()))?;
    let updated = splice(&current, &node.slug(), &section(node, &made));
    fs::write(&readme_path, updated).map_err(|e| format!("{}: {e}", readme_path.display()))
}

fn tail(s: &str, lines: usize) -> String {
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The newest `.json` under `dir` whose name starts with `prefix`.
fn find_json(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".json"))
            {
                found.push(p);
            }
        }
    }
    found.sort();
    found.pop()
}

/// The command as the README shows it: paths relative to the project, the
/// scratch directory as `$OUT`.
fn argv_for_readme(argv: &[String], root: &Path, work: &Path) -> String {
    argv.iter()
        .map(|a| {
            let a = a.replace(&root.display().to_string(), ".");
            a.replace(&work.display().to_string(), "$OUT")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn begin(slug: &str) -> String {
    format!("<!-- BEGIN gpu/{slug} (generated by `cargo xtask fixtures --gpu`) -->")
}

fn end(slug: &str) -> String {
    format!("<!-- END gpu/{slug} -->")
}

fn section(node: &Node, made: &[Made]) -> String {
    let mut s = begin(&node.slug());
    s.push_str(&format!(
        "\n### `gpu/{}/`\n\n{} x {}, driver {}, PyTorch {} ({}), Python {}; captured {} with `cargo xtask fixtures --gpu`, trimmed to the size cap by `xtask/src/trim.rs`.\n\n| file | bytes | command | kept |\n|---|---|---|---|\n",
        node.slug(),
        node.gpu_count,
        node.gpu,
        node.driver,
        node.torch,
        node.runtime,
        node.python,
        today(),
    ));
    for m in made {
        s.push_str(&format!("| `{}` | {} | `{}` | {} |\n", m.file, m.bytes, m.command, m.note));
    }
    s.push_str(&end(&node.slug()));
    s
}

fn today() -> String {
    cmd("date", ["-u", "+%Y-%m-%d"]).read().unwrap_or_default()
}

/// Put `section` in place of the slug's previous one, or at the end.
fn splice(current: &str, slug: &str, section: &str) -> String {
    let (b, e) = (begin(slug), end(slug));
    let current = current.replace(
        "None are committed so far.",
        "Each node's set is replaced as a whole when captured again.",
    );
    match (current.find(&b), current.find(&e)) {
        (Some(a), Some(z)) if a < z => {
            format!("{}{}{}", &current[..a], section, &current[z + e.len()..])
        }
        _ => format!("{}\n{section}\n", current.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_name_vendor_and_model() {
        let n = |vendor: &str, gpu: &str| {
            Node { vendor: vendor.into(), gpu: gpu.into(), ..Node::default() }.slug()
        };
        assert_eq!(n("nvidia", "NVIDIA H200"), "nvidia-h200");
        assert_eq!(n("amd", "AMD Instinct MI300X"), "amd-mi300x");
        assert_eq!(n("nvidia", "NVIDIA A100-SXM4-80GB"), "nvidia-a100-sxm4-80gb");
    }

    #[test]
    fn without_a_gpu_every_capture_says_why_and_dry_run_captures_nothing() {
        let plan = plan(&e2e::Inventory::default(), false);
        assert_eq!(plan.iter().map(|c| c.name).collect::<Vec<_>>(), ["single", "ddp", "rocprofv3"]);
        for c in &plan {
            assert!(
                c.runnable.as_ref().unwrap_err().contains("PyTorch seeing a GPU"),
                "{}",
                c.name
            );
        }
        let args = GpuArgs { dry_run: true, python: None, cap_kib: 256 };
        run(&crate::project_root(), &args).unwrap();
        let nvidia = e2e::Inventory { gpu_vendor: Some("nvidia".into()), ..Default::default() };
        let plan = super::plan(&nvidia, true);
        assert!(plan[0].runnable.is_ok() && plan[1].runnable.is_ok());
        assert!(plan[2].runnable.as_ref().unwrap_err().contains("an AMD GPU"));
    }

    #[test]
    fn readme_sections_are_replaced_not_repeated() {
        let s1 = format!("{}\nold\n{}", begin("nvidia-h200"), end("nvidia-h200"));
        let readme = format!("# Fixtures\n\nNone are committed so far.\n\n{s1}\n\nafter\n");
        let s2 = format!("{}\nnew\n{}", begin("nvidia-h200"), end("nvidia-h200"));
        let out = splice(&readme, "nvidia-h200", &s2);
        assert!(out.contains("new") && !out.contains("old") && out.contains("after"));
        assert!(!out.contains("None are committed"));
        let other = format!("{}\nmi\n{}", begin("amd-mi300x"), end("amd-mi300x"));
        let both = splice(&out, "amd-mi300x", &other);
        assert!(both.contains("new") && both.ends_with(&format!("{other}\n")));
    }
}
