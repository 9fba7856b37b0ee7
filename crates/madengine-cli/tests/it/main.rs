//! End-to-end tests of the `madengine` binary: one happy path per
//! subcommand, `--help`, and one failure per exit-code class. Everything
//! else is tested at the library layer.
#![allow(clippy::print_stderr, reason = "tests say what they skipped")]

mod diff;
mod dynolog;
mod dynolog_faults;
mod gpu;
mod hostile;
mod k8s;
mod library;
mod pytorch;
mod report;
mod slurm;
mod trace;

pub(crate) use test_support::rocprof::{
    rocprof_process, write_rocprof_process, write_rocprof_processes,
};
use test_support::{edit, public as public_dir, required, standin};

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// The binary under test: `$MADENGINE_TEST_BINARY` where set (`cargo xtask
/// ci` points it at the release build of `madengine-cli` alone, what
/// `cargo install` makes: no dev-dependency turns a feature on in it), else
/// the one cargo built for these tests.
pub(crate) fn binary() -> PathBuf {
    match std::env::var_os("MADENGINE_TEST_BINARY") {
        Some(binary) => PathBuf::from(binary),
        None => PathBuf::from(env!("CARGO_BIN_EXE_madengine")),
    }
}

/// Run `madengine` in `dir` and snapshot its exit code, stdout and stderr
/// together, with temp paths filtered.
#[macro_export]
macro_rules! cli_snapshot {
    ($dir:expr, env = $env:expr, [$($arg:expr),* $(,)?], @$snapshot:literal) => {{
        let (text, filters) = $crate::run_cli($dir, &[$(AsRef::<std::ffi::OsStr>::as_ref(&$arg)),*], $env);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        insta::with_settings!({ filters => filters }, { insta::assert_snapshot!(text, @$snapshot) });
    }};
    ($dir:expr, env = $env:expr, [$($arg:expr),* $(,)?]) => {{
        let (text, filters) = $crate::run_cli($dir, &[$(AsRef::<std::ffi::OsStr>::as_ref(&$arg)),*], $env);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        insta::with_settings!({ filters => filters }, { insta::assert_snapshot!(text) });
    }};
    ($dir:expr, [$($arg:expr),* $(,)?], @$snapshot:literal) => {{
        let (text, filters) = $crate::run_cli($dir, &[$(AsRef::<std::ffi::OsStr>::as_ref(&$arg)),*], &[]);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        insta::with_settings!({ filters => filters }, { insta::assert_snapshot!(text, @$snapshot) });
    }};
    ($dir:expr, [$($arg:expr),* $(,)?]) => {{
        let (text, filters) = $crate::run_cli($dir, &[$(AsRef::<std::ffi::OsStr>::as_ref(&$arg)),*], &[]);
        let filters: Vec<(&str, &str)> = filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        insta::with_settings!({ filters => filters }, { insta::assert_snapshot!(text) });
    }};
}

/// The original madengine's variables `report tracelens` takes its defaults
/// from.
pub(crate) const TRACELENS_DEFAULTS: [&str; 5] = [
    "TRACELENS_OUTPUT_DIR",
    "TRACELENS_MODE",
    "TRACELENS_GPU_ARCH",
    "TRACELENS_WORLD_SIZE",
    "TRACELENS_MAX_TRACES",
];

/// Every variable of the original's that a command here takes a default
/// from, removed for the tests: one left in the environment that runs them
/// would change their runs.
pub(crate) const ORIGINAL_VARIABLES: [&str; 7] = [
    "TRACELENS_OUTPUT_DIR",
    "TRACELENS_MODE",
    "TRACELENS_GPU_ARCH",
    "TRACELENS_WORLD_SIZE",
    "TRACELENS_MAX_TRACES",
    "TRACELENS_PIP_SPEC",
    "TRACELENS_GIT_REF",
];

