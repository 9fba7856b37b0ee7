//! `cargo xtask bench`: each benchmark against a named baseline, in the same
//! run, on the same data; medians of `--runs` runs; one table of ratios.

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    time::Instant,
};

use crate::cmd::{cargo, cmd};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Which {
    Sanitize,
    Discover,
    Summary,
    Collective,
    Gzip,
    All,
}

struct Row {
    bench: &'static str,
    subject: String,
    timing: Timing,
    baseline: Option<usize>,
}

/// A command's median wall time and largest peak RSS over the runs.
#[derive(Clone, Copy)]
struct Timing {
    seconds: f64,
    peak_kib: u64,
}

impl Timing {
    /// Figures recorded elsewhere (TraceLens on this machine kind).
    fn recorded(seconds: f64, peak_mib: f64) -> Timing {
        Timing { seconds, peak_kib: (peak_mib * 1024.0) as u64 }
    }
}

/// The table being filled, and how many times each command runs.
struct Bench {
    rows: Vec<Row>,
    runs: usize,
}

impl Bench {
    /// Adds a row; returns its index, for the rows that take it as baseline.
    fn row(
        &mut self,
        bench: &'static str,
        subject: impl Into<String>,
        timing: Timing,
        baseline: Option<usize>,
    ) -> usize {
        self.rows.push(Row { bench, subject: subject.into(), timing, baseline });
        self.rows.len() - 1
    }

    /// Times `argv` ([`Bench::measure`]) into a row.
    fn time(
        &mut self,
        bench: &'static str,
        subject: impl Into<String>,
        argv: &[String],
        cleanup: &Path,
        baseline: Option<usize>,
    ) -> Result<usize, String> {
        let timing = self.measure(argv, cleanup)?;
        Ok(self.row(bench, subject, timing, baseline))
    }

    /// Median wall time and the largest peak RSS over the runs, `cleanup`
    /// removed before each. `sync` runs before each so no run pays for
    /// another's dirty pages.
    fn measure(&self, argv: &[String], cleanup: &Path) -> Result<Timing, String> {
        let mut times = Vec::new();
        let mut peak = 0;
        for _ in 0..self.runs.max(1) {
            let _ = fs::remove_file(cleanup);
            let _ = fs::remove_dir_all(cleanup);
            let _ = cmd("sync", Vec::<String>::new()).run();
            let mut full = vec!["-f".to_string(), "%M".to_string(), "--".to_string()];
            full.extend(argv.iter().cloned());
            let start = Instant::now();
            let out = cmd("/usr/bin/time", full)
                .stdout_null()
                .stderr_capture()
                .unchecked()
                .run()
                .map_err(|e| format!("{}: {e}", argv[0]))?;
            let elapsed = start.elapsed().as_secs_f64();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                return Err(format!("`{}` failed: {stderr}", argv.join(" ")));
            }
            let kib: u64 = stderr.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
            peak = peak.max(kib);
            times.push(elapsed);
        }
        times.sort_by(f64::total_cmp);
        Ok(Timing { seconds: times[times.len() / 2], peak_kib: peak })
    }
}

/// A command line of paths and words, as the strings [`Bench::measure`] runs.
macro_rules! argv {
    ($($part:expr),* $(,)?) => {
        [$(Path::new(&$part).display().to_string()),*]
    };
}

const PYTHON_DECODER_COPY: &str = r#"
import codecs, sys
dec = codecs.getincrementaldecoder("utf-8")("replace")
with open(sys.argv[1], "rb") as src, open(sys.argv[2], "wb") as dst:
    while True:
        chunk = src.read(1 << 20)
        if not chunk:
            dst.write(dec.decode(b"", final=True).encode("utf-8"))
            break
        dst.write(dec.decode(chunk).encode("utf-8"))
"#;

/// The original's discovery: one recursive glob per pattern, then the sniff walk.
const PYTHON_GLOB_DISCOVERY: &str = r#"
import glob, os, sys
root = sys.argv[1]
patterns = ["**/*.pt.trace.json", "**/*.pt.trace.json.gz", "**/libkineto_trace*.json",
            "**/libkineto_trace*.json.gz", "**/torch_profiler_output/*.json",
            "**/torch_profiler_output/*.json.gz", "**/*_results.json", "**/*.pftrace",
            "**/*_results.db", "**/*.rpd", "**/*.pb"]
found = set()
for p in patterns:
    for m in glob.glob(os.path.join(root, p), recursive=True):
        if os.path.isfile(m):
            found.add(m)
skip = {".git", "__pycache__", "node_modules", "site-packages", "venv", ".venv"}
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if x not in skip]
    for f in files:
        if f in ("trace.json", "trace.json.gz"):
            with open(os.path.join(d, f), "rb") as fh:
                if b'"traceEvents"' in fh.read(4096):
                    found.add(os.path.join(d, f))
print(len(found))
"#;

