//! Integration tests of trace-sanitize.
