//! `madengine trace discover|sanitize|convert`.

use std::path::{Path, PathBuf};

use crate::{
    cli::{ConvertArgs, DiscoverArgs, SanitizeArgs},
    error::{Error, Status},
    render, settings,
};

pub(crate) fn discover(args: &DiscoverArgs) -> Result<Status, Error> {
    let options = settings::discover_options(args);
    // A file is classified alone: what madengine makes of it.
    let one_file = std::fs::metadata(&args.root).is_ok_and(|m| !m.is_dir());
    let found = match one_file {
        true => trace_discover::classify(&args.root, &options)?,
        false => trace_discover::discover(&args.root, &options)?,
    };
    if args.json {
        render::json_as_is(&found)?;
    } else {
        render::discovery(&found, one_file)?;
    }
    Ok(Status::Success)
}

pub(crate) fn convert(args: &ConvertArgs) -> Result<Status, Error> {
    let inputs = convert_inputs(args)?;
    let into = output_dir(args.output.as_deref());
    if args.output.is_some() && into.is_none() && inputs.len() != 1 {
        return Err(Error::Usage(format!(
            "--output names one file, but there are {} databases; name a directory (ending in \
             /), or leave it out to write each one's JSON beside it",
            inputs.len()
        )));
    }
    if inputs.is_empty() && !args.json {
        render::note("no rocpd databases (<pid>_results.db) found");
    }
    let outputs = outputs(
        &inputs,
        args.output.as_deref(),
        |input| input.with_file_name(trace_discover::rocprof_json_name(input)),
        |input| trace_discover::rocprof_json_name(input).into(),
    )?;
    // Every output is checked before any is written.
    let mut jobs = Vec::new();
    for (input, output) in inputs.into_iter().zip(outputs) {
        if output == input {
            return Err(Error::Usage(format!(
                "{} is the database itself: name another output with -o",
                output.display()
            )));
        }
        if output.exists() && !args.force {
            return Err(Error::Usage(format!(
                "{} exists (the run's own rocprofv3 JSON, written beside its database?): name \
                 another output with -o, or --force to replace it",
                output.display()
            )));
        }
        jobs.push((input, output));
    }
    make_dir(into)?;
    // Ctrl-C stops at the next rows and leaves no file.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let flag = interrupt.flag();
    let (mut written, mut failed) = (Vec::new(), 0);
    for (input, output) in &jobs {
        let size = std::fs::metadata(input).map_or(0, |m| m.len());
        let progress = render::Progress::new(
            0,
            "{spinner} converting {wide_msg} [{elapsed}]",
            size >= 16 << 20 && !args.json,
        );
        if let Some(bar) = progress.bar() {
            bar.set_message(input.display().to_string());
        }
        let converted = trace_summary::rocpd_to_json(input, output, Some(&flag));
        drop(progress);
        let records = match converted {
            Ok(records) => records,
            Err(err @ trace_summary::Error::Cancelled { .. }) => return Err(err.into()),
            Err(err) => {
                failed += 1;
                render::error(&Error::from(err));
                continue;
            }
        };
        if !args.json {
            render::converted(input, output, &records)?;
        }
        written.push(trace_summary::ConvertedFile {
            version: trace_summary::CONVERTED_VERSION,
            input: input.to_path_buf(),
            output: output.to_path_buf(),
            records,
        });
    }
    if args.json {
        match (&args.inputs[..], &written[..]) {
            ([one], [converted]) if !one.is_dir() => render::json_as_is(converted)?,
            _ => render::json_as_is(&trace_summary::ConvertedFiles {
                version: trace_summary::CONVERTED_VERSION,
                traces: written,
            })?,
        }
    }
    if failed > 0 {
        if jobs.len() > 1 {
            render::error_line(&format!(
                "{failed} of {} databases could not be converted",
                jobs.len()
            ));
        }
        return Ok(Status::Io);
    }
    Ok(Status::Success)
}

