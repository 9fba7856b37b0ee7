//! `cargo xtask fixtures --gpu`: small real traces captured on this GPU node
//! and committed as fixtures.
//!
//! Two steps, so that a node without cargo can do the first:
//! 1. `xtask/e2e/capture_fixtures.py OUTDIR` runs the workload `cargo xtask
//!    e2e` ships under torch.profiler (one process and two) and, on AMD,
//!    rocprofv3, and writes the raw traces and `node.json` (versions,
//!    commands);
//! 2. the import trims each trace to the size cap while keeping it valid and
//!    linked (`trim.rs`), checks it still summarizes with TraceLens' tables,
//!    and only then replaces `fixtures/gpu/<vendor>-<model>/` and its
//!    provenance section in `fixtures/README.md`.
//!
//! `--from OUTDIR` runs only the import.

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde::Deserialize;

use crate::{cmd::cmd, trim};

#[derive(Debug, clap::Args)]
pub(crate) struct GpuArgs {
    /// With --gpu: print what this node has and what would be captured; capture nothing.
    #[arg(long, requires = "gpu")]
    pub(crate) dry_run: bool,
    /// With --gpu: the interpreter with PyTorch [default: python3].
    #[arg(long, value_name = "PATH", requires = "gpu")]
    pub(crate) python: Option<PathBuf>,
    /// With --gpu: import the raw traces `xtask/e2e/capture_fixtures.py DIR`
    /// wrote (on a node without cargo, say) instead of capturing.
    #[arg(long, value_name = "DIR", requires = "gpu")]
    pub(crate) from: Option<PathBuf>,
    /// With --gpu: size cap per trace, in KiB.
    #[arg(long, default_value_t = 256)]
    pub(crate) cap_kib: usize,
}

