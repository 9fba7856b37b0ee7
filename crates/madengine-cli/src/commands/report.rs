//! `madengine report tracelens` and `report tracelens-compare`.

use tracelens_driver::{CompareConfig, Event, Status as RowStatus};

use crate::{
    cli::{CompareArgs, TracelensArgs},
    error::{Error, Status},
    render, settings,
};

pub(crate) fn tracelens(args: &TracelensArgs) -> Result<Status, Error> {
    let mut config = settings::tracelens_config(args).map_err(Error::Usage)?;
    if args.discover_only {
        let (found, plan) = tracelens_driver::plan_only(&config).map_err(refused)?;
        if args.json {
            render::json_as_is(&tracelens_driver::Planned::new(found, plan))?;
        } else {
            render::plan(&found, &plan)?;
        }
        return Ok(Status::Success);
    }
    super::check_output(&config.output_dir, true)?;

    let progress = render::Progress::new(
        0,
        "{spinner} TraceLens {pos}/{len} jobs [{elapsed}] {wide_msg}",
        !args.json,
    );
    let bar = progress.bar();
    let mut running: Vec<String> = Vec::new();
    // Ctrl-C stops the jobs and removes the sanitized copies.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    config.cancel = Some(interrupt.flag());
    let summary = tracelens_driver::run(&config, &mut |event| match event {
        Event::Note(text) => render::note(&text),
        Event::CyclePicked(_) | Event::OtherCycles(_) => cycle_note(&event),
        Event::Scratch(dir) => crate::interrupt::remove_on_quit(dir),
        Event::FewerJobs { jobs, wanted, largest, available } => {
            render::note(&fewer_jobs(jobs, wanted, largest, available, "--jobs to choose"))
        }
        Event::Planned { jobs } => {
            if let Some(bar) = bar {
                bar.set_length(jobs as u64);
            }
        }
        Event::Started { job, .. } => {
            running.push(job.label.clone());
            if let Some(bar) = bar {
                bar.set_message(running.join(", "));
            }
        }
        Event::Finished { row, done, .. } => {
            if let Some(pos) = running.iter().position(|l| *l == row.trace_file) {
                running.remove(pos);
            }
            if let Some(bar) = bar {
                bar.set_position(done as u64);
                bar.set_message(running.join(", "));
            }
        }
        _ => {}
    });
    drop(progress);
    let summary = summary.map_err(refused)?;
    render::left_out(&summary.problems);
    if args.json {
        render::json_as_is(&summary.written())?;
    } else {
        render::tracelens_summary(&summary)?;
        if summary.results.iter().any(tracelens_driver::Row::salvageable) {
            render::note(
                "`madengine report tracelens --salvage` analyzes what such a trace holds: the \
                 events before its cut, or its document without what follows it",
            );
        }
    }
    if summary.counts.failed > 0 {
        if args.no_fail {
            render::warning(&format!(
                "{} TraceLens job(s) failed (ignored: --no-fail); see {}",
                summary.counts.failed,
                summary.summary_csv.display()
            ));
            return Ok(Status::Success);
        }
        return Ok(Status::Findings);
    }
    Ok(Status::Success)
}

pub(crate) fn compare(args: &CompareArgs) -> Result<Status, Error> {
    let config = CompareConfig {
        reports: args.reports.clone(),
        output: args.output.clone(),
        names: args.names.clone(),
    };
    config.validate()?;
    let python = settings::interpreter(args.python.as_ref());
    let probe = tracelens_driver::probe(&python)?;
    let outcome = tracelens_driver::compare(&config, &probe)?;
    if args.json {
        render::json_as_is(&outcome)?;
    } else {
        render::compare_outcome(&outcome)?;
    }
    Ok(if outcome.status == RowStatus::Success { Status::Success } else { Status::Findings })
}

/// What `--cycle` picked, or left out.
fn cycle_note(event: &Event<'_>) {
    match event {
        Event::CyclePicked(picked) => {
            render::note(&format!("{}: {} (--cycle)", picked.dir.display(), picked.cycle))
        }
        Event::OtherCycles(1) => {
            render::note("1 PyTorch trace of another profiling cycle left out (--cycle)")
        }
        Event::OtherCycles(n) => render::note(&format!(
            "{n} PyTorch traces of other profiling cycles left out (--cycle)"
        )),
        _ => {}
    }
}

/// The driver's error, an output directory that holds the run a usage error.
fn refused(e: tracelens_driver::Error) -> Error {
    match e {
        tracelens_driver::Error::HoldsRun(refused) => super::holds_run(&refused),
        e => e.into(),
    }
}

/// Why fewer TraceLens jobs run at once than asked for.
fn fewer_jobs(jobs: usize, wanted: usize, largest: u64, available: u64, choose: &str) -> String {
    format!(
        "running {jobs} TraceLens job(s) at a time, not {wanted}: the largest take about {} each \
         (TraceLens holds about 17 times a trace's JSON) and {} is free for them (half the \
         machine's available memory; {choose})",
        render::size(largest),
        render::size(available)
    )
}

