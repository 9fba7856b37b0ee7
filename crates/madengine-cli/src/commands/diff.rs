//! `madengine report diff`.

use std::path::{Path, PathBuf};

use trace_report::{CyclePick, Member, PairedBy};
use trace_summary::{Diff, DiffRow, Format, Tables};

use super::summary::{Input, read_all};
use trace_report::TraceView;
use trace_report::write_set;

use super::summary::ViewText;
use crate::{
    cli::DiffArgs,
    error::{Error, Status},
    render,
};

/// One side of the comparison (the baseline, or the new run), as shown.
pub(crate) type Side = trace_report::ComparedSide;

/// One rank (or GPU, [`PairedBy`]) of two runs compared rank by rank.
pub(crate) struct RankDiff {
    /// Its rank or GPU, as [`Compared::by`] says.
    pub(crate) key: u32,
    pub(crate) baseline: PathBuf,
    pub(crate) new: PathBuf,
    /// Its gpu_timeline rows side by side (ms).
    pub(crate) timeline: Vec<DiffRow>,
    /// rocprofv3: its collective kernels' time, side by side (ms,
    /// [`Diff::collective_kernels`]).
    pub(crate) collective_kernels: Option<DiffRow>,
}

/// What `report diff` found.
pub(crate) struct Compared {
    pub(crate) sides: [Side; 2],
    /// Rank by rank, when two runs were compared; else empty.
    pub(crate) ranks: Vec<RankDiff>,
    /// What paired the traces of two runs.
    pub(crate) by: PairedBy,
    /// Rows added up over every pair (one pair: just its rows).
    pub(crate) diff: Diff,
    /// Ranks of one run only, left out.
    pub(crate) unpaired: Vec<String>,
    /// Times and counts are per profiler step (`--per-step`).
    pub(crate) per_step: bool,
    /// Two multi-rank runs of traces: their collectives matched across
    /// ranks, per type, dtype and size, side by side.
    pub(crate) matched: Vec<trace_report::CollectiveDiff>,
}

/// Each side's collective report, when two runs of traces (not reports)
/// were compared rank by rank and both have collective kernels; what
/// stops one is said in a note.
fn matched_collectives(
    views: &[TraceView],
    keys: &[u32],
    reports: &[bool],
    by: PairedBy,
) -> Vec<trace_report::CollectiveDiff> {
    let n = keys.len();
    if n < 2 || by != PairedBy::Rank || reports.iter().any(|r| *r) {
        return vec![];
    }
    let report = |side: &[TraceView], role: &str| {
        let kernels: Vec<trace_report::RankKernels<'_>> = side
            .iter()
            .zip(keys)
            .map(|(v, rank)| trace_report::RankKernels {
                rank: *rank,
                kernels: &v.collective_events,
            })
            .collect();
        match trace_report::collective_report(&kernels, side[0].gpu_devices.filter(|g| *g > 0)) {
            Ok(r) => Some(r),
            Err(trace_report::CollectiveError::NoCollectives) => None,
            Err(e) => {
                render::note(&format!("no collectives matched across the {role} run's ranks: {e}"));
                None
            }
        }
    };
    match (report(&views[..n], "baseline"), report(&views[n..], "new")) {
        (Some(b), Some(nw)) => trace_report::compare_collectives(&b, &nw),
        _ => vec![],
    }
}

/// The one of a run the headline shows: the slowest rank (a job that
/// synchronizes waits for it); the busiest GPU (GPUs that wait for another
/// spend it in collective kernels, which count as busy).
pub(crate) fn headline_one(by: PairedBy) -> &'static str {
    match by {
        PairedBy::Rank => "slowest rank",
        PairedBy::Gpu | PairedBy::NodeGpu => "busiest GPU",
    }
}

impl RankDiff {
    /// Its collective kernels' times, when either side has any.
    pub(crate) fn collectives(&self) -> Option<&DiffRow> {
        self.collective_kernels.as_ref().filter(|c| timed(c))
    }
}

impl Compared {
    /// As `--json` prints it, with the CSVs written, the page, and what the
    /// gates found (the GEMM gate's and the shape gate's shapes).
    fn document(
        &self,
        csvs: &[PathBuf],
        html: Option<&Path>,
        regression: Option<Regression>,
        [gemm_regressions, shape_regressions]: [Vec<ShapeRegression>; 2],
        left_out: &[Vec<trace_discover::Problem>; 2],
    ) -> trace_report::RunComparison {
        use trace_report::{ComparedRank, ComparedRow, ComparedShape};
        let d = &self.diff;
        let ranks = self.ranks.iter().map(|r| ComparedRank {
            baseline: r.baseline.clone(),
            new: r.new.clone(),
            timeline: ComparedRow::all(&r.timeline),
            collective_kernels: r.collective_kernels.as_ref().map(ComparedRow::of),
            ..ComparedRank::keyed(self.by, r.key)
        });
        trace_report::RunComparison {
            baseline: self.sides[0].clone(),
            new: self.sides[1].clone(),
            rocprof: self.rocprof(),
            per_step: self.per_step,
            timeline: ComparedRow::all(&d.timeline),
            ranks: ranks.collect(),
            paired_by: self.by.word().to_ascii_lowercase(),
            unpaired: self.unpaired.clone(),
            kernels: ComparedRow::all(&d.kernels),
            ops: ComparedRow::all(&d.ops),
            op_categories: ComparedRow::all(&d.op_categories),
            kernel_categories: ComparedRow::all(&d.kernel_categories),
            collectives: ComparedRow::all(&d.collectives),
            collectives_matched: self.matched.clone(),
            collective_kernels: d.collective_kernels.as_ref().map(ComparedRow::of),
            gemms: ComparedShape::all(&d.gemms),
            gemm_regressions,
            shape_regressions,
            op_shapes: ComparedShape::all(&d.shapes),
            csvs: csvs.to_vec(),
            html: html.map(Path::to_path_buf),
            regression,
            left_out: trace_report::SidesLeftOut {
                baseline: left_out[0].clone(),
                new: left_out[1].clone(),
            },
            version: trace_report::SUMMARY_VERSION,
        }
    }

