//! `report diff`: the comparison of two runs.

use trace_report::{Comparison, PairedBy, Regression};
use trace_summary::DiffRow;

use super::*;

/// `report diff`'s view: both sides, the timeline side by side (rank by
/// rank for two runs), then the kernels and ops whose time changed most.
pub(crate) fn diff(
    compared: &Comparison,
    top: usize,
    written: &[std::path::PathBuf],
    html: Option<&std::path::Path>,
) -> Result<(), Error> {
    let mut text = String::new();
    let diff = &compared.diff;
    sides(&mut text, compared);
    match compared.ranks.is_empty() {
        false => per_rank(&mut text, compared),
        true => timeline(&mut text, compared),
    }
    changed_rows(&mut text, compared, top);
    let over = over(compared);
    matched_collectives(&mut text, &compared.matched, top);
    rated_shapes(&mut text, "GEMM shapes", &diff.gemms, &over, top);
    rated_shapes(&mut text, "Attention and convolution shapes", &diff.shapes, &over, top);
    if written.is_empty() {
        if [&diff.kernels, &diff.ops, &diff.collectives].iter().any(|rows| rows.len() > top) {
            text.push_str("\nevery row: --output-dir DIR (CSVs) or --json\n");
        }
    } else {
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        text.push_str(&format!("\nCSVs: {}\n", names.join(", ")));
    }
    if let Some(html) = html {
        text.push_str(&format!("HTML: {}\n", html.display()));
    }
    out(&text)
}

/// Milliseconds as the tables show them.
fn ms(v: f64) -> String {
    format!("{v:.3}")
}

/// A change with its sign; one too small for 3 decimals still shows it.
fn signed(d: f64, f: &dyn Fn(f64) -> String) -> String {
    let sign = if d > 0.0 { "+" } else { "-" };
    match f(d.abs()) {
        _ if d == 0.0 => "0".to_string(),
        shown if shown.chars().all(|c| c == '0' || c == '.') => format!("{sign}<0.001"),
        shown => format!("{sign}{shown}"),
    }
}

/// A side's time, `-` where it has none.
fn time(m: Option<trace_summary::Measure>, f: &dyn Fn(f64) -> String) -> String {
    m.map_or_else(|| "-".to_string(), |m| f(m.time))
}

/// The unit of times, per step where the sides were divided.
fn unit(compared: &Comparison) -> &'static str {
    if compared.per_step { "ms per step" } else { "ms" }
}

/// ", all 4 ranks" after a table's title when runs were compared.
fn over(compared: &Comparison) -> String {
    match compared.ranks.is_empty() {
        false => format!(", all {} {}", compared.ranks.len(), compared.by.plural()),
        true => String::new(),
    }
}

/// A line per side: its path, kind, GPUs, steps and launches, its notes.
fn sides(text: &mut String, compared: &Comparison) {
    let ranked = !compared.ranks.is_empty();
    for side in &compared.sides {
        let kind = match side.format {
            trace_summary::Format::Rocprofv3 => "rocprofv3",
            trace_summary::Format::Kineto => "PyTorch",
            trace_summary::Format::Perfetto => "Perfetto",
        };
        let mut traces =
            if ranked { format!("{} traces, ", side.traces.len()) } else { String::new() };
        if let Some(cycle) = side.cycle {
            traces.insert_str(0, &format!("{cycle}, "));
        }
        let kind = if side.report { format!("{kind} report") } else { kind.to_string() };
        let kind = side.gpus.iter().fold(kind, |kind, gpu| format!("{kind}, {gpu}"));
        let launches = side
            .kernel_launches
            .map(|n| format!(", {} kernel launches", thousands(n)))
            .unwrap_or_default();
        let shown = if ranked { &side.path } else { &side.traces[0] };
        let steps = side.steps.map(|n| format!(", {}", plural(n, "step"))).unwrap_or_default();
        text.push_str(&format!(
            "{:<8}  {} ({traces}{kind}{steps}{launches})\n",
            side.role,
            shown.display()
        ));
        for note in &side.notes {
            text.push_str(&format!("{:<8}  note: {note}\n", ""));
        }
    }
    if let Some(note) = gpus_note(compared) {
        text.push_str(&format!("note: {note}\n"));
    }
    if let Some(note) = coverage_note(compared) {
        text.push_str(&format!("note: {note}\n"));
    }
}

