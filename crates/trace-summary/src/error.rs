//! The crate's error type.

use std::{io, path::PathBuf};

/// Why a trace could not be summarized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The trace could not be opened.
    #[error("cannot open {path}")]
    Open {
        /// The trace.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The path is no regular file (a pipe, a device, a socket): it is not
    /// opened (reading `/dev/zero` never ends, and a pipe can be read only
    /// once, where a trace is read more than once).
    #[error(
        "{path} is {what}, not a regular file: traces are read from files (save a stream to one first)"
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is (`a FIFO (a pipe)`, `a character device`, ...).
        what: &'static str,
    },
    /// Reading the trace failed part way (a truncated or corrupt gzip stream,
    /// an I/O error).
    #[error("cannot read {path}{}", if *gzip { " as gzip (truncated or corrupt?)" } else { "" })]
    Read {
        /// The trace.
        path: PathBuf,
        /// Whether it was being gunzipped.
        gzip: bool,
        /// The cause, with the offset reached.
        #[source]
        source: trace_sanitize::Error,
    },
    /// The trace's JSON ends early (its writer was killed part way);
    /// [`crate::Options::salvage`] reads the events complete before the cut.
    #[error(
        "{path} is truncated: its JSON ends after {bytes} bytes{}",
        match events {
            Some(n) => format!(", with {n} complete events before the cut"),
            None => String::new(),
        }
    )]
    Truncated {
        /// The trace.
        path: PathBuf,
        /// Where the JSON text (decompressed) ends.
        bytes: u64,
        /// Events complete before the cut, when known: a Kineto trace's are
        /// counted as they are read; a rocprofv3 trace is read as one
        /// document, so its are not.
        events: Option<usize>,
    },
    /// Something other than whitespace follows the end of the trace's JSON
    /// document (a second document appended, a log line, the zeros a crash
    /// leaves at the end of a file): strict parsers refuse the whole file.
    /// [`crate::Options::salvage`] reads the document and drops the rest.
    #[error(
        "{path} has data after the end of its JSON document{} \
         (a second document appended? a log line? zeros left by a crash?)",
        offset.map(|n| format!(", {n} bytes in")).unwrap_or_default()
    )]
    DataAfterEnd {
        /// The trace.
        path: PathBuf,
        /// Where the data starts (decompressed, repaired bytes). Always known
        /// now; an `Option` for the callers that matched on `None`.
        offset: Option<u64>,
    },
    /// The trace is UTF-16 or UTF-32 text (re-saved by Windows PowerShell,
    /// say), not UTF-8: it must be converted. Said in trace-sanitize's words.
    #[error("{}", trace_sanitize::Error::NotUtf8File { path: path.clone(), encoding })]
    NotUtf8 {
        /// The trace.
        path: PathBuf,
        /// `UTF-16LE`, `UTF-16BE`, `UTF-32LE` or `UTF-32BE`.
        encoding: &'static str,
    },
    /// A Perfetto trace ends inside a packet (its writer was killed part
    /// way, a copy was cut short); [`crate::Options::salvage`] reads the
    /// packets before the cut.
    #[error(
        "{path} is truncated: it ends inside a Perfetto packet, after {bytes} bytes (its writer \
         killed part way? a copy cut short?)"
    )]
    CutPacket {
        /// The trace.
        path: PathBuf,
        /// Where its bytes (decompressed) end.
        bytes: u64,
    },
    /// The trace is compressed data (a `.json.gz` compressed twice, a zstd
    /// file): it must be decompressed first. Said in trace-sanitize's words.
    #[error(
        "{}",
        trace_sanitize::Error::CompressedFile { path: path.clone(), format, twice: *twice }
    )]
    Compressed {
        /// The trace.
        path: PathBuf,
        /// `gzip`, `zstd`, `xz`, `bzip2` or `zip`.
        format: &'static str,
        /// The file is gzip, and what it holds is `format` again.
        twice: bool,
    },
    /// The trace does not start with a JSON object or array (past
    /// whitespace and a byte order mark): text written before it (a log
    /// line), or no trace at all.
    #[error(
        "{path} is not a trace: it starts with {}, not a JSON object (a log line before the \
         trace? not a trace?)",
        trace_sanitize::DisplayByte(*first)
    )]
    NotADocument {
        /// The trace.
        path: PathBuf,
        /// Its first byte other than whitespace.
        first: u8,
    },
    /// A bare word that is not JSON where a value goes (`None`, `True`,
    /// `undefined`: a writer that printed Python's or JavaScript's values
    /// where JSON was meant): no repair applies, so no strict parser reads
    /// the trace.
    #[error(
        "{path} is not JSON at byte {offset}: `{text}`{} is a bare word where {expected} goes \
         ({}), and no repair applies",
        key.as_ref().map(|k| format!(" (the value of \"{k}\")")).unwrap_or_default(),
        trace_sanitize::NotJson::LIKELY
    )]
    NotJson {
        /// The trace.
        path: PathBuf,
        /// Where the word starts (decompressed bytes, before any repair).
        offset: u64,
        /// The word (at most 32 bytes of it).
        text: String,
        /// The key it is the value of, when known.
        key: Option<String>,
        /// What goes where it stands, in words: `a value`, or where a
        /// quote ended a string early, say `a key` or `` `,` or `}` ``.
        expected: String,
    },
    /// A token where the JSON grammar allows none (a string where `:` goes,
    /// a `]` where a `{` is open), most likely left by a string that a
    /// quote inside it ended early; or a number that is not JSON (`1.2.3`),
    /// or one of orjson's limits passed ([`trace_sanitize::Break`]): no
    /// repair applies.
    #[error(
        "{path} is not JSON at byte {offset}: {found} where {expected} goes ({}), and no repair \
         applies",
        kind.likely()
    )]
    Malformed {
        /// The trace.
        path: PathBuf,
        /// Where the token starts (decompressed bytes, before any repair).
        offset: u64,
        /// What is there, in words (a number: quoted).
        found: String,
        /// What goes there, in words.
        expected: String,
        /// What breaks the JSON there.
        kind: trace_sanitize::Break,
    },
    /// The trace ends inside a string, though its last byte is `}` or `]`:
    /// not cut short, but a string that never ends, so that the rest of
    /// the file reads as one string. No repair applies.
    #[error(
        "{path} is not JSON: {}, though it ends in `}}` or `]` ({}), and no repair applies",
        trace_sanitize::Report::UNCLOSED_STRING,
        trace_sanitize::Malformed::LIKELY
    )]
    UnclosedString {
        /// The trace.
        path: PathBuf,
    },
    /// [`crate::Options::cancel`] was raised while the trace was read.
    #[error("stopped reading {path}")]
    Cancelled {
        /// The trace.
        path: PathBuf,
    },
    /// The trace is not a Chrome trace JSON, or a rocprofv3 one, that this
    /// crate can read (after sanitizing): valid JSON missing a field, say.
    #[error("{path} is not a readable {}", called(*format))]
    Parse {
        /// The trace.
        path: PathBuf,
        /// What it was read as, when that was known.
        format: Option<crate::Format>,
        /// Why: the parser's error, with line and column.
        #[source]
        source: ParseError,
    },
    /// A SQLite file that could not be read as rocprofv3's rocpd output
    /// (`<pid>_results.db`): SQLite's own error, or what it lacks.
    #[error("{path} is not a readable rocpd database")]
    Database {
        /// The database file.
        path: PathBuf,
        /// Why.
        #[source]
        source: DatabaseError,
    },
    /// An output file could not be written (its directory missing or
    /// read-only, the disk full): nothing is left at its path.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A report's CSV (`gpu_timeline.csv`, ...) could not be read as one.
    #[error("cannot read {path} as a report table")]
    Csv {
        /// The CSV file.
        path: PathBuf,
        /// The cause, with the line.
        #[source]
        source: csv::Error,
    },
    /// A report's CSV lacks a column its table has.
    #[error("{path} has no `{column}` column: not a TraceLens {table} table")]
    CsvColumn {
        /// The CSV file.
        path: PathBuf,
        /// Its table (`gpu_timeline`, ...).
        table: &'static str,
        /// The column missing.
        column: &'static str,
    },
}

