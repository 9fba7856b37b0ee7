//! Sanitizing and checking over any `Read`/`Write` pair.

use std::{
    cell::RefCell,
    io::{self, Read, Write},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use crate::{
    Error, Result,
    close::{Closer, Ending, is_space},
    engine::{BOM, Edit, Engine, MAX_CARRY},
    report::{Defect, Recorder, Report},
};

/// How much input is scanned at a time by default (it fits in L2 cache).
pub(crate) const CHUNK: usize = 128 << 10;

/// The most repairs a report describes in detail ([`Options::max_recorded`]
/// is capped to it): a trace may need tens of millions, and each kept costs
/// memory; the rest are counted.
pub const MAX_RECORDED: usize = 10_000;

/// Settings for a sanitize or check pass.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many repairs to describe in detail in the report (all are
    /// counted), at most [`MAX_RECORDED`] whatever this says.
    pub max_recorded: usize,
    /// Stop at the first defect (useful for "does this need repair?").
    pub stop_at_first: bool,
    /// Bytes of input scanned at a time: the memory used, whatever the input
    /// size. Results never depend on it. At least 1.
    pub buffer_size: usize,
    /// Raised by the caller (a Ctrl-C handler) to stop: the scan ends with
    /// [`Error::Cancelled`] after the chunk it is on, and the file functions
    /// remove their partial output.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for Options {
    fn default() -> Options {
        Options { max_recorded: 20, stop_at_first: false, buffer_size: CHUNK, cancel: None }
    }
}

/// Copy `input` to `output`, repairing what strict JSON parsers reject.
///
/// Streams in constant memory. A valid input is copied byte for byte and the
/// report says it needed no repair. With `stop_at_first` the output holds
/// only the part up to and including the first repair. The copy's JSON
/// grammar is followed as it is written: the report says whether it is one
/// whole document ([`Report::complete`], [`Report::cut`]) and where its
/// grammar breaks ([`Report::malformed`]).
pub fn sanitize<R: Read, W: Write>(input: R, output: W, options: &Options) -> Result<Report> {
    let mut sink = Tee(WriteSink { inner: output, written: 0 }, ShapeSink::new());
    let report = scan(input, &mut sink, options, &mut |_| {})?;
    let Tee(mut out, shape) = sink;
    out.inner.flush().map_err(|source| Error::Write { offset: out.written, source })?;
    shape.onto(Report { bytes_written: out.written, ..report })
}

/// [`sanitize`], and an input cut short is closed after its last complete
/// record, and data after the end of its document dropped (see
/// [`crate::salvage_file`]); a failed read ends the input there.
/// [`Report::cut`] says where and how. An input with nothing complete before
/// the cut is [`Error::NothingComplete`], one that does not start with `{`
/// or `[` [`Error::NotADocument`]; `output` may then hold part of it (the
/// file functions remove theirs).
pub fn salvage<R: Read, W: Write>(input: R, output: W, options: &Options) -> Result<Report> {
    let failed = RefCell::new(None);
    let mut sink = ClosingSink::new(output);
    let report =
        scan(EndAtError { inner: input, failed: &failed }, &mut sink, options, &mut |_| {})?;
    let (mut output, report) = finish_salvage(sink, report, failed.into_inner())?;
    output.flush().map_err(|source| Error::Write { offset: report.bytes_written, source })?;
    Ok(report)
}

/// The end of a salvaging scan: close what was cut, and say so in the report.
pub(crate) fn finish_salvage<W: Write>(
    mut sink: ClosingSink<W>,
    report: Report,
    failed: Option<io::Error>,
) -> Result<(W, Report)> {
    let written = sink.out.written;
    let malformed = sink.out.inner.malformed.take();
    // Where the input ends, for the cut to be told in its bytes.
    sink.out.inner.map_to_input(sink.read, false);
    let (out, ending) = sink
        .out
        .inner
        .finish(failed.map(|e| e.to_string()))
        .map_err(|source| Error::Write { offset: written, source })?;
    let (cut, dropped) = match ending {
        Ending::Complete => (None, 0),
        Ending::Cut(cut, dropped) => (Some(cut), dropped),
        Ending::NothingComplete => {
            return Err(Error::NothingComplete { offset: report.bytes_read });
        }
        Ending::NotADocument(first) => return Err(Error::NotADocument { first }),
    };
    // What was written, less what the cut dropped of it.
    let kept = written - dropped;
    let bytes_written = kept + cut.as_ref().map_or(0, |cut| cut.closed_with.len() as u64);
    // Bare words that are not JSON in what was dropped are gone with it.
    let (not_json, first_not_json) = match report.first_not_json {
        Some(word) if word.output_offset < kept => (report.not_json, Some(word)),
        _ => (0, None),
    };
    let malformed = malformed.filter(|m| m.output_offset < kept);
    let cut = cut.map(|cut| crate::Cut { at: report.bytes_read, ..cut });
    let complete = Some(cut.is_none());
    Ok((
        out,
        Report { bytes_written, cut, complete, not_json, first_not_json, malformed, ..report },
    ))
}

