//! A report's files, written as one set, and the reports a later run
//! retires: a trace's report (its CSVs and record) and a run's collective
//! report are each put in place whole or not at all, and a report whose
//! trace is gone, or read under another name now, goes, so that a report
//! directory never holds a report to be read as this run's that is not.

use std::{
    collections::{HashMap, HashSet},
    ffi::OsString,
    path::{Path, PathBuf},
    time::SystemTime,
};

use crate::{CollectivesRecord, Record};

/// A report's files could not be written, moved or removed: nothing of the
/// set is in place (a set is put in place whole or not at all).
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Writing, moving or removing `path` failed.
    #[error("cannot write {path}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The files of a trace's report: its tables (TraceLens' names), its
/// collective tables and its record ([`Record`]).
pub const TRACE_FILES: [&str; 38] = [
    "gpu_timeline.csv",
    "kernel_summary.csv",
    "ops_summary.csv",
    "ops_summary_by_category.csv",
    "ops_unique_args.csv",
    "unified_perf_summary.csv",
    "GEMM.csv",
    "SDPA_fwd.csv",
    "SDPA_bwd.csv",
    "CONV_fwd.csv",
    "CONV_bwd.csv",
    "InferenceAttention_fwd.csv",
    "BinaryElementwise.csv",
    "GroupedGEMM_fwd.csv",
    "MoE_comm_fwd.csv",
    "MoE_comm_bwd.csv",
    "SSM_fwd.csv",
    "SSM_bwd.csv",
    "RoPE_fwd.csv",
    "CrossEntropy_fwd.csv",
    "UnaryElementwise.csv",
    "MoE_fused_fwd.csv",
    "MoE_unfused_fwd.csv",
    "MoE_aux_fwd.csv",
    "RMSNorm_fwd.csv",
    "elementwise_fwd.csv",
    "GroupQuant_fwd.csv",
    "FusedRoPE_fwd.csv",
    "CustomCollective_fwd.csv",
    "mHC_fwd.csv",
    "Normalization.csv",
    "Reduce_fwd.csv",
    "Reduce_bwd.csv",
    "coll_analysis.csv",
    "short_kernel_histogram.csv",
    "short_kernels_summary.csv",
    "collective_summary.csv",
    trace_summary::RECORD,
];

/// The files of a run's collective report ([`crate::collective_report`]):
/// its tables (TraceLens' names) and its record ([`CollectivesRecord`]).
pub const COLLECTIVE_FILES: [&str; 8] = [
    "nccl_summary_implicit_sync.csv",
    "nccl_summary_long.csv",
    "nccl_summary_all2allv.csv",
    "nccl_long.csv",
    "nccl_implicit_sync.csv",
    "nccl_all2allv.csv",
    "straggler_summary.csv",
    CollectivesRecord::FILE,
];

/// Write, as one set, the files a command keeps together in `dir` (a
/// trace's CSVs and its record; a diff's CSVs), of those it may write
/// (`ours`): each is written to a staging directory in `dir` first, so a
/// failure part way (a full disk) leaves `dir` as it was; then each is
/// renamed into place, and those of `ours` this run did not write are
/// removed, so none is left from an earlier run to be read as this one's
/// (a trace without collectives after one with them). Other files in `dir`
/// are left alone.
pub fn write_set(dir: &Path, ours: &[&str], files: &[(String, Vec<u8>)]) -> Result<(), SetError> {
    Staged::new(dir, ours, files)?.commit()
}

/// A set of files ([`write_set`]) written to its staging directory in
/// `dir`, not yet in place: [`Staged::commit`] puts it there. Dropped
/// uncommitted (Ctrl-C while other traces are read, an error), it leaves
/// nothing: its staging directory goes, and the directories made for it,
/// where that left them empty.
#[derive(Debug)]
pub struct Staged {
    dir: PathBuf,
    ours: Vec<String>,
    names: Vec<String>,
    staging: Option<tempfile::TempDir>,
    /// The directories made for it, deepest first.
    made: Vec<PathBuf>,
}

