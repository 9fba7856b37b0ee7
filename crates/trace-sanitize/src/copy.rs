//! Output for a plain input file: unchanged ranges are copied by the kernel
//! (std's `io::copy` between files uses `copy_file_range` on Linux, falling
//! back to read/write elsewhere) on a second thread while the scan goes on,
//! so the repaired copy costs little more than `cat in > out`.

use std::{
    fs::File,
    io::{self, Read, Seek, SeekFrom, Write},
    sync::mpsc::{Receiver, SyncSender, sync_channel},
};

use crate::{Error, Result, stream::Sink};

/// Unchanged bytes are handed to the writer in ranges of about this size.
const COPY_BATCH: u64 = 8 << 20;
/// A short unchanged gap between two repairs travels as bytes, not as a copy.
const SHORT_GAP: usize = 4 << 10;
const LITERAL_BATCH: usize = 64 << 10;

pub(crate) enum Op {
    /// Copy the next `n` bytes of the input.
    Copy(u64),
    /// Write `data` in place of the next `input_len` bytes of the input.
    Literal { data: Vec<u8>, input_len: u64 },
}

pub(crate) fn channel() -> (SyncSender<Op>, Receiver<Op>) {
    sync_channel(16)
}

/// The scan side: turns pass/replace decisions into batched [`Op`]s.
pub(crate) struct CopySink {
    tx: SyncSender<Op>,
    copy: u64,
    literal: Vec<u8>,
    literal_input: u64,
}

impl CopySink {
    pub(crate) fn new(tx: SyncSender<Op>) -> CopySink {
        CopySink { tx, copy: 0, literal: Vec::new(), literal_input: 0 }
    }

    fn send(&mut self, op: Op) -> Result<()> {
        // The writer only hangs up after an error, which the caller reports.
        self.tx
            .send(op)
            .map_err(|_| Error::Write { offset: 0, source: io::Error::other("the writer stopped") })
    }

    fn flush_copy(&mut self) -> Result<()> {
        if self.copy > 0 {
            let n = std::mem::take(&mut self.copy);
            self.send(Op::Copy(n))?;
        }
        Ok(())
    }

    fn flush_literal(&mut self) -> Result<()> {
        if self.literal_input > 0 || !self.literal.is_empty() {
            let data = std::mem::take(&mut self.literal);
            let input_len = std::mem::take(&mut self.literal_input);
            self.send(Op::Literal { data, input_len })?;
        }
        Ok(())
    }

    /// Send what is pending; dropping the sink then ends the writer.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.flush_copy()?;
        self.flush_literal()
    }
}

impl Sink for CopySink {
    fn pass(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        if !self.literal.is_empty() && bytes.len() < SHORT_GAP && self.literal.len() < LITERAL_BATCH
        {
            self.literal.extend_from_slice(bytes);
            self.literal_input += bytes.len() as u64;
            return Ok(());
        }
        self.flush_literal()?;
        self.copy += bytes.len() as u64;
        if self.copy >= COPY_BATCH {
            self.flush_copy()?;
        }
        Ok(())
    }

    fn replace(&mut self, original: &[u8], with: &'static [u8]) -> Result<()> {
        self.flush_copy()?;
        self.literal.extend_from_slice(with);
        self.literal_input += original.len() as u64;
        Ok(())
    }
}

/// The writer side: carries out the ops; returns the bytes written.
pub(crate) fn write_ops(mut input: File, mut output: &File, ops: Receiver<Op>) -> io::Result<u64> {
    let mut written = 0u64;
    for op in ops {
        match op {
            Op::Copy(n) => {
                let copied = io::copy(&mut (&mut input).take(n), &mut output)?;
                if copied != n {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the input became shorter while it was being copied",
                    ));
                }
                written += n;
            }
            Op::Literal { data, input_len } => {
                output.write_all(&data)?;
                input.seek(SeekFrom::Current(input_len as i64))?;
                written += data.len() as u64;
            }
        }
    }
    Ok(written)
}