/// A reader whose first error is kept and read as the end of the input.
pub(crate) struct EndAtError<'a, R> {
    pub(crate) inner: R,
    pub(crate) failed: &'a RefCell<Option<io::Error>>,
}

impl<R: Read> Read for EndAtError<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed.borrow().is_some() {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                *self.failed.borrow_mut() = Some(e);
                Ok(0)
            }
            other => other,
        }
    }
}

/// Scan `input` and report what [`sanitize`] would repair, writing nothing,
/// and whether its JSON text is complete ([`Report::complete`]; for one cut
/// short, [`Report::cut`] says how [`salvage`] would close it).
pub fn check<R: Read>(input: R, options: &Options) -> Result<Report> {
    let mut sink = ShapeSink::new();
    let report = scan(input, &mut sink, options, &mut |_| {})?;
    sink.finish(report)
}

/// A check's sink: watches the repaired bytes for where the document ends,
/// the way [`salvage`] does, and writes nothing.
pub(crate) struct ShapeSink(ClosingSink<io::Sink>);

impl ShapeSink {
    pub(crate) fn new() -> ShapeSink {
        ShapeSink(ClosingSink {
            out: WriteSink { inner: Closer::watching(io::sink()), written: 0 },
            read: 0,
        })
    }

    /// `report` of the scan, with whether the input was complete. A scan
    /// stopped at its first defect did not see the end: unknown.
    pub(crate) fn finish(self, report: Report) -> Result<Report> {
        if report.stopped_early {
            return Ok(report);
        }
        // Where nothing is complete, nothing would be dropped to close it:
        // a break in its grammar (brackets past orjson's depth, say) is
        // the trace's own, and said.
        let malformed = self.0.out.inner.malformed.clone();
        match finish_salvage(self.0, report.clone(), None) {
            Ok((_, closed)) => Ok(Report { bytes_written: 0, ..closed }),
            Err(Error::NothingComplete { .. }) => {
                Ok(Report { complete: Some(false), malformed, ..report })
            }
            // The scan already said what the input starts with.
            Err(Error::NotADocument { .. }) => Ok(Report { complete: Some(false), ..report }),
            Err(e) => Err(e),
        }
    }
}

impl ShapeSink {
    /// `report` of a sanitize pass, with what this shape found of the
    /// repaired text: whether it is complete, how a salvage would close it,
    /// where its grammar breaks. (The copy keeps every bare word: those
    /// counts stay the scan's.)
    pub(crate) fn onto(self, report: Report) -> Result<Report> {
        let Report { complete, cut, malformed, .. } = self.finish(report.clone())?;
        Ok(Report { complete, cut, malformed, ..report })
    }
}

/// Two sinks fed the same decisions.
pub(crate) struct Tee<A, B>(pub(crate) A, pub(crate) B);

impl<A: Sink, B: Sink> Sink for Tee<A, B> {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        self.0.pass(bytes)?;
        self.1.pass(bytes)
    }
    fn replace(&mut self, original: &[u8], with: &'static [u8]) -> Result<()> {
        self.0.replace(original, with)?;
        self.1.replace(original, with)
    }
}

impl Sink for ShapeSink {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        self.0.pass(bytes)
    }
    fn replace(&mut self, original: &[u8], with: &'static [u8]) -> Result<()> {
        self.0.replace(original, with)
    }
}

