//! The multi-rank collective report against TraceLens' own output on the
//! public multi-rank traces (`tracelens-expected-full/collective/`): the
//! same files, the same columns in order, the same rows (as sets: TraceLens'
//! own runs order tied rows differently), numbers equal as Python's
//! `float()` reads them.

use std::path::{Path, PathBuf};

use trace_report::{RankKernels, collective_report};

/// A CSV's header and rows, each cell a number where it reads as one.
fn read(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    if text == "\n" {
        return (vec![], vec![]);
    }
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let header = reader.headers().unwrap().iter().map(str::to_string).collect();
    let mut rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| {
            r.unwrap()
                .iter()
                .map(|c| match c.parse::<f64>() {
                    Ok(f) => format!("{f:?}"),
                    Err(_) => c.to_string(),
                })
                .collect()
        })
        .collect();
    rows.sort();
    (header, rows)
}

fn check(set: &str, traces: Vec<(u32, PathBuf)>) {
    let Some(public) = test_support::public::public_fixtures() else {
        test_support::skip::missing(
            "the public traces (../shared/fixtures/public)",
            "check out the shared fixtures beside the repository",
        );
        return;
    };
    let summaries: Vec<(u32, trace_summary::Summary)> = traces
        .iter()
        .map(|(rank, path)| {
            let summary = trace_summary::summarize_file(&public.join(path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (*rank, summary)
        })
        .collect();
    let ranks: Vec<RankKernels<'_>> = summaries
        .iter()
        .map(|(rank, s)| RankKernels { rank: *rank, kernels: &s.collective_events })
        .collect();
    let gpus_per_node = summaries[0].1.gpu_devices.filter(|n| *n > 0);
    let report = collective_report(&ranks, gpus_per_node).unwrap();
    let expected_dir = public.join("tracelens-expected-full/collective/kineto-multirank").join(set);
    let mut expected: Vec<String> = std::fs::read_dir(&expected_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    let mut ours: Vec<String> = report.tables.iter().map(|(n, _)| format!("{n}.csv")).collect();
    ours.sort();
    assert_eq!(ours, expected, "{set}: the files");
    for (name, table) in &report.tables {
        let theirs = std::fs::read_to_string(expected_dir.join(format!("{name}.csv"))).unwrap();
        let text = table.to_csv();
        let (h1, r1) = read(&text);
        let (h2, r2) = read(&theirs);
        assert_eq!(h1, h2, "{set}/{name}.csv: the columns");
        assert_eq!(r1.len(), r2.len(), "{set}/{name}.csv: the rows\n{text}\n---\n{theirs}");
        for (a, b) in r1.iter().zip(&r2) {
            assert_eq!(
                a, b,
                "{set}/{name}.csv: a row ({:?})\nours:\n{text}\ntheirs:\n{theirs}",
                h1
            );
        }
        // Integers stay integers, floats floats: byte for byte where the
        // row order is TraceLens' (one row, or none).
        if r2.len() <= 1 {
            assert_eq!(text, theirs, "{set}/{name}.csv");
        }
    }
}

#[test]
fn dlrm_8_ranks_match_tracelens() {
    let dir = Path::new("kineto-multirank/param-dlrm-8rank");
    let names = [
        "worker0_step_12.1694128201545.pt.trace.json",
        "worker1_step_12.1694128201556.pt.trace.json",
        "worker2_step_12.1694128201554.pt.trace.json",
        "worker3_step_12.1694128201557.pt.trace.json",
        "worker4_step_12.1694128201547.pt.trace.json",
        "worker5_step_12.1694128201549.pt.trace.json",
        "worker6_step_12.1694128201553.pt.trace.json",
        "worker7_step_12.1694128201553.pt.trace.json",
    ];
    check(
        "param-dlrm-8rank",
        names.iter().enumerate().map(|(r, n)| (r as u32, dir.join(n))).collect(),
    );
}

#[test]
fn hta_sampled_2_ranks_match_tracelens() {
    let dir = Path::new("kineto-multirank/hta-trace_filter-2rank");
    check(
        "hta-trace_filter-2rank",
        (0..2).map(|r| (r, dir.join(format!("sampled_rank-{r}.json.gz")))).collect(),
    );
}

fn kernel(
    ts: i64,
    dur: i64,
    name: Option<&str>,
    in_nelems: u64,
) -> trace_summary::CollectiveKernel {
    use trace_summary::Cell;
    trace_summary::CollectiveKernel {
        ts: Cell::Int(ts),
        dur: Cell::Int(dur),
        stream: Cell::Int(7),
        process_group_name: Some("0".into()),
        process_group_ranks: Some("[0, 1]".into()),
        collective_name: name.map(Into::into),
        group_size: Some(2),
        dtype: Some("Float".into()),
        in_nelems: Some(in_nelems),
        out_nelems: Some(in_nelems),
        in_split: Some("[]".into()),
        out_split: Some("[]".into()),
    }
}

/// A 2-rank allreduce with its metadata, by the formulas of TraceLens'
/// reference (§11.3, §11.7): rank 0 arrives 10 µs before rank 1, which the
/// others (rank 0) waited for.
#[test]
fn an_allreduce_of_two_ranks_by_the_formulas() {
    let r0 = [kernel(100, 50, Some("allreduce"), 1 << 20)];
    let r1 = [kernel(110, 45, Some("allreduce"), 1 << 20)];
    let ranks = [RankKernels { rank: 0, kernels: &r0 }, RankKernels { rank: 1, kernels: &r1 }];
    let report = collective_report(&ranks, Some(8)).unwrap();
    assert!(!report.simplified);
    let implicit = report.table("nccl_implicit_sync").unwrap().to_csv();
    let algo = (4.0f64 / 1024.0) / (45.0 / 1e6);
    assert_eq!(
        implicit,
        format!(
            "collective_id,Process Group Name,Process Group Ranks,Collective name,Group size,dtype,In msg nelems,Out msg nelems,In msg size (MB),Out msg size (MB),Full msg size (MB),comm_latency,skew in start time,earliest arrival rank,avg_wait_time,skew in end time,algo bw (GB/s),bus bw (GB/s),rank_0_ts,rank_0_dur,rank_1_ts,rank_1_dur,rank_0_wait_time,rank_1_wait_time,node_span\n\
             0_0,0,\"[0, 1]\",allreduce,2,Float,1048576,1048576,4.0,4.0,4.0,45,10,0,5.0,5,{},{},100,50,110,45,10,0,intra_node\n",
            trace_summary::py_float(algo),
            trace_summary::py_float(algo * 1.0),
        )
    );
    let straggler = report.table("straggler_summary").unwrap().to_csv();
    assert_eq!(
        straggler,
        "rank,total_wait_time_us,mean_wait_time_us,times_arrived_last,times_arrived_first,pct_arrived_last,num_collectives,total_nccl_dur_us,node_id\n\
         1,0,0.0,1,0,100.0,1,45,0\n\
         0,10,10.0,0,1,0.0,1,50,0\n"
    );
    let long = report.table("nccl_summary_long").unwrap().to_csv();
    assert!(long.contains("\n0,0,\"[0, 1]\",allreduce,2,Float,1048576,1048576,[],[],7,4.0,4.0,50,50.0,,50,50,1,0,intra_node\n"), "{long}");
}

/// Ranks that disagree on what a matched collective is abort the report,
/// as TraceLens' do; a run without a collective kernel has none.
#[test]
fn a_mismatch_or_no_collective_is_an_error() {
    let r0 = [kernel(100, 50, Some("allreduce"), 1 << 20)];
    let r1 = [kernel(110, 45, Some("allreduce"), 1 << 10)];
    let ranks = [RankKernels { rank: 0, kernels: &r0 }, RankKernels { rank: 1, kernels: &r1 }];
    let err = collective_report(&ranks, None).unwrap_err().to_string();
    assert_eq!(err, "the ranks disagree on the In msg nelems of collective 0_0: 1024, 1048576");
    let none = [RankKernels { rank: 0, kernels: &[] }, RankKernels { rank: 1, kernels: &[] }];
    assert_eq!(collective_report(&none, None), Err(trace_report::CollectiveError::NoCollectives));
}

/// `all_to_allv` collectives (no public trace holds one) get their own
/// tables, by the reference's rules, the largest total first; they do not
/// synchronize ranks, so no implicit-sync row.
#[test]
fn all_to_allv_by_the_formulas() {
    let a2av = |ts, dur, n| kernel(ts, dur, Some("all_to_allv"), n);
    let r0 = [a2av(0, 10, 4), a2av(100, 50, 1 << 20)];
    let r1 = [a2av(2, 10, 4), a2av(110, 60, 1 << 19)];
    let ranks = [RankKernels { rank: 0, kernels: &r0 }, RankKernels { rank: 1, kernels: &r1 }];
    let report = collective_report(&ranks, Some(8)).unwrap();
    let names: Vec<&str> = report.tables.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "nccl_summary_implicit_sync",
            "nccl_summary_long",
            "nccl_summary_all2allv",
            "nccl_long",
            "nccl_implicit_sync",
            "nccl_all2allv"
        ]
    );
    let py = trace_summary::py_float;
    let table = report.table("nccl_all2allv").unwrap().to_csv();
    let mut lines = table.lines();
    let per_rank = |r: u32| {
        [
            "ts",
            "dur",
            "In msg nelems",
            "Out msg nelems",
            "In msg size (MB)",
            "Out msg size (MB)",
            "In split size",
            "Out split size",
            "skew in start time",
            "skew in end time",
        ]
        .map(|c| format!("rank_{r}_{c}"))
        .join(",")
    };
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "collective_id,Process Group Name,Process Group Ranks,Collective name,Group size,dtype,stream,total data communicated (MB),total nelems communicated,wall_time (us),max_rank_dur (us),min_rank_dur (us),avg_rank_dur (us),throughput (GB/s),max_rank_throughput (GB/s),min_rank_throughput (GB/s),size_imbalance,skew in start time,skew in end time,{},{},node_span",
            per_rank(0),
            per_rank(1)
        )
    );
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "0_1,0,\"[0, 1]\",all_to_allv,2,Float,7,6.0,1572864,70,60,50,55.0,{},{},{},{},10,20,\
             100,50,1048576,1048576,4.0,4.0,[],[],0,20,110,60,524288,524288,2.0,2.0,[],[],10,0,intra_node",
            py((6.0 / 1024.0) / (70.0 / 1e6)),
            py((4.0 / 1024.0) / (50.0 / 1e6)),
            py((2.0 / 1024.0) / (60.0 / 1e6)),
            py(4.0 / 3.0),
        )
    );
    assert!(lines.next().unwrap().starts_with("0_0,"));
    assert_eq!(lines.next(), None);
    let summary = report.table("nccl_summary_all2allv").unwrap().to_csv();
    let mut lines = summary.lines();
    assert_eq!(
        lines.next().unwrap(),
        "Process Group Name,dtype,total data communicated (MB)_mean,total data communicated (MB)_median,total data communicated (MB)_min,total data communicated (MB)_max,wall_time (us)_mean,wall_time (us)_median,wall_time (us)_min,wall_time (us)_max,throughput (GB/s)_mean,throughput (GB/s)_median,throughput (GB/s)_min,throughput (GB/s)_max,size_imbalance_mean,size_imbalance_max,max_rank_dur (us)_mean,max_rank_dur (us)_max,skew in start time_mean,skew in start time_max,skew in end time_mean,skew in end time_max,count,Process Group Ranks,Collective name,Group size,Total wall_time (us),Total wall_time (ms)"
    );
    let row = lines.next().unwrap();
    assert!(row.starts_with("0,Float,"), "{row}");
    assert!(row.ends_with(",2,\"[0, 1]\",all_to_allv,2,82,0.082"), "{row}");
    // A mismatch in what all_to_allv ranks agree on aborts the report.
    let mut other = r1.clone();
    other[1].stream = trace_summary::Cell::Int(9);
    let ranks = [RankKernels { rank: 0, kernels: &r0 }, RankKernels { rank: 1, kernels: &other }];
    assert_eq!(
        collective_report(&ranks, None).unwrap_err().to_string(),
        "the ranks disagree on the stream of collective 0_1: 7, 9"
    );
}

