//! Each defect class, byte for byte.

use crate::{run, run_with};

/// Sanitize `input` and compare the output and the counts
/// `[invalid_utf8, control_chars, lone_surrogates, invalid_escapes, non_finite,
/// stray_quotes]`, with the input read whole and a byte at a time.
#[track_caller]
fn check(input: &[u8], expected: &[u8], counts: [u64; 6]) {
    let (out, report) = run(input);
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(expected),
        "input {:?}",
        String::from_utf8_lossy(input)
    );
    assert_eq!(out, expected);
    let c = report.counts;
    assert_eq!(
        [
            c.invalid_utf8,
            c.control_chars,
            c.lone_surrogates,
            c.invalid_escapes,
            c.non_finite,
            c.stray_quotes
        ],
        counts
    );
    assert_eq!(report.needs_repair(), counts != [0; 6]);
    let (split, split_report) =
        run_with(input, &trace_sanitize::Options { buffer_size: 1, ..Default::default() });
    assert_eq!(split, out, "read a byte at a time");
    assert_eq!(split_report.counts, report.counts, "read a byte at a time");
    assert_eq!(report.bytes_read, input.len() as u64);
    assert_eq!(report.bytes_written, out.len() as u64);
}

#[test]
fn valid_input_passes_through() {
    check(b"", b"", [0, 0, 0, 0, 0, 0]);
    check(
        b"{\"a\": [1, 2.5, true, null]}\n",
        b"{\"a\": [1, 2.5, true, null]}\n",
        [0, 0, 0, 0, 0, 0],
    );
    let unicode =
        "{\"name\":\"caf\u{e9} \u{20ac} \u{1f600} \\\\ \\\" \\n \\u00e9 \\ud83d\\ude00\"}";
    check(unicode.as_bytes(), unicode.as_bytes(), [0, 0, 0, 0, 0, 0]);
    // newlines and tabs between tokens are not inside strings
    check(b"{\n\t\"a\":\r\n1}", b"{\n\t\"a\":\r\n1}", [0, 0, 0, 0, 0, 0]);
}

#[test]
fn invalid_utf8_is_replaced_per_maximal_subpart() {
    check(b"\"a\xffb\"", "\"a\u{fffd}b\"".as_bytes(), [1, 0, 0, 0, 0, 0]);
    // a truncated 3-byte sequence is ONE replacement
    check(b"\"\xe2\x82\"", "\"\u{fffd}\"".as_bytes(), [1, 0, 0, 0, 0, 0]);
    // an impossible second byte: the lead and the byte each get one
    check(b"\"\xe0\x80\"", "\"\u{fffd}\u{fffd}\"".as_bytes(), [2, 0, 0, 0, 0, 0]);
    // surrogates encoded in UTF-8 (CESU) are invalid
    check(b"\"\xed\xa0\x80\"", "\"\u{fffd}\u{fffd}\u{fffd}\"".as_bytes(), [3, 0, 0, 0, 0, 0]);
    // overlong and out of range
    check(
        b"\xc0\xaf\xf5\xf4\x90",
        "\u{fffd}\u{fffd}\u{fffd}\u{fffd}\u{fffd}".as_bytes(),
        [5, 0, 0, 0, 0, 0],
    );
    // at the very end of the input
    check(b"\"x\xf0\x9f\x98", "\"x\u{fffd}".as_bytes(), [1, 0, 0, 0, 0, 0]);
    // the ASCII byte that breaks a sequence is kept and still ends the string
    check(b"\"\xc3\",\"b\"", "\"\u{fffd}\",\"b\"".as_bytes(), [1, 0, 0, 0, 0, 0]);
    // rocprofv3's stray pointer bytes (the benchmark's junk)
    check(
        b"{\"fname\":\"void at::\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\"}",
        "{\"fname\":\"void at::\u{fffd}\u{fffd}\u{fffd}(\u{fffd}\u{fffd}\u{fffd}(\u{fffd}\u{fffd}(\u{fffd}\"}".as_bytes(),
        [9, 0, 0, 0, 0, 0],
    );
}