/// Where the scan's decisions go, in input order.
pub(crate) trait Sink {
    /// `bytes` of the input pass unchanged.
    fn pass(&mut self, bytes: &[u8]) -> Result<()>;
    /// `original` bytes of the input are replaced by `with`.
    fn replace(&mut self, original: &[u8], with: &'static [u8]) -> Result<()>;
    /// A scanned chunk at once: `buf[..consumed]` with `edits` applied goes
    /// out; `buf[consumed..len]` (an unfinished sequence) must be at the
    /// start of `buf` afterwards. A sink may take the buffer itself and leave
    /// another one of the same length in its place.
    fn chunk(
        &mut self,
        buf: &mut Vec<u8>,
        consumed: usize,
        len: usize,
        edits: &[Edit],
    ) -> Result<()> {
        replay(self, &buf[..consumed], edits)?;
        buf.copy_within(consumed..len, 0);
        Ok(())
    }
}

/// `bytes` with `edits` applied, as the decisions a [`Sink`] gets.
pub(crate) fn replay<S: Sink + ?Sized>(sink: &mut S, bytes: &[u8], edits: &[Edit]) -> Result<()> {
    let mut at = 0;
    for edit in edits {
        sink.pass(&bytes[at..edit.start])?;
        sink.replace(&bytes[edit.start..edit.end], edit.with)?;
        at = edit.end;
    }
    sink.pass(&bytes[at..])
}

/// A salvage's sink (and a check's): the repaired bytes go through a
/// [`Closer`], and the first token it finds the grammar does not allow is
/// placed in the input.
pub(crate) struct ClosingSink<W> {
    pub(crate) out: WriteSink<Closer<W>>,
    /// Input bytes passed or replaced so far.
    read: u64,
}

impl<W: Write> ClosingSink<W> {
    pub(crate) fn new(output: W) -> ClosingSink<W> {
        ClosingSink { out: WriteSink { inner: Closer::new(output), written: 0 }, read: 0 }
    }
}

impl<W: Write> Sink for ClosingSink<W> {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        // Bytes passed are the input's own.
        self.out.inner.map_to_input(self.read, false);
        self.out.pass(bytes)?;
        self.read += bytes.len() as u64;
        Ok(())
    }
    fn replace(&mut self, original: &[u8], with: &'static [u8]) -> Result<()> {
        // A value that replaced a word (`null` for `NaN`): where it was.
        self.out.inner.map_to_input(self.read, true);
        self.out.replace(original, with)?;
        self.read += original.len() as u64;
        Ok(())
    }
}

pub(crate) struct WriteSink<W> {
    pub(crate) inner: W,
    pub(crate) written: u64,
}

impl<W: Write> WriteSink<W> {
    fn put(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            match self.inner.write(bytes) {
                Ok(0) => {
                    let source = io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the output accepts no more bytes",
                    );
                    return Err(Error::Write { offset: self.written, source });
                }
                Ok(n) => {
                    self.written += n as u64;
                    bytes = &bytes[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(Error::Write { offset: self.written, source }),
            }
        }
        Ok(())
    }
}

impl<W: Write> Sink for WriteSink<W> {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        self.put(bytes)
    }
    fn replace(&mut self, _: &[u8], with: &'static [u8]) -> Result<()> {
        self.put(with)
    }
}

