//! Runs of the driver over small trees, against the stand-in.

use std::fs;

use serde_json::json;
use tracelens_driver::{Error, Event, Status, Tool, plan_only};

use crate::{
    Case,
    edit::{in_first_event, in_metadata},
    rows, standin,
};

const GPU: &str = "torch_profiler_output/libkineto_trace_rank0_1.json";
const GPU_RANK1: &str = "torch_profiler_output/libkineto_trace_rank1_2.json";
const CPU_ONLY_PID: &str = "torch_profiler_output/libkineto_trace_4242.json";
const ROCPROF: &str = "rocprof_output/9999_results.json";

#[test]
fn every_kind_is_routed_with_exact_arguments() {
    let mut case = Case::new();
    case.fixture("a/model_rank0.pt.trace.json", GPU);
    case.fixture("b/rank1.json.gz", "traces/model_rank2.pt.trace.json.gz");
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    case.fixture("rocprof_output/model.pftrace", "rocprof_output/model_trace.pftrace");
    case.fixture("rpd_output/trace.rpd", "rpd_output/trace.rpd");
    case.config.gpu_arch = Some("MI300X".into());
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"));
    // The digest directories depend on the temp dir's absolute path.
    let calls: Vec<String> = case
        .calls()
        .iter()
        .map(|c| match c.find("[SCRATCH]/") {
            Some(at) if c[at + 10..].chars().take(12).all(|ch| ch.is_ascii_hexdigit()) => {
                format!("{}[SCRATCH]/[DIGEST]{}", &c[..at], &c[at + 22..])
            }
            _ => c.clone(),
        })
        .collect();
    insta::assert_snapshot!(calls.join("\n"));
    assert_eq!(summary.discovered["pytorch"], 2);
}

#[test]
fn broken_traces_are_analyzed_through_a_sanitized_copy_and_the_original_is_untouched() {
    let case = Case::new();
    let rocprof = case.fixture("rocprof_output/9999_results.json", ROCPROF);
    let kineto = case.fixture("broken/names.pt.trace.json", "broken/python_names.pt.trace.json");
    let before = (fs::read(&rocprof).unwrap(), fs::read(&kineto).unwrap());
    let summary = case.run();
    assert_eq!((fs::read(&rocprof).unwrap(), fs::read(&kineto).unwrap()), before);
    assert!(summary.results.iter().all(|r| r.status == Status::Success), "{:#?}", summary.results);
    // the summary names the originals; TraceLens read copies in the scratch dir
    let names: Vec<_> = summary.repairs.iter().map(|r| r.trace_file.as_str()).collect();
    assert_eq!(names, ["broken/names.pt.trace.json", "rocprof_output/9999_results.json"]);
    assert_eq!(summary.repairs[1].report.repairs[0].key.as_deref(), Some("kname"));
    let calls = case.calls().join("\n");
    assert!(
        calls.contains("[SCRATCH]/")
            && !calls.contains("[TMP]/run/rocprof_output/9999_results.json"),
        "{calls}"
    );
    // and the scratch dir is gone
    assert!(
        !fs::read_dir(case.dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("madengine-tracelens-"))
    );
}

/// The stand-in's loader (TraceLens' orjson semantics) on `trace`: it must
/// fail; its stderr.
fn standin_refuses(case: &Case, trace: &std::path::Path) -> String {
    #[allow(clippy::disallowed_methods, reason = "asking the stand-in directly")]
    let direct = std::process::Command::new(&case.config.python)
        .args(["-c", "import sys; from TraceLens._standin import load; load(sys.argv[1])"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(!direct.status.success(), "the stand-in loads {}", trace.display());
    String::from_utf8_lossy(&direct.stderr).into_owned()
}

#[test]
fn raw_windows_paths_non_finite_numbers_and_stray_quotes_are_repaired_too() {
    let case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    // A memcpy bandwidth older Kineto wrote as `inf`, a path written raw, and
    // a Python name with quotes in it.
    let body = body.replacen(
        "\"args\": {",
        r#""args": {"memory bandwidth (GB/s)": inf, "Source": "C:\Users\prof\model.py", "Python": "step(mode="fast")", "#,
        1,
    );
    let trace = case.write("rank0_trace.json", &body);
    // The stand-in, as orjson, refuses the original.
    assert!(standin_refuses(&case, &trace).contains("JSONDecodeError"));
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success, "{:#?}", summary.results);
    let counts = &summary.repairs[0].report.counts;
    assert_eq!(
        (counts.invalid_escapes, counts.non_finite, counts.stray_quotes),
        (3, 1, 2),
        "\\U \\p \\m, inf, two quotes"
    );
}

#[test]
fn a_byte_order_mark_is_dropped_from_the_copy() {
    let case = Case::new();
    let body = [&b"\xef\xbb\xbf"[..], &fs::read(standin_fixture(GPU)).unwrap()].concat();
    let trace = case.write("rank0_trace.json", &body);
    // The stand-in, as orjson 3.13, refuses the original.
    assert!(standin_refuses(&case, &trace).contains("byte order mark (BOM) is not supported"));
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success, "{:#?}", summary.results);
    assert_eq!(summary.repairs[0].report.counts.byte_order_marks, 1);
    assert_eq!(fs::read(&trace).unwrap(), body, "the original is left alone");
}

#[test]
fn gzip_traces_with_defects_are_sanitized_too() {
    let case = Case::new();
    let plain = fs::read(standin_fixture("broken/python_names.pt.trace.json")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &plain).unwrap();
    case.write("rank0.json.gz", gz.finish().unwrap());
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success, "{:#?}", summary.results);
    assert_eq!(summary.repairs.len(), 1);
}

fn standin_fixture(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run").join(rel)
}

#[test]
fn same_basenames_on_different_nodes_keep_apart() {
    let case = Case::new();
    case.fixture("node_0/trace.json", "rpd_output/trace.json");
    case.fixture("node_1/trace.json", "broken/python_names.pt.trace.json");
    case.fixture("node_2/trace.json", "broken/python_names.pt.trace.json");
    let summary = case.run();
    let outputs: Vec<_> = summary
        .results
        .iter()
        .filter(|r| r.tracelens_tool != Tool::Collective.script())
        .map(|r| r.output.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(outputs, ["node_0_trace_csv", "node_1_trace_csv", "node_2_trace_csv"]);
    // two sanitized copies with the same basename, in different digest dirs
    let calls = case.calls();
    let inputs: std::collections::BTreeSet<_> = calls
        .iter()
        .filter(|c| c.contains("[SCRATCH]"))
        .map(|c| c.split("[SCRATCH]/").nth(1).unwrap()[..12].to_string())
        .collect();
    assert_eq!(inputs.len(), 2, "{calls:#?}");
}

/// A trace whose report would be named as the collective report is keeps
/// it: the collective report takes the next name (each job removes its
/// report of an earlier run before it runs).
#[test]
fn a_trace_named_as_the_collective_report_keeps_its_report() {
    let case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank1_trace.json", GPU_RANK1);
    case.fixture("multi_rank_collective.json", ROCPROF);
    let (_, plan) = plan_only(&case.config).unwrap();
    let bases: Vec<(Tool, String)> = plan
        .jobs
        .iter()
        .map(|j| (j.tool, j.out_base.file_name().unwrap().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(
        bases,
        [
            (Tool::Pytorch, "rank0_trace".into()),
            (Tool::Pytorch, "rank1_trace".into()),
            (Tool::Rocprof, "multi_rank_collective".into()),
            (Tool::Collective, "multi_rank_collective_2".into()),
        ]
    );
}

/// TraceLens' loader goes by the name's suffix, madengine by the bytes: a
/// gzipped `.json` and a plain `.json.gz` (a download decompressed on the
/// way keeps its `.gz`) are read by TraceLens under a name that fits, in
/// their own reports and in the collective one, with a note that says so;
/// a sanitized copy is named to fit its output too.
#[test]
fn a_trace_whose_name_misleads_tracelens_is_read_under_one_that_fits() {
    let case = Case::new();
    let plain = fs::read(case.fixture("rank0_trace.json", GPU)).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &plain).unwrap();
    case.write("rank0_trace.json", gz.finish().unwrap());
    case.fixture("rank1_trace.json.gz", GPU_RANK1);
    let mut notes = Vec::new();
    let summary = tracelens_driver::run(&case.config, &mut |event| {
        if let Event::Note(text) = event {
            notes.push(text);
        }
    })
    .unwrap();
    let tool = "TraceLens_generate_perf_report_pytorch |";
    assert_eq!(
        rows(&summary).iter().map(|r| r.trim_end()).collect::<Vec<_>>(),
        [
            format!("SUCCESS pytorch rank0_trace.json {tool}"),
            format!("SUCCESS pytorch rank1_trace.json.gz {tool}"),
            "SUCCESS pytorch 2 per-rank traces \
             TraceLens_generate_multi_rank_collective_report_pytorch |"
                .into(),
        ]
    );
    assert_eq!(
        notes,
        [
            "rank0_trace.json is gzip-compressed, but TraceLens goes by the name (.json: plain \
             JSON, .json.gz: gzip): analyzing it as rank0_trace.json.gz",
            "rank1_trace.json.gz is not gzip-compressed, but TraceLens goes by the name (.json: \
             plain JSON, .json.gz: gzip): analyzing it as rank1_trace.json",
        ]
    );
    let calls = case.calls();
    let resolved = calls.iter().find(|c| c.contains("resolved")).unwrap();
    assert!(
        resolved.contains("rank0_trace.json.gz\"") && resolved.contains("rank1_trace.json\""),
        "{resolved}"
    );
    // With a repair to make, a gzipped `.json` is read through its copy,
    // written as its name says: plain.
    let case = Case::new();
    let bad = String::from_utf8(plain).unwrap().replacen("\"ph\"", "\"x\": \"\u{1}\", \"ph\"", 1);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, bad.as_bytes()).unwrap();
    case.write("rank0_trace.json", gz.finish().unwrap());
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success, "{:?}", rows(&summary));
    assert_eq!(summary.repairs.len(), 1);
}

