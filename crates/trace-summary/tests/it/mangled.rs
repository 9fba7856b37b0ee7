//! Mangled traces (bytes flipped, cut, duplicated; brackets and quotes
//! inserted) give an answer or an error, never a panic: traces come from
//! killed jobs and hand edits, and one bad trace must not take a whole
//! `report summary` down.

use std::path::Path;

/// xorshift64*: deterministic, so a failure names a reproducible case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mangle(rng: &mut Rng, clean: &[u8]) -> Vec<u8> {
    let mut bytes = clean.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len());
        match rng.below(6) {
            0 => bytes[at] = rng.next() as u8,
            1 => bytes.truncate(at),
            2 => {
                let piece = b"{[\"]}:,-1e999\\".to_vec();
                let k = rng.below(piece.len());
                bytes.insert(at, piece[k]);
            }
            3 => {
                let end = (at + rng.below(200)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                let to = rng.below(bytes.len());
                bytes.splice(to..to, copy);
            }
            4 => {
                let end = (at + rng.below(50)).min(bytes.len());
                bytes.drain(at..end);
            }
            _ => {
                // a number swapped for an absurd one
                let huge = b"184467440737095516160";
                bytes.splice(at..(at + 1).min(bytes.len()), huge.iter().copied());
            }
        }
        if bytes.is_empty() {
            break;
        }
    }
    bytes
}

#[test]
fn mangled_traces_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run");
    let sources = [
        "torch_profiler_output/libkineto_trace_rank0_1.json",
        "rocprof_output/9999_results.json",
        "broken/python_names.pt.trace.json",
        // mangled gzip: the read errors, not only the parse errors
        "node_0/rank0.json.gz",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let dir = tempfile::tempdir().unwrap();
    let (mut ok, mut err) = (0, 0);
    for source in sources {
        let clean = std::fs::read(root.join(source)).unwrap();
        for case in 0..700 {
            let bytes = mangle(&mut rng, &clean);
            // Through the file path, as the CLI reads: sanitizer thread included.
            let name = Path::new(source).file_name().unwrap().to_string_lossy();
            let path = dir.path().join(format!("case{case}.{name}"));
            std::fs::write(&path, &bytes).unwrap();
            let result = std::panic::catch_unwind(|| trace_summary::summarize_file(&path));
            match result {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(e)) => {
                    err += 1;
                    // A Kineto trace strict parsers load is never refused
                    // (rocprofv3 JSON may lack a field its tables need).
                    if !source.contains("rocprof") && loads(&path) {
                        panic!("{source} case {case}: {e}, though the check finds it loads");
                    }
                }
                Err(_) => panic!(
                    "{source} case {case} panicked; input ({} bytes): {:?}",
                    bytes.len(),
                    String::from_utf8_lossy(&bytes)
                ),
            }
        }
    }
    // Both outcomes occur: the mangling neither always breaks nor never does.
    assert!(ok > 50 && err > 500, "{ok} answers, {err} errors");
}

/// Whether a check finds nothing that keeps strict parsers from loading the
/// trace (repaired).
fn loads(path: &Path) -> bool {
    let checked = trace_sanitize::check_file(path, &Default::default(), &mut |_, _| {});
    checked.is_ok_and(|c| {
        let r = c.report;
        r.malformed.is_none()
            && r.not_json == 0
            && !r.unclosed_string
            && r.complete == Some(true)
            && r.starts_with.is_none()
    })
}
