//! rocprofv3's rocpd output: a SQLite database (`<pid>_results.db`, the
//! default output format since ROCm 7), read into the same tables as its
//! JSON (`rocprof.rs`).
//!
//! It is read through the views rocprofv3 writes into every database beside
//! its tables, as rocprofiler-sdk's published schema defines them: `kernels`
//! (a dispatch's kernel `name`, `start` and `end` in ns, its GPU's
//! `agent_type_index`) and `memory_copies` (`start`, `end`), with the
//! processes' `init` / `fini` from `rocpd_info_process` and the GPUs' names
//! from `rocpd_info_agent`. The tables' own layout changes between schema
//! versions; the views are what rocprofiler-sdk's own `rocpd` tools query.
//! The file is opened read-only: the database is never changed, and rows are
//! stepped through one at a time, not loaded.
//!
//! [`write_json`] writes the same views back out as the rocprofv3 JSON of
//! their records, for TraceLens, which reads no database: the columns of
//! rocprofiler-sdk's views under rocprofv3's JSON keys, a column a view
//! lacks left out (TraceLens' rocprof reader takes its defaults).

use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
};

use rusqlite::{Connection, OpenFlags, types::ValueRef};

use crate::rocprof::{Records, Tables, shown_name, truncated_kernel_name};

/// Why a database could not be read: a message that names what was missing
/// or what SQLite said.
#[derive(Debug)]
pub(crate) enum Failure {
    /// `cancel` was raised.
    Cancelled,
    /// What went wrong.
    Said(crate::DatabaseError),
}

impl Failure {
    /// What the database lacks, or holds that rocprofv3's does not.
    fn said(what: impl Into<String>) -> Failure {
        Failure::Said(crate::DatabaseError::NotRocpd(what.into()))
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        let why = match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                " (cut short or damaged: a job killed while rocprofv3 wrote it? a copy cut short?)"
            }
            Some(rusqlite::ErrorCode::OperationInterrupted) => {
                " (reading it took more work than a database of its size needs: a view that \
                 computes without end? not rocprofv3's)"
            }
            Some(rusqlite::ErrorCode::TooBig) => {
                " (a value of over 16 MiB, which no rocprofv3 record holds: not rocprofv3's)"
            }
            _ => "",
        };
        Failure::Said(crate::DatabaseError::Sqlite { error: e, likely: why })
    }
}

/// The rows read, and a look at `cancel` every 65,536 of them.
struct Rows<'a> {
    read: u64,
    /// The most rows the views may yield ([`row_limit`]).
    limit: u64,
    cancel: Option<&'a AtomicBool>,
}

/// The most record rows a database of `bytes` can hold: each row of its
/// tables takes more than 8 bytes on disk. A view that yields more
/// generates rows (a recursive query), which rocprofiler-sdk's do not: it
/// is not read to its end, which may never come.
fn row_limit(bytes: u64) -> u64 {
    bytes / 8 + 1024
}

impl<'a> Rows<'a> {
    fn new(cancel: Option<&'a AtomicBool>, limit: u64) -> Rows<'a> {
        Rows { read: 0, limit, cancel }
    }

    /// One more row: `Cancelled` when it is time to look and `cancel` was
    /// raised; an error past [`Rows::limit`].
    fn tick(&mut self) -> Result<(), Failure> {
        self.read += 1;
        if self.read > self.limit {
            return Err(Failure::said(format!(
                "its views yield more rows than a database of its size holds ({} read): they \
                 generate rows (a recursive query?), which rocprofiler-sdk's views do not",
                self.read - 1
            )));
        }
        if self.read.is_multiple_of(1 << 16) { self.stop() } else { Ok(()) }
    }

    /// `Cancelled` when `cancel` was raised.
    fn stop(&self) -> Result<(), Failure> {
        match self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            true => Err(Failure::Cancelled),
            false => Ok(()),
        }
    }
}

