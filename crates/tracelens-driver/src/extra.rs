//! Extra TraceLens arguments (after `--`), routed to the tools that take them.
//!
//! The original appended every extra argument to every TraceLens command.
//! TraceLens' tools are argparse CLIs that reject options they do not know,
//! so `-- --enable_kernel_summary` made the collective and rocprof reports of
//! the same run fail. Here each option (with the values after it) goes to the
//! tools whose documented options include it, by argparse's own rule: the
//! exact name, or an abbreviation of it (reference/tracelens.md, TraceLens
//! 171dd74). An option no tool documents (a newer TraceLens, say) still goes
//! to every command, as in the original, and the run says so. Options that
//! madengine itself sets (inputs, outputs, world size, arch) are refused:
//! passing them again would move or break the reports.

use std::ffi::{OsStr, OsString};

use crate::{Error, Managed, Result, tool::Tool};

/// One option and the values after it, or leading positional values.
#[derive(Debug)]
struct Group<'a> {
    /// The option's name (`--name`, without any `=value`); `None` for values
    /// before the first option.
    option: Option<String>,
    tokens: &'a [OsString],
}

fn is_option(token: &OsStr) -> bool {
    let text = token.to_string_lossy();
    // Negative numbers are values, as argparse reads them.
    text.starts_with('-') && text.len() > 1 && text.parse::<f64>().is_err()
}

fn groups(extra: &[OsString]) -> Vec<Group<'_>> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 0..=extra.len() {
        if i == extra.len() || (i > start && is_option(&extra[i])) {
            if i > start {
                let first = &extra[start];
                let option = is_option(first).then(|| {
                    let text = first.to_string_lossy();
                    text.split('=').next().unwrap_or_default().to_string()
                });
                groups.push(Group { option, tokens: &extra[start..i] });
            }
            start = i;
        }
    }
    groups
}

const PFTRACE_COMMON: &[&str] =
    &["--trace_path", "--output_xlsx_path", "--output_csvs_dir", "--traceconv"];

/// The options each tool documents (reference/tracelens.md, section 4).
fn options(tool: Tool) -> Vec<&'static str> {
    let own: &[&str] = match tool {
        Tool::Pytorch => &[
            "--profile_json_path",
            "--output_xlsx_path",
            "--output_csvs_dir",
            "--include_unlinked_kernels",
            "--enable_pseudo_ops",
            "--extension_file",
            "--inductor_cache_dir",
            "--detect_recompute",
            "--micro_idle_thresh_us",
            "--disable_coll_analysis",
            "--enable_kernel_summary",
            "--short_kernel_study",
            "--short_kernel_threshold_us",
            "--short_kernel_histogram_bins",
            "--topk_short_kernels",
            "--topk_ops",
            "--topk_roofline_ops",
            "--comparison_json_path",
            "--group_by_num_kernels",
            "--include_overlap_info",
            "--include_first_occurrence_time",
            "--include_call_stack",
            "--python_path",
            "--gpu_arch_json_path",
            "--gpu_arch_platform",
            "--enable-origami",
        ],
        Tool::Rocprof => &[
            "--profile_json_path",
            "--output_xlsx_path",
            "--output_csvs_dir",
            "--disable_kernel_summary",
            "--kernel_details",
            "--topk_kernels",
            "--short_kernel_study",
            "--short_kernel_threshold_us",
            "--short_kernel_histogram_bins",
        ],
        Tool::PftraceHipApi => {
            &["--exclude_kernel_regex", "--allow_multi_kernel_per_api", "--include_nonlaunch_apis"]
        }
        Tool::PftraceHipActivity => &[
            "--output_md_path",
            "--write_md",
            "--merge_kernels",
            "--min_tid",
            "--max_tid",
            "--min_event_ns",
            "--no_kernel_summary",
            "--kernel_summary_include_rccl",
            "--kernel_summary_baseline",
            "--kernel_summary_group",
            "--no_hip_summary",
            "--hip_summary_group",
            "--top_xla",
            "--kernel_summary_top",
            "--hip_summary_top",
        ],
        Tool::PftraceMemoryCopy => &[],
        Tool::Collective => &[
            "--trace_dir",
            "--trace_pattern",
            "--trace_glob",
            "--rank_regex",
            "--world_size",
            "--output_xlsx_path",
            "--output_csvs_dir",
            "--detailed_analysis",
            "--agg_metrics",
            "--use_multiprocessing",
            "--max_workers",
            "--gpus_per_node",
            "--all2allv_heatmap",
        ],
        Tool::Compare => &[],
    };
    let common: &[&str] = match tool {
        Tool::PftraceHipApi | Tool::PftraceHipActivity | Tool::PftraceMemoryCopy => PFTRACE_COMMON,
        _ => &[],
    };
    own.iter().chain(common).copied().collect()
}

