//! One module per subcommand: call the libraries, hand results to `render`.

mod trace;

use crate::{
    cli::{Cli, Command, TraceCommand},
    error::{Error, Status},
};

pub(crate) fn run(cli: Cli) -> Result<Status, Error> {
    match cli.command {
        Command::Trace(TraceCommand::Discover(args)) => trace::discover(&args),
        Command::Trace(TraceCommand::Sanitize(args)) => trace::sanitize(&args),
    }
}