/// rocprofv3's collective kernels ([`trace_summary::Diff::collective_kernels`]).
const COLLECTIVES: &str = "collectives";

/// Two runs: the headline per rank (or GPU), with the change by part.
fn per_rank(text: &mut String, compared: &Comparison) {
    let (headline, what) = compared.headline();
    let row_of = |rows: &[DiffRow], name: &str| rows.iter().find(|r| r.name == name).cloned();
    let ratio = ratio_text;
    if let Some(line) = runs_headline(compared, "->") {
        text.push_str(&format!("\n{line}\n"));
    }
    // rocprofv3's kernel time holds its collective kernels' (when the run
    // has any), shown after it.
    let comm = compared.ranks.iter().any(|r| r.collectives().is_some());
    let parts: &[(&str, &str)] = match (compared.rocprof(), comm) {
        (true, true) => &[
            ("kernel", "KERNEL"),
            (COLLECTIVES, "COLLECTIVES"),
            ("memory", "MEMORY"),
            ("idle", "IDLE"),
        ],
        (true, false) => &[("kernel", "KERNEL"), ("memory", "MEMORY"), ("idle", "IDLE")],
        (false, _) => &[
            ("computation_time", "COMPUTATION"),
            ("exposed_comm_time", "EXPOSED COMM"),
            ("idle_time", "IDLE"),
        ],
    };
    let rows: Vec<Vec<String>> = compared
        .ranks
        .iter()
        .map(|r| {
            let total = row_of(&r.timeline, headline);
            let part = |name: &str| {
                let row = match name {
                    COLLECTIVES => r.collectives().cloned(),
                    _ => row_of(&r.timeline, name),
                };
                row.map_or("-".into(), |p| signed(p.delta(), &ms))
            };
            let mut row = vec![
                compared.by.value(r.key),
                time(total.as_ref().and_then(|t| t.base), &ms),
                time(total.as_ref().and_then(|t| t.new), &ms),
                total.as_ref().map_or("-".into(), |t| signed(t.delta(), &ms)),
                total.as_ref().map_or("-".into(), ratio),
            ];
            row.extend(parts.iter().map(|(name, _)| part(name)));
            row
        })
        .collect();
    let last = match parts.len() {
        3 => "the last three",
        _ => "the last four",
    };
    let within = if comm { ", COLLECTIVES within KERNEL" } else { "" };
    let (by, unit) = (compared.by.word(), unit(compared));
    text.push_str(&format!("\n{what} per {by} ({unit}; {last}: change by part{within}):\n"));
    let mut header = vec![compared.by.column(), "BASELINE", "NEW", "DELTA", "RATIO"];
    header.extend(parts.iter().map(|(_, column)| *column));
    let mut numbers = vec![true; header.len()];
    numbers[0] = false;
    aligned(text, &header, &rows, &numbers);
}

/// Two traces: the headline, then the timeline side by side.
fn timeline(text: &mut String, compared: &Comparison) {
    let (diff, unit) = (&compared.diff, unit(compared));
    let (_, what) = compared.headline();
    let ratio = ratio_text;
    let change = |r: Option<f64>| r.map(|r| format!(" ({:+.1}%)", (r - 1.0) * 100.0));
    if let Some(h) = &compared.headline_times() {
        // rocprofv3's busy time holds its collective kernels'.
        let comm = match diff.collective_kernels.as_ref().filter(|r| trace_report::timed(r)) {
            Some(c) => format!(
                ", of which collective kernels {} -> {} {unit}{}",
                time(c.base, &ms),
                time(c.new, &ms),
                change(c.ratio()).unwrap_or_default()
            ),
            None => String::new(),
        };
        text.push_str(&format!(
            "\n{what} {:.3} -> {:.3} {unit}{}{comm}\n",
            h.base,
            h.new,
            change(h.ratio()).unwrap_or_default()
        ));
    }
    text.push('\n');
    let rows: Vec<[String; 5]> = diff
        .timeline
        .iter()
        .map(|r| {
            [r.name.clone(), time(r.base, &ms), time(r.new, &ms), signed(r.delta(), &ms), ratio(r)]
        })
        .collect();
    let numbers = [false, true, true, true, true];
    let title = format!("TIMELINE ({unit})");
    aligned(text, &[&title, "BASELINE", "NEW", "DELTA", "RATIO"], &rows, &numbers);
}

