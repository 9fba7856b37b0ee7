//! Integration tests of trace-discover.