    pub(crate) fn rocprof(&self) -> bool {
        self.sides[0].format.rocprof_tables()
    }

    /// The timeline row a headline shows, and its name: GPU time; for
    /// rocprofv3 GPU busy time (its total is the profiling session).
    pub(crate) fn headline(&self) -> (&'static str, &'static str) {
        if self.rocprof() { ("busy_time", "GPU busy") } else { ("total_time", "GPU time") }
    }

    /// The [`Compared::headline`] row of each side: of the one pair, or of
    /// each run's slowest rank (in a run that synchronizes, it sets the
    /// pace; for rocprofv3 runs, the busiest GPU: [`headline_one`]).
    /// `None` where a side lacks the row.
    pub(crate) fn headline_times(&self) -> Option<Headline> {
        let (row, _) = self.headline();
        let time = |rows: &[DiffRow], side: fn(&DiffRow) -> Option<trace_summary::Measure>| {
            rows.iter().find(|r| r.name == row).and_then(side).map(|m| m.time)
        };
        if self.ranks.is_empty() {
            let rows = &self.diff.timeline;
            return Some(Headline {
                base: time(rows, |r| r.base)?,
                new: time(rows, |r| r.new)?,
                ranks: None,
            });
        }
        let slowest = |side: fn(&DiffRow) -> Option<trace_summary::Measure>| {
            self.ranks
                .iter()
                .filter_map(|r| Some((r.key, time(&r.timeline, side)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        };
        let ((br, base), (nr, new)) = (slowest(|r| r.base)?, slowest(|r| r.new)?);
        Some(Headline { base, new, ranks: Some((br, nr)) })
    }

    /// When both sides name their GPUs and the models differ: what that
    /// means for the comparison.
    pub(crate) fn gpus_note(&self) -> Option<String> {
        let [b, n] = &self.sides;
        if b.gpus.is_empty() || n.gpus.is_empty() || b.gpus == n.gpus {
            return None;
        }
        let what = if self.ranks.is_empty() { "trace" } else { "run" };
        Some(format!(
            "the baseline ran on {} and the new {what} on {}: kernels are named per GPU, so \
             compare the timeline, ops and op categories",
            b.gpus.join(", "),
            n.gpus.join(", ")
        ))
    }

    /// When the two sides may not cover the same work: their step counts
    /// differ, or (without steps on both) their kernel launches differ by
    /// more than 10%. None with `--per-step`, which divides each by its
    /// steps.
    pub(crate) fn coverage_note(&self) -> Option<String> {
        if self.per_step {
            return None;
        }
        let [b, n] = &self.sides;
        let what = if self.ranks.is_empty() { "trace" } else { "run" };
        if let (Some(bs), Some(ns)) = (b.steps, n.steps)
            && bs != ns
        {
            return Some(format!(
                "the baseline holds {bs} step(s) per trace and the new {what} {ns}: totals add \
                 up every step; --per-step compares per step"
            ));
        }
        let (bl, nl) = (b.kernel_launches?, n.kernel_launches?);
        let ratio = nl as f64 / bl as f64;
        (bl > 0 && (ratio - 1.0).abs() > 0.1).then(|| {
            format!(
                "the new {what} launched {ratio:.2}x the kernels of the baseline: do they cover \
                 the same steps? Totals add up every step a trace holds"
            )
        })
    }

    /// For two runs, the headline as a sentence: `GPU time of the slowest
    /// rank: 18.467 ms (rank 1) -> 16.589 ms (rank 0) (-10.2%)`, `arrow`
    /// between the two sides.
    pub(crate) fn runs_headline(&self, arrow: &str) -> Option<String> {
        let h = self.headline_times()?;
        let (br, nr) = h.ranks?;
        let (_, what) = self.headline();
        let unit = if self.per_step { "ms per step" } else { "ms" };
        let change = h.ratio().map(|r| format!(" ({:+.1}%)", (r - 1.0) * 100.0));
        Some(format!(
            "{what} of the {}: {:.3} {unit} ({}) {arrow} {:.3} {unit} ({}){}",
            headline_one(self.by),
            h.base,
            self.by.label(br),
            h.new,
            self.by.label(nr),
            change.unwrap_or_default()
        ))
    }

    /// With `--max-regression PCT`: whether the headline grew by more.
    pub(crate) fn regression(&self, limit: Option<f64>) -> Option<Regression> {
        let limit = limit?;
        let h = self.headline_times()?;
        let change = (h.base != 0.0).then(|| (h.new / h.base - 1.0) * 100.0)?;
        Some(Regression { limit_percent: limit, change_percent: change, exceeded: change > limit })
    }
}

/// The time compared first ([`Compared::headline_times`]), in ms (per step
/// with `--per-step`).
pub(crate) struct Headline {
    pub(crate) base: f64,
    pub(crate) new: f64,
    /// The slowest rank (busiest GPU) of each run, when runs were compared.
    pub(crate) ranks: Option<(u32, u32)>,
}

impl Headline {
    /// New over baseline; `None` over a baseline of 0.
    pub(crate) fn ratio(&self) -> Option<f64> {
        (self.base != 0.0).then(|| self.new / self.base)
    }
}

/// The `--max-regression` check.
pub(crate) use trace_report::Regression;

/// What the `--max-regression` check found, of the headline `what`: `GPU
/// time changed +7.2%, more than --max-regression 5%`; of a negative limit
/// (a gain asked for), `GPU time changed -3.0%, not the gain of 5% or more
/// --max-regression -5% asks for`.
pub(crate) fn regression_said(r: &Regression, what: &str) -> String {
    {
        let change = r.change_percent;
        let limit = Shown(r.limit_percent);
        match (r.exceeded, r.limit_percent < 0.0) {
            (true, true) => format!(
                "{what} changed {change:+.1}%, not the gain of {}% or more --max-regression \
                 {limit}% asks for",
                Shown(-r.limit_percent)
            ),
            (true, false) => {
                format!("{what} changed {change:+.1}%, more than --max-regression {limit}%")
            }
            (false, _) => format!("{what} changed {change:+.1}%, within --max-regression {limit}%"),
        }
    }
}

/// A number as a person gave it: `5`, `2.5`, `-5`; a very small or very
/// large one in scientific notation (`1e-320`, not 330 digits).
struct Shown(f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        match x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
            true => write!(f, "{x}"),
            false => write!(f, "{x:e}"),
        }
    }
}

/// A row's ratio as shown: `1.06x`; `new` or `gone` for a name one side
/// lacks; `-` over a baseline of 0.
pub(crate) fn ratio_text(r: &DiffRow) -> String {
    match (r.base, r.new, r.ratio()) {
        (None, _, _) => "new".into(),
        (_, None, _) => "gone".into(),
        (_, _, Some(x)) => format!("{x:.2}x"),
        _ => "-".into(),
    }
}

/// A row's launch or call counts as shown: `16`, or `16{arrow}32` where the
/// sides differ (`-` for a side without the row; one decimal per step).
pub(crate) fn counts_text(r: &DiffRow, arrow: &str) -> String {
    let count = |m: Option<trace_summary::Measure>| match m.and_then(|m| m.count) {
        None => "-".to_string(),
        Some(c) if c.fract() == 0.0 => format!("{c}"),
        Some(c) => format!("{c:.1}"),
    };
    let (b, n) = (count(r.base), count(r.new));
    if b == n { b } else { format!("{b}{arrow}{n}") }
}

/// Whether either side of `row` has a time other than 0.
pub(crate) fn timed(row: &DiffRow) -> bool {
    [row.base, row.new].iter().any(|m| m.is_some_and(|m| m.time != 0.0))
}

/// The records (`summary.json`) of the report directories found, read once
/// while looking for the traces (they give a report's rank) and looked up
/// when the reports are read (their steps and GPUs).
#[derive(Default)]
struct Records(
    std::collections::HashMap<PathBuf, trace_report::Record>,
    /// The trace each TraceLens report was made of, by the
    /// `tracelens_summary.csv` beside it (TraceLens writes no record).
    std::collections::HashMap<PathBuf, PathBuf>,
);

impl Records {
    /// Read the record of the report in `dir`, if it has one: the report
    /// as a side's member, with its rank (else `rank`), GPU, kind and the
    /// trace it was made of (whose directory is its node's).
    fn read(&mut self, dir: &Path, rank: Option<u32>) -> Result<Member, Error> {
        let mut member = Member { report: true, ..Member::trace(dir, rank) };
        let Some(recorded) = trace_report::Record::read(dir)? else { return Ok(member) };
        if let Some(why) = &recorded.stale {
            render::warning(&format!("the report in {} is stale: {why}", dir.display()));
        }
        let view = &recorded.view;
        member.rank = view.rank.or(rank);
        member.gpu = view.gpu_index;
        member.rocprof = view.format.is_some_and(Format::rocprof_tables);
        member.made_of = (!view.trace.as_os_str().is_empty()).then(|| view.trace.clone());
        self.0.insert(dir.to_path_buf(), recorded);
        Ok(member)
    }
}

/// A side's member as `report summary` reads it.
fn input(member: &Member) -> Input {
    Input::new(member.path.clone(), member.path.clone(), member.rank)
}

/// The traces `path` stands for: itself, or a directory's JSON traces; or
/// a report directory (its CSVs), which stands for one trace. What the
/// search of a directory could not look at is added to `left_out`.
fn traces_of(
    path: &Path,
    recorded: &mut Records,
    left_out: &mut Vec<trace_discover::Problem>,
) -> Result<Vec<Member>, Error> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xlsx")) {
        return Err(Error::Usage(format!(
            "{} is an Excel workbook: give the report's CSV directory instead (`report \
             tracelens` writes `<stem>_csv/` beside each workbook; `report summary` writes \
             CSVs only), or the trace",
            path.display()
        )));
    }
    if Tables::is_report_dir(path) {
        return Ok(vec![recorded.read(path, None)?]);
    }
    if !path.is_dir() {
        let rank = trace_discover::find_rank(path).ok().flatten().map(|r| r.rank);
        return Ok(vec![Member::trace(path, rank)]);
    }
    let traces = super::summary_traces(path, vec![], left_out)?;
    if traces.is_empty() {
        // A directory of reports (`report summary`'s output, TraceLens'):
        // each is one side; name them.
        let mut reports: Vec<PathBuf> = std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| Tables::is_report_dir(p))
            .collect();
        reports.sort();
        let made_of: std::collections::HashMap<PathBuf, PathBuf> =
            this_runs(path, &mut reports)?.into_iter().collect();
        if reports.is_empty() {
            return Err(Error::Usage(format!(
                "{} holds no PyTorch or rocprofv3 trace (JSON, rocpd database or Perfetto trace), nor \
                 a report, to compare",
                path.display()
            )));
        }
        // Several reports: a run's, compared rank by rank as its traces
        // would be (ranks as `report summary` recorded them, else from the
        // directory names: TraceLens' `rank3_trace_csv`, else from the
        // trace `report tracelens`' summary names, where it still is).
        let named = |p: &Path| {
            trace_discover::rank_from_file_name(p.file_name()?.as_encoded_bytes()).or_else(|| {
                let trace = made_of.get(p)?;
                Some(trace_discover::find_rank(trace).ok()??.rank)
            })
        };
        let members = reports.into_iter().map(|r| recorded.read(&r, named(&r))).collect();
        recorded.1.extend(made_of);
        return members;
    }
    Ok(traces
        .into_iter()
        .map(|t| Member {
            rocprof: t.kind != trace_discover::TraceKind::Pytorch,
            ..Member::trace(t.path, t.rank.map(|r| r.rank))
        })
        .collect())
}

