//! One module per subcommand: call the libraries, hand results to `render`.

mod report;
mod setup;
mod trace;

use crate::{
    cli::{Cli, Command, ReportCommand, SetupCommand, TraceCommand},
    error::{Error, Status},
};

pub(crate) fn run(cli: Cli) -> Result<Status, Error> {
    match cli.command {
        Command::Trace(TraceCommand::Discover(args)) => trace::discover(&args),
        Command::Trace(TraceCommand::Sanitize(args)) => trace::sanitize(&args),
        Command::Report(ReportCommand::Tracelens(args)) => report::tracelens(&args),
        Command::Report(ReportCommand::TracelensCompare(args)) => report::compare(&args),
        Command::Setup(SetupCommand::Tracelens(args)) => setup::tracelens(&args),
    }
}
