//! `madengine report diff`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use trace_summary::{Diff, DiffRow, Format, Tables};
use tracelens_driver::CyclePick;

use super::summary::{Input, Recorded, TraceView, read_all, write_set};
use crate::{
    cli::DiffArgs,
    error::{Error, Status},
    render,
};

/// One side of the comparison (the baseline, or the new run), as shown.
#[derive(Serialize)]
pub(crate) struct Side {
    /// "baseline" or "new".
    pub(crate) role: &'static str,
    /// The PATH given.
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) path: PathBuf,
    /// The traces compared, in rank order (or the report directory).
    #[serde(serialize_with = "trace_discover::lossy::paths")]
    pub(crate) traces: Vec<PathBuf>,
    /// The profiling cycle compared (`--cycle`), of a directory of several.
    pub(crate) cycle: Option<tracelens_driver::Cycle>,
    /// A report read back (its CSVs), not a trace.
    pub(crate) report: bool,
    pub(crate) format: Format,
    /// Kernel launches in all (when the traces have kernel tables).
    pub(crate) kernel_launches: Option<u64>,
    /// Steps per trace (`ProfilerStep#` annotations, else optimizer
    /// steps: [`trace_summary::Steps`]), when every trace of the side has
    /// the same known number.
    pub(crate) steps: Option<usize>,
    /// The GPU models its traces name, each once.
    pub(crate) gpus: Vec<String>,
    /// What the reader should know about how its traces were read, each
    /// once, with the trace it is about.
    pub(crate) notes: Vec<String>,
}

/// One rank (or GPU, [`By`]) of two runs compared rank by rank.
#[derive(Serialize)]
pub(crate) struct RankDiff {
    /// Its rank or GPU, as [`Compared::by`] says (in `--json`:
    /// [`RankDiff::json`]).
    #[serde(skip)]
    pub(crate) key: u32,
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) baseline: PathBuf,
    #[serde(serialize_with = "trace_discover::lossy::path")]
    pub(crate) new: PathBuf,
    /// Its gpu_timeline rows side by side (ms).
    #[serde(serialize_with = "rows")]
    pub(crate) timeline: Vec<DiffRow>,
    /// rocprofv3: its collective kernels' time, side by side (ms,
    /// [`Diff::collective_kernels`]).
    #[serde(serialize_with = "one_row", skip_serializing_if = "Option::is_none")]
    pub(crate) collective_kernels: Option<DiffRow>,
}

/// What `report diff` found.
pub(crate) struct Compared {
    pub(crate) sides: [Side; 2],
    /// Rank by rank, when two runs were compared; else empty.
    pub(crate) ranks: Vec<RankDiff>,
    /// What paired the traces of two runs.
    pub(crate) by: By,
    /// Rows added up over every pair (one pair: just its rows).
    pub(crate) diff: Diff,
    /// Ranks of one run only, left out.
    pub(crate) unpaired: Vec<String>,
    /// Times and counts are per profiler step (`--per-step`).
    pub(crate) per_step: bool,
}

/// What pairs the traces of two runs: their ranks; or, for rocprofv3 runs
/// (a file per process, no rank written), the GPU each process ran its
/// kernels on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum By {
    Rank,
    Gpu,
    /// GPU by GPU, node by node: rocprofv3 runs whose processes are in
    /// several directories (one per node, `<hostname>/`), the directories
    /// paired as [`by_node`] says. Keys are `node << 16 | gpu` ([`By::label`]).
    NodeGpu,
}

impl By {
    pub(crate) fn word(self) -> &'static str {
        match self {
            By::Rank => "rank",
            By::Gpu | By::NodeGpu => "GPU",
        }
    }

    /// A key as a sentence names it: `rank 3`, `GPU 3`, `node 1 GPU 3`.
    pub(crate) fn label(self, key: u32) -> String {
        match self {
            By::Rank => format!("rank {key}"),
            By::Gpu => format!("GPU {key}"),
            By::NodeGpu => format!("node {} GPU {}", key >> 16, key & 0xffff),
        }
    }

    /// A key as a table shows it: `3`, or `1:3` (node 1, GPU 3).
    pub(crate) fn value(self, key: u32) -> String {
        match self {
            By::NodeGpu => format!("{}:{}", key >> 16, key & 0xffff),
            _ => key.to_string(),
        }
    }

    pub(crate) fn plural(self) -> &'static str {
        match self {
            By::Rank => "ranks",
            By::Gpu | By::NodeGpu => "GPUs",
        }
    }

    /// The one of a run the headline shows: the slowest rank (a job that
    /// synchronizes waits for it); the busiest GPU (GPUs that wait for
    /// another spend it in collective kernels, which count as busy).
    pub(crate) fn headline_one(self) -> &'static str {
        match self {
            By::Rank => "slowest rank",
            By::Gpu | By::NodeGpu => "busiest GPU",
        }
    }

    /// A table's column for it.
    pub(crate) fn column(self) -> &'static str {
        match self {
            By::Rank => "RANK",
            By::Gpu => "GPU",
            By::NodeGpu => "NODE:GPU",
        }
    }

    /// A key as `--json` gives it: `{"rank": 3}`, `{"gpu": 3}`, `{"node":
    /// 1, "gpu": 3}`.
    fn fields(self, key: u32) -> Vec<(&'static str, u32)> {
        match self {
            By::Rank => vec![("rank", key)],
            By::Gpu => vec![("gpu", key)],
            By::NodeGpu => vec![("node", key >> 16), ("gpu", key & 0xffff)],
        }
    }

    fn key(self, input: &Input) -> Option<u32> {
        match self {
            By::Rank => input.rank,
            By::Gpu | By::NodeGpu => input.gpu,
        }
    }

    /// Why a trace has no key, in a note.
    fn without(self) -> &'static str {
        match self {
            By::Rank => {
                "without a rank (from its name, a trace's distributedInfo, or a report's \
                 summary.json)"
            }
            By::Gpu | By::NodeGpu => "whose kernels ran on no single GPU",
        }
    }
}