/// With `--cycle`, keep of `members`, the traces of the side given as
/// `path`, those of the profiling cycle picked, as `report summary --cycle`
/// picks it ([`trace_report::pick_cycle`]); say which it is, of how
/// many. A side with a trace per rank (or one trace) is one cycle. Without
/// `--cycle`, a side of several cycles is refused with how to pick one.
fn one_cycle(
    path: &Path,
    members: &mut Vec<Member>,
    pick: Option<CyclePick>,
    recorded: &Records,
) -> Result<Option<trace_report::Cycle>, Error> {
    // PyTorch traces, by their names; a report by the name of the trace it
    // was made of, as `report summary` recorded it (or `report tracelens`'
    // summary names it). rocprofv3 traces have no cycles.
    let named = |m: &Member| match m.report {
        true => m.made_of.clone().or_else(|| recorded.1.get(&m.path).cloned()),
        false => Some(m.path.clone()),
    };
    let entries: Vec<Option<(PathBuf, Option<u32>)>> =
        members.iter().map(|m| Some((named(m).filter(|_| !m.rocprof)?, m.rank))).collect();
    let Some(pick) = pick else {
        let Ok((_, picked)) = trace_report::keep_cycle(&entries, CyclePick::Last) else {
            return Ok(None);
        };
        let Some(several) = picked.first() else { return Ok(None) };
        let what = match members.iter().all(|m| m.report) {
            true => "the traces its reports were made of",
            false => "its traces",
        };
        let of = several.cycle.of;
        return Err(Error::Usage(format!(
            "{} holds {of} of torch.profiler's profiling cycles (told apart by the time \
             tensorboard_trace_handler put in the names of {what}): runs are compared one cycle \
             at a time; pick one with --cycle N (1 to {of}) or --cycle last, or one for each side \
             (--cycle 1,last)",
            path.display()
        )));
    };
    let (keep, picked) = trace_report::keep_cycle(&entries, pick).map_err(cycle_error)?;
    let Some(first) = picked.first() else { return Ok(None) };
    let mut keep = keep.into_iter();
    members.retain(|_| keep.next().unwrap_or(true));
    Ok(Some(first.cycle))
}

