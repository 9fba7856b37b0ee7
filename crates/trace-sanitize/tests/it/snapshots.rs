//! One report snapshot per synthetic fixture trace.

use trace_sanitize::{Options, check_file};

#[test]
fn reports_on_the_fixtures() {
    let root = crate::fixtures();
    insta::glob!(root.as_path(), "synthetic/**/*.json*", |path| {
        let report = check_file(path, &Options::default(), &mut |_, _| {}).unwrap();
        insta::assert_json_snapshot!(report.report);
    });
}
