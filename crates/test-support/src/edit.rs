//! Edits of a Kineto trace's text, for the tests of what a broken trace
//! gets (included by path from the CLI's test binary too).

/// `trace` with `field` (`"key": value`, raw JSON text, broken or not)
/// added to its first complete event, after its `"ph": "X"`.
pub fn in_first_event(trace: &str, field: &str) -> String {
    let edited = trace.replacen("\"ph\": \"X\"", &format!("\"ph\": \"X\", {field}"), 1);
    assert_ne!(edited, trace, "the trace has no complete event to edit");
    edited
}

/// `trace` with `field` added at the end of its top-level object, where
/// Kineto writes its metadata.
pub fn in_metadata(trace: &str, field: &str) -> String {
    let last = trace.trim_end().strip_suffix('}').expect("the trace is a JSON object");
    format!("{last}, {field}}}\n")
}
