//! The single walk over a run directory.

use std::{
    ffi::OsStr,
    fs,
    path::{Component, Path, PathBuf},
};

use serde::Serialize;
use walkdir::WalkDir;

use crate::{
    Error, Result,
    classify::{
        CONTENT_HEAD, Claim, ORIGINAL_SNIFF_HEAD, ROCPROF_CSV, SANITIZED, SKIP_DIRS, TraceKind,
        is_ambiguous_name, is_json_name, kind_by_content, kind_by_name, read_head,
        unsupported_reason,
    },
    rank::{Rank, find_rank_with},
};

/// What to look at, and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Directories whose contents are ignored (for example the report output
    /// directory, so a re-run never treats earlier reports as inputs). Compared
    /// as absolute paths, without resolving symlinks.
    pub exclude: Vec<PathBuf>,
    /// Follow symlinked directories (with loop detection). Off by default.
    pub follow_links: bool,
    /// Classify by name only, as the original did: no content sniffing except
    /// its 4 KiB look into files named `trace.json[.gz]`.
    pub names_only: bool,
}

/// A trace TraceLens can read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Trace {
    /// `root` joined with the path below it.
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// Its format.
    pub kind: TraceKind,
    /// Whether its name or its content said so.
    pub claim: Claim,
    /// Size on disk in bytes.
    pub size: u64,
    /// Its rank, for PyTorch traces where one can be known.
    pub rank: Option<Rank>,
}

/// An artifact in a format TraceLens cannot read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Unsupported {
    /// `root` joined with the path below it.
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// Why, and what to do instead.
    pub reason: std::borrow::Cow<'static, str>,
}

/// A path that could not be looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Problem {
    /// The path.
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// The version of [`Discovery`]'s shape, as `--json` prints it: raised when
/// a key is renamed or removed or changes its meaning.
pub const DISCOVERY_VERSION: u32 = 1;

/// Everything found under a root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Discovery {
    /// [`DISCOVERY_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The root as given.
    #[serde(serialize_with = "crate::lossy::path")]
    pub root: PathBuf,
    /// Traces, sorted by kind then path.
    pub traces: Vec<Trace>,
    /// Unsupported artifacts, sorted by path.
    pub unsupported: Vec<Unsupported>,
    /// Paths that could not be read (unreadable directories and files,
    /// symlink loops, symbolic links named as traces that lead nowhere),
    /// sorted by path. They do not fail the discovery.
    pub problems: Vec<Problem>,
}

impl Discovery {
    /// The traces of one kind, in path order.
    pub fn of_kind(&self, kind: TraceKind) -> impl Iterator<Item = &Trace> {
        self.traces.iter().filter(move |t| t.kind == kind)
    }

    /// How many traces of each kind were found.
    pub fn count(&self, kind: TraceKind) -> usize {
        self.of_kind(kind).count()
    }

    /// How many traces of each kind were found, by [`TraceKind::as_str`],
    /// and how many rocprofv3 rocpd databases ([`crate::is_rocpd`]) as
    /// `rocpd`: listed as unsupported, as TraceLens cannot read them, though
    /// they hold a run's records (trace-summary reads them).
    pub fn kind_counts(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        let kinds = self.traces.iter().map(|t| t.kind.as_str());
        let rocpd = self.unsupported.iter().filter(|u| crate::is_rocpd(&u.path)).map(|_| "rocpd");
        for kind in kinds.chain(rocpd) {
            *counts.entry(kind.to_string()).or_insert(0) += 1;
        }
        counts
    }

    /// The discovery as a reader of every rocprofv3 output sees it
    /// (trace-summary's): the rocpd databases listed as unsupported
    /// ([`crate::is_rocpd`]: TraceLens cannot read them) are traces of
    /// rocprofv3 output ([`TraceKind::RocprofJson`], claimed by their
    /// [`Claim::Name`]); and of one process's outputs side by side, which hold
    /// the same records ([`crate::same_rocprof_output`]), one is kept: its
    /// JSON, else its database, else its Perfetto trace. Traces stay sorted
    /// by kind, then path.
    pub fn with_databases(mut self) -> Discovery {
        let (rocpd, rest): (Vec<Unsupported>, Vec<Unsupported>) =
            std::mem::take(&mut self.unsupported)
                .into_iter()
                .partition(|u| crate::is_rocpd(&u.path));
        self.unsupported = rest;
        let (json, mut perfetto): (Vec<Trace>, Vec<Trace>) = std::mem::take(&mut self.traces)
            .into_iter()
            .partition(|t| matches!(t.kind, TraceKind::Pytorch | TraceKind::RocprofJson));
        let mut databases: Vec<Trace> = rocpd
            .into_iter()
            .map(|u| Trace {
                size: fs::metadata(&u.path).map_or(0, |m| m.len()),
                path: u.path,
                kind: TraceKind::RocprofJson,
                claim: Claim::Name,
                rank: None,
            })
            .collect();
        let twin = |t: &Trace, of: &[Trace]| {
            of.iter().any(|o| crate::same_rocprof_output(&t.path, &o.path))
        };
        databases.retain(|d| !twin(d, &json));
        perfetto.retain(|p| !twin(p, &json) && !twin(p, &databases));
        self.traces = json;
        self.traces.append(&mut databases);
        self.traces.append(&mut perfetto);
        self.traces.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        self
    }
}

