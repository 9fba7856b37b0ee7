//! Many traces read at once, on worker threads.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
};

use crate::{Error, Options, Summary, summarize_file_with};

/// What [`summarize_files`] says as it goes, by the index of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The trace is being read.
    Started(usize),
    /// The trace has been read, or failed.
    Done(usize),
}

/// Why one of many traces has no summary ([`summarize_files`]).
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    /// It could not be read.
    #[error(transparent)]
    Error(#[from] Error),
    /// Reading it panicked: a bug in this crate, which the other traces do
    /// not share.
    #[error("reading {} panicked: {message}", path.display())]
    Panicked {
        /// The trace.
        path: PathBuf,
        /// What the panic said.
        message: String,
    },
}

/// A message from a worker.
enum Message<T> {
    Started(usize),
    /// Boxed: a result may be large and most messages are not.
    Done(usize, Box<T>),
}

/// Summarize each of `paths` ([`summarize_file_with`]), `jobs` at a time,
/// the results in the order of `paths`. A trace that cannot be read, or
/// whose reading panics, is that trace's [`Failed`]: the others are still
/// read. `progress` hears, on the calling thread, each trace started and
/// done.
///
/// `None` when [`Options::cancel`] was raised: the traces being read stop,
/// and no other is started.
///
/// # Example
///
/// ```
/// use trace_summary::{Options, Progress, summarize_files};
///
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
///     .join("../../fixtures/synthetic/run/torch_profiler_output");
/// let paths = [dir.join("libkineto_trace_rank0_1.json"), dir.join("gone.json")];
/// let mut done = 0;
/// let read = summarize_files(&paths, 2, &Options::default(), &mut |p| {
///     if let Progress::Done(_) = p {
///         done += 1;
///     }
/// })
/// .expect("not cancelled");
/// assert!(read[0].as_ref().is_ok_and(|s| s.gpu_timeline.is_some()));
/// assert!(read[1].is_err(), "that trace's failure alone");
/// assert_eq!(done, 2);
/// ```
pub fn summarize_files(
    paths: &[PathBuf],
    jobs: usize,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Option<Vec<Result<Summary, Failed>>> {
    summarize_files_into(paths, jobs, options, progress, &|_, result| result)
}

/// [`summarize_files`], each trace's result handed to `into` on the worker
/// thread that read it, as soon as it is read, and what `into` makes of it
/// kept in its place: a caller that writes each summary out (or keeps only
/// what it needs of it) holds one trace's summary per worker at a time,
/// not every trace's until the last is read.
///
/// When [`Options::cancel`] is raised, what `into` made is dropped, in
/// this call, before it returns `None`.
///
/// # Example
///
/// ```
/// use trace_summary::{Options, summarize_files_into};
///
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
///     .join("../../fixtures/synthetic/run/torch_profiler_output");
/// let paths = [dir.join("libkineto_trace_rank0_1.json"), dir.join("gone.json")];
/// // Only the number of events of each trace is kept.
/// let events = summarize_files_into(&paths, 2, &Options::default(), &mut |_| {}, &|_, read| {
///     read.map(|summary| summary.events).ok()
/// })
/// .expect("not cancelled");
/// assert!(events[0].is_some_and(|n| n > 0));
/// assert_eq!(events[1], None);
/// ```
pub fn summarize_files_into<T: Send>(
    paths: &[PathBuf],
    jobs: usize,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
    into: &(dyn Fn(usize, Result<Summary, Failed>) -> T + Sync),
) -> Option<Vec<T>> {
    let cancelled =
        || options.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst));
    let mut results: Vec<Option<T>> = paths.iter().map(|_| None).collect();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, paths.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    if cancelled() {
                        break;
                    }
                    let _ = tx.send(Message::Started(i));
                    let result = guarded(path, |path| summarize_file_with(path, options));
                    let made = into(i, result);
                    if tx.send(Message::Done(i, Box::new(made))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for message in rx {
            match message {
                Message::Started(i) => progress(Progress::Started(i)),
                Message::Done(i, made) => {
                    results[i] = Some(*made);
                    progress(Progress::Done(i));
                }
            }
        }
    });
    if cancelled() {
        return None;
    }
    Some(results.into_iter().map(|r| r.expect("every trace was summarized")).collect())
}

/// `read(path)`, with a panic as its [`Failed::Panicked`].
fn guarded(
    path: &Path,
    read: impl FnOnce(&Path) -> Result<Summary, Error> + std::panic::UnwindSafe,
) -> Result<Summary, Failed> {
    match std::panic::catch_unwind(|| read(path)) {
        Ok(result) => Ok(result?),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failed::Panicked { path: path.to_path_buf(), message })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        path::{Path, PathBuf},
        sync::{Arc, atomic::AtomicBool},
    };

    use super::{Failed, Progress, summarize_files};
    use crate::Options;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run").join(name)
    }

    #[test]
    fn each_trace_gets_its_summary_or_its_error_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{\"traceEvents\": [{\"ph\": \"X\"").unwrap();
        let good = fixture("torch_profiler_output/libkineto_trace_rank0_1.json");
        let paths = [good.clone(), broken.clone(), good.clone(), dir.path().join("gone.json")];
        let mut heard = Vec::new();
        let results =
            summarize_files(&paths, 2, &Options::default(), &mut |p| heard.push(p)).unwrap();
        assert_eq!(results.len(), 4);
        assert!(results[0].as_ref().is_ok_and(|s| s.gpu_timeline.is_some()));
        let err = results[1].as_ref().unwrap_err();
        assert!(matches!(err, Failed::Error(crate::Error::Parse { .. })), "{err:?}");
        assert!(err.to_string().contains("broken.json"), "{err}");
        assert!(results[2].is_ok());
        assert!(results[3].as_ref().unwrap_err().to_string().contains("gone.json"));
        // Each started before it was done, each once.
        for i in 0..4 {
            let at = |p: Progress| heard.iter().position(|h| *h == p).unwrap();
            assert!(at(Progress::Started(i)) < at(Progress::Done(i)), "{heard:?}");
        }
        assert_eq!(heard.len(), 8);
    }

    #[test]
    fn a_panic_while_reading_is_that_traces_failure() {
        let path = Path::new("run/rank3.json");
        let err = super::guarded(path, |_| panic!("index out of bounds")).unwrap_err();
        assert_eq!(err.to_string(), "reading run/rank3.json panicked: index out of bounds");
    }

    #[test]
    fn a_raised_cancel_reads_nothing_more() {
        let cancel = Arc::new(AtomicBool::new(true));
        let options = Options::default().cancelled_by(cancel);
        let paths = [fixture("torch_profiler_output/libkineto_trace_rank0_1.json")];
        let mut heard = Vec::new();
        assert!(summarize_files(&paths, 1, &options, &mut |p| heard.push(p)).is_none());
        assert!(heard.is_empty(), "{heard:?}");
    }
}
