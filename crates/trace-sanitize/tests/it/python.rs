//! Cross-checks against CPython, the reference the sanitizer must match.

use std::{fs, process::Command};

use trace_sanitize::Options;

use crate::run_with;

/// A small deterministic generator (xorshift), so the cases are the same on
/// every run and Python sees exactly what Rust saw.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &'a [&'a [u8]]) -> &'a [u8] {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn python() -> Command {
    #[allow(clippy::disallowed_methods, reason = "a test calling the reference implementation")]
    Command::new("python3")
}

/// Random text with valid and invalid UTF-8 (but no control bytes inside
/// strings, no escapes and no stray quotes): the sanitized bytes must equal CPython's
/// `data.decode("utf-8", "replace").encode("utf-8")`, whatever the buffer size.
#[test]
fn invalid_utf8_matches_python_replace() {
    // A quote is always followed by a comma, and no object is opened: a
    // quote that closes a string is never a stray one to escape.
    let pieces: &[&[u8]] = &[
        b"a",
        b"\",",
        b" ",
        b"[",
        b"\xc3\xa9",
        b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80",
        b"\xff",
        b"\xfe",
        b"\xc3",
        b"\xe2\x82",
        b"\xf0\x9f",
        b"\xf0\x9f\x98",
        b"\x80",
        b"\xbf",
        b"\xc0\xaf",
        b"\xe0\x80\x80",
        b"\xed\xa0\x80",
        b"\xed\x9f\xbf",
        b"\xf4\x90\x80\x80",
        b"\xf4\x8f\xbf\xbf",
        b"\xf5",
        b"\xc2\xa0",
        b"\xef\xbf\xbd",
        b"\xe0\xa0",
        b"\xf1\x80\x80",
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Each starts with `a`: one starting with 0xFE 0xFF, say, is refused as
    // UTF-16 (tested apart).
    let cases: Vec<Vec<u8>> = (0..400)
        .map(|_| {
            let n = (rng.next() % 60) as usize;
            std::iter::once(&b"a"[..])
                .chain((0..n).map(|_| rng.pick(pieces)))
                .flatten()
                .copied()
                .collect()
        })
        .collect();
    for (i, case) in cases.iter().enumerate() {
        fs::write(dir.path().join(format!("{i}.in")), case).unwrap();
    }
    let script = r#"
import sys, pathlib
d = pathlib.Path(sys.argv[1])
for p in d.glob("*.in"):
    p.with_suffix(".py").write_bytes(p.read_bytes().decode("utf-8", "replace").encode("utf-8"))
"#;
    let status = python().args(["-c", script]).arg(dir.path()).status().expect("python3 runs");
    assert!(status.success());
    for (i, case) in cases.iter().enumerate() {
        let expected = fs::read(dir.path().join(format!("{i}.py"))).unwrap();
        for size in [1, 2, 3, 5, 64, 1 << 17] {
            let (ours, _) = run_with(case, &Options { buffer_size: size, ..Options::default() });
            assert_eq!(
                ours,
                expected,
                "case {i} {:?} with buffer {size}",
                String::from_utf8_lossy(case)
            );
        }
    }
}

/// What a string in a trace may hold: text, escapes and every defect.
const JUNK: &[&[u8]] = &[
    b"ok",
    b"\x01",
    b"\x1f",
    b"\t",
    b"\n",
    b"\xff",
    b"\xe2\x82",
    b"\\ud800",
    b"\\udfff",
    b"\\ud83d\\ude00",
    b"\\\"",
    b"\\\\",
    b"\xc3\xa9",
    b"\\u0041",
    b"\\ud800\\ud800",
    // Backslashes that start no escape: a Windows path, `\u` without hex,
    // a raw control or invalid byte after one.
    b"C:\\Users\\prof",
    b"\\x41",
    b"\\u12G4",
    b"\\\x01",
    b"\\\xff",
    // Quotes written unescaped: in a name, alone, and JSON text in a
    // value (kineto#1336).
    b"say \"hi\"",
    b"\"",
    b"{\"event_id\": 64}",
];

/// Bare words where a number goes: floats that are not finite, as C and
/// Python write them, early Kineto's `N/A`, and a finite number.
const BARE: &[&[u8]] =
    &[b"inf", b"-inf", b"nan", b"NaN", b"Infinity", b"-Infinity", b"N/A", b"1.5"];

/// A trace of 300 events whose names hold random [`JUNK`], and now and then a
/// [`BARE`] bandwidth.
fn defective_trace() -> Vec<u8> {
    let mut rng = Rng(42);
    let mut doc = b"{\"traceEvents\": [".to_vec();
    for i in 0..300 {
        if i > 0 {
            doc.extend_from_slice(b",\n");
        }
        doc.extend_from_slice(format!("{{\"ph\": \"X\", \"id\": {i}, ").as_bytes());
        if rng.next().is_multiple_of(4) {
            doc.extend_from_slice(b"\"bw\": ");
            doc.extend_from_slice(rng.pick(BARE));
            doc.extend_from_slice(b", ");
        }
        doc.extend_from_slice(b"\"name\": \"");
        for _ in 0..(rng.next() % 8) {
            doc.extend_from_slice(rng.pick(JUNK));
        }
        doc.extend_from_slice(b"\"}");
    }
    doc.extend_from_slice(b"]}\n");
    doc
}

/// JSON documents whose strings hold every defect: what we write must load in
/// Python's strict `json` and re-encode as strict UTF-8 (no lone surrogate
/// survives), which is what orjson demands.
#[test]
fn repaired_json_loads_strictly_in_python() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = run_with(&defective_trace(), &Options::default());
    assert!(report.needs_repair());
    let path = dir.path().join("repaired.json");
    fs::write(&path, &out).unwrap();
    let script = r#"
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
def refuse(constant):
    raise ValueError(f"not strict JSON: {constant}")
doc = json.loads(text, parse_constant=refuse)
json.dumps(doc, ensure_ascii=False).encode("utf-8")
assert len(doc["traceEvents"]) == 300
"#;
    let status = python().args(["-c", script]).arg(&path).status().expect("python3 runs");
    assert!(status.success(), "python rejected the repaired document");
}