/// The tools a run can plan (compare runs on its own).
const REPORT_TOOLS: [Tool; 6] = [
    Tool::Pytorch,
    Tool::Rocprof,
    Tool::PftraceHipActivity,
    Tool::PftraceHipApi,
    Tool::PftraceMemoryCopy,
    Tool::Collective,
];

/// The tool's option that `name` names: the exact name, or the only one it
/// abbreviates (argparse's `allow_abbrev`). An ambiguous abbreviation names
/// none.
fn resolve(tool: Tool, name: &str) -> Option<&'static str> {
    let options = options(tool);
    if let Some(exact) = options.iter().find(|o| **o == name) {
        return Some(exact);
    }
    let mut prefixed = options.iter().filter(|o| o.starts_with(name) && name.starts_with("--"));
    match (prefixed.next(), prefixed.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// Options the driver sets itself, and why.
const MANAGED: &[(&str, Managed)] = &[
    ("--profile_json_path", Managed::Traces),
    ("--trace_path", Managed::Traces),
    ("--trace_dir", Managed::Staging),
    ("--trace_pattern", Managed::Staging),
    ("--trace_glob", Managed::Staging),
    ("--rank_regex", Managed::Staging),
    ("--output_xlsx_path", Managed::Output),
    ("--output_csvs_dir", Managed::Output),
    ("--output_md_path", Managed::Output),
    ("--world_size", Managed::WorldSize),
    ("--gpu_arch_platform", Managed::GpuArch),
];

/// Check the extra arguments before anything runs. Fails on an option
/// the driver sets itself ([`Managed`]); returns the options no TraceLens tool documents
/// (they go to every command).
pub(crate) fn check_extra_args(extra: &[OsString]) -> Result<Vec<String>> {
    let mut unknown = Vec::new();
    for group in groups(extra) {
        let Some(name) = group.option else { continue };
        let resolved: Vec<&str> =
            REPORT_TOOLS.iter().filter_map(|tool| resolve(*tool, &name)).collect();
        if let Some(&(option, managed)) =
            MANAGED.iter().find(|(option, _)| resolved.contains(option))
        {
            return Err(Error::ExtraArg { arg: name, option, managed });
        }
        if resolved.is_empty() {
            unknown.push(name);
        }
    }
    Ok(unknown)
}

/// The extra arguments for `tool`: the options it documents, options no tool
/// documents, and leading values; in the order given.
pub(crate) fn for_tool(extra: &[OsString], tool: Tool) -> Vec<OsString> {
    groups(extra)
        .into_iter()
        .filter(|group| match &group.option {
            None => true,
            Some(name) => {
                resolve(tool, name).is_some()
                    || REPORT_TOOLS.iter().all(|t| resolve(*t, name).is_none())
            }
        })
        .flat_map(|group| group.tokens.iter().cloned())
        .collect()
}

/// Options that no job of the run takes although some tool documents them,
/// with the tools that do: `(option, tools)`.
pub(crate) fn unused(extra: &[OsString], planned: &[Tool]) -> Vec<(String, Vec<&'static str>)> {
    groups(extra)
        .into_iter()
        .filter_map(|group| {
            let name = group.option?;
            let takers: Vec<Tool> =
                REPORT_TOOLS.into_iter().filter(|t| resolve(*t, &name).is_some()).collect();
            let used = takers.iter().any(|t| planned.contains(t));
            (!takers.is_empty() && !used)
                .then(|| (name, takers.iter().map(|t| t.short()).collect()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    fn routed(extra: &str, tool: Tool) -> String {
        for_tool(&args(extra), tool).join(OsStr::new(" ")).to_string_lossy().into_owned()
    }

    #[test]
    fn each_option_goes_to_the_tools_that_document_it() {
        let extra = "--enable_kernel_summary --topk_kernels 5 --max_workers 3 --merge_kernels";
        assert_eq!(routed(extra, Tool::Pytorch), "--enable_kernel_summary");
        assert_eq!(routed(extra, Tool::Rocprof), "--topk_kernels 5");
        assert_eq!(routed(extra, Tool::Collective), "--max_workers 3");
        assert_eq!(routed(extra, Tool::PftraceHipActivity), "--merge_kernels");
        assert_eq!(routed(extra, Tool::PftraceMemoryCopy), "");
        // Shared options go to every tool that has them.
        let extra = "--short_kernel_threshold_us=20 --traceconv /opt/traceconv";
        assert_eq!(routed(extra, Tool::Pytorch), "--short_kernel_threshold_us=20");
        assert_eq!(routed(extra, Tool::Rocprof), "--short_kernel_threshold_us=20");
        assert_eq!(routed(extra, Tool::PftraceHipApi), "--traceconv /opt/traceconv");
        assert_eq!(routed(extra, Tool::PftraceMemoryCopy), "--traceconv /opt/traceconv");
    }

    #[test]
    fn abbreviations_and_values_follow_argparse() {
        // `--enable_k` abbreviates --enable_kernel_summary; `--agg_metrics` takes several values.
        let extra = "--enable_k --agg_metrics mean max --micro_idle_thresh_us -5";
        assert_eq!(routed(extra, Tool::Pytorch), "--enable_k --micro_idle_thresh_us -5");
        assert_eq!(routed(extra, Tool::Collective), "--agg_metrics mean max");
        // `--short_kernel` abbreviates three options: no tool resolves it, so all get it.
        assert_eq!(routed("--short_kernel", Tool::Collective), "--short_kernel");
    }

    #[test]
    fn unknown_options_go_everywhere_and_are_reported() {
        let extra = args("--from_a_newer_tracelens 1 --enable_kernel_summary");
        assert_eq!(check_extra_args(&extra).unwrap(), ["--from_a_newer_tracelens"]);
        for tool in REPORT_TOOLS {
            assert!(routed("--from_a_newer_tracelens 1", tool) == "--from_a_newer_tracelens 1");
        }
    }

    #[test]
    fn options_madengine_sets_are_refused() {
        for (extra, managed) in [
            ("--output_csvs_dir /x", "--output_csvs_dir"),
            ("--world 4", "--world_size"),
            ("--gpu_arch_platform=MI300X", "--gpu_arch_platform"),
            ("--trace_glob x", "--trace_glob"),
        ] {
            let err = check_extra_args(&args(extra)).unwrap_err().to_string();
            assert!(err.contains(managed), "{extra}: {err}");
        }
        assert!(check_extra_args(&args("--gpu_arch_json_path a.json")).is_ok());
    }

    #[test]
    fn options_no_planned_job_takes_are_named() {
        let extra = args("--topk_kernels 5 --enable_kernel_summary --brand_new");
        assert_eq!(unused(&extra, &[Tool::Pytorch]), [("--topk_kernels".into(), vec!["rocprof"])]);
    }
}
