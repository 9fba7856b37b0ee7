//! The byte-level repair engine.
//!
//! The engine sees the input as a sequence of buffers. Between two buffers it
//! keeps whether the scan is inside a JSON string literal (and, inside a
//! string that held a stray quote, where that string stands: see
//! [`Place`]): every multi-byte construct (a UTF-8 sequence, an escape, a
//! surrogate pair, a quote and the whitespace after it, a bare word) is
//! decided by looking ahead inside the buffer, and when the buffer ends in
//! the middle of one, the engine stops before it and the caller hands those
//! bytes back at the front of the next buffer (`Outcome::consumed`). Looking
//! back, it sees a fixed kilobyte before a position, and of the string it is
//! in, what its opening quote follows (the key, the place: see [`Opener`]),
//! however long ago that string opened. That is what makes the output
//! independent of where chunk boundaries fall.
//!
//! Clean 64-byte blocks (no backslash, no byte >= 0x80, no control byte inside
//! a string, no letter outside one, not ending in `-` outside one, every
//! closing quote followed at once by `,` `:` `}` or `]`) are skipped with a
//! bitmask test; everything else goes through the scalar state machine.

use std::{borrow::Cow, collections::VecDeque};

use wide::u8x64;

use crate::report::{Defect, Recorder};

/// How far past a quote that may close a string the engine looks for what
/// follows it, through whitespace. A quote followed by this much whitespace
/// is taken to close its string.
const QUOTE_LOOKAHEAD: usize = 128;

/// Longest run of undecided bytes the engine may hand back: a bare `N/A`
/// and the whitespace after it. (A quote and the whitespace after it, a
/// high surrogate escape plus the first five bytes of the low one,
/// `\ud800\udc0`, and a bare word are shorter.)
pub(crate) const MAX_CARRY: usize = NOT_AVAILABLE.len() + QUOTE_LOOKAHEAD;

/// How much already-consumed input is kept to look back from a position:
/// from an opening quote for the key and the bracket before it, from a bare
/// word for its key.
const CONTEXT: usize = 1024;

const BLOCK: usize = 64;

/// Stray quotes remembered for naming keys.
const MAX_STRAYS: usize = 64;

/// One replacement inside the current buffer: `buf[start..end]` becomes `with`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) with: &'static [u8],
}

const FFFD_UTF8: &[u8] = "\u{fffd}".as_bytes();
/// A UTF-8 byte order mark: JSON has none (RFC 8259 8.1), and orjson
/// refuses a document that starts with one.
pub(crate) const BOM: &[u8] = b"\xef\xbb\xbf";
const ESCAPED_QUOTE: &[u8] = b"\\\"";
const NULL: &[u8] = b"null";

/// Bare words a JSON writer may leave for a float that is not finite (C's
/// `printf` and fmt write `inf`/`nan`, Python's `json` `Infinity`/`NaN`), each
/// also after a `-`. None is JSON; each becomes `null`.
const NON_FINITE: &[&[u8]] = &[b"inf", b"nan", b"Infinity", b"NaN", b"INF", b"NAN", b"Inf"];

/// The longest bare word looked at: `Infinity`.
const LONGEST_WORD: usize = 8;

/// What early-2021 Kineto (PyTorch 1.8) wrote, unquoted, for a value it did
/// not have (pytorch/kineto#131 worked around it in the TensorBoard plugin):
/// quoted, it is the string it meant to be.
const NOT_AVAILABLE: &[u8] = b"N/A";
const NOT_AVAILABLE_QUOTED: &[u8] = b"\"N/A\"";

/// At most this much of a bare word that is not JSON is shown.
const SHOWN_WORD: usize = 32;
const FFFD_ESCAPE: &[u8] = b"\\ufffd";

/// `\u0000` .. `\u001f`, lowercase hex like Python's `json.dumps`.
static CONTROL_ESCAPES: [[u8; 6]; 32] = {
    let hex = b"0123456789abcdef";
    let mut table = [[0u8; 6]; 32];
    let mut i = 0;
    while i < 32 {
        table[i] = [b'\\', b'u', b'0', b'0', hex[i >> 4], hex[i & 0xf]];
        i += 1;
    }
    table
};

#[derive(Debug)]
pub(crate) struct Outcome {
    /// Bytes of the buffer that are decided; the rest must be passed again.
    pub(crate) consumed: usize,
    /// Set when `stop_at_first` asked to stop and a defect was found.
    pub(crate) stopped: bool,
}

/// The innermost open bracket, as far as a closing quote cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Top {
    /// Nothing is open: the top level of the document.
    None,
    Object,
    Array,
    /// Not found in the kilobyte looked back through from the opening
    /// quote.
    Unknown,
}

