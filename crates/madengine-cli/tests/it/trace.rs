//! `madengine trace discover|sanitize`, `--help`, and one failure per exit code.

use std::{fs, path::Path};

use crate::{
    cli_snapshot,
    edit::{in_first_event, in_metadata},
    synthetic,
};

#[test]
fn help() {
    cli_snapshot!(&synthetic(), ["--help"]);
}

/// A run with no trace to read says what it found instead, and what to do.
#[test]
fn a_run_of_rocprofv3_csv_output_says_to_ask_for_json() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("run/host")).unwrap();
    fs::write(dir.path().join("run/host/42_kernel_trace.csv"), "\"Kind\",\"Agent_Id\"\n").unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "run"], @r"
    exit code: 0
    ----- stdout -----
    no PyTorch or rocprofv3 traces found
    ----- stderr -----
    [madengine] run/host/42_kernel_trace.csv: rocprofv3 CSV output is not readable by TraceLens; re-run rocprofv3 with --output-format json (or pftrace), which madengine and TraceLens read
    ");
}

/// The bash completion script, sourced by a real bash, completes
/// subcommands and an option's values; the other shells get theirs.
#[test]
fn completions() {
    let dir = tempfile::tempdir().unwrap();
    let (code, script, err) = crate::madengine(dir.path(), &["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    fs::write(dir.path().join("madengine.bash"), &script).unwrap();
    let complete = |words: &[&str]| -> String {
        let line = words.join(" ");
        let (cur, prev) = (words[words.len() - 1], words[words.len() - 2]);
        let shell = format!(
            "source madengine.bash; COMP_WORDS=({line} ''); COMP_CWORD={}; \
             _madengine madengine '{cur}' '{prev}'; echo \"${{COMPREPLY[@]}}\"",
            words.len() - 1
        );
        let args = ["-c".into(), shell.into()];
        let (code, out, err) = crate::run(dir.path(), Path::new("bash"), &args);
        assert_eq!(code, 0, "{err}");
        out.trim().to_string()
    };
    assert_eq!(complete(&["madengine", "report", "su"]), "summary");
    assert_eq!(
        complete(&["madengine", "report", "tracelens", "--mode", ""]),
        "auto pytorch rocprof pftrace collective"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (code, script, err) = crate::madengine(dir.path(), &["completions", shell]);
        assert_eq!(code, 0, "{err}");
        assert!(script.contains("tracelens-compare"), "{shell}: {script}");
    }
    let (code, _, err) = crate::madengine(dir.path(), &["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("[possible values: bash, elvish, fish, powershell, zsh]"), "{err}");
}

#[test]
fn sanitize_help() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "--help"]);
}

/// `-h` is the options in a line each, the examples and the exit codes;
/// the rest is for `--help`.
#[test]
fn sanitize_short_help() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "-h"]);
}

#[test]
fn discover_table() {
    cli_snapshot!(&synthetic(), ["trace", "discover", "run", "--exclude", "run/tracelens_output"]);
}

/// One file is classified alone, as a search of its directory would find
/// it (its directory's name counts): a trace's row, an unsupported
/// format's line, or a line that says it is no trace.
#[test]
fn discover_classifies_one_file() {
    let run = synthetic().join("run");
    cli_snapshot!(&run, ["trace", "discover", "torch_profiler_output/libkineto_trace_4242.json"], @r"
    exit code: 0
    ----- stdout -----
    KIND     FOUND BY  RANK                 SIZE     PATH
    pytorch  name      1 (distributedInfo)  1.2 KiB  torch_profiler_output/libkineto_trace_4242.json
    ----- stderr -----
    ");
    cli_snapshot!(&run, ["trace", "discover", "rocprof_output/1e4d92661463/1234_results.db"], @"
    exit code: 0
    ----- stdout -----
    unsupported  rocprof_output/1e4d92661463/1234_results.db: rocprofv3 SQLite output is not readable by TraceLens itself; the auto and rocprof modes convert it to rocprofv3 JSON for TraceLens' rocprof report, and the native summary and diff read it as it is
    ----- stderr -----
    ");
    cli_snapshot!(&run, ["trace", "discover", "manifest.json"], @r"
    exit code: 0
    ----- stdout -----
    manifest.json: not a trace madengine reads (PyTorch/Kineto or rocprofv3 JSON, .json or .json.gz; a rocprofv3 database or Perfetto trace)
    ----- stderr -----
    ");
    let (code, out, err) = crate::madengine(
        &run,
        &["trace", "discover", "--json", "torch_profiler_output/libkineto_trace_rank1_2.json"],
    );
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["traces"][0]["rank"]["rank"], 1, "{json}");
    assert_eq!(json["root"], json["traces"][0]["path"], "{json}");
}

/// A newline in a path is shown escaped: each trace stays one row.
#[test]
fn a_newline_in_a_path_keeps_the_table_one_row_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run\nB");
    fs::create_dir_all(&run).unwrap();
    fs::copy(
        synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"),
        run.join("rank0.pt.trace.json"),
    )
    .unwrap();
    cli_snapshot!(dir.path(), ["trace", "discover", "."], @r"
    exit code: 0
    ----- stdout -----
    KIND     FOUND BY  RANK      SIZE     PATH
    pytorch  name      0 (name)  2.6 KiB  ./run\nB/rank0.pt.trace.json
    1 trace under . (1 pytorch); 0 unsupported; 0 problems
    ----- stderr -----
    ");
}

#[test]
fn discover_json() {
    cli_snapshot!(&synthetic(), ["trace", "discover", "run/torch_profiler_output", "--json"]);
}

#[test]
fn sanitize_repairs_into_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        synthetic().join("run/rocprof_output/9999_results.json"),
        dir.path().join("9999_results.json"),
    )
    .unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "9999_results.json"], @r#"
    exit code: 0
    ----- stdout -----
    9999_results.json: repaired into 9999_results.sanitized.json: 4 invalid UTF-8, 1 control byte, 0 lone surrogates (935 B)
      at byte        570  invalid UTF-8  \xa0 in "kname"
      at byte        571  invalid UTF-8  \x91 in "kname"
      at byte        573  control byte   \x00 in "kname"
      at byte        574  invalid UTF-8  \xff in "kname"
      at byte        575  invalid UTF-8  \xfe in "kname"
    ----- stderr -----
    "#);
    let out = fs::read(dir.path().join("9999_results.sanitized.json")).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
}

/// The copy `trace sanitize` writes beside a trace, whatever the trace's
/// suffix, is found as that trace's: the run keeps its number of traces,
/// the copies (written last) read in their place, and `report summary`
/// says which it left out.
#[test]
fn a_sanitized_copy_beside_its_trace_stands_for_it() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let kineto =
        fs::read(synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"))
            .unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&kineto).unwrap();
    let gz = gz.finish().unwrap();
    let rocprof = crate::rocprof_process(908, 0, 10).into_bytes();
    let traces = [
        ("a_rank0.pt.trace.json", &kineto, "a_rank0.sanitized.pt.trace.json"),
        ("b_rank1.pt.trace.json.gz", &gz, "b_rank1.sanitized.pt.trace.json.gz"),
        ("c_rank2.json.gz", &gz, "c_rank2.sanitized.json.gz"),
        ("908_results.json", &rocprof, "908_results.sanitized.json"),
    ];
    fs::create_dir(dir.path().join("run")).unwrap();
    for (name, bytes, _) in &traces {
        fs::write(dir.path().join("run").join(name), bytes).unwrap();
    }
    let found = |key: &str| -> Vec<String> {
        let (code, out, err) =
            crate::madengine(dir.path(), &["trace", "discover", "run", "--json"]);
        assert_eq!(code, 0, "{err}");
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut paths: Vec<String> = json[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["path"].as_str().unwrap().trim_start_matches("run/").to_string())
            .collect();
        paths.sort();
        paths
    };
    let mut names: Vec<String> = traces.iter().map(|t| t.0.to_string()).collect();
    names.sort();
    assert_eq!(found("traces"), names);
    for (name, _, copy) in &traces {
        let trace = format!("run/{name}");
        let (code, _, err) = crate::madengine(dir.path(), &["trace", "sanitize", &trace]);
        assert_eq!(code, 0, "{err}");
        assert!(dir.path().join("run").join(copy).is_file(), "{copy}: {err}");
    }
    let mut copies: Vec<String> = traces.iter().map(|t| t.2.to_string()).collect();
    copies.sort();
    assert_eq!(found("traces"), copies);
    assert_eq!(found("unsupported"), names);
    // The run's database of the same process (`--output-format json rocpd`)
    // is its JSON's twin still, through the copy: not read a second time.
    fs::copy(
        synthetic().join("run/rocprof_output/1e4d92661463/1234_results.db"),
        dir.path().join("run/908_results.db"),
    )
    .unwrap();
    let (code, out, err) =
        crate::madengine(dir.path(), &["report", "summary", "run", "--top", "0"]);
    assert_eq!(code, 0, "{err}");
    let mut read: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("== run/")).collect();
    read.sort();
    assert_eq!(
        read,
        [
            "908_results.sanitized.json (on GPU 0, AMD Instinct MI300X)",
            "a_rank0.sanitized.pt.trace.json (rank 0, AMD Instinct MI300X)",
            "b_rank1.sanitized.pt.trace.json.gz (rank 1, AMD Instinct MI300X)",
            "c_rank2.sanitized.json.gz (rank 2, AMD Instinct MI300X)",
        ]
    );
    let said = err.matches(" is read instead\n").count();
    assert_eq!(said, 4, "{err}");
    assert!(
        err.contains(
            "[madengine] left out run/a_rank0.pt.trace.json: its sanitized copy beside it, \
             written since (the same name with `.sanitized`), is read instead\n"
        ),
        "{err}"
    );
}

