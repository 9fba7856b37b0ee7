//! Discovery on the synthetic run directory and on trees made by the tests.

use std::{fs, path::Path};

use trace_discover::{Claim, Discovery, Options, RankSource, TraceKind, discover};

/// A compact, root-relative view of a discovery for snapshots.
fn summary(found: &Discovery) -> Vec<String> {
    let rel = |p: &Path| p.strip_prefix(&found.root).unwrap_or(p).display().to_string();
    let mut lines: Vec<String> = found
        .traces
        .iter()
        .map(|t| {
            let rank = t
                .rank
                .map(|r| format!(" rank={} ({:?}, world {:?})", r.rank, r.source, r.world_size))
                .unwrap_or_default();
            format!("{} {} by {:?}{rank}", t.kind, rel(&t.path), t.claim)
        })
        .collect();
    lines.extend(
        found.unsupported.iter().map(|u| format!("unsupported {}: {}", rel(&u.path), u.reason)),
    );
    lines.extend(found.problems.iter().map(|p| format!("problem {}: {}", rel(&p.path), p.message)));
    lines
}

#[test]
fn synthetic_run_directory() {
    let root = crate::synthetic_run();
    let options = Options { exclude: vec![root.join("tracelens_output")], ..Options::default() };
    let found = discover(&root, &options).unwrap();
    insta::assert_snapshot!(summary(&found).join("\n"));
    // deterministic: the same result twice
    assert_eq!(found, discover(&root, &options).unwrap());
}

#[test]
fn synthetic_run_directory_json() {
    let root = crate::synthetic_run();
    let options = Options { exclude: vec![root.join("tracelens_output")], ..Options::default() };
    let found = discover(&root, &options).unwrap();
    insta::assert_json_snapshot!(found, {
        ".root" => "[root]",
        ".traces[].path" => insta::dynamic_redaction(|v, _| v.as_str().unwrap().rsplit("synthetic/").next().unwrap().to_string()),
        ".unsupported[].path" => insta::dynamic_redaction(|v, _| v.as_str().unwrap().rsplit("synthetic/").next().unwrap().to_string()),
    });
}

