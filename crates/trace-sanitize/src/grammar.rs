//! The JSON grammar, one token at a time: what a check and a salvage follow
//! so that they can say whether the repaired text parses.
//!
//! A token is told by its first byte: `{` `[` `}` `]` `:` `,`, `"` for a
//! string, and `-`, a digit or a letter for a number or a word (which word,
//! and whether it is JSON, the scan tells: [`crate::Report::not_json`]).
//! One table lookup per token keeps this cheap: the state says what may come
//! next, and where a value ends (in an object, in an array, or the
//! document). A number, or a word, is then read to its end: [`Number`];
//! a number's magnitude too, where it could pass a double's: [`Magnitude`].

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
/// ([`crate::Report::not_json`]). A word that starts with a letter is read
/// too, to check that it is letters only (`true.` is no `true`; which
/// letters, the scan says).
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
    /// `-inf`: a word, not a number (the scan's, whatever follows).
    Word,
    /// `true`: a word, letters only (which, the scan says).
    Letters,
    /// No number (or word) goes on this way.
    Broken,
}

impl Number {
    /// A token that starts with `b` is read to its end: a number (`-` or a
    /// digit) or a word (a letter).
    #[inline(always)]
    pub(crate) fn starts(b: u8) -> bool {
        CLASS[b as usize] == SCALAR as u8
    }

    /// After the first byte, `-`, a digit or a letter.
    #[inline(always)]
    pub(crate) fn start(b: u8) -> Number {
        match b {
            b'-' => Number::Sign,
            b'0' => Number::Zero,
            b'1'..=b'9' => Number::Integer,
            _ => Number::Letters,
        }
    }

    /// A token that starts with `b` is a word (`true`; `true.` when
    /// broken), not a number.
    pub(crate) fn word_starts(b: u8) -> bool {
        b.is_ascii_alphabetic()
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
            Letters if b.is_ascii_alphabetic() => Letters,
            _ => Broken,
        }
    }

    /// The token may end here: a whole number (or a word, the scan's).
    pub(crate) fn complete(self) -> bool {
        use Number::*;
        matches!(self, Zero | Integer | Fraction | ExponentDigits | Word | Letters)
    }

    /// Where `text`, a whole token, leaves the grammar: [`Number::complete`]
    /// when it is a JSON number (or a word after a `-`); `Broken` when it
    /// does not start as one.
    #[inline(always)]
    pub(crate) fn read(text: &[u8]) -> Number {
        let (&first, rest) = text.split_first().expect("not empty");
        match Number::starts(first) {
            true => rest.iter().fold(Number::start(first), |n, &b| n.next(b)),
            false => Number::Broken,
        }
    }
}

/// Whether a JSON number is within a double's range, read in pieces: what
/// orjson reads ("number is infinity when parsed as double" otherwise).
///
/// A number rounds to infinity when it is at least halfway between the
/// largest double and 2^1024 (a tie rounds to the even significand, up):
/// with its value written `0.d1d2d3... x 10^e` (`d1` not zero), when `e` is
/// above 309, or is 309 and the digits are [`HALFWAY`]'s or more. So the
/// digits need not be kept: the exponent is counted, and the digits are
/// compared with [`HALFWAY`]'s as they come.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Magnitude {
    part: Part,
    /// Digits before the point from the first that is not zero, or zeros
    /// after the point before the first digit that is not.
    integer_digits: u64,
    leading_zeros: u64,
    /// Whether a digit other than zero came yet.
    significant: bool,
    /// How the digits from the first significant one compare with
    /// [`HALFWAY`]'s, `compared` of them so far.
    order: std::cmp::Ordering,
    compared: usize,
    exponent: u64,
    negative_exponent: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Integer,
    Fraction,
    Exponent,
}

/// The digits of 2^1024 - 2^970, halfway between the largest double and
/// 2^1024: a number from there up rounds to infinity.
const HALFWAY: &[u8; 309] = b"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";

/// Past this an exponent, or a count of digits, means the same.
const SATURATED: u64 = 1 << 40;

impl Magnitude {
    pub(crate) const fn new() -> Magnitude {
        Magnitude {
            part: Part::Integer,
            integer_digits: 0,
            leading_zeros: 0,
            significant: false,
            order: std::cmp::Ordering::Equal,
            compared: 0,
            exponent: 0,
            negative_exponent: false,
        }
    }

