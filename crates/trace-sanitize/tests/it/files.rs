//! Files: compression told by the output's name, input untouched, atomic
//! output, same-file refusal.

use std::{
    fs,
    io::{Read, Write},
    path::Path,
};

use flate2::{Compression as Level, write::GzEncoder};
use test_support::names_in;
use trace_sanitize::{Compression, CutKind, Error, Options, check_file, sanitize_file};

use crate::damage::gunzip;

const DIRTY: &[u8] =
    b"{\"traceEvents\": [{\"name\": \"py\x01thon\xff\", \"args\": {\"s\": \"\\ud800\"}}]}";
const REPAIRED: &[u8] =
    "{\"traceEvents\": [{\"name\": \"py\\u0001thon\u{fffd}\", \"args\": {\"s\": \"\\ufffd\"}}]}"
        .as_bytes();

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Level::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn no_progress() -> impl FnMut(u64, u64) {
    |_, _| {}
}

#[test]
fn plain_json_is_repaired_and_the_input_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    let output = dir.path().join("t.sanitized.json");
    fs::write(&input, DIRTY).unwrap();
    let mut seen = Vec::new();
    let report = sanitize_file(&input, &output, &Options::default(), &mut |done, total| {
        seen.push((done, total))
    })
    .unwrap();
    assert_eq!(fs::read(&input).unwrap(), DIRTY);
    assert_eq!(fs::read(&output).unwrap(), REPAIRED);
    assert_eq!(report.compression, Compression::None);
    assert_eq!(report.report.counts.total(), 3);
    assert_eq!(report.report.bytes_written, REPAIRED.len() as u64);
    assert_eq!(seen.last(), Some(&(DIRTY.len() as u64, DIRTY.len() as u64)));
    assert_eq!(names_in(dir.path()), ["t.json", "t.sanitized.json"], "no temporary file is left");
}

#[test]
fn clean_input_is_copied_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("c.json", REPAIRED.to_vec()), ("c.json.gz", gz(REPAIRED))] {
        let input = dir.path().join(name);
        let output = dir.path().join(format!("out-{name}"));
        fs::write(&input, &bytes).unwrap();
        let report =
            sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
        assert!(!report.report.needs_repair(), "{name}");
        assert_eq!(fs::read(&output).unwrap(), bytes, "{name}: identical bytes, even compressed");
    }
}

#[test]
fn gzip_stays_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rank0.json.gz");
    let output = dir.path().join("rank0.sanitized.json.gz");
    let original = gz(DIRTY);
    fs::write(&input, &original).unwrap();
    let report = sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
    assert_eq!(report.compression, Compression::Gzip);
    assert_eq!(report.output_compression, Some(Compression::Gzip));
    assert_eq!(fs::read(&input).unwrap(), original);
    assert_eq!(gunzip(&fs::read(&output).unwrap()), REPAIRED);
    let checked = check_file(&output, &Options::default(), &mut no_progress()).unwrap();
    assert!(!checked.report.needs_repair());
    assert_eq!(checked.output_compression, None);
}

#[test]
fn the_output_name_says_its_compression() {
    let dir = tempfile::tempdir().unwrap();
    // Input bytes (gzip or not, whatever the name says), output name, output bytes gzip?
    let cases = [
        ("dirty.json.gz", gz(DIRTY), "out.json", false),
        ("clean.json.gz", gz(REPAIRED), "out.json", false),
        ("dirty.json", DIRTY.to_vec(), "out.json.gz", true),
        ("clean.json", REPAIRED.to_vec(), "out.json.gz", true),
        // Misnamed inputs: the bytes are read for what they are.
        ("gzip-named-plain.json", gz(DIRTY), "out.json", false),
        ("plain-named-gzip.json.gz", REPAIRED.to_vec(), "out.json.gz", true),
    ];
    for (name, bytes, out, gzip) in cases {
        let input = dir.path().join(name);
        fs::write(&input, &bytes).unwrap();
        for salvage in [false, true] {
            let output = dir.path().join(out);
            let report = if salvage {
                trace_sanitize::salvage_file(
                    &input,
                    &output,
                    &Options::default(),
                    &mut no_progress(),
                )
            } else {
                sanitize_file(&input, &output, &Options::default(), &mut no_progress())
            }
            .unwrap();
            let written = fs::read(&output).unwrap();
            assert_eq!(written.starts_with(&[0x1f, 0x8b]), gzip, "{name} -> {out}, {salvage}");
            let text = if gzip { gunzip(&written) } else { written };
            assert_eq!(text, REPAIRED, "{name} -> {out}, salvage {salvage}");
            let expected = if gzip { Compression::Gzip } else { Compression::None };
            assert_eq!(report.output_compression, Some(expected));
            assert_eq!(trace_sanitize::output_compression(&output), expected);
            assert_eq!(fs::read(&input).unwrap(), bytes, "the input is untouched");
        }
    }
}

