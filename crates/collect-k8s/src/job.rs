//! The job file, the script bundle, and the manifests.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
    sync::LazyLock,
};

use base64::Engine;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Error, Result};

/// Which GPU resource the pods request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    /// `amd.com/gpu`.
    Amd,
    /// `nvidia.com/gpu`.
    Nvidia,
}

/// A toleration, as Kubernetes spells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Toleration {
    /// The taint key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Exists` or `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// For `NoExecute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// The job file (`madengine k8s render --config job.json`). Unknown keys are
/// an error that names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFile {
    /// Base name of every object (DNS-1123, at most 52 characters so suffixes fit).
    pub name: String,
    /// The namespace.
    pub namespace: String,
    /// The model image.
    pub image: String,
    /// Pods (one per node).
    pub nodes: u32,
    /// GPUs each pod requests.
    pub gpus_per_node: u32,
    /// `amd` or `nvidia`.
    pub gpu_vendor: GpuVendor,
    /// The workload, as an argv.
    pub command: Vec<String>,
    /// Tools to run in each pod: a tool `<scripts_dir>/tools.json` defines
    /// runs its scripts; any other must be one of madengine's built-in tools
    /// (`collect_slurm::tools::BUILTIN`: `torch_profiler_dynolog`,
    /// `rocprofv3`, `summary`, `tracelens`, ...), which need no scripts.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Where custom tools' scripts are: a `tools.json` mapping each tool to its
    /// `pre_scripts` and `post_scripts` (paths relative to this directory);
    /// it may also override a built-in tool of the same name.
    #[serde(default)]
    #[serde(serialize_with = "trace_discover::lossy::option")]
    pub scripts_dir: Option<PathBuf>,
    /// The results volume's size (e.g. `"10Gi"`).
    pub results_storage: String,
    /// The results volume's storage class (the cluster default otherwise).
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Pod node selector.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// Pod tolerations.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// Environment for the workload.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The image the init container copies `madengine` from.
    #[serde(default = "default_tools_image")]
    pub tools_image: String,
    /// The model image has `madengine` already: no init container.
    #[serde(default)]
    pub image_has_madengine: bool,
    /// The directory the workload runs in, inside the model image.
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// Tool output directories each pod copies to the results volume.
    #[serde(default = "default_collect")]
    pub collect: Vec<String>,
    /// Summarize each pod's traces in the pod (the `summary` tool) and copy
    /// its reports, not its traces (unless `gather_traces`).
    #[serde(default)]
    pub summarize_on_nodes: bool,
    /// With `summarize_on_nodes`: copy the traces too.
    #[serde(default)]
    pub gather_traces: bool,
}

fn default_tools_image() -> String {
    "ghcr.io/rocm/madengine-tools:latest".into()
}
fn default_workdir() -> String {
    "/workspace".into()
}
/// The workspace directories a job collects unless its config says otherwise.
pub const DEFAULT_COLLECT: &[&str] = &[
    "rocprof_output",
    "rpd_output",
    "rocm_trace_lite_output",
    "torch_profiler_output",
    "tracelens_output",
];

fn default_collect() -> Vec<String> {
    DEFAULT_COLLECT.iter().map(|s| s.to_string()).collect()
}

/// The ConfigMap's limit on its total size.
pub const CONFIGMAP_LIMIT: usize = 1 << 20;
/// The rendezvous port the headless Service exposes.
pub const RENDEZVOUS_PORT: u16 = 29500;

static DNS1123: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").expect("valid"));
static LABEL_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$").expect("valid"));
static CONFIGMAP_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^[-._a-zA-Z0-9]+$").expect("valid"));
static ENV_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^[-._a-zA-Z][-._a-zA-Z0-9]*$").expect("valid"));
/// Helper references in scripts: `.py` and `.sh` paths, optionally `../`-prefixed.
static REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:\.\./)*(?:[\w.-]+/)*[\w-]+\.(?:py|sh)\b").expect("valid"));

