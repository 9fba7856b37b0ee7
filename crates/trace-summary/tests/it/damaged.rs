//! Damaged traces: whatever bytes a trace holds (a flipped bit, a cut, a
//! block lost or written twice), reading it ends in a summary or an error,
//! never a panic (nor the abort of an allocation a damaged length asks for).
//! Each format's reader gets its fixtures with random damage; proptest
//! shrinks a failure to the damage that causes it.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use proptest::{prelude::*, sample::Index};
use trace_summary::{Options, Tables};

use crate::{
    damage::{damage, damaged, gunzip, gzipped},
    rocpd::synthetic,
};

fn read(path: &str) -> Vec<u8> {
    std::fs::read(synthetic(path)).unwrap()
}

/// The streamed formats' fixtures: Kineto, rocprofv3 JSON, Perfetto (with
/// interned names and annotations; with zlib-compressed packets), and a
/// Kineto trace gzipped (the damage then hits the deflate stream; a file, as
/// only a file is decompressed). And, where the public traces are, real
/// ones small enough to damage often: two Kineto traces of Triton kernels
/// (one with `torch.compile`'s graph), a Perfetto trace of metadata packets.
fn streamed() -> &'static [(&'static str, Vec<u8>)] {
    static SEEDS: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let kineto = read("run/torch_profiler_output/libkineto_trace_rank0_1.json");
        let mut seeds = vec![
            ("kineto.json", kineto.clone()),
            ("rocprofv3_results.json", read("run/rocprof_output/9999_results.json")),
            ("annotated.pftrace", read("pftrace/rocprofv3/1234_results.pftrace")),
            ("timestamps.pftrace", read("pftrace/timestamps/1234_results.pftrace")),
            ("kineto.json.gz", gzipped(&kineto)),
        ];
        if let Some(public) = crate::public_dir::public_fixtures() {
            let gunzipped = |path: &str| gunzip(&std::fs::read(public.join(path)).unwrap());
            seeds.extend([
                ("triton.json", gunzipped("kineto/hta/triton_example/triton_example.json.gz")),
                ("compiled.json", gunzipped("kineto/tracelens/torch_compile_triton/trace.json.gz")),
                (
                    "metadata.pftrace",
                    std::fs::read(public.join("pftrace/qmljuliaexamples/trace.pftrace")).unwrap(),
                ),
            ]);
        }
        seeds
    })
}

fn summarize(bytes: &[u8], label: &str, salvage: bool) {
    let options = if salvage { Options::salvaging() } else { Options::default() };
    // Any outcome will do; a panic fails the case.
    if label.ends_with(".gz") {
        let dir = tempfile::tempdir().unwrap();
        let _ = trace_summary::summarize_file_with(&written(dir.path(), label, bytes), &options);
    } else {
        let _ = trace_summary::summarize_with(bytes, Path::new(label), &options);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn a_damaged_stream_is_summarized_or_refused(
        which in any::<Index>(),
        damages in proptest::collection::vec(damage(), 1..6),
        salvage in any::<bool>(),
    ) {
        let fixtures = streamed();
        let (label, original) = &fixtures[which.index(fixtures.len())];
        summarize(&damaged(original, &damages), label, salvage);
    }
}

fn written(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

proptest! {
    // SQLite checks its pages itself; these cases check what madengine does
    // with the rows a damaged database still gives (and they cost a file
    // each, so fewer of them).
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn a_damaged_rocpd_database_is_summarized_or_refused(
        which in any::<bool>(),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        static DATABASES: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
        let databases = DATABASES.get_or_init(|| {
            [
                read("run/rocprof_output/1e4d92661463/1234_results.db"),
                read("rocpd/api_only/4321_results.db"),
            ]
        });
        let original = &databases[usize::from(which)];
        let dir = tempfile::tempdir().unwrap();
        let path = written(dir.path(), "1234_results.db", &damaged(original, &damages));
        let _ = trace_summary::summarize_file(&path);
        let _ = trace_summary::rocpd_to_json(&path, &dir.path().join("1234_results.json"), None);
    }

    #[test]
    fn a_damaged_report_is_read_back_or_refused(
        damages in proptest::collection::vec(damage(), 1..6),
        table in 0..3usize,
    ) {
        // A report `report diff` takes as a side: the CSVs of a summary
        // (summarized once for all cases).
        static REPORT: OnceLock<[(&str, String); 3]> = OnceLock::new();
        let report = REPORT.get_or_init(|| {
            let trace = synthetic("run/torch_profiler_output/libkineto_trace_rank0_1.json");
            let s = trace_summary::summarize_file(&trace).unwrap();
            let csv = |t: &Option<trace_summary::Table>| t.as_ref().unwrap().to_csv();
            [
                ("gpu_timeline.csv", csv(&s.gpu_timeline)),
                ("kernel_summary.csv", csv(&s.kernel_summary)),
                ("ops_summary.csv", csv(&s.ops_summary)),
            ]
        });
        let dir = tempfile::tempdir().unwrap();
        for (i, (name, csv)) in report.iter().enumerate() {
            let bytes = if i == table { damaged(csv.as_bytes(), &damages) } else { csv.clone().into_bytes() };
            written(dir.path(), name, &bytes);
        }
        let _ = Tables::read_dir(dir.path());
    }
}
