//! Every public Kineto trace with TraceLens outputs in
//! `shared/fixtures/public/tracelens-expected/`: `gpu_timeline.csv` byte for
//! byte; `kernel_summary.csv` and `ops_summary.csv` as multisets of rows
//! (TraceLens orders tied rows by NumPy's unstable sort).

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

fn expected_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("tracelens-expected")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.join("gpu_timeline.csv").is_file() {
                    out.push(p);
                } else {
                    stack.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

fn rows(csv: &str) -> (String, BTreeMap<String, usize>) {
    let mut lines = split_records(csv);
    let header = lines.remove(0);
    let mut counts = BTreeMap::new();
    for l in lines {
        *counts.entry(l).or_insert(0) += 1;
    }
    (header, counts)
}

/// The table without its last column, and that column.
fn split_last_column(csv: &str) -> (String, Vec<String>) {
    let mut rest = String::new();
    let mut last = Vec::new();
    for line in csv.lines() {
        let (a, b) = line.rsplit_once(',').unwrap();
        rest.push_str(a);
        rest.push('\n');
        last.push(b.to_string());
    }
    (rest, last)
}

/// CSV records (quoted fields may hold commas, not newlines, in these tables).
fn split_records(csv: &str) -> Vec<String> {
    csv.lines().map(str::to_string).collect()
}

#[test]
fn tables_match_tracelens() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let dirs = expected_dirs(&root);
    let kineto: Vec<&PathBuf> =
        dirs.iter().filter(|d| !d.to_string_lossy().contains("rocprofv3")).collect();
    assert_eq!(kineto.len(), 21, "{kineto:?}");
    let mut failures = Vec::new();
    for dir in kineto {
        let rel = dir.strip_prefix(root.join("tracelens-expected")).unwrap();
        let trace = root.join(rel);
        let summary = trace_summary::summarize_file(&trace).unwrap();
        let timeline = summary.gpu_timeline.as_ref().map(|t| t.to_csv()).unwrap_or_default();
        if timeline != fs::read_to_string(dir.join("gpu_timeline.csv")).unwrap() {
            failures.push(format!(
                "{}: gpu_timeline\n ours:\n{timeline}\n theirs:\n{}",
                rel.display(),
                fs::read_to_string(dir.join("gpu_timeline.csv")).unwrap()
            ));
        }
        for (name, ours) in
            [("kernel_summary", &summary.kernel_summary), ("ops_summary", &summary.ops_summary)]
        {
            let path = dir.join(format!("{name}.csv"));
            let theirs = fs::read_to_string(&path).ok();
            match (ours, theirs) {
                (None, None) => {}
                (Some(t), Some(expected)) => {
                    let ours_csv = t.to_csv();
                    let (ours_csv, expected) = if name == "ops_summary" {
                        // The cumulative column depends on a row's place within a
                        // run of tied rows: compare it as a sequence, the rest as sets.
                        let (a, ca) = split_last_column(&ours_csv);
                        let (b, cb) = split_last_column(&expected);
                        if ca != cb {
                            failures.push(format!(
                                "{}: ops_summary cumulative column differs",
                                rel.display()
                            ));
                        }
                        (a, b)
                    } else {
                        (ours_csv, expected)
                    };
                    let (h1, r1) = rows(&ours_csv);
                    let (h2, r2) = rows(&expected);
                    if h1 != h2 {
                        failures.push(format!(
                            "{}: {name} header\n ours:   {h1}\n theirs: {h2}",
                            rel.display()
                        ));
                    } else if r1 != r2 {
                        let only_ours: Vec<_> =
                            r1.keys().filter(|k| r1.get(*k) != r2.get(*k)).take(3).collect();
                        let only_theirs: Vec<_> =
                            r2.keys().filter(|k| r1.get(*k) != r2.get(*k)).take(3).collect();
                        failures.push(format!("{}: {name} rows differ\n ours:   {only_ours:#?}\n theirs: {only_theirs:#?}", rel.display()));
                    }
                }
                (o, t) => failures.push(format!(
                    "{}: {name}: ours {} theirs {}",
                    rel.display(),
                    o.is_some(),
                    t.is_some()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n\n"));
}

/// The six public traces TraceLens rejects with "No GPU events found in the
/// trace": we still answer where there is GPU activity, and say by which rule.
#[test]
fn traces_tracelens_rejects_still_get_an_answer() {
    use trace_summary::Outcome::*;
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    for (rel, outcome, ops) in [
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-0.json.gz", Unlinked, false),
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-1.json.gz", Unlinked, false),
        ("kineto/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", NoGpuActivity, false),
        (
            "kineto/hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
            NoGpuActivity,
            false,
        ),
        ("kineto/hta/trace_diff/control/control.json.gz", LegacyCategories, true),
        (
            "kineto/pytorch-kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
            LegacyCategories,
            true,
        ),
    ] {
        let summary = trace_summary::summarize_file(&root.join(rel)).unwrap();
        assert_eq!(summary.outcome, outcome, "{rel}");
        assert!(summary.events > 0, "{rel}");
        assert_eq!(summary.repaired.total(), 0, "{rel} is strict JSON");
        assert_eq!(summary.gpu_timeline.is_some(), outcome != NoGpuActivity, "{rel}");
        assert_eq!(summary.ops_summary.is_some(), ops, "{rel}");
        if outcome == Unlinked {
            // kernels without a parent op: no category or op columns at all
            let ks = summary.kernel_summary.as_ref().unwrap();
            assert_eq!(ks.header[0], "Kernel name", "{rel}");
        }
        if outcome == LegacyCategories {
            let ks = summary.kernel_summary.as_ref().unwrap().to_csv();
            assert!(ks.lines().count() > 10, "{rel}: {ks}");
        }
    }
}

/// A trace with invalid UTF-8 and control bytes is read through the sanitizer.
#[test]
fn broken_traces_are_read_through_the_sanitizer() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/synthetic/run/broken/python_names.pt.trace.json");
    let summary = trace_summary::summarize_file(&path).unwrap();
    assert_eq!(summary.outcome, trace_summary::Outcome::Tables);
    // What was repaired is told, as TraceLens refuses the file as it is.
    let repaired = summary.repaired;
    assert_eq!((repaired.control_chars, repaired.lone_surrogates, repaired.total()), (2, 1, 3));
    let ks = summary.kernel_summary.unwrap().to_csv();
    assert!(ks.contains("GEMM,aten::mm,Cijk_Alik_Bljk_HHS_BH_MT64x64x32"), "{ks}");
}

/// The public rocprofv3 trace with TraceLens' rocprof outputs: both tables
/// byte for byte (its quirks included: ns in the "µs" columns, µs in
/// "Total Kernel Time (ms)", the cumulative column in name order).
#[test]
fn rocprofv3_tables_match_tracelens() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let rel = Path::new("rocprofv3/tracelens/908_results.json.gz");
    let expected = root.join("tracelens-expected").join(rel);
    let summary = trace_summary::summarize_file(&root.join(rel)).unwrap();
    assert_eq!(summary.outcome, trace_summary::Outcome::Rocprofv3);
    assert_eq!(summary.gpu_events, 43_915);
    assert_eq!(summary.processes, Some(1));
    assert!(summary.ops_summary.is_none());
    for (name, ours) in
        [("gpu_timeline", &summary.gpu_timeline), ("kernel_summary", &summary.kernel_summary)]
    {
        let theirs = fs::read_to_string(expected.join(format!("{name}.csv"))).unwrap();
        let ours = ours.as_ref().unwrap().to_csv();
        let diff: Vec<_> =
            ours.lines().zip(theirs.lines()).filter(|(a, b)| a != b).take(3).collect();
        assert!(ours == theirs, "{name} differs from TraceLens': {diff:#?}");
    }
}

/// A `.json.gz` cut short is a read error that says gzip, not a JSON
/// syntax error at some offset of the decompressed stream.
#[test]
fn a_truncated_gzip_trace_is_a_read_error() {
    use std::io::Write as _;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/synthetic/run/broken/python_names.pt.trace.json");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&fs::read(path).unwrap()).unwrap();
    let gz = gz.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("rank0.pt.trace.json.gz");
    fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let err = trace_summary::summarize_file(&cut).unwrap_err();
    assert!(matches!(err, trace_summary::Error::Read { gzip: true, .. }), "{err:?}");
    assert!(err.to_string().ends_with("as gzip (truncated or corrupt?)"), "{err}");
}

/// The GPU models a trace names: Kineto's deviceProperties, rocprofv3's GPU
/// agents (its CPU agents are not GPUs), each once.
#[test]
fn gpu_models_are_named() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    for (trace, gpus) in [
        (
            "kineto/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
            &["NVIDIA H100 80GB HBM3"][..],
        ),
        ("kineto/tracelens/mi300/resnet_act_checkpoint.json.gz", &["AMD Instinct MI300X"]),
        (
            "kineto-multirank/param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json",
            &["Tesla V100-SXM2-32GB"],
        ),
        // Eight entries with empty names: none said.
        ("kineto/tracelens/inference/vllm_decode_full/graph_execution.json.gz", &[]),
        // No deviceProperties.
        ("kineto-multirank/hta-trace_filter-2rank/sampled_rank-0.json.gz", &[]),
        ("rocprofv3/tracelens/908_results.json.gz", &["AMD Instinct MI350X"]),
    ] {
        let summary = trace_summary::summarize_file(&root.join(trace)).unwrap();
        assert_eq!(summary.gpus, gpus, "{trace}");
        // The one GPU of eight (MI350X) this rocprofv3 process ran its
        // kernels on; Kineto traces carry their rank instead.
        let index = trace.starts_with("rocprofv3").then_some(0);
        assert_eq!(summary.gpu_index, index, "{trace}");
    }
}

/// A node up for months writes timestamps past 2^53 with 3 decimals
/// (`"ts": 11365627862757.064`), where a parser that is not correctly
/// rounded reads some 1 ulp off. Every public trace whose GPU events
/// TraceLens links all (checked: the reference in Python, over all of them,
/// gives TraceLens' own `gpu_timeline.csv`) is shifted 1e13 µs later as
/// text, and its table must be what the formulas give in CPython on the
/// shifted events.
#[test]
fn timestamps_past_2_pow_53_are_read_as_cpython_reads_them() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu_timeline.py");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for dir in expected_dirs(&root) {
        let rel = dir.strip_prefix(root.join("tracelens-expected")).unwrap().to_path_buf();
        if rel.starts_with("rocprofv3") {
            continue;
        }
        let shifted = tmp.path().join(format!("{}.json", checked.len() + failures.len()));
        #[allow(clippy::disallowed_methods, reason = "a test calling the reference")]
        let out = std::process::Command::new("python3")
            .arg(&script)
            .arg(root.join(&rel))
            .arg(&shifted)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}: {}",
            rel.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let out = String::from_utf8(out.stdout).unwrap();
        let (plain, moved) = out.split_once("--\n").unwrap();
        if plain != fs::read_to_string(dir.join("gpu_timeline.csv")).unwrap() {
            continue; // some GPU events unlinked: the reference does not apply
        }
        let ours = trace_summary::summarize_file(&shifted).unwrap();
        let ours = ours.gpu_timeline.unwrap().to_csv();
        if ours != moved {
            failures.push(format!("{}\n ours:\n{ours}\n CPython's:\n{moved}", rel.display()));
        }
        checked.push(rel);
        fs::remove_file(&shifted).unwrap();
    }
    assert!(failures.is_empty(), "{} differ:\n{}", failures.len(), failures.join("\n"));
    assert!(
        checked.iter().any(|r| r.ends_with("b200/eager_trace.json.gz")) && checked.len() >= 15,
        "{checked:?}"
    );
}
