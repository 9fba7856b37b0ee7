//! Everything `madengine` prints: tables, JSON, errors.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "this module is the CLI's output")]

use std::io::{self, Write};

use serde::Serialize;
use trace_discover::{Claim, Discovery, RankSource, TraceKind};
use trace_sanitize::{Compression, CutKind, Defect, FileReport};

use crate::error::Error;

fn out(text: &str) -> Result<(), Error> {
    let text = terminal_safe(text);
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(Error::Stdout)
}

/// `text` with every control character that is not a line break or a tab
/// escaped as Rust escapes it (`\u{1b}`), so that what a trace names (a
/// kernel, an op, a file) cannot move the cursor, clear the screen, retitle
/// the window or forge a line; likewise the characters that reorder text
/// (bidirectional overrides). The colours [`paint`] gives a status stay.
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    let mut safe = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(colour) = PAINTS.iter().find(|p| rest.starts_with(**p)) {
            safe.push_str(colour);
            rest = &rest[colour.len()..];
            continue;
        }
        match unsafe_char(c) {
            true => safe.extend(c.escape_default()),
            false => safe.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    safe.into()
}

/// The only escape sequences madengine prints itself ([`paint`]).
const PAINTS: [&str; 4] = ["\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[0m"];

/// `error: ...` and each cause as `caused by: ...`, on stderr.
pub(crate) fn error(err: &Error) {
    let mut text = format!("error: {err}");
    for cause in causes(err) {
        text.push_str(&format!("\n  caused by: {cause}"));
    }
    say(format_args!("{text}"));
}

/// What caused `err`, nearest first.
pub(crate) fn causes<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(err.source(), |cause: &&'a (dyn std::error::Error + 'static)| {
        (*cause).source()
    })
}

pub(crate) fn json<T: Serialize>(value: &T) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(value).expect("report types serialize");
    text.push('\n');
    out(&text)
}

pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// A discovery as a table; of `one_file`, the file's row, or why it is none.
pub(crate) fn discovery(found: &Discovery, one_file: bool) -> Result<(), Error> {
    let mut text = String::new();
    if !found.traces.is_empty() {
        let rows: Vec<[String; 5]> = found
            .traces
            .iter()
            .map(|t| {
                let rank = match t.rank {
                    Some(r) => format!(
                        "{} ({})",
                        r.rank,
                        match r.source {
                            RankSource::FileName => "name",
                            RankSource::DistributedInfo => "distributedInfo",
                        }
                    ),
                    None => "-".into(),
                };
                let claim = match t.claim {
                    Claim::Name => "name",
                    Claim::Content => "content",
                };
                [t.kind.to_string(), claim.into(), rank, size(t.size), t.path.display().to_string()]
            })
            .collect();
        table(&mut text, ["KIND", "FOUND BY", "RANK", "SIZE", "PATH"], &rows);
    }
    for u in &found.unsupported {
        text.push_str(&format!("unsupported  {}: {}\n", u.path.display(), u.reason));
    }
    for p in &found.problems {
        text.push_str(&format!("problem      {}: {}\n", p.path.display(), p.message));
    }
    if one_file {
        if text.is_empty() {
            text = format!(
                "{}: not a trace madengine reads (PyTorch/Kineto or rocprofv3 JSON, .json or \
                 .json.gz; a rocprofv3 database or Perfetto trace)\n",
                found.root.display()
            );
        }
        return out(&text);
    }
    let kinds: Vec<String> = [TraceKind::Pytorch, TraceKind::RocprofJson, TraceKind::Pftrace]
        .into_iter()
        .filter_map(|k| match found.count(k) {
            0 => None,
            n => Some(format!("{n} {k}")),
        })
        .collect();
    text.push_str(&format!(
        "{} under {}{}; {} unsupported; {}\n",
        plural(found.traces.len(), "trace"),
        found.root.display(),
        if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
        found.unsupported.len(),
        plural(found.problems.len(), "problem"),
    ));
    out(&text)
}

/// What `trace sanitize --check` found in a run's traces, by verdict.
#[derive(Debug, Default)]
pub(crate) struct CheckTally {
    pub(crate) clean: usize,
    /// Repairs make them loadable.
    pub(crate) need_repair: usize,
    /// Cut short, a bare word or a break in the grammar: TraceLens cannot
    /// parse them, repaired or not.
    pub(crate) unparseable: usize,
    pub(crate) unreadable: usize,
}

