//! `madengine trace discover|sanitize`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{
    cli::{DiscoverArgs, SanitizeArgs},
    error::{Error, Status},
    render, settings,
};

pub(crate) fn discover(args: &DiscoverArgs) -> Result<Status, Error> {
    let found = trace_discover::discover(&args.root, &settings::discover_options(args))?;
    if args.json {
        render::json(&found)?;
    } else {
        render::discovery(&found)?;
    }
    Ok(Status::Success)
}

pub(crate) fn sanitize(args: &SanitizeArgs) -> Result<Status, Error> {
    let options = settings::sanitize_options(args);
    let bar = progress_bar(&args.input);
    let mut tick = |done: u64, total: u64| {
        if let Some(bar) = &bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    };
    let result = if args.check {
        trace_sanitize::check_file(&args.input, &options, &mut tick)
    } else {
        let output =
            args.output.clone().unwrap_or_else(|| trace_sanitize::default_output_path(&args.input));
        trace_sanitize::sanitize_file(&args.input, &output, &options, &mut tick)
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = result?;
    if args.json {
        render::json(&report)?;
    } else {
        render::sanitize_report(&report)?;
    }
    Ok(if args.check && report.report.needs_repair() { Status::Findings } else { Status::Success })
}

/// A progress bar on stderr for files of 16 MiB or more, when stderr is a terminal.
fn progress_bar(input: &std::path::Path) -> Option<ProgressBar> {
    let size = std::fs::metadata(input).ok()?.len();
    if size < 16 << 20 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {bytes}/{total_bytes} ({bytes_per_sec}, {eta}) {wide_bar}",
        )
        .expect("valid template"),
    );
    Some(bar)
}
