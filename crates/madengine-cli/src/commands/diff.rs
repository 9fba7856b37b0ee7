//! `madengine report diff`: settings, then [`trace_report::compare`], then
//! its outputs and gates.

use std::{path::PathBuf, sync::Mutex};

use trace_report::{CompareError, CompareNote, Comparison, ShapeRegression, TraceView};

use crate::render::ViewText;
use crate::{
    cli::DiffArgs,
    error::{Error, Status},
    render,
};

pub(crate) fn diff(args: &DiffArgs) -> Result<Status, Error> {
    // Set up first: looking for the traces opens them.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    // Where it writes is checked before any trace is read, not after.
    if let Some(dir) = &args.output_dir {
        super::check_output(dir, true)?;
    }
    if let Some(html) = &args.html {
        super::check_output(html, false)?;
    }
    let events = Events { show: !args.json, salvage: args.salvage, reading: Mutex::new(None) };
    let cycles = [args.cycle.map(|c| c.0[0]), args.cycle.map(|c| c.0[1])];
    let sides = trace_report::compare_sides(&args.baseline, &args.new, cycles, &events)
        .map_err(compare_error)?;
    if let Some(html) = &args.html {
        let given = [args.baseline.as_path(), args.new.as_path()];
        super::check_not_an_input(html, given.into_iter().chain(sides.paths()))?;
    }
    let traces: Vec<super::summary::Input> = sides
        .sides
        .iter()
        .flat_map(|s| &s.members)
        .filter(|m| !m.report)
        .map(|m| super::summary::Input::new(m.path.clone(), m.path.clone(), m.rank))
        .collect();
    let options = match args.salvage {
        true => trace_summary::Options::salvaging(),
        false => trace_summary::Options::default(),
    };
    let config = trace_report::CompareConfig {
        per_step: args.per_step,
        jobs: super::summary::jobs(args.jobs, &traces),
        options: options.cancelled_by(interrupt.flag()),
        ..trace_report::CompareConfig::new(sides)
    };
    let compared = match trace_report::compare(&config, &events) {
        Ok(Some(compared)) => compared,
        Ok(None) => {
            render::error_line("interrupted while reading the traces: nothing was written");
            return Ok(Status::Interrupted);
        }
        // Each trace that could not be read was said as it was found.
        Err(CompareError::Unreadable { .. }) => return Ok(Status::Io),
        Err(e) => return Err(compare_error(e)),
    };
    drop(interrupt);
    report(args, &compared)
}

/// A comparison's error as the CLI says it: with the flags that change it.
fn compare_error(e: CompareError) -> Error {
    match e {
        CompareError::Missing { path, source } => Error::Read { path, detail: source.to_string() },
        CompareError::Workbook { path } => Error::Usage(format!(
            "{} is an Excel workbook: give the report's CSV directory instead (`report \
             tracelens` writes `<stem>_csv/` beside each workbook; `report summary` writes \
             CSVs only), or the trace",
            path.display()
        )),
        CompareError::SeveralCycles { of, .. } => Error::Usage(format!(
            "{e}; pick one with --cycle N (1 to {of}) or --cycle last, or one for each side \
             (--cycle 1,last)"
        )),
        CompareError::StepsUnknown { .. } => Error::Usage(format!("--per-step: {e}")),
        CompareError::Discover(e) => Error::Discover(e),
        CompareError::Record(e) => Error::Record(e),
        CompareError::RunSummary(e) => Error::Tracelens(e.into()),
        CompareError::Unreadable { .. }
        | CompareError::NothingToCompare { .. }
        | CompareError::Cycle(_)
        | CompareError::Pair(_)
        | CompareError::KindsDiffer { .. } => Error::Usage(e.to_string()),
    }
}

/// Where `report diff` reports as it reads: a progress bar naming the
/// traces being read (unless `--json`), notes, warnings and errors on
/// stderr.
struct Events {
    show: bool,
    salvage: bool,
    reading: Mutex<Option<Reading>>,
}

/// Traces being read: the bar, the traces it names, and those being read.
struct Reading {
    bar: render::Progress,
    traces: Vec<PathBuf>,
    running: Vec<usize>,
}