/// The rocpd database at `path`, opened read-only, and its tables and
/// views; an error that says what it lacks when it is not one.
fn open(path: &Path) -> Result<(Connection, Vec<String>), Failure> {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    if bytes == 0 {
        return Err(Failure::said("an empty file (0 bytes), not a database"));
    }
    // Immutable: nothing is written beside it (no `-shm` or `-wal` of a
    // WAL-mode database), and it opens on a read-only mount.
    let db = Connection::open_with_flags(
        immutable_uri(path),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    // A value no record of rocprofv3's comes near (a kernel's formatted
    // name runs to kilobytes): a view that builds one is refused, not grown.
    db.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 16 << 20)?;
    // Work bounded by the file's size: each call is 100,000 SQLite steps,
    // and reading a real database takes a few hundred per row.
    let mut budget = bytes / 4 + 10_000;
    db.progress_handler(
        100_000,
        Some(move || {
            budget = budget.saturating_sub(1);
            budget == 0
        }),
    );
    let objects = objects(&db)?;
    if let Some(view) = recursive_view(&db)? {
        return Err(Failure::said(format!(
            "its `{view}` view is a recursive query, which rocprofiler-sdk's are not: not read"
        )));
    }
    let has = |name: &str| objects.iter().any(|o| o == name);
    if !has("kernels") || !has("rocpd_info_process") {
        let what = if objects.iter().any(|o| o.starts_with("rocpd_")) {
            "a rocpd database without the `kernels` view rocprofv3 writes (an older or newer \
             schema than rocprofiler-sdk's published one?)"
        } else {
            "a SQLite database, but not rocprofv3's rocpd output (it has no rocpd_ tables)"
        };
        return Err(Failure::said(what));
    }
    Ok((db, objects))
}

/// The tables of the rocpd database at `path`.
pub(crate) fn tables(path: &Path, cancel: Option<&AtomicBool>) -> Result<Tables, Failure> {
    let (db, objects) = open(path)?;
    let has = |name: &str| objects.iter().any(|o| o == name);
    let mut records = Records::default();
    let mut processes = db.prepare("SELECT init, fini, start, \"end\" FROM rocpd_info_process")?;
    let mut rows = processes.query([])?;
    while let Some(row) = rows.next()? {
        let init = int(row.get_ref(0)?).or(int(row.get_ref(2)?));
        let fini = int(row.get_ref(1)?).or(int(row.get_ref(3)?));
        if let (Some(init), Some(fini)) = (init, fini) {
            records.process(init, fini);
        }
    }
    if has("rocpd_info_agent") {
        let mut agents = db.prepare(
            "SELECT product_name, model_name, name FROM rocpd_info_agent \
             WHERE type = 'GPU' ORDER BY type_index",
        )?;
        let mut rows = agents.query([])?;
        while let Some(row) = rows.next()? {
            let name = (0..3)
                .filter_map(|i| row.get::<_, Option<String>>(i).ok().flatten())
                .find(|n| !n.trim().is_empty());
            records.gpus.extend(name);
        }
    }
    // Kernels by their symbol's name, as TraceLens names them in the JSON
    // of the same run (the view's `name` is the display name, which may be
    // the formatted one with the arguments: where it is the name to go by,
    // it is truncated as rocprofv3 truncates it).
    let mut names: rustc_hash::FxHashMap<u64, String> = Default::default();
    if by_id(&db, &objects)? {
        each_symbol(&db, |s| {
            names.insert(s.id, shown_name(s.truncated, s.formatted, s.kernel_name));
            Ok::<_, Failure>(())
        })?;
    }
    let sql =
        select(&db, "kernels", &["name", "start", "end", "agent_type_index", "kernel_id"], "")?;
    let mut kernels = db.prepare(&sql)?;
    let mut rows = kernels.query([])?;
    let mut read = Rows::new(cancel, row_limit(bytes_of(path)));
    while let Some(row) = rows.next()? {
        read.tick()?;
        let (Some(start), Some(end)) = (int(row.get_ref(1)?), int(row.get_ref(2)?)) else {
            records.dropped += 1;
            continue;
        };
        let view_name;
        let name = match (int(row.get_ref(4)?).and_then(|id| names.get(&id)), row.get_ref(0)?) {
            (Some(name), _) => name.as_str(),
            (None, ValueRef::Text(t)) => {
                view_name = String::from_utf8_lossy(t);
                truncated_kernel_name(&view_name)
            }
            (None, _) => "",
        };
        records.kernel(name, start, end);
        records.devices.insert(int(row.get_ref(3)?).and_then(|i| u32::try_from(i).ok()));
    }
    if has("memory_copies") {
        let mut copies = db.prepare("SELECT start, \"end\" FROM memory_copies")?;
        let mut rows = copies.query([])?;
        while let Some(row) = rows.next()? {
            read.tick()?;
            match (int(row.get_ref(0)?), int(row.get_ref(1)?)) {
                (Some(start), Some(end)) => records.copy(start, end),
                _ => records.dropped += 1,
            }
        }
    }
    read.stop()?;
    if records.kernels.is_empty()
        && has("rocpd_kernel_dispatch")
        && db.query_row("SELECT EXISTS (SELECT 1 FROM rocpd_kernel_dispatch)", [], |r| r.get(0))?
    {
        // Rows the view does not join (a schema it does not match): say so,
        // rather than report a GPU that ran no kernel.
        return Err(Failure::said(
            "its rocpd_kernel_dispatch table holds rows, but its `kernels` view joins none of \
             them (a schema other than rocprofiler-sdk's published one?)",
        ));
    }
    // What the database holds instead, for a run without GPU records.
    let lists = if records.kernels.is_empty() && records.copies.is_empty() {
        holding(&db, &objects)?
    } else {
        Vec::new()
    };
    Ok(records.tables(lists))
}

