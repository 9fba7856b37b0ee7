//! Classification of one path: by name (the original's glob patterns) and by content.

use std::{
    ffi::OsStr,
    fs::File,
    io::{self, Read},
    path::Path,
};

use flate2::read::MultiGzDecoder;
use memchr::memmem;
use serde::Serialize;

/// The kinds of trace TraceLens can read.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// Kineto / PyTorch profiler Chrome-trace JSON (`.json` or `.json.gz`).
    Pytorch,
    /// rocprofv3 (rocprofiler-sdk) JSON.
    RocprofJson,
    /// Perfetto protobuf (rocprofv3 `--output-format pftrace`).
    Pftrace,
}

impl TraceKind {
    /// The name used in summaries: `pytorch`, `rocprof_json`, `pftrace`.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceKind::Pytorch => "pytorch",
            TraceKind::RocprofJson => "rocprof_json",
            TraceKind::Pftrace => "pftrace",
        }
    }
}

impl std::fmt::Display for TraceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a trace was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// Its name matched one of the original's patterns.
    Name,
    /// Its content showed the format (`"traceEvents"` or `"rocprofiler-sdk-tool"`
    /// near the start).
    Content,
}

/// Formats TraceLens cannot read, with what to do instead (text as the
/// original's; the rocprofv3 CSV one is ours).
pub(crate) const UNSUPPORTED: [(&str, &str); 8] = [
    (
        "_results.db",
        "rocprofv3 SQLite output is not readable by TraceLens itself; the auto and rocprof modes \
         convert it to rocprofv3 JSON for TraceLens' rocprof report, and the native summary and \
         diff read it as it is",
    ),
    (
        ROCPROF_CSV,
        "rocprofv3 CSV output is not readable by TraceLens; re-run rocprofv3 with \
         --output-format json (or pftrace), which madengine and TraceLens read",
    ),
    (
        ".rpd",
        "RPD databases are not readable by TraceLens; the rpd post-script also writes a converted \
         trace.json alongside it; point TraceLens at that",
    ),
    (
        ".pb",
        "JAX XPlane protobuf traces need TraceLens_generate_perf_report_jax, which madengine does \
         not drive yet",
    ),
    (
        ".json.zst",
        "zstd-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it \
         (zstd -d) or compress it with gzip instead",
    ),
    (
        ".json.xz",
        "xz-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it \
         (xz -d) or compress it with gzip instead",
    ),
    (
        ".json.bz2",
        "bzip2-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it \
         (bunzip2) or compress it with gzip instead",
    ),
    (".json.zip", "a zip archive: madengine and TraceLens read .json and .json.gz; unzip it"),
];

/// The kernel table of rocprofv3's CSV output, one per process
/// (`<pid>_kernel_trace.csv`): named only where no rocprofv3 trace of
/// another format lies beside it (`--output-format csv json` writes both).
pub(crate) const ROCPROF_CSV: &str = "_kernel_trace.csv";

/// Directories whose files are never sniffed (the original's skip list).
pub(crate) const SKIP_DIRS: [&str; 6] =
    [".git", "__pycache__", "node_modules", "site-packages", "venv", ".venv"];

/// Bytes of (decompressed) content read to classify a file by content.
pub(crate) const CONTENT_HEAD: usize = 64 << 10;
/// What the original read to sniff `trace.json` (used with `names_only`).
pub(crate) const ORIGINAL_SNIFF_HEAD: usize = 4096;

/// The kind a file name claims under the original's glob patterns
/// (`**/*.pt.trace.json`, `**/libkineto_trace*.json`, `**/torch_profiler_output/*.json`,
/// each also `.gz`; `**/*_results.json`; `**/*.pftrace`, also `.gz`), in
/// that precedence.
pub(crate) fn kind_by_name(name: &[u8], parent: Option<&OsStr>) -> Option<TraceKind> {
    let json = name.ends_with(b".json") || name.ends_with(b".json.gz");
    if name.ends_with(b".pt.trace.json")
        || name.ends_with(b".pt.trace.json.gz")
        || (json && name.starts_with(b"libkineto_trace"))
        || (json && parent.is_some_and(|p| p == "torch_profiler_output"))
    {
        return Some(TraceKind::Pytorch);
    }
    if name.ends_with(b"_results.json") {
        return Some(TraceKind::RocprofJson);
    }
    if name.ends_with(b".pftrace") || name.ends_with(b".pftrace.gz") {
        return Some(TraceKind::Pftrace);
    }
    None
}

