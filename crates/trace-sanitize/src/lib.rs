//! Streaming repair of GPU profiler traces that strict JSON parsers reject.
//!
//! TraceLens loads traces with orjson, which refuses a whole file for one bad
//! byte. Real traces have eight such defects:
//!
//! 1. invalid UTF-8 (rocprofv3 copies non-string `const char *` HIP arguments
//!    verbatim): each invalid sequence becomes U+FFFD, exactly as Python's
//!    `bytes.decode("utf-8", "replace")` does (one replacement per maximal
//!    invalid subpart);
//! 2. raw control bytes 0x00-0x1F inside string literals (Kineto does not
//!    escape Python names and metadata): escaped as `\u00XX`; bytes outside
//!    strings are left alone;
//! 3. lone UTF-16 surrogate escapes (`\ud800` without its low half, or a lone
//!    low half): replaced by `\ufffd`;
//! 4. backslashes that start no JSON escape (a Windows path written raw:
//!    `C:\Users`; `\u` without four hex digits): doubled, so the string
//!    keeps the backslash as text;
//! 5. floats that are not finite, written as bare words (`inf`, `-inf`,
//!    `nan` by C formatting, as in Kineto's memcpy bandwidth of a 0 µs copy;
//!    `NaN`, `Infinity` by Python's `json`): each becomes `null`;
//! 6. quotes written unescaped into a string's text (Kineto's Python and op
//!    names, JSON inside the log lines of dyno traces, pytorch/kineto#1336):
//!    escaped as `\"`. A quote ends its string when the first byte after it
//!    (past whitespace) is `,` `:` `}` or `]`, and is stray otherwise. In a
//!    string that held a stray quote, a later quote ends it only when that
//!    byte may follow a string where this one stands: `:` after a key, `,`
//!    or `}` after a value in an object, `,` or `]` in an array (JSON text
//!    in a log line has quotes before `:` and `,`). Valid JSON always passes
//!    these tests, so it is never changed; a first stray quote right before
//!    such a byte (`a", "b` inside one name) cannot be told from the end of
//!    the string and is left as it is;
//! 7. a UTF-8 byte order mark before the document (a trace re-saved by a
//!    Windows editor or PowerShell): dropped. Python's `json` accepts one,
//!    orjson does not;
//! 8. `N/A` written unquoted where a value goes (Kineto of early 2021,
//!    PyTorch 1.8; pytorch/kineto#131 worked around it in the TensorBoard
//!    plugin): quoted, as the string it meant, when what follows it may
//!    follow a string.
//!
//! Any other bare word where a value goes (`True`, `None`, `undefined`: a
//! writer that printed Python or JavaScript values) has no repair anyone
//! could trust: it is left as it is and reported ([`Report::not_json`],
//! [`Report::first_not_json`]), since strict parsers reject the repaired
//! copy as well. So is a word with more of a token after its letters
//! (`true.`, `inf5`): not JSON's word, nor a float to repair. Numbers'
//! exponents (`1e5`) are no such words.
//!
//! A UTF-16 or UTF-32 text (told from its byte order mark, or from the zero
//! bytes around its first character) is refused as [`Error::NotUtf8`]:
//! repaired byte by byte it would only be mangled. So is a Perfetto trace
//! (protobuf, rocprofv3's `pftrace`; [`is_perfetto`]) as [`Error::Perfetto`]:
//! it is not JSON, and TraceLens reads it as it is; and a SQLite database
//! (rocprofv3's rocpd output; [`is_sqlite`]) as [`Error::Sqlite`]. And so is compressed
//! data where JSON text goes (a `.json.gz` compressed twice, a `.zst`) as
//! [`Error::Compressed`] ([`compressed_format`]): decompress it first.
//!
//! Everything streams in constant memory (about 1 MiB of buffer), and the
//! result does not depend on where chunk boundaries fall. A valid input is
//! copied byte for byte and its [`Report`] says it needed no repair.
//!
//! - [`sanitize`] / [`check`] work on any `Read` (and `Write`). Both also
//!   say whether the (repaired) JSON text is one complete document
//!   ([`Report::complete`]): repairs cannot make a trace cut short, or one
//!   with data after its end, parseable.
//! - Every pass follows the JSON grammar token by token (a sanitize pass
//!   over what it writes; [`check_file`], [`sanitize_file`] and
//!   [`salvage_file`] on a thread of their own, beside the scan): where a
//!   stray quote right before `,` `:` `}` or `]` ended a string early, or a
//!   backslash at its end escaped its closing quote, the rest reads as
//!   JSON in the wrong places. Every number is read to its end (`1.2.3`,
//!   `0x1f`, `007` are not JSON). The first token the grammar does not
//!   allow there, or number that is not JSON, is [`Report::malformed`]; a
//!   last string that never ends, [`Report::unclosed_string`]. So a check
//!   says exactly whether strict parsers load the repaired copy. orjson's
//!   two limits are checked too ([`Break`]): a number beyond a double's
//!   range (`1e400`: Python's `json` reads `inf`, orjson refuses it), and
//!   brackets nested deeper than 1,024 levels.
//! - [`sanitize_file`] / [`check_file`] work on `.json` and `.json.gz` files:
//!   the input is never modified, the output is gzip when its name ends in
//!   `.gz` ([`output_compression`]) and is written to a temporary file
//!   beside it, then renamed.
//! - [`salvage_file`] does what [`sanitize_file`] does and also closes a
//!   trace that was cut short (a profiler killed while writing, a gzip stream
//!   cut off): the complete values are kept and the open brackets closed.
//!   Data after the end of the document (a second one, a log line, zeros)
//!   is dropped ([`CutKind`]).
//!
//! # Example
//!
//! ```
//! use trace_sanitize::{Options, sanitize};
//!
//! let input = b"{\"kname\":\"k\xff\x01\"}";
//! let mut output = Vec::new();
//! let report = sanitize(&input[..], &mut output, &Options::default())?;
//! assert_eq!(output, "{\"kname\":\"k\u{fffd}\\u0001\"}".as_bytes());
//! assert_eq!(report.counts.invalid_utf8, 1);
//! assert_eq!(report.repairs[0].key.as_deref(), Some("kname"));
//! # Ok::<(), trace_sanitize::Error>(())
//! ```
#![deny(missing_docs)]

