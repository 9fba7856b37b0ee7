//! The tables of TraceLens' whole perf report this crate computes beyond
//! the core three, against TraceLens' own outputs on every trace of
//! `shared/fixtures/public/tracelens-expected-full/default/` (24 traces, the
//! project's H200 fixtures among them): the same files written, headers
//! equal, rows equal as multisets, cumulative columns as sequences.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

/// Each expected trace directory, with the trace it was made of.
fn expected(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    expected_in(root, "default")
}

/// [`expected`] of one set (`default`, `arch-MI300X`).
fn expected_in(root: &Path, set: &str) -> Vec<(PathBuf, PathBuf)> {
    let base = root.join("tracelens-expected-full").join(set);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    let mut stack = vec![base.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            if p.join("gpu_timeline.csv").is_file() {
                let rel = p.strip_prefix(&base).unwrap();
                let trace =
                    if rel.starts_with("fixtures") { repo.join(rel) } else { root.join(rel) };
                out.push((p, trace));
            } else {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Where `ours` differs from TraceLens' `theirs`: headers, rows as
/// multisets (the last column apart, compared as a sequence, when
/// `cumulative`).
fn differs(ours: &str, theirs: &str, cumulative: bool) -> Option<String> {
    let split = |csv: &str| -> (String, Vec<String>, Vec<String>) {
        let mut lines = csv.lines().map(str::to_string);
        let header = lines.next().unwrap_or_default();
        let (mut rows, mut last) = (Vec::new(), Vec::new());
        for l in lines {
            match cumulative {
                true => {
                    let (a, b) = l.rsplit_once(',').unwrap();
                    rows.push(a.to_string());
                    last.push(b.to_string());
                }
                false => rows.push(l),
            }
        }
        (header, rows, last)
    };
    let (h1, r1, c1) = split(ours);
    let (h2, r2, c2) = split(theirs);
    if h1 != h2 {
        return Some(format!("header\n ours:   {h1}\n theirs: {h2}"));
    }
    let count = |rows: Vec<String>| {
        let mut m = BTreeMap::new();
        for r in rows {
            *m.entry(r).or_insert(0) += 1;
        }
        m
    };
    let (m1, m2) = (count(r1), count(r2));
    if m1 != m2 {
        let only_ours: Vec<_> = m1.keys().filter(|k| m1.get(*k) != m2.get(*k)).take(3).collect();
        let only_theirs: Vec<_> = m2.keys().filter(|k| m1.get(*k) != m2.get(*k)).take(3).collect();
        return Some(format!("rows\n ours:   {only_ours:#?}\n theirs: {only_theirs:#?}"));
    }
    (c1 != c2).then(|| format!("cumulative column\n ours:   {c1:?}\n theirs: {c2:?}"))
}

/// `ops_summary_by_category`, `ops_unique_args`, the `GEMM` perf-model
/// sheet, `short_kernel_histogram` and `short_kernels_summary` on every
/// expected trace: written where TraceLens wrote them, and equal (`GEMM`
/// byte for byte).
#[test]
fn perf_report_tables_match_tracelens() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let sets = expected(&root);
    assert_eq!(sets.len(), 24, "{sets:?}");
    let mut failures = Vec::new();
    let mut compared = BTreeMap::new();
    for (dir, trace) in &sets {
        let summary = trace_summary::summarize_file(trace).unwrap();
        let sheet = |name: &str| match name {
            "GEMM" => summary.gemm.clone(),
            _ => summary.perf_sheets.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone()),
        };
        // Every perf-model sheet this crate can write: where TraceLens wrote
        // none, it must write none either.
        let sheets: Vec<(&str, Option<trace_summary::Table>, bool)> =
            trace_summary::PERF_SHEETS.iter().map(|&n| (n, sheet(n), false)).collect();
        let tables = [
            ("ops_summary_by_category", summary.ops_summary_by_category.clone(), true),
            ("ops_unique_args", summary.ops_unique_args.clone(), true),
            ("short_kernel_histogram", summary.short_kernel_histogram.clone(), false),
            ("short_kernels_summary", summary.short_kernels_summary.clone(), false),
        ];
        for (name, ours, cumulative) in tables.into_iter().chain(sheets) {
            let theirs = fs::read_to_string(dir.join(format!("{name}.csv"))).ok();
            let ours = ours.map(|t| t.to_csv());
            let what = format!("{}: {name}", trace.display());
            match (ours, theirs) {
                (None, None) => {}
                (Some(ours), Some(theirs)) => {
                    *compared.entry(name).or_insert(0) += 1;
                    if let Some(d) = differs(&ours, &theirs, cumulative) {
                        failures.push(format!("{what}: {d}"));
                    } else if !cumulative
                        && name.chars().next().unwrap().is_uppercase()
                        && ours != theirs
                    {
                        // Sorted by kernel time, then UID: a total order.
                        failures.push(format!("{what}: the rows' order"));
                    }
                }
                (o, t) => {
                    failures.push(format!("{what}: ours {} theirs {}", o.is_some(), t.is_some()))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n\n"));
    let expected = [
        ("BinaryElementwise", 7),
        ("CONV_bwd", 4),
        ("CONV_fwd", 4),
        ("GEMM", 19),
        ("Normalization", 3),
        ("Reduce_bwd", 14),
        ("Reduce_fwd", 17),
        ("SDPA_fwd", 3),
        ("UnaryElementwise", 8),
        ("ops_summary_by_category", 23),
        ("ops_unique_args", 23),
        ("short_kernel_histogram", 24),
        ("short_kernels_summary", 24),
    ];
    assert_eq!(compared, BTreeMap::from(expected));
}

/// With MI300X's roofline (TraceLens' `--gpu_arch_platform MI300X`, on
/// every trace, NVIDIA ones too, for the arithmetic): `GEMM.csv` and the
/// element-wise sheets gain the roofline columns, byte for byte as
/// TraceLens writes them; from the
/// trace's own GPU, only the MI300X traces get them, and the same.
#[test]
fn the_gemm_sheet_with_a_roofline_matches_tracelens() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let sets = expected_in(&root, "arch-MI300X");
    assert_eq!(sets.len(), 24, "{sets:?}");
    let mi300x = trace_summary::GpuArch::bundled("MI300X").unwrap();
    let given = trace_summary::Options::default()
        .with_gpu_arch(trace_summary::ArchChoice::Given(mi300x.clone()));
    let from_trace =
        trace_summary::Options::default().with_gpu_arch(trace_summary::ArchChoice::FromTrace);
    let (mut compared, mut detected, mut failures, mut sheets) = (0, 0, Vec::new(), 0);
    for (dir, trace) in &sets {
        let theirs = fs::read_to_string(dir.join("GEMM.csv")).ok();
        let summary = trace_summary::summarize_file_with(trace, &given).unwrap();
        let ours = summary.gemm.as_ref().map(|t| t.to_csv());
        if ours != theirs {
            failures.push(format!("{}: GEMM.csv differs", trace.display()));
        }
        for name in [
            "UnaryElementwise",
            "BinaryElementwise",
            "SDPA_fwd",
            "SDPA_bwd",
            "CONV_fwd",
            "CONV_bwd",
            "Normalization",
            "Reduce_fwd",
            "Reduce_bwd",
        ] {
            let theirs = fs::read_to_string(dir.join(format!("{name}.csv"))).ok();
            let ours = summary.perf_sheets.iter().find(|(n, _)| n == name).map(|(_, t)| t.to_csv());
            if ours != theirs {
                failures.push(format!("{}: {name}.csv differs", trace.display()));
            }
            sheets += usize::from(theirs.is_some());
        }
        compared += usize::from(theirs.is_some());
        let own = trace_summary::summarize_file_with(trace, &from_trace).unwrap();
        if own.gpus.iter().any(|g| g.contains("MI300X")) {
            detected += 1;
            assert_eq!(own.gpu_arch.as_ref(), Some(&mi300x), "{}", trace.display());
            assert_eq!(own.gemm.map(|t| t.to_csv()), theirs, "{}", trace.display());
        } else {
            assert_eq!(own.gpu_arch, None, "{}: {:?}", trace.display(), own.gpus);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((compared, detected, sheets), (19, 4, 60));
}

/// `unified_perf_summary` on every expected trace, with and without
/// MI300X's roofline: written where TraceLens wrote it (23 traces; not the
/// GPU-only one), rows equal as multisets, the cumulative column as a
/// sequence.
#[test]
fn the_unified_perf_summary_matches_tracelens() {
    let Some(root) = crate::public_dir::public_fixtures() else { return };
    let mi300x = trace_summary::GpuArch::bundled("MI300X").unwrap();
    let mut failures = Vec::new();
    let mut compared = BTreeMap::new();
    for (set, arch) in [
        ("default", trace_summary::ArchChoice::None),
        ("arch-MI300X", trace_summary::ArchChoice::Given(mi300x)),
    ] {
        let sets = expected_in(&root, set);
        assert_eq!(sets.len(), 24, "{sets:?}");
        let options = trace_summary::Options::default().with_gpu_arch(arch);
        for (dir, trace) in &sets {
            let summary = trace_summary::summarize_file_with(trace, &options).unwrap();
            let theirs = fs::read_to_string(dir.join("unified_perf_summary.csv")).ok();
            let ours = summary.unified_perf_summary.as_ref().map(|t| t.to_csv());
            let what = format!("{set} {}: unified_perf_summary", trace.display());
            match (ours, theirs) {
                (None, None) => {}
                (Some(ours), Some(theirs)) => {
                    *compared.entry(set).or_insert(0) += 1;
                    if let Some(d) = differs(&ours, &theirs, true) {
                        failures.push(format!("{what}: {d}"));
                    }
                }
                (o, t) => {
                    failures.push(format!("{what}: ours {} theirs {}", o.is_some(), t.is_some()))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n\n"));
    assert_eq!(compared, BTreeMap::from([("arch-MI300X", 23), ("default", 23)]));
}

/// A Kineto trace of `events` (objects as JSON text).
fn kineto(events: &[String]) -> String {
    format!("{{\"traceEvents\": [{}]}}", events.join(", "))
}

/// A complete event.
fn x(cat: &str, name: &str, tid: u32, ts: u64, dur: u64, args: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": {tid}, "ts": {ts}, "dur": {dur}, "args": {{{args}}}}}"#
    )
}

/// A launch at `ts` on thread `tid` and its kernel on stream 7, linked by
/// `correlation` (the flow pair too).
fn launch(tid: u32, ts: u64, kernel: &str, at: u64, correlation: u32) -> Vec<String> {
    let flow = |ph: &str, tid: u32, ts: u64| {
        format!(
            r#"{{"ph": "{ph}", "cat": "ac2g", "name": "ac2g", "id": {correlation}, "pid": 1, "tid": {tid}, "ts": {ts}{}}}"#,
            if ph == "f" { r#", "bp": "e""# } else { "" }
        )
    };
    let c = format!(r#""correlation": {correlation}"#);
    vec![
        x("cuda_runtime", "cudaLaunchKernel", tid, ts, 2, &c),
        x("kernel", kernel, 7, at, 10, &format!(r#"{c}, "stream": 7"#)),
        flow("s", tid, ts),
        flow("f", 7, at),
    ]
}

/// The unified table's rules on a hand-built training step: the attention
/// backward's wrapper op, with no model of its own but the sole backward
/// op of a modelled forward, is its row, with the forward's backward
/// FLOPs (§5.1, §7.4.3; `SDPA_bwd` the sheet of that pass); a kernel
/// no collected op claims is a synthetic op under its CPU op, with the next
/// UID after the last element's.
#[test]
fn a_sole_backward_op_and_a_synthetic_op_in_the_unified_table() {
    let dims = r#""Input Dims": [[1, 8, 128, 64], [1, 8, 128, 64], [1, 8, 128, 64], [], [], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", ""], "Input Strides": [[], [], [], [], [], []], "Concrete Inputs": ["", "", "", "0.0", "False", ""]"#;
    let mut events = vec![x(
        "cpu_op",
        "aten::_scaled_dot_product_flash_attention",
        1,
        100,
        50,
        &format!(r#"{dims}, "Sequence number": 5"#),
    )];
    events.extend(launch(1, 110, "flash_fwd_kernel", 200, 1));
    events.push(x(
        "cpu_op",
        "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0",
        2,
        1000,
        100,
        r#""Sequence number": 5"#,
    ));
    events.push(x("cpu_op", "ScaledDotProductFlashAttentionBackward0", 2, 1005, 90, ""));
    events.push(x("cpu_op", "aten::_scaled_dot_product_flash_attention_backward", 2, 1010, 80, ""));
    events.extend(launch(2, 1020, "flash_bwd_kernel", 1100, 2));
    // An op launching one kernel itself and one through a modelled child.
    events.push(x("cpu_op", "aten::index", 1, 2000, 100, ""));
    events.extend(launch(1, 2010, "index_kernel", 2100, 3));
    events.push(x("cpu_op", "aten::copy_", 1, 2020, 50, ""));
    events.extend(launch(1, 2030, "copy_kernel", 2200, 4));
    let text = kineto(&events);
    let summary =
        trace_summary::summarize(text.as_bytes(), std::path::Path::new("t.json")).unwrap();
    let table = summary.unified_perf_summary.expect("collected ops");
    let col = |n: &str| table.column(n).unwrap_or_else(|| panic!("{n}: {:?}", table.header));
    let row = |name: &str| {
        table
            .rows
            .iter()
            .find(|r| r[0].text() == name)
            .unwrap_or_else(|| panic!("{name}: {table:?}"))
    };
    let b = row("ScaledDotProductFlashAttentionBackward0");
    assert_eq!(b[col("op category")].text(), "SDPA_bwd");
    assert_eq!(b[col("has_perf_model")].text(), "True");
    // Five matmuls of 1·8·2·128·128·64 FLOPs.
    assert_eq!(b[col("GFLOPS")].text(), "0.08388608");
    assert_eq!(b[col("Kernel Time (µs)_sum")].text(), "10");
    let f = row("aten::_scaled_dot_product_flash_attention");
    assert_eq!(f[col("GFLOPS")].text(), "0.033554432");
    assert!(
        table
            .rows
            .iter()
            .all(|r| r[0].text() != "aten::_scaled_dot_product_flash_attention_backward")
    );
    // aten::copy_ (modelled, failing without strides) is collected; the
    // gather kernel its parent launched is a synthetic op.
    let copy = row("aten::copy_");
    assert_eq!(
        (copy[col("has_perf_model")].text(), copy[col("perf_params")].text()),
        ("True".into(), String::new())
    );
    let s = row("aten::index->index_kernel (Synthetic Op)");
    assert_eq!(s[col("ex_UID")].text(), events.len().to_string());
    assert_eq!(s[col("has_perf_model")].text(), "False");
    let sheet = summary.perf_sheets.iter().find(|(n, _)| n == "SDPA_bwd").expect("SDPA_bwd");
    assert_eq!(sheet.1.rows.len(), 1);
    assert_eq!(sheet.1.rows[0][0].text(), "aten::_scaled_dot_product_flash_attention");
    assert_eq!(sheet.1.rows[0][sheet.1.column("GFLOPS_first").unwrap()].text(), "0.08388608");
}

/// vLLM's unified attention inside a detailed iteration annotation (on the
/// GPU stream's `gpu_user_annotation`, as TraceLens reads any category
/// holding `user_annotation`) gets the inference-attention model; the same
/// op outside any annotation keeps only its kernel time in the unified
/// table; a gated-delta op without one is absent (`NotImplementedError`).
#[test]
fn vllm_attention_reads_its_iteration_annotation() {
    let step = "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)";
    // q (N_Q, H_Q, d) = (6147, 32, 128); the KV cache (blocks, 16, 8, 128).
    let args = r#""Input Dims": [[6147, 32, 128], [4096, 16, 8, 128], [4096, 16, 8, 128], [6147, 32, 128], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", ""]"#;
    // An annotation that starts earlier but ends inside the op does not
    // hold it; the step annotation is the first by start that does.
    let mut events = vec![x("user_annotation", "warmup", 1, 10, 100, "")];
    events.push(x("gpu_user_annotation", step, 9, 50, 1000, ""));
    events.push(x("cpu_op", "vllm::unified_attention_with_output", 1, 100, 50, args));
    events.extend(launch(1, 110, "unified_attention_kernel", 200, 1));
    // Outside the annotation (and of other shapes, so a row of its own:
    // the unified table groups by name and args).
    let decode = args.replace("6147", "1");
    events.push(x("cpu_op", "vllm::unified_attention_with_output", 1, 2000, 50, &decode));
    events.extend(launch(1, 2010, "unified_attention_kernel", 2100, 2));
    events.push(x("cpu_op", "vllm::gdn_attention_core", 1, 3000, 50, args));
    events.extend(launch(1, 3010, "gdn_kernel", 3100, 3));
    let text = kineto(&events);
    let summary =
        trace_summary::summarize(text.as_bytes(), std::path::Path::new("t.json")).unwrap();
    let (_, sheet) =
        summary.perf_sheets.iter().find(|(n, _)| n == "InferenceAttention_fwd").unwrap_or_else(
            || panic!("{:?}", summary.perf_sheets.iter().map(|s| &s.0).collect::<Vec<_>>()),
        );
    assert_eq!(sheet.rows.len(), 1, "{sheet:?}");
    let cell = |t: &trace_summary::Table, r: &[trace_summary::Cell], c: &str| {
        r[t.column(c).unwrap_or_else(|| panic!("{c}: {:?}", t.header))].text()
    };
    let (h, d) = (32i128, 128i128);
    let flops = h * (2 * 23019520 * d) - h * 20971520 * d + h * (2 * 23019520 * d)
        - h * 20971520 * d
        + 2 * (h * (2 * 6144 * d));
    let gflops = trace_summary::py_float(flops as f64 / 1e9);
    assert_eq!(cell(sheet, &sheet.rows[0], "GFLOPS_first"), gflops);
    assert_eq!(cell(sheet, &sheet.rows[0], "param: c_sqsk"), "23019520");
    assert_eq!(cell(sheet, &sheet.rows[0], "param: N_KV"), "16");
    assert_eq!(cell(sheet, &sheet.rows[0], "Compute Spec"), "matrix_bf16");
    assert_eq!(cell(sheet, &sheet.rows[0], "name_count"), "1");

    let table = summary.unified_perf_summary.expect("collected ops");
    let rows: Vec<&Vec<trace_summary::Cell>> = table
        .rows
        .iter()
        .filter(|r| r[0].text() == "vllm::unified_attention_with_output")
        .collect();
    assert_eq!(rows.len(), 2, "{table:?}");
    let gflops_of: Vec<String> = rows.iter().map(|r| cell(&table, r, "GFLOPS")).collect();
    assert!(gflops_of.contains(&gflops) && gflops_of.contains(&String::new()), "{gflops_of:?}");
    assert!(table.rows.iter().all(|r| r[0].text() != "vllm::gdn_attention_core"));
}

/// apex's fused `ConvBias_` is modelled with its bias; its backward op
/// reads the forward of its `Sequence number` and moves to `CONV_bwd`
/// with the backward formulas (by hand: (8, 64, 56, 56) ⊛ (64, 64, 3, 3),
/// stride 1, padding 1).
#[test]
fn fused_conv_bias_backward_reads_its_forward() {
    let fwd = r#""Input Dims": [[8, 64, 56, 56], [64, 64, 3, 3], [1, 64, 1, 1], [], []], "Input type": ["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"], "Input Strides": [[200704, 3136, 56, 1], [576, 9, 3, 1], [64, 1, 1, 1], [], []], "Concrete Inputs": ["", "", "", "1", "1"], "Sequence number": 7"#;
    let mut events = vec![x("cpu_op", "ConvBias_", 1, 100, 50, fwd)];
    events.extend(launch(1, 110, "conv_fwd_kernel", 200, 1));
    let bwd =
        r#""Input Dims": [[8, 64, 56, 56]], "Input type": ["c10::Half"], "Sequence number": 7"#;
    events.push(x("cpu_op", "ConvBias_Backward", 2, 1000, 50, bwd));
    events.extend(launch(2, 1010, "conv_bwd_kernel", 1100, 2));
    // A backward whose forward is missing: no figures, no sheet row.
    let orphan = bwd.replace(": 7", ": 8");
    events.push(x("cpu_op", "ConvBias_Backward", 2, 2000, 50, &orphan));
    events.extend(launch(2, 2010, "conv_bwd_kernel", 2100, 3));
    let text = kineto(&events);
    let summary =
        trace_summary::summarize(text.as_bytes(), std::path::Path::new("t.json")).unwrap();
    let sheet = |n: &str| {
        &summary.perf_sheets.iter().find(|(s, _)| s == n).unwrap_or_else(|| panic!("{n}")).1
    };
    let cell = |t: &trace_summary::Table, c: &str| {
        t.rows[0][t.column(c).unwrap_or_else(|| panic!("{c}: {:?}", t.header))].text()
    };
    let (fwd, bwd) = (sheet("CONV_fwd"), sheet("CONV_bwd"));
    assert_eq!((fwd.rows.len(), bwd.rows.len()), (1, 1), "{fwd:?} {bwd:?}");
    let out = 8.0 * 64.0 * 56.0 * 56.0;
    let w = 64.0 * 64.0 * 9.0;
    let forward = 2.0 * (64.0 * 9.0) * out + out;
    assert_eq!(cell(fwd, "GFLOPS_first"), trace_summary::py_float(forward / 1e9));
    assert_eq!(cell(fwd, "param: bias"), "True");
    let backward = 2.0 * (64.0 * 9.0) * out + 2.0 * w * 8.0 * 56.0 * 56.0 + out;
    assert_eq!(cell(bwd, "name"), "ConvBias_Backward");
    assert_eq!(cell(bwd, "GFLOPS_first"), trace_summary::py_float(backward / 1e9));
    assert_eq!(cell(bwd, "name_count"), "1");
}
