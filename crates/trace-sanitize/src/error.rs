//! The crate's error type.

use std::{
    io,
    path::{Path, PathBuf},
};

/// Everything that can go wrong while sanitizing or checking a trace.
///
/// Each variant names the file (or the stream position) involved; the
/// underlying cause is available through `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the input stream failed.
    #[error("failed to read the input at byte {offset}")]
    Read {
        /// Bytes successfully read before the failure.
        offset: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The caller raised `Options::cancel`.
    #[error("stopped after {offset} bytes, as asked")]
    Cancelled {
        /// Bytes scanned before the stop.
        offset: u64,
    },
    /// The caller raised `Options::cancel` while a file was read; no output
    /// file was left.
    #[error("interrupted while reading {path} ({offset} bytes in); no output was written")]
    CancelledFile {
        /// The input.
        path: PathBuf,
        /// Bytes scanned before the stop (of the decompressed content for gzip).
        offset: u64,
    },
    /// Writing the output stream failed.
    #[error("failed to write the output after {offset} bytes")]
    Write {
        /// Bytes successfully written before the failure.
        offset: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The input file could not be opened or inspected.
    #[error("cannot open {path}")]
    Open {
        /// The input file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Reading or decompressing the input file failed part-way.
    #[error("failed to read {path} at byte {offset}{}", if *.compressed { " of its decompressed content" } else { "" })]
    ReadFile {
        /// The input file.
        path: PathBuf,
        /// Bytes successfully read (decompressed) before the failure.
        offset: u64,
        /// Whether the file is gzip-compressed (so the error may be bad gzip data).
        compressed: bool,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// [`crate::salvage`]: the input ended before any object or array in it
    /// was complete, so there is nothing to keep.
    #[error(
        "the input ends after {offset} bytes, before any object or array in it is complete: nothing to salvage"
    )]
    NothingComplete {
        /// Bytes read before it ended.
        offset: u64,
    },
    /// [`crate::salvage`]: the input does not start with a JSON object or
    /// array (past whitespace), so where a document would start is unknown.
    #[error(
        "the input starts with {}, not a JSON object or array: nothing to salvage",
        DisplayByte(*first)
    )]
    NotADocument {
        /// Its first byte other than whitespace.
        first: u8,
    },
    /// [`crate::salvage_file`]: the file does not start with a JSON object
    /// or array (past whitespace): text written before the trace (a log
    /// line), or no trace at all.
    #[error(
        "{path} starts with {}, not a JSON object or array (a log line before the trace? not a \
         trace?): nothing to salvage",
        DisplayByte(*first)
    )]
    NotADocumentFile {
        /// The input file.
        path: PathBuf,
        /// Its first byte other than whitespace.
        first: u8,
    },
    /// [`crate::salvage_file`]: the input was cut short before any value in
    /// it was complete, so there is nothing to keep.
    #[error(
        "{path} ends after {offset} bytes, before any object or array in it is complete: nothing to salvage"
    )]
    NothingToSalvage {
        /// The input file.
        path: PathBuf,
        /// Bytes read (decompressed) before it ended.
        offset: u64,
    },
    /// The input is UTF-16 or UTF-32 text (a trace re-saved by Windows
    /// PowerShell, say), not UTF-8. Strict parsers refuse it, and a repair
    /// byte by byte would only mangle it: it must be converted.
    #[error("the input is {encoding} text, not UTF-8")]
    NotUtf8 {
        /// `UTF-16LE`, `UTF-16BE`, `UTF-32LE` or `UTF-32BE`.
        encoding: &'static str,
    },
    /// [`Error::NotUtf8`] of a file.
    #[error(
        "{path} is {encoding} text, not UTF-8 (re-saved on Windows?): convert it first, \
         e.g. with `iconv -f {encoding} -t UTF-8`"
    )]
    NotUtf8File {
        /// The input file.
        path: PathBuf,
        /// `UTF-16LE`, `UTF-16BE`, `UTF-32LE` or `UTF-32BE`.
        encoding: &'static str,
    },
    /// The input is a Perfetto trace (protobuf `TracePacket`s, as rocprofv3
    /// `--output-format pftrace` writes), not JSON: there is nothing to
    /// repair, and a repair byte by byte would only mangle it.
    #[error("the input is a Perfetto protobuf trace, not JSON")]
    Perfetto,
    /// [`Error::Perfetto`] of a file.
    #[error(
        "{path} is a Perfetto protobuf trace (as rocprofv3 --output-format pftrace writes), not \
         JSON: there is nothing to repair (TraceLens reads it through traceconv)"
    )]
    PerfettoFile {
        /// The input file.
        path: PathBuf,
    },
    /// The input is a SQLite database ([`crate::is_sqlite`]: rocprofv3's
    /// rocpd output, `<pid>_results.db`, or an RPD file), not JSON: there is
    /// nothing to repair, and a repair byte by byte would only mangle it.
    #[error("the input is a SQLite database, not JSON")]
    Sqlite,
    /// [`Error::Sqlite`] of a file.
    #[error(
        "{path} is a SQLite database (rocprofv3's rocpd output, or RPD), not JSON: there is \
         nothing to repair (rocprofv3's rocpd databases are read as they are)"
    )]
    SqliteFile {
        /// The input file.
        path: PathBuf,
    },
    /// The input is compressed data ([`crate::compressed_format`]): a gzip stream
    /// inside a gzip file (compressed twice), or zstd, xz, bzip2 or zip.
    /// Repaired byte by byte it would only be mangled: decompress it first.
    #[error("the input is {format}-compressed data, not JSON")]
    Compressed {
        /// `gzip`, `zstd`, `xz`, `bzip2` or `zip`.
        format: &'static str,
    },
    /// [`Error::Compressed`] of a file.
    #[error("{}", compressed_file(path, format, *twice))]
    CompressedFile {
        /// The input file.
        path: PathBuf,
        /// `gzip`, `zstd`, `xz`, `bzip2` or `zip`.
        format: &'static str,
        /// The file is gzip, and what it holds is `format` again.
        twice: bool,
    },
    /// Writing the output file failed; the partial output was removed.
    #[error("failed to write {path}")]
    WriteFile {
        /// The final output path (the data was going to a temporary file beside it).
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The output path names the input file itself (directly, through a
    /// symlink or through a hard link).
    #[error(
        "the output {output} is the input {input}; the input is never modified, choose another output path"
    )]
    SameFile {
        /// The input file.
        input: PathBuf,
        /// The output path given.
        output: PathBuf,
    },
}

