//! An in-process pipe between the sanitizer thread and the parser: filled
//! buffers cross a bounded channel and come back empty for reuse, so the
//! bytes are not copied through the kernel and the memory stays bounded
//! (a few buffers).

use std::{
    io::{self, Read, Write},
    sync::mpsc::{Receiver, SyncSender, sync_channel},
};

const BUF: usize = 1 << 20;
const DEPTH: usize = 4;

/// The writing end.
pub(crate) struct ChanWriter {
    buf: Vec<u8>,
    tx: SyncSender<Vec<u8>>,
    spare: Receiver<Vec<u8>>,
}

/// The reading end: end of file once the writer is dropped.
pub(crate) struct ChanReader {
    cur: Vec<u8>,
    pos: usize,
    rx: Receiver<Vec<u8>>,
    back: SyncSender<Vec<u8>>,
}

pub(crate) fn chan_pipe() -> (ChanReader, ChanWriter) {
    let (tx, rx) = sync_channel(DEPTH);
    let (back, spare) = sync_channel(DEPTH + 2);
    (
        ChanReader { cur: Vec::new(), pos: 0, rx, back },
        ChanWriter { buf: Vec::with_capacity(BUF), tx, spare },
    )
}

impl ChanWriter {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut next = self.spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BUF));
        next.clear();
        let full = std::mem::replace(&mut self.buf, next);
        self.tx
            .send(full)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the trace reader stopped"))
    }
}

impl Write for ChanWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data.len().min(BUF - self.buf.len().min(BUF));
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() >= BUF {
            self.send()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// What was written before the writer went away (a failed read upstream
/// included) still reaches the reader: a cut trace is read up to the cut.
impl Drop for ChanWriter {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

impl Read for ChanReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        while self.pos == self.cur.len() {
            match self.rx.recv() {
                Ok(next) => {
                    let done = std::mem::replace(&mut self.cur, next);
                    self.pos = 0;
                    let _ = self.back.try_send(done);
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_in_order_and_end_with_the_writer() {
        let data: Vec<u8> = (0..3 * BUF + 12345).map(|i| (i * 7 % 251) as u8).collect();
        let (mut r, mut w) = chan_pipe();
        let out = std::thread::scope(|s| {
            let d = &data;
            s.spawn(move || {
                for piece in d.chunks(70_001) {
                    w.write_all(piece).unwrap();
                }
                w.flush().unwrap();
            });
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            out
        });
        assert_eq!(out, data);
    }

    #[test]
    fn what_was_written_arrives_without_a_flush() {
        let (mut r, mut w) = chan_pipe();
        let out = std::thread::scope(|s| {
            s.spawn(move || w.write_all(b"unflushed").unwrap());
            let mut out = Vec::new();
            r.read_to_end(&mut out).unwrap();
            out
        });
        assert_eq!(out, b"unflushed");
    }

    #[test]
    fn a_gone_reader_is_a_broken_pipe() {
        let (r, mut w) = chan_pipe();
        drop(r);
        let err = w.write_all(&vec![0u8; 2 * BUF]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
