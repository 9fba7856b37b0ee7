//! GPU time by category. A Kineto trace's `ops_summary` rows add up by
//! their `Categories` (TraceLens' op category rules,
//! reference/tracelens-metrics.md section 6.1: the op-name registry, then
//! kernel-name fallbacks); a rocprofv3 trace's `kernel_summary` rows by their
//! `Category` (TraceLens' rocprof report: kernel-name keywords, section 10).
//! Kernel names differ from one GPU vendor to another; categories (`GEMM`,
//! `SDPA_fwd`, `elementwise`, ...) do not, so traces of different GPUs
//! compare by them.

use serde::Serialize;

use crate::compute::Table;

/// One category's GPU time: of the kernels its ops launched directly
/// ([`op_categories`]), or of its kernels ([`kernel_categories`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Category {
    /// The category: an op category (`GEMM`, `CONV_fwd`, `elementwise`,
    /// `other`, ...; ops of one name whose launches fell in several, as
    /// TraceLens lists them all, count under the categories joined:
    /// `elementwise+other`), or a rocprof kernel category (`GEMM`,
    /// `Elementwise`, `COMM`, `Other`, ...).
    pub name: String,
    /// GPU ms, added up.
    pub ms: f64,
    /// Op calls, or kernel launches (`Count`, added up).
    pub count: u64,
    /// Its share of the whole table's time (%); `None` when that is 0.
    pub percent: Option<f64>,
}

/// The rows of an `ops_summary` table (this crate's, or TraceLens' read
/// back) added up by category, the most time first (ties by name). `None`
/// when the table lacks the `Categories`, `total_direct_kernel_time_ms` or
/// `Count` column.
pub fn op_categories(ops_summary: &Table) -> Option<Vec<Category>> {
    add_up(ops_summary, "Categories", "total_direct_kernel_time_ms", 1.0, label)
}

/// The rows of a rocprof `kernel_summary` table (TraceLens' rocprof
/// report's, this crate's for a rocprofv3 trace, or read back) added up by
/// their `Category`, the most time first (ties by name). `None` when the
/// table lacks the `Category`, `Total Kernel Time (ms)` or `Count` column
/// (a Kineto `kernel_summary` has none of its own: its kernels fall under
/// their parent op's category, [`op_categories`]).
pub fn kernel_categories(kernel_summary: &Table) -> Option<Vec<Category>> {
    // "(ms)" is really µs (reference/tracelens-metrics.md, section 10).
    add_up(kernel_summary, "Category", "Total Kernel Time (ms)", 1e-3, str::to_string)
}

/// `t`'s `time` (times `scale`, to ms) and `Count` added up by the
/// category `name_of` reads from the `category` column.
fn add_up(
    t: &Table,
    category: &str,
    time: &str,
    scale: f64,
    name_of: fn(&str) -> String,
) -> Option<Vec<Category>> {
    let (category, time, count) = (t.column(category)?, t.column(time)?, t.column("Count")?);
    let mut out: Vec<Category> = Vec::new();
    for row in &t.rows {
        let name = name_of(&row[category].text());
        let ms = row[time].number().filter(|v| !v.is_nan()).unwrap_or(0.0) * scale;
        let n = row[count].number().filter(|v| v.is_finite()).unwrap_or(0.0) as u64;
        match out.iter_mut().find(|c| c.name == name) {
            Some(c) => {
                c.ms += ms;
                c.count += n;
            }
            None => out.push(Category { name, ms, count: n, percent: None }),
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
            cats.iter().map(|c| (c.name.as_str(), c.ms, c.count)).collect();
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

    #[test]
    fn rocprof_kernels_add_up_by_category_in_ms() {
        // TraceLens' rocprof table: its "(ms)" total is really µs.
        let row = |name: &str, us: f64, count: i64, cat: &str| {
            vec![Cell::Str(name.into()), Cell::Int(count), Cell::Float(us), Cell::Str(cat.into())]
        };
        let t = Table::new(
            &["name", "Count", "Total Kernel Time (ms)", "Category"],
            vec![
                row("ncclDevKernel_Generic_1", 3000.0, 2, "COMM"),
                row("Cijk_gemm", 500.0, 4, "GEMM"),
                row("Cijk_gemm_2", 500.0, 1, "GEMM"),
            ],
        );
        let cats = kernel_categories(&t).unwrap();
        let rows: Vec<(&str, f64, u64, Option<f64>)> =
            cats.iter().map(|c| (c.name.as_str(), c.ms, c.count, c.percent)).collect();
        assert_eq!(rows, [("COMM", 3.0, 2, Some(75.0)), ("GEMM", 1.0, 5, Some(25.0))]);
        // A Kineto kernel_summary has no Category of its own.
        let kineto = Table::new(&["Parent op category", "Kernel name", "Count"], vec![]);
        assert_eq!(kernel_categories(&kineto), None);
    }
}
