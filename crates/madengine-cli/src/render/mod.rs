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

/// The version of the shape of the `--json` documents this CLI assembles
/// itself (`slurm submit`'s and `k8s apply`'s, a job and what was gathered
/// and analyzed of it) and prints through [`json`]: raised when a key is
/// renamed or removed or changes its meaning (a new key does not raise it).
/// Every other document is a library's, with its own version.
pub(crate) const JSON_VERSION: u32 = 1;

/// A `--json` document: `version` first, then the document's own keys.
#[derive(Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub(crate) struct Versioned<'a, T> {
    version: u32,
    #[serde(flatten)]
    document: &'a T,
}

/// Print `document` (a struct or map) as a `--json` document: one object,
/// with its shape's [`JSON_VERSION`] first.
pub(crate) fn json<T: Serialize>(document: &T) -> Result<(), Error> {
    print_json(&Versioned { version: JSON_VERSION, document })
}

/// Print as it is a document that carries its own `version` (a library's),
/// or one that is not this CLI's (a Kubernetes manifest, which has its own
/// `apiVersion`).
pub(crate) fn json_as_is<T: Serialize>(document: &T) -> Result<(), Error> {
    print_json(document)
}

fn print_json<T: Serialize>(value: &T) -> Result<(), Error> {
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

pub(crate) mod diff;
mod dynolog;
mod slurm;
mod summary;
mod trace;
mod tracelens;
mod view;
pub(crate) mod xlsx;

pub(crate) use self::{diff::*, dynolog::*, slurm::*, summary::*, trace::*, tracelens::*, view::*};

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

/// What a run tells as it goes ([`trace_report::RunNote`]), as a note.
pub(crate) fn run_note(said: trace_report::RunNote) {
    use trace_report::RunNote;
    match said {
        RunNote::Unlooked(problem) => left_out(std::slice::from_ref(&problem)),
        RunNote::Skipped(copy) => {
            note(&format!("left out {}: {}", copy.path.display(), copy.reason))
        }
        RunNote::NothingToRead { dir, there } => {
            // Nothing to read: say what was there instead, and what to do.
            const NAMED: usize = 3;
            for u in there.iter().take(NAMED) {
                note(&format!("{}: {}", u.path.display(), u.reason));
            }
            if there.len() > NAMED {
                note(&format!(
                    "{} more files TraceLens cannot read: `madengine trace discover {}` lists them",
                    there.len() - NAMED,
                    dir.display()
                ));
            }
        }
        RunNote::CyclePicked(p) => note(&format!("{}: {} (--cycle)", p.dir.display(), p.cycle)),
        RunNote::OtherCycles(n) => note(&format!(
            "{} of other profiling cycles not read (--cycle)",
            plural(n, "PyTorch trace")
        )),
        RunNote::Retired(what) => retired(&what),
        RunNote::NoCrossRank { what, why } => {
            note(&format!("no cross-rank table for {what}: {why}"));
        }
        RunNote::LeftOutOfGpus(left) => note(&left_out_of_gpus(&left)),
        RunNote::NoCollectiveReport { run, error } => {
            note(&format!("no collective report for {run}: {error}"));
        }
    }
}

/// What a run did to an earlier run's report, said as a note.
pub(crate) fn retired(what: &trace_report::Retired) {
    use trace_report::{Retired, Why};
    let text = match what {
        Retired::Report { dir, why } => {
            let why = match why {
                Why::MadeNone(trace) => format!("{} made none this time", trace.display()),
                Why::Gone(trace) => format!("its trace {} is gone", trace.display()),
                Why::ReportedIn { trace, now } => {
                    format!("its trace {} has its report in {} now", trace.display(), now.display())
                }
                Why::NoLongerRead(trace) => format!(
                    "its trace {} is no longer read as one (`madengine trace discover` says why)",
                    trace.display()
                ),
            };
            format!("removed the earlier report in {}: {why}", dir.display())
        }
        Retired::Collectives { dir, run } => format!(
            "removed the earlier collective report in {}: its run {} made none this time",
            dir.display(),
            run.display()
        ),
        Retired::KeptStale { dir, trace } => format!(
            "kept the earlier report in {}, marked stale: {} could not be read this time",
            dir.display(),
            trace.display()
        ),
    };
    note(&text);
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

/// Text exactly as given, on stdout.
pub(crate) fn raw(text: &str) -> Result<(), Error> {
    out(text)
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
