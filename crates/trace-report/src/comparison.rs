//! Two runs compared ([`Comparison`]): their tables side by side, in all
//! and rank by rank; the headline time, the gates, the document and the
//! CSVs.

use std::path::{Path, PathBuf};

use trace_summary::{Diff, DiffRow, Measure, Table};

use crate::{
    ComparedRank, ComparedRow, ComparedShape, ComparedSide, PairedBy, Regression, RunComparison,
    ShapeRegression, SidesLeftOut,
};

/// One rank (or GPU, [`PairedBy`]) of two runs compared rank by rank.
#[derive(Debug, Clone)]
pub struct RankDiff {
    /// Its rank or GPU, as [`Comparison::by`] says.
    pub key: u32,
    /// The baseline's trace (or report).
    pub baseline: PathBuf,
    /// The new side's.
    pub new: PathBuf,
    /// Its gpu_timeline rows side by side (ms).
    pub timeline: Vec<DiffRow>,
    /// rocprofv3: its collective kernels' time, side by side (ms,
    /// [`Diff::collective_kernels`]).
    pub collective_kernels: Option<DiffRow>,
}

impl RankDiff {
    /// Its collective kernels' times, when either side has any.
    pub fn collectives(&self) -> Option<&DiffRow> {
        self.collective_kernels.as_ref().filter(|c| timed(c))
    }
}

/// Two runs compared ([`crate::compare`]).
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The baseline and the new side, as their summaries say them.
    pub sides: [ComparedSide; 2],
    /// Rank by rank, when two runs were compared; else empty.
    pub ranks: Vec<RankDiff>,
    /// What paired the traces of two runs.
    pub by: PairedBy,
    /// Rows added up over every pair (one pair: just its rows).
    pub diff: Diff,
    /// Ranks of one run only, left out, as said.
    pub unpaired: Vec<String>,
    /// Times and counts are per profiler step.
    pub per_step: bool,
    /// Two multi-rank runs of traces: their collectives matched across
    /// ranks, per type, dtype and size, side by side.
    pub matched: Vec<crate::CollectiveDiff>,
    /// What each side's search could not look at.
    pub left_out: [Vec<trace_discover::Problem>; 2],
}

/// The time compared first ([`Comparison::headline_times`]), in ms (per
/// step when the comparison is).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headline {
    /// The baseline's.
    pub base: f64,
    /// The new side's.
    pub new: f64,
    /// The slowest rank (busiest GPU) of each run, when runs were compared.
    pub ranks: Option<(u32, u32)>,
}

impl Headline {
    /// New over baseline; `None` over a baseline of 0.
    pub fn ratio(&self) -> Option<f64> {
        (self.base != 0.0).then(|| self.new / self.base)
    }
}

/// Whether either side of `row` has a time other than 0.
pub fn timed(row: &DiffRow) -> bool {
    [row.base, row.new].iter().any(|m| m.is_some_and(|m| m.time != 0.0))
}

impl Comparison {
    /// The sides' tables are TraceLens' rocprof ones.
    pub fn rocprof(&self) -> bool {
        self.sides[0].format.rocprof_tables()
    }

    /// The timeline row a headline shows, and its name: GPU time; for
    /// rocprofv3 GPU busy time (its total is the profiling session).
    pub fn headline(&self) -> (&'static str, &'static str) {
        if self.rocprof() { ("busy_time", "GPU busy") } else { ("total_time", "GPU time") }
    }

