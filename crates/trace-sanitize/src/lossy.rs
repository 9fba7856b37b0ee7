//! `#[serde(serialize_with = ...)]` helpers for paths, which serde refuses
//! to serialize when they are not UTF-8: each writes the path as text, its
//! invalid bytes as U+FFFD (`trace_discover::lossy` does the same for the
//! crates above it; this crate depends on none).

use std::path::{Path, PathBuf};

use serde::Serializer;

/// A path.
pub(crate) fn path<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// A path, or `null`.
pub(crate) fn option<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => s.serialize_some(&*path.to_string_lossy()),
        None => s.serialize_none(),
    }
}