fn cycle_error(e: trace_report::CycleError) -> Error {
    Error::Usage(e.to_string())
}

/// Keep of `reports`, the report directories in `dir`, those of the run
/// its `tracelens_summary.csv` describes, where it has one
/// ([`tracelens_driver::this_runs_reports`]); each left out is named.
/// Returns the trace each report kept was made of, as the summary names it.
fn this_runs(dir: &Path, reports: &mut Vec<PathBuf>) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let Some(run) = tracelens_driver::this_runs_reports(dir, reports)? else { return Ok(vec![]) };
    for report in &run.left_out {
        render::note(&format!(
            "left out {}: {} does not name it (a report an earlier run left there)",
            report.display(),
            run.summary.display()
        ));
    }
    reports.retain(|r| !run.left_out.contains(r));
    Ok(run.kept)
}

/// Kernel launches in all, from the kernel rows (of a diff not per step).
fn launches(rows: &[DiffRow], side: fn(&DiffRow) -> Option<trace_summary::Measure>) -> Option<u64> {
    (!rows.is_empty()).then(|| rows.iter().filter_map(|r| side(r)?.count).sum::<f64>() as u64)
}

pub(crate) fn diff(args: &DiffArgs) -> Result<Status, Error> {
    // Set up first: looking for the traces opens them.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let paths = [args.baseline.as_path(), args.new.as_path()];
    // Where it writes is checked before any trace is read, not after.
    if let Some(dir) = &args.output_dir {
        super::check_output(dir, true)?;
    }
    if let Some(html) = &args.html {
        super::check_output(html, false)?;
    }
    let mut recorded = Records::default();
    // A side that is not there is named before either is looked into.
    for path in paths {
        if let Err(err) = std::fs::metadata(path) {
            return Err(Error::Read { path: path.to_path_buf(), detail: err.to_string() });
        }
    }
    let mut left_out = [Vec::new(), Vec::new()];
    let mut found = [
        traces_of(paths[0], &mut recorded, &mut left_out[0])?,
        traces_of(paths[1], &mut recorded, &mut left_out[1])?,
    ];
    let cycles = [
        one_cycle(paths[0], &mut found[0], args.cycle.map(|c| c.0[0]), &recorded)?,
        one_cycle(paths[1], &mut found[1], args.cycle.map(|c| c.0[1]), &recorded)?,
    ];
    if let Some(html) = &args.html {
        let inputs = found.iter().flatten().map(|m| m.path.as_path());
        super::check_not_an_input(html, paths.into_iter().chain(inputs))?;
    }
    let mut by = trace_report::paired_by([&found[0], &found[1]]);
    let mut interrupt = Some(interrupt);
    // rocprofv3 runs pair by the GPU each trace ran its kernels on, which
    // only reading them tells: every trace is read first (once).
    let mut read_first: std::collections::HashMap<PathBuf, super::summary::Read> =
        Default::default();
    if by == PairedBy::Gpu {
        let interrupt = interrupt.take().expect("the guard is set up once");
        read_first = match read_for_gpus(interrupt, &mut found, args) {
            Ok(read) => read,
            Err(status) => return Ok(status),
        };
        if let Some(nodes) = trace_report::by_node(&mut found) {
            by = PairedBy::NodeGpu;
            render::note(&nodes.to_string());
        }
    }
    let pairing = trace_report::pair(paths, [&found[0], &found[1]], by)
        .map_err(|e| Error::Usage(e.to_string()))?;
    let pairs = pairing.pairs;
    let unpaired: Vec<String> = pairing.unpaired.iter().map(ToString::to_string).collect();
    for note in &unpaired {
        render::note(&format!("{note}: left out"));
    }
    // Only the traces paired are read: baselines first, then the new ones.
    let paired: Vec<&Member> = (pairs.iter().map(|p| &found[0][p.1]))
        .chain(pairs.iter().map(|p| &found[1][p.2]))
        .collect();
    // Report directories are read back; traces are read as `report summary` does.
    let reports: Vec<bool> = paired.iter().map(|m| m.report).collect();
    let inputs: Vec<Input> = paired.iter().map(|m| input(m)).collect();
    let traces: Vec<Input> = paired.iter().filter(|m| !m.report).map(|m| input(m)).collect();
    let results = match interrupt {
        Some(interrupt) => match read_traces(interrupt, &traces, args) {
            Some(results) => results,
            None => return Ok(Status::Interrupted),
        },
        None => traces
            .iter()
            .map(|i| read_first.get(&i.trace).cloned().expect("every trace was read first"))
            .collect(),
    };
    let n = pairs.len();
    let Some((views, tables)) = read_sides(&inputs, &reports, results, n, &recorded) else {
        return Ok(Status::Io);
    };
    let (base, new) = tables.split_at(n);
    for (i, (b, nw)) in base.iter().zip(new).enumerate() {
        if b.rocprof != nw.rocprof {
            let kind = |k: usize, t: &Tables| match (reports[k], t.rocprof) {
                (false, true) => "a rocprofv3 JSON trace",
                (false, false) => "a PyTorch (Kineto) trace",
                (true, true) => "a report of rocprofv3 tables",
                (true, false) => "a report of PyTorch tables",
            };
            return Err(Error::Usage(format!(
                "the baseline {} is {} and the new {} is {}: their tables differ; compare \
                 traces of one kind",
                inputs[i].trace.display(),
                kind(i, b),
                inputs[n + i].trace.display(),
                kind(n + i, nw)
            )));
        }
    }
    let pairs_of: Vec<(&Tables, &Tables)> = base.iter().zip(new).collect();
    let totals = Diff::summed(&pairs_of);
    let between = |pair: &[(&Tables, &Tables)]| match args.per_step {
        true => Diff::per_step(pair),
        false => Some(Diff::summed(pair)),
    };
    let Some(diff) = between(&pairs_of) else {
        let unknown: Vec<&Path> = inputs
            .iter()
            .zip(&tables)
            .filter(|(_, t)| t.steps.is_none())
            .map(|(i, _)| i.trace.as_path())
            .collect();
        return Err(Error::Usage(format!(
            "--per-step: the steps of {} are not known (a trace without ProfilerStep# or \
             Optimizer.step# annotations, or a TraceLens report: it does not record them)",
            trace_report::list_paths(&unknown)
        )));
    };
    let ranks: Vec<RankDiff> = match n {
        1 => vec![],
        _ => pairs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let d = between(&pairs_of[i..=i]).unwrap_or_default();
                RankDiff {
                    key: p.0.unwrap_or_default(),
                    baseline: inputs[i].trace.clone(),
                    new: inputs[n + i].trace.clone(),
                    timeline: d.timeline,
                    collective_kernels: d.collective_kernels,
                }
            })
            .collect(),
    };
    let side = |k: usize, role, measure| {
        let at = k * n..(k + 1) * n;
        let of = Of { role, path: paths[k], cycle: cycles[k], n };
        let launches = launches(&totals.kernels, measure);
        side_of(of, &views[at.clone()], &tables[at.clone()], &reports[at], launches)
    };
    let sides = [side(0, "baseline", |r| r.base), side(1, "new", |r| r.new)];
    let keys: Vec<u32> = pairs.iter().map(|p| p.0.unwrap_or_default()).collect();
    let matched = match args.per_step {
        // Per step, the report's totals would not be.
        true => vec![],
        false => matched_collectives(&views, &keys, &reports, by),
    };
    let compared = Compared { sides, ranks, by, diff, unpaired, per_step: args.per_step, matched };
    report(args, &compared, &left_out)
}