impl RankDiff {
    /// Its collective kernels' times, when either side has any.
    pub(crate) fn collectives(&self) -> Option<&DiffRow> {
        self.collective_kernels.as_ref().filter(|c| timed(c))
    }

    /// As `--json` lists it: its key's fields ([`By::fields`]), then the rest.
    fn json(&self, by: By) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        for (name, value) in by.fields(self.key) {
            object.insert(name.into(), value.into());
        }
        if let serde_json::Value::Object(rest) =
            serde_json::to_value(self).expect("a pair serializes")
        {
            object.extend(rest);
        }
        serde_json::Value::Object(object)
    }
}

impl Compared {
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
    /// pace; for rocprofv3 runs, the busiest GPU: [`By::headline_one`]).
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
            self.by.headline_one(),
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
#[derive(Serialize)]
pub(crate) struct Regression {
    pub(crate) limit_percent: f64,
    pub(crate) change_percent: f64,
    pub(crate) exceeded: bool,
}

impl Regression {
    /// What the check found, of the headline `what`: `GPU time changed
    /// +7.2%, more than --max-regression 5%`.
    pub(crate) fn said(&self, what: &str) -> String {
        let within = if self.exceeded { "more than" } else { "within" };
        format!(
            "{what} changed {:+.1}%, {within} --max-regression {}%",
            self.change_percent, self.limit_percent
        )
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

/// A row as `--json` prints it: with its delta and ratio.
#[derive(Serialize)]
struct JsonRow<'a> {
    #[serde(flatten)]
    row: &'a DiffRow,
    delta: f64,
    ratio: Option<f64>,
}

impl<'a> JsonRow<'a> {
    fn of(row: &'a DiffRow) -> JsonRow<'a> {
        JsonRow { row, delta: row.delta(), ratio: row.ratio() }
    }
}

/// Rows as `--json` prints them.
struct Rows<'a>(&'a [DiffRow]);

impl Serialize for Rows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(JsonRow::of))
    }
}

fn rows<S: serde::Serializer>(rows: &[DiffRow], s: S) -> Result<S::Ok, S::Error> {
    Rows(rows).serialize(s)
}

/// An optional row as [`Rows`] writes one (with its delta and ratio).
fn one_row<S: serde::Serializer>(row: &Option<DiffRow>, s: S) -> Result<S::Ok, S::Error> {
    row.as_ref().map(JsonRow::of).serialize(s)
}

fn list(paths: &[&Path]) -> String {
    const NAMED: usize = 4;
    let mut names: Vec<String> =
        paths.iter().take(NAMED).map(|p| p.display().to_string()).collect();
    if paths.len() > NAMED {
        names.push(format!("and {} more", paths.len() - NAMED));
    }
    names.join(", ")
}

/// The records (`summary.json`) of the report directories found, read once
/// while looking for the traces (they give a report's rank) and looked up
/// when the reports are read (their steps and GPUs).
#[derive(Default)]
struct Records(
    std::collections::HashMap<PathBuf, Recorded>,
    /// The trace each TraceLens report was made of, by the
    /// `tracelens_summary.csv` beside it (TraceLens writes no record).
    std::collections::HashMap<PathBuf, PathBuf>,
);

