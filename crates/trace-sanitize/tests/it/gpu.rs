//! The real GPU traces of `fixtures/gpu/`: clean as captured, so a pass
//! over them changes no byte, whatever its buffer size; and a byte that a
//! profiler bug could put in a kernel's name is the one repair made.

use trace_sanitize::Options;

use crate::{public_dir::gpu_fixture_sets, run_with};

#[test]
fn gpu_fixtures_pass_unchanged_and_a_planted_byte_is_the_one_repair() {
    for (set, files) in gpu_fixture_sets() {
        for file in files {
            let name = format!("{set}/{}", file.file_name().unwrap().to_string_lossy());
            let bytes = std::fs::read(&file).unwrap();
            for size in [1, 7, 4096, Options::default().buffer_size] {
                let (out, report) =
                    run_with(&bytes, &Options { buffer_size: size, ..Options::default() });
                assert!(!report.needs_repair(), "{name} (buffer {size}): {report:?}");
                assert_eq!(report.complete, Some(true), "{name}");
                assert!(out == bytes, "{name}: a clean trace changed (buffer {size})");
            }
            // A raw 0x01 inside the first kernel's name, as rocprofv3's
            // pointer bytes land in a kname.
            let find = |from: usize, what: &[&[u8]]| {
                what.iter()
                    .filter_map(|w| {
                        memchr::memmem::find(&bytes[from..], w).map(|i| from + i + w.len())
                    })
                    .min()
            };
            let kernel =
                find(0, &[b"\"cat\":\"kernel\"", b"\"cat\": \"kernel\"", b"\"kernel_dispatch\""])
                    .unwrap_or_else(|| panic!("{name}: no kernel"));
            let at = find(kernel, &[b"\"name\":\"", b"\"name\": \"", b"\"kernel_name\":\""])
                .unwrap_or_else(|| panic!("{name}: no name after the first kernel"));
            let mut planted = bytes.clone();
            planted.insert(at, 0x01);
            let (out, report) = run_with(&planted, &Options::default());
            assert_eq!(report.counts.total(), 1, "{name}: {report:?}");
            assert_eq!(report.counts.control_chars, 1, "{name}: {report:?}");
            assert_eq!(report.repairs[0].offset, at as u64, "{name}");
            assert!(
                report.repairs[0].key.as_deref().is_some_and(|k| k.ends_with("name")),
                "{name}"
            );
            let parsed: serde_json::Value = serde_json::from_slice(&out)
                .unwrap_or_else(|e| panic!("{name}: the repaired copy is not JSON: {e}"));
            assert!(parsed.is_object(), "{name}");
            assert_eq!(out.len(), bytes.len() + 6, "{name}: the byte written as \\u0001");
        }
    }
}