/// The databases to convert: files as given, and the rocpd databases
/// (`<pid>_results.db`) under each directory.
fn convert_inputs(args: &ConvertArgs) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut inputs = Vec::new();
    for path in &args.inputs {
        if !path.is_dir() {
            inputs.push(path.clone());
            continue;
        }
        let found = trace_discover::discover(path, &Default::default())?;
        render::left_out(&found.problems);
        inputs.extend(
            found.unsupported.into_iter().map(|u| u.path).filter(|p| trace_discover::is_rocpd(p)),
        );
    }
    Ok(inputs)
}

pub(crate) fn sanitize(args: &SanitizeArgs) -> Result<Status, Error> {
    let inputs = sanitize_inputs(args)?;
    let into = output_dir(args.output.as_deref());
    if args.output.is_some() && into.is_none() && inputs.len() != 1 {
        return Err(Error::Usage(format!(
            "--output names one file, but there are {} inputs; name a directory (ending in /), \
             or leave it out to write each repaired trace beside its input",
            inputs.len()
        )));
    }
    // Into a directory, each copy keeps its input's name: TraceLens'
    // patterns still find it, and its suffix still says whether it is gzip.
    let outputs =
        outputs(&inputs, args.output.as_deref(), trace_sanitize::default_output_path, |input| {
            input.file_name().unwrap_or_default().to_owned()
        })?;
    if !args.check {
        make_dir(into)?;
    }
    if inputs.is_empty() && !args.json {
        render::note("no PyTorch or rocprofv3 JSON traces found");
    }
    // Ctrl-C stops at the next chunk and removes the partial output.
    let interrupt = crate::interrupt::Guard::new(crate::interrupt::Mode::Cancel);
    let options = trace_sanitize::Options {
        cancel: Some(interrupt.flag()),
        ..settings::sanitize_options(args)
    };
    let single = inputs.len() == 1 && !args.inputs[0].is_dir();
    let (mut reports, mut findings, mut failed) = (Vec::new(), false, 0);
    let mut tally = render::CheckTally::default();
    for (input, output) in inputs.iter().zip(outputs) {
        let progress = progress_bar(input);
        let mut tick = |done: u64, total: u64| {
            if let Some(bar) = progress.bar() {
                bar.set_length(total);
                bar.set_position(done);
            }
        };
        let result = if args.check {
            trace_sanitize::check_file(input, &options, &mut tick)
        } else {
            if args.salvage {
                trace_sanitize::salvage_file(input, &output, &options, &mut tick)
            } else {
                trace_sanitize::sanitize_file(input, &output, &options, &mut tick)
            }
        };
        drop(progress);
        let report = match result {
            Ok(report) => report,
            // An interrupt stops all.
            Err(err @ trace_sanitize::Error::CancelledFile { .. }) => return Err(err.into()),
            Err(err) => {
                failed += 1;
                let cut_gzip =
                    matches!(err, trace_sanitize::Error::ReadFile { compressed: true, .. })
                        && !trace_sanitize::damaged_gzip(&err);
                let err = Error::from(err);
                render::error(&err);
                if cut_gzip && !args.salvage {
                    render::note(
                        "a .json.gz cut short (a job killed while writing it)? --salvage keeps \
                         what can be read and closes it",
                    );
                }
                // A run directory mounted read-only, or another user's.
                if err.is_unwritable_place() {
                    if args.output.is_none() {
                        render::note(
                            "the copy goes beside its input by default: write it elsewhere with \
                             -o PATH, or -o DIR/ for several",
                        );
                    }
                } else if let Some(hint) = err.hint() {
                    render::note(&hint);
                }
                continue;
            }
        };
        // A trace TraceLens cannot parse (--check), or a copy it cannot parse
        // either (a plain sanitize); --salvage mends a cut, never a bare word
        // that is not JSON nor a break in the grammar.
        let r = &report.report;
        let unparseable =
            (r.complete == Some(false) && !args.salvage) || r.not_json > 0 || r.malformed.is_some();
        findings |= unparseable || (args.check && report.report.needs_repair());
        match (unparseable, r.needs_repair()) {
            (true, _) => tally.unparseable += 1,
            (false, true) => tally.need_repair += 1,
            (false, false) => tally.clean += 1,
        }
        if args.json {
            reports.push(report);
        } else {
            render::sanitize_report(&report, args.salvage)?;
        }
    }
    if args.json {
        if single {
            render::json_as_is(&reports[0])?;
        } else {
            render::json_as_is(&trace_sanitize::FileReports::new(reports))?;
        }
    }
    // A run's traces checked: the verdict in one line (which says what
    // could not be read, too).
    let tallied = args.check && !single && !args.json && !inputs.is_empty();
    if tallied {
        tally.unreadable = failed;
        render::check_tally(&tally)?;
    }
    if failed > 0 {
        if !single && !tallied {
            render::error_line(&format!("{failed} of {} traces could not be read", inputs.len()));
        }
        return Ok(Status::Io);
    }
    Ok(if findings { Status::Findings } else { Status::Success })
}