impl Staged {
    /// Write `files` to a new staging directory in `dir` (made, with its
    /// parents, if it is not there).
    pub fn new(dir: &Path, ours: &[&str], files: &[(String, Vec<u8>)]) -> Result<Staged, SetError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SetError::Write { path, source }
        };
        let ours = ours.iter().map(|n| n.to_string()).collect();
        let made = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
            .map(Path::to_path_buf)
            .collect();
        let mut staged =
            Staged { dir: dir.to_path_buf(), ours, names: vec![], staging: None, made };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let staging = tempfile::Builder::new()
            .prefix(".madengine-")
            .suffix(".partial")
            .tempdir_in(dir)
            .map_err(io(dir))?;
        // The staging directory is what makes the set atomic: each file is
        // written straight into it.
        let into = staging.path().to_path_buf();
        staged.staging = Some(staging);
        for (name, bytes) in files {
            debug_assert!(staged.ours.contains(name), "{name} is not one of {:?}", staged.ours);
            let path = into.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))?;
            staged.names.push(name.clone());
        }
        Ok(staged)
    }

    /// Rename each file into place, and remove those of its command's
    /// files it does not hold.
    pub fn commit(mut self) -> Result<(), SetError> {
        let staging = self.staging.take().expect("a staged set is committed once");
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SetError::Write { path, source }
        };
        let done = (|| {
            for name in &self.ours {
                let to = self.dir.join(name);
                let done = match self.names.iter().any(|n| n == name) {
                    true => std::fs::rename(staging.path().join(name), &to),
                    false => match std::fs::remove_file(&to) {
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                        done => done,
                    },
                };
                done.map_err(io(&to))?;
            }
            staging.close().map_err(io(&self.dir))
        })();
        if done.is_ok() {
            // In place: the directories made for it are its.
            self.made.clear();
        }
        done
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        drop(self.staging.take());
        for dir in &self.made {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// What a run did to a report an earlier run wrote ([`retire`],
/// [`keep_stale`], [`retire_stale`]), for the caller to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retired {
    /// A trace's report removed, and why.
    Report {
        /// Its directory (removed, unless a file of the user's own is in it).
        dir: PathBuf,
        /// Why it went.
        why: Why,
    },
    /// A run's collective report removed: its run made none this time.
    Collectives {
        /// Its directory.
        dir: PathBuf,
        /// Its run, as the run that wrote it named it.
        run: PathBuf,
    },
    /// A trace's report kept, marked stale in its record: its trace could
    /// not be read this time.
    KeptStale {
        /// Its directory.
        dir: PathBuf,
        /// The trace.
        trace: PathBuf,
    },
}

/// Why a trace's report went ([`Retired::Report`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Its trace made none this time (read, with no GPU timeline; or read
    /// under another name, and none made).
    MadeNone(PathBuf),
    /// Its trace is gone (removed, renamed, a link removed).
    Gone(PathBuf),
    /// Its trace has its report in another directory now.
    ReportedIn {
        /// The trace.
        trace: PathBuf,
        /// Where its report is now.
        now: PathBuf,
    },
    /// Its trace is no longer read as one (its sanitized copy beside it is
    /// read instead, say).
    NoLongerRead(PathBuf),
}

/// Remove the report an earlier run wrote in `dir` of a trace this run
/// made none of (it could not be read, or has no GPU timeline now), so that
/// it is not read as this run's. Only a directory holding a trace's record
/// ([`Record`]) is touched, and only its files: a file of the user's own
/// keeps the directory.
pub fn retire(dir: &Path, trace: &Path) -> Result<Option<Retired>, SetError> {
    if !dir.join(trace_summary::RECORD).is_file() {
        return Ok(None);
    }
    remove_report(dir, Why::MadeNone(trace.to_path_buf())).map(Some)
}

/// `stem` for the report of the trace at `absolute` in `out`, unless its
/// directory holds the report of another trace that is still there (a run
/// into the same output directory of another `rank0.json`): then `Err` of
/// a name of this trace's own (the stem and a digest of its path), so
/// neither overwrites the other.
pub fn own_stem(out: &Path, stem: String, absolute: Option<&Path>) -> Result<String, String> {
    let Some(absolute) = absolute else { return Ok(stem) };
    let recorded = Record::read(&out.join(&stem)).ok().flatten();
    let other = recorded.and_then(|r| r.trace_absolute).filter(|t| t != absolute);
    match other {
        Some(other) if std::fs::symlink_metadata(&other).is_ok() => {
            let digest = sha1_smol::Sha1::from(absolute.as_os_str().as_encoded_bytes()).digest();
            Err(format!("{stem}-{}", &digest.to_string()[..12]))
        }
        _ => Ok(stem),
    }
}