impl trace_report::CompareEvents for Events {
    fn reading(&self, traces: &[PathBuf]) {
        let bar = render::Progress::new(
            traces.len() as u64,
            "{spinner} read {pos}/{len} traces [{elapsed}] {wide_msg}",
            self.show && !traces.is_empty(),
        );
        *self.reading.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Reading { bar, traces: traces.to_vec(), running: vec![] });
    }

    fn progress(&self, progress: trace_summary::Progress) {
        let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Reading { bar, traces, running }) = reading.as_mut() else { return };
        match progress {
            trace_summary::Progress::Started(i) => running.push(i),
            trace_summary::Progress::Done(i) => {
                running.retain(|r| *r != i);
                if let Some(bar) = bar.bar() {
                    bar.inc(1);
                }
            }
        }
        if let Some(bar) = bar.bar() {
            let names: Vec<String> =
                running.iter().map(|r| traces[*r].display().to_string()).collect();
            bar.set_message(names.join(", "));
        }
    }

    fn read(&self) {
        self.reading.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn note(&self, note: CompareNote) {
        compare_note(note);
    }

    fn failure(&self, failed: trace_summary::Failed) -> String {
        super::summary::failed(failed, self.salvage)
    }

    fn side_notes(&self, view: &TraceView) -> Vec<String> {
        [view.repaired_note(), view.note().map(|n| n.into_owned())].into_iter().flatten().collect()
    }
}

/// What a comparison tells as it goes, said.
fn compare_note(note: CompareNote) {
    match note {
        CompareNote::Search(note) => render::run_note(note),
        CompareNote::StaleReport { dir, why } => {
            render::warning(&format!("the report in {} is stale: {why}", dir.display()));
        }
        CompareNote::NotThisRuns { report, summary } => render::note(&format!(
            "left out {}: {} does not name it (a report an earlier run left there)",
            report.display(),
            summary.display()
        )),
        CompareNote::Nodes(nodes) => render::note(&nodes.to_string()),
        CompareNote::Unpaired(left) => render::note(&format!("{left}: left out")),
        CompareNote::Unreadable { trace, error } => {
            render::error_line(&format!("cannot read {}: {error}", trace.display()));
        }
        CompareNote::SideUnreadable { role, report, error } => {
            let what = if report { "report" } else { "trace" };
            render::error_line(&format!("cannot read the {role} {what}: {error}"));
        }
        CompareNote::NoGpuActivity { role, view } => {
            let why = view.note().unwrap_or_default();
            let why = why.trim_end_matches(": nothing to summarize");
            render::error_line(&format!(
                "the {role} trace {} has no GPU activity to compare: {why}",
                view.trace.display()
            ));
        }
        CompareNote::Read { view } => {
            if let Some(warning) = view.warning() {
                render::warning(&format!("{}: {warning}", view.trace.display()));
            }
        }
        CompareNote::NoCollectivesMatched { role, error } => {
            render::note(&format!("no collectives matched across the {role} run's ranks: {error}"))
        }
    }
}

/// The comparison's outputs (`-o` CSVs, `--html`, `--json` or the
/// terminal) and its gates (`--max-regression`, the shape gates).
fn report(args: &DiffArgs, compared: &Comparison) -> Result<Status, Error> {
    let regression = args.max_regression.and_then(|limit| compared.regression(limit));
    let gemm_regressions =
        args.max_gemm_regression.map_or(vec![], |limit| compared.shape_regressions(limit, false));
    let shape_regressions =
        args.max_shape_regression.map_or(vec![], |limit| compared.shape_regressions(limit, true));
    if args.max_regression.is_some() && regression.is_none() {
        let (_, what) = compared.headline();
        return Err(Error::Usage(format!(
            "--max-regression: the baseline has no {what} to compare with (a timeline without \
             it, or of 0 ms)"
        )));
    }
    let written = match &args.output_dir {
        Some(dir) => compared.write_csvs(dir)?,
        None => vec![],
    };
    if let Some(html) = &args.html {
        crate::html::write_diff(html, compared, args.top, regression.as_ref())?;
    }
    if args.json {
        let found = [gemm_regressions.clone(), shape_regressions.clone()];
        render::json_as_is(&compared.document(&written, args.html.as_deref(), regression, found))?;
    } else {
        render::diff(compared, args.top, &written, args.html.as_deref())?;
    }
    let mut status = Status::Success;
    if let Some(r) = regression {
        let said = render::diff::regression_said(&r, compared.headline().1);
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
