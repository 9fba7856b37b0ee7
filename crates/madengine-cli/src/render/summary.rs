//! `report summary`: the per-trace tables, the cross-rank, cross-GPU and cycle tables, the collective report.

use super::*;
use crate::render::ViewText;

/// Lines under a run's cross-rank table ([`trace_report::spread`]), so
/// a run of many ranks need not be read row by row: its slowest rank against
/// its fastest and (with 3 or more) the median; and the rank with the least
/// exposed communication, the one the others waited for.
pub(crate) fn spread(run: &[trace_report::RankRow]) -> Vec<String> {
    let spread = trace_report::spread(run);
    let mut lines = Vec::new();
    if let Some((slowest, fastest)) = spread.slowest {
        // A rank with no GPU time at all has no ratio to it.
        let times = match slowest.total / fastest.total {
            ratio if ratio.is_finite() => format!("{ratio:.2}x"),
            _ => "against".into(),
        };
        let mut line = format!(
            "rank {} is the slowest, {:.3} ms: {times} rank {}, the fastest ({:.3} ms)",
            slowest.rank, slowest.total, fastest.rank, fastest.total
        );
        if let Some(median) = spread.median {
            line.push_str(&format!("; median {median:.3} ms over {} ranks", run.len()));
        }
        lines.push(line);
    }
    if let Some(r) = spread.waited_for {
        lines.push(format!(
            "least exposed comm: rank {}, {:.3} ms (in a job that synchronizes, the rank the \
             others waited for)",
            r.rank, r.exposed_comm
        ));
    }
    lines
}

/// What names a profiling cycle's slowest trace: its rank, and its path in
/// the run.
pub(crate) fn slowest_text(c: &trace_report::CycleRow) -> String {
    let path = c.slowest.strip_prefix(&c.run).unwrap_or(&c.slowest).display();
    match c.rank {
        Some(rank) => format!("rank {rank}: {path}"),
        None => path.to_string(),
    }
}

/// Why a rocprofv3 trace is in no cross-GPU table, as a note says it.
pub(crate) fn left_out_of_gpus(left: &trace_report::LeftOut) -> String {
    match left {
        trace_report::LeftOut::SeveralGpus { trace } => format!(
            "{} ran its kernels on several GPUs: left out of the cross-GPU table",
            trace.display()
        ),
        trace_report::LeftOut::GpuTwice { dir, traces, gpu, claimed_by: [a, b] } => format!(
            "no cross-GPU table for the {traces} rocprofv3 traces in {}: GPU {gpu} ran the kernels \
             of two ({} and {}), so they are not one run's",
            if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir }.display(),
            a.display(),
            b.display()
        ),
    }
}

