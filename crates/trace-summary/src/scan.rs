//! The streaming scanner under both readers: it finds, in the stream, the
//! elements a [`Shape`] asks for (Kineto's events; rocprofv3's records),
//! tracking strings, escapes and nesting across reads, on one thread, and
//! hands over the buffers they were read into, for the caller to
//! deserialize each element from its bytes on another. Everything else is
//! skipped without being built. Memory stays bounded (a few buffers,
//! recycled).

use std::io::{self, Read};

use serde::de;
use trace_sanitize::prefix_xor;
use wide::u8x64;

/// Where elements lie in a trace: told each bracket the scanner meets
/// outside strings, and the keys of the object levels it looks into.
pub(crate) trait Shape {
    /// What an element is, for the caller to deserialize it as such.
    type Tag: Copy + Send;
    /// `b` (`{` or `[`) opened level `depth` (the top object is level 1):
    /// the tag of the element it starts, if it starts one.
    fn open(&mut self, depth: usize, b: u8) -> Result<Option<Self::Tag>, serde_json::Error>;
    /// Level `depth` closed: a tag to hand over as a mark at that place
    /// (the end of a group of elements), if any.
    fn close(&mut self, depth: usize) -> Option<Self::Tag>;
    /// Whether the keys of level `depth` matter: such a level is read byte
    /// by byte, its keys given to [`Shape::key`]. Below the top level the
    /// others are skimmed 64 bytes at a time.
    fn keyed(&self, depth: usize) -> bool;
    /// A key and its `:` at a keyed level.
    fn key(&mut self, key: &[u8]);
    /// A `,` at a keyed level.
    fn comma(&mut self);
}

/// Bytes read from the stream, with the elements found in them.
pub(crate) struct Batch<T> {
    pub(crate) bytes: Vec<u8>,
    /// Where `bytes` start in the trace.
    pub(crate) base: u64,
    /// `(start, end, tag)` of each element in `bytes`.
    pub(crate) elements: Vec<(usize, usize, T)>,
}

/// Bytes read at a time.
pub(crate) const CHUNK: usize = 1 << 20;

/// What the scanner saw of the whole trace.
pub(crate) struct Scanned<S> {
    pub(crate) shape: S,
    /// The JSON ended early, after this many bytes.
    pub(crate) truncated_at: Option<u64>,
    /// Where something other than whitespace follows the end of the
    /// document (what follows is not read).
    pub(crate) after_end: Option<u64>,
}