#[test]
fn output_that_is_the_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    fs::write(&input, DIRTY).unwrap();
    let hard = dir.path().join("hard.json");
    fs::hard_link(&input, &hard).unwrap();
    let sym = dir.path().join("sym.json");
    std::os::unix::fs::symlink(&input, &sym).unwrap();
    let dotted = dir.path().join(".").join("t.json");
    for output in [&input, &hard, &sym, &dotted] {
        let err =
            sanitize_file(&input, output, &Options::default(), &mut no_progress()).unwrap_err();
        assert!(matches!(err, Error::SameFile { .. }), "{}: {err}", output.display());
        assert!(err.to_string().contains("is the input"), "{err}");
    }
    assert_eq!(fs::read(&input).unwrap(), DIRTY);
}

#[test]
fn corrupt_gzip_fails_cleanly_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut.json.gz");
    let mut bytes = gz(&DIRTY.repeat(2000));
    bytes.truncate(bytes.len() / 2);
    fs::write(&input, &bytes).unwrap();
    let output = dir.path().join("out.json.gz");
    let err = sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap_err();
    match &err {
        Error::ReadFile { path, compressed, .. } => {
            assert_eq!(path, &input);
            assert!(compressed);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("cut.json.gz"), "{err}");
    assert_eq!(names_in(dir.path()), ["cut.json.gz"], "no partial output");
}

#[test]
fn what_was_read_before_a_read_error_is_still_written_repaired() {
    /// Gives `data` in small reads, then fails, as a gzip stream cut short does.
    struct CutShort<'a>(&'a [u8]);
    impl Read for CutShort<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "cut"));
            }
            let n = buf.len().min(self.0.len()).min(1000);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let input = DIRTY.repeat(100);
    let mut out = Vec::new();
    let err =
        trace_sanitize::sanitize(CutShort(&input), &mut out, &Options::default()).unwrap_err();
    match err {
        Error::Read { offset, .. } => assert_eq!(offset, input.len() as u64),
        other => panic!("unexpected error {other:?}"),
    }
    let mut clean = Vec::new();
    trace_sanitize::sanitize(&input[..], &mut clean, &Options::default()).unwrap();
    assert_eq!(out, clean);
}

#[test]
fn missing_input_and_missing_output_dir_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let err = check_file(&missing, &Options::default(), &mut no_progress()).unwrap_err();
    assert!(matches!(err, Error::Open { .. }) && err.to_string().contains("nope.json"), "{err}");

    let input = dir.path().join("t.json");
    fs::write(&input, DIRTY).unwrap();
    let output = dir.path().join("no/such/dir/out.json");
    let err = sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap_err();
    assert!(
        matches!(err, Error::WriteFile { .. }) && err.to_string().contains("out.json"),
        "{err}"
    );
}

#[test]
fn a_failing_writer_reports_where() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("no space left"));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let err = trace_sanitize::sanitize(DIRTY, Full(10), &Options::default()).unwrap_err();
    assert!(matches!(err, Error::Write { offset: 10, .. }), "{err:?}");
}

