//! What a run found and did.

use std::{borrow::Cow, fmt::Write as _};

use serde::{Deserialize, Serialize};

/// The defects that make strict JSON parsers reject a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Defect {
    /// A byte sequence that is not UTF-8; replaced by U+FFFD per maximal
    /// invalid subpart, as Python's `bytes.decode("utf-8", "replace")` does.
    InvalidUtf8,
    /// A raw byte 0x00-0x1F inside a string literal; escaped as `\u00XX`.
    ControlChar,
    /// A `\uD800`-`\uDFFF` escape without its other half; replaced by `\ufffd`.
    LoneSurrogate,
    /// A backslash inside a string that starts no JSON escape (`\x`, `\U`,
    /// `\u` without four hex digits: a Windows path written raw); doubled,
    /// so the string keeps it as text.
    InvalidEscape,
    /// A bare `inf`, `nan`, `Infinity` or `NaN` (also after a `-`) where a
    /// number goes: a float that is not finite, written by a C `printf` or by
    /// Python's `json`; none is JSON, each becomes `null`.
    NonFinite,
    /// A `"` written unescaped into a string's text (Kineto's names and log
    /// lines): a quote that would end the string but is followed by what
    /// cannot follow a string (see the crate docs); escaped as `\"`.
    StrayQuote,
    /// A UTF-8 byte order mark (`EF BB BF`) before the document: a Windows
    /// editor or PowerShell re-saved the trace. orjson refuses it ("UTF-8
    /// byte order mark (BOM) is not supported"); it is dropped.
    ByteOrderMark,
    /// `N/A` written unquoted where a value goes: early-2021 Kineto's
    /// (PyTorch 1.8) value for what it did not have (pytorch/kineto#131
    /// worked around it in the TensorBoard plugin); quoted as `"N/A"`.
    UnquotedNotAvailable,
}

impl Defect {
    /// A short human name.
    pub fn describe(self) -> &'static str {
        match self {
            Defect::InvalidUtf8 => "invalid UTF-8",
            Defect::ControlChar => "raw control byte in a string",
            Defect::LoneSurrogate => "lone UTF-16 surrogate escape",
            Defect::InvalidEscape => "backslash starting no JSON escape",
            Defect::NonFinite => "non-finite number",
            Defect::StrayQuote => "unescaped quote in a string",
            Defect::ByteOrderMark => "UTF-8 byte order mark",
            Defect::UnquotedNotAvailable => "unquoted N/A",
        }
    }
}

/// One repair, as found in the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Repair {
    /// Byte offset in the input (the decompressed stream for `.json.gz`).
    pub offset: u64,
    /// What was wrong.
    pub defect: Defect,
    /// The offending bytes, printable: `\xff\xfe`, `\x01`, `\ud800`.
    pub original: String,
    /// The key whose string value held the defect, when it could be found
    /// cheaply (for example `kname` of a `hipModuleGetFunction` record).
    pub key: Option<String>,
}

/// A bare word where a value goes that is not JSON and that no repair
/// applies to (`undefined`, `None`): strict parsers reject the trace
/// whatever else is repaired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotJson {
    /// Byte offset in the input (the decompressed stream for `.json.gz`).
    pub offset: u64,
    /// The word (at most 32 bytes of it).
    pub text: String,
    /// The key it is the value of, when it could be found cheaply.
    pub key: Option<String>,
    /// Where it is in the repaired output: whether a salvaged copy keeps it.
    #[serde(skip)]
    pub(crate) output_offset: u64,
}

impl NotJson {
    /// What goes where the word stands, in words: what the grammar expected
    /// when it broke right there (`malformed`, the report's: a key, where a
    /// stray quote ended a string early), else `a value`.
    pub fn expected<'a>(&self, malformed: Option<&'a Malformed>) -> &'a str {
        match malformed {
            Some(m) if m.offset == self.offset => &m.expected,
            _ => "a value",
        }
    }

    /// What such a word usually is, for a message to suggest.
    pub const LIKELY: &'static str = "a value printed the way Python writes it, such as None or \
                                      True, where JSON was meant? or the rest of a string that a \
                                      quote inside it ended early?";
}