#[test]
fn collective_from_file_names() {
    let case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank1_trace.json", GPU_RANK1);
    let summary = case.run();
    let collective = summary.results.last().unwrap();
    assert_eq!(
        (collective.status, collective.trace_file.as_str()),
        (Status::Success, "2 per-rank traces")
    );
    let calls = case.calls();
    let resolved = calls.iter().find(|c| c.contains("resolved")).unwrap();
    assert!(
        resolved.contains(r#""0": "rank0_trace.json""#)
            && resolved.contains(r#""1": "rank1_trace.json""#),
        "{resolved}"
    );
    assert!(calls.iter().any(|c| c.contains(r#""--world_size", "2""#)));
}

#[test]
fn collective_from_distributed_info_for_pid_named_traces() {
    // On-demand dynolog traces are named by pid; their ranks come from distributedInfo.
    let case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    case.write("libkineto_trace_111.json", &body);
    case.write(
        "libkineto_trace_222.json",
        body.replace("\"rank\": 0, \"world_size\": 2", "\"rank\": 1, \"world_size\": 2"),
    );
    let summary = case.run();
    let collective = summary.results.last().unwrap();
    assert_eq!(collective.status, Status::Success, "{:#?}", summary.results);
    let calls = case.calls();
    let resolved = calls.iter().find(|c| c.contains("resolved")).unwrap();
    assert!(resolved.contains(r#""0": "rank0_libkineto_trace_111.json""#), "{resolved}");
    assert!(resolved.contains(r#""1": "rank1_libkineto_trace_222.json""#), "{resolved}");
}

#[test]
fn a_run_without_nccl_collectives_skips_its_collective_report() {
    // A gloo run on GPUs: kernels on every rank, collectives on the CPU.
    let case = Case::new();
    for (rank, fixture) in [(0, GPU), (1, GPU_RANK1)] {
        let body = fs::read_to_string(standin_fixture(fixture)).unwrap();
        let gloo = body.replace("nccl", "gloo");
        assert!(!gloo.to_lowercase().contains("nccl"), "no collective kernel left");
        case.write(&format!("rank{rank}_trace.json"), &gloo);
    }
    let summary = case.run();
    let statuses: Vec<Status> = summary.results.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Status::Success, Status::Success, Status::Skipped]);
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @r#"SKIPPED pytorch 2 per-rank traces TraceLens_generate_multi_rank_collective_report_pytorch | the traces hold no NCCL/RCCL collective kernels, so there is no collective to analyze (TraceLens: "No NCCL collective events found"). A gloo run has none: its collectives run on the CPU."#);
    // The precheck read every rank: TraceLens was not run to fail.
    assert!(!case.ran("generate_multi_rank_collective_report_pytorch"));
    // Without it, TraceLens runs, fails (`KeyError: 'collective_id'`) and
    // says why, which makes the same row.
    let mut case = case;
    case.config.precheck = false;
    let unchecked = case.run();
    assert_eq!(rows(&unchecked).last(), rows(&summary).last());
    assert!(case.ran("generate_multi_rank_collective_report_pytorch"), "TraceLens said why");
}

#[test]
fn skip_reasons_say_why() {
    // k of n carry a rank
    let case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("libkineto_trace_9.json", "rpd_output/trace.json");
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @"SKIPPED pytorch 2 PyTorch traces TraceLens_generate_multi_rank_collective_report_pytorch | the collective report needs each trace's rank, from its filename or its distributedInfo, and only 1 of 2 carry one. Traces captured on demand through dynolog are named after the process id.");

    // an explicit world size below 2
    let mut case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank1_trace.json", GPU_RANK1);
    case.config.world_size = 1;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @"SKIPPED pytorch 2 PyTorch traces TraceLens_generate_multi_rank_collective_report_pytorch | the world size is 1, but a collective report needs at least 2 ranks.");

    // two runs under one root: each complete one gets its own report; a clash is named
    let case = Case::new();
    for run in ["job_1", "job_2"] {
        case.fixture(&format!("{run}/rank0_trace.json"), GPU);
        case.fixture(&format!("{run}/rank1_trace.json"), GPU_RANK1);
    }
    case.fixture("job_3/rank0_a.json", GPU);
    case.fixture("job_3/rank0_b.json", GPU);
    let summary = case.run();
    let collectives: Vec<_> =
        rows(&summary).into_iter().filter(|r| r.contains("collective")).collect();
    insta::assert_snapshot!(collectives.join("\n"), @r"
    SUCCESS pytorch 2 per-rank traces in job_1 TraceLens_generate_multi_rank_collective_report_pytorch | 
    SUCCESS pytorch 2 per-rank traces in job_2 TraceLens_generate_multi_rank_collective_report_pytorch | 
    SKIPPED pytorch 2 ranked PyTorch traces in job_3 TraceLens_generate_multi_rank_collective_report_pytorch | rank 0 is claimed by 2 traces (job_3/rank0_a.json, job_3/rank0_b.json)
    ");
}

#[test]
fn a_collective_of_cpu_only_ranks_is_skipped_not_failed() {
    let case = Case::new();
    let body = fs::read_to_string(standin_fixture(CPU_ONLY_PID)).unwrap();
    case.write("libkineto_trace_1.json", body.replace("\"rank\": 1,", "\"rank\": 0,"));
    case.write("libkineto_trace_2.json", &body);
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r#"
    SKIPPED pytorch libkineto_trace_1.json TraceLens_generate_perf_report_pytorch | the trace holds no GPU activity, so there is nothing to report. One common cause: dynolog configures every process that registered with it, which for a torchrun job includes the launcher, and the launcher only supervises its children and runs no kernels.
    SKIPPED pytorch libkineto_trace_2.json TraceLens_generate_perf_report_pytorch | the trace holds no GPU activity, so there is nothing to report. One common cause: dynolog configures every process that registered with it, which for a torchrun job includes the launcher, and the launcher only supervises its children and runs no kernels.
    SKIPPED pytorch 2 per-rank traces TraceLens_generate_multi_rank_collective_report_pytorch | the traces hold no NCCL/RCCL collective kernels, so there is no collective to analyze (TraceLens: "No NCCL collective events found"). A gloo run has none: its collectives run on the CPU.
    "#);
    assert!(!summary.any_failed());
}

#[test]
fn the_precheck_skips_traces_tracelens_rejects_without_running_it() {
    let log_of = |case: &Case| {
        let summary = case.run();
        let row = &summary.results[0];
        assert_eq!(row.status, Status::Skipped, "{row:?}");
        fs::read_to_string(row.log.as_ref().unwrap()).unwrap()
    };
    let mut case = Case::new();
    case.fixture("libkineto_trace_4242.json", CPU_ONLY_PID);
    let log = log_of(&case);
    assert!(log.contains("outcome: NoGpuActivity") && log.contains("it was not run"), "{log}");
    // --no-precheck: TraceLens runs and says so itself
    case.config.precheck = false;
    let log = log_of(&case);
    assert!(log.starts_with("$ ") && log.contains(tracelens_driver::NO_GPU_EVENTS), "{log}");
    // a trace with linked GPU activity is never pre-empted
    let case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    assert_eq!(case.run().results[0].status, Status::Success);
}

#[test]
fn a_cut_trace_fails_with_why_and_is_salvaged_on_request() {
    use std::io::Write as _;
    let case = Case::new();
    let body = fs::read(standin_fixture(GPU)).unwrap();
    // Cut in its last event.
    case.write("cut_rank0.pt.trace.json", &body[..body.len() - 150]);
    // A longer trace (its events twenty times over), gzipped and cut near its end.
    let mut long: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let events = long["traceEvents"].as_array().unwrap().clone();
    long["traceEvents"] = (0..20).flat_map(|_| events.clone()).collect::<Vec<_>>().into();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&serde_json::to_vec(&long).unwrap()).unwrap();
    let gz = gz.finish().unwrap();
    case.write("gz_rank1.pt.trace.json.gz", &gz[..gz.len() * 95 / 100]);
    let summary = case.run();
    // Each of the two is one a salvage reads (the caller says how to ask).
    let salvageable: Vec<bool> =
        summary.results.iter().map(tracelens_driver::Row::salvageable).collect();
    assert_eq!(salvageable.iter().filter(|s| **s).count(), 2, "{salvageable:?}");
    let rows = rows(&summary);
    assert_eq!(rows.len(), 3, "{rows:#?}");
    insta::assert_snapshot!(rows.join("\n"), @"
    FAILURE pytorch cut_rank0.pt.trace.json TraceLens_generate_perf_report_pytorch | cut short: its JSON ends after 2507 bytes, with 8 complete events before the cut; TraceLens cannot parse it and was not run (a salvage analyzes the events before the cut)
    FAILURE pytorch gz_rank1.pt.trace.json.gz TraceLens_generate_perf_report_pytorch | cut short: its gzip stream ends early (failed to read the input at byte 27588: incomplete deflate stream); TraceLens cannot parse it and was not run (a salvage analyzes the events before the cut)
    FAILURE pytorch 2 per-rank traces TraceLens_generate_multi_rank_collective_report_pytorch | not run: TraceLens cannot parse per-rank trace(s) (cut_rank0.pt.trace.json, gz_rank1.pt.trace.json.gz)
    ");
    for row in &summary.results[..2] {
        let log = fs::read_to_string(row.log.as_ref().unwrap()).unwrap();
        assert_eq!(log, format!("madengine: {}\n", row.detail));
    }
    // TraceLens itself never ran on them.
    assert!(!case.ran("generate_perf_report_pytorch"), "{:#?}", case.calls());

    // --salvage: TraceLens reads closed copies, and the rows say so.
    let mut case = case;
    case.config.salvage = true;
    let summary = case.run();
    let salvaged = crate::rows(&summary);
    for (row, trace) in summary.results.iter().zip(["cut_rank0.pt.trace.json", "gz_rank1"]) {
        assert_eq!(row.status, Status::Success, "{salvaged:#?}");
        assert!(
            row.detail.starts_with("salvaged (") && row.detail.contains(trace),
            "{salvaged:#?}"
        );
    }
    // The collective report reads the closed copies too.
    let collective = &summary.results[2];
    assert_eq!(collective.status, Status::Success, "{salvaged:#?}");
    assert!(collective.detail.contains("cut_rank0") && collective.detail.contains("gz_rank1"));
    assert_eq!(summary.repairs.len(), 2);
    assert!(summary.repairs.iter().all(|r| r.report.cut.is_some()));
}

#[test]
fn a_trace_with_data_after_its_end_fails_up_front_and_is_salvaged_on_request() {
    let mut case = Case::new();
    let mut body = fs::read(standin_fixture(GPU)).unwrap();
    let document = body.len();
    body.extend_from_slice(b"\nW1130 12:00:00 rank 0: profiler done\n");
    case.write("tail.pt.trace.json", &body);
    let summary = case.run();
    let rows = rows(&summary);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(
        rows[0],
        format!(
            "FAILURE pytorch tail.pt.trace.json TraceLens_generate_perf_report_pytorch | data after \
             the end of its JSON document, {} bytes in; TraceLens cannot parse it and was not run \
             (a salvage analyzes the document without it)",
            document + 1
        )
    );
    assert!(!case.ran("generate_perf_report_pytorch"), "{:#?}", case.calls());
    // --no-precheck: the stand-in, like orjson, refuses it.
    case.config.precheck = false;
    assert_eq!(case.run().results[0].status, Status::Failure);

    // --salvage: TraceLens reads the document alone, and the row says so.
    case.config.precheck = true;
    case.config.salvage = true;
    let summary = case.run();
    insta::assert_snapshot!(crate::rows(&summary)[0], @"SUCCESS pytorch tail.pt.trace.json TraceLens_generate_perf_report_pytorch | salvaged (tail.pt.trace.json with 37 bytes of data after the end of its JSON document): the report covers the whole JSON document");
    assert_eq!(summary.results[0].status, Status::Success);
    let cut = summary.repairs[0].report.cut.as_ref().unwrap();
    assert_eq!((cut.kind, cut.dropped), (trace_sanitize::CutKind::DataAfterEnd, 37));
}

#[test]
fn utf16_perfetto_and_compressed_traces_and_text_before_a_trace_fail_up_front() {
    let case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    let utf16: Vec<u8> =
        std::iter::once(0xfeff).chain(body.encode_utf16()).flat_map(u16::to_le_bytes).collect();
    case.write("w.pt.trace.json", &utf16);
    case.write("log.pt.trace.json", format!("W1130 rank {{0}}: start\n{body}").as_bytes());
    // A Perfetto trace under a Kineto name: two packets, a timestamp and a
    // sequence id each.
    case.write("p.pt.trace.json", [0x0a, 4, 0x40, 1, 0x50, 1, 0x0a, 4, 0x40, 2, 0x50, 1]);
    // A zstd trace under a Kineto name.
    case.write("z.pt.trace.json", [0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58, 0x9c, 0x00]);
    let summary = case.run();
    let root = case.dir.path().join("run").display().to_string();
    insta::assert_snapshot!(rows(&summary).join("\n").replace(&root, "[RUN]"), @r"
    FAILURE pytorch log.pt.trace.json TraceLens_generate_perf_report_pytorch | not a trace: it starts with 'W', not a JSON object (a log line before the trace?); TraceLens cannot parse it and was not run (remove what was written before the trace's first `{`)
    FAILURE pytorch p.pt.trace.json TraceLens_generate_perf_report_pytorch | a Perfetto protobuf trace, not JSON; TraceLens cannot parse it and was not run (name it `.pftrace`: TraceLens' pftrace reports read it)
    FAILURE pytorch w.pt.trace.json TraceLens_generate_perf_report_pytorch | UTF-16LE text, not UTF-8 (re-saved on Windows?); TraceLens cannot parse it and was not run (convert it first, e.g. with `iconv -f UTF-16LE -t UTF-8`)
    FAILURE pytorch z.pt.trace.json TraceLens_generate_perf_report_pytorch | zstd-compressed data, not JSON; TraceLens cannot parse it and was not run (decompress it first, `zstd -dc [RUN]/z.pt.trace.json > [RUN]/z.decompressed.pt.trace.json`, then analyze that)
    SKIPPED pytorch 4 PyTorch traces TraceLens_generate_multi_rank_collective_report_pytorch | the collective report needs each trace's rank, from its filename or its distributedInfo, and only 1 of 4 carry one. Traces captured on demand through dynolog are named after the process id.
    ");
    assert!(summary.results[..4].iter().all(|r| r.status == Status::Failure));
    assert!(!case.ran("generate_perf_report_pytorch"), "{:#?}", case.calls());
}

/// A string that a quote inside it ended early, or that a backslash at its
/// end kept open, fails up front: no repair mends it, and TraceLens would
/// only say that orjson refused the file. So does a break in a part
/// trace-summary's tables do not read.
#[test]
fn strings_a_quote_or_backslash_broke_fail_up_front() {
    let mut case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    case.write("early.pt.trace.json", in_first_event(&body, "\"note\": \"a\"]\"").as_bytes());
    case.write("open.pt.trace.json", in_metadata(&body, "\"dir\": \"C:\\tmp\\\"").as_bytes());
    // In metadata trace-summary's tables do not read, but orjson does.
    case.write("meta.pt.trace.json", in_metadata(&body, "\"m\": {\"a\": \"b\": 1}").as_bytes());
    case.config.mode = tracelens_driver::Mode::Pytorch;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r"
    FAILURE pytorch early.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 727, `]` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?); TraceLens cannot parse it and was not run (no repair applies: mend the string before it in a copy)
    FAILURE pytorch meta.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 2671, `:` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?); TraceLens cannot parse it and was not run (no repair applies: mend the string before it in a copy)
    FAILURE pytorch open.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: its last string never ends, so the rest of the file reads as one string (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?); TraceLens cannot parse it and was not run (no repair applies: mend that string in a copy, or a salvage analyzes the events before it)
    ");
    for name in ["early.pt.trace.json", "open.pt.trace.json", "meta.pt.trace.json"] {
        assert!(!case.ran(name), "{name}: {:#?}", case.calls());
    }
    // --salvage analyzes the events before the string that never ends (the
    // others stay broken: what salvage keeps holds the break).
    case.config.salvage = true;
    let summary = case.run();
    let open = summary.results.iter().find(|r| r.detail.contains("open.pt.trace.json"));
    insta::assert_snapshot!(format!("{:?} {}", open.unwrap().status, open.unwrap().detail), @r"
    Success salvaged (open.pt.trace.json cut before its last string, which never ends): the report covers the events before the cut
    ");
    assert!(case.ran("open.pt.trace.json"), "{:#?}", case.calls());
}

/// A number JSON does not have fails up front too, in the events or in the
/// metadata, with what to do about it; so does what orjson refuses though
/// JSON allows it: a number beyond a double's range, brackets 1,025 levels
/// deep.
#[test]
fn numbers_json_does_not_have_and_orjsons_limits_fail_up_front() {
    let mut case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    case.write("args.pt.trace.json", in_first_event(&body, "\"queue\": 0x7f00").as_bytes());
    case.write("meta.pt.trace.json", in_metadata(&body, "\"v\": 6.2.4").as_bytes());
    case.write("big.pt.trace.json", in_first_event(&body, "\"bytes\": 1e400").as_bytes());
    let nest = format!("\"nest\": {}{}", "[".repeat(1024), "]".repeat(1024));
    case.write("deep.pt.trace.json", in_metadata(&body, &nest).as_bytes());
    case.config.mode = tracelens_driver::Mode::Pytorch;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r"
    FAILURE pytorch args.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 725, `0x7f00` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?); TraceLens cannot parse it and was not run (no repair applies: quote it, or write it as a JSON number, in a copy)
    FAILURE pytorch big.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 725, `1e400` (too large for a double) where a value goes (orjson, which TraceLens loads traces with, reads no number beyond a double's range (±1.7976931348623157e308): an overflowed or uninitialized value, or one printed from a wider type?); TraceLens cannot parse it and was not run (no repair applies: quote it, or write null or a number a double holds, in a copy)
    FAILURE pytorch deep.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 3688, `[` 1,025 levels deep where a value goes (orjson, which TraceLens loads traces with, reads at most 1,024 levels of `{` and `[`: a recursive structure written out whole?); TraceLens cannot parse it and was not run (no repair applies: nest it less deeply in a copy)
    FAILURE pytorch meta.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: at byte 2662, `6.2.4` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?); TraceLens cannot parse it and was not run (no repair applies: quote it, or write it as a JSON number, in a copy)
    ");
    for name in ["args", "meta", "big", "deep"] {
        assert!(!case.ran(&format!("{name}.pt.trace.json")), "{name}: {:#?}", case.calls());
    }
}

/// The precheck's offsets are the trace's own, not its repaired copy's: a
/// control byte repaired before the break (one byte, six in the copy)
/// moves nothing.
#[test]
fn the_precheck_says_where_in_the_trace_itself() {
    let mut case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    let trace = body.replacen("\"ph\": \"X\"", "\"ph\": \"X\u{1}\", \"note\": \"a\"]\"", 1);
    let at = trace.find("a\"]").unwrap() + 2;
    case.write("t.pt.trace.json", trace.as_bytes());
    case.config.mode = tracelens_driver::Mode::Pytorch;
    let summary = case.run();
    let row = &summary.results[0];
    assert_eq!(row.status, Status::Failure, "{row:?}");
    assert!(row.detail.contains(&format!("not JSON: at byte {at}, `]`")), "{}", row.detail);
}

/// A bare word that is not JSON fails up front whether trace-summary's
/// tables read that part or not; early Kineto's bare `N/A` is repaired.
#[test]
fn bare_words_that_are_not_json_fail_up_front() {
    let mut case = Case::new();
    let body = fs::read_to_string(standin_fixture(GPU)).unwrap();
    case.write("event.pt.trace.json", in_first_event(&body, "\"bad\": None").as_bytes());
    let top = body.replacen('{', "{\"schemaVersion\": True, ", 1);
    case.write("top.pt.trace.json", top.as_bytes());
    case.write("na.pt.trace.json", in_first_event(&body, "\"device\": N/A").as_bytes());
    case.config.mode = tracelens_driver::Mode::Pytorch;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r#"
    FAILURE pytorch event.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: `None` (the value of "bad") at byte 723 is a bare word where a value goes (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?); TraceLens cannot parse it and was not run (no repair applies: replace it with a JSON value, such as null, in a copy)
    SUCCESS pytorch na.pt.trace.json TraceLens_generate_perf_report_pytorch | 
    FAILURE pytorch top.pt.trace.json TraceLens_generate_perf_report_pytorch | not JSON: `True` (the value of "schemaVersion") at byte 19 is a bare word where a value goes (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?); TraceLens cannot parse it and was not run (no repair applies: replace it with a JSON value, such as null, in a copy)
    "#);
    assert!(
        !case.ran("event.pt.trace.json") && !case.ran("top.pt.trace.json"),
        "{:#?}",
        case.calls()
    );
    // A bare word is not what a salvage mends.
    assert!(!summary.results.iter().any(tracelens_driver::Row::salvageable));
    // The stand-in, like orjson, read the repaired copy of the N/A one.
    assert_eq!(summary.repairs.len(), 1, "{:#?}", summary.repairs);
    assert_eq!(summary.repairs[0].report.counts.unquoted_not_available, 1);
}

#[test]
fn a_cut_rocprofv3_trace_fails_up_front_too() {
    let case = Case::new();
    let body = fs::read(standin_fixture(ROCPROF)).unwrap();
    case.write("rocprof_output/9999_results.json", &body[..body.len() * 9 / 10]);
    let summary = case.run();
    let rows = rows(&summary);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    insta::assert_snapshot!(rows[0], @"FAILURE rocprof_json rocprof_output/9999_results.json TraceLens_generate_perf_report_rocprof | cut short: its JSON ends after 841 bytes; TraceLens cannot parse it and was not run (a salvage analyzes the events before the cut)");
    assert_eq!(summary.results[0].status, Status::Failure);
    assert!(!case.ran("generate_perf_report_rocprof"), "{:#?}", case.calls());

    // --no-precheck: TraceLens runs on it and fails itself.
    let mut case = case;
    case.config.precheck = false;
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Failure);
    assert!(case.ran("generate_perf_report_rocprof"), "{:#?}", case.calls());

    // --salvage: TraceLens reads the closed copy.
    case.config.precheck = true;
    case.config.salvage = true;
    let summary = case.run();
    let row = &summary.results[0];
    assert_eq!(row.status, Status::Success, "{row:?}");
    assert!(row.detail.starts_with("salvaged ("), "{row:?}");
}

#[test]
fn extra_arguments_reach_the_commands_that_take_them() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    // The stand-ins parse their arguments as TraceLens' argparse CLIs do, so
    // an option sent to a tool that lacks it fails that job (exit 2).
    case.config.extra_args =
        ["--topk_ops", "5", "--topk_kernels=3", "--short_kernel_threshold_us", "20"]
            .map(Into::into)
            .to_vec();
    let mut notes = Vec::new();
    let summary = tracelens_driver::run(&case.config, &mut |event| {
        if let tracelens_driver::Event::Note(text) = event {
            notes.push(text);
        }
    })
    .unwrap();
    assert!(!summary.any_failed(), "{:#?}", rows(&summary));
    assert_eq!(summary.results.len(), 2);
    let calls = case.calls();
    let call = |entry: &str| calls.iter().find(|c| c.contains(entry)).unwrap().clone();
    assert!(
        call("perf_report_pytorch").ends_with(
            r#""--enable_kernel_summary", "--topk_ops", "5", "--short_kernel_threshold_us", "20"]}"#
        ),
        "{calls:#?}"
    );
    assert!(
        call("perf_report_rocprof")
            .ends_with(r#""--topk_kernels=3", "--short_kernel_threshold_us", "20"]}"#),
        "{calls:#?}"
    );
    // Every option is one a planned tool documents: nothing to warn about.
    assert!(notes.iter().all(|n| !n.contains("--")), "{notes:?}");
}

#[test]
fn extra_arguments_madengine_sets_fail_before_anything_runs() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.config.extra_args = vec!["--output_csvs_dir".into(), "/elsewhere".into()];
    let err = tracelens_driver::run(&case.config, &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            err,
            tracelens_driver::Error::ExtraArg {
                option: "--output_csvs_dir",
                managed: tracelens_driver::Managed::Output,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "cannot pass `--output_csvs_dir` to TraceLens: the driver sets --output_csvs_dir itself \
         (reports go under the output directory)"
    );
    assert!(case.calls().is_empty());
}

#[test]
fn a_failing_job_does_not_hide_the_others() {
    let case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    case.control(json!({"fail": "TraceLens_generate_perf_report_pytorch"}));
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r"
    FAILURE pytorch model_rank0.pt.trace.json TraceLens_generate_perf_report_pytorch | forced failure
    SUCCESS rocprof_json rocprof_output/9999_results.json TraceLens_generate_perf_report_rocprof |
    ");
    assert!(summary.any_failed());
    let log =
        fs::read_to_string(case.config.output_dir.join("logs/model_rank0.pytorch.log")).unwrap();
    assert!(log.starts_with("$ ") && log.contains("forced failure"), "{log}");
}

/// The CSV summary reads back as the run wrote it (what tells a later
/// command this run's reports from an earlier run's); one that is not a
/// run summary is an error naming it.
#[test]
fn the_csv_summary_reads_back_as_written() {
    let case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    case.control(json!({"fail": "TraceLens_generate_perf_report_pytorch"}));
    let summary = case.run();
    let csv = case.config.output_dir.join(tracelens_driver::SUMMARY_CSV);
    let read = tracelens_driver::read_csv(&csv).unwrap();
    let fields = |rows: &[tracelens_driver::Row]| -> Vec<[String; 6]> {
        rows.iter()
            .map(|r| {
                let status = r.status.as_str().to_string();
                let text = [&r.trace_file, &r.kind, &r.tracelens_tool, &r.output, &r.detail];
                let [t, k, tool, output, detail] = text.map(String::clone);
                [t, k, tool, status, output, detail]
            })
            .collect()
    };
    assert_eq!(fields(&read), fields(&summary.results));
    let report = case.config.output_dir.join("rocprof_output_9999_results_csv");
    assert_eq!(std::path::Path::new(&read[1].output), report);
    assert!(read.iter().all(|r| r.seconds.is_none() && r.log.is_none()));

    for (text, said) in [
        (
            "name,value\nx,1\n",
            "its columns are not trace_file, kind, tracelens_tool, status, output, detail",
        ),
        (
            "trace_file,kind,tracelens_tool,status,output,detail\na,pytorch,t,DONE,o,\n",
            "line 2: status `DONE` is none of SUCCESS, SKIPPED, FAILURE",
        ),
    ] {
        fs::write(&csv, text).unwrap();
        let err = tracelens_driver::read_csv(&csv).unwrap_err();
        let expected = format!("{} is not a TraceLens run summary: {said}", csv.display());
        assert_eq!(err.to_string(), expected);
    }
    // Not CSV at all (a row of more fields than its header): the CSV
    // reader's error is the cause, with its line.
    fs::write(&csv, "trace_file,kind,tracelens_tool,status,output,detail\na,b,c,d,e,f,g\n")
        .unwrap();
    let err = tracelens_driver::read_csv(&csv).unwrap_err();
    assert_eq!(err.to_string(), format!("cannot read {}", csv.display()));
    let cause = std::error::Error::source(&err).unwrap().to_string();
    assert!(cause.contains("line: 2"), "{cause}");
}

/// An output directory keeps the reports of earlier runs: its summary says
/// which are this run's, and which trace each was made of.
#[test]
fn the_summary_tells_this_runs_reports_from_an_earlier_runs() {
    let case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    let out = &case.config.output_dir;
    let reports_now = || -> Vec<std::path::PathBuf> {
        let mut dirs: Vec<_> = fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && p.to_string_lossy().ends_with("_csv"))
            .collect();
        dirs.sort();
        dirs
    };
    // No summary yet: nothing can be told.
    let old = out.join("model_rank5_csv");
    fs::create_dir_all(&old).unwrap();
    assert_eq!(tracelens_driver::this_runs_reports(out, &reports_now()).unwrap(), None);
    case.run();
    let reports = reports_now();
    assert_eq!(reports.len(), 3, "{reports:?}");
    let run = tracelens_driver::this_runs_reports(out, &reports).unwrap().unwrap();
    assert_eq!(run.summary, out.join(tracelens_driver::SUMMARY_CSV));
    assert_eq!(run.left_out, std::slice::from_ref(&old));
    let root = &case.config.root;
    let kept: Vec<_> = run.kept.iter().map(|(r, t)| (r.file_name().unwrap(), t.clone())).collect();
    assert_eq!(
        kept,
        [
            ("model_rank0_csv".as_ref(), root.join("model_rank0.pt.trace.json")),
            (
                "rocprof_output_9999_results_csv".as_ref(),
                root.join("rocprof_output/9999_results.json")
            ),
        ]
    );
    // A summary that names none of them (the original analyzer's): all are kept.
    assert_eq!(tracelens_driver::this_runs_reports(out, &[old]).unwrap(), None);
}

#[test]
fn a_crash_leaves_no_stale_success() {
    let case = Case::new();
    let trace = case.fixture("model_rank0.pt.trace.json", GPU);
    let csv = case.config.output_dir.join("tracelens_summary.csv");
    fs::write(
        &csv,
        "trace_file,kind,tracelens_tool,status,output,detail\nold,pytorch,x,SUCCESS,,\n",
    )
    .unwrap();
    case.control(json!({"crash": "all"}));
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Failure);
    // The signal is said first, with what the job takes in memory.
    let need = tracelens_driver::job_memory(trace_discover::json_size(&trace));
    assert_eq!(
        summary.results[0].detail,
        format!(
            "killed by SIGKILL (the kernel's out-of-memory killer? TraceLens takes about {:.1} \
             GiB for this job: run fewer at once, `report tracelens --jobs`, or on a machine with \
             more memory); its last output: Loading trace...",
            need as f64 / f64::from(1u32 << 30)
        )
    );
    let text = fs::read_to_string(&csv).unwrap();
    assert!(!text.contains("SUCCESS") && text.contains("FAILURE"), "{text}");
    // Python's own MemoryError gets the same advice.
    case.control(json!({"memory_error": "all"}));
    let detail = &case.run().results[0].detail;
    assert!(
        detail.starts_with("MemoryError: Unable to allocate 4.00 GiB (TraceLens takes about")
            && detail.ends_with("on a machine with more memory)"),
        "{detail}"
    );

    // and when the run cannot even start, the old summary is gone too
    let mut broken = Case::new();
    fs::write(broken.config.output_dir.join("tracelens_summary.json"), "{}").unwrap();
    broken.config.python = "/no/such/python3".into();
    assert!(matches!(
        tracelens_driver::run(&broken.config, &mut |_| {}),
        Err(Error::Python { .. })
    ));
    assert!(!broken.config.output_dir.join("tracelens_summary.json").exists());
}

/// A report holds what this run wrote: what an earlier run left where the
/// job writes (a table of the trace this one replaced: TraceLens adds to a
/// CSV directory, it does not empty it) is removed before the job runs,
/// and what a job stopped part way wrote is removed with it.
#[test]
fn a_report_holds_only_what_this_run_wrote() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    let (report, xlsx) = (
        case.config.output_dir.join("model_rank0_csv"),
        case.config.output_dir.join("model_rank0.xlsx"),
    );
    let listed = || -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&report)
            .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success);
    let written = listed();
    assert!(written.contains(&"gpu_timeline.csv".to_string()), "{written:?}");
    let stale = report.join("coll_analysis.csv");
    fs::write(&stale, "of the trace before").unwrap();
    assert_eq!(case.run().results[0].status, Status::Success);
    assert_eq!(listed(), written);
    // A job that fails leaves what it wrote (nothing here), not the report before.
    fs::write(&stale, "of the trace before").unwrap();
    case.control(json!({"fail": "all"}));
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Failure);
    assert!(!report.exists() && !xlsx.exists(), "{:?}", listed());
    // Stopped once its CSVs are written, before its workbook: none is left.
    case.control(json!({"hang_after_csvs": 600}));
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    case.config.cancel = Some(cancel.clone());
    let (run, seen) = std::thread::scope(|scope| {
        let seen = scope.spawn(|| {
            let seen = (0..1200).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                listed() == written
            });
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
            seen
        });
        (tracelens_driver::run(&case.config, &mut |_| {}), seen.join().unwrap())
    });
    assert!(seen, "the job never wrote its CSVs");
    assert!(matches!(run, Err(Error::Interrupted { .. })), "{run:?}");
    assert!(!report.exists() && !xlsx.exists(), "{:?}", listed());
}

