//! `madengine`: GPU profiler traces to TraceLens reports.
//!
//! Parse, run, report; everything else lives in the library crates.

// The doc comments in cli.rs are clap help text, where <placeholders> are plain text.
#![allow(rustdoc::invalid_html_tags)]

mod cli;
mod commands;
mod error;
mod html;
mod interrupt;
mod render;
mod settings;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_args();
    interrupt::install();
    match commands::run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            if err.is_broken_pipe() {
                return ExitCode::SUCCESS;
            }
            render::error(&err);
            if let Some(hint) = err.hint() {
                render::note(&hint);
            }
            err.status().into()
        }
    }
}