/// Where a string stands: in which bracket, and in an object whether it is
/// a value (after `:`) or a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    top: Top,
    after_colon: bool,
}

impl Place {
    /// Whether the string may be followed by `next` (its first byte after
    /// whitespace). In an object a key is followed by `:`, a value by `,` or
    /// `}`; in an array a string is followed by `,` or `]`. That is all valid
    /// JSON allows.
    fn may_follow_string(self, next: u8) -> bool {
        match (self.top, next) {
            (Top::Object, b':') => !self.after_colon,
            (Top::Object, b',' | b'}') => self.after_colon,
            (Top::Array, b',' | b']') => true,
            (Top::None, b',') => true,
            (Top::Unknown, b',' | b':' | b'}' | b']') => true,
            _ => false,
        }
    }
}

/// What the opening quote of a string follows, looked back at from there:
/// the key the string is the value of, and where it stands.
#[derive(Debug, Clone)]
struct Opener {
    key: Option<String>,
    place: Place,
}

/// The opener of the string whose opening quote is at input offset
/// `opened` (`None`: not found).
#[derive(Debug)]
struct Current {
    opened: u64,
    opener: Option<Opener>,
}

#[derive(Debug)]
pub(crate) struct Engine {
    in_string: bool,
    /// Input offset of the opening quote of the string it is in.
    opened: u64,
    /// Inside a string that held a stray quote: where that string stands,
    /// which decides whether a later quote ends it.
    repairing: Option<Place>,
    stop_at_first: bool,
    /// The last bytes consumed, for naming the key of a repair.
    context: Vec<u8>,
    /// Input offsets of the last stray quotes escaped: text, not the start
    /// of the string, when naming the key of a later repair.
    strays: VecDeque<u64>,
    /// The opener of the string of the last repair, or of the one the last
    /// buffer ended in: found once a string, however long it is.
    current: Option<Current>,
    /// Bytes the repairs so far added (less those they removed): where an
    /// input offset is in the output.
    grown: i64,
}

enum Step {
    Advance(usize),
    Repair {
        len: usize,
        defect: Defect,
        with: &'static [u8],
    },
    /// A bare word that is not JSON and has no repair: reported, passed on.
    NotJson(usize),
    NeedMore,
}

impl Engine {
    /// Whether the scan so far ends inside a string.
    pub(crate) fn in_string(&self) -> bool {
        self.in_string
    }

    pub(crate) fn new(stop_at_first: bool) -> Engine {
        Engine {
            in_string: false,
            opened: 0,
            repairing: None,
            stop_at_first,
            context: Vec::with_capacity(CONTEXT),
            strays: VecDeque::with_capacity(MAX_STRAYS),
            current: None,
            grown: 0,
        }
    }