/// A DNS-1123 label: lowercase alphanumerics and `-`, at most `max` characters.
pub fn check_dns_name(what: &str, name: &str, max: usize) -> Result<()> {
    if name.len() > max || !DNS1123.is_match(name) {
        return Err(Error::Invalid(format!(
            "{what} `{name}` is not a valid Kubernetes name: lowercase letters, digits and `-`, starting and ending \
             with a letter or digit, at most {max} characters"
        )));
    }
    Ok(())
}

fn check_label_value(what: &str, value: &str) -> Result<()> {
    if value.len() > 63 || !LABEL_VALUE.is_match(value) {
        return Err(Error::Invalid(format!(
            "{what} `{value}` is not a valid label value: at most 63 characters of letters, digits, `-`, `_`, `.`, \
             starting and ending with a letter or digit"
        )));
    }
    Ok(())
}

/// The files a tool set needs, as ConfigMap entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Bundle {
    /// `(key, path relative to the scripts dir)`, sorted by path.
    pub files: Vec<(String, String)>,
    /// Pre-scripts to run, in order (relative paths).
    pub pre: Vec<String>,
    /// Post-scripts to run, in order.
    pub post: Vec<String>,
    /// key -> UTF-8 content.
    pub data: BTreeMap<String, String>,
    /// key -> base64 of non-UTF-8 content.
    pub binary_data: BTreeMap<String, String>,
    /// The built-in tools to run (those no `tools.json` defines), in order.
    pub builtin: Vec<String>,
}

/// Kubernetes' `List` of objects ([`JobFile::render_list`]): its format is
/// Kubernetes', not a madengine document (no `version` of ours).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct List {
    /// `v1`.
    pub api_version: String,
    /// `List`.
    pub kind: String,
    /// The objects, in apply order.
    pub items: Vec<Value>,
}