/// `node.json`, as capture_fixtures.py writes it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Node {
    pub(crate) vendor: String,
    /// GPU model as the driver names it, e.g. `NVIDIA H200`.
    pub(crate) gpu: String,
    pub(crate) gpu_count: usize,
    #[serde(default)]
    pub(crate) driver: String,
    /// `CUDA 12.8` or `ROCm/HIP 6.4`, as PyTorch was built.
    #[serde(default)]
    pub(crate) runtime: String,
    pub(crate) torch: String,
    pub(crate) python: String,
    pub(crate) date: String,
    #[serde(default)]
    pub(crate) captures: Vec<Captured>,
    #[serde(default)]
    pub(crate) skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Captured {
    pub(crate) name: String,
    pub(crate) command: String,
    /// Fixture name -> raw size in bytes.
    pub(crate) files: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Skipped {
    pub(crate) name: String,
    pub(crate) why: String,
}

impl Node {
    /// `nvidia-h200`, `amd-mi300x`: the fixture directory.
    pub(crate) fn slug(&self) -> String {
        // The first word with a digit names the model: `H100` of `NVIDIA
        // H100 80GB HBM3`, `MI300X` of `AMD Instinct MI300X`.
        let words = || self.gpu.split_whitespace();
        let model = words()
            .find(|w| w.bytes().any(|b| b.is_ascii_digit()))
            .or_else(|| words().last())
            .unwrap_or("gpu")
            .to_ascii_lowercase();
        let model: String =
            model.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        format!("{}-{model}", self.vendor)
    }
}

pub(crate) fn run(root: &Path, args: &GpuArgs) -> Result<(), String> {
    let cap = args.cap_kib << 10;
    if let Some(dir) = &args.from {
        return import(root, dir, cap);
    }
    let python = args.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
    let script = root.join("xtask/e2e/capture_fixtures.py");
    let raw = std::env::temp_dir().join(format!("madengine-gpu-fixtures.{}", std::process::id()));
    let mut argv = vec![script.display().to_string(), raw.display().to_string()];
    if args.dry_run {
        argv.push("--dry-run".into());
    }
    eprintln!("$ {} {}", python.display(), argv.join(" "));
    let status = cmd(python.as_os_str(), &argv)
        .stdout_to_stderr()
        .unchecked()
        .run()
        .map_err(|e| format!("{}: {e}", python.display()))?
        .status;
    let result = if !status.success() {
        Err(format!("{} failed ({status}); nothing was written", script.display()))
    } else if args.dry_run {
        Ok(())
    } else {
        import(root, &raw, cap)
    };
    let _ = fs::remove_dir_all(&raw);
    result
}

/// A fixture ready to be written.
struct Made {
    file: String,
    text: String,
    command: String,
    note: String,
}

/// Trim, check and write the raw traces in `dir` (capture_fixtures.py's
/// output) under `root/fixtures/gpu/<slug>/`, with their provenance.
pub(crate) fn import(root: &Path, dir: &Path, cap: usize) -> Result<(), String> {
    let node_path = dir.join("node.json");
    let node: Node = serde_json::from_str(
        &fs::read_to_string(&node_path).map_err(|e| format!("{}: {e}", node_path.display()))?,
    )
    .map_err(|e| format!("{}: {e}", node_path.display()))?;
    if node.captures.is_empty() {
        return Err(format!("{}: no capture to import", node_path.display()));
    }
    let scratch = std::env::temp_dir().join(format!("madengine-gpu-check.{}", std::process::id()));
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let made = check_all(&node, dir, cap, &scratch);
    let _ = fs::remove_dir_all(&scratch);
    let made = made?;
    // Only now replace the committed set: a failure above leaves it as it was.
    let dest = root.join("fixtures/gpu").join(node.slug());
    let _ = fs::remove_dir_all(&dest);
    fs::create_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    for m in &made {
        let path = dest.join(&m.file);
        fs::write(&path, &m.text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {} ({} bytes; {})", path.display(), m.text.len(), m.note);
    }
    let readme_path = root.join("fixtures/README.md");
    let current =
        fs::read_to_string(&readme_path).map_err(|e| format!("{}: {e}", readme_path.display()))?;
    let updated = splice(&current, &node.slug(), &section(&node, &made));
    fs::write(&readme_path, updated).map_err(|e| format!("{}: {e}", readme_path.display()))
}

fn check_all(node: &Node, dir: &Path, cap: usize, scratch: &Path) -> Result<Vec<Made>, String> {
    let mut made = Vec::new();
    for c in &node.captures {
        for name in c.files.keys() {
            let raw = dir.join(name);
            let text = fs::read_to_string(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
            let t = trim::trim(&text, cap).map_err(|e| format!("{}: {e}", raw.display()))?;
            let staged = scratch.join(name);
            fs::write(&staged, &t.text).map_err(|e| format!("{}: {e}", staged.display()))?;
            let s = trace_summary::summarize_file(&staged)
                .map_err(|e| format!("{name}: {}", trace_summary::one_line(&e)))?;
            let outcome = serde_json::to_value(s.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            if s.gpu_events == 0 || !(outcome == "tables" || outcome == "rocprofv3") {
                return Err(format!(
                    "{name}: trimmed, it summarizes as {outcome} with {} GPU events: not a useful fixture",
                    s.gpu_events
                ));
            }
            let note = format!(
                "{} of {} events ({:.0} {} window{}); {outcome}, {} GPU events",
                t.events_kept,
                t.events_in,
                t.window,
                if c.name == "rocprofv3" { "ns" } else { "µs" },
                if t.dropped_python { ", python_function left out" } else { "" },
                s.gpu_events
            );
            made.push(Made { file: name.clone(), text: t.text, command: c.command.clone(), note });
        }
    }
    Ok(made)
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
        "\n### `gpu/{}/`\n\n{} x {}, driver {}, PyTorch {} ({}), Python {}; captured {} by \
         `cargo xtask fixtures --gpu` (`$DIR` is a scratch directory), trimmed to the size cap by \
         `xtask/src/trim.rs`.\n\n| file | bytes | command | kept |\n|---|---|---|---|\n",
        node.slug(),
        node.gpu_count,
        node.gpu,
        if node.driver.is_empty() { "unknown" } else { &node.driver },
        node.torch,
        node.runtime,
        node.python,
        node.date,
    ));
    for m in made {
        s.push_str(&format!(
            "| `{}` | {} | `{}` | {} |\n",
            m.file,
            m.text.len(),
            m.command,
            m.note
        ));
    }
    for k in &node.skipped {
        s.push_str(&format!("| ({}: not captured) | | | {} |\n", k.name, k.why));
    }
    s.push_str(&end(&node.slug()));
    s
}

/// Put `section` in place of the slug's previous one, or at the end.
fn splice(current: &str, slug: &str, section: &str) -> String {
    let (b, e) = (begin(slug), end(slug));
    let current = current.replace("None are committed so far.", "");
    match (current.find(&b), current.find(&e)) {
        (Some(a), Some(z)) if a < z => {
            format!("{}{}{}", &current[..a], section, &current[z + e.len()..])
        }
        _ => format!("{}\n\n{section}\n", current.trim_end()),
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
        assert_eq!(n("nvidia", "NVIDIA H100 80GB HBM3"), "nvidia-h100");
        assert_eq!(n("amd", ""), "amd-gpu");
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

    /// A dry run captures nothing and says why each capture is skipped:
    /// on a machine where PyTorch sees no GPU (CI), all of them for that;
    /// on a GPU node, the two torch.profiler captures run.
    #[test]
    fn dry_run_here_says_why_each_capture_is_skipped() {
        let root = crate::project_root();
        // With a real PyTorch where the tests have one (.ci/run installs it).
        let torch = std::env::var_os("MADENGINE_TORCH_PYTHON").filter(|p| !p.is_empty());
        assert!(
            torch.is_some() || std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but MADENGINE_TORCH_PYTHON is unset"
        );
        let python = torch.clone().unwrap_or_else(|| "python3".into());
        let out = cmd(
            &python,
            [
                root.join("xtask/e2e/capture_fixtures.py").display().to_string(),
                "/nonexistent/never-written".into(),
                "--dry-run".into(),
            ],
        )
        .stderr_null()
        .read()
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let plan = v["plan"].as_array().unwrap();
        let names: Vec<&str> = plan.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["single", "ddp", "rocprofv3"]);
        let gpu = v["node"]["torch_gpu"].as_bool().expect("the node says whether torch sees a GPU");
        if torch.is_some() {
            let version = v["node"]["torch"].as_str().unwrap_or_default();
            assert!(version.starts_with("2.") && v["node"].get("torch_error").is_none(), "{v}");
        }
        for c in plan {
            match (gpu, c["skip"].as_str()) {
                (false, Some(why)) => assert!(why.contains("PyTorch seeing a GPU"), "{why}"),
                (true, None) => assert_ne!(c["name"], "rocprofv3", "{v}"),
                (true, Some(why)) => {
                    assert_eq!(c["name"], "rocprofv3", "{why}");
                    assert!(why.contains("AMD") || why.contains("rocprofv3"), "{why}");
                }
                (false, None) => panic!("{c}: runnable without a GPU"),
            }
        }
        assert!(plan[1]["command"].as_str().unwrap().contains("torch.distributed.run"));
        assert!(!Path::new("/nonexistent/never-written").exists());
        if gpu {
            return; // a real capture is not a unit test
        }
        // And without --dry-run it refuses with status 2, writing nothing.
        let status = cmd(
            &python,
            [
                root.join("xtask/e2e/capture_fixtures.py").display().to_string(),
                "/nonexistent/x".into(),
            ],
        )
        .stderr_null()
        .stdout_null()
        .unchecked()
        .run()
        .unwrap()
        .status;
        assert_eq!(status.code(), Some(2));
    }

    /// The import on a raw directory shaped like the capture script's
    /// output, from a real public H100 trace: trimmed, checked, written with
    /// its provenance; a raw trace that cannot give tables writes nothing.
    #[test]
    fn import_trims_checks_and_records_provenance() {
        let Some(public) = crate::public_fixtures() else {
            return;
        };
        let base = std::env::temp_dir().join(format!("xtask-gpu-import-{}", std::process::id()));
        let (raw, root) = (base.join("raw"), base.join("root"));
        fs::create_dir_all(&raw).unwrap();
        fs::create_dir_all(root.join("fixtures")).unwrap();
        fs::write(
            root.join("fixtures/README.md"),
            "# Fixtures\n\n## `gpu/`\n\nNone are committed so far.\n",
        )
        .unwrap();
        let mut text = String::new();
        let f = fs::File::open(
            public.join("kineto/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        )
        .unwrap();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text).unwrap();
        fs::write(raw.join("single.pt.trace.json"), &text).unwrap();
        let node = serde_json::json!({
            "vendor": "nvidia", "gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "driver": "570.1",
            "runtime": "CUDA 12.8", "torch": "2.11.0", "python": "3.12.3", "date": "2026-11-30",
            "captures": [{"name": "single", "command": "python3 xtask/e2e/workload.py --steps 6 --profile-dir $DIR",
                          "files": {"single.pt.trace.json": text.len()}}],
            "skipped": [{"name": "rocprofv3", "why": "needs an AMD GPU"}]
        });
        fs::write(raw.join("node.json"), node.to_string()).unwrap();
        import(&root, &raw, 64 << 10).unwrap();
        let written = root.join("fixtures/gpu/nvidia-h100/single.pt.trace.json");
        let len = fs::metadata(&written).unwrap().len();
        assert!(len > 0 && len <= 64 << 10, "{len}");
        let readme = fs::read_to_string(root.join("fixtures/README.md")).unwrap();
        assert!(readme.contains("### `gpu/nvidia-h100/`"), "{readme}");
        assert!(
            readme.contains("1 x NVIDIA H100 80GB HBM3, driver 570.1, PyTorch 2.11.0 (CUDA 12.8)")
        );
        assert!(readme.contains(&format!("| `single.pt.trace.json` | {len} |")), "{readme}");
        assert!(readme.contains("(rocprofv3: not captured)"));
        assert!(!readme.contains("None are committed"));

        // A CPU-only trace cannot be a GPU fixture: nothing changes.
        let cpu = public.join("kineto/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
        let mut cpu_text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(fs::File::open(cpu).unwrap()),
            &mut cpu_text,
        )
        .unwrap();
        fs::write(raw.join("single.pt.trace.json"), &cpu_text).unwrap();
        let err = import(&root, &raw, 64 << 10).unwrap_err();
        assert!(err.contains("not a useful fixture"), "{err}");
        assert_eq!(fs::metadata(&written).unwrap().len(), len, "the committed set stays");
        fs::remove_dir_all(&base).unwrap();
    }
}
