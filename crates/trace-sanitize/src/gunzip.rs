//! A gzip file's content, as Python's `gzip` (which TraceLens reads
//! `.json.gz` traces with) takes it: member after member, zero bytes after
//! the last one ignored. What it refuses is said so: a checksum that does
//! not match ([`Gunzip::CRC`]: the content is damaged, and nothing read from
//! it can be trusted), and other data after the stream ([`NotGzip`]).

use std::io::{self, BufRead, Read};

use flate2::bufread::GzDecoder;

/// Data after a gzip stream that is neither another member nor zeros (a
/// log appended to the file, two files concatenated badly): Python's gzip
/// refuses the file (`BadGzipFile: Not a gzipped file`).
#[derive(Debug)]
pub struct NotGzip {
    /// Where it starts, in the file.
    pub offset: u64,
}

impl std::fmt::Display for NotGzip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data after the end of the gzip stream, from byte {}, is not gzip (appended to the \
             file?); Python's gzip, which TraceLens reads .json.gz with, refuses the file",
            self.offset
        )
    }
}

impl std::error::Error for NotGzip {}

/// Whether `err` (or one of its causes) is a gzip file [`Gunzip`] refuses
/// for what it holds, not for ending early: a checksum that does not match,
/// or data after the stream. Salvaging does not help with either.
pub fn damaged_gzip(err: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| e.source()).any(|e| {
        e.downcast_ref::<NotGzip>().is_some()
            || e.to_string() == Gunzip::<&[u8]>::CRC
            || e.downcast_ref::<io::Error>().is_some_and(|io| {
                io.get_ref().is_some_and(|inner| {
                    inner.downcast_ref::<NotGzip>().is_some()
                        || inner.to_string() == Gunzip::<&[u8]>::CRC
                })
            })
    })
}

/// The content of a gzip file read from `R`.
#[derive(Debug)]
pub struct Gunzip<R: BufRead> {
    member: Option<GzDecoder<Counted<R>>>,
    done: bool,
}

impl<R: BufRead> Gunzip<R> {
    /// What a checksum that does not match is said to be.
    pub const CRC: &'static str = "the gzip stream's checksum (CRC32) does not match its \
        content: the file is damaged (in transfer or on disk), and nothing read from it can be \
        trusted; Python's gzip, which TraceLens reads .json.gz with, refuses it too";

    /// The content of the gzip file `inner` reads.
    pub fn new(inner: R) -> Gunzip<R> {
        Gunzip { member: Some(GzDecoder::new(Counted { inner, read: 0 })), done: false }
    }

    /// After a member: the next one, or the end (zeros only, or nothing).
    fn next_member(&mut self) -> io::Result<bool> {
        let mut input = self.member.take().expect("a member").into_inner();
        loop {
            let buf = input.fill_buf()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let zeros = buf.iter().take_while(|&&b| b == 0).count();
            if zeros > 0 {
                input.consume(zeros);
                continue;
            }
            // Another member: its magic (both bytes may not be buffered yet).
            if buf[0] == 0x1f && (buf.len() < 2 || buf[1] == 0x8b) {
                self.member = Some(GzDecoder::new(input));
                return Ok(true);
            }
            let offset = input.read;
            return Err(io::Error::new(io::ErrorKind::InvalidData, NotGzip { offset }));
        }
    }
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.done {
                return Ok(0);
            }
            let member = self.member.as_mut().expect("a member while not done");
            match member.read(buf) {
                Ok(0) => {
                    if !self.next_member()? {
                        self.done = true;
                    }
                }
                Ok(n) => return Ok(n),
                Err(e) if e.to_string().contains("checksum") => {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, Gunzip::<R>::CRC));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A reader that counts the bytes consumed from it.
#[derive(Debug)]
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.read += n as u64;
        self.inner.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Gunzip::new(bytes).read_to_end(&mut out).map(|_| out)
    }

    #[test]
    fn members_and_zeros_are_read_as_python_reads_them() {
        let mut two = gz(b"{\"a\":");
        two.extend(gz(b" 1}"));
        assert_eq!(read(&two).unwrap(), b"{\"a\": 1}");
        let mut padded = gz(b"{}");
        padded.extend([0; 100]);
        assert_eq!(read(&padded).unwrap(), b"{}");
        assert_eq!(read(&gz(b"")).unwrap(), b"");
    }

    #[test]
    fn a_bad_checksum_and_data_after_the_stream_are_said_so() {
        let mut bad = gz(b"{\"traceEvents\": []}");
        let crc = bad.len() - 8;
        bad[crc] ^= 0xff;
        let err = read(&bad).unwrap_err();
        assert_eq!(err.to_string(), Gunzip::<&[u8]>::CRC);
        let good = gz(b"{}");
        let mut appended = good.clone();
        appended.extend(b"step 1 loss 0.5\n");
        let err = read(&appended).unwrap_err();
        let not_gzip = err.get_ref().and_then(|e| e.downcast_ref::<NotGzip>()).unwrap();
        assert_eq!(not_gzip.offset, good.len() as u64);
    }
}
