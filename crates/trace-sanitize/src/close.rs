//! Closing a trace that was cut short: the JSON up to the last whole
//! record, then the brackets still open.
//!
//! A profiler killed while writing leaves `{"traceEvents": [{...}, {...}, {"ph`.
//! [`Closer`] watches the (sanitized) bytes on their way out, passes them on
//! up to the end of the last whole record (see [`Closer`] for which) and
//! holds back what came after. When the input ends early, what was held back
//! (a partial event and its comma) is dropped and the open brackets are
//! closed: `{"traceEvents": [{...}, {...}]}`, valid JSON holding every event
//! that was complete.
//!
//! Bytes after the end of the document (a second document appended, a log
//! line, the zeros a crash leaves at the end of a file) make it unparseable
//! too: they are dropped, and the document before them goes out as it was.
//! Text before it cannot be told from the document (a log line may hold
//! brackets): an input that does not start with `{` or `[` is not closed.
//!
//! On the way, every token outside strings goes through the JSON grammar
//! ([`crate::grammar`]), and every number is read to its end; the first
//! token it has no place for, or number that is not JSON (`1.2.3`), is
//! kept: a string that a stray quote ended early leaves one. A check, and a
//! plain sanitize, run a closer that only watches ([`Closer::watching`]).

use std::{
    borrow::Cow,
    io::{self, Write},
};

use serde::Serialize;
use wide::{i8x64, u8x64};

use crate::{
    engine::prefix_xor,
    grammar::{self, Grammar, Magnitude, Number},
    report::{Break, Malformed},
};

/// Bytes held back before the closer gives up being able to cut back: one
/// value (a string, an event) this large is not a trace's. Past it the bytes
/// go out, and a cut after that cannot be closed.
const MAX_PENDING: usize = 64 << 20;

/// At most this much of a number that is not JSON is shown.
const SHOWN_NUMBER: usize = 32;

/// How a cut trace was closed, or what followed the end of its document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cut {
    /// What was wrong with the end of the input.
    pub kind: CutKind,
    /// Bytes of the input read before it ended (decompressed).
    pub at: u64,
    /// Bytes of the input dropped at the end (decompressed): the value
    /// that was not complete, and what separated it from the last one kept;
    /// or what followed the end of the document.
    pub dropped: u64,
    /// What was appended to close the document, such as `]}` (empty for
    /// [`CutKind::DataAfterEnd`]).
    pub closed_with: String,
    /// Why the input ended, when a read failed (a gzip stream cut short)
    /// rather than the file simply ending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
}

/// What was wrong with the end of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CutKind {
    /// It ends inside an unfinished value: a profiler killed while writing,
    /// a copy cut short.
    CutShort,
    /// Its document is complete, and more than whitespace follows it.
    DataAfterEnd,
}

/// How an input ended, as [`Closer::finish`] found it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A complete document (whitespace after it at most): out as it came.
    Complete,
    /// Closed after its last complete value, or cut back to the end of its
    /// document; and how many of the bytes written were dropped (repairs
    /// make them more than the input's).
    Cut(Cut, u64),
    /// Nothing in it was complete (or it was empty): nothing written.
    NothingComplete,
    /// It does not start with `{` or `[` (past whitespace) but with this
    /// byte: nothing written.
    NotADocument(u8),
}

/// A writer that can close a document cut short (see the module docs).
///
/// Where to cut back to: the end of the last complete object element of the
/// outermost open array that has one (Kineto's `traceEvents`; rocprofv3's
/// record lists, whose enclosing array has no complete element yet), so a
/// partial event is dropped whole rather than closed half-way. Failing that
/// (a cut in the metadata after the events, or inside the very first
/// event), the end of the last complete object or array child of the
/// innermost container that has one.
#[derive(Debug)]
pub(crate) struct Closer<W> {
    /// Whether the bytes go on to `inner` (held back until no cut can take
    /// them back), or only their offsets are kept.
    hold: bool,
    inner: W,
    /// The bytes not written yet: from offset `released` to `seen`.
    pending: Vec<u8>,
    released: u64,
    seen: u64,
    /// Open brackets outside strings (`{` or `[`), at most
    /// [`Break::MAX_DEPTH`] + 1 of them: a document deeper is refused
    /// ([`Break::TooDeep`]) and the levels past that are only counted
    /// (`deeper`), so millions of `[` cost no memory.
    stack: Vec<Open>,
    /// Levels open past the stack's.
    deeper: u64,
    /// Where the document (the first top-level value) ended.
    end: Option<u64>,
    /// Where the first byte after it other than whitespace is: from there
    /// on the input is dropped.
    after_end: Option<Mark>,
    /// The first byte other than whitespace.
    first: Option<u8>,
    in_string: bool,
    escape: bool,
    /// Inside a number or a word outside strings.
    in_scalar: bool,
    /// Where the text stands in the JSON grammar.
    grammar: Grammar,
    /// The number being read, while the grammar is followed.
    number: Option<OpenNumber>,
    /// Where the bytes written come from in the input, for offsets to be
    /// told in the input's bytes (the caller says: [`Closer::map_to_input`]).
    to_input: ToInput,
    /// The first token the grammar does not allow there (a string where
    /// `:` goes, a `]` where a `{` is open), or number that is not JSON:
    /// the text is not JSON, whatever is repaired.
    pub(crate) malformed: Option<Malformed>,
}