/// Each multi-rank run's collective report: the matched collectives that
/// cost the most, and the straggler table (who arrived last, how long the
/// others waited).
fn run_collectives(text: &mut String, reports: &[trace_report::RunCollectives]) {
    use crate::render::shown;
    use trace_report::number as num;
    for r in reports {
        let mut heading = format!("collectives matched across ranks (µs), run {}", r.run.display());
        if let Some(cycle) = r.cycle {
            heading.push_str(&format!(", {cycle}"));
        }
        if !text.is_empty() && !text.ends_with("\n\n") {
            text.push('\n');
        }
        text.push_str(&format!(
            "{heading}: {} matched{}; CSVs: {}\n",
            r.matched,
            if r.simplified {
                " by their order in each rank (the traces name no process group)"
            } else {
                ""
            },
            r.csv_dir.display()
        ));
        if !r.top.is_empty() {
            text.push_str(
                "  ID                LATENCY  START SKEW  FIRST  END SKEW      BUS BW  COLLECTIVE\n",
            );
            for t in &r.top {
                let name = [
                    t.get("Collective name").and_then(|v| v.as_str()).unwrap_or("(not named)"),
                    t.get("dtype").and_then(|v| v.as_str()).unwrap_or(""),
                ]
                .join(" ");
                let size = num(t, "Full msg size (MB)")
                    .map(|mb| format!(", {mb:.1} MiB"))
                    .unwrap_or_default();
                text.push_str(&format!(
                    "  {:<16} {:>8} {:>11} {:>6} {:>9} {:>11}  {}{}\n",
                    t.get("collective_id").and_then(|v| v.as_str()).unwrap_or(""),
                    shown(num(t, "comm_latency"), 1),
                    shown(num(t, "skew in start time"), 1),
                    shown(num(t, "earliest arrival rank"), 0),
                    shown(num(t, "skew in end time"), 1),
                    num(t, "bus bw (GB/s)").map_or("-".to_string(), |b| format!("{b:.1} GB/s")),
                    name.trim(),
                    size,
                ));
            }
        }
        if !r.straggler.is_empty() {
            let node_column = r.spans_nodes();
            text.push_str(&format!(
                "  RANK{}  ARRIVED LAST  WAITED µs (TOTAL)  WAITED µs (MEAN)  COLLECTIVES µs\n",
                if node_column { "  NODE" } else { "" }
            ));
            for s in r.stragglers() {
                text.push_str(&format!(
                    "  {:<4}{}  {:>3} ({:>5}%)  {:>17}  {:>16}  {:>14}\n",
                    shown(num(s, "rank"), 0),
                    if node_column {
                        format!("  {:<4}", shown(num(s, "node_id"), 0))
                    } else {
                        String::new()
                    },
                    shown(num(s, "times_arrived_last"), 0),
                    shown(num(s, "pct_arrived_last"), 1),
                    shown(num(s, "total_wait_time_us"), 1),
                    shown(num(s, "mean_wait_time_us"), 1),
                    shown(num(s, "total_nccl_dur_us"), 1),
                ));
            }
        }
    }
}

/// The reports the nodes made, read in place of their traces.
pub(crate) fn node_reports(reports: &[std::path::PathBuf]) -> Result<(), Error> {
    let mut text = format!(
        "{} made on the nodes read (no trace read again; --from-traces reads the traces):\n",
        plural(reports.len(), "report")
    );
    for report in reports {
        text.push_str(&format!("   {}\n", report.display()));
    }
    text.push('\n');
    out(&text)
}

pub(crate) fn summaries(
    views: &[trace_report::TraceView],
    ranks: &[trace_report::RankRow],
    cycles: &[trace_report::CycleRow],
    gpus: &[trace_report::GpuRow],
    collectives: &[trace_report::RunCollectives],
) -> Result<(), Error> {
    let mut text = String::new();
    for v in views {
        one_trace(&mut text, v);
    }
    cross_rank(&mut text, ranks);
    profiling_cycles(&mut text, cycles);
    cross_gpu(&mut text, gpus);
    run_collectives(&mut text, collectives);
    if views.is_empty() {
        text.push_str("no PyTorch or rocprofv3 traces found\n");
    }
    out(&text)
}

fn pct(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.1}%")).unwrap_or_else(|| "-".into())
}