/// Whether a file is, by its name, a rocprofv3 rocpd database
/// (`<pid>_results.db`, rocprofv3's default output since ROCm 7): listed
/// among [`crate::Discovery::unsupported`], as TraceLens cannot read it,
/// though trace-summary can (and can write it as the JSON TraceLens reads).
pub fn is_rocpd(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.as_encoded_bytes().ends_with(UNSUPPORTED[0].0.as_bytes()))
}

/// The extensions of the formats rocprofv3 writes one process's records in
/// (`<pid>_results.json`, `.json.gz`, `.db`, `.pftrace`, `.pftrace.gz`).
const ROCPROF_FORMATS: [&str; 5] = [".json.gz", ".json", ".db", ".pftrace.gz", ".pftrace"];

/// Whether `a` and `b` hold the same rocprofv3 process's records, written
/// in two formats (`--output-format json rocpd pftrace`): two files of one
/// directory whose names differ only in the format's extension. A copy
/// `madengine trace sanitize` wrote of the JSON (`1234_results.sanitized.json`)
/// holds them too.
pub fn same_rocprof_output(a: &Path, b: &Path) -> bool {
    a != b
        && a.parent() == b.parent()
        && rocprof_stem(a).is_some_and(|s| rocprof_stem(b) == Some(s))
}

/// The name rocprofv3 gives the JSON of the process whose records `path`
/// holds in another format (`1234_results.json` for `1234_results.db` or
/// `.pftrace`); any other name (a JSON's too) gets `.json` added.
pub fn rocprof_json_name(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem = [".db", ".pftrace"].iter().find_map(|ext| name.strip_suffix(ext)).unwrap_or(&name);
    format!("{stem}.json")
}

/// What `madengine trace sanitize` puts before a trace's extension in the
/// name of the copy it writes beside it (trace-sanitize's
/// `default_output_path`; this crate depends on no other).
pub(crate) const SANITIZED: &str = ".sanitized";

/// A rocprofv3 output's name without its format's extension (and, for a
/// sanitized copy of its JSON, without `.sanitized`).
fn rocprof_stem(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let (stem, ext) =
        ROCPROF_FORMATS.iter().find_map(|ext| Some((name.strip_suffix(ext)?, ext)))?;
    Some(match ext.starts_with(".json") {
        true => stem.strip_suffix(SANITIZED).unwrap_or(stem),
        false => stem,
    })
}

pub(crate) fn unsupported_reason(name: &[u8]) -> Option<&'static str> {
    UNSUPPORTED
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix.as_bytes()))
        .map(|(_, reason)| *reason)
}

/// Whether the original would sniff this name (`trace.json`, `trace.json.gz`).
pub(crate) fn is_ambiguous_name(name: &[u8]) -> bool {
    name == b"trace.json" || name == b"trace.json.gz"
}

pub(crate) fn is_json_name(name: &[u8]) -> bool {
    name.ends_with(b".json") || name.ends_with(b".json.gz")
}

/// The kind shown by the first bytes of a file's content, if any.
pub(crate) fn kind_by_content(head: &[u8], chrome_only: bool) -> Option<TraceKind> {
    let chrome = memmem::find(head, b"\"traceEvents\"");
    let rocprof = if chrome_only { None } else { memmem::find(head, b"\"rocprofiler-sdk-tool\"") };
    match (chrome, rocprof) {
        (Some(c), Some(r)) if r < c => Some(TraceKind::RocprofJson),
        (Some(_), _) => Some(TraceKind::Pytorch),
        (None, Some(_)) => Some(TraceKind::RocprofJson),
        (None, None) => None,
    }
}

/// The first bytes of a file's content, decompressed when it is gzip (by
/// its magic bytes).
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) bytes: Vec<u8>,
    /// The whole content was read (it is shorter than the limit).
    pub(crate) complete: bool,
}

/// An error unless `path` is a regular file (links followed): a device or
/// a FIFO is never opened (reading /dev/zero never ends; opening a FIFO
/// waits for a writer).
pub(crate) fn regular(path: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(path)?;
    match crate::walk::special(meta.file_type()) {
        Some(what) => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, not a regular file")))
        }
        None => Ok(()),
    }
}

