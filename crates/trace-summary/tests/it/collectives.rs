//! `collective_summary` against a plain reading of the public traces'
//! collective kernels.

use std::collections::BTreeMap;

/// The collective kernels of a trace, grouped by call as a whole-document
/// parse finds them: `(name, dtype, group, in, out) -> durations`.
fn calls(path: &std::path::Path) -> BTreeMap<(String, String, i64, i64, i64), Vec<f64>> {
    let file = std::fs::File::open(path).unwrap();
    let doc: serde_json::Value = if path.extension().is_some_and(|e| e == "gz") {
        serde_json::from_reader(flate2::read::GzDecoder::new(file)).unwrap()
    } else {
        serde_json::from_reader(std::io::BufReader::new(file)).unwrap()
    };
    let mut calls: BTreeMap<_, Vec<f64>> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let args = &e["args"];
        if e["cat"] != "kernel" || !args["Collective name"].is_string() {
            continue;
        }
        let key = (
            args["Collective name"].as_str().unwrap().to_string(),
            args["dtype"].as_str().unwrap_or("").to_string(),
            args["Group size"].as_i64().unwrap_or(0),
            args["In msg nelems"].as_i64().unwrap_or(0),
            args["Out msg nelems"].as_i64().unwrap_or(0),
        );
        calls.entry(key).or_default().push(e["dur"].as_f64().unwrap());
    }
    calls
}

#[test]
fn collective_calls_are_counted_and_their_bandwidths_taken() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    for (trace, rows) in [
        // All-reduces and broadcasts of floats between 2 ranks, in several sizes.
        ("kineto/hta/nccl_parser_config/nccl_data.json.gz", 0),
        // One all-gather of bf16 among 8.
        ("kineto/tracelens/b200/eager_trace.json.gz", 1),
    ] {
        let path = root.join(trace);
        let expected = calls(&path);
        assert!(!expected.is_empty(), "{trace}");
        assert!(rows == 0 || expected.len() == rows, "{trace}: {expected:?}");
        let summary = trace_summary::summarize_file(&path).unwrap();
        let table = summary.collective_summary.expect("a collective table");
        assert_eq!(table.rows.len(), expected.len(), "{trace}");
        let col = |name: &str| table.column(name).unwrap();
        let mut totals = Vec::new();
        for row in &table.rows {
            let int = |name: &str| match row[col(name)] {
                trace_summary::Cell::Int(i) => i,
                ref other => panic!("{name}: {other:?}"),
            };
            let key = (
                row[col("Collective name")].text(),
                row[col("dtype")].text(),
                int("Group size"),
                int("In msg nelems"),
                int("Out msg nelems"),
            );
            let durations = &expected[&key];
            let total: f64 = durations.iter().sum();
            let mean = total / durations.len() as f64;
            assert_eq!(int("Count"), durations.len() as i64, "{key:?}");
            let number = |name: &str| row[col(name)].number().unwrap();
            assert!((number("Total duration (µs)") - total).abs() < 1e-6, "{key:?}");
            // nccl-tests: the larger buffer, algbw in GB/s = bytes / µs / 1000.
            let bytes = match key.1.as_str() {
                "Float" => 4,
                "Long" => 8,
                "BFloat16" => 2,
                other => panic!("dtype {other}"),
            } * key.3.max(key.4);
            assert_eq!(int("Message bytes"), bytes, "{key:?}");
            let algbw = bytes as f64 / mean / 1000.0;
            assert!((number("algbw (GB/s)") - algbw).abs() < 1e-9, "{key:?}");
            let n = key.2 as f64;
            let factor = match key.0.as_str() {
                "allreduce" => 2.0 * (n - 1.0) / n,
                "_allgather_base" => (n - 1.0) / n,
                "broadcast" => 1.0,
                other => panic!("collective {other}"),
            };
            assert!((number("busbw (GB/s)") - algbw * factor).abs() < 1e-9, "{key:?}");
            totals.push(total);
        }
        assert!(totals.windows(2).all(|w| w[0] >= w[1]), "largest first: {totals:?}");
    }
    // Traces whose collective kernels carry no such args (PyTorch 1.x), and
    // rocprofv3 traces, have no table.
    for trace in [
        "kineto-multirank/param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json",
        "rocprofv3/tracelens/908_results.json.gz",
    ] {
        let summary = trace_summary::summarize_file(&root.join(trace)).unwrap();
        assert!(summary.collective_summary.is_none(), "{trace}");
    }
}

/// A report's `collective_summary.csv`, read back, compares as its trace:
/// every call paired, nothing moved.
#[test]
fn a_collective_table_read_back_matches_its_trace() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let trace = root.join("kineto/hta/nccl_parser_config/nccl_data.json.gz");
    let summary = trace_summary::summarize_file(&trace).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, table) in [
        ("gpu_timeline", summary.gpu_timeline.as_ref()),
        ("collective_summary", summary.collective_summary.as_ref()),
    ] {
        std::fs::write(dir.path().join(format!("{name}.csv")), table.unwrap().to_csv()).unwrap();
    }
    let read = trace_summary::Tables::read_dir(dir.path()).unwrap();
    let native = trace_summary::Tables::from(&summary);
    let diff = trace_summary::Diff::between(&read, &native);
    assert_eq!(diff.collectives.len(), summary.collective_summary.unwrap().rows.len());
    for row in &diff.collectives {
        assert_eq!(row.base, row.new, "{row:?}");
        assert!(
            row.name.starts_with("allreduce Float[") || row.name.starts_with("broadcast"),
            "{row:?}"
        );
        assert!(row.name.ends_with("], 2 ranks"), "{row:?}");
    }
}

/// A collective kernel whose args name no dtype still counts, under an
/// empty dtype and without bandwidths (its bytes are not known), never
/// under some other string of the trace.
#[test]
fn a_collective_without_a_dtype_has_an_empty_one() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::write(
        &trace,
        r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": {}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic", "pid": 0, "tid": 7, "ts": 10, "dur": 4,
   "args": {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2}}
]}"#,
    )
    .unwrap();
    let summary = trace_summary::summarize_file(&trace).unwrap();
    let table = summary.collective_summary.expect("a collective table");
    let row = &table.rows[0];
    let cell = |name: &str| row[table.column(name).unwrap()].text();
    assert_eq!(cell("Collective name"), "allreduce");
    assert_eq!(cell("dtype"), "");
    assert_eq!(cell("Count"), "1");
    assert_eq!(cell("Message bytes"), "");
    assert_eq!(cell("busbw (GB/s)"), "");
}

/// The kernels TraceLens' multi-rank collective report would match: the
/// HTA pair has them though TraceLens refuses its per-rank reports; a gloo
/// job (the H200 ddp fixtures) has none, where TraceLens fails with
/// `KeyError: 'collective_id'`.
#[test]
fn kernels_the_collective_report_selects_are_counted() {
    let gpu =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gpu/nvidia-h200");
    for rank in 0..2 {
        let path = gpu.join(format!("ddp_rank{rank}.pt.trace.json"));
        let summary = trace_summary::summarize_file(&path).unwrap();
        assert_eq!(summary.collective_kernels, 0, "{}", path.display());
    }
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    for (trace, want) in [
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-0.json.gz", 10),
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-1.json.gz", 10),
    ] {
        let summary = trace_summary::summarize_file(&root.join(trace)).unwrap();
        assert_eq!(summary.collective_kernels, want, "{trace}");
    }
}