/// A kernel symbol: its id, and rocprofv3's names for it (the formatted,
/// demangled and truncated ones it keeps in `extdata`, else its display name,
/// and that cut as rocprofv3 cuts a truncated name).
struct Symbol {
    id: u64,
    kernel_name: String,
    formatted: String,
    demangled: String,
    truncated: String,
}

const SYMBOLS: &str = "rocpd_info_kernel_symbol";

/// Whether the `kernels` view's `kernel_id`s name the kernel symbols: not
/// when the view has no `kernel_id`, the database no symbol table, or its
/// symbols are of more than one run (a merged database, whose runs' ids
/// overlap; the view's names are then the ones to go by).
fn by_id(db: &Connection, objects: &[String]) -> Result<bool, Failure> {
    if !objects.iter().any(|o| o == SYMBOLS)
        || !columns(db, "kernels")?.iter().any(|c| c == "kernel_id")
    {
        return Ok(false);
    }
    if columns(db, SYMBOLS)?.iter().any(|c| c == "guid") {
        let sql = format!("SELECT COUNT(DISTINCT guid) FROM {SYMBOLS}");
        let runs: u64 = db.query_row(&sql, [], |r| r.get(0))?;
        return Ok(runs <= 1);
    }
    Ok(true)
}

/// Each kernel symbol, in the order of their ids, to `each` (one at a
/// time: a PyTorch run's formatted names run to kilobytes each).
fn each_symbol<E: From<Failure> + From<rusqlite::Error>>(
    db: &Connection,
    mut each: impl FnMut(Symbol) -> Result<(), E>,
) -> Result<(), E> {
    let sql =
        select(db, SYMBOLS, &["id", "kernel_name", "display_name", "extdata"], "ORDER BY id")?;
    let mut statement = db.prepare(&sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let display = text(row, 2)?.unwrap_or_default();
        let extdata: serde_json::Map<String, serde_json::Value> =
            text(row, 3)?.and_then(|e| serde_json::from_str(&e).ok()).unwrap_or_default();
        let name = |key: &str| match extdata.get(key).and_then(|v| v.as_str()) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => display.clone(),
        };
        each(Symbol {
            id: opt(row, 0)?.unwrap_or(0),
            kernel_name: text(row, 1)?.unwrap_or_else(|| display.clone()),
            formatted: name("formatted_kernel_name"),
            demangled: name("demangled_kernel_name"),
            truncated: match extdata.get("truncated_kernel_name").and_then(|v| v.as_str()) {
                Some(name) if !name.is_empty() => name.to_string(),
                _ => truncated_kernel_name(&display).to_string(),
            },
        })?;
    }
    Ok(())
}

/// `file:<path>?immutable=1`, the path's special characters escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'?' | b'#' | b'%' => uri.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() && !b.is_ascii_control() => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The first view of the database defined by a recursive query.
fn recursive_view(db: &Connection) -> rusqlite::Result<Option<String>> {
    let mut statement = db.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'view' AND upper(sql) LIKE '%RECURSIVE%' \
         ORDER BY name LIMIT 1",
    )?;
    let mut rows = statement.query([])?;
    rows.next()?.map(|row| row.get(0)).transpose()
}