/// Up to `limit` bytes of the file's content. A truncated or corrupt gzip
/// stream yields what could be decompressed before the damage. Plain reads
/// into a fixed buffer: no `fstat`, two `read`s for a small file.
pub(crate) fn read_head(path: &Path, limit: usize) -> io::Result<Head> {
    regular(path)?;
    let mut file = File::open(path)?;
    let first = limit.min(CONTENT_HEAD);
    let mut raw = vec![0u8; first];
    let n = read_full(&mut file, &mut raw)?;
    raw.truncate(n);
    if !raw.starts_with(&[0x1f, 0x8b]) {
        if n == first && first < limit {
            // The buffer filled up below the limit: read on to the limit.
            (&mut file).take((limit - n) as u64).read_to_end(&mut raw)?;
        }
        let complete = raw.len() < limit;
        return Ok(Head { bytes: raw, complete });
    }
    let chained = io::Cursor::new(raw).chain(file);
    let mut out = Vec::with_capacity(limit.min(CONTENT_HEAD));
    let mut decoder = MultiGzDecoder::new(chained).take(limit as u64);
    let mut buf = [0u8; 16 << 10];
    loop {
        match decoder.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Damaged gzip: keep what was decompressed.
            Err(_) => break,
        }
    }
    let complete = out.len() < limit;
    Ok(Head { bytes: out, complete })
}

fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocpd_databases_by_name() {
        assert!(is_rocpd(Path::new("host/1234_results.db")));
        assert!(is_rocpd(Path::new("a_results.db")));
        assert!(!is_rocpd(Path::new("rpd_output/trace.rpd")));
        assert!(!is_rocpd(Path::new("results.db")));
        assert!(!is_rocpd(Path::new("x_results.db/kernel_summary.csv")));
    }

    #[test]
    fn one_process_in_two_formats() {
        let same = |a: &str, b: &str| same_rocprof_output(Path::new(a), Path::new(b));
        assert!(same("h/1234_results.db", "h/1234_results.json"));
        assert!(same("h/1234_results.db", "h/1234_results.json.gz"));
        assert!(same("h/1234_results.pftrace", "h/1234_results.db"));
        assert!(same("h/1234_results.pftrace.gz", "h/1234_results.json"));
        assert!(!same("h/1234_results.db", "h/1234_results.db"));
        assert!(!same("h/1234_results.db", "g/1234_results.json"));
        assert!(!same("h/1234_results.db", "h/4321_results.json"));
        assert!(!same("h/1234_results.csv", "h/1234_results.json"));
        assert!(same("h/1234_results.db", "h/1234_results.sanitized.json"));
        assert!(same("h/1234_results.pftrace", "h/1234_results.sanitized.json.gz"));
        assert!(!same("h/1234_results.sanitized.db", "h/1234_results.json"));
        assert_eq!(rocprof_json_name(Path::new("h/1234_results.db")), "1234_results.json");
        assert_eq!(rocprof_json_name(Path::new("h/run.sqlite")), "run.sqlite.json");
        assert_eq!(rocprof_json_name(Path::new("h/1_results.json")), "1_results.json.json");
    }

    #[test]
    fn names() {
        let check = |name: &str, parent: Option<&str>, expected: Option<TraceKind>| {
            assert_eq!(kind_by_name(name.as_bytes(), parent.map(OsStr::new)), expected, "{name}");
        };
        use TraceKind::*;
        check("model_rank0.pt.trace.json", None, Some(Pytorch));
        check("worker0_step_12.1694128201545.pt.trace.json", None, Some(Pytorch));
        check("a.pt.trace.json.gz", None, Some(Pytorch));
        check("libkineto_trace.json", None, Some(Pytorch));
        check("libkineto_trace_4242.json.gz", None, Some(Pytorch));
        check("x_results.json", Some("torch_profiler_output"), Some(Pytorch));
        check("x_results.json", Some("rocprof_output"), Some(RocprofJson));
        check("x_results.json.gz", None, None);
        check("model.pftrace", None, Some(Pftrace));
        check("1234_results.pftrace.gz", None, Some(Pftrace));
        check("rank0.json.gz", None, None);
        check("sampled_rank-0.json.gz", None, None);
        check("trace.json", None, None);
    }

    #[test]
    fn content() {
        assert_eq!(
            kind_by_content(b"{\"schemaVersion\":1,\"traceEvents\":[", false),
            Some(TraceKind::Pytorch)
        );
        assert_eq!(
            kind_by_content(b"{\"rocprofiler-sdk-tool\":[{", false),
            Some(TraceKind::RocprofJson)
        );
        assert_eq!(kind_by_content(b"{\"rocprofiler-sdk-tool\":[{", true), None);
        assert_eq!(
            kind_by_content(b"{\"traceEvents\":[{\"name\":\"rocprofiler-sdk-tool\"", false),
            Some(TraceKind::Pytorch)
        );
        assert_eq!(kind_by_content(b"{\"events\":[]}", false), None);
    }
}