impl Error {
    /// Whether the trace was cut short (its JSON ends early, or its gzip
    /// stream does): what [`crate::Options::salvage`] reads anyway.
    pub fn is_cut_short(&self) -> bool {
        match self {
            Error::Truncated { .. } | Error::CutPacket { .. } => true,
            // Not one whose checksum fails, or with data after it.
            Error::Read { gzip: true, source, .. } => !trace_sanitize::damaged_gzip(source),
            _ => false,
        }
    }

    /// Whether [`crate::Options::salvage`] reads the trace anyway: it was
    /// cut short, data follows its document, or its last string never ends.
    pub fn is_salvageable(&self) -> bool {
        self.salvage_reads().is_some()
    }

    /// What [`crate::Options::salvage`] reads of the trace, in words, where
    /// it reads it anyway ([`Error::is_salvageable`]).
    pub fn salvage_reads(&self) -> Option<&'static str> {
        match self {
            _ if self.is_cut_short() => Some("the events complete before the cut"),
            Error::UnclosedString { .. } => Some("the events complete before that string"),
            Error::DataAfterEnd { .. } => Some("the document without it"),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a trace read as `format` is called in a message: `Chrome trace`,
/// `rocprofv3 trace`, or `trace` when that is not known.
/// An error and its causes on one line, `: ` between them: `x.json is not
/// a readable Chrome trace: EOF while parsing a string at line 1 column 9`.
pub fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// Why a trace could not be parsed ([`Error::Parse`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The JSON reader's error, with its line and column.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Its first bytes could not be read.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// What else is wrong with it, in words (a Perfetto packet that does not
    /// decode, a trace that ends before anything in it is complete).
    #[error("{0}")]
    Said(String),
}

/// Why a SQLite file is not a readable rocpd database ([`Error::Database`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseError {
    /// SQLite's error, and what it likely means where that is known (a
    /// database cut short, a view that computes without end).
    #[error("{error}{likely}")]
    Sqlite {
        /// SQLite's error.
        error: rusqlite::Error,
        /// What it likely means: empty, or ` (cut short or damaged: ...)`.
        likely: &'static str,
    },
    /// What the database lacks, or holds that rocprofv3's does not.
    #[error("{0}")]
    NotRocpd(String),
}

fn called(format: Option<crate::Format>) -> &'static str {
    match format {
        Some(crate::Format::Kineto) => "Chrome trace",
        Some(crate::Format::Rocprofv3) => "rocprofv3 trace",
        Some(crate::Format::Perfetto) => "Perfetto trace",
        None => "trace",
    }
}