/// A number read so far (it may go on in the next write).
#[derive(Debug)]
struct OpenNumber {
    state: Number,
    /// Where it starts: in the input, and in the bytes written.
    offset: u64,
    output_offset: u64,
    /// Its first [`SHOWN_NUMBER`] bytes (`len` of them), and whether more
    /// followed.
    shown: [u8; SHOWN_NUMBER],
    len: usize,
    more: bool,
    /// Its magnitude, once more than [`SHOWN_NUMBER`] bytes of it came.
    magnitude: Magnitude,
}

impl OpenNumber {
    /// Whether the number, a whole one, is within a double's range. One of
    /// at most [`SHOWN_NUMBER`] bytes and no exponent is.
    #[inline(always)]
    fn finite(&self) -> bool {
        match (self.more, self.state) {
            (false, Number::ExponentDigits) => Magnitude::finite_text(&self.shown[..self.len]),
            (false, _) => true,
            (true, _) => self.magnitude.finite(),
        }
    }

    /// The number as shown in a message: quoted, `...` after the part shown.
    fn quoted(&self) -> String {
        let more = if self.more { "..." } else { "" };
        format!("`{}{more}`", String::from_utf8_lossy(&self.shown[..self.len]))
    }
}

/// Offsets in the bytes written to the input's: the bytes from `output` on
/// are the input's from `input` on, or (`replaced`) replace the input's
/// there.
#[derive(Debug, Clone, Copy, Default)]
struct ToInput {
    output: u64,
    input: u64,
    replaced: bool,
}

impl ToInput {
    fn of(self, output_offset: u64) -> u64 {
        match self.replaced {
            true => self.input,
            false => self.input + (output_offset - self.output),
        }
    }
}

/// An open bracket, with where its children ended.
#[derive(Debug, Clone, Copy)]
struct Open {
    bracket: u8,
    /// Just after its last complete object child.
    last_object: Option<Mark>,
    /// Just after its last complete object or array child.
    last_child: Option<Mark>,
}

/// A place in the bytes written, and where that is in the input.
#[derive(Debug, Clone, Copy)]
struct Mark {
    output: u64,
    input: u64,
}

impl Open {
    fn new(bracket: u8) -> Open {
        Open { bracket, last_object: None, last_child: None }
    }
}

impl<W: Write> Closer<W> {
    pub(crate) fn new(inner: W) -> Closer<W> {
        Closer::with_hold(inner, true)
    }

    /// A closer that only watches: it follows the text and says how it
    /// would close it, but writes none of it (`inner` gets only what
    /// [`Closer::finish`] appends).
    pub(crate) fn watching(inner: W) -> Closer<W> {
        Closer::with_hold(inner, false)
    }

    fn with_hold(inner: W, hold: bool) -> Closer<W> {
        Closer {
            hold,
            inner,
            pending: Vec::new(),
            released: 0,
            seen: 0,
            stack: Vec::new(),
            deeper: 0,
            end: None,
            after_end: None,
            first: None,
            in_string: false,
            escape: false,
            in_scalar: false,
            grammar: Grammar::new(),
            number: None,
            to_input: ToInput::default(),
            malformed: None,
        }
    }

    /// The bytes written next are the input's from offset `input` on (as
    /// many), or (`replaced`) stand for bytes of the input there: a repair.
    /// Until then, offsets are the bytes written.
    pub(crate) fn map_to_input(&mut self, input: u64, replaced: bool) {
        self.to_input = ToInput { output: self.seen, input, replaced };
    }

    /// The first break found, unless one was: the grammar is followed no
    /// further.
    #[cold]
    #[inline(never)]
    fn broken(
        &mut self,
        found: Cow<'static, str>,
        expected: &'static str,
        kind: Break,
        at: (u64, u64),
    ) {
        if self.malformed.is_none() {
            let (offset, output_offset) = at;
            self.malformed =
                Some(Malformed { offset, found, expected: expected.into(), kind, output_offset });
        }
        self.grammar.stop();
        self.number = None;
    }

