//! End-to-end tests of the `madengine` binary.