/// The tables and views of the database.
fn objects(db: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement =
        db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// The columns of a table or view.
fn columns(db: &Connection, of: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = db.prepare(&format!("SELECT name FROM pragma_table_info('{of}')"))?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// The rocpd record views that hold rows, by rocprofv3's names for the
/// records in them (as its JSON's `buffer_records` keys are).
fn holding(db: &Connection, objects: &[String]) -> rusqlite::Result<Vec<String>> {
    const RECORDS: [(&str, &str); 6] = [
        ("rocpd_kernel_dispatch", "kernel_dispatch"),
        ("rocpd_memory_copy", "memory_copy"),
        ("rocpd_memory_allocate", "memory_allocation"),
        ("rocpd_region", "region"),
        ("rocpd_sample", "sample"),
        ("rocpd_pmc_event", "pmc_event"),
    ];
    let mut held = Vec::new();
    for (view, records) in RECORDS {
        if !objects.iter().any(|o| o == view) {
            continue;
        }
        let rows: bool =
            db.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {view})"), [], |r| r.get(0))?;
        if rows {
            held.push(records.to_string());
        }
    }
    Ok(held)
}

/// The size of the file at `path` (0 when it cannot be told).
fn bytes_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// A column's integer value (ns timestamps, indices); a NULL or text is none.
fn int(value: ValueRef<'_>) -> Option<u64> {
    match value {
        ValueRef::Integer(i) => u64::try_from(i).ok(),
        ValueRef::Real(r) if r >= 0.0 => Some(r as u64),
        _ => None,
    }
}

/// What [`crate::rocpd_to_json`] wrote: how many of each record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Converted {
    /// Processes of the database (their metadata merged into one).
    pub processes: u64,
    /// Kernel dispatches.
    pub kernels: u64,
    /// Memory copies.
    pub copies: u64,
}

/// The version of [`ConvertedFile`]'s and [`ConvertedFiles`]' shapes, as
/// `--json` prints them: raised when a key is renamed or removed or
/// changes its meaning.
pub const CONVERTED_VERSION: u32 = 1;

/// A database converted ([`crate::rocpd_to_json`]), as a document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConvertedFile {
    /// [`CONVERTED_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The database.
    #[serde(serialize_with = "lossy_path")]
    pub input: std::path::PathBuf,
    /// The JSON written.
    #[serde(serialize_with = "lossy_path")]
    pub output: std::path::PathBuf,
    /// What it holds.
    #[serde(flatten)]
    pub records: Converted,
}

/// Several databases converted, as one document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConvertedFiles {
    /// [`CONVERTED_VERSION`].
    #[serde(default)]
    pub version: u32,
    /// Each one's, in the order converted.
    pub traces: Vec<ConvertedFile>,
}

/// A path as text, its bytes that are not UTF-8 as U+FFFD (serde refuses
/// such a path).
fn lossy_path<S: serde::Serializer>(path: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// Why the JSON could not be written: reading the database, or writing.
#[derive(Debug)]
pub(crate) enum Written {
    Read(Failure),
    Write(std::io::Error),
}

impl From<rusqlite::Error> for Written {
    fn from(e: rusqlite::Error) -> Written {
        Written::Read(e.into())
    }
}

impl From<std::io::Error> for Written {
    fn from(e: std::io::Error) -> Written {
        Written::Write(e)
    }
}

impl From<Failure> for Written {
    fn from(f: Failure) -> Written {
        Written::Read(f)
    }
}

/// An integer column, or none.
fn opt(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<u64>> {
    Ok(int(row.get_ref(i)?))
}

/// A text column, or none (bytes that are not UTF-8 replaced).
fn text(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    })
}

