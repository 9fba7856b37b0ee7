//! The JSON grammar, one token at a time: what a check and a salvage follow
//! so that they can say whether the repaired text parses.
//!
//! A token is told by its first byte: `{` `[` `}` `]` `:` `,`, `"` for a
//! string, and `-`, a digit or a letter for a number or a word (which word,
//! and whether it is JSON, the scan tells: [`crate::Report::not_json`]).
//! One table lookup per token keeps this cheap: the state says what may come
//! next, and where a value ends (in an object, in an array, or the
//! document). A number is then read to its end: [`Number`].

/// What may come next: the states of the table.
const VALUE_TOP: u8 = 0; // the document
const VALUE_IN_OBJECT: u8 = 1; // after `:`
const VALUE_IN_ARRAY: u8 = 2; // after `,` in an array
const VALUE_OR_CLOSE: u8 = 3; // after `[`
const KEY_OR_CLOSE: u8 = 4; // after `{`
const KEY: u8 = 5; // after `,` in an object
const COLON: u8 = 6; // after a key
const NEXT_IN_OBJECT: u8 = 7; // after a value in an object
const NEXT_IN_ARRAY: u8 = 8; // after a value in an array
const DONE: u8 = 9; // the document ended, or a token broke the grammar
const STATES: usize = 10;
/// Not states: a bracket closed (what comes next depends on the one open
/// then), and a token the grammar does not allow.
const CLOSED: u8 = 10;
const BROKEN: u8 = 11;

/// Token classes, by first byte.
const SCALAR: usize = 0;
const STRING: usize = 1;
const OPEN_OBJECT: usize = 2;
const OPEN_ARRAY: usize = 3;
const CLOSE_OBJECT: usize = 4;
const CLOSE_ARRAY: usize = 5;
const COLON_BYTE: usize = 6;
const COMMA: usize = 7;
const OTHER: usize = 8;
const CLASSES: usize = 9;

static CLASS: [u8; 256] = {
    let mut t = [OTHER as u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c == b'-' || c.is_ascii_alphanumeric() {
            t[b] = SCALAR as u8;
        }
        b += 1;
    }
    t[b'"' as usize] = STRING as u8;
    t[b'{' as usize] = OPEN_OBJECT as u8;
    t[b'[' as usize] = OPEN_ARRAY as u8;
    t[b'}' as usize] = CLOSE_OBJECT as u8;
    t[b']' as usize] = CLOSE_ARRAY as u8;
    t[b':' as usize] = COLON_BYTE as u8;
    t[b',' as usize] = COMMA as u8;
    t
};

static NEXT: [[u8; CLASSES]; STATES] = {
    let mut t = [[BROKEN; CLASSES]; STATES];
    t[DONE as usize] = [DONE; CLASSES];
    // Where a value goes, and where it leaves the grammar once read.
    let values = [
        (VALUE_TOP, DONE),
        (VALUE_IN_OBJECT, NEXT_IN_OBJECT),
        (VALUE_IN_ARRAY, NEXT_IN_ARRAY),
        (VALUE_OR_CLOSE, NEXT_IN_ARRAY),
    ];
    let mut i = 0;
    while i < values.len() {
        let (state, after) = values[i];
        let s = state as usize;
        t[s][SCALAR] = after;
        t[s][STRING] = after;
        t[s][OPEN_OBJECT] = KEY_OR_CLOSE;
        t[s][OPEN_ARRAY] = VALUE_OR_CLOSE;
        i += 1;
    }
    t[VALUE_OR_CLOSE as usize][CLOSE_ARRAY] = CLOSED;
    t[KEY_OR_CLOSE as usize][STRING] = COLON;
    t[KEY_OR_CLOSE as usize][CLOSE_OBJECT] = CLOSED;
    t[KEY as usize][STRING] = COLON;
    t[COLON as usize][COLON_BYTE] = VALUE_IN_OBJECT;
    t[NEXT_IN_OBJECT as usize][COMMA] = KEY;
    t[NEXT_IN_OBJECT as usize][CLOSE_OBJECT] = CLOSED;
    t[NEXT_IN_ARRAY as usize][COMMA] = VALUE_IN_ARRAY;
    t[NEXT_IN_ARRAY as usize][CLOSE_ARRAY] = CLOSED;
    t
};