/// A byte as a message shows it: `'W'` when printable ASCII, else `0x00`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisplayByte(pub u8);

impl std::fmt::Display for DisplayByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.0;
        if b.is_ascii_graphic() { write!(f, "'{}'", b as char) } else { write!(f, "0x{b:02x}") }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What [`Error::CompressedFile`] says: what the file is, and how to
/// decompress it.
fn compressed_file(path: &Path, format: &str, twice: bool) -> String {
    let command = decompress_command(path, format, twice);
    let path = path.display();
    match twice {
        true => format!(
            "{path} is compressed twice (its gzip holds {format}-compressed data, not JSON): \
             decompress both first, e.g. `{command}`"
        ),
        false => format!(
            "{path} is {format}-compressed, not JSON: decompress it first, e.g. `{command}`"
        ),
    }
}

/// The shell command that decompresses the trace at `path`, compressed
/// with `format` (`gzip`, `zstd`, `xz`, `bzip2`, `zip`; with `twice`, a gzip
/// holding `format` data again), into a file beside it named as the trace
/// without its compression extensions (`rank0.pt.trace.json.zst` to
/// `rank0.pt.trace.json`, found by `trace discover` as the original was
/// named; `archive.zip` to `archive.json`), never as the trace itself (a
/// command that wrote over its input would destroy it: `trace.json` to
/// `trace.decompressed.json`, `z.pt.trace.json` to
/// `z.decompressed.pt.trace.json`, still a name `trace discover` finds). Paths are quoted for a POSIX shell where
/// they need it.
pub fn decompress_command(path: &Path, format: &str, twice: bool) -> String {
    const COMPRESSED: [&str; 7] = [".gz", ".gzip", ".zst", ".zstd", ".xz", ".bz2", ".zip"];
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let mut plain: &str = &name;
    while let Some(stem) = COMPRESSED.iter().find_map(|e| plain.strip_suffix(e)) {
        plain = stem;
    }
    let output = match plain.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() && plain != name => plain.to_string(),
        _ if plain.find('.').is_some_and(|at| at > 0) => plain.replacen('.', ".decompressed.", 1),
        _ if !plain.is_empty() && plain != name => format!("{plain}.json"),
        _ => format!("{plain}.decompressed.json"),
    };
    let quote = |p: &Path| {
        let p = p.to_string_lossy();
        shlex::try_quote(&p).map_or_else(|_| p.to_string(), |q| q.into_owned())
    };
    let (input, output) = (quote(path), quote(&path.with_file_name(output)));
    match twice {
        true => format!("zcat {input} | {} > {output}", decompressor(format)),
        false => format!("{} {input} > {output}", decompressor(format)),
    }
}

/// The command that decompresses a format to stdout (from the file it is
/// given, or stdin).
fn decompressor(format: &str) -> &'static str {
    match format {
        "gzip" => "gunzip -c",
        "zstd" => "zstd -dc",
        "xz" => "xz -dc",
        "bzip2" => "bunzip2 -c",
        _ => "unzip -p",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decompress_command_never_writes_over_its_input() {
        for (path, format, twice, command) in [
            (
                "runs/rank0.pt.trace.json.zst",
                "zstd",
                false,
                "zstd -dc runs/rank0.pt.trace.json.zst > runs/rank0.pt.trace.json",
            ),
            ("t.json.gz", "gzip", true, "zcat t.json.gz | gunzip -c > t.json"),
            ("t.json.gz.gz", "gzip", true, "zcat t.json.gz.gz | gunzip -c > t.json"),
            ("/r/trace.json", "zstd", false, "zstd -dc /r/trace.json > /r/trace.decompressed.json"),
            (
                "z.pt.trace.json",
                "zstd",
                false,
                "zstd -dc z.pt.trace.json > z.decompressed.pt.trace.json",
            ),
            ("trace", "xz", false, "xz -dc trace > trace.decompressed.json"),
            ("archive.zip", "zip", false, "unzip -p archive.zip > archive.json"),
            ("a.bz2", "bzip2", false, "bunzip2 -c a.bz2 > a.json"),
            (
                "my runs/it's.json.xz",
                "xz",
                false,
                r#"xz -dc "my runs/it's.json.xz" > "my runs/it's.json""#,
            ),
        ] {
            assert_eq!(decompress_command(Path::new(path), format, twice), command, "{path}");
        }
    }
}