#[test]
fn a_job_past_its_timeout_is_killed_and_reported() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.control(json!({"sleep": 30}));
    case.config.timeout = Some(std::time::Duration::from_millis(500));
    let started = std::time::Instant::now();
    let summary = case.run();
    assert!(started.elapsed().as_secs() < 20);
    assert_eq!(
        (summary.results[0].status, summary.results[0].detail.as_str()),
        (Status::Failure, "timed out after 0.5 s")
    );
}

/// A job's own processes (TraceLens runs traceconv) are killed with it,
/// not left running orphaned: past its timeout, and when the run is
/// cancelled (Ctrl-C) once the job has started its process.
#[test]
fn a_job_killed_takes_its_processes_with_it() {
    let gone = |pid: &str| {
        // Gone, or a zombie its new parent has yet to reap.
        let pid: u32 = pid.trim().parse().unwrap();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(!dynolog_client::is_running(pid), "the job's process {pid} still runs: {stat}");
    };
    // Cancelled once the process exists: nothing here depends on timing.
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    let pid_file = case.root().join("child.pid");
    case.control(json!({"sleep": 600, "child_pid_file": pid_file.display().to_string()}));
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    case.config.cancel = Some(cancel.clone());
    let run = std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..1200 {
                if fs::read_to_string(&pid_file).is_ok_and(|p| !p.is_empty()) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        tracelens_driver::run(&case.config, &mut |_| {})
    });
    assert!(matches!(run, Err(Error::Interrupted { .. })), "{run:?}");
    gone(&fs::read_to_string(&pid_file).expect("the job started its process"));
    // Past a timeout: whether the job had started its process by then or
    // not, none is left.
    fs::remove_file(&pid_file).unwrap();
    case.config.cancel = None;
    case.config.timeout = Some(std::time::Duration::from_secs(2));
    let summary = case.run();
    assert_eq!(summary.results[0].detail, "timed out after 2 s");
    if let Ok(pid) = fs::read_to_string(&pid_file) {
        gone(&pid);
    }
}

