//! `madengine k8s render|apply|gather`.

use std::time::Duration;

use collect_k8s::{JobFile, Kubectl};

use crate::{
    cli::{K8sApplyArgs, K8sGatherArgs, K8sRenderArgs, KubectlArgs},
    error::{Error, Status},
    render,
};

fn manifests(config: &std::path::Path) -> Result<collect_k8s::List, Error> {
    let job = JobFile::load(config)?;
    let bundle = match &job.scripts_dir {
        Some(dir) => {
            let dir = if dir.is_absolute() {
                dir.clone()
            } else {
                config.parent().unwrap_or(".".as_ref()).join(dir)
            };
            collect_k8s::bundle(&dir, &job.tools)?
        }
        None => collect_k8s::builtin_bundle(&job.tools)?,
    };
    Ok(job.render_list(&bundle)?)
}

pub(crate) fn render(args: &K8sRenderArgs) -> Result<Status, Error> {
    let list = manifests(&args.config)?;
    match &args.output {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|source| Error::Io { path: dir.clone(), source })?;
            for (i, o) in list.items.iter().enumerate() {
                let kind = o["kind"].as_str().unwrap_or("object").to_ascii_lowercase();
                let path = dir.join(format!("{:02}-{kind}.json", i + 1));
                let text = serde_json::to_vec_pretty(o).expect("json");
                crate::commands::write_atomic(&path, &text)?;
                render::note(&format!("wrote {}", path.display()));
            }
        }
        None => render::json_as_is(&list)?,
    }
    Ok(Status::Success)
}

fn kubectl(args: &KubectlArgs, namespace: &str) -> Kubectl {
    Kubectl {
        program: args.kubectl.clone(),
        context: args.context.clone(),
        namespace: namespace.to_string(),
        timeout: Duration::from_secs_f64(args.kubectl_timeout.max(1.0)),
        cancel: None,
    }
}

/// `k8s apply --json`: what was applied; with `--wait`, how the Job ended
/// and, with `--results-dir`, what was gathered.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Applied<'a> {
    /// kubectl's lines.
    applied: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gathered: Option<super::report::WithAnalyses<'a, collect_k8s::Gathered>>,
    job: &'a str,
    namespace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a collect_k8s::JobStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timed_out: Option<bool>,
}

pub(crate) fn apply(args: &K8sApplyArgs) -> Result<Status, Error> {
    if (args.report.report || args.report.summary) && args.results_dir.is_none() {
        return Err(Error::Usage(
            "--report and --summary need --wait and --results-dir (they read the results \
             gathered once the Job ends)"
                .into(),
        ));
    }
    let objects = manifests(&args.config)?.items;
    let namespace = objects[0]["metadata"]["namespace"].as_str().unwrap_or("default").to_string();
    let k = kubectl(&args.kubectl, &namespace);
    let out = k.apply(&objects)?;
    let job = objects
        .iter()
        .find(|o| o["kind"] == "Job")
        .and_then(|o| o["metadata"]["name"].as_str())
        .expect("the rendered objects hold a named Job")
        .to_string();
    let mut outcome = Applied {
        applied: out.lines().map(str::trim).filter(|l| !l.is_empty()).collect(),
        gathered: None,
        job: &job,
        namespace: &namespace,
        status: None,
        timed_out: None,
    };
    if args.json {
        if !args.wait {
            render::json(&outcome)?;
        }
    } else {
        render::raw(&out)?;
    }
    if !args.wait {
        return Ok(Status::Success);
    }
    let context = args.kubectl.context.as_ref().map(|c| format!(" --context {c}"));
    let target = format!("{job} --namespace {namespace}{}", context.unwrap_or_default());
    let gather_later = format!("`madengine k8s gather {target} --results-dir <dir>`");
    let interrupt = crate::interrupt::Guard::saying(format!(
        "stopped waiting; Job {job} goes on: `kubectl delete job {target}` stops it, {gather_later} \
         collects its results once it ends"
    ));
    let deadline = args.timeout.filter(|t| t.is_finite() && *t > 0.0).map(Duration::from_secs_f64);
    let mut unlisted_said = false;
    let (status, deleted) =
        k.follow(&job, deadline, Duration::from_millis(200), &mut |s: &collect_k8s::JobStatus| {
            render::note(&format!("job {job}: {}", s.describe()));
            for pod in &s.stuck {
                render::warning(&format!("job {job}: pod {pod}"));
            }
            if let Some(why) = s.pods_unlisted.as_ref().filter(|_| !unlisted_said) {
                unlisted_said = true;
                render::warning(&format!(
                    "job {job}: its pods cannot be listed, so a pod that cannot start (unschedulable, \
                     an image that cannot be pulled) is not named; waiting on the Job alone: {why}"
                ));
            }
        })?;
    drop(interrupt);
    if deleted {
        render::warning(&format!(
            "Job {job} ran past --timeout and was deleted, its pods with it; what they wrote to \
             the results volume stays"
        ));
    }
    let job_status = if status.complete() { Status::Success } else { Status::Findings };
    outcome.status = Some(&status);
    outcome.timed_out = Some(deleted);
    let Some(results_dir) = &args.results_dir else {
        render::note(&format!("{gather_later} collects its results"));
        if args.json {
            render::json(&outcome)?;
        }
        return Ok(job_status);
    };
    // Gathered as `k8s gather` would, from the results volume.
    let gather = GatherArgs {
        job: &job,
        results_dir,
        namespace: &namespace,
        collector_image: &args.collector_image,
        live: None,
        kubectl: &args.kubectl,
        report: &args.report,
        json: args.json,
    };
    let (gathered, analyzed) = gather_and_analyze(&gather)?;
    let ended = if job_status == Status::Success { gathered_status(&gathered) } else { job_status };
    let status = analyzed.status(ended);
    if args.json {
        let outcome = Applied { gathered: Some(analyzed.merged(&gathered)), ..outcome };
        render::json(&outcome)?;
    }
    Ok(status)
}