/// The comparison's outputs (`-o` CSVs, `--html`, `--json` or the
/// terminal) and its gates (`--max-regression`, the shape gates).
fn report(
    args: &DiffArgs,
    compared: &Compared,
    left_out: &[Vec<trace_discover::Problem>; 2],
) -> Result<Status, Error> {
    let regression = compared.regression(args.max_regression);
    let gemm_regressions = shape_regressions(compared.diff.gemms.iter(), args.max_gemm_regression);
    let d = &compared.diff;
    let shape_regressions =
        shape_regressions(d.gemms.iter().chain(&d.shapes), args.max_shape_regression);
    if args.max_regression.is_some() && regression.is_none() {
        let (_, what) = compared.headline();
        return Err(Error::Usage(format!(
            "--max-regression: the baseline has no {what} to compare with (a timeline without \
             it, or of 0 ms)"
        )));
    }
    let written = match &args.output_dir {
        Some(dir) => write_csvs(dir, compared)?,
        None => vec![],
    };
    if let Some(html) = &args.html {
        crate::html::write_diff(html, compared, args.top, regression.as_ref())?;
    }
    if args.json {
        let found = [gemm_regressions.clone(), shape_regressions.clone()];
        render::json(&compared.document(
            &written,
            args.html.as_deref(),
            regression,
            found,
            left_out,
        ))?;
    } else {
        render::diff(compared, args.top, &written, args.html.as_deref())?;
    }
    let mut status = Status::Success;
    if let Some(r) = regression {
        let said = regression_said(&r, compared.headline().1);
        if r.exceeded {
            render::error_line(&said);
            status = Status::Findings;
        } else {
            render::note(&said);
        }
    }
    let d = &compared.diff;
    let rated = |rows: &[trace_summary::GemmDiffRow]| rows.iter().any(|g| g.change_pct().is_some());
    let gates = [
        Gate {
            what: "GEMM",
            flag: "--max-gemm-regression",
            // GEMM shapes are named by their dims alone.
            prefix: "GEMM ",
            sheets: "GEMM.csv",
            limit: args.max_gemm_regression,
            found: &gemm_regressions,
            rated: rated(&d.gemms),
        },
        Gate {
            what: "op",
            flag: "--max-shape-regression",
            prefix: "",
            sheets: "GEMM.csv, the SDPA and CONV sheets",
            limit: args.max_shape_regression,
            found: &shape_regressions,
            rated: rated(&d.gemms) || rated(&d.shapes),
        },
    ];
    for gate in gates {
        if gate.said() {
            status = Status::Findings;
        }
    }
    Ok(status)
}

