//! Sanitizing and checking files: `.json` or `.json.gz`, written atomically.

use std::{
    cell::{Cell, RefCell},
    ffi::OsString,
    fs::{self, File},
    io::{self, BufWriter, Read, Write},
    path::{Path, PathBuf},
    rc::Rc,
};

use flate2::write::GzEncoder;
use serde::Serialize;

use crate::{
    Error, Options, Report, Result, copy,
    stream::{ClosingSink, EndAtError, ShapeSink, Sink, Tee, WriteSink, finish_salvage, scan},
};

/// How a trace file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// Plain JSON.
    None,
    /// gzip (`.json.gz`); detected by its magic bytes, not its name.
    Gzip,
}

/// The version of [`FileReport`]'s and [`FileReports`]' shapes, as
/// `--json` prints them: raised when a key is renamed or removed or
/// changes its meaning.
pub const REPORT_VERSION: u32 = 1;

/// What [`sanitize_file`] or [`check_file`] did to one file.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileReport {
    /// [`REPORT_VERSION`] (0: a document written before it had one).
    #[serde(default)]
    pub version: u32,
    /// The input file (never modified).
    #[serde(serialize_with = "crate::lossy::path")]
    pub input: PathBuf,
    /// The output file written, `None` for a check.
    #[serde(serialize_with = "crate::lossy::option")]
    pub output: Option<PathBuf>,
    /// The input's compression.
    pub compression: Compression,
    /// The output's compression, told by its name (`.gz`: gzip); `None`
    /// for a check.
    pub output_compression: Option<Compression>,
    /// Size of the input file on disk.
    pub input_size: u64,
    /// What was found and repaired. Offsets are in the decompressed content.
    pub report: Report,
}

/// Several files' reports, as one document.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FileReports {
    /// [`REPORT_VERSION`].
    #[serde(default)]
    pub version: u32,
    /// Each file's, in the order given.
    pub traces: Vec<FileReport>,
}

impl FileReports {
    /// `traces`, as one document.
    pub fn new(traces: Vec<FileReport>) -> FileReports {
        FileReports { version: REPORT_VERSION, traces }
    }
}

/// Progress of a file pass: bytes of the input file read so far, out of its size.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// The output name used when none is given: `.sanitized` goes before the
/// trace suffix, so `run.pt.trace.json.gz` becomes `run.sanitized.pt.trace.json.gz`
/// and `908_results.json` becomes `908_results.sanitized.json`.
pub fn default_output_path(input: &Path) -> PathBuf {
    let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let suffixes = [".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"];
    let new_name = match suffixes.iter().find(|s| name.len() > s.len() && name.ends_with(*s)) {
        Some(suffix) => {
            let stem = &name[..name.len() - suffix.len()];
            OsString::from(format!("{stem}.sanitized{suffix}"))
        }
        None => {
            let mut n = input.file_name().map(OsString::from).unwrap_or_default();
            n.push(".sanitized");
            n
        }
    };
    input.with_file_name(new_name)
}

/// Report what [`sanitize_file`] would repair in `input`, writing nothing.
pub fn check_file(input: &Path, options: &Options, progress: Progress<'_>) -> Result<FileReport> {
    let (file, size, compression, _) = open(input)?;
    let (report, shape) = scan_following(input, file, compression, options, size, progress)?;
    let report = shape.finish(report)?;
    Ok(FileReport {
        version: REPORT_VERSION,
        input: input.to_path_buf(),
        output: None,
        compression,
        output_compression: None,
        input_size: size,
        report,
    })
}

