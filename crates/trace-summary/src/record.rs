//! The name of the record a trace's report keeps beside its CSVs.

/// The file beside a trace's CSVs (`gpu_timeline.csv`, ...) that records
/// what else was found of it: the trace's `--json` object (rank, steps,
/// GPUs, ...), and where the trace was. Its format is `trace-report`'s
/// (`trace_report::Record`), which writes and reads it.
pub const RECORD: &str = "summary.json";