/// The parser TraceLens loads traces with, for real: `$MADENGINE_ORJSON_PYTHON`
/// imports orjson 3.13.0 (`.ci/run` installs it).
fn orjson_python() -> Option<std::path::PathBuf> {
    crate::required::orjson_python()
}

/// Every defect class, alone and together: orjson (TraceLens' parser)
/// refuses each input that needs repair, and loads every repaired copy to the
/// same value Python's `json` reads from it.
#[test]
fn orjson_refuses_each_defect_and_loads_every_repair() {
    let Some(orjson) = orjson_python() else { return };
    let small = |name: &[u8], bw: &[u8]| {
        [&b"{\"traceEvents\": [{\"ph\": \"X\", \"bw\": "[..], bw, b", \"name\": \"", name, b"\"}]}"]
            .concat()
    };
    let mut cases: Vec<Vec<u8>> = JUNK.iter().map(|j| small(j, b"1")).collect();
    cases.extend(BARE.iter().map(|b| small(b"ok", b)));
    let bom = |doc: &[u8]| [&b"\xef\xbb\xbf"[..], doc].concat();
    cases.push(bom(&small(b"ok", b"1")));
    cases.push(defective_trace());
    cases.push(bom(&defective_trace()));
    // The project's own fixtures, broken ones among them.
    let synthetic = crate::fixtures().join("synthetic");
    for path in crate::public_dir::files_under(&synthetic) {
        if path.extension().is_some_and(|e| e == "json") {
            cases.push(fs::read(path).unwrap());
        }
    }
    let mut needs_repair = Vec::new();
    let mut files = Vec::new();
    for case in &cases {
        let (out, report) = run_with(case, &Options::default());
        needs_repair.push(report.needs_repair());
        files.extend([case.clone(), out]);
    }
    // Per case: whether orjson loads the input, then the output (or why not).
    let verdicts = orjson_loads(&orjson, &files);
    let rows: Vec<&[String]> = verdicts.chunks(2).collect();
    for (i, (row, repair)) in rows.iter().zip(&needs_repair).enumerate() {
        let case = String::from_utf8_lossy(&cases[i]);
        let shown = &case[..case.len().min(120)];
        assert_eq!(row[1], "ok", "orjson refuses the repaired copy of case {i}: {shown:?}");
        if *repair {
            assert_ne!(
                row[0], "ok",
                "case {i} was repaired, but orjson loads it as it is: {shown:?}"
            );
        } else {
            assert_eq!(row[0], "ok", "case {i} needs no repair, but orjson refuses it: {shown:?}");
        }
    }
    // Both kinds of case are here: clean ones and each class of defect.
    assert!(needs_repair.iter().any(|r| !r) && needs_repair.iter().filter(|r| **r).count() > 20);
}

