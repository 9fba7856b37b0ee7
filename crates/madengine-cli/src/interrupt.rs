//! Ctrl-C (SIGINT), handled so that an interrupted command cleans up after
//! itself instead of dying where it stands.
//!
//! The terminal sends SIGINT to the whole foreground process group: to
//! madengine and to whatever it runs (TraceLens, the profiled workload). What
//! madengine itself does depends on what it is doing:
//! - by default it exits at once with 130, as without a handler, after
//!   saying what goes on without it ([`Guard::saying`]);
//! - while a workload runs in the foreground ([`Mode::Child`], `madengine
//!   profile`) it waits: the workload got the signal too and decides, and
//!   madengine then stops the daemon, removes its hook and keeps the traces
//!   captured so far (before the workload starts, Ctrl-C means it is not
//!   started, and the same clean-up runs);
//! - during work that can stop cleanly ([`Mode::Cancel`], `report
//!   tracelens`) it raises the flag the library watches, which stops the
//!   jobs and removes the scratch directory (sanitized copies of large
//!   traces). A second Ctrl-C exits at once, and removes that directory
//!   first ([`remove_on_quit`]).

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU8, Ordering},
};

/// The exit code of a process ended by SIGINT, as shells report it.
pub(crate) const EXIT_CODE: u8 = 130;

const EXIT: u8 = 0;
const CHILD: u8 = 1;
const CANCEL: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(EXIT);
static SAY: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
static SCRATCH: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

fn flag() -> &'static Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// What a Ctrl-C does while a [`Guard`] is held.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// A foreground child got the signal too: let it decide, keep waiting.
    Child,
    /// Raise the cancel flag; a second Ctrl-C exits at once.
    Cancel,
}

/// Install the handler; without it (if that fails) Ctrl-C kills as usual.
pub(crate) fn install() {
    let _ = ctrlc::set_handler(|| match MODE.load(Ordering::SeqCst) {
        CHILD => {}
        CANCEL if !flag().swap(true, Ordering::SeqCst) => {
            crate::render::note("interrupted: stopping (Ctrl-C again to quit at once)");
        }
        #[allow(clippy::exit, reason = "what SIGINT does without a handler")]
        _ => {
            if let Some(text) = SAY.lock().ok().and_then(|s| s.clone()) {
                crate::render::note(&text);
            }
            if let Some(said) = remove_scratch() {
                crate::render::note(&said);
            }
            std::process::exit(i32::from(EXIT_CODE))
        }
    });
}

/// A directory to remove if Ctrl-C exits at once (a second one in
/// [`Mode::Cancel`]) while the current guard is held: the scratch files the
/// library would have removed on its way out.
pub(crate) fn remove_on_quit(dir: &std::path::Path) {
    if let Ok(mut scratch) = SCRATCH.lock() {
        *scratch = Some(dir.to_path_buf());
    }
}

/// Remove the directory [`remove_on_quit`] named, if any; what to say of it.
fn remove_scratch() -> Option<String> {
    let dir = SCRATCH.lock().ok().and_then(|mut s| s.take())?;
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Some(format!("quit at once; removed the scratch directory {}", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!(
            "quit at once; left the scratch directory {} ({e}): remove it",
            dir.display()
        )),
    }
}

/// Sets the mode for its lifetime; the mode before it comes back when it is
/// dropped, so guards nest (a workload run inside a cancellable command).
#[derive(Debug)]
pub(crate) struct Guard {
    previous: u8,
}

impl Guard {
    pub(crate) fn new(mode: Mode) -> Guard {
        let mode = match mode {
            Mode::Child => CHILD,
            Mode::Cancel => CANCEL,
        };
        Guard { previous: MODE.swap(mode, Ordering::SeqCst) }
    }

    /// Exit at once on Ctrl-C, as by default, but first say `text` (what
    /// goes on without madengine, and how to stop or resume it).
    pub(crate) fn saying(text: String) -> Guard {
        if let Ok(mut say) = SAY.lock() {
            *say = Some(text);
        }
        Guard { previous: MODE.swap(EXIT, Ordering::SeqCst) }
    }

    /// Whether Ctrl-C was pressed in [`Mode::Cancel`].
    pub(crate) fn cancelled(&self) -> bool {
        flag().load(Ordering::SeqCst)
    }

    /// The flag a library watches in [`Mode::Cancel`].
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(flag())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        MODE.store(self.previous, Ordering::SeqCst);
        if let Ok(mut say) = SAY.lock() {
            *say = None;
        }
        if let Ok(mut scratch) = SCRATCH.lock() {
            *scratch = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a second Ctrl-C does before it exits: the scratch directory
    /// named while the guard is held goes, and is said to; none is named
    /// once the guard is dropped.
    #[test]
    fn quitting_at_once_removes_the_scratch_directory_named() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("madengine-tracelens-x");
        std::fs::create_dir_all(scratch.join("copies")).unwrap();
        std::fs::write(scratch.join("copies/rank0.json"), b"{}").unwrap();
        let guard = Guard::new(Mode::Cancel);
        remove_on_quit(&scratch);
        let said = remove_scratch().unwrap();
        assert!(!scratch.exists());
        assert_eq!(
            said,
            format!("quit at once; removed the scratch directory {}", scratch.display())
        );
        assert_eq!(remove_scratch(), None, "removed once");
        remove_on_quit(&scratch);
        drop(guard);
        std::fs::create_dir(&scratch).unwrap();
        assert_eq!(remove_scratch(), None);
        assert!(scratch.exists(), "the run ended: its scratch directory is not named any more");
    }
}