pub(crate) fn run_cli(
    dir: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, std::ffi::OsString)],
) -> (String, Vec<(String, String)>) {
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let mut command = Command::new(crate::binary());
    for key in ORIGINAL_VARIABLES {
        command.env_remove(key);
    }
    let output = command
        .args(args)
        .current_dir(dir)
        .env_remove("TRACELENS_VENV")
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("madengine runs");
    let text = format!(
        "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        output.status.code().map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let filters = vec![
        (regex_escape(&dir.display().to_string()), "[DIR]".to_string()),
        (r"/tmp/\.tmp[A-Za-z0-9]+".to_string(), "[TMP]".to_string()),
        (r"madengine \d+\.\d+\.\d+".to_string(), "madengine [VERSION]".to_string()),
        (
            regex_escape(&standin::standin().scripts.parent().unwrap().display().to_string()),
            "[STANDIN]".to_string(),
        ),
        (r"/tmp/madengine-tracelens-[A-Za-z0-9]+".to_string(), "[SCRATCH]".to_string()),
        (r" in \d+\.\d s;".to_string(), " in [TIME] s;".to_string()),
        (r"lib/python3\.\d+/".to_string(), "lib/python3.X/".to_string()),
        (r#""(seconds|\w+_s)": [0-9.e-]+"#.to_string(), r#""$1": "[TIME]""#.to_string()),
        (
            r#""tracelens_version": "[^"]*""#.to_string(),
            r#""tracelens_version": "[VERSION]""#.to_string(),
        ),
    ];
    (text, filters)
}

pub(crate) use test_support::names_in;

/// The shape of the `--json` document a command printed (its stdout, or
/// [`run_cli`]'s text): each key's path with the JSON types its values
/// took (an array's items as `[]`), one line each, sorted;
/// a snapshot of it changes when a key is added, renamed or removed. It
/// checks what every document holds first: one object with one `version`
/// key at its top.
pub(crate) fn json_shape(text: &str) -> String {
    let stdout = match text.split_once("----- stdout -----\n") {
        Some((_, rest)) => rest.split("----- stderr -----").next().unwrap_or_default(),
        None => text,
    };
    // Top-level keys, and only they, are indented by two spaces.
    let versions = stdout.matches("\n  \"version\": ").count();
    assert!(stdout.starts_with('{') && versions == 1, "{versions} versions at the top:\n{stdout}");
    let mut shapes: Vec<(String, Vec<&'static str>)> = Vec::new();
    let value: serde_json::Value = serde_json::from_str(stdout).unwrap();
    shape_of(&value, String::new(), &mut shapes);
    shapes.sort();
    shapes.iter().map(|(path, types)| format!("{path}: {}\n", types.join(" | "))).collect()
}

fn shape_of(
    value: &serde_json::Value,
    path: String,
    shapes: &mut Vec<(String, Vec<&'static str>)>,
) {
    use serde_json::Value;
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if !path.is_empty() {
        match shapes.iter_mut().find(|(p, _)| *p == path) {
            Some((_, kinds)) if !kinds.contains(&kind) => kinds.push(kind),
            Some(_) => {}
            None => shapes.push((path.clone(), vec![kind])),
        }
    }
    match value {
        Value::Array(items) => items.iter().for_each(|v| shape_of(v, format!("{path}[]"), shapes)),
        // A document within (a run summary): its own snapshot keeps it.
        Value::Object(map) if !path.is_empty() && map.contains_key("version") => {
            shapes.last_mut().unwrap().1 = vec!["versioned document"];
        }
        Value::Object(map) => {
            let dot = if path.is_empty() { "" } else { "." };
            map.iter().for_each(|(k, v)| shape_of(v, format!("{path}{dot}{k}"), shapes))
        }
        _ => {}
    }
}

/// Read the `--json` document `json` (or the part of it under `key`) back
/// with the library type `T` that owns its format, and check that `T`
/// writes what was read as it was printed: every key `T` writes, with the
/// same value (the keys the CLI adds around it, `version` among them, are
/// not `T`'s); and that it is what docs/schemas/`schema`.schema.json says
/// ([`conforms`]).
pub(crate) fn reads_back<T: serde::Serialize + serde::de::DeserializeOwned>(
    json: &serde_json::Value,
    schema: &str,
) -> T {
    conforms(json, schema);
    let read: T = serde_json::from_value(json.clone()).unwrap_or_else(|e| {
        panic!("{} cannot read it back ({e}):\n{json:#}", std::any::type_name::<T>())
    });
    let written = serde_json::to_value(&read).unwrap();
    let written = written.as_object().expect("a document is an object");
    assert!(!written.is_empty());
    for (key, value) in written {
        assert_eq!(Some(value), json.get(key), "{key} of {}", std::any::type_name::<T>());
    }
    read
}

/// Check `json` against the JSON Schema docs/schemas/`stem`.schema.json
/// (`cargo xtask codegen` makes them from the library types) with Python's
/// `jsonschema`, the reference validator, naming each place it breaks it.
pub(crate) fn conforms(json: &serde_json::Value, stem: &str) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(format!("{stem}.schema.json"));
    let Some(python) = jsonschema() else {
        test_support::skip::missing(
            "Python's jsonschema (the documents' check against docs/schemas/)",
            "apt install python3-jsonschema, or pip install jsonschema",
        );
        return;
    };
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        errors = jsonschema.Draft202012Validator(schema).iter_errors(json.load(sys.stdin))\n\
        broken = ['  at /' + '/'.join(map(str, e.absolute_path)) + ': ' + e.message for e in errors]\n\
        print('\\n'.join(broken))\n\
        sys.exit(1 if broken else 0)";
    #[allow(clippy::disallowed_methods, reason = "the validator is Python's")]
    let mut child = Command::new(python)
        .args(["-c", script])
        .arg(&schema)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    serde_json::to_writer(stdin, json).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the document breaks {}:\n{}{}\n{json:#}",
        schema.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Python that imports jsonschema, if this machine has one.
fn jsonschema() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        ["python3", "/usr/bin/python3"].into_iter().find(|python| {
            #[allow(clippy::disallowed_methods, reason = "a probe of the machine's Python")]
            let probe = Command::new(python).args(["-c", "import jsonschema"]).output();
            probe.is_ok_and(|o| o.status.success())
        })
    })
}

/// The JSON a command printed, from [`run_cli`]'s text.
pub(crate) fn stdout_json(text: &str) -> serde_json::Value {
    let stdout = text.split("----- stdout -----\n").nth(1).expect("a stdout section");
    let stdout = stdout.split("----- stderr -----").next().unwrap_or_default();
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{text}"))
}

fn regex_escape(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// Run `program` in `dir`: its exit code, stdout and stderr.
#[allow(clippy::disallowed_methods, reason = "tests run the real binary and python")]
pub(crate) fn run(
    dir: &Path,
    program: &Path,
    args: &[std::ffi::OsString],
) -> (i32, String, String) {
    let mut command = Command::new(program);
    for key in ORIGINAL_VARIABLES {
        command.env_remove(key);
    }
    let out = command
        .args(args)
        .current_dir(dir)
        .env_remove("KINETO_USE_DAEMON")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Start `madengine args` in `dir` with `env`, wait for the first line it
/// writes to stderr, press Ctrl-C (SIGINT), and wait for it to end: its exit
/// code, that first line, and the rest of its stderr.
#[allow(clippy::disallowed_methods, reason = "tests run the real binary and kill(1)")]
pub(crate) fn interrupt_after_first_line(
    dir: &Path,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> (Option<i32>, String, String) {
    use std::io::{BufRead, Read};
    let mut child = Command::new(crate::binary())
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    (status.code(), first, rest)
}

/// Run `madengine` in `dir`: its exit code, stdout and stderr.
pub(crate) fn madengine(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let args: Vec<std::ffi::OsString> = args.iter().map(std::ffi::OsString::from).collect();
    run(dir, &crate::binary(), &args)
}

pub(crate) fn synthetic() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic")
}

/// The pids of `parent`'s children whose command line contains `needle`
/// (any child for ""), from /proc.
pub(crate) fn children(parent: u32, needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            dynolog_client::proc_stat(*pid).is_some_and(|(_, ppid)| ppid == parent)
                && String::from_utf8_lossy(&cmdline).contains(needle)
        })
        .collect()
}
