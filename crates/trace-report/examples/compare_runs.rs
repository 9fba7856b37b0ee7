//! Summarize two runs and compare them as `madengine report summary` and
//! `madengine report diff` do: each run's traces summarized into
//! `OUT_DIR/baseline` and `OUT_DIR/new` (a report directory per trace), then
//! the two directories of reports compared rank by rank, the comparison
//! printed as JSON (what `madengine report diff --json` prints) and its
//! tables written as CSVs into `OUT_DIR/diff`.
//!
//! ```text
//! cargo run -p trace-report --example compare_runs -- OUT_DIR BASELINE NEW
//! ```
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example program: it prints what the library returns"
)]

use std::path::PathBuf;

use trace_report::{
    CompareConfig, CompareEvents, CompareNote, RunConfig, RunEvents, RunNote, compare,
    compare_sides, run_inputs, summarize_run,
};

/// Notes go to stderr, as they come; nothing else is made of a trace.
struct Stderr;

impl RunEvents for Stderr {
    type Extra = ();
    type Error = trace_report::SetError;

    fn note(&self, note: RunNote) {
        eprintln!("note: {note:?}");
    }
}

impl CompareEvents for Stderr {
    fn note(&self, note: CompareNote) {
        eprintln!("note: {note:?}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [out, baseline, new] = &args[..] else {
        return Err("usage: compare_runs OUT_DIR BASELINE NEW".into());
    };
    // Each run summarized: its reports, and each trace's record beside them
    // (its rank, steps and GPUs, which a comparison reads back).
    let mut reports = Vec::new();
    for (run, name) in [(baseline, "baseline"), (new, "new")] {
        let dir = out.join(name);
        let found =
            run_inputs(std::slice::from_ref(run), std::slice::from_ref(&dir), None, &Stderr)?;
        let config = RunConfig::new(found, dir.clone());
        if summarize_run(&config, &Stderr)?.is_none() {
            return Err("cancelled".into());
        }
        reports.push(dir);
    }
    // The two directories of reports compared, rank by rank.
    let sides = compare_sides(&reports[0], &reports[1], [None, None], &Stderr)?;
    let Some(compared) = compare(&CompareConfig::new(sides), &Stderr)? else {
        return Err("cancelled".into());
    };
    let csvs = compared.write_csvs(&out.join("diff"))?;
    let regression = compared.regression(5.0);
    let document = compared.document(&csvs, None, regression, [vec![], vec![]]);
    println!("{}", serde_json::to_string_pretty(&document)?);
    Ok(())
}