/// Where the text stands in the grammar.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grammar(u8);

impl Grammar {
    pub(crate) fn new() -> Grammar {
        Grammar(VALUE_TOP)
    }

    /// The token starting with `b`; `open` is the bracket still open after
    /// it (what a closing bracket leaves). False the first time a token
    /// breaks the grammar: the state stays where it was, for
    /// [`Grammar::expected`], until [`Grammar::stop`].
    #[inline(always)]
    pub(crate) fn step(&mut self, b: u8, open: Option<u8>) -> bool {
        let next = NEXT[self.0 as usize][CLASS[b as usize] as usize];
        self.0 = match next {
            CLOSED => match open {
                Some(b'{') => NEXT_IN_OBJECT,
                Some(_) => NEXT_IN_ARRAY,
                None => DONE,
            },
            BROKEN => return false,
            state => state,
        };
        true
    }

    /// Check no further.
    pub(crate) fn stop(&mut self) {
        self.0 = DONE;
    }

    /// Whether the text is still followed: the document has not ended, and
    /// nothing broke the grammar.
    #[inline(always)]
    pub(crate) fn following(self) -> bool {
        self.0 != DONE
    }

    /// What the grammar allows now, in words.
    pub(crate) fn expected(self) -> &'static str {
        match self.0 {
            VALUE_TOP | VALUE_IN_OBJECT | VALUE_IN_ARRAY => "a value",
            VALUE_OR_CLOSE => "a value or `]`",
            KEY_OR_CLOSE => "a key or `}`",
            KEY => "a key",
            COLON => "`:`",
            NEXT_IN_OBJECT => "`,` or `}`",
            NEXT_IN_ARRAY => "`,` or `]`",
            _ => "nothing more",
        }
    }
}

/// A number, one byte at a time: RFC 8259's
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
///
/// `1.2.3` (a version), `0x1f` (an address), `007`, `1.`, `12abc`: a writer
/// that printed a value JSON has no notation for, or text meant as a string.
/// A `-` before a letter starts a word, not a number: `-inf` is the scan's
/// ([`crate::Report::not_json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Number {
    /// `-`
    Sign,
    /// `0`, `-0`
    Zero,
    /// `12`
    Integer,
    /// `1.`
    Point,
    /// `1.5`
    Fraction,
    /// `1e`
    Exponent,
    /// `1e-`
    ExponentSign,
    /// `1e5`
    ExponentDigits,
    /// `-inf`: a word, not a number.
    Word,
    /// No number goes on this way.
    Broken,
}

impl Number {
    /// A token that starts with `b` is a number: `-` or a digit.
    #[inline(always)]
    pub(crate) fn starts(b: u8) -> bool {
        b == b'-' || b.is_ascii_digit()
    }

    /// After the first byte, `-` or a digit.
    #[inline(always)]
    pub(crate) fn start(b: u8) -> Number {
        match b {
            b'-' => Number::Sign,
            b'0' => Number::Zero,
            _ => Number::Integer,
        }
    }

    /// After `b`, the next byte of the token.
    #[inline(always)]
    pub(crate) fn next(self, b: u8) -> Number {
        use Number::*;
        let digit = b.is_ascii_digit();
        match self {
            Sign if b == b'0' => Zero,
            Sign if digit => Integer,
            Sign if b.is_ascii_alphabetic() => Word,
            Integer if digit => Integer,
            Zero | Integer if b == b'.' => Point,
            Zero | Integer | Fraction if b == b'e' || b == b'E' => Exponent,
            Point | Fraction if digit => Fraction,
            Exponent if b == b'+' || b == b'-' => ExponentSign,
            Exponent | ExponentSign | ExponentDigits if digit => ExponentDigits,
            Word => Word,
            _ => Broken,
        }
    }

    /// The token may end here: a whole number (or a word, the scan's).
    pub(crate) fn complete(self) -> bool {
        use Number::*;
        matches!(self, Zero | Integer | Fraction | ExponentDigits | Word)
    }