/// Bare words no repair applies to: orjson refuses the trace and its
/// repaired copy alike, as the report says.
#[test]
fn orjson_refuses_what_is_not_json_repaired_or_not() {
    let Some(orjson) = orjson_python() else { return };
    let mut files = Vec::new();
    for word in [&b"True"[..], b"None", b"undefined", b"-x", b"N/A \"q\""] {
        let doc = [&b"{\"traceEvents\": [{\"ph\": \"X\", \"bw\": "[..], word, b"}]}"].concat();
        let (out, report) = run_with(&doc, &Options::default());
        assert_eq!(report.not_json, 1, "{}", String::from_utf8_lossy(word));
        files.extend([doc, out]);
    }
    for (verdict, doc) in orjson_loads(&orjson, &files).iter().zip(&files) {
        assert_ne!(verdict, "ok", "orjson loads {}", String::from_utf8_lossy(doc));
    }
}

/// Where a check finds the grammar broken (or a last string that never
/// ends), orjson refuses the repaired copy; where it finds nothing, orjson
/// loads it.
#[test]
fn orjson_agrees_with_the_grammar_check() {
    let Some(orjson) = orjson_python() else { return };
    let broken: &[&[u8]] = &[
        b"{\"traceEvents\": [{\"ph\": \"X\", \"note\": \"a\"]\"}]}",
        b"{\"a\": 1 \"b\": 2}",
        b"{\"a\": [1, 2}}",
        b"[1, 2,]",
        b"{\"a\": 1,}",
        b"{\"a\" 1}",
        b"{\"a\": \"C:\\dir\\\", \"b\": 1}",
        b"[1, \x01 2]",
        // Numbers JSON does not have.
        b"{\"version\": 6.2.4}",
        b"[0x1f]",
        b"[007]",
        b"[-01]",
        b"[1.]",
        b"[1.e5]",
        b"[-]",
        b"[12abc]",
        b"[1.5x]",
        b"[1e5e5]",
        b"[1e+]",
        b"[.5]",
        b"[+1]",
        // Past orjson's limits: a number beyond a double, 1,025 levels.
        b"{\"bytes\": 1e400}",
        b"[-1.8e308]",
        b"[0.5E+310]",
        b"[1797693134862315807937289714053034150799341327100378269361737789804449682927647509e228]",
    ];
    let deep = |levels: usize| ["[".repeat(levels), "]".repeat(levels)].concat().into_bytes();
    let (too_deep, deepest) = (deep(1025), deep(1024));
    let huge = format!("[1{}]", "0".repeat(309)).into_bytes();
    let broken: Vec<&[u8]> = broken.iter().copied().chain([&too_deep[..], &huge]).collect();
    let fine: &[&[u8]] = &[
        b"{\"a\": [], \"b\": {}, \"c\": [{\"d\": -1.5e3, \"e\": true, \"f\": null}]}",
        b" [ [ ] , { } , \"\" , 0 ]\n",
        b"[0, -0, 1E+05, -0.0e-0, 2.5e-3, 1694128201545.123, 17332996360099338395]",
        b"{\"name\": \"print(\"hi\")\", \"x\": 1}",
        // A stray quote the repair escapes.
        b"{\"a\": \"x\"\"}",
        b"[1e308, -1.7976931348623157e308, 1e-400, 0.00001e312, 1797693134862315807e290]",
    ];
    let fine: Vec<&[u8]> = fine.iter().copied().chain([&deepest[..]]).collect();
    let mut files = Vec::new();
    for (doc, want_broken) in
        broken.iter().map(|d| (d, true)).chain(fine.iter().map(|d| (d, false)))
    {
        let checked = trace_sanitize::check(&doc[..], &Options::default()).unwrap();
        let found = checked.malformed.is_some()
            || checked.unclosed_string
            || checked.not_json > 0
            || checked.complete == Some(false);
        assert_eq!(found, want_broken, "{}: {checked:?}", String::from_utf8_lossy(doc));
        files.push(run_with(doc, &Options::default()).0);
    }
    for (verdict, doc) in orjson_loads(&orjson, &files).iter().zip(&files) {
        let broken = broken.len() > files.iter().position(|f| f == doc).unwrap();
        assert_eq!(
            verdict == "ok",
            !broken,
            "orjson on {}: {verdict}",
            String::from_utf8_lossy(doc)
        );
    }
}

