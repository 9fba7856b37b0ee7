//! Truncated traces: refused with the place of the cut, or, with
//! `Options::salvage`, summarized from the events complete before it.

use std::{io::Write, path::Path};

use trace_summary::{Error, Options, Outcome, summarize_file, summarize_file_with};

/// A small real-shaped trace: CPU ops first, then launches and kernels in
/// time order with their flows, as Kineto writes them.
fn kineto(kernels: usize) -> String {
    let mut events = vec![
        r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 1000, "args": {"External id": 1}}"#.to_string(),
    ];
    for k in 0..kernels {
        let ts = 10 + 100 * k;
        events.push(format!(
            r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {ts}, "dur": 5, "args": {{"correlation": {k}, "External id": 1}}}}"#
        ));
        events.push(format!(
            r#"{{"ph": "s", "cat": "ac2g", "id": {k}, "pid": 1, "tid": 1, "ts": {ts}, "name": "ac2g"}}"#
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "gemm_{k}", "pid": 0, "tid": 7, "ts": {}, "dur": 50, "args": {{"correlation": {k}, "stream": 7, "device": 0, "grid": [1, 1, 1], "block": [1, 1, 1]}}}}"#,
            ts + 20
        ));
        events.push(format!(
            r#"{{"ph": "f", "cat": "ac2g", "id": {k}, "pid": 0, "tid": 7, "ts": {}, "name": "ac2g", "bp": "e"}}"#,
            ts + 20
        ));
    }
    format!(
        "{{\"schemaVersion\": 1, \"deviceProperties\": [], \"traceEvents\": [\n{}\n], \"traceName\": \"t\"}}",
        events.join(",\n")
    )
}

fn gzip(path: &Path, bytes: &[u8]) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap();
}

#[test]
fn a_cut_trace_is_refused_and_salvaged_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto(40);
    let whole = dir.path().join("whole.json");
    std::fs::write(&whole, &trace).unwrap();
    let complete = summarize_file(&whole).unwrap();
    assert_eq!(complete.truncated_at, None);
    assert_eq!(complete.gpu_events, 40);

    // Cut in the middle of the 21st kernel's event.
    let cut_at = trace.find(r#""name": "gemm_20""#).unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &trace[..cut_at]).unwrap();
    let refused = summarize_file(&cut);
    assert!(refused.as_ref().is_err_and(Error::is_cut_short), "{refused:?}");
    match refused {
        Err(Error::Truncated { path, bytes, events }) => {
            assert_eq!(path, cut);
            assert_eq!(bytes, cut_at as u64);
            assert_eq!(events, Some(1 + 20 * 4 + 2));
        }
        other => panic!("{other:?}"),
    }
    let salvaged = summarize_file_with(&cut, &Options::salvaging()).unwrap();
    assert_eq!(salvaged.truncated_at, Some(cut_at as u64));
    assert_eq!(salvaged.outcome, Outcome::Tables);
    assert_eq!(salvaged.gpu_events, 20);
    let kernels = salvaged.kernel_summary.unwrap();
    assert_eq!(kernels.rows.len(), 20);
}