pub(crate) fn run(
    root: &Path,
    which: Which,
    size_mb: u64,
    files: usize,
    runs: usize,
) -> Result<(), String> {
    if !Path::new("/usr/bin/time").is_file() {
        return Err(
            "the benchmarks measure peak memory with /usr/bin/time: apt-get install time".into()
        );
    }
    eprintln!("building madengine (release)...");
    cmd(cargo(), ["build", "--release", "--quiet", "-p", "madengine-cli"])
        .dir(root)
        .run()
        .map_err(|e| format!("cargo build --release failed: {e}"))?;
    let madengine = root.join("target/release/madengine");
    let scratch = tempdir(root)?;
    let mut b = Bench { rows: Vec::new(), runs };
    if matches!(which, Which::Sanitize | Which::All) {
        sanitize(&mut b, root, &scratch, &madengine, size_mb)?;
    }
    if matches!(which, Which::Discover | Which::All) {
        discover(&mut b, &scratch, &madengine, files)?;
    }
    if matches!(which, Which::Summary | Which::All) {
        summary(&mut b, root, &scratch)?;
        summary_ranks(&mut b, root, &scratch, &madengine)?;
        summary_rocprof(&mut b, root, &scratch, &madengine)?;
    }
    if matches!(which, Which::Collective | Which::All) {
        collective(&mut b, root, &scratch, &madengine)?;
    }
    if matches!(which, Which::Gzip | Which::All) {
        gzip(&mut b, root, &scratch, &madengine)?;
    }
    let _ = fs::remove_dir_all(&scratch);
    print!("{}", table(&b.rows));
    Ok(())
}

/// The real Kineto trace the large ones are tiled from.
const KINETO_SOURCE: &str =
    "fixtures/public/kineto/hta/negative_queue_length_values_check/rank0.json.gz";

/// A file of `../shared/` (the bench generators, the public traces), or
/// which one is missing.
fn shared(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let path = root.join("../shared").join(rel);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("the benchmarks need {}, which is missing", path.display()))
    }
}

