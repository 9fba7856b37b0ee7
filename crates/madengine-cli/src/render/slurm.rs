//! `slurm submit` / `slurm gather`.

use super::*;

pub(crate) fn slurm_summary(summary: &collect_slurm::Summary) -> Result<(), Error> {
    let mut text = String::new();
    if let Some(state) = &summary.state {
        text.push_str(&format!(
            "job {}: {}{}{}\n",
            summary.job_id,
            state.state,
            state.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default(),
            state.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
        ));
    }
    let rows: Vec<[String; 5]> = summary
        .nodes
        .iter()
        .map(|n| {
            let status = match n.status {
                collect_slurm::NodeStatus::Succeeded => "succeeded",
                collect_slurm::NodeStatus::Failed => "failed",
                collect_slurm::NodeStatus::Unfinished => "unfinished",
                collect_slurm::NodeStatus::Missing => "missing",
            };
            let collected = n
                .collected
                .iter()
                .map(|c| format!("{} ({} files, {})", c.dir, c.files, size(c.bytes)))
                .collect::<Vec<_>>()
                .join(", ");
            let traces =
                n.traces.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ");
            [
                n.name.clone(),
                n.slurm_node.clone().unwrap_or_else(|| "-".into()),
                status.into(),
                collected,
                traces,
            ]
        })
        .collect();
    table(&mut text, ["NODE", "SLURM NODE", "STATUS", "COLLECTED", "TRACES"], &rows);
    if !summary.failed.is_empty() {
        text.push_str(&format!(
            "failed: {} (their logs are in their node directories)\n",
            summary.failed.join(", ")
        ));
    }
    if !summary.missing.is_empty() {
        text.push_str(&format!("missing: {} (no results at all)\n", summary.missing.join(", ")));
    }
    text.push_str(&format!(
        "summary: {}\n",
        summary.results.join(collect_slurm::SUMMARY).display()
    ));
    out(&text)
}
