//! Workspace shape rules (STYLE.md), checked by `cargo xtask tidy` and by
//! `cargo test` (rust-analyzer's tidy pattern).

use std::{collections::BTreeMap, fs, path::Path};

use serde_json::Value;

use crate::cmd::{cargo, cmd};

/// The declared layers, bottom first: a crate may depend only on crates
/// before it. Keep in sync with docs/ARCHITECTURE.md.
pub(crate) const LAYERS: [&str; 9] = [
    "trace-sanitize",
    "trace-discover",
    "trace-summary",
    "trace-report",
    "dynolog-client",
    "tracelens-driver",
    "collect-slurm",
    "collect-k8s",
    "madengine-cli",
];

/// Crates that depend on no workspace crate.
const LEAVES: [&str; 3] = ["trace-sanitize", "trace-discover", "dynolog-client"];

/// Test code the test binaries share (`publish = false`): outside the
/// layers, a dev-dependency only, itself depending on no workspace crate.
const TEST_ONLY: [&str; 1] = ["test-support"];

pub(crate) fn run(root: &Path) -> Result<(), String> {
    let mut problems = Vec::new();
    let metadata = metadata(root)?;
    check_layers(&metadata, &mut problems);
    match Builds::read(root) {
        Ok(builds) => {
            check_shipped_features(&builds, &metadata, &mut problems);
            check_rust_version(&builds, &metadata, &mut problems);
        }
        Err(e) => problems.push(e),
    }
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
        if TEST_ONLY.contains(&name) {
            for dep in package["dependencies"].as_array().into_iter().flatten() {
                let dep_name = dep["name"].as_str().unwrap_or_default();
                if names.contains(&dep_name) {
                    problems.push(format!(
                        "test crate `{name}` depends on workspace crate `{dep_name}`"
                    ));
                }
            }
            if package["publish"] != serde_json::json!([]) {
                problems.push(format!("test crate `{name}` must say `publish = false`"));
            }
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
            if TEST_ONLY.contains(&dep_name) {
                if dep["kind"].as_str() != Some("dev") {
                    problems.push(format!(
                        "`{name}` depends on test crate `{dep_name}` outside [dev-dependencies]"
                    ));
                }
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

/// Features the tests build a dependency with that it lacks where a crate is
/// built alone, as users build it (`cargo install` of `madengine`, or
/// another tool depending on one library: no dev-dependencies, so no feature
/// they add), with why each makes no difference. Anything else missing fails
/// tidy: code can pass every test and still break for users (a `(?i)` regex
/// needs regex's `unicode-case`, which insta turned on for the tests only;
/// the shipped binary panicked).
const TEST_ONLY_FEATURES: [(&str, &str, &str); 11] = [
    ("getrandom", "std", "std::error::Error for its error type; tempfile only calls fill"),
    ("getrandom", "sys_rng", "a rand_core RNG type (proptest's rand); tempfile does not use it"),
    ("libc", "default", "turns on `std` alone"),
    ("libc", "std", "link attributes only; a Rust program links the C library through std anyway"),
    ("libc", "extra_traits", "Debug, Eq and Hash for libc's types, unused where they are off"),
    ("rustix", "termios", "terminal calls, which a crate that compiles without them never makes"),
    ("syn", "full", "syntax a derive parses at compile time: without it a build fails, loudly"),
    (
        "syn",
        "visit",
        "a syntax walker for derives (the workbook zip's zeroize): a build fails, loudly",
    ),
    (
        "trace-sanitize",
        "default",
        "turns on `repair` alone (below): the collectors write files, they repair no trace",
    ),
    (
        "trace-sanitize",
        "repair",
        "the sanitizer itself; collect-slurm and collect-k8s use only its atomic writer, which \
         needs none of it, and a use of more fails their build, loudly",
    ),
    (
        "simd-adler32",
        "std",
        "runtime CPU detection for miniz_oxide's checksum; flate2 reads gzip with zlib-rs instead",
    ),
];

/// The packages each build holds (`name vX.Y.Z`), with their features.
type Packages = BTreeMap<String, Vec<String>>;

/// What `cargo tree` says each build holds: the tests' (the workspace with
/// dev-dependencies) and each crate's built alone (normal dependencies).
struct Builds {
    tested: Packages,
    alone: Vec<(&'static str, Packages)>,
}

impl Builds {
    fn read(root: &Path) -> Result<Builds, String> {
        let tested = tree(root, &["--workspace", "-e", "normal,dev"])?;
        let alone = LAYERS
            .iter()
            .map(|krate| Ok((*krate, tree(root, &["-p", krate, "-e", "normal"])?)))
            .collect::<Result<_, String>>()?;
        Ok(Builds { tested, alone })
    }
}

fn tree(root: &Path, args: &[&str]) -> Result<Packages, String> {
    let mut argv = vec!["tree", "--locked", "--prefix", "none", "-f", "{p}|{f}"];
    argv.extend(args);
    let out = cmd(cargo(), &argv)
        .dir(root)
        .read()
        .map_err(|e| format!("`cargo {}` failed: {e}", argv.join(" ")))?;
    let mut features = Packages::new();
    for line in out.lines() {
        // A package seen before ends ` (*)`.
        let line = line.strip_suffix(" (*)").unwrap_or(line);
        let Some((package, list)) = line.split_once('|') else { continue };
        // `name vX.Y.Z`, then ` (path)` for a workspace crate.
        let package = package.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let set = features.entry(package).or_default();
        for f in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            if !set.iter().any(|s| s == f) {
                set.push(f.to_string());
            }
        }
    }
    Ok(features)
}

fn check_shipped_features(builds: &Builds, metadata: &Value, problems: &mut Vec<String>) {
    let tested = &builds.tested;
    // (package, feature) -> the crates that, built alone, lack it.
    let mut lacking = BTreeMap::<(String, String), Vec<&str>>::new();
    let mut used = Vec::new();
    for (krate, alone) in &builds.alone {
        for (package, features) in alone {
            let Some(in_tests) = tested.get(package) else { continue };
            let name = package.split(' ').next().unwrap_or_default();
            for missing in in_tests.iter().filter(|f| !features.contains(f)) {
                let alias = feature_alias(metadata, package, missing)
                    .is_some_and(|implied| implied.iter().all(|f| features.contains(f)));
                let allowed = TEST_ONLY_FEATURES
                    .iter()
                    .position(|&(n, f, _)| n == name && f == missing.as_str());
                used.extend(allowed);
                if !alias && allowed.is_none() {
                    lacking.entry((package.clone(), missing.clone())).or_default().push(*krate);
                }
            }
        }
    }
    for ((package, feature), crates) in lacking {
        problems.push(format!(
            "{package}: the tests build it with feature `{feature}`, which {} built alone \
             (no dev-dependencies, as users build it) lacks; turn it on in Cargo.toml's \
             [workspace.dependencies] so users run what the tests ran",
            crates.join(", ")
        ));
    }
    for (k, (name, feature, _)) in TEST_ONLY_FEATURES.iter().enumerate() {
        if !used.contains(&k) {
            problems.push(format!(
                "TEST_ONLY_FEATURES lists {name}'s `{feature}`, which no longer differs \
                 between the tests and any crate built alone: remove it"
            ));
        }
    }
}

/// That every package a build holds (the tests', or a crate's alone) builds
/// with the workspace's `rust-version`: the Rust a user is told is enough
/// must be, for `cargo install --locked` too.
fn check_rust_version(builds: &Builds, metadata: &Value, problems: &mut Vec<String>) {
    // `1.88` is `1.88.0`.
    let version = |v: &str| -> [u64; 3] {
        let mut parts = v.split('.').map(|n| n.parse().unwrap_or(0));
        [(); 3].map(|()| parts.next().unwrap_or(0))
    };
    let packages = metadata["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "madengine-cli")
        .and_then(|p| p["rust_version"].as_str())
        .unwrap_or("0");
    let built = builds.alone.iter().flat_map(|(_, b)| b.keys()).chain(builds.tested.keys());
    let mut needs = BTreeMap::new();
    for package in built {
        let Some(found) = find_package(metadata, package) else { continue };
        if let Some(theirs) = found["rust_version"].as_str()
            && version(theirs) > version(ours)
        {
            needs.insert(package.clone(), theirs.to_string());
        }
    }
    for (package, theirs) in needs {
        problems.push(format!(
            "{package} needs Rust {theirs}, but the workspace's rust-version is {ours}: \
             raise rust-version in Cargo.toml, or hold the package back in Cargo.lock"
        ));
    }
}

/// The metadata of `package` (`name vX.Y.Z`, as `cargo tree` names it).
fn find_package<'a>(metadata: &'a Value, package: &str) -> Option<&'a Value> {
    let (name, version) = package.split_once(" v")?;
    metadata["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"].as_str() == Some(name) && p["version"].as_str() == Some(version))
}

/// The features `feature` of `package` (`name vX.Y.Z`) turns on when it
/// only turns on other features of the same package (as most `default`s
/// do); `None` when it does anything else (gates code itself, or turns on a
/// dependency).
fn feature_alias(metadata: &Value, package: &str, feature: &str) -> Option<Vec<String>> {
    let found = find_package(metadata, package)?;
    let implied: Vec<String> = found["features"][feature]
        .as_array()?
        .iter()
        .map(|f| f.as_str().map(String::from))
        .collect::<Option<_>>()?;
    let local = !implied.is_empty() && implied.iter().all(|f| !f.contains(':') && !f.contains('/'));
    local.then_some(implied)
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
                // proptest keeps the failures it found beside the tests.
                if !["it", "fixtures", "snapshots", "proptest-regressions"].contains(&n.as_str()) {
                    problems.push(format!(
                        "{name}/tests/{n}: integration tests live in tests/it/ only"
                    ));
                }
            }
        }
        // Libraries take their settings from the caller (STYLE.md): no
        // environment reads in their sources.
        if dir.starts_with(&crates)
            && name != "madengine-cli"
            && !TEST_ONLY.contains(&name.as_str())
        {
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
        // (xtask's JSON is the e2e's, of the paths this node gave it.)
        let libraries_and_cli = dir.starts_with(&crates);
        for file in rust_files(&dir.join("src")).into_iter().filter(|_| libraries_and_cli) {
            let text = fs::read_to_string(&file).unwrap_or_default();
            for line in unserializable_paths(&text) {
                problems.push(format!(
                    "{}:{line}: a path in a Serialize type fails to serialize when it is not \
                     UTF-8 (a panic where the JSON is printed): `#[serde(serialize_with = ...)]` \
                     it as text, lossily",
                    file.display()
                ));
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

/// Lines (1-based) of the fields of `Serialize` types that hold a path
/// (`PathBuf`, in an `Option`, a `Vec` ...) without a `serialize_with` or
/// `skip` of their own: serde refuses a path that is not UTF-8, and a file
/// name of Latin-1 bytes would make `--json` panic. A type is the item after
/// its `#[derive(..Serialize..)]`, to its closing brace at column 0.
fn unserializable_paths(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut derived = false;
    // The indentation of the type's item while inside it, its closing brace's.
    let mut inside: Option<String> = None;
    // The attributes and docs above the next field, and how many brackets
    // an attribute over several lines still has open.
    let (mut attrs, mut open) = (String::new(), 0i32);
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        if open > 0 || code.starts_with("#[") {
            open += code.matches('[').count() as i32 - code.matches(']').count() as i32;
            if code.starts_with("#[derive(") {
                derived = code
                    .split(['(', ',', ')', ' '])
                    .any(|w| w == "Serialize" || w.ends_with("::Serialize"));
            }
            attrs.push_str(code);
            continue;
        }
        if code.starts_with("//") {
            continue;
        }
        let Some(end) = &inside else {
            if derived && (code.contains("struct ") || code.contains("enum ")) {
                if code.ends_with(';') {
                    if code.contains("PathBuf") {
                        out.push(i + 1);
                    }
                } else {
                    inside = Some(format!("{indent}}}"));
                }
            }
            if !code.is_empty() {
                derived = false;
            }
            attrs.clear();
            continue;
        };
        if line.trim_end() == end {
            inside = None;
            attrs.clear();
            continue;
        }
        let field = code.split("//").next().unwrap_or("");
        if field.contains("PathBuf")
            && !attrs.contains("serialize_with")
            && !attrs.contains("skip)")
        {
            out.push(i + 1);
        }
        attrs.clear();
    }
    out
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
    fn paths_of_serialize_types_must_say_how_they_serialize() {
        let text = "#[derive(Debug, Serialize)]\npub struct A {\n    /// Doc.\n    pub a: PathBuf,\n    #[serde(serialize_with = \"lossy::path\")]\n    pub b: PathBuf,\n    #[serde(skip)]\n    c: Option<PathBuf>,\n    d: Vec<(u32, PathBuf)>,\n}\n#[derive(Debug)]\nstruct B {\n    a: PathBuf,\n}\n#[derive(Deserialize)]\nstruct C(PathBuf);\n#[derive(serde::Serialize)]\nenum D {\n    E(PathBuf),\n}\n";
        assert_eq!(super::unserializable_paths(text), [4, 9, 19]);
        let nested = "mod tests {\n    #[derive(serde::Serialize)]\n    struct S {\n        #[serde(\n            serialize_with = \"a\",\n            default\n        )]\n        a: Option<PathBuf>,\n        b: PathBuf,\n    }\n    fn f(p: PathBuf) {}\n}\n";
        assert_eq!(super::unserializable_paths(nested), [9]);
    }

    #[test]
    fn tidy() {
        if let Err(e) = super::run(&crate::project_root()) {
            panic!("{e}");
        }
    }
}