#[test]
fn permissions_follow_the_input() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    fs::write(&input, DIRTY).unwrap();
    fs::set_permissions(&input, fs::Permissions::from_mode(0o640)).unwrap();
    let output = dir.path().join("o.json");
    sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
    assert_eq!(fs::metadata(&output).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn large_input_streams_in_small_buffers() {
    // Many buffers' worth, with defects straddling buffer boundaries.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.json");
    let record = b"{\"name\": \"k\xe2\x82\xac\x01\\ud83d\\ude00\xff\"},\n";
    let body: Vec<u8> = record.iter().copied().cycle().take(record.len() * 20_000).collect();
    fs::write(&input, &body).unwrap();
    let output = dir.path().join("out.json");
    let small = Options { buffer_size: 4093, ..Options::default() };
    let report = sanitize_file(&input, &output, &small, &mut no_progress()).unwrap();
    let (expected, _) = crate::run(&body);
    assert_eq!(fs::read(&output).unwrap(), expected);
    assert_eq!(report.report.counts.invalid_utf8, 20_000);
    assert_eq!(report.report.counts.control_chars, 20_000);
}

#[test]
fn a_cancelled_run_stops_and_leaves_no_output() {
    use std::sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    };
    let dir = tempfile::tempdir().unwrap();
    let record = b"{\"name\": \"k\xff\"},\n";
    let body: Vec<u8> = record.iter().copied().cycle().take(record.len() * 20_000).collect();
    fs::write(dir.path().join("big.json"), &body).unwrap();
    fs::write(dir.path().join("big.json.gz"), gz(&body)).unwrap();
    for name in ["big.json", "big.json.gz"] {
        let cancel = Arc::new(AtomicBool::new(false));
        let options =
            Options { buffer_size: 4096, cancel: Some(Arc::clone(&cancel)), ..Options::default() };
        // Raised once some bytes were read, as a Ctrl-C handler would.
        let mut progress = |done, _| {
            if done > 0 {
                cancel.store(true, Ordering::SeqCst);
            }
        };
        let input = dir.path().join(name);
        let output = dir.path().join(format!("out-{name}"));
        let err = sanitize_file(&input, &output, &options, &mut progress).unwrap_err();
        match &err {
            Error::CancelledFile { path, offset } => {
                assert_eq!(path, &input);
                // (for gzip, the stop comes at the start of the repair pass,
                // after the pass that found a repair is needed)
                assert!(*offset < body.len() as u64, "{name}: {offset}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(err.to_string().contains("no output was written"), "{err}");
        assert_eq!(names_in(dir.path()), ["big.json", "big.json.gz"], "{name}");
    }
    let cancel = Arc::new(AtomicBool::new(true));
    let options = Options { cancel: Some(cancel), ..Options::default() };
    let err = trace_sanitize::sanitize(&body[..], Vec::new(), &options).unwrap_err();
    assert!(matches!(err, Error::Cancelled { offset: 0 }), "{err:?}");
}

#[test]
fn a_pipe_is_read_once_and_its_compression_told_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [("p.json", DIRTY.to_vec()), ("p.json.gz", gz(DIRTY))] {
        let fifo = dir.path().join(name);
        #[allow(clippy::disallowed_methods, reason = "a test making a named pipe")]
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::write(fifo, bytes).unwrap())
        };
        let output = dir.path().join(format!("out-{name}"));
        let report =
            sanitize_file(&fifo, &output, &Options::default(), &mut no_progress()).unwrap();
        writer.join().unwrap();
        let written = fs::read(&output).unwrap();
        let text = if name.ends_with(".gz") { gunzip(&written) } else { written };
        assert_eq!(text, REPAIRED, "{name}");
        assert_eq!(report.report.counts.total(), 3);
    }
}

