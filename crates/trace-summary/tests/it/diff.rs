//! `Diff` on the public traces: rows add up to the tables they come from.

use std::path::Path;

use trace_summary::{
    Cell, Diff, DiffRow, StepMarker, Steps, Summary, Table, Tables, summarize, summarize_file,
};

fn column(t: &Table, name: &str) -> f64 {
    let at = t.header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name}"));
    t.rows
        .iter()
        .map(|r| match r[at] {
            Cell::Int(i) => i as f64,
            Cell::Float(f) => f,
            _ => 0.0,
        })
        .sum()
}

fn side_total(rows: &[DiffRow], base: bool) -> (f64, f64) {
    let side = |r: &DiffRow| if base { r.base } else { r.new };
    let time = rows.iter().filter_map(side).map(|m| m.time).sum();
    let count = rows.iter().filter_map(side).filter_map(|m| m.count).sum();
    (time, count)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every kernel and op of each side is in the diff once, with its time and
/// count; deltas and ratios follow from the sides.
fn check(base: &Summary, new: &Summary, diff: &Diff, kernel_time: &str, kernel_count: &str) {
    for (summary, is_base) in [(base, true), (new, false)] {
        let k = summary.kernel_summary.as_ref().unwrap();
        let (time, count) = side_total(&diff.kernels, is_base);
        assert!(close(time, column(k, kernel_time)), "{time} vs {}", column(k, kernel_time));
        assert_eq!(count, column(k, kernel_count));
        if let Some(o) = &summary.ops_summary {
            let (time, count) = side_total(&diff.ops, is_base);
            assert!(close(time, column(o, "total_direct_kernel_time_ms")));
            assert_eq!(count, column(o, "Count"));
        }
        let t = summary.gpu_timeline.as_ref().unwrap();
        let (time, _) = side_total(&diff.timeline, is_base);
        assert!(close(time, column(t, "time ms")));
    }
    let mut names: Vec<&str> = diff.kernels.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), diff.kernels.len(), "a kernel name has one row");
    for rows in [&diff.kernels, &diff.ops] {
        assert!(rows.windows(2).all(|w| w[0].delta().abs() >= w[1].delta().abs()));
        for r in rows.iter() {
            let (b, n) = (r.base.map_or(0.0, |m| m.time), r.new.map_or(0.0, |m| m.time));
            assert_eq!(r.delta(), n - b);
            assert_eq!(
                r.ratio().is_some(),
                r.base.is_some_and(|m| m.time != 0.0) && r.new.is_some()
            );
        }
    }
}

#[test]
fn two_ranks_of_a_real_run() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let dir = root.join("kineto-multirank/param-dlrm-8rank");
    let mut traces: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    traces.sort();
    let s: Vec<Summary> = traces[..3].iter().map(|t| summarize_file(t).unwrap()).collect();
    let t: Vec<Tables> = s.iter().map(Tables::from).collect();
    let diff = Diff::between(&t[0], &t[1]);
    check(&s[0], &s[1], &diff, "Kernel duration (µs)_sum", "Kernel duration (µs)_count");
    // Rank 1 waits longer on its send/recv: the largest change.
    assert!(diff.kernels[0].name.starts_with("ncclKernel_SendRecv"), "{:?}", diff.kernels[0]);
    assert!(diff.kernels[0].delta() > 5000.0);
    let total = diff.timeline.iter().find(|r| r.name == "total_time").unwrap();
    // 13.009 ms -> 18.467 ms (`report summary`'s cross-rank table).
    assert!((total.ratio().unwrap() - 18.467 / 13.009).abs() < 1e-3, "{total:?}");

    // Two pairs at once: each row adds up the pairs' rows.
    let summed = Diff::summed(&[(&t[0], &t[1]), (&t[1], &t[2])]);
    let other = Diff::between(&t[1], &t[2]);
    for row in &summed.kernels {
        let find = |d: &Diff| d.kernels.iter().find(|r| r.name == row.name).cloned();
        let part = |r: Option<DiffRow>| r.map_or(0.0, |r| r.delta());
        assert!(close(row.delta(), part(find(&diff)) + part(find(&other))), "{}", row.name);
    }
    assert_eq!(summed.timeline.len(), diff.timeline.len());
}