impl Records {
    /// Read the record of the report in `dir`, if it has one: the report
    /// as an input, with its rank (else `rank`), GPU and kind.
    fn read(&mut self, dir: &Path, rank: Option<u32>) -> Result<Input, Error> {
        let mut input = Input::new(dir.to_path_buf(), dir.to_path_buf(), rank);
        let Some(recorded) = Recorded::of(dir)? else { return Ok(input) };
        input.rank = recorded.rank.or(rank);
        input.gpu = recorded.gpu_index;
        input.rocprof = recorded.format.is_some_and(Format::rocprof_tables);
        self.0.insert(dir.to_path_buf(), recorded);
        Ok(input)
    }
}

/// The traces `path` stands for: itself, or a directory's JSON traces; or
/// a report directory (its CSVs), which stands for one trace. What the
/// search of a directory could not look at is added to `left_out`.
fn traces_of(
    path: &Path,
    recorded: &mut Records,
    left_out: &mut Vec<trace_discover::Problem>,
) -> Result<Vec<Input>, Error> {
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
        return Ok(vec![Input::new(path.to_path_buf(), path.to_path_buf(), rank)]);
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
        let inputs = reports.into_iter().map(|r| recorded.read(&r, named(&r))).collect();
        recorded.1.extend(made_of);
        return inputs;
    }
    Ok(traces
        .into_iter()
        .map(|t| Input {
            rocprof: t.kind != trace_discover::TraceKind::Pytorch,
            ..Input::new(t.path.clone(), t.path, t.rank.map(|r| r.rank))
        })
        .collect())
}