#[test]
fn parallel_jobs_give_the_same_summary_as_one_at_a_time() {
    let mut case = Case::new();
    for i in 0..4 {
        case.fixture(&format!("n{i}/rank{i}.pt.trace.json"), GPU);
    }
    case.fixture("rocprof_output/9999_results.json", ROCPROF);
    case.config.jobs = 1;
    let one = case.run();
    case.config.jobs = 4;
    let four = case.run();
    let strip = |s: &tracelens_driver::Summary| {
        s.results
            .iter()
            .map(|r| (r.trace_file.clone(), r.status, r.output.clone(), r.detail.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&one), strip(&four));
}

/// With a memory budget, only as many jobs as fit in it together run at
/// once (at least one), and the run says so; without one, `jobs` decides.
#[test]
fn jobs_that_would_not_fit_in_memory_together_run_fewer_at_once() {
    let mut case = Case::new();
    let mut traces = Vec::new();
    for i in 0..4 {
        traces.push(case.fixture(&format!("n{i}/rank{i}.pt.trace.json"), GPU));
    }
    let need = tracelens_driver::job_memory(trace_discover::json_size(&traces[0]));
    assert!(need > 100 << 20);
    case.config.jobs = 4;
    // (per-trace jobs, then the collective of the 4 ranks) -> events
    let run = |case: &Case| {
        let mut seen = Vec::new();
        let summary = tracelens_driver::run(&case.config, &mut |event| match event {
            Event::FewerJobs { jobs, wanted, largest, available } => {
                seen.push(format!("fewer {jobs}/{wanted} {largest} {available}"))
            }
            Event::Started { index, .. } => seen.push(format!("start {index}")),
            Event::Finished { index, .. } => seen.push(format!("end {index}")),
            _ => {}
        })
        .unwrap();
        assert!(summary.results.iter().all(|r| r.status != Status::Failure), "{summary:#?}");
        seen
    };
    // Room for two of them: two at a time.
    case.config.memory_available = Some(need * 2 + need / 2);
    let seen = run(&case);
    assert_eq!(seen[0], format!("fewer 2/4 {need} {}", need * 2 + need / 2));
    // Room for less than one: one at a time, each job ending before the next starts.
    case.config.memory_available = Some(need / 2);
    let seen = run(&case);
    assert_eq!(seen[0], format!("fewer 1/4 {need} {}", need / 2));
    let per_trace = &seen[1..9];
    for pair in per_trace.chunks(2) {
        let (start, end) = (&pair[0], &pair[1]);
        assert_eq!(start.replace("start", "end"), *end, "{seen:?}");
    }
    // No budget: as many as asked for, and nothing said.
    case.config.memory_available = None;
    assert!(!run(&case).iter().any(|e| e.starts_with("fewer")));
}

#[test]
fn the_module_fallback_runs_when_there_are_no_console_scripts() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.config.python = standin::Standin::python(&standin::standin().module_only);
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Success, "{:#?}", summary.results);
    assert!(case.calls()[0].contains(r#""argv0": "-c""#), "{:?}", case.calls());
}

#[test]
fn missing_tracelens_and_the_wrong_package_are_explained() {
    let mut case = Case::new();
    case.config.python = standin::Standin::python(&standin::standin().wrong_package);
    let err = tracelens_driver::run(&case.config, &mut |_| {}).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::TraceLensMissing { .. }));
    assert!(text.starts_with("TraceLens is not importable by"), "{text}");
    assert!(text.contains("unrelated project"), "{text}");
    // How to install it is the binary's to say, in its own flags.
    assert!(!text.contains("TRACELENS_VENV") && !text.contains("madengine"), "{text}");
}