/// Write a repaired copy of `input` to `output`: gzip when `output`'s name
/// ends in `.gz`, else plain JSON, whatever the input's compression
/// ([`output_compression`]).
///
/// The input is never modified, and an `output` that is the input (also
/// through a symlink or a hard link) is refused. The data goes to a temporary
/// file beside `output` that is renamed into place only when complete, so a
/// failure leaves no partial file. A clean input is copied byte for byte
/// when the compression stays (for `.json.gz` the compressed bytes
/// themselves).
pub fn sanitize_file(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: Progress<'_>,
) -> Result<FileReport> {
    write_output(input, output, |file, opened, tmp| {
        let Opened { size, compression, regular, output: out_compression } = *opened;
        let write_err = |source| Error::WriteFile { path: output.to_path_buf(), source };
        let repair = |file: File, progress: Progress<'_>| {
            encoded(tmp, out_compression, output, |out| {
                let mut sink = Tee(WriteSink { inner: out, written: 0 }, ShapeSink::new());
                let report =
                    scan_file(input, file, compression, &mut sink, options, size, None, progress)?;
                let Tee(written, shape) = sink;
                shape.onto(Report { bytes_written: written.written, ..report })
            })
        };
        match (compression, out_compression, regular) {
            (Compression::None, Compression::None, true) => {
                // Scan on this thread; others write what it scanned and
                // follow its grammar.
                let (shape, out) = (ShapeSink::new(), Some(tmp));
                match scan_beside(
                    input,
                    file,
                    compression,
                    shape,
                    out,
                    None,
                    options,
                    size,
                    progress,
                ) {
                    Beside { scanned: Err(e @ Error::ReadFile { .. }), .. } => Err(e),
                    Beside { written: Err(source), .. } => Err(write_err(source)),
                    Beside { shape: Err(e), .. } | Beside { scanned: Err(e), .. } => Err(e),
                    Beside { scanned: Ok(report), written: Ok(written), shape: Ok(shape) } => {
                        shape.onto(Report { bytes_written: written, ..report })
                    }
                }
            }
            (Compression::Gzip, Compression::Gzip, true) => {
                // Most traces are clean: find out first, so a clean one is copied
                // as it is instead of being decompressed and compressed again.
                let first = Options { stop_at_first: true, ..options.clone() };
                let (probe, shape) =
                    scan_following(input, file, compression, &first, size, progress)?;
                let mut file = reopen(input)?;
                if probe.needs_repair() {
                    return repair(file, progress);
                }
                io::copy(&mut file, &mut &*tmp).map_err(|source| Error::WriteFile {
                    path: output.to_path_buf(),
                    source: io::Error::new(
                        source.kind(),
                        format!("copying {}: {source}", input.display()),
                    ),
                })?;
                progress(size, size);
                shape.onto(Report { bytes_written: probe.bytes_read, ..probe })
            }
            // A pipe or device (read once, so no kernel copy), or a change of
            // compression: decode, repair and encode in one pass.
            _ => repair(file, progress),
        }
    })
}

/// [`sanitize_file`], and an input cut short (a profiler killed while
/// writing it, a gzip stream cut off) is closed: everything up to its last
/// complete object or array is kept, the rest (a partial event) dropped, and
/// the brackets still open are closed, so a strict parser reads every
/// complete event. Data after the end of the document (a second one, a log
/// line, zeros) is dropped likewise ([`crate::CutKind::DataAfterEnd`]).
/// [`Report::cut`] says where and how; it is `None` for a complete input,
/// whose output is what [`sanitize_file`] writes. An input
/// cut before any object or array in it is complete is
/// [`Error::NothingToSalvage`]. The output is compressed as its name says
/// ([`output_compression`]) and written atomically.
pub fn salvage_file(
    input: &Path,
    output: &Path,
    options: &Options,
    progress: Progress<'_>,
) -> Result<FileReport> {
    write_output(input, output, |file, opened, tmp| {
        let Opened { size, compression, output: out_compression, .. } = *opened;
        encoded(tmp, out_compression, output, |out| {
            salvage_into(input, file, compression, out, options, size, progress)
        })
    })
}

/// Let `fill` write into `tmp` through the `encoding` (buffered; gzip
/// finished), with its write errors naming `output`.
fn encoded(
    tmp: &File,
    encoding: Compression,
    output: &Path,
    fill: impl FnOnce(&mut (dyn Write + Send)) -> Result<Report>,
) -> Result<Report> {
    let write_err = |source| Error::WriteFile { path: output.to_path_buf(), source };
    let named = |e: Error| match e {
        Error::Write { source, .. } => write_err(source),
        other => other,
    };
    let mut buffered = BufWriter::with_capacity(1 << 16, tmp);
    let report = match encoding {
        Compression::None => fill(&mut buffered).map_err(named)?,
        Compression::Gzip => {
            let mut encoder = GzEncoder::new(buffered, flate2::Compression::fast());
            let report = fill(&mut encoder).map_err(named)?;
            buffered = encoder.finish().map_err(write_err)?;
            report
        }
    };
    buffered.into_inner().map_err(|e| write_err(e.into_error()))?;
    Ok(report)
}

/// What [`open`] found out about an input, and the output's compression.
#[derive(Clone, Copy)]
struct Opened {
    size: u64,
    compression: Compression,
    regular: bool,
    output: Compression,
}

/// How [`sanitize_file`] and [`salvage_file`] compress an output: gzip when
/// its name ends in `.gz`, else not. So `-o trace.json` of a `.json.gz`
/// input is plain JSON, never gzip bytes under a `.json` name.
pub fn output_compression(output: &Path) -> Compression {
    if output.as_os_str().as_encoded_bytes().ends_with(b".gz") {
        Compression::Gzip
    } else {
        Compression::None
    }
}