/// Where the JSON grammar does not allow a token (a string where `:` goes,
/// a `]` where a `{` is open): what a string ended early by a quote inside
/// it leaves, the rest of it read as JSON. Or a number that is not JSON
/// (`1.2.3`), or one of orjson's limits passed. Strict parsers reject the
/// trace whatever is repaired ([`Break`] says which).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Malformed {
    /// Byte offset of the token in the input (the decompressed stream for
    /// `.json.gz`).
    pub offset: u64,
    /// What is there: `` `,` ``, `` `]` ``..., `a string`, `a number or
    /// word`, `` `1.2.3` (not a JSON number) ``, `` `1e400` (too large for a
    /// double) `` or `` `[` 1,025 levels deep ``.
    pub found: Cow<'static, str>,
    /// What goes there instead: `` `:` ``, `` `,` or `}` ``, `a value`...
    pub expected: Cow<'static, str>,
    /// What kind of break it is.
    pub kind: Break,
    /// Where it is in the repaired output: whether a salvaged copy keeps it.
    #[serde(skip)]
    pub(crate) output_offset: u64,
}

impl Malformed {
    /// What usually leaves a token out of place (or a string that never
    /// ends: [`Report::unclosed_string`]), for a message to suggest.
    pub const LIKELY: &'static str = "a quote inside a string that ended it early, or a backslash at its end that escaped its \
         closing quote?";

    /// What usually leaves this one, for a message to suggest.
    pub fn likely(&self) -> &'static str {
        self.kind.likely()
    }
}

/// What breaks the JSON at a [`Malformed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Break {
    /// A token where the grammar allows none.
    Token,
    /// A number that is not JSON: `1.2.3`, `0x1f`, `007`, `1.`.
    Number,
    /// A number beyond a double's range (`1e400`, an integer of 309
    /// digits): orjson refuses it ("number is infinity when parsed as
    /// double"), where Python's `json` reads `inf`.
    Infinite,
    /// A `{` or `[` nested deeper than [`Break::MAX_DEPTH`] levels: orjson
    /// refuses it ("depth limit exceeded").
    TooDeep,
}

impl Break {
    /// How many levels of `{` and `[` orjson reads, the document's own
    /// included.
    pub const MAX_DEPTH: usize = 1024;

    /// What usually leaves one, for a message to suggest.
    pub fn likely(self) -> &'static str {
        match self {
            Break::Token => Malformed::LIKELY,
            Break::Number => {
                "a version, an address or a number in a notation JSON does not have, written \
                 where a quoted string was meant?"
            }
            Break::Infinite => {
                "orjson, which TraceLens loads traces with, reads no number beyond a double's \
                 range (±1.7976931348623157e308): an overflowed or uninitialized value, or one printed from \
                 a wider type?"
            }
            Break::TooDeep => {
                "orjson, which TraceLens loads traces with, reads at most 1,024 levels of `{` and \
                 `[`: a recursive structure written out whole?"
            }
        }
    }

    /// How to mend the trace (no repair applies), for a message to
    /// suggest.
    pub fn mend(self) -> &'static str {
        match self {
            Break::Token => "mend the string before it in a copy",
            Break::Number => "quote it, or write it as a JSON number, in a copy",
            Break::Infinite => "quote it, or write null or a number a double holds, in a copy",
            Break::TooDeep => "nest it less deeply in a copy",
        }
    }
}

/// Counts per defect class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Counts {
    /// Invalid UTF-8 sequences replaced.
    pub invalid_utf8: u64,
    /// Control bytes escaped.
    pub control_chars: u64,
    /// Lone surrogate escapes replaced.
    pub lone_surrogates: u64,
    /// Backslashes starting no valid escape, doubled.
    pub invalid_escapes: u64,
    /// Non-finite numbers (`inf`, `NaN`) made `null`.
    pub non_finite: u64,
    /// Stray quotes inside strings, escaped.
    pub stray_quotes: u64,
    /// Byte order marks before the document, dropped (0 or 1).
    pub byte_order_marks: u64,
    /// Bare `N/A` values, quoted.
    pub unquoted_not_available: u64,
}

