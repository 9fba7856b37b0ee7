//! Sanitizing and checking over any `Read`/`Write` pair.

use std::io::{self, Read, Write};

use crate::{
    Error, Result,
    engine::{Edit, Engine, MAX_CARRY},
    report::{Recorder, Report},
};

/// How much input is scanned at a time. Memory use is about this much
/// (plus the output buffer), whatever the input size.
pub(crate) const CHUNK: usize = 1 << 20;

/// Settings for a sanitize or check pass.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many repairs to describe in detail in the report (all are counted).
    pub max_recorded: usize,
    /// Stop at the first defect (useful for "does this need repair?").
    pub stop_at_first: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { max_recorded: 20, stop_at_first: false }
    }
}

/// Copy `input` to `output`, repairing what strict JSON parsers reject.
///
/// Streams in constant memory. A valid input is copied byte for byte and the
/// report says it needed no repair. With `stop_at_first` the output holds
/// only the part up to and including the first repair.
pub fn sanitize<R: Read, W: Write>(input: R, output: W, options: &Options) -> Result<Report> {
    let mut out = Output { inner: output, written: 0 };
    let report = scan(input, Some(&mut out), options, &mut |_| {})?;
    out.inner.flush().map_err(|source| Error::Write { offset: out.written, source })?;
    Ok(report)
}

/// Scan `input` and report what [`sanitize`] would repair, writing nothing.
pub fn check<R: Read>(input: R, options: &Options) -> Result<Report> {
    scan::<R, io::Sink>(input, None, options, &mut |_| {})
}

pub(crate) struct Output<W> {
    pub(crate) inner: W,
    pub(crate) written: u64,
}

impl<W: Write> Output<W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.inner
            .write_all(bytes)
            .map_err(|source| Error::Write { offset: self.written, source })?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// The driver shared by every entry point. `progress` is called after each
/// chunk with the number of input bytes scanned so far.
pub(crate) fn scan<R: Read, W: Write>(
    mut input: R,
    mut output: Option<&mut Output<W>>,
    options: &Options,
    progress: &mut dyn FnMut(u64),
) -> Result<Report> {
    let mut engine = Engine::new(options.stop_at_first);
    let mut rec = Recorder::new(options.max_recorded);
    let mut buf = vec![0u8; CHUNK + MAX_CARRY];
    let mut edits: Vec<Edit> = Vec::new();
    let mut carry = 0usize;
    let mut base = 0u64; // input offset of buf[0]
    let mut stopped_early = false;
    loop {
        let filled = fill(&mut input, &mut buf[carry..])
            .map_err(|source| Error::Read { offset: base + carry as u64, source })?;
        let eof = filled < buf.len() - carry;
        let len = carry + filled;
        edits.clear();
        let outcome = engine.process(&buf[..len], base, eof, &mut edits, &mut rec);
        if let Some(out) = output.as_deref_mut() {
            let mut at = 0;
            for edit in &edits {
                out.put(&buf[at..edit.start])?;
                out.put(edit.with)?;
                at = edit.end;
            }
            out.put(&buf[at..outcome.consumed])?;
        }
        base += outcome.consumed as u64;
        progress(base);
        if outcome.stopped {
            stopped_early = true;
            break;
        }
        if eof {
            debug_assert_eq!(outcome.consumed, len);
            break;
        }
        buf.copy_within(outcome.consumed..len, 0);
        carry = len - outcome.consumed;
    }
    Ok(Report {
        bytes_read: base,
        bytes_written: output.map_or(0, |o| o.written),
        counts: rec.counts,
        repairs: rec.repairs,
        stopped_early,
    })
}

/// Read until `buf` is full or the input ends; returns the bytes read.
fn fill<R: Read>(input: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