    /// The token starting with `b` at `at` has no place in the grammar.
    #[cold]
    #[inline(never)]
    fn grammar_broken(&mut self, b: u8, at: u64) {
        let (found, expected) = (grammar::describe(b), self.grammar.expected());
        let offset = self.to_input.of(at);
        self.broken(found.into(), expected, Break::Token, (offset, at));
    }

    /// The bracket `b` at `at` opened a level deeper than orjson reads.
    #[cold]
    #[inline(never)]
    fn too_deep(&mut self, b: u8, at: u64) {
        const _: () = assert!(Break::MAX_DEPTH == 1024, "said below");
        if !self.grammar.following() {
            return;
        }
        let found = match b {
            b'{' => "`{` 1,025 levels deep",
            _ => "`[` 1,025 levels deep",
        };
        let offset = self.to_input.of(at);
        self.broken(found.into(), "a value", Break::TooDeep, (offset, at));
    }

    /// A number starts with `b` at `at` (in the bytes written), and these
    /// bytes of it follow.
    fn number_starts(&mut self, b: u8, at: u64) {
        let number = OpenNumber {
            state: Number::start(b),
            offset: self.to_input.of(at),
            output_offset: at,
            shown: [b; SHOWN_NUMBER],
            len: 1,
            more: false,
            magnitude: Magnitude::new(),
        };
        self.number = Some(number);
    }

    /// More bytes of the number being read.
    #[inline(always)]
    fn number_goes_on(&mut self, bytes: &[u8]) {
        let Some(n) = &mut self.number else { return };
        for &b in bytes {
            n.state = n.state.next(b);
        }
        let kept = bytes.len().min(SHOWN_NUMBER - n.len);
        n.shown[n.len..n.len + kept].copy_from_slice(&bytes[..kept]);
        n.len += kept;
        if bytes.len() > kept {
            // Past what is shown, the magnitude is kept instead.
            if !n.more {
                n.magnitude.feed(&n.shown);
            }
            n.magnitude.feed(&bytes[kept..]);
            n.more = true;
        }
    }

    /// The number (or word) being read ended (what follows it is no part
    /// of it).
    fn number_ends(&mut self) {
        let Some(n) = self.number.take() else { return };
        let at = (n.offset, n.output_offset);
        if !n.state.complete() && Number::word_starts(n.shown[0]) {
            // `true.`: what no scan of words saw (`true` and a byte that
            // is not ASCII).
            let found = format!("{} (not a JSON value)", n.quoted());
            self.broken(found.into(), "a value", Break::Token, at);
        } else if !n.state.complete() {
            let found = format!("{} (not a JSON number)", n.quoted());
            self.broken(found.into(), "a value", Break::Number, at);
        } else if !matches!(n.state, Number::Word | Number::Letters) && !n.finite() {
            let found = format!("{} (too large for a double)", n.quoted());
            self.broken(found.into(), "a value", Break::Infinite, at);
        }
    }

    /// A number of `len` bytes at `block[j..]`, the rest of `block` going on
    /// with it when it reaches the end.
    #[inline(never)]
    fn number_in_block(&mut self, block: &[u8; 64], j: usize, len: usize, at: u64) {
        let run = &block[j..j + len];
        let ends = j + len < 64;
        if ends {
            // One with an exponent may be too large for a double: read on.
            let state = Number::read(run);
            if state.complete() && state != Number::ExponentDigits {
                return;
            }
        }
        self.number_starts(run[0], at);
        self.number_goes_on(&run[1..]);
        if ends {
            self.number_ends();
        }
    }

    /// A token outside strings, `b` its first byte (`"` for a string, a
    /// digit or letter for a number or word), at offset `at`: a bracket
    /// opened or closed, and the grammar followed.
    #[inline(always)]
    fn token(&mut self, b: u8, at: u64) {
        let open = match b {
            b'{' | b'[' if self.stack.len() > Break::MAX_DEPTH => {
                self.deeper += 1;
                None
            }
            b'{' | b'[' => {
                self.stack.push(Open::new(b));
                if self.stack.len() > Break::MAX_DEPTH {
                    self.too_deep(b, at);
                }
                None
            }
            b'}' | b']' if self.deeper > 0 => {
                self.deeper -= 1;
                None
            }
            b'}' | b']' => {
                self.closed(at + 1);
                self.stack.last().map(|o| o.bracket)
            }
            _ => None,
        };
        if !self.grammar.step(b, open) {
            self.grammar_broken(b, at);
        }
    }

