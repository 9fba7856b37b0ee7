//! Perfetto traces (rocprofv3 `--output-format pftrace`): the same tables as
//! its JSON, read packet by packet.

use std::{
    path::Path,
    sync::{Arc, atomic::AtomicBool},
};

use trace_summary::{Error, Format, Options, Outcome, Summary};

use crate::rocpd::{SAME_AS_JSON, synthetic};

/// As rocprofv3 writes it: names interned, begin_ns/end_ns annotations.
const ANNOTATED: &str = "pftrace/rocprofv3/1234_results.pftrace";
/// Timed by packet timestamps only; the GPU's packets zlib-compressed.
const TIMESTAMPS: &str = "pftrace/timestamps/1234_results.pftrace";

fn csvs(s: &Summary) -> (Option<String>, Option<String>) {
    (s.gpu_timeline.as_ref().map(|t| t.to_csv()), s.kernel_summary.as_ref().map(|t| t.to_csv()))
}

#[test]
fn a_pftrace_gives_the_tables_its_json_would() {
    // Kernels by their truncated names, as in the JSON, though their
    // slices carry the demangled ones (`ncclDevKernel_Generic(...)`).
    let from_json =
        trace_summary::summarize(SAME_AS_JSON.as_bytes(), Path::new("same.json")).unwrap();
    for fixture in [ANNOTATED, TIMESTAMPS] {
        let path = synthetic(fixture);
        let before = std::fs::read(&path).unwrap();
        let s = trace_summary::summarize_file(&path).unwrap();
        assert_eq!((s.format, s.outcome), (Format::Perfetto, Outcome::Rocprofv3), "{fixture}");
        assert_eq!((s.events, s.gpu_events), (4, 4), "{fixture}");
        // The total is the span of every slice (the HIP calls' 1000..9000
        // ns here), as the JSON's process init..fini.
        assert_eq!(csvs(&s), csvs(&from_json), "{fixture}");
        // A Perfetto trace names no GPU model; its kernels' `agent` (as
        // `--agent-index type-relative` writes it) the GPU they ran on.
        assert!(s.gpus.is_empty(), "{fixture}");
        let gpu = if fixture == ANNOTATED { Some(0) } else { None };
        assert_eq!(s.gpu_index, gpu, "{fixture}");
        assert_eq!(Format::of_file(&path), Format::Perfetto);
        assert_eq!(std::fs::read(&path).unwrap(), before, "read-only");
        // From a stream too, and gzipped.
        let streamed = trace_summary::summarize(&before[..], &path).unwrap();
        assert_eq!(csvs(&streamed), csvs(&s));
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("t.pftrace.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, &before).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        assert_eq!(csvs(&trace_summary::summarize_file(&gz).unwrap()), csvs(&s));
    }
}

/// The real Perfetto file of the public fixtures (a QML.jl example's, no
/// GPU, metadata packets only) reads without error: nothing to summarize.
#[test]
fn a_real_perfetto_trace_without_slices_has_nothing_to_summarize() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let path = root.join("pftrace/qmljuliaexamples/trace.pftrace");
    let s = trace_summary::summarize_file(&path).unwrap();
    assert_eq!((s.format, s.outcome, s.events), (Format::Perfetto, Outcome::NoGpuActivity, 0));
    assert!(s.record_lists.is_empty() && s.gpu_timeline.is_none());
}

/// Packets without track events (here: a timestamp and a sequence id
/// each) are a Perfetto trace with nothing to summarize, from a file
/// (salvaged or not) or from a reader.
#[test]
fn packets_without_slices_are_read_as_an_empty_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    let packets = [0x0a, 4, 0x40, 1, 0x50, 1, 0x0a, 4, 0x40, 2, 0x50, 1];
    std::fs::write(&path, packets).unwrap();
    for read in [
        trace_summary::summarize_file(&path),
        trace_summary::summarize_file_with(&path, &Options::salvaging()),
        trace_summary::summarize(&packets[..], &path),
    ] {
        let s = read.unwrap();
        assert_eq!((s.format, s.outcome), (Format::Perfetto, Outcome::NoGpuActivity));
    }
}