/// A Kineto-like trace of `n` events, one with a stray byte and a raw
/// control byte in its name.
fn events(n: usize) -> Vec<u8> {
    let mut t = b"{\"schemaVersion\": 1, \"traceEvents\": [\n".to_vec();
    for i in 0..n {
        if i > 0 {
            t.extend_from_slice(b",\n");
        }
        t.extend_from_slice(
            format!(r#"{{"ph": "X", "cat": "kernel", "name": "k{i}", "ts": {i}, "args": {{"grid": [1, 2]}}}}"#)
                .as_bytes(),
        );
        if i == 3 {
            t.extend_from_slice(b",\n{\"ph\": \"i\", \"name\": \"py\x01thon\xff\"}");
        }
    }
    t.extend_from_slice(b"\n], \"traceName\": \"t\"}");
    t
}

fn event_count(bytes: &[u8]) -> usize {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("valid JSON");
    v["traceEvents"].as_array().unwrap().len()
}

#[test]
fn salvage_closes_a_cut_trace_after_its_last_complete_event() {
    let dir = tempfile::tempdir().unwrap();
    let whole = events(50);
    // Cut inside the 31st kernel event (the stray-byte event is the 5th).
    let at = whole.windows(5).position(|w| w == b"\"k30\"").unwrap();
    let cut = &whole[..at];
    for gzip in [false, true] {
        let input = dir.path().join(if gzip { "cut.json.gz" } else { "cut.json" });
        fs::write(&input, if gzip { gz(cut) } else { cut.to_vec() }).unwrap();
        let output = dir.path().join(if gzip { "out.json.gz" } else { "out.json" });
        let report =
            trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
                .unwrap();
        let mut bytes = fs::read(&output).unwrap();
        if gzip {
            bytes = gunzip(&bytes);
        }
        assert_eq!(event_count(&bytes), 30 + 1, "30 kernels and the repaired event");
        let c = report.report.cut.as_ref().expect("marked cut");
        assert_eq!(c.at, cut.len() as u64);
        assert_eq!(c.closed_with, "]}");
        assert_eq!(c.read_error, None);
        assert_eq!(report.report.bytes_written, bytes.len() as u64);
        assert_eq!(report.report.counts.total(), 2, "the stray bytes are repaired too");
        assert_eq!(fs::read(&input).unwrap(), if gzip { gz(cut) } else { cut.to_vec() });
    }
}

#[test]
fn check_says_a_trace_is_cut_short_and_how_salvage_would_close_it() {
    let dir = tempfile::tempdir().unwrap();
    let whole = events(50);
    let at = whole.windows(5).position(|w| w == b"\"k30\"").unwrap();
    let check = |bytes: &[u8], name: &str| {
        let input = dir.path().join(name);
        fs::write(&input, bytes).unwrap();
        check_file(&input, &Options::default(), &mut no_progress()).unwrap().report
    };
    let complete = check(&whole, "whole.json");
    assert_eq!((complete.complete, complete.cut), (Some(true), None));
    for gzip in [false, true] {
        let cut = &whole[..at];
        let name = if gzip { "cut.json.gz" } else { "cut.json" };
        let report = check(&if gzip { gz(cut) } else { cut.to_vec() }, name);
        let salvaged = trace_sanitize::salvage_file(
            &dir.path().join(name),
            &dir.path().join("out.json"),
            &Options::default(),
            &mut no_progress(),
        )
        .unwrap();
        assert_eq!(report.complete, Some(false));
        assert_eq!(report.cut, salvaged.report.cut, "what salvage then does");
        assert_eq!((report.counts, report.bytes_written), (salvaged.report.counts, 0));
    }
    // Nothing whole to keep (or nothing at all): incomplete, and no cut.
    for bytes in [&whole[..60], b""] {
        let report = check(bytes, "start.json");
        assert_eq!((report.complete, report.cut), (Some(false), None), "{bytes:?}");
    }
    // Stopped at the first defect, the end was never seen.
    let first = Options { stop_at_first: true, ..Options::default() };
    let report = trace_sanitize::check(&whole[..at], &first).unwrap();
    assert_eq!((report.stopped_early, report.complete), (true, None));
    // The same answer however the input is split.
    let small = Options { buffer_size: 7, ..Options::default() };
    assert_eq!(
        trace_sanitize::check(&whole[..at], &small).unwrap(),
        trace_sanitize::check(&whole[..at], &Options::default()).unwrap()
    );
}

#[test]
fn salvage_reads_a_cut_gzip_stream_up_to_where_it_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let whole = events(20_000);
    let compressed = gz(&whole);
    let input = dir.path().join("cut.json.gz");
    fs::write(&input, &compressed[..compressed.len() / 2]).unwrap();
    let output = dir.path().join("out.json");
    let report =
        trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
            .unwrap();
    let c = report.report.cut.expect("marked cut");
    assert!(c.read_error.is_some(), "{c:?}");
    // Written out plain, as its name says.
    let n = event_count(&fs::read(&output).unwrap());
    assert!(n > 5_000 && n < 20_000, "{n}");
}

#[test]
fn salvage_of_a_complete_trace_is_a_sanitized_copy() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    fs::write(&input, events(10)).unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let salvaged =
        trace_sanitize::salvage_file(&input, &a, &Options::default(), &mut no_progress()).unwrap();
    sanitize_file(&input, &b, &Options::default(), &mut no_progress()).unwrap();
    assert_eq!(salvaged.report.cut, None);
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
}

#[test]
fn salvage_with_nothing_complete_fails_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    fs::write(&input, &events(10)[..60]).unwrap();
    let output = dir.path().join("out.json");
    let err =
        trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
            .unwrap_err();
    assert!(matches!(err, Error::NothingToSalvage { offset: 60, .. }), "{err:?}");
    assert!(err.to_string().contains("t.json ends after 60 bytes"), "{err}");
    assert_eq!(names_in(dir.path()), ["t.json"]);
}

#[test]
fn data_after_the_document_is_found_by_check_and_dropped_by_salvage() {
    let dir = tempfile::tempdir().unwrap();
    let whole = events(20);
    let tailed = [&whole[..], b"\n\0\0\0\0"].concat();
    let mut expected = Vec::new();
    trace_sanitize::sanitize(&whole[..], &mut expected, &Options::default()).unwrap();
    expected.push(b'\n');
    for gzip in [false, true] {
        let input = dir.path().join(if gzip { "t.json.gz" } else { "t.json" });
        fs::write(&input, if gzip { gz(&tailed) } else { tailed.clone() }).unwrap();
        let check = check_file(&input, &Options::default(), &mut no_progress()).unwrap().report;
        let cut = check.cut.as_ref().expect("data after the end");
        assert_eq!(check.complete, Some(false));
        assert_eq!(
            (cut.kind, cut.at, cut.dropped),
            (CutKind::DataAfterEnd, tailed.len() as u64, 4)
        );
        let output = dir.path().join("out.json");
        let salvaged =
            trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
                .unwrap();
        assert_eq!(salvaged.report.cut, check.cut, "what check said salvage does");
        assert_eq!(fs::read(&output).unwrap(), expected);
        assert_eq!(salvaged.report.bytes_written, expected.len() as u64);
    }
}

