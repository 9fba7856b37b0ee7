//! `Diff` on the public traces: rows add up to the tables they come from.

use trace_summary::{Cell, Diff, DiffRow, Summary, Table, summarize_file};

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

fn side_total(rows: &[DiffRow], base: bool) -> (f64, u64) {
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
        assert_eq!(count as f64, column(k, kernel_count));
        if let Some(o) = &summary.ops_summary {
            let (time, count) = side_total(&diff.ops, is_base);
            assert!(close(time, column(o, "total_direct_kernel_time_ms")));
            assert_eq!(count as f64, column(o, "Count"));
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
    let diff = Diff::between(&s[0], &s[1]);
    check(&s[0], &s[1], &diff, "Kernel duration (µs)_sum", "Kernel duration (µs)_count");
    // Rank 1 waits longer on its send/recv: the largest change.
    assert!(diff.kernels[0].name.starts_with("ncclKernel_SendRecv"), "{:?}", diff.kernels[0]);
    assert!(diff.kernels[0].delta() > 5000.0);
    let total = diff.timeline.iter().find(|r| r.name == "total_time").unwrap();
    // 13.009 ms -> 18.467 ms (`report summary`'s cross-rank table).
    assert!((total.ratio().unwrap() - 18.467 / 13.009).abs() < 1e-3, "{total:?}");

    // Two pairs at once: each row adds up the pairs' rows.
    let summed = Diff::summed(&[(&s[0], &s[1]), (&s[1], &s[2])]);
    let other = Diff::between(&s[1], &s[2]);
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
    let diff = Diff::between(&s, &s);
    check(&s, &s, &diff, "Total Kernel Time (ms)", "Count");
    assert!(diff.ops.is_empty(), "rocprofv3 has no ops");
    assert!(diff.kernels.iter().chain(&diff.timeline).all(|r| r.delta() == 0.0));
    let names: Vec<&str> = diff.timeline.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["total_time", "kernel", "memory", "busy_time", "idle"]);
    assert_eq!(side_total(&diff.kernels, true).1, 43_915);
}