/// With `--cycle`, keep of `inputs`, the traces of the side given as
/// `path`, those of the profiling cycle picked, as `report summary --cycle`
/// picks it ([`tracelens_driver::pick_cycle`]); say which it is, of how
/// many. A side with a trace per rank (or one trace) is one cycle. Without
/// `--cycle`, a side of several cycles is refused with how to pick one.
fn one_cycle(
    path: &Path,
    inputs: &mut Vec<Input>,
    pick: Option<CyclePick>,
    recorded: &Records,
) -> Result<Option<tracelens_driver::Cycle>, Error> {
    // PyTorch traces, by their names; a report by the name of the trace it
    // was made of, as `report summary` recorded it (or `report tracelens`'
    // summary names it). rocprofv3 traces have no cycles.
    let named = |i: &Input| match Tables::is_report_dir(&i.trace) {
        true => recorded
            .0
            .get(&i.trace)
            .and_then(|r| r.trace.clone())
            .or_else(|| recorded.1.get(&i.trace).cloned()),
        false => Some(i.trace.clone()),
    };
    let entries: Vec<Option<(PathBuf, Option<u32>)>> =
        inputs.iter().map(|i| Some((named(i).filter(|_| !i.rocprof)?, i.rank))).collect();
    let Some(pick) = pick else {
        let Ok((_, picked)) = tracelens_driver::keep_cycle(&entries, CyclePick::Last) else {
            return Ok(None);
        };
        let Some(several) = picked.first() else { return Ok(None) };
        let what = match inputs.iter().all(|i| Tables::is_report_dir(&i.trace)) {
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
    let (keep, picked) = tracelens_driver::keep_cycle(&entries, pick).map_err(cycle_error)?;
    let Some(first) = picked.first() else { return Ok(None) };
    let mut keep = keep.into_iter();
    inputs.retain(|_| keep.next().unwrap_or(true));
    Ok(Some(first.cycle))
}

fn cycle_error(e: tracelens_driver::CycleError) -> Error {
    Error::Usage(e.to_string())
}

/// Keep of `reports`, the report directories in `dir`, those of the run
/// its `tracelens_summary.csv` describes, where it has one: `report
/// tracelens` never removes the reports an earlier run left (of a trace gone
/// since, a rank the run no longer has), and they would be compared as this
/// run's. Each left out is named. A summary whose `SUCCESS` rows name none
/// of them (the original analyzer's names the output directory) keeps all.
/// Returns the trace each report kept was made of, as the summary names it
/// (under the root its `tracelens_summary.json` names, where it does).
fn this_runs(dir: &Path, reports: &mut Vec<PathBuf>) -> Result<Vec<(PathBuf, PathBuf)>, Error> {
    let summary = dir.join(tracelens_driver::SUMMARY_CSV);
    if !summary.is_file() {
        return Ok(vec![]);
    }
    let rows = tracelens_driver::read_csv(&summary)?;
    let root: Option<PathBuf> = std::fs::read(dir.join(tracelens_driver::SUMMARY_JSON))
        .ok()
        .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
        .and_then(|json| Some(PathBuf::from(json["root"].as_str()?)));
    let named: std::collections::HashMap<&std::ffi::OsStr, &str> = rows
        .iter()
        .filter(|r| r.status == tracelens_driver::Status::Success)
        .filter_map(|r| Some((Path::new(&r.output).file_name()?, r.trace_file.as_str())))
        .collect();
    let listed = |report: &PathBuf| report.file_name().is_some_and(|n| named.contains_key(n));
    if !reports.iter().any(listed) {
        return Ok(vec![]);
    }
    reports.retain(|report| {
        let keep = listed(report);
        if !keep {
            render::note(&format!(
                "left out {}: {} does not name it (a report an earlier run left there)",
                report.display(),
                summary.display()
            ));
        }
        keep
    });
    let under_root = |trace: &str| match &root {
        Some(root) => root.join(trace),
        None => PathBuf::from(trace),
    };
    Ok(reports
        .iter()
        .filter_map(|r| Some((r.clone(), under_root(named.get(r.file_name()?)?))))
        .collect())
}

/// The pairs to compare, `(rank or GPU, baseline index, new index)`, and
/// the ranks (GPUs) only one run has: one trace each, or two runs rank by
/// rank (GPU by GPU, [`By`]).
type Pairs = (Vec<(Option<u32>, usize, usize)>, Vec<String>);

fn pair(paths: [&Path; 2], sides: [&[Input]; 2], by: By) -> Result<Pairs, Error> {
    // What a side holds, in words: traces, or reports (read back).
    let what = |i: usize| match sides[i].iter().all(|input| Tables::is_report_dir(&input.trace)) {
        true => ("reports", "report"),
        false => ("traces", "trace"),
    };
    let word = by.word();
    match sides.map(<[Input]>::len) {
        [1, 1] => return Ok((vec![(None, 0, 0)], vec![])),
        [1, _] | [_, 1] => {
            let (many, n) =
                if sides[0].len() > 1 { (0, sides[0].len()) } else { (1, sides[1].len()) };
            let traces: Vec<&Path> = sides[many].iter().map(|i| i.trace.as_path()).collect();
            let (these, this) = what(many);
            return Err(Error::Usage(format!(
                "{} holds {n} {these} ({}) and {} one: name the {this} to compare, or give two \
                 runs to compare rank by rank",
                paths[many].display(),
                list(&traces),
                paths[1 - many].display()
            )));
        }
        _ => {}
    }
    let mut by_key = [std::collections::BTreeMap::new(), std::collections::BTreeMap::new()];
    let mut keyless: Vec<&Path> = Vec::new();
    for (i, inputs) in sides.iter().enumerate() {
        let (these, _) = what(i);
        if inputs.iter().all(|input| by.key(input).is_none()) {
            let why = match by {
                By::Rank => {
                    "none has a rank (from its name, a trace's distributedInfo, or a report's \
                     summary.json)"
                }
                By::Gpu | By::NodeGpu => "none has a rank, nor ran its kernels on one GPU alone",
            };
            // rocprofv3's Perfetto traces name their GPU only when asked to.
            let perfetto = by != By::Rank
                && inputs.iter().any(|i| {
                    let name = i.trace.to_string_lossy();
                    name.ends_with(".pftrace") || name.ends_with(".pftrace.gz")
                });
            let why = match perfetto {
                true => format!(
                    "{why} (rocprofv3's Perfetto traces name their GPU only when it ran with \
                     --agent-index type-relative)"
                ),
                false => why.to_string(),
            };
            return Err(Error::Usage(format!(
                "{} holds {} {these} and {why}: runs are compared rank by rank (rocprofv3 runs \
                 GPU by GPU); name the two to compare",
                paths[i].display(),
                inputs.len()
            )));
        }
        for (at, input) in inputs.iter().enumerate() {
            // A trace without a rank beside ranked ones: a launcher's, say.
            let Some(key) = by.key(input) else {
                keyless.push(&input.trace);
                continue;
            };
            let clash = by_key[i].insert(key, at).map(|before| (key, before));
            if let Some((key, before)) = clash {
                return Err(Error::Usage(format!(
                    "{} holds two {these} of {} ({} and {}): runs are compared {word} by \
                     {word}; give the directory of one run, or name the two to compare",
                    paths[i].display(),
                    by.label(key),
                    inputs[before].trace.display(),
                    input.trace.display()
                )));
            }
        }
    }
    let [base, new] = by_key;
    let pairs: Vec<_> =
        base.iter().filter_map(|(key, b)| Some((Some(*key), *b, *new.get(key)?))).collect();
    let only = |mine: &std::collections::BTreeMap<u32, usize>,
                other: &std::collections::BTreeMap<u32, usize>,
                role: &str| {
        let keys: Vec<u32> = mine.keys().filter(|r| !other.contains_key(r)).copied().collect();
        let said = match by {
            By::NodeGpu => keys.iter().map(|k| by.label(*k)).collect::<Vec<_>>(),
            _ => keys.iter().map(u32::to_string).collect(),
        };
        let said = match by {
            By::NodeGpu => said.join(", "),
            _ => format!("{word} {}", said.join(", ")),
        };
        (!keys.is_empty()).then(|| format!("{said} only in the {role} run"))
    };
    let mut unpaired: Vec<String> =
        [only(&base, &new, "baseline"), only(&new, &base, "new")].into_iter().flatten().collect();
    if pairs.is_empty() {
        return Err(Error::Usage(format!(
            "{} and {} share no {word} ({}): nothing to compare {word} by {word}",
            paths[0].display(),
            paths[1].display(),
            unpaired.join("; ")
        )));
    }
    if !keyless.is_empty() {
        unpaired.push(format!(
            "{} {}: {}",
            match keyless.len() {
                1 => "1 trace".to_string(),
                n => format!("{n} traces"),
            },
            by.without(),
            list(&keyless)
        ));
    }
    Ok((pairs, unpaired))
}

/// How two runs are paired: GPU by GPU when neither has a rank and each
/// holds several rocprofv3 traces (or kept reports of them); else rank by
/// rank.
fn paired_by(sides: &[Vec<Input>; 2]) -> By {
    let rocprof_run = |side: &[Input]| {
        side.len() > 1 && side.iter().all(|i| i.rank.is_none() && (i.rocprof || i.gpu.is_some()))
    };
    if sides.iter().all(|side| rocprof_run(side)) { By::Gpu } else { By::Rank }
}

/// For rocprofv3 runs whose GPU-keyed traces are in several directories
/// (a node each, `<hostname>/`) on either side: key each by its node too
/// (`node << 16 | gpu`), and say which pair. Nodes pair by directory name
/// (`node_N` as gathered, or the same hosts) when every node of one run has
/// its name in the other; else the directories of a side are numbered in
/// natural order (`node_2` before `node_10`). A kept report's node is its
/// trace's directory, as `report summary` recorded it.
fn by_node(found: &mut [Vec<Input>; 2], recorded: &Records) -> Option<String> {
    let dir_of = |input: &Input| -> PathBuf {
        let trace = recorded.0.get(&input.trace).and_then(|r| r.trace.clone());
        let trace = trace.unwrap_or_else(|| input.trace.clone());
        trace.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let dirs: [Vec<PathBuf>; 2] = [0, 1].map(|side| {
        let mut dirs: Vec<PathBuf> =
            found[side].iter().filter(|i| i.gpu.is_some()).map(dir_of).collect();
        dirs.sort_by_key(|d| natural(d));
        dirs.dedup();
        dirs
    });
    if dirs.iter().all(|d| d.len() < 2) {
        return None;
    }
    // Each run's nodes by name, when one run's names are all in the other:
    // the same node of both runs then pairs, wherever a node is missing.
    let names = node_names(&dirs);
    let shared = names.as_ref().filter(|[a, b]| {
        let unique = |names: &Vec<String>| {
            names.iter().collect::<std::collections::HashSet<_>>().len() == names.len()
        };
        let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        unique(a) && unique(b) && small.iter().all(|n| large.contains(n))
    });
    let keys: Vec<String> = match shared {
        Some([a, b]) => {
            let mut all: Vec<String> = a.iter().chain(b).cloned().collect();
            all.sort_by_key(|n| natural(Path::new(n)));
            all.dedup();
            all
        }
        None => Vec::new(),
    };
    // The node number of each directory, per side.
    let node_of = |side: usize, dir: &Path| -> Option<usize> {
        let at = dirs[side].iter().position(|d| d == dir)?;
        match shared {
            Some(names) => keys.iter().position(|k| *k == names[side][at]),
            None => Some(at),
        }
    };
    for (side, inputs) in found.iter_mut().enumerate() {
        for input in inputs.iter_mut() {
            if let (Some(gpu), Some(node)) = (input.gpu, node_of(side, &dir_of(input))) {
                input.gpu = Some((node as u32) << 16 | gpu.min(0xffff));
            }
        }
    }
    let nodes = if shared.is_some() { keys.len() } else { dirs[0].len().max(dirs[1].len()) };
    let pairs: Vec<String> = (0..nodes)
        .map(|n| {
            let at = |side: usize| {
                let dir = dirs[side].iter().find(|d| node_of(side, d) == Some(n));
                dir.map_or("-".to_string(), |d| d.display().to_string())
            };
            format!("node {n}: {} and {}", at(0), at(1))
        })
        .collect();
    let how = if shared.is_some() {
        "the nodes paired by the name of their directories"
    } else {
        "the nodes in order of their directories"
    };
    Some(format!(
        "the traces are in a directory per node: compared GPU by GPU within each node, {how} ({})",
        pairs.join("; ")
    ))
}

/// Each node directory's name: the first part of its path below what all of
/// its run's node directories share (`node_3` of `run/node_3/host`). A run
/// with one node directory takes as many parts from its end as the other
/// run's names are deep. `None` when that cannot be told.
fn node_names(dirs: &[Vec<PathBuf>; 2]) -> Option<[Vec<String>; 2]> {
    let parts_of = |d: &Path| -> Vec<String> {
        d.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect()
    };
    let below = |dirs: &[PathBuf]| -> Option<Vec<Vec<String>>> {
        let parts: Vec<Vec<String>> = dirs.iter().map(|d| parts_of(d)).collect();
        let first = parts.first()?;
        let common = (0..first.len())
            .take_while(|&i| parts.iter().all(|p| p.get(i) == Some(&first[i])))
            .count();
        Some(parts.into_iter().map(|p| p[common..].to_vec()).collect())
    };
    let mut rel = [below(&dirs[0])?, below(&dirs[1])?];
    let depth = |rel: &Vec<Vec<String>>| rel.iter().map(Vec::len).max().unwrap_or(0);
    for side in 0..2 {
        if dirs[side].len() == 1 && dirs[1 - side].len() > 1 {
            let depth = depth(&rel[1 - side]);
            let parts = parts_of(&dirs[side][0]);
            rel[side] = vec![parts[parts.len().saturating_sub(depth)..].to_vec()];
        }
    }
    let names = rel.map(|side| side.into_iter().map(|p| p.first().cloned()).collect());
    let [Some(a), Some(b)]: [Option<Vec<String>>; 2] = names else { return None };
    Some([a, b])
}

/// A path's text with its runs of digits compared as numbers (`node_2`
/// before `node_10`).
fn natural(path: &Path) -> Vec<(String, u128)> {
    let text = path.to_string_lossy();
    let mut parts = Vec::new();
    let mut rest = text.as_ref();
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits > 0 {
            parts.push((String::new(), rest[..digits].parse().unwrap_or(u128::MAX)));
            rest = &rest[digits..];
        } else {
            let text = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
            parts.push((rest[..text].to_string(), 0));
            rest = &rest[text..];
        }
    }
    parts
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
    let mut by = paired_by(&found);
    let mut interrupt = Some(interrupt);
    // rocprofv3 runs pair by the GPU each trace ran its kernels on, which
    // only reading them tells: every trace is read first (once).
    let mut read_first: std::collections::HashMap<PathBuf, super::summary::Read> =
        Default::default();
    if by == By::Gpu {
        let mut seen = std::collections::HashSet::new();
        let traces: Vec<Input> = found
            .iter()
            .flatten()
            .filter(|i| !Tables::is_report_dir(&i.trace) && seen.insert(i.trace.clone()))
            .cloned()
            .collect();
        let interrupt = interrupt.take().expect("the guard is set up once");
        let Some(results) = read_all(interrupt, &traces, args.jobs, args.salvage, !args.json)
        else {
            return Ok(Status::Interrupted);
        };
        let mut failed = false;
        for (input, result) in traces.iter().zip(results) {
            if let Err(err) = &result {
                render::error_line(&format!("cannot read {}: {err}", input.trace.display()));
                failed = true;
            }
            read_first.insert(input.trace.clone(), result);
        }
        if failed {
            return Ok(Status::Io);
        }
        for input in found.iter_mut().flatten() {
            if let Some(Ok(summary)) = read_first.get(&input.trace) {
                input.gpu = summary.gpu_index;
            }
        }
        if let Some(note) = by_node(&mut found, &recorded) {
            by = By::NodeGpu;
            render::note(&note);
        }
    }
    let (pairs, unpaired) = pair(paths, [&found[0], &found[1]], by)?;
    for note in &unpaired {
        render::note(&format!("{note}: left out"));
    }
    // Only the traces paired are read: baselines first, then the new ones.
    let [mut base_in, mut new_in] =
        found.map(|inputs| inputs.into_iter().map(Some).collect::<Vec<_>>());
    let mut inputs: Vec<Input> =
        pairs.iter().map(|p| base_in[p.1].take().expect("each trace pairs once")).collect();
    inputs.extend(pairs.iter().map(|p| new_in[p.2].take().expect("each trace pairs once")));
    // Report directories are read back; traces are read as `report summary` does.
    let reports: Vec<bool> = inputs.iter().map(|i| Tables::is_report_dir(&i.trace)).collect();
    let traces: Vec<Input> = inputs
        .iter()
        .zip(&reports)
        .filter(|(_, report)| !**report)
        .map(|(i, _)| i.clone())
        .collect();
    let results = match interrupt {
        Some(interrupt) => {
            match read_all(interrupt, &traces, args.jobs, args.salvage, !args.json) {
                Some(results) => results,
                None => return Ok(Status::Interrupted),
            }
        }
        None => traces
            .iter()
            .map(|i| read_first.get(&i.trace).cloned().expect("every trace was read first"))
            .collect(),
    };
    let mut results = results.into_iter();
    let n = pairs.len();
    let role = |i: usize| if i < n { "baseline" } else { "new" };
    let mut failed = false;
    let mut views = Vec::new();
    let mut tables = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let mut view = TraceView::new(input.trace.clone(), input.rank);
        if reports[i] {
            let read = Tables::read_dir(&input.trace).map(|mut t| {
                // (A directory given as both sides is looked up twice.)
                if let Some(recorded) = recorded.0.get(&input.trace) {
                    t.steps = recorded.steps;
                    view.gpus.clone_from(&recorded.gpus);
                    view.gpu_index = recorded.gpu_index;
                }
                t
            });
            match read {
                Ok(read) => {
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
    if failed {
        return Ok(Status::Io);
    }
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
            list(&unknown)
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
    let side =
        |k: usize, role: &'static str, side: fn(&DiffRow) -> Option<trace_summary::Measure>| {
            let mine = &views[k * n..(k + 1) * n];
            let mut notes: Vec<String> = Vec::new();
            for v in mine {
                let said = [v.repaired_note(), v.note().map(|n| n.into_owned())];
                for note in said.into_iter().flatten() {
                    // A note every trace shares is said once, without a name.
                    let all = mine.iter().all(|o| o.note().is_some_and(|n| n == note));
                    let note =
                        if all || n == 1 { note } else { format!("{}: {note}", v.trace.display()) };
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                }
            }
            Side {
                role,
                path: paths[k].to_path_buf(),
                traces: mine.iter().map(|v| v.trace.clone()).collect(),
                cycle: cycles[k],
                report: reports[k * n..(k + 1) * n].iter().any(|r| *r),
                format: if tables[k * n].rocprof { Format::Rocprofv3 } else { Format::Kineto },
                kernel_launches: launches(&totals.kernels, side),
                steps: {
                    let steps: Vec<Option<usize>> =
                        tables[k * n..(k + 1) * n].iter().map(|t| t.steps).collect();
                    steps.iter().all(|s| *s == steps[0]).then_some(steps[0]).flatten()
                },
                gpus: mine.iter().flat_map(|v| &v.gpus).fold(Vec::new(), |mut all, gpu| {
                    if !all.contains(gpu) {
                        all.push(gpu.clone());
                    }
                    all
                }),
                notes,
            }
        };
    let sides = [side(0, "baseline", |r| r.base), side(1, "new", |r| r.new)];
    let compared = Compared { sides, ranks, by, diff, unpaired, per_step: args.per_step };
    let regression = compared.regression(args.max_regression);
    if args.max_regression.is_some() && regression.is_none() {
        let (_, what) = compared.headline();
        return Err(Error::Usage(format!(
            "--max-regression: the baseline has no {what} to compare with (a timeline without \
             it, or of 0 ms)"
        )));
    }
    let written = match &args.output_dir {
        Some(dir) => write_csvs(dir, &compared)?,
        None => vec![],
    };
    if let Some(html) = &args.html {
        crate::html::write_diff(html, &compared, args.top, regression.as_ref())?;
    }
    if args.json {
        let rocprof = compared.rocprof();
        let d = &compared.diff;
        render::json(&serde_json::json!({
            "baseline": compared.sides[0],
            "new": compared.sides[1],
            "rocprof": rocprof,
            "per_step": compared.per_step,
            "timeline": Rows(&d.timeline),
            "ranks": compared.ranks.iter().map(|r| r.json(compared.by)).collect::<Vec<_>>(),
            // What paired the runs' traces: "rank", or "gpu" (rocprofv3).
            "paired_by": compared.by.word().to_ascii_lowercase(),
            "unpaired": compared.unpaired,
            "kernels": Rows(&d.kernels),
            "ops": Rows(&d.ops),
            "op_categories": Rows(&d.op_categories),
            "kernel_categories": Rows(&d.kernel_categories),
            "collectives": Rows(&d.collectives),
            // rocprofv3: the COMM kernels' time (ms), all ranks or GPUs.
            "collective_kernels": d.collective_kernels.as_ref().map(JsonRow::of),
            "csvs": written.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            "html": args.html.as_deref().map(Path::to_string_lossy),
            "regression": regression,
            // What each side's search could not look at (warned about).
            "left_out": {"baseline": left_out[0], "new": left_out[1]},
        }))?;
    } else {
        render::diff(&compared, args.top, &written, args.html.as_deref())?;
    }
    let Some(r) = regression else { return Ok(Status::Success) };
    let said = r.said(compared.headline().1);
    if r.exceeded {
        render::error_line(&said);
        return Ok(Status::Findings);
    }
    render::note(&said);
    Ok(Status::Success)
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
                By::NodeGpu => trace_summary::Cell::Str(compared.by.value(r.key)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn input(trace: &str, rank: Option<u32>) -> Input {
        Input::new(trace.into(), trace.into(), rank)
    }

    #[test]
    fn runs_pair_by_rank_and_say_which_ranks_one_of_them_lacks() {
        let paths = [Path::new("base"), Path::new("new")];
        let base =
            [input("base/r1", Some(1)), input("base/r0", Some(0)), input("base/r2", Some(2))];
        let new = [input("new/r0", Some(0)), input("new/r1", Some(1)), input("new/r3", Some(3))];
        let (pairs, unpaired) = pair(paths, [&base, &new], By::Rank).unwrap();
        assert_eq!(pairs, [(Some(0), 1, 0), (Some(1), 0, 1)]);
        assert_eq!(unpaired, ["rank 2 only in the baseline run", "rank 3 only in the new run"]);
        // A trace without a rank beside ranked ones (a launcher's) is left out, and named.
        let new = [input("new/r0", Some(0)), input("new/launcher", None), input("new/r2", Some(2))];
        let (pairs, unpaired) = pair(paths, [&base, &new], By::Rank).unwrap();
        assert_eq!(pairs, [(Some(0), 1, 0), (Some(2), 2, 2)]);
        assert_eq!(
            unpaired,
            [
                "rank 1 only in the baseline run",
                "1 trace without a rank (from its name, a trace's distributedInfo, or a report's \
                 summary.json): new/launcher"
            ]
        );
        // One trace each: compared whatever their ranks.
        let (pairs, _) = pair(paths, [&base[..1], &new[..1]], By::Rank).unwrap();
        assert_eq!(pairs, [(None, 0, 0)]);
    }

    #[test]
    fn what_cannot_pair_is_a_usage_error_naming_the_traces() {
        let paths = [Path::new("base"), Path::new("new")];
        let err = |base: &[Input], new: &[Input]| match pair(paths, [base, new], By::Rank) {
            Err(Error::Usage(text)) => text,
            other => panic!("not a usage error: {:?}", other.map(|p| p.0)),
        };
        let two = [input("base/a", Some(0)), input("base/b", Some(1))];
        let text = err(&two, &[input("new/x", Some(0))]);
        assert!(
            text.starts_with("base holds 2 traces (base/a, base/b) and new one: name the trace"),
            "{text}"
        );
        let text = err(&two, &[input("new/x", None), input("new/y", None)]);
        assert!(text.contains("new holds 2 traces and none has a rank"), "{text}");
        let text = err(&two, &[input("new/x", Some(0)), input("new/y", Some(0))]);
        assert!(text.contains("two traces of rank 0 (new/x and new/y)"), "{text}");
        let text = err(&two, &[input("new/x", Some(5)), input("new/y", Some(6))]);
        assert!(text.contains("share no rank"), "{text}");
    }

    #[test]
    fn rocprofv3_runs_pair_gpu_by_gpu() {
        let on = |trace: &str, gpu: Option<u32>| Input {
            gpu,
            rocprof: true,
            ..Input::new(trace.into(), trace.into(), None)
        };
        let base = vec![on("base/7", Some(1)), on("base/8", Some(0)), on("base/9", None)];
        let new = vec![on("new/3", Some(0)), on("new/4", Some(2)), on("new/5", Some(1))];
        // Decided before the traces are read (it is what reading them is for).
        let unread = |side: &[Input]| -> Vec<Input> {
            side.iter().map(|i| Input { gpu: None, ..i.clone() }).collect()
        };
        let sides = [unread(&base), unread(&new)];
        assert_eq!(paired_by(&sides), By::Gpu);
        let paths = [Path::new("base"), Path::new("new")];
        let (pairs, unpaired) = pair(paths, [&base, &new], By::Gpu).unwrap();
        assert_eq!(pairs, [(Some(0), 1, 0), (Some(1), 0, 2)]);
        assert_eq!(
            unpaired,
            ["GPU 2 only in the new run", "1 trace whose kernels ran on no single GPU: base/9"]
        );
        // A ranked trace, or a PyTorch one, on either side: rank by rank.
        let kineto = vec![input("new/a", None), input("new/b", None)];
        assert_eq!(paired_by(&[base.clone(), kineto]), By::Rank);
        let ranked = vec![on("new/a", None), Input { rank: Some(1), ..on("new/b", None) }];
        assert_eq!(paired_by(&[base.clone(), ranked]), By::Rank);
        // One trace each needs no pairing.
        assert_eq!(paired_by(&[base[..1].to_vec(), new[..1].to_vec()]), By::Rank);
        let twice = [on("new/x", Some(1)), on("new/y", Some(1))];
        let Err(Error::Usage(text)) = pair(paths, [&base, &twice], By::Gpu) else { panic!() };
        assert!(text.contains("two traces of GPU 1 (new/x and new/y)"), "{text}");
        assert!(text.contains("compared GPU by GPU"), "{text}");
    }
}