/// `4 invalid UTF-8, 1 control byte, 0 lone surrogates`, and the rarer
/// classes (`, 3 invalid escapes`, `, 1 non-finite number`, `, 2 stray
/// quotes`, `, 1 byte order mark`, `, 2 unquoted N/A`) only when found.
impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |count: u64, one: &str, many: &str| {
            format!("{count} {}", if count == 1 { one } else { many })
        };
        write!(
            f,
            "{} invalid UTF-8, {}, {}",
            self.invalid_utf8,
            n(self.control_chars, "control byte", "control bytes"),
            n(self.lone_surrogates, "lone surrogate", "lone surrogates"),
        )?;
        if self.invalid_escapes > 0 {
            write!(f, ", {}", n(self.invalid_escapes, "invalid escape", "invalid escapes"))?;
        }
        if self.non_finite > 0 {
            write!(f, ", {}", n(self.non_finite, "non-finite number", "non-finite numbers"))?;
        }
        if self.stray_quotes > 0 {
            write!(f, ", {}", n(self.stray_quotes, "stray quote", "stray quotes"))?;
        }
        if self.byte_order_marks > 0 {
            write!(f, ", {}", n(self.byte_order_marks, "byte order mark", "byte order marks"))?;
        }
        if self.unquoted_not_available > 0 {
            write!(f, ", {} unquoted N/A", self.unquoted_not_available)?;
        }
        Ok(())
    }
}

impl Counts {
    /// All repairs together.
    pub fn total(&self) -> u64 {
        self.invalid_utf8
            + self.control_chars
            + self.lone_surrogates
            + self.invalid_escapes
            + self.non_finite
            + self.stray_quotes
            + self.byte_order_marks
            + self.unquoted_not_available
    }

    fn bump(&mut self, defect: Defect) {
        *self.of(defect) += 1;
    }

    fn of(&mut self, defect: Defect) -> &mut u64 {
        match defect {
            Defect::InvalidUtf8 => &mut self.invalid_utf8,
            Defect::ControlChar => &mut self.control_chars,
            Defect::LoneSurrogate => &mut self.lone_surrogates,
            Defect::InvalidEscape => &mut self.invalid_escapes,
            Defect::NonFinite => &mut self.non_finite,
            Defect::StrayQuote => &mut self.stray_quotes,
            Defect::ByteOrderMark => &mut self.byte_order_marks,
            Defect::UnquotedNotAvailable => &mut self.unquoted_not_available,
        }
    }
}

/// What a sanitize or check pass found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Report {
    /// Input bytes scanned (decompressed bytes for `.json.gz`).
    pub bytes_read: u64,
    /// Bytes written (uncompressed); 0 for a check.
    pub bytes_written: u64,
    /// How many of each defect were found (and repaired, when writing).
    pub counts: Counts,
    /// The first repairs in input order, at most `Options::max_recorded`.
    pub repairs: Vec<Repair>,
    /// True when the scan stopped at the first defect (`Options::stop_at_first`),
    /// so `bytes_read` and the counts cover only part of the input.
    pub stopped_early: bool,
    /// How [`crate::salvage_file`] closed an input that was cut short, or
    /// dropped the data after the end of its document (for a check or a
    /// sanitize pass: how it would; a sanitized copy keeps it all); `None`
    /// when the input was complete, could not be closed, or was not looked
    /// at (a pass stopped at its first defect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<crate::Cut>,
    /// Whether the input's JSON text is complete: false when it ends inside
    /// an unfinished value (a profiler killed while writing, a copy cut
    /// short) or holds no whole object or array (an empty file). Strict
    /// parsers reject such an input whatever is repaired. Known after any
    /// whole pass; `None` after a pass stopped at its first defect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// Set when the input does not start with `{` or `[` (past whitespace
    /// and a byte order mark): the byte it starts with instead. Text before
    /// a trace (a log line written into its file) or no trace at all;
    /// strict parsers reject it, and salvage cannot tell where a document
    /// would start. Known after any whole pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starts_with: Option<u8>,
    /// How many zero bytes the input ends with (decompressed): what a file
    /// holds where its node went down before its last blocks reached the
    /// disk. 0 after a pass stopped at its first defect. At least
    /// [`Report::CRASH_ZEROS`] of them inside the string the cut left open
    /// are not counted as control bytes, nor listed as repairs: they are no
    /// text of the trace (a copy escapes them all the same; a salvage drops
    /// them with the cut).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zeros_at_end: u64,
    /// How many bare words that are not JSON the input holds where values
    /// go; no repair applies to them, so strict parsers reject the trace
    /// (and its repaired copy). Known after any whole pass.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_json: u64,
    /// The first of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_not_json: Option<NotJson>,
    /// The first token where the JSON grammar does not allow one. Known
    /// after any whole pass; `None` for a salvage (or a check) when it is in
    /// what the cut drops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malformed: Option<Malformed>,
    /// The input ends inside a string, although its last byte (past
    /// whitespace) is `}` or `]`: most likely not cut short, but a string
    /// that never ends (a backslash at its end escaped its closing quote, or
    /// a quote inside one ended it early and the next one opened another),
    /// so that the rest of the file reads as one string. Known after any
    /// whole pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unclosed_string: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    /// What [`Report::unclosed_string`] means, for a message to say (with
    /// [`Malformed::LIKELY`], what usually leaves one).
    pub const UNCLOSED_STRING: &'static str =
        "its last string never ends, so the rest of the file reads as one string";

    /// From this many zero bytes at its end on, a file is taken to end in
    /// the zeros a crash leaves ([`Report::zeros_at_end`]): a single zero
    /// may be the trace's, a disk block of them is not.
    pub const CRASH_ZEROS: u64 = 16;

    /// Whether the input needs repair before a strict parser accepts it.
    pub fn needs_repair(&self) -> bool {
        self.counts.total() > 0
    }
}

