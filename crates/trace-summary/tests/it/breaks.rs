//! A trace whose JSON breaks, or passes orjson's limits: refused with the
//! sanitizer's words where the tables read it, summarized with the break
//! kept (for a warning) where they do not. And valid JSON that lacks what
//! its format needs: refused, naming the format.

use trace_sanitize::Break;
use trace_summary::{Error, Format, summarize_file};

/// One kernel, one launch; `dur` and `args` of the kernel as given.
fn trace(dur: &str, args: &str) -> String {
    format!(
        r#"{{"traceEvents": [
{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {{"External id": 1}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {{"correlation": 1, "External id": 1}}}},
{{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": {dur}, "args": {args}}}
]}}"#
    )
}

#[test]
fn a_break_where_the_tables_read_is_an_error_of_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    for (dur, kind, found) in [
        ("1e400", Break::Infinite, "`1e400` (too large for a double)"),
        ("-1.8E+308", Break::Infinite, "`-1.8E+308` (too large for a double)"),
        ("6.2.4", Break::Number, "`6.2.4` (not a JSON number)"),
    ] {
        let text = trace(dur, r#"{"correlation": 1}"#);
        let path = dir.path().join("t.json");
        std::fs::write(&path, &text).unwrap();
        let at = text.rfind(dur).unwrap() as u64;
        match summarize_file(&path) {
            Err(Error::Malformed { offset, found: f, kind: k, .. }) => {
                assert_eq!((offset, f.as_str(), k), (at, found, kind), "{dur}");
            }
            other => panic!("{dur}: {other:?}"),
        }
    }
}

#[test]
fn a_break_where_the_tables_do_not_read_is_kept_for_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // The document, `traceEvents`, the event and its args: 4 levels.
    let nest = format!("{}{}", "[".repeat(1021), "]".repeat(1021));
    for (args, kind) in [
        (r#"{"correlation": 1, "bytes": 2e308}"#.to_string(), Break::Infinite),
        (format!(r#"{{"correlation": 1, "dims": {nest}}}"#), Break::TooDeep),
    ] {
        let text = trace("50", &args);
        let path = dir.path().join("t.json");
        std::fs::write(&path, &text).unwrap();
        let summary = summarize_file(&path).unwrap_or_else(|e| panic!("{args:.40}: {e}"));
        let malformed = summary.malformed.unwrap_or_else(|| panic!("{args:.40}: none"));
        assert_eq!(malformed.kind, kind);
    }
    // 1,024 levels, the document's own counted, are fine.
    let nest = format!("{}{}", "[".repeat(1020), "]".repeat(1020));
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace("50", &format!(r#"{{"dims": {nest}}}"#))).unwrap();
    assert_eq!(summarize_file(&path).unwrap().malformed, None);
}

#[test]
fn valid_json_its_format_cannot_read_is_refused_naming_the_format() {
    let dir = tempfile::tempdir().unwrap();
    // A rocprofv3 record without its end.
    let rocprof = r#"{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1, "init_time": 0, "fini_time": 9}, "agents": [], "kernel_symbols": [], "buffer_records": {"kernel_dispatch": [{"kind": 11, "operation": 2, "correlation_id": {"internal": 1, "external": 0}, "start_timestamp": 5, "dispatch_info": {"kernel_id": 1, "agent_id": {"handle": 1}, "queue_id": {"handle": 1}}}]}}]}"#;
    let path = dir.path().join("r_results.json");
    std::fs::write(&path, rocprof).unwrap();
    let e = summarize_file(&path).unwrap_err();
    assert!(matches!(e, Error::Parse { format: Some(Format::Rocprofv3), .. }), "{e:?}");
    let said = trace_summary::one_line(&e);
    assert!(said.contains("is not a readable rocprofv3 trace: missing field"), "{said}");
}

/// A trace's format from its first bytes, gzip or not, as the reader will
/// take it; and what reading one of each costs, no less than measured
/// (`cargo xtask bench summary`: 217 MiB for a 302.6 MB Kineto trace,
/// 50 MiB for a 298 MB rocprofv3 one).
#[test]
fn the_format_and_memory_of_a_trace_are_told_before_it_is_read() {
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run");
    let rocprof = run.join("rocprof_output/9999_results.json");
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("9999_results.json.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    std::io::Write::write_all(&mut encoder, &std::fs::read(&rocprof).unwrap()).unwrap();
    encoder.finish().unwrap();
    let text = dir.path().join("log.json");
    std::fs::write(&text, "W1201 rocprofiler-sdk-tool\n").unwrap();
    for (path, format) in [
        (rocprof, Format::Rocprofv3),
        (gz, Format::Rocprofv3),
        (run.join("torch_profiler_output/libkineto_trace_rank0_1.json"), Format::Kineto),
        (run.join("node_0/rank0.json.gz"), Format::Kineto),
        (text, Format::Kineto),
        (dir.path().join("missing.json"), Format::Kineto),
    ] {
        assert_eq!(Format::of_file(&path), format, "{}", path.display());
    }
    assert!(Format::Kineto.memory_needed(302_600_000) >= 217 << 20);
    assert!(Format::Rocprofv3.memory_needed(298_000_000) >= 50 << 20);
    assert!(Format::Rocprofv3.memory_needed(37_000_000) >= 21 << 20);
}

/// `traceEvents` given twice in the top object: orjson, and so TraceLens,
/// keeps the last list, so the tables are of its events alone (they were of
/// both added up), and the summary says how many lists were left out; a last
/// list that is empty leaves nothing.
#[test]
fn a_trace_events_key_given_twice_reads_the_last_list() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = |name: &str, ts: u32| {
        format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 5, "args": {{"correlation": {ts}}}}}"#
        )
    };
    let path = dir.path().join("t.json");
    let text = format!(
        r#"{{"traceEvents": [{}, {}], "other": 1, "traceEvents": [{}]}}"#,
        kernel("first_a", 10),
        kernel("first_b", 20),
        kernel("last", 30)
    );
    std::fs::write(&path, &text).unwrap();
    let summary = summarize_file(&path).unwrap();
    assert_eq!((summary.events, summary.earlier_event_lists), (1, 1));
    let kernels = summary.kernel_summary.unwrap().to_csv();
    assert!(kernels.contains("last") && !kernels.contains("first_"), "{kernels}");
    let empty_last = format!(r#"{{"traceEvents": [{}], "traceEvents": []}}"#, kernel("first", 10));
    std::fs::write(&path, empty_last).unwrap();
    let summary = summarize_file(&path).unwrap();
    assert_eq!((summary.events, summary.earlier_event_lists), (0, 1));
}