/// What orjson says of each of `docs`: "ok" when it loads one (to the value
/// Python's `json` reads), else its error.
fn orjson_loads(orjson: &std::path::Path, docs: &[Vec<u8>]) -> Vec<String> {
    orjson_loads_as(orjson, docs, true)
}

/// What orjson says of each of `docs`: "ok" when it loads one (and, with
/// `like_json`, to the value Python's `json` reads), else its error.
fn orjson_loads_as(orjson: &std::path::Path, docs: &[Vec<u8>], like_json: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (i, doc) in docs.iter().enumerate() {
        fs::write(dir.path().join(i.to_string()), doc).unwrap();
    }
    let script = r#"
import json, orjson, pathlib, sys
sys.setrecursionlimit(10000)  # json and == on 1,024 levels
d, like_json = pathlib.Path(sys.argv[1]), sys.argv[3] == "json"
for i in range(int(sys.argv[2])):
    raw = (d / str(i)).read_bytes()
    try:
        value = orjson.loads(raw)
        if like_json:
            assert value == json.loads(raw.decode("utf-8")), f"doc {i}: orjson and json differ"
        print("ok")
    except orjson.JSONDecodeError as e:
        print(str(e).replace("\n", " "))
"#;
    #[allow(clippy::disallowed_methods, reason = "a test calling the real orjson")]
    let output = Command::new(orjson)
        .args(["-c", script])
        .arg(dir.path())
        .arg(docs.len().to_string())
        .arg(if like_json { "json" } else { "orjson" })
        .output()
        .expect("the orjson interpreter runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let verdicts: Vec<String> =
        String::from_utf8(output.stdout).unwrap().lines().map(Into::into).collect();
    assert_eq!(verdicts.len(), docs.len());
    verdicts
}

/// How a document ends, as orjson sees it: a check, and a sanitize pass
/// alike, call it complete exactly when orjson loads the repaired copy; and
/// what salvage writes, orjson loads.
#[test]
fn orjson_agrees_on_how_a_document_ends() {
    let Some(orjson) = orjson_python() else { return };
    let trace: &[u8] = b"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"k\xff\", \"args\": {\"s\": \"]}\"}}, {\"ph\": \"i\"}], \"traceName\": \"x\"}";
    let mut cases: Vec<Vec<u8>> = (1..trace.len()).map(|n| trace[..n].to_vec()).collect();
    let after: [&[u8]; 9] =
        [b"", b"\n", b" \r\n\t", b"{}", b"\n{\"b\": [", b"\nW1130 done\n", b"\0\0\0", b"]", b","];
    cases.extend(after.iter().map(|a| [trace, a].concat()));
    // Text before the document, brackets and all; a BOM (repaired) is not.
    let before: [&[u8]; 4] = [b"INFO {0} ready\n", b"\0\0", b"42 ", b"\xef\xbb\xbf \n"];
    cases.extend(before.iter().map(|b| [b, trace].concat()));
    let mut files = Vec::new();
    let mut checked = Vec::new();
    for case in &cases {
        let (sanitized, plain) = run_with(case, &Options::default());
        let check = trace_sanitize::check(&case[..], &Options::default()).unwrap();
        let mut salvaged = Vec::new();
        let salvage = trace_sanitize::salvage(&case[..], &mut salvaged, &Options::default());
        // Nothing complete before the cut: nothing to salvage (orjson then
        // gets an empty document, which it refuses).
        assert_eq!(salvage.is_err(), check.cut.is_none() && check.complete == Some(false));
        files.extend([sanitized, salvaged]);
        checked.push((plain.complete, check));
    }
    let verdicts = orjson_loads(&orjson, &files);
    for (i, ((plain, check), loads)) in checked.iter().zip(verdicts.chunks(2)).enumerate() {
        let case = String::from_utf8_lossy(&cases[i]);
        let loads_sanitized = loads[0] == "ok";
        assert_eq!(
            check.complete,
            Some(loads_sanitized),
            "check of {case:?}: orjson says {}",
            loads[0]
        );
        assert_eq!(*plain, check.complete, "sanitize and check differ on {case:?}");
        if loads_sanitized {
            assert_eq!(check.starts_with, None, "{case:?}");
        }
        if check.cut.is_some() || check.complete == Some(true) {
            assert_eq!(loads[1], "ok", "orjson refuses the salvaged copy of {case:?}");
        }
    }
    // Cut short and data after the end are both here, each salvaged.
    let kinds: Vec<_> =
        checked.iter().filter_map(|(_, c)| c.cut.as_ref().map(|c| c.kind)).collect();
    assert!(kinds.contains(&trace_sanitize::CutKind::CutShort));
    assert!(kinds.contains(&trace_sanitize::CutKind::DataAfterEnd));
    assert_eq!(checked.iter().filter(|(_, c)| c.starts_with.is_some()).count(), 3);
}

/// What random edits insert: JSON's own bytes, defects, words and numbers.
#[rustfmt::skip]
const EDITS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b",", b":", b"\"", b"\\", b" ", b"\t", b"\n", b"-", b".", b"e", b"E",
    b"+", b"0", b"1", b"7", b"9", b"x", b"t", b"n", b"\x00", b"\x01", b"\xff", b"\xc3",
    b"\xe2\x82", b"\xef\xbb\xbf", b"\\u", b"\\ud800", b"\\\"", b"\"\"", b"{\"a\":", b"[[", b"00",
    b"e5", b"0x", b"1e", b"1e400", b"inf", b"NaN", b"-Infinity", b"N/A", b"None", b"true",
];

