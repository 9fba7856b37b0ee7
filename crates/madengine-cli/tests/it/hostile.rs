//! Hostile inputs and faults (crafted files, special files, outputs that
//! are inputs or devices): bounded memory, a clear answer, nothing destroyed
//! that is not madengine's.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
};

use test_support::measured::{self, Measured};

/// `madengine args...` in `dir`, measured.
fn measured(dir: &Path, args: &[&std::ffi::OsStr]) -> Measured {
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let mut command = Command::new(crate::binary());
    command.args(args).current_dir(dir).env_remove("TRACELENS_VENV");
    measured::run(command)
}

fn os<S: AsRef<std::ffi::OsStr> + ?Sized>(s: &S) -> &std::ffi::OsStr {
    s.as_ref()
}

/// `{"traceEvents": ` and `n` brackets, gzipped (about 1 KB per MB).
fn deep_gz(path: &Path, n: usize) -> PathBuf {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(br#"{"traceEvents": "#).unwrap();
    let block = vec![b'['; 1 << 20];
    for _ in 0..n >> 20 {
        gz.write_all(&block).unwrap();
    }
    std::fs::write(path, gz.finish().unwrap()).unwrap();
    path.to_path_buf()
}

/// Millions of `[` past orjson's 1,024 levels: the document is refused
/// there, and no pass keeps a record per level of the rest (7.5 GB were
/// asked for, and the process aborted). Peak memory stays under 64 MiB.
#[test]
fn millions_of_brackets_cost_no_memory() {
    let dir = tempfile::tempdir().unwrap();
    let trace = deep_gz(&dir.path().join("deep.pt.trace.json.gz"), 24 << 20);
    assert!(std::fs::metadata(&trace).unwrap().len() < 64 << 10);
    let limit = 64 << 10; // KiB
    let check =
        measured(dir.path(), &[os("trace"), os("sanitize"), os("--check"), trace.as_os_str()]);
    assert_eq!(check.code, Some(1), "{}", check.stderr);
    assert!(
        check.stdout.contains("its JSON breaks at byte 1039: `[` 1,025 levels deep"),
        "{check:?}"
    );
    assert!(check.peak_kib < limit, "trace sanitize --check: {} KiB", check.peak_kib);
    let out = dir.path().join("out");
    let summary = measured(
        dir.path(),
        &[os("report"), os("summary"), trace.as_os_str(), os("--output-dir"), out.as_os_str()],
    );
    assert_ne!(summary.code, Some(0), "{summary:?}");
    assert!(summary.stdout.contains("`[` 1,025 levels deep"), "{summary:?}");
    assert!(summary.peak_kib < limit, "report summary: {} KiB", summary.peak_kib);
    let salvaged = dir.path().join("salvaged.json");
    let salvage = measured(
        dir.path(),
        &[
            os("trace"),
            os("sanitize"),
            os("--salvage"),
            trace.as_os_str(),
            os("-o"),
            salvaged.as_os_str(),
        ],
    );
    assert_eq!(salvage.code, Some(3), "{salvage:?}");
    assert!(salvage.stderr.contains("nothing to salvage"), "{salvage:?}");
    assert!(salvage.peak_kib < limit, "trace sanitize --salvage: {} KiB", salvage.peak_kib);
}

fn synthetic(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic/run").join(rel)
}

/// A kernel name that holds terminal escapes (a window title, a screen
/// clear) and a file name with a newline reach the terminal escaped: nothing
/// a trace names can move the cursor or forge a line.
#[test]
fn names_from_a_trace_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(synthetic("torch_profiler_output/libkineto_trace_rank0_1.json"))
            .unwrap()
            .replace(
                "Cijk_Alik_Bljk_HHS_BH_MT64x64x32",
                r"Cijk\u001b]0;pwned\u0007\u001b[2J\r\u202eevil",
            );
    let trace = dir.path().join("rank0\x1b[1A.json");
    std::fs::write(&trace, text).unwrap();
    for args in [
        vec![os("report"), os("summary"), trace.as_os_str(), os("--output-dir"), os("out")],
        vec![os("report"), os("diff"), trace.as_os_str(), trace.as_os_str()],
    ] {
        let run = measured(dir.path(), &args);
        assert_eq!(run.code, Some(0), "{run:?}");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("rank0\\u{1b}[1A.json"), "{all}");
        if args[1] == "summary" {
            assert!(all.contains("Cijk\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\r\\u{202e}evil"), "{all}");
        }
        assert!(
            !all.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{202e}'),
            "a raw control character reached the terminal: {all:?}"
        );
    }
}