    /// Scan `buf`, whose first byte is at input offset `base`. `eof` says no
    /// more input follows, so everything must be decided.
    pub(crate) fn process(
        &mut self,
        buf: &[u8],
        base: u64,
        eof: bool,
        edits: &mut Vec<Edit>,
        rec: &mut Recorder,
    ) -> Outcome {
        let len = buf.len();
        let mut i = 0;
        let mut stopped = false;
        'outer: while i < len {
            // Within a string that held a stray quote, each quote needs its
            // place: scalar until the string ends.
            let block_end = if i + BLOCK > len {
                len
            } else if self.repairing.is_some() {
                i + BLOCK
            } else {
                let block: &[u8; BLOCK] = buf[i..i + BLOCK].try_into().expect("64-byte block");
                let next = buf.get(i + BLOCK).copied();
                if let Some((in_string, quotes)) = clean_block(block, next, self.in_string) {
                    // Ending inside a string, the block's last quote (if it
                    // has one) opened it.
                    if in_string && quotes != 0 {
                        let last = BLOCK - 1 - quotes.leading_zeros() as usize;
                        self.opened = base + (i + last) as u64;
                    }
                    self.in_string = in_string;
                    i += BLOCK;
                    continue;
                }
                i + BLOCK
            };
            while i < block_end {
                match self.step(buf, base, i, eof) {
                    Step::Advance(n) => i += n,
                    Step::NeedMore => break 'outer,
                    Step::NotJson(n) => {
                        let key = self.key_of(buf, base, i, true);
                        let at = base + i as u64;
                        rec.not_json(at, at.saturating_add_signed(self.grown), &buf[i..i + n], key);
                        i += n;
                    }
                    Step::Repair { len: n, defect, with } => {
                        if rec.wants_detail() {
                            // Outside a string (a bare word, a byte order
                            // mark, invalid UTF-8 no string holds), the key
                            // is the one just before, not the last string's.
                            let key = self.key_of(buf, base, i, !self.in_string);
                            // An invalid escape or a stray quote is shown
                            // with the byte after it.
                            let shown = match defect {
                                Defect::InvalidEscape | Defect::StrayQuote => {
                                    &buf[i..(i + 2).min(len)]
                                }
                                _ => &buf[i..i + n],
                            };
                            rec.record(defect, base + i as u64, shown, key);
                        } else {
                            rec.count(defect);
                        }
                        if defect == Defect::StrayQuote {
                            if self.strays.len() == MAX_STRAYS {
                                self.strays.pop_front();
                            }
                            self.strays.push_back(base + i as u64);
                        }
                        self.grown += with.len() as i64 - n as i64;
                        edits.push(Edit { start: i, end: i + n, with });
                        i += n;
                        if self.stop_at_first {
                            stopped = true;
                            break 'outer;
                        }
                    }
                }
            }
        }
        debug_assert!(stopped || !eof || i == len, "at end of input everything is decided");
        debug_assert!(stopped || len - i <= MAX_CARRY);
        // A string that goes on into the next buffer: its opener now, while
        // the bytes before its opening quote are at hand.
        if self.in_string {
            self.opener(buf, base);
        }
        self.remember(&buf[..i]);
        Outcome { consumed: i, stopped }
    }

    fn step(&mut self, buf: &[u8], base: u64, i: usize, eof: bool) -> Step {
        let b = buf[i];
        if b == BOM[0] && base + i as u64 == 0 {
            if buf.len() < BOM.len() && !eof && BOM.starts_with(buf) {
                return Step::NeedMore;
            }
            if buf.starts_with(BOM) {
                return Step::Repair { len: BOM.len(), defect: Defect::ByteOrderMark, with: b"" };
            }
        }
        if b >= 0x80 {
            return match utf8_sequence(buf, i, eof) {
                Utf8::Valid(n) => Step::Advance(n),
                Utf8::Invalid(n) => {
                    Step::Repair { len: n, defect: Defect::InvalidUtf8, with: FFFD_UTF8 }
                }
                Utf8::NeedMore => Step::NeedMore,
            };
        }
        if !self.in_string {
            return match b {
                b'"' => {
                    self.in_string = true;
                    self.opened = base + i as u64;
                    Step::Advance(1)
                }
                b'-' => match buf.get(i + 1) {
                    Some(c) if c.is_ascii_alphabetic() => self.word(buf, i, 1, eof),
                    Some(_) => Step::Advance(1),
                    None if eof => Step::Advance(1),
                    None => Step::NeedMore,
                },
                b'a'..=b'z' | b'A'..=b'Z' => self.word(buf, i, 0, eof),
                _ => Step::Advance(1),
            };
        }
        match b {
            b'"' => self.closing_quote(buf, base, i, eof),
            b'\\' => escape(buf, i, eof),
            0..=0x1f => Step::Repair {
                len: 1,
                defect: Defect::ControlChar,
                with: &CONTROL_ESCAPES[b as usize],
            },
            _ => Step::Advance(1),
        }
    }

    /// A quote at `buf[i]` inside a string ends it when what follows it
    /// (after whitespace) may follow a string: `,` `:` `}` or `]`, the end
    /// of the input, or more whitespace than [`QUOTE_LOOKAHEAD`]. Otherwise
    /// it is a stray quote written unescaped into the text (Kineto's names
    /// and log lines), and is escaped. Once a string held one, a later quote
    /// ends it only when what follows may follow a string where this one
    /// stands ([`Place`]): JSON text inside a log line has quotes followed by
    /// `:` and `,` too.
    fn closing_quote(&mut self, buf: &[u8], base: u64, i: usize, eof: bool) -> Step {
        let Some(next) = next_past_space(buf, i + 1, eof) else {
            return Step::NeedMore;
        };
        let ends = match self.repairing {
            None => next.is_none_or(|c| matches!(c, b',' | b':' | b'}' | b']')),
            Some(place) => next.is_none_or(|c| place.may_follow_string(c)),
        };
        if ends {
            self.in_string = false;
            self.repairing = None;
            return Step::Advance(1);
        }
        let unknown = Place { top: Top::Unknown, after_colon: false };
        let place = self.opener(buf, base).map_or(unknown, |o| o.place);
        if self.repairing.is_none() {
            self.repairing = Some(place);
        }
        Step::Repair { len: 1, defect: Defect::StrayQuote, with: ESCAPED_QUOTE }
    }

    /// The opener of the string it is in, described from the bytes before
    /// its opening quote when that is in `buf`, and kept from there on
    /// (found once a string: at the first repair in it, or at the end of
    /// the buffer it opened in, where the bytes before it are the same).
    fn opener(&mut self, buf: &[u8], base: u64) -> Option<&Opener> {
        let opened = self.opened;
        if !matches!(&self.current, Some(c) if c.opened == opened) {
            let opener = (opened.checked_sub(base))
                .filter(|&q| q < buf.len() as u64)
                .map(|q| self.describe(buf, base, q as usize));
            self.current = Some(Current { opened, opener });
        }
        self.current.as_ref().and_then(|c| c.opener.as_ref())
    }

    /// What the opening quote at `buf[q]` follows, from the kilobyte before
    /// it: a key and `:`, `{`, `[`, or a `,` and the bracket still open
    /// before that.
    fn describe(&self, buf: &[u8], base: u64, q: usize) -> Opener {
        let (bytes, start) = self.before(buf, base, q);
        let stray = |j: usize| self.strays.contains(&(start + j as u64));
        let at_start = start == 0;
        let top = |top| Place { top, after_colon: false };
        let place = match bytes.iter().rposition(|b| !b" \t\n\r".contains(b)) {
            None => top(if at_start { Top::None } else { Top::Unknown }),
            Some(k) => match bytes[k] {
                b':' => Place { top: Top::Object, after_colon: true },
                b'{' => top(Top::Object),
                b'[' => top(Top::Array),
                b',' => top(open_bracket(&bytes[..k], at_start, &stray)),
                _ => top(Top::Unknown),
            },
        };
        Opener { key: key_ending_at(&bytes, &stray), place }
    }

    /// The (at most) [`CONTEXT`] bytes before `buf[pos]`, and the input
    /// offset of the first of them. The same bytes wherever buffers end.
    fn before<'a>(&self, buf: &'a [u8], base: u64, pos: usize) -> (Cow<'a, [u8]>, u64) {
        let bytes = if pos >= CONTEXT {
            Cow::Borrowed(&buf[pos - CONTEXT..pos])
        } else {
            let kept = &self.context[self.context.len().saturating_sub(CONTEXT - pos)..];
            Cow::Owned([kept, &buf[..pos]].concat())
        };
        let start = base + pos as u64 - bytes.len() as u64;
        (bytes, start)
    }

    /// A bare word outside strings at `buf[i + sign..]` (`sign` is 1 after a
    /// `-` at `buf[i]`): `true`, `false` and `null` pass, and so does the
    /// exponent of a number (`1e5`); a non-finite float becomes `null`, a
    /// bare `N/A` the string `"N/A"`; anything else is not JSON and has no
    /// repair: it is reported ([`Step::NotJson`]) and left as it is.
    fn word(&self, buf: &[u8], i: usize, sign: usize, eof: bool) -> Step {
        let start = i + sign;
        let run = buf[start..]
            .iter()
            .take(LONGEST_WORD + 1)
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        if start + run == buf.len() && run <= LONGEST_WORD && !eof {
            return Step::NeedMore;
        }
        // Only a whole word: not the tail of a longer run of letters, nor
        // the exponent of a number.
        let before = if i > 0 { buf.get(i - 1) } else { self.context.last() };
        if before.is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'.') {
            return Step::Advance(sign + run);
        }
        let word = &buf[start..start + run];
        // `true.`, `inf5`: the letters are not the whole token.
        let whole = buf.get(start + run).is_none_or(|&c| !is_token_byte(c));
        if whole && run <= LONGEST_WORD && NON_FINITE.contains(&word) {
            return Step::Repair { len: sign + run, defect: Defect::NonFinite, with: NULL };
        }
        if whole && sign == 0 && matches!(word, b"true" | b"false" | b"null") {
            return Step::Advance(run);
        }
        // Not JSON: the whole token, up to what may follow a value.
        let token = buf[i..].iter().take(SHOWN_WORD).take_while(|&&b| is_token_byte(b)).count();
        if i + token == buf.len() && token < SHOWN_WORD && !eof {
            return Step::NeedMore;
        }
        // Quoted, `N/A` must read as a whole string: what follows it must
        // be what may follow one (see `closing_quote`).
        if &buf[i..i + token] == NOT_AVAILABLE {
            match next_past_space(buf, i + token, eof) {
                None => return Step::NeedMore,
                Some(next) if next.is_none_or(|c| b",:}]".contains(&c)) => {
                    return Step::Repair {
                        len: token,
                        defect: Defect::UnquotedNotAvailable,
                        with: NOT_AVAILABLE_QUOTED,
                    };
                }
                Some(_) => {}
            }
        }
        Step::NotJson(token)
    }

    fn remember(&mut self, consumed: &[u8]) {
        if consumed.len() >= CONTEXT {
            self.context.clear();
            self.context.extend_from_slice(&consumed[consumed.len() - CONTEXT..]);
        } else {
            let keep = CONTEXT - consumed.len();
            if self.context.len() > keep {
                self.context.drain(..self.context.len() - keep);
            }
            self.context.extend_from_slice(consumed);
        }
    }

    /// The key whose string value holds position `pos` (with `bare`, whose
    /// bare value starts there), when it can be found within the kilobyte
    /// before the value. Best effort: `None` when unsure. `base` is the
    /// input offset of `buf[0]`.
    fn key_of(&mut self, buf: &[u8], base: u64, pos: usize, bare: bool) -> Option<String> {
        if !bare {
            return self.opener(buf, base).and_then(|o| o.key.clone());
        }
        let (bytes, start) = self.before(buf, base, pos);
        let stray = |j: usize| self.strays.contains(&(start + j as u64));
        key_ending_at(&bytes, &stray)
    }
}