#[test]
fn the_output_name_says_whether_it_is_gzip() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let whole = fs::read(synthetic().join("run/rocprof_output/9999_results.json")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&whole).unwrap();
    fs::write(dir.path().join("r.json.gz"), gz.finish().unwrap()).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "r.json.gz", "-o", "r.json", "--max-listed", "0"], @r"
    exit code: 0
    ----- stdout -----
    r.json.gz: repaired into r.json (gunzipped): 4 invalid UTF-8, 1 control byte, 0 lone surrogates (935 B)
      ... and 5 more repairs
    ----- stderr -----
    ");
    let out = fs::read(dir.path().join("r.json")).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok(), "plain JSON");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "r.json", "-o", "again.json.gz"], @r"
    exit code: 0
    ----- stdout -----
    r.json: clean, gzipped into again.json.gz (948 B)
    ----- stderr -----
    ");
    let out = fs::read(dir.path().join("again.json.gz")).unwrap();
    assert!(out.starts_with(&[0x1f, 0x8b]), "gzip");
}

/// `bytes` gzipped, and only the first half of that written to `path`.
fn write_cut_gzip(path: &Path, bytes: &[u8]) {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    let gz = gz.finish().unwrap();
    fs::write(path, &gz[..gz.len() / 2]).unwrap();
}

#[test]
fn salvage_closes_a_cut_trace_and_a_cut_gzip_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let whole = fs::read(synthetic().join("run/rocprof_output/9999_results.json")).unwrap();
    fs::write(dir.path().join("cut.json"), &whole[..700]).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "cut.json"], @r#"
    exit code: 0
    ----- stdout -----
    cut.json: repaired and closed into cut.sanitized.json: 4 invalid UTF-8, 1 control byte, 0 lone surrogates (700 B)
      at byte        570  invalid UTF-8  \xa0 in "kname"
      at byte        571  invalid UTF-8  \x91 in "kname"
      at byte        573  control byte   \x00 in "kname"
      at byte        574  invalid UTF-8  \xff in "kname"
      at byte        575  invalid UTF-8  \xfe in "kname"
      cut short after byte 700: dropped the last 4 B (an incomplete value), closed with `}]}}]}`
    ----- stderr -----
    "#);
    let out = fs::read(dir.path().join("cut.sanitized.json")).unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());

    // The offset is where the half of the compressed stream ends, so it
    // moves with the compressor (the workspace's flate2 backend): every
    // decoder stops there (Python's zlib too, on the same file).
    write_cut_gzip(&dir.path().join("cut.json.gz"), &whole.repeat(50));
    cli_snapshot!(dir.path(), ["trace", "sanitize", "cut.json.gz"], @"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: failed to read cut.json.gz at byte 814 of its decompressed content
      caused by: incomplete deflate stream
    [madengine] a .json.gz cut short (a job killed while writing it)? --salvage keeps what can be read and closes it
    ");
    assert!(!dir.path().join("cut.sanitized.json.gz").exists());
    // --check says the same (an error, and the hint).
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    assert_eq!(
        run(&["trace", "sanitize", "--check", "cut.json.gz"]),
        run(&["trace", "sanitize", "cut.json.gz"])
    );

    fs::write(dir.path().join("empty.json"), &whole[..10]).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "empty.json"], @r#"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: empty.json ends after 10 bytes, before any object or array in it is complete: nothing to salvage
    "#);
}

#[test]
fn check_exits_1_when_repair_is_needed() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "--check", "--first", "run/broken/python_names.pt.trace.json"], @r#"
    exit code: 1
    ----- stdout -----
    run/broken/python_names.pt.trace.json: needs repair: 0 invalid UTF-8, 1 control byte, 0 lone surrogates (stopped at the first, after 534 B)
      at byte        533  control byte   \x09 in "name"
    ----- stderr -----
    "#);
}

/// TraceLens' loader goes by the name: a clean trace whose name misleads it
/// is clean, and --check says what to name it.
#[test]
fn check_says_when_a_clean_traces_name_misleads_tracelens() {
    let dir = tempfile::tempdir().unwrap();
    let whole = kineto_4242();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &whole).unwrap();
    fs::write(dir.path().join("gzipped.json"), gz.finish().unwrap()).unwrap();
    fs::write(dir.path().join("plain.json.gz"), &whole).unwrap();
    fs::write(dir.path().join("trace.txt"), &whole).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "gzipped.json", "plain.json.gz", "trace.txt"], @r"
    exit code: 0
    ----- stdout -----
    gzipped.json: clean (1.2 KiB scanned), but it is gzip-compressed, and TraceLens reads a .json as plain JSON: name it gzipped.json.gz (`report tracelens` reads it under that name itself)
    plain.json.gz: clean (1.2 KiB scanned), but it is not gzip-compressed, and TraceLens reads a .json.gz with gzip: name it plain.json (`report tracelens` reads it under that name itself)
    trace.txt: clean (1.2 KiB scanned), but TraceLens reads only files named .json or .json.gz: name it trace.txt.json
    3 traces checked: 3 clean
    ----- stderr -----
    ");
}

#[test]
fn check_exits_1_when_a_trace_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let whole = kineto_4242();
    fs::write(dir.path().join("cut.json"), &whole[..whole.len() / 2]).unwrap();
    fs::write(dir.path().join("empty.json"), b"").unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "cut.json", "empty.json"], @r"
    exit code: 1
    ----- stdout -----
    cut.json: it is cut short after byte 636, inside an unfinished value; TraceLens cannot parse it
      --salvage writes a copy without its last 286 B (an incomplete value), closed with `}`
    empty.json: it is empty; TraceLens cannot parse it
    2 traces checked: 2 TraceLens cannot parse
    ----- stderr -----
    ");
}

#[test]
fn a_copy_still_cut_short_exits_1_and_says_so() {
    let whole = kineto_4242();
    let dir = dir_with("cut.json", &whole[..whole.len() / 2]);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "cut.json"], @r"
    exit code: 1
    ----- stdout -----
    cut.json: copied into cut.sanitized.json (636 B), but it is cut short after byte 636, inside an unfinished value: TraceLens cannot parse the copy either
      --salvage writes a copy without its last 286 B (an incomplete value), closed with `}`
    ----- stderr -----
    ");
    // The copy is written all the same, as asked.
    assert_eq!(fs::read(dir.path().join("cut.sanitized.json")).unwrap(), &whole[..whole.len() / 2]);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "cut.json", "-o", "closed.json"], @r"
    exit code: 0
    ----- stdout -----
    cut.json: closed into closed.json (636 B)
      cut short after byte 636: dropped the last 286 B (an incomplete value), closed with `}`
    ----- stderr -----
    ");
}

#[test]
fn data_after_the_document_is_found_and_dropped_on_request() {
    let mut trace = kineto_4242();
    trace.extend_from_slice(b"\nW1130 12:00:00 rank 0: profiler done\n");
    let dir = dir_with("tail.json", &trace);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "tail.json"], @r"
    exit code: 1
    ----- stdout -----
    tail.json: data follows the end of its JSON document; TraceLens cannot parse it
      --salvage writes a copy without its last 37 B (what follows the document)
    ----- stderr -----
    ");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "tail.json", "-o", "doc.json"], @r"
    exit code: 0
    ----- stdout -----
    tail.json: written to doc.json without what follows its JSON document (1.3 KiB)
      data after the end of the document: dropped the last 37 B
    ----- stderr -----
    ");
    serde_json::from_slice::<serde_json::Value>(&fs::read(dir.path().join("doc.json")).unwrap())
        .expect("the document alone is valid JSON");
    // `report summary` refuses it with the same hint, and reads the document with --salvage.
    cli_snapshot!(dir.path(), ["report", "summary", "tail.json", "--output-dir", "out"], @r"
    exit code: 3
    ----- stdout -----
    == tail.json (rank 1)
       error: tail.json has data after the end of its JSON document, 1273 bytes in (a second document appended? a log line? zeros left by a crash?) (--salvage summarizes the document without it)

    ----- stderr -----
    error: 1 of 1 traces could not be read
    ");
    cli_snapshot!(dir.path(), ["report", "summary", "--salvage", "tail.json", "--output-dir", "out"], @r"
    exit code: 0
    ----- stdout -----
    == tail.json (rank 1, AMD Instinct MI300X)
       warning: 37 bytes of data after the end of its JSON document were not read (TraceLens refuses the file as it is)
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    ");
}

#[test]
fn text_before_the_trace_is_named_and_not_salvaged() {
    let trace = kineto_4242();
    let dir = dir_with("t.json", [&b"W1130 rank {0}: start\n"[..], &trace].concat());
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "t.json"], @r"
    exit code: 1
    ----- stdout -----
    t.json: it starts with 'W', not `{` or `[` (a log line before the trace? not a trace?); TraceLens cannot parse it
    ----- stderr -----
    ");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "t.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: t.json starts with 'W', not a JSON object or array (a log line before the trace? not a trace?): nothing to salvage
    ");
    assert!(!dir.path().join("t.sanitized.json").exists());
}