/// A token where the grammar allows none throws the nesting the reader
/// follows off, so that it sees the document end early, or never: that
/// token is named, not the end it seemed to find or miss.
#[test]
fn a_break_that_seems_to_end_the_document_or_never_is_named_not_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto(2);
    for (name, instead, at) in [
        ("early.json", "\"schema\": \"v\": 1}", ": 1}"),
        ("never.json", "\"schema\": {1", "1, \"dev"),
    ] {
        let broken = trace.replacen("\"schemaVersion\": 1", instead, 1);
        let path = dir.path().join(name);
        std::fs::write(&path, &broken).unwrap();
        match summarize_file(&path) {
            Err(Error::Malformed { offset, .. }) => {
                assert_eq!(offset, broken.find(at).unwrap() as u64, "{name}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn data_after_the_document_is_refused_and_dropped_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto(8);
    let whole = dir.path().join("whole.json");
    std::fs::write(&whole, &trace).unwrap();
    let complete = summarize_file(&whole).unwrap();
    // A second trace appended (its events must not count), a log line, the
    // zeros a crash leaves; gzipped too.
    for (i, after) in [kineto(3).as_str(), "W1130 rank 0: done\n", "\0\0\0\0"].iter().enumerate() {
        let text = format!("{trace}\n{after}");
        for gz in [false, true] {
            let path = dir.path().join(format!("after{i}.json{}", if gz { ".gz" } else { "" }));
            if gz {
                gzip(&path, text.as_bytes());
            } else {
                std::fs::write(&path, &text).unwrap();
            }
            let refused = summarize_file(&path);
            match &refused {
                Err(e @ Error::DataAfterEnd { path: p, offset }) => {
                    assert_eq!((p, *offset), (&path, Some(trace.len() as u64 + 1)));
                    assert!(e.is_salvageable() && !e.is_cut_short());
                }
                other => panic!("{after:?}: {other:?}"),
            }
            let salvaged = summarize_file_with(&path, &Options::salvaging()).unwrap();
            assert_eq!(salvaged.data_after_end, Some(after.len() as u64), "{after:?}");
            assert_eq!(salvaged.truncated_at, None);
            assert_eq!(
                (salvaged.events, salvaged.gpu_events, &salvaged.kernel_summary),
                (complete.events, complete.gpu_events, &complete.kernel_summary)
            );
        }
    }
}

#[test]
fn a_cut_gzip_stream_is_salvaged_up_to_where_it_could_be_read() {
    let dir = tempfile::tempdir().unwrap();
    // Less than one buffer of JSON, and several.
    for kernels in [300, 3000] {
        let trace = kineto(kernels);
        let full = dir.path().join("full.json.gz");
        gzip(&full, trace.as_bytes());
        let bytes = std::fs::read(&full).unwrap();
        let cut = dir.path().join("cut.json.gz");
        std::fs::write(&cut, &bytes[..bytes.len() * 3 / 4]).unwrap();
        let refused = summarize_file(&cut);
        assert!(refused.as_ref().is_err_and(Error::is_cut_short), "{refused:?}");
        match refused {
            Err(Error::Read { gzip: true, .. }) => {}
            other => panic!("{kernels}: {other:?}"),
        }
        let salvaged = summarize_file_with(&cut, &Options::salvaging()).unwrap();
        let at = salvaged.truncated_at.expect("marked truncated");
        assert!(at > trace.len() as u64 / 2 && at < trace.len() as u64, "{kernels}: {at}");
        let gpu = salvaged.gpu_events;
        assert!(gpu > kernels / 3 && gpu < kernels, "{kernels}: {gpu}");
    }
}

/// The public rocprofv3 trace, gunzipped.
pub(crate) fn public_rocprofv3() -> Option<Vec<u8>> {
    let root = crate::public_dir::public_fixtures()?;
    let gz = std::fs::read(root.join("rocprofv3/tracelens/908_results.json.gz")).unwrap();
    Some(crate::damage::gunzip(&gz))
}

#[test]
fn a_rocprofv3_trace_with_data_after_its_end_is_refused_and_read_without_it_on_request() {
    let Some(json) = public_rocprofv3() else { return };
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("908_results.json");
    std::fs::write(&whole, &json).unwrap();
    let complete = summarize_file(&whole).unwrap();
    // A second (empty) rocprofv3 document appended.
    let after = br#"{"rocprofiler-sdk-tool": []}"#;
    let tail = dir.path().join("tail_results.json");
    std::fs::write(&tail, [&json[..], b"\n", after].concat()).unwrap();
    match summarize_file(&tail) {
        // A whole second document: where it starts, as a Kineto trace's.
        Err(e @ Error::DataAfterEnd { offset: Some(at), .. }) => {
            assert_eq!(at, json.len() as u64 + 1);
            assert!(e.is_salvageable());
        }
        other => panic!("{other:?}"),
    }
    // A log line: where it starts.
    let log = dir.path().join("log_results.json");
    std::fs::write(&log, [&json[..], b"\n  W1201 rocprofv3 done\n"].concat()).unwrap();
    match summarize_file(&log) {
        Err(Error::DataAfterEnd { offset: Some(at), .. }) => assert_eq!(at, json.len() as u64 + 3),
        other => panic!("{other:?}"),
    }
    let salvaged = summarize_file_with(&tail, &Options::salvaging()).unwrap();
    assert_eq!(salvaged.data_after_end, Some(after.len() as u64));
    assert_eq!(
        (salvaged.outcome, salvaged.gpu_events, &salvaged.kernel_summary),
        (complete.outcome, complete.gpu_events, &complete.kernel_summary)
    );
}

#[test]
fn a_cut_rocprofv3_trace_is_salvaged_from_its_whole_records() {
    let Some(json) = public_rocprofv3() else { return };
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("908_results.json");
    std::fs::write(&whole, &json).unwrap();
    let complete = summarize_file(&whole).unwrap();
    // The kernel dispatch records come last: cut in their middle.
    let at = json.len() - (json.len() - find(&json, b"\"kernel_dispatch\"")) / 2;
    let cut = dir.path().join("cut_results.json");
    std::fs::write(&cut, &json[..at]).unwrap();
    // Refused without salvage, with where the JSON ends.
    match summarize_file(&cut) {
        Err(e @ Error::Truncated { bytes, events: None, .. }) => {
            assert_eq!(bytes, at as u64);
            assert!(e.is_cut_short());
            assert!(e.to_string().ends_with(&format!("its JSON ends after {at} bytes")), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let salvaged = summarize_file_with(&cut, &Options::salvaging()).unwrap();
    assert_eq!(salvaged.outcome, Outcome::Rocprofv3);
    assert_eq!(salvaged.truncated_at, Some(at as u64));
    assert!(
        salvaged.gpu_events > complete.gpu_events / 4 && salvaged.gpu_events < complete.gpu_events,
        "{} of {}",
        salvaged.gpu_events,
        complete.gpu_events
    );
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).position(|w| w == needle).unwrap()
}

#[test]
fn nothing_complete_is_said_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, br#"{"traceEvents": [{"ph": "X", "na"#).unwrap();
    let err = summarize_file_with(&cut, &Options::salvaging()).unwrap_err();
    assert!(trace_summary::one_line(&err).contains("nothing to salvage"), "{err}");
    assert!(!err.is_cut_short(), "salvage cannot read it either");
}

#[test]
fn a_raised_cancel_flag_stops_the_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, kineto(2000)).unwrap();
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Not raised: the trace is read as usual.
    let options = Options::default().cancelled_by(std::sync::Arc::clone(&cancel));
    assert_eq!(summarize_file_with(&path, &options).unwrap().outcome, Outcome::Tables);
    cancel.store(true, std::sync::atomic::Ordering::SeqCst);
    for options in [options.clone(), Options::salvaging().cancelled_by(cancel)] {
        let err = summarize_file_with(&path, &options).unwrap_err();
        assert!(matches!(&err, Error::Cancelled { path: p } if *p == path), "{err:?}");
        assert_eq!(err.to_string(), format!("stopped reading {}", path.display()));
    }
}

/// A file that is not a trace from its first byte is refused for that,
/// however large: the parser stops at once, and that stop is not taken for
/// a failed read.
#[test]
fn text_before_a_large_trace_is_named_not_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    // Well past what the sanitizer can hand over before the parser stops.
    let trace = kineto(40_000);
    assert!(trace.len() > 16 << 20, "{}", trace.len());
    for (name, text) in [
        ("lead.json", format!("W1130 rank 0: start\n{trace}")),
        ("array.json", format!("[{trace}]")),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        match (name, summarize_file(&path)) {
            ("lead.json", Err(Error::NotADocument { first: b'W', .. })) => {}
            ("array.json", Err(Error::Parse { source, .. })) => {
                let detail = source.to_string();
                assert!(detail.contains("not a JSON object"), "{detail}")
            }
            (_, other) => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_utf16_trace_is_named_with_its_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    let utf16: Vec<u8> = std::iter::once(0xfeff)
        .chain(kineto(3).encode_utf16())
        .flat_map(u16::to_le_bytes)
        .collect();
    std::fs::write(&path, utf16).unwrap();
    match summarize_file(&path) {
        Err(e @ Error::NotUtf8 { encoding: "UTF-16LE", .. }) => {
            assert!(e.to_string().contains("iconv -f UTF-16LE -t UTF-8"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

/// A `.json.gz` compressed twice, or a zstd trace, is named as such, with
/// how to decompress it.
#[test]
fn compressed_data_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let gz = |bytes: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, bytes).unwrap();
        e.finish().unwrap()
    };
    let twice = dir.path().join("twice.json.gz");
    std::fs::write(&twice, gz(&gz(kineto(3).as_bytes()))).unwrap();
    let zstd = dir.path().join("t.json.zst");
    let zstd_bytes = b"\x28\xb5\x2f\xfd\x04\x58\x9c\x00";
    std::fs::write(&zstd, zstd_bytes).unwrap();
    for (read, expected) in [
        (summarize_file(&twice), ("gzip", true)),
        (summarize_file_with(&twice, &Options::salvaging()), ("gzip", true)),
        (summarize_file(&zstd), ("zstd", false)),
        (trace_summary::summarize(&zstd_bytes[..], &zstd), ("zstd", false)),
    ] {
        match read {
            Err(e @ Error::Compressed { format, twice, .. }) => {
                assert_eq!((format, twice), expected);
                let plain = if twice { "twice.json" } else { "t.json" };
                assert!(e.to_string().ends_with(&format!("{plain}`")), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A bare word that is not JSON is named with its offset and key, in input
/// bytes, wherever it is: in an event the tables read (an error, in a plain
/// and a gzip trace, a Kineto and a rocprofv3 one, salvaged or not), or in
/// a part they do not read (the tables, and the word). Early Kineto's bare
/// `N/A` is repaired.
#[test]
fn bare_words_that_are_not_json_are_named_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto(3);
    let rocprof = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/synthetic/run/rocprof_output/9999_results.json"),
    )
    .unwrap();
    // Its stray bytes repaired, so that offsets in it are offsets in the file.
    let rocprof = String::from_utf8_lossy(&rocprof).into_owned();
    let in_event = trace.replacen("\"dur\": 50,", "\"dur\": 50, \"occupancy\": None,", 1);
    let in_rocprof = rocprof.replacen("\"pid\":", "\"pid\": undefined, \"was\":", 1);
    assert!(in_event != trace && in_rocprof != rocprof);
    let offset = |text: &str, word: &str| text.find(word).unwrap() as u64;
    for (name, text, word, key) in [
        ("event.json", &in_event, "None", "occupancy"),
        ("rocprof.json", &in_rocprof, "undefined", "pid"),
    ] {
        for gz in [false, true] {
            let path = dir.path().join(if gz { format!("{name}.gz") } else { name.to_string() });
            if gz {
                gzip(&path, text.as_bytes());
            } else {
                std::fs::write(&path, text).unwrap();
            }
            for options in [Options::default(), Options::salvaging()] {
                let err = summarize_file_with(&path, &options).unwrap_err();
                let Error::NotJson { offset: at, text: found, key: of, .. } = &err else {
                    panic!("{name}: {err:?}")
                };
                assert_eq!(
                    (*at, found.as_str(), of.as_deref()),
                    (offset(text, word), word, Some(key))
                );
                assert!(err.to_string().contains("no repair applies"), "{err}");
            }
        }
    }
    // In metadata the tables skip: read, and the word is named.
    let path = dir.path().join("meta.json");
    std::fs::write(&path, trace.replacen("\"schemaVersion\": 1", "\"schemaVersion\": True", 1))
        .unwrap();
    let summary = summarize_file(&path).unwrap();
    assert_eq!(summary.outcome, Outcome::Tables);
    let word = summary.not_json.unwrap();
    assert_eq!(
        (word.offset, word.text.as_str(), word.key.as_deref()),
        (18, "True", Some("schemaVersion"))
    );
    // So in the lists of a rocprofv3 trace the tables skip (its HIP API
    // calls here).
    let skipped = rocprof.replacen("\"thread_id\":", "\"tid\": undefined, \"thread_id\":", 1);
    assert!(skipped.find("undefined") < skipped.find("kernel_dispatch"), "in hip_api");
    std::fs::write(&path, &skipped).unwrap();
    let summary = summarize_file(&path).unwrap();
    assert_eq!((summary.outcome, summary.gpu_events), (Outcome::Rocprofv3, 1));
    let word = summary.not_json.unwrap();
    assert_eq!(
        (word.offset, word.text.as_str(), word.key.as_deref()),
        (offset(&skipped, "undefined"), "undefined", Some("tid"))
    );
    // N/A is quoted and read.
    std::fs::write(&path, trace.replacen("\"dur\": 50,", "\"dur\": 50, \"occupancy\": N/A,", 1))
        .unwrap();
    let summary = summarize_file(&path).unwrap();
    assert_eq!((summary.repaired.unquoted_not_available, summary.not_json), (1, None));
}