/// The last line of a run's check: `29 traces checked: 27 clean, 1 needs
/// repair, 1 TraceLens cannot parse`.
pub(crate) fn check_tally(t: &CheckTally) -> Result<(), Error> {
    let total = t.clean + t.need_repair + t.unparseable + t.unreadable;
    let parts: Vec<String> = [
        (t.clean, "clean".to_string()),
        (t.need_repair, format!("{} repair", if t.need_repair == 1 { "needs" } else { "need" })),
        (t.unparseable, "TraceLens cannot parse".to_string()),
        (t.unreadable, "could not be read".to_string()),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let verdict = if parts.is_empty() { String::new() } else { format!(": {}", parts.join(", ")) };
    out(&format!("{} checked{verdict}\n", plural(total, "trace")))
}

/// What `trace sanitize` says of one trace: what it found and did, each
/// repair, and what a cut or the data after the document mean.
pub(crate) fn sanitize_report(file: &FileReport, salvaged: bool) -> Result<(), Error> {
    let text = [
        sanitize_headline(file, salvaged),
        repair_lines(&file.report),
        aftermath_lines(file, salvaged),
    ];
    out(&text.concat())
}

/// Why a trace (or its plain copy) is not one whole document, and whether
/// that is a break in the grammar (which explains the end that follows it,
/// and is `unfixable`, already said).
fn incomplete(
    r: &trace_sanitize::Report,
    starts_with: &Option<String>,
    unfixable: &str,
) -> (String, bool) {
    let broke = starts_with.is_none() && r.malformed.is_some();
    let after_end = r.cut.as_ref().is_some_and(|c| c.kind == CutKind::DataAfterEnd);
    let why = match (starts_with, &r.cut) {
        _ if r.bytes_read == 0 => "it is empty".to_string(),
        (Some(starts), _) => starts.clone(),
        _ if broke => unfixable.to_string(),
        _ if r.unclosed_string => unclosed_string(),
        (None, Some(_)) if after_end => "data follows the end of its JSON document".to_string(),
        (None, Some(_)) => {
            format!("it is cut short after byte {}, inside an unfinished value", r.bytes_read)
        }
        (None, None) => format!(
            "no complete JSON object or array in its {} (cut short inside the first?)",
            plural(r.bytes_read as usize, "byte")
        ),
    };
    (why, broke)
}

/// Why a text that ends in `}` or `]` is not complete.
fn unclosed_string() -> String {
    format!(
        "{}, though it ends in `}}` or `]` ({})",
        trace_sanitize::Report::UNCLOSED_STRING,
        trace_sanitize::Malformed::LIKELY
    )
}

/// What no repair mends: the bare words that are not JSON, and the first
/// token where the JSON grammar allows none (with what usually leaves one,
/// unless the string that never ends says it). `None` when there is
/// neither.
fn unfixable(r: &trace_sanitize::Report) -> Option<String> {
    let words = (r.not_json > 0).then(|| {
        format!(
            "it holds {} that {} not JSON ({})",
            plural(r.not_json as usize, "bare word"),
            if r.not_json == 1 { "is" } else { "are" },
            trace_sanitize::NotJson::LIKELY
        )
    });
    // A bare word where the grammar broke says it all.
    let word_at = r.first_not_json.as_ref().map(|w| w.offset);
    let broken = r.malformed.as_ref().filter(|m| Some(m.offset) != word_at).map(|m| {
        let likely = match r.unclosed_string {
            true => String::new(),
            false => format!(" ({})", m.likely()),
        };
        format!(
            "its JSON breaks at byte {}: {} where {} goes{likely}",
            m.offset, m.found, m.expected
        )
    });
    match (words, broken) {
        (Some(words), Some(broken)) => Some(format!("{words}, and {broken}")),
        (words, broken) => words.or(broken),
    }
}

/// What a clean trace's name misleads TraceLens into (its loader goes by
/// the suffix), if it does: `, but ...`.
fn misnamed(file: &FileReport) -> Option<String> {
    let name = file.input.file_name()?.to_string_lossy();
    let gzip = file.compression == Compression::Gzip;
    let fitting = tracelens_driver::tracelens_name(&name, gzip)?;
    // `report tracelens` finds traces named .json and .json.gz, and reads
    // them under the name that fits.
    let (what, found) = if gzip && name.ends_with("json") {
        ("it is gzip-compressed, and TraceLens reads a .json as plain JSON", true)
    } else if !gzip && name.ends_with("json.gz") {
        ("it is not gzip-compressed, and TraceLens reads a .json.gz with gzip", true)
    } else {
        ("TraceLens reads only files named .json or .json.gz", false)
    };
    let itself = if found { " (`report tracelens` reads it under that name itself)" } else { "" };
    Some(format!(", but {what}: name it {fitting}{itself}"))
}

/// The first line: clean, repaired, cut short or not JSON, and what was
/// written.
/// (`salvaged`: written by --salvage, which closes what was cut.)
fn sanitize_headline(file: &FileReport, salvaged: bool) -> String {
    let r = &file.report;
    let mut text = String::new();
    let counts = r.counts.to_string();
    let scanned = size(r.bytes_read);
    let recoded = match (file.compression, file.output_compression) {
        (Compression::Gzip, Some(Compression::None)) => " (gunzipped)",
        (Compression::None, Some(Compression::Gzip)) => " (gzipped)",
        _ => "",
    };
    let cut_short = r.complete == Some(false);
    let after_end = r.cut.as_ref().is_some_and(|c| c.kind == CutKind::DataAfterEnd);
    let starts_with = r.starts_with.map(|b| {
        format!(
            "it starts with {}, not `{{` or `[` (a log line before the trace? not a trace?)",
            trace_sanitize::DisplayByte(b)
        )
    });
    // Bare words and a break in the grammar, which no repair mends: the
    // copy is no more JSON than the input.
    let unfixable = unfixable(r);
    let not_json = unfixable.is_some();
    let unfixable = unfixable.unwrap_or_default();
    let copy_unparseable = match not_json {
        true => format!(", but {unfixable}: TraceLens cannot parse the copy either"),
        false => String::new(),
    };
    match &file.output {
        None if !r.needs_repair() && !cut_short && !not_json => text.push_str(&format!(
            "{}: clean ({scanned} scanned){}\n",
            file.input.display(),
            misnamed(file).unwrap_or_default()
        )),
        None if cut_short => {
            let (what, broke) = incomplete(r, &starts_with, &unfixable);
            let also = match (r.needs_repair(), not_json && !broke) {
                (true, true) => format!(", it needs repair: {counts}, and {unfixable}"),
                (true, false) => format!(", and it needs repair: {counts}"),
                (false, true) => format!(", and {unfixable}"),
                (false, false) => String::new(),
            };
            text.push_str(&format!(
                "{}: {what}{also}; TraceLens cannot parse it\n",
                file.input.display()
            ))
        }
        None if !r.needs_repair() => text.push_str(&format!(
            "{}: {unfixable}; TraceLens cannot parse it, and no repair applies\n",
            file.input.display(),
        )),
        None => text.push_str(&format!(
            "{}: needs repair: {counts}{}\n",
            file.input.display(),
            if r.stopped_early {
                format!(" (stopped at the first, after {scanned})")
            } else if not_json {
                format!(
                    "; and {unfixable}, which no repair mends: TraceLens cannot parse it even \
                     repaired"
                )
            } else {
                String::new()
            }
        )),
        Some(output) if r.cut.is_some() && salvaged => {
            let (verb, what) = match after_end {
                true => ("written to", " without what follows its JSON document"),
                false => ("closed into", ""),
            };
            text.push_str(&format!(
                "{}: {}{verb} {}{recoded}{what}{} ({scanned}){copy_unparseable}\n",
                file.input.display(),
                if r.needs_repair() { "repaired and " } else { "" },
                output.display(),
                if r.needs_repair() { format!(": {counts}") } else { String::new() },
            ))
        }
        // A plain copy, as unparseable as the input.
        Some(output) if cut_short => {
            let (why, broke) = incomplete(r, &starts_with, &unfixable);
            let also = match not_json && !broke {
                true => format!(", and {unfixable}"),
                false => String::new(),
            };
            text.push_str(&format!(
                "{}: {} into {}{recoded} ({scanned}), but {why}{also}: TraceLens cannot parse the \
                 copy either\n",
                file.input.display(),
                if r.needs_repair() { format!("repaired ({counts})") } else { "copied".into() },
                output.display(),
            ))
        }
        Some(output) if not_json => text.push_str(&format!(
            "{}: {} into {}{recoded} ({scanned}){copy_unparseable}\n",
            file.input.display(),
            if r.needs_repair() { format!("repaired ({counts})") } else { "copied".into() },
            output.display(),
        )),
        Some(output) if !r.needs_repair() => text.push_str(&format!(
            "{}: clean, {} {} ({scanned})\n",
            file.input.display(),
            match recoded {
                "" => "copied unchanged to".to_string(),
                _ => format!("{} into", recoded.trim_matches([' ', '(', ')'])),
            },
            output.display()
        )),
        Some(output) => text.push_str(&format!(
            "{}: repaired into {}{recoded}: {counts} ({scanned})\n",
            file.input.display(),
            output.display()
        )),
    }
    text
}

/// Each repair listed (the first ones), and the first bare word that is
/// not JSON.
fn repair_lines(r: &trace_sanitize::Report) -> String {
    let c = &r.counts;
    // Each line with its offset: the first bare word goes among the
    // repairs in the order of the file.
    let mut lines: Vec<(u64, String)> = Vec::new();
    for repair in &r.repairs {
        let what = match repair.defect {
            Defect::InvalidUtf8 => "invalid UTF-8",
            Defect::ControlChar => "control byte",
            Defect::LoneSurrogate => "lone surrogate",
            Defect::InvalidEscape => "invalid escape",
            Defect::NonFinite => "non-finite",
            Defect::StrayQuote => "stray quote",
            Defect::ByteOrderMark => "BOM",
            Defect::UnquotedNotAvailable => "unquoted N/A",
            _ => "defect",
        };
        let key = repair.key.as_ref().map(|k| format!(" in \"{k}\"")).unwrap_or_default();
        let line =
            format!("  at byte {:>10}  {what:<14} {}{key}\n", repair.offset, repair.original);
        lines.push((repair.offset, line));
    }
    if let Some(word) = &r.first_not_json {
        let key = word.key.as_ref().map(|k| format!(" in \"{k}\"")).unwrap_or_default();
        let more = match r.not_json {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let line =
            format!("  at byte {:>10}  {:<14} {}{key}{more}\n", word.offset, "not JSON", word.text);
        lines.push((word.offset, line));
    }
    let word_at = r.first_not_json.as_ref().map(|w| w.offset);
    if let Some(m) = r.malformed.as_ref().filter(|m| Some(m.offset) != word_at) {
        let line = format!(
            "  at byte {:>10}  {:<14} {} where {} goes\n",
            m.offset, "not JSON", m.found, m.expected
        );
        lines.push((m.offset, line));
    }
    lines.sort_by_key(|(offset, _)| *offset);
    let mut text: String = lines.into_iter().map(|(_, line)| line).collect();
    let listed = r.repairs.len() as u64;
    if c.total() > listed {
        text.push_str(&format!("  ... and {} more repairs\n", c.total() - listed));
    }
    text
}

/// What a cut, the data after the document, or a tail of zeros mean.
fn aftermath_lines(file: &FileReport, salvaged: bool) -> String {
    let r = &file.report;
    let after_end = r.cut.as_ref().is_some_and(|c| c.kind == CutKind::DataAfterEnd);
    let mut text = String::new();
    let dropped = |cut: &trace_sanitize::Cut| size(cut.dropped);
    match (&r.cut, salvaged) {
        (Some(cut), true) if after_end => text.push_str(&format!(
            "  data after the end of the document: dropped the last {}\n",
            dropped(cut)
        )),
        // --salvage mends neither a bare word nor a break in the grammar.
        (Some(_), false) if r.not_json > 0 || r.malformed.is_some() => {}
        (Some(cut), false) if after_end => text.push_str(&format!(
            "  --salvage writes a copy without its last {} (what follows the document)\n",
            dropped(cut)
        )),
        (Some(cut), true) => {
            let why = cut.read_error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default();
            let what = match r.unclosed_string {
                true => format!("its last string never ends ({})", trace_sanitize::Malformed::LIKELY),
                false => format!("cut short after byte {}{why}", cut.at),
            };
            text.push_str(&format!(
                "  {what}: dropped the last {} (an incomplete value), closed with `{}`\n",
                dropped(cut),
                cut.closed_with
            ));
        }
        (Some(cut), false) => text.push_str(&format!(
            "  --salvage writes a copy without its last {} (an incomplete value), closed with `{}`\n",
            dropped(cut),
            cut.closed_with
        )),
        _ => {}
    }
    // A run of zeros at the end of a broken trace: its bytes never reached
    // the disk (its node went down). Inside a string they are no control
    // bytes of the trace (not counted above); this says what they are.
    if r.zeros_at_end >= trace_sanitize::Report::CRASH_ZEROS
        && (r.complete == Some(false) || r.cut.is_some() || r.needs_repair())
    {
        text.push_str(&format!(
            "  it ends in {} of zero bytes: its node likely went down before the file reached the disk\n",
            size(r.zeros_at_end)
        ));
    }
    text
}

pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

fn table<const N: usize>(text: &mut String, header: [&str; N], rows: &[[String; N]]) {
    aligned(text, &header, rows, &[false; N]);
}

/// `cell` with its control characters escaped as Rust escapes them.
fn one_line(cell: &str) -> String {
    match cell.chars().any(char::is_control) {
        false => cell.to_string(),
        true => cell
            .chars()
            .map(|c| match c.is_control() {
                true => c.escape_default().to_string(),
                false => c.to_string(),
            })
            .collect(),
    }
}

/// [`table`] with the columns `right` names aligned right (numbers).
/// A control character in a cell (a newline in a path) is shown escaped
/// (`\n`), so that each row stays one line.
fn aligned<R: AsRef<[String]>>(text: &mut String, header: &[&str], rows: &[R], right: &[bool]) {
    let escaped: Vec<Vec<String>> =
        rows.iter().map(|row| row.as_ref().iter().map(|cell| one_line(cell)).collect()).collect();
    let rows = &escaped;
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            match (i + 1 == n, right[i]) {
                (true, false) => l.push_str(cell),
                (_, true) => l.push_str(&format!("{cell:>w$}  ")),
                (false, false) => l.push_str(&format!("{cell:<w$}  ")),
            }
        }
        text.push_str(l.trim_end());
        text.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// The progress bar on screen, if any: lines for stderr go above it.
static BAR: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// `line` on stderr, above the progress bar when one is shown (from any
/// thread, the Ctrl-C handler's included), so neither garbles the other.
fn say(line: std::fmt::Arguments<'_>) {
    let line = line.to_string();
    let line = terminal_safe(&line);
    let bar = BAR.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// A progress bar on stderr, drawn only when `show` holds and stderr is a
/// terminal. While it lives, [`note`], [`warning`] and [`error_line`]
/// print above it; dropping it clears it.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub(crate) fn new(len: u64, template: &str, show: bool) -> Progress {
        use std::io::IsTerminal;
        if !show || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(len),
            indicatif::ProgressDrawTarget::stderr(),
        );
        bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template"));
        // Redrawn on its own, so the spinner and the elapsed time move while
        // one long job (a TraceLens run of minutes) changes nothing else.
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        *BAR.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
        Progress(Some(bar))
    }

    /// The bar, when it is drawn.
    pub(crate) fn bar(&self) -> Option<&indicatif::ProgressBar> {
        self.0.as_ref()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            *BAR.lock().unwrap_or_else(|e| e.into_inner()) = None;
            bar.finish_and_clear();
        }
    }
}