/// Early Kineto's bare `N/A` is quoted; a bare word nobody can repair
/// (Python's `None` written where JSON was meant) is named, and the copy is
/// said to be unparseable too: exit 1, with --check, plain and --salvage.
#[test]
fn bare_words_are_quoted_or_named() {
    let trace = String::from_utf8(kineto_4242()).unwrap();
    let na = in_first_event(&trace, "\"device\": N/A");
    let none = in_first_event(&na, "\"stream\": None");
    let dir = dir_with("na.json", na);
    fs::write(dir.path().join("none.json"), none).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "na.json"], @r#"
    exit code: 0
    ----- stdout -----
    na.json: repaired into na.sanitized.json: 0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 unquoted N/A (1.3 KiB)
      at byte        495  unquoted N/A   N/A in "device"
    ----- stderr -----
    "#);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "none.json"], @r#"
    exit code: 1
    ----- stdout -----
    none.json: needs repair: 0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 unquoted N/A; and it holds 1 bare word that is not JSON (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?), which no repair mends: TraceLens cannot parse it even repaired
      at byte        495  not JSON       None in "stream"
      at byte        511  unquoted N/A   N/A in "device"
    ----- stderr -----
    "#);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "none.json"], @r#"
    exit code: 1
    ----- stdout -----
    none.json: repaired (0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 unquoted N/A) into none.sanitized.json (1.3 KiB), but it holds 1 bare word that is not JSON (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?): TraceLens cannot parse the copy either
      at byte        495  not JSON       None in "stream"
      at byte        511  unquoted N/A   N/A in "device"
    ----- stderr -----
    "#);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "none.json", "-o", "s.json"], @r#"
    exit code: 1
    ----- stdout -----
    none.json: repaired (0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 unquoted N/A) into s.json (1.3 KiB), but it holds 1 bare word that is not JSON (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?): TraceLens cannot parse the copy either
      at byte        495  not JSON       None in "stream"
      at byte        511  unquoted N/A   N/A in "device"
    ----- stderr -----
    "#);
    // report summary names the word where the tables read it, and warns of
    // one where they do not.
    let meta =
        String::from_utf8(kineto_4242()).unwrap().replacen("{", "{\"schemaVersion\": True, ", 1);
    fs::write(dir.path().join("meta.json"), meta).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "none.json", "meta.json", "-o", "out", "--top", "0"], @r#"
    exit code: 3
    ----- stdout -----
    == none.json (rank 1)
       error: none.json is not JSON at byte 495: `None` (the value of "stream") is a bare word where a value goes (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?), and no repair applies

    == meta.json (rank 1, AMD Instinct MI300X)
       warning: `True` at byte 19 is a bare word that is not JSON (in a part these tables do not read): TraceLens refuses the trace, repaired or not
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    error: 1 of 2 traces could not be read
    "#);
}

/// A quote inside a string that ended it early leaves a token where the
/// grammar allows none; a backslash at the end of the last string keeps it
/// open to the end of the file. Neither has a repair: --check and a plain
/// sanitize say so (exit 1), and so does `report summary`; --salvage closes
/// the file before the string that never ends, and says why.
#[test]
fn strings_a_quote_or_backslash_broke_are_named() {
    let trace = String::from_utf8(kineto_4242()).unwrap();
    let dir = dir_with("early.json", in_first_event(&trace, "\"note\": \"a\"]\""));
    fs::write(dir.path().join("open.json"), in_metadata(&trace, "\"dir\": \"C:\\tmp\\\"")).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "early.json", "open.json"], @r#"
    exit code: 1
    ----- stdout -----
    early.json: its JSON breaks at byte 496: `]` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?), and it needs repair: 0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 stray quote; TraceLens cannot parse it
      at byte        496  not JSON       `]` where `,` or `}` goes
      at byte        500  stray quote    "c
    open.json: its last string never ends, so the rest of the file reads as one string, though it ends in `}` or `]` (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?), and it needs repair: 0 invalid UTF-8, 1 control byte, 0 lone surrogates; TraceLens cannot parse it
      at byte       1289  control byte   \x0a in "dir"
      --salvage writes a copy without its last 72 B (an incomplete value), closed with `}`
    2 traces checked: 2 TraceLens cannot parse
    ----- stderr -----
    "#);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "early.json"], @r#"
    exit code: 1
    ----- stdout -----
    early.json: repaired (0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 1 stray quote) into early.sanitized.json (1.3 KiB), but its JSON breaks at byte 496: `]` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?): TraceLens cannot parse the copy either
      at byte        496  not JSON       `]` where `,` or `}` goes
      at byte        500  stray quote    "c
    ----- stderr -----
    "#);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "open.json"], @r#"
    exit code: 0
    ----- stdout -----
    open.json: repaired and closed into open.sanitized.json: 0 invalid UTF-8, 1 control byte, 0 lone surrogates (1.3 KiB)
      at byte       1289  control byte   \x0a in "dir"
      its last string never ends (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?): dropped the last 72 B (an incomplete value), closed with `}`
    ----- stderr -----
    "#);
    // In metadata the tables do not read: said, and the tables written.
    let meta = in_metadata(&trace, "\"m\": {\"a\": \"b\": 1}");
    fs::write(dir.path().join("meta.json"), meta).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "meta.json", "-o", "out"], @r"
    exit code: 0
    ----- stdout -----
    == meta.json (rank 1, AMD Instinct MI300X)
       warning: its JSON breaks at byte 1286: `:` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?), in a part these tables do not read: TraceLens refuses the trace, repaired or not
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    ");
    // Split by a stray quote before `,`, the rest of a name is a bare word
    // where a key goes, and is said to be.
    let key = in_first_event(&trace, "\"n\": \"print(\"hi\", x)\"");
    fs::write(dir.path().join("key.json"), key).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "key.json", "-o", "out"], @r"
    exit code: 3
    ----- stdout -----
    == key.json (rank 1)
       error: key.json is not JSON at byte 503: `x)` is a bare word where a key goes (a value printed the way Python writes it, such as None or True, where JSON was meant? or the rest of a string that a quote inside it ended early?), and no repair applies

    ----- stderr -----
    error: 1 of 1 traces could not be read
    ");
    cli_snapshot!(dir.path(), ["report", "summary", "early.json", "open.json", "-o", "out"], @r"
    exit code: 3
    ----- stdout -----
    == early.json (rank 1)
       error: early.json is not JSON at byte 496: `]` where `,` or `}` goes (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?), and no repair applies

    == open.json (rank 1)
       error: open.json is not JSON: its last string never ends, so the rest of the file reads as one string, though it ends in `}` or `]` (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?), and no repair applies (--salvage summarizes the events complete before that string)

    ----- stderr -----
    error: 2 of 2 traces could not be read
    ");
    // --salvage reads the records before the string that never ends.
    cli_snapshot!(dir.path(), ["report", "summary", "--salvage", "open.json", "-o", "out", "--top", "0"], @r"
    exit code: 0
    ----- stdout -----
    == open.json (rank 1, AMD Instinct MI300X)
       warning: its last string never ends, so the rest of the file reads as one string (a quote inside a string that ended it early, or a backslash at its end that escaped its closing quote?): the tables cover the 3 records complete before it (the end of the GPU timeline is missing; TraceLens refuses the file as it is)
       note: repaired while reading (0 invalid UTF-8, 1 control byte, 0 lone surrogates); TraceLens refuses it as it is: `madengine trace sanitize --salvage open.json` writes a repaired, closed copy
       no GPU activity before the cut: nothing to summarize

    ----- stderr -----
    ");
}

/// A number JSON does not have (a version or an address written bare) has
/// no repair either: named where it starts, by --check, `report summary`
/// (a warning where the tables do not read it), and --salvage keeps it. So
/// is what JSON allows but orjson refuses: a number beyond a double,
/// brackets 1,025 levels deep.
#[test]
fn numbers_json_does_not_have_and_orjsons_limits_are_named() {
    let trace = String::from_utf8(kineto_4242()).unwrap();
    let dir = dir_with("args.json", in_first_event(&trace, "\"queue\": 0x7f00"));
    let write = |name: &str, text: String| fs::write(dir.path().join(name), text).unwrap();
    write("meta.json", in_metadata(&trace, "\"hip_version\": 6.2.41134"));
    write("big.json", in_first_event(&trace, "\"bytes\": -1.8e308"));
    let nest = format!("\"nest\": {}{}", "[{\"a\": ".repeat(512), "}]".repeat(512));
    write("deep.json", in_metadata(&trace, &nest));
    let [a, m, b, d] = ["args.json", "meta.json", "big.json", "deep.json"];
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", a, m, b, d], @r"
    exit code: 1
    ----- stdout -----
    args.json: its JSON breaks at byte 494: `0x7f00` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?); TraceLens cannot parse it, and no repair applies
      at byte        494  not JSON       `0x7f00` (not a JSON number) where a value goes
    meta.json: its JSON breaks at byte 1287: `6.2.41134` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?); TraceLens cannot parse it, and no repair applies
      at byte       1287  not JSON       `6.2.41134` (not a JSON number) where a value goes
    big.json: its JSON breaks at byte 494: `-1.8e308` (too large for a double) where a value goes (orjson, which TraceLens loads traces with, reads no number beyond a double's range (±1.7976931348623157e308): an overflowed or uninitialized value, or one printed from a wider type?); TraceLens cannot parse it, and no repair applies
      at byte        494  not JSON       `-1.8e308` (too large for a double) where a value goes
    deep.json: its JSON breaks at byte 4858: `{` 1,025 levels deep where a value goes (orjson, which TraceLens loads traces with, reads at most 1,024 levels of `{` and `[`: a recursive structure written out whole?); TraceLens cannot parse it, and no repair applies
      at byte       4858  not JSON       `{` 1,025 levels deep where a value goes
    4 traces checked: 4 TraceLens cannot parse
    ----- stderr -----
    ");
    cli_snapshot!(dir.path(), ["report", "summary", a, m, b, d, "-o", "out"], @r"
    exit code: 3
    ----- stdout -----
    == args.json (rank 1)
       error: args.json is not JSON at byte 494: `0x7f00` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?), and no repair applies

    == meta.json (rank 1, AMD Instinct MI300X)
       warning: its JSON breaks at byte 1287: `6.2.41134` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?), in a part these tables do not read: TraceLens refuses the trace, repaired or not
       no GPU activity (a CPU-only trace): nothing to summarize

    == big.json (rank 1, AMD Instinct MI300X)
       warning: its JSON breaks at byte 494: `-1.8e308` (too large for a double) where a value goes (orjson, which TraceLens loads traces with, reads no number beyond a double's range (±1.7976931348623157e308): an overflowed or uninitialized value, or one printed from a wider type?), in a part these tables do not read: TraceLens refuses the trace, repaired or not
       no GPU activity (a CPU-only trace): nothing to summarize

    == deep.json (rank 1, AMD Instinct MI300X)
       warning: its JSON breaks at byte 4858: `{` 1,025 levels deep where a value goes (orjson, which TraceLens loads traces with, reads at most 1,024 levels of `{` and `[`: a recursive structure written out whole?), in a part these tables do not read: TraceLens refuses the trace, repaired or not
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    error: 1 of 4 traces could not be read
    ");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--salvage", "meta.json"], @r"
    exit code: 1
    ----- stdout -----
    meta.json: copied into meta.sanitized.json (1.3 KiB), but its JSON breaks at byte 1287: `6.2.41134` (not a JSON number) where a value goes (a version, an address or a number in a notation JSON does not have, written where a quoted string was meant?): TraceLens cannot parse the copy either
      at byte       1287  not JSON       `6.2.41134` (not a JSON number) where a value goes
    ----- stderr -----
    ");
}