/// `traces` read as `report summary` reads them (no roofline: a diff
/// compares rates), with progress unless `--json`; `None` if interrupted.
fn read_traces(
    interrupt: crate::interrupt::Guard,
    traces: &[Input],
    args: &DiffArgs,
) -> Option<Vec<super::summary::Read>> {
    let arch = trace_summary::ArchChoice::None;
    read_all(interrupt, traces, args.jobs, args.salvage, &arch, !args.json, &|_, r| r)
}

/// rocprofv3 runs pair by the GPU each trace ran its kernels on, which
/// only reading them tells: every trace of both sides read (once), each
/// member given its GPU. `Err` with the status to exit with when the read
/// was interrupted or a trace could not be read (each failure said).
fn read_for_gpus(
    interrupt: crate::interrupt::Guard,
    found: &mut [Vec<Member>; 2],
    args: &DiffArgs,
) -> Result<std::collections::HashMap<PathBuf, super::summary::Read>, Status> {
    let mut seen = std::collections::HashSet::new();
    let traces: Vec<Input> = found
        .iter()
        .flatten()
        .filter(|m| !m.report && seen.insert(m.path.clone()))
        .map(input)
        .collect();
    let Some(results) = read_traces(interrupt, &traces, args) else {
        return Err(Status::Interrupted);
    };
    let mut read_first = std::collections::HashMap::new();
    let mut failed = false;
    for (input, result) in traces.iter().zip(results) {
        if let Err(err) = &result {
            render::error_line(&format!("cannot read {}: {err}", input.trace.display()));
            failed = true;
        }
        read_first.insert(input.trace.clone(), result);
    }
    if failed {
        return Err(Status::Io);
    }
    for member in found.iter_mut().flatten() {
        if let Some(Ok(summary)) = read_first.get(&member.path) {
            member.gpu = summary.gpu_index;
        }
    }
    Ok(read_first)
}