/// Bare words that are not JSON make a copy unparseable only where the copy
/// keeps them: a check and a salvage do not count those in what salvage
/// drops (a log line after the document, the unfinished value at a cut).
/// A plain sanitize, whose copy keeps them all, counts them all.
#[test]
fn words_that_are_not_json_count_where_salvage_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let whole = b"{\"traceEvents\": [{\"ph\": \"X\", \"a\": [\"\\xff\", N/A]}]}".to_vec();
    let log_after = [&whole[..], b"\nWARNING: rank 0, step 3: done, x: y"].concat();
    let cut_in_word = [&whole[..whole.len() - 2], b", {\"b\": undefined"].concat();
    let word_inside = [&whole[..whole.len() - 2], b", {\"b\": undefined}]}"].concat();
    // (input, words a plain sanitize sees, words salvage keeps and the first's offset)
    let cases: [(&[u8], u64, Option<u64>); 4] = [
        (&whole, 0, None),
        (&log_after, 6, None),
        (&cut_in_word, 1, None),
        (&word_inside, 1, Some(whole.len() as u64 + 6)),
    ];
    let input = dir.path().join("t.json");
    let output = dir.path().join("out.json");
    for (bytes, plain, kept) in cases {
        let shown = String::from_utf8_lossy(bytes);
        fs::write(&input, bytes).unwrap();
        let sanitized =
            sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap().report;
        assert_eq!(sanitized.not_json, plain, "{shown}");
        let check = check_file(&input, &Options::default(), &mut no_progress()).unwrap().report;
        let salvaged =
            trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
                .unwrap()
                .report;
        for report in [&check, &salvaged] {
            let first = report.first_not_json.as_ref().map(|w| w.offset);
            assert_eq!(first, kept, "{shown}");
            assert_eq!(report.not_json > 0, kept.is_some(), "{shown}");
            assert_eq!(report.counts.unquoted_not_available, 1, "{shown}");
        }
    }
}

/// A file sanitized follows the grammar as a check does: whether its copy
/// is one whole document, and how a salvage would close it, on every path
/// a file takes (a second document appended, or a cut right after a `}`,
/// included).
#[test]
fn sanitize_file_says_whether_its_copy_is_one_whole_document() {
    let dir = tempfile::tempdir().unwrap();
    let dirty = events(20);
    let clean = &dirty[dirty.len() - 29..]; // `[1, 2]}}` on: no defect, data after an array
    assert!(clean.starts_with(b"[1, 2]}}"));
    let clean_whole = b"{\"traceEvents\": [{\"ph\": \"X\"}]}\n".to_vec();
    let twice = [&clean_whole[..], &clean_whole[..]].concat();
    let (short, after) = (Some(CutKind::CutShort), Some(CutKind::DataAfterEnd));
    let cases: [(&[u8], Option<bool>, Option<CutKind>); 10] = [
        (&dirty, Some(true), None),
        (&clean_whole, Some(true), None),
        (&dirty[..dirty.len() - 1], Some(false), short),
        (&dirty[..dirty.len() - 25], Some(false), short),
        (clean, Some(false), after),
        (&twice, Some(false), after),
        (b"", Some(false), None),
        (b" \r\n", Some(false), None),
        (b"{}\0", Some(false), after),
        (b"[1, 2 3]", Some(true), None),
    ];
    for (bytes, complete, cut) in cases {
        for (gz_in, gz_out) in [(false, false), (false, true), (true, false), (true, true)] {
            let input = dir.path().join(if gz_in { "in.json.gz" } else { "in.json" });
            let output = dir.path().join(if gz_out { "out.json.gz" } else { "out.json" });
            fs::write(&input, if gz_in { gz(bytes) } else { bytes.to_vec() }).unwrap();
            let report =
                sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
            let shown = String::from_utf8_lossy(bytes);
            assert_eq!(report.report.complete, complete, "{shown:?}, gzip {gz_in} -> {gz_out}");
            assert_eq!(report.report.cut.as_ref().map(|c| c.kind), cut, "{shown:?}");
            let broken = report.report.malformed.as_ref().map(|m| (m.offset, m.found.to_string()));
            assert_eq!(
                broken,
                (bytes == b"[1, 2 3]").then_some((6, "a number or word".to_string()))
            );
            // Nothing was closed or dropped.
            let written = fs::read(&output).unwrap();
            let copy = if gz_out { gunzip(&written) } else { written };
            assert!(report.report.needs_repair() || copy == bytes, "{shown:?}");
        }
    }
}