/// What `gather --report` / `--summary` made of the gathered results.
pub(crate) struct Analyzed {
    /// With `--json`, `gather --summary`'s run summary (`report summary
    /// --json`'s object).
    pub(crate) summary: Option<trace_report::RunSummary>,
    /// With `--json`, `gather --report`'s TraceLens run (`report tracelens
    /// --json`'s object).
    pub(crate) tracelens: Option<tracelens_driver::Summary>,
    /// Findings when a TraceLens job failed or a trace could not be read;
    /// Interrupted on Ctrl-C.
    pub(crate) status: Status,
}

/// A gather's own document (`gathered`) with what the analyses add:
/// `summary` and `tracelens`, where they ran.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct WithAnalyses<'a, T> {
    #[serde(flatten)]
    gathered: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a trace_report::RunSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tracelens: Option<tracelens_driver::Written<'a>>,
}

impl Analyzed {
    /// Print, with `json`, the gather's own object (`gathered`) with what
    /// the analyses add, as one; then the status to exit with.
    pub(crate) fn finish<T: serde::Serialize>(
        self,
        gathered: &T,
        json: bool,
        status: Status,
    ) -> Result<Status, Error> {
        if json {
            render::json_as_is(&self.merged(gathered))?;
        }
        Ok(self.status(status))
    }

    /// The gather's own object (`gathered`) with what the analyses add.
    pub(crate) fn merged<'a, T: serde::Serialize>(
        &'a self,
        gathered: &'a T,
    ) -> WithAnalyses<'a, T> {
        WithAnalyses {
            gathered,
            summary: self.summary.as_ref(),
            tracelens: self.tracelens.as_ref().map(tracelens_driver::Summary::written),
        }
    }

    /// The analyses' status where they found problems (or were
    /// interrupted), else the gather's (`status`).
    pub(crate) fn status(&self, status: Status) -> Status {
        if self.status == Status::Success { status } else { self.status }
    }
}

/// `gather --summary` (the native tables, in <root>/summary_output and
/// <root>/summary.html) and `gather --report` (TraceLens, in
/// <root>/tracelens_report) over the gathered `root`, each printed as it
/// ends unless `json` (the caller prints them with its own: [`Analyzed::merged`]).
pub(crate) fn analyze_gathered(
    root: &std::path::Path,
    args: &crate::cli::GatherReportArgs,
    json: bool,
) -> Result<Analyzed, Error> {
    let mut analyzed = Analyzed { summary: None, tracelens: None, status: Status::Success };
    if args.summary {
        let summary_args = crate::cli::SummaryArgs {
            paths: vec![root.to_path_buf()],
            root: None,
            output_dir: root.join("summary_output"),
            top: 10,
            jobs: None,
            json,
            html: Some(root.join("summary.html")),
            salvage: args.salvage,
            gpu_arch: None,
            xlsx: None,
            cycle: args.cycle,
        };
        let from_nodes = match args.from_traces {
            true => None,
            false => super::summary::from_node_reports(root, &summary_args.output_dir)?,
        };
        let summarized = match from_nodes {
            Some(summarized) => summarized,
            None => match super::summary::summarize(&summary_args)? {
                Some(summarized) => summarized,
                None => {
                    analyzed.status = Status::Interrupted;
                    return Ok(analyzed);
                }
            },
        };
        if summarized.finish() != Status::Success {
            analyzed.status = Status::Findings;
        }
        if json {
            analyzed.summary = Some(summarized.0);
        } else {
            summarized.print()?;
        }
    }
    if args.report {
        let report = report_gathered(root, args)?;
        if report.any_failed() {
            analyzed.status = Status::Findings;
        }
        if json {
            analyzed.tracelens = Some(report);
        } else {
            render::tracelens_summary(&report)?;
        }
    }
    Ok(analyzed)
}

/// `gather --report`: TraceLens over a gathered tree, reports in
/// `<root>/tracelens_report`. Ctrl-C stops it as it stops `report
/// tracelens`.
fn report_gathered(
    root: &std::path::Path,
    args: &crate::cli::GatherReportArgs,
) -> Result<tracelens_driver::Summary, Error> {
    let mut config = tracelens_driver::Config::new(
        root,
        std::env::temp_dir(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    );
    config.output_dir = root.join("tracelens_report");
    config.python = settings::interpreter(args.python.as_ref());
    config.salvage = args.salvage;
    config.cycle = args.cycle;
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    config.cancel = Some(interrupt.flag());
    // No --jobs here: as many as fit in half the available memory together.
    config.memory_available = settings::mem_available().map(|m| m / 2);
    let report = tracelens_driver::run(&config, &mut |event| match event {
        Event::Note(text) => render::note(&text),
        Event::CyclePicked(_) | Event::OtherCycles(_) => cycle_note(&event),
        Event::Scratch(dir) => crate::interrupt::remove_on_quit(dir),
        Event::FewerJobs { jobs, wanted, largest, available } => render::note(&fewer_jobs(
            jobs,
            wanted,
            largest,
            available,
            "`report tracelens --jobs` to choose",
        )),
        _ => {}
    })?;
    Ok(report)
}