/// What `k8s gather` needs, from its own flags or `apply --wait`'s.
struct GatherArgs<'a> {
    job: &'a str,
    results_dir: &'a std::path::Path,
    namespace: &'a str,
    collector_image: &'a str,
    /// `--live`: the pods' workspace.
    live: Option<&'a str>,
    kubectl: &'a KubectlArgs,
    report: &'a crate::cli::GatherReportArgs,
    json: bool,
}

/// Gather the Job's results (printing each pod's unless `json`), then the
/// analyses asked for.
fn gather_and_analyze(
    args: &GatherArgs,
) -> Result<(collect_k8s::Gathered, super::report::Analyzed), Error> {
    // Ctrl-C stops the copies and still deletes the collector pod.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let k = Kubectl { cancel: Some(interrupt.flag()), ..kubectl(args.kubectl, args.namespace) };
    let gathered = match args.live {
        Some(workdir) => {
            let dirs: Vec<String> =
                collect_k8s::DEFAULT_COLLECT.iter().map(|s| s.to_string()).collect();
            collect_k8s::gather_live(&k, args.job, args.results_dir, workdir, &dirs)?
        }
        None => collect_k8s::gather(&k, args.job, args.results_dir, args.collector_image)?,
    };
    if !args.json {
        for p in &gathered.pods {
            let traces =
                p.traces.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ");
            render::note(&format!(
                "{}: {}{}",
                p.name,
                if p.copied { "copied" } else { "not copied" },
                if traces.is_empty() { String::new() } else { format!(" ({traces})") }
            ));
        }
        for problem in &gathered.problems {
            render::warning(problem);
        }
        render::note(&format!(
            "summary: {}",
            args.results_dir.join("results_summary.json").display()
        ));
    }
    let analyzed = super::report::analyze_gathered(args.results_dir, args.report, args.json)?;
    drop(interrupt);
    Ok((gathered, analyzed))
}

fn gathered_status(gathered: &collect_k8s::Gathered) -> Status {
    if gathered.problems.is_empty() { Status::Success } else { Status::Findings }
}

pub(crate) fn gather(args: &K8sGatherArgs) -> Result<Status, Error> {
    let gather = GatherArgs {
        job: &args.job,
        results_dir: &args.results_dir,
        namespace: &args.namespace,
        collector_image: &args.collector_image,
        live: args.live.then_some(args.workdir.as_str()),
        kubectl: &args.kubectl,
        report: &args.report,
        json: args.json,
    };
    let (gathered, analyzed) = gather_and_analyze(&gather)?;
    let status = gathered_status(&gathered);
    analyzed.finish(&gathered, args.json, status)
}
