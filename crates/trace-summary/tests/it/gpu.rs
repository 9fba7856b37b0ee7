//! The real GPU traces of `fixtures/gpu/`: TraceLens' tables, checked
//! against the raw events read independently (serde_json): each kernel's
//! time and count, the timeline's parts adding up, the steps, the GPU named.

use std::collections::BTreeMap;

use serde_json::Value;
use trace_summary::{Outcome, StepMarker, Table, summarize_file};

use crate::public_dir::gpu_fixture_sets;

fn at(t: &Table, name: &str) -> usize {
    t.header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn gpu_fixtures_tables_agree_with_their_raw_events() {
    for (set, files) in gpu_fixture_sets() {
        // `nvidia-h200` names an `NVIDIA H200`.
        let model = set.split_once('-').map_or(set.as_str(), |(_, m)| m).to_string();
        for file in files.iter().filter(|f| f.to_string_lossy().ends_with(".pt.trace.json")) {
            let name = format!("{set}/{}", file.file_name().unwrap().to_string_lossy());
            let summary = summarize_file(file).unwrap();
            assert_eq!(summary.outcome, Outcome::Tables, "{name}");
            assert!(
                summary.gpus.iter().any(|g| g.to_lowercase().contains(&model)),
                "{name}: {:?} names no {model}",
                summary.gpus
            );
            let raw: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
            let events = raw["traceEvents"].as_array().unwrap();

            // Each kernel's time and count, by name and stream.
            let mut want: BTreeMap<(String, String), (f64, i64)> = BTreeMap::new();
            for e in events.iter().filter(|e| e["cat"] == "kernel") {
                let stream =
                    e["args"]["stream"].as_i64().map(|s| s.to_string()).unwrap_or_default();
                let key = (e["name"].as_str().unwrap().to_string(), stream);
                let entry = want.entry(key).or_default();
                entry.0 += e["dur"].as_f64().unwrap();
                entry.1 += 1;
            }
            assert!(!want.is_empty(), "{name}: no kernels");
            let table = summary.kernel_summary.as_ref().unwrap();
            let (kname, kstream) = (at(table, "Kernel name"), at(table, "Kernel stream"));
            let (sum, count) =
                (at(table, "Kernel duration (µs)_sum"), at(table, "Kernel duration (µs)_count"));
            let share = at(table, "Percent of kernels time (%)");
            let mut got: BTreeMap<(String, String), (f64, i64)> = BTreeMap::new();
            let mut shares = 0.0;
            for row in &table.rows {
                let entry = got.entry((row[kname].text(), row[kstream].text())).or_default();
                entry.0 += row[sum].number().unwrap();
                entry.1 += row[count].number().unwrap() as i64;
                shares += row[share].number().unwrap();
            }
            assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{name}");
            for (key, (time, n)) in &want {
                let (t, c) = got[key];
                assert!(
                    close(t, *time) && c == *n,
                    "{name}: {key:?}: {t} µs x{c}, raw {time} x{n}"
                );
            }
            assert!(close(shares, 100.0), "{name}: kernel shares add up to {shares}");

            // The timeline: busy time is computation, exposed communication
            // and exposed copies; busy and idle make the total.
            let timeline = summary.gpu_timeline.as_ref().unwrap();
            let ms: BTreeMap<String, f64> =
                timeline.rows.iter().map(|r| (r[0].text(), r[1].number().unwrap())).collect();
            let parts =
                ms["computation_time"] + ms["exposed_comm_time"] + ms["exposed_memcpy_time"];
            assert!((parts - ms["busy_time"]).abs() < 1e-6, "{name}: {ms:?}");
            assert!((ms["busy_time"] + ms["idle_time"] - ms["total_time"]).abs() < 1e-6, "{name}");
            let longest = events
                .iter()
                .filter(|e| e["cat"] == "kernel")
                .map(|e| e["dur"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert!(
                ms["busy_time"] * 1000.0 >= longest - 1e-6,
                "{name}: {ms:?}, a kernel of {longest} µs"
            );
            assert!(ms["computation_time"] > 0.0, "{name}: {ms:?}");

            // The steps: the distinct ProfilerStep#N the trace holds.
            let mut steps: Vec<&str> = events
                .iter()
                .filter_map(|e| e["name"].as_str())
                .filter(|n| n.starts_with("ProfilerStep#"))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let counted = summary.steps.as_ref().unwrap_or_else(|| panic!("{name}: no steps"));
            assert_eq!(
                (counted.count, counted.marker),
                (steps.len(), StepMarker::ProfilerStep),
                "{name}"
            );
        }
    }
}
