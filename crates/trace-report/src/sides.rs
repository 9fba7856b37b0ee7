//! What each side of a comparison stands for ([`compare_sides`]): a trace,
//! a directory of traces, a report directory, a directory of reports; one
//! profiling cycle of several.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use trace_summary::{Format, Tables};

use crate::{CompareError, CompareEvents, CompareNote, Cycle, CyclePick, Member, Record};

/// What one side of a comparison stands for ([`compare_sides`]).
#[derive(Debug, Clone)]
pub struct Side {
    /// The path given.
    pub path: PathBuf,
    /// Its traces, or report directories, to compare.
    pub members: Vec<Member>,
    /// The profiling cycle kept, of a side of several.
    pub cycle: Option<Cycle>,
    /// What the search of its directory could not look at.
    pub left_out: Vec<trace_discover::Problem>,
}

/// The two sides of a comparison, found ([`compare_sides`]), with the
/// records of the report directories among them.
#[derive(Debug, Clone)]
pub struct Sides {
    /// The baseline, then the new side.
    pub sides: [Side; 2],
    /// The record (`summary.json`) of each report directory that has one.
    pub(crate) records: HashMap<PathBuf, Record>,
}

impl Sides {
    /// Every trace and report directory of both sides.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.sides.iter().flat_map(|s| &s.members).map(|m| m.path.as_path())
    }
}

/// What `baseline` and `new` stand for: a trace; a directory's traces
/// (searched as a run's are); a report directory (its CSVs, read back),
/// which stands for one trace; a directory of reports (a run's, compared
/// rank by rank as its traces would be; of a TraceLens run's, those its
/// summary names). A side of several profiling cycles keeps the one
/// `cycles` picks for it, and without a pick is refused
/// ([`CompareError::SeveralCycles`]).
pub fn compare_sides(
    baseline: &Path,
    new: &Path,
    cycles: [Option<CyclePick>; 2],
    events: &impl CompareEvents,
) -> Result<Sides, CompareError> {
    let paths = [baseline, new];
    // A side that is not there is named before either is looked into.
    for path in paths {
        if let Err(source) = std::fs::metadata(path) {
            return Err(CompareError::Missing { path: path.to_path_buf(), source });
        }
    }
    let mut found = Finder { records: HashMap::new(), made_of: HashMap::new(), events };
    let mut sides = Vec::with_capacity(2);
    for path in paths {
        let mut left_out = Vec::new();
        let members = found.traces_of(path, &mut left_out)?;
        sides.push(Side { path: path.to_path_buf(), members, cycle: None, left_out });
    }
    for (side, pick) in sides.iter_mut().zip(cycles) {
        side.cycle = found.one_cycle(side, pick)?;
    }
    let sides: [Side; 2] = sides.try_into().expect("two sides");
    Ok(Sides { sides, records: found.records })
}

/// What [`compare_sides`] reads as it looks: the report directories'
/// records, and the traces TraceLens' reports were made of.
struct Finder<'a, E> {
    records: HashMap<PathBuf, Record>,
    made_of: HashMap<PathBuf, PathBuf>,
    events: &'a E,
}