#[test]
fn an_unknown_gpu_arch_is_refused_before_anything_runs() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.config.gpu_arch = Some("MI999".into());
    let err = tracelens_driver::run(&case.config, &mut |_| {}).unwrap_err();
    assert!(
        err.to_string().ends_with("knows no GPU arch `MI999`; it knows: MI300X, MI325X"),
        "{err}"
    );
    assert!(case.calls().is_empty());
}

#[test]
fn the_plan_needs_no_tracelens() {
    let mut case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank1_trace.json", GPU_RANK1);
    case.config.python = "/no/such/python3".into();
    let (_, plan) = plan_only(&case.config).unwrap();
    let tools: Vec<_> = plan.jobs.iter().map(|j| j.tool).collect();
    assert_eq!(tools, [Tool::Pytorch, Tool::Pytorch, Tool::Collective]);
}

#[test]
fn compare_checks_its_inputs_then_runs() {
    let case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    case.run();
    let report = case.config.output_dir.join("model_rank0_csv");
    let probe = tracelens_driver::probe(&case.config.python).unwrap();
    let out = case.dir.path().join("cmp.xlsx");
    let config =
        |reports: Vec<std::path::PathBuf>, names: Vec<&str>| tracelens_driver::CompareConfig {
            reports,
            output: out.clone(),
            names: names.into_iter().map(String::from).collect(),
        };
    let ok = tracelens_driver::compare(
        &config(vec![report.clone(), report.clone()], vec!["a", "b"]),
        &probe,
    )
    .unwrap();
    assert_eq!(ok.status, Status::Success, "{}", ok.detail);
    assert!(out.is_file());
    let xlsx = case.config.output_dir.join("model_rank0.xlsx");
    let ok =
        tracelens_driver::compare(&config(vec![xlsx, report.clone()], vec![]), &probe).unwrap();
    assert_eq!(ok.status, Status::Success, "{}", ok.detail);

    let err = tracelens_driver::compare(&config(vec![report.clone()], vec![]), &probe).unwrap_err();
    assert_eq!(err.to_string(), "a comparison needs at least two reports, 1 given");
    let err =
        tracelens_driver::compare(&config(vec![report.clone(), report.clone()], vec!["a"]), &probe)
            .unwrap_err();
    assert_eq!(err.to_string(), "1 names for 2 reports: give one name per report, or none");
    let no_kernels = case.dir.path().join("old_csv");
    fs::create_dir_all(&no_kernels).unwrap();
    fs::write(no_kernels.join("gpu_timeline.csv"), "type\n").unwrap();
    let err =
        tracelens_driver::compare(&config(vec![no_kernels, report], vec![]), &probe).unwrap_err();
    assert!(err.to_string().contains("no kernel_summary sheet"), "{err}");
}