    /// The [`Comparison::headline`] row of each side: of the one pair, or
    /// of each run's slowest rank (in a run that synchronizes, it sets the
    /// pace; for rocprofv3 runs, the busiest GPU: GPUs that wait for
    /// another spend it in collective kernels, which count as busy).
    /// `None` where a side lacks the row.
    pub fn headline_times(&self) -> Option<Headline> {
        let (row, _) = self.headline();
        let time = |rows: &[DiffRow], side: fn(&DiffRow) -> Option<Measure>| {
            rows.iter().find(|r| r.name == row).and_then(side).map(|m| m.time)
        };
        if self.ranks.is_empty() {
            let rows = &self.diff.timeline;
            return Some(Headline {
                base: time(rows, |r| r.base)?,
                new: time(rows, |r| r.new)?,
                ranks: None,
            });
        }
        let slowest = |side: fn(&DiffRow) -> Option<Measure>| {
            self.ranks
                .iter()
                .filter_map(|r| Some((r.key, time(&r.timeline, side)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        };
        let ((br, base), (nr, new)) = (slowest(|r| r.base)?, slowest(|r| r.new)?);
        Some(Headline { base, new, ranks: Some((br, nr)) })
    }

    /// Whether the headline grew by more than `limit` percent (a negative
    /// limit asks for a gain of at least as much); `None` where the
    /// baseline has no headline time, or one of 0.
    pub fn regression(&self, limit: f64) -> Option<Regression> {
        let h = self.headline_times()?;
        let change = (h.base != 0.0).then(|| (h.new / h.base - 1.0) * 100.0)?;
        Some(Regression { limit_percent: limit, change_percent: change, exceeded: change > limit })
    }

    /// The shapes that lost more than `limit` % of their TFLOPS/s, the most
    /// first: GEMM shapes, and with `ops` attention and convolution shapes.
    pub fn shape_regressions(&self, limit: f64, ops: bool) -> Vec<ShapeRegression> {
        let d = &self.diff;
        let shapes = if ops { &d.shapes[..] } else { &[] };
        let mut out: Vec<ShapeRegression> = d
            .gemms
            .iter()
            .chain(shapes)
            .filter_map(|g| {
                let change = g.change_pct()?;
                (-change > limit).then(|| ShapeRegression {
                    shape: g.row.name.clone(),
                    baseline_tflops: g.tflops(g.row.base).unwrap_or(0.0),
                    new_tflops: g.tflops(g.row.new).unwrap_or(0.0),
                    change_pct: change,
                })
            })
            .collect();
        out.sort_by(|a, b| a.change_pct.total_cmp(&b.change_pct));
        out
    }

    /// As a document (`--json`), with the CSVs written and the page, and
    /// what the gates found: the headline's, and the GEMM and the shape
    /// gates' shapes.
    pub fn document(
        &self,
        csvs: &[PathBuf],
        html: Option<&Path>,
        regression: Option<Regression>,
        [gemm_regressions, shape_regressions]: [Vec<ShapeRegression>; 2],
    ) -> RunComparison {
        let d = &self.diff;
        let ranks = self.ranks.iter().map(|r| ComparedRank {
            baseline: r.baseline.clone(),
            new: r.new.clone(),
            timeline: ComparedRow::all(&r.timeline),
            collective_kernels: r.collective_kernels.as_ref().map(ComparedRow::of),
            ..ComparedRank::keyed(self.by, r.key)
        });
        RunComparison {
            baseline: self.sides[0].clone(),
            new: self.sides[1].clone(),
            rocprof: self.rocprof(),
            per_step: self.per_step,
            timeline: ComparedRow::all(&d.timeline),
            ranks: ranks.collect(),
            paired_by: self.by.word().to_ascii_lowercase(),
            unpaired: self.unpaired.clone(),
            kernels: ComparedRow::all(&d.kernels),
            ops: ComparedRow::all(&d.ops),
            op_categories: ComparedRow::all(&d.op_categories),
            kernel_categories: ComparedRow::all(&d.kernel_categories),
            collectives: ComparedRow::all(&d.collectives),
            collectives_matched: self.matched.clone(),
            collective_kernels: d.collective_kernels.as_ref().map(ComparedRow::of),
            gemms: ComparedShape::all(&d.gemms),
            gemm_regressions,
            shape_regressions,
            op_shapes: ComparedShape::all(&d.shapes),
            csvs: csvs.to_vec(),
            html: html.map(Path::to_path_buf),
            regression,
            left_out: SidesLeftOut {
                baseline: self.left_out[0].clone(),
                new: self.left_out[1].clone(),
            },
            version: crate::SUMMARY_VERSION,
        }
    }

    /// Every table as CSV, by file name: `gpu_timeline_diff.csv` (per rank,
    /// with a `rank` column, when runs were compared), `kernel_diff.csv`,
    /// `ops_diff.csv`, `op_category_diff.csv`, `kernel_category_diff.csv`,
    /// `collective_diff.csv` (added up over the ranks), `gemm_diff.csv`,
    /// `shape_diff.csv`, and for rocprofv3 traces with collective kernels
    /// `collective_kernels_diff.csv` (per GPU as the timeline); tables
    /// without rows are empty.
    pub fn tables(&self) -> [(&'static str, Table); 9] {
        let d = &self.diff;
        let timeline = self.per_rank(d.timeline_table(), &|r| {
            Diff { timeline: r.timeline.clone(), ..Default::default() }.timeline_table()
        });
        // rocprofv3 runs with collective kernels: their time, GPU by GPU.
        let comm = match d.collective_kernels.as_ref().is_some_and(timed) {
            true => self.per_rank(d.collective_kernels_table(), &|r| {
                Diff { collective_kernels: r.collective_kernels.clone(), ..Default::default() }
                    .collective_kernels_table()
            }),
            false => Table::new(&[], vec![]),
        };
        [
            ("gpu_timeline_diff.csv", timeline),
            ("kernel_diff.csv", d.kernels_table()),
            ("ops_diff.csv", d.ops_table()),
            ("op_category_diff.csv", d.op_categories_table()),
            ("kernel_category_diff.csv", d.kernel_categories_table()),
            ("collective_diff.csv", d.collectives_table()),
            ("gemm_diff.csv", d.gemms_table()),
            ("shape_diff.csv", d.shapes_table()),
            ("collective_kernels_diff.csv", comm),
        ]
    }

    /// Of two runs, a table per rank (or GPU), one after the other, with a
    /// first column saying whose rows they are; of one pair, `whole`.
    fn per_rank(&self, whole: Table, of: &dyn Fn(&RankDiff) -> Table) -> Table {
        if self.ranks.is_empty() {
            return whole;
        }
        let mut table = Table::new(&[], vec![]);
        for r in &self.ranks {
            let key = match self.by {
                PairedBy::NodeGpu => trace_summary::Cell::Str(self.by.value(r.key)),
                _ => trace_summary::Cell::Int(i64::from(r.key)),
            };
            let mut t = of(r);
            for row in &mut t.rows {
                row.insert(0, key.clone());
            }
            table.rows.extend(t.rows);
        }
        table.header =
            std::iter::once(self.by.column().to_ascii_lowercase()).chain(whole.header).collect();
        table
    }

    /// Write [`Comparison::tables`] with rows to `dir` as one set; the
    /// files of those without rows, from an earlier comparison into `dir`,
    /// are removed. Returns the files written.
    pub fn write_csvs(&self, dir: &Path) -> Result<Vec<PathBuf>, crate::SetError> {
        let tables = self.tables();
        let ours: Vec<&str> = tables.iter().map(|(name, _)| *name).collect();
        let files: Vec<(String, Vec<u8>)> = tables
            .iter()
            .filter(|(_, table)| !table.rows.is_empty())
            .map(|(name, table)| (name.to_string(), table.to_csv().into_bytes()))
            .collect();
        crate::write_set(dir, &ours, &files)?;
        Ok(files.iter().map(|(name, _)| dir.join(name)).collect())
    }
}