/// Find and classify the traces under `root`, in one walk.
///
/// Fails only when `root` itself cannot be read; anything below it that
/// cannot be read becomes a [`Problem`].
pub fn discover(root: &Path, options: &Options) -> Result<Discovery> {
    let meta =
        fs::metadata(root).map_err(|source| Error::Root { path: root.to_path_buf(), source })?;
    if !meta.is_dir() {
        return Err(Error::NotADirectory { path: root.to_path_buf() });
    }
    let abs_root =
        absolute(root).map_err(|source| Error::Root { path: root.to_path_buf(), source })?;
    let excludes: Vec<PathBuf> = options.exclude.iter().filter_map(|p| absolute(p).ok()).collect();
    let excluded = |rel: &Path| {
        !excludes.is_empty() && excludes.iter().any(|ex| abs_root.join(rel).starts_with(ex))
    };

    let mut found = Discovery {
        version: DISCOVERY_VERSION,
        root: root.to_path_buf(),
        traces: vec![],
        unsupported: vec![],
        problems: vec![],
    };
    let mut walker = WalkDir::new(root).follow_links(options.follow_links).min_depth(1).into_iter();
    while let Some(entry) = walker.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = e.path().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf());
                let message = match (e.loop_ancestor(), e.io_error()) {
                    (Some(ancestor), _) => format!("symlink loop back to {}", ancestor.display()),
                    (None, Some(io)) => io.to_string(),
                    (None, None) => e.to_string(),
                };
                found.problems.push(Problem { path, message });
                continue;
            }
        };
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(path);
        if entry.file_type().is_dir() {
            let name = entry.file_name();
            // Hidden (never globbed) and on the skip list (never sniffed):
            // nothing below can be found.
            if excluded(rel) || (is_hidden(name) && SKIP_DIRS.iter().any(|d| name == *d)) {
                walker.skip_current_dir();
            }
            continue;
        }
        let is_link = entry.file_type().is_symlink();
        if !is_link && !entry.file_type().is_file() {
            // A device, a FIFO or a socket named as a trace is never opened
            // (reading /dev/zero never ends; opening a FIFO waits for a
            // writer), and said.
            if !excluded(rel)
                && named_as_trace(rel)
                && let Some(what) = special(entry.file_type())
            {
                found.problems.push(not_read(path, what, None));
            }
            continue;
        }
        if excluded(rel) {
            continue;
        }
        // A symlink (not followed) counts only when it leads to a regular
        // file; one named as a trace that leads nowhere (a scratch space
        // purged since) is a problem, or the trace would go unmentioned.
        if is_link {
            match fs::metadata(path) {
                Ok(meta) if meta.is_file() => {}
                Ok(meta) => {
                    if named_as_trace(rel)
                        && let Some(what) = special(meta.file_type())
                    {
                        found.problems.push(not_read(path, what, fs::read_link(path).ok()));
                    }
                    continue;
                }
                Err(e) => {
                    if named_as_trace(rel) {
                        let message = broken_link(path, &e);
                        found.problems.push(Problem { path: path.to_path_buf(), message });
                    }
                    continue;
                }
            }
        }
        classify_file(&entry, rel, options, &mut found);
    }

    // A rocprofv3 CSV beside a rocprofv3 trace TraceLens reads is no news.
    let rocprof_dirs: std::collections::HashSet<&Path> = found
        .traces
        .iter()
        .filter(|t| matches!(t.kind, TraceKind::RocprofJson | TraceKind::Pftrace))
        .filter_map(|t| t.path.parent())
        .collect();
    let csv_beside_trace = |u: &Unsupported| {
        u.path.as_os_str().as_encoded_bytes().ends_with(ROCPROF_CSV.as_bytes())
            && u.path.parent().is_some_and(|d| rocprof_dirs.contains(d))
    };
    found.unsupported.retain(|u| !csv_beside_trace(u));
    // A copy `trace sanitize` wrote beside a trace found too is that trace
    // again: read twice, it would claim the same rank twice. The one
    // written last is read: the copy made to repair (or salvage) the trace,
    // or the trace captured again since.
    let paths: std::collections::HashSet<&Path> =
        found.traces.iter().map(|t| t.path.as_path()).collect();
    let mut left: std::collections::HashMap<PathBuf, &'static str> = Default::default();
    for copy in &found.traces {
        let Some(original) = sanitized_original(&copy.path) else { continue };
        if !paths.contains(original.as_path()) {
            continue;
        }
        let written = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
        match (written(&copy.path), written(&original)) {
            (Some(c), Some(o)) if c >= o => left.insert(original, SANITIZED_ORIGINAL),
            _ => left.insert(copy.path.clone(), SANITIZED_COPY),
        };
    }
    found.traces.retain(|t| !left.contains_key(&t.path));
    found
        .unsupported
        .extend(left.into_iter().map(|(path, reason)| Unsupported { path, reason: reason.into() }));
    found.traces.sort_by(|a, b| (a.kind, a.path.as_os_str()).cmp(&(b.kind, b.path.as_os_str())));
    found
        .unsupported
        .sort_by(|a, b| (a.path.as_os_str(), &a.reason).cmp(&(b.path.as_os_str(), &b.reason)));
    found.problems.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Classify one file as [`discover`] would find it in its directory: a