#[test]
fn setup_installs_the_spec_and_skips_when_ready() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let spec = standin::standin().wheel.display().to_string();
    let config = tracelens_driver::SetupConfig {
        venv: venv.clone(),
        spec: spec.clone(),
        base_python: "python3".into(),
    };
    let mut steps = Vec::new();
    let first = tracelens_driver::setup(&config, &mut |s| steps.push(s.to_string())).unwrap();
    assert!(first.installed && first.created_venv);
    assert_eq!(first.tracelens_version.as_deref(), Some("0.1.0+standin"));
    assert!(venv.join("bin/TraceLens_generate_perf_report_pytorch").is_file());
    let again = tracelens_driver::setup(&config, &mut |_| {}).unwrap();
    assert!(!again.installed);

    // a failed install removes the venv it created, and never shows the token
    let bad = tracelens_driver::SetupConfig {
        venv: dir.path().join("bad"),
        spec: "git+https://user:s3cr3t@127.0.0.1:9/none.git".into(),
        base_python: "python3".into(),
    };
    let err = tracelens_driver::setup(&bad, &mut |_| {}).unwrap_err();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        text.push_str(&s.to_string());
        source = s.source();
    }
    assert!(!text.contains("s3cr3t") && text.contains("user:***@"), "{text}");
    assert!(!dir.path().join("bad").exists());
}