/// Scan `reader`, `chunk` bytes at a time, for the elements `shape` asks
/// for, and give each batch of them to `each` as they come (on this
/// thread; the scanner runs on another). A trace cut short is not an error
/// here: [`Scanned::truncated_at`] says so, and the caller decides. The
/// first error of `each` ends the read and is returned.
pub(crate) fn scan<R, S>(
    reader: R,
    chunk: usize,
    shape: S,
    mut each: impl FnMut(&Batch<S::Tag>) -> Result<(), serde_json::Error>,
) -> Result<Scanned<S>, serde_json::Error>
where
    R: Read + Send,
    S: Shape + Send,
{
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch<S::Tag>>(4);
    let (back, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(6);
    std::thread::scope(|scope| {
        let scanner = scope.spawn(move || scan_on(reader, chunk, shape, tx, spare));
        let mut result = Ok(());
        for batch in rx {
            if result.is_ok() {
                result = each(&batch);
            }
            let _ = back.try_send(batch.bytes);
        }
        let scanned = scanner.join().expect("the scanner does not panic");
        result?;
        scanned
    })
}

/// The bytes that change the scanner's state below the top level.
const STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'[' as usize] = true;
    t[b'}' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Nesting outside strings, and the elements it delimits.
struct Nesting<S: Shape> {
    shape: S,
    /// The bracket that opened each level (`{` or `[`), for its close to
    /// match (a stray one throws the levels off); as many as the levels
    /// open.
    opened: Vec<u8>,
    /// Levels open past [`trace_sanitize::Break::MAX_DEPTH`], only counted.
    deeper: u64,
    /// At a keyed level, whether a key goes next (after `{` or `,`) rather
    /// than a value (after `:`) or a `,` or the close (after a value).
    expect_key: bool,
    top_seen: bool,
    /// `(start, level, tag)` of the element being read.
    start: Option<(usize, usize, S::Tag)>,
    /// `(start, end, tag)` of the elements completed in the current buffer.
    elements: Vec<(usize, usize, S::Tag)>,
}

impl<S: Shape> Nesting<S> {
    /// The levels open: 0 outside the document, 1 in its top object.
    #[inline(always)]
    fn depth(&self) -> usize {
        self.opened.len()
    }

    /// Whether the scanner may skim where it stands: below the top level,
    /// at a level whose keys do not matter.
    #[inline(always)]
    fn skims(&self) -> bool {
        self.depth() >= 2 && !self.shape.keyed(self.depth())
    }

    /// Whether keys matter where the scanner stands.
    #[inline(always)]
    fn keyed(&self) -> bool {
        self.depth() >= 1 && self.shape.keyed(self.depth())
    }

    /// `{` or `[` at `at`.
    #[inline(always)]
    fn open(&mut self, b: u8, at: usize) -> Result<(), serde_json::Error> {
        if self.depth() == 0 {
            self.top_seen = true;
            if b != b'{' {
                return Err(de::Error::custom("the trace is not a JSON object"));
            }
        }
        // Past orjson's limit (which the sanitizer reports) the levels are
        // only counted: millions of `[` cost no byte each.
        if self.opened.len() >= trace_sanitize::Break::MAX_DEPTH {
            self.deeper += 1;
            return Ok(());
        }
        self.opened.push(b);
        self.expect_key = b == b'{';
        let depth = self.depth();
        if let Some(tag) = self.shape.open(depth, b)? {
            self.start = Some((at, depth, tag));
        }
        Ok(())
    }

    /// `b` (`}` or `]`) at `at`.
    #[inline(always)]
    fn close(&mut self, b: u8, at: usize) -> Result<(), serde_json::Error> {
        if self.deeper > 0 {
            self.deeper -= 1;
            return Ok(());
        }
        let depth = self.depth();
        let Some(opened) = self.opened.pop() else {
            return Err(de::Error::custom("unbalanced brackets in the trace"));
        };
        if opened != b - 2 {
            // `{`/`}` and `[`/`]` are two apart in ASCII.
            return Err(de::Error::custom(format!(
                "`{}` closes a `{}` in the trace",
                b as char, opened as char
            )));
        }
        if let Some((start, level, tag)) = self.start
            && level == depth
        {
            self.elements.push((start, at + 1, tag));
            self.start = None;
        }
        self.expect_key = false;
        if let Some(mark) = self.shape.close(depth) {
            self.elements.push((at, at + 1, mark));
        }
        Ok(())
    }
}

/// The scanner: sends the buffers it read with the elements found in them.
fn scan_on<R: Read, S: Shape>(
    mut reader: R,
    chunk: usize,
    shape: S,
    tx: std::sync::mpsc::SyncSender<Batch<S::Tag>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
) -> Result<Scanned<S>, serde_json::Error> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 * CHUNK);
    let mut st = Nesting {
        shape,
        opened: Vec::new(),
        deeper: 0,
        expect_key: false,
        top_seen: false,
        start: None,
        elements: Vec::new(),
    };
    let mut in_string = false;
    let mut escape = false;
    let mut key: Vec<u8> = Vec::new(); // the last string at a keyed level
    let mut key_open = false; // the string being read is a key at a keyed level
    let mut key_done = false; // a key ended, its `:` not yet seen
    let mut scanned = 0usize; // bytes of `buf` already scanned
    let mut base = 0u64; // offset in the trace of `buf[0]`
    let mut after_end = None;
    loop {
        // Read straight into `buf`, up to `chunk` bytes at a time.
        match (&mut reader).take(chunk as u64).read_to_end(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(serde_json::Error::io(e)),
        }
        let n = buf.len();
        let mut i = scanned;
        let mut scalar_until = i; // a block with a backslash goes byte by byte
        while i < n {
            // Skimming, outside an escape: 64 bytes at a time (portable
            // SIMD); only unescaped quotes and nesting matter there.
            if st.skims() && !escape && i >= scalar_until && i + 64 <= n {
                let block: [u8; 64] = buf[i..i + 64].try_into().expect("64 bytes");
                let v = u8x64::from(block);
                let eq = |c: u8| v.simd_eq(u8x64::splat(c)).to_bitmask();
                if eq(b'\\') != 0 {
                    scalar_until = i + 64;
                } else {
                    let inside = prefix_xor(eq(b'"')) ^ if in_string { !0 } else { 0 };
                    let open = (eq(b'{') | eq(b'[')) & !inside;
                    let close = (eq(b'}') | eq(b']')) & !inside;
                    let mut bits = open | close;
                    let mut stopped = false;
                    while bits != 0 {
                        let j = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let at = i + j;
                        if open >> j & 1 == 1 {
                            st.open(buf[at], at)?;
                        } else {
                            st.close(buf[at], at)?;
                        }
                        if !st.skims() {
                            // At a level whose keys matter: byte by byte again.
                            in_string = false;
                            i = at + 1;
                            stopped = true;
                            break;
                        }
                    }
                    if !stopped {
                        in_string = inside >> 63 == 1;
                        i += 64;
                    }
                    continue;
                }
            }
            let b = buf[i];
            if in_string {
                let keyed = st.keyed();
                if escape {
                    escape = false;
                    if keyed {
                        key.push(b);
                    }
                } else if !keyed && b != b'"' && b != b'\\' {
                    // Jump to the next quote or backslash.
                    match memchr::memchr2(b'"', b'\\', &buf[i..n]) {
                        Some(k) => i += k,
                        None => i = n,
                    }
                    continue;
                } else if b == b'\\' {
                    // Kept as written: a key with an escape is none the
                    // shape follows (`trace\"Events` is not `traceEvents`).
                    escape = true;
                    if keyed {
                        key.push(b);
                    }
                } else if b == b'"' {
                    in_string = false;
                    key_done = key_open;
                    key_open = false;
                } else {
                    key.push(b);
                }
                i += 1;
                continue;
            }
            if st.skims() && !STRUCTURAL[b as usize] {
                // Skimming, only strings and nesting matter: skip numbers,
                // whitespace, ':' and ','.
                i += 1;
                while i < n && !STRUCTURAL[buf[i] as usize] {
                    i += 1;
                }
                continue;
            }
            if st.depth() == 0 && st.top_seen && !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                // The document is over: what follows is not the trace's.
                after_end = Some(base + i as u64);
                break;
            }
            if st.depth() == 0 && !st.top_seen && !matches!(b, b'{' | b'[') {
                not_json_before_top(b, base + i as u64)?;
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    in_string = true;
                    key.clear();
                    key_open = st.keyed() && st.expect_key;
                    st.expect_key = false;
                }
                // At a keyed level, a key without its `:` and value, or a
                // `:` after no key, would move the shape's keys onto the
                // wrong values.
                b',' | b'}' | b']' if key_done => {
                    return Err(de::Error::custom(format!(
                        "`{}` after a key, where `:` goes, at byte {} of the trace",
                        b as char,
                        base + i as u64
                    )));
                }
                b':' if st.keyed() => {
                    if !key_done {
                        return Err(de::Error::custom(format!(
                            "`:` after no key at byte {} of the trace",
                            base + i as u64
                        )));
                    }
                    st.shape.key(&key);
                    key_done = false;
                }
                b'{' | b'[' => st.open(b, i)?,
                b'}' | b']' => st.close(b, i)?,
                b',' if st.keyed() => {
                    st.shape.comma();
                    st.expect_key = true;
                }
                _ => {}
            }
            i += 1;
        }
        // Hand the buffer over with its elements; keep only what an
        // unfinished element still needs.
        let keep_from = st.start.map_or(n, |(start, ..)| start);
        let batch_base = base;
        base += keep_from as u64;
        if st.elements.is_empty() {
            buf.drain(..keep_from);
        } else {
            let mut next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(2 * CHUNK));
            next.clear();
            next.extend_from_slice(&buf[keep_from..]);
            let full = std::mem::replace(&mut buf, next);
            let elements = std::mem::take(&mut st.elements);
            if tx.send(Batch { bytes: full, base: batch_base, elements }).is_err() {
                // The reader failed; its error is the one reported.
                return Ok(Scanned { shape: st.shape, truncated_at: None, after_end: None });
            }
        }
        if let Some((start, ..)) = st.start.as_mut() {
            *start -= keep_from;
        }
        scanned = buf.len();
        if after_end.is_some() {
            // Read the rest unseen, so the sanitizer feeding the reader
            // finishes as it would.
            io::copy(&mut reader, &mut io::sink()).map_err(serde_json::Error::io)?;
            break;
        }
    }
    let total = base + buf.len() as u64;
    if total == 0 {
        return Err(de::Error::custom("the trace is empty (0 bytes)"));
    }
    if !st.top_seen {
        return Err(de::Error::custom(format!("no JSON object in the trace's {total} bytes")));
    }
    let truncated = st.depth() != 0 || in_string;
    Ok(Scanned { shape: st.shape, truncated_at: truncated.then_some(total), after_end })
}

/// Before the top-level object only whitespace (and a UTF-8 byte order
/// mark) may come; anything else means this is not a JSON trace.
fn not_json_before_top(b: u8, at: u64) -> Result<(), serde_json::Error> {
    const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];
    if b.is_ascii_whitespace() || (at < 3 && b == BOM[at as usize]) {
        return Ok(());
    }
    // Non-ASCII bytes reach here sanitized (U+FFFD), so neither their value
    // nor their offset is the file's: say what they are instead.
    Err(de::Error::custom(if b.is_ascii_graphic() {
        format!("not JSON: '{}' at offset {at}, where the trace's object should start", b as char)
    } else {
        "not JSON: binary data where the trace's object should start".to_string()
    }))
}

/// A key as it reads (the bytes between its quotes, as [`Shape::key`] gets
/// them): its escapes decoded (a control byte the sanitizer escaped, say).
pub(crate) fn key_text(key: &[u8]) -> String {
    let text = String::from_utf8_lossy(key);
    serde_json::from_str::<String>(&format!("\"{text}\"")).unwrap_or_else(|_| text.into())
}
