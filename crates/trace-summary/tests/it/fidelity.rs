//! Every public Kineto trace with TraceLens outputs in
//! `shared/fixtures/public/tracelens-expected/`: `gpu_timeline.csv` byte for
//! byte; `kernel_summary.csv` and `ops_summary.csv` as multisets of rows
//! (TraceLens orders tied rows by NumPy's unstable sort).

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

fn public() -> Option<PathBuf> {
    let required = std::env::var_os("MADENGINE_PUBLIC_FIXTURES").map(PathBuf::from);
    let dir = required.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/public")
    });
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        required.is_none(),
        "MADENGINE_PUBLIC_FIXTURES names a missing directory: {}",
        dir.display()
    );
    eprintln!("skipped: public traces not found at {}", dir.display());
    None
}

fn expected_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.join("tracelens-expected")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.join("gpu_timeline.csv").is_file() {
                    out.push(p);
                } else {
                    stack.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

fn rows(csv: &str) -> (String, BTreeMap<String, usize>) {
    let mut lines = split_records(csv);
    let header = lines.remove(0);
    let mut counts = BTreeMap::new();
    for l in lines {
        *counts.entry(l).or_insert(0) += 1;
    }
    (header, counts)
}

/// The table without its last column, and that column.
fn split_last_column(csv: &str) -> (String, Vec<String>) {
    let mut rest = String::new();
    let mut last = Vec::new();
    for line in csv.lines() {
        let (a, b) = line.rsplit_once(',').unwrap();
        rest.push_str(a);
        rest.push('\n');
        last.push(b.to_string());
    }
    (rest, last)
}

/// CSV records (quoted fields may hold commas, not newlines, in these tables).
fn split_records(csv: &str) -> Vec<String> {
    csv.lines().map(str::to_string).collect()
}

#[test]
fn tables_match_tracelens() {
    let Some(root) = public() else { return };
    let dirs = expected_dirs(&root);
    let kineto: Vec<&PathBuf> =
        dirs.iter().filter(|d| !d.to_string_lossy().contains("rocprofv3")).collect();
    assert_eq!(kineto.len(), 21, "{kineto:?}");
    let mut failures = Vec::new();
    for dir in kineto {
        let rel = dir.strip_prefix(root.join("tracelens-expected")).unwrap();
        let trace = root.join(rel);
        let summary = trace_summary::summarize_file(&trace).unwrap();
        let timeline = summary.gpu_timeline.as_ref().map(|t| t.to_csv()).unwrap_or_default();
        if timeline != fs::read_to_string(dir.join("gpu_timeline.csv")).unwrap() {
            failures.push(format!(
                "{}: gpu_timeline\n ours:\n{timeline}\n theirs:\n{}",
                rel.display(),
                fs::read_to_string(dir.join("gpu_timeline.csv")).unwrap()
            ));
        }
        for (name, ours) in
            [("kernel_summary", &summary.kernel_summary), ("ops_summary", &summary.ops_summary)]
        {
            let path = dir.join(format!("{name}.csv"));
            let theirs = fs::read_to_string(&path).ok();
            match (ours, theirs) {
                (None, None) => {}
                (Some(t), Some(expected)) => {
                    let ours_csv = t.to_csv();
                    let (ours_csv, expected) = if name == "ops_summary" {
                        // The cumulative column depends on a row's place within a
                        // run of tied rows: compare it as a sequence, the rest as sets.
                        let (a, ca) = split_last_column(&ours_csv);
                        let (b, cb) = split_last_column(&expected);
                        if ca != cb {
                            failures.push(format!(
                                "{}: ops_summary cumulative column differs",
                                rel.display()
                            ));
                        }
                        (a, b)
                    } else {
                        (ours_csv, expected)
                    };
                    let (h1, r1) = rows(&ours_csv);
                    let (h2, r2) = rows(&expected);
                    if h1 != h2 {
                        failures.push(format!(
                            "{}: {name} header\n ours:   {h1}\n theirs: {h2}",
                            rel.display()
                        ));
                    } else if r1 != r2 {
                        let only_ours: Vec<_> =
                            r1.keys().filter(|k| r1.get(*k) != r2.get(*k)).take(3).collect();
                        let only_theirs: Vec<_> =
                            r2.keys().filter(|k| r1.get(*k) != r2.get(*k)).take(3).collect();
                        failures.push(format!("{}: {name} rows differ\n ours:   {only_ours:#?}\n theirs: {only_theirs:#?}", rel.display()));
                    }
                }
                (o, t) => failures.push(format!(
                    "{}: {name}: ours {} theirs {}",
                    rel.display(),
                    o.is_some(),
                    t.is_some()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n\n"));
}