/// Whether `b` goes on a bare word (or number): printable ASCII other than
/// what ends a value or starts another.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !b",:{}[]\"".contains(&b)
}

/// The first byte from `buf[j]` on that is not JSON whitespace, within
/// [`QUOTE_LOOKAHEAD`] bytes: `Some(None)` when there is none (the input
/// ends, or all of them are whitespace), `None` when the buffer ends first.
fn next_past_space(buf: &[u8], j: usize, eof: bool) -> Option<Option<u8>> {
    for k in j..j + QUOTE_LOOKAHEAD {
        match buf.get(k) {
            None if eof => return Some(None),
            None => return None,
            Some(b' ' | b'\t' | b'\n' | b'\r') => {}
            Some(&c) => return Some(Some(c)),
        }
    }
    Some(None)
}

/// If `block` needs no repair, the string state after it. `next` is the
/// byte after the block, when the buffer has it.
///
/// Portable SIMD (`wide`: SSE2 on any x86-64, NEON on aarch64): per-byte
/// tests gathered into 64-bit masks, bit j for byte j.
#[inline(always)]
fn clean_block(block: &[u8; BLOCK], next: Option<u8>, in_string: bool) -> Option<(bool, u64)> {
    let v = u8x64::from(*block);
    let eq = |b: u8| v.simd_eq(u8x64::splat(b));
    // Backslash or non-ASCII: always go scalar.
    if (eq(b'\\') | v).to_bitmask() != 0 {
        return None;
    }
    let quote = eq(b'"').to_bitmask();
    let control = v.simd_lt(u8x64::splat(0x20)).to_bitmask();
    // With no backslash every quote toggles the string state, so bit j of
    // `inside` is set when byte j lies inside a string. Control bytes
    // (newlines between records, usually) outside strings are fine.
    let inside = prefix_xor(quote) ^ if in_string { !0 } else { 0 };
    if control & inside != 0 {
        return None;
    }
    // A letter outside strings starts a bare word (`true`, or a non-finite
    // float to repair); a `-` ending the block may be the sign of one.
    // All bytes are ASCII here, so adding moves a range onto the high bit:
    // `lower + 0x1f` has it from `a` up, `lower + 0x05` from past `z` up.
    let lower = v | u8x64::splat(0x20);
    let from_a = lower + u8x64::splat(0x80 - b'a');
    let past_z = lower + u8x64::splat(0x80 - b'z' - 1);
    let letter = (from_a & !past_z).to_bitmask();
    let minus_last = (block[BLOCK - 1] == b'-') as u64;
    if (letter | minus_last << 63) & !inside != 0 {
        return None;
    }
    // Every closing quote (a quote outside, as `inside` holds each opening
    // one and not the closing one) is followed at once by what may follow a
    // string; whitespace, or anything that makes it a stray quote, is for
    // the scalar path to decide. `}` and `]` differ in bit 5 only.
    let closing = quote & !inside;
    if closing != 0 {
        let follow = (eq(b',') | eq(b':') | lower.simd_eq(u8x64::splat(b'}'))).to_bitmask();
        if closing << 1 & !follow != 0 {
            return None;
        }
        if closing >> 63 == 1 && !matches!(next, Some(b',' | b':' | b'}' | b']')) {
            return None;
        }
    }
    Some((inside >> 63 == 1, quote))
}

