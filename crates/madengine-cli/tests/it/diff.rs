//! `madengine report diff`: two traces, two runs rank by rank, and what
//! cannot be compared.

use std::{fs, path::Path};

use crate::{cli_snapshot, synthetic};

/// `dir/<to>`: the synthetic trace `from`, with `edits` made to its text.
fn trace(dir: &Path, to: &str, from: &str, edits: &[(&str, &str)]) {
    let mut text =
        fs::read_to_string(synthetic().join("run/torch_profiler_output").join(from)).unwrap();
    for (old, new) in edits {
        assert!(text.contains(old), "{from} has no {old}");
        text = text.replace(old, new);
    }
    let path = dir.join(to);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Two runs of two ranks; in the new one the GEMM takes half the time on
/// both ranks and rank 1's collective twice as long.
fn runs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let gemm = [(r#""ts": 121.000, "dur": 8.500"#, r#""ts": 121.000, "dur": 4.250"#)];
    let nccl = (r#""ts": 150.000, "dur": 20.000"#, r#""ts": 150.000, "dur": 40.000"#);
    for (run, rank0, rank1) in
        [("base", &[][..], &[][..]), ("new", &gemm[..], &[gemm[0], nccl][..])]
    {
        trace(
            dir.path(),
            &format!("{run}/rank0_trace.json"),
            "libkineto_trace_rank0_1.json",
            rank0,
        );
        trace(
            dir.path(),
            &format!("{run}/rank1_trace.json"),
            "libkineto_trace_rank1_2.json",
            rank1,
        );
    }
    dir
}

#[test]
fn two_traces_side_by_side() {
    let dir = runs();
    cli_snapshot!(dir.path(), ["report", "diff", "base/rank1_trace.json", "new/rank1_trace.json", "-o", "out"], @r"
    exit code: 0
    ----- stdout -----
    baseline  base/rank1_trace.json (PyTorch, AMD Instinct MI300X, 2 kernel launches)
    new       new/rank1_trace.json (PyTorch, AMD Instinct MI300X, 2 kernel launches)

    GPU time 0.009 -> 0.004 ms (-50.0%)

    TIMELINE (ms)        BASELINE    NEW   DELTA  RATIO
    computation_time        0.009  0.004  -0.004  0.50x
    exposed_comm_time       0.000  0.000       0      -
    exposed_memcpy_time     0.000  0.000       0      -
    busy_time               0.009  0.004  -0.004  0.50x
    idle_time               0.000  0.000       0      -
    total_time              0.009  0.004  -0.004  0.50x
    total_comm_time         0.000  0.000       0      -
    total_memcpy_time       0.000  0.000       0      -

    kernels, largest changes first (µs):
    BASELINE    NEW   DELTA  RATIO  LAUNCHES  KERNEL
          20     40     +20  2.00x         1  ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)
       8.500  4.250  -4.250  0.50x         1  Cijk_Alik_Bljk_HHS_BH_MT64x64x32

    ops (GPU time of the kernels each launched directly), largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  OP
       0.009  0.004  -0.004  0.50x      1  aten::mm

    op categories (GPU time their ops launched directly), largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  CATEGORY
       0.009  0.004  -0.004  0.50x      1  GEMM

    collectives (NCCL/RCCL kernels by call), largest changes first (µs):
    BASELINE  NEW  DELTA  RATIO  CALLS  CALL
          20   40    +20  2.00x      1  allreduce Float[1048576], 2 ranks

    CSVs: out/gpu_timeline_diff.csv, out/kernel_diff.csv, out/ops_diff.csv, out/op_category_diff.csv, out/collective_diff.csv
    ----- stderr -----
    ");
    let csv = fs::read_to_string(dir.path().join("out/kernel_diff.csv")).unwrap();
    assert!(csv.starts_with("name,baseline count,new count,baseline µs,new µs,delta µs,ratio\n"));
}

#[test]
fn two_runs_rank_by_rank() {
    let dir = runs();
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new", "--top", "1"], @"
    exit code: 0
    ----- stdout -----
    baseline  base (2 traces, PyTorch, AMD Instinct MI300X, 4 kernel launches)
    new       new (2 traces, PyTorch, AMD Instinct MI300X, 4 kernel launches)

    GPU time of the slowest rank: 0.009 ms (rank 1) -> 0.004 ms (rank 1) (-50.0%)

    GPU time per rank (ms; the last three: change by part):
    RANK  BASELINE    NEW   DELTA  RATIO  COMPUTATION  EXPOSED COMM  IDLE
    0        0.009  0.004  -0.004  0.50x       -0.004             0     0
    1        0.009  0.004  -0.004  0.50x       -0.004             0     0

    kernels, all 2 ranks, largest changes first (µs):
    BASELINE  NEW  DELTA  RATIO  LAUNCHES  KERNEL
          40   60    +20  1.50x         2  ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)
    (1 more changed)

    ops (GPU time of the kernels each launched directly), all 2 ranks, largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  OP
       0.017  0.009  -0.009  0.50x      2  aten::mm

    op categories (GPU time their ops launched directly), all 2 ranks, largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  CATEGORY
       0.017  0.009  -0.009  0.50x      2  GEMM

    collectives (NCCL/RCCL kernels by call), all 2 ranks, largest changes first (µs):
    BASELINE  NEW  DELTA  RATIO  CALLS  CALL
          40   60    +20  1.50x      2  allreduce Float[1048576], 2 ranks

    collectives matched across ranks (mean latency once the last rank arrived µs, bus GB/s; ratio of total latency):
    MATCHED  LATENCY BEFORE  AFTER  RATIO  BUS BW BEFORE  AFTER  COLLECTIVE
     1 -> 1            20.0   20.0  1.00x          195.3  195.3  allreduce Float, 4.0 MiB

    every row: --output-dir DIR (CSVs) or --json
    ----- stderr -----
    ");
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "diff", "base", "new", "--json"].map(std::ffi::OsStr::new),
        &[],
    );
    let json: serde_json::Value = crate::stdout_json(&text);
    let ranks = json["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert_eq!((&json["paired_by"], &ranks[1]["rank"]), (&"rank".into(), &1.into()));
    assert_eq!(json["baseline"]["kernel_launches"], 4);
    assert_eq!(json["kernels"][0]["delta"], 20.0, "{json}");
}

/// Two multi-rank runs: their collectives matched across ranks, per type
/// and size, with the latency once the last rank arrived and the bus
/// bandwidth before and after. Both ranks' allreduce takes twice as long.
#[test]
fn collectives_matched_across_ranks_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let nccl = (r#""ts": 150.000, "dur": 20.000"#, r#""ts": 150.000, "dur": 40.000"#);
    for (run, edits) in [("base", &[][..]), ("new", &[nccl][..])] {
        for (rank, from) in
            [(0, "libkineto_trace_rank0_1.json"), (1, "libkineto_trace_rank1_2.json")]
        {
            trace(dir.path(), &format!("{run}/rank{rank}_trace.json"), from, edits);
        }
    }
    let args = ["report", "diff", "base", "new", "--top", "0"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(!text.contains("matched across ranks"), "--top 0 shows no table: {text}");
    let args = ["report", "diff", "base", "new", "--top", "3"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    let shown = &text[text.find("collectives matched").unwrap()..];
    insta::assert_snapshot!(shown, @"
    collectives matched across ranks (mean latency once the last rank arrived µs, bus GB/s; ratio of total latency):
    MATCHED  LATENCY BEFORE  AFTER  RATIO  BUS BW BEFORE  AFTER  COLLECTIVE
     1 -> 1            20.0   40.0  2.00x          195.3   97.7  allreduce Float, 4.0 MiB
    ----- stderr -----
    ");
    let args = ["report", "diff", "base", "new", "--json"].map(std::ffi::OsStr::new);
    let json = crate::stdout_json(&crate::run_cli(dir.path(), &args, &[]).0);
    let matched = &json["collectives_matched"][0];
    assert_eq!(
        (&matched["collective"], &matched["in_nelems"]),
        (&"allreduce".into(), &"1048576".into())
    );
    assert_eq!(
        (&matched["base"]["latency_mean_us"], &matched["new"]["latency_mean_us"]),
        (&20.0.into(), &40.0.into())
    );
    let bus = |side: &str| matched[side]["bus_bw_mean_gbs"].as_f64().unwrap();
    assert!((bus("base") / bus("new") - 2.0).abs() < 1e-9, "{matched}");
    let args = ["report", "diff", "base", "new", "--html", "diff.html"].map(std::ffi::OsStr::new);
    crate::run_cli(dir.path(), &args, &[]);
    let page = fs::read_to_string(dir.path().join("diff.html")).unwrap();
    assert!(page.contains("<td>1 &rarr; 1</td><td>20.0</td><td>40.0</td><td>2.00x</td>"), "{page}");
}

#[test]
fn what_cannot_be_compared_says_why() {
    let dir = runs();
    let rocprof = synthetic().join("run/rocprof_output/9999_results.json");
    let cpu_only = synthetic().join("run/torch_profiler_output/libkineto_trace_4242.json");
    fs::copy(&rocprof, dir.path().join("9999_results.json")).unwrap();
    fs::copy(&cpu_only, dir.path().join("launcher.json")).unwrap();
    cli_snapshot!(dir.path(), ["report", "diff", "9999_results.json", "base/rank0_trace.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: the baseline 9999_results.json is a rocprofv3 JSON trace and the new base/rank0_trace.json is a PyTorch (Kineto) trace: their tables differ; compare traces of one kind
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new/rank0_trace.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: base holds 2 traces (base/rank0_trace.json, base/rank1_trace.json) and new/rank0_trace.json one: name the trace to compare, or give two runs to compare rank by rank
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "launcher.json", "base/rank0_trace.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: the baseline trace launcher.json has no GPU activity to compare: no GPU activity (a CPU-only trace)
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "missing.json", "base/rank0_trace.json"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: cannot read missing.json: No such file or directory (os error 2)
    ");
    // A side that is not there is named first, not taken for a one-trace run.
    cli_snapshot!(dir.path(), ["report", "diff", "base", "mising"], @r"
    exit code: 3
    ----- stdout -----
    ----- stderr -----
    error: cannot read mising: No such file or directory (os error 2)
    ");
}

/// torch.profiler's schedule repeats unless `repeat=1`, and its
/// `tensorboard_trace_handler` writes a trace per rank each cycle into one
/// directory, named by the time it wrote it: a side of several cycles is
/// compared one cycle at a time, picked with `--cycle`.
#[test]
fn profiling_cycles_are_compared_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    // The baseline: 2 ranks, 3 cycles; in the last, rank 1's GEMM takes
    // twice as long. The new run: one cycle (a trace per rank).
    let slow = [(r#""ts": 121.000, "dur": 8.500"#, r#""ts": 121.000, "dur": 17.000"#)];
    for cycle in 0..3u64 {
        for rank in 0..2u64 {
            let ns = 1_764_720_000_000_000_000 + cycle * 5_000_000_000 + rank;
            let to = format!("base/gpu-node_{}.{ns}.pt.trace.json", 4242 + rank);
            let from = format!("libkineto_trace_rank{rank}_{}.json", rank + 1);
            let edits = if cycle == 2 && rank == 1 { &slow[..] } else { &[] };
            trace(dir.path(), &to, &from, edits);
        }
    }
    trace(dir.path(), "new/rank0_trace.json", "libkineto_trace_rank0_1.json", &[]);
    trace(dir.path(), "new/rank1_trace.json", "libkineto_trace_rank1_2.json", &[]);
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: base holds 3 of torch.profiler's profiling cycles (told apart by the time tensorboard_trace_handler put in the names of its traces): runs are compared one cycle at a time; pick one with --cycle N (1 to 3) or --cycle last, or one for each side (--cycle 1,last)
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new", "--cycle", "last", "--top", "1"], @"
    exit code: 0
    ----- stdout -----
    baseline  base (profiling cycle 3 of 3, 2 traces, PyTorch, AMD Instinct MI300X, 4 kernel launches)
    new       new (2 traces, PyTorch, AMD Instinct MI300X, 4 kernel launches)

    GPU time of the slowest rank: 0.017 ms (rank 1) -> 0.009 ms (rank 1) (-50.0%)

    GPU time per rank (ms; the last three: change by part):
    RANK  BASELINE    NEW   DELTA  RATIO  COMPUTATION  EXPOSED COMM  IDLE
    0        0.009  0.009       0  1.00x            0             0     0
    1        0.017  0.009  -0.009  0.50x       -0.009             0     0

    kernels, all 2 ranks, largest changes first (µs):
    BASELINE  NEW   DELTA  RATIO  LAUNCHES  KERNEL
      25.500   17  -8.500  0.67x         2  Cijk_Alik_Bljk_HHS_BH_MT64x64x32

    ops (GPU time of the kernels each launched directly), all 2 ranks, largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  OP
       0.026  0.017  -0.009  0.67x      2  aten::mm

    op categories (GPU time their ops launched directly), all 2 ranks, largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  CATEGORY
       0.026  0.017  -0.009  0.67x      2  GEMM

    collectives (NCCL/RCCL kernels by call), all 2 ranks, largest changes first (µs):
    no change

    collectives matched across ranks (mean latency once the last rank arrived µs, bus GB/s; ratio of total latency):
    MATCHED  LATENCY BEFORE  AFTER  RATIO  BUS BW BEFORE  AFTER  COLLECTIVE
     1 -> 1            20.0   20.0  1.00x          195.3  195.3  allreduce Float, 4.0 MiB

    every row: --output-dir DIR (CSVs) or --json
    ----- stderr -----
    ");
    let args = ["report", "diff", "base", "new", "--cycle", "1", "--json"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let json = crate::stdout_json(&text);
    assert_eq!(json["baseline"]["cycle"], serde_json::json!({"number": 1, "of": 3}));
    assert_eq!(json["new"]["cycle"], serde_json::Value::Null);
    let base = json["baseline"]["traces"].as_array().unwrap();
    assert!(base[1].as_str().unwrap().ends_with("gpu-node_4243.1764720000000000001.pt.trace.json"));
    // A run's first cycle against its last, rank by rank: rank 1 slowed.
    let args = ["report", "diff", "base", "base", "--cycle", "1,last", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    assert_eq!(json["baseline"]["cycle"], serde_json::json!({"number": 1, "of": 3}));
    assert_eq!(json["new"]["cycle"], serde_json::json!({"number": 3, "of": 3}));
    let computation: Vec<[f64; 2]> = json["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ["baseline", "new"].map(|s| r["timeline"][0][s]["time"].as_f64().unwrap()))
        .collect();
    assert_eq!(computation.len(), 2, "{json:#}");
    assert_eq!(computation[0][0], computation[0][1], "{json:#}");
    assert!(computation[1][1] > computation[1][0], "{json:#}");
    cli_snapshot!(dir.path(), ["report", "diff", "base", "base", "--cycle", "1,x"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: invalid value '1,x' for '--cycle <N|last|BASE,NEW>': `1,x` is not a cycle of each side: N or last, or the baseline's and the new one's as BASE,NEW (1,last)

    For more information, try '--help'.
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new", "--cycle", "4"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: base holds 3 profiling cycles, so there is no cycle 4: ask for 1 to 3, or last
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "new", "base", "--cycle", "2"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: new holds one profiling cycle (a trace per rank), so there is no cycle 2: ask for 1 or last
    ");

    // The baseline's reports, kept: their records name the traces, whose
    // names tell the cycles apart. Each trace's heading names its cycle.
    let args = ["report", "summary", "base", "-o", "kept", "--top", "0"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let heading = "== base/gpu-node_4243.1764720010000000001.pt.trace.json (rank 1, profiling cycle 3 \
                   of 3, AMD Instinct MI300X)\n";
    assert!(text.contains(heading), "{text}");
    // And the cycles side by side: the last one's slow rank 1.
    let at = text.find("\nprofiling cycles").unwrap_or_else(|| panic!("{text}"));
    let cycles = text[at + 1..].split("----- stderr").next().unwrap();
    insta::assert_snapshot!(cycles, @"
    profiling cycles (ms, the slowest trace of each), run base:
    CYCLE   TRACES  GPU TIME  VS CYCLE 1  SLOWEST
    1 of 3       2     0.009           -  rank 0: gpu-node_4242.1764720000000000000.pt.trace.json
    2 of 3       2     0.009       +0.0%  rank 0: gpu-node_4242.1764720005000000000.pt.trace.json
    3 of 3       2     0.017     +100.0%  rank 1: gpu-node_4243.1764720010000000001.pt.trace.json

    collectives matched across ranks (µs), run base, profiling cycle 1 of 3: 1 matched; CSVs: kept/base_cycle1_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0

    collectives matched across ranks (µs), run base, profiling cycle 2 of 3: 1 matched; CSVs: kept/base_cycle2_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0

    collectives matched across ranks (µs), run base, profiling cycle 3 of 3: 1 matched; CSVs: kept/base_cycle3_collectives
      ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE
      0_0                  20.0         0.0      1       0.0  195.3 GB/s  allreduce Float, 4.0 MiB
      RANK  NODE  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs
      0     0       1 (100.0%)                0.0               0.0            20.0
      1     1       0 (  0.0%)                0.0               0.0            20.0
    ");
    let args = ["report", "summary", "base", "-o", "kept", "--top", "0", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    let cycles: Vec<(u64, u64)> = json["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["rank"].as_u64().unwrap(), t["cycle"]["number"].as_u64().unwrap()))
        .collect();
    assert_eq!(cycles, [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)], "{json:#}");
    let rows: Vec<(u64, Option<u64>, bool)> = json["cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (c["cycle"]["number"].as_u64().unwrap(), c["rank"].as_u64(), c["per_step"] == true)
        })
        .collect();
    assert_eq!(rows, [(1, Some(0), false), (2, Some(0), false), (3, Some(1), false)], "{json:#}");
    // Trace files named (a shell's `base/*.json`) count as their directory's.
    let mut named: Vec<String> = std::fs::read_dir(dir.path().join("base"))
        .unwrap()
        .map(|e| format!("base/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    named.sort();
    let mut args: Vec<&str> = vec!["report", "summary", "--cycle", "last", "--top", "0", "--json"];
    args.extend(named.iter().map(String::as_str));
    let args: Vec<&std::ffi::OsStr> = args.into_iter().map(std::ffi::OsStr::new).collect();
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(
        text.contains("4 PyTorch traces of other profiling cycles not read (--cycle)"),
        "{text}"
    );
    let json = crate::stdout_json(&text);
    let read: Vec<(&str, &serde_json::Value)> = json["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["trace"].as_str().unwrap(), &t["cycle"]))
        .collect();
    let last = serde_json::json!({"number": 3, "of": 3});
    assert_eq!(read, [(named[2].as_str(), &last), (named[5].as_str(), &last)], "{json:#}");
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "diff", "kept", "new"].map(std::ffi::OsStr::new),
        &[],
    );
    assert!(text.contains("names of the traces its reports were made of)"), "{text}");
    let args = ["report", "diff", "kept", "new", "--cycle", "last", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    assert_eq!(json["baseline"]["cycle"], serde_json::json!({"number": 3, "of": 3}));
    let computation: Vec<f64> = json["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["timeline"][0]["baseline"]["time"].as_f64().unwrap())
        .collect();
    assert_eq!(computation.len(), 2, "{json:#}");
    assert!(computation[1] > computation[0], "the last cycle's slow rank 1: {json:#}");

    // One process without a rank (one GPU): each trace is a cycle.
    let rankless = [(r#""rank": 0,"#, r#""x_rank": 0,"#)];
    for cycle in 0..2u64 {
        let ns = 1_764_720_000_000_000_000 + cycle * 5_000_000_000;
        let to = format!("single/gpu-node_4242.{ns}.pt.trace.json");
        trace(dir.path(), &to, "libkineto_trace_rank0_1.json", &rankless);
    }
    let args = ["report", "diff", "single", "single", "--cycle", "1", "--json"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let json = crate::stdout_json(&text);
    assert_eq!(json["new"]["cycle"], serde_json::json!({"number": 1, "of": 2}));
    let traces = json["new"]["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1, "{json:#}");
}

/// Run again into the same output directory, `report summary` and `report
/// diff` leave no table of the run before that this one did not write: a
/// trace's collective_summary.csv once it has no collective kernels, a
/// diff's collective_diff.csv. (`report diff` reads the first back.)
#[test]
fn a_second_run_into_the_same_directory_leaves_none_of_the_first_runs_tables() {
    let dir = runs();
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        assert!(text.starts_with("exit code: 0"), "{text}");
    };
    let summary = ["report", "summary", "base/rank1_trace.json", "-o", "summary"];
    let diff = ["report", "diff", "base/rank1_trace.json", "new/rank1_trace.json", "-o", "out"];
    let listed = |sub: &str| crate::names_in(&dir.path().join(sub)).join(" ");
    run(&summary);
    run(&diff);
    let report = "summary/base_rank1_trace";
    assert!(listed(report).contains("collective_summary.csv"), "{}", listed(report));
    assert!(listed("out").contains("collective_diff.csv"), "{}", listed("out"));
    // A file of the user's own there is kept.
    fs::write(dir.path().join(report).join("notes.txt"), "mine").unwrap();
    // The same traces, their NCCL kernel without PyTorch's collective args.
    let args = r#""Collective name": "allreduce", "#;
    for run in ["base", "new"] {
        let path = dir.path().join(run).join("rank1_trace.json");
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(args), "{}", path.display());
        fs::write(&path, text.replace(args, "")).unwrap();
    }
    run(&summary);
    run(&diff);
    assert_eq!(
        listed(report),
        "gpu_timeline.csv kernel_summary.csv notes.txt ops_summary.csv ops_summary_by_category.csv \
         ops_unique_args.csv short_kernel_histogram.csv short_kernels_summary.csv summary.json \
         unified_perf_summary.csv"
    );
    assert_eq!(
        listed("out"),
        "gpu_timeline_diff.csv kernel_diff.csv op_category_diff.csv ops_diff.csv"
    );
}

/// A trace read now without a GPU timeline takes its earlier run's report
/// with it, said on stderr: left, it would be read as this run's. One that
/// cannot be read now (cut short by a full disk, or while still being
/// written) keeps its last good report, marked stale. A file of the user's
/// own is kept.
#[test]
fn a_trace_that_makes_no_report_now_takes_its_earlier_one_with_it() {
    let dir = runs();
    let summary = ["report", "summary", "base", "-o", "summary"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &summary, &[]);
    assert!(text.starts_with("exit code: 0"), "{text}");
    let listed = |sub: &str| crate::names_in(&dir.path().join(sub)).join(" ");
    assert_eq!(listed("summary"), "base_collectives rank0_trace rank1_trace");
    fs::write(dir.path().join("summary/rank0_trace/notes.txt"), "mine").unwrap();
    // Rank 0 cut short by a full disk; rank 1 now only its CPU side.
    let rank0 = dir.path().join("base/rank0_trace.json");
    let text = fs::read_to_string(&rank0).unwrap();
    fs::write(&rank0, &text[..text.len() / 2]).unwrap();
    let cpu_only = synthetic().join("run/torch_profiler_output/libkineto_trace_4242.json");
    fs::copy(&cpu_only, dir.path().join("base/rank1_trace.json")).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "base", "-o", "summary"], @"
    exit code: 3
    ----- stdout -----
    == base/rank0_trace.json (rank 0)
       error: base/rank0_trace.json is truncated: its JSON ends after 1328 bytes, with 3 complete events before the cut (--salvage summarizes the events complete before the cut)

    == base/rank1_trace.json (rank 1, AMD Instinct MI300X)
       no GPU activity (a CPU-only trace): nothing to summarize

    ----- stderr -----
    [madengine] kept the earlier report in summary/rank0_trace, marked stale: base/rank0_trace.json could not be read this time
    [madengine] removed the earlier report in summary/rank1_trace: base/rank1_trace.json made none this time
    [madengine] removed the earlier collective report in summary/base_collectives: its run base made none this time
    error: 1 of 2 traces could not be read
    ");
    assert_eq!(listed("summary"), "rank0_trace");
    assert_eq!(
        listed("summary/rank0_trace"),
        "coll_analysis.csv collective_summary.csv gpu_timeline.csv kernel_summary.csv notes.txt \
         ops_summary.csv ops_summary_by_category.csv ops_unique_args.csv \
         short_kernel_histogram.csv short_kernels_summary.csv summary.json \
         unified_perf_summary.csv"
    );
}

/// Run again over a directory, the reports an earlier run left of traces
/// in it that this run did not write go: left, `report diff` would read
/// them as this run's. A trace gone (a run of fewer ranks now, a link
/// removed), read under another name now (given alone before), or no
/// longer read (its sanitized copy is read instead) takes its report with
/// it. A report of a trace outside what this run searched is kept.
#[test]
fn a_report_this_run_did_not_write_of_a_trace_it_searched_goes() {
    let dir = runs();
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        assert!(text.starts_with("exit code: 0"), "{text}");
    };
    // Rank 2 a symbolic link to a trace elsewhere (a scratch space).
    std::os::unix::fs::symlink("../new/rank1_trace.json", dir.path().join("base/rank2_trace.json"))
        .unwrap();
    run(&["report", "summary", "base", "-o", "summary"]);
    let alone = ["new/rank0_trace.json", "new/rank1_trace.json", "base/rank0_trace.json"];
    run(&[&["report", "summary", "-o", "summary"][..], &alone].concat());
    let listed = || crate::names_in(&dir.path().join("summary")).join(" ");
    assert_eq!(
        listed(),
        "base_collectives base_rank0_trace new_collectives new_rank0_trace new_rank1_trace \
         rank0_trace rank1_trace rank2_trace"
    );
    // The link removed is the trace gone, though what it led to is there.
    fs::remove_file(dir.path().join("base/rank1_trace.json")).unwrap();
    fs::remove_file(dir.path().join("base/rank2_trace.json")).unwrap();
    fs::remove_file(dir.path().join("new/rank0_trace.json")).unwrap();
    cli_snapshot!(dir.path(), ["report", "summary", "base", "-o", "summary", "--top", "0"], @"
    exit code: 0
    ----- stdout -----
    == base/rank0_trace.json (rank 0, AMD Instinct MI300X)
       GPU time 0.009 ms: computation 0.009 ms (100.0%), exposed comm 0.000 ms (0.0%), exposed memcpy 0.000 ms (0.0%), idle 0.000 ms (0.0%)
       short kernels (< 10 µs): 1 launch, 0.009 ms, 100.0% of the GPU time
       CSVs: summary/rank0_trace

    ----- stderr -----
    [madengine] removed the earlier collective report in summary/base_collectives: its run base made none this time
    [madengine] removed the earlier report in summary/base_rank0_trace: its trace base/rank0_trace.json has its report in summary/rank0_trace now
    [madengine] removed the earlier report in summary/rank1_trace: its trace base/rank1_trace.json is gone
    [madengine] removed the earlier report in summary/rank2_trace: its trace base/rank2_trace.json is gone
    ");
    assert_eq!(listed(), "new_collectives new_rank0_trace new_rank1_trace rank0_trace");
    run(&["trace", "sanitize", "base/rank0_trace.json"]);
    cli_snapshot!(dir.path(), ["report", "summary", "base", "-o", "summary", "--top", "0"], @"
    exit code: 0
    ----- stdout -----
    == base/rank0_trace.sanitized.json (rank 0, AMD Instinct MI300X)
       GPU time 0.009 ms: computation 0.009 ms (100.0%), exposed comm 0.000 ms (0.0%), exposed memcpy 0.000 ms (0.0%), idle 0.000 ms (0.0%)
       short kernels (< 10 µs): 1 launch, 0.009 ms, 100.0% of the GPU time
       CSVs: summary/rank0_trace.sanitized

    ----- stderr -----
    [madengine] left out base/rank0_trace.json: its sanitized copy beside it, written since (the same name with `.sanitized`), is read instead
    [madengine] removed the earlier report in summary/rank0_trace: its trace base/rank0_trace.json is no longer read as one (`madengine trace discover` says why)
    ");
    assert_eq!(listed(), "new_collectives new_rank0_trace new_rank1_trace rank0_trace.sanitized");
    // Given alone, then read under its own name and cut short: it made none.
    run(&["report", "summary", "base/rank0_trace.sanitized.json", "-o", "summary"]);
    let copy = dir.path().join("base/rank0_trace.sanitized.json");
    let text = fs::read_to_string(&copy).unwrap();
    fs::write(&copy, &text[..text.len() / 2]).unwrap();
    let args = ["report", "summary", "base", "-o", "summary"].map(std::ffi::OsStr::new);
    let (text, _) = crate::run_cli(dir.path(), &args, &[]);
    assert!(text.starts_with("exit code: 3"), "{text}");
    // Its last good report stays, marked stale; the one of it given alone
    // goes, as it has its report here now.
    for said in [
        "[madengine] kept the earlier report in summary/rank0_trace.sanitized, marked stale: \
         base/rank0_trace.sanitized.json could not be read this time\n",
        "[madengine] removed the earlier report in summary/base_rank0_trace.sanitized: its \
         trace base/rank0_trace.sanitized.json has its report in summary/rank0_trace.sanitized \
         now\n",
    ] {
        assert!(text.contains(said), "{said} not in {text}");
    }
    assert_eq!(listed(), "new_collectives new_rank0_trace new_rank1_trace rank0_trace.sanitized");
}

/// An `--output-dir` that is, or holds, the run directory is refused (exit
/// 2) before anything is read or run: what lies in it is never searched
/// for traces, so none would be found.
#[test]
fn an_output_directory_that_holds_the_run_is_refused() {
    let dir = runs();
    for (args, said) in [
        (&["report", "summary", "base", "-o", "base"][..], "base is the run directory base"),
        (&["report", "summary", "base", "-o", "."], ". holds the run directory base"),
        (&["report", "summary", "-o", "."], ". is the run directory ."),
        (&["report", "tracelens", "base", "-o", "base"], "base is the run directory base"),
        (
            &["report", "tracelens", "-r", "base", "-o", ".", "--discover-only"],
            ". holds the run directory base",
        ),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        let expected = format!(
            "exit code: 2\n----- stdout -----\n----- stderr -----\nerror: --output-dir {said}: \
             what lies in the output directory is never searched for traces, so none would be \
             found; name another directory (one inside the run is fine)\n"
        );
        assert_eq!(text, expected, "{args:?}");
    }
    assert_eq!(crate::names_in(dir.path()), ["base", "new"]);
    assert_eq!(crate::names_in(&dir.path().join("base")), ["rank0_trace.json", "rank1_trace.json"]);
}

/// Where a report goes is checked before any trace is read (a large run
/// takes minutes) or TraceLens run: `-o` naming a file, or a path under
/// one, and `--html` naming a directory are refused (exit 3) with nothing
/// written. A page's directory that is not there yet is made.
#[test]
fn an_output_that_cannot_be_written_is_refused_before_reading() {
    let dir = runs();
    fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    fs::create_dir(dir.path().join("pages")).unwrap();
    let not_a_dir = ("notes.txt", "notes.txt is a file, not a directory");
    for (args, (place, why)) in [
        (&["report", "summary", "base", "-o", "notes.txt"][..], not_a_dir),
        (
            &["report", "summary", "base", "-o", "notes.txt/out"],
            ("notes.txt/out", "notes.txt is not a directory"),
        ),
        (&["report", "summary", "base", "--html", "pages"], ("pages", "pages is a directory")),
        (&["report", "diff", "base", "new", "-o", "notes.txt"], not_a_dir),
        (&["report", "diff", "base", "new", "--html", "pages"], ("pages", "pages is a directory")),
        (&["report", "tracelens", "base", "-o", "notes.txt"], not_a_dir),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let (text, _) = crate::run_cli(dir.path(), &args, &[]);
        let expected = format!(
            "exit code: 3\n----- stdout -----\n----- stderr -----\n\
             error: cannot write {place}\n  caused by: {why}\n"
        );
        assert_eq!(text, expected, "{args:?}");
    }
    assert_eq!(crate::names_in(dir.path()), ["base", "new", "notes.txt", "pages"]);
    assert!(crate::names_in(&dir.path().join("pages")).is_empty());
    let page = ["report", "diff", "base", "new", "--html", "pages/new/diff.html"];
    let (text, _) = crate::run_cli(dir.path(), &page.map(std::ffi::OsStr::new), &[]);
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert_eq!(crate::names_in(&dir.path().join("pages/new")), ["diff.html"]);
}

/// A report directory (`report summary`'s CSVs, or TraceLens') stands for
/// its trace: read back, it compares as the trace would.
#[test]
fn a_report_directory_stands_for_its_trace() {
    let dir = runs();
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "summary", "base/rank1_trace.json", "-o", "summary"].map(std::ffi::OsStr::new),
        &[],
    );
    assert!(text.starts_with("exit code: 0"), "{text}");
    let report = fs::read_dir(dir.path().join("summary")).unwrap().next().unwrap().unwrap().path();
    let report = report.strip_prefix(dir.path()).unwrap().display().to_string();
    assert_eq!(report, "summary/base_rank1_trace");
    cli_snapshot!(dir.path(), ["report", "diff", &report, "base/rank1_trace.json", "--top", "1"], @r"
    exit code: 0
    ----- stdout -----
    baseline  summary/base_rank1_trace (PyTorch report, AMD Instinct MI300X, 2 kernel launches)
    new       base/rank1_trace.json (PyTorch, AMD Instinct MI300X, 2 kernel launches)

    GPU time 0.009 -> 0.009 ms (+0.0%)

    TIMELINE (ms)        BASELINE    NEW  DELTA  RATIO
    computation_time        0.009  0.009      0  1.00x
    exposed_comm_time       0.000  0.000      0      -
    exposed_memcpy_time     0.000  0.000      0      -
    busy_time               0.009  0.009      0  1.00x
    idle_time               0.000  0.000      0      -
    total_time              0.009  0.009      0  1.00x
    total_comm_time         0.000  0.000      0      -
    total_memcpy_time       0.000  0.000      0      -

    kernels, largest changes first (µs):
    no change

    ops (GPU time of the kernels each launched directly), largest changes first (ms):
    no change

    op categories (GPU time their ops launched directly), largest changes first (ms):
    no change

    collectives (NCCL/RCCL kernels by call), largest changes first (µs):
    no change

    every row: --output-dir DIR (CSVs) or --json
    ----- stderr -----
    ");
    // Against the new trace: what the baseline trace itself gives, but for its name.
    let stdout = |baseline: &str| {
        let args = ["report", "diff", baseline, "new/rank1_trace.json"];
        let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
        text.replacen(baseline, "BASELINE", 1).replacen("PyTorch report", "PyTorch", 1)
    };
    assert_eq!(stdout(&report), stdout("base/rank1_trace.json"));
    fs::write(dir.path().join("base.xlsx"), b"PK").unwrap();
    cli_snapshot!(dir.path(), ["report", "diff", "base.xlsx", "new/rank1_trace.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: base.xlsx is an Excel workbook: give the report's CSV directory instead (`report tracelens` writes `<stem>_csv/` beside each workbook; `report summary` writes CSVs only), or the trace
    ");
    // A directory of one report stands for it; of several, they are named.
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "diff", "summary", "new/rank1_trace.json"].map(std::ffi::OsStr::new),
        &[],
    );
    let head =
        "exit code: 0\n----- stdout -----\nbaseline  summary/base_rank1_trace (PyTorch report";
    assert!(text.starts_with(head), "{text}");
    fs::create_dir(dir.path().join("summary/other")).unwrap();
    fs::copy(
        dir.path().join(&report).join("gpu_timeline.csv"),
        dir.path().join("summary/other/gpu_timeline.csv"),
    )
    .unwrap();
    cli_snapshot!(dir.path(), ["report", "diff", "summary", "new/rank1_trace.json"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: summary holds 2 reports (summary/base_rank1_trace, summary/other) and new/rank1_trace.json one: name the report to compare, or give two runs to compare rank by rank
    ");
}

/// `report summary -o` records each trace's rank and steps beside its CSVs
/// (summary.json): a kept run whose traces carry their ranks only in their
/// distributedInfo still compares rank by rank, and per step.
#[test]
fn a_kept_report_remembers_its_rank_and_steps() {
    let dir = tempfile::tempdir().unwrap();
    let steps = (
        "\"traceEvents\": [",
        r#""traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 4242, "tid": 4242, "ts": 100, "dur": 90},"#,
    );
    let gemm = (r#""ts": 121.000, "dur": 8.500"#, r#""ts": 121.000, "dur": 4.250"#);
    for (run, edits) in [("base", &[steps][..]), ("new", &[steps, gemm][..])] {
        // Named without ranks: `worker_a` is rank 0 by its distributedInfo.
        for (name, from) in
            [("a", "libkineto_trace_rank0_1.json"), ("b", "libkineto_trace_rank1_2.json")]
        {
            trace(dir.path(), &format!("{run}/worker_{name}.pt.trace.json"), from, edits);
        }
    }
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let text = run(&["report", "summary", "base", "-o", "kept"]);
    assert!(text.starts_with("exit code: 0"), "{text}");
    let recorded: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("kept/worker_b/summary.json")).unwrap())
            .unwrap();
    assert_eq!((&recorded["rank"], &recorded["steps"]), (&1.into(), &1.into()), "{recorded}");
    let text = run(&["report", "diff", "kept", "new", "--per-step", "--top", "0"]);
    for said in [
        "baseline  kept (2 traces, PyTorch report, AMD Instinct MI300X, 1 step, 4 kernel launches)\n",
        "new       new (2 traces, PyTorch, AMD Instinct MI300X, 1 step, 4 kernel launches)\n",
        "GPU time of the slowest rank: 0.009 ms per step (rank 1) -> 0.004 ms per step (rank 1)",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    let ranks = crate::stdout_json(&run(&["report", "diff", "kept", "new", "--json"]))["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rank"].as_u64().unwrap(), r["baseline"].as_str().unwrap().to_string()))
        .collect::<Vec<_>>();
    assert_eq!(ranks, [(0, "kept/worker_a".to_string()), (1, "kept/worker_b".to_string())]);
    // A record that is not one is named, not taken for no record.
    fs::write(dir.path().join("kept/worker_a/summary.json"), "{").unwrap();
    let text = run(&["report", "diff", "kept", "new"]);
    assert!(text.starts_with("exit code: 3"), "{text}");
    assert!(
        text.contains(
            "error: kept/worker_a/summary.json is not the record a trace's report keeps beside \
             its CSVs\n  caused by: EOF while parsing an object at line 1 column 1"
        ),
        "{text}"
    );
}

/// Traces of two GPU models: each side names its GPUs, and a note says
/// what that means for the kernels.
#[test]
fn the_gpus_of_each_side_are_named() {
    let dir = runs();
    let h100 = [(r#""name": "AMD Instinct MI300X""#, r#""name": "NVIDIA H100 80GB HBM3""#)];
    trace(dir.path(), "h100.json", "libkineto_trace_rank1_2.json", &h100);
    let args = ["report", "diff", "base/rank1_trace.json", "h100.json", "--top", "0"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    for said in [
        "baseline  base/rank1_trace.json (PyTorch, AMD Instinct MI300X, 2 kernel launches)\n",
        "new       h100.json (PyTorch, NVIDIA H100 80GB HBM3, 2 kernel launches)\n",
        "note: the baseline ran on AMD Instinct MI300X and the new trace on NVIDIA H100 80GB HBM3: \
         kernels are named per GPU, so compare the timeline, ops and op categories\n",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    let args = ["report", "diff", "base/rank1_trace.json", "h100.json", "--json"];
    let json =
        crate::stdout_json(&crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]).0);
    assert_eq!(json["new"]["gpus"], serde_json::json!(["NVIDIA H100 80GB HBM3"]), "{json}");
    let args = ["report", "summary", "h100.json", "--json"].map(std::ffi::OsStr::new);
    let json = crate::stdout_json(&crate::run_cli(dir.path(), &args, &[]).0);
    assert_eq!(json["traces"][0]["gpus"], serde_json::json!(["NVIDIA H100 80GB HBM3"]), "{json}");
}

/// The same model on an AMD and an NVIDIA GPU (public traces): their
/// kernels share no name, their op categories do.
#[test]
fn traces_of_different_gpus_compare_by_op_category() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let trace = |gpu: &str| {
        root.join(format!("kineto/tracelens/{gpu}/gaunernst_bert-small-uncased__1016001.json.gz"))
    };
    let (mi300, h100) = (trace("mi300"), trace("h100"));
    let args = [mi300.as_os_str(), h100.as_os_str(), "--top".as_ref(), "4".as_ref()];
    let args: Vec<&std::ffi::OsStr> =
        ["report".as_ref(), "diff".as_ref()].into_iter().chain(args).collect();
    let (text, _) = crate::run_cli(&root, &args, &[]);
    let at = text.find("\nop categories (").unwrap() + 1;
    let section = &text[at..at + text[at..].find("\n\n").unwrap()];
    insta::assert_snapshot!(section, @r"
    op categories (GPU time their ops launched directly), largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  CALLS  CATEGORY
       0.125  0.049  -0.076  0.40x      8  other
       0.174  0.198  +0.023  1.13x     26  GEMM
       0.048  0.028  -0.020  0.58x     16  elementwise
       0.040  0.031  -0.009  0.78x     10  NORM_fwd
    (1 more changed)
    ");
    let mut args = args;
    args.push("--json".as_ref());
    let json = crate::stdout_json(&crate::run_cli(&root, &args, &[]).0);
    let gemm = json["op_categories"].as_array().unwrap().iter().find(|r| r["name"] == "GEMM");
    assert_eq!(gemm.unwrap()["new"]["count"], 26.0, "{json}");
}

/// `--max-regression PCT`: exit 1 when the slowest rank's GPU time grew by
/// more, the comparison printed all the same; a note when within.
#[test]
fn max_regression_gates_on_the_headline() {
    let dir = runs();
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    // The new run is faster: within any limit, 0 included.
    let text = run(&["report", "diff", "base", "new", "--top", "0", "--max-regression", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(
        text.ends_with("[madengine] GPU time changed -50.0%, within --max-regression 0%\n"),
        "{text}"
    );
    // The other way round it is slower.
    let args = ["report", "diff", "new", "base", "--top", "0", "--max-regression", "5%"];
    let text = run(&[&args[..], &["--html", "gate.html"]].concat());
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    // The page says the verdict first.
    let page = fs::read_to_string(dir.path().join("gate.html")).unwrap();
    let verdict = r#"<p class="error"><b>GPU time changed +100.0%, more than --max-regression 5%.</b></p><table>"#;
    assert!(page.contains(verdict), "{page}");
    assert!(text.contains("GPU time of the slowest rank: 0.004 ms (rank 1) -> 0.009 ms"), "{text}");
    assert!(
        text.ends_with("error: GPU time changed +100.0%, more than --max-regression 5%\n"),
        "{text}"
    );
    let text = run(&["report", "diff", "new", "base", "--max-regression", "200", "--json"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let regression = &crate::stdout_json(&text)["regression"];
    assert_eq!(regression["exceeded"], false, "{regression}");
    assert_eq!(regression["limit_percent"], 200.0, "{regression}");
    // A negative limit asks for a gain: -50% is one of 5% or more...
    let text = run(&["report", "diff", "base", "new", "--top", "0", "--max-regression", "-5"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(text.ends_with("GPU time changed -50.0%, within --max-regression -5%\n"), "{text}");
    // ...not of 60% or more, and a loss is none at all.
    let text = run(&["report", "diff", "base", "new", "--top", "0", "--max-regression=-60%"]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    assert!(
        text.ends_with(
            "error: GPU time changed -50.0%, not the gain of 60% or more --max-regression -60% \
             asks for\n"
        ),
        "{text}"
    );
    let text = run(&["report", "diff", "new", "base", "--top", "0", "--max-regression", "-5"]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    let text = run(&["report", "diff", "new", "base", "--max-regression", "five"]);
    assert!(text.contains("`five` is not a percentage such as 5, 2.5% or -5"), "{text}");
    assert!(text.starts_with("exit code: 2\n"), "{text}");
}

/// `--html`: one self-contained page, rank by rank for runs, that renders.
#[test]
fn the_html_page_is_self_contained_and_renders() {
    let dir = runs();
    let args = ["report", "diff", "base", "new", "--html", "diff.html", "--top", "3"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(text.starts_with("exit code: 0\n") && text.contains("HTML: diff.html\n"), "{text}");
    let html = dir.path().join("diff.html");
    let page = fs::read_to_string(&html).unwrap();
    for expected in [
        "<h2>GPU time per rank</h2>",
        "<td>1</td><td>0.009</td><td>0.004</td><td>-0.004</td>",
        "Kernels, all ranks, largest changes first",
        r#"title="ncclDevKernel_Generic(ncclDevKernelArgsStorage&lt;4096ul&gt;)""#,
        "<td>+20.000</td><td>1.50x</td><td>2</td>",
        "<svg",
    ] {
        assert!(page.contains(expected), "{expected} missing from the page:\n{page}");
    }
    crate::trace::renders_in_chromium(&html, dir.path());
}

/// ProfilerStep# annotations are counted (else optimizer steps): a note says
/// when the sides hold different numbers, and --per-step divides each side
/// by its own.
#[test]
fn steps_are_counted_and_per_step_divides_by_them() {
    let dir = runs();
    let marked = |n: usize, cat: &str, name: &dyn Fn(usize) -> String| {
        let events: Vec<String> = (1..=n)
            .map(|i| {
                format!(
                    r#"{{"ph": "X", "cat": "{cat}", "name": "{}", "pid": 4242, "tid": 4242, "ts": {}, "dur": 1}},"#,
                    name(i),
                    i * 10
                )
            })
            .collect();
        events.join("")
    };
    let steps = |n| marked(n, "user_annotation", &|i| format!("ProfilerStep#{i}"));
    let one = format!("\"traceEvents\": [{}", steps(1));
    let two = format!("\"traceEvents\": [{}", steps(2));
    // Captured on demand by iteration: no ProfilerStep#, three optimizer
    // steps (each also annotated on the GPU, and one optimizer wrapping
    // another, neither counted twice).
    let sgd = marked(3, "user_annotation", &|_| "Optimizer.step#SGD.step".into());
    let gpu = marked(3, "gpu_user_annotation", &|_| "Optimizer.step#SGD.step".into());
    let ema = marked(3, "user_annotation", &|_| "Optimizer.step#EMA.step".into());
    let three = format!("\"traceEvents\": [{sgd}{gpu}{ema}");
    for (name, events) in [("one.json", &one), ("two.json", &two), ("three.json", &three)] {
        trace(dir.path(), name, "libkineto_trace_rank1_2.json", &[("\"traceEvents\": [", events)]);
    }
    // Totals: the steps are named, with what to do (on the page too).
    let args = ["report", "diff", "one.json", "two.json", "--html", "steps.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    let page = std::fs::read_to_string(dir.path().join("steps.html")).unwrap();
    assert!(
        page.contains(
            "<p class=\"note\">The baseline holds 1 step(s) per trace and the new trace 2: totals \
             add up every step; --per-step compares per step.</p>"
        ),
        "{page}"
    );
    for said in [
        "baseline  one.json (PyTorch, AMD Instinct MI300X, 1 step, 2 kernel launches)\n",
        "new       two.json (PyTorch, AMD Instinct MI300X, 2 steps, 2 kernel launches)\n",
        "note: the baseline holds 1 step(s) per trace and the new trace 2: totals add up \
         every step; --per-step compares per step\n",
        "\nGPU time 0.009 -> 0.009 ms (+0.0%)\n",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    // `report summary` says how many steps its totals cover.
    let args = ["report", "summary", "two.json", "one.json", "base/rank1_trace.json", "--top", "0"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(
        text.contains("== two.json (rank 1, AMD Instinct MI300X)\n   GPU time 0.009 ms over 2 profiler steps (0.004 ms each): "),
        "{text}"
    );
    assert!(
        text.contains(
            "== one.json (rank 1, AMD Instinct MI300X)\n   GPU time 0.009 ms over 1 profiler step: "
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "== base/rank1_trace.json (rank 1, AMD Instinct MI300X)\n   GPU time 0.009 ms: "
        ),
        "{text}"
    );
    let args = ["report", "summary", "three.json", "--json"].map(std::ffi::OsStr::new);
    let json = crate::stdout_json(&crate::run_cli(dir.path(), &args, &[]).0);
    assert_eq!(json["traces"][0]["steps"], 3, "{json}");
    assert_eq!(json["traces"][0]["steps_marked_by"], "Optimizer.step#", "{json}");
    let args = ["report", "summary", "three.json", "--html", "three.html"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    assert!(
        text.contains("   GPU time 0.009 ms over 3 optimizer steps (0.003 ms each): "),
        "{text}"
    );
    let page = std::fs::read_to_string(dir.path().join("three.html")).unwrap();
    assert!(
        page.contains("<p>GPU time 0.009 ms over 3 optimizer steps (0.003 ms each)</p>"),
        "{page}"
    );
    // Optimizer steps divide as profiler steps do.
    let args = ["report", "diff", "two.json", "three.json", "--per-step", "--top", "0"];
    let (text, _) = crate::run_cli(dir.path(), &args.map(std::ffi::OsStr::new), &[]);
    for said in [
        "new       three.json (PyTorch, AMD Instinct MI300X, 3 steps, 2 kernel launches)\n",
        "\nGPU time 0.004 -> 0.003 ms per step (-33.3%)\n",
    ] {
        assert!(text.contains(said), "{said:?} not in {text}");
    }
    cli_snapshot!(dir.path(), ["report", "diff", "one.json", "two.json", "--top", "1", "--per-step"], @r"
    exit code: 0
    ----- stdout -----
    baseline  one.json (PyTorch, AMD Instinct MI300X, 1 step, 2 kernel launches)
    new       two.json (PyTorch, AMD Instinct MI300X, 2 steps, 2 kernel launches)

    GPU time 0.009 -> 0.004 ms per step (-50.0%)

    TIMELINE (ms per step)  BASELINE    NEW   DELTA  RATIO
    computation_time           0.009  0.004  -0.004  0.50x
    exposed_comm_time          0.000  0.000       0      -
    exposed_memcpy_time        0.000  0.000       0      -
    busy_time                  0.009  0.004  -0.004  0.50x
    idle_time                  0.000  0.000       0      -
    total_time                 0.009  0.004  -0.004  0.50x
    total_comm_time            0.000  0.000       0      -
    total_memcpy_time          0.000  0.000       0      -

    kernels, largest changes first (µs per step):
    BASELINE  NEW  DELTA  RATIO  LAUNCHES  KERNEL
          20   10    -10  0.50x  1 -> 0.5  ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)
    (1 more changed)

    ops (GPU time of the kernels each launched directly), largest changes first (ms per step):
    BASELINE    NEW   DELTA  RATIO     CALLS  OP
       0.009  0.004  -0.004  0.50x  1 -> 0.5  aten::mm

    op categories (GPU time their ops launched directly), largest changes first (ms per step):
    BASELINE    NEW   DELTA  RATIO     CALLS  CATEGORY
       0.009  0.004  -0.004  0.50x  1 -> 0.5  GEMM

    collectives (NCCL/RCCL kernels by call), largest changes first (µs per step):
    BASELINE  NEW  DELTA  RATIO     CALLS  CALL
          20   10    -10  0.50x  1 -> 0.5  allreduce Float[1048576], 2 ranks

    every row: --output-dir DIR (CSVs) or --json
    ----- stderr -----
    ");
    cli_snapshot!(dir.path(), ["report", "diff", "one.json", "base/rank1_trace.json", "--per-step"], @r"
    exit code: 2
    ----- stdout -----
    ----- stderr -----
    error: --per-step: the steps of base/rank1_trace.json are not known (a trace without ProfilerStep# or Optimizer.step# annotations, or a TraceLens report: it does not record them)
    ");
}

/// rocprofv3 runs have no ranks: a file per process, a process per GPU.
/// Two of them compare GPU by GPU, as traces and as kept reports; the
/// collective kernels' share of each GPU's kernel time is told apart.
#[test]
fn rocprofv3_runs_compare_gpu_by_gpu() {
    let dir = tempfile::tempdir().unwrap();
    crate::write_rocprof_processes(
        dir.path(),
        &[
            ("base/host/100_results.json", 100, 0, 200, 100),
            ("base/host/101_results.json", 101, 1, 300, 100),
            ("base/host/102_results.json", 102, 2, 200, 100),
            ("new/host/201_results.json", 201, 1, 450, 150),
            ("new/host/200_results.json", 200, 0, 200, 100),
        ],
    );
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new", "--top", "1", "-o", "out"], @r"
    exit code: 0
    ----- stdout -----
    baseline  base (2 traces, rocprofv3, AMD Instinct MI300X, 4 kernel launches)
              note: rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)
    new       new (2 traces, rocprofv3, AMD Instinct MI300X, 4 kernel launches)
              note: rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)

    GPU busy of the busiest GPU: 0.400 ms (GPU 1) -> 0.600 ms (GPU 1) (+50.0%)

    GPU busy per GPU (ms; the last four: change by part, COLLECTIVES within KERNEL):
    GPU  BASELINE    NEW   DELTA  RATIO  KERNEL  COLLECTIVES  MEMORY    IDLE
    0       0.300  0.300       0  1.00x       0            0       0       0
    1       0.400  0.600  +0.200  1.50x  +0.200       +0.050       0  -0.200

    kernels, all 2 GPUs, largest changes first (µs):
    BASELINE  NEW  DELTA  RATIO  LAUNCHES  KERNEL
         500  650   +150  1.30x         2  Cijk_Alik_Bljk_gemm
    (1 more changed)

    kernel categories, all 2 GPUs, largest changes first (ms):
    BASELINE    NEW   DELTA  RATIO  LAUNCHES  CATEGORY
       0.500  0.650  +0.150  1.30x         2  GEMM
    (1 more changed)

    CSVs: out/gpu_timeline_diff.csv, out/kernel_diff.csv, out/kernel_category_diff.csv, out/collective_kernels_diff.csv
    ----- stderr -----
    [madengine] GPU 2 only in the baseline run: left out
    ");
    let csv = fs::read_to_string(dir.path().join("out/gpu_timeline_diff.csv")).unwrap();
    assert!(csv.starts_with("gpu,type,baseline ms,new ms,delta ms,ratio\n0,total_time,"), "{csv}");
    let csv = fs::read_to_string(dir.path().join("out/collective_kernels_diff.csv")).unwrap();
    insta::assert_snapshot!(csv, @r"
    gpu,name,baseline count,new count,baseline ms,new ms,delta ms,ratio
    0,collectives,1,1,0.1,0.1,0.0,1.0
    1,collectives,1,1,0.1,0.15,0.04999999999999999,1.4999999999999998
    ");

    // One process against another: the busy time's collective share.
    let text = run(&["report", "diff", "base/host/101_results.json", "new/host/201_results.json"]);
    assert!(
        text.contains(
            "\nGPU busy 0.400 -> 0.600 ms (+50.0%), of which collective kernels 0.100 -> 0.150 ms \
             (+50.0%)\n"
        ),
        "{text}"
    );

    let text = run(&["report", "diff", "base", "new", "--json", "--html", "gpus.html"]);
    let page = fs::read_to_string(dir.path().join("gpus.html")).unwrap();
    assert!(
        page.contains(
            "<h2>GPU busy per GPU</h2><p><b>GPU busy of the busiest GPU: 0.400 ms (GPU 1) \u{2192} \
             0.600 ms (GPU 1) (+50.0%)</b></p><table><tr><th>GPU</th>"
        ),
        "{page}"
    );
    assert!(page.contains("<th>delta</th><th>collectives</th>"), "{page}");
    assert!(page.contains("<td>+0.200</td><td>+0.050</td>"), "{page}");
    let json = crate::stdout_json(&text);
    assert_eq!(json["paired_by"], "gpu");
    let gpus: Vec<u64> =
        json["ranks"].as_array().unwrap().iter().map(|r| r["gpu"].as_u64().unwrap()).collect();
    assert_eq!(gpus, [0, 1]);
    assert!(json["ranks"][0].get("rank").is_none(), "{json}");
    // The collective kernels (TraceLens' COMM category), GPU by GPU and
    // in all, in ms with their launches.
    let comm = &json["ranks"][1]["collective_kernels"];
    assert_eq!(
        (comm["baseline"]["time"].as_f64(), comm["new"]["time"].as_f64()),
        (Some(0.1), Some(0.15)),
        "{json}"
    );
    assert_eq!(comm["new"]["count"], 1.0, "{json}");
    let all = &json["collective_kernels"];
    assert_eq!(
        (all["name"].as_str(), all["new"]["time"].as_f64()),
        (Some("collectives"), Some(0.25)),
        "{json}"
    );
    assert!((all["delta"].as_f64().unwrap() - 0.05).abs() < 1e-9, "{json}");
    // All kernels by TraceLens' rocprof categories: the collectives are COMM.
    let comm = json["kernel_categories"].as_array().unwrap().iter().find(|r| r["name"] == "COMM");
    assert_eq!(comm.unwrap()["new"]["time"].as_f64(), Some(0.25), "{json}");

    // A baseline kept as reports (`report summary -o`) pairs the same way.
    let text = run(&["report", "summary", "base", "-o", "kept", "--top", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let text = run(&["report", "diff", "kept", "new", "--top", "0", "--max-regression", "5"]);
    assert!(text.starts_with("exit code: 1\n"), "{text}");
    assert!(
        text.contains("GPU busy of the busiest GPU: 0.400 ms (GPU 1) -> 0.600 ms (GPU 1) (+50.0%)"),
        "{text}"
    );
    assert!(text.contains("GPU 2 only in the baseline run: left out"), "{text}");
    // The kept kernel tables still tell the collective kernels apart.
    assert!(text.contains("\n1       0.400  0.600  +0.200  1.50x  +0.200       +0.050"), "{text}");
    assert!(
        text.ends_with("error: GPU busy changed +50.0%, more than --max-regression 5%\n"),
        "{text}"
    );

    // Two processes of one run on one GPU: not a run to pair.
    fs::write(dir.path().join("new/host/202_results.json"), crate::rocprof_process(202, 1, 10))
        .unwrap();
    let text = run(&["report", "diff", "base", "new"]);
    assert!(text.starts_with("exit code: 2\n"), "{text}");
    assert!(
        text.contains(
            "new holds two traces of GPU 1 (new/host/201_results.json and \
             new/host/202_results.json): runs are compared GPU by GPU"
        ),
        "{text}"
    );

    // Every trace is read before the pairing: one that cannot be read is
    // named, and nothing is compared.
    let cut = crate::rocprof_process(202, 2, 10);
    fs::write(dir.path().join("new/host/202_results.json"), &cut[..cut.len() / 2]).unwrap();
    let text = run(&["report", "diff", "base", "new", "-o", "cut"]);
    assert!(text.starts_with("exit code: 3\n"), "{text}");
    assert!(text.contains("error: cannot read new/host/202_results.json: "), "{text}");
    assert!(text.contains("truncated"), "{text}");
    assert!(!dir.path().join("cut").exists(), "{text}");
}

/// A multi-node rocprofv3 run has a directory per node (`<hostname>/`,
/// under `node_N/` when gathered), each with its GPUs 0, 1, ...: two runs
/// compare GPU by GPU within each node, the nodes paired by directory name
/// when one run's names are all in the other (a node missing from one run
/// then shifts nothing), else in the order of their directories (`node_2`
/// before `node_10`).
#[test]
fn multi_node_rocprofv3_runs_compare_node_by_node() {
    let dir = tempfile::tempdir().unwrap();
    for (run, hosts, slow) in [("base", ["h1", "h2"], 300), ("new", ["h7", "h3"], 400)] {
        for (node, host) in [2, 10].into_iter().zip(hosts) {
            for gpu in 0..2 {
                // Node 10's GPU 1 is the busiest; in the new run, slower.
                let gemm = if node == 10 && gpu == 1 { slow } else { 200 };
                let file = format!("{run}/node_{node}/{host}/{}_results.json", 100 + gpu);
                crate::write_rocprof_process(&dir.path().join(file), 100 + gpu, gpu, gemm);
            }
        }
    }
    let run = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let text = run(&["report", "diff", "base", "new", "--top", "0", "-o", "out"]);
    let table = &text[text.find("GPU busy of").unwrap()..text.find("\nCSVs").unwrap()];
    insta::assert_snapshot!(table, @r"
    GPU busy of the busiest GPU: 0.400 ms (node 1 GPU 1) -> 0.500 ms (node 1 GPU 1) (+25.0%)

    GPU busy per GPU (ms; the last four: change by part, COLLECTIVES within KERNEL):
    NODE:GPU  BASELINE    NEW   DELTA  RATIO  KERNEL  COLLECTIVES  MEMORY    IDLE
    0:0          0.300  0.300       0  1.00x       0            0       0       0
    0:1          0.300  0.300       0  1.00x       0            0       0       0
    1:0          0.300  0.300       0  1.00x       0            0       0       0
    1:1          0.400  0.500  +0.100  1.25x  +0.100            0       0  -0.100
    ");
    assert!(
        text.contains(
            "compared GPU by GPU within each node, the nodes paired by the name of their \
             directories (node 0: base/node_2/h1 and new/node_2/h7; node 1: base/node_10/h2 and \
             new/node_10/h3)"
        ),
        "{text}"
    );
    let csv = fs::read_to_string(dir.path().join("out/gpu_timeline_diff.csv")).unwrap();
    assert!(csv.starts_with("node:gpu,type,"), "{csv}");
    assert!(csv.contains("\n1:1,busy_time,"), "{csv}");
    let csv = fs::read_to_string(dir.path().join("out/collective_kernels_diff.csv")).unwrap();
    assert!(csv.starts_with("node:gpu,name,baseline count,"), "{csv}");
    assert!(csv.contains("\n1:1,collectives,1,1,0.1,0.1,0.0,1.0\n"), "{csv}");

    // The `(node, gpu)` of each pair `--json` lists.
    let pairs = |json: &serde_json::Value| -> Vec<(u64, u64)> {
        let keys = json["ranks"].as_array().unwrap().iter();
        keys.map(|r| (r["node"].as_u64().unwrap(), r["gpu"].as_u64().unwrap())).collect()
    };
    let json = crate::stdout_json(&run(&["report", "diff", "base", "new", "--json"]));
    assert_eq!(pairs(&json), [(0, 0), (0, 1), (1, 0), (1, 1)]);

    // Kept as reports (all in one directory), each pairs by its trace's node.
    let text = run(&["report", "summary", "base", "-o", "kept", "--top", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    let json = crate::stdout_json(&run(&["report", "diff", "kept", "new", "--json"]));
    assert_eq!(pairs(&json), [(0, 0), (0, 1), (1, 0), (1, 1)]);
    assert_eq!(json["ranks"][3]["baseline"], "kept/node_10_h2_101_results", "{json}");

    // A node only one run has is named and left out.
    fs::remove_dir_all(dir.path().join("new/node_10")).unwrap();
    let text = run(&["report", "diff", "base", "new", "--top", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(
        text.contains("node 1 GPU 0, node 1 GPU 1 only in the baseline run: left out"),
        "{text}"
    );

    // The first node missing instead: the second still pairs with its namesake.
    fs::remove_dir_all(dir.path().join("new")).unwrap();
    for gpu in 0..2 {
        let file = format!("new/node_10/h3/{}_results.json", 100 + gpu);
        crate::write_rocprof_process(&dir.path().join(file), 100 + gpu, gpu, 200);
    }
    let text = run(&["report", "diff", "base", "new", "--top", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(
        text.contains("(node 0: base/node_2/h1 and -; node 1: base/node_10/h2 and new/node_10/h3)"),
        "{text}"
    );
    assert!(
        text.contains("node 0 GPU 0, node 0 GPU 1 only in the baseline run: left out"),
        "{text}"
    );
    assert!(text.contains("\n1:1          0.400  0.300"), "{text}");

    // Hosts of other names, not gathered: the nodes pair in order.
    for (run, hosts) in [("raw_base", ["h1", "h2"]), ("raw_new", ["h7", "h3"])] {
        for host in hosts {
            let file = format!("{run}/{host}/100_results.json");
            crate::write_rocprof_process(&dir.path().join(file), 100, 0, 200);
        }
    }
    let text = run(&["report", "diff", "raw_base", "raw_new", "--top", "0"]);
    assert!(text.starts_with("exit code: 0\n"), "{text}");
    assert!(
        text.contains(
            "the nodes in order of their directories (node 0: raw_base/h1 and raw_new/h3; node \
             1: raw_base/h2 and raw_new/h7)"
        ),
        "{text}"
    );
}

/// rocprofv3's SQLite output (rocpd), which TraceLens cannot read, compares
/// as its JSON would: here two runs of one process, the new one's first GEMM
/// 500 ns longer.
#[test]
fn rocpd_databases_compare_as_rocprofv3_traces() {
    let dir = tempfile::tempdir().unwrap();
    let db = synthetic().join("run/rocprof_output/1e4d92661463/1234_results.db");
    for run in ["base", "new"] {
        let to = dir.path().join(run).join("host/1234_results.db");
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&db, &to).unwrap();
    }
    rusqlite::Connection::open(dir.path().join("new/host/1234_results.db"))
        .unwrap()
        .execute_batch(r#"UPDATE rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5 SET "end" = "end" + 500 WHERE id = 1;"#)
        .unwrap();
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new"], @r"
    exit code: 0
    ----- stdout -----
    baseline  base/host/1234_results.db (rocprofv3, AMD Instinct MI300X, 3 kernel launches)
              note: rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)
    new       new/host/1234_results.db (rocprofv3, AMD Instinct MI300X, 3 kernel launches)
              note: rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)

    GPU busy 0.002 -> 0.003 ms (+21.7%), of which collective kernels 0.001 -> 0.001 ms (+0.0%)

    TIMELINE (ms)  BASELINE    NEW   DELTA  RATIO
    total_time        0.008  0.008       0  1.00x
    kernel            0.002  0.002  +0.001  1.29x
    memory            0.001  0.001       0  1.00x
    busy_time         0.002  0.003  +0.001  1.22x
    idle              0.006  0.005  -0.001  0.91x

    kernels, largest changes first (µs):
    BASELINE    NEW   DELTA  RATIO  LAUNCHES  KERNEL
       0.900  1.400  +0.500  1.56x         2  Cijk_Alik_Bljk_HHS_BH_MT64x64x32

    kernel categories, largest changes first (ms):
    BASELINE    NEW    DELTA  RATIO  LAUNCHES  CATEGORY
       0.001  0.001  +<0.001  1.56x         2  GEMM
    ----- stderr -----
    ");
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "summary", "new", "--json", "-o", "out"].map(std::ffi::OsStr::new),
        &[],
    );
    let json = crate::stdout_json(&text);
    let trace = &json["traces"][0];
    assert_eq!(trace["trace"], "new/host/1234_results.db", "{json}");
    assert_eq!((&trace["format"], &trace["outcome"]), (&"rocprofv3".into(), &"rocprofv3".into()));
    assert_eq!(trace["gpu_index"], 0);
    assert_eq!(trace["gpus"][0], "AMD Instinct MI300X");
    // The database is read, never written.
    assert_eq!(
        fs::read(dir.path().join("base/host/1234_results.db")).unwrap(),
        fs::read(&db).unwrap()
    );
}

/// A Perfetto trace (rocprofv3 `--output-format pftrace`) compares with
/// the same run's rocpd database; beside it, the database is read, not both.
/// Both name their kernels by the truncated name (the Perfetto trace's
/// slices carry the demangled one, the database's view the formatted one).
#[test]
fn a_pftrace_compares_with_a_database_and_beside_one_is_left_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = synthetic().join("run/rocprof_output/1e4d92661463/1234_results.db");
    let pftrace = synthetic().join("pftrace/rocprofv3/1234_results.pftrace");
    for (run, from) in [("base", &db), ("new", &pftrace)] {
        let to = dir.path().join(run).join("host").join(from.file_name().unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(from, &to).unwrap();
    }
    cli_snapshot!(dir.path(), ["report", "diff", "base", "new"], @r"
    exit code: 0
    ----- stdout -----
    baseline  base/host/1234_results.db (rocprofv3, AMD Instinct MI300X, 3 kernel launches)
              note: rocprofv3 records: TraceLens' rocprof tables (no compute/communication split, no ops)
    new       new/host/1234_results.pftrace (rocprofv3, 3 kernel launches)
              note: rocprofv3 records from Perfetto slices: TraceLens' rocprof tables (no compute/communication split, no ops); profiled time is the span of its slices

    GPU busy 0.002 -> 0.002 ms (+0.0%), of which collective kernels 0.001 -> 0.001 ms (+0.0%)

    TIMELINE (ms)  BASELINE    NEW  DELTA  RATIO
    total_time        0.008  0.008      0  1.00x
    kernel            0.002  0.002      0  1.00x
    memory            0.001  0.001      0  1.00x
    busy_time         0.002  0.002      0  1.00x
    idle              0.006  0.006      0  1.00x

    kernels, largest changes first (µs):
    no change

    kernel categories, largest changes first (ms):
    no change
    ----- stderr -----
    ");
    fs::copy(&pftrace, dir.path().join("base/host/1234_results.pftrace")).unwrap();
    let (text, _) = crate::run_cli(
        dir.path(),
        &["report", "summary", "base", "--json", "-o", "out"].map(std::ffi::OsStr::new),
        &[],
    );
    let json = crate::stdout_json(&text);
    let traces: Vec<_> = json["traces"].as_array().unwrap().iter().map(|t| &t["trace"]).collect();
    assert_eq!(traces, ["base/host/1234_results.db"], "{json}");
}

/// Runs of several Perfetto traces that name no GPU (rocprofv3's default
/// `--agent-index`) cannot be paired GPU by GPU: the error says how to
/// capture them so they can.
#[test]
fn pftrace_runs_without_gpu_indices_say_how_to_get_them() {
    let dir = tempfile::tempdir().unwrap();
    let pftrace = synthetic().join("pftrace/timestamps/1234_results.pftrace");
    for run in ["base", "new"] {
        for pid in ["1234", "5678"] {
            let to = dir.path().join(run).join(format!("host/{pid}_results.pftrace"));
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(&pftrace, &to).unwrap();
        }
    }
    let (code, _, stderr) = crate::madengine(dir.path(), &["report", "diff", "base", "new"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--agent-index type-relative"), "{stderr}");
}

/// The same BERT on an MI300X and an H100 (public traces): their GEMM
/// shapes match by op, shape and dtype, each side's TFLOPS/s is that
/// shape's FLOPs over its kernel time, and `--max-gemm-regression` names
/// the shapes that lost more (exit 1), from traces and from the report
/// directories `report summary` wrote alike.
#[test]
fn gemm_shapes_compare_by_tflops_and_gate() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let trace = |gpu: &str| {
        root.join(format!("kineto/tracelens/{gpu}/gaunernst_bert-small-uncased__1016001.json.gz"))
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&std::ffi::OsStr]| crate::run_cli(dir.path(), args, &[]).0;
    let (mi300, h100) = (trace("mi300"), trace("h100"));
    let text = run(&[
        "report".as_ref(),
        "diff".as_ref(),
        mi300.as_os_str(),
        h100.as_os_str(),
        "--top".as_ref(),
        "2".as_ref(),
        "--max-gemm-regression".as_ref(),
        "30".as_ref(),
    ]);
    let at = text.find("\nGEMM shapes").unwrap() + 1;
    let section = &text[at..at + text[at..].find("\n\n").unwrap()];
    insta::assert_snapshot!(section, @"
    GEMM shapes, largest changes of time first (TFLOPS/s per side):
    BASELINE    NEW  CHANGE  CALLS  SHAPE
       172.7  106.9  -38.1%      1  aten::addmm 141x30522x512 bf16
        14.7   12.7  -13.2%     17  aten::addmm 141x512x512 bf16
    (2 more)
    ");
    // Its attention shape, likewise (gated by --max-shape-regression, not here).
    let at = text.find("\nAttention and convolution shapes").unwrap() + 1;
    let section = &text[at..at + text[at..].find("\n\n").unwrap()];
    insta::assert_snapshot!(section, @"
    Attention and convolution shapes, largest changes of time first (TFLOPS/s per side):
    BASELINE  NEW   CHANGE  CALLS  SHAPE
         1.4  4.4  +203.8%      4  aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16
    ");
    assert!(text.starts_with("exit code: 1"), "{text}");
    let stderr = text.split("----- stderr -----\n").nth(1).unwrap();
    insta::assert_snapshot!(stderr, @"error: GEMM aten::addmm 141x30522x512 bf16 lost 38.1% of its TFLOPS/s (172.7 -> 106.9), more than --max-gemm-regression 30%");
    // The same from the report directories.
    for (gpu, t) in [("a", &mi300), ("b", &h100)] {
        let out = run(&[
            "report".as_ref(),
            "summary".as_ref(),
            t.as_os_str(),
            "-o".as_ref(),
            gpu.as_ref(),
        ]);
        assert!(out.starts_with("exit code: 0"), "{out}");
    }
    let report = |side: &str| {
        std::fs::read_dir(dir.path().join(side)).unwrap().next().unwrap().unwrap().path()
    };
    let (a, b) = (report("a"), report("b"));
    let json = run(&[
        "report".as_ref(),
        "diff".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--json".as_ref(),
        "--max-gemm-regression".as_ref(),
        "30".as_ref(),
    ]);
    assert!(json.starts_with("exit code: 1"), "{json}");
    let body = json.split("----- stdout -----\n").nth(1).unwrap();
    let body = body.split("----- stderr -----").next().unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let regressed = v["gemm_regressions"].as_array().unwrap();
    assert_eq!(regressed.len(), 1, "{regressed:?}");
    assert_eq!(regressed[0]["shape"], "aten::addmm 141x30522x512 bf16");
    let first = &v["gemms"][0];
    assert_eq!(first["name"], "aten::addmm 141x30522x512 bf16");
    assert!((first["tflops_change_pct"].as_f64().unwrap() + 38.137).abs() < 1e-3, "{first}");
    let attention = &v["op_shapes"][0];
    assert_eq!(attention["name"], "aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16");
    let calls = |side: &str| attention[side]["count"].as_f64();
    assert_eq!((calls("baseline"), calls("new")), (Some(4.0), Some(4.0)), "{attention}");
    assert!(attention["new_tflops"].as_f64().unwrap() > 0.0, "{attention}");
}

/// `--max-shape-regression` gates attention and convolution shapes as
/// `--max-gemm-regression` gates GEMMs: the BERT's attention ran at a
/// third of its H100 rate on the MI300X (public traces), so the H100 → MI300X
/// comparison names it and exits 1; a limit past every change passes.
#[test]
fn attention_shapes_gate_as_gemms_do() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let trace = |gpu: &str| {
        root.join(format!("kineto/tracelens/{gpu}/gaunernst_bert-small-uncased__1016001.json.gz"))
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |limit: &str| {
        let (h100, mi300) = (trace("h100"), trace("mi300"));
        let args: [&std::ffi::OsStr; 7] = [
            "report".as_ref(),
            "diff".as_ref(),
            h100.as_os_str(),
            mi300.as_os_str(),
            "--json".as_ref(),
            "--max-shape-regression".as_ref(),
            limit.as_ref(),
        ];
        crate::run_cli(dir.path(), &args, &[]).0
    };
    let text = run("60");
    assert!(text.starts_with("exit code: 1"), "{text}");
    let stderr = text.split("----- stderr -----\n").nth(1).unwrap();
    assert!(
        stderr.contains(
            "error: aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16 lost 67.1% of \
             its TFLOPS/s (4.4 -> 1.4), more than --max-shape-regression 60%"
        ),
        "{stderr}"
    );
    let body = text.split("----- stdout -----\n").nth(1).unwrap();
    let body = body.split("----- stderr -----").next().unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let names: Vec<&str> = v["shape_regressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["shape"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"aten::_scaled_dot_product_flash_attention 1x8x141x141x64 bf16"),
        "{names:?}"
    );
    assert_eq!(v["gemm_regressions"].as_array().map(Vec::len), Some(0));
    let text = run("99");
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(
        text.contains(
            "every op shape of both sides kept its TFLOPS/s within --max-shape-regression 99%"
        ),
        "{text}"
    );
}
