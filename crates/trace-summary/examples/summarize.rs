//! `cargo run --release -p trace-summary --example summarize -- [--parse-only|--core] TRACE`:
//! every table of one trace made, the three core ones on stdout; with
//! `--core` the core tables alone made (no perf models), with
//! `--parse-only` the number of events read (the reader alone). Used by
//! `cargo xtask bench summary`.

use std::io::Write;

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let flag = |args: &mut Vec<std::ffi::OsString>, name: &str| {
        let given = args.first().is_some_and(|a| a == name);
        if given {
            args.remove(0);
        }
        given
    };
    let parse_only = flag(&mut args, "--parse-only");
    let core = flag(&mut args, "--core");
    let path = args.first().expect("usage: summarize [--parse-only|--core] TRACE");
    let path = std::path::Path::new(path);
    let mut out = std::io::stdout().lock();
    if parse_only {
        let events = trace_summary::parse_file(path).expect("parse");
        let _ = writeln!(out, "{events} events");
        return;
    }
    let options = trace_summary::Options::default().skipping_perf_models(core);
    let summary = trace_summary::summarize_file_with(path, &options).expect("summarize");
    for t in
        [&summary.gpu_timeline, &summary.kernel_summary, &summary.ops_summary].into_iter().flatten()
    {
        if out.write_all(t.to_csv().as_bytes()).is_err() {
            return; // a closed pipe is fine
        }
    }
}