/// The innermost bracket still open at the end of `bytes`, scanning back
/// and skipping strings and closed brackets; `Top::None` when there is none
/// and `bytes` start the input, `Top::Unknown` when they do not (or a string
/// starts before them).
fn open_bracket(bytes: &[u8], at_start: bool, stray: &dyn Fn(usize) -> bool) -> Top {
    let mut depth = 0usize;
    let mut end = bytes.len();
    while let Some(k) = end.checked_sub(1) {
        end = k;
        match bytes[k] {
            // The end of a string: go on from its start.
            b'"' if !stray(k) => match rfind_unescaped_quote(&bytes[..k], stray) {
                Some(open) => end = open,
                None => return Top::Unknown,
            },
            b'}' | b']' => depth += 1,
            b'{' | b'[' if depth > 0 => depth -= 1,
            b'{' => return Top::Object,
            b'[' => return Top::Array,
            _ => {}
        }
    }
    if at_start { Top::None } else { Top::Unknown }
}

/// Bit j set when an odd number of the bits 0..=j of `x` are: with `x` the
/// quotes of a block without backslashes, the bytes inside strings (each
/// opening quote included, each closing one not).
#[inline(always)]
pub fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

enum Utf8 {
    Valid(usize),
    /// The maximal invalid subpart, replaced by one U+FFFD (Unicode 15 §3.9,
    /// what CPython's decoder does).
    Invalid(usize),
    NeedMore,
}