/// One trace's summary: its heading, notes, timeline, top rows, shapes.
fn one_trace(text: &mut String, v: &trace_report::TraceView) {
    text.push_str(&format!("== {}{}\n", v.trace.display(), v.heading_tags()));
    if let Some(error) = &v.error {
        text.push_str(&format!("   error: {error}\n\n"));
        return;
    }
    if let Some(warning) = v.warning() {
        text.push_str(&format!("   warning: {warning}\n"));
    }
    if let Some(note) = v.repaired_note() {
        text.push_str(&format!("   note: {note}\n"));
    }
    if v.outcome == Some(trace_summary::Outcome::NoGpuActivity) {
        text.push_str(&format!("   {}\n\n", v.note().unwrap_or_default()));
        return;
    }
    if let Some(note) = v.note() {
        text.push_str(&format!("   note: {note}\n"));
    }
    let parts: Vec<String> = v
        .parts()
        .iter()
        .filter(|(row, _)| v.timeline.iter().any(|r| r.0 == *row))
        .map(|(row, label)| {
            let part = format!("{label} {:.3} ms ({}", v.ms(row), pct(v.percent(row)));
            // rocprofv3's kernel time holds the collectives' (COMM rows).
            match v.comm_ms.filter(|c| *row == "kernel" && *c > 0.0) {
                Some(comm) => format!("{part}; collectives {comm:.3} ms)"),
                None => format!("{part})"),
            }
        })
        .collect();
    if v.timeline.iter().any(|r| r.0 == "total_time") {
        let what = match v.outcome {
            Some(trace_summary::Outcome::Rocprofv3) => "profiled",
            _ => "GPU time",
        };
        let total = v.ms("total_time");
        text.push_str(&format!(
            "   {what} {total:.3} ms{}: {}\n",
            v.steps_text(total),
            parts.join(", ")
        ));
    }
    for (title, rows) in [
        ("top kernels (total µs, share of kernel time)", &v.top_kernels),
        ("top ops (GPU ms launched directly, share)", &v.top_ops),
        ("op categories (GPU ms their ops launched directly, share)", &v.top_op_categories),
        ("kernel categories (GPU ms, share of kernel time)", &v.top_kernel_categories),
    ] {
        if !rows.is_empty() {
            text.push_str(&format!("   {title}:\n"));
        }
        let labels = crate::render::labels(rows, shorten);
        for (row, label) in rows.iter().zip(labels) {
            text.push_str(&format!(
                "     {:>12}  {:>6}  {label}\n",
                py(row.value),
                pct(row.percent),
            ));
        }
    }
    if let Some(short) = v.short_kernels.filter(|s| s.launches > 0) {
        let share =
            short.percent_of_total.map_or(String::new(), |p| format!(", {p:.1}% of the GPU time"));
        text.push_str(&format!(
            "   short kernels (< 10 µs): {} launch{}, {:.3} ms{share}\n",
            short.launches,
            if short.launches == 1 { "" } else { "es" },
            short.time_us / 1000.0
        ));
    }
    if !v.top_collectives.is_empty() {
        text.push_str("   collectives (total µs, calls, mean µs, bus bandwidth):\n");
    }
    for c in &v.top_collectives {
        let busbw = c.busbw_gbps.map_or("-".into(), |b| format!("{b:.1} GB/s"));
        text.push_str(&format!(
            "     {:>12}  {:>5}x  {:>10}  {:>11}  {}\n",
            py(c.total_us),
            c.count,
            format!("{:.1}", c.mean_us),
            busbw,
            c.call()
        ));
    }
    if v.shapes_recorded == Some(false) && !v.top_ops.is_empty() {
        text.push_str(
            "   no input shapes: its ops were recorded without record_shapes, so there are no \
             GEMM shapes and FLOPs (record with torch.profiler's record_shapes=True; \
             `madengine profile` records them)\n",
        );
    }
    let gemms = v.top_gemms.iter().map(|g| (g.shape.as_str(), &g.rated));
    rated_shapes(text, "GEMMs", gemms, v.gpu_arch.as_deref());
    let others = v.top_shapes.iter().map(|s| (s.shape.as_str(), &s.rated));
    rated_shapes(text, "Attention and convolutions", others, v.gpu_arch.as_deref());
    if let Some(note) = v.no_roofline_note() {
        text.push_str(&format!("   {note}\n"));
    }
    if let Some(dir) = &v.csv_dir {
        text.push_str(&format!("   CSVs: {}\n", dir.display()));
    }
    text.push('\n');
}

/// The cross-rank table of each run.
fn cross_rank(text: &mut String, ranks: &[trace_report::RankRow]) {
    let runs = trace_report::by_run(ranks);
    for run in &runs {
        let rows: Vec<[String; 7]> = run
            .iter()
            .map(|r| {
                [
                    r.rank.to_string(),
                    format!("{:.3}", r.computation),
                    format!("{:.3}", r.exposed_comm),
                    format!("{:.3}", r.idle),
                    format!("{:.3}", r.total),
                    if r.slowest { "<- slowest".into() } else { String::new() },
                    r.trace_in_run().display().to_string(),
                ]
            })
            .collect();
        text.push_str(&format!("cross-rank (ms), run {}", run[0].run.display()));
        if let Some(cycle) = run[0].cycle {
            text.push_str(&format!(", {cycle}"));
        }
        text.push_str(":\n");
        aligned(
            text,
            &["RANK", "COMPUTATION", "EXPOSED COMM", "IDLE", "TOTAL", "", "TRACE"],
            &rows,
            &[false, true, true, true, true, false, false],
        );
        for line in spread(run) {
            text.push_str(&line);
            text.push('\n');
        }
        if runs.len() > 1 {
            text.push('\n');
        }
    }
}

