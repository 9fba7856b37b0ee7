//! The promise, tested on random documents: a trace with any mix of the
//! defects real profilers write, cut anywhere or not, comes out as JSON a
//! strict parser loads, unless the report names a bare word or a number
//! no repair applies to, or where the JSON grammar breaks.

use proptest::prelude::*;
use serde_json::Value;
use trace_sanitize::{Error, Options, Report};

/// Stand-ins generated inside strings (private-use characters) and what each
/// becomes in the document: the defects found in real traces.
const IN_STRING: &[(char, &[u8])] = &[
    ('\u{e000}', b"\xff"),           // invalid UTF-8
    ('\u{e001}', b"\xc3"),           // a sequence cut short
    ('\u{e002}', b"\xed\xa0\x80"),   // a surrogate encoded as UTF-8
    ('\u{e003}', b"\x01"),           // a control byte
    ('\u{e004}', b"\n"),             // a raw newline
    ('\u{e005}', b"\\ud800"),        // a lone high surrogate
    ('\u{e006}', b"\\udc00x"),       // a lone low surrogate
    ('\u{e007}', b"\\x41"),          // an escape JSON lacks
    ('\u{e008}', b"\\"),             // a backslash before what follows
    ('\u{e009}', b"\""),             // a quote not escaped
    ('\u{e00a}', b"\t"),             // a raw tab
    ('\u{e00b}', b"\\ud83d\\u0041"), // a high surrogate before a non-surrogate
];

/// A whole value that stands in for a number JSON lacks, and what it becomes.
const BARE_VALUES: &[(&str, &[u8])] = &[
    ("\u{e100}", b"NaN"),
    ("\u{e101}", b"Infinity"),
    ("\u{e102}", b"-Infinity"),
    ("\u{e103}", b"N/A"),
    ("\u{e104}", b"nan"),
    ("\u{e105}", b"inf"),
    // Numbers JSON does not have (no repair), and ones it has, rarely seen.
    ("\u{e106}", b"1.2.3"),
    ("\u{e107}", b"0x1f"),
    ("\u{e108}", b"007"),
    ("\u{e109}", b"1."),
    ("\u{e10a}", b"-"),
    ("\u{e10b}", b"12abc"),
    ("\u{e10c}", b"1E+05"),
    ("\u{e10d}", b"-0.0e-0"),
];

