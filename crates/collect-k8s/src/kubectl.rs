//! kubectl: one helper for every invocation, and gathering through it.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    fs,
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde::Serialize;
use serde_json::json;

use crate::{Error, Result};

/// How to reach the cluster.
#[derive(Debug, Clone)]
pub struct Kubectl {
    /// The kubectl binary.
    pub program: PathBuf,
    /// `--context`, if any.
    pub context: Option<String>,
    /// `--namespace`.
    pub namespace: String,
    /// Each invocation is killed after this long.
    pub timeout: Duration,
    /// Raised by the caller (a Ctrl-C handler) to stop: the call in flight
    /// is killed, gathering stops and cleans up (the collector pod is still
    /// deleted) and returns [`Error::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Kubectl {
    /// `kubectl` from PATH, namespace `namespace`, 120 s per call.
    pub fn new(namespace: impl Into<String>) -> Kubectl {
        Kubectl {
            program: "kubectl".into(),
            context: None,
            namespace: namespace.into(),
            timeout: Duration::from_secs(120),
            cancel: None,
        }
    }

    /// Whether the caller asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Ordering::SeqCst))
    }

    fn argv(&self, args: &[&str]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![self.program.clone().into()];
        if let Some(c) = &self.context {
            argv.push(format!("--context={c}").into());
        }
        argv.push(format!("--namespace={}", self.namespace).into());
        argv.extend(args.iter().map(OsString::from));
        argv
    }

    /// Run `kubectl [--context] --namespace=NS ARGS`, with `stdin` if given;
    /// errors quote the command. A raised [`Kubectl::cancel`] kills it
    /// ([`Error::Cancelled`]).
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Result<String> {
        self.run_with(args, stdin, true)
    }

    /// The same, run to its end whatever the cancel flag says: the clean-up
    /// after an interrupt.
    fn run_to_end(&self, args: &[&str]) -> Result<String> {
        self.run_with(args, None, false)
    }

    #[allow(clippy::disallowed_methods, reason = "this is the crate's process helper")]
    fn run_with(&self, args: &[&str], stdin: Option<&[u8]>, cancellable: bool) -> Result<String> {
        let argv = self.argv(args);
        let command =
            argv.iter().map(|a| crate::job::q(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");
        let mut e = duct::cmd(&argv[0], &argv[1..]).stdout_capture().stderr_capture().unchecked();
        e = match stdin {
            Some(bytes) => e.stdin_bytes(bytes.to_vec()),
            None => e.stdin_null(),
        };
        let handle =
            e.start().map_err(|source| Error::Spawn { command: command.clone(), source })?;
        let started = Instant::now();
        let out = loop {
            match handle.try_wait() {
                Ok(Some(out)) => break out.clone(),
                Ok(None) => {}
                Err(source) => return Err(Error::Spawn { command, source }),
            }
            if started.elapsed() > self.timeout {
                stop(&handle);
                return Err(Error::Timeout { command, seconds: self.timeout.as_secs_f64() });
            }
            if cancellable && self.cancelled() {
                stop(&handle);
                return Err(Error::Cancelled { command });
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !out.status.success() {
            return Err(Error::Kubectl {
                command,
                code: out.status.code().unwrap_or(-1),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `kubectl apply -f -` of a `List` of objects.
    pub fn apply(&self, objects: &[serde_json::Value]) -> Result<String> {
        let list = json!({ "apiVersion": "v1", "kind": "List", "items": objects });
        self.run(&["apply", "-f", "-"], Some(&serde_json::to_vec(&list).expect("json")))
    }
}

/// Kill a kubectl and wait (a moment at most) until it is gone, so that no
/// `kubectl cp` still writes while what follows cleans up.
fn stop(handle: &duct::Handle) {
    let _ = handle.kill();
    let killed = Instant::now();
    while matches!(handle.try_wait(), Ok(None)) && killed.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One pod's gathered results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PodResults {
    /// The pod (its directory under `/results`).
    pub name: String,
    /// Whether it was copied now (false: already there, left untouched).
    pub copied: bool,
    /// Its workload's exit code, when it recorded one.
    pub exit_code: Option<i32>,
    /// Collected directories: name, files, bytes.
    pub collected: Vec<(String, u64, u64)>,
    /// Traces found, by kind (`pytorch`, `rocprof_json`, `pftrace`, and
    /// `rocpd` for rocprofv3's SQLite databases).
    pub traces: BTreeMap<String, usize>,
}

/// What gathering did, as written to `results_summary.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Gathered {
    /// [`collect_slurm::SUMMARY_VERSION`] (0: a file written before it had
    /// one).
    #[serde(default)]
    pub version: u32,
    /// The Job.
    pub job: String,
    /// The namespace.
    pub namespace: String,
    /// Where results went.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub results: PathBuf,
    /// One entry per pod directory found on the results volume.
    pub pods: Vec<PodResults>,
    /// What went wrong without stopping the gathering (a failed copy).
    pub problems: Vec<String>,
}

impl Gathered {
    fn empty(job: &str, namespace: &str, results: &Path) -> Gathered {
        Gathered {
            version: collect_slurm::SUMMARY_VERSION,
            job: job.to_string(),
            namespace: namespace.to_string(),
            results: results.to_path_buf(),
            pods: vec![],
            problems: vec![],
        }
    }
}

/// Copy every pod's results from the job's results claim into `results`,
/// through a short-lived collector pod (deleted afterwards, also on failure),
/// and write `results_summary.json`. Existing local directories are never
/// overwritten.
pub fn gather(
    kubectl: &Kubectl,
    job: &str,
    results: &Path,
    collector_image: &str,
) -> Result<Gathered> {
    fs::create_dir_all(results)
        .map_err(|source| Error::Io { path: results.to_path_buf(), source })?;
    let collector = format!("{job}-collector");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": collector, "namespace": kubectl.namespace, "labels": { "app.kubernetes.io/name": "madengine-collector" } },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{ "name": "collector", "image": collector_image, "command": ["sleep", "3600"],
                              "volumeMounts": [{ "name": "results", "mountPath": "/results" }] }],
            "volumes": [{ "name": "results", "persistentVolumeClaim": { "claimName": format!("{job}-results") } }]
        }
    });
    // An apply cut short may still have created the pod: delete it whatever happens.
    let outcome = kubectl
        .apply(std::slice::from_ref(&pod))
        .and_then(|_| collect(kubectl, job, &collector, results));
    // Also after a failure or an interrupt: the pod would sleep for an hour.
    let deleted =
        kubectl.run_to_end(&["delete", "pod", &collector, "--wait=false", "--ignore-not-found"]);
    let mut gathered = outcome.map_err(|e| interrupted_in(e, results))?;
    if let Err(e) = deleted {
        gathered.problems.push(format!("the collector pod {collector} could not be deleted: {e}"));
    }
    write_summary(results, &gathered)?;
    Ok(gathered)
}

/// For pods still running (or kept after completion): `kubectl cp` each tool
/// output directory straight from each pod's workspace into
/// `<results>/<pod>/<dir>`, and write `results_summary.json`. A directory a
/// pod does not have is not an error; existing local results are left alone.
pub fn gather_live(
    kubectl: &Kubectl,
    job: &str,
    results: &Path,
    workdir: &str,
    dirs: &[String],
) -> Result<Gathered> {
    fs::create_dir_all(results)
        .map_err(|source| Error::Io { path: results.to_path_buf(), source })?;
    let selector = format!("batch.kubernetes.io/job-name={job}");
    let names = kubectl
        .run(&["get", "pods", "-l", &selector, "-o", "jsonpath={.items[*].metadata.name}"], None)?;
    let mut gathered = Gathered::empty(job, &kubectl.namespace, results);
    for pod in names.split_whitespace() {
        let local = results.join(pod);
        let mut copied = false;
        for dir in dirs {
            if kubectl.cancelled() {
                return Err(Error::Interrupted { results: results.to_path_buf() });
            }
            let target = local.join(dir);
            if target.exists() {
                gathered
                    .problems
                    .push(format!("{} already exists; left untouched", target.display()));
                continue;
            }
            fs::create_dir_all(&local)
                .map_err(|source| Error::Io { path: local.clone(), source })?;
            let from =
                format!("{}/{pod}:{}/{dir}", kubectl.namespace, workdir.trim_end_matches('/'));
            // A tool the pod did not run leaves no directory: not a problem.
            match copy_in(kubectl, &from, &target) {
                Ok(()) => copied = true,
                Err(e @ Error::Cancelled { .. }) => return Err(interrupted_in(e, results)),
                Err(_) => {}
            }
        }
        gathered.pods.push(describe(pod, &local, copied));
    }
    write_summary(results, &gathered)?;
    Ok(gathered)
}

fn collect(kubectl: &Kubectl, job: &str, collector: &str, results: &Path) -> Result<Gathered> {
    kubectl.run(
        &["wait", "--for=condition=Ready", &format!("pod/{collector}"), "--timeout=120s"],
        None,
    )?;
    let listing = kubectl.run(&["exec", collector, "--", "ls", "-1", "/results"], None)?;
    let mut gathered = Gathered::empty(job, &kubectl.namespace, results);
    for name in listing.lines().map(str::trim).filter(|n| !n.is_empty() && *n != "lost+found") {
        if kubectl.cancelled() {
            return Err(Error::Interrupted { results: results.to_path_buf() });
        }
        let local = results.join(name);
        let copied = if local.exists() {
            gathered.problems.push(format!("{} already exists; left untouched", local.display()));
            false
        } else {
            let from = format!("{}/{collector}:/results/{name}", kubectl.namespace);
            match copy_in(kubectl, &from, &local) {
                Ok(()) => true,
                Err(e @ Error::Cancelled { .. }) => return Err(e),
                Err(e) => {
                    gathered.problems.push(format!("copying {name}: {e}"));
                    false
                }
            }
        };
        gathered.pods.push(describe(name, &local, copied));
    }
    Ok(gathered)
}

/// `kubectl cp FROM` into a staging directory beside `to`, renamed to `to`
/// once complete: a copy cut short (a dropped connection, an interrupt)
/// leaves nothing at `to`, so the next gather copies it again instead of
/// keeping half of it as "already there".
fn copy_in(kubectl: &Kubectl, from: &str, to: &Path) -> Result<()> {
    let parent = to.parent().unwrap_or(Path::new("."));
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.partial-"))
        .tempdir_in(parent)
        .map_err(|source| Error::Io { path: parent.to_path_buf(), source })?;
    // kubectl creates the destination; it must not exist yet.
    let inside = staging.path().join(&*name);
    kubectl.run(&["cp", from, &inside.display().to_string()], None)?;
    fs::rename(&inside, to).map_err(|source| Error::Io { path: to.to_path_buf(), source })
}

/// A kubectl call stopped on request ends the gathering: as its interrupt,
/// naming `results`.
fn interrupted_in(e: Error, results: &Path) -> Error {
    match e {
        Error::Cancelled { .. } => Error::Interrupted { results: results.to_path_buf() },
        other => other,
    }
}

fn describe(name: &str, dir: &Path, copied: bool) -> PodResults {
    let exit_code =
        fs::read_to_string(dir.join("exit_code")).ok().and_then(|t| t.trim().parse().ok());
    let mut collected = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        let mut dirs: Vec<_> =
            entries.flatten().filter(|e| e.path().is_dir()).map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let (files, bytes) = count(&d);
            collected.push((
                d.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                files,
                bytes,
            ));
        }
    }
    // rocprofv3's databases counted too (`rocpd`).
    let traces = trace_discover::discover(dir, &Default::default())
        .map(|found| found.kind_counts())
        .unwrap_or_default();
    PodResults { name: name.to_string(), copied, exit_code, collected, traces }
}

fn count(dir: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                let (f, b) = count(&e.path());
                files += f;
                bytes += b;
            } else {
                files += 1;
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    (files, bytes)
}

fn write_summary(results: &Path, gathered: &Gathered) -> Result<()> {
    let path = results.join("results_summary.json");
    let json = serde_json::to_vec_pretty(gathered).expect("json");
    trace_sanitize::write_atomic(&path, |f| f.write_all(&json))
        .map_err(|source| Error::Io { path: path.clone(), source })
}