#[test]
fn control_bytes_inside_strings_are_escaped() {
    check(b"{\"n\":\"a\x01b\tc\"}", b"{\"n\":\"a\\u0001b\\u0009c\"}", [0, 2, 0, 0, 0, 0]);
    check(b"\"\x00\x1f\n\"", b"\"\\u0000\\u001f\\u000a\"", [0, 3, 0, 0, 0, 0]);
    // outside strings they are left alone
    check(b"[\x01\"x\",\x1f]", b"[\x01\"x\",\x1f]", [0; 6]);
    // an escaped quote does not end the string
    check(b"\"a\\\"\x02\"", b"\"a\\\"\\u0002\"", [0, 1, 0, 0, 0, 0]);
    // an escaped backslash does not escape the quote after it
    check(b"[\"a\\\\\"]\x02", b"[\"a\\\\\"]\x02", [0, 0, 0, 0, 0, 0]);
}

#[test]
fn lone_surrogates_are_replaced() {
    check(b"\"\\ud800\"", b"\"\\ufffd\"", [0, 0, 1, 0, 0, 0]);
    check(b"\"\\uDC00x\"", b"\"\\ufffdx\"", [0, 0, 1, 0, 0, 0]);
    // a high surrogate followed by another high one: both are lone
    check(b"\"\\ud800\\ud800\"", b"\"\\ufffd\\ufffd\"", [0, 0, 2, 0, 0, 0]);
    // high then a non-surrogate escape
    check(b"\"\\ud800\\u0041\"", b"\"\\ufffd\\u0041\"", [0, 0, 1, 0, 0, 0]);
    // a valid pair, in either case
    check(
        b"\"\\uD83D\\uDE00\\ud83d\\ude00\"",
        b"\"\\uD83D\\uDE00\\ud83d\\ude00\"",
        [0, 0, 0, 0, 0, 0],
    );
    // a low half first, then a valid pair
    check(b"\"\\udc00\\ud83d\\ude00\"", b"\"\\ufffd\\ud83d\\ude00\"", [0, 0, 1, 0, 0, 0]);
    // at the end of the input
    check(b"\"\\ud800", b"\"\\ufffd", [0, 0, 1, 0, 0, 0]);
    // outside a string nothing is an escape
    check(b"\\ud800", b"\\ud800", [0, 0, 0, 0, 0, 0]);
    // not an escape: an escaped backslash followed by text
    check(b"\"\\\\ud800\"", b"\"\\\\ud800\"", [0, 0, 0, 0, 0, 0]);
}