fn text() -> impl Strategy<Value = String> {
    let plain = prop::sample::select(vec!['a', 'Z', ' ', '/', '{', ']', ',', ':', 'é', '€', '😀']);
    let defect = prop::sample::select(IN_STRING.iter().map(|(c, _)| *c).collect::<Vec<_>>());
    let escaped = prop::sample::select(vec!['"', '\\', '\n', '\u{1}', '\u{7f}']);
    prop::collection::vec(prop_oneof![6 => plain, 2 => defect, 1 => escaped], 0..12)
        .prop_map(|chars| chars.into_iter().collect())
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        text().prop_map(Value::String),
        prop::sample::select(BARE_VALUES.iter().map(|(s, _)| *s).collect::<Vec<_>>())
            .prop_map(|s| Value::String(s.into())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// A trace: an object with an event list, as profilers write it.
fn trace() -> impl Strategy<Value = Value> {
    (prop::collection::vec(value(), 0..8), value())
        .prop_map(|(events, other)| serde_json::json!({"traceEvents": events, "other": other}))
}

/// The document's bytes, its stand-ins replaced by the defects they stand
/// for; `bom` puts a byte order mark first.
fn defective(doc: &Value, bom: bool) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(doc).unwrap();
    for (stand_in, bare) in BARE_VALUES {
        let quoted = format!("\"{stand_in}\"");
        text = text.replace(&quoted, std::str::from_utf8(bare).unwrap());
    }
    let mut bytes = if bom { b"\xef\xbb\xbf".to_vec() } else { Vec::new() };
    let mut buf = [0u8; 4];
    for c in text.chars() {
        match IN_STRING.iter().find(|(stand_in, _)| *stand_in == c) {
            Some((_, defect)) => bytes.extend_from_slice(defect),
            None => bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    bytes
}

fn salvage(input: &[u8], buffer_size: usize) -> (Vec<u8>, Result<Report, Error>) {
    let mut out = Vec::new();
    let options = Options { buffer_size, ..Options::default() };
    let report = trace_sanitize::salvage(input, &mut out, &options);
    (out, report)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

    /// Uncut: the repaired copy loads strictly exactly when a check finds
    /// nothing a repair cannot fix, and the sanitize pass that wrote it
    /// says the same. What needed no repair comes out unchanged.
    #[test]
    fn repaired_traces_load_strictly(doc in trace(), bom: bool, size in 1usize..200) {
        let input = defective(&doc, bom);
        let mut out = Vec::new();
        let options = Options { buffer_size: size, ..Options::default() };
        let report = trace_sanitize::sanitize(&input[..], &mut out, &options).unwrap();
        let checked = trace_sanitize::check(&input[..], &options).unwrap();
        let parsed = serde_json::from_slice::<Value>(&out);
        let refused = checked.not_json > 0 || checked.malformed.is_some()
            || checked.complete == Some(false);
        prop_assert_eq!(parsed.is_ok(), !refused, "{:?} {:?}\nin:  {}\nout: {}", parsed,
            checked, String::from_utf8_lossy(&input), String::from_utf8_lossy(&out));
        let said = report.not_json > 0 || report.malformed.is_some()
            || report.complete == Some(false);
        prop_assert_eq!(said, refused, "{:?}", report);
        if !report.needs_repair() && !refused {
            prop_assert_eq!(&out, &input);
        }
    }

    /// Cut anywhere, salvage writes what a strict parser loads exactly when
    /// it names no bare word and no mismatched bracket in what it keeps (or
    /// it says that nothing complete came before the cut).
    #[test]
    fn salvaged_traces_load_strictly(doc in trace(), bom: bool, cut in any::<prop::sample::Index>(),
                                     size in 1usize..200) {
        let whole = defective(&doc, bom);
        let input = &whole[..cut.index(whole.len() + 1)];
        let (out, report) = salvage(input, size);
        let report = match report {
            Ok(report) => report,
            Err(Error::NothingComplete { .. }) => return Ok(()),
            // Part of a byte order mark is no such mark.
            Err(Error::NotADocument { .. }) if bom && input.len() < 3 => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let parsed = serde_json::from_slice::<Value>(&out);
        let refused = report.not_json > 0 || report.malformed.is_some();
        prop_assert_eq!(parsed.is_ok(), !refused, "{:?} {:?}\nin:  {}\nout: {}", parsed,
            report, String::from_utf8_lossy(input), String::from_utf8_lossy(&out));
        // Whole and valid, it is not cut. (A string that a quote or a
        // backslash ended early or late may leave the rest looking cut.)
        if input.len() == whole.len() && !report.needs_repair() {
            prop_assert!(report.cut.is_none(), "{:?}", report.cut);
        }
        prop_assert_eq!(report.bytes_written, out.len() as u64);
        // Chunking changes nothing: not the bytes, not where the grammar
        // broke.
        let (again, whole) = salvage(input, 1 << 16);
        prop_assert_eq!(again, out);
        let whole = whole.unwrap();
        prop_assert_eq!((whole.malformed, whole.unclosed_string),
                        (report.malformed, report.unclosed_string));
    }

    /// A file sanitized says, of the copy it wrote whole, what a check says
    /// of the input: it loads exactly when nothing is named.
    #[test]
    fn a_file_sanitized_says_whether_its_copy_loads(doc in trace(), bom: bool,
                                                   cut in any::<prop::sample::Index>()) {
        let whole = defective(&doc, bom);
        let input = &whole[..cut.index(whole.len() + 1).max(whole.len() / 2)];
        let dir = tempfile::tempdir().unwrap();
        let (from, to) = (dir.path().join("in.json"), dir.path().join("out.json"));
        std::fs::write(&from, input).unwrap();
        let file = trace_sanitize::sanitize_file(&from, &to, &Options::default(), &mut |_, _| {})
            .unwrap();
        let r = file.report;
        let out = std::fs::read(&to).unwrap();
        let refused = r.not_json > 0 || r.malformed.is_some() || r.complete == Some(false);
        let parsed = serde_json::from_slice::<Value>(&out);
        prop_assert_eq!(parsed.is_ok(), !refused, "{:?} {:?}\nin:  {}\nout: {}", parsed, r,
            String::from_utf8_lossy(input), String::from_utf8_lossy(&out));
    }
}