    /// Whether `text`, a whole token, is a JSON number (or a word after a
    /// `-`).
    #[inline(always)]
    pub(crate) fn reads(text: &[u8]) -> bool {
        let (&first, rest) = text.split_first().expect("not empty");
        Number::starts(first)
            && rest.iter().fold(Number::start(first), |n, &b| n.next(b)).complete()
    }
}

/// The token starting with `b`, in words.
pub(crate) fn describe(b: u8) -> &'static str {
    match b {
        b'{' => "`{`",
        b'[' => "`[`",
        b'}' => "`}`",
        b']' => "`]`",
        b':' => "`:`",
        b',' => "`,`",
        b'"' => "a string",
        c if c == b'-' || c.is_ascii_alphanumeric() => "a number or word",
        c if c < b' ' => "a control byte",
        _ => "a byte no JSON value starts with",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens of `text` (one byte each, `s` for a string, `1` for a
    /// number); the index of the first one the grammar refuses.
    fn first_broken(text: &str) -> Option<usize> {
        let mut grammar = Grammar::new();
        let mut stack = Vec::new();
        for (i, b) in text.bytes().enumerate() {
            let b = if b == b's' { b'"' } else { b };
            match b {
                b'{' | b'[' => stack.push(b),
                b'}' | b']' => {
                    stack.pop();
                }
                _ => {}
            }
            if !grammar.step(b, stack.last().copied()) {
                return Some(i);
            }
        }
        None
    }

    #[test]
    fn json_passes_and_the_first_wrong_token_is_found() {
        for ok in ["{}", "[]", "{s:1}", "{s:[1,s,{}],s:{s:s}}", "[[],[1],{s:1}]", "{}1{"] {
            assert_eq!(first_broken(ok), None, "{ok}");
        }
        // Each byte a token: `11` is two numbers.
        let broken = [
            ("{s,", 2),
            ("{s:1]", 4),
            ("[1}", 2),
            ("{1:1}", 1),
            ("[11]", 2),
            ("{s:}", 3),
            ("[,1]", 1),
            ("{s:1,}", 5),
            ("[1,]", 3),
            ("{s::", 3),
            ("{ss", 2),
            ("[\u{1}]", 1),
        ];
        for (text, at) in broken {
            assert_eq!(first_broken(text), Some(at), "{text}");
        }
    }

    #[test]
    fn it_says_what_goes_where_it_broke() {
        let mut grammar = Grammar::new();
        for b in *b"{\"" {
            assert!(grammar.step(b, Some(b'{')));
        }
        assert!(!grammar.step(b',', Some(b'{')));
        assert_eq!((describe(b','), grammar.expected()), ("`,`", "`:`"));
        assert!(!grammar.step(b'\x01', Some(b'{')));
        assert_eq!(describe(b'\x01'), "a control byte");
        grammar.stop();
        assert!(grammar.step(b',', None), "no checking once stopped");
    }

    #[test]
    fn numbers_are_read_to_the_digit() {
        for ok in ["0", "-0", "7", "-12", "0.5", "-0.25", "1694128201545.123", "1e5", "1E+05"] {
            assert!(Number::reads(ok.as_bytes()), "{ok}");
        }
        for ok in ["2.5e-3", "-1.0E10", "0e0", "-inf", "-Infinity", "-foo"] {
            assert!(Number::reads(ok.as_bytes()), "{ok}");
        }
        let broken = ["-", "1.2.3", "0x1f", "007", "-01", "1.", "1.e5", "1e", "1e+", "12abc"];
        for bad in broken.into_iter().chain(["1.5x", "1e5.0", "1e5e5", "--1", "1-2", "1+2", "5é"])
        {
            assert!(!Number::reads(bad.as_bytes()), "{bad}");
        }
    }

    /// Deep nesting: each bracket closes the one it should.
    #[test]
    fn deep_nesting_is_followed() {
        for n in [1, 64, 200] {
            let alternating = format!("{}1{}", "[{s:".repeat(n), "}]".repeat(n));
            assert_eq!(first_broken(&alternating), None, "{n}");
            assert_eq!(first_broken(&format!("{}{}", "[".repeat(n), "]".repeat(n))), None);
            let wrong = format!("{}}}", &alternating[..alternating.len() - 1]);
            assert_eq!(first_broken(&wrong), Some(wrong.len() - 1), "{n}");
        }
    }
}
