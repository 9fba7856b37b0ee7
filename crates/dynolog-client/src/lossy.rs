//! `#[serde(serialize_with = ...)]` helpers for paths, which serde refuses
//! to serialize when they are not UTF-8: [`path`] writes one as text, its
//! invalid bytes as U+FFFD (`trace_discover::lossy` does the same for the
//! crates above it; this crate depends on none); [`exact`] writes one so
//! that it reads back as it was.

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

/// Paths.
pub(crate) fn paths<S: Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.to_string_lossy()))
}

/// A path of a session's state, which must read back as it was written:
/// text where it is UTF-8, else its bytes as a list of numbers.
pub(crate) mod exact {
    use std::{
        ffi::OsString,
        os::unix::ffi::{OsStrExt, OsStringExt},
        path::PathBuf,
    };

    use serde::{Deserialize, Deserializer, Serializer};

    /// A path, or `null`.
    pub(crate) fn option<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        match path.as_deref().map(|p| (p.to_str(), p)) {
            None => s.serialize_none(),
            Some((Some(text), _)) => s.serialize_some(text),
            Some((None, path)) => s.serialize_some(path.as_os_str().as_bytes()),
        }
    }

    /// What [`option`] wrote.
    pub(crate) fn read_option<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Bytes(Vec<u8>),
        }
        Ok(Option::<Written>::deserialize(d)?.map(|written| match written {
            Written::Text(text) => PathBuf::from(text),
            Written::Bytes(bytes) => PathBuf::from(OsString::from_vec(bytes)),
        }))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct State {
            #[serde(serialize_with = "option", deserialize_with = "read_option", default)]
            site: Option<PathBuf>,
        }

        #[test]
        fn a_path_reads_back_as_it_was_written() {
            let latin1 = PathBuf::from(OsString::from_vec(b"/opt/r\xe9sultat".to_vec()));
            for site in [None, Some(PathBuf::from("/usr/lib/python3/site-packages")), Some(latin1)]
            {
                let state = State { site };
                let json = serde_json::to_string(&state).unwrap();
                assert_eq!(serde_json::from_str::<State>(&json).unwrap(), state, "{json}");
            }
            let old: State = serde_json::from_str(r#"{"site": "/a"}"#).unwrap();
            assert_eq!(old.site, Some(PathBuf::from("/a")));
        }
    }
}