/// The kernels, ops, categories and collectives whose time changed most.
fn changed_rows(text: &mut String, compared: &Comparison, top: usize) {
    let (diff, ranked) = (&compared.diff, !compared.ranks.is_empty());
    let ratio = ratio_text;
    let count = |r: &DiffRow| counts_text(r, " -> ");
    let over = over(compared);
    let ms: &dyn Fn(f64) -> String = &ms;
    for (rows, title, [what, calls], unit, f) in [
        (&diff.kernels, "kernels", ["KERNEL", "LAUNCHES"], "µs", &py as &dyn Fn(f64) -> String),
        (
            &diff.ops,
            "ops (GPU time of the kernels each launched directly)",
            ["OP", "CALLS"],
            "ms",
            ms,
        ),
        (
            &diff.op_categories,
            "op categories (GPU time their ops launched directly)",
            ["CATEGORY", "CALLS"],
            "ms",
            ms,
        ),
        (&diff.kernel_categories, "kernel categories", ["CATEGORY", "LAUNCHES"], "ms", ms),
        (
            &diff.collectives,
            "collectives (NCCL/RCCL kernels by call)",
            ["CALL", "CALLS"],
            "µs",
            &py,
        ),
    ] {
        if rows.is_empty() || top == 0 {
            continue;
        }
        let changed: Vec<&DiffRow> = rows.iter().filter(|r| r.delta() != 0.0).collect();
        let shown: Vec<[String; 6]> = changed
            .iter()
            .take(top)
            .map(|r| {
                [
                    time(r.base, f),
                    time(r.new, f),
                    signed(r.delta(), f),
                    ratio(r),
                    count(r),
                    shorten(&r.name),
                ]
            })
            .collect();
        let unit = if compared.per_step { format!("{unit} per step") } else { unit.to_string() };
        text.push_str(&format!("\n{title}{over}, largest changes first ({unit}):\n"));
        if shown.is_empty() {
            text.push_str("no change\n");
            continue;
        }
        let numbers = [true, true, true, true, true, false];
        aligned(text, &["BASELINE", "NEW", "DELTA", "RATIO", calls, what], &shown, &numbers);
        let only = |side: fn(&DiffRow) -> bool| rows.iter().filter(|r| side(r)).count();
        let mut tail = Vec::new();
        if changed.len() > shown.len() {
            tail.push(format!("{} more changed", changed.len() - shown.len()));
        }
        match only(|r| r.new.is_none()) {
            0 => {}
            gone => tail.push(format!("{gone} only in the baseline")),
        }
        match only(|r| r.base.is_none()) {
            0 => {}
            fresh => tail
                .push(format!("{fresh} only in the new {}", if ranked { "run" } else { "trace" })),
        }
        if !tail.is_empty() {
            text.push_str(&format!("({})\n", tail.join(", ")));
        }
    }
}

