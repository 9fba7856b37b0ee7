//! Where an output goes, and how it is written there: a regular file (or
//! one not there yet) through a temporary file beside it and a rename, so a
//! reader never sees half of it and a failure leaves none; a device, a FIFO
//! or a socket (`/dev/null`, `-o /dev/stdout`, a shell's `>(cmd)`) written
//! through, never replaced by a file; a symbolic link followed to its
//! target, never replaced either. Temporary files left by a process that
//! was killed (`.<name>.<pid>.XXXXXX.partial`) are removed by the next
//! write of the same output.

use std::{
    fs::{self, File},
    io,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

/// Where an output path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A regular file, or none yet, at this path (links followed): written
    /// atomically.
    Replace(PathBuf),
    /// A device, a FIFO or a socket at this path: written through.
    Through(PathBuf),
}

impl Target {
    /// Where `path` leads: its symbolic links followed (to a target that
    /// need not exist yet); a directory is an error.
    pub(crate) fn of(path: &Path) -> io::Result<Target> {
        let mut at = path.to_path_buf();
        for _ in 0..40 {
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = fs::read_link(&at)?;
                    at = match at.parent() {
                        Some(dir) if target.is_relative() => dir.join(target),
                        _ => target,
                    };
                }
                Ok(meta) if meta.is_dir() => {
                    return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
                }
                Ok(meta) if meta.is_file() => return Ok(Target::Replace(at)),
                Ok(_) => return Ok(Target::Through(at)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Target::Replace(at)),
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("too many levels of symbolic links"))
    }
}

/// An output being written: a temporary file beside its target, or the
/// target itself when that is written through.
#[derive(Debug)]
pub(crate) struct Out {
    tmp: Option<tempfile::NamedTempFile>,
    file: Option<File>,
    target: PathBuf,
}

impl Out {
    /// Start writing `path` ([`Target::of`]).
    pub(crate) fn begin(path: &Path) -> io::Result<Out> {
        match Target::of(path)? {
            Target::Through(target) => {
                let file = fs::OpenOptions::new().write(true).open(&target)?;
                Ok(Out { tmp: None, file: Some(file), target })
            }
            Target::Replace(target) => {
                let dir = match target.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let name = target.file_name().unwrap_or_default().to_string_lossy().into_owned();
                remove_stale_partials(&dir, &name);
                let tmp = tempfile::Builder::new()
                    .prefix(&format!(".{name}.{}.", std::process::id()))
                    .suffix(".partial")
                    .tempfile_in(&dir)?;
                Ok(Out { tmp: Some(tmp), file: None, target })
            }
        }
    }

    /// The file to write into.
    pub(crate) fn file(&self) -> &File {
        match (&self.tmp, &self.file) {
            (Some(tmp), _) => tmp.as_file(),
            (None, Some(file)) => file,
            (None, None) => unreachable!("an output has a file"),
        }
    }

    /// Done: the temporary file given `permissions` and renamed onto the
    /// target; a target written through is left as it is.
    pub(crate) fn finish(self, permissions: Option<fs::Permissions>) -> io::Result<()> {
        let Some(tmp) = self.tmp else { return Ok(()) };
        if let Some(permissions) = permissions {
            fs::set_permissions(tmp.path(), permissions)?;
        }
        tmp.persist(&self.target).map(drop).map_err(|e| e.error)
    }
}

/// Remove the temporary files of `name` in `dir` that a process killed
/// while writing it left (`.<name>.<pid>.XXXXXX.partial`, its pid gone; or
/// of the older naming without a pid, untouched for a minute): the next
/// write of the same output clears them. Another process's that is still
/// writing is left alone.
fn remove_stale_partials(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let prefix = format!(".{name}.");
    let pid_gone = |pid: &str| {
        pid.parse::<u32>().ok().map(|p| {
            Path::new("/proc").is_dir() && !Path::new("/proc").join(p.to_string()).exists()
        })
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(text) = file_name.to_str() else { continue };
        let Some(rest) = text.strip_prefix(&prefix).and_then(|r| r.strip_suffix(".partial")) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let idle = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|d| d > Duration::from_secs(60));
        let stale = match rest.split_once('.') {
            // Its writer's pid: gone, or (no /proc) an old file.
            Some((pid, _)) => pid_gone(pid).unwrap_or(idle),
            None => idle,
        };
        if stale {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Write a file atomically: `fill` writes a temp file beside `path`
/// (`.<name>.<pid>.*.partial`), which is then given mode 0644 (what a plain
/// create gives under the usual umask, not the temp file's 0600) and renamed
/// over `path`. Readers never see half a file, and a failure leaves no file
/// (one a killed process left is removed by the next write). A symbolic
/// link is followed (the file it leads to is written, the link kept); a
/// device, a FIFO or a socket (`/dev/null`, `/dev/stdout`, `>(cmd)`) is
/// written through, never replaced by a file.
///
/// The workspace's other outputs (summaries, reports) go through this.
pub fn write_atomic(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let out = Out::begin(path)?;
    fill(&mut out.file().try_clone()?)?;
    out.finish(default_permissions())
}

/// The mode of a file written anew: 0644 on Unix (as a shell's `>`
/// under the usual umask), the platform's default elsewhere.
#[cfg(unix)]
pub(crate) fn default_permissions() -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
pub(crate) fn default_permissions() -> Option<fs::Permissions> {
    None
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn write_atomic_gives_0644_and_leaves_nothing_on_failure() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        super::write_atomic(&path, |f| std::io::Write::write_all(f, b"{}")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o644);
        let failed = super::write_atomic(&path, |_| Err(std::io::Error::other("disk full")));
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"{}", "the old file stays");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
    }

    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_devices_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        // A link to a file not there yet leads to where it will be.
        assert_eq!(Target::of(&link).unwrap(), Target::Replace(real.clone()));
        assert_eq!(
            Target::of(Path::new("/dev/null")).unwrap(),
            Target::Through("/dev/null".into())
        );
        assert!(Target::of(dir.path()).is_err());
        let out = Out::begin(&link).unwrap();
        std::io::Write::write_all(&mut out.file(), b"{}").unwrap();
        out.finish(None).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays");
        assert_eq!(fs::read(&real).unwrap(), b"{}");
    }

    #[test]
    fn partials_of_writers_gone_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join(format!(".t.json.{}.abc123.partial", u32::MAX - 7));
        let alive = dir.path().join(format!(".t.json.{}.def456.partial", std::process::id()));
        let other = dir.path().join(".u.json.1.x.partial");
        for p in [&gone, &alive, &other] {
            fs::write(p, "half").unwrap();
        }
        let out = Out::begin(&dir.path().join("t.json")).unwrap();
        out.finish(None).unwrap();
        assert!(!gone.exists(), "a dead writer's partial stays");
        assert!(alive.exists() && other.exists());
    }
}