#[test]
fn a_trace_ending_in_zeros_is_said_to_be_one() {
    let whole = kineto_4242();
    // Cut inside a string, then zeros: no control bytes of the trace (none
    // counted), and dropped with the cut, in the file's bytes.
    let at = whole.windows(7).rposition(|w| w == b"\"name\":").unwrap() + 9;
    let dir = dir_with("z.json", [&whole[..at], &[0u8; 4096][..]].concat());
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "--max-listed", "2", "z.json"], @r"
    exit code: 1
    ----- stdout -----
    z.json: it is cut short after byte 4995, inside an unfinished value; TraceLens cannot parse it
      --salvage writes a copy without its last 4.0 KiB (an incomplete value), closed with `]}`
      it ends in 4.0 KiB of zero bytes: its node likely went down before the file reached the disk
    ----- stderr -----
    ");
}

#[test]
fn a_utf16_trace_is_refused_with_how_to_convert_it() {
    let text = String::from_utf8(kineto_4242()).unwrap();
    // As Windows PowerShell's Out-File writes it: a BOM, then UTF-16LE.
    let utf16: Vec<u8> =
        std::iter::once(0xfeff).chain(text.encode_utf16()).flat_map(u16::to_le_bytes).collect();
    let dir = dir_with("w.pt.trace.json", utf16);
    cli_snapshot!(dir.path(), ["trace", "sanitize", "w.pt.trace.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: w.pt.trace.json is UTF-16LE text, not UTF-8 (re-saved on Windows?): convert it first, e.g. with `iconv -f UTF-16LE -t UTF-8`
    ");
    assert!(!dir.path().join("w.pt.trace.sanitized.json").exists());
    cli_snapshot!(dir.path(), ["report", "summary", "w.pt.trace.json", "--output-dir", "out"], @r"
    exit code: 3
    ----- stdout -----
    == w.pt.trace.json
       error: w.pt.trace.json is UTF-16LE text, not UTF-8 (re-saved on Windows?): convert it first, e.g. with `iconv -f UTF-16LE -t UTF-8`

    ----- stderr -----
    error: 1 of 1 traces could not be read
    ");
}

#[test]
fn a_perfetto_trace_is_not_mangled_into_json_but_summarized() {
    let run = synthetic();
    let pftrace = "run/rocprof_output/model_trace.pftrace";
    // Sanitizing writes beside the trace: a copy, not the fixture's directory.
    let copy = tempfile::tempdir().unwrap();
    fs::create_dir_all(copy.path().join("run/rocprof_output")).unwrap();
    fs::copy(run.join(pftrace), copy.path().join(pftrace)).unwrap();
    cli_snapshot!(copy.path(), ["trace", "sanitize", pftrace], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: run/rocprof_output/model_trace.pftrace is a Perfetto protobuf trace (as rocprofv3 --output-format pftrace writes), not JSON: there is nothing to repair (TraceLens reads it through traceconv)
    ");
    // Nothing left beside it: no output, no partial one.
    let beside: Vec<_> = fs::read_dir(copy.path().join("run/rocprof_output"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["model_trace.pftrace"]);
    // `report summary` reads it: this one holds no slices.
    let out = tempfile::tempdir().unwrap();
    let out = out.path().to_str().unwrap();
    cli_snapshot!(&run, ["report", "summary", pftrace, "--output-dir", out], @r"
    exit code: 0
    ----- stdout -----
    == run/rocprof_output/model_trace.pftrace
       no kernel_dispatch or memory_copy slices (not rocprofv3's pftrace, or a rocprofv3 run without --kernel-trace or --memory-copy-trace?): nothing to summarize

    ----- stderr -----
    ");
    // In a directory it is read with the rest.
    let (code, stdout, stderr) =
        crate::madengine(&run, &["report", "summary", "run", "--json", "--output-dir", out]);
    assert_eq!(code, 0, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let read = json["traces"].as_array().unwrap().iter().find(|t| t["trace"] == pftrace);
    assert_eq!(read.map(|t| &t["format"]), Some(&serde_json::json!("perfetto")), "{stdout}");
    assert!(!stderr.contains("Perfetto trace(s)"), "{stderr}");
}

#[test]
fn check_exits_0_when_clean() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "--check", "run/node_0/rank0.json.gz"], @r"
    exit code: 0
    ----- stdout -----
    run/node_0/rank0.json.gz: clean (2.6 KiB scanned)
    ----- stderr -----
    ");
}

#[test]
fn missing_input_exits_3_with_the_cause() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "no/such.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: cannot open no/such.json
      caused by: No such file or directory (os error 2)
    ");
}

#[test]
fn output_equal_to_input_exits_3() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "run/manifest.json", "-o", "run/./manifest.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: the output run/./manifest.json is the input run/manifest.json; the input is never modified, choose another output path
    ");
}

#[test]
fn missing_root_exits_3() {
    cli_snapshot!(&synthetic(), ["trace", "discover", "no/such/run"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: cannot read the root directory no/such/run
      caused by: No such file or directory (os error 2)
    ");
}

#[test]
fn usage_error_exits_2() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "--first", "x.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: the following required arguments were not provided:
      --check

    Usage: madengine trace sanitize --check --first <INPUT>...

    For more information, try '--help'.
    ");
}

#[test]
fn report_summary_on_the_synthetic_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    cli_snapshot!(&synthetic(), ["report", "summary", "-r", "run", "--top", "2", "-o", &out]);
    let csv = fs::read_to_string(
        out.join("torch_profiler_output_libkineto_trace_rank0_1/gpu_timeline.csv"),
    )
    .unwrap();
    assert!(csv.starts_with("type,time ms,percent\ncomputation_time,0.0085,"), "{csv}");
}

#[test]
fn a_trace_link_that_leads_nowhere_is_named_not_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    fs::create_dir(&run).unwrap();
    let trace = synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json");
    fs::copy(trace, run.join("libkineto_trace_rank0_1.json")).unwrap();
    // rank 1 was linked from a scratch space purged since
    let purged = dir.path().join("scratch/libkineto_trace_rank1_2.json");
    std::os::unix::fs::symlink(&purged, run.join("libkineto_trace_rank1_2.json")).unwrap();
    let said = format!(
        "run/libkineto_trace_rank1_2.json: a symbolic link to {}, which does not exist",
        purged.display()
    );
    let run_cli = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let listed = run_cli(&["trace", "discover", "run"]);
    assert!(listed.contains(&format!("problem      {said}\n")), "{listed}");
    let warned = format!("warning: {said}; left out\n");
    for args in [
        &["report", "summary", "run", "--top", "1"][..],
        &["trace", "sanitize", "--check", "run"],
        &["report", "diff", "run", "run"],
    ] {
        let text = run_cli(args);
        assert!(text.starts_with("exit code: 0\n"), "{args:?}: {text}");
        assert!(text.contains(&warned), "{args:?}: {text}");
    }
    let json = crate::stdout_json(&run_cli(&["report", "summary", "run", "--json"]));
    assert_eq!(
        json["left_out"],
        serde_json::json!([{
            "path": "run/libkineto_trace_rank1_2.json",
            "message": format!("a symbolic link to {}, which does not exist", purged.display()),
        }])
    );
    assert_eq!(json["traces"].as_array().unwrap().len(), 1);
    let diffed = crate::stdout_json(&run_cli(&["report", "diff", "run", "run", "--json"]));
    assert_eq!(diffed["left_out"]["baseline"], json["left_out"], "{diffed}");
    assert_eq!(diffed["left_out"]["new"], json["left_out"], "{diffed}");
    let planned = run_cli(&["report", "tracelens", "run", "--discover-only"]);
    let said = said.replacen(": ", "\t", 1);
    assert!(planned.contains(&format!("problem\t{said}\n")), "{planned}");
}

/// Chromium for rendering the HTML page: `$MADENGINE_CHROMIUM`, else
/// `chromium` on PATH; with CI=true its absence fails the test.
fn chromium() -> Option<std::path::PathBuf> {
    test_support::required::program(
        "MADENGINE_CHROMIUM",
        "chromium",
        "apt-get install chromium (Debian's), or point MADENGINE_CHROMIUM at a Chromium",
    )
}

#[test]
fn report_summary_html_is_self_contained_and_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let html = dir.path().join("summary.html");
    let (text, _) = crate::run_cli(
        &synthetic(),
        &[
            "report".as_ref(),
            "summary".as_ref(),
            "--root".as_ref(),
            "run".as_ref(),
            "--output-dir".as_ref(),
            out.as_os_str(),
            "--html".as_ref(),
            html.as_os_str(),
        ],
        &[],
    );
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let page = fs::read_to_string(&html).unwrap();
    for expected in [
        "Across ranks",
        // each table names its run, and its traces by their names in it
        "<p>Run <code>run/torch_profiler_output</code></p>",
        r#"<td class="name">libkineto_trace_rank1_2.json</td>"#,
        "node_0/rank0.json.gz (rank 0, AMD Instinct MI300X)",
        "No GPU activity",
        "ncclDevKernel_Generic(ncclDevKernelArgsStorage&lt;4096ul&gt;)",
        "<svg",
    ] {
        assert!(page.contains(expected), "{expected} missing from the page");
    }
    renders_in_chromium(&html, dir.path());
}

/// `html` is self-contained (no scripts, no fetched assets) and renders in
/// headless Chromium without a console message, to a screenshot that is not
/// blank; scratch in `dir`. The rendering is skipped, said, where Chromium
/// is missing and not required.
pub(crate) fn renders_in_chromium(html: &Path, dir: &Path) {
    let page = fs::read_to_string(html).unwrap();
    for banned in ["<script", " src=", " href=", "url(", "@import"] {
        assert!(!page.contains(banned), "{banned} in the page");
    }
    let Some(chromium) = chromium() else { return };
    let png = dir.join("page.png");
    #[allow(clippy::disallowed_methods, reason = "the test drives a real browser")]
    let mut child = std::process::Command::new(&chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--window-size=1200,2000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(dir.join("chromium.log")).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish rendering in 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let log = fs::read_to_string(dir.join("chromium.log")).unwrap();
    assert!(status.success(), "chromium failed: {status}\n{log}");
    // Chromium logs every console message (errors included) as INFO:CONSOLE.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages while rendering: {console:#?}");
    let bytes = fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank 1200x2000 page compresses to a few KB; the charts and tables do not.
    assert!(bytes.len() > 30_000, "the screenshot looks blank ({} bytes)", bytes.len());
}

/// A run with one good trace, one truncated one and a file given twice:
/// every readable trace is summarized, the broken one is named with its
/// error, the exit code is 3, and the result does not depend on --jobs.
#[test]
fn report_summary_reads_every_trace_and_names_the_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("a");
    fs::create_dir(&run).unwrap();
    let good = fs::read(synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"))
        .unwrap();
    fs::write(run.join("rank0.pt.trace.json"), &good).unwrap();
    fs::write(run.join("rank1.pt.trace.json"), &good[..good.len() / 2]).unwrap();
    fs::copy(synthetic().join("run/node_0/rank0.json.gz"), dir.path().join("b.json.gz")).unwrap();
    let args = |jobs: &str| -> Vec<std::ffi::OsString> {
        ["report", "summary", "a", "b.json.gz", "a/rank0.pt.trace.json", "--top", "1"]
            .into_iter()
            .chain(["--output-dir", "out", "--jobs", jobs])
            .map(Into::into)
            .collect()
    };
    let run_with = |args: Vec<std::ffi::OsString>| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let serial = run_with(args("1"));
    insta::assert_snapshot!(serial);
    assert_eq!(run_with(args("3")), serial, "--jobs changes the result");
    assert_eq!(crate::names_in(&dir.path().join("out")), ["a_rank0", "b"]);

    let mut json_args = args("2");
    json_args.push("--json".into());
    let text = run_with(json_args);
    let json = crate::stdout_json(&text);
    assert_eq!(json["unreadable"], 1);
    // Two ranked traces with a timeline, both rank 0, each alone in its
    // directory: two runs of one rank, so no cross-rank table.
    assert_eq!(json["cross_rank"], serde_json::json!([]));
    let views = json["traces"].as_array().unwrap();
    assert_eq!(views.len(), 3, "{views:#?}");
    assert_eq!(views[1]["trace"], "a/rank1.pt.trace.json");
    assert!(views[1]["outcome"].is_null());
    assert!(views[1]["error"].as_str().unwrap().contains("truncated"), "{:#?}", views[1]);
    assert_eq!(views[0]["outcome"], "tables");
    assert!(views[0].get("error").is_none());
    let kernel = &views[0]["top_kernels"][0];
    assert!(kernel["stream"].is_string() && kernel["parent_op"].is_string(), "{:#?}", views[0]);

    // --salvage reads the cut trace up to the cut, and says so.
    let mut salvage_args = args("2");
    salvage_args.extend(["--json".into(), "--salvage".into()]);
    let text = run_with(salvage_args);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let json = crate::stdout_json(&text);
    assert_eq!(json["unreadable"], 0);
    let cut = &json["traces"][1];
    assert!(cut.get("error").is_none(), "{cut:#?}");
    assert_eq!(cut["truncated"]["bytes"], good.len() as u64 / 2, "{cut:#?}");
    assert!(cut["truncated"]["events"].as_u64().unwrap() > 0, "{cut:#?}");
    assert!(cut["outcome"].is_string(), "{cut:#?}");
}

#[test]
fn report_summary_gives_each_run_its_own_cross_rank_table() {
    let dir = tempfile::tempdir().unwrap();
    let good = fs::read(synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"))
        .unwrap();
    for file in [
        "job_a/rank0.json",
        "job_a/rank1.json",
        "job_b/node_0/rank0.json",
        "job_b/node_1/rank1.json",
        "job_b/node_1/rank2.json",
        "job_c/rank0.json",
        "job_c/retry_rank0.json",
    ] {
        let path = dir.path().join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, &good).unwrap();
    }
    let args = ["report", "summary", "--top", "0", "--output-dir", "out"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let tables = &text[text.find("cross-rank").unwrap()..];
    // Rank 0 twice: job_a and job_b are split apart. job_b misses no rank
    // it needs to be compared; job_c cannot be split and gets a note.
    insta::assert_snapshot!(tables, @"
    cross-rank (ms), run job_a:
    RANK  COMPUTATION  EXPOSED COMM   IDLE  TOTAL    TRACE
    0           0.009         0.000  0.000  0.009    rank0.json
    1           0.009         0.000  0.000  0.009    rank1.json

    cross-rank (ms), run job_b:
    RANK  COMPUTATION  EXPOSED COMM   IDLE  TOTAL    TRACE
    0           0.009         0.000  0.000  0.009    node_0/rank0.json
    1           0.009         0.000  0.000  0.009    node_1/rank1.json
    2           0.009         0.000  0.000  0.009    node_1/rank2.json

    collectives matched across ranks (µs), run job_a: 1 matched; CSVs: out/job_a_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0

    collectives matched across ranks (µs), run job_b: 1 matched; CSVs: out/job_b_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      2       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0
      2     2       0 (  0.0%)                0.0               0.0            20.0
    ----- stderr -----
    [madengine] no cross-rank table for 2 ranked PyTorch traces in job_c: rank 0 is claimed by 2 traces (job_c/rank0.json, job_c/retry_rank0.json)
    ");
    // Which rows make which run's table: trace-report's tests (run.rs).
}

/// torch.profiler's schedule repeats unless `repeat=1`, and its
/// `tensorboard_trace_handler` writes a trace per rank each cycle into one
/// directory, named `<host>_<pid>.<time_ns>.pt.trace.json` (the rank only in
/// `distributedInfo`): each cycle is a run of its own.
#[test]
fn report_summary_gives_each_profiling_cycle_its_own_cross_rank_table() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("traces")).unwrap();
    for (cycle, rank) in [(1u32, 1u32), (0, 0), (1, 0), (0, 1)] {
        let from =
            format!("run/torch_profiler_output/libkineto_trace_rank{rank}_{}.json", rank + 1);
        let text = fs::read_to_string(synthetic().join(from)).unwrap();
        // In the second cycle, rank 1's GEMM takes 10 µs longer.
        let gemm = format!(r#""ts": 121.000, "dur": {:.3},"#, 8.5 + f64::from(10 * cycle * rank));
        let text = text.replacen(r#""ts": 121.000, "dur": 8.500,"#, &gemm, 1);
        let ns = 1_764_720_000_000_000_000u64 + u64::from(cycle) * 5_000_000_000 + u64::from(rank);
        let name = format!("traces/gpu-node_{}.{ns}.pt.trace.json", 4242 + rank);
        fs::write(dir.path().join(name), text).unwrap();
    }
    let args = ["report", "summary", "traces", "--top", "0", "-o", "out", "--html", "page.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let tables = &text[text.find("cross-rank").unwrap()..];
    insta::assert_snapshot!(tables, @"
    cross-rank (ms), run traces, profiling cycle 1 of 2:
    RANK  COMPUTATION  EXPOSED COMM   IDLE  TOTAL    TRACE
    0           0.009         0.000  0.000  0.009    gpu-node_4242.1764720000000000000.pt.trace.json
    1           0.009         0.000  0.000  0.009    gpu-node_4243.1764720000000000001.pt.trace.json

    cross-rank (ms), run traces, profiling cycle 2 of 2:
    RANK  COMPUTATION  EXPOSED COMM   IDLE  TOTAL              TRACE
    0           0.009         0.000  0.000  0.009              gpu-node_4242.1764720005000000000.pt.trace.json
    1           0.018         0.000  0.000  0.018  <- slowest  gpu-node_4243.1764720005000000001.pt.trace.json
    rank 1 is the slowest, 0.018 ms: 2.18x rank 0, the fastest (0.009 ms)

    profiling cycles (ms, the slowest trace of each), run traces:
    CYCLE   TRACES  GPU TIME  VS CYCLE 1  SLOWEST
    1 of 2       2     0.009           -  rank 0: gpu-node_4242.1764720000000000000.pt.trace.json
    2 of 2       2     0.018     +117.6%  rank 1: gpu-node_4243.1764720005000000001.pt.trace.json

    collectives matched across ranks (µs), run traces, profiling cycle 1 of 2: 1 matched; CSVs: out/traces_cycle1_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0

    collectives matched across ranks (µs), run traces, profiling cycle 2 of 2: 1 matched; CSVs: out/traces_cycle2_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0
    ----- stderr -----
    ");
    let page = fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(page.contains("<code>traces</code>, profiling cycle 2 of 2</p>"), "{page}");
    assert!(page.contains("<h2>Across profiling cycles</h2>"), "{page}");
    assert!(page.contains("<td>2 of 2</td><td>2</td><td>0.018</td>"), "{page}");
    let args = ["report", "summary", "traces", "--top", "0", "-o", "out", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    let cycles: Vec<(u64, u64, u64)> = json["cross_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let n = |k: &str| r["cycle"][k].as_u64().unwrap();
            (n("number"), n("of"), r["rank"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(cycles, [(1, 2, 0), (1, 2, 1), (2, 2, 0), (2, 2, 1)]);

    // --cycle reads only the cycle asked for, and says so.
    let args = ["report", "summary", "traces", "--top", "0", "-o", "out", "--cycle", "last"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let tables = &text[text.find("cross-rank").unwrap()..];
    insta::assert_snapshot!(tables, @"
    cross-rank (ms), run traces:
    RANK  COMPUTATION  EXPOSED COMM   IDLE  TOTAL              TRACE
    0           0.009         0.000  0.000  0.009              gpu-node_4242.1764720005000000000.pt.trace.json
    1           0.018         0.000  0.000  0.018  <- slowest  gpu-node_4243.1764720005000000001.pt.trace.json
    rank 1 is the slowest, 0.018 ms: 2.18x rank 0, the fastest (0.009 ms)

    collectives matched across ranks (µs), run traces: 1 matched; CSVs: out/traces_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0
    ----- stderr -----
    [madengine] traces: profiling cycle 2 of 2 (--cycle)
    [madengine] 2 PyTorch traces of other profiling cycles not read (--cycle)
    ");
    // The other cycle's reports, written before, stay.
    assert!(dir.path().join("out/gpu-node_4242.1764720000000000000/summary.json").is_file());
    cli_snapshot!(dir.path(), ["report", "summary", "traces", "-o", "out", "--cycle", "3"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: traces holds 2 profiling cycles, so there is no cycle 3: ask for 1 to 2, or last
    ");
}

#[test]
fn an_empty_trace_is_told_from_a_cpu_only_one() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("empty.json"), r#"{"traceEvents": []}"#).unwrap();
    fs::write(
        dir.path().join("cpu.json"),
        r#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}"#,
    )
    .unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "empty.json", "cpu.json", "--output-dir", "out"], @r"
    exit code: 0
    ----- stdout -----
    == empty.json
       no events at all (no traceEvents, or an empty list): nothing to summarize

    == cpu.json
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    ");
    // No traceEvents list at all: what its top level holds is named, and a
    // traceEvents list whose key a control byte changed (escaped by the
    // sanitizer on the way in) is told apart.
    fs::write(dir.path().join("other.json"), r#"{"schemaVersion": 1, "events": []}"#).unwrap();
    fs::write(dir.path().join("renamed.json"), b"{\"trace\x01Events\": [{\"ph\": \"X\"}]}")
        .unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "other.json", "renamed.json", "--output-dir", "out"], @r#"
    exit code: 0
    ----- stdout -----
    == other.json
       no traceEvents list: its top level holds `schemaVersion`, `events` (not a Chrome trace?): nothing to summarize

    == renamed.json
       note: repaired while reading (0 invalid UTF-8, 1 control byte, 0 lone surrogates); TraceLens refuses it as it is: `madengine trace sanitize renamed.json` writes a repaired copy
       no traceEvents list, but a "trace\u0001Events" one: its key was changed (a stray byte in the trace?), so its events are not read; nothing to summarize

    ----- stderr -----
    "#);
}

#[test]
fn check_searches_a_run_directory() {
    cli_snapshot!(&synthetic(), ["trace", "sanitize", "--check", "--max-listed", "1", "run"]);
}

#[test]
fn several_inputs_go_on_past_one_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        synthetic().join("run/rocprof_output/9999_results.json"),
        dir.path().join("9999_results.json"),
    )
    .unwrap();
    fs::copy(synthetic().join("run/node_0/rank0.json.gz"), dir.path().join("rank0.json.gz"))
        .unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "missing.json", "9999_results.json", "rank0.json.gz", "--max-listed", "0"], @r"
    exit code: 3
    ----- stdout -----
    9999_results.json: repaired into 9999_results.sanitized.json: 4 invalid UTF-8, 1 control byte, 0 lone surrogates (935 B)
      ... and 5 more repairs
    rank0.json.gz: clean, copied unchanged to rank0.sanitized.json.gz (2.6 KiB)
    ----- stderr -----
    error: cannot open missing.json
      caused by: No such file or directory (os error 2)
    error: 1 of 3 traces could not be read
    ");
    assert!(dir.path().join("rank0.sanitized.json.gz").is_file());
    // A check ends with its verdict on all of them, what could not be read
    // included.
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "missing.json", "9999_results.json", "rank0.json.gz", "--max-listed", "0"], @r"
    exit code: 3
    ----- stdout -----
    9999_results.json: needs repair: 4 invalid UTF-8, 1 control byte, 0 lone surrogates
      ... and 5 more repairs
    rank0.json.gz: clean (2.6 KiB scanned)
    3 traces checked: 1 clean, 1 needs repair, 1 could not be read
    ----- stderr -----
    error: cannot open missing.json
      caused by: No such file or directory (os error 2)
    ");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "9999_results.json", "rank0.json.gz", "-o", "x.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: --output names one file, but there are 2 inputs; name a directory (ending in /), or leave it out to write each repaired trace beside its input
    ");
    cli_snapshot!(dir.path(), ["trace", "sanitize", "."], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: . is a directory: repair names its files (or check it with --check)
    ");
    assert!(!dir.path().join("x.json").exists());
}

#[test]
#[allow(clippy::disallowed_methods, reason = "tests run the real binary, mkfifo and kill(1)")]
fn ctrl_c_during_sanitize_leaves_no_partial_output() {
    use std::{
        io::{BufRead, BufReader, Write},
        process::{Command, Stdio},
    };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("live.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child = Command::new(crate::binary())
        .args(["trace", "sanitize", "live.json", "-o", "repaired.json"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A trace that arrives slowly: half a megabyte, then the interrupt, then
    // more; the read after the interrupt must stop the copy.
    let record = b"{\"name\": \"k\xff\"},\n";
    let block: Vec<u8> = record.iter().copied().cycle().take(512 << 10).collect();
    let mut pipe = fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    pipe.write_all(b"{\"traceEvents\": [\n").unwrap();
    pipe.write_all(&block).unwrap();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("interrupted: stopping"), "{line}");
    for _ in 0..8 {
        if pipe.write_all(&block).is_err() {
            break; // madengine stopped reading
        }
    }
    drop(pipe);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("error: interrupted while reading live.json"), "{rest}");
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["live.json"], "partial output left behind");
}

#[test]
fn a_rocprofv3_trace_without_kernel_records_says_what_was_missing() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("4242_results.json"),
        r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":4242,"init_time":1,"fini_time":2},"strings":{"kernel_names":[]},"buffer_records":{"hip_api":[{"size":56,"kind":3,"operation":0,"correlation_id":{"internal":0,"external":0},"start_timestamp":1000,"end_timestamp":1003,"thread_id":4243,"args":{}}]}}]}"#,
    )
    .unwrap();
    // Only HIP API records: rocprofv3 was run without --kernel-trace. An
    // empty kernel_dispatch list: nothing ran on the GPU while it traced. A
    // kernel_dispatch list whose key a stray byte changed: said so.
    let lists = |buffers: &str| {
        format!(
            r#"{{"rocprofiler-sdk-tool":[{{"metadata":{{"pid":1,"init_time":1,"fini_time":2}},"buffer_records":{{{buffers}}}}}]}}"#
        )
    };
    fs::write(dir.path().join("5_results.json"), lists(r#""kernel_dispatch":[],"hip_api":[]"#))
        .unwrap();
    let dispatch = r#"{"start_timestamp":1,"end_timestamp":2,"dispatch_info":{"kernel_id":1}}"#;
    // A control byte the sanitizer escaped, in the key.
    let renamed = format!("\"kernel_\\u0001dispatch\":[{dispatch}],\"hip_api\":[]");
    fs::write(dir.path().join("6_results.json"), lists(&renamed)).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "--output-dir", "out"], @r#"
    exit code: 0
    ----- stdout -----
    == 4242_results.json
       no kernel_dispatch list: its buffer_records hold `hip_api` (rocprofv3 run without --kernel-trace?): nothing to summarize

    == 5_results.json
       no kernel dispatch or memory copy records (rocprofv3 run without --kernel-trace or --memory-copy-trace?): nothing to summarize

    == 6_results.json
       no kernel_dispatch list in its buffer_records, but a "kernel_\u0001dispatch" one: its key was changed (a stray byte in the trace?), so its records are not read; nothing to summarize

    ----- stderr -----
    "#);
}

/// Kineto writes Python names raw, quotes and all: such a trace is refused by
/// every strict parser. `trace sanitize --check` names each quote it escapes,
/// and `report summary` reads the trace through the same repair.
#[test]
fn quotes_written_raw_into_names_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let good = fs::read_to_string(
        synthetic().join("run/torch_profiler_output/libkineto_trace_rank0_1.json"),
    )
    .unwrap();
    let raw = good
        .replace(r#""train.py(12): step""#, r#""train.py(12): step(mode="fast")""#)
        .replace(r#""aten::mm""#, r#""aten::mm "fused"""#);
    assert!(serde_json::from_str::<serde_json::Value>(&raw).is_err());
    fs::write(dir.path().join("rank0.pt.trace.json"), &raw).unwrap();
    cli_snapshot!(dir.path(), ["trace", "sanitize", "--check", "rank0.pt.trace.json"], @r#"
    exit code: 1
    ----- stdout -----
    rank0.pt.trace.json: needs repair: 0 invalid UTF-8, 0 control bytes, 0 lone surrogates, 4 stray quotes
      at byte        775  stray quote    "f in "name"
      at byte        780  stray quote    ") in "name"
      at byte        968  stray quote    "f in "name"
      at byte        974  stray quote    "" in "name"
    ----- stderr -----
    "#);
    let args = ["report", "summary", "rank0.pt.trace.json", "--json"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(text.contains(r#"aten::mm \"fused\""#), "{text}");
    let json = crate::stdout_json(&text);
    assert_eq!(json["traces"][0]["repaired"]["stray_quotes"], 4, "{json:#}");
}

/// The synthetic run's Kineto trace (CPU-only, 1.3 KiB): what the tests of
/// broken copies start from.
fn kineto_4242() -> Vec<u8> {
    fs::read(synthetic().join("run/torch_profiler_output/libkineto_trace_4242.json")).unwrap()
}

/// A temporary directory holding one file.
fn dir_with(name: &str, bytes: impl AsRef<[u8]>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), bytes).unwrap();
    dir
}

/// rocprofv3 writes no rank, but a file per process, and a multi-GPU job
/// runs a process per GPU: `report summary` tells a directory's processes
/// apart by the GPU each ran its kernels on.
#[test]
fn report_summary_tells_rocprofv3_processes_apart_by_gpu() {
    let dir = tempfile::tempdir().unwrap();
    // GPU 1's GEMM takes 100 µs longer, and the others wait as long in the
    // collective: all are as busy, and GPU 1 spends the least in the
    // collective (COMM).
    crate::write_rocprof_processes(
        dir.path(),
        &[
            ("node_a/101_results.json", 101, 1, 300, 100),
            ("node_a/100_results.json", 100, 0, 200, 200),
            ("node_a/102_results.json", 102, 2, 200, 200),
            ("node_b/7_results.json", 7, 0, 200, 100),
            // Two runs written into one directory: not one run's processes.
            ("retried/1_results.json", 1, 0, 200, 100),
            ("retried/2_results.json", 2, 0, 250, 100),
        ],
    );
    // A process that ran kernels on GPUs 0 and 3 stands for no one GPU.
    let one = crate::rocprof_process(103, 3, 100);
    let at = one.find("kernel_dispatch").unwrap();
    let dispatches = one[at..].replacen(r#"{"handle":13}"#, r#"{"handle":10}"#, 1);
    assert!(dispatches.contains(r#"{"handle":13}"#), "{dispatches}");
    let spread = format!("{}{dispatches}", &one[..at]);
    fs::write(dir.path().join("node_a/103_results.json"), spread).unwrap();
    let args = ["report", "summary", "--top", "1", "-o", "out", "--html", "page.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(
        text.contains("== node_a/100_results.json (on GPU 0, AMD Instinct MI300X)\n"),
        "{text}"
    );
    // The kernel time says what of it the collectives took.
    assert!(text.contains(": kernel 0.400 ms (40.0%; collectives 0.200 ms), memory"), "{text}");
    let tables = &text[text.find("cross-GPU").unwrap()..];
    insta::assert_snapshot!(tables, @r"
    cross-GPU (ms), rocprofv3 processes in node_a:
    GPU   BUSY  KERNEL   COMM  MEMORY   IDLE  PROFILED                 TRACE
    0    0.400   0.400  0.200   0.000  0.600     1.000                 100_results.json
    1    0.400   0.400  0.100   0.000  0.600     1.000  <- least COMM  101_results.json
    2    0.400   0.400  0.200   0.000  0.600     1.000                 102_results.json
    ----- stderr -----
    [madengine] node_a/103_results.json ran its kernels on several GPUs: left out of the cross-GPU table
    [madengine] no cross-GPU table for the 2 rocprofv3 traces in retried: GPU 0 ran the kernels of two (retried/1_results.json and retried/2_results.json), so they are not one run's
    ");
    let page = fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(page.contains("<h2>Across GPUs</h2>"), "{page}");
    let record =
        fs::read_to_string(dir.path().join("out/node_a_101_results/summary.json")).unwrap();
    assert!(record.contains("\"gpu_index\": 1"), "{record}");

    let args = ["report", "summary", "--json", "-o", "out"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let json = crate::stdout_json(&text);
    // Which GPU is which row: trace-report's tests (run.rs).
    assert_eq!(json["cross_gpu"][1]["run"], "node_a", "{json}");
    assert_eq!(json["traces"][0]["comm_ms"], 0.2, "{json}");
    assert_eq!(json["cross_rank"], serde_json::json!([]));
}

/// Under a run's cross-rank table: its slowest rank against its fastest,
/// the median, and the rank the others waited for (the least exposed
/// communication); on the page too, and flagged in `--json`. The 8 ranks of
/// a real DLRM job.
#[test]
fn a_cross_rank_table_says_its_spread_and_whom_the_others_waited_for() {
    let Some(public) = crate::public_dir::public_fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = public.join("kineto-multirank/param-dlrm-8rank");
    let run = run.to_str().unwrap();
    let args = ["report", "summary", run, "--top", "0", "-o", "out", "--html", "page.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let below = &text[text.find("\n7 ").unwrap() + 1..];
    let below = &below[below.find('\n').unwrap() + 1..].replace(run, "[PUBLIC]/param-dlrm-8rank");
    insta::assert_snapshot!(below, @"
    rank 1 is the slowest, 18.467 ms: 1.68x rank 7, the fastest (10.967 ms); median 14.700 ms over 8 ranks
    least exposed comm: rank 7, 1.580 ms (in a job that synchronizes, the rank the others waited for)

    collectives matched across ranks (µs), run [PUBLIC]/param-dlrm-8rank: 8 matched by their order in each rank (the traces name no process group); CSVs: out/param-dlrm-8rank_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      4                    86.0       223.0      1       5.0           -  (not named)
      7                    69.0       885.0      0       7.0           -  (not named)
      6                    20.0       584.0      3       5.0           -  (not named)
      0                    10.0      7624.0      1       2.0           -  (not named)
      5                    10.0       534.0      1       3.0           -  (not named)
      RANK  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      7       5 ( 62.5%)             1534.0             191.8          1746.0
      5       2 ( 25.0%)             6041.0             755.1          6251.0
      4       1 ( 12.5%)             6370.0             796.2          6587.0
      2       0 (  0.0%)             3280.0             410.0          3492.0
      6       0 (  0.0%)             3342.0             417.8          3558.0
      0       0 (  0.0%)             5580.0             697.5          5798.0
      3       0 (  0.0%)             9571.0            1196.4          9774.0
      1       0 (  0.0%)            11125.0            1390.6         11336.0
    ----- stderr -----
    ");
    let page = fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(page.contains("<p>least exposed comm: rank 7, 1.580 ms (in a job"), "{page}");
    // The page draws each top collective as a strip per rank (arrival to
    // exit, the last arrival marked), and the straggler table.
    let section = &page[page.find("<h2>Collectives matched across ranks").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert_eq!(section.matches("<svg").count(), 5, "{section}");
    let first = &section[..section.find("</svg>").unwrap()];
    assert_eq!(first.matches("<rect").count(), 8, "{first}");
    assert!(first.contains("<title>rank 4: arrived at +214.0 µs, left at +309.0 µs</title>"));
    assert!(first.contains("<title>last arrival, +223.0 µs</title>"), "{first}");
    assert!(section.contains("<tr><td>7</td><td>5</td><td>62.5%</td><td>1534.0</td>"), "{section}");
    let args = ["report", "summary", run, "--top", "0", "-o", "out", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    let flagged = |flag: &str| -> Vec<u64> {
        let rows = json["cross_rank"].as_array().unwrap();
        rows.iter().filter(|r| r[flag] == true).map(|r| r["rank"].as_u64().unwrap()).collect()
    };
    assert_eq!((flagged("slowest"), flagged("least_exposed_comm")), (vec![1], vec![7]));
    // --json carries the collective report: the top collectives with each
    // rank's arrival, and the straggler rows.
    let run_report = &json["collectives"][0];
    assert_eq!(run_report["matched"], 8, "{run_report}");
    assert_eq!(run_report["top"][0]["rank_4_ts"], 1694128201436454i64, "{run_report}");
    let straggler = &run_report["straggler"];
    assert_eq!(straggler.as_array().unwrap().len(), 8);
    let rank7 = straggler.as_array().unwrap().iter().find(|r| r["rank"] == 7).unwrap();
    assert_eq!(
        (&rank7["times_arrived_last"], &rank7["total_wait_time_us"]),
        (&5.into(), &1534.into())
    );
}

/// A run of ranks without NCCL/RCCL kernels (a gloo job: its collectives
/// run on the CPU) gets no collective report, and a note says why, where
/// TraceLens fails with `KeyError: 'collective_id'`.
#[test]
fn a_run_without_collective_kernels_says_there_is_nothing_to_match() {
    let dir = tempfile::tempdir().unwrap();
    let source = crate::synthetic().join("run/torch_profiler_output");
    for (rank, name) in [(0, "libkineto_trace_rank0_1.json"), (1, "libkineto_trace_rank1_2.json")] {
        let text = fs::read_to_string(source.join(name)).unwrap();
        let gloo = text.replace(
            "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
            "elementwise_kernel",
        );
        assert_ne!(gloo, text);
        fs::create_dir_all(dir.path().join("gloo")).unwrap();
        fs::write(dir.path().join(format!("gloo/rank{rank}.json")), gloo).unwrap();
    }
    let args = ["report", "summary", "gloo", "--top", "0", "-o", "out"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(
        text.contains("[madengine] no collective report for run gloo: no rank holds an NCCL/RCCL collective kernel (with a correlation or External id), so there is nothing to match: a gloo job's collectives run on the CPU\n"),
        "{text}"
    );
    assert!(!text.contains("collectives matched across ranks"), "{text}");
    assert!(!dir.path().join("out/gloo_collectives").exists());
}

/// Collective kernels that carry PyTorch's collective args get a table of
/// their calls: `collective_summary.csv`, and the largest in the view.
#[test]
fn report_summary_shows_the_collective_calls() {
    let Some(public) = crate::public_dir::public_fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace = public.join("kineto/hta/nccl_parser_config/nccl_data.json.gz");
    let trace = trace.to_str().unwrap();
    let args = ["report", "summary", trace, "--top", "2", "-o", "out", "--html", "page.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let shown = &text[text.find("   collectives").unwrap()..text.find("   CSVs").unwrap()];
    insta::assert_snapshot!(shown, @"
    collectives (total µs, calls, mean µs, bus bandwidth):
         11820.962      3x      3940.3     2.1 GB/s  allreduce Float, 8.2 MB, 2 ranks
         11081.355      3x      3693.8     8.5 GB/s  allreduce Float, 31.5 MB, 2 ranks
    no input shapes: its ops were recorded without record_shapes, so there are no GEMM shapes and FLOPs (record with torch.profiler's record_shapes=True; `madengine profile` records them)
    ");
    let csv = fs::read_to_string(
        dir.path().join("out/nccl_parser_config_nccl_data/collective_summary.csv"),
    )
    .unwrap();
    assert!(csv.starts_with("Collective name,dtype,Group size,In msg nelems,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + 7, "{csv}");
    let page = fs::read_to_string(dir.path().join("page.html")).unwrap();
    assert!(page.contains("<h3>Collectives (NCCL/RCCL kernels by call)</h3>"), "{page}");

    let args = ["report", "summary", trace, "--top", "1", "-o", "out", "--json"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let json = crate::stdout_json(&text);
    let top = &json["traces"][0]["top_collectives"];
    assert_eq!(top.as_array().unwrap().len(), 1, "{top}");
    assert_eq!((&top[0]["name"], &top[0]["group_size"]), (&"allreduce".into(), &2.into()));
}

/// `trace convert` writes a rocpd database as rocprofv3 JSON beside it:
/// `report summary` of that JSON is the database's; an existing file is
/// kept unless `--force`; a database it cannot read leaves no file.
#[test]
fn convert_writes_a_database_as_rocprofv3_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("host/1234_results.db");
    fs::create_dir_all(db.parent().unwrap()).unwrap();
    fs::copy(synthetic().join("run/rocprof_output/1e4d92661463/1234_results.db"), &db).unwrap();
    cli_snapshot!(dir.path(), ["trace", "convert", "host/1234_results.db"], @r"
    exit code: 0
    ----- stdout -----
    wrote host/1234_results.json: 3 kernel dispatches, 1 memory copy, from host/1234_results.db (1 process)
    ----- stderr -----
    ");
    // Sanitizing the database is refused, and the CLI says what converts it.
    cli_snapshot!(dir.path(), ["trace", "sanitize", "host/1234_results.db"], @"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: host/1234_results.db is a SQLite database (rocprofv3's rocpd output, or RPD), not JSON: there is nothing to repair (rocprofv3's rocpd databases are read as they are)
    [madengine] `madengine trace convert host/1234_results.db` writes a rocpd database as rocprofv3 JSON
    ");
    let json = dir.path().join("host/1234_results.json");
    let tables = |trace: &Path| {
        let s = trace_summary::summarize_file(trace).unwrap();
        (s.gpu_timeline.unwrap().to_csv(), s.kernel_summary.unwrap().to_csv())
    };
    assert_eq!(tables(&json), tables(&db));

    let before = fs::read(&json).unwrap();
    cli_snapshot!(dir.path(), ["trace", "convert", "host/1234_results.db"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: host/1234_results.json exists (the run's own rocprofv3 JSON, written beside its database?): name another output with -o, or --force to replace it
    ");
    assert_eq!(fs::read(&json).unwrap(), before);
    cli_snapshot!(dir.path(), ["trace", "convert", "host/1234_results.db", "--force", "--json"], @r#"
    exit code: 0
    ----- stdout -----
    {
      "version": 1,
      "input": "host/1234_results.db",
      "output": "host/1234_results.json",
      "processes": 1,
      "kernels": 3,
      "copies": 1
    }
    ----- stderr -----
    "#);

    fs::write(dir.path().join("host/9_results.db"), "SQLite format 3\0 and nothing else").unwrap();
    cli_snapshot!(dir.path(), ["trace", "convert", "host/9_results.db", "-o", "out.json"], @"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: host/9_results.db is not a readable rocpd database
      caused by: file is not a database
    ");
    assert!(!dir.path().join("out.json").exists());
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["host"]);
}

/// A run directory: every database under it is converted, one it cannot
/// read is named and the others are still written (exit 3); `-o` names one
/// output only.
#[test]
fn convert_takes_a_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = synthetic().join("run/rocprof_output/1e4d92661463/1234_results.db");
    for node in ["run/node1/1234_results.db", "run/node2/1234_results.db"] {
        fs::create_dir_all(dir.path().join(node).parent().unwrap()).unwrap();
        fs::copy(&db, dir.path().join(node)).unwrap();
    }
    fs::write(dir.path().join("run/node2/77_results.db"), "not a database at all").unwrap();
    cli_snapshot!(dir.path(), ["trace", "convert", "run", "-o", "x.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: --output names one file, but there are 3 databases; name a directory (ending in /), or leave it out to write each one's JSON beside it
    ");
    // Into one directory, the two nodes' databases would take one name.
    cli_snapshot!(dir.path(), ["trace", "convert", "run", "-o", "json/"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: run/node1/1234_results.db and run/node2/1234_results.db would both be written to json/1234_results.json: give them separately, each with its own -o
    ");
    assert!(!dir.path().join("json").exists());
    cli_snapshot!(dir.path(), ["trace", "convert", "run/node2", "-o", "json/"], @"
    exit code: 3
    ----- stdout -----
    wrote json/1234_results.json: 3 kernel dispatches, 1 memory copy, from run/node2/1234_results.db (1 process)
    ----- stderr -----
    error: run/node2/77_results.db is not a readable rocpd database
      caused by: file is not a database
    error: 1 of 2 databases could not be converted
    ");
    // A node whose database was linked from a scratch space purged since.
    std::os::unix::fs::symlink(
        "/scratch/gone/88_results.db",
        dir.path().join("run/node2/88_results.db"),
    )
    .unwrap();
    cli_snapshot!(dir.path(), ["trace", "convert", "run"], @"
    exit code: 3
    ----- stdout -----
    wrote run/node1/1234_results.json: 3 kernel dispatches, 1 memory copy, from run/node1/1234_results.db (1 process)
    wrote run/node2/1234_results.json: 3 kernel dispatches, 1 memory copy, from run/node2/1234_results.db (1 process)
    ----- stderr -----
    warning: run/node2/88_results.db: a symbolic link to /scratch/gone/88_results.db, which does not exist; left out
    error: run/node2/77_results.db is not a readable rocpd database
      caused by: file is not a database
    error: 1 of 3 databases could not be converted
    ");
    assert!(!dir.path().join("run/node2/77_results.json").exists());
    // With --json: one document, its traces listed.
    let args = ["trace", "convert", "run", "--force", "--json"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 3\n"), "{text}");
    insta::assert_snapshot!("json_shape_convert_several", crate::json_shape(&text));
    crate::reads_back::<trace_summary::ConvertedFiles>(
        &crate::stdout_json(&text),
        "convert-several",
    );
}

#[test]
fn sanitize_writes_several_traces_into_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = synthetic().join("run");
    let broken = run.join("broken/python_names.pt.trace.json");
    let gz = run.join("traces/model_rank2.pt.trace.json.gz");
    fs::create_dir(dir.path().join("fixed")).unwrap();
    let text = |args: &[&std::ffi::OsStr]| crate::run_cli(dir.path(), args, &[]).0;
    let both = |more: &[&str]| {
        let args = ["trace".as_ref(), "sanitize".as_ref(), broken.as_os_str(), gz.as_os_str()];
        text(&[&args[..], &more.iter().map(std::ffi::OsStr::new).collect::<Vec<_>>()].concat())
    };
    let said = both(&["-o", "fixed"]);
    assert!(said.starts_with("exit code: 0\n"), "{said}");
    // Each under its input's name: still found by TraceLens' patterns, and
    // the copy of the .json.gz is gzip.
    assert_eq!(
        crate::names_in(&dir.path().join("fixed")),
        ["model_rank2.pt.trace.json.gz", "python_names.pt.trace.json"]
    );
    let copied = fs::read(dir.path().join("fixed/model_rank2.pt.trace.json.gz")).unwrap();
    assert_eq!(copied[..2], [0x1f, 0x8b]);
    let repaired = fs::read(dir.path().join("fixed/python_names.pt.trace.json")).unwrap();
    serde_json::from_slice::<serde_json::Value>(&repaired).expect("the repaired copy is JSON");
    // With --json: one document, its traces listed in the order given.
    let said = both(&["-o", "fixed", "--json"]);
    insta::assert_snapshot!("json_shape_sanitize_several", crate::json_shape(&said));
    let json = crate::stdout_json(&said);
    let traces = json["traces"].as_array().unwrap();
    let inputs: Vec<&serde_json::Value> = traces.iter().map(|t| &t["input"]).collect();
    assert_eq!(inputs, [broken.to_str().unwrap(), gz.to_str().unwrap()], "{said}");
    crate::reads_back::<trace_sanitize::FileReports>(&json, "sanitize-several");
    // A path ending in / is a directory, made when missing; two inputs of
    // one name are refused before anything is written.
    let twice = run.join("node_0/../node_0/rank0.json.gz");
    let one = run.join("node_0/rank0.json.gz");
    let said = text(&[
        "trace".as_ref(),
        "sanitize".as_ref(),
        one.as_ref(),
        twice.as_ref(),
        "-o".as_ref(),
        "new/".as_ref(),
    ]);
    assert!(said.starts_with("exit code: 2\n"), "{said}");
    assert!(said.contains("would both be written to new/rank0.json.gz"), "{said}");
    assert!(!dir.path().join("new").exists());
    let said = text(&[
        "trace".as_ref(),
        "sanitize".as_ref(),
        one.as_ref(),
        "-o".as_ref(),
        "new/".as_ref(),
    ]);
    assert!(said.starts_with("exit code: 0\n"), "{said}");
    assert!(dir.path().join("new/rank0.json.gz").is_file());
}