/// Keep the earlier report in `dir` of `trace`, which this run could not
/// read (`err`), marked stale in its record. A directory without a record
/// this version reads is left alone.
pub fn keep_stale(dir: &Path, trace: &Path, err: &str) -> Result<Option<Retired>, SetError> {
    let Ok(Some(mut recorded)) = Record::read(dir) else { return Ok(None) };
    let first = err.lines().next().unwrap_or(err);
    recorded.stale = Some(format!("{} could not be read by a later run: {first}", trace.display()));
    let path = dir.join(trace_summary::RECORD);
    let bytes = recorded.to_bytes();
    trace_sanitize::write_atomic(&path, |f| std::io::Write::write_all(f, &bytes))
        .map_err(|source| SetError::Write { path, source })?;
    Ok(Some(Retired::KeptStale { dir: dir.to_path_buf(), trace: trace.to_path_buf() }))
}

/// Remove a trace's report from `dir`, and `dir` if that empties it.
fn remove_report(dir: &Path, why: Why) -> Result<Retired, SetError> {
    write_set(dir, &TRACE_FILES, &[])?;
    let _ = std::fs::remove_dir(dir);
    Ok(Retired::Report { dir: dir.to_path_buf(), why })
}

/// What a run did, for [`retire_stale`]: when it started, the report
/// directories it wrote (or would have: the traces it could not read hold
/// theirs too), by name, and each trace it read (absolute) with its
/// directory; the directories it searched (absolute), and what in them it
/// could not look at or left out (the traces of the profiling cycles it
/// did not pick).
#[derive(Debug, Clone)]
pub struct ThisRun {
    /// When it started: a report written since is another run's (two runs
    /// into one output directory at once), and stays.
    pub started: SystemTime,
    /// The names of the report directories it wrote.
    pub dirs: HashSet<OsString>,
    /// Each trace it read (absolute), with its report's directory.
    pub read: HashMap<PathBuf, PathBuf>,
    /// The directories it searched (absolute).
    pub searched: Vec<PathBuf>,
    /// What in them it could not look at or left out (absolute).
    pub left_out: Vec<PathBuf>,
}

impl ThisRun {
    /// A run that started now, searching `searched` (absolute).
    pub fn new(searched: Vec<PathBuf>, left_out: Vec<PathBuf>) -> ThisRun {
        ThisRun {
            started: SystemTime::now(),
            dirs: HashSet::new(),
            read: HashMap::new(),
            searched,
            left_out,
        }
    }
}

/// Remove the reports an earlier run left in `out` that this run, which
/// searched where their traces lie, did not write: left, a comparison
/// would read them as this run's (a rank the run no longer has, or a trace
/// twice). That is a trace's directory whose record says its trace lay in a
/// directory this run searched ([`ThisRun::searched`]), and whose trace is
/// gone (removed, renamed, a link removed), is read under another name now
/// (given alone before; or it made no report this time), or is no longer
/// read as a trace (a sanitized copy beside it is read); and a run's
/// collective report whose run lay where this run searched and made none
/// this time. A trace in what this run could not look at or left out
/// (another profiling cycle than the one picked), or that cannot be looked
/// up, keeps its report; so does a directory without a record, or with a
/// record of a version that did not keep where its trace was. Each report
/// retired is told to `retired` as it goes.
pub fn retire_stale(
    out: &Path,
    run: &ThisRun,
    retired: &mut dyn FnMut(Retired),
) -> Result<(), SetError> {
    let Ok(entries) = std::fs::read_dir(out) else { return Ok(()) };
    let since_start = |dir: &Path| {
        std::fs::metadata(dir.join(trace_summary::RECORD))
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= run.started)
    };
    let mut earlier: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && !run.dirs.contains(&e.file_name()))
        .map(|e| e.path())
        .collect();
    earlier.sort();
    for dir in earlier {
        if since_start(&dir) {
            continue;
        }
        if let Some(record) = CollectivesRecord::read(&dir) {
            retire_collectives(&dir, record, run, retired)?;
            continue;
        }
        // A record this version cannot read is not one to act on.
        let Ok(Some(recorded)) = Record::read(&dir) else { continue };
        let Some(trace) = recorded.trace_absolute else { continue };
        if !run.searched.iter().any(|s| trace.starts_with(s))
            || run.left_out.iter().any(|p| trace.starts_with(p))
        {
            continue;
        }
        let named = match recorded.view.trace.as_os_str().is_empty() {
            true => trace.clone(),
            false => recorded.view.trace,
        };
        let why = match (std::fs::symlink_metadata(&trace), run.read.get(&trace)) {
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => Why::Gone(named),
            (Err(_), _) => continue,
            (Ok(_), Some(now)) if now.join(trace_summary::RECORD).is_file() => {
                Why::ReportedIn { trace: named, now: now.clone() }
            }
            // Read under another name, and no report made (as [`retire`]).
            (Ok(_), Some(_)) => Why::MadeNone(named),
            (Ok(_), None) => Why::NoLongerRead(named),
        };
        retired(remove_report(&dir, why)?);
    }
    Ok(())
}