/// The driver shared by every entry point. `progress` is called after each
/// chunk with the number of input bytes scanned so far. The report's
/// `bytes_written` is left for the caller to fill in.
pub(crate) fn scan<R: Read>(
    mut input: R,
    sink: &mut dyn Sink,
    options: &Options,
    progress: &mut dyn FnMut(u64),
) -> Result<Report> {
    let mut engine = Engine::new(options.stop_at_first);
    let mut rec = Recorder::new(options.max_recorded);
    let mut buf = vec![0u8; options.buffer_size.max(1) + MAX_CARRY];
    let mut edits: Vec<Edit> = Vec::new();
    let mut carry = 0usize;
    let mut base = 0u64; // input offset of buf[0]
    let mut stopped_early = false;
    // The first byte outside JSON whitespace (past a byte order mark): a
    // document that does not start with `{` or `[` cannot be parsed,
    // whatever else is in it.
    let mut first = None;
    let mut zeros = 0u64; // zero bytes the input ends with, so far
    let mut tail: Vec<u8> = Vec::with_capacity(2 * TAIL); // its last bytes, so far
    loop {
        // Bytes read before a failed read still go out (and are repaired):
        // a reader downstream gets the input up to the failure.
        let (filled, failed) = fill(&mut input, &mut buf[carry..]);
        if options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(Error::Cancelled { offset: base });
        }
        let eof = failed.is_some() || filled < buf.len() - carry;
        let len = carry + filled;
        if base == 0
            && let Some(encoding) = wide_encoding(&buf[..len])
        {
            return Err(Error::NotUtf8 { encoding });
        }
        if base == 0 && is_perfetto(&buf[..len]) {
            return Err(Error::Perfetto);
        }
        if base == 0 && is_sqlite(&buf[..len]) {
            return Err(Error::Sqlite);
        }
        if base == 0
            && let Some(format) = compressed_format(&buf[..len])
        {
            return Err(Error::Compressed { format });
        }
        edits.clear();
        let outcome = engine.process(&buf[..len], base, eof, &mut edits, &mut rec);
        let out = &buf[..outcome.consumed];
        if first.is_none() {
            let past_bom = if base == 0 { out.strip_prefix(BOM).unwrap_or(out) } else { out };
            first = past_bom.iter().copied().find(|&b| !is_space(b));
        }
        let zero_tail = out.iter().rev().take_while(|&&b| b == 0).count();
        zeros = if zero_tail == out.len() { zeros + zero_tail as u64 } else { zero_tail as u64 };
        tail.extend_from_slice(&out[out.len().saturating_sub(TAIL)..]);
        tail.drain(..tail.len().saturating_sub(TAIL));
        sink.chunk(&mut buf, outcome.consumed, len, &edits)?;
        base += outcome.consumed as u64;
        progress(base);
        if outcome.stopped {
            stopped_early = true;
            break;
        }
        if eof {
            debug_assert_eq!(outcome.consumed, len);
            if let Some(source) = failed {
                return Err(Error::Read { offset: base, source });
            }
            break;
        }
        carry = len - outcome.consumed;
    }
    // The zeros a crash leaves, inside the string the cut left open, are no
    // text of the trace: each was escaped as a control byte, none counts.
    if !stopped_early && zeros >= Report::CRASH_ZEROS && engine.in_string() {
        rec.forget_from(base - zeros, Defect::ControlChar, zeros);
    }
    // Text before a document: what words it holds is not the point.
    let (not_json, first_not_json) = match first {
        Some(b'{' | b'[') => (rec.not_json, rec.first_not_json),
        _ => (0, None),
    };
    Ok(Report {
        bytes_read: base,
        bytes_written: 0,
        counts: rec.counts,
        repairs: rec.repairs,
        stopped_early,
        cut: None,
        starts_with: first.filter(|b| !matches!(b, b'{' | b'[')).filter(|_| !stopped_early),
        zeros_at_end: if stopped_early { 0 } else { zeros },
        not_json,
        first_not_json,
        malformed: None,
        unclosed_string: !stopped_early && engine.in_string() && ends_in_bracket(&tail),
        // Whether it is one whole document, the closer that follows the
        // grammar beside every scan tells (`ShapeSink`, `ClosingSink`).
        complete: None,
    })
}

/// How many of the last bytes [`ends_in_bracket`] looks at.
const TAIL: usize = 64;

/// Whether a text that ends inside a string ends in `}` or `]` past
/// whitespace, or past whitespace a repair escaped (a sanitized copy's
/// `}\u000a`): what a string that never ends leaves.
fn ends_in_bracket(tail: &[u8]) -> bool {
    const ESCAPED: [&[u8]; 6] = [b"\\u000a", b"\\u000d", b"\\u0009", b"\\n", b"\\r", b"\\t"];
    let mut rest = tail;
    loop {
        if let [head @ .., b] = rest
            && is_space(*b)
        {
            rest = head;
        } else if let Some(head) = ESCAPED.iter().find_map(|e| rest.strip_suffix(*e)) {
            rest = head;
        } else {
            return matches!(rest.last(), Some(b'}' | b']'));
        }
    }
}

