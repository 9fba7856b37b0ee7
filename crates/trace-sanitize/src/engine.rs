//! The byte-level repair engine.
//!
//! The engine sees the input as a sequence of buffers. Between two buffers the
//! only state it keeps is whether the scan is inside a JSON string literal:
//! every multi-byte construct (a UTF-8 sequence, an escape, a surrogate pair)
//! is decided by looking ahead inside the buffer, and when the buffer ends in
//! the middle of one, the engine stops before it and the caller hands those
//! few bytes back at the front of the next buffer (`Outcome::consumed`). That
//! is what makes the output independent of where chunk boundaries fall.
//!
//! Clean 64-byte blocks (no backslash, no byte >= 0x80, no control byte inside
//! a string, no letter outside one, not ending in `-` outside one) are skipped
//! with a bitmask test; everything else goes through the scalar state machine.

use wide::u8x64;

use crate::report::{Defect, Recorder};

/// Longest run of undecided bytes the engine may hand back: a high surrogate
/// escape plus the first five bytes of the low one (`\ud800\udc0`).
pub(crate) const MAX_CARRY: usize = 12;

/// How much already-consumed input is kept to name the JSON key of a repair
/// whose string started in an earlier buffer.
const CONTEXT: usize = 1024;

const BLOCK: usize = 64;

/// One replacement inside the current buffer: `buf[start..end]` becomes `with`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edit {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) with: &'static [u8],
}

const FFFD_UTF8: &[u8] = "\u{fffd}".as_bytes();
const NULL: &[u8] = b"null";

/// Bare words a JSON writer may leave for a float that is not finite (C's
/// `printf` and fmt write `inf`/`nan`, Python's `json` `Infinity`/`NaN`), each
/// also after a `-`. None is JSON; each becomes `null`.
const NON_FINITE: &[&[u8]] = &[b"inf", b"nan", b"Infinity", b"NaN", b"INF", b"NAN", b"Inf"];

/// The longest bare word looked at: `Infinity`.
const LONGEST_WORD: usize = 8;
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

#[derive(Debug)]
pub(crate) struct Engine {
    in_string: bool,
    stop_at_first: bool,
    /// The last bytes consumed, for naming the key of a repair.
    context: Vec<u8>,
}

