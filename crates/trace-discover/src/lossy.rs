//! `#[serde(serialize_with = ...)]` helpers for paths, which serde refuses
//! to serialize when they are not UTF-8 (a file name of Latin-1 bytes): each
//! writes the path as text, its invalid bytes as U+FFFD, as
//! [`Path::to_string_lossy`] does. This crate's types use them; so do the
//! workspace's crates above it, for theirs.
//!
//! ```
//! use std::{ffi::OsStr, os::unix::ffi::OsStrExt, path::PathBuf};
//!
//! #[derive(serde::Serialize)]
//! struct Report {
//!     #[serde(serialize_with = "trace_discover::lossy::path")]
//!     trace: PathBuf,
//! }
//!
//! let trace = PathBuf::from(OsStr::from_bytes(b"r\xe9sultat.json"));
//! let json = serde_json::to_string(&Report { trace }).unwrap();
//! assert_eq!(json, "{\"trace\":\"r\u{fffd}sultat.json\"}");
//! ```

use std::path::{Path, PathBuf};

use serde::Serializer;

/// A path.
pub fn path<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// A path, or `null`.
pub fn option<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => s.serialize_some(&*path.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// A list of paths.
pub fn paths<S: Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.to_string_lossy()))
}