/// UTF-16 and UTF-32 text (a trace re-saved by Windows PowerShell) is
/// refused with its encoding, whatever its compression, and nothing is
/// written; a file of zeros (what a crash leaves) is not taken for one.
#[test]
fn utf16_and_utf32_traces_are_refused_with_their_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"traceEvents\": [{\"name\": \"k\"}]}";
    let utf16 = |big: bool, bom: bool| -> Vec<u8> {
        let units = bom.then_some(0xfeff).into_iter().chain(text.encode_utf16());
        units.flat_map(|u| if big { u.to_be_bytes() } else { u.to_le_bytes() }).collect()
    };
    let utf32 = |big: bool, bom: bool| -> Vec<u8> {
        let chars = bom.then_some(0xfeff).into_iter().chain(text.chars().map(u32::from));
        chars.flat_map(|c| if big { c.to_be_bytes() } else { c.to_le_bytes() }).collect()
    };
    let cases = [
        (utf16(false, true), "UTF-16LE"),
        (utf16(false, false), "UTF-16LE"),
        (utf16(true, true), "UTF-16BE"),
        (utf16(true, false), "UTF-16BE"),
        (utf32(false, true), "UTF-32LE"),
        (utf32(false, false), "UTF-32LE"),
        (utf32(true, true), "UTF-32BE"),
        (utf32(true, false), "UTF-32BE"),
    ];
    let output = dir.path().join("out.json");
    for (bytes, encoding) in cases {
        for gzip in [false, true] {
            let input = dir.path().join(if gzip { "w.json.gz" } else { "w.json" });
            fs::write(&input, if gzip { gz(&bytes) } else { bytes.clone() }).unwrap();
            let err = sanitize_file(&input, &output, &Options::default(), &mut no_progress())
                .unwrap_err();
            match &err {
                Error::NotUtf8File { path, encoding: e } => {
                    assert_eq!((path, *e), (&input, encoding))
                }
                other => panic!("{encoding}: {other:?}"),
            }
            assert!(err.to_string().contains(&format!("iconv -f {encoding} -t UTF-8")), "{err}");
            assert!(!output.exists());
            let check = check_file(&input, &Options::default(), &mut no_progress());
            assert!(matches!(check, Err(Error::NotUtf8File { .. })), "{check:?}");
        }
    }
    // Zeros, and UTF-8 that merely holds zero bytes later on, are read as UTF-8.
    for bytes in [vec![0u8; 64], b"{\"a\": \"\0\0\"}".to_vec()] {
        let input = dir.path().join("z.json");
        fs::write(&input, &bytes).unwrap();
        check_file(&input, &Options::default(), &mut no_progress()).unwrap();
    }
}

/// Text before the document (a log line written into the trace's file) is
/// found by every pass, and salvage does not guess where the trace starts.
#[test]
fn text_before_the_document_is_found_and_not_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.json");
    fs::write(&input, [&b"\n  W1130 rank {0}: start\n"[..], &events(5)].concat()).unwrap();
    let check = check_file(&input, &Options::default(), &mut no_progress()).unwrap().report;
    assert_eq!((check.starts_with, check.complete, check.cut), (Some(b'W'), Some(false), None));
    let output = dir.path().join("out.json");
    let copied = sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
    assert_eq!((copied.report.starts_with, copied.report.complete), (Some(b'W'), Some(false)));
    fs::remove_file(&output).unwrap();
    let err =
        trace_sanitize::salvage_file(&input, &output, &Options::default(), &mut no_progress())
            .unwrap_err();
    assert!(
        matches!(&err, Error::NotADocumentFile { path, first: b'W' } if *path == input),
        "{err:?}"
    );
    assert!(err.to_string().contains("starts with 'W'"), "{err}");
    assert!(!output.exists());
    // A byte order mark before the document is repaired, not text.
    fs::write(&input, [&b"\xef\xbb\xbf"[..], &events(5)].concat()).unwrap();
    let check = check_file(&input, &Options::default(), &mut no_progress()).unwrap().report;
    assert_eq!((check.starts_with, check.complete), (None, Some(true)));
    let copied = sanitize_file(&input, &output, &Options::default(), &mut no_progress()).unwrap();
    assert_eq!((copied.report.starts_with, copied.report.complete), (None, Some(true)));
}

/// The zeros a trace ends with (its node went down before its last blocks
/// reached the disk) are counted, however the input is split; zeros with
/// data after them are not.
#[test]
fn the_zeros_a_trace_ends_with_are_counted() {
    let trace = events(5);
    let cut = &trace[..trace.len() / 2];
    for (bytes, zeros) in [
        ([cut, &[0u8; 5000][..]].concat(), 5000),
        ([cut, &[0u8; 300][..], b"}"].concat(), 0),
        (vec![0u8; 4096], 4096),
        (trace.clone(), 0),
    ] {
        for buffer_size in [7, 1000, 1 << 17] {
            let options = Options { buffer_size, ..Options::default() };
            let check = trace_sanitize::check(&bytes[..], &options).unwrap();
            assert_eq!(check.zeros_at_end, zeros, "buffer {buffer_size}");
            let (_, sanitized) = crate::run_with(&bytes, &options);
            assert_eq!(sanitized.zeros_at_end, zeros, "buffer {buffer_size}");
        }
    }
}

