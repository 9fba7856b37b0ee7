//! `madengine slurm script|submit|gather`.

use std::time::Duration;

use collect_slurm::{JobState, Slurm};

use crate::{
    cli::{SlurmGatherArgs, SlurmScriptArgs, SlurmSubmitArgs},
    error::{Error, Status},
    render, settings,
};

pub(crate) fn script(args: &SlurmScriptArgs) -> Result<Status, Error> {
    let spec = settings::job_spec(&args.job, args.results_dir.as_ref())?;
    let text = spec.render()?;
    match &args.output {
        Some(path) => {
            crate::commands::write_atomic(path, text.as_bytes())?;
            render::note(&format!("wrote {}", path.display()));
        }
        None => render::raw(&text)?,
    }
    Ok(Status::Success)
}

pub(crate) fn submit(args: &SlurmSubmitArgs) -> Result<Status, Error> {
    if (args.report.report || args.report.summary) && !args.wait {
        return Err(Error::Usage(
            "--report and --summary need --wait (they read the results once the job ends); \
             without it, run `madengine slurm gather <results-dir>/<job_id> --summary` then"
                .into(),
        ));
    }
    let spec = settings::job_spec(&args.job, args.results_dir.as_ref())?;
    let slurm = Slurm::default();
    let submitted = collect_slurm::submit(&spec, &slurm)?;
    if !args.wait {
        if args.json {
            render::json(&Submitted::<()> {
                exit_code: None,
                job_id: &submitted.job_id,
                results: submitted.results.to_string_lossy(),
                state: None,
                summary: None,
            })?;
        } else {
            render::raw(&format!("{}\n", submitted.job_id))?;
            render::note(&format!("results will be in {}", submitted.results.display()));
        }
        return Ok(Status::Success);
    }
    let deadline = args.timeout.filter(|t| t.is_finite() && *t > 0.0).map(Duration::from_secs_f64);
    let interrupt = crate::interrupt::Guard::saying(format!(
        "stopped waiting; job {id} goes on: `scancel {id}` stops it, `madengine slurm gather {}` \
         collects its results once it ends",
        submitted.results.display(),
        id = submitted.job_id
    ));
    render::note(&format!("submitted job {}; waiting for it to end", submitted.job_id));
    let id = &submitted.job_id;
    let (state, cancelled) = collect_slurm::follow_with(&submitted, &slurm, deadline, &mut |s| {
        render::note(&format!("job {id}: {s}"));
    })?;
    drop(interrupt);
    if cancelled {
        render::warning(&format!("job {} ran past --timeout and was cancelled", submitted.job_id));
    }
    let summary = collect_slurm::gather(&submitted.results, Some(state.clone()))?;
    if !args.json {
        render::slurm_summary(&summary)?;
    }
    let analyzed = super::report::analyze_gathered(&submitted.results, &args.report, args.json)?;
    if args.json {
        // `summary` is what `slurm gather --json` prints.
        render::json(&Submitted {
            exit_code: Some(state.exit_code),
            job_id: &submitted.job_id,
            results: submitted.results.to_string_lossy(),
            state: Some(&state.state),
            summary: Some(analyzed.merged(&summary)),
        })?;
    }
    Ok(analyzed.status(job_status(&state)))
}

/// `slurm submit --json`: the job and where its results go; with
/// `--wait`, how it ended and what was gathered (`slurm gather --json`'s
/// object).
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Submitted<'a, T> {
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<Option<i32>>,
    job_id: &'a str,
    results: std::borrow::Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<super::report::WithAnalyses<'a, T>>,
}

fn job_status(state: &JobState) -> Status {
    if state.succeeded() { Status::Success } else { Status::Findings }
}

pub(crate) fn gather(args: &SlurmGatherArgs) -> Result<Status, Error> {
    let job_id = args.dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
    // The job's state when SLURM still knows it (scontrol forgets after MinJobAge).
    let state = Slurm::default().show(&job_id).ok();
    let summary = collect_slurm::gather(&args.dir, state)?;
    if !args.json {
        render::slurm_summary(&summary)?;
    }
    let analyzed = super::report::analyze_gathered(&args.dir, &args.report, args.json)?;
    let status = if summary.complete() { Status::Success } else { Status::Findings };
    analyzed.finish(&summary, args.json, status)
}
