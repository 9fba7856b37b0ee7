//! `madengine schemas` (hidden; built with the `schema` feature only): the
//! JSON Schema of every document madengine prints with `--json` or writes
//! for scripts, made from the types that write them (`schemars`), as one
//! JSON array of `{stem, printed_by, text}` (`text`: the schema file, its
//! keys in schemars' order). `cargo xtask codegen` writes
//! them to docs/schemas/ and `--check` keeps them current.

use schemars::{JsonSchema, generate::SchemaSettings};
use serde::Serialize;

use crate::{
    error::{Error, Status},
    render::{self, Versioned},
};

/// One document: its schema file's stem, what prints or writes it, its
/// schema's text.
#[derive(Serialize)]
struct Document {
    stem: &'static str,
    printed_by: &'static str,
    text: String,
}

/// The schema of `T` as serde_json writes it: fields skipped when empty
/// are optional, the rest required.
fn of<T: JsonSchema>(stem: &'static str, printed_by: &'static str) -> Document {
    let schema =
        SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>();
    let text = serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n";
    Document { stem, printed_by, text }
}

/// A gather's document with what the analyses add (`summary`, `tracelens`).
type Analyzed<T> = super::report::WithAnalyses<'static, T>;

/// Every document, in the order docs/schemas/README.md lists them.
fn documents() -> Vec<Document> {
    vec![
        of::<trace_discover::Discovery>("discover", "`trace discover --json`"),
        of::<trace_sanitize::FileReport>(
            "sanitize",
            "`trace sanitize --json` (one trace), `trace sanitize --check --json`",
        ),
        of::<trace_sanitize::FileReports>(
            "sanitize-several",
            "`trace sanitize --json` (several traces)",
        ),
        of::<trace_summary::ConvertedFile>("convert", "`trace convert --json` (one database)"),
        of::<trace_summary::ConvertedFiles>(
            "convert-several",
            "`trace convert --json` (a directory, or several)",
        ),
        of::<trace_report::RunSummary>("report-summary", "`report summary --json`"),
        of::<trace_report::Record>("summary-record", "`summary.json`, beside each trace's report"),
        of::<trace_report::CollectivesRecord>(
            "collectives-record",
            "`collectives.json`, beside a run's collective report",
        ),
        of::<trace_report::RunComparison>("report-diff", "`report diff --json`"),
        of::<tracelens_driver::Planned>(
            "report-tracelens-plan",
            "`report tracelens --discover-only --json`",
        ),
        of::<tracelens_driver::Written<'static>>(
            "report-tracelens",
            "`report tracelens --json`, `tracelens_summary.json`",
        ),
        of::<tracelens_driver::CompareOutcome>(
            "compare-tracelens",
            "`report tracelens-compare --json`",
        ),
        of::<tracelens_driver::SetupOutcome>("setup-tracelens", "`setup tracelens --json`"),
        of::<dynolog_client::SetUp>("setup-dynolog", "`setup dynolog --json`"),
        of::<dynolog_client::DaemonStatus>("dynolog-status", "`dynolog status --json`"),
        of::<dynolog_client::DaemonVersion>("dynolog-version", "`dynolog version --json`"),
        of::<dynolog_client::Triggered>("dynolog-gputrace", "`dynolog gputrace --json`"),
        of::<dynolog_client::Session>("dynolog-start", "`dynolog start --json`"),
        of::<dynolog_client::TriggerEnded>("dynolog-trigger", "`dynolog trigger --json`"),
        of::<dynolog_client::Captured>("dynolog-stop", "`dynolog stop --json`"),
        of::<Versioned<'static, super::slurm::Submitted<'static, collect_slurm::Summary>>>(
            "slurm-submit",
            "`slurm submit --json` (with `--wait`, `summary` is `slurm gather --json`'s document)",
        ),
        of::<Analyzed<collect_slurm::Summary>>(
            "slurm-gather",
            "`slurm gather --json`; `results_summary.json` of a SLURM job (without `summary` \
             and `tracelens`, which the analyses add)",
        ),
        of::<Versioned<'static, super::k8s::Applied<'static>>>(
            "k8s-apply",
            "`k8s apply --json` (with `--wait` and `--results-dir`, `gathered` is `k8s gather \
             --json`'s document)",
        ),
        of::<Analyzed<collect_k8s::Gathered>>(
            "k8s-gather",
            "`k8s gather --json`; `results_summary.json` of a Kubernetes job (without `summary` \
             and `tracelens`, which the analyses add)",
        ),
    ]
}

pub(crate) fn schemas() -> Result<Status, Error> {
    render::json_as_is(&documents())?;
    Ok(Status::Success)
}