/// Collects counts and the first `max` repairs.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) counts: Counts,
    pub(crate) repairs: Vec<Repair>,
    max: usize,
    pub(crate) not_json: u64,
    pub(crate) first_not_json: Option<NotJson>,
}

impl Recorder {
    pub(crate) fn new(max: usize) -> Recorder {
        Recorder {
            counts: Counts::default(),
            repairs: Vec::new(),
            // Whatever was asked: a trace can need tens of millions.
            max: max.min(crate::MAX_RECORDED),
            not_json: 0,
            first_not_json: None,
        }
    }

    /// A bare word that is not JSON, at input offset `offset` (and
    /// `output_offset` in the repaired output).
    pub(crate) fn not_json(
        &mut self,
        offset: u64,
        output_offset: u64,
        word: &[u8],
        key: Option<String>,
    ) {
        self.not_json += 1;
        if self.first_not_json.is_none() {
            let text = String::from_utf8_lossy(word).into_owned();
            self.first_not_json = Some(NotJson { offset, text, key, output_offset });
        }
    }

    pub(crate) fn wants_detail(&self) -> bool {
        self.repairs.len() < self.max
    }

    pub(crate) fn count(&mut self, defect: Defect) {
        self.counts.bump(defect);
    }

    /// Takes back the `n` repairs of `defect` made from input offset `from`
    /// on (the zeros a crash left at the end of a file, in a string).
    pub(crate) fn forget_from(&mut self, from: u64, defect: Defect, n: u64) {
        let count = self.counts.of(defect);
        *count = count.saturating_sub(n);
        self.repairs.retain(|r| r.offset < from);
    }

    pub(crate) fn record(
        &mut self,
        defect: Defect,
        offset: u64,
        bytes: &[u8],
        key: Option<String>,
    ) {
        self.counts.bump(defect);
        let original = match defect {
            Defect::LoneSurrogate | Defect::NonFinite | Defect::UnquotedNotAvailable => {
                String::from_utf8_lossy(bytes).into_owned()
            }
            // The backslash or quote and the byte after it, non-printable
            // bytes as \xNN.
            Defect::InvalidEscape | Defect::StrayQuote => {
                bytes.iter().fold(String::new(), |mut s, &b| {
                    if (0x20..0x7f).contains(&b) {
                        s.push(b as char);
                    } else {
                        let _ = write!(s, "\\x{b:02x}");
                    }
                    s
                })
            }
            Defect::InvalidUtf8 | Defect::ControlChar | Defect::ByteOrderMark => {
                bytes.iter().fold(String::new(), |mut s, b| {
                    let _ = write!(s, "\\x{b:02x}");
                    s
                })
            }
        };
        self.repairs.push(Repair { offset, defect, original, key });
    }
}