/// Inside the string a cut left open, the zeros a crash leaves are no
/// control bytes of the trace: not counted, not listed (the copy escapes
/// them, the salvage drops them); a control byte of the trace before them
/// is, and so are a few zeros (the trace's own, maybe).
#[test]
fn the_zeros_a_crash_leaves_in_a_string_are_no_repairs() {
    let trace = events(3);
    // Cut in `"traceName": "t`.
    let at = trace.windows(4).rposition(|w| w == b"\": \"").unwrap() + 5;
    let open = &trace[..at];
    for (tail, zeros, listed) in [
        (&[0u8; 5000][..], 5000, vec![]),
        (&[[1u8].as_slice(), &[0u8; 5000]].concat(), 5000, vec![at as u64]),
        (&[0u8; 15][..], 15, (at as u64..at as u64 + 15).collect()),
    ] {
        let bytes = [open, tail].concat();
        for buffer_size in [7, 1000, 1 << 17] {
            let options = Options { buffer_size, ..Options::default() };
            let (out, sanitized) = crate::run_with(&bytes, &options);
            let check = trace_sanitize::check(&bytes[..], &options).unwrap();
            let mut salvaged = Vec::new();
            let salvage = trace_sanitize::salvage(&bytes[..], &mut salvaged, &options).unwrap();
            for report in [&sanitized, &check, &salvage] {
                assert_eq!(report.zeros_at_end, zeros, "buffer {buffer_size}");
                assert_eq!(report.counts.control_chars, listed.len() as u64);
                let offsets: Vec<u64> = report.repairs.iter().map(|r| r.offset).collect();
                assert_eq!(offsets, listed, "buffer {buffer_size}");
                assert_eq!(report.complete, Some(false));
            }
            // The copy is the input with every control byte escaped.
            assert!(out.ends_with(&b"\\u0000".repeat(tail.len().min(5000))[..]));
            assert!(!salvaged.contains(&0), "buffer {buffer_size}");
        }
    }
}

/// A cut is told in the input's bytes, whatever the repairs before it and
/// in what it drops (escapes make them more in the copy): the salvaged copy
/// is the input without its last `dropped` bytes, repaired, and closed.
#[test]
fn a_cut_drops_what_it_says_in_input_bytes() {
    let trace = events(5);
    let start = trace.windows(4).position(|w| w == b"py\x01t").unwrap();
    for end in start..trace.len() {
        for zeros in [0, 40] {
            let input = [&trace[..end], &vec![0u8; zeros][..]].concat();
            let mut salvaged = Vec::new();
            let Ok(report) =
                trace_sanitize::salvage(&input[..], &mut salvaged, &Options::default())
            else {
                continue;
            };
            let Some(cut) = report.cut else { continue };
            let kept = &input[..input.len() - cut.dropped as usize];
            let (repaired, _) = crate::run(kept);
            assert_eq!(
                String::from_utf8_lossy(&salvaged),
                String::from_utf8_lossy(&[&repaired[..], cut.closed_with.as_bytes()].concat()),
                "cut at {end}, {zeros} zeros"
            );
            assert_eq!(cut.at, input.len() as u64);
            let check = trace_sanitize::check(&input[..], &Options::default()).unwrap();
            assert_eq!(check.cut.map(|c| c.dropped), Some(cut.dropped));
        }
    }
}

/// The errors of a copy, a salvage and a check of `input`, each of which
/// must fail.
fn every_pass_refuses(input: &Path, output: &Path) -> [Error; 3] {
    let options = Options::default();
    [
        sanitize_file(input, output, &options, &mut no_progress()).unwrap_err(),
        trace_sanitize::salvage_file(input, output, &options, &mut no_progress()).unwrap_err(),
        check_file(input, &options, &mut no_progress()).unwrap_err(),
    ]
}