/// The profiling cycles of each job, against its first.
fn profiling_cycles(text: &mut String, cycles: &[trace_report::CycleRow]) {
    for job in trace_report::by_job(cycles) {
        if !text.is_empty() && !text.ends_with("\n\n") {
            text.push('\n');
        }
        let rows: Vec<[String; 5]> = job
            .iter()
            .zip(trace_report::vs_first(job))
            .map(|(c, change)| {
                [
                    format!("{} of {}", c.cycle.number, c.cycle.of),
                    c.traces.to_string(),
                    format!("{:.3}", c.gpu_ms),
                    change.map_or("-".into(), |p| format!("{p:+.1}%")),
                    slowest_text(c),
                ]
            })
            .collect();
        let each = if job[0].per_step { " per step" } else { "" };
        text.push_str(&format!(
            "profiling cycles (ms{each}, the slowest trace of each), run {}:\n",
            job[0].run.display()
        ));
        aligned(
            text,
            &["CYCLE", "TRACES", "GPU TIME", "VS CYCLE 1", "SLOWEST"],
            &rows,
            &[false, true, true, true, false],
        );
    }
}

/// The cross-GPU table of each rocprofv3 run.
fn cross_gpu(text: &mut String, gpus: &[trace_report::GpuRow]) {
    let dirs = trace_report::by_dir(gpus);
    for run in &dirs {
        if !text.is_empty() && !text.ends_with("\n\n") {
            text.push('\n');
        }
        let rows: Vec<[String; 9]> = run
            .iter()
            .map(|r| {
                [
                    r.gpu.to_string(),
                    format!("{:.3}", r.busy),
                    format!("{:.3}", r.kernel),
                    format!("{:.3}", r.comm),
                    format!("{:.3}", r.memory),
                    format!("{:.3}", r.idle),
                    format!("{:.3}", r.profiled),
                    if r.least_comm { "<- least COMM".into() } else { String::new() },
                    r.trace_in_run().display().to_string(),
                ]
            })
            .collect();
        text.push_str(&format!(
            "cross-GPU (ms), rocprofv3 processes in {}:\n",
            run[0].run.display()
        ));
        let header = ["GPU", "BUSY", "KERNEL", "COMM", "MEMORY", "IDLE", "PROFILED", "", "TRACE"];
        let numbers = [false, true, true, true, true, true, true, false, false];
        aligned(text, &header, &rows, &numbers);
    }
}

/// Op shapes with their rates (`title`: GEMMs, ...): total µs, calls,
/// TFLOPS/s and TB/s per call, and with a roofline (`arch`) the share of
/// it reached and the roof that bounds it.
fn rated_shapes<'a>(
    text: &mut String,
    title: &str,
    rows: impl ExactSizeIterator<Item = (&'a str, &'a trace_report::Rated)>,
    arch: Option<&str>,
) {
    if rows.len() == 0 {
        return;
    }
    let roof = match arch {
        Some(arch) => format!("; share of the {arch} roofline and its bound"),
        None => String::new(),
    };
    text.push_str(&format!(
        "   {title} (total µs, calls, TFLOPS/s and TB/s per call, mean{roof}):\n"
    ));
    for (shape, g) in rows {
        let roof = match (g.pct_roofline, g.bound) {
            (Some(pct), Some(bound)) => format!("  {:>6}  {bound:<7}", format!("{pct:.1}%")),
            _ if arch.is_some() => format!("  {:>6}  {:<7}", "-", ""),
            _ => String::new(),
        };
        text.push_str(&format!(
            "     {:>12}  {:>5}x  {:>7} TFLOPS/s  {:>6} TB/s{roof}  {}\n",
            py(g.total_us),
            g.count,
            crate::render::shown(g.tflops_per_s, 1),
            crate::render::shown(g.tb_per_s, 2),
            shape
        ));
    }
}