fn utf8_sequence(buf: &[u8], i: usize, eof: bool) -> Utf8 {
    let (n, lo, hi) = match buf[i] {
        0xc2..=0xdf => (2, 0x80, 0xbf),
        0xe0 => (3, 0xa0, 0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80, 0xbf),
        0xed => (3, 0x80, 0x9f),
        0xf0 => (4, 0x90, 0xbf),
        0xf1..=0xf3 => (4, 0x80, 0xbf),
        0xf4 => (4, 0x80, 0x8f),
        _ => return Utf8::Invalid(1),
    };
    for k in 1..n {
        let Some(&c) = buf.get(i + k) else {
            return if eof { Utf8::Invalid(k) } else { Utf8::NeedMore };
        };
        let (l, h) = if k == 1 { (lo, hi) } else { (0x80, 0xbf) };
        if c < l || c > h {
            return Utf8::Invalid(k);
        }
    }
    Utf8::Valid(n)
}

/// A backslash that starts no escape, doubled: the string keeps it as text.
const INVALID_ESCAPE: Step = Step::Repair { len: 1, defect: Defect::InvalidEscape, with: b"\\\\" };

/// `buf[i]` is a backslash inside a string.
fn escape(buf: &[u8], i: usize, eof: bool) -> Step {
    let Some(&c) = buf.get(i + 1) else {
        // The input ends inside the string: it is cut short, not mistyped.
        return if eof { Step::Advance(1) } else { Step::NeedMore };
    };
    match c {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => return Step::Advance(2),
        b'u' => {}
        // Anything else (`\x`, `\U`, a raw control or non-ASCII byte) starts no
        // escape: the backslash is doubled, and the byte after it is then
        // looked at on its own.
        _ => return INVALID_ESCAPE,
    }
    let value = match hex4(buf, i + 2, eof) {
        Hex::Value(v) => v,
        Hex::Invalid => return INVALID_ESCAPE,
        Hex::NeedMore => return Step::NeedMore,
    };
    let lone = Step::Repair { len: 6, defect: Defect::LoneSurrogate, with: FFFD_ESCAPE };
    match value {
        0xdc00..=0xdfff => lone,
        0xd800..=0xdbff => match low_surrogate_at(buf, i + 6, eof) {
            Some(true) => Step::Advance(12),
            Some(false) => lone,
            None => Step::NeedMore,
        },
        _ => Step::Advance(6),
    }
}

enum Hex {
    Value(u16),
    Invalid,
    NeedMore,
}

fn hex4(buf: &[u8], p: usize, eof: bool) -> Hex {
    let mut v = 0u16;
    for k in 0..4 {
        let Some(&c) = buf.get(p + k) else {
            return if eof { Hex::Invalid } else { Hex::NeedMore };
        };
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Hex::Invalid,
        };
        v = v << 4 | d as u16;
    }
    Hex::Value(v)
}

/// Whether `\uDC00`..`\uDFFF` starts at `p`; `None` when the buffer ends
/// before that is known.
fn low_surrogate_at(buf: &[u8], p: usize, eof: bool) -> Option<bool> {
    for (k, want) in [b'\\', b'u'].into_iter().enumerate() {
        match buf.get(p + k) {
            None => return if eof { Some(false) } else { None },
            Some(&c) if c != want => return Some(false),
            Some(_) => {}
        }
    }
    match hex4(buf, p + 2, eof) {
        Hex::Value(v) => Some((0xdc00..=0xdfff).contains(&v)),
        Hex::Invalid => Some(false),
        Hex::NeedMore => None,
    }
}

/// Given the bytes up to a value, the key it is the value of: `"key" : `.
/// `stray(j)` says the quote at `bytes[j]` was escaped as a stray one, so
/// it is text.
fn key_ending_at(bytes: &[u8], stray: &dyn Fn(usize) -> bool) -> Option<String> {
    let mut j = bytes.len();
    while j > 0 && bytes[j - 1].is_ascii_whitespace() {
        j -= 1;
    }
    if j == 0 || bytes[j - 1] != b':' {
        return None;
    }
    j -= 1;
    while j > 0 && bytes[j - 1].is_ascii_whitespace() {
        j -= 1;
    }
    if j == 0 || bytes[j - 1] != b'"' {
        return None;
    }
    let key_end = j - 1;
    let key_open = rfind_unescaped_quote(&bytes[..key_end], stray)?;
    let key = &bytes[key_open + 1..key_end];
    if key.len() > 128 {
        return None;
    }
    Some(String::from_utf8_lossy(key).into_owned())
}