#[cfg(feature = "repair")]
mod close;
#[cfg(feature = "repair")]
mod copy;
#[cfg(feature = "repair")]
mod engine;
#[cfg(feature = "repair")]
mod error;
#[cfg(feature = "repair")]
mod file;
#[cfg(feature = "repair")]
mod grammar;
#[cfg(feature = "repair")]
mod gunzip;
#[cfg(feature = "repair")]
mod lossy;
mod output;
#[cfg(feature = "repair")]
mod report;
#[cfg(feature = "repair")]
mod stream;

/// The atomic writer, on its own without the `repair` feature (its only
/// dependency `tempfile`): the collectors write their records with it.
pub use crate::output::write_atomic;
#[cfg(feature = "repair")]
pub use crate::{
    close::{Cut, CutKind},
    error::{DisplayByte, Error, Result, decompress_command},
    file::{
        Compression, FileReport, FileReports, Progress, REPORT_VERSION, check_file,
        default_output_path, output_compression, salvage_file, sanitize_file,
    },
    gunzip::{Gunzip, NotGzip, damaged_gzip},
    report::{Break, Counts, Defect, Malformed, NotJson, Repair, Report},
    stream::{
        MAX_RECORDED, Options, check, compressed_format, is_perfetto, is_sqlite, salvage, sanitize,
    },
};

/// The bit trick under this crate's 64-byte blocks, shared with
/// trace-summary's scanner (not part of the API).
#[cfg(feature = "repair")]
#[doc(hidden)]
pub use crate::engine::prefix_xor;

/// The README's example, run as a doctest so that it cannot go stale.
#[cfg(all(doctest, feature = "repair"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