    /// A bracket closed; `end` is the offset just after it.
    #[inline(always)]
    fn closed(&mut self, end: u64) {
        // One that closes nothing (a stray `]` at the top) ends nothing.
        let Some(child) = self.stack.pop() else { return };
        let mark = Mark { output: end, input: self.to_input.of(end) };
        match self.stack.last_mut() {
            Some(parent) => {
                parent.last_child = Some(mark);
                if child.bracket == b'{' {
                    parent.last_object = Some(mark);
                }
            }
            None => {
                self.end.get_or_insert(end);
            }
        }
    }

    /// Where a cut now would cut back to: `(stack index, place)`.
    /// `None` as the index: nothing to close.
    fn cut_point(&self) -> Option<(Option<usize>, Mark)> {
        let records = self.stack.iter().enumerate().find_map(|(i, o)| match o.last_object {
            Some(end) if o.bracket == b'[' => Some((Some(i), end)),
            _ => None,
        });
        records.or_else(|| {
            let i = self.stack.iter().rposition(|o| o.last_child.is_some())?;
            Some((Some(i), self.stack[i].last_child.expect("found with one")))
        })
    }

    /// Write out the pending bytes before offset `to`.
    fn release(&mut self, to: u64) -> io::Result<()> {
        if to <= self.released {
            return Ok(());
        }
        if self.hold {
            let n = (to - self.released) as usize;
            self.inner.write_all(&self.pending[..n])?;
            self.pending.drain(..n);
        }
        self.released = to;
        Ok(())
    }

    /// The input ended (`read_error`: because a read failed). A complete
    /// document goes out as it came; a cut one is closed. (The input's end
    /// is where the bytes written end, mapped as the caller said last: see
    /// [`Closer::map_to_input`].)
    pub(crate) fn finish(mut self, read_error: Option<String>) -> io::Result<(W, Ending)> {
        let input_end = self.to_input.of(self.seen);
        let dropped_from = |mark: Mark| {
            debug_assert!(mark.input <= input_end, "{mark:?} past the input's end {input_end}");
            input_end.saturating_sub(mark.input)
        };
        match self.first {
            Some(b'{' | b'[') => {}
            Some(b) => return Ok((self.inner, Ending::NotADocument(b))),
            None => return Ok((self.inner, Ending::NothingComplete)),
        }
        if let Some(from) = self.after_end {
            // Everything from there on was dropped on the way.
            let cut = Cut {
                kind: CutKind::DataAfterEnd,
                at: input_end,
                dropped: dropped_from(from),
                closed_with: String::new(),
                read_error,
            };
            return Ok((self.inner, Ending::Cut(cut, self.seen - from.output)));
        }
        if self.end.is_some() {
            let rest = std::mem::take(&mut self.pending);
            self.inner.write_all(&rest)?;
            return Ok((self.inner, Ending::Complete));
        }
        let Some((depth, at)) = self.cut_point().filter(|&(_, at)| at.output >= self.released)
        else {
            return Ok((self.inner, Ending::NothingComplete));
        };
        self.release(at.output)?;
        let closed_with: String = self.stack[..depth.map_or(0, |d| d + 1)]
            .iter()
            .rev()
            .map(|o| if o.bracket == b'{' { '}' } else { ']' })
            .collect();
        self.inner.write_all(closed_with.as_bytes())?;
        let cut = Cut {
            kind: CutKind::CutShort,
            at: input_end,
            dropped: dropped_from(at),
            closed_with,
            read_error,
        };
        Ok((self.inner, Ending::Cut(cut, self.seen - at.output)))
    }
}