const ROCPD: &str = "rocprof_output/1e4d92661463/1234_results.db";

/// A rocpd database, which TraceLens cannot read, is reported by its rocprof
/// report through the rocprofv3 JSON written for it in the scratch
/// directory: the stand-in's tables (computed as TraceLens' RocprofParser
/// reads the JSON) are the database's own. One whose run also wrote the
/// JSON is left to it; one that is not a database fails with why.
#[test]
fn a_rocpd_database_is_reported_through_its_rocprofv3_json() {
    let case = Case::new();
    let db = case.fixture("host/1234_results.db", ROCPD);
    case.fixture("twin/1234_results.db", ROCPD);
    case.fixture("twin/1234_results.json", ROCPROF);
    case.write("bad/77_results.db", b"SQLite format 3\0 and then nothing a database holds");
    let before = fs::read(&db).unwrap();
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).join("\n"), @r"
    SUCCESS rocprof_json twin/1234_results.json TraceLens_generate_perf_report_rocprof | 
    FAILURE rocpd bad/77_results.db TraceLens_generate_perf_report_rocprof | not a readable rocpd database: file is not a database; TraceLens was not run
    SUCCESS rocpd host/1234_results.db TraceLens_generate_perf_report_rocprof | 
    SKIPPED rocpd twin/1234_results.db  | the same run's rocprofv3 JSON, twin/1234_results.json, is reported instead
    ");
    assert_eq!(summary.discovered["rocpd"], 2);
    assert_eq!(fs::read(&db).unwrap(), before);
    // TraceLens read the JSON written in the scratch directory, now gone.
    let calls = case.calls().join("\n");
    assert!(calls.contains("[SCRATCH]/") && calls.contains("/1234_results.json\""), "{calls}");
    assert!(!calls.contains("/1234_results.db\""), "{calls}");
    let log =
        fs::read_to_string(case.config.output_dir.join("logs/host_1234_results.db.rocprof.log"))
            .unwrap();
    assert!(
        log.starts_with("madengine: wrote ")
            && log.contains("(3 kernel dispatches, 1 memory copies)"),
        "{log}"
    );

    let native = trace_summary::summarize_file(&db).unwrap();
    let report = case.config.output_dir.join("host_1234_results.db_csv");
    let read = |name: &str| fs::read_to_string(report.join(name)).unwrap();
    let numbers = |csv: &str| -> Vec<(String, f64)> {
        csv.lines()
            .skip(1)
            .map(|l| {
                let cells: Vec<&str> = l.split(',').collect();
                (cells[0].to_string(), cells[1].parse().unwrap())
            })
            .collect()
    };
    let (theirs, ours) =
        (numbers(&read("gpu_timeline.csv")), numbers(&native.gpu_timeline.unwrap().to_csv()));
    assert_eq!(theirs.len(), 5);
    for ((a, x), (b, y)) in theirs.iter().zip(&ours) {
        assert!(a == b && (x - y).abs() < 1e-12, "{theirs:?} {ours:?}");
    }
    let counts: Vec<(String, f64)> = numbers(&read("kernel_summary.csv"));
    let ours: Vec<(String, f64)> = {
        let mut rows = numbers(&native.kernel_summary.unwrap().to_csv());
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    };
    assert_eq!(counts, ours);
}

/// Only the modes that run TraceLens' rocprof report take a database.
#[test]
fn a_rocpd_database_is_left_out_where_the_mode_has_no_rocprof_report() {
    let mut case = Case::new();
    case.fixture("host/1234_results.db", ROCPD);
    case.config.mode = tracelens_driver::Mode::Pftrace;
    let summary = case.run();
    assert_eq!(
        rows(&summary),
        [format!("SKIPPED unsupported host/1234_results.db  | {}", summary.results[0].detail)]
    );
    assert!(summary.results[0].detail.contains("the auto and rocprof modes"));
    assert!(!case.ran("rocprof"));
}

/// A gzipped Perfetto trace: TraceLens' pftrace reports convert only a
/// `.pftrace` (any other name they read as JSON), so they read a
/// decompressed copy; its rows name the trace as it is. One that cannot be
/// decompressed is said so, and left to TraceLens.
#[test]
fn a_gzipped_pftrace_is_read_decompressed() {
    use std::io::Write as _;
    let mut case = Case::new();
    let pftrace = fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/synthetic/pftrace/rocprofv3/1234_results.pftrace"),
    )
    .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&pftrace).unwrap();
    let gz = gz.finish().unwrap();
    case.write("h1/1234_results.pftrace.gz", &gz);
    case.write("h2/5678_results.pftrace.gz", &gz[..gz.len() / 2]);
    case.config.extra_args = vec!["--traceconv".into(), crate::traceconv().into()];
    let mut notes = Vec::new();
    let summary = tracelens_driver::run(&case.config, &mut |event| {
        if let Event::Note(text) = event {
            notes.push(text);
        }
    })
    .unwrap();
    let rows = rows(&summary);
    let (ok, cut): (Vec<&String>, Vec<&String>) = rows.iter().partition(|r| r.contains("h1/"));
    assert_eq!(ok.len(), 3, "{rows:#?}");
    assert!(
        ok.iter().all(|r| r.starts_with("SUCCESS pftrace h1/1234_results.pftrace.gz ")),
        "{rows:#?}"
    );
    assert_eq!(cut.len(), 3, "{rows:#?}");
    assert!(
        cut.iter().all(|r| r.starts_with("FAILURE pftrace h2/5678_results.pftrace.gz ")),
        "{rows:#?}"
    );
    let calls = case.calls();
    let paths: Vec<&str> = calls
        .iter()
        .filter(|c| c.contains("\"args\""))
        .filter_map(|c| c.split("\"--trace_path\", \"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(paths.len(), 6, "{calls:#?}");
    // The first report converts the decompressed copy; the others read its JSON.
    let staged = |suffix: &str| {
        paths.iter().filter(|p| p.starts_with("[TMP]/[SCRATCH]/") && p.ends_with(suffix)).count()
    };
    assert_eq!(
        (staged("/1234_results.pftrace"), staged("/1234_results.json")),
        (1, 2),
        "{paths:#?}"
    );
    assert!(
        paths.iter().filter(|p| **p == "[TMP]/run/h2/5678_results.pftrace.gz").count() == 3,
        "{paths:#?}"
    );
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].starts_with("cannot decompress h2/5678_results.pftrace.gz: "), "{notes:#?}");
}