/// [`Discovery`] whose `root` is the file, holding it as a trace, as
/// unsupported, or not at all (no trace; the caller says so). Its
/// directory's name counts, as in a walk (`torch_profiler_output/`); a
/// symbolic link is followed. A directory is searched, as [`discover`] does.
pub fn classify(path: &Path, options: &Options) -> Result<Discovery> {
    let meta =
        fs::metadata(path).map_err(|source| Error::Root { path: path.to_path_buf(), source })?;
    if meta.is_dir() {
        return discover(path, options);
    }
    let mut found = Discovery {
        version: DISCOVERY_VERSION,
        root: path.to_path_buf(),
        traces: vec![],
        unsupported: vec![],
        problems: vec![],
    };
    if let Some(what) = special(meta.file_type()) {
        let link = fs::symlink_metadata(path)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| fs::read_link(path).ok())
            .flatten();
        found.problems.push(not_read(path, what, link));
        return Ok(found);
    }
    let Some(name) = path.file_name() else { return Ok(found) };
    let parent = absolute(path).ok().and_then(|p| p.parent()?.file_name().map(PathBuf::from));
    let rel = parent.unwrap_or_default().join(name);
    match WalkDir::new(path).into_iter().next() {
        Some(Ok(entry)) => classify_file(&entry, &rel, options, &mut found),
        Some(Err(e)) => {
            let message = e.io_error().map_or_else(|| e.to_string(), ToString::to_string);
            found.problems.push(Problem { path: path.to_path_buf(), message });
        }
        None => {}
    }
    Ok(found)
}

/// Why a sanitized copy beside its trace is left out (an
/// [`Unsupported::reason`]): the trace was written again since.
pub const SANITIZED_COPY: &str = "a sanitized copy of the trace beside it (the same name \
    without `.sanitized`), which was written again since and is read instead";

/// Why a trace is left out whose sanitized copy was written beside it
/// later (an [`Unsupported::reason`]).
pub const SANITIZED_ORIGINAL: &str = "its sanitized copy beside it, written since (the same name \
    with `.sanitized`), is read instead";

/// The trace that `path` is the copy of if `madengine trace sanitize` wrote
/// it beside that trace, by its name (`run.sanitized.pt.trace.json` of
/// `run.pt.trace.json`, `908_results.sanitized.json` of `908_results.json`;
/// trace-sanitize's `default_output_path` read backwards).
fn sanitized_original(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"].iter().find_map(|suffix| {
        let stem = name.strip_suffix(suffix)?.strip_suffix(SANITIZED)?;
        (!stem.is_empty()).then(|| path.with_file_name(format!("{stem}{suffix}")))
    })
}

/// Whether the name alone makes `rel` a trace, or a profiler output
/// TraceLens cannot read (as a glob of the original's patterns would).
fn named_as_trace(rel: &Path) -> bool {
    let Some(name) = rel.file_name() else { return false };
    let bytes = name.as_encoded_bytes();
    globbed(rel)
        && (kind_by_name(bytes, rel.parent().and_then(Path::file_name)).is_some()
            || unsupported_reason(bytes).is_some())
}