impl<E: CompareEvents> Finder<'_, E> {
    /// The report in `dir` as a side's member, with its rank (its record's,
    /// else `rank`), GPU, kind and the trace it was made of (whose
    /// directory is its node's), from its record where it has one.
    fn report(&mut self, dir: &Path, rank: Option<u32>) -> Result<Member, CompareError> {
        let mut member = Member { report: true, ..Member::trace(dir, rank) };
        let Some(recorded) = Record::read(dir)? else { return Ok(member) };
        if let Some(why) = &recorded.stale {
            let why = why.clone();
            self.events.note(CompareNote::StaleReport { dir: dir.to_path_buf(), why });
        }
        let view = &recorded.view;
        member.rank = view.rank.or(rank);
        member.gpu = view.gpu_index;
        member.rocprof = view.format.is_some_and(Format::rocprof_tables);
        member.made_of = (!view.trace.as_os_str().is_empty()).then(|| view.trace.clone());
        self.records.insert(dir.to_path_buf(), recorded);
        Ok(member)
    }

    /// The traces `path` stands for ([`compare_sides`]). What the search of
    /// a directory could not look at is added to `left_out`.
    fn traces_of(
        &mut self,
        path: &Path,
        left_out: &mut Vec<trace_discover::Problem>,
    ) -> Result<Vec<Member>, CompareError> {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xlsx")) {
            return Err(CompareError::Workbook { path: path.to_path_buf() });
        }
        if Tables::is_report_dir(path) {
            return Ok(vec![self.report(path, None)?]);
        }
        if !path.is_dir() {
            let rank = trace_discover::find_rank(path).ok().flatten().map(|r| r.rank);
            return Ok(vec![Member::trace(path, rank)]);
        }
        let tell = |note| self.events.note(CompareNote::Search(note));
        let traces = crate::inputs::searched(path, &[], left_out, &tell)?;
        if !traces.is_empty() {
            return Ok(traces
                .into_iter()
                .map(|t| Member {
                    rocprof: t.kind != trace_discover::TraceKind::Pytorch,
                    ..Member::trace(t.path, t.rank.map(|r| r.rank))
                })
                .collect());
        }
        // A directory of reports (a run summary's, TraceLens'): each is one
        // side's member; name them.
        let mut reports: Vec<PathBuf> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| Tables::is_report_dir(p))
            .collect();
        reports.sort();
        let made_of: HashMap<PathBuf, PathBuf> =
            self.this_runs(path, &mut reports)?.into_iter().collect();
        if reports.is_empty() {
            return Err(CompareError::NothingToCompare { path: path.to_path_buf() });
        }
        // Several reports: a run's, compared rank by rank as its traces
        // would be (ranks as the run summary recorded them, else from the
        // directory names: TraceLens' `rank3_trace_csv`, else from the
        // trace the TraceLens run summary names, where it still is).
        let named = |p: &Path| {
            trace_discover::rank_from_file_name(p.file_name()?.as_encoded_bytes()).or_else(|| {
                let trace = made_of.get(p)?;
                Some(trace_discover::find_rank(trace).ok()??.rank)
            })
        };
        let members = reports.iter().map(|r| self.report(r, named(r))).collect();
        self.made_of.extend(made_of);
        members
    }

    /// Keep of `reports`, the report directories in `dir`, those of the
    /// run its `tracelens_summary.csv` describes, where it has one
    /// ([`crate::this_runs_reports`]); each left out is told. Returns the
    /// trace each report kept was made of, as the summary names it.
    fn this_runs(
        &self,
        dir: &Path,
        reports: &mut Vec<PathBuf>,
    ) -> Result<Vec<(PathBuf, PathBuf)>, CompareError> {
        let Some(run) = crate::this_runs_reports(dir, reports)? else { return Ok(vec![]) };
        for report in &run.left_out {
            let (report, summary) = (report.clone(), run.summary.clone());
            self.events.note(CompareNote::NotThisRuns { report, summary });
        }
        reports.retain(|r| !run.left_out.contains(r));
        Ok(run.kept)
    }

    /// With `pick`, keep of `side`'s members the traces of the profiling
    /// cycle picked ([`crate::keep_cycle`]); which it is, of how many. A
    /// side with a trace per rank (or one trace) is one cycle. Without a
    /// pick, a side of several cycles is refused.
    fn one_cycle(
        &self,
        side: &mut Side,
        pick: Option<CyclePick>,
    ) -> Result<Option<Cycle>, CompareError> {
        // PyTorch traces, by their names; a report by the name of the trace
        // it was made of, as its record says (or TraceLens' run summary).
        // rocprofv3 traces have no cycles.
        let named = |m: &Member| match m.report {
            true => m.made_of.clone().or_else(|| self.made_of.get(&m.path).cloned()),
            false => Some(m.path.clone()),
        };
        let members = &mut side.members;
        let entries: Vec<Option<(PathBuf, Option<u32>)>> =
            members.iter().map(|m| Some((named(m).filter(|_| !m.rocprof)?, m.rank))).collect();
        let Some(pick) = pick else {
            let Ok((_, picked)) = crate::keep_cycle(&entries, CyclePick::Last) else {
                return Ok(None);
            };
            let Some(several) = picked.first() else { return Ok(None) };
            return Err(CompareError::SeveralCycles {
                path: side.path.clone(),
                of: several.cycle.of,
                reports: members.iter().all(|m| m.report),
            });
        };
        let (keep, picked) = crate::keep_cycle(&entries, pick)?;
        let Some(first) = picked.first() else { return Ok(None) };
        let mut keep = keep.into_iter();
        members.retain(|_| keep.next().unwrap_or(true));
        Ok(Some(first.cycle))
    }
}