#[test]
fn a_rocprofv3_trace_against_itself_changes_nothing() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let s = summarize_file(&root.join("rocprofv3/tracelens/908_results.json.gz")).unwrap();
    let t = Tables::from(&s);
    let diff = Diff::between(&t, &t);
    check(&s, &s, &diff, "Total Kernel Time (ms)", "Count");
    assert!(diff.ops.is_empty(), "rocprofv3 has no ops");
    assert!(diff.kernels.iter().chain(&diff.timeline).all(|r| r.delta() == 0.0));
    let names: Vec<&str> = diff.timeline.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["total_time", "kernel", "memory", "busy_time", "idle"]);
    assert_eq!(side_total(&diff.kernels, true).1, 43_915.0);
    // Its one COMM kernel (TraceLens' kernel_summary says 4158756.678 "ms",
    // really µs, over 1,310 launches), as one row in ms.
    let comm = diff.collective_kernels.expect("a rocprof kernel table has Category");
    let side = comm.new.unwrap();
    assert!(close(side.time, 4158.756678), "{comm:?}");
    assert_eq!((comm.name.as_str(), side.count, comm.delta()), ("collectives", Some(1310.0), 0.0));
    // Its kernels by TraceLens' rocprof categories, in ms: every launch in one.
    let mut names: Vec<&str> = diff.kernel_categories.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    let expected = ["Attention", "COMM", "Elementwise", "GEMM", "Memory", "Normalization"];
    assert_eq!(names, [&expected[..], &["Other", "Reduction"]].concat());
    let gemm = diff.kernel_categories.iter().find(|r| r.name == "GEMM").unwrap().new.unwrap();
    assert!(close(gemm.time, 65.5905), "{gemm:?}");
    assert_eq!(side_total(&diff.kernel_categories, true).1, 43_915.0);
    assert!(diff.op_categories.is_empty(), "rocprofv3 has no ops");
}

/// TraceLens' own CSVs of every public trace, read back, against this
/// crate's tables of the trace: nothing moved (they are the same tables).
#[test]
fn tracelens_reports_read_back_match_the_traces() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let expected = root.join("tracelens-expected");
    let mut reports: Vec<std::path::PathBuf> = crate::public_dir::files_under(&expected)
        .into_iter()
        .filter(|f| f.ends_with("gpu_timeline.csv"))
        .map(|f| f.parent().unwrap().to_path_buf())
        .collect();
    reports.sort();
    assert!(reports.len() >= 20, "{} reports", reports.len());
    for report in &reports {
        let read = Tables::read_dir(report).unwrap();
        let trace = root.join(report.strip_prefix(&expected).unwrap());
        let native = Tables::from(&summarize_file(&trace).unwrap());
        assert_eq!(read.rocprof, native.rocprof, "{}", report.display());
        let diff = Diff::between(&read, &native);
        let rows = diff.timeline.iter().chain(&diff.kernels).chain(&diff.ops);
        assert_eq!(read.rocprof, diff.collective_kernels.is_some(), "{}", report.display());
        // TraceLens' Categories column reads back as this crate's.
        let has_ops = read.ops_summary.as_ref().is_some_and(|t| !t.rows.is_empty());
        assert_eq!(has_ops, !diff.op_categories.is_empty(), "{}", report.display());
        assert_eq!(read.rocprof, !diff.kernel_categories.is_empty(), "{}", report.display());
        let categories = diff.op_categories.iter().chain(&diff.kernel_categories);
        for row in rows.chain(&diff.collective_kernels).chain(categories) {
            let scale = row.base.map_or(0.0, |m| m.time.abs()).max(1.0);
            assert!(row.delta().abs() <= 1e-9 * scale, "{}: {row:?}", report.display());
            assert!(row.base.is_some() && row.new.is_some(), "{}: {row:?}", report.display());
            assert_eq!(row.base.unwrap().count, row.new.unwrap().count, "{}", report.display());
        }
        let kernels = read.kernel_summary.as_ref().map_or(0, |k| k.rows.len());
        assert_eq!(kernels > 0, !diff.kernels.is_empty(), "{}", report.display());
    }
}

#[test]
fn a_report_directory_that_is_not_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = Tables::read_dir(dir.path()).unwrap_err().to_string();
    assert!(err.starts_with("cannot open ") && err.ends_with("gpu_timeline.csv"), "{err}");
    std::fs::write(dir.path().join("gpu_timeline.csv"), "type,ms\ntotal_time,1\n").unwrap();
    let err = Tables::read_dir(dir.path()).unwrap_err().to_string();
    assert!(err.ends_with("has no `time ms` column: not a TraceLens gpu_timeline table"), "{err}");
    std::fs::write(dir.path().join("gpu_timeline.csv"), "type,time ms,percent\nkernel,1.5,\n")
        .unwrap();
    std::fs::write(dir.path().join("kernel_summary.csv"), "Kernel name,x\n\"a,b\",1\n").unwrap();
    let err = Tables::read_dir(dir.path()).unwrap_err().to_string();
    // A `kernel` row: the rocprof tables, whose kernels are keyed by `name`.
    assert!(err.contains("kernel_summary.csv has no `name` column"), "{err}");
    std::fs::write(dir.path().join("kernel_summary.csv"), "\n").unwrap();
    let read = Tables::read_dir(dir.path()).unwrap();
    assert!(read.rocprof && read.kernel_summary.is_none() && read.ops_summary.is_none());
    assert_eq!(read.steps, None, "the CSVs hold no steps");
    let ops = "name,total_direct_kernel_time_ms,Count\naten::mm,1,1\naten::add,1\n";
    std::fs::write(dir.path().join("ops_summary.csv"), ops).unwrap();
    let err = Tables::read_dir(dir.path()).unwrap_err();
    assert!(err.to_string().ends_with("ops_summary.csv as a report table"), "{err}");
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("line: 3"), "{cause}");
}