#[test]
fn backslashes_that_start_no_escape_are_doubled() {
    // A Windows path written raw: `\U` and `\p` are no JSON escapes, `\n` is.
    check(
        br#"{"file": "C:\Users\prof\new"}"#,
        br#"{"file": "C:\\Users\\prof\new"}"#,
        [0, 0, 0, 2, 0, 0],
    );
    check(b"\"\\x\"", b"\"\\\\x\"", [0, 0, 0, 1, 0, 0]);
    // `\u` without four hex digits, before the quote or at the end.
    check(b"\"\\u12\"", b"\"\\\\u12\"", [0, 0, 0, 1, 0, 0]);
    check(b"\"\\u12", b"\"\\\\u12", [0, 0, 0, 1, 0, 0]);
    // Every valid escape is left alone.
    check(br#""\" \\ \/ \b \f \n \r \t \u0041""#, br#""\" \\ \/ \b \f \n \r \t \u0041""#, [0; 6]);
    // Outside a string a backslash is no escape (and no repair either).
    check(b"[1]\\x", b"[1]\\x", [0; 6]);
    // A backslash ending the input: cut short, not mistyped.
    check(b"\"\\", b"\"\\", [0; 6]);
    // A control byte right after a backslash: both are repaired.
    check(b"\"\\\x01\"", b"\"\\\\\\u0001\"", [0, 1, 0, 1, 0, 0]);
    // Invalid UTF-8 right after a backslash: both are repaired.
    check(b"\"\\\xff\"", "\"\\\\\u{fffd}\"".as_bytes(), [1, 0, 0, 1, 0, 0]);
}

#[test]
fn non_finite_numbers_become_null() {
    // Kineto's `fmt` and C's printf write `inf` and `nan` for such floats;
    // Python's json writes `Infinity` and `NaN`.
    check(
        br#"{"bytes": 200, "memory bandwidth (GB/s)": inf, "x": [-inf, nan, NaN, -Infinity]}"#,
        br#"{"bytes": 200, "memory bandwidth (GB/s)": null, "x": [null, null, null, null]}"#,
        [0, 0, 0, 0, 5, 0],
    );
    // JSON's own words, and words that are no number, are left alone.
    check(b"[true, false, null, -1, 1e5, 2E-3]", b"[true, false, null, -1, 1e5, 2E-3]", [0; 6]);
    check(
        b"[infinite, xnan, nanx, -infx, Infinityy]",
        b"[infinite, xnan, nanx, -infx, Infinityy]",
        [0; 6],
    );
    // Inside strings they are text.
    check(br#"{"name": "inf nan -inf"}"#, br#"{"name": "inf nan -inf"}"#, [0; 6]);
    // At the very end of the input, and after a long run of letters.
    check(b"[-inf", b"[null", [0, 0, 0, 0, 1, 0]);
    check(b"[abcdefghijklinf, inf]", b"[abcdefghijklinf, null]", [0, 0, 0, 0, 1, 0]);
    let (_, report) = run(br#"{"args": {"bw": -inf}}"#);
    let r = &report.repairs[0];
    assert_eq!((r.offset, r.original.as_str(), r.key.as_deref()), (16, "-inf", Some("bw")));
}

#[test]
fn an_unquoted_n_a_becomes_the_string_it_meant() {
    // Early-2021 Kineto wrote `N/A` bare for a value it did not have.
    let input = b"{\"args\": {\"device\": N/A, \"x\": [N/A ,N/A\n]}, \"y\": N/A}";
    let (out, report) = run(input);
    assert_eq!(
        String::from_utf8_lossy(&out),
        "{\"args\": {\"device\": \"N/A\", \"x\": [\"N/A\" ,\"N/A\"\n]}, \"y\": \"N/A\"}"
    );
    assert_eq!(report.counts.unquoted_not_available, 4);
    assert_eq!(
        report.counts.to_string(),
        "0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 4 unquoted N/A"
    );
    let r = &report.repairs[0];
    assert_eq!((r.offset, r.original.as_str(), r.key.as_deref()), (20, "N/A", Some("device")));
    assert_eq!(report.not_json, 0);
    // Quoted where what follows could not follow a string, it would be
    // misread: left as it is, and said to be no JSON.
    for (input, word) in
        [(&b"[N/A\"x\"]"[..], "N/A"), (b"[N/A 1]", "N/A"), (b"[N/Ax]", "N/Ax"), (b"[-N/A]", "-N/A")]
    {
        let (out, report) = run(input);
        assert_eq!(out, input);
        assert_eq!((report.needs_repair(), report.not_json), (false, 1), "{input:?}");
        assert_eq!(report.first_not_json.unwrap().text, word);
    }
    // As text, it is text.
    let (out, _) = run(br#"{"a": "N/A"}"#);
    assert_eq!(out, br#"{"a": "N/A"}"#);
}

#[test]
fn bare_words_that_are_not_json_are_reported_and_left() {
    // Python's repr where JSON was meant, JavaScript's undefined: no repair
    // can know what they stand for.
    let input = b"{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"ok\": True, \"none\": None}}], \"x\": undefined}";
    let (out, report) = run(input);
    assert_eq!(out, input);
    assert!(!report.needs_repair());
    assert_eq!(report.not_json, 3);
    let first = report.first_not_json.as_ref().unwrap();
    assert_eq!((first.offset, first.text.as_str(), first.key.as_deref()), (44, "True", Some("ok")));
    // JSON's own words, numbers' exponents and words inside strings are not
    // such words; a long word is shown in part.
    for clean in [&b"[true, false, null, 1e5, 2.5E-3, -0.5e+2, \"None\"]"[..], b"[]"] {
        let (_, report) = run(clean);
        assert_eq!((report.not_json, report.first_not_json), (0, None));
    }
    let long = [&b"[-"[..], &[b'a'; 100], b"]"].concat();
    let (out, report) = run(&long);
    assert_eq!(out, long);
    assert_eq!(report.not_json, 1);
    assert_eq!(report.first_not_json.unwrap().text, format!("-{}", "a".repeat(31)));
    // A check says so too, and the text before a document is not looked
    // into: the document does not start there.
    let checked = trace_sanitize::check(&input[..], &Default::default()).unwrap();
    assert_eq!(checked.not_json, 3);
    let (_, before) = run(b"WARNING: a, b {\"a\": 1}");
    assert_eq!((before.starts_with, before.not_json), (Some(b'W'), 0));
}

/// A word followed by more of a token (`true.`, `inf5`) is no word of
/// JSON's, nor a float to repair: the whole token is named, and left.
#[test]
fn a_word_with_more_after_it_is_not_json() {
    let input = b"[true., inf5, null-1, -inf., false_x, NaN0, true]";
    let (out, report) = run(input);
    assert_eq!(out, input);
    assert_eq!((report.not_json, report.counts.non_finite), (6, 0));
    let first = report.first_not_json.as_ref().unwrap();
    assert_eq!((first.offset, first.text.as_str()), (1, "true."));
    // The grammar breaks there too, so a check and orjson agree.
    assert_eq!(report.malformed.map(|m| m.offset), Some(1));
    // `true` and a byte that is not ASCII: no word of the scan's, but the
    // grammar's check of words sees it.
    let (_, report) = run("[1, trueé]".as_bytes());
    let m = report.malformed.unwrap();
    assert_eq!((report.not_json, m.offset, m.found.as_ref()), (0, 4, "`trueé` (not a JSON value)"));
}

#[test]
fn stray_quotes_inside_strings_are_escaped() {
    // A quote in a name, as Kineto writes Python names and op names raw.
    check(
        br#"{"name": "say "hi" now", "ph": "X"}"#,
        br#"{"name": "say \"hi\" now", "ph": "X"}"#,
        [0, 0, 0, 0, 0, 2],
    );
    // In a key; and once a string held a stray quote, a later quote ends it
    // only where a string may end there: not before `}` in an array, `]`
    // in an object.
    check(br#"{"na"me": 1}"#, br#"{"na\"me": 1}"#, [0, 0, 0, 0, 0, 1]);
    check(br#"["a"b"}", "c"]"#, br#"["a\"b\"}", "c"]"#, [0, 0, 0, 0, 0, 2]);
    check(br#"{"a": "x"y"]"}"#, br#"{"a": "x\"y\"]"}"#, [0, 0, 0, 0, 0, 2]);
    // kineto#1336: JSON in a log line of a dyno trace. In an array no string
    // is followed by `:`; in an object a value is not.
    check(
        br#"{"INFO": ["config {"event_id": 64, "n": "x"}"], "a": 1}"#,
        br#"{"INFO": ["config {\"event_id\": 64, \"n\": \"x\"}"], "a": 1}"#,
        [0, 0, 0, 0, 0, 6],
    );
    // After a `,` the bracket is found by looking back past whole values.
    check(
        br#"{"INFO": ["start {1 [2]", {"k": "v"}, "config {"event_id": 64}"], "a": 1}"#,
        br#"{"INFO": ["start {1 [2]", {"k": "v"}, "config {\"event_id\": 64}"], "a": 1}"#,
        [0, 0, 0, 0, 0, 2],
    );
    check(
        br#"{"name": "f({"k": 1})", "b": 2}"#,
        br#"{"name": "f({\"k\": 1})", "b": 2}"#,
        [0, 0, 0, 0, 0, 2],
    );
    // The bracket is looked for in the kilobyte before the string's opening
    // quote only: past it the place is not known, and `,` `:` `}` or `]`
    // ends the string.
    let long = "x".repeat(1100);
    let input = format!(r#"{{"INFO": ["{long}", "config {{"event_id": 64}}"]}}"#);
    let expected = format!(r#"{{"INFO": ["{long}", "config {{\"event_id": 64}}"]}}"#);
    check(input.as_bytes(), expected.as_bytes(), [0, 0, 0, 0, 0, 1]);
    // In a value, a later quote followed by `:` is text, by `,` the end.
    check(br#"{"a": "b"c": 1", "d": 2}"#, br#"{"a": "b\"c\": 1", "d": 2}"#, [0, 0, 0, 0, 0, 2]);
    check(br#"{"a": "b"c", "d": 2}"#, br#"{"a": "b\"c", "d": 2}"#, [0, 0, 0, 0, 0, 1]);
    // A first stray quote right before `,` `:` `}` or `]` cannot be told
    // from the end of the string: it is left as it is.
    check(br#"{"a": "b", "c", "d": 1}"#, br#"{"a": "b", "c", "d": 1}"#, [0; 6]);
    check(br#"{"a": "b": 1"}"#, br#"{"a": "b": 1"}"#, [0; 6]);
    // After a quote that is not the end, the string goes on: its control
    // bytes are escaped, as in any string.
    check(b"[\"a\"\tb\"]", b"[\"a\\\"\\u0009b\"]", [0, 1, 0, 0, 0, 1]);
    // Valid JSON is left alone, whatever the whitespace before what follows.
    let spaced = b"{\"a\" :\t\"b\" ,\n \"c\"\r\n: [\"d\"\n ], \"e\": {\"f\": \"g\"} }";
    check(spaced, spaced, [0; 6]);
    check(b"\"top\"", b"\"top\"", [0; 6]);
    check(b"\"top\"\n", b"\"top\"\n", [0; 6]);
    // Past 128 bytes of whitespace the quote is taken to end its string.
    let mut far = b"[\"a\"".to_vec();
    far.extend_from_slice(&[b' '; 128]);
    far.extend_from_slice(b"b\"]");
    check(&far, &far, [0; 6]);
    far.remove(4);
    let mut escaped = b"[\"a\\\"".to_vec();
    escaped.extend_from_slice(&[b' '; 127]);
    escaped.extend_from_slice(b"b\"]");
    check(&far, &escaped, [0, 0, 0, 0, 0, 1]);
    let (_, report) = run(br#"{"args": {"Input type": "say "hi""}}"#);
    let r = &report.repairs[0];
    assert_eq!((r.offset, r.original.as_str(), r.key.as_deref()), (29, "\"h", Some("Input type")));
    assert_eq!(report.counts.stray_quotes, 2);
}

#[test]
fn a_byte_order_mark_before_the_document_is_dropped() {
    // Re-saved by a Windows editor: orjson refuses the whole file.
    let bom = |rest: &[u8]| [&b"\xef\xbb\xbf"[..], rest].concat();
    let small = trace_sanitize::Options { buffer_size: 1, ..Default::default() };
    for (input, expected) in [
        (bom(b"{\"a\": 1}"), &b"{\"a\": 1}"[..]),
        (bom(b""), b""),
        // A later defect keeps its offset in the input.
        (bom(b"{\"k\": \"x\xff\"}"), "{\"k\": \"x\u{fffd}\"}".as_bytes()),
    ] {
        let (out, report) = run(&input);
        assert_eq!(out, expected, "{input:?}");
        assert_eq!(run_with(&input, &small), (out, report.clone()), "read a byte at a time");
        assert_eq!(report.counts.byte_order_marks, 1);
        let r = &report.repairs[0];
        assert_eq!((r.offset, r.original.as_str(), r.key.as_deref()), (0, "\\xef\\xbb\\xbf", None));
        assert_eq!(
            (report.bytes_read, report.bytes_written),
            (input.len() as u64, expected.len() as u64)
        );
    }
    let (_, report) = run(&bom(b"{\"k\": \"x\xff\"}"));
    assert_eq!((report.repairs[1].offset, report.repairs[1].key.as_deref()), (11, Some("k")));
    assert_eq!(
        report.counts.to_string(),
        "1 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 byte order mark"
    );
    // U+FEFF anywhere else is text (or not JSON at all): left alone, as is a
    // mark cut short at the end of the input (invalid UTF-8 then).
    check("{\"a\": \"\u{feff}\"}".as_bytes(), "{\"a\": \"\u{feff}\"}".as_bytes(), [0; 6]);
    check(b" \xef\xbb\xbf{}", b" \xef\xbb\xbf{}", [0; 6]);
    check(b"\xef\xbb", "\u{fffd}".as_bytes(), [1, 0, 0, 0, 0, 0]);
    // Asked only whether a repair is needed, the mark is enough.
    let first = trace_sanitize::Options { stop_at_first: true, ..Default::default() };
    let (_, report) = run_with(&bom(b"{}"), &first);
    assert!(report.needs_repair() && report.stopped_early);
}

#[test]
fn repairs_name_their_offset_and_key() {
    let input = b"{\"records\":[{\"kind\":\"hipModuleGetFunction\",\"args\":{\"kname\":\"\x90\x12k\"}}],\n\"py\": \"\\udc01\"}";
    let (_, report) = run(input);
    let found: Vec<_> = report
        .repairs
        .iter()
        .map(|r| (r.offset, format!("{:?}", r.defect), r.original.as_str(), r.key.as_deref()))
        .collect();
    insta::assert_debug_snapshot!(found, @r#"
    [
        (
            60,
            "InvalidUtf8",
            "\\x90",
            Some(
                "kname",
            ),
        ),
        (
            61,
            "ControlChar",
            "\\x12",
            Some(
                "kname",
            ),
        ),
        (
            76,
            "LoneSurrogate",
            "\\udc01",
            Some(
                "py",
            ),
        ),
    ]
    "#);
}

#[test]
fn only_the_first_repairs_are_detailed_but_all_are_counted() {
    let input = b"\"\xff\xff\xff\xff\xff\"";
    let options = trace_sanitize::Options { max_recorded: 2, ..Default::default() };
    let (_, report) = crate::run_with(input, &options);
    assert_eq!(report.counts.invalid_utf8, 5);
    assert_eq!(report.repairs.len(), 2);
}

#[test]
fn check_reports_without_writing_and_stops_only_when_asked() {
    let input = b"\"\x01\x02\xff\"";
    let all = trace_sanitize::check(&input[..], &Default::default()).unwrap();
    assert_eq!(all.counts.total(), 3);
    assert!(!all.stopped_early);
    assert_eq!(all.bytes_written, 0);
    let first = trace_sanitize::Options { stop_at_first: true, ..Default::default() };
    let one = trace_sanitize::check(&input[..], &first).unwrap();
    assert_eq!(one.counts.total(), 1);
    assert!(one.stopped_early);
    let clean = trace_sanitize::check(&b"{}"[..], &first).unwrap();
    assert!(!clean.needs_repair() && !clean.stopped_early);
}

/// However many repairs `max_recorded` asks to be listed, at most
/// `MAX_RECORDED` are kept (a trace can need tens of millions: listing them
/// all once aborted for want of memory); all are counted.
#[test]
fn the_repairs_listed_are_capped_whatever_is_asked() {
    let n = trace_sanitize::MAX_RECORDED + 500;
    let input = format!("{{\"a\": \"{}\"}}", "\u{1}".repeat(n));
    let options = trace_sanitize::Options { max_recorded: usize::MAX, ..Default::default() };
    let (_, report) = run_with(input.as_bytes(), &options);
    assert_eq!(report.counts.total(), n as u64);
    assert_eq!(report.repairs.len(), trace_sanitize::MAX_RECORDED);
}
