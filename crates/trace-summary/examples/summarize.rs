//! `cargo run --release -p trace-summary --example summarize -- [--parse-only] TRACE`:
//! the three tables of one trace on stdout, or with `--parse-only` the number
//! of events read (the reader alone). Used by `cargo xtask bench summary`.

use std::io::Write;

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let parse_only = args.first().is_some_and(|a| a == "--parse-only");
    if parse_only {
        args.remove(0);
    }
    let path = args.first().expect("usage: summarize [--parse-only] TRACE");
    let path = std::path::Path::new(path);
    let mut out = std::io::stdout().lock();
    if parse_only {
        let events = trace_summary::parse_file(path).expect("parse");
        let _ = writeln!(out, "{events} events");
        return;
    }
    let summary = trace_summary::summarize_file(path).expect("summarize");
    for t in
        [&summary.gpu_timeline, &summary.kernel_summary, &summary.ops_summary].into_iter().flatten()
    {
        if out.write_all(t.to_csv().as_bytes()).is_err() {
            return; // a closed pipe is fine
        }
    }
}