fn tempdir(root: &Path) -> Result<PathBuf, String> {
    let dir = root.join("target/bench-scratch");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn sanitize(
    b: &mut Bench,
    root: &Path,
    scratch: &Path,
    madengine: &Path,
    size_mb: u64,
) -> Result<(), String> {
    let generator = shared(root, "bench/gen_rocprof_trace.py")?;
    let input = scratch.join("big_results.json");
    eprintln!("generating a {size_mb} MB rocprofv3-style trace with 12 invalid spots...");
    cmd(
        "python3",
        [generator.as_os_str(), input.as_os_str(), size_mb.to_string().as_ref(), "12".as_ref()],
    )
    .run()
    .map_err(|e| format!("the trace generator failed: {e}"))?;
    let out = scratch.join("out.json");
    let (i, o) = (input.display().to_string(), out.display().to_string());
    // cat is madengine's baseline; madengine is Python's (so that row reads
    // "how many times madengine's time Python takes").
    let bench = "sanitize";
    let cat = argv!["sh", "-c", format!("cat '{i}' > '{o}'")];
    let cat = b.time(bench, "cat in > out (I/O floor)", &cat, &out, None)?;
    let ours = argv![madengine, "trace", "sanitize", input, "-o", out];
    let ours = b.time(bench, "madengine trace sanitize", &ours, &out, Some(cat))?;
    let python = argv!["python3", "-c", PYTHON_DECODER_COPY, input, out];
    b.time(bench, "python incremental decoder copy", &python, &out, Some(ours))?;
    // The same trace cut at 90% (a job killed while writing it): --salvage,
    // and --check (which finds the cut too), against a plain sanitize of the
    // same cut file.
    let cut = scratch.join("cut_results.json");
    fs::copy(&input, &cut).map_err(|e| format!("{}: {e}", cut.display()))?;
    let len = fs::metadata(&cut).map_err(|e| format!("{}: {e}", cut.display()))?.len();
    fs::OpenOptions::new()
        .write(true)
        .open(&cut)
        .and_then(|f| f.set_len(len / 10 * 9))
        .map_err(|e| format!("{}: {e}", cut.display()))?;
    let _ = fs::remove_file(&input);
    let mut first = None;
    for (name, flag) in [
        ("madengine trace sanitize, the trace cut at 90%", None),
        ("madengine trace sanitize --salvage, the same cut trace", Some("--salvage")),
        ("madengine trace sanitize --check, the same cut trace", Some("--check")),
    ] {
        let mut argv = argv![madengine, "trace", "sanitize"].to_vec();
        argv.extend(flag.map(String::from));
        argv.push(cut.display().to_string());
        if flag != Some("--check") {
            argv.extend(["-o".into(), o.clone()]);
        }
        if flag != Some("--salvage") {
            // Both must say the trace is cut (a plain sanitize from its last
            // byte): exit 1, which `measure` would call a failure.
            let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
            let line = format!("{}; test $? -eq 1", quoted.join(" "));
            argv = vec!["sh".into(), "-c".into(), line];
        }
        let row = b.time(bench, name, &argv, &out, first)?;
        first = first.or(Some(row));
    }
    let _ = fs::remove_file(&cut);
    Ok(())
}

/// The gzip decoders the workspace can use, on the 302.6 MB Kineto bench
/// trace gzipped (`gzip -6`): madengine's reader (`trace_sanitize::Gunzip`,
/// the `gunzip` example; flate2 with the zlib-rs backend the workspace
/// turns on, docs/benchmarks.md says why), against
/// `gzip -dc` and, where installed, `pigz -dc`; then `trace sanitize
/// --check` of the `.json.gz` against the same of the `.json` (what reading
/// through the decoder adds to a pass).
fn gzip(b: &mut Bench, root: &Path, scratch: &Path, madengine: &Path) -> Result<(), String> {
    let generator = shared(root, "bench/make_big_kineto.py")?;
    let source = shared(root, KINETO_SOURCE)?;
    let trace = scratch.join("gz_kineto.json");
    eprintln!("generating a ~300 MB Kineto trace, and gzipping it...");
    cmd("python3", [generator.as_os_str(), source.as_os_str(), trace.as_os_str(), "300".as_ref()])
        .stdout_null()
        .run()
        .map_err(|e| format!("make_big_kineto.py failed: {e}"))?;
    let gz = scratch.join("gz_kineto.json.gz");
    cmd(
        "gzip",
        ["-6", "-k", "-f"].map(std::ffi::OsString::from).into_iter().chain([trace.clone().into()]),
    )
    .run()
    .map_err(|e| format!("gzip failed: {e}"))?;
    let (size, packed) = (file_len(&trace), file_len(&gz));
    eprintln!("building the gunzip example (release)...");
    cmd(cargo(), ["build", "--release", "--quiet", "-p", "trace-sanitize", "--example", "gunzip"])
        .dir(root)
        .run()
        .map_err(|e| format!("cargo build failed: {e}"))?;
    let gunzip = root.join("target/release/examples/gunzip");
    let bench = "gzip";
    let out = scratch.join("gunzipped.json");
    let to_out = |argv: &[&dyn AsRef<std::ffi::OsStr>]| {
        let quoted: Vec<String> =
            argv.iter().map(|a| format!("'{}'", Path::new(a.as_ref()).display())).collect();
        // To /dev/null: the decoder's speed, not the page cache's.
        argv!["sh", "-c", format!("{} > /dev/null", quoted.join(" "))]
    };
    let what = format!("({:.0} MB .json.gz of {:.0} MB)", packed as f64 / 1e6, size as f64 / 1e6);
    let gzip_dc =
        b.time(bench, format!("gzip -dc {what}"), &to_out(&[&"gzip", &"-dc", &gz]), &out, None)?;
    let mut fastest = (gzip_dc, b.rows[gzip_dc].timing.seconds);
    if cmd("pigz", ["--version"]).stdout_null().stderr_null().run().is_ok() {
        let pigz =
            b.time(bench, "pigz -dc", &to_out(&[&"pigz", &"-dc", &gz]), &out, Some(gzip_dc))?;
        if b.rows[pigz].timing.seconds < fastest.1 {
            fastest = (pigz, b.rows[pigz].timing.seconds);
        }
    } else {
        eprintln!("pigz is not installed: no pigz row (apt-get install pigz)");
    }
    let fastest = fastest.0;
    let subject = "madengine's reader (flate2, zlib-rs backend)";
    b.time(bench, subject, &to_out(&[&gunzip, &gz]), &out, Some(fastest))?;
    let _ = fs::remove_file(&out);
    // What the decoder adds to a pass over the trace (exit 0: a clean trace).
    let check = |path: &Path| argv![madengine, "trace", "sanitize", "--check", path];
    let plain = b.time(bench, "trace sanitize --check, the .json", &check(&trace), &out, None)?;
    b.time(bench, "trace sanitize --check, the .json.gz", &check(&gz), &out, Some(plain))?;
    let _ = fs::remove_file(&trace);
    let _ = fs::remove_file(&gz);
    Ok(())
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// TraceLens itself cannot run on these machines; its figures on the same
/// 302.6 MB trace were measured on this machine kind and recorded in
/// shared/fixtures/public/tracelens-expected/README.md (the named baseline).
const TRACELENS_SECONDS: f64 = 73.7;
const TRACELENS_PEAK_MIB: f64 = 4937.0;

fn summary(b: &mut Bench, root: &Path, scratch: &Path) -> Result<(), String> {
    let generator = shared(root, "bench/make_big_kineto.py")?;
    let source = shared(root, KINETO_SOURCE)?;
    eprintln!("building the trace-summary example (release)...");
    cmd(
        cargo(),
        ["build", "--release", "--quiet", "-p", "trace-summary", "--example", "summarize"],
    )
    .dir(root)
    .run()
    .map_err(|e| format!("cargo build failed: {e}"))?;
    let trace = scratch.join("big_kineto.json");
    eprintln!("generating a ~300 MB Kineto trace...");
    cmd("python3", [generator.as_os_str(), source.as_os_str(), trace.as_os_str(), "300".as_ref()])
        .stdout_null()
        .run()
        .map_err(|e| format!("make_big_kineto.py failed: {e}"))?;
    let size = fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);
    let example = root.join("target/release/examples/summarize");
    let unused = scratch.join("unused");
    let parse = b.measure(&argv![example, "--parse-only", trace], &unused)?;
    let core = b.measure(&argv![example, "--core", trace], &unused)?;
    let full = b.measure(&argv![example, trace], &unused)?;
    let mb_s = |t: Timing| size as f64 / t.seconds / 1e6;
    let bench = "summary";
    let recorded = Timing::recorded(TRACELENS_SECONDS, TRACELENS_PEAK_MIB);
    let tracelens =
        b.row(bench, "TraceLens perf report (recorded on this machine kind)", recorded, None);
    let subject = format!("trace-summary, the core tables ({:.0} MB/s end to end)", mb_s(core));
    let core = b.row(bench, subject, core, Some(tracelens));
    let subject = format!("trace-summary, every table ({:.0} MB/s end to end)", mb_s(full));
    b.row(bench, subject.clone(), full, Some(tracelens));
    b.row(bench, format!("{subject}, against the core tables"), full, Some(core));
    let subject = format!(
        "trace-summary, parse alone ({:.0} MB/s: gunzip/sanitize/scan/deserialize)",
        mb_s(parse)
    );
    b.row(bench, subject, parse, Some(tracelens));
    let _ = fs::remove_file(&trace);
    Ok(())
}

/// TraceLens' rocprof report on the public rocprofv3 trace (908_results,
/// 37 MB), as recorded in shared/fixtures/public/tracelens-expected/README.md
/// on this machine kind (the named baseline).
const TRACELENS_ROCPROF_SECONDS: f64 = 1.34;
const TRACELENS_ROCPROF_PEAK_MIB: f64 = 308.0;

/// The public rocprofv3 trace with its kernel dispatches repeated `copies`
/// times, each copy later by the span of the first, and the session's
/// `fini_time` moved to cover them: a large trace with real kernel names,
/// agents and dispatch records.
const PYTHON_ROCPROF_TILER: &str = r#"
import gzip, json, sys
src, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
with gzip.open(src, "rb") as f:
    doc = json.load(f)
tool = doc["rocprofiler-sdk-tool"][0]
records = tool["buffer_records"]["kernel_dispatch"]
first = min(r["start_timestamp"] for r in records)
span = max(r["end_timestamp"] for r in records) - first + 1000
tiled = []
for k in range(copies):
    for r in records:
        r = dict(r, start_timestamp=r["start_timestamp"] + k * span,
                 end_timestamp=r["end_timestamp"] + k * span)
        r["correlation_id"] = dict(r["correlation_id"], internal=r["correlation_id"]["internal"] + k * 10**8)
        tiled.append(r)
tool["buffer_records"]["kernel_dispatch"] = tiled
meta = tool["metadata"]
meta["fini_time"] = max(meta["fini_time"], first + copies * span)
with open(out, "w") as f:
    json.dump(doc, f)
"#;

/// `report summary` on rocprofv3 traces: the public one against TraceLens'
/// recorded run on it, and the same tiled to ~300 MB (its baseline: a
/// `trace sanitize --check` of that file, one pass through the JSON).
fn summary_rocprof(
    b: &mut Bench,
    root: &Path,
    scratch: &Path,
    madengine: &Path,
) -> Result<(), String> {
    let source = shared(root, "fixtures/public/rocprofv3/tracelens/908_results.json.gz")?;
    let out = scratch.join("rocprof-summary");
    let summary = |trace: &Path| argv![madengine, "report", "summary", trace, "--output-dir", out];
    let ours = b.measure(&summary(&source), &out)?;
    let bench = "summary-rocprof";
    let recorded = Timing::recorded(TRACELENS_ROCPROF_SECONDS, TRACELENS_ROCPROF_PEAK_MIB);
    let subject = "TraceLens rocprof report, 908_results (recorded on this machine kind)";
    let tracelens = b.row(bench, subject, recorded, None);
    let subject = "report summary, 908_results (1.6 MB .json.gz, 37 MB JSON)";
    b.row(bench, subject, ours, Some(tracelens));
    let tiled = scratch.join("big_results.json");
    eprintln!("generating a ~300 MB rocprofv3 trace from 908_results...");
    cmd(
        "python3",
        [
            "-c".as_ref(),
            PYTHON_ROCPROF_TILER.as_ref(),
            source.as_os_str(),
            tiled.as_os_str(),
            "13".as_ref(),
        ],
    )
    .run()
    .map_err(|e| format!("tiling 908_results failed: {e}"))?;
    let size = fs::metadata(&tiled).map(|m| m.len()).unwrap_or(0);
    let check = b.measure(&argv![madengine, "trace", "sanitize", "--check", tiled], &out)?;
    let ours = b.measure(&summary(&tiled), &out)?;
    let subject =
        format!("trace sanitize --check, 908_results tiled to {:.0} MB", size as f64 / 1e6);
    let check = b.row(bench, subject, check, None);
    let subject = format!(
        "report summary, the same ({:.0} MB/s end to end)",
        size as f64 / ours.seconds / 1e6
    );
    let json = b.row(bench, subject, ours, Some(check));
    // The same records as rocprofv3's rocpd database: read as fast, to the
    // same tables.
    let db = scratch.join("big_results.db");
    eprintln!("writing the same records as a rocpd database and a Perfetto trace...");
    let records = Tiled::read(&source, 13)?;
    records.rocpd(&db)?;
    let pftrace = scratch.join("big_results.pftrace");
    records.pftrace(&pftrace)?;
    drop(records);
    let db_size = fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    let subject = format!(
        "report summary, the same as a rocpd database ({:.0} MB SQLite)",
        db_size as f64 / 1e6
    );
    let of_db = b.time(bench, subject, &summary(&db), &out, Some(json))?;
    // The database written back out as rocprofv3 JSON (`trace convert`,
    // what `report tracelens` does for TraceLens), against reading it.
    let converted = scratch.join("converted_results.json");
    let convert = argv![madengine, "trace", "convert", db, "-o", converted, "--force"];
    let conv = b.measure(&convert, &out)?;
    let conv_size = fs::metadata(&converted).map(|m| m.len()).unwrap_or(0);
    let subject = format!(
        "trace convert, the rocpd database to rocprofv3 JSON ({:.0} MB, {:.1}x the database)",
        conv_size as f64 / 1e6,
        conv_size as f64 / db_size.max(1) as f64
    );
    b.row(bench, subject, conv, Some(of_db));
    let pf_size = fs::metadata(&pftrace).map(|m| m.len()).unwrap_or(0);
    let subject = format!(
        "report summary, the same as a Perfetto trace ({:.0} MB pftrace)",
        pf_size as f64 / 1e6
    );
    b.time(bench, subject, &summary(&pftrace), &out, Some(json))?;
    let csvs = |trace: &Path| -> Result<Vec<String>, String> {
        let _ = fs::remove_dir_all(&out);
        cmd(madengine, summary(trace).into_iter().skip(1).collect::<Vec<_>>())
            .stdout_null()
            .run()
            .map_err(|e| format!("report summary {}: {e}", trace.display()))?;
        let dir = fs::read_dir(&out)
            .map_err(|e| format!("{}: {e}", out.display()))?
            .flatten()
            .next()
            .ok_or("report summary wrote no CSV directory")?
            .path();
        ["gpu_timeline.csv", "kernel_summary.csv"]
            .iter()
            .map(|f| fs::read_to_string(dir.join(f)).map_err(|e| format!("{f}: {e}")))
            .collect()
    };
    let of_json = csvs(&tiled)?;
    if csvs(&db)? != of_json {
        return Err("the rocpd database's tables differ from its JSON's".into());
    }
    if csvs(&pftrace)? != of_json {
        return Err("the Perfetto trace's tables differ from its JSON's".into());
    }
    if csvs(&converted)? != of_json {
        return Err(
            "the rocpd database's JSON (trace convert) has tables other than its JSON's".into()
        );
    }
    let _ = fs::remove_file(&converted);
    let _ = fs::remove_file(&tiled);
    let _ = fs::remove_file(&db);
    let _ = fs::remove_file(&pftrace);
    let _ = fs::remove_dir_all(&out);
    Ok(())
}

/// A kernel symbol of the public trace.
struct Symbol {
    id: u64,
    mangled: String,
    /// As rocprofv3's rocpd database displays it (its formatted name).
    display: String,
    /// As rocprofv3's Perfetto trace names its slices.
    demangled: String,
    /// Its JSON record, which rocprofv3 keeps as the database's `extdata`.
    extdata: String,
}

/// The public rocprofv3 trace's kernel dispatches, tiled `copies` times as
/// [`PYTHON_ROCPROF_TILER`] tiles them, with its memory copies (not tiled),
/// to be written as rocprofv3's other outputs.
pub(crate) struct Tiled {
    init: u64,
    fini: u64,
    symbols: Vec<Symbol>,
    /// (kernel id, start, end).
    kernels: Vec<(u64, u64, u64)>,
    copies: Vec<(u64, u64)>,
}

impl Tiled {
    pub(crate) fn read(source: &Path, copies: u64) -> Result<Tiled, String> {
        use serde_json::Value;
        let file = fs::File::open(source).map_err(|e| format!("{}: {e}", source.display()))?;
        let doc: Value = serde_json::from_reader(std::io::BufReader::new(
            flate2::read::MultiGzDecoder::new(file),
        ))
        .map_err(|e| format!("{}: {e}", source.display()))?;
        let tool = &doc["rocprofiler-sdk-tool"][0];
        let records =
            tool["buffer_records"]["kernel_dispatch"].as_array().ok_or("no dispatches")?;
        let time = |r: &Value, k: &str| r[k].as_u64().unwrap_or(0);
        let first = records.iter().map(|r| time(r, "start_timestamp")).min().unwrap_or(0);
        let last = records.iter().map(|r| time(r, "end_timestamp")).max().unwrap_or(0);
        let span = last - first + 1000;
        let meta = &tool["metadata"];
        let symbols = tool["kernel_symbols"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let name = ["truncated_kernel_name", "formatted_kernel_name", "kernel_name"]
                    .iter()
                    .filter_map(|k| s[*k].as_str())
                    .find(|n| !n.is_empty())
                    .unwrap_or("");
                let mangled = s["kernel_name"].as_str().unwrap_or("");
                let formatted = s["formatted_kernel_name"].as_str().filter(|n| !n.is_empty());
                Symbol {
                    id: time(s, "kernel_id"),
                    mangled: mangled.to_string(),
                    display: formatted.unwrap_or(name).to_string(),
                    demangled: s["demangled_kernel_name"].as_str().unwrap_or(name).to_string(),
                    extdata: s.to_string(),
                }
            })
            .collect();
        let kernels = (0..copies)
            .flat_map(|k| {
                records.iter().map(move |r| {
                    let kernel = r["dispatch_info"]["kernel_id"].as_u64().unwrap_or(0);
                    (
                        kernel,
                        time(r, "start_timestamp") + k * span,
                        time(r, "end_timestamp") + k * span,
                    )
                })
            })
            .collect();
        let copies_read = tool["buffer_records"]["memory_copy"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (time(c, "start_timestamp"), time(c, "end_timestamp")))
            .collect();
        Ok(Tiled {
            init: time(meta, "init_time"),
            fini: time(meta, "fini_time").max(first + copies * span),
            symbols,
            kernels,
            copies: copies_read,
        })
    }

    /// Written as a rocpd database (the synthetic fixture's schema) at `db`.
    pub(crate) fn rocpd(&self, db: &Path) -> Result<(), String> {
        let sql = |e: rusqlite::Error| format!("{}: {e}", db.display());
        let _ = fs::remove_file(db);
        let mut conn = rusqlite::Connection::open(db).map_err(sql)?;
        conn.execute_batch(crate::fixtures::ROCPD_SCHEMA).map_err(sql)?;
        let tx = conn.transaction().map_err(sql)?;
        tx.execute(
            "INSERT INTO rocpd_info_process_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (1, 1, ?1, ?2, ?1, ?2, '')",
            (self.init as i64, self.fini as i64),
        )
        .map_err(sql)?;
        for s in &self.symbols {
            tx.execute(
                "INSERT INTO rocpd_info_kernel_symbol_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 VALUES (?1, ?2, ?3, ?4)",
                (s.id as i64, &s.mangled, &s.display, &s.extdata),
            )
            .map_err(sql)?;
        }
        {
            let mut insert = tx
                .prepare("INSERT INTO rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (agent_id, kernel_id, start, \"end\") VALUES (2, ?1, ?2, ?3)")
                .map_err(sql)?;
            for &(kernel, start, end) in &self.kernels {
                insert.execute((kernel as i64, start as i64, end as i64)).map_err(sql)?;
            }
        }
        for &(start, end) in &self.copies {
            tx.execute(
                "INSERT INTO rocpd_memory_copy_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 (src_agent_id, dst_agent_id, size, start, \"end\") \
                 VALUES (1, 2, 0, ?1, ?2)",
                (start as i64, end as i64),
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// Written as rocprofv3's Perfetto trace at `path`: one sequence, every
    /// string interned up front, a slice (begin and end packets) per record
    /// with the debug annotations rocprofv3's writer gives its kind (a
    /// kernel's 13: `begin_ns`, `end_ns`, `delta_ns`, `kind`, `agent` as a
    /// string, `corr_id`, `queue`, `tid`, `kernel_id`, the segment sizes,
    /// `workgroup_size`, `grid_size`) and its flow id, and two HIP calls at
    /// the process's start and end (a Perfetto trace's total is its slices'
    /// span).
    pub(crate) fn pftrace(&self, path: &Path) -> Result<(), String> {
        use crate::fixtures::Pb;
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut out = std::io::BufWriter::new(fs::File::create(path).map_err(io)?);
        let mut names: Vec<(u64, &str)> =
            self.symbols.iter().map(|s| (s.id + 10, s.demangled.as_str())).collect();
        names.extend([(1, "hipInit"), (2, "hipDeviceSynchronize"), (3, "MEMORY_COPY")]);
        let interned = Pb::default()
            .interned(1, &[(1, "hip_api"), (2, "kernel_dispatch"), (3, "memory_copy")])
            .interned(2, &names)
            .interned(3, &ANNOTATIONS.map(|(iid, name, _)| (iid, name)));
        let head = Pb::default().uint(10, 1).uint(13, 3).msg(12, interned);
        let write = |out: &mut std::io::BufWriter<fs::File>, packet: Pb| {
            std::io::Write::write_all(out, &Pb::default().msg(1, packet).0)
        };
        write(&mut out, head).map_err(io)?;
        let slice = |out: &mut std::io::BufWriter<fs::File>,
                     [category, name, begin, end]: [u64; 4]| {
            let mut event =
                Pb::default().uint(9, 1).uint(11, category).uint(3, category).uint(10, name);
            for (iid, _, kernels_only) in ANNOTATIONS {
                if kernels_only && category != 2 {
                    continue;
                }
                let annotation = Pb::default().uint(1, iid);
                let annotation = match iid {
                    1 => annotation.uint(3, begin),
                    2 => annotation.uint(3, end),
                    3 => annotation.uint(3, end - begin),
                    5 => annotation.bytes(6, b"Agent-2"),
                    _ => annotation.uint(3, begin % 4096),
                };
                event = event.msg(4, annotation);
            }
            prost::encoding::fixed64::encode(47, &begin, &mut event.0);
            write(out, Pb::default().uint(10, 1).uint(8, begin).msg(11, event))?;
            let end_event = Pb::default().uint(9, 2).uint(11, category);
            write(out, Pb::default().uint(10, 1).uint(8, end).msg(11, end_event))
        };
        slice(&mut out, [1, 1, self.init, self.init + 1]).map_err(io)?;
        for &(kernel, start, end) in &self.kernels {
            slice(&mut out, [2, kernel + 10, start, end]).map_err(io)?;
        }
        for &(start, end) in &self.copies {
            slice(&mut out, [3, 3, start, end]).map_err(io)?;
        }
        slice(&mut out, [1, 2, self.fini - 1, self.fini]).map_err(io)?;
        std::io::Write::flush(&mut out).map_err(io)
    }
}

/// The debug annotations rocprofv3 writes on its slices: interned id,
/// name, and whether only kernels carry it.
const ANNOTATIONS: [(u64, &str, bool); 13] = [
    (1, "begin_ns", false),
    (2, "end_ns", false),
    (3, "delta_ns", false),
    (4, "kind", false),
    (5, "agent", true),
    (6, "corr_id", false),
    (7, "queue", true),
    (8, "tid", false),
    (9, "kernel_id", true),
    (10, "private_segment_size", true),
    (11, "group_segment_size", true),
    (12, "workgroup_size", true),
    (13, "grid_size", true),
];

/// `report summary` over 4 rank traces of ~90 MB: one trace at a time
/// (`--jobs 1`, the baseline) against the default, one per CPU.
fn summary_ranks(
    b: &mut Bench,
    root: &Path,
    scratch: &Path,
    madengine: &Path,
) -> Result<(), String> {
    let generator = shared(root, "bench/make_big_kineto.py")?;
    let source = shared(root, KINETO_SOURCE)?;
    let run = scratch.join("ranks");
    fs::create_dir_all(&run).map_err(|e| format!("{}: {e}", run.display()))?;
    let first_trace = run.join("rank0.pt.trace.json");
    eprintln!("generating 4 rank traces of ~90 MB...");
    cmd(
        "python3",
        [generator.as_os_str(), source.as_os_str(), first_trace.as_os_str(), "75".as_ref()],
    )
    .stdout_null()
    .run()
    .map_err(|e| format!("make_big_kineto.py failed: {e}"))?;
    for rank in 1..4 {
        let copy = run.join(format!("rank{rank}.pt.trace.json"));
        fs::copy(&first_trace, &copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    }
    let size: u64 = (0..4)
        .filter_map(|r| fs::metadata(run.join(format!("rank{r}.pt.trace.json"))).ok())
        .map(|m| m.len())
        .sum();
    let out = scratch.join("ranks-summary");
    let summary = argv![madengine, "report", "summary", run, "--output-dir", out];
    let serial = [&summary[..], &argv!["--jobs", "1"]].concat();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let subject = format!("report summary, 4 traces ({:.0} MB), --jobs 1", size as f64 / 1e6);
    let serial = b.time("summary", subject, &serial, &out, None)?;
    let subject = format!("report summary, 4 traces, default --jobs ({})", cores.min(4));
    b.time("summary", subject, &summary, &out, Some(serial))?;
    diff_runs(b, &run, scratch, madengine)?;
    let _ = fs::remove_dir_all(&run);
    let _ = fs::remove_dir_all(&out);
    Ok(())
}

/// `report diff` of two 4-rank runs (the second hard-links the first's
/// traces: `report summary` reads a file named twice once, and a symbolic
/// link is that file) against `report summary` of both: what a user would
/// run to compare them by hand. Both read the 8 traces.
fn diff_runs(b: &mut Bench, run: &Path, scratch: &Path, madengine: &Path) -> Result<(), String> {
    let other = scratch.join("ranks-new");
    fs::create_dir_all(&other).map_err(|e| format!("{}: {e}", other.display()))?;
    for rank in 0..4 {
        let name = format!("rank{rank}.pt.trace.json");
        let link = other.join(&name);
        fs::hard_link(run.join(&name), &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }
    let out = scratch.join("ranks-diff");
    let both = argv![madengine, "report", "summary", run, other, "-o", out];
    let diff = argv![madengine, "report", "diff", run, other, "-o", out];
    let subject = "report summary of two 4-rank runs (8 traces)";
    let both = b.time("diff", subject, &both, &out, None)?;
    b.time("diff", "report diff of the two runs, rank by rank", &diff, &out, Some(both))?;
    let _ = fs::remove_dir_all(&other);
    let _ = fs::remove_dir_all(&out);
    Ok(())
}

/// The DLRM job's 8 ranks, replicated.
const DLRM: &str = "fixtures/public/kineto-multirank/param-dlrm-8rank";

/// The DLRM job's 8 rank traces, parsed, in rank order.
fn dlrm_ranks(root: &Path) -> Result<Vec<serde_json::Value>, String> {
    let source = root.join("../shared").join(DLRM);
    let mut workers: Vec<PathBuf> = fs::read_dir(&source)
        .map_err(|e| format!("the collective bench needs {}: {e}", source.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json"))
        .collect();
    workers.sort();
    let parsed: Vec<serde_json::Value> = workers
        .iter()
        .map(|p| {
            let text = fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, String>>()?;
    if parsed.len() != 8 {
        return Err(format!("{} should hold 8 rank traces", source.display()));
    }
    Ok(parsed)
}

/// A run of `ranks` ranks in `dir`: rank r is the DLRM job's rank r % 8
/// (`parsed`), its `distributedInfo` saying rank r of `ranks`, its
/// timestamps shifted by 13 µs per copy (so the copies arrive apart, as
/// ranks of a larger job do). Returns its size in bytes.
fn replicated_run(parsed: &[serde_json::Value], dir: &Path, ranks: u32) -> Result<u64, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut size = 0;
    for rank in 0..ranks {
        let mut trace = parsed[(rank % 8) as usize].clone();
        let shift = i64::from(rank / 8) * 13;
        trace["distributedInfo"]["rank"] = rank.into();
        trace["distributedInfo"]["world_size"] = ranks.into();
        for event in trace["traceEvents"].as_array_mut().into_iter().flatten() {
            if let Some(ts) = event.get("ts").and_then(serde_json::Value::as_i64) {
                event["ts"] = (ts + shift).into();
            }
        }
        let path = dir.join(format!("rank{rank}.pt.trace.json"));
        let text = serde_json::to_vec(&trace).map_err(|e| format!("{}: {e}", path.display()))?;
        size += text.len() as u64;
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(size)
}

/// `report summary` of runs of 8, 64 and 256 ranks (the DLRM job's,
/// replicated), which reads every rank (in parallel), writes each one's
/// tables and builds the run's collective report: the 8-rank run is the
/// baseline, and the time should grow linearly with the ranks.
fn collective(b: &mut Bench, root: &Path, scratch: &Path, madengine: &Path) -> Result<(), String> {
    let mut baseline = None;
    let parsed = dlrm_ranks(root)?;
    for ranks in [8u32, 64, 256] {
        let run = scratch.join(format!("collective-{ranks}"));
        eprintln!("generating a {ranks}-rank run...");
        let size = replicated_run(&parsed, &run, ranks)?;
        let out = scratch.join(format!("collective-{ranks}-summary"));
        let argv = argv![madengine, "report", "summary", run, "-o", out, "--top", "0", "--json"];
        let subject = format!(
            "report summary with the collective report, {ranks} ranks ({:.0} MB)",
            size as f64 / 1e6
        );
        let timing = b.measure(&argv, &out)?;
        // The report is made: its CSVs are there.
        let made = out.join(format!("collective-{ranks}_collectives/straggler_summary.csv"));
        if !made.is_file() {
            return Err(format!("the {ranks}-rank run made no {}", made.display()));
        }
        let row = b.row("collective", subject, timing, baseline);
        baseline.get_or_insert(row);
        let _ = fs::remove_dir_all(&run);
        let _ = fs::remove_dir_all(&out);
    }
    Ok(())
}

fn discover(b: &mut Bench, scratch: &Path, madengine: &Path, files: usize) -> Result<(), String> {
    let tree = scratch.join("tree");
    eprintln!("generating a tree of {files} files...");
    let per_dir = 100;
    for n in 0..files {
        let dir = tree.join(format!(
            "node_{}/run_{}/step_{}",
            n / 10_000,
            (n / 1000) % 10,
            (n / per_dir) % 10
        ));
        if n % per_dir == 0 {
            fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let (name, body): (String, &[u8]) = match n % 50 {
            0 => (format!("worker{n}.pt.trace.json"), br#"{"traceEvents": []}"#),
            1 => (format!("{n}_results.json"), br#"{"rocprofiler-sdk-tool": []}"#),
            2 => (format!("m{n}.pftrace"), b"\x0a\x00"),
            3 => ("trace.json".into(), br#"{"traceEvents": []}"#),
            4 => (format!("config_{n}.json"), br#"{"lr": 0.1}"#),
            5 => (format!("{n}_results.db"), b""),
            _ => (format!("log_{n}.txt"), b"step 1 loss 0.5\n"),
        };
        fs::write(dir.join(name), body).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let unused = scratch.join("unused");
    let python = argv!["python3", "-c", PYTHON_GLOB_DISCOVERY, tree];
    let subject = "python recursive glob per pattern (original)";
    let python = b.time("discover", subject, &python, &unused, None)?;
    let names = argv![madengine, "trace", "discover", tree, "--names-only", "--json"];
    let subject = "madengine trace discover --names-only";
    b.time("discover", subject, &names, &unused, Some(python))?;
    let sniff = argv![madengine, "trace", "discover", tree, "--json"];
    let subject = "madengine trace discover (content sniffing)";
    b.time("discover", subject, &sniff, &unused, Some(python))?;
    let _ = fs::remove_dir_all(&tree);
    Ok(())
}

fn table(rows: &[Row]) -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let date = cmd("date", ["-u", "+%Y-%m-%d %H:%M UTC"]).read().unwrap_or_default();
    let mut s = format!("\nmachine: {cpu}, {cores} cores; {date}\n\n");
    let _ = writeln!(s, "| bench | command | median wall | peak RSS | ratio to baseline |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for r in rows {
        let ratio = match r.baseline {
            Some(b) => {
                format!(
                    "{:.2}x of `{}`",
                    r.timing.seconds / rows[b].timing.seconds,
                    rows[b].subject
                )
            }
            None => "baseline".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} s | {:.1} MiB | {ratio} |",
            r.bench,
            r.subject,
            r.timing.seconds,
            r.timing.peak_kib as f64 / 1024.0
        );
    }
    s
}