    /// The next bytes of the number (a whole JSON number, in pieces).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'.' => self.part = Part::Fraction,
                b'e' | b'E' => self.part = Part::Exponent,
                b'-' if self.part == Part::Exponent => self.negative_exponent = true,
                b'0'..=b'9' => self.digit(b),
                _ => {}
            }
        }
    }

    fn digit(&mut self, b: u8) {
        if self.part == Part::Exponent {
            self.exponent = (self.exponent * 10 + u64::from(b - b'0')).min(SATURATED);
            return;
        }
        if !self.significant && b == b'0' {
            if self.part == Part::Fraction {
                self.leading_zeros = (self.leading_zeros + 1).min(SATURATED);
            }
            return;
        }
        self.significant = true;
        if self.part == Part::Integer {
            self.integer_digits = (self.integer_digits + 1).min(SATURATED);
        }
        if self.order.is_eq() {
            match HALFWAY.get(self.compared) {
                Some(&h) => self.order = b.cmp(&h),
                // Past the halfway number's last digit, equal so far.
                None if b != b'0' => self.order = std::cmp::Ordering::Greater,
                None => {}
            }
            self.compared += 1;
        }
    }

    /// Whether the number read is a double (zero when too small for one).
    pub(crate) fn finite(&self) -> bool {
        if !self.significant {
            return true;
        }
        let at = match self.integer_digits {
            0 => -(self.leading_zeros as i64),
            n => n as i64,
        };
        let exponent = match self.negative_exponent {
            true => -(self.exponent as i64),
            false => self.exponent as i64,
        };
        match (at + exponent).cmp(&(HALFWAY.len() as i64)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            // Equal digits, all of them, make a tie: it rounds up.
            std::cmp::Ordering::Equal => {
                self.order.is_lt() || (self.order.is_eq() && self.compared < HALFWAY.len())
            }
        }
    }

    /// Whether `text`, a whole JSON number, is a double.
    pub(crate) fn finite_text(text: &[u8]) -> bool {
        let mut magnitude = Magnitude::new();
        magnitude.feed(text);
        magnitude.finite()
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
            assert!(Number::read(ok.as_bytes()).complete(), "{ok}");
        }
        for ok in ["2.5e-3", "-1.0E10", "0e0", "-inf", "-Infinity", "-foo", "true", "None", "-x.y"]
        {
            assert!(Number::read(ok.as_bytes()).complete(), "{ok}");
        }
        let broken = ["-", "1.2.3", "0x1f", "007", "-01", "1.", "1.e5", "1e", "1e+", "12abc"];
        let words = ["true.", "null5", "false-", "nullé", "inf0"];
        for bad in broken
            .into_iter()
            .chain(["1.5x", "1e5.0", "1e5e5", "--1", "1-2", "1+2", "5é"])
            .chain(words)
        {
            assert!(!Number::read(bad.as_bytes()).complete(), "{bad}");
        }
    }

    /// Whether a number rounds to infinity, as Rust's correctly rounded
    /// parse (and orjson) say, near the boundary and far from it, however
    /// the number is written and split.
    #[test]
    fn a_number_beyond_a_double_is_told_from_its_digits() {
        let halfway = std::str::from_utf8(HALFWAY).unwrap();
        let mut cases: Vec<String> = [
            "0",
            "-0.0e500",
            "1e308",
            "1.8e308",
            "-1e400",
            "1e-400",
            "0.00001e312",
            "1E+309",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "0.1797693134862315807e309",
            "17976931348623158e292",
            "1e99999999999999999999999",
            "100e-99999999999999999999",
            "1e-0",
        ]
        .map(String::from)
        .into();
        // The halfway number and its neighbours, written every way.
        let below = format!("{}1", &halfway[..308]);
        let above = format!("{}3", &halfway[..308]);
        for digits in [halfway, &below, &above, &halfway[..200], &format!("{halfway}0000")] {
            cases.push(digits.to_string());
            cases.push(format!("-{digits}"));
            cases.push(format!("{}.{}e308", &digits[..1], &digits[1..]));
            cases.push(format!("0.{digits}e309"));
            cases.push(format!("0.000{digits}e312"));
            cases.push(format!("{digits}.5"));
            cases.push(format!("{digits}e-1"));
        }
        cases.push(format!("{halfway}0000001"));
        cases.push(format!("{}.{}00001e308", &halfway[..1], &halfway[1..]));
        // Random ones: digits, a point, an exponent near the edge.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..3000 {
            let len = 1 + next(20) as usize;
            let mut digits: String = (0..len).map(|_| (b'0' + next(10) as u8) as char).collect();
            if next(2) == 0 {
                digits = format!("{}{}", &halfway[..len.min(30)], &digits[len.min(30)..]);
            }
            let point = next(len as u64) as usize;
            let int = match digits[..=point].trim_start_matches('0') {
                "" => "0",
                int => int,
            };
            let text = match (next(3), &digits[point + 1..]) {
                (0, fraction) if !fraction.is_empty() => format!("{int}.{fraction}"),
                _ => int.to_string(),
            };
            let exponent = 290 + next(40) as i64 - if next(4) == 0 { 600 } else { 0 };
            cases.push(format!("{text}e{exponent}"));
        }
        for case in &cases {
            assert!(Number::read(case.as_bytes()).complete(), "{case}");
            let want = case.parse::<f64>().unwrap().is_finite();
            assert_eq!(Magnitude::finite_text(case.as_bytes()), want, "{case}");
            for split in [1, 7, 64] {
                let mut magnitude = Magnitude::new();
                case.as_bytes().chunks(split).for_each(|piece| magnitude.feed(piece));
                assert_eq!(magnitude.finite(), want, "{case}, in pieces of {split}");
            }
        }
        let infinite = cases.iter().filter(|c| !c.parse::<f64>().unwrap().is_finite()).count();
        assert!(infinite > 100 && cases.len() - infinite > 100, "{infinite} of {}", cases.len());
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
