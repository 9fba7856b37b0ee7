//! The driver over the real public traces, with the stand-in.

use tracelens_driver::{Config, Status, Tool};

use crate::public_dir::public_fixtures;

#[test]
fn every_public_trace_gets_its_job_and_the_multi_rank_sets_their_collective() {
    let Some(dir) = public_fixtures() else { return };
    let out = tempfile::tempdir().unwrap();
    let mut config = Config::new(&dir, out.path(), 2);
    // The expected TraceLens outputs are not inputs.
    config.output_dir = dir.join("tracelens-expected");
    let (found, plan) = tracelens_driver::plan_only(&config).unwrap();
    assert_eq!(found.traces.len(), 29);
    let per_trace = plan.jobs.iter().filter(|j| j.tool != Tool::Collective).count();
    assert_eq!(per_trace, 27 + 1 + 3, "27 PyTorch, 1 rocprof, 3 pftrace reports");
    let mut collectives: Vec<(String, u32)> = plan
        .jobs
        .iter()
        .filter_map(|j| j.collective.as_ref().map(|c| (c.dir.display().to_string(), c.world_size)))
        .collect();
    collectives.sort();
    assert_eq!(
        collectives,
        [
            ("kineto-multirank/hta-trace_filter-2rank".to_string(), 2),
            ("kineto-multirank/param-dlrm-8rank".to_string(), 8)
        ]
    );

    // And for real, through the stand-in: every job ran and none crashed
    // (the Perfetto file fails only because traceconv cannot be downloaded
    // offline, as with the real TraceLens). The six traces TraceLens rejects
    // ("No GPU events found in the trace") are SKIPPED by the precheck, so the
    // 2-rank set of sampled traces gets no collective.
    config.output_dir = out.path().join("reports");
    config.python = crate::standin::Standin::python(&crate::standin::standin().scripts);
    let summary = tracelens_driver::run(&config, &mut |_| {}).unwrap();
    let by_status = |s: Status| {
        summary
            .results
            .iter()
            .filter(|r| r.status == s)
            .map(|r| r.trace_file.clone())
            .collect::<Vec<_>>()
    };
    let failed = by_status(Status::Failure);
    assert!(
        failed.iter().all(|f| f.ends_with(".pftrace")) && failed.len() == 3,
        "{:#?}",
        summary.results
    );
    // The download's failure is explained, with what to do.
    for row in summary.results.iter().filter(|r| r.status == Status::Failure) {
        assert!(
            row.detail.starts_with("urllib.error.URLError: <urlopen error")
                && row.detail.contains("Put traceconv on PATH, or give TraceLens `--traceconv"),
            "{row:#?}"
        );
    }
    // Each says why TraceLens cannot use it; only the two without GPU
    // activity are told so, the CPU-only run's that it saw no GPU.
    let mut skipped: Vec<(String, &str)> = summary
        .results
        .iter()
        .filter(|r| r.status == Status::Skipped && r.trace_file.contains(".json"))
        .map(|r| {
            let why = if r.detail == tracelens_driver::NO_GPU_DETAIL {
                "no GPU activity"
            } else if r.detail == tracelens_driver::NO_GPU_SEEN_DETAIL {
                "no GPU seen"
            } else if r.detail.contains("none is linked to the CPU launch") {
                "unlinked"
            } else if r.detail.contains("older profiler's format") {
                "legacy"
            } else {
                panic!("unexpected detail: {r:#?}")
            };
            (r.trace_file.clone(), why)
        })
        .collect();
    skipped.sort();
    let expected = [
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-0.json.gz", "unlinked"),
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-1.json.gz", "unlinked"),
        // Its deviceProperties list is empty: the whole run was on the CPU.
        ("kineto/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "no GPU seen"),
        // Only cuda_profiler_range events, by a process that saw its GPUs.
        (
            "kineto/hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
            "no GPU activity",
        ),
        ("kineto/hta/trace_diff/control/control.json.gz", "legacy"),
        (
            "kineto/pytorch-kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
            "legacy",
        ),
    ];
    assert_eq!(skipped, expected.map(|(t, w)| (t.to_string(), w)));
    let collectives: Vec<(String, Status)> = summary
        .results
        .iter()
        .filter(|r| r.tracelens_tool == Tool::Collective.script())
        .map(|r| (r.trace_file.clone(), r.status))
        .collect();
    assert!(
        collectives.contains(&(
            "8 per-rank traces in kineto-multirank/param-dlrm-8rank".into(),
            Status::Success
        )) && collectives.contains(&(
            // TraceLens refuses both per-rank reports of this event-sampled
            // pair, but its collective report matches their 10 NCCL
            // kernels each (tracelens-expected-full/collective/).
            "2 per-rank traces in kineto-multirank/hta-trace_filter-2rank".into(),
            Status::Success
        )),
        "{collectives:#?}"
    );
}
