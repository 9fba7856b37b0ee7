//! When torch.profiler wrote a trace, by its file name.

use std::sync::LazyLock;

use regex::bytes::Regex;

/// `tensorboard_trace_handler`'s names: `<worker>.<time>.pt.trace.json[.gz]`,
/// the time in ns (`time.time_ns()`, PyTorch 2) or ms (older releases); a
/// copy `madengine trace sanitize` wrote keeps it (`.sanitized` before the
/// suffix).
static EXPORT_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\.([0-9]{13}|[0-9]{16}|[0-9]{19})(?:\.sanitized)?\.pt\.trace\.json(?:\.gz)?$")
        .expect("valid regex")
});

/// When torch.profiler's `tensorboard_trace_handler` exported the trace
/// named `name`, in ns since the epoch, from the time it puts in the name;
/// `None` for any other name.
///
/// The handler writes a trace per profiling cycle, each named by the time
/// of its export, so the names order one process's cycles.
///
/// ```
/// use trace_discover::export_time_from_file_name;
///
/// let ns = export_time_from_file_name(b"host_4242.1764720000123456789.pt.trace.json");
/// assert_eq!(ns, Some(1_764_720_000_123_456_789));
/// let ms = export_time_from_file_name(b"worker0_step_12.1694128201545.pt.trace.json.gz");
/// assert_eq!(ms, Some(1_694_128_201_545_000_000));
/// assert_eq!(export_time_from_file_name(b"rank0_trace.json"), None);
/// ```
pub fn export_time_from_file_name(name: &[u8]) -> Option<u64> {
    let digits = EXPORT_RE.captures(name)?.get(1)?.as_bytes();
    let value: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    // 13 digits: ms; 16: µs; 19: ns.
    value.checked_mul(10u64.pow(19 - digits.len() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_times_from_names() {
        let check = |name: &str, expected: Option<u64>| {
            assert_eq!(export_time_from_file_name(name.as_bytes()), expected, "{name}");
        };
        check("gpu-node_77.1764720000123456789.pt.trace.json", Some(1_764_720_000_123_456_789));
        check("w.1764720000123456.pt.trace.json.gz", Some(1_764_720_000_123_456_000));
        check("w.1694128201545.pt.trace.json", Some(1_694_128_201_545_000_000));
        check("w.1694128201545.sanitized.pt.trace.json", Some(1_694_128_201_545_000_000));
        // No time, or digits that are not one.
        check("w.pt.trace.json", None);
        check("w.12345.pt.trace.json", None);
        check("w.17647200001234567890.pt.trace.json", None);
        check("w_1694128201545.pt.trace.json", None);
        check("w.1694128201545.json", None);
        check("libkineto_activities_4242.json", None);
    }
}
