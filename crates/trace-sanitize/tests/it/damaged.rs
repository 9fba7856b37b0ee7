//! Damaged trace files (bytes flipped, cut, lost, written twice or put in;
//! gzipped ones damaged in their deflate stream): checking, repairing and
//! salvaging them never panics, never touches the input, and either writes
//! a whole copy or nothing at all. A copy that names nothing wrong loads.

use std::{path::Path, sync::OnceLock};

use proptest::{prelude::*, sample::Index};
use serde_json::Value;
use trace_sanitize::{Options, Report, check_file, salvage_file, sanitize_file};

use crate::{
    damage::{damage, damaged, gunzip, gzipped},
    fixtures,
};

/// Real and synthetic traces with the defects the sanitizer repairs, plain
/// and gzipped.
fn seeds() -> &'static [(&'static str, Vec<u8>)] {
    static SEEDS: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let read = |path: &str| std::fs::read(fixtures().join("synthetic/run").join(path)).unwrap();
        let rocprof = read("rocprof_output/9999_results.json");
        let python = read("broken/python_names.pt.trace.json");
        vec![
            ("trace.json.gz", gzipped(&rocprof)),
            ("trace.json", rocprof),
            ("trace.pt.trace.json", python),
            ("rank0.json.gz", read("node_0/rank0.json.gz")),
        ]
    })
}

/// What a copy holds, decompressed as its name says.
fn contents(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "gz") { gunzip(&bytes) } else { bytes }
}

/// Whether the report names something that keeps the copy from loading.
fn names_a_fault(r: &Report) -> bool {
    r.not_json > 0 || r.malformed.is_some() || r.complete == Some(false)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    #[test]
    fn a_damaged_file_is_repaired_whole_or_not_at_all(
        which in any::<Index>(),
        damages in proptest::collection::vec(damage(), 1..5),
        gzip_out: bool,
        salvage: bool,
    ) {
        let (name, original) = &seeds()[which.index(seeds().len())];
        let bytes = damaged(original, &damages);
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let output = dir.path().join(if gzip_out { "out.json.gz" } else { "out.json" });
        let options = Options::default();

        let _ = check_file(&input, &options, &mut |_, _| {});
        let run = if salvage { salvage_file } else { sanitize_file };
        let result = run(&input, &output, &options, &mut |_, _| {});

        prop_assert_eq!(std::fs::read(&input).unwrap(), bytes, "the input is never touched");
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        match result {
            Err(_) => prop_assert_eq!(left, [name.to_string()], "nothing written on failure"),
            Ok(file) => {
                prop_assert_eq!(left.len(), 2, "the copy and nothing else: {:?}", left);
                let copy = contents(&output);
                // A salvage drops the cut's rest, so its copy loads unless a
                // fault is named in what it kept; a sanitized copy keeps the
                // cut, and says so.
                if !names_a_fault(&file.report) {
                    let loaded = serde_json::from_slice::<Value>(&copy);
                    prop_assert!(loaded.is_ok(), "{:?} {:?}\ncopy: {}", loaded, file.report,
                        String::from_utf8_lossy(&copy));
                }
            }
        }
    }
}