/// TraceLens' pftrace reports convert `<stem>.pftrace` to `<stem>.json`
/// beside the trace they read (its path resolved, links followed), each
/// one: run on the trace itself, they leave a `.json` in the run directory
/// that the next run reads as a trace, and three at once write the same file
/// (the real ones failed 2 runs in 3 with `--jobs 3`). They read a staged
/// copy, one after another, and the conversion runs once per trace.
#[test]
fn pftrace_reports_leave_the_run_directory_as_it_was() {
    let mut case = Case::new();
    let root = case.config.root.clone();
    case.fixture("rocprof_output/model.pftrace", "rocprof_output/model_trace.pftrace");
    let other = fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/synthetic/pftrace/rocprofv3/1234_results.pftrace"),
    )
    .unwrap();
    case.write("host/1234_results.pftrace", &other);
    // A link to a trace elsewhere: TraceLens would resolve it.
    let elsewhere = case.dir.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(elsewhere.join("5678_results.pftrace"), &other).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.join("5678_results.pftrace"),
        root.join("host/5678_results.pftrace"),
    )
    .unwrap();
    let listing = |dir: &std::path::Path| {
        let mut files: Vec<String> = walk(dir).iter().map(|p| p.display().to_string()).collect();
        files.sort();
        files
    };
    let (before, before_elsewhere) = (listing(&root), listing(&elsewhere));
    case.config.jobs = 3;
    case.config.extra_args = vec!["--traceconv".into(), crate::traceconv().into()];
    let summary = case.run();
    assert_eq!(summary.results.len(), 9, "{:#?}", summary.results);
    assert!(summary.results.iter().all(|r| r.status == Status::Success), "{:#?}", summary.results);
    assert_eq!(listing(&root), before, "the run directory gained or lost files");
    assert_eq!(listing(&elsewhere), before_elsewhere, "the linked trace's directory changed");
    let calls = case.calls();
    let conversions: Vec<&String> = calls.iter().filter(|c| c.contains("\"converted\"")).collect();
    assert_eq!(conversions.len(), 3, "one conversion per trace: {calls:#?}");
    assert!(conversions.iter().all(|c| c.contains("[SCRATCH]/")), "{conversions:#?}");
    let inputs: Vec<&str> = calls
        .iter()
        .filter_map(|c| c.split("\"--trace_path\", \"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(inputs.iter().filter(|p| p.ends_with(".pftrace")).count(), 3, "{inputs:#?}");
    assert_eq!(inputs.iter().filter(|p| p.ends_with(".json")).count(), 6, "{inputs:#?}");
    assert!(inputs.iter().all(|p| p.starts_with("[TMP]/[SCRATCH]/")), "{inputs:#?}");
}

/// Every file under `dir` (links not followed), relative to it.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path).into_iter().map(|p| {
                entry.file_name().into_string().map(std::path::PathBuf::from).unwrap().join(p)
            }));
        } else {
            out.push(path.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out
}

/// A rocprofv3 run whose tool recorded nothing writes an empty process
/// list; TraceLens' rocprof report reads its first entry and fails
/// (`IndexError`): SKIPPED, with why, and TraceLens not run.
#[test]
fn a_rocprofv3_trace_of_no_process_is_skipped() {
    let case = Case::new();
    case.write("rocprof_output/host/4321_results.json", r#"{"rocprofiler-sdk-tool": []}"#);
    let summary = case.run();
    assert_eq!(
        rows(&summary),
        [format!(
            "SKIPPED rocprof_json rocprof_output/host/4321_results.json TraceLens_generate_perf_report_rocprof | {}",
            tracelens_driver::NO_ROCPROF_PROCESS_DETAIL
        )]
    );
    assert!(!case.ran("generate_perf_report_rocprof"));
    // Without the precheck, TraceLens runs and fails as it does.
    let mut case = case;
    case.config.precheck = false;
    let summary = case.run();
    assert_eq!(summary.results[0].status, Status::Failure, "{:#?}", summary.results);
    let log = fs::read_to_string(summary.results[0].log.as_ref().unwrap()).unwrap();
    assert!(log.contains("IndexError"), "{log}");
}

/// `--world-size 4` with ranks 0 and 1 present: skipped with why, and run on
/// the ranks present with `--partial`, which the row says; ranks with a
/// gap between them are given to TraceLens as 0..members.
#[test]
fn missing_ranks_skip_the_collective_unless_partial() {
    let mut case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank1_trace.json", GPU_RANK1);
    case.config.world_size = 4;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @"SKIPPED pytorch 2 ranked PyTorch traces TraceLens_generate_multi_rank_collective_report_pytorch | the ranks found (0, 1) do not form 0..3; missing 2, 3 (--partial runs it on the ranks present)");
    assert!(!case.ran("generate_multi_rank_collective_report_pytorch"));

    case.config.partial = true;
    let mut notes = Vec::new();
    let summary = tracelens_driver::run(&case.config, &mut |e| {
        if let Event::Note(n) = e {
            notes.push(n)
        }
    })
    .unwrap();
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @"SUCCESS pytorch 2 of 4 per-rank traces TraceLens_generate_multi_rank_collective_report_pytorch | partial: ranks 2, 3 of 4 have no trace; the collective report covers the 2 ranks present (0, 1) as a world of 2; collectives that waited on a missing rank are measured from one side only");
    assert!(notes.iter().any(|n| n.starts_with("2 of 4 per-rank traces: partial")), "{notes:?}");
    let calls = case.calls();
    assert!(calls.iter().any(|c| c.contains(r#""--world_size", "2""#)), "{calls:#?}");

    // Ranks 0 and 3: TraceLens reads them as ranks 0 and 1.
    let mut case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank3_trace.json", GPU_RANK1);
    case.config.world_size = 4;
    case.config.partial = true;
    let summary = case.run();
    let row = summary.results.last().unwrap();
    assert_eq!(row.status, Status::Success, "{:#?}", summary.results);
    assert!(row.detail.contains("so its ranks 0-1 are the traces' ranks 0, 3"), "{}", row.detail);
    let calls = case.calls();
    let resolved = calls.iter().find(|c| c.contains("resolved")).unwrap();
    assert!(
        resolved.contains(r#""0": "rank0_rank0_trace.json""#)
            && resolved.contains(r#""1": "rank1_rank3_trace.json""#),
        "{resolved}"
    );

    // A rank beyond the world size is still refused.
    let mut case = Case::new();
    case.fixture("rank0_trace.json", GPU);
    case.fixture("rank5_trace.json", GPU_RANK1);
    case.config.world_size = 4;
    case.config.partial = true;
    let summary = case.run();
    insta::assert_snapshot!(rows(&summary).last().unwrap(), @"SKIPPED pytorch 2 ranked PyTorch traces TraceLens_generate_multi_rank_collective_report_pytorch | ranks beyond the world size 4: 5");
}

/// A trace named `rank0` in each of two node folders: no collective, and a
/// row per folder saying why.
#[test]
fn one_rank_per_node_folder_says_why_there_is_no_collective() {
    let case = Case::new();
    case.fixture("node_0/rank0_trace.json", GPU);
    case.fixture("node_1/rank0_trace.json", GPU);
    let summary = case.run();
    let collectives: Vec<_> =
        rows(&summary).into_iter().filter(|r| r.contains("collective")).collect();
    insta::assert_snapshot!(collectives.join("\n"), @r"
    SKIPPED pytorch 1 ranked PyTorch trace in node_0 TraceLens_generate_multi_rank_collective_report_pytorch | rank 0 (node_0/rank0_trace.json) is the only ranked trace there, and a run needs two ranks or more; its directory was taken apart from the others because rank 0 is claimed by 2 traces (node_0/rank0_trace.json, node_1/rank0_trace.json)
    SKIPPED pytorch 1 ranked PyTorch trace in node_1 TraceLens_generate_multi_rank_collective_report_pytorch | rank 0 (node_1/rank0_trace.json) is the only ranked trace there, and a run needs two ranks or more; its directory was taken apart from the others because rank 0 is claimed by 2 traces (node_0/rank0_trace.json, node_1/rank0_trace.json)
    ");
}

/// An output directory that is, or holds, the root is refused before
/// anything is discovered, planned or run: what lies in it is never
/// searched, so no trace would be found. One inside the root is fine.
#[test]
fn an_output_directory_that_holds_the_root_is_refused() {
    let mut case = Case::new();
    case.fixture("model_rank0.pt.trace.json", GPU);
    let root = case.config.root.clone();
    for (output, is_run) in [(root.clone(), true), (case.dir.path().to_path_buf(), false)] {
        case.config.output_dir = output.clone();
        let refused = trace_report::HoldsRun { output, run: root.clone(), is_run };
        for err in [
            plan_only(&case.config).unwrap_err(),
            tracelens_driver::run(&case.config, &mut |_| {}).unwrap_err(),
        ] {
            assert!(matches!(&err, Error::HoldsRun(r) if *r == refused), "{err:?}");
        }
    }
    assert!(case.calls().is_empty());
    case.config.output_dir = root.join("reports");
    let (found, _) = plan_only(&case.config).unwrap();
    assert_eq!(found.traces.len(), 1);
}
