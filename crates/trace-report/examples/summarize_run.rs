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

use trace_report::{RunConfig, RunEvents, RunNote, RunSummary, run_inputs, summarize_run};

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
    let config = RunConfig {
        this_run: found.this_run(),
        inputs: found.inputs,
        output_dir: out,
        top: 10,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(8),
        // As the CLI: the roofline of the GPU the trace names, where known.
        options: trace_summary::Options::default()
            .with_gpu_arch(trace_summary::ArchChoice::FromTrace),
    };
    let Some(report) = summarize_run(&config, &Stderr)? else {
        return Err("cancelled".into());
    };
    let summary = RunSummary { left_out: found.left_out, ..report.summary };
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}