/// Each paired input's view and tables, baselines first: a report
/// directory read back (its record's GPUs with it), a trace from its
/// `results` (in order). `None`, each failure said, when one could not be
/// read or has no GPU activity.
fn read_sides(
    inputs: &[Input],
    reports: &[bool],
    results: Vec<super::summary::Read>,
    n: usize,
    recorded: &Records,
) -> Option<(Vec<TraceView>, Vec<Tables>)> {
    let mut results = results.into_iter();
    let role = |i: usize| if i < n { "baseline" } else { "new" };
    let mut failed = false;
    let mut views = Vec::new();
    let mut tables = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let mut view = TraceView::new(input.trace.clone(), input.rank);
        if reports[i] {
            // (A directory given as both sides is looked up twice.)
            let recorded = recorded.0.get(&input.trace).map(|r| &r.view);
            if let Some(recorded) = recorded {
                view.gpus.clone_from(&recorded.gpus);
                view.gpu_index = recorded.gpu_index;
            }
            let read = Tables::read_dir(&input.trace);
            match read {
                Ok(mut read) => {
                    // The steps its CSVs cover, which its record keeps.
                    read.steps = recorded.and_then(|r| r.steps);
                    view.format =
                        Some(if read.rocprof { Format::Rocprofv3 } else { Format::Kineto });
                    tables.push(read);
                }
                Err(err) => {
                    let err = super::summary::chain(&err);
                    render::error_line(&format!("cannot read the {} report: {err}", role(i)));
                    failed = true;
                }
            }
            views.push(view);
            continue;
        }
        match results.next().expect("a result per trace") {
            Ok(summary) => {
                view.read(&summary);
                if summary.gpu_timeline.is_none() {
                    let why = view.note().unwrap_or_default();
                    let why = why.trim_end_matches(": nothing to summarize");
                    render::error_line(&format!(
                        "the {} trace {} has no GPU activity to compare: {why}",
                        role(i),
                        input.trace.display()
                    ));
                    failed = true;
                }
                if let Some(warning) = view.warning() {
                    render::warning(&format!("{}: {warning}", input.trace.display()));
                }
                tables.push(Tables::from(&summary));
            }
            Err(err) => {
                render::error_line(&format!("cannot read the {} trace: {err}", role(i)));
                failed = true;
            }
        }
        views.push(view);
    }
    (!failed).then_some((views, tables))
}

/// What names a side: its role, the PATH given, its cycle, the pairs.
struct Of<'a> {
    role: &'static str,
    path: &'a Path,
    cycle: Option<trace_report::Cycle>,
    n: usize,
}

/// A side of `of.n` pairs: its traces' views, tables and whether each is a
/// report read back; its notes, each said once (a note every trace shares
/// without a trace's name).
fn side_of(
    of: Of<'_>,
    mine: &[TraceView],
    tables: &[Tables],
    reports: &[bool],
    kernel_launches: Option<u64>,
) -> Side {
    let mut notes: Vec<String> = Vec::new();
    for v in mine {
        let said = [v.repaired_note(), v.note().map(|n| n.into_owned())];
        for note in said.into_iter().flatten() {
            let all = mine.iter().all(|o| o.note().is_some_and(|n| n == note));
            let note =
                if all || of.n == 1 { note } else { format!("{}: {note}", v.trace.display()) };
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    let steps: Vec<Option<usize>> = tables.iter().map(|t| t.steps).collect();
    Side {
        role: of.role.into(),
        path: of.path.to_path_buf(),
        traces: mine.iter().map(|v| v.trace.clone()).collect(),
        cycle: of.cycle,
        report: reports.iter().any(|r| *r),
        format: if tables[0].rocprof { Format::Rocprofv3 } else { Format::Kineto },
        kernel_launches,
        steps: steps.iter().all(|s| *s == steps[0]).then_some(steps[0]).flatten(),
        gpus: mine.iter().flat_map(|v| &v.gpus).fold(Vec::new(), |mut all, gpu| {
            if !all.contains(gpu) {
                all.push(gpu.clone());
            }
            all
        }),
        notes,
    }
}

/// A gate on the shapes' TFLOPS/s (`--max-gemm-regression`,
/// `--max-shape-regression`), with the shapes found past its limit.
struct Gate<'a> {
    /// The shapes it is over, as the notes name them (`GEMM`, `op`).
    what: &'static str,
    flag: &'static str,
    /// Before each offending shape's name.
    prefix: &'static str,
    /// Where its shapes come from, for the note when none had a rate.
    sheets: &'static str,
    limit: Option<f64>,
    found: &'a [ShapeRegression],
    /// Whether a shape of both sides had a rate.
    rated: bool,
}

impl Gate<'_> {
    /// Say which shapes lost more than the limit (or that none did, or
    /// that no shape of both sides had a rate), when the gate is set:
    /// whether any did.
    fn said(&self) -> bool {
        let Gate { what, flag, prefix, sheets, limit, found, rated } = self;
        let Some(limit) = limit else { return false };
        for g in found.iter() {
            render::error_line(&format!(
                "{prefix}{} lost {:.1}% of its TFLOPS/s ({:.1} -> {:.1}), more than {flag} \
                 {limit}%",
                g.shape, -g.change_pct, g.baseline_tflops, g.new_tflops
            ));
        }
        match (found.is_empty(), rated) {
            (true, true) => render::note(&format!(
                "every {what} shape of both sides kept its TFLOPS/s within {flag} {limit}%"
            )),
            (true, false) => render::note(&format!(
                "{flag}: no {what} shape is in both sides with a rate ({sheets}: PyTorch traces \
                 recorded with record_shapes)"
            )),
            (false, _) => {}
        }
        !found.is_empty()
    }
}

