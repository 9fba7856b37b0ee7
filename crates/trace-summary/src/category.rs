//! GPU time by op category: `ops_summary`'s rows added up by their
//! `Categories` (TraceLens' op category rules, reference/tracelens-metrics.md
//! section 6.1: the op-name registry, then kernel-name fallbacks). Kernel
//! names differ from one GPU vendor to another; categories (`GEMM`,
//! `SDPA_fwd`, `elementwise`, ...) do not, so traces of different GPUs
//! compare by them.

use serde::Serialize;

use crate::compute::Table;

/// One op category: the GPU time of the kernels its ops launched directly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpCategory {
    /// The category (`GEMM`, `CONV_fwd`, `elementwise`, `other`, ...). Ops of
    /// one name whose launches fell in several categories (TraceLens lists
    /// them all) count under the categories joined: `elementwise+other`.
    pub name: String,
    /// GPU ms of the kernels its ops launched directly
    /// (`total_direct_kernel_time_ms`, added up).
    pub ms: f64,
    /// Op calls (`Count`, added up).
    pub calls: u64,
    /// Its share of all ops' direct GPU time (%); `None` when that is 0.
    pub percent: Option<f64>,
}

/// The rows of an `ops_summary` table (this crate's, or TraceLens' read
/// back) added up by category, the most time first (ties by name). `None`
/// when the table lacks the `Categories`, `total_direct_kernel_time_ms` or
/// `Count` column.
pub fn op_categories(ops_summary: &Table) -> Option<Vec<OpCategory>> {
    let column = |name: &str| ops_summary.column(name);
    let (cats, ms, count) =
        (column("Categories")?, column("total_direct_kernel_time_ms")?, column("Count")?);
    let mut out: Vec<OpCategory> = Vec::new();
    for row in &ops_summary.rows {
        let name = label(&row[cats].text());
        let ms = row[ms].number().filter(|v| !v.is_nan()).unwrap_or(0.0);
        let calls = row[count].number().filter(|v| v.is_finite()).unwrap_or(0.0) as u64;
        match out.iter_mut().find(|c| c.name == name) {
            Some(c) => {
                c.ms += ms;
                c.calls += calls;
            }
            None => out.push(OpCategory { name, ms, calls, percent: None }),
        }
    }
    let total: f64 = out.iter().map(|c| c.ms).sum();
    for c in &mut out {
        c.percent = (total > 0.0).then(|| c.ms / total * 100.0);
    }
    out.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.name.cmp(&b.name)));
    Some(out)
}

/// `['elementwise', 'other']` (a Python list literal, as TraceLens writes
/// `Categories`) as `elementwise+other`; an empty list as `other`.
fn label(categories: &str) -> String {
    let inner = categories.trim().trim_start_matches('[').trim_end_matches(']');
    let names: Vec<&str> = inner
        .split(',')
        .map(|c| c.trim().trim_matches(|q| q == '\'' || q == '"'))
        .filter(|c| !c.is_empty())
        .collect();
    if names.is_empty() { "other".to_string() } else { names.join("+") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::Cell;

    #[test]
    fn ops_add_up_by_their_categories() {
        let row = |name: &str, ms: f64, count: i64, cats: &str| {
            vec![Cell::Str(name.into()), Cell::Float(ms), Cell::Int(count), Cell::Str(cats.into())]
        };
        let t = Table::new(
            &["name", "total_direct_kernel_time_ms", "Count", "Categories"],
            vec![
                row("aten::mm", 3.0, 10, "['GEMM']"),
                row("aten::add", 1.0, 4, "['elementwise']"),
                row("aten::addmm", 2.0, 5, "['GEMM']"),
                row("aten::copy_", 1.0, 2, "['elementwise', 'other']"),
                row("mystery", 1.0, 1, "[]"),
            ],
        );
        let cats = op_categories(&t).unwrap();
        let rows: Vec<(&str, f64, u64)> =
            cats.iter().map(|c| (c.name.as_str(), c.ms, c.calls)).collect();
        assert_eq!(
            rows,
            [
                ("GEMM", 5.0, 15),
                ("elementwise", 1.0, 4),
                ("elementwise+other", 1.0, 2),
                ("other", 1.0, 1)
            ]
        );
        assert_eq!(cats[0].percent, Some(62.5));
        let without = Table::new(&["name", "total_direct_kernel_time_ms", "Count"], vec![]);
        assert_eq!(op_categories(&without), None);
    }
}