/// Whether Python's glob would match `rel` at all: it matches no name that
/// starts with a dot, at any level.
fn globbed(rel: &Path) -> bool {
    rel.components().all(|c| !is_hidden(c.as_os_str()))
}

/// What a file that is not a regular file is (`a character device`, `a
/// FIFO (a named pipe)`, ...), by its type (a link's: its target's); `None`
/// for a regular file or a directory.
pub fn special(file_type: fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_fifo() {
            return Some("a FIFO (a pipe)");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    (!file_type.is_file() && !file_type.is_dir() && !file_type.is_symlink())
        .then_some("not a regular file")
}

/// The problem of a special file (`what`) named as a trace, reached through
/// the link to `target` where there is one.
fn not_read(path: &Path, what: &str, target: Option<PathBuf>) -> Problem {
    let through = target.map(|t| format!(" (a link to {})", t.display())).unwrap_or_default();
    Problem {
        path: path.to_path_buf(),
        message: format!(
            "{what}{through}, not a regular file: not read (traces are read from files; save \
             a stream to one first)"
        ),
    }
}

/// Why the symbolic link at `path` cannot be followed.
fn broken_link(path: &Path, error: &std::io::Error) -> String {
    match (fs::read_link(path), error.kind()) {
        (Ok(target), std::io::ErrorKind::NotFound) => {
            format!("a symbolic link to {}, which does not exist", target.display())
        }
        _ => format!("a symbolic link that cannot be followed: {error}"),
    }
}

fn classify_file(entry: &walkdir::DirEntry, rel: &Path, options: &Options, found: &mut Discovery) {
    let path = entry.path();
    let Some(name) = rel.file_name() else { return };
    let name_bytes = name.as_encoded_bytes();
    let dirs = || rel.parent().into_iter().flat_map(Path::components).map(Component::as_os_str);
    let globbed = globbed(rel);
    // The original's sniff walk prunes the skip list.
    let sniffed = !dirs().any(|d| SKIP_DIRS.iter().any(|s| d == *s));

    let mut claim = None;
    let mut head = None;
    if globbed {
        claim = kind_by_name(name_bytes, rel.parent().and_then(Path::file_name))
            .map(|k| (k, Claim::Name));
    }
    let ambiguous = sniffed && is_ambiguous_name(name_bytes);
    let by_content = !options.names_only && globbed && sniffed && is_json_name(name_bytes);
    if claim.is_none() && (ambiguous || by_content) {
        let (limit, chrome_only) =
            if options.names_only { (ORIGINAL_SNIFF_HEAD, true) } else { (CONTENT_HEAD, false) };
        match read_head(path, limit) {
            Ok(h) => {
                claim = kind_by_content(&h.bytes, chrome_only).map(|k| (k, Claim::Content));
                head = Some(h);
            }
            Err(e) => found.problems.push(Problem {
                path: path.to_path_buf(),
                message: format!("cannot read it to tell whether it is a trace: {e}"),
            }),
        }
    }
    let Some((kind, claim)) = claim else {
        if globbed && let Some(reason) = unsupported_reason(name_bytes) {
            found.unsupported.push(Unsupported { path: path.to_path_buf(), reason: reason.into() });
        }
        return;
    };
    // Only now, for the few files that are traces: stat (through a symlink).
    let size = if entry.file_type().is_symlink() {
        fs::metadata(path).map(|m| m.len()).map_err(|e| e.to_string())
    } else {
        entry.metadata().map(|m| m.len()).map_err(|e| e.to_string())
    };
    let size = match size {
        Ok(s) => s,
        Err(e) => {
            found.problems.push(Problem { path: path.to_path_buf(), message: e });
            return;
        }
    };
    let rank = match kind {
        TraceKind::Pytorch => find_rank_with(path, head.as_ref()).unwrap_or_else(|e| {
            found.problems.push(Problem {
                path: path.to_path_buf(),
                message: format!("cannot read it to find its rank: {e}"),
            });
            None
        }),
        _ => None,
    };
    found.traces.push(Trace { path: path.to_path_buf(), kind, claim, size, rank });
}

fn is_hidden(name: &OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// Python's `os.path.abspath`: absolute, `.` and `..` removed lexically,
/// symlinks not resolved.
pub(crate) fn absolute(path: &Path) -> std::io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_is_lexical() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("a/./b/../c")).unwrap(), cwd.join("a/c"));
        assert_eq!(absolute(Path::new("/x/y/..")).unwrap(), PathBuf::from("/x"));
    }
}
