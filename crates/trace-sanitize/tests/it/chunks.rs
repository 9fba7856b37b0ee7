//! The output never depends on where chunk boundaries fall.

use proptest::prelude::*;
use trace_sanitize::Options;

use crate::run_with;

/// Bytes that exercise every state: quotes, escapes, hex digits of
/// surrogates, control bytes, UTF-8 lead and continuation bytes, the letters
/// of `inf`, `nan` and `N/A` and a sign.
const ALPHABET: &[u8] = b"\"\"\"\\\\\\uuuudDdD89aAbBcCeEfF0123 ,:{}[]xinNnfI--//\x01\x0a\x1f\x80\x8f\x90\x9f\xa0\xbf\xc2\xc3\xdf\xe0\xe2\xed\xef\xf0\xf4\xf5\xff";

fn trace_like() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(ALPHABET), 0..400)
        .prop_filter("a Perfetto trace's first bytes are refused (files.rs)", |bytes| {
            !trace_sanitize::is_perfetto(bytes)
        })
}

/// The same, with now and then a run of text longer than the kilobyte the
/// engine looks back through.
fn trace_like_with_long_strings() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        40 => proptest::sample::select(ALPHABET).prop_map(|b| vec![b]),
        1 => (1000usize..1100).prop_map(|n| vec![b'x'; n]),
    ];
    proptest::collection::vec(piece, 0..120)
        .prop_map(|pieces| pieces.concat())
        .prop_filter("a Perfetto trace's first bytes are refused (files.rs)", |bytes| {
            !trace_sanitize::is_perfetto(bytes)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn any_buffer_size_gives_the_same_bytes(input in trace_like(), size in 1usize..80) {
        let (whole, whole_report) = run_with(&input, &Options::default());
        let options = Options { buffer_size: size, ..Options::default() };
        let (pieces, report) = run_with(&input, &options);
        prop_assert_eq!(&pieces, &whole);
        prop_assert_eq!(report.counts, whole_report.counts);
        // Offsets, bytes and keys: the report does not depend on buffers either.
        prop_assert_eq!(&report.repairs, &whole_report.repairs);
        prop_assert_eq!(report.not_json, whole_report.not_json);
        prop_assert_eq!(report.complete, whole_report.complete);
        prop_assert_eq!(report.first_not_json, whole_report.first_not_json);
    }

    #[test]
    fn any_buffer_size_gives_the_same_report_past_long_strings(
        input in trace_like_with_long_strings(),
        size in 1usize..1500,
    ) {
        let (whole, whole_report) = run_with(&input, &Options::default());
        let options = Options { buffer_size: size, ..Options::default() };
        let (pieces, report) = run_with(&input, &options);
        prop_assert_eq!(&pieces, &whole);
        prop_assert_eq!(&report.repairs, &whole_report.repairs);
        prop_assert_eq!(report.not_json, whole_report.not_json);
    }

    #[test]
    fn output_is_valid_utf8_and_idempotent(input in trace_like(), size in 1usize..80) {
        let options = Options { buffer_size: size, ..Options::default() };
        let (once, _) = run_with(&input, &options);
        prop_assert!(std::str::from_utf8(&once).is_ok());
        prop_assume!(!trace_sanitize::is_perfetto(&once));
        let (twice, report) = run_with(&once, &options);
        prop_assert_eq!(twice, once);
        prop_assert!(!report.needs_repair());
    }

    #[test]
    fn check_agrees_with_sanitize(input in trace_like()) {
        let (_, report) = run_with(&input, &Options::default());
        let checked = trace_sanitize::check(&input[..], &Options::default()).unwrap();
        prop_assert_eq!(checked.counts, report.counts);
    }
}

/// Sanitize `input` whole, then in buffers of every size: the same bytes
/// and report each time.
fn same_for_every_split(input: &[u8]) -> (Vec<u8>, trace_sanitize::Report) {
    let (whole, report) = run_with(input, &Options::default());
    for size in 1..=input.len() + 1 {
        let (pieces, split) = run_with(input, &Options { buffer_size: size, ..Options::default() });
        assert_eq!(pieces, whole, "buffer size {size}");
        assert_eq!(split.counts, report.counts, "buffer size {size}");
        assert_eq!(split.repairs, report.repairs, "buffer size {size}");
        assert_eq!(split.not_json, report.not_json, "buffer size {size}");
        assert_eq!(split.complete, report.complete, "buffer size {size}");
        assert_eq!(split.first_not_json, report.first_not_json, "buffer size {size}");
    }
    (whole, report)
}

#[test]
fn every_split_of_a_dense_sample() {
    let input = b"{\"a\":\"\\ud83d\\ude00\\ud800\\udc0\xe2\x82\xac\xf0\x9f\x98\x80\x01\\\"\\\\\xff\\uDBFF\\uDFFF\"}";
    same_for_every_split(input);
}

#[test]
fn every_split_of_stray_quotes() {
    let input = b"{\"a\": \"x\"  \n y\",\"k\":[\"p\"\tz:\"q\" ]  , \"b\"\r\n:{\"c\": \"d\"\"}}";
    let (whole, report) = same_for_every_split(input);
    assert_eq!(
        String::from_utf8_lossy(&whole),
        "{\"a\": \"x\\\"  \\u000a y\",\"k\":[\"p\\\"\\u0009z:\\\"q\" ]  , \"b\"\r\n:{\"c\": \"d\\\"\"}}"
    );
    assert_eq!((report.counts.stray_quotes, report.counts.control_chars), (4, 2));
}

#[test]
fn every_split_of_bare_words() {
    let input = b"[-inf,nan, NaN,xinf, -Infinity,\"inf\\x\",infinite,abcdefghijnan,true,-,-1,null,Inf,N/A  ,N/A \"\",true.,inf5]";
    let (whole, report) = same_for_every_split(input);
    assert_eq!(
        String::from_utf8_lossy(&whole),
        "[null,null, null,xinf, null,\"inf\\\\x\",infinite,abcdefghijnan,true,-,-1,null,null,\"N/A\"  ,N/A \"\",true.,inf5]"
    );
    let c = report.counts;
    assert_eq!((c.non_finite, c.invalid_escapes, c.unquoted_not_available), (5, 1, 1));
    // xinf, infinite, abcdefghijnan, the N/A before a quote, true. and inf5.
    assert_eq!(report.not_json, 6);
}

#[test]
fn every_split_of_long_strings() {
    // A CK kernel's demangled name runs to kilobytes: a repair deep in it
    // still names its key, and a stray quote deep in a log line is judged
    // by where that line stands (in an array, a quote before `:` is text),
    // however long ago the string opened.
    let name = "ck::Tuple<ck::Sequence<1, 2>, float>, ".repeat(60);
    let mut input = br#"{"kernel_symbols": [{"kernel_id": 8, "formatted_kernel_name": ""#.to_vec();
    input.extend_from_slice(b"\xff");
    input.extend_from_slice(name.as_bytes());
    input.extend_from_slice(b"\x01");
    input.extend_from_slice(name.as_bytes());
    input.extend_from_slice(br#"\q"}], "INFO": [""#);
    input.extend_from_slice(name.as_bytes());
    input.extend_from_slice(br#"config {"event_id": 64}"]}"#);
    let (whole, report) = same_for_every_split(&input);
    let found: Vec<_> =
        report.repairs.iter().map(|r| (r.offset, r.original.as_str(), r.key.as_deref())).collect();
    let at = |needle: &[u8]| input.windows(needle.len()).position(|w| w == needle).unwrap() as u64;
    let kernel = Some("formatted_kernel_name");
    assert_eq!(
        found,
        [
            (at(b"\xff"), "\\xff", kernel),
            (at(b"\x01"), "\\x01", kernel),
            (at(b"\\q"), "\\q", kernel),
            // An element of an array is the value of no key.
            (at(b"\"event_id"), "\"e", None),
            (at(b"\": 64"), "\":", None),
        ]
    );
    assert!(String::from_utf8_lossy(&whole).ends_with(r#"config {\"event_id\": 64}"]}"#));
}

/// A quote after a backslash outside any string opens a string all the
/// same, and that string is judged by what its own opening quote follows,
/// however the input is split (looking back for it, the backslash made it
/// seem escaped, and an earlier quote was taken for it unless a buffer
/// boundary hid the backslash).
#[test]
fn a_string_opened_after_a_stray_backslash_is_judged_by_its_own_quote() {
    let (whole, report) = same_for_every_split(b"[\"x[\", \\\"b\"c\"d\": 1]");
    // It follows `\`: where it stands is unknown, so `:` may end it (not
    // the array the earlier string's `[` seemed to open).
    assert_eq!(String::from_utf8_lossy(&whole), "[\"x[\", \\\"b\\\"c\\\"d\": 1]");
    assert_eq!(report.counts.stray_quotes, 2);
    // As proptest found it: more stray quotes than are remembered, first.
    let mut found = b"\\\\".to_vec();
    found.extend([b'"'; 64]);
    found.extend(b"\\\"".repeat(6));
    found.push(b'"');
    found.extend(b"\\\"".repeat(6));
    found.extend(b"\"\"");
    found.extend(b"\\\"".repeat(11));
    found.extend(b"\\,\",");
    found.extend([b'\\'; 18]);
    found.extend(b"u\\\"\"u\":");
    same_for_every_split(&found);
}

/// Invalid UTF-8 outside any string is the value of no string: its key is
/// the one just before it, not the last string's, whose opening quote an
/// earlier buffer may have held (as proptest found it: with 1,017-byte
/// buffers the last byte came alone and lost the key the whole input gave).
#[test]
fn invalid_utf8_outside_a_string_names_no_string_s_key() {
    let (whole, report) = same_for_every_split(b"{\"k\": \"v\", \xc2 \"n\": 1}");
    assert_eq!(String::from_utf8_lossy(&whole), "{\"k\": \"v\", \u{fffd} \"n\": 1}");
    let found: Vec<_> = report.repairs.iter().map(|r| (r.offset, r.key.as_deref())).collect();
    assert_eq!(found, [(11, None)]);
    let (_, report) = same_for_every_split(b"{\"k\": \xc2}");
    assert_eq!(report.repairs[0].key.as_deref(), Some("k"));

    let mut found = b"\"".to_vec();
    found.extend(b"\\\"".repeat(6));
    found.extend([b'x'; 1085]);
    found.extend(b"\\\"".repeat(7));
    found.extend(b"\",");
    found.extend([b'"'; 15]);
    found.extend(b"u\"uu\"u\"\\nu\\\"u\":\"u\",\\\\\xc2");
    assert_eq!(found.len(), 1151);
    let whole = run_with(&found, &Options::default()).1;
    for size in [1017, 1150, 1151, 64, 1] {
        let split = run_with(&found, &Options { buffer_size: size, ..Options::default() }).1;
        assert_eq!(split.repairs, whole.repairs, "buffer size {size}");
    }
    assert_eq!(whole.repairs.last().map(|r| (r.offset, r.key.as_deref())), Some((1150, None)));
}