/// A public trace with its `ProfilerStep#` annotations renamed, as a trace
/// captured without a step schedule (on demand, by iteration) has none.
fn without_profiler_steps(path: &Path) -> Summary {
    let mut text = crate::damage::gunzip(&std::fs::read(path).unwrap());
    let needle = b"\"ProfilerStep#";
    let mut i = 0;
    while let Some(at) = memchr::memmem::find(&text[i..], needle) {
        text[i + at + 1..i + at + 9].copy_from_slice(b"Unmarked");
        i += at + needle.len();
    }
    summarize(text.as_slice(), path).unwrap()
}

/// Without `ProfilerStep#` annotations, the steps are the calls of the
/// optimizer stepped most: on the public traces that hold both, as many as
/// the profiler steps (an EMA optimizer wrapping Shampoo steps with it).
#[test]
fn optimizer_steps_count_when_profiler_steps_are_missing() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    for (trace, count) in [
        ("kineto/hta/negative_queue_length_values_check/rank0.json.gz", 5),
        ("kineto/hta/trace_diff/control/control.json.gz", 6),
        // SGD, with the same steps also annotated on the GPU (not counted).
        ("kineto/tracelens/mi300/resnet_act_checkpoint.json.gz", 3),
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-0.json.gz", 2),
    ] {
        let path = root.join(trace);
        let marked = summarize_file(&path).unwrap();
        assert_eq!(
            marked.steps.map(|s| (s.count, s.marker)),
            Some((count, StepMarker::ProfilerStep))
        );
        let unmarked = without_profiler_steps(&path);
        assert_eq!(
            unmarked.steps,
            Some(Steps { count, marker: StepMarker::OptimizerStep }),
            "{trace}"
        );
        assert_eq!(Tables::from(&unmarked).steps, Some(count));
    }
    // Neither: a trace of inference steps.
    let vllm = root.join("kineto/tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    assert_eq!(summarize_file(&vllm).unwrap().steps, None);
}

/// Per step: each side divided by its ProfilerStep count, so a trace of
/// twice the steps compares with its half.
#[test]
fn per_step_divides_each_side_by_its_steps() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    // Five ProfilerStep# annotations; the dlrm rank holds one.
    let five =
        summarize_file(&root.join("kineto/hta/negative_queue_length_values_check/rank0.json.gz"))
            .unwrap();
    let profiler = |count| Some(Steps { count, marker: StepMarker::ProfilerStep });
    assert_eq!(five.steps, profiler(5));
    let one =
        root.join("kineto-multirank/param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json");
    assert_eq!(summarize_file(&one).unwrap().steps, profiler(1));
    let rocprof = summarize_file(&root.join("rocprofv3/tracelens/908_results.json.gz")).unwrap();
    assert_eq!(rocprof.steps, None);

    let t = Tables::from(&five);
    let mut as_one = t.clone();
    as_one.steps = Some(1);
    // The same tables, counted as 5 steps against 1: a fifth of each row.
    let diff = Diff::per_step(&[(&as_one, &t)]).unwrap();
    assert!(!diff.op_categories.is_empty());
    for row in diff.timeline.iter().chain(&diff.kernels).chain(&diff.ops).chain(&diff.op_categories)
    {
        let (b, n) = (row.base.unwrap(), row.new.unwrap());
        assert!(close(n.time * 5.0, b.time), "{row:?}");
        assert_eq!(n.count.is_some(), b.count.is_some());
        if let (Some(n), Some(b)) = (n.count, b.count) {
            assert!(close(n * 5.0, b), "{row:?}");
        }
    }
    // Steps not known (a report read back): no per-step comparison.
    let mut unknown = t.clone();
    unknown.steps = None;
    assert!(Diff::per_step(&[(&unknown, &t)]).is_none());
    assert_eq!(Diff::summed(&[(&t, &t)]), Diff::per_step(&[(&as_one, &as_one)]).unwrap());
}