/// A Perfetto trace (protobuf, rocprofv3's `pftrace`) is refused as one,
/// by every pass and whatever its compression, and nothing is written; a
/// JSON text that starts with a line feed, however broken, is not taken for
/// one.
#[test]
fn a_perfetto_trace_is_refused_as_one() {
    // Two packets as Perfetto writes them: a timestamp (field 8, varint)
    // and a sequence id (field 10), then a clock snapshot (field 6) 200
    // bytes long, whose length takes two bytes.
    let mut perfetto = vec![0x0a, 0x05, 0x40, 0x96, 0x01, 0x50, 0x01, 0x0a, 0xc8, 0x01, 0x32];
    perfetto.extend((0..199u8).map(|b| b % 0x7f));
    let mut cases = vec![perfetto];
    if let Some(public) = crate::public_fixtures() {
        cases.push(fs::read(public.join("pftrace/qmljuliaexamples/trace.pftrace")).unwrap());
    }
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    for bytes in &cases {
        assert!(trace_sanitize::is_perfetto(bytes));
        for gzip in [false, true] {
            let input = dir.path().join(if gzip { "t.pftrace.gz" } else { "t.pftrace" });
            fs::write(&input, if gzip { gz(bytes) } else { bytes.clone() }).unwrap();
            for err in every_pass_refuses(&input, &output) {
                assert!(matches!(&err, Error::PerfettoFile { path } if *path == input), "{err:?}");
                assert!(err.to_string().contains("Perfetto protobuf trace"), "{err}");
            }
            assert!(!output.exists());
        }
    }
    for json in [
        &b"\n{\"traceEvents\": [{\"name\": \"\x01\x02\"}]}"[..],
        b"\n\n[{\"name\": \"\x01\"}]",
        b"\n  W1130 rank \x01: start\n{}",
        // A colored log line (ANSI escapes) before the trace.
        b"\nW1130 12:00:00.123 rank0 \x1b[33mprofiler started\x1b[0m\n{\"traceEvents\": []}",
        b"\nI1130 \x1b[1mstep 3\x1b[0m: 12.5 ms, 0.98 loss\n{\"traceEvents\": []}",
        b"\n\x00\x08\x01\x02",
        &[0u8; 64],
        b"",
    ] {
        assert!(!trace_sanitize::is_perfetto(json), "{json:?}");
    }
}

/// A SQLite database (rocprofv3's rocpd output, RPD) is refused as one, by
/// every pass, and nothing is written: repaired byte by byte it would only
/// be mangled into a "copy" no one can read.
#[test]
fn a_sqlite_database_is_refused_as_one() {
    let db = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/synthetic/run/rocprof_output/1e4d92661463/1234_results.db"),
    )
    .unwrap();
    assert!(trace_sanitize::is_sqlite(&db));
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("1234_results.db");
    let output = dir.path().join("out.json");
    fs::write(&input, &db).unwrap();
    for err in every_pass_refuses(&input, &output) {
        assert!(matches!(&err, Error::SqliteFile { path } if *path == input), "{err:?}");
    }
    assert!(!output.exists());
    assert!(!trace_sanitize::is_sqlite(b"SQLite format 3 is a database; {\"traceEvents\": []}"));
}

/// Compressed data where the JSON text goes (a `.json.gz` compressed twice,
/// a zstd, xz, bzip2 or zip file) is refused with its format and how to
/// decompress it, by every pass, and nothing is written.
#[test]
fn compressed_data_is_refused_with_how_to_decompress_it() {
    let json = b"{\"traceEvents\": [{\"name\": \"k\"}]}";
    let magic: [(&str, &[u8]); 5] = [
        ("gzip", &gz(json)),
        ("zstd", b"\x28\xb5\x2f\xfd\x04\x58"),
        ("xz", b"\xfd7zXZ\x00\x00\x04"),
        ("bzip2", b"BZh91AY&SY\x8a"),
        ("zip", b"PK\x03\x04\x14\x00"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    for (format, head) in magic {
        let bytes = [head, &[0x9c, 0x00, 0xff][..]].concat();
        assert_eq!(trace_sanitize::compressed_format(&bytes), Some(format));
        // A gzip file alone is a gzip trace: only one inside a gzip is refused.
        let twices: &[bool] = if format == "gzip" { &[true] } else { &[false, true] };
        for &twice in twices {
            let input = dir.path().join(if twice { "t.json.gz" } else { "t.json" });
            fs::write(&input, if twice { gz(&bytes) } else { bytes.clone() }).unwrap();
            for err in every_pass_refuses(&input, &output) {
                let expected = (input.clone(), format, twice);
                match &err {
                    Error::CompressedFile { path, format, twice } => {
                        assert_eq!((path.clone(), *format, *twice), expected)
                    }
                    other => panic!("{format}, twice: {twice}: {other:?}"),
                }
                let said = err.to_string();
                assert!(said.contains(&format!("{format}-compressed")), "{said}");
                // Into a file beside it, never over it.
                let plain = dir.path().join(if twice { "t.json" } else { "t.decompressed.json" });
                assert!(said.ends_with(&format!("> {}`", plain.display())), "{said}");
            }
            assert!(!output.exists());
        }
    }
    assert_eq!(trace_sanitize::compressed_format(b"BZh9 not bzip2"), None);
    assert_eq!(trace_sanitize::compressed_format(json), None);
}