/// `-o` as a directory: one that exists, or a path ending in `/`.
fn output_dir(output: Option<&Path>) -> Option<&Path> {
    output.filter(|o| o.is_dir() || o.as_os_str().as_encoded_bytes().ends_with(b"/"))
}

/// Each input's output: `-o` itself; in an `-o` directory, `named(input)`
/// there (two inputs given one name are refused before anything is
/// written); else `beside(input)`, the default.
fn outputs(
    inputs: &[PathBuf],
    output: Option<&Path>,
    beside: impl Fn(&Path) -> PathBuf,
    named: impl Fn(&Path) -> std::ffi::OsString,
) -> Result<Vec<PathBuf>, Error> {
    let Some(dir) = output_dir(output) else {
        let one = |input: &PathBuf| output.map_or_else(|| beside(input), Path::to_path_buf);
        return Ok(inputs.iter().map(one).collect());
    };
    let mut taken: std::collections::HashMap<PathBuf, &Path> = Default::default();
    let mut outputs = Vec::new();
    for input in inputs {
        let to = dir.join(named(input));
        if let Some(first) = taken.insert(to.clone(), input) {
            return Err(Error::Usage(format!(
                "{} and {} would both be written to {}: give them separately, each with its own -o",
                first.display(),
                input.display(),
                to.display()
            )));
        }
        outputs.push(to);
    }
    Ok(outputs)
}

/// Create the `-o` directory a path ending in `/` names.
fn make_dir(dir: Option<&Path>) -> Result<(), Error> {
    dir.map_or(Ok(()), |dir| super::in_dir(dir, || Ok(())))
}

/// The files to sanitize: files as given; with --check, the PyTorch and
/// rocprofv3 JSON traces under each directory.
fn sanitize_inputs(args: &SanitizeArgs) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut inputs = Vec::new();
    for path in &args.inputs {
        if !path.is_dir() {
            inputs.push(path.clone());
            continue;
        }
        if !args.check {
            return Err(Error::Usage(format!(
                "{} is a directory: repair names its files (or check it with --check)",
                path.display()
            )));
        }
        inputs.extend(
            super::json_traces(
                path,
                vec![],
                "nothing to check (TraceLens' pftrace reports read them through traceconv)",
            )?
            .into_iter()
            .map(|t| t.path),
        );
    }
    Ok(inputs)
}

/// A progress bar on stderr for files of 16 MiB or more.
fn progress_bar(input: &std::path::Path) -> render::Progress {
    let size = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    render::Progress::new(
        size,
        "{spinner} {bytes}/{total_bytes} ({bytes_per_sec}, {eta}) {wide_bar}",
        size >= 16 << 20,
    )
}