/// A progress note on stderr, as the original's `[tracelens] ...` lines.
/// `trace convert`'s line: what was written, of what.
pub(crate) fn converted(
    input: &std::path::Path,
    output: &std::path::Path,
    records: &trace_summary::Converted,
) -> Result<(), Error> {
    let n = |n: u64, one: &str, many: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    };
    out(&format!(
        "wrote {}: {}, {}, from {} ({})\n",
        output.display(),
        n(records.kernels, "kernel dispatch", "kernel dispatches"),
        n(records.copies, "memory copy", "memory copies"),
        input.display(),
        n(records.processes, "process", "processes"),
    ))
}

pub(crate) fn note(text: &str) {
    say(format_args!("[madengine] {text}"));
}

/// An error that does not end the command (the exit code still tells).
pub(crate) fn error_line(text: &str) {
    say(format_args!("error: {text}"));
}

pub(crate) fn warning(text: &str) {
    say(format_args!("warning: {text}"));
}

/// The paths discovery could not look at, one warning each: what was left
/// out, and why.
pub(crate) fn left_out(problems: &[trace_discover::Problem]) {
    for p in problems {
        warning(&format!("{}: {}; left out", p.path.display(), p.message));
    }
}

fn colour() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && io::stdout().is_terminal()
}

fn paint(status: tracelens_driver::Status, colour: bool) -> String {
    let text = status.as_str();
    if !colour {
        return text.to_string();
    }
    let code = match status {
        tracelens_driver::Status::Success => "32",
        tracelens_driver::Status::Skipped => "33",
        tracelens_driver::Status::Failure => "31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

pub(crate) fn plan(found: &Discovery, plan: &tracelens_driver::Plan) -> Result<(), Error> {
    let mut text = String::new();
    for t in &found.traces {
        text.push_str(&format!("{}\t{}\n", t.kind, t.path.display()));
    }
    // rocpd databases: reported through the JSON written for them, or left
    // to the JSON their run also wrote.
    let databases: Vec<&std::path::Path> =
        plan.jobs.iter().filter(|j| j.is_rocpd()).filter_map(|j| j.trace.as_deref()).collect();
    for db in &databases {
        text.push_str(&format!("{}\t{}\n", tracelens_driver::ROCPD, db.display()));
    }
    let collective = tracelens_driver::Tool::Collective.script();
    let left: Vec<&tracelens_driver::Row> = plan
        .skipped
        .iter()
        .filter(|r| r.kind == tracelens_driver::ROCPD && r.tracelens_tool != collective)
        .collect();
    for u in &found.unsupported {
        let rel = u.path.strip_prefix(&found.root).unwrap_or(&u.path);
        if databases.contains(&u.path.as_path()) {
            continue;
        }
        match left.iter().find(|r| std::path::Path::new(&r.trace_file) == rel) {
            Some(row) => text.push_str(&format!("skipped\t{}\t{}\n", u.path.display(), row.detail)),
            None => text.push_str(&format!("unsupported\t{}\t{}\n", u.path.display(), u.reason)),
        }
    }
    for p in &found.problems {
        text.push_str(&format!("problem\t{}\t{}\n", p.path.display(), p.message));
    }
    for job in plan.jobs.iter().filter_map(|j| j.collective.as_ref().map(|c| (j, c))) {
        let (job, c) = job;
        let ranks: Vec<String> =
            c.members.iter().map(|(r, p)| format!("rank {r}: {}", p.display())).collect();
        text.push_str(&format!(
            "collective\t{} (world size {})\t{}\n",
            job.label,
            c.world_size,
            ranks.join("; ")
        ));
    }
    for row in plan.skipped.iter().filter(|r| r.tracelens_tool == collective) {
        text.push_str(&format!("no collective\t{}\t{}\n", row.trace_file, row.detail));
    }
    for picked in &plan.cycles {
        text.push_str(&format!("cycle\t{}\t{}\n", picked.dir.display(), picked.cycle));
    }
    if plan.other_cycles > 0 {
        text.push_str(&format!(
            "{} of other profiling cycles left out (--cycle)\n",
            plural(plan.other_cycles, "PyTorch trace")
        ));
    }
    text.push_str(&format!(
        "{} TraceLens job(s) planned for {} under {}\n",
        plan.jobs.len(),
        plural(found.traces.len() + databases.len(), "trace"),
        found.root.display()
    ));
    out(&text)
}

pub(crate) fn tracelens_summary(summary: &tracelens_driver::Summary) -> Result<(), Error> {
    let mut text = String::new();
    if summary.results.is_empty() {
        text.push_str(&format!(
            "No supported trace artifacts found under {}. Stack a profiling tool such as \
             torch_profiler_dynolog, rocprofv3_lightweight, or rocprofv3_perfetto with the tracelens tool.\n",
            summary.root.display()
        ));
        return out(&text);
    }
    let colour = colour();
    let rows: Vec<[String; 5]> = summary
        .results
        .iter()
        .map(|r| {
            let tool = r
                .tracelens_tool
                .strip_prefix("TraceLens_")
                .unwrap_or(&r.tracelens_tool)
                .to_string();
            let report = if r.output.is_empty() { tool } else { r.output.clone() };
            [
                r.status.as_str().to_string(),
                r.trace_file.clone(),
                r.kind.clone(),
                report,
                r.detail.clone(),
            ]
        })
        .collect();
    let mut table_text = String::new();
    table(&mut table_text, ["STATUS", "TRACE", "KIND", "REPORT", "DETAIL"], &rows);
    // Colour the status cells after layout, so widths stay right.
    for (line, row) in
        table_text.lines().zip(std::iter::once(None).chain(summary.results.iter().map(Some)))
    {
        match row {
            Some(r) => {
                let rest = &line[r.status.as_str().len()..];
                text.push_str(&format!("{}{rest}\n", paint(r.status, colour)));
            }
            None => text.push_str(&format!("{line}\n")),
        }
    }
    let c = summary.counts;
    text.push_str(&format!(
        "{} succeeded, {} failed, {} skipped in {:.1} s; summary: {}\n",
        c.succeeded,
        c.failed,
        c.skipped,
        summary.durations.total_s,
        summary.summary_csv.display()
    ));
    out(&text)
}

pub(crate) fn compare_outcome(outcome: &tracelens_driver::CompareOutcome) -> Result<(), Error> {
    let text = match outcome.status {
        tracelens_driver::Status::Success => format!("wrote {}\n", outcome.output.display()),
        _ => format!("the comparison failed:\n$ {}\n{}\n", outcome.command, outcome.detail),
    };
    out(&text)
}

pub(crate) fn setup_outcome(outcome: &tracelens_driver::SetupOutcome) -> Result<(), Error> {
    let version = outcome.version.as_deref().unwrap_or("(unknown version)");
    let what = if outcome.installed { "installed" } else { "already installed" };
    out(&format!(
        "TraceLens {version} {what} in {}\nuse it with: --python {}  or  export TRACELENS_VENV={}\n",
        outcome.venv.display(),
        outcome.python.display(),
        outcome.venv.display()
    ))
}

pub(crate) fn daemon_value(json: bool, key: &str, value: &serde_json::Value) -> Result<(), Error> {
    if json {
        self::json(&serde_json::json!({ key: value }))
    } else {
        out(&format!(
            "{key}: {}\n",
            value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string())
        ))
    }
}

pub(crate) fn gputrace(reply: &dynolog_client::TraceReply, files: &[String]) -> Result<(), Error> {
    let list = |pids: &[u32]| pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    let mut text = String::new();
    if reply.processes_matched.is_empty() {
        text.push_str("no process matched: check --job-id and --pids, and that the workload runs with KINETO_USE_DAEMON=1\n");
        return out(&text);
    }
    text.push_str(&format!(
        "matched {} process(es): {}\n",
        reply.processes_matched.len(),
        list(&reply.processes_matched)
    ));
    if reply.activity_profilers_busy > 0 {
        text.push_str(&format!(
            "{} process(es) still had an earlier request pending and were not triggered again\n",
            reply.activity_profilers_busy
        ));
    }
    if !files.is_empty() {
        text.push_str("trace files kineto will write:\n");
        for f in files {
            text.push_str(&format!("    {f}\n"));
        }
    }
    out(&text)
}

pub(crate) fn trigger_outcome(outcome: &dynolog_client::Outcome) {
    use dynolog_client::Outcome;
    match outcome {
        Outcome::Accepted { attempts, reply, .. } => note(&format!(
            "trace request accepted on attempt {attempts}: {} process(es) triggered",
            reply.activity_profilers_triggered.len()
        )),
        Outcome::NoProcess { attempts } => note(&format!(
            "gave up after {attempts} attempts: no PyTorch process registered. The workload needs PyTorch >= 1.13 \
             running with KINETO_USE_DAEMON=1; a short run may end before --warmup-s (TORCH_PROFILE_WARMUP_S) \
             or before --max-attempts (TORCH_PROFILE_MAX_ATTEMPTS) run out"
        )),
        Outcome::RequestRejected { reason, .. } => {
            note(&format!("the daemon rejected the trace request; not retrying: {reason}"))
        }
        Outcome::DaemonUnreachable { reason, .. } => {
            note(&format!("the dynolog daemon could not be reached; not retrying: {reason}"))
        }
        Outcome::WorkloadEnded { attempts } => note(&format!(
            "the workload ended before a trace was requested ({attempts} attempts); lower --warmup-s for short runs"
        )),
    }
}

pub(crate) fn stopped(how: dynolog_client::Stopped) -> &'static str {
    match how {
        dynolog_client::Stopped::Terminated => "stopped",
        dynolog_client::Stopped::Killed => "did not stop gracefully; killed",
        dynolog_client::Stopped::NotRunning => "was no longer running",
    }
}