use trace_report::ShapeRegression;

/// The shapes of `rows` (both sides') that lost more than `limit` % of
/// their TFLOPS/s (none without a limit), the most first.
fn shape_regressions<'a>(
    rows: impl Iterator<Item = &'a trace_summary::GemmDiffRow>,
    limit: Option<f64>,
) -> Vec<ShapeRegression> {
    let Some(limit) = limit else { return vec![] };
    let mut out: Vec<ShapeRegression> = rows
        .filter_map(|g| {
            let change = g.change_pct()?;
            (-change > limit).then(|| ShapeRegression {
                shape: g.row.name.clone(),
                baseline_tflops: g.tflops(g.row.base).unwrap_or(0.0),
                new_tflops: g.tflops(g.row.new).unwrap_or(0.0),
                change_pct: change,
            })
        })
        .collect();
    out.sort_by(|a, b| a.change_pct.total_cmp(&b.change_pct));
    out
}

/// Every row as CSVs in `dir`: `gpu_timeline_diff.csv` (per rank, with a
/// `rank` column, when runs were compared), `kernel_diff.csv`,
/// `ops_diff.csv`, `op_category_diff.csv`, `kernel_category_diff.csv` and
/// `collective_diff.csv` (added up over the ranks), and
/// for rocprofv3 traces with collective kernels
/// `collective_kernels_diff.csv` (per GPU as the timeline). Tables without
/// rows are not written, and their files from an earlier diff into `dir`
/// are removed.
fn write_csvs(dir: &Path, compared: &Compared) -> Result<Vec<PathBuf>, Error> {
    let d = &compared.diff;
    // Of two runs, a table per rank (or GPU), one after the other, with a
    // first column saying whose rows they are.
    let per_rank = |whole: trace_summary::Table, of: &dyn Fn(&RankDiff) -> trace_summary::Table| {
        if compared.ranks.is_empty() {
            return whole;
        }
        let mut table = trace_summary::Table::new(&[], vec![]);
        for r in &compared.ranks {
            let key = match compared.by {
                PairedBy::NodeGpu => trace_summary::Cell::Str(compared.by.value(r.key)),
                _ => trace_summary::Cell::Int(i64::from(r.key)),
            };
            let mut t = of(r);
            for row in &mut t.rows {
                row.insert(0, key.clone());
            }
            table.rows.extend(t.rows);
        }
        table.header = std::iter::once(compared.by.column().to_ascii_lowercase())
            .chain(whole.header)
            .collect();
        table
    };
    let timeline = per_rank(d.timeline_table(), &|r| {
        Diff { timeline: r.timeline.clone(), ..Default::default() }.timeline_table()
    });
    // rocprofv3 runs with collective kernels: their time, GPU by GPU.
    let comm = match d.collective_kernels.as_ref().is_some_and(timed) {
        true => per_rank(d.collective_kernels_table(), &|r| {
            Diff { collective_kernels: r.collective_kernels.clone(), ..Default::default() }
                .collective_kernels_table()
        }),
        false => trace_summary::Table::new(&[], vec![]),
    };
    let tables = [
        ("gpu_timeline_diff.csv", timeline),
        ("kernel_diff.csv", d.kernels_table()),
        ("ops_diff.csv", d.ops_table()),
        ("op_category_diff.csv", d.op_categories_table()),
        ("kernel_category_diff.csv", d.kernel_categories_table()),
        ("collective_diff.csv", d.collectives_table()),
        ("gemm_diff.csv", d.gemms_table()),
        ("shape_diff.csv", d.shapes_table()),
        ("collective_kernels_diff.csv", comm),
    ];
    let ours: Vec<&str> = tables.iter().map(|(name, _)| *name).collect();
    let files: Vec<(String, Vec<u8>)> = tables
        .iter()
        .filter(|(_, table)| !table.rows.is_empty())
        .map(|(name, table)| (name.to_string(), table.to_csv().into_bytes()))
        .collect();
    write_set(dir, &ours, &files)?;
    Ok(files.iter().map(|(name, _)| dir.join(name)).collect())
}
