//! TraceLens' entry points and the analysis modes.

use serde::Serialize;

/// A TraceLens console script driven by madengine.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Tool {
    /// `TraceLens_generate_perf_report_pytorch`.
    Pytorch,
    /// `TraceLens_generate_perf_report_rocprof`.
    Rocprof,
    /// `TraceLens_generate_perf_report_pftrace_hip_activity`.
    PftraceHipActivity,
    /// `TraceLens_generate_perf_report_pftrace_hip_api`.
    PftraceHipApi,
    /// `TraceLens_generate_perf_report_pftrace_memory_copy`.
    PftraceMemoryCopy,
    /// `TraceLens_generate_multi_rank_collective_report_pytorch`.
    Collective,
    /// `TraceLens_compare_perf_reports_pytorch`.
    Compare,
}

impl Tool {
    /// The console script's name.
    pub fn script(self) -> &'static str {
        match self {
            Tool::Pytorch => "TraceLens_generate_perf_report_pytorch",
            Tool::Rocprof => "TraceLens_generate_perf_report_rocprof",
            Tool::PftraceHipActivity => "TraceLens_generate_perf_report_pftrace_hip_activity",
            Tool::PftraceHipApi => "TraceLens_generate_perf_report_pftrace_hip_api",
            Tool::PftraceMemoryCopy => "TraceLens_generate_perf_report_pftrace_memory_copy",
            Tool::Collective => "TraceLens_generate_multi_rank_collective_report_pytorch",
            Tool::Compare => "TraceLens_compare_perf_reports_pytorch",
        }
    }

    /// The module whose `main()` the script calls.
    pub fn module(self) -> &'static str {
        match self {
            Tool::Pytorch => "TraceLens.Reporting.generate_perf_report_pytorch",
            Tool::Rocprof => "TraceLens.Reporting.generate_perf_report_rocprof",
            Tool::PftraceHipActivity => {
                "TraceLens.Reporting.generate_perf_report_pftrace_hip_activity"
            }
            Tool::PftraceHipApi => "TraceLens.Reporting.generate_perf_report_pftrace_hip_api",
            Tool::PftraceMemoryCopy => {
                "TraceLens.Reporting.generate_perf_report_pftrace_memory_copy"
            }
            Tool::Collective => "TraceLens.Reporting.generate_multi_rank_collective_report_pytorch",
            Tool::Compare => "TraceLens.Reporting.compare_perf_reports_pytorch",
        }
    }

    /// A short name for log files: `<stem>.<short>.log`.
    pub fn short(self) -> &'static str {
        match self {
            Tool::Pytorch => "pytorch",
            Tool::Rocprof => "rocprof",
            Tool::PftraceHipActivity => "hip_activity",
            Tool::PftraceHipApi => "hip_api",
            Tool::PftraceMemoryCopy => "memory_copy",
            Tool::Collective => "collective",
            Tool::Compare => "compare",
        }
    }
}

/// Which traces to analyze.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every kind, plus the collective report.
    #[default]
    Auto,
    /// PyTorch traces only.
    Pytorch,
    /// rocprofv3 JSON only.
    Rocprof,
    /// Perfetto traces only.
    Pftrace,
    /// Only the multi-rank collective report over the PyTorch traces.
    Collective,
}

impl Mode {
    /// The name used on the command line and in summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Pytorch => "pytorch",
            Mode::Rocprof => "rocprof",
            Mode::Pftrace => "pftrace",
            Mode::Collective => "collective",
        }
    }
}