/// The bundle of a job without a scripts directory: every tool must be a
/// built-in one.
pub fn builtin_bundle(tools: &[String]) -> Result<Bundle> {
    let mut bundle = Bundle::default();
    for tool in tools {
        if collect_slurm::tools::builtin(tool).is_none() {
            return Err(Error::Invalid(format!(
                "unknown tool `{tool}`: the built-in tools are {}; a custom tool needs a \
                 `scripts_dir` whose tools.json defines it",
                collect_slurm::tools::builtin_names()
            )));
        }
        bundle.builtin.push(tool.clone());
    }
    Ok(bundle)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolEntry {
    #[serde(default)]
    pre_scripts: Vec<String>,
    #[serde(default)]
    post_scripts: Vec<String>,
}

/// The ConfigMap key of a relative path: `/` becomes `__` (ConfigMap keys
/// cannot hold `/`); the mount maps it back with `items[].path`.
pub fn configmap_key(path: &str) -> String {
    path.replace('/', "__")
}

fn normalize(reference: &str) -> String {
    let mut r = reference;
    while let Some(rest) = r.strip_prefix("../") {
        r = rest;
    }
    r.trim_start_matches("./").to_string()
}

/// The file `rel` names under `scripts_dir` (`root`: its canonical form),
/// when it is inside it once `..` and links are resolved: a script named
/// `/etc/passwd` or `sub/../../../etc/hostname` is refused, never read into
/// the ConfigMap.
fn inside(root: &Path, scripts_dir: &Path, rel: &str) -> Result<PathBuf> {
    let outside = || {
        Error::Invalid(format!(
            "`{rel}` is not inside the scripts directory {}: only its own files are bundled",
            scripts_dir.display()
        ))
    };
    if Path::new(rel).is_absolute() {
        return Err(outside());
    }
    let path = scripts_dir.join(rel);
    let real =
        fs::canonicalize(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
    match real.starts_with(root) {
        true => Ok(real),
        false => Err(outside()),
    }
}

/// Collect the tools' pre/post scripts from `<scripts_dir>/tools.json`, and
/// every `.py`/`.sh` helper their text (and their helpers' text) references
/// that exists under `scripts_dir`.
pub fn bundle(scripts_dir: &Path, tools: &[String]) -> Result<Bundle> {
    let tools_json = scripts_dir.join("tools.json");
    let text =
        fs::read(&tools_json).map_err(|source| Error::Io { path: tools_json.clone(), source })?;
    let known: BTreeMap<String, ToolEntry> = serde_json::from_slice(&text)
        .map_err(|e| Error::Invalid(format!("{}: {e}", tools_json.display())))?;
    let mut pre = Vec::new();
    let mut post = Vec::new();
    let mut builtin = Vec::new();
    for tool in tools {
        let Some(entry) = known.get(tool) else {
            if collect_slurm::tools::builtin(tool).is_some() {
                builtin.push(tool.clone());
                continue;
            }
            return Err(Error::Invalid(format!(
                "unknown tool `{tool}`; {} defines: {}, and the built-in tools are {}",
                tools_json.display(),
                known.keys().cloned().collect::<Vec<_>>().join(", "),
                collect_slurm::tools::builtin_names()
            )));
        };
        pre.extend(entry.pre_scripts.iter().map(|p| normalize(p)));
        post.extend(entry.post_scripts.iter().map(|p| normalize(p)));
    }
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut queue: Vec<String> = pre.iter().chain(&post).cloned().collect();
    queue.push("tools.json".into());
    let root = fs::canonicalize(scripts_dir)
        .map_err(|source| Error::Io { path: scripts_dir.to_path_buf(), source })?;
    while let Some(rel) = queue.pop() {
        if files.contains_key(&rel) {
            continue;
        }
        let path = inside(&root, scripts_dir, &rel)?;
        let bytes = fs::read(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        if rel.ends_with(".sh") || rel.ends_with(".py") {
            for m in REFERENCE.find_iter(&String::from_utf8_lossy(&bytes)) {
                let r = normalize(m.as_str());
                // An absolute path names a file of the pod's own, not a
                // helper to bundle.
                if !files.contains_key(&r) && !r.starts_with('/') && scripts_dir.join(&r).is_file()
                {
                    queue.push(r);
                }
            }
        }
        files.insert(rel, bytes);
    }
    let mut bundle = Bundle {
        files: vec![],
        pre,
        post,
        data: BTreeMap::new(),
        binary_data: BTreeMap::new(),
        builtin,
    };
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    let mut total = 0;
    for (rel, bytes) in files {
        let key = configmap_key(&rel);
        if !CONFIGMAP_KEY.is_match(&key) || key.len() > 253 {
            return Err(Error::Invalid(format!(
                "`{rel}` cannot be a ConfigMap key (`{key}`): use [-._a-zA-Z0-9] names"
            )));
        }
        if let Some(other) = keys.insert(key.clone(), rel.clone()) {
            return Err(Error::Invalid(format!(
                "`{rel}` and `{other}` would share the ConfigMap key `{key}`"
            )));
        }
        total += key.len() + bytes.len();
        match String::from_utf8(bytes) {
            Ok(text) => {
                bundle.data.insert(key.clone(), text);
            }
            Err(e) => {
                bundle.binary_data.insert(
                    key.clone(),
                    base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
                );
            }
        }
        bundle.files.push((key, rel));
    }
    if total > CONFIGMAP_LIMIT {
        return Err(Error::Invalid(format!(
            "the bundled scripts take {total} bytes; a ConfigMap holds at most {CONFIGMAP_LIMIT}"
        )));
    }
    Ok(bundle)
}

/// `value` as one shell word. A NUL byte is the one thing a shell word
/// cannot hold: `check` refuses a job file with one, and a command line shown
/// in an error keeps it as is.
pub(crate) fn q(value: &str) -> String {
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(value)
        .map_or_else(|_| value.to_string(), |q| q.into_owned())
}

impl JobFile {
    /// Read a job file; unknown keys are an error that names them.
    pub fn load(path: &Path) -> Result<JobFile> {
        let bytes =
            fs::read(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }

    fn check(&self) -> Result<()> {
        check_dns_name("name", &self.name, 52)?;
        check_dns_name("namespace", &self.namespace, 63)?;
        check_label_value("name", &self.name)?;
        if self.nodes == 0 {
            return Err(Error::Invalid("nodes must be at least 1".into()));
        }
        if self.command.is_empty() {
            return Err(Error::Invalid("command is empty".into()));
        }
        let scripted = [("workdir", std::slice::from_ref(&self.workdir))]
            .into_iter()
            .chain([("command", &self.command[..]), ("collect", &self.collect[..])]);
        for (field, values) in scripted {
            if let Some(v) = values.iter().find(|v| v.contains('\0')) {
                return Err(Error::Invalid(format!(
                    "{field} {v:?} has a NUL byte, which the pod's shell script cannot hold"
                )));
            }
        }
        if self.image.trim().is_empty() {
            return Err(Error::Invalid("image is empty".into()));
        }
        for k in self.env.keys() {
            if !ENV_NAME.is_match(k) {
                return Err(Error::Invalid(format!(
                    "`{k}` is not a valid environment variable name"
                )));
            }
        }
        for (k, v) in &self.node_selector {
            check_label_value(&format!("node_selector value of {k}"), v)?;
        }
        Ok(())
    }

    fn labels(&self) -> Value {
        json!({ "app.kubernetes.io/name": "madengine", "app.kubernetes.io/instance": self.name })
    }

    /// The pod script: pre-scripts (failures are warnings), the workload, post-scripts
    /// (warnings), then each existing tool output directory copied to `/results/<pod>/`.
    pub fn pod_script(&self, bundle: &Bundle) -> String {
        let mut s = String::from("set -u\nexport PATH=/opt/madengine/bin:$PATH\n");
        s.push_str(&format!("mkdir -p {w} && cd {w} || exit 1\n", w = q(&self.workdir)));
        if !bundle.files.is_empty() {
            // The scripts refer to each other by relative paths, as in the repository.
            s.push_str(
                "cp -rL /scripts/. . || echo \"warning: could not copy the bundled scripts\" >&2\n",
            );
        }
        for p in &bundle.pre {
            s.push_str(&format!(
                "bash {p} || echo \"warning: pre-script {p} failed ($?); continuing\" >&2\n",
                p = q(p)
            ));
        }
        let tools = collect_slurm::tools::chosen(&bundle.builtin, self.summarize_on_nodes);
        let command = collect_slurm::tools::wrapped(&tools, &self.command);
        s.push_str(&format!(
            "{}\nrc=$?\n",
            command.iter().map(|a| q(a)).collect::<Vec<_>>().join(" ")
        ));
        for p in &bundle.post {
            s.push_str(&format!(
                "bash {p} || echo \"warning: post-script {p} failed ($?); continuing\" >&2\n",
                p = q(p)
            ));
        }
        for tool in &tools {
            for line in tool.after {
                s.push_str(&format!(
                    "{line} || echo \"warning: tool {name} failed ($?); continuing\" >&2\n",
                    name = tool.name
                ));
            }
        }
        let collect = collect_slurm::tools::collected(
            &tools,
            &self.collect,
            self.summarize_on_nodes,
            self.gather_traces,
        );
        let dirs = collect.iter().map(|d| q(d)).collect::<Vec<_>>().join(" ");
        s.push_str(&format!(
            "DEST=\"/results/$HOSTNAME\"\nmkdir -p \"$DEST\"\necho \"$rc\" > \"$DEST/exit_code\"\n\
             for d in {dirs}; do\n    if [ -d \"$d\" ]; then cp -r \"$d\" \"$DEST/\" && echo \"copied $d to $DEST\"; fi\ndone\n\
             exit \"$rc\"\n"
        ));
        s
    }

    /// Every object, in apply order, as one Kubernetes `List`: what
    /// `kubectl apply -f -` reads.
    pub fn render_list(&self, bundle: &Bundle) -> Result<List> {
        Ok(List { api_version: "v1".into(), kind: "List".into(), items: self.render(bundle)? })
    }

    /// Every object, in apply order: ConfigMap, Service (more than one node),
    /// PersistentVolumeClaim, Job.
    pub fn render(&self, bundle: &Bundle) -> Result<Vec<Value>> {
        self.check()?;
        let labels = self.labels();
        let scripts = format!("{}-scripts", self.name);
        let results = format!("{}-results", self.name);
        let mut objects = Vec::new();

        let mut configmap = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": scripts, "namespace": self.namespace, "labels": labels },
            "data": bundle.data,
        });
        if !bundle.binary_data.is_empty() {
            configmap["binaryData"] = json!(bundle.binary_data);
        }
        objects.push(configmap);

        if self.nodes > 1 {
            objects.push(json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": { "name": self.name, "namespace": self.namespace, "labels": labels },
                "spec": {
                    "clusterIP": "None",
                    "selector": { "app.kubernetes.io/instance": self.name },
                    "ports": [{ "name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT }],
                    "publishNotReadyAddresses": true
                }
            }));
        }

        let mut pvc_spec = json!({
            "accessModes": ["ReadWriteMany"],
            "resources": { "requests": { "storage": self.results_storage } }
        });
        if let Some(class) = &self.storage_class {
            pvc_spec["storageClassName"] = json!(class);
        }
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": { "name": results, "namespace": self.namespace, "labels": labels },
            "spec": pvc_spec
        }));

        let gpu_resource = match self.gpu_vendor {
            GpuVendor::Amd => "amd.com/gpu",
            GpuVendor::Nvidia => "nvidia.com/gpu",
        };
        let mut env: Vec<Value> =
            self.env.iter().map(|(k, v)| json!({ "name": k, "value": v })).collect();
        env.push(json!({ "name": "NNODES", "value": self.nodes.to_string() }));
        env.push(json!({
            "name": "NODE_RANK",
            "valueFrom": { "fieldRef": { "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']" } }
        }));
        env.push(
            json!({ "name": "MASTER_ADDR", "value": format!("{}-0.{}", self.name, self.name) }),
        );
        env.push(json!({ "name": "MASTER_PORT", "value": RENDEZVOUS_PORT.to_string() }));
        let items: Vec<Value> =
            bundle.files.iter().map(|(key, path)| json!({ "key": key, "path": path })).collect();
        let mut pod_spec = json!({
            "restartPolicy": "Never",
            "subdomain": self.name,
            "containers": [{
                "name": "workload",
                "image": self.image,
                "command": ["bash", "-c", self.pod_script(bundle)],
                "workingDir": self.workdir,
                "env": env,
                "resources": { "limits": { gpu_resource: self.gpus_per_node.to_string() } },
                "volumeMounts": [
                    { "name": "scripts", "mountPath": "/scripts", "readOnly": true },
                    { "name": "results", "mountPath": "/results" },
                    { "name": "madengine", "mountPath": "/opt/madengine/bin" }
                ]
            }],
            "volumes": [
                { "name": "scripts", "configMap": { "name": scripts, "items": items, "defaultMode": 0o755 } },
                { "name": "results", "persistentVolumeClaim": { "claimName": results } },
                { "name": "madengine", "emptyDir": {} }
            ]
        });
        if !self.image_has_madengine {
            pod_spec["initContainers"] = json!([{
                "name": "madengine-tools",
                "image": self.tools_image,
                "command": ["sh", "-c", "cp \"$(command -v madengine)\" /opt/madengine/bin/madengine"],
                "volumeMounts": [{ "name": "madengine", "mountPath": "/opt/madengine/bin" }]
            }]);
        }
        if !self.node_selector.is_empty() {
            pod_spec["nodeSelector"] = json!(self.node_selector);
        }
        if !self.tolerations.is_empty() {
            pod_spec["tolerations"] = json!(self.tolerations);
        }
        objects.push(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": { "name": self.name, "namespace": self.namespace, "labels": labels },
            "spec": {
                "completionMode": "Indexed",
                "completions": self.nodes,
                "parallelism": self.nodes,
                "backoffLimit": 0,
                "template": { "metadata": { "labels": labels }, "spec": pod_spec }
            }
        }));
        Ok(objects)
    }
}