/// Two multi-rank runs' collectives matched across ranks, per type, dtype
/// and size: latency once the last rank arrived and bus bandwidth, before
/// and after.
fn matched_collectives(text: &mut String, matched: &[trace_report::CollectiveDiff], top: usize) {
    if matched.is_empty() || top == 0 {
        return;
    }
    let one = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let side = |s: &Option<trace_report::CollectiveSide>| match s {
        Some(s) => [
            s.count.to_string(),
            one(s.latency_mean_us),
            s.bus_bw_mean_gbs.map_or("-".into(), |b| format!("{b:.1}")),
        ],
        None => ["-".to_string(), "-".to_string(), "-".to_string()],
    };
    let rows: Vec<[String; 7]> = matched
        .iter()
        .take(top)
        .map(|m| {
            let [bc, bl, bb] = side(&m.base);
            let [nc, nl, nb] = side(&m.new);
            let size = match (m.full_mb, m.in_nelems.as_str()) {
                (Some(mb), _) => format!(", {mb:.1} MiB"),
                (None, "Unknown") => String::new(),
                (None, n) => format!(", {n} elements"),
            };
            let name = match (m.collective.as_str(), m.dtype.as_str()) {
                ("Unknown", "Unknown") => "(not named)".to_string(),
                (c, "Unknown") => c.to_string(),
                (c, d) => format!("{c} {d}"),
            };
            [
                format!("{bc} -> {nc}"),
                bl,
                nl,
                m.ratio().map_or("-".into(), |r| format!("{r:.2}x")),
                bb,
                nb,
                format!("{name}{size}"),
            ]
        })
        .collect();
    text.push_str(
        "\ncollectives matched across ranks (mean latency once the last rank arrived µs, bus GB/s; ratio of total latency):\n",
    );
    let numbers = [true, true, true, true, true, true, false];
    aligned(
        text,
        &["MATCHED", "LATENCY BEFORE", "AFTER", "RATIO", "BUS BW BEFORE", "AFTER", "COLLECTIVE"],
        &rows,
        &numbers,
    );
    if matched.len() > top {
        text.push_str(&format!("({} more)\n", matched.len() - top));
    }
}

/// The modelled op shapes (`title`: GEMM shapes, ...) of both sides, the
/// largest change of time first: each side's TFLOPS/s and the change.
fn rated_shapes(
    text: &mut String,
    title: &str,
    gemms: &[trace_summary::GemmDiffRow],
    over: &str,
    top: usize,
) {
    let both: Vec<&trace_summary::GemmDiffRow> =
        gemms.iter().filter(|g| g.change_pct().is_some()).collect();
    if both.is_empty() || top == 0 {
        return;
    }
    text.push_str(&format!(
        "\n{title}{over}, largest changes of time first (TFLOPS/s per side):\n"
    ));
    let rate = |v: Option<f64>| super::shown(v, 1);
    let rows: Vec<[String; 5]> = both
        .iter()
        .take(top)
        .map(|g| {
            [
                rate(g.tflops(g.row.base)),
                rate(g.tflops(g.row.new)),
                g.change_pct().map_or("-".into(), |c| format!("{c:+.1}%")),
                counts_text(&g.row, " -> "),
                g.row.name.clone(),
            ]
        })
        .collect();
    let numbers = [true, true, true, true, false];
    aligned(text, &["BASELINE", "NEW", "CHANGE", "CALLS", "SHAPE"], &rows, &numbers);
    if both.len() > rows.len() {
        text.push_str(&format!("({} more)\n", both.len() - rows.len()));
    }
}

/// The one of a run the headline shows: the slowest rank (a job that
/// synchronizes waits for it); the busiest GPU (GPUs that wait for another
/// spend it in collective kernels, which count as busy).
pub(crate) fn headline_one(by: PairedBy) -> &'static str {
    match by {
        PairedBy::Rank => "slowest rank",
        PairedBy::Gpu | PairedBy::NodeGpu => "busiest GPU",
    }
}

/// When both sides name their GPUs and the models differ: what that
/// means for the comparison.
pub(crate) fn gpus_note(compared: &Comparison) -> Option<String> {
    let [b, n] = &compared.sides;
    if b.gpus.is_empty() || n.gpus.is_empty() || b.gpus == n.gpus {
        return None;
    }
    let what = if compared.ranks.is_empty() { "trace" } else { "run" };
    Some(format!(
        "the baseline ran on {} and the new {what} on {}: kernels are named per GPU, so \
         compare the timeline, ops and op categories",
        b.gpus.join(", "),
        n.gpus.join(", ")
    ))
}

