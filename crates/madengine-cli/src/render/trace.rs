//! `trace discover`, `trace sanitize`, `trace convert`.

use super::*;

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