/// Three integer columns from `i`, when all are there.
fn xyz(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<[u64; 3]>> {
    Ok(match (opt(row, i)?, opt(row, i + 1)?, opt(row, i + 2)?) {
        (Some(x), Some(y), Some(z)) => Some([x, y, z]),
        _ => None,
    })
}

/// A JSON object written field by field into a buffer: integers, and
/// objects of them, under plain ASCII keys (what a dispatch or copy record
/// holds: serde_json escapes every key, which took a seventh of a
/// conversion's time). A field whose value is `None` is left out.
struct Obj<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(buf: &'a mut Vec<u8>) -> Obj<'a> {
        buf.push(b'{');
        Obj { buf, first: true }
    }

    fn key(&mut self, key: &str) {
        if !std::mem::take(&mut self.first) {
            self.buf.push(b',');
        }
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    fn int(&mut self, key: &str, value: Option<u64>) -> &mut Self {
        if let Some(value) = value {
            self.key(key);
            self.buf.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        }
        self
    }

    /// `{"<inner>": value}`, as rocprofv3 writes an agent, queue or stream
    /// id (`handle`).
    fn wrapped(&mut self, key: &str, inner: &str, value: Option<u64>) -> &mut Self {
        if value.is_some() {
            self.key(key);
            Obj::open(self.buf).int(inner, value).close();
        }
        self
    }

    /// `"correlation_id": {"internal": value, "external": 0}`.
    fn correlation(&mut self, value: Option<u64>) -> &mut Self {
        if value.is_some() {
            self.key("correlation_id");
            Obj::open(self.buf).int("internal", value).int("external", Some(0)).close();
        }
        self
    }

    /// `{"x", "y", "z"}`.
    fn xyz(&mut self, key: &str, value: Option<[u64; 3]>) -> &mut Self {
        if let Some([x, y, z]) = value {
            self.key(key);
            Obj::open(self.buf).int("x", Some(x)).int("y", Some(y)).int("z", Some(z)).close();
        }
        self
    }

    fn close(&mut self) {
        self.buf.push(b'}');
    }
}

/// `SELECT` of `wanted` from `of`, a column it lacks read as NULL, and
/// `extdata` (rocprofv3's JSON, which SQLite may hold as text or as its
/// binary JSONB) as JSON text, or NULL where it is not JSON.
fn select(db: &Connection, of: &str, wanted: &[&str], rest: &str) -> Result<String, Failure> {
    let have = columns(db, of)?;
    let list: Vec<String> = wanted
        .iter()
        .map(|&c| match (have.iter().any(|h| h == c), c) {
            (false, _) => "NULL".into(),
            (true, "extdata") => "CASE WHEN json_valid(extdata, 5) THEN json(extdata) END".into(),
            (true, _) => format!("\"{c}\""),
        })
        .collect();
    Ok(format!("SELECT {} FROM {of} {rest}", list.join(", ")))
}

/// Writes the rocpd database at `path` to `out` as rocprofv3's JSON
/// (`--output-format json`) holds the same records: one process object
/// (the database's processes merged: pid of the first, the earliest init
/// and latest fini), its agents, kernel symbols, kernel dispatches and
/// memory copies, under the keys and in the shapes rocprofv3 writes them.
/// Rows are streamed from the views to `out`, never all held.
pub(crate) fn write_json(
    path: &Path,
    out: &mut impl std::io::Write,
    cancel: Option<&AtomicBool>,
) -> Result<Converted, Written> {
    let (db, objects) = open(path)?;
    let has = |name: &str| objects.iter().any(|o| o == name);
    let mut read = Rows::new(cancel, row_limit(bytes_of(path)));
    let mut converted = Converted::default();
    out.write_all(br#"{"rocprofiler-sdk-tool":[{"metadata":"#)?;
    metadata(&db, has("rocpd_info_node"), out, &mut converted)?;
    out.write_all(br#","agents":["#)?;
    if has("rocpd_info_agent") {
        agents(&db, out)?;
    }
    // Kernel dispatches, each naming its symbol by the database's id; the
    // symbols follow them (a view without `kernel_id`: one per name).
    let by_id = by_id(&db, &objects)?;
    out.write_all(br#"],"buffer_records":{"kernel_dispatch":["#)?;
    let named = dispatches(&db, by_id, out, &mut read, &mut converted)?;
    out.write_all(br#"],"memory_copy":["#)?;
    if has("memory_copies") {
        copies(&db, out, &mut read, &mut converted)?;
    }
    symbols(&db, by_id, named, out)?;
    out.write_all(b"]}]}\n")?;
    read.stop()?;
    Ok(converted)
}

/// The processes, merged, as rocprofv3's `metadata` object (with the
/// node's hostname where the database has `rocpd_info_node`).
fn metadata(
    db: &Connection,
    has_node: bool,
    out: &mut impl std::io::Write,
    converted: &mut Converted,
) -> Result<(), Written> {
    let (mut pid, mut init, mut fini, mut command) = (None, None::<u64>, 0u64, None);
    let sql =
        select(db, "rocpd_info_process", &["pid", "init", "fini", "start", "end", "command"], "")?;
    let mut statement = db.prepare(&sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        converted.processes += 1;
        pid = pid.or(opt(row, 0)?);
        command = command.or(text(row, 5)?);
        let (i, f) = (opt(row, 1)?.or(opt(row, 3)?), opt(row, 2)?.or(opt(row, 4)?));
        if let (Some(i), Some(f)) = (i, f) {
            init = Some(init.map_or(i, |o| o.min(i)));
            fini = fini.max(f);
        }
    }
    drop(rows);
    let hostname = if has_node {
        // A view over rocprofv3's table: no rowid to order by.
        let sql = select(db, "rocpd_info_node", &["hostname"], "LIMIT 1")?;
        db.query_row(&sql, [], |row| text(row, 0)).ok().flatten()
    } else {
        None
    };
    // rocprofv3 writes argv as a list; a database's may be one string.
    let command: Vec<String> =
        command.map(|c| serde_json::from_str(&c).unwrap_or_else(|_| vec![c])).unwrap_or_default();
    json(
        out,
        &serde_json::json!({
            "pid": pid.unwrap_or(0),
            "init_time": init.unwrap_or(0),
            "fini_time": if init.is_some() { fini } else { 0 },
            "node": { "hostname": hostname.unwrap_or_default() },
            "command": command,
        }),
    )?;
    Ok(())
}

/// The agents, GPUs in their type-relative order.
fn agents(db: &Connection, out: &mut impl std::io::Write) -> Result<(), Written> {
    let sql = select(
        db,
        "rocpd_info_agent",
        &[
            "id",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "name",
            "product_name",
            "model_name",
            "vendor_name",
        ],
        "ORDER BY type_index, id",
    )?;
    let mut statement = db.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut first = true;
    while let Some(row) = rows.next()? {
        let kind = match text(row, 1)?.as_deref() {
            Some("CPU") => 1,
            Some("GPU") => 2,
            _ => 0,
        };
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        json(
            out,
            &serde_json::json!({
                "id": { "handle": opt(row, 0)?.unwrap_or(0) },
                "type": kind,
                "node_id": opt(row, 2)?,
                "logical_node_id": opt(row, 3)?,
                "logical_node_type_id": opt(row, 4)?,
                "name": text(row, 5)?,
                "product_name": text(row, 6)?,
                "model_name": text(row, 7)?,
                "vendor_name": text(row, 8)?,
            }),
        )?;
    }
    Ok(())
}

/// The kernel dispatches; without the database's kernel ids (`by_id`),
/// the ids given to each name, in order.
fn dispatches(
    db: &Connection,
    by_id: bool,
    out: &mut impl std::io::Write,
    read: &mut Rows<'_>,
    converted: &mut Converted,
) -> Result<rustc_hash::FxHashMap<String, u64>, Written> {
    let sql = select(
        db,
        "kernels",
        &[
            "start",
            "end",
            "name",
            "kernel_id",
            "tid",
            "correlation_id",
            "agent_id",
            "queue_id",
            "stream_id",
            "dispatch_id",
            "lds_size",
            "scratch_size",
            "workgroup_x",
            "workgroup_y",
            "workgroup_z",
            "grid_x",
            "grid_y",
            "grid_z",
        ],
        "",
    )?;
    let mut statement = db.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut named: rustc_hash::FxHashMap<String, u64> = Default::default();
    let mut buf = Vec::with_capacity(512);
    while let Some(row) = rows.next()? {
        read.tick()?;
        let (Some(start), Some(end)) = (opt(row, 0)?, opt(row, 1)?) else { continue };
        let kernel_id = if by_id {
            opt(row, 3)?.unwrap_or(0)
        } else {
            let name = text(row, 2)?.unwrap_or_default();
            let next = named.len() as u64 + 1;
            *named.entry(name).or_insert(next)
        };
        buf.clear();
        if converted.kernels > 0 {
            buf.push(b',');
        }
        let mut dispatch = Obj::open(&mut buf);
        dispatch
            .int("thread_id", opt(row, 4)?)
            .correlation(opt(row, 5)?)
            .int("start_timestamp", Some(start))
            .int("end_timestamp", Some(end));
        dispatch.key("dispatch_info");
        Obj::open(dispatch.buf)
            .wrapped("agent_id", "handle", opt(row, 6)?)
            .wrapped("queue_id", "handle", opt(row, 7)?)
            .int("kernel_id", Some(kernel_id))
            .int("dispatch_id", opt(row, 9)?)
            .int("group_segment_size", opt(row, 10)?)
            .int("private_segment_size", opt(row, 11)?)
            .xyz("workgroup_size", xyz(row, 12)?)
            .xyz("grid_size", xyz(row, 15)?)
            .close();
        dispatch.wrapped("stream_id", "handle", opt(row, 8)?).close();
        out.write_all(&buf)?;
        converted.kernels += 1;
    }
    Ok(named)
}

/// The memory copies.
fn copies(
    db: &Connection,
    out: &mut impl std::io::Write,
    read: &mut Rows<'_>,
    converted: &mut Converted,
) -> Result<(), Written> {
    let sql = select(
        db,
        "memory_copies",
        &["start", "end", "tid", "correlation_id", "size", "src_agent_id", "dst_agent_id"],
        "",
    )?;
    let mut statement = db.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut buf = Vec::with_capacity(512);
    while let Some(row) = rows.next()? {
        read.tick()?;
        let (Some(start), Some(end)) = (opt(row, 0)?, opt(row, 1)?) else { continue };
        buf.clear();
        if converted.copies > 0 {
            buf.push(b',');
        }
        Obj::open(&mut buf)
            .int("thread_id", opt(row, 2)?)
            .correlation(opt(row, 3)?)
            .int("start_timestamp", Some(start))
            .int("end_timestamp", Some(end))
            .wrapped("src_agent_id", "handle", opt(row, 5)?)
            .wrapped("dst_agent_id", "handle", opt(row, 6)?)
            .int("bytes", opt(row, 4)?)
            .close();
        out.write_all(&buf)?;
        converted.copies += 1;
    }
    Ok(())
}

/// The kernel symbols: rocprofv3's names for each (its mangled name, and
/// the formatted, demangled and truncated ones it keeps in `extdata`), the
/// display name where the database has no other (`named`, without its
/// kernel ids). Element 0 a placeholder, as rocprofv3 writes it (kernel
/// ids count from 1, so a reader may index the list by id).
fn symbols(
    db: &Connection,
    by_id: bool,
    named: rustc_hash::FxHashMap<String, u64>,
    out: &mut impl std::io::Write,
) -> Result<(), Written> {
    out.write_all(br#"]},"kernel_symbols":[{"kernel_id":0,"kernel_name":""}"#)?;
    let symbol = |out: &mut _, value: serde_json::Value| {
        std::io::Write::write_all(out, b",")?;
        json(out, &value)
    };
    if by_id {
        each_symbol(db, |s| {
            let value = serde_json::json!({
                "kernel_id": s.id,
                "kernel_name": s.kernel_name,
                "formatted_kernel_name": s.formatted,
                "demangled_kernel_name": s.demangled,
                "truncated_kernel_name": s.truncated,
            });
            Ok::<_, Written>(symbol(out, value)?)
        })?;
    } else {
        let mut named: Vec<(String, u64)> = named.into_iter().collect();
        named.sort_by_key(|(_, id)| *id);
        for (name, id) in named {
            let truncated = truncated_kernel_name(&name).to_string();
            let value = serde_json::json!({
                "kernel_id": id,
                "kernel_name": name,
                "truncated_kernel_name": truncated,
            });
            symbol(out, value)?;
        }
    }
    Ok(())
}

/// `value` as JSON, to `out` (a writer of a type known here, so that the
/// serializer's many small writes are inlined).
fn json(out: &mut impl std::io::Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer(out, value).map_err(std::io::Error::from)
}
