//! `report tracelens`, `report tracelens-compare`, `setup tracelens`: the TraceLens driver's plan and outcomes.

use super::*;

pub(crate) fn plan(found: &Discovery, plan: &tracelens_driver::Plan) -> Result<(), Error> {
    let mut text = String::new();
    for t in &found.traces {
        text.push_str(&format!("{}\t{}\n", t.kind, t.path.display()));
    }
    // rocpd databases: reported through the JSON written for them, or left
    // to the JSON their run also wrote.
    let databases: Vec<&std::path::Path> =
        plan.jobs.iter().filter(|j| j.is_rocpd()).filter_map(|j| j.trace.as_deref()).collect();
    for db in &databases {
        text.push_str(&format!("{}\t{}\n", tracelens_driver::ROCPD, db.display()));
    }
    let collective = tracelens_driver::Tool::Collective.script();
    let left: Vec<&tracelens_driver::Row> = plan
        .skipped
        .iter()
        .filter(|r| r.kind == tracelens_driver::ROCPD && r.tracelens_tool != collective)
        .collect();
    for u in &found.unsupported {
        let rel = u.path.strip_prefix(&found.root).unwrap_or(&u.path);
        if databases.contains(&u.path.as_path()) {
            continue;
        }
        match left.iter().find(|r| std::path::Path::new(&r.trace_file) == rel) {
            Some(row) => text.push_str(&format!("skipped\t{}\t{}\n", u.path.display(), row.detail)),
            None => text.push_str(&format!("unsupported\t{}\t{}\n", u.path.display(), u.reason)),
        }
    }
    for p in &found.problems {
        text.push_str(&format!("problem\t{}\t{}\n", p.path.display(), p.message));
    }
    for job in plan.jobs.iter().filter_map(|j| j.collective.as_ref().map(|c| (j, c))) {
        let (job, c) = job;
        let ranks: Vec<String> =
            c.members.iter().map(|(r, p)| format!("rank {r}: {}", p.display())).collect();
        text.push_str(&format!(
            "collective\t{} (world size {})\t{}\n",
            job.label,
            c.world_size,
            ranks.join("; ")
        ));
    }
    for row in plan.skipped.iter().filter(|r| r.tracelens_tool == collective) {
        text.push_str(&format!("no collective\t{}\t{}\n", row.trace_file, row.detail));
    }
    for picked in &plan.cycles {
        text.push_str(&format!("cycle\t{}\t{}\n", picked.dir.display(), picked.cycle));
    }
    if plan.other_cycles > 0 {
        text.push_str(&format!(
            "{} of other profiling cycles left out (--cycle)\n",
            plural(plan.other_cycles, "PyTorch trace")
        ));
    }
    text.push_str(&format!(
        "{} TraceLens job(s) planned for {} under {}\n",
        plan.jobs.len(),
        plural(found.traces.len() + databases.len(), "trace"),
        found.root.display()
    ));
    out(&text)
}

pub(crate) fn tracelens_summary(summary: &tracelens_driver::Summary) -> Result<(), Error> {
    let mut text = String::new();
    if summary.results.is_empty() {
        text.push_str(&format!(
            "No supported trace artifacts found under {}. Stack a profiling tool such as \
             torch_profiler_dynolog, rocprofv3_lightweight, or rocprofv3_perfetto with the tracelens tool.\n",
            summary.root.display()
        ));
        return out(&text);
    }
    let colour = colour();
    let rows: Vec<[String; 5]> = summary
        .results
        .iter()
        .map(|r| {
            let tool = r
                .tracelens_tool
                .strip_prefix("TraceLens_")
                .unwrap_or(&r.tracelens_tool)
                .to_string();
            let report = if r.output.is_empty() { tool } else { r.output.clone() };
            [
                r.status.as_str().to_string(),
                r.trace_file.clone(),
                r.kind.clone(),
                report,
                r.detail.clone(),
            ]
        })
        .collect();
    let mut table_text = String::new();
    table(&mut table_text, ["STATUS", "TRACE", "KIND", "REPORT", "DETAIL"], &rows);
    // Colour the status cells after layout, so widths stay right.
    for (line, row) in
        table_text.lines().zip(std::iter::once(None).chain(summary.results.iter().map(Some)))
    {
        match row {
            Some(r) => {
                let rest = &line[r.status.as_str().len()..];
                text.push_str(&format!("{}{rest}\n", paint(r.status, colour)));
            }
            None => text.push_str(&format!("{line}\n")),
        }
    }
    let c = summary.counts;
    text.push_str(&format!(
        "{} succeeded, {} failed, {} skipped in {:.1} s; summary: {}\n",
        c.succeeded,
        c.failed,
        c.skipped,
        summary.durations.total_s,
        summary.summary_csv.display()
    ));
    out(&text)
}

pub(crate) fn compare_outcome(outcome: &tracelens_driver::CompareOutcome) -> Result<(), Error> {
    let text = match outcome.status {
        tracelens_driver::Status::Success => format!("wrote {}\n", outcome.output.display()),
        _ => format!("the comparison failed:\n$ {}\n{}\n", outcome.command, outcome.detail),
    };
    out(&text)
}

pub(crate) fn setup_outcome(outcome: &tracelens_driver::SetupOutcome) -> Result<(), Error> {
    let version = outcome.tracelens_version.as_deref().unwrap_or("(unknown version)");
    let what = if outcome.installed { "installed" } else { "already installed" };
    out(&format!(
        "TraceLens {version} {what} in {}\nuse it with: --python {}  or  export TRACELENS_VENV={}\n",
        outcome.venv.display(),
        outcome.python.display(),
        outcome.venv.display()
    ))
}