/// Open `input`, refuse an `output` that is the input, let `fill` write the
/// temporary file beside `output`, then rename it into place: the shared
/// frame of [`sanitize_file`] and [`salvage_file`].
fn write_output(
    input: &Path,
    output: &Path,
    fill: impl FnOnce(File, &Opened, &File) -> Result<Report>,
) -> Result<FileReport> {
    let (file, size, compression, regular) = open(input)?;
    refuse_same_file(input, &file, output)?;
    let out = crate::output::Out::begin(output)
        .map_err(|source| Error::WriteFile { path: output.to_path_buf(), source })?;
    let opened = Opened { size, compression, regular, output: output_compression(output) };
    let report = fill(file, &opened, out.file())?;
    persist(out, input, regular, output)?;
    Ok(FileReport {
        version: REPORT_VERSION,
        input: input.to_path_buf(),
        output: Some(output.to_path_buf()),
        compression,
        output_compression: Some(opened.output),
        input_size: size,
        report,
    })
}

/// The sanitizing scan of [`salvage_file`] into `out`, through a [`crate::close::Closer`]:
/// a failed read ends the input there instead of failing.
fn salvage_into(
    path: &Path,
    file: File,
    compression: Compression,
    out: &mut (dyn Write + Send),
    options: &Options,
    size: u64,
    progress: Progress<'_>,
) -> Result<Report> {
    let failed = RefCell::new(None);
    // Scan on this thread; a second one follows the grammar, which decides
    // what is written (up to the last whole record), and writes it.
    let closing = ClosingSink::new(out);
    let none = None::<io::Sink>;
    let beside =
        scan_beside(path, file, compression, closing, none, Some(&failed), options, size, progress);
    // The closer's error (a write that failed) first: the scan's is only
    // that the closer stopped.
    let sink = beside.shape?;
    match finish_salvage(sink, beside.scanned?, failed.into_inner()) {
        Ok((_, report)) => Ok(report),
        Err(Error::NothingComplete { offset }) => {
            Err(Error::NothingToSalvage { path: path.to_path_buf(), offset })
        }
        Err(Error::NotADocument { first }) => {
            Err(Error::NotADocumentFile { path: path.to_path_buf(), first })
        }
        Err(other) => Err(other),
    }
}

/// Give the finished temporary file the input's permission bits (rather
/// than its own 0600; 0644 when the input is a pipe or a device) and rename
/// it onto `output`.
fn persist(out: crate::output::Out, input: &Path, regular: bool, output: &Path) -> Result<()> {
    let permissions = if regular {
        fs::metadata(input).ok().map(|m| m.permissions())
    } else {
        crate::output::default_permissions()
    };
    out.finish(permissions)
        .map_err(|source| Error::WriteFile { path: output.to_path_buf(), source })
}

/// The input, its size, its compression and whether it is a regular file
/// (a pipe such as `/dev/stdin` can be read only once: its compression is
/// told by its name, not by reading its first bytes).
fn open(path: &Path) -> Result<(File, u64, Compression, bool)> {
    let open_err = |source| Error::Open { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")));
    }
    if !meta.is_file() {
        let gz = path.as_os_str().as_encoded_bytes().ends_with(b".gz");
        return Ok((file, 0, if gz { Compression::Gzip } else { Compression::None }, false));
    }
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut file, &mut magic).map_err(open_err)?;
    let compression =
        if n == 2 && magic == [0x1f, 0x8b] { Compression::Gzip } else { Compression::None };
    drop(file);
    Ok((reopen(path)?, meta.len(), compression, true))
}