/// A run's collective report in `dir`, whose run lay where this run
/// searched and made none this time (fewer ranks now, no collective): it
/// goes. A cycle's report stays where this run read another cycle of its
/// run (the traces of that run it left out).
fn retire_collectives(
    dir: &Path,
    record: CollectivesRecord,
    run: &ThisRun,
    retired: &mut dyn FnMut(Retired),
) -> Result<(), SetError> {
    let run_dir = &record.run_absolute;
    let other_cycle = record.cycle.is_some() && run.left_out.iter().any(|p| p.starts_with(run_dir));
    if run.searched.iter().any(|s| run_dir.starts_with(s))
        && !run.left_out.iter().any(|p| run_dir.starts_with(p))
        && !other_cycle
    {
        write_set(dir, &COLLECTIVE_FILES, &[])?;
        let _ = std::fs::remove_dir(dir);
        let named = match record.run.as_os_str().is_empty() {
            true => record.run_absolute.clone(),
            false => record.run,
        };
        retired(Retired::Collectives { dir: dir.to_path_buf(), run: named });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Every perf-model sheet the library writes is one of a report's
    /// files (owned, staged and retired with it).
    #[test]
    fn a_report_owns_every_sheet() {
        for sheet in trace_summary::PERF_SHEETS {
            assert!(super::TRACE_FILES.contains(&format!("{sheet}.csv").as_str()), "{sheet}");
        }
    }

    #[test]
    fn a_set_that_fails_part_way_leaves_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.csv"), "old a").unwrap();
        std::fs::write(d.join("b.csv"), "old b").unwrap();
        // The second file cannot be written (its directory does not exist).
        let ours = ["a.csv", "b.csv", "no/c.csv"];
        let files = [("a.csv".to_string(), b"new a".to_vec()), ("no/c.csv".into(), vec![])];
        let err = super::write_set(d, &ours, &files).unwrap_err();
        assert!(err.to_string().contains("no/c.csv"), "{err}");
        let listed = || {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listed(), ["a.csv", "b.csv"], "no staging directory is left");
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "old a");
        // Written whole: the new a, and no b.
        let files = [("a.csv".to_string(), b"new a".to_vec())];
        super::write_set(d, &ours, &files).unwrap();
        assert_eq!(listed(), ["a.csv"]);
        assert_eq!(std::fs::read_to_string(d.join("a.csv")).unwrap(), "new a");
    }

    /// A set that fails into directories made for it (a full disk on a
    /// fresh `-o`) takes them with it: no empty report directory is left.
    #[test]
    fn a_set_that_fails_leaves_no_directory_made_for_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), "kept").unwrap();
        let into = dir.path().join("out/rank0_trace");
        let files = [("a.csv".to_string(), b"new a".to_vec()), ("no/c.csv".into(), vec![])];
        super::write_set(&into, &["a.csv", "no/c.csv"], &files).unwrap_err();
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["mine.txt"]);
        // Into a directory that was there, it is kept.
        std::fs::create_dir(dir.path().join("out")).unwrap();
        super::write_set(&into, &["a.csv", "no/c.csv"], &files).unwrap_err();
        assert!(dir.path().join("out").is_dir());
        assert!(!into.exists());
    }

    /// A set staged while other traces are read, and dropped (Ctrl-C),
    /// leaves nothing: not its staging directory, not the directories made
    /// for it; one that was there keeps its files.
    #[test]
    fn a_staged_set_dropped_uncommitted_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("out/rank0_trace");
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("a.csv"), "old a").unwrap();
        let files = [("a.csv".to_string(), b"new a".to_vec())];
        let staged = [
            super::Staged::new(&fresh, &["a.csv"], &files).unwrap(),
            super::Staged::new(&kept, &["a.csv"], &files).unwrap(),
        ];
        assert!(fresh.is_dir(), "staged in its directory");
        drop(staged);
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["kept"]);
        let names: Vec<_> =
            std::fs::read_dir(&kept).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.csv"]);
        assert_eq!(std::fs::read_to_string(kept.join("a.csv")).unwrap(), "old a");
        // Committed, it is in place, its directories with it.
        super::Staged::new(&fresh, &["a.csv"], &files).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_to_string(fresh.join("a.csv")).unwrap(), "new a");
        assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 1);
    }
}
