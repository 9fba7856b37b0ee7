//! The real public traces are all clean and complete, with no bare word
//! that is not JSON and nothing the JSON grammar refuses: `check` says so,
//! and sanitizing copies them byte for byte.

use trace_sanitize::{Options, check_file};

#[test]
fn every_public_json_trace_checks_clean() {
    let Some(dir) = crate::public_fixtures() else { return };
    let mut checked = 0;
    for entry in crate::public_dir::files_under(&dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".json") || name.ends_with(".json.gz"))
            || entry.to_string_lossy().contains("tracelens-expected")
        {
            continue;
        }
        let report = check_file(&entry, &Options::default(), &mut |_, _| {}).unwrap();
        assert!(!report.report.needs_repair(), "{}: {:?}", entry.display(), report.report.counts);
        assert_eq!(report.report.complete, Some(true), "{}", entry.display());
        // `true`, `false`, `null` and exponents are no bare words to report.
        let words = (report.report.not_json, &report.report.first_not_json);
        assert_eq!(words, (0, &None), "{}", entry.display());
        let grammar = (report.report.malformed, report.report.unclosed_string);
        assert_eq!(grammar, (None, false), "{}", entry.display());
        assert!(report.report.bytes_read > 0);
        checked += 1;
    }
    assert!(checked >= 28, "only {checked} public traces found");
}