/// Cut inside a packet (a writer killed, a copy cut short), a trace is an
/// error that says so and where; salvaged, the slices before the cut.
#[test]
fn a_pftrace_cut_short_is_named_and_salvaged() {
    let whole = std::fs::read(synthetic(ANNOTATED)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pftrace");
    let cut = whole.len() - 5;
    std::fs::write(&path, &whole[..cut]).unwrap();
    let err = trace_summary::summarize_file(&path).unwrap_err();
    assert!(matches!(err, Error::CutPacket { bytes, .. } if bytes == cut as u64), "{err:?}");
    assert!(err.is_cut_short() && err.is_salvageable());
    assert!(err.to_string().contains("ends inside a Perfetto packet"), "{err}");
    let salvaged = trace_summary::summarize_file_with(&path, &Options::salvaging()).unwrap();
    assert_eq!(salvaged.truncated_at, Some(cut as u64));
    // The copy's end slice is lost with the cut; its begin carries its
    // times (begin_ns, end_ns), so all four records are read.
    assert_eq!(salvaged.gpu_events, 4);
    // A gzip stream cut short is a cut too.
    let gz = dir.path().join("cut.pftrace.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &whole).unwrap();
    let zipped = e.finish().unwrap();
    std::fs::write(&gz, &zipped[..zipped.len() - 12]).unwrap();
    let err = trace_summary::summarize_file(&gz).unwrap_err();
    assert!(matches!(err, Error::CutPacket { .. }) && err.is_cut_short(), "{err:?}");
    let salvaged = trace_summary::summarize_file_with(&gz, &Options::salvaging()).unwrap();
    assert!(salvaged.truncated_at.is_some(), "{salvaged:?}");
    // The other's last packet holds all the GPU's, compressed: cut, none
    // of them is read, and what is left says what the trace held.
    let whole = std::fs::read(synthetic(TIMESTAMPS)).unwrap();
    let cut = whole.len() - 3;
    std::fs::write(&path, &whole[..cut]).unwrap();
    let salvaged = trace_summary::summarize_file_with(&path, &Options::salvaging()).unwrap();
    assert_eq!(
        (salvaged.outcome, salvaged.truncated_at),
        (Outcome::NoGpuActivity, Some(cut as u64))
    );
    assert_eq!(salvaged.record_lists, ["hip_api"]);
}

/// Bytes that are not protobuf past a Perfetto trace's first packet are an
/// error naming the offset of the packet that holds them.
#[test]
fn a_packet_that_is_not_protobuf_is_an_error_naming_its_offset() {
    let mut bytes = std::fs::read(synthetic(ANNOTATED)).unwrap();
    let at = bytes.len();
    // A packet whose body is a field with wire type 7 (none exists).
    bytes.extend([0x0a, 2, 0x0f, 0x00]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.pftrace");
    std::fs::write(&path, &bytes).unwrap();
    let err = trace_summary::summarize_file(&path).unwrap_err();
    let said = trace_summary::one_line(&err);
    assert!(matches!(err, Error::Parse { format: Some(Format::Perfetto), .. }), "{err:?}");
    assert!(said.contains(&format!("at byte {at}")) && said.contains("bad.pftrace"), "{said}");
    // A top-level field of a wire type no trace uses.
    bytes.truncate(at);
    bytes.extend([0x0b]);
    std::fs::write(&path, &bytes).unwrap();
    let said = trace_summary::one_line(&trace_summary::summarize_file(&path).unwrap_err());
    assert!(said.contains("wire type 3") && said.contains(&format!("at byte {at}")), "{said}");
}

#[test]
fn reading_a_pftrace_stops_when_cancelled() {
    let cancel = Arc::new(AtomicBool::new(true));
    let options = Options::default().cancelled_by(cancel);
    let err = trace_summary::summarize_file_with(&synthetic(ANNOTATED), &options).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
}

/// A trace whose slices are all of other categories lists them, for the
/// caller to say what the trace holds instead.
#[test]
fn a_pftrace_without_gpu_slices_lists_its_categories() {
    let whole = std::fs::read(synthetic(TIMESTAMPS)).unwrap();
    // Sequence 1's packets only: the HIP calls (the last packet holds the
    // GPU's, compressed). Packets are `0x0a <varint length> <body>`.
    let mut rest = &whole[..];
    let mut last = 0;
    while !rest.is_empty() {
        last = whole.len() - rest.len();
        rest = &rest[1..];
        let len = prost::encoding::decode_varint(&mut rest).unwrap() as usize;
        rest = &rest[len..];
    }
    let s = trace_summary::summarize(&whole[..last], Path::new("api.pftrace")).unwrap();
    assert_eq!(
        (s.outcome, s.record_lists.as_slice()),
        (Outcome::NoGpuActivity, &["hip_api".to_string()][..])
    );
}

/// rocprofv3's truncated name of each of the 9,889 kernel symbols of the
/// public rocprofv3 trace (PyTorch's templated kernels with their lambdas,
/// RCCL's, hipBLASLt's, the runtime's `.kd` ones), from its demangled name,
/// the name its slice has in a Perfetto trace.
#[test]
fn truncated_names_are_rocprofv3s_for_every_public_symbol() {
    let Some(json) = crate::truncated::public_rocprofv3() else { return };
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let symbols = doc["rocprofiler-sdk-tool"][0]["kernel_symbols"].as_array().unwrap();
    assert_eq!(symbols.len(), 9_889);
    let mut changed = 0;
    for s in symbols {
        let demangled = s["demangled_kernel_name"].as_str().unwrap();
        let truncated = s["truncated_kernel_name"].as_str().unwrap();
        assert_eq!(trace_summary::truncated_kernel_name(demangled), truncated, "{demangled}");
        changed += usize::from(demangled != truncated);
    }
    // Nearly half are names the truncation changes.
    assert_eq!(changed, 4_439);
}