fn reopen(path: &Path) -> Result<File> {
    File::open(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// What [`scan_beside`] did: the scan's report, the bytes written (none
/// without an output) and the sink that followed the grammar.
struct Beside<S> {
    scanned: Result<Report>,
    written: io::Result<u64>,
    shape: Result<S>,
}

/// [`scan_file`] on this thread, while a second one passes what it scanned
/// through `follower` (a [`ShapeSink`] that follows the grammar, or a
/// salvage's sink, which also writes) and, given an `output`, a third
/// writes it there.
#[allow(clippy::too_many_arguments, reason = "scan_file's, and what reads beside it")]
fn scan_beside<S: Sink + Send, W: Write + Send>(
    path: &Path,
    file: File,
    compression: Compression,
    mut follower: S,
    output: Option<W>,
    failed: Option<&RefCell<Option<io::Error>>>,
    options: &Options,
    size: u64,
    progress: Progress<'_>,
) -> Beside<S> {
    std::thread::scope(|scope| {
        let (back, spare) = copy::channel();
        let (to_follower, chunks) = copy::channel();
        let follower = scope.spawn({
            let back = back.clone();
            move || copy::follow_chunks(chunks, back, &mut follower).map(|()| follower)
        });
        let mut readers = vec![to_follower];
        let writer = output.map(|out| {
            let (to_writer, chunks) = copy::channel();
            readers.push(to_writer);
            scope.spawn(move || copy::write_chunks(out, chunks, back))
        });
        let mut sink = copy::ChunkSink::new(readers, spare);
        let scanned =
            scan_file(path, file, compression, &mut sink, options, size, failed, progress);
        drop(sink);
        let written = writer.map_or(Ok(0), |w| joined(w.join()));
        Beside { scanned, written, shape: joined(follower.join()) }
    })
}

/// [`scan_beside`] with no output: the scan's report, and the shape of what
/// it scanned, found on a second thread.
fn scan_following(
    path: &Path,
    file: File,
    compression: Compression,
    options: &Options,
    size: u64,
    progress: Progress<'_>,
) -> Result<(Report, ShapeSink)> {
    let (shape, none) = (ShapeSink::new(), None::<io::Sink>);
    match scan_beside(path, file, compression, shape, none, None, options, size, progress) {
        Beside { shape: Err(e), .. } | Beside { scanned: Err(e), .. } => Err(e),
        Beside { scanned: Ok(report), shape: Ok(shape), .. } => Ok((report, shape)),
    }
}

/// A thread's result. A panic there is a bug, as one on the scan's thread
/// would be: it goes on.
fn joined<T>(result: std::thread::Result<T>) -> T {
    result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Scan a file into `sink`. With `failed`, a read error ends the input
/// there (it is kept in `failed`) instead of failing the scan.
#[allow(clippy::too_many_arguments, reason = "one private helper for every file pass")]
fn scan_file(
    path: &Path,
    file: File,
    compression: Compression,
    sink: &mut dyn Sink,
    options: &Options,
    size: u64,
    failed: Option<&RefCell<Option<io::Error>>>,
    progress: Progress<'_>,
) -> Result<Report> {
    let counter = Rc::new(Cell::new(0u64));
    let raw = Counting { inner: file, count: Rc::clone(&counter) };
    let mut tick = |_| progress(counter.get(), size);
    let input: Box<dyn Read + '_> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(crate::Gunzip::new(io::BufReader::new(raw))),
    };
    let result = match failed {
        None => scan(input, sink, options, &mut tick),
        Some(failed) => scan(EndAtError { inner: input, failed }, sink, options, &mut tick),
    };
    result.map_err(|e| match e {
        Error::Read { offset, source } => Error::ReadFile {
            path: path.to_path_buf(),
            offset,
            compressed: compression == Compression::Gzip,
            source,
        },
        Error::Cancelled { offset } => Error::CancelledFile { path: path.to_path_buf(), offset },
        Error::NotUtf8 { encoding } => Error::NotUtf8File { path: path.to_path_buf(), encoding },
        Error::Perfetto => Error::PerfettoFile { path: path.to_path_buf() },
        Error::Sqlite => Error::SqliteFile { path: path.to_path_buf() },
        Error::Compressed { format } => Error::CompressedFile {
            path: path.to_path_buf(),
            format,
            twice: compression == Compression::Gzip,
        },
        other => other,
    })
}

struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

fn refuse_same_file(input: &Path, input_file: &File, output: &Path) -> Result<()> {
    let same = || Err(Error::SameFile { input: input.to_path_buf(), output: output.to_path_buf() });
    // Follows symlinks; equal (device, inode) also catches hard links.
    if let (Ok(out_meta), Ok(in_meta)) = (fs::metadata(output), input_file.metadata())
        && same_inode(&in_meta, &out_meta)
    {
        return same();
    }
    if let (Ok(a), Ok(b)) = (fs::canonicalize(input), canonical_target(output))
        && a == b
    {
        return same();
    }
    Ok(())
}

/// The canonical form of a path that may not exist yet (its parent does).
fn canonical_target(path: &Path) -> io::Result<PathBuf> {
    if let Ok(p) = fs::canonicalize(path) {
        return Ok(p);
    }
    let parent = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| io::Error::other("no file name"))?;
    Ok(fs::canonicalize(parent)?.join(name))
}

#[cfg(unix)]
fn same_inode(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_inode(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_output_names() {
        let check = |input: &str, expected: &str| {
            assert_eq!(default_output_path(Path::new(input)), PathBuf::from(expected), "{input}");
        };
        check("a/x.json", "a/x.sanitized.json");
        check("r.pt.trace.json.gz", "r.sanitized.pt.trace.json.gz");
        check("w.pt.trace.json", "w.sanitized.pt.trace.json");
        check("908_results.json", "908_results.sanitized.json");
        check("rank0.json.gz", "rank0.sanitized.json.gz");
        check("trace", "trace.sanitized");
        check(".json", ".json.sanitized");
    }

    /// A trace of `events` events, one invalid UTF-8 byte in the first.
    fn trace(events: usize) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let mut text = b"{\"traceEvents\": [".to_vec();
        for i in 0..events {
            let name: &[u8] = if i == 0 { b"k\xff" } else { b"kernel" };
            text.extend_from_slice(if i == 0 { b"" } else { b"," });
            text.extend_from_slice(b"{\"name\": \"");
            text.extend_from_slice(name);
            text.extend_from_slice(format!("\", \"ts\": {i}, \"dur\": 1.5}}").as_bytes());
        }
        text.extend_from_slice(b"]}");
        file.write_all(&text).unwrap();
        file
    }

    /// What [`scan_beside`] gives for `path`, written to `output`.
    fn beside(path: &Path, output: Option<impl Write + Send>) -> Beside<ShapeSink> {
        let file = File::open(path).unwrap();
        let size = file.metadata().unwrap().len();
        let options = Options::default();
        let (shape, progress) = (ShapeSink::new(), &mut |_, _| {});
        scan_beside(path, file, Compression::None, shape, output, None, &options, size, progress)
    }

    #[test]
    fn the_writer_and_the_grammar_s_thread_see_every_chunk() {
        // Many more chunks than are in flight, so that buffers come back.
        let input = trace(200_000);
        let expected = fs::read(input.path()).unwrap();
        let mut written = Vec::new();
        let Beside { scanned, written: n, shape } = beside(input.path(), Some(&mut written));
        let report = shape.unwrap().onto(scanned.unwrap()).unwrap();
        assert!(expected.len() > 20 * crate::stream::CHUNK, "{}", expected.len());
        assert_eq!(n.unwrap(), written.len() as u64);
        assert_eq!(written.len(), expected.len() + 2, "U+FFFD is 3 bytes for 1");
        assert_eq!(report.complete, Some(true));
        assert!(report.malformed.is_none() && report.counts.total() == 1, "{report:?}");
        serde_json::from_slice::<serde::de::IgnoredAny>(&written).unwrap();
    }

    /// An output that takes this many bytes, then fails.
    struct Full(usize);

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 < buf.len() {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_that_fails_stops_the_scan_and_says_why() {
        // It fails after a few chunks: the scan, blocked on it, must end.
        let input = trace(200_000);
        let Beside { scanned, written, shape } = beside(input.path(), Some(Full(3 << 17)));
        assert_eq!(written.unwrap_err().kind(), io::ErrorKind::StorageFull);
        assert!(matches!(scanned, Err(Error::Write { .. })), "{scanned:?}");
        shape.unwrap();
    }

    #[test]
    fn a_salvage_is_closed_on_its_own_thread_and_its_write_error_told() {
        let input = trace(200_000);
        let mut text = fs::read(input.path()).unwrap();
        text.truncate(text.len() - 20);
        fs::write(input.path(), &text).unwrap();
        let salvage = |out: &mut (dyn Write + Send)| {
            let file = File::open(input.path()).unwrap();
            let size = text.len() as u64;
            let options = Options::default();
            salvage_into(input.path(), file, Compression::None, out, &options, size, &mut |_, _| {})
        };
        let mut closed = Vec::new();
        let report = salvage(&mut closed).unwrap();
        let cut = report.cut.unwrap();
        assert_eq!((cut.closed_with.as_str(), cut.at), ("]}", text.len() as u64));
        assert_eq!(report.bytes_written, closed.len() as u64);
        let events: serde_json::Value = serde_json::from_slice(&closed).unwrap();
        assert_eq!(events["traceEvents"].as_array().unwrap().len(), 199_999);
        // The closer's write error, not the scan's "the writer stopped".
        let err = salvage(&mut Full(3 << 17)).unwrap_err();
        assert!(
            matches!(&err, Error::Write { source, .. } if source.kind() == io::ErrorKind::StorageFull),
            "{err:?}"
        );
    }
}