/// How a capture session's parts ended, for [`capture_report`].
#[derive(Debug)]
pub(crate) struct Ended {
    /// A trigger ran (a `dynolog start --no-trigger` session has none).
    pub(crate) trigger: bool,
    /// The session's daemon, where it had one.
    pub(crate) daemon: Option<DaemonEnd>,
    /// How the workload ended, where the session started it (`profile`).
    pub(crate) workload: Option<dynolog_client::Exit>,
}

/// The daemon of a session, as it was before the session stopped it.
#[derive(Debug)]
pub(crate) struct DaemonEnd {
    pub(crate) pid: u32,
    /// It was no longer running.
    pub(crate) gone: bool,
    /// How it ended, where this process started it and could tell.
    pub(crate) how: Option<dynolog_client::Exit>,
}

impl DaemonEnd {
    /// `the dynolog daemon (pid N) was killed by signal 13 (SIGPIPE)`, or
    /// `... had ended`.
    fn ended(&self) -> String {
        match self.how {
            Some(how) => format!("the dynolog daemon (pid {}) {how}", self.pid),
            None => format!("the dynolog daemon (pid {}) had ended", self.pid),
        }
    }
}

pub(crate) fn capture_report(
    copied: &[std::path::PathBuf],
    output_dir: &std::path::Path,
    outcome: Option<&dynolog_client::Outcome>,
    ended: &Ended,
    state: &dynolog_client::RunState,
) {
    use dynolog_client::Outcome;
    if !copied.is_empty() {
        note(&format!(
            "captured {} torch.profiler trace(s) in {}:",
            copied.len(),
            output_dir.display()
        ));
        for c in copied {
            say(format_args!("    {}", c.display()));
        }
        return;
    }
    warning(&format!("no torch.profiler traces were captured in {}", output_dir.display()));
    // Killed by a signal after its trace was requested: a crash (often in
    // the profiler itself), Ctrl-C, the OOM killer.
    let killed = ended.workload.filter(|w| {
        matches!(w, dynolog_client::Exit::Signal(_))
            && matches!(outcome, Some(Outcome::Accepted { .. }))
    });
    // The daemon gone before the session stopped it, and whether kineto had
    // fetched the request's config from it (its log says when it hands one out).
    let gone = ended.daemon.as_ref().filter(|d| d.gone);
    let fetched = std::fs::read_to_string(state.daemon_log())
        .is_ok_and(|log| log.contains("Returning activity profiler config"));
    let died_how = |d: &DaemonEnd| {
        let why = match d.how {
            Some(dynolog_client::Exit::Signal(13)) => {
                ": dynolog dies of SIGPIPE when a client closes its connection before the daemon \
                 writes its reply"
            }
            _ => "",
        };
        format!("{}{why}", d.ended())
    };
    let workload_then = match ended.workload {
        Some(exit) => format!("; the workload {exit} later"),
        None => String::new(),
    };
    let why = match (outcome, killed, gone) {
        (Some(Outcome::Accepted { .. }), _, Some(d)) if !fetched => format!(
            "{} after it accepted the trace request, before kineto fetched its config{workload_then}",
            died_how(d)
        ),
        (Some(Outcome::DaemonUnreachable { .. }), _, Some(d)) => {
            format!("{} before a trace was requested{workload_then}", died_how(d))
        }
        (Some(Outcome::DaemonUnreachable { reason, .. }), _, None) => {
            format!("the dynolog daemon could not be reached when a trace was to be requested ({reason})")
        }
        (Some(Outcome::NoProcess { .. }), _, _) => {
            "the trigger never matched a PyTorch process (not PyTorch, PyTorch before 1.13, KINETO_USE_DAEMON unset, or the run ended before the warm-up)".to_string()
        }
        (Some(Outcome::RequestRejected { .. }), _, _) => {
            let log = match state.trigger_log().is_file() {
                true => "; see the trigger log",
                false => "",
            };
            format!("the daemon rejected the trace request itself, so no trace was ever requested{log}")
        }
        (Some(Outcome::WorkloadEnded { .. }), _, _) => {
            "the workload ended before a trace was requested".to_string()
        }
        (Some(Outcome::Accepted { .. }), Some(exit), _) => {
            format!("a trace was requested, but the workload {exit} before kineto wrote it")
        }
        (Some(Outcome::Accepted { .. }), None, _) => {
            "a trace was requested, but kineto wrote nothing: the workload may have ended inside the trace window, or (iteration mode) never imported torch.profiler".to_string()
        }
        (None, _, _) if !ended.trigger => {
            "no trace was requested: the session was started with --no-trigger (request one with \
             `madengine dynolog trigger` or `madengine dynolog gputrace` while the workload runs)"
                .to_string()
        }
        (None, _, Some(d)) => format!("{} before the trigger finished", died_how(d)),
        (None, _, None) => "the trigger never finished".to_string(),
    };
    say(format_args!("  why: {why}"));
    if killed.is_some_and(dynolog_client::Exit::crashed) {
        // PyTorch 2.11 on CUDA (an H200) aborted or segfaulted so when it
        // ended with a time window still open (docs/user-guide.md).
        eprintln!(
            "  a process that ends while Kineto still traces it can crash inside PyTorch's \
             profiler: ask for the trace earlier (--warmup-s), or let the workload run past the \
             trace window"
        );
    }
    for log in [state.daemon_log(), state.trigger_log()] {
        if log.is_file() {
            let tail = dynolog_client::log_tail(&log, 40);
            say(format_args!("=== {} ===\n{tail}\n===", log.display()));
        }
    }
}