enum Step {
    Advance(usize),
    Repair { len: usize, defect: Defect, with: &'static [u8] },
    NeedMore,
}

impl Engine {
    pub(crate) fn new(stop_at_first: bool) -> Engine {
        Engine { in_string: false, stop_at_first, context: Vec::with_capacity(CONTEXT) }
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
            let block_end = if i + BLOCK <= len {
                let block: &[u8; BLOCK] = buf[i..i + BLOCK].try_into().expect("64-byte block");
                if let Some(in_string) = clean_block(block, self.in_string) {
                    self.in_string = in_string;
                    i += BLOCK;
                    continue;
                }
                i + BLOCK
            } else {
                len
            };
            while i < block_end {
                match self.step(buf, i, eof) {
                    Step::Advance(n) => i += n,
                    Step::NeedMore => break 'outer,
                    Step::Repair { len: n, defect, with } => {
                        if rec.wants_detail() {
                            let key = self.key_of(buf, i, defect == Defect::NonFinite);
                            // An invalid escape is shown with the byte after it.
                            let shown = match defect {
                                Defect::InvalidEscape => &buf[i..(i + 2).min(len)],
                                _ => &buf[i..i + n],
                            };
                            rec.record(defect, base + i as u64, shown, key);
                        } else {
                            rec.count(defect);
                        }
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
        self.remember(&buf[..i]);
        Outcome { consumed: i, stopped }
    }

    fn step(&mut self, buf: &[u8], i: usize, eof: bool) -> Step {
        let b = buf[i];
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
            b'"' => {
                self.in_string = false;
                Step::Advance(1)
            }
            b'\\' => escape(buf, i, eof),
            0..=0x1f => Step::Repair {
                len: 1,
                defect: Defect::ControlChar,
                with: &CONTROL_ESCAPES[b as usize],
            },
            _ => Step::Advance(1),
        }
    }

    /// A bare word outside strings at `buf[i + sign..]` (`sign` is 1 after a
    /// `-` at `buf[i]`): `true`, `false` and `null` pass, a non-finite float
    /// becomes `null`, anything else (not JSON either) is left as it is.
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
        // Only a whole word: not the tail of a longer run of letters.
        let before = if i > 0 { buf.get(i - 1) } else { self.context.last() };
        let whole = run <= LONGEST_WORD && !before.is_some_and(|b| b.is_ascii_alphabetic());
        let word = &buf[start..start + run];
        if whole && NON_FINITE.contains(&word) {
            return Step::Repair { len: sign + run, defect: Defect::NonFinite, with: NULL };
        }
        Step::Advance(sign + run)
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
    /// bare value starts there), when it can be found within the last
    /// kilobyte or so. Best effort: `None` when unsure.
    fn key_of(&self, buf: &[u8], pos: usize, bare: bool) -> Option<String> {
        let find = |bytes: &[u8]| {
            if bare { key_ending_at(bytes) } else { key_before(bytes) }
        };
        let start = pos.saturating_sub(CONTEXT);
        if start > 0 || self.context.is_empty() {
            return find(&buf[start..pos]);
        }
        let mut joined = Vec::with_capacity(self.context.len() + pos);
        joined.extend_from_slice(&self.context);
        joined.extend_from_slice(&buf[..pos]);
        find(&joined)
    }
}

/// If `block` needs no repair, the string state after it.
///
/// Portable SIMD (`wide`: SSE2 on any x86-64, NEON on aarch64): per-byte
/// tests gathered into 64-bit masks, bit j for byte j.
#[inline(always)]
fn clean_block(block: &[u8; BLOCK], in_string: bool) -> Option<bool> {
    let v = u8x64::from(*block);
    // Backslash or non-ASCII: always go scalar.
    if (v.simd_eq(u8x64::splat(b'\\')).to_bitmask() | v.to_bitmask()) != 0 {
        return None;
    }
    let quote = v.simd_eq(u8x64::splat(b'"')).to_bitmask();
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
    Some(inside >> 63 == 1)
}

/// Bit j set when an odd number of the bits 0..=j of `x` are: with `x` the
/// quotes of a block without backslashes, the bytes inside strings (each
/// opening quote included, each closing one not).
#[inline(always)]
pub(crate) fn prefix_xor(mut x: u64) -> u64 {
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

/// Given the bytes up to a repair inside a string value, the key of that
/// value: `"key" : "....<repair>`.
fn key_before(bytes: &[u8]) -> Option<String> {
    let open = rfind_unescaped_quote(bytes)?;
    key_ending_at(&bytes[..open])
}

/// Given the bytes up to a value, the key it is the value of: `"key" : `.
fn key_ending_at(bytes: &[u8]) -> Option<String> {
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
    let key_open = rfind_unescaped_quote(&bytes[..key_end])?;
    let key = &bytes[key_open + 1..key_end];
    if key.len() > 128 {
        return None;
    }
    Some(String::from_utf8_lossy(key).into_owned())
}

fn rfind_unescaped_quote(bytes: &[u8]) -> Option<usize> {
    let mut end = bytes.len();
    loop {
        let q = bytes[..end].iter().rposition(|&b| b == b'"')?;
        let backslashes = bytes[..q].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(q);
        }
        end = q;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `clean_block` must answer, byte by byte.
    fn clean_block_scalar(block: &[u8; BLOCK], mut in_string: bool) -> Option<bool> {
        for (j, &b) in block.iter().enumerate() {
            match b {
                b'\\' | 0x80.. => return None,
                b'"' => in_string = !in_string,
                0..0x20 if in_string => return None,
                b'a'..=b'z' | b'A'..=b'Z' if !in_string => return None,
                b'-' if !in_string && j == BLOCK - 1 => return None,
                _ => {}
            }
        }
        Some(in_string)
    }

    #[test]
    fn clean_block_matches_the_scalar_rule() {
        let alphabet = [
            b'"', b'a', b'\n', 0x1f, b' ', b'\\', 0x80, 0x20, 0x7f, 0xff, 0, b'-', b'Z', b'@', b'[',
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // Every byte value at every position, inside and outside a string:
        // digits outside the string at 10..=40, letters inside it.
        let mut base = [b'1'; BLOCK];
        base[11..40].fill(b'k');
        base[10] = b'"';
        base[40] = b'"';
        for value in 0..=255u8 {
            for pos in 0..BLOCK {
                let mut block = base;
                block[pos] = value;
                for in_string in [false, true] {
                    assert_eq!(
                        clean_block(&block, in_string),
                        clean_block_scalar(&block, in_string),
                        "{value:#x} at {pos}, {in_string}"
                    );
                }
            }
        }
        for round in 0..20_000 {
            let mut block = [b'x'; BLOCK];
            // Mostly quotes, letters and digits, sometimes one odd byte anywhere.
            for b in block.iter_mut() {
                let r = next();
                *b = match r % 6 {
                    0 => b'"',
                    1 | 2 => b'0' + (r % 10) as u8,
                    _ => b'a' + (r % 26) as u8,
                };
            }
            let odd = round % 3;
            for _ in 0..odd {
                let r = next();
                block[(r % BLOCK as u64) as usize] =
                    alphabet[((r >> 8) % alphabet.len() as u64) as usize];
            }
            for in_string in [false, true] {
                assert_eq!(
                    clean_block(&block, in_string),
                    clean_block_scalar(&block, in_string),
                    "{block:?} {in_string}"
                );
            }
        }
    }

    #[test]
    fn prefix_xor_marks_string_interiors() {
        // quotes at 1 and 4: bytes 1..=3 are inside
        assert_eq!(prefix_xor(0b10010), 0b01110);
    }

    #[test]
    fn key_lookup() {
        assert_eq!(key_before(br#"{"kname": "abc"#).as_deref(), Some("kname"));
        assert_eq!(key_before(br#"{"a\"b":"x"#).as_deref(), Some("a\\\"b"));
        assert_eq!(key_before(br#"["x", "y"#), None);
        assert_eq!(key_before(br#"abc"#), None);
    }

    #[test]
    fn control_escape_table() {
        assert_eq!(&CONTROL_ESCAPES[0x1f], b"\\u001f");
        assert_eq!(&CONTROL_ESCAPES[0x0a], b"\\u000a");
    }
}
