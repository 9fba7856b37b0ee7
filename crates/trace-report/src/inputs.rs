//! Which traces a run reads ([`run_inputs`]): the traces under the
//! directories given and the files given, each once, its report named from
//! its path, PyTorch traces told apart by profiling cycle, and those of the
//! cycles not picked left out.

use std::path::{Path, PathBuf};

use crate::{CycleError, CyclePick, RunEvents, RunNote, TraceInput};

/// What a run reads, and what it left out.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The traces to read, each once, in the order found.
    pub inputs: Vec<TraceInput>,
    /// The paths the search could not look at (told as
    /// [`RunNote::Unlooked`]).
    pub left_out: Vec<trace_discover::Problem>,
    /// The PyTorch traces of the profiling cycles not picked.
    pub other_cycles: Vec<PathBuf>,
    /// The directories searched.
    pub searched: Vec<PathBuf>,
}

impl Inputs {
    /// A run of these traces, starting now, for [`crate::retire_stale`]:
    /// the directories it searched, and what it left out there (what could
    /// not be looked at, the traces of other profiling cycles), absolute.
    pub fn this_run(&self) -> crate::ThisRun {
        let absolute = |p: &PathBuf| std::path::absolute(p).ok();
        let left_out = self.left_out.iter().map(|p| &p.path).chain(&self.other_cycles);
        crate::ThisRun::new(
            self.searched.iter().filter_map(absolute).collect(),
            left_out.filter_map(absolute).collect(),
        )
    }
}

/// An output directory that is, or holds, a directory to search: what lies
/// in the output directory is left out of the search (reports are no
/// traces), so none of the run's traces would be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} {} the run directory {}: what lies in the output directory is never searched for \
     traces, so none would be found",
    output.display(),
    if *is_run { "is" } else { "holds" },
    run.display()
)]
pub struct HoldsRun {
    /// The output directory, as given.
    pub output: PathBuf,
    /// The directory to search it is or holds, as given.
    pub run: PathBuf,
    /// Whether it is that directory (else it holds it).
    pub is_run: bool,
}

/// Refuse an `output` directory that is, or holds, one of the directories
/// `searched` ([`HoldsRun`]), before anything is read; paths compared with
/// symbolic links resolved. One inside a run is fine: only it is left out.
pub fn check_not_searched(output: &Path, searched: &[&Path]) -> Result<(), HoldsRun> {
    let Ok(out) = output.canonicalize() else { return Ok(()) };
    for run in searched {
        let Ok(canonical) = run.canonicalize() else { continue };
        if canonical.starts_with(&out) {
            return Err(HoldsRun {
                output: output.to_path_buf(),
                run: run.to_path_buf(),
                is_run: canonical == out,
            });
        }
    }
    Ok(())
}

