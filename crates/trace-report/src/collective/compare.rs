//! Two runs' collective reports side by side: per collective type, dtype
//! and size (`nccl_summary_implicit_sync`'s groups), how long it took once
//! the last rank arrived and the bus bandwidth it reached, before and after.

use trace_summary::Table;

use super::CollectiveReport;

/// One group of matched collectives (a type, dtype and size) in one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CollectiveSide {
    /// How many were matched across the ranks.
    pub count: u64,
    /// Their mean latency once the last rank arrived (µs).
    pub latency_mean_us: Option<f64>,
    /// Their latency added up (ms).
    pub total_latency_ms: Option<f64>,
    /// Their mean bus bandwidth (GB/s), where the size is known.
    pub bus_bw_mean_gbs: Option<f64>,
    /// Their mean start skew (µs): how far apart the ranks arrived.
    pub skew_start_mean_us: Option<f64>,
}

/// A group of matched collectives in two runs: `Collective name`, `dtype`
/// and `In msg nelems` as TraceLens groups them (`Unknown` where the
/// traces do not say), with each run's figures where it has the group.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CollectiveDiff {
    /// `Collective name` (`Unknown` where not recorded).
    pub collective: String,
    /// `dtype`.
    pub dtype: String,
    /// `In msg nelems`, as text (`Unknown`).
    pub in_nelems: String,
    /// `Full msg size (MB)` (MiB), where known.
    pub full_mb: Option<f64>,
    /// The baseline's, when it has this group.
    pub base: Option<CollectiveSide>,
    /// The new run's, when it has this group.
    pub new: Option<CollectiveSide>,
}

impl CollectiveDiff {
    /// New total latency over the baseline's, where both are there and the
    /// baseline's is not 0.
    pub fn ratio(&self) -> Option<f64> {
        let (b, n) = (self.base.as_ref()?.total_latency_ms?, self.new.as_ref()?.total_latency_ms?);
        (b != 0.0).then(|| n / b)
    }
}

type Group = ([String; 3], Option<f64>, CollectiveSide);

fn groups(report: &CollectiveReport) -> Vec<Group> {
    let Some(t) = report.table("nccl_summary_implicit_sync") else { return vec![] };
    let at = |t: &Table, row: &[trace_summary::Cell], name: &str| {
        t.column(name).and_then(|c| row[c].number()).filter(|v| v.is_finite())
    };
    let key = |row: &[trace_summary::Cell], name: &str| {
        t.column(name).map_or_else(|| "Unknown".to_string(), |c| row[c].text())
    };
    t.rows
        .iter()
        .map(|row| {
            let side = CollectiveSide {
                count: at(t, row, "count").unwrap_or(0.0) as u64,
                latency_mean_us: at(t, row, "comm_latency_mean"),
                total_latency_ms: at(t, row, "Total comm latency (ms)"),
                bus_bw_mean_gbs: at(t, row, "bus bw (GB/s)_mean"),
                skew_start_mean_us: at(t, row, "skew in start time_mean"),
            };
            let keys = [key(row, "Collective name"), key(row, "dtype"), key(row, "In msg nelems")];
            (keys, at(t, row, "Full msg size (MB)"), side)
        })
        .collect()
}

/// The groups of matched collectives of two runs, paired by type, dtype
/// and size: the baseline's in its order (the costliest first), then the
/// ones only the new run has.
pub fn compare_collectives(base: &CollectiveReport, new: &CollectiveReport) -> Vec<CollectiveDiff> {
    let mut new_groups = groups(new);
    let mut out = Vec::new();
    for (keys, full_mb, side) in groups(base) {
        let other = new_groups.iter().position(|g| g.0 == keys).map(|i| new_groups.remove(i));
        let [collective, dtype, in_nelems] = keys;
        out.push(CollectiveDiff {
            collective,
            dtype,
            in_nelems,
            full_mb: full_mb.or(other.as_ref().and_then(|o| o.1)),
            base: Some(side),
            new: other.map(|o| o.2),
        });
    }
    for ([collective, dtype, in_nelems], full_mb, side) in new_groups {
        out.push(CollectiveDiff {
            collective,
            dtype,
            in_nelems,
            full_mb,
            base: None,
            new: Some(side),
        });
    }
    out
}