/// Text exactly as given, on stdout.
pub(crate) fn raw(text: &str) -> Result<(), Error> {
    out(text)
}

pub(crate) fn slurm_summary(summary: &collect_slurm::Summary) -> Result<(), Error> {
    let mut text = String::new();
    if let Some(state) = &summary.state {
        text.push_str(&format!(
            "job {}: {}{}{}\n",
            summary.job_id,
            state.state,
            state.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default(),
            state.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
        ));
    }
    let rows: Vec<[String; 5]> = summary
        .nodes
        .iter()
        .map(|n| {
            let status = match n.status {
                collect_slurm::NodeStatus::Succeeded => "succeeded",
                collect_slurm::NodeStatus::Failed => "failed",
                collect_slurm::NodeStatus::Unfinished => "unfinished",
                collect_slurm::NodeStatus::Missing => "missing",
            };
            let collected = n
                .collected
                .iter()
                .map(|c| format!("{} ({} files, {})", c.dir, c.files, size(c.bytes)))
                .collect::<Vec<_>>()
                .join(", ");
            let traces =
                n.traces.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ");
            [
                n.name.clone(),
                n.slurm_node.clone().unwrap_or_else(|| "-".into()),
                status.into(),
                collected,
                traces,
            ]
        })
        .collect();
    table(&mut text, ["NODE", "SLURM NODE", "STATUS", "COLLECTED", "TRACES"], &rows);
    if !summary.failed.is_empty() {
        text.push_str(&format!(
            "failed: {} (their logs are in their node directories)\n",
            summary.failed.join(", ")
        ));
    }
    if !summary.missing.is_empty() {
        text.push_str(&format!("missing: {} (no results at all)\n", summary.missing.join(", ")));
    }
    text.push_str(&format!(
        "summary: {}\n",
        summary.results.join(collect_slurm::SUMMARY).display()
    ));
    out(&text)
}

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
fn run_collectives(text: &mut String, reports: &[crate::commands::RunCollectives]) {
    use crate::commands::{number as num, shown};
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
    views: &[crate::commands::SummaryView],
    ranks: &[trace_report::RankRow],
    cycles: &[trace_report::CycleRow],
    gpus: &[trace_report::GpuRow],
    collectives: &[crate::commands::RunCollectives],
) -> Result<(), Error> {
    let mut text = String::new();
    let pct = |p: Option<f64>| p.map(|p| format!("{p:.1}%")).unwrap_or_else(|| "-".into());
    for v in views {
        text.push_str(&format!("== {}{}\n", v.trace.display(), v.heading_tags()));
        if let Some(error) = &v.error {
            text.push_str(&format!("   error: {error}\n\n"));
            continue;
        }
        if let Some(warning) = v.warning() {
            text.push_str(&format!("   warning: {warning}\n"));
        }
        if let Some(note) = v.repaired_note() {
            text.push_str(&format!("   note: {note}\n"));
        }
        if v.outcome == Some(trace_summary::Outcome::NoGpuActivity) {
            text.push_str(&format!("   {}\n\n", v.note().unwrap_or_default()));
            continue;
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
            let labels = crate::commands::labels(rows, shorten);
            for (row, label) in rows.iter().zip(labels) {
                text.push_str(&format!(
                    "     {:>12}  {:>6}  {label}\n",
                    py(row.value),
                    pct(row.percent),
                ));
            }
        }
        if let Some(short) = v.short_kernels.filter(|s| s.launches > 0) {
            let share = short
                .percent_of_total
                .map_or(String::new(), |p| format!(", {p:.1}% of the GPU time"));
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
        if let Some(dir) = &v.csv_dir {
            text.push_str(&format!("   CSVs: {}\n", dir.display()));
        }
        text.push('\n');
    }
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
            &mut text,
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
            &mut text,
            &["CYCLE", "TRACES", "GPU TIME", "VS CYCLE 1", "SLOWEST"],
            &rows,
            &[false, true, true, true, false],
        );
    }
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
        aligned(&mut text, &header, &rows, &numbers);
    }
    run_collectives(&mut text, collectives);
    if views.is_empty() {
        text.push_str("no PyTorch or rocprofv3 traces found\n");
    }
    out(&text)
}