/// When the two sides may not cover the same work: their step counts
/// differ, or (without steps on both) their kernel launches differ by
/// more than 10%. None with `--per-step`, which divides each by its
/// steps.
pub(crate) fn coverage_note(compared: &Comparison) -> Option<String> {
    if compared.per_step {
        return None;
    }
    let [b, n] = &compared.sides;
    let what = if compared.ranks.is_empty() { "trace" } else { "run" };
    if let (Some(bs), Some(ns)) = (b.steps, n.steps)
        && bs != ns
    {
        return Some(format!(
            "the baseline holds {bs} step(s) per trace and the new {what} {ns}: totals add \
             up every step; --per-step compares per step"
        ));
    }
    let (bl, nl) = (b.kernel_launches?, n.kernel_launches?);
    let ratio = nl as f64 / bl as f64;
    (bl > 0 && (ratio - 1.0).abs() > 0.1).then(|| {
        format!(
            "the new {what} launched {ratio:.2}x the kernels of the baseline: do they cover \
             the same steps? Totals add up every step a trace holds"
        )
    })
}

/// For two runs, the headline as a sentence: `GPU time of the slowest
/// rank: 18.467 ms (rank 1) -> 16.589 ms (rank 0) (-10.2%)`, `arrow`
/// between the two sides.
pub(crate) fn runs_headline(compared: &Comparison, arrow: &str) -> Option<String> {
    let h = compared.headline_times()?;
    let (br, nr) = h.ranks?;
    let (_, what) = compared.headline();
    let unit = if compared.per_step { "ms per step" } else { "ms" };
    let change = h.ratio().map(|r| format!(" ({:+.1}%)", (r - 1.0) * 100.0));
    Some(format!(
        "{what} of the {}: {:.3} {unit} ({}) {arrow} {:.3} {unit} ({}){}",
        headline_one(compared.by),
        h.base,
        compared.by.label(br),
        h.new,
        compared.by.label(nr),
        change.unwrap_or_default()
    ))
}

/// What the `--max-regression` check found, of the headline `what`: `GPU
/// time changed +7.2%, more than --max-regression 5%`; of a negative limit
/// (a gain asked for), `GPU time changed -3.0%, not the gain of 5% or more
/// --max-regression -5% asks for`.
pub(crate) fn regression_said(r: &Regression, what: &str) -> String {
    {
        let change = r.change_percent;
        let limit = Shown(r.limit_percent);
        match (r.exceeded, r.limit_percent < 0.0) {
            (true, true) => format!(
                "{what} changed {change:+.1}%, not the gain of {}% or more --max-regression \
                 {limit}% asks for",
                Shown(-r.limit_percent)
            ),
            (true, false) => {
                format!("{what} changed {change:+.1}%, more than --max-regression {limit}%")
            }
            (false, _) => format!("{what} changed {change:+.1}%, within --max-regression {limit}%"),
        }
    }
}

/// A number as a person gave it: `5`, `2.5`, `-5`; a very small or very
/// large one in scientific notation (`1e-320`, not 330 digits).
struct Shown(f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        match x == 0.0 || (1e-4..1e16).contains(&x.abs()) {
            true => write!(f, "{x}"),
            false => write!(f, "{x:e}"),
        }
    }
}

/// A row's ratio as shown: `1.06x`; `new` or `gone` for a name one side
/// lacks; `-` over a baseline of 0.
pub(crate) fn ratio_text(r: &DiffRow) -> String {
    match (r.base, r.new, r.ratio()) {
        (None, _, _) => "new".into(),
        (_, None, _) => "gone".into(),
        (_, _, Some(x)) => format!("{x:.2}x"),
        _ => "-".into(),
    }
}

/// A row's launch or call counts as shown: `16`, or `16{arrow}32` where the
/// sides differ (`-` for a side without the row; one decimal per step).
pub(crate) fn counts_text(r: &DiffRow, arrow: &str) -> String {
    let count = |m: Option<trace_summary::Measure>| match m.and_then(|m| m.count) {
        None => "-".to_string(),
        Some(c) if c.fract() == 0.0 => format!("{c}"),
        Some(c) => format!("{c:.1}"),
    };
    let (b, n) = (count(r.base), count(r.new));
    if b == n { b } else { format!("{b}{arrow}{n}") }
}
