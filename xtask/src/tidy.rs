//! Workspace shape rules (STYLE.md), checked by `cargo xtask tidy` and by
//! `cargo test` (rust-analyzer's tidy pattern).

use std::{collections::BTreeMap, fs, path::Path};

use serde_json::Value;

use crate::cmd::{cargo, cmd};

/// The declared layers, bottom first: a crate may depend only on crates
/// before it. Keep in sync with docs/ARCHITECTURE.md.
pub(crate) const LAYERS: [&str; 8] = [
    "trace-sanitize",
    "trace-discover",
    "trace-summary",
    "dynolog-client",
    "tracelens-driver",
    "collect-slurm",
    "collect-k8s",
    "madengine-cli",
];

/// Crates that depend on no workspace crate.
const LEAVES: [&str; 3] = ["trace-sanitize", "trace-discover", "dynolog-client"];

pub(crate) fn run(root: &Path) -> Result<(), String> {
    let mut problems = Vec::new();
    let metadata = metadata(root)?;
    check_layers(&metadata, &mut problems);
    check_files(root, &mut problems);
    if let Err(e) = crate::fixtures::run(root, true) {
        problems.push(e);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("tidy found {} problem(s):\n  {}", problems.len(), problems.join("\n  ")))
    }
}

fn metadata(root: &Path) -> Result<Value, String> {
    let out = cmd(cargo(), ["metadata", "--format-version", "1"])
        .dir(root)
        .read()
        .map_err(|e| format!("`cargo metadata` failed: {e}"))?;
    serde_json::from_str(&out).map_err(|e| format!("`cargo metadata` printed invalid JSON: {e}"))
}

fn check_layers(metadata: &Value, problems: &mut Vec<String>) {
    let members: Vec<&Value> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["source"].is_null())
        .collect();
    let names: Vec<&str> = members.iter().filter_map(|p| p["name"].as_str()).collect();
    for package in &members {
        let name = package["name"].as_str().unwrap_or_default();
        if name == "xtask" {
            continue;
        }
        let Some(level) = LAYERS.iter().position(|l| *l == name) else {
            problems.push(format!("crate `{name}` is not in the declared layers (xtask/src/tidy.rs, docs/ARCHITECTURE.md)"));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if !names.contains(&dep_name) {
                continue;
            }
            if dep_name == "xtask" || dep_name == "madengine-cli" {
                problems
                    .push(format!("`{name}` depends on `{dep_name}`, which nothing may depend on"));
            }
            match LAYERS.iter().position(|l| *l == dep_name) {
                Some(d) if d < level => {}
                _ => problems.push(format!(
                    "`{name}` depends on `{dep_name}`, which is not below it in the layers"
                )),
            }
            if LEAVES.contains(&name) {
                problems
                    .push(format!("leaf crate `{name}` depends on workspace crate `{dep_name}`"));
            }
            if dep["req"].as_str() == Some("*") {
                problems.push(format!("`{name}` depends on `{dep_name}` without a version"));
            }
        }
    }
    // No library reaches clap through normal dependencies.
    let resolve = &metadata["resolve"]["nodes"];
    let nodes: BTreeMap<&str, &Value> = resolve
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    for package in &members {
        let name = package["name"].as_str().unwrap_or_default();
        if name == "madengine-cli" || name == "xtask" {
            continue;
        }
        let id = package["id"].as_str().unwrap_or_default();
        if let Some(path) = reaches(&nodes, id, "clap", &mut Vec::new()) {
            problems.push(format!("library `{name}` reaches clap: {}", path.join(" -> ")));
        }
    }
}

fn reaches(
    nodes: &BTreeMap<&str, &Value>,
    id: &str,
    target: &str,
    seen: &mut Vec<String>,
) -> Option<Vec<String>> {
    if seen.iter().any(|s| s == id) {
        return None;
    }
    seen.push(id.to_string());
    let node = nodes.get(id)?;
    for dep in node["deps"].as_array().into_iter().flatten() {
        let normal = dep["dep_kinds"].as_array().into_iter().flatten().any(|k| k["kind"].is_null());
        if !normal {
            continue;
        }
        let name = dep["name"].as_str().unwrap_or_default();
        let dep_id = dep["pkg"].as_str().unwrap_or_default();
        if name == target {
            return Some(vec![name.to_string()]);
        }
        if let Some(mut path) = reaches(nodes, dep_id, target, seen) {
            path.insert(0, name.to_string());
            return Some(path);
        }
    }
    None
}