/// Why a run's traces could not be found.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A directory left out of the search (the output directory) is, or
    /// holds, a directory to search.
    #[error(transparent)]
    HoldsRun(#[from] HoldsRun),
    /// A directory could not be searched.
    #[error(transparent)]
    Discover(#[from] trace_discover::Error),
    /// The profiling cycle picked is not one each directory holds.
    #[error(transparent)]
    Cycle(#[from] CycleError),
}

/// The traces behind `paths` (the current directory when there is none):
/// a directory is searched (`exclude` left out of the search: the output
/// directory, refused where it is or holds one to search: [`HoldsRun`]), a
/// file taken as given. One directory alone names its traces'
/// reports from their paths below it; with several paths each directory's
/// own name comes first, and a file given by an absolute path is named by
/// its last two components. A trace named twice is read once. The PyTorch
/// traces are told apart by profiling cycle ([`crate::cycles_of`]); with
/// `cycle`, only the cycle it picks of each job is read ([`RunNote`]s say
/// which, and how many were left out). What is left out, or surprising (a
/// trace whose sanitized copy is read instead; nothing to read at all), is
/// told to `events`.
pub fn run_inputs(
    paths: &[PathBuf],
    exclude: &[PathBuf],
    cycle: Option<CyclePick>,
    events: &impl RunEvents,
) -> Result<Inputs, InputError> {
    // With no path, traces are shown as `a/rank0.json`, not
    // `./a/rank0.json` (as ripgrep does).
    let defaulted = paths.is_empty();
    let paths = if defaulted { vec![PathBuf::from(".")] } else { paths.to_vec() };
    let dirs: Vec<&Path> = paths.iter().map(PathBuf::as_path).filter(|p| p.is_dir()).collect();
    for excluded in exclude {
        check_not_searched(excluded, &dirs)?;
    }
    let alone = paths.len() == 1;
    let mut found = Inputs::default();
    let mut inputs = Vec::new();
    // The PyTorch traces, found by searching or named (a shell's glob of a
    // directory is the directory), whose profiling cycles are told apart.
    let mut pytorch = Vec::new();
    for path in paths {
        if !path.is_dir() {
            let (input, is_pytorch) = given(path);
            if is_pytorch {
                pytorch.push(inputs.len());
            }
            inputs.push(input);
            continue;
        }
        found.searched.push(path.clone());
        let prefix = if alone { PathBuf::new() } else { dir_name(&path) };
        for t in searched(&path, exclude, &mut found.left_out, &|note| events.note(note))? {
            let rel = prefix.join(t.path.strip_prefix(&path).unwrap_or(&t.path));
            let trace = match t.path.strip_prefix(".") {
                Ok(inside) if defaulted => inside.to_path_buf(),
                _ => t.path,
            };
            if t.kind == trace_discover::TraceKind::Pytorch {
                pytorch.push(inputs.len());
            }
            inputs.push(TraceInput::new(trace, rel, t.rank.map(|r| r.rank)));
        }
    }
    // A trace named twice (a file inside a directory also given) is read
    // once, and counted once.
    let mut seen = std::collections::HashSet::new();
    let once: Vec<bool> = inputs
        .iter()
        .map(|i| seen.insert(i.trace.canonicalize().unwrap_or_else(|_| i.trace.clone())))
        .collect();
    pytorch.retain(|&i| once[i]);
    let traces: Vec<(PathBuf, Option<u32>)> =
        pytorch.iter().map(|&i| (inputs[i].trace.clone(), inputs[i].rank)).collect();
    for (&i, cycle) in pytorch.iter().zip(crate::cycles_of(&traces)) {
        inputs[i].cycle = cycle;
    }
    // With a cycle picked, whether to read each: not the other cycles'.
    let mut read = vec![true; inputs.len()];
    if let Some(pick) = cycle {
        let mut entries = vec![None; inputs.len()];
        for (&i, trace) in pytorch.iter().zip(traces) {
            entries[i] = Some(trace);
        }
        let picked;
        (read, picked) = crate::keep_cycle(&entries, pick)?;
        for p in picked {
            events.note(RunNote::CyclePicked(p));
        }
        let other = read.iter().filter(|r| !**r).count();
        if other > 0 {
            events.note(RunNote::OtherCycles(other));
        }
    }
    for (i, input) in inputs.into_iter().enumerate() {
        match (once[i], read[i]) {
            (false, _) => {}
            (true, false) => found.other_cycles.push(input.trace),
            (true, true) => found.inputs.push(input),
        }
    }
    Ok(found)
}

/// A file given: what it is and its rank, read once, and whether it is a
/// PyTorch trace. A file discovery does not claim is read all the same, its
/// rank from its name or content.
fn given(path: PathBuf) -> (TraceInput, bool) {
    let claimed = trace_discover::classify(&path, &Default::default())
        .ok()
        .and_then(|mut d| (!d.traces.is_empty()).then(|| d.traces.swap_remove(0)));
    // A pipe or a device is not opened here (reading it would never end,
    // or take what the summary reads): the summary says what it is.
    let special =
        std::fs::metadata(&path).is_ok_and(|m| trace_discover::special(m.file_type()).is_some());
    let rank = match &claimed {
        Some(trace) => trace.rank,
        None if special => None,
        None => trace_discover::find_rank(&path).ok().flatten(),
    };
    let pytorch = claimed.is_some_and(|t| t.kind == trace_discover::TraceKind::Pytorch);
    let rel = short_name(&path);
    (TraceInput::new(path, rel, rank.map(|r| r.rank)), pytorch)
}

/// The traces under `dir` that a run reads: every trace discovery finds
/// (JSON, Perfetto, rocpd databases), but `exclude`. What could not be
/// looked at is added to `left_out`; it, a trace whose sanitized copy is
/// read instead, and what there was where nothing is to be read, are told.
pub(crate) fn searched(
    dir: &Path,
    exclude: &[PathBuf],
    left_out: &mut Vec<trace_discover::Problem>,
    tell: &dyn Fn(RunNote),
) -> Result<Vec<trace_discover::Trace>, trace_discover::Error> {
    let options = trace_discover::Options { exclude: exclude.to_vec(), ..Default::default() };
    let mut found = trace_discover::discover(dir, &options)?;
    for problem in &found.problems {
        tell(RunNote::Unlooked(problem.clone()));
    }
    left_out.append(&mut found.problems);
    // Said, as it may surprise: its copy (or the trace) beside it is read.
    let copies = [trace_discover::SANITIZED_COPY, trace_discover::SANITIZED_ORIGINAL];
    for copy in found.unsupported.iter().filter(|u| copies.contains(&&*u.reason)) {
        tell(RunNote::Skipped(copy.clone()));
    }
    let found = found.with_databases();
    if found.traces.is_empty() {
        tell(RunNote::NothingToRead { dir: dir.to_path_buf(), there: found.unsupported });
        return Ok(vec![]);
    }
    Ok(found.traces)
}

/// What names a trace file's report: the path as given, or for an absolute
/// path its last two components.
fn short_name(path: &Path) -> PathBuf {
    if !path.is_absolute() {
        return path.to_path_buf();
    }
    let mut parts: Vec<_> = path.components().rev().take(2).collect();
    parts.reverse();
    parts.iter().collect()
}

/// A directory's own name, also for `.` and `..`.
fn dir_name(dir: &Path) -> PathBuf {
    dir.file_name()
        .map(PathBuf::from)
        .or_else(|| dir.canonicalize().ok()?.file_name().map(PathBuf::from))
        .unwrap_or_default()
}
