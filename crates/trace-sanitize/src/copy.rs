//! Output for a plain input file: the scan hands each chunk it read, as it
//! is, to a writer thread (with the repairs to make in it) and goes on
//! reading into a recycled buffer. The bytes are read once and written once,
//! from a buffer still in cache, as `cat in > out` does; the scan runs
//! alongside the writes.

use std::{
    fs::File,
    io::{self, Write},
    sync::mpsc::{Receiver, SyncSender, sync_channel},
};

use crate::{
    Error, Result,
    engine::Edit,
    stream::{ShapeSink, Sink, replay},
};

/// Chunks in flight between the scan and the writer.
const DEPTH: usize = 8;

/// A scanned chunk: `buf[..end]` with `edits` applied.
pub(crate) struct Chunk {
    buf: Vec<u8>,
    end: usize,
    edits: Vec<Edit>,
}

/// The chunk channel, or the one that brings buffers back.
pub(crate) fn channel<T>() -> (SyncSender<T>, Receiver<T>) {
    sync_channel(DEPTH)
}

/// The scan side.
pub(crate) struct ChunkSink {
    tx: SyncSender<Chunk>,
    spare: Receiver<Vec<u8>>,
}

impl ChunkSink {
    /// `spare` brings the writer's used buffers back.
    pub(crate) fn new(tx: SyncSender<Chunk>, spare: Receiver<Vec<u8>>) -> ChunkSink {
        ChunkSink { tx, spare }
    }

    fn send(&mut self, chunk: Chunk) -> Result<()> {
        // The writer only hangs up after an error, which the caller reports.
        self.tx
            .send(chunk)
            .map_err(|_| Error::Write { offset: 0, source: io::Error::other("the writer stopped") })
    }
}

impl Sink for ChunkSink {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let chunk = Chunk { buf: bytes.to_vec(), end: bytes.len(), edits: Vec::new() };
        self.send(chunk)
    }

    fn replace(&mut self, _: &[u8], with: &'static [u8]) -> Result<()> {
        self.pass(with)
    }

    fn chunk(
        &mut self,
        buf: &mut Vec<u8>,
        consumed: usize,
        len: usize,
        edits: &[Edit],
    ) -> Result<()> {
        let mut next = match self.spare.try_recv() {
            Ok(b) if b.len() == buf.len() => b,
            _ => vec![0u8; buf.len()],
        };
        next[..len - consumed].copy_from_slice(&buf[consumed..len]);
        let full = std::mem::replace(buf, next);
        self.send(Chunk { buf: full, end: consumed, edits: edits.to_vec() })
    }
}

/// The writer side: writes the chunks, and passes them through `shape`
/// (which follows the grammar while the scan goes on); returns their
/// buffers through `back` and the bytes written.
pub(crate) fn write_chunks(
    mut output: &File,
    chunks: Receiver<Chunk>,
    back: SyncSender<Vec<u8>>,
    shape: &mut ShapeSink,
) -> io::Result<u64> {
    let mut written = 0u64;
    for Chunk { buf, end, edits } in chunks {
        let mut at = 0;
        for edit in &edits {
            output.write_all(&buf[at..edit.start])?;
            output.write_all(edit.with)?;
            written += (edit.start - at + edit.with.len()) as u64;
            at = edit.end;
        }
        output.write_all(&buf[at..end])?;
        written += (end - at) as u64;
        replay(shape, &buf[..end], &edits).map_err(io::Error::other)?;
        let _ = back.try_send(buf);
    }
    Ok(written)
}