fn py(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v:.3}") }
}

/// A kernel's name for a reader, cut to 100 characters.
fn shorten(name: &str) -> String {
    let name = demangled(name);
    if name.chars().count() > 100 {
        format!("{}...", name.chars().take(97).collect::<String>())
    } else {
        name.into_owned()
    }
}

/// A kernel's name as a reader wants it: a mangled C++ name (`_ZN5aiter...`,
/// as composable_kernel's, aiter's and some cuDNN kernels are named in
/// traces) demangled; any other name, or one that does not demangle, as it
/// is. Only what is printed for people changes: CSVs and `--json` keep the
/// trace's names, as TraceLens does.
pub(crate) fn demangled(name: &str) -> std::borrow::Cow<'_, str> {
    if name.starts_with("_Z")
        && let Ok(symbol) = cpp_demangle::Symbol::new(name)
        && let Ok(text) = symbol.demangle()
    {
        return text.into();
    }
    name.into()
}

/// `report diff`'s view: both sides, the timeline side by side (rank by
/// rank for two runs), then the kernels and ops whose time changed most.
pub(crate) fn diff(
    compared: &crate::commands::Compared,
    top: usize,
    written: &[std::path::PathBuf],
    html: Option<&std::path::Path>,
) -> Result<(), Error> {
    use trace_summary::{DiffRow, Measure};
    let mut text = String::new();
    let (sides, diff) = (&compared.sides, &compared.diff);
    let ranked = !compared.ranks.is_empty();
    let by = compared.by.word();
    for side in sides {
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
    if let Some(note) = compared.gpus_note() {
        text.push_str(&format!("note: {note}\n"));
    }
    if let Some(note) = compared.coverage_note() {
        text.push_str(&format!("note: {note}\n"));
    }
    let ms = |v: f64| format!("{v:.3}");
    let unit = if compared.per_step { "ms per step" } else { "ms" };
    // A change too small for 3 decimals still shows its sign.
    let signed = |d: f64, f: &dyn Fn(f64) -> String| {
        let sign = if d > 0.0 { "+" } else { "-" };
        match f(d.abs()) {
            _ if d == 0.0 => "0".to_string(),
            shown if shown.chars().all(|c| c == '0' || c == '.') => format!("{sign}<0.001"),
            shown => format!("{sign}{shown}"),
        }
    };
    let ratio = crate::commands::ratio_text;
    let time = |m: Option<Measure>, f: &dyn Fn(f64) -> String| {
        m.map_or_else(|| "-".to_string(), |m| f(m.time))
    };
    let (headline, what) = compared.headline();
    let row_of = |rows: &[DiffRow], name: &str| rows.iter().find(|r| r.name == name).cloned();
    // rocprofv3's collective kernels ([`trace_summary::Diff::collective_kernels`]).
    const COLLECTIVES: &str = "collectives";
    let change = |r: Option<f64>| r.map(|r| format!(" ({:+.1}%)", (r - 1.0) * 100.0));
    let said = compared.headline_times();
    if ranked {
        if let Some(line) = compared.runs_headline("->") {
            text.push_str(&format!("\n{line}\n"));
        }
        // rocprofv3's kernel time holds its collective kernels' (when the
        // run has any), shown after it.
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
        text.push_str(&format!("\n{what} per {by} ({unit}; {last}: change by part{within}):\n"));
        let mut header = vec![compared.by.column(), "BASELINE", "NEW", "DELTA", "RATIO"];
        header.extend(parts.iter().map(|(_, column)| *column));
        let mut numbers = vec![true; header.len()];
        numbers[0] = false;
        aligned(&mut text, &header, &rows, &numbers);
    } else {
        if let Some(h) = &said {
            // rocprofv3's busy time holds its collective kernels'.
            let comm = match diff.collective_kernels.as_ref().filter(|r| crate::commands::timed(r))
            {
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
                [
                    r.name.clone(),
                    time(r.base, &ms),
                    time(r.new, &ms),
                    signed(r.delta(), &ms),
                    ratio(r),
                ]
            })
            .collect();
        let numbers = [false, true, true, true, true];
        let title = format!("TIMELINE ({unit})");
        aligned(&mut text, &[&title, "BASELINE", "NEW", "DELTA", "RATIO"], &rows, &numbers);
    }
    let count = |r: &DiffRow| crate::commands::counts_text(r, " -> ");
    let over = match ranked {
        true => format!(", all {} {}", compared.ranks.len(), compared.by.plural()),
        false => String::new(),
    };
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
        aligned(&mut text, &["BASELINE", "NEW", "DELTA", "RATIO", calls, what], &shown, &numbers);
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
    matched_collectives(&mut text, &compared.matched, top);
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

/// `n` with thousands separated by commas.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    /// Mangled names from real traces (an MI300 ResNet's composable_kernel
    /// convolution, SGLang's aiter kernel, the H200 fixture's cuDNN one)
    /// read as C++; names CUPTI already demangled, and what is no mangled
    /// name, stay as they are.
    #[test]
    fn mangled_kernel_names_are_printed_demangled() {
        let cases = [
            (
                "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
                "void aiter::add_rmsnorm_quant_kernel<",
            ),
            ("_Z4siluf", "silu(float)"),
            ("void at::native::vectorized_elementwise_kernel<4>(int)", "void at::native::"),
            ("_Znot a symbol", "_Znot a symbol"),
            ("Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"),
        ];
        for (name, starts) in cases {
            let shown = super::demangled(name);
            assert!(shown.starts_with(starts), "{name}: {shown}");
        }
        let long = super::shorten(cases[0].0);
        assert!(long.starts_with("void aiter::") && long.chars().count() <= 100, "{long}");
    }

    #[test]
    fn the_spread_line_names_the_slowest_the_fastest_and_the_median() {
        let row = |rank: u32, total: f64, slowest: bool| trace_report::RankRow {
            rank,
            total,
            slowest,
            ..Default::default()
        };
        let two = [row(0, 10.0, false), row(1, 15.0, true)];
        assert_eq!(
            super::spread(&two),
            ["rank 1 is the slowest, 15.000 ms: 1.50x rank 0, the fastest (10.000 ms)"]
        );
        let four =
            [row(0, 12.0, false), row(1, 20.0, true), row(2, 8.0, false), row(3, 14.0, false)];
        assert_eq!(
            super::spread(&four),
            ["rank 1 is the slowest, 20.000 ms: 2.50x rank 2, the fastest (8.000 ms); median \
              13.000 ms over 4 ranks"]
        );
        assert_eq!(
            super::spread(&[row(0, 0.0, false), row(1, 2.0, true)]),
            ["rank 1 is the slowest, 2.000 ms: against rank 0, the fastest (0.000 ms)"]
        );
        let mut three = [row(0, 9.0, false), row(1, 11.0, true), row(2, 10.0, false)];
        assert!(super::spread(&three)[0].ends_with("; median 10.000 ms over 3 ranks"));
        // The rank the others waited for in their collectives.
        for (r, comm) in three.iter_mut().zip([4.0, 0.5, 3.0]) {
            r.exposed_comm = comm;
            r.least_exposed_comm = comm == 0.5;
        }
        assert_eq!(
            super::spread(&three)[1],
            "least exposed comm: rank 1, 0.500 ms (in a job that synchronizes, the rank the \
             others waited for)"
        );
        // All alike: no rank is flagged, and no line says so.
        assert!(super::spread(&[row(0, 5.0, false), row(1, 5.0, false)]).is_empty());
    }
}
