//! `madengine setup tracelens`.

use crate::{
    cli::SetupTracelensArgs,
    error::{Error, Status},
    render, settings,
};

pub(crate) fn tracelens(args: &SetupTracelensArgs) -> Result<Status, Error> {
    let config = settings::setup_config(args);
    let outcome = tracelens_driver::setup(&config, &mut |step| render::note(step))?;
    if args.json {
        render::json_as_is(&outcome)?;
    } else {
        render::setup_outcome(&outcome)?;
    }
    Ok(Status::Success)
}