/// A trace named so that its report's name would leave the output
/// directory (`...json`: `..`), land in it (`..json`: `.`) or hide (`../x.json`:
/// `.._x`): each report goes to a visible directory of its own inside it,
/// and nothing is written beside it.
#[test]
fn a_trace_name_cannot_put_its_report_outside_or_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let source = synthetic("torch_profiler_output/libkineto_trace_rank0_1.json");
    for name in ["...json", "..json"] {
        std::fs::copy(&source, runs.join(name)).unwrap();
    }
    std::fs::create_dir(dir.path().join("x")).unwrap();
    std::fs::copy(&source, dir.path().join("x/rank1.json")).unwrap();
    let args = [
        os("report"),
        os("summary"),
        os("...json"),
        os("..json"),
        os("../x/rank1.json"),
        os("-o"),
        os("../out/rep"),
    ];
    let run = measured(&runs, &args);
    assert_eq!(run.code, Some(0), "{run:?}");
    let listed = |path: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listed(&dir.path().join("out")), ["rep"], "nothing beside the output directory");
    assert_eq!(listed(&dir.path().join("out/rep")), ["trace", "trace_2", "x_rank1"]);
    for report in ["trace", "trace_2", "x_rank1"] {
        assert!(dir.path().join("out/rep").join(report).join("gpu_timeline.csv").is_file());
    }
}

/// `madengine args...` in `dir`, ended after 60 s whatever it does (a test
/// of what must not hang).
fn bounded(dir: &Path, args: &[&std::ffi::OsStr]) -> Measured {
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let mut command = Command::new("timeout");
    command.arg("60").arg(crate::binary()).args(args).current_dir(dir).env_remove("TRACELENS_VENV");
    measured::run(command)
}

fn mkfifo(path: &Path) {
    #[allow(clippy::disallowed_methods, reason = "test setup")]
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// A device or a FIFO named like a trace is never opened: reading
/// /dev/zero to find a rank never ended (24 GB, then the OOM killer), and
/// opening a FIFO waits for a writer. Discovery lists it as a problem;
/// `report summary` says what it is.
#[test]
fn devices_and_fifos_named_as_traces_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("z.pt.trace.json.gz");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let fifo = dir.path().join("rank1.pt.trace.json");
    mkfifo(&fifo);
    for path in [&zero, &fifo] {
        let run = bounded(dir.path(), &[os("trace"), os("discover"), path.as_os_str()]);
        assert_ne!(run.code, Some(124), "it hung: {run:?}");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains("not a regular file: not read"), "{all}");
        assert!(run.peak_kib < 64 << 10, "{} KiB", run.peak_kib);
    }
    let run = bounded(dir.path(), &[os("trace"), os("discover"), dir.path().as_os_str()]);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("a character device (a link to /dev/zero), not a regular file"), "{all}");
    assert!(all.contains("a FIFO (a pipe), not a regular file"), "{all}");
    for path in [&zero, &fifo] {
        let run = bounded(
            dir.path(),
            &[os("report"), os("summary"), path.as_os_str(), os("--output-dir"), os("out")],
        );
        assert_ne!(run.code, Some(124), "it hung: {run:?}");
        assert_eq!(run.code, Some(3), "{run:?}");
        assert!(run.stdout.contains("not a regular file: traces are read from files"), "{run:?}");
    }
}

