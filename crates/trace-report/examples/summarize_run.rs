//! Summarize a run's traces as `madengine report summary` does: each
//! trace's report (CSVs and record) written under OUT_DIR, the run's
//! summary printed as JSON (what `madengine report summary --json` prints).
//!
//! ```text
//! cargo run -p trace-report --example summarize_run -- OUT_DIR [PATH...]
//! ```
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example program: it prints what the library returns"
)]

use std::path::PathBuf;

use trace_report::{RunConfig, RunEvents, RunNote, run_inputs, summarize_run};

/// Notes go to stderr, as they come; nothing else is made of a trace.
struct Stderr;

impl RunEvents for Stderr {
    type Extra = ();
    type Error = trace_report::SetError;

    fn note(&self, note: RunNote) {
        eprintln!("note: {note:?}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let out = args.next().ok_or("usage: summarize_run OUT_DIR [PATH...]")?;
    let paths: Vec<PathBuf> = args.collect();
    let found = run_inputs(&paths, std::slice::from_ref(&out), None, &Stderr)?;
    let config = RunConfig::new(found, out);
    let Some(report) = summarize_run(&config, &Stderr)? else {
        return Err("cancelled".into());
    };
    let summary = report.summary;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}