impl<W: Write> Write for Closer<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let base = self.seen;
        if self.first.is_none() {
            self.first = data.iter().copied().find(|&b| !is_space(b));
        }
        let mut i = 0;
        let mut scalar_until = 0; // a block with a backslash goes byte by byte
        while i < data.len() {
            // 64 bytes at a time (portable SIMD) where no backslash is: only
            // quotes and brackets matter then.
            if !self.escape && i >= scalar_until && i + 64 <= data.len() {
                let block: [u8; 64] = data[i..i + 64].try_into().expect("64 bytes");
                let v = u8x64::from(block);
                let eq = |c: u8| v.simd_eq(u8x64::splat(c)).to_bitmask();
                if eq(b'\\') == 0 {
                    let quote = eq(b'"');
                    // An opening quote is inside its string, a closing one
                    // not.
                    let inside = prefix_xor(quote) ^ if self.in_string { !0 } else { 0 };
                    let outside = !inside & !quote;
                    // Clearing bit 5 folds `{` onto `[` and `}` onto `]`.
                    let folded = v & u8x64::splat(!0x20);
                    let bracket = |c: u8| folded.simd_eq(u8x64::splat(c)).to_bitmask();
                    let punct = bracket(b'[') | bracket(b']') | eq(b':') | eq(b',');
                    let structural = punct & outside;
                    // Numbers and words: what is neither whitespace, a
                    // control byte nor punctuation; a token where one starts.
                    // A control byte is a token of its own (an error).
                    let solid = v.simd_gt(u8x64::splat(b' ')).to_bitmask();
                    let mut control = !solid & outside & !(eq(b' ') | eq(b'\n'));
                    if control != 0 {
                        control &= !(eq(b'\r') | eq(b'\t'));
                    }
                    let scalar = solid & outside & !structural;
                    let starts = scalar & !(scalar << 1 | self.in_scalar as u64);
                    // `^ 0xb0` moves the digits, alone, to the lowest ten
                    // signed bytes.
                    let moved = i8x64::from(block.map(|b| (b ^ 0xb0) as i8));
                    let digits = i8x64::splat(-118).simd_gt(moved).to_bitmask();
                    // Read byte by byte: all of the block's numbers where
                    // the masks cannot tell, the one reaching its end, and
                    // those that start with `-`, or with `0` and a digit.
                    let last_run = 64 - (!scalar).leading_zeros() as usize;
                    let read_all = !plain_numbers(&block, scalar, starts & digits, digits);
                    if self.number.is_some() {
                        let n = (!scalar).trailing_zeros() as usize;
                        self.number_goes_on(&block[..n]);
                        if n < 64 {
                            self.number_ends();
                        }
                    }
                    let mut bits = structural | (quote & inside) | starts | control;
                    while bits != 0 {
                        let j = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let at = base + (i + j) as u64;
                        self.token(block[j], at);
                        let b = block[j];
                        if !Number::starts(b) {
                            continue;
                        }
                        let read = read_all
                            || j >= last_run
                            || b == b'-'
                            || (b == b'0' && (digits >> j) & 2 != 0)
                            || Number::word_starts(b);
                        if read && self.grammar.following() {
                            let len = (!(scalar >> j)).trailing_zeros() as usize;
                            self.number_in_block(&block, j, len, at);
                        }
                    }
                    self.in_string = inside >> 63 == 1;
                    self.in_scalar = scalar >> 63 == 1;
                    i += 64;
                    continue;
                }
                scalar_until = i + 64;
            }
            let b = data[i];
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if b == b'"' {
                    self.in_string = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else {
                    i += memchr::memchr2(b'"', b'\\', &data[i..]).unwrap_or(data.len() - i);
                    continue;
                }
                i += 1;
                continue;
            }
            let scalar = b > b' ' && !matches!(b, b'"' | b'{' | b'[' | b'}' | b']' | b':' | b',');
            if b == b'"' {
                self.in_string = true;
            }
            if self.number.is_some() {
                match scalar {
                    true => self.number_goes_on(&data[i..=i]),
                    false => self.number_ends(),
                }
            }
            if (!scalar && !is_space(b)) || (scalar && !self.in_scalar) {
                let at = base + i as u64;
                self.token(b, at);
                if scalar && Number::starts(b) && self.grammar.following() {
                    self.number_starts(b, at);
                }
            }
            self.in_scalar = scalar;
            i += 1;
        }
        if let (Some(end), None) = (self.end, self.after_end) {
            let from = end.saturating_sub(base) as usize;
            if let Some(i) = data[from..].iter().position(|&b| !is_space(b)) {
                let output = base + (from + i) as u64;
                self.after_end = Some(Mark { output, input: self.to_input.of(output) });
            }
        }
        if self.hold {
            self.pending.extend_from_slice(data);
        }
        self.seen += data.len() as u64;
        if let Some(from) = self.after_end {
            // The whitespace before it goes out, the rest nowhere.
            self.release(from.output)?;
            self.pending.clear();
            self.released = self.seen;
            return Ok(data.len());
        }
        // What no cut can take back goes out: after the end of the
        // document, whitespace so far.
        let keep_from = match self.end {
            Some(_) => Some(self.seen),
            None => self.cut_point().map(|(_, at)| at.output),
        };
        if let Some(at) = keep_from {
            self.release(at)?;
        }
        if self.seen - self.released > MAX_PENDING as u64 {
            // Too far back to cut to: let it go; a cut before the next
            // complete value cannot be closed.
            self.release(self.seen)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Whether every number that starts in a 64-byte block with a digit (bits
/// of `numbers`) is JSON as far as the block goes, told from the masks:
/// `scalar` marks the bytes of numbers and words, `digits` the digits.
/// Digits, and one `.` between digits at most: most numbers. (The caller
/// reads on its own one that starts with `0` and a digit, and the one that
/// runs past the block.) Where this says no, the block's numbers are read
/// byte by byte.
#[inline(always)]
fn plain_numbers(block: &[u8; 64], scalar: u64, numbers: u64, digits: u64) -> bool {
    // Adding a run's first bit carries through the run: its bits flip.
    let runs = scalar & (scalar.wrapping_add(numbers) ^ scalar);
    let mut points = runs & !digits;
    if points == 0 {
        return true;
    }
    // Carried through the digits after each `.`: lands on what follows.
    let after_fraction = digits.wrapping_add(points << 1) & !digits;
    if points & !(digits << 1 & digits >> 1) != 0 || after_fraction & points != 0 {
        return false;
    }
    while points != 0 {
        if block[points.trailing_zeros() as usize] != b'.' {
            return false;
        }
        points &= points - 1;
    }
    true
}

/// JSON's whitespace (RFC 8259: space, tab, line feed, carriage return).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write `input` in pieces of `step` bytes, then finish.
    fn close(input: &str, step: usize) -> (String, Option<Cut>, bool) {
        let mut closer = Closer::new(Vec::new());
        for piece in input.as_bytes().chunks(step.max(1)) {
            closer.write_all(piece).unwrap();
        }
        let (out, ending) = closer.finish(None).unwrap();
        let (cut, ok) = match ending {
            Ending::Complete => (None, true),
            Ending::Cut(cut, _) => (Some(cut), true),
            Ending::NothingComplete | Ending::NotADocument(_) => (None, false),
        };
        (String::from_utf8(out).unwrap(), cut, ok)
    }

    #[track_caller]
    fn check(input: &str, expected: &str, closed_with: &str) {
        for step in [1, 2, 3, 7, 1000] {
            let (out, cut, ok) = close(input, step);
            assert!(ok, "{input:?}");
            assert_eq!(out, expected, "{input:?}, step {step}");
            serde_json::from_str::<serde_json::Value>(&out).unwrap();
            let cut = cut.unwrap();
            assert_eq!(cut.closed_with, closed_with);
            assert_eq!(cut.at, input.len() as u64);
            assert_eq!(cut.dropped as usize, input.len() - (expected.len() - closed_with.len()));
        }
    }

    #[test]
    fn a_cut_document_is_closed_after_its_last_complete_value() {
        let events = r#"{"a": 1, "traceEvents": [{"ph": "X", "args": {"x": [1]}}, {"ph": "B"}"#;
        check(events, &format!("{events}]}}"), "]}");
        check(&format!("{events}, "), &format!("{events}]}}"), "]}");
        check(
            &format!("{events}, {{\"ph\": \"X\", \"name\": \"a]{{\\\""),
            &format!("{events}]}}"),
            "]}",
        );
        // Cut inside the metadata after the events.
        check(r#"{"traceEvents": [{}], "traceName": "/tmp/x"#, r#"{"traceEvents": [{}]}"#, "}");
        // Brackets and quotes inside strings do not count.
        check(r#"{"s": ["]}\"{", {"t": "}"}, {"#, r#"{"s": ["]}\"{", {"t": "}"}]}"#, "]}");
    }

    #[test]
    fn every_cut_gives_valid_json_with_a_prefix_of_the_events() {
        let mut trace = String::from(r#"{"schemaVersion": 1, "traceEvents": ["#);
        for i in 0..40 {
            if i > 0 {
                trace.push_str(", ");
            }
            // Brackets, quotes and backslashes inside strings; a long string
            // so that some 64-byte blocks are all string.
            trace.push_str(&format!(
                r#"{{"name": "op{i} [{{\"}}]\\", "args": {{"dims": [[1, {i}], []], "s": "{}"}}}}"#,
                "x".repeat(i * 3)
            ));
        }
        trace.push_str(r#"], "traceName": "]}"}"#);
        let whole: serde_json::Value = serde_json::from_str(&trace).unwrap();
        let events = whole["traceEvents"].as_array().unwrap();
        // Inside the first event only that event can be closed, part-way.
        let first_end = trace.find("}}").unwrap() + 2;
        for step in [1, 64, 100, 4096] {
            // Byte by byte is slow: every 13th cut.
            for cut in (0..=trace.len()).filter(|c| step > 1 || c % 13 == 0) {
                let (out, _, ok) = close(&trace[..cut], step);
                if !ok {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("cut {cut}, step {step}: {e}: {out}"));
                if let Some(kept) = v.get("traceEvents").and_then(|e| e.as_array())
                    && cut >= first_end
                {
                    assert_eq!(kept[..], events[..kept.len()], "cut {cut}, step {step}");
                }
            }
        }
    }

    #[test]
    fn a_partial_event_is_dropped_whole() {
        // Cut inside an event's nested arrays: the whole event goes.
        let kept = r#"{"traceEvents": [{"args": {"dims": [[1]]}}"#;
        check(&format!(r#"{kept}, {{"args": {{"dims": [[1, 2], [3"#), &format!("{kept}]}}"), "]}");
        // Inside the first event there is no whole one: it is closed where it can be.
        let first = r#"{"v": 1, "traceEvents": [{"args": {"dims": [[1]"#;
        check(&format!("{first}, ["), &format!("{first}]}}}}]}}"), "]}}]}");
    }

    #[test]
    fn rocprofv3_records_are_cut_back_to_the_last_whole_record() {
        let head = r#"{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "kernel_symbols": [{"id": 1}], "buffer_records": {"kernel_dispatch": [{"a": [1]}, {"a": [2]}"#;
        check(&format!(r#"{head}, {{"a": [3"#), &format!("{head}]}}}}]}}"), "]}}]}");
        // Cut after the record lists: they are kept whole.
        let records_done = format!(r#"{head}]}}"#);
        check(&format!(r#"{records_done}, "hsa_api": ["#), &format!("{records_done}}}]}}"), "}]}");
    }

    #[test]
    fn what_follows_the_document_is_dropped() {
        for (input, kept) in [
            // A second document, whole or cut.
            (r#"{"a": [{}]}{"b": [{}]}"#, r#"{"a": [{}]}"#),
            (r#"{"a": [{}]}{"b": [{}, {"#, r#"{"a": [{}]}"#),
            // A log line; the zeros a crash leaves; a stray bracket.
            ("{\"a\": 1}\nW1130 rank 0: done\n", "{\"a\": 1}\n"),
            ("[1, {}] \0\0\0\0", "[1, {}] "),
            ("{}\r\n]", "{}\r\n"),
        ] {
            for step in [1, 2, 3, 7, 1000] {
                let (out, cut, ok) = close(input, step);
                assert!(ok, "{input:?}");
                assert_eq!(out, kept, "{input:?}, step {step}");
                let cut = cut.unwrap();
                assert_eq!(cut.kind, CutKind::DataAfterEnd);
                assert_eq!(
                    (cut.at, cut.dropped),
                    (input.len() as u64, (input.len() - kept.len()) as u64)
                );
                assert_eq!(cut.closed_with, "");
            }
        }
    }

    #[test]
    fn a_complete_document_goes_out_unchanged() {
        for input in [r#"{"traceEvents": [{}]}"#, "{\"a\": [1, {\"b\": \"}\"}]}\n", " [] \t\r\n "] {
            for step in [1, 5, 100] {
                let (out, cut, ok) = close(input, step);
                assert_eq!((out.as_str(), cut, ok), (input, None, true));
            }
        }
    }

    #[test]
    fn nothing_complete_before_the_cut_cannot_be_closed() {
        for input in ["", "{", r#"{"traceEvents": [{"ph": "X""#, "  {\"a\": \"}", "]{"] {
            let (out, cut, ok) = close(input, 3);
            assert!(!ok && cut.is_none() && out.is_empty(), "{input:?}: {out:?}");
        }
    }

    #[test]
    fn what_does_not_start_as_a_document_is_not_closed() {
        for (input, first) in [
            // A log line before the trace, brackets and all.
            ("INFO rank {0}\n{\"traceEvents\": [{}]}", b'I'),
            ("\0\0\0{\"a\": 1}", 0),
            (" 42", b'4'),
            ("\"s\"", b'"'),
        ] {
            for step in [1, 3, 1000] {
                let mut closer = Closer::new(Vec::new());
                for piece in input.as_bytes().chunks(step) {
                    closer.write_all(piece).unwrap();
                }
                let (_, ending) = closer.finish(None).unwrap();
                assert_eq!(ending, Ending::NotADocument(first), "{input:?}, step {step}");
            }
        }
    }

    #[test]
    fn a_read_error_is_kept_with_the_cut() {
        let mut closer = Closer::new(Vec::new());
        closer.write_all(br#"[{}, {"#).unwrap();
        let (out, ending) = closer.finish(Some("incomplete deflate stream".into())).unwrap();
        assert_eq!(out, b"[{}]");
        let Ending::Cut(cut, _) = ending else { panic!("{ending:?}") };
        assert_eq!(cut.read_error.as_deref(), Some("incomplete deflate stream"));
    }

    /// Every number is read to its end wherever blocks and writes split it,
    /// and the first one that is not JSON is found where it starts.
    #[test]
    fn numbers_are_checked_wherever_they_are_split() {
        let fine = "[0, -0, 12, -12.5, 0.25, 1e5, 1E+05, -2.5e-3, 1694128201545.123, true, null]";
        let bad = ["1.2.3", "0x1f", "007", "-01", "1.", "1.e5", "-", "12abc", "1e5e5", "1e+"];
        for pad in 0..70 {
            let doc = format!("{{\"a\": [{}{fine}]}}", " ".repeat(pad));
            for step in [1, 3, 64, 1000] {
                let mut closer = Closer::watching(io::sink());
                for piece in doc.as_bytes().chunks(step) {
                    closer.write_all(piece).unwrap();
                }
                assert_eq!(closer.malformed, None, "pad {pad}, step {step}");
            }
            for number in bad {
                let doc = format!("{{\"a\": [{}1, {number}, 2.5]}}", " ".repeat(pad));
                for step in [1, 3, 64, 1000] {
                    let mut closer = Closer::watching(io::sink());
                    for piece in doc.as_bytes().chunks(step) {
                        closer.write_all(piece).unwrap();
                    }
                    let m = closer.malformed.unwrap_or_else(|| panic!("{number}: none found"));
                    assert_eq!(m.offset, (pad + 10) as u64, "{number}, pad {pad}, step {step}");
                    assert_eq!(m.found, format!("`{number}` (not a JSON number)"));
                    assert_eq!(m.kind, Break::Number);
                }
            }
        }
    }

    /// Write `doc` in pieces of `step` bytes to a closer that watches; what
    /// it found malformed.
    fn malformed(doc: &str, step: usize) -> Option<Malformed> {
        let mut closer = Closer::watching(io::sink());
        for piece in doc.as_bytes().chunks(step) {
            closer.write_all(piece).unwrap();
        }
        closer.malformed
    }

    /// A number beyond a double's range is found wherever it is split, long
    /// or short, and one just inside it is not.
    #[test]
    fn a_number_too_large_for_a_double_is_found() {
        let huge = format!("1{}", "0".repeat(309));
        let fine =
            format!("[1e308, -1.7976931348623157E+308, 1e-400, 9{}, 0.5e-9999]", "9".repeat(60));
        let too_large = [
            ("1e400", "`1e400`"),
            ("-1.8e308", "`-1.8e308`"),
            ("0.5e310", "`0.5e310`"),
            (huge.as_str(), "`10000000000000000000000000000000...`"),
            (
                "1797693134862315807937289714053034150799341327100378269361737789804449682927647509e228",
                "`17976931348623158079372897140530...`",
            ),
        ];
        for pad in 0..70 {
            for step in [1, 3, 64, 1000] {
                let doc = format!("{{\"a\": [{}{fine}]}}", " ".repeat(pad));
                assert_eq!(malformed(&doc, step), None, "pad {pad}, step {step}");
                for (number, shown) in too_large {
                    let doc = format!("{{\"a\": [{}1, {number}, 2.5]}}", " ".repeat(pad));
                    let m = malformed(&doc, step).unwrap_or_else(|| panic!("{number}: none found"));
                    assert_eq!(m.offset, (pad + 10) as u64, "{number}, pad {pad}, step {step}");
                    assert_eq!(m.found, format!("{shown} (too large for a double)"));
                    assert_eq!((m.kind, &*m.expected), (Break::Infinite, "a value"));
                }
            }
        }
    }

    /// orjson reads 1,024 levels of brackets: the first `{` or `[` past them
    /// is found, and a document that reaches them but no further is fine.
    #[test]
    fn brackets_past_orjsons_depth_are_found() {
        // The document's object, then `n` times `open`.
        let nested = |n: usize, open: &str, close: &str| {
            format!("{{\"a\": {}1{}}}", open.repeat(n), close.repeat(n))
        };
        for step in [1, 3, 64, 1000] {
            for (open, close) in [("[", "]"), ("{\"k\": ", "}"), ("[{\"k\": ", "}]")] {
                let levels = open.matches(['[', '{']).count();
                let most = (Break::MAX_DEPTH - 1) / levels;
                let fine = nested(most, open, close);
                assert_eq!(malformed(&fine, step), None, "{open}, step {step}");
                let deep = nested(most + 1, open, close);
                let m = malformed(&deep, step).unwrap_or_else(|| panic!("{open}: none found"));
                assert_eq!(m.kind, Break::TooDeep);
                // The 1,025th bracket, the document's own counted.
                let at = deep.match_indices(['[', '{']).nth(Break::MAX_DEPTH).unwrap().0;
                assert_eq!(m.offset, at as u64, "{open}, step {step}");
                let bracket = &deep[at..=at];
                assert_eq!(m.found, format!("`{bracket}` 1,025 levels deep"));
            }
        }
        // After the end of the document, nothing is followed.
        let after = format!("[1]{}", "[".repeat(2000));
        assert_eq!(malformed(&after, 64), None);
    }
}