/// The encoding of a JSON text in UTF-16 or UTF-32, told from its first
/// bytes: a byte order mark, or the zero bytes around its first character
/// (RFC 4627, section 3), which must be one a JSON text starts with. (A
/// file of zeros, as a crash leaves, is none of these.)
fn wide_encoding(head: &[u8]) -> Option<&'static str> {
    let starts = |b: u8| matches!(b, b'{' | b'[' | b' ' | b'\t' | b'\n' | b'\r');
    match *head {
        [0, 0, 0xfe, 0xff, ..] => Some("UTF-32BE"),
        [0xff, 0xfe, 0, 0, ..] => Some("UTF-32LE"),
        [0xfe, 0xff, ..] => Some("UTF-16BE"),
        [0xff, 0xfe, ..] => Some("UTF-16LE"),
        [0, 0, 0, c, ..] if starts(c) => Some("UTF-32BE"),
        [c, 0, 0, 0, ..] if starts(c) => Some("UTF-32LE"),
        [0, c, ..] if starts(c) => Some("UTF-16BE"),
        [c, 0, ..] if starts(c) => Some("UTF-16LE"),
        _ => None,
    }
}

/// The compression format a file's first bytes are the magic number of, if
/// any: `gzip`, `zstd`, `xz`, `bzip2` or `zip`. None of these starts with
/// what a JSON text may start with.
pub fn compressed_format(head: &[u8]) -> Option<&'static str> {
    match head {
        [0x1f, 0x8b, ..] => Some("gzip"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Some("zstd"),
        [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => Some("xz"),
        [b'B', b'Z', b'h', b'1'..=b'9', 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, ..] => Some("bzip2"),
        [b'P', b'K', 3, 4, ..] => Some("zip"),
        _ => None,
    }
}

/// Whether a file's first bytes are a SQLite 3 database's header (rocprofv3's
/// rocpd output, `<pid>_results.db`; RPD files).
pub fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}

/// How many of a file's first bytes [`is_perfetto`] looks at: fewer than the
/// sanitizer's first read holds, whatever its buffer size.
const PERFETTO_HEAD: usize = 128;

/// Whether a file's first bytes are a Perfetto trace's: a protobuf `Trace`,
/// whose top-level fields are `packet`s (field 1, length-delimited: a `0x0a`
/// tag, then a varint length), the first of which reads as protobuf fields
/// as far as the first 128 bytes go; and among those bytes one no text has
/// (a control byte other than tab, line feed and carriage return). A JSON
/// text that starts with a line feed has whitespace, `{` or `[` after it,
/// which no packet length starts with: a JSON trace, however broken, is
/// never taken for one; nor is a log line written before one (text does not
/// read as protobuf fields for long).
pub fn is_perfetto(head: &[u8]) -> bool {
    let mut head = &head[..head.len().min(PERFETTO_HEAD)];
    // Empty packets first (a tracing session that recorded nothing yet):
    // nothing else is made of them; all empty, a trace of empty packets.
    let mut empty = 0;
    while let [0x0a, 0x00, rest @ ..] = head {
        head = rest;
        empty += 1;
    }
    if head.is_empty() {
        return empty >= 2;
    }
    let [0x0a, rest @ ..] = head else { return false };
    if rest.first().is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'[')) {
        return false;
    }
    let binary = head.iter().any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'));
    let Some((length, used)) = varint(rest) else { return false };
    let body = &rest[used..];
    let packet = &body[..body.len().min(usize::try_from(length).unwrap_or(usize::MAX))];
    binary && length > 0 && protobuf_fields(packet)
}

/// Whether `bytes` read as protobuf fields (the last may be cut off where
/// `bytes` ends): each a tag with a field number and a wire type protobuf
/// has, then a value of that type. At least one field.
fn protobuf_fields(mut bytes: &[u8]) -> bool {
    let mut fields = 0;
    while !bytes.is_empty() {
        let Some((tag, used)) = varint(bytes) else { return fields > 0 };
        bytes = &bytes[used..];
        let skip = match (tag >> 3, tag & 7) {
            (0, _) => return false,
            (_, 0) => match varint(bytes) {
                Some((_, used)) => used,
                None => bytes.len(),
            },
            (_, 1) => 8,
            (_, 2) => match varint(bytes) {
                Some((length, used)) => {
                    used.saturating_add(usize::try_from(length).unwrap_or(usize::MAX))
                }
                None => bytes.len(),
            },
            (_, 5) => 4,
            _ => return false,
        };
        bytes = &bytes[skip.min(bytes.len())..];
        fields += 1;
    }
    fields > 0
}

/// A protobuf varint at the start of `bytes`: its value and length; `None`
/// when `bytes` ends before it does, or it runs past ten bytes.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(10).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Read until `buf` is full or the input ends; returns the bytes read, and
/// the error that stopped the reading early, if one did.
fn fill<R: Read>(input: &mut R, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}