/// The last quote of `bytes` that is neither escaped (by the backslashes
/// before it) nor a stray one.
fn rfind_unescaped_quote(bytes: &[u8], stray: &dyn Fn(usize) -> bool) -> Option<usize> {
    let mut end = bytes.len();
    loop {
        let q = memchr::memrchr(b'"', &bytes[..end])?;
        let backslashes = bytes[..q].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 && !stray(q) {
            return Some(q);
        }
        end = q;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `clean_block` must answer, byte by byte.
    fn clean_block_scalar(
        block: &[u8; BLOCK],
        next: Option<u8>,
        mut in_string: bool,
    ) -> Option<(bool, Option<usize>)> {
        let mut opened = None;
        for (j, &b) in block.iter().enumerate() {
            match b {
                b'\\' | 0x80.. => return None,
                b'"' if in_string => {
                    let after = block.get(j + 1).copied().or(next);
                    if !matches!(after, Some(b',' | b':' | b'}' | b']')) {
                        return None;
                    }
                    in_string = false;
                }
                b'"' => {
                    in_string = true;
                    opened = Some(j);
                }
                0..0x20 if in_string => return None,
                b'a'..=b'z' | b'A'..=b'Z' if !in_string => return None,
                b'-' if !in_string && j == BLOCK - 1 => return None,
                _ => {}
            }
        }
        Some((in_string, opened.filter(|_| in_string)))
    }

    /// The same verdict, and ending inside a string, the same opening quote
    /// (the block's last quote, as the engine takes it).
    #[track_caller]
    fn assert_same(block: &[u8; BLOCK], next: Option<u8>, in_string: bool) {
        let last_opened = |(inside, quotes): (bool, u64)| {
            (inside, (inside && quotes != 0).then(|| BLOCK - 1 - quotes.leading_zeros() as usize))
        };
        assert_eq!(
            clean_block(block, next, in_string).map(last_opened),
            clean_block_scalar(block, next, in_string),
            "{:?} next {next:?} in_string {in_string}",
            String::from_utf8_lossy(block)
        );
    }

    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn clean_block_matches_the_scalar_rule() {
        let alphabet = [
            b'"',
            b'a',
            b'\n',
            0x1f,
            b' ',
            b'\\',
            0x80,
            0x20,
            0x7f,
            0xff,
            0,
            b'-',
            b'Z',
            b'@',
            b'[',
            b']',
            b'{',
            b'}',
            b',',
            b':',
            b']' ^ 0x20,
        ];
        let nexts = [None, Some(b','), Some(b':'), Some(b'}'), Some(b']'), Some(b' '), Some(b'x')];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // Every byte value at every position, inside and outside strings,
        // with every byte after the block:
        // `1111"kkk…k":11111{"k":[1,"k"]}1111`.
        let mut base = [b'1'; BLOCK];
        base[11..40].fill(b'k');
        base[10] = b'"';
        base[40] = b'"';
        base[41] = b':';
        base[50..62].copy_from_slice(br#"{"k":[1,"k"]"#);
        base[62] = b'}';
        base[63] = b'"';
        for value in 0..=255u8 {
            for pos in 0..BLOCK {
                let mut block = base;
                block[pos] = value;
                for in_string in [false, true] {
                    for after in nexts {
                        assert_same(&block, after, in_string);
                    }
                }
            }
        }
        for round in 0..40_000 {
            let mut block = [b'x'; BLOCK];
            // Mostly quotes, digits, what follows strings and letters,
            // sometimes one odd byte anywhere.
            for b in block.iter_mut() {
                let r = next();
                *b = match r % 10 {
                    0 | 1 => b'"',
                    2 | 3 => b'0' + (r % 10) as u8,
                    4 | 5 => b",:}]{[ "[(r >> 8) as usize % 7],
                    _ => b'a' + (r % 26) as u8,
                };
            }
            for _ in 0..round % 3 {
                let r = next();
                block[(r % BLOCK as u64) as usize] =
                    alphabet[((r >> 8) % alphabet.len() as u64) as usize];
            }
            let after = nexts[next() as usize % nexts.len()];
            for in_string in [false, true] {
                assert_same(&block, after, in_string);
            }
        }
    }

    /// Windows of random valid JSON, each in the string state it starts in,
    /// and half of them with one byte changed.
    #[test]
    fn clean_block_matches_the_scalar_rule_on_json() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        fn value(next: &mut dyn FnMut() -> u64, depth: usize, out: &mut Vec<u8>) {
            // Now and then whitespace after a string, for the scalar path.
            let sep: &[u8] = [b"," as &[u8], b",", b", ", b" ,\n  "][next() as usize % 4];
            match next() % if depth > 5 { 2 } else { 4 } {
                0 => {
                    out.push(b'"');
                    out.extend((0..next() % 6).map(|k| b'a' + k as u8));
                    out.push(b'"');
                }
                1 => out.extend_from_slice(&(next() % 1000).to_string().into_bytes()),
                2 => {
                    out.push(b'{');
                    for k in 0..next() % 4 {
                        if k > 0 {
                            out.extend_from_slice(sep);
                        }
                        let key = [b"\"k\":" as &[u8], b"\"ab\": ", b"\"k\":", b"\"c\"\t: "];
                        out.extend_from_slice(key[next() as usize % 4]);
                        value(next, depth + 1, out);
                    }
                    out.push(b'}');
                }
                _ => {
                    out.push(b'[');
                    for k in 0..next() % 4 {
                        if k > 0 {
                            out.extend_from_slice(sep);
                        }
                        value(next, depth + 1, out);
                    }
                    out.push(b']');
                }
            }
        }
        let mut text = b"[".to_vec();
        while text.len() < 200_000 {
            value(&mut next, 1, &mut text);
            text.push(b',');
        }
        text.extend_from_slice(b"1]");
        // The string state before each byte.
        let mut states = Vec::with_capacity(text.len());
        let mut in_string = false;
        for &b in &text {
            states.push(in_string);
            in_string ^= b == b'"';
        }
        let (mut fast, mut total) = (0, 0);
        for round in 0..100_000 {
            let at = next() as usize % (text.len() - BLOCK);
            let mut block: [u8; BLOCK] = text[at..at + BLOCK].try_into().unwrap();
            if round % 2 == 1 {
                let r = next();
                block[r as usize % BLOCK] = b"\":,{}[] x"[(r >> 8) as usize % 9];
            }
            let after = text.get(at + BLOCK).copied();
            assert_same(&block, after, states[at]);
            total += 1;
            fast += clean_block(&block, after, states[at]).is_some() as usize;
        }
        // Enough blocks take the fast path for the comparison to mean something.
        assert!(fast * 6 > total, "{fast} of {total}");
    }

    /// Blocks as in a Kineto trace: the fast path must take all of them.
    #[test]
    fn clean_block_takes_kineto_records() {
        let record = br#"{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "pid": 0, "tid": 7, "ts": 1722.5, "dur": 3.1, "args": {"External id": 12, "grid": [1024, 1, 1], "stream": 7}},"#;
        let text: Vec<u8> = record.iter().copied().cycle().take(record.len() * 64).collect();
        let mut in_string = false;
        let mut i = 0;
        while i + BLOCK <= text.len() {
            let block: &[u8; BLOCK] = text[i..i + BLOCK].try_into().unwrap();
            (in_string, _) = clean_block(block, text.get(i + BLOCK).copied(), in_string)
                .unwrap_or_else(|| panic!("block at {i} goes scalar"));
            i += BLOCK;
        }
    }

    #[test]
    fn prefix_xor_marks_string_interiors() {
        // quotes at 1 and 4: bytes 1..=3 are inside
        assert_eq!(prefix_xor(0b10010), 0b01110);
    }

    /// The key of the string value holding the end of `bytes`, the way
    /// the engine finds it: its opening quote, then the key before that.
    fn key_before(bytes: &[u8], stray: &dyn Fn(usize) -> bool) -> Option<String> {
        let open = rfind_unescaped_quote(bytes, stray)?;
        key_ending_at(&bytes[..open], stray)
    }

    #[test]
    fn key_lookup() {
        let none = |_| false;
        assert_eq!(key_before(br#"{"kname": "abc"#, &none).as_deref(), Some("kname"));
        assert_eq!(key_before(br#"{"a\"b":"x"#, &none).as_deref(), Some("a\\\"b"));
        assert_eq!(key_before(br#"["x", "y"#, &none), None);
        assert_eq!(key_before(br#"abc"#, &none), None);
        // A quote known to be stray is text.
        assert_eq!(key_before(br#"{"n": "a"b"#, &none), None);
        assert_eq!(key_before(br#"{"n": "a"b"#, &|j| j == 8).as_deref(), Some("n"));
    }

    #[test]
    fn control_escape_table() {
        assert_eq!(&CONTROL_ESCAPES[0x1f], b"\\u001f");
        assert_eq!(&CONTROL_ESCAPES[0x0a], b"\\u000a");
    }
}