/// `coll_analysis`, the per-trace collective table of TraceLens' perf
/// report, on every trace of `tracelens-expected-full/default/` with CPU
/// ops (TraceLens writes it for no other): written where TraceLens wrote
/// it, its rows equal as a multiset.
#[test]
fn coll_analysis_matches_tracelens() {
    let Some(root) = test_support::public::public_fixtures() else { return };
    let base = root.join("tracelens-expected-full/default");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = Vec::new();
    let mut stack = vec![base.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.join("gpu_timeline.csv").is_file() {
                dirs.push(p);
            } else if p.is_dir() {
                stack.push(p);
            }
        }
    }
    assert_eq!(dirs.len(), 24);
    let (mut written, mut failures) = (0, Vec::new());
    for dir in dirs {
        let rel = dir.strip_prefix(&base).unwrap();
        let trace = if rel.starts_with("fixtures") { repo.join(rel) } else { root.join(rel) };
        let summary = trace_summary::summarize_file(&trace).unwrap();
        let ours = match summary.ops_summary {
            Some(_) => trace_report::coll_analysis(&summary.collective_events),
            None => None,
        };
        let theirs = std::fs::read_to_string(dir.join("coll_analysis.csv")).ok();
        match (ours.map(|t| t.to_csv()), theirs) {
            (None, None) => {}
            (Some(ours), Some(theirs)) => {
                written += 1;
                let sorted = |csv: &str| {
                    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
                    lines[1..].sort();
                    lines
                };
                if sorted(&ours) != sorted(&theirs) {
                    failures
                        .push(format!("{}:\n ours:\n{ours}\n theirs:\n{theirs}", rel.display()));
                }
            }
            (o, t) => failures.push(format!(
                "{}: ours {} theirs {}",
                rel.display(),
                o.is_some(),
                t.is_some()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(written, 3);
}