#[test]
fn names_only_is_the_original_behaviour() {
    let root = crate::synthetic_run();
    let options = Options {
        names_only: true,
        exclude: vec![root.join("tracelens_output")],
        ..Options::default()
    };
    let found = discover(&root, &options).unwrap();
    let paths: Vec<_> = found
        .traces
        .iter()
        .map(|t| t.path.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    // rank0.json.gz and host_4242.json (traceEvents past the first 4 KiB) are not claimed
    assert!(
        !paths.iter().any(|p| p.contains("rank0.json.gz") || p.contains("host_4242")),
        "{paths:?}"
    );
    assert!(paths.contains(&"rpd_output/trace.json".to_string()), "trace.json is still sniffed");
    assert!(found.traces.iter().all(|t| t.claim == Claim::Name || t.path.ends_with("trace.json")));
}

#[test]
fn the_output_directory_is_excluded_only_when_asked() {
    let root = crate::synthetic_run();
    let all = discover(&root, &Options::default()).unwrap();
    assert!(all.traces.iter().any(|t| t.path.to_string_lossy().contains("tracelens_output")));
    // also through a relative spelling of the same directory
    let relative = root.join("torch_profiler_output/../tracelens_output");
    let found =
        discover(&root, &Options { exclude: vec![relative], ..Options::default() }).unwrap();
    assert!(!found.traces.iter().any(|t| t.path.to_string_lossy().contains("tracelens_output")));
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

#[test]
fn symlinked_directories_are_followed_only_when_asked_and_loops_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "real/a_rank0.pt.trace.json", br#"{"traceEvents": []}"#);
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    std::os::unix::fs::symlink(root, root.join("real/loop")).unwrap();
    let plain = discover(root, &Options::default()).unwrap();
    assert_eq!(plain.traces.len(), 1);
    assert!(plain.problems.is_empty());
    let followed = discover(root, &Options { follow_links: true, ..Options::default() }).unwrap();
    assert_eq!(followed.traces.len(), 2, "{:?}", followed.traces);
    assert!(
        followed.problems.iter().any(|p| p.message.contains("loop")),
        "{:?}",
        followed.problems
    );
}

#[test]
fn unreadable_paths_are_problems_not_failures() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "ok/x_rank1.pt.trace.json", br#"{"traceEvents": []}"#);
    write(root, "locked/y.pt.trace.json", br#"{"traceEvents": []}"#);
    write(root, "content/z.json", br#"{"traceEvents": []}"#);
    fs::set_permissions(root.join("content/z.json"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let found = discover(root, &Options::default());
    fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    let found = found.unwrap();
    if fs::File::open(root.join("content/z.json")).is_ok() {
        // Running as root: permission bits do not stop reads; nothing to see.
        assert_eq!(found.traces.len(), 3);
        return;
    }
    assert_eq!(found.traces.len(), 1);
    let names: Vec<_> = found
        .problems
        .iter()
        .map(|p| p.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["z.json", "locked"]);
}

#[test]
fn a_broken_link_followed_is_a_problem_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "ok/x_rank1.pt.trace.json", br#"{"traceEvents": []}"#);
    std::os::unix::fs::symlink(root.join("gone"), root.join("ok/dangling")).unwrap();
    let found = discover(root, &Options { follow_links: true, ..Options::default() }).unwrap();
    assert_eq!(found.traces.len(), 1);
    assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
    assert!(found.problems[0].path.ends_with("ok/dangling"));
    // not following: a dangling link is simply not a trace
    let found = discover(root, &Options::default()).unwrap();
    assert!(found.problems.is_empty());
}

#[test]
fn a_broken_link_named_as_a_trace_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "ok/x_rank1.pt.trace.json", br#"{"traceEvents": []}"#);
    let purged = root.join("scratch/y_rank0.pt.trace.json");
    std::os::unix::fs::symlink(&purged, root.join("ok/y_rank0.pt.trace.json")).unwrap();
    std::os::unix::fs::symlink(root.join("gone.db"), root.join("ok/1_results.db")).unwrap();
    // Named as nothing of ours, hidden, or excluded: not a problem.
    std::os::unix::fs::symlink(root.join("gone"), root.join("ok/notes.txt")).unwrap();
    std::os::unix::fs::symlink(&purged, root.join("ok/.z_rank2.pt.trace.json")).unwrap();
    fs::create_dir(root.join("out")).unwrap();
    std::os::unix::fs::symlink(&purged, root.join("out/w_rank3.pt.trace.json")).unwrap();
    let found =
        discover(root, &Options { exclude: vec![root.join("out")], ..Options::default() }).unwrap();
    assert_eq!(found.traces.len(), 1);
    let problems: Vec<(String, String)> = found
        .problems
        .iter()
        .map(|p| (p.path.strip_prefix(root).unwrap().display().to_string(), p.message.clone()))
        .collect();
    assert_eq!(
        problems,
        [
            (
                "ok/1_results.db".to_string(),
                format!(
                    "a symbolic link to {}, which does not exist",
                    root.join("gone.db").display()
                )
            ),
            (
                "ok/y_rank0.pt.trace.json".to_string(),
                format!("a symbolic link to {}, which does not exist", purged.display())
            ),
        ]
    );
}

/// A copy `madengine trace sanitize` wrote beside its trace is that trace
/// again: of the two, the one written last is read (the copy made to
/// repair or salvage the trace, or the trace captured again since), and
/// the other left out with why. A name merely like a copy's is no copy.
#[test]
fn of_a_trace_and_its_sanitized_copy_the_newer_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let kineto = br#"{"traceEvents": []}"#;
    let rocprof = br#"{"rocprofiler-sdk-tool": []}"#;
    for (rel, bytes) in [
        ("a/rank0.pt.trace.json", &kineto[..]),
        ("a/rank0.sanitized.pt.trace.json", kineto),
        ("a/908_results.json", rocprof),
        ("a/908_results.sanitized.json", rocprof),
        ("b/rank1.sanitized.pt.trace.json", kineto),
        ("b/rank1.pt.trace.json", b"not a trace"),
        ("c/rank2.sanitized.json", kineto),
        ("c/rank2.pt.trace.json", kineto),
    ] {
        write(root, rel, bytes);
    }
    let day = std::time::Duration::from_secs(86_400);
    let then = std::time::SystemTime::now() - day;
    for (older, newer) in [
        ("a/rank0.pt.trace.json", "a/rank0.sanitized.pt.trace.json"),
        // Captured again since the copy was made.
        ("a/908_results.sanitized.json", "a/908_results.json"),
        ("b/rank1.pt.trace.json", "b/rank1.sanitized.pt.trace.json"),
    ] {
        for (rel, at) in [(older, then), (newer, then + day / 2)] {
            let file = fs::File::options().write(true).open(root.join(rel)).unwrap();
            file.set_modified(at).unwrap();
        }
    }
    let found = discover(root, &Options::default()).unwrap();
    insta::assert_snapshot!(summary(&found).join("\n"), @r"
    pytorch a/rank0.sanitized.pt.trace.json by Name rank=0 (FileName, world None)
    pytorch b/rank1.sanitized.pt.trace.json by Name rank=1 (FileName, world None)
    pytorch c/rank2.pt.trace.json by Name rank=2 (FileName, world None)
    pytorch c/rank2.sanitized.json by Content rank=2 (FileName, world None)
    rocprof_json a/908_results.json by Name
    unsupported a/908_results.sanitized.json: a sanitized copy of the trace beside it (the same name without `.sanitized`), which was written again since and is read instead
    unsupported a/rank0.pt.trace.json: its sanitized copy beside it, written since (the same name with `.sanitized`), is read instead
    unsupported b/rank1.pt.trace.json: its sanitized copy beside it, written since (the same name with `.sanitized`), is read instead
    ");
}

/// One file classified alone is what a search of its directory finds of
/// it; a directory is searched.
#[test]
fn one_file_is_classified_as_its_directory_would_find_it() {
    let root = crate::synthetic_run();
    let options = Options::default();
    let found = discover(&root, &options).unwrap();
    for trace in &found.traces {
        let alone = trace_discover::classify(&trace.path, &options).unwrap();
        assert_eq!(alone.root, trace.path);
        assert_eq!(alone.traces, std::slice::from_ref(trace), "{}", trace.path.display());
    }
    for unsupported in &found.unsupported {
        let alone = trace_discover::classify(&unsupported.path, &options).unwrap();
        assert_eq!(alone.unsupported, std::slice::from_ref(unsupported));
    }
    let none = trace_discover::classify(&root.join("manifest.json"), &options).unwrap();
    assert!(none.traces.is_empty() && none.unsupported.is_empty() && none.problems.is_empty());
    assert_eq!(trace_discover::classify(&root, &options).unwrap(), found);
}

#[test]
fn non_utf8_names_are_handled() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9_rank3.pt.trace.json");
    fs::write(dir.path().join(name), br#"{"traceEvents": []}"#).unwrap();
    let found = discover(dir.path(), &Options::default()).unwrap();
    assert_eq!(found.traces[0].rank.map(|r| (r.rank, r.source)), Some((3, RankSource::FileName)));
    let json = serde_json::to_string(&found).unwrap();
    assert!(json.contains("caf\u{fffd}_rank3.pt.trace.json"), "{json}");
}

#[test]
fn root_errors_name_the_root() {
    let err = discover(Path::new("/no/such/run"), &Options::default()).unwrap_err();
    assert!(err.to_string().contains("/no/such/run"), "{err}");
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = discover(file.path(), &Options::default()).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn distributed_info_past_the_first_mib_of_a_plain_trace() {
    // on-demand Kineto traces write distributedInfo after a large traceEvents
    let dir = tempfile::tempdir().unwrap();
    let mut body = b"{\"traceEvents\": [".to_vec();
    while body.len() < (1 << 20) + 1000 {
        body.extend_from_slice(
            b"{\"ph\": \"X\", \"name\": \"aten::add\", \"ts\": 1, \"dur\": 1},\n",
        );
    }
    body.extend_from_slice(b"{}],\n\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 5, \"world_size\": 8, \"ranks\": \"[0, 1]\"}\n}\n");
    fs::write(dir.path().join("libkineto_trace_777.json"), &body).unwrap();
    let found = discover(dir.path(), &Options::default()).unwrap();
    let rank = found.traces[0].rank.unwrap();
    assert_eq!(
        (rank.rank, rank.source, rank.world_size),
        (5, RankSource::DistributedInfo, Some(8))
    );
    assert_eq!(found.count(TraceKind::Pytorch), 1);
}

/// Traces compressed with something other than gzip are listed as
/// unsupported, with what to do, not passed over in silence.
#[test]
fn json_compressed_otherwise_than_gzip_is_unsupported_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for name in ["a.pt.trace.json.zst", "b_results.json.xz", "c.json.bz2", "d.json.zip"] {
        write(root, name, b"\x28\xb5\x2f\xfd");
    }
    let found = discover(root, &Options::default()).unwrap();
    assert!(found.traces.is_empty(), "{:?}", found.traces);
    let said: Vec<String> = found
        .unsupported
        .iter()
        .map(|u| format!("{}: {}", u.path.file_name().unwrap().to_string_lossy(), u.reason))
        .collect();
    insta::assert_snapshot!(said.join("\n"), @r"
    a.pt.trace.json.zst: zstd-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it (zstd -d) or compress it with gzip instead
    b_results.json.xz: xz-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it (xz -d) or compress it with gzip instead
    c.json.bz2: bzip2-compressed JSON: madengine and TraceLens read .json and .json.gz; decompress it (bunzip2) or compress it with gzip instead
    d.json.zip: a zip archive: madengine and TraceLens read .json and .json.gz; unzip it
    ");
}

/// rocprofv3's CSV output (its kernel table, a file per process) is named
/// with what to do instead, unless a trace of another format it wrote lies
/// beside it.
#[test]
fn rocprofv3_csv_output_is_named_unless_a_readable_trace_lies_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "csv_only/host/4242_kernel_trace.csv", b"\"Kind\",\"Agent_Id\"\n");
    write(root, "csv_only/host/4242_agent_info.csv", b"\"Node_Id\"\n");
    write(root, "both/host/4243_kernel_trace.csv", b"\"Kind\",\"Agent_Id\"\n");
    write(root, "both/host/4243_results.json", br#"{"rocprofiler-sdk-tool": []}"#);
    let found = discover(root, &Options::default()).unwrap();
    let said: Vec<String> =
        found.unsupported.iter().map(|u| format!("{}: {}", u.path.display(), u.reason)).collect();
    assert_eq!(
        said,
        [format!(
            "{}: rocprofv3 CSV output is not readable by TraceLens; re-run rocprofv3 with \
             --output-format json (or pftrace), which madengine and TraceLens read",
            root.join("csv_only/host/4242_kernel_trace.csv").display()
        )]
    );
    assert_eq!(found.count(TraceKind::RocprofJson), 1);
}

/// A reader of every rocprofv3 output reads rocpd databases too, and one
/// output of each process: its JSON, else its database, else its Perfetto
/// trace (they hold the same records).
#[test]
fn with_databases_reads_one_output_per_rocprofv3_process() {
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host");
    fs::create_dir(&host).unwrap();
    let rocprof = r#"{"rocprofiler-sdk-tool": [{"buffer_records": {}}]}"#;
    for (name, bytes) in [
        ("1_results.json", rocprof.as_bytes()),
        ("1_results.db", b"SQLite format 3\0".as_slice()),
        ("1_results.pftrace", b"\x0a\x00".as_slice()),
        ("2_results.db", b"SQLite format 3\0".as_slice()),
        ("2_results.pftrace", b"\x0a\x00".as_slice()),
        ("3_results.pftrace", b"\x0a\x00".as_slice()),
        ("notes.txt", b"".as_slice()),
    ] {
        fs::write(host.join(name), bytes).unwrap();
    }
    fs::write(dir.path().join("rank0.pt.trace.json"), r#"{"traceEvents": []}"#).unwrap();
    let found = discover(dir.path(), &Options::default()).unwrap();
    let rocpd =
        |f: &Discovery| f.unsupported.iter().filter(|u| trace_discover::is_rocpd(&u.path)).count();
    assert_eq!(rocpd(&found), 2, "{:?}", found.unsupported);
    let all = found.with_databases();
    let seen: Vec<String> =
        summary(&all).into_iter().filter(|l| !l.starts_with("unsupported")).collect();
    assert_eq!(
        seen,
        [
            "pytorch rank0.pt.trace.json by Name rank=0 (FileName, world None)",
            "rocprof_json host/1_results.json by Name",
            "rocprof_json host/2_results.db by Name",
            "pftrace host/3_results.pftrace by Name",
        ]
    );
    assert_eq!(rocpd(&all), 0);
    assert!(all.traces[2].size > 0);
}