/// A trace that cannot be read now (replaced by a pipe, cut short while
/// still being written) keeps the last good report of it, marked stale,
/// and `report diff` of that report says it is stale.
#[test]
fn a_read_failure_keeps_the_last_good_report() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("rank0.json");
    let good =
        std::fs::read(synthetic("torch_profiler_output/libkineto_trace_rank0_1.json")).unwrap();
    std::fs::write(&trace, &good).unwrap();
    let summary = |dir: &Path| {
        bounded(
            dir,
            &[os("report"), os("summary"), os("rank0.json"), os("--output-dir"), os("out")],
        )
    };
    assert_eq!(summary(dir.path()).code, Some(0));
    let report = dir.path().join("out/rank0");
    let csv = std::fs::read(report.join("gpu_timeline.csv")).unwrap();
    // Cut short, as by a job still writing it.
    std::fs::write(&trace, &good[..good.len() / 2]).unwrap();
    let run = summary(dir.path());
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("kept the earlier report in out/rank0, marked stale"), "{run:?}");
    assert_eq!(std::fs::read(report.join("gpu_timeline.csv")).unwrap(), csv);
    let record = std::fs::read_to_string(report.join("summary.json")).unwrap();
    assert!(
        record.contains("\"stale\": \"rank0.json could not be read by a later run"),
        "{record}"
    );
    // A pipe in its place.
    std::fs::remove_file(&trace).unwrap();
    mkfifo(&trace);
    let run = summary(dir.path());
    assert_ne!(run.code, Some(124), "it hung: {run:?}");
    assert!(run.stdout.contains("is a FIFO (a pipe), not a regular file"), "{run:?}");
    assert_eq!(std::fs::read(report.join("gpu_timeline.csv")).unwrap(), csv);
    let diff = bounded(dir.path(), &[os("report"), os("diff"), os("out/rank0"), os("out/rank0")]);
    assert!(
        diff.stderr.contains("the report in out/rank0 is stale: rank0.json could not be read"),
        "{diff:?}"
    );
    // Read again, the report is current: the mark goes.
    std::fs::remove_file(&trace).unwrap();
    std::fs::write(&trace, &good).unwrap();
    assert_eq!(summary(dir.path()).code, Some(0));
    let record = std::fs::read_to_string(report.join("summary.json")).unwrap();
    assert!(!record.contains("\"stale\""), "{record}");
}

/// Outputs that are devices, FIFOs or links are written through (a link to
/// its target), never replaced by a regular file (as root, `-o /dev/null`
/// replaced the device node); and no output may be one of the inputs.
#[test]
fn special_outputs_are_written_through_and_inputs_never_overwritten() {
    use std::io::Read as _;
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.json");
    std::fs::copy(synthetic("torch_profiler_output/libkineto_trace_rank0_1.json"), &trace).unwrap();
    let before = std::fs::read(&trace).unwrap();
    // A FIFO, with a reader on its other end.
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut text = Vec::new();
            std::fs::File::open(fifo).unwrap().read_to_end(&mut text).unwrap();
            text
        })
    };
    let run = bounded(
        dir.path(),
        &[os("trace"), os("sanitize"), trace.as_os_str(), os("-o"), fifo.as_os_str()],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(reader.join().unwrap(), before, "the copy came through the FIFO");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    // A link: its target is written, the link kept.
    let target = dir.path().join("target.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    let run = bounded(
        dir.path(),
        &[os("trace"), os("sanitize"), trace.as_os_str(), os("-o"), link.as_os_str()],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), before);
    // A device node of our own (a copy of /dev/null), where root may make one.
    let null = dir.path().join("null");
    #[allow(clippy::disallowed_methods, reason = "test setup")]
    let made = Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().unwrap();
    if made.success() {
        let run = bounded(
            dir.path(),
            &[
                os("report"),
                os("summary"),
                trace.as_os_str(),
                os("--output-dir"),
                os("o"),
                os("--html"),
                null.as_os_str(),
            ],
        );
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            std::fs::metadata(&null).unwrap().file_type().is_char_device(),
            "the device was replaced"
        );
    } else {
        test_support::skip::missing(
            "root (to make a device node, mknod)",
            "run the tests as root, as CI does",
        );
    }
    // The page onto the trace itself: refused, the trace intact.
    for args in [
        vec![
            os("report"),
            os("summary"),
            trace.as_os_str(),
            os("--output-dir"),
            os("o2"),
            os("--html"),
            trace.as_os_str(),
        ],
        vec![
            os("report"),
            os("diff"),
            trace.as_os_str(),
            trace.as_os_str(),
            os("--html"),
            trace.as_os_str(),
        ],
    ] {
        let run = bounded(dir.path(), &args);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(
            run.stderr.contains(
                "is one of this command's traces: writing the page there would destroy it"
            ),
            "{run:?}"
        );
        assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace was overwritten");
    }
}

