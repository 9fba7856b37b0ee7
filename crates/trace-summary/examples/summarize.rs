//! `cargo run --release -p trace-summary --example summarize -- TRACE`: the
//! three tables of one trace on stdout (used by `cargo xtask bench summary`).

use std::io::Write;

fn main() {
    let path = std::env::args_os().nth(1).expect("usage: summarize TRACE");
    let summary = trace_summary::summarize_file(std::path::Path::new(&path)).expect("summarize");
    let mut out = std::io::stdout().lock();
    for t in
        [&summary.gpu_timeline, &summary.kernel_summary, &summary.ops_summary].into_iter().flatten()
    {
        if out.write_all(t.to_csv().as_bytes()).is_err() {
            return; // a closed pipe is fine
        }
    }
}
