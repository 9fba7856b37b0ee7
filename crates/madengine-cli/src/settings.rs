//! Validation and conversion of arguments into library settings.

use crate::cli::{DiscoverArgs, SanitizeArgs};

pub(crate) fn discover_options(args: &DiscoverArgs) -> trace_discover::Options {
    trace_discover::Options {
        exclude: args.exclude.clone(),
        follow_links: args.follow_links,
        names_only: args.names_only,
    }
}

pub(crate) fn sanitize_options(args: &SanitizeArgs) -> trace_sanitize::Options {
    trace_sanitize::Options {
        max_recorded: args.max_listed,
        stop_at_first: args.first,
        ..Default::default()
    }
}