/// `cat t | madengine report summary /dev/stdin`: a pipe is refused with
/// why, and nothing is written or retired on its account (it was reported
/// as an empty trace, and the earlier report removed).
#[test]
fn a_trace_piped_on_stdin_is_refused_and_nothing_retired() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read(synthetic("torch_profiler_output/libkineto_trace_rank0_1.json")).unwrap();
    #[allow(clippy::disallowed_methods, reason = "tests run the real binary")]
    let mut child = Command::new(crate::binary())
        .args(["report", "summary", "/dev/stdin", "--output-dir", "out"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // It may end before reading: a broken pipe here is fine.
    let _ = stdin.write_all(&good);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("not a regular file: traces are read from files"), "{stdout}");
    assert!(!stdout.contains("empty"), "{stdout}");
    assert!(!dir.path().join("out").exists(), "something was written");
}

/// A trace of many small events takes about three times its size to read,
/// not the 0.75 a profiler's trace takes: the memory `report summary` plans
/// its parallel reads with sees that (it counts the events of the first
/// MiB), and what the read really takes stays within it.
#[test]
fn the_memory_planned_for_small_events_is_what_they_take() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("tiny.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&trace).unwrap());
    out.write_all(b"{\"traceEvents\":[").unwrap();
    for i in 0..300_000u64 {
        let sep = if i == 0 { "" } else { "," };
        write!(
            out,
            r#"{sep}{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":1,"args":{{"correlation":{i}}}}}"#,
            i * 2
        )
        .unwrap();
    }
    out.write_all(b"]}").unwrap();
    out.into_inner().unwrap().sync_all().unwrap();
    let size = std::fs::metadata(&trace).unwrap().len();
    let planned = trace_summary::memory_needed(&trace, size);
    assert!(planned > size * 5 / 2, "planned {planned} for {size} bytes");
    let run = measured(
        dir.path(),
        &[os("report"), os("summary"), trace.as_os_str(), os("--output-dir"), os("out")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.peak_kib << 10 <= planned,
        "took {} KiB, planned {} KiB",
        run.peak_kib,
        planned >> 10
    );
}

/// Two traces whose reports would take one name (`.../run/rank0.json` of
/// two jobs, given by absolute path, name theirs `run_rank0`) keep apart:
/// the second gets a name of its own, the first's report stays. And a
/// report written into the output directory after this run started (by
/// another run at the same time) is not retired as stale, though its trace
/// is gone.
#[test]
fn reports_of_other_traces_and_other_runs_are_never_overwritten_or_retired() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read(synthetic("torch_profiler_output/libkineto_trace_rank0_1.json")).unwrap();
    let a = dir.path().join("a/run/rank0.json");
    let b = dir.path().join("b/run/rank0.json");
    for trace in [&a, &b] {
        std::fs::create_dir_all(trace.parent().unwrap()).unwrap();
        std::fs::write(trace, &good).unwrap();
    }
    let summary = |trace: &Path| {
        bounded(
            dir.path(),
            &[os("report"), os("summary"), trace.as_os_str(), os("--output-dir"), os("out")],
        )
    };
    assert_eq!(summary(&a).code, Some(0));
    assert_eq!(summary(&b).code, Some(0));
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "run_rank0");
    assert!(names[1].starts_with("run_rank0-"), "{names:?}");
    let record = |name: &str| {
        std::fs::read_to_string(dir.path().join("out").join(name).join("summary.json")).unwrap()
    };
    assert!(record(&names[0]).contains(&a.display().to_string()), "{}", record(&names[0]));
    assert!(record(&names[1]).contains(&b.display().to_string()), "{}", record(&names[1]));

    // A report of a trace gone, under a searched directory: retired...
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("rank0.json"), &good).unwrap();
    std::fs::write(run.join("rank1.json"), &good).unwrap();
    let searched = || {
        bounded(
            dir.path(),
            &[os("report"), os("summary"), run.as_os_str(), os("--output-dir"), os("runs")],
        )
    };
    assert_eq!(searched().code, Some(0));
    std::fs::remove_file(run.join("rank1.json")).unwrap();
    // ...unless it was written after this run started (another run's): its
    // record dated in the future stands for that.
    let other = dir.path().join("runs/rank1/summary.json");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&other).unwrap().set_modified(later).unwrap();
    let run_again = searched();
    assert_eq!(run_again.code, Some(0), "{run_again:?}");
    assert!(other.is_file(), "another run's report was retired: {run_again:?}");
    // Dated now, it goes, and the run says so.
    std::fs::File::options()
        .write(true)
        .open(&other)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60))
        .unwrap();
    let run_again = searched();
    assert!(!other.exists(), "{run_again:?}");
    assert!(run_again.stderr.contains("removed the earlier report"), "{run_again:?}");
}