fn check_files(root: &Path, problems: &mut Vec<String>) {
    let crates = root.join("crates");
    let mut dirs: Vec<_> =
        fs::read_dir(&crates).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    dirs.sort();
    for dir in dirs.iter().chain(std::iter::once(&root.join("xtask"))) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        if dir.starts_with(&crates) && !manifest.contains(&format!("name = \"{name}\"")) {
            problems.push(format!("crates/{name}: the package name must equal the directory name"));
        }
        if !manifest.contains("[lints]\nworkspace = true") {
            problems.push(format!("{name}/Cargo.toml: needs `[lints] workspace = true`"));
        }
        if dir.starts_with(&crates) && !dir.join("README.md").is_file() {
            problems.push(format!("crates/{name}: needs a README.md"));
        }
        for top in ["src/lib.rs", "src/main.rs"] {
            if let Ok(text) = fs::read_to_string(dir.join(top)) {
                if !text.starts_with("//!") {
                    problems.push(format!("{name}/{top}: must start with `//!` crate docs"));
                }
                if top == "src/lib.rs" && text.contains("\nmod ") {
                    let has_error = rust_files(&dir.join("src"))
                        .iter()
                        .any(|f| fs::read_to_string(f).is_ok_and(|t| t.contains("pub enum Error")));
                    if !has_error {
                        problems
                            .push(format!("{name}: a library crate needs one `pub enum Error`"));
                    }
                }
            }
        }
        if let Ok(entries) = fs::read_dir(dir.join("tests")) {
            for e in entries.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if !["it", "fixtures", "snapshots"].contains(&n.as_str()) {
                    problems.push(format!(
                        "{name}/tests/{n}: integration tests live in tests/it/ only"
                    ));
                }
            }
        }
        // Libraries take their settings from the caller (STYLE.md): no
        // environment reads in their sources.
        if dir.starts_with(&crates) && name != "madengine-cli" {
            for file in rust_files(&dir.join("src")) {
                let text = fs::read_to_string(&file).unwrap_or_default();
                for line in env_reads(&text) {
                    problems.push(format!(
                        "{}:{line}: a library reads the environment; take it as an argument",
                        file.display()
                    ));
                }
            }
        }
        for file in rust_files(dir) {
            let text = fs::read_to_string(&file).unwrap_or_default();
            if text.contains(&["#[should", "_panic"].concat()) {
                problems
                    .push(format!("{}: assert on Err(..) instead of should_panic", file.display()));
            }
        }
    }
    let cli_main = fs::read_to_string(crates.join("madengine-cli/src/main.rs")).unwrap_or_default();
    if cli_main.lines().count() > 40 {
        problems
            .push("madengine-cli/src/main.rs: keep it under 40 lines (parse, run, report)".into());
    }
}

/// Lines (1-based) that read the process environment, comments aside.
fn env_reads(text: &str) -> Vec<usize> {
    let calls = ["env::var(", "env::var_os(", "env::vars(", "env::vars_os(", "env::args"];
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            calls.iter().any(|c| code.contains(c))
        })
        .map(|(i, _)| i + 1)
        .collect()
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && p.file_name().is_some_and(|n| n != "target") {
                out.extend(rust_files(&p));
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn environment_reads_are_found_outside_comments() {
        let text = "fn a() {\n    let p = std::env::var_os(\"PATH\");\n}\n// std::env::var(\"X\") in a comment\n//! env::args in docs\nlet h = env::var(\"HOME\"); // why\n";
        assert_eq!(super::env_reads(text), [2, 6]);
        assert!(super::env_reads("let p = paths.var_os;").is_empty());
    }

    #[test]
    fn tidy() {
        if let Err(e) = super::run(&crate::project_root()) {
            panic!("{e}");
        }
    }
}
