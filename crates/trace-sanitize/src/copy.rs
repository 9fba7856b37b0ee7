//! Output for a plain input file: the scan hands each chunk it read, as it
//! is, to a writer thread (with the repairs to make in it) and to a thread
//! that follows the grammar of it, and goes on reading into a recycled
//! buffer. The bytes are read once and written once, from a buffer still in
//! cache, as `cat in > out` does; the scan, the writes and the grammar run
//! side by side (the grammar, the slowest of the three, alone on a core
//! where there is one).

use std::{
    io::{self, Write},
    sync::{
        Arc,
        mpsc::{Receiver, SyncSender, sync_channel},
    },
};

use crate::{
    Error, Result,
    engine::Edit,
    stream::{Sink, replay},
};

/// Chunks in flight between the scan and each reader of them.
const DEPTH: usize = 8;

/// A scanned chunk: `buf[..end]` with `edits` applied.
pub(crate) struct Chunk {
    buf: Vec<u8>,
    end: usize,
    edits: Vec<Edit>,
}

/// A chunk channel, or the one that brings buffers back.
pub(crate) fn channel<T>() -> (SyncSender<T>, Receiver<T>) {
    sync_channel(DEPTH)
}

/// The scan side: each chunk goes to every reader (the writer, the
/// grammar's thread).
pub(crate) struct ChunkSink {
    readers: Vec<SyncSender<Arc<Chunk>>>,
    spare: Receiver<Vec<u8>>,
}

impl ChunkSink {
    /// `spare` brings the readers' used buffers back.
    pub(crate) fn new(readers: Vec<SyncSender<Arc<Chunk>>>, spare: Receiver<Vec<u8>>) -> ChunkSink {
        ChunkSink { readers, spare }
    }

    fn send(&mut self, chunk: Chunk) -> Result<()> {
        let chunk = Arc::new(chunk);
        for reader in &self.readers {
            // A reader only hangs up after an error, which the caller
            // reports.
            reader.send(Arc::clone(&chunk)).map_err(|_| Error::Write {
                offset: 0,
                source: io::Error::other("the writer stopped"),
            })?;
        }
        Ok(())
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

/// The last reader done with a chunk sends its buffer back for the scan to
/// read into again.
fn done(chunk: Arc<Chunk>, back: &SyncSender<Vec<u8>>) {
    if let Some(chunk) = Arc::into_inner(chunk) {
        let _ = back.try_send(chunk.buf);
    }
}

/// The writer: writes the chunks, repaired, and returns the bytes written.
pub(crate) fn write_chunks(
    mut output: impl Write,
    chunks: Receiver<Arc<Chunk>>,
    back: SyncSender<Vec<u8>>,
) -> io::Result<u64> {
    let mut written = 0u64;
    for chunk in chunks {
        let Chunk { buf, end, edits } = &*chunk;
        let mut at = 0;
        for edit in edits {
            output.write_all(&buf[at..edit.start])?;
            output.write_all(edit.with)?;
            written += (edit.start - at + edit.with.len()) as u64;
            at = edit.end;
        }
        output.write_all(&buf[at..*end])?;
        written += (end - at) as u64;
        done(chunk, &back);
    }
    Ok(written)
}

/// The grammar's reader: passes the chunks, repaired, through `shape` (a
/// [`crate::stream::ShapeSink`] that follows it, or a salvage's sink, which also writes).
pub(crate) fn follow_chunks(
    chunks: Receiver<Arc<Chunk>>,
    back: SyncSender<Vec<u8>>,
    shape: &mut impl Sink,
) -> Result<()> {
    for chunk in chunks {
        replay(shape, &chunk.buf[..chunk.end], &chunk.edits)?;
        done(chunk, &back);
    }
    Ok(())
}
