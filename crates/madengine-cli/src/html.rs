//! `report summary --html`: one self-contained page, inline SVG and CSS, no
//! scripts, no external assets, so it opens anywhere (a laptop, an air-gapped
//! cluster's login node) and can be mailed as one file.

use std::{fmt::Write as _, path::Path};

use trace_summary::{DiffRow, Measure};

use trace_report::{
    CycleRow, GpuRow, RankRow, Rated, Roofline, TopRow, TraceView as SummaryView, by_dir, by_job,
    by_run, vs_first,
};

use crate::{
    error::Error,
    render,
    render::diff::{counts_text, ratio_text},
    render::{KINETO_PARTS, ROCPROF_BAR, ViewText},
};

/// A colour per part of the timeline, by label.
fn colour(label: &str) -> &'static str {
    match label {
        "computation" | "busy" => "#2e7d32",
        "exposed comm" => "#c62828",
        "exposed memcpy" | "memory" => "#ef6c00",
        "kernel" => "#1565c0",
        _ => "#9e9e9e",
    }
}

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em;word-break:break-all}
table{border-collapse:collapse;margin:.5em 0}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
td.name,th.name{text-align:left;font-family:monospace;word-break:break-all}
.note{background:#fff8e1;border-left:4px solid #ffb300;padding:4px 8px}
.error{background:#fdecea;border-left:4px solid #d32f2f;padding:4px 8px}
.legend span{display:inline-block;margin-right:1.2em}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}
.slowest{color:#c62828;font-weight:bold}
";

/// Escape text for HTML element content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn pct(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.1}%")).unwrap_or_else(|| "-".into())
}

/// A horizontal stacked bar: `parts` are (label, value, colour), drawn to
/// `width` pixels for `scale` (the value a full bar stands for).
fn stacked_bar(page: &mut String, parts: &[(&str, f64, &str)], scale: f64, width: f64) {
    let _ = write!(
        page,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="24" role="img">"#
    );
    let mut x = 0.0;
    for (label, value, colour) in parts {
        if *value <= 0.0 || scale <= 0.0 {
            continue;
        }
        let w = value / scale * width;
        let _ = write!(
            page,
            r#"<rect x="{x:.2}" y="0" width="{w:.2}" height="24" fill="{colour}"><title>{} {value:.3} ms</title></rect>"#,
            esc(label)
        );
        x += w;
    }
    page.push_str("</svg>");
}

fn top_table(page: &mut String, title: &str, unit: &str, rows: &[TopRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        page,
        r#"<h3>{}</h3><table><tr><th>{}</th><th>share</th><th class="name">name</th></tr>"#,
        esc(title),
        esc(unit)
    );
    let labels = crate::render::labels(rows, |n| crate::render::demangled(n).into_owned());
    for (row, label) in rows.iter().zip(labels) {
        let _ = write!(
            page,
            r#"<tr><td>{:.3}</td><td>{}</td><td class="name">{}</td></tr>"#,
            row.value,
            pct(row.percent),
            esc(&label)
        );
    }
    page.push_str("</table>");
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn trace_section(page: &mut String, v: &SummaryView) {
    let _ = write!(
        page,
        "<section><h2>{}{}</h2>",
        esc(&v.trace.display().to_string()),
        esc(&v.heading_tags())
    );
    if let Some(error) = &v.error {
        let _ = write!(page, r#"<p class="error">Could not be read: {}</p></section>"#, esc(error));
        return;
    }
    if let Some(warning) = v.warning() {
        let _ = write!(page, r#"<p class="error">{}.</p>"#, esc(&capitalized(&warning)));
    }
    if let Some(note) = v.repaired_note() {
        let _ = write!(page, r#"<p class="note">{}.</p>"#, esc(&capitalized(&note)));
    }
    if let Some(note) = v.note() {
        let _ = write!(page, r#"<p class="note">{}.</p>"#, esc(&capitalized(&note)));
    }
    if v.outcome == Some(trace_summary::Outcome::NoGpuActivity) {
        page.push_str("</section>");
        return;
    }
    let total = v.ms("total_time");
    let bar: Vec<(&str, f64, &str)> =
        v.bar_parts().iter().map(|(row, label)| (*label, v.ms(row), colour(label))).collect();
    let what = match v.outcome {
        Some(trace_summary::Outcome::Rocprofv3) => "Profiled time",
        _ => "GPU time",
    };
    let _ = write!(page, "<p>{what} {total:.3} ms{}</p>", v.steps_text(total));
    stacked_bar(page, &bar, total, 800.0);
    page.push_str(r#"<p class="legend">"#);
    for (row, label) in v.parts() {
        let _ = write!(
            page,
            r#"<span><i class="swatch" style="background:{}"></i>{label} {:.3} ms ({})</span>"#,
            colour(label),
            v.ms(row),
            pct(v.percent(row))
        );
    }
    page.push_str("</p>");
    top_table(page, "Top kernels", "total µs", &v.top_kernels);
    top_table(page, "Top ops (GPU time launched directly)", "ms", &v.top_ops);
    top_table(
        page,
        "Op categories (GPU time their ops launched directly)",
        "ms",
        &v.top_op_categories,
    );
    top_table(page, "Kernel categories", "ms", &v.top_kernel_categories);
    if !v.top_collectives.is_empty() {
        page.push_str(
            r#"<h3>Collectives (NCCL/RCCL kernels by call)</h3><table><tr><th>total µs</th><th>calls</th><th>mean µs</th><th>bus bandwidth</th><th class="name">call</th></tr>"#,
        );
        for c in &v.top_collectives {
            let busbw = c.busbw_gbps.map_or("-".into(), |b| format!("{b:.1} GB/s"));
            let _ = write!(
                page,
                r#"<tr><td>{:.3}</td><td>{}</td><td>{:.1}</td><td>{busbw}</td><td class="name">{}</td></tr>"#,
                c.total_us,
                c.count,
                c.mean_us,
                esc(&c.call())
            );
        }
        page.push_str("</table>");
    }
    let arch = v.gpu_arch.as_deref();
    let gemms: Vec<(&str, &Rated)> =
        v.top_gemms.iter().map(|g| (g.shape.as_str(), &g.rated)).collect();
    rated_table(page, "GEMMs (by shape; rates per call, mean)", "op, B×M×N×K, dtype", &gemms, arch);
    let others: Vec<(&str, &Rated)> =
        v.top_shapes.iter().map(|s| (s.shape.as_str(), &s.rated)).collect();
    let title = "Attention and convolutions (by shape; rates per call, mean)";
    rated_table(page, title, "op, shape, dtype", &others, arch);
    if let Some(note) = v.no_roofline_note() {
        let _ = write!(page, r#"<p class="note">{}.</p>"#, esc(&capitalized(&note)));
    }
    if let Some(r) = &v.roofline {
        roofline_chart(page, r);
    }
    if let Some(dir) = &v.csv_dir {
        let _ = write!(page, "<p>CSVs: <code>{}</code></p>", esc(&dir.display().to_string()));
    }
    page.push_str("</section>");
}

/// A table of op shapes with their rates, and with a roofline (`arch`)
/// the share of it reached and the bound.
fn rated_table(
    page: &mut String,
    title: &str,
    what: &str,
    rows: &[(&str, &Rated)],
    arch: Option<&str>,
) {
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        page,
        r#"<h3>{}</h3><table><tr><th>total µs</th><th>calls</th><th>TFLOPS/s</th><th>TB/s</th>"#,
        esc(title)
    );
    if let Some(arch) = arch {
        let _ = write!(page, "<th>% of the {} roofline</th><th>bound</th>", esc(arch));
    }
    let _ = write!(page, r#"<th class="name">{}</th></tr>"#, esc(what));
    for (shape, g) in rows {
        let _ = write!(
            page,
            r#"<tr><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td>"#,
            g.total_us,
            g.count,
            crate::render::shown(g.tflops_per_s, 1),
            crate::render::shown(g.tb_per_s, 2),
        );
        if arch.is_some() {
            let _ = write!(
                page,
                "<td>{}</td><td>{}</td>",
                crate::render::shown(g.pct_roofline, 1),
                g.bound.map_or("-", trace_report::Bound::as_str)
            );
        }
        let _ = write!(page, r#"<td class="name">{}</td></tr>"#, esc(shape));
    }
    page.push_str("</table>");
}

/// The roofline chart: arithmetic intensity (FLOPs per byte) against
/// TFLOPS/s, both logarithmic; the spec's memory roof and compute roofs;
/// a point per op shape, its area by its kernel time.
fn roofline_chart(page: &mut String, r: &Roofline) {
    let (width, height, left, bottom, top, right) = (720.0, 420.0, 56.0, 36.0, 12.0, 110.0);
    let ai: Vec<f64> = r.points.iter().map(|p| p.flops_per_byte).collect();
    let rate: Vec<f64> = r.points.iter().map(|p| p.tflops_per_s).collect();
    let peaks: Vec<f64> = r.compute_tflops_per_s.iter().map(|(_, p)| *p).collect();
    let fold = |v: &[f64], min: bool| {
        v.iter().copied().fold(if min { f64::INFINITY } else { f64::NEG_INFINITY }, |a, b| {
            if min { a.min(b) } else { a.max(b) }
        })
    };
    // Decades around the points, the roofs' ridges and peaks.
    let ridges: Vec<f64> = match r.memory_tb_per_s {
        Some(bw) if bw > 0.0 => peaks.iter().map(|p| p / bw).collect(),
        _ => vec![],
    };
    let x0 = fold(&ai, true).min(fold(&ridges, true)).log10().floor() - 0.0;
    let x1 = fold(&ai, false).max(fold(&ridges, false)).log10().ceil().max(x0 + 1.0);
    let y0 = fold(&rate, true).log10().floor();
    let y1 = fold(&rate, false).max(fold(&peaks, false)).log10().ceil().max(y0 + 1.0);
    let plot_w = width - left - right;
    let plot_h = height - top - bottom;
    let x = |v: f64| left + (v.log10() - x0) / (x1 - x0) * plot_w;
    let y = |v: f64| top + plot_h - (v.log10() - y0) / (y1 - y0) * plot_h;
    let title = match &r.arch {
        Some(arch) => format!("Roofline ({arch})"),
        None => "Op shapes by arithmetic intensity and rate (no GPU spec: no roofs)".into(),
    };
    let _ = write!(
        page,
        r##"<h3>{}</h3><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" font-size="10"><rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>"##,
        esc(&title)
    );
    // Decade ticks.
    for d in (x0 as i32)..=(x1 as i32) {
        let v = 10f64.powi(d);
        let _ = write!(
            page,
            r##"<line x1="{0:.1}" x2="{0:.1}" y1="{top}" y2="{1:.1}" stroke="#eee"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{3}</text>"##,
            x(v),
            top + plot_h,
            top + plot_h + 12.0,
            tick(v)
        );
    }
    for d in (y0 as i32)..=(y1 as i32) {
        let v = 10f64.powi(d);
        let _ = write!(
            page,
            r##"<line x1="{left}" x2="{0:.1}" y1="{1:.1}" y2="{1:.1}" stroke="#eee"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4}</text>"##,
            left + plot_w,
            y(v),
            left - 4.0,
            y(v) + 3.0,
            tick(v)
        );
    }
    let _ = write!(
        page,
        r##"<text x="{0:.1}" y="{1:.1}" text-anchor="middle">FLOPs per byte moved</text><text x="12" y="{2:.1}" text-anchor="middle" transform="rotate(-90 12 {2:.1})">TFLOPS/s</text>"##,
        left + plot_w / 2.0,
        height - 4.0,
        top + plot_h / 2.0
    );
    // The roofs: bandwidth × intensity up to each peak, then the peak.
    if let Some(bw) = r.memory_tb_per_s.filter(|b| *b > 0.0) {
        let (lo, hi) = (10f64.powf(x0), 10f64.powf(x1));
        for (spec, peak) in &r.compute_tflops_per_s {
            let ridge = (peak / bw).clamp(lo, hi);
            let start = lo.max(10f64.powf(y0) / bw);
            let _ = write!(
                page,
                r##"<polyline fill="none" stroke="#c62828" stroke-width="1.5" points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}"><title>{} roof: {} TFLOPS/s, {} TB/s</title></polyline><text x="{:.1}" y="{:.1}" fill="#c62828">{}</text>"##,
                x(start),
                y(start * bw),
                x(ridge),
                y(ridge * bw),
                x(hi),
                y(*peak),
                esc(spec),
                peak,
                bw,
                x(hi) + 4.0,
                y(*peak) + 3.0,
                esc(spec)
            );
        }
    }
    let total: f64 = r.points.iter().map(|p| p.total_us).sum::<f64>().max(1e-9);
    for p in &r.points {
        let radius = 2.0 + 14.0 * (p.total_us / total).sqrt();
        let _ = write!(
            page,
            r##"<circle cx="{:.1}" cy="{:.1}" r="{radius:.1}" fill="#1565c0" fill-opacity="0.45" stroke="#1565c0"><title>{} {}: {:.1} TFLOPS/s at {:.2} FLOPs/byte, {} calls, {:.1} µs</title></circle>"##,
            x(p.flops_per_byte),
            y(p.tflops_per_s),
            esc(&p.name),
            esc(&p.input_dims),
            p.tflops_per_s,
            p.flops_per_byte,
            p.count,
            p.total_us
        );
    }
    page.push_str("</svg>");
}

/// A decade's label: `0.01`, `1`, `1000`, `1e+06`.
fn tick(v: f64) -> String {
    match v {
        v if (1e-3..1e5).contains(&v) => format!("{v}"),
        v => format!("{v:e}"),
    }
}

fn cross_rank_section(page: &mut String, ranks: &[RankRow]) {
    let runs = by_run(ranks);
    for run in &runs {
        cross_rank_table(page, run);
    }
}

fn cross_rank_table(page: &mut String, ranks: &[RankRow]) {
    let longest = ranks.iter().map(|r| r.total).fold(0.0, f64::max);
    page.push_str("<section><h2>Across ranks</h2>");
    let _ = write!(page, "<p>Run <code>{}</code>", esc(&ranks[0].run.display().to_string()));
    if let Some(cycle) = ranks[0].cycle {
        let _ = write!(page, ", {cycle}");
    }
    page.push_str("</p>");
    page.push_str(
        r#"<table><tr><th>rank</th><th>GPU time (ms)</th><th class="name"></th><th>computation</th><th>exposed comm</th><th>idle</th><th></th><th class="name">trace</th></tr>"#,
    );
    for r in ranks {
        let class = if r.slowest { r#" class="slowest""# } else { "" };
        let _ = write!(
            page,
            r#"<tr{class}><td>{}</td><td>{:.3}</td><td class="name">"#,
            r.rank, r.total
        );
        let parts = [
            ("computation", r.computation, colour("computation")),
            ("exposed comm", r.exposed_comm, colour("exposed comm")),
            ("idle", r.idle, colour("idle")),
        ];
        stacked_bar(page, &parts, longest, 400.0);
        let _ = write!(
            page,
            "</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td class=\"name\">{}</td></tr>",
            r.computation,
            r.exposed_comm,
            r.idle,
            if r.slowest { "slowest" } else { "" },
            esc(&r.trace_in_run().display().to_string())
        );
    }
    page.push_str("</table>");
    for line in render::spread(ranks) {
        let _ = write!(page, "<p>{}</p>", esc(&line));
    }
    page.push_str("</section>");
}

/// The profiling cycles of a job, cycle by cycle: the GPU time of each
/// cycle's slowest trace, against the first cycle's.
fn cycles_table(page: &mut String, job: &[CycleRow]) {
    let longest = job.iter().map(|c| c.gpu_ms).fold(0.0, f64::max);
    let each = if job[0].per_step { " per step" } else { "" };
    page.push_str("<section><h2>Across profiling cycles</h2>");
    let _ = write!(
        page,
        "<p>Run <code>{}</code>: the GPU time of each cycle's slowest trace{each}</p>",
        esc(&job[0].run.display().to_string())
    );
    page.push_str(
        r#"<table><tr><th>cycle</th><th>traces</th><th>GPU time (ms)</th><th class="name"></th><th>vs cycle 1</th><th class="name">slowest</th></tr>"#,
    );
    for (c, change) in job.iter().zip(vs_first(job)) {
        let _ = write!(
            page,
            r#"<tr><td>{} of {}</td><td>{}</td><td>{:.3}</td><td class="name">"#,
            c.cycle.number, c.cycle.of, c.traces, c.gpu_ms
        );
        stacked_bar(page, &[("GPU time", c.gpu_ms, colour("kernel"))], longest, 400.0);
        let _ = write!(
            page,
            "</td><td>{}</td><td class=\"name\">{}</td></tr>",
            change.map_or("-".into(), |p| format!("{p:+.1}%")),
            esc(&render::slowest_text(c))
        );
    }
    page.push_str("</table></section>");
}

/// A cross-GPU table: the rocprofv3 processes of a directory, GPU by GPU,
/// each bar its profiling session (busy, then idle).
fn cross_gpu_table(page: &mut String, gpus: &[GpuRow]) {
    let longest = gpus.iter().map(|r| r.profiled).fold(0.0, f64::max);
    page.push_str("<section><h2>Across GPUs</h2>");
    let _ = write!(
        page,
        "<p>rocprofv3 processes in <code>{}</code>, by the GPU each ran its kernels on</p>",
        esc(&gpus[0].run.display().to_string())
    );
    page.push_str(
        r#"<table><tr><th>GPU</th><th>profiled (ms)</th><th class="name"></th><th>busy</th><th>kernel</th><th>comm</th><th>memory</th><th>idle</th><th></th><th class="name">trace</th></tr>"#,
    );
    for r in gpus {
        let class = if r.least_comm { r#" class="slowest""# } else { "" };
        let _ = write!(
            page,
            r#"<tr{class}><td>{}</td><td>{:.3}</td><td class="name">"#,
            r.gpu, r.profiled
        );
        let parts = [("busy", r.busy, colour("busy")), ("idle", r.idle, colour("idle"))];
        stacked_bar(page, &parts, longest, 400.0);
        let _ = write!(
            page,
            "</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td class=\"name\">{}</td></tr>",
            r.busy,
            r.kernel,
            r.comm,
            r.memory,
            r.idle,
            if r.least_comm { "least comm" } else { "" },
            esc(&r.trace_in_run().display().to_string())
        );
    }
    page.push_str("</table></section>");
}

/// The page, as a string.
pub(crate) fn page(
    views: &[SummaryView],
    ranks: &[RankRow],
    cycles: &[CycleRow],
    gpus: &[GpuRow],
    collectives: &[trace_report::RunCollectives],
    left_out: &[trace_discover::Problem],
) -> String {
    let mut page =
        String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        page,
        "<meta name=\"viewport\" content=\"width=device-width\"><title>madengine report summary</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(
        page,
        "<h1>GPU time summary</h1><p>{} trace(s); tables with TraceLens' definitions, computed by madengine {}.</p>",
        views.len(),
        env!("CARGO_PKG_VERSION")
    );
    // What the search could not look at: a reader of the page is told that
    // a rank is missing, and why.
    if !left_out.is_empty() {
        let _ = write!(
            page,
            r#"<p class="error">Left out: {} path(s) that could not be looked at.</p><ul>"#,
            left_out.len()
        );
        for p in left_out {
            let path = p.path.display().to_string();
            let _ = write!(page, "<li><code>{}</code>: {}</li>", esc(&path), esc(&p.message));
        }
        page.push_str("</ul>");
    }
    cross_rank_section(&mut page, ranks);
    for r in collectives {
        collectives_section(&mut page, r);
    }
    for job in by_job(cycles) {
        cycles_table(&mut page, job);
    }
    for dir in by_dir(gpus) {
        cross_gpu_table(&mut page, dir);
    }
    for v in views {
        trace_section(&mut page, v);
    }
    if views.is_empty() {
        page.push_str("<p>No PyTorch or rocprofv3 JSON traces found.</p>");
    }
    page.push_str("</body></html>\n");
    page
}

/// Write the page to `path` atomically (a temp file beside it, then a rename).
pub(crate) fn write(
    path: &Path,
    views: &[SummaryView],
    ranks: &[RankRow],
    cycles: &[CycleRow],
    gpus: &[GpuRow],
    collectives: &[trace_report::RunCollectives],
    left_out: &[trace_discover::Problem],
) -> Result<(), Error> {
    let page = page(views, ranks, cycles, gpus, collectives, left_out);
    crate::commands::write_atomic(path, page.as_bytes())
}

use crate::render::shown;
use trace_report::{Object, number};

/// One matched collective as a strip per rank: where each rank arrived and
/// left, against the last arrival (the wait the others paid is the gap
/// before it).
fn strips(page: &mut String, c: &Object) {
    let mut ranks: Vec<(u64, f64, f64)> = c
        .keys()
        .filter_map(|k| k.strip_prefix("rank_")?.strip_suffix("_ts")?.parse::<u64>().ok())
        .filter_map(|r| {
            let ts = number(c, &format!("rank_{r}_ts"))?;
            let dur = number(c, &format!("rank_{r}_dur"))?;
            Some((r, ts, ts + dur))
        })
        .collect();
    ranks.sort_by_key(|(r, _, _)| *r);
    let Some(start) = ranks.iter().map(|r| r.1).reduce(f64::min) else { return };
    let end = ranks.iter().map(|r| r.2).fold(start, f64::max);
    let last = ranks.iter().map(|r| r.1).fold(start, f64::max);
    let span = (end - start).max(1e-9);
    let (width, label) = (600.0, 48.0);
    let row = if ranks.len() > 64 {
        3.0
    } else if ranks.len() > 16 {
        6.0
    } else {
        14.0
    };
    let height = row * ranks.len() as f64 + 14.0;
    let x = |t: f64| label + (t - start) / span * width;
    let _ = write!(
        page,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" role="img">"#,
        label + width + 4.0
    );
    for (i, (rank, ts, end)) in ranks.iter().enumerate() {
        let y = i as f64 * row;
        if row >= 10.0 {
            let _ = write!(
                page,
                r#"<text x="0" y="{:.1}" font-size="10">rank {rank}</text>"#,
                y + row - 3.0
            );
        }
        let _ = write!(
            page,
            r##"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="#1565c0"><title>rank {rank}: arrived at +{:.1} µs, left at +{:.1} µs</title></rect>"##,
            x(*ts),
            ((end - ts) / span * width).max(0.5),
            (row - 1.0).max(1.0),
            ts - start,
            end - start,
        );
    }
    let bottom = row * ranks.len() as f64;
    let _ = write!(
        page,
        r##"<line x1="{0:.2}" x2="{0:.2}" y1="0" y2="{bottom:.1}" stroke="#c62828" stroke-width="1.5"><title>last arrival, +{1:.1} µs</title></line><text x="{label}" y="{2:.1}" font-size="10">0</text><text x="{3:.1}" y="{2:.1}" font-size="10" text-anchor="end">{4:.1} µs</text></svg>"##,
        x(last),
        last - start,
        bottom + 12.0,
        label + width,
        end - start,
    );
}

/// A multi-rank run's collective report: the matched collectives that
/// cost the most, each a strip per rank (arrival to exit), and the
/// straggler table.
fn collectives_section(page: &mut String, r: &trace_report::RunCollectives) {
    let mut title = format!("Collectives matched across ranks, run {}", r.run.display());
    if let Some(cycle) = r.cycle {
        title.push_str(&format!(", {cycle}"));
    }
    let _ = write!(
        page,
        "<section><h2>{}</h2><p>{} collective(s) matched{}. Each strip is one rank, from its arrival to its exit; the red line is the last arrival: the gap before it is what the rank waited. CSVs: <code>{}</code></p>",
        esc(&title),
        r.matched,
        if r.simplified {
            " by their order in each rank (the traces name no process group)"
        } else {
            ""
        },
        esc(&r.csv_dir.display().to_string())
    );
    for c in &r.top {
        let name = [
            c.get("Collective name").and_then(|v| v.as_str()).unwrap_or("(not named)"),
            c.get("dtype").and_then(|v| v.as_str()).unwrap_or(""),
        ]
        .join(" ");
        let bus =
            number(c, "bus bw (GB/s)").map_or(String::new(), |b| format!(", bus {b:.1} GB/s"));
        let _ = write!(
            page,
            "<h3>{} <code>{}</code>: latency {} µs, start skew {} µs (rank {} first), end skew {} µs{}</h3>",
            esc(name.trim()),
            esc(c.get("collective_id").and_then(|v| v.as_str()).unwrap_or("")),
            shown(number(c, "comm_latency"), 1),
            shown(number(c, "skew in start time"), 1),
            shown(number(c, "earliest arrival rank"), 0),
            shown(number(c, "skew in end time"), 1),
            esc(&bus),
        );
        strips(page, c);
    }
    if !r.straggler.is_empty() {
        let nodes = r.spans_nodes();
        page.push_str("<h3>Stragglers</h3><table><tr><th>rank</th>");
        if nodes {
            page.push_str("<th>node</th>");
        }
        page.push_str("<th>arrived last</th><th>share</th><th>waited µs (total)</th><th>waited µs (mean)</th><th>in collectives µs</th></tr>");
        for s in r.stragglers() {
            let _ = write!(page, "<tr><td>{}</td>", shown(number(s, "rank"), 0));
            if nodes {
                let _ = write!(page, "<td>{}</td>", shown(number(s, "node_id"), 0));
            }
            let _ = write!(
                page,
                "<td>{}</td><td>{}%</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                shown(number(s, "times_arrived_last"), 0),
                shown(number(s, "pct_arrived_last"), 1),
                shown(number(s, "total_wait_time_us"), 1),
                shown(number(s, "mean_wait_time_us"), 1),
                shown(number(s, "total_nccl_dur_us"), 1),
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</section>");
}

/// Timeline rows that add up to the total, for a stacked bar: `(row, label)`,
/// as `report summary`'s page draws them.
fn diff_parts(rocprof: bool) -> &'static [(&'static str, &'static str)] {
    if rocprof { ROCPROF_BAR } else { KINETO_PARTS }
}

/// A row's time on one side (0 when absent).
fn side_ms(rows: &[DiffRow], name: &str, base: bool) -> f64 {
    rows.iter()
        .find(|r| r.name == name)
        .and_then(|r| if base { r.base } else { r.new })
        .map_or(0.0, |m| m.time)
}

/// Baseline and new bars of one timeline, on one `scale`.
fn timeline_bars(page: &mut String, rows: &[DiffRow], rocprof: bool, scale: f64, width: f64) {
    for (base, label) in [(true, "baseline"), (false, "new")] {
        let parts: Vec<(&str, f64, &str)> = diff_parts(rocprof)
            .iter()
            .map(|(row, label)| (*label, side_ms(rows, row, base), colour(label)))
            .collect();
        let _ = write!(page, r#"<div class="bar"><span class="side">{label}</span>"#);
        stacked_bar(page, &parts, scale, width);
        page.push_str("</div>");
    }
}

fn legend(page: &mut String, rocprof: bool) {
    page.push_str(r#"<p class="legend">"#);
    for (_, label) in diff_parts(rocprof) {
        let _ = write!(
            page,
            r#"<span><i class="swatch" style="background:{}"></i>{label}</span>"#,
            colour(label)
        );
    }
    page.push_str("</p>");
}

/// A bar from the middle, right (red) for more time, left (green) for less,
/// drawn to `width` for `scale`.
fn delta_bar(page: &mut String, delta: f64, scale: f64, width: f64) {
    let half = width / 2.0;
    let w = if scale > 0.0 { (delta.abs() / scale * half).min(half) } else { 0.0 };
    let (x, fill) = if delta > 0.0 { (half, "#c62828") } else { (half - w, "#2e7d32") };
    let _ = write!(
        page,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="14" role="img"><rect x="{x:.2}" y="1" width="{w:.2}" height="12" fill="{fill}"/><line x1="{half}" y1="0" x2="{half}" y2="14" stroke="#666"/></svg>"##
    );
}

fn changes_table(page: &mut String, title: &str, unit: &str, rows: &[DiffRow], top: usize) {
    let changed: Vec<&DiffRow> = rows.iter().filter(|r| r.delta() != 0.0).take(top).collect();
    if rows.is_empty() || top == 0 {
        return;
    }
    let _ = write!(page, "<h2>{}</h2>", esc(title));
    if changed.is_empty() {
        page.push_str("<p>No change.</p>");
        return;
    }
    let scale = changed.iter().map(|r| r.delta().abs()).fold(0.0, f64::max);
    let _ = write!(
        page,
        r#"<table><tr><th>baseline {unit}</th><th>new {unit}</th><th>delta</th><th>ratio</th><th>count</th><th></th><th class="name">name</th></tr>"#
    );
    let time = |m: Option<Measure>| m.map_or("-".to_string(), |m| format!("{:.3}", m.time));
    for r in changed {
        let counts = counts_text(r, " &rarr; ");
        let _ = write!(
            page,
            r#"<tr><td>{}</td><td>{}</td><td>{:+.3}</td><td>{}</td><td>{counts}</td><td>"#,
            time(r.base),
            time(r.new),
            r.delta(),
            ratio_text(r)
        );
        delta_bar(page, r.delta(), scale, 160.0);
        // Template-heavy kernel names run to thousands of characters:
        // demangled and cut, whole (as the trace has it) in the tooltip.
        const SHOWN: usize = 200;
        let name = crate::render::demangled(&r.name);
        let shown = match name.chars().count() > SHOWN {
            true => format!("{}...", name.chars().take(SHOWN - 3).collect::<String>()),
            false => name.into_owned(),
        };
        let _ = write!(
            page,
            r#"</td><td class="name" title="{}">{}</td></tr>"#,
            esc(&r.name),
            esc(&shown)
        );
    }
    page.push_str("</table>");
}

/// `report diff --html`: both sides, their timelines as bars on one scale
/// (rank by rank for two runs), and the kernels and ops that moved most.
fn diff_page(
    compared: &trace_report::Comparison,
    top: usize,
    regression: Option<&trace_report::Regression>,
) -> String {
    let mut page =
        String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        page,
        "<meta name=\"viewport\" content=\"width=device-width\"><title>madengine report diff</title><style>{STYLE}.bar{{display:flex;align-items:center;gap:8px}}.side{{width:5em;text-align:right}}</style></head><body>"
    );
    let rocprof = compared.rocprof();
    let _ = write!(
        page,
        "<h1>Where GPU time moved</h1><p>Tables with TraceLens' definitions, computed by madengine {}; ratios are new over baseline.</p>",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(r) = regression {
        // The gate's verdict first: what a nightly mail is opened for.
        let class = if r.exceeded { "error" } else { "note" };
        let said = crate::render::diff::regression_said(r, compared.headline().1);
        let _ = write!(page, r#"<p class="{class}"><b>{}.</b></p>"#, esc(&capitalized(&said)));
    }
    page.push_str("<table>");
    for side in &compared.sides {
        let what = match (side.report, rocprof) {
            (true, _) => "report (CSVs read back)",
            (false, true) => "rocprofv3",
            (false, false) => "PyTorch",
        };
        let what = match side.cycle {
            Some(cycle) => format!("{cycle}, {what}"),
            None => what.to_string(),
        };
        let launches =
            side.kernel_launches.map(|n| format!(", {n} kernel launches")).unwrap_or_default();
        let launches = match side.steps {
            Some(steps) => format!(", {steps} step(s){launches}"),
            None => launches,
        };
        let gpus: String = side.gpus.iter().map(|g| format!(", {}", esc(g))).collect();
        let _ = write!(
            page,
            r#"<tr><th>{}</th><td class="name">{} ({what}{gpus}{launches})</td></tr>"#,
            side.role,
            esc(&side.path.display().to_string())
        );
    }
    page.push_str("</table>");
    if compared.per_step {
        page.push_str(r#"<p class="note">Times and counts per step: each side divided by its steps (ProfilerStep#, else Optimizer.step# annotations).</p>"#);
    }
    let gpus = crate::render::diff::gpus_note(compared);
    let coverage = crate::render::diff::coverage_note(compared);
    let notes = compared.sides.iter().flat_map(|s| &s.notes).chain(&compared.unpaired);
    for note in gpus.iter().chain(&coverage).chain(notes) {
        let _ = write!(page, r#"<p class="note">{}.</p>"#, esc(&capitalized(note)));
    }
    // The bars add up to the total.
    let total = "total_time";
    let (headline, what) = compared.headline();
    if compared.ranks.is_empty() {
        let rows = &compared.diff.timeline;
        let (b, n) = (side_ms(rows, headline, true), side_ms(rows, headline, false));
        let _ = write!(page, "<h2>{what}: {b:.3} ms &rarr; {n:.3} ms</h2>");
        let scale = side_ms(rows, total, true).max(side_ms(rows, total, false));
        timeline_bars(&mut page, rows, rocprof, scale, 800.0);
        legend(&mut page, rocprof);
    } else {
        // rocprofv3: the change in its collective kernels' time (within
        // the kernel time), when the run has any.
        let comm_column = compared.ranks.iter().any(|r| r.collectives().is_some());
        let _ = write!(page, "<h2>{what} per {}</h2>", compared.by.word());
        if let Some(line) = crate::render::diff::runs_headline(compared, "\u{2192}") {
            let _ = write!(page, "<p><b>{}</b></p>", esc(&line));
        }
        let _ = write!(
            page,
            r#"<table><tr><th>{by}</th><th>baseline ms</th><th>new ms</th><th>delta</th>{}<th class="name"></th></tr>"#,
            if comm_column { "<th>collectives</th>" } else { "" },
            by = compared.by.word()
        );
        let scale = compared
            .ranks
            .iter()
            .flat_map(|r| [side_ms(&r.timeline, total, true), side_ms(&r.timeline, total, false)])
            .fold(0.0, f64::max);
        for r in &compared.ranks {
            let rows = &r.timeline;
            let (b, n) = (side_ms(rows, headline, true), side_ms(rows, headline, false));
            let _ = write!(
                page,
                r#"<tr><td>{}</td><td>{b:.3}</td><td>{n:.3}</td><td>{:+.3}</td>"#,
                compared.by.value(r.key),
                n - b
            );
            if comm_column {
                let delta = r.collectives().map_or("-".into(), |c| format!("{:+.3}", c.delta()));
                let _ = write!(page, "<td>{delta}</td>");
            }
            page.push_str(r#"<td class="name">"#);
            timeline_bars(&mut page, &r.timeline, rocprof, scale, 500.0);
            page.push_str("</td></tr>");
        }
        page.push_str("</table>");
        legend(&mut page, rocprof);
    }
    let over = match compared.ranks.is_empty() {
        true => String::new(),
        false => format!(", all {}", compared.by.plural()),
    };
    changes_table(
        &mut page,
        &format!("Kernels{over}, largest changes first"),
        "µs",
        &compared.diff.kernels,
        top,
    );
    changes_table(
        &mut page,
        &format!(
            "Ops{over} (GPU time of the kernels each launched directly), largest changes first"
        ),
        "ms",
        &compared.diff.ops,
        top,
    );
    changes_table(
        &mut page,
        &format!(
            "Op categories{over} (GPU time their ops launched directly), largest changes first"
        ),
        "ms",
        &compared.diff.op_categories,
        top,
    );
    changes_table(
        &mut page,
        &format!("Kernel categories{over}, largest changes first"),
        "ms",
        &compared.diff.kernel_categories,
        top,
    );
    changes_table(
        &mut page,
        &format!("Collectives{over} (NCCL/RCCL kernels by call), largest changes first"),
        "µs",
        &compared.diff.collectives,
        top,
    );
    matched_table(&mut page, &compared.matched, top);
    page.push_str("</body></html>\n");
    page
}

/// Two multi-rank runs' collectives matched across ranks, per type, dtype
/// and size, before and after.
fn matched_table(page: &mut String, matched: &[trace_report::CollectiveDiff], top: usize) {
    if matched.is_empty() || top == 0 {
        return;
    }
    page.push_str("<h3>Collectives matched across ranks: mean latency once the last rank arrived, and bus bandwidth</h3><table><tr><th>matched</th><th>latency µs before</th><th>after</th><th>ratio (total)</th><th>bus GB/s before</th><th>after</th><th class=\"name\">collective</th></tr>");
    let one = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    for m in matched.iter().take(top) {
        let count = |s: &Option<trace_report::CollectiveSide>| {
            s.as_ref().map_or("-".into(), |s| s.count.to_string())
        };
        let size = m.full_mb.map_or(String::new(), |mb| format!(", {mb:.1} MiB"));
        let _ = write!(
            page,
            r#"<tr><td>{} &rarr; {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="name">{} {}{}</td></tr>"#,
            count(&m.base),
            count(&m.new),
            one(m.base.as_ref().and_then(|s| s.latency_mean_us)),
            one(m.new.as_ref().and_then(|s| s.latency_mean_us)),
            m.ratio().map_or("-".into(), |r| format!("{r:.2}x")),
            one(m.base.as_ref().and_then(|s| s.bus_bw_mean_gbs)),
            one(m.new.as_ref().and_then(|s| s.bus_bw_mean_gbs)),
            esc(&m.collective),
            esc(&m.dtype),
            esc(&size),
        );
    }
    page.push_str("</table>");
}

/// Write `report diff`'s page to `path` atomically.
pub(crate) fn write_diff(
    path: &Path,
    compared: &trace_report::Comparison,
    top: usize,
    regression: Option<&trace_report::Regression>,
) -> Result<(), Error> {
    crate::commands::write_atomic(path, diff_page(compared, top, regression).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::{esc, page};

    #[test]
    fn the_page_names_what_was_left_out() {
        let left_out = [trace_discover::Problem {
            path: "run/<rank1>.json".into(),
            message: "a symbolic link to /scratch/gone, which does not exist".into(),
        }];
        let page = page(&[], &[], &[], &[], &[], &left_out);
        assert!(
            page.contains(
                "<p class=\"error\">Left out: 1 path(s) that could not be looked at.</p><ul><li>\
                 <code>run/&lt;rank1&gt;.json</code>: a symbolic link to /scratch/gone, which does \
                 not exist</li></ul>"
            ),
            "{page}"
        );
        assert!(!super::page(&[], &[], &[], &[], &[], &[]).contains("Left out"));
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(
            esc(r#"void at::<lambda>(float&) "x" 'y'"#),
            "void at::&lt;lambda&gt;(float&amp;) &quot;x&quot; &#39;y&#39;"
        );
    }
}