/// Random edits of three small traces, a Kineto and a rocprofv3 one and
/// one of long strings (bytes inserted, deleted, replaced, repeated; the
/// end cut off), sanitized and salvaged with buffers of every size:
/// wherever a pass says its copy has no break, orjson loads the copy, and
/// wherever it names one, orjson refuses the copy. A check finds what the
/// sanitize pass finds.
#[test]
fn orjson_agrees_on_randomly_edited_traces() {
    let Some(orjson) = orjson_python() else { return };
    let kineto: &[u8] = br#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150754820096, "computeMajor": 9}], "traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": -1, "tid": 7, "ts": 1694128201545.123, "dur": 2.5e-3, "args": {"Input Dims": [[128, 64], []], "Concrete Inputs": ["", "\"x\"", "C:\\tmp"], "flops": 1E+9}},
{"ph": "f", "id": 0, "bp": "e", "name": "\u00e9\ud83d\ude00 ok", "v": [true, false, null, -0, 0.0, 17332996360099338395]},
{"ph": "i", "s": "t", "args": {}}
], "traceName": "/tmp/x.pt.trace.json", "distributedInfo": {"rank": 0}}
"#;
    let rocprof: &[u8] = br#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":908,"init_time":1722000000000,"command":["python3","-c","x"]},"agents":[{"id":{"handle":1},"type":2,"name":"gfx950","gpu_index":0}],"kernel_symbols":[{"kernel_id":0,"kernel_name":""},{"kernel_id":1,"kernel_name":"_Z4gemmPf.kd"}],"buffer_records":{"kernel_dispatch":[{"size":96,"kind":11,"operation":2,"correlation_id":{"internal":1,"external":0},"start_timestamp":1722000000100,"end_timestamp":1722000000900,"dispatch_info":{"kernel_id":1,"grid_size":{"x":1024,"y":1,"z":1}}}],"hip_api":[]}}]}"#;
    // Strings longer than the kilobyte the engine looks back through: a
    // CK kernel's name, a log line (edits deep in them are judged by what
    // their opening quote follows).
    let text = "ck::Tuple<ck::Sequence<1, 2>, float>, ".repeat(30);
    let long = format!(
        r#"{{"kernel_symbols": [{{"kernel_id": 8, "formatted_kernel_name": "{text}"}}], "INFO": ["{text}", "config"]}}"#
    );
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut docs, mut outs, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    for case in 0..6000 {
        let mut doc = [kineto, rocprof, long.as_bytes()][case % 3].to_vec();
        for _ in 0..1 + rng.next() % 3 {
            let at = (rng.next() % (doc.len() as u64 + 1)) as usize;
            let end = (at + 1 + (rng.next() % 3) as usize).min(doc.len());
            let edit = rng.pick(EDITS);
            match rng.next() % 5 {
                0 => drop(doc.splice(at..at, edit.iter().copied())),
                1 => drop(doc.splice(at..end, [])),
                2 => drop(doc.splice(at..end, edit.iter().copied())),
                3 => {
                    let span = doc[at..(at + (rng.next() % 40) as usize).min(doc.len())].to_vec();
                    drop(doc.splice(at..at, span));
                }
                _ => doc.truncate(at),
            }
        }
        // Small buffers too: every place a pass can end.
        let buffer_size = [1, 7, 64, 100, 1 << 16][(rng.next() % 5) as usize];
        let options = Options { buffer_size, ..Options::default() };
        let mut out = Vec::new();
        let sanitized = trace_sanitize::sanitize(&doc[..], &mut out, &options);
        // A check, which writes nothing, finds the same (bare words: in a
        // complete document; else it counts those a salvage keeps).
        let checked = trace_sanitize::check(&doc[..], &options);
        let found = |r: &trace_sanitize::Report| {
            let words = if r.complete == Some(true) { r.not_json } else { 0 };
            (r.malformed.clone(), words, r.unclosed_string, r.complete)
        };
        assert_eq!(
            sanitized.as_ref().map(found).ok(),
            checked.as_ref().map(found).ok(),
            "{:?}",
            String::from_utf8_lossy(&doc)
        );
        let loads = match sanitized {
            Ok(r) => {
                !(r.malformed.is_some()
                    || r.unclosed_string
                    || r.not_json > 0
                    || r.complete == Some(false))
            }
            Err(_) => false,
        };
        // What salvage closes loads unless a break is kept in it (none
        // written: nothing to load).
        let mut salvaged = Vec::new();
        if let Ok(r) = trace_sanitize::salvage(&doc[..], &mut salvaged, &options) {
            ours.push(r.malformed.is_none() && r.not_json == 0);
            docs.push(doc.clone());
            outs.push(salvaged);
        }
        // A document that is not an object or an array is no trace: not
        // complete, by design, though orjson may load it (`true`).
        let first = out.iter().find(|b| !b" \t\r\n".contains(b));
        if first.is_some_and(|b| !b"{[".contains(b)) {
            continue;
        }
        ours.push(loads);
        docs.push(doc);
        outs.push(out);
    }
    let verdicts = orjson_loads_as(&orjson, &outs, false);
    let wrong: Vec<String> = (verdicts.iter().zip(&ours).zip(&docs))
        .filter(|((verdict, loads), _)| (*verdict == "ok") != **loads)
        .map(|((verdict, loads), doc)| {
            let ours = if *loads { "it loads" } else { "it does not" };
            format!("we say {ours}, orjson: {verdict}: {:?}", String::from_utf8_lossy(doc))
        })
        .collect();
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    // Both verdicts came up, many times.
    let loading = ours.iter().filter(|l| **l).count();
    assert!(loading > 500 && ours.len() - loading > 500, "{loading} of {}", ours.len());
}
