//! rocprofv3's rocpd output (SQLite): the same tables as its JSON.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, atomic::AtomicBool},
};

use trace_summary::{Error, Format, Options, Outcome};

pub(crate) fn synthetic(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/synthetic").join(path)
}

const DB: &str = "run/rocprof_output/1e4d92661463/1234_results.db";
/// The synthetic database's kernel symbol table (under its view's name, as
/// rocprofv3 names its tables).
const SYMBOLS: &str = "rocpd_info_kernel_symbol_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5";

/// The records of the synthetic database, written as rocprofv3 JSON.
pub(crate) const SAME_AS_JSON: &str = r#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":1234,"init_time":1000,"fini_time":9000},
"agents":[{"id":{"handle":1},"type":1,"logical_node_type_id":0,"name":"AMD EPYC 9654","product_name":"AMD EPYC 9654"},
{"id":{"handle":2},"type":2,"logical_node_type_id":0,"name":"gfx942","product_name":"AMD Instinct MI300X"}],
"kernel_symbols":[{"kernel_id":0,"kernel_name":""},
{"kernel_id":1,"kernel_name":"Cijk_Alik_Bljk_HHS_BH_MT64x64x32.kd","truncated_kernel_name":"Cijk_Alik_Bljk_HHS_BH_MT64x64x32"},
{"kernel_id":2,"kernel_name":"ncclDevKernel_Generic.kd","formatted_kernel_name":"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)","truncated_kernel_name":"ncclDevKernel_Generic"}],
"buffer_records":{"kernel_dispatch":[
{"start_timestamp":1300,"end_timestamp":1800,"dispatch_info":{"agent_id":{"handle":2},"kernel_id":1}},
{"start_timestamp":3000,"end_timestamp":3400,"dispatch_info":{"agent_id":{"handle":2},"kernel_id":1}},
{"start_timestamp":3200,"end_timestamp":4200,"dispatch_info":{"agent_id":{"handle":2},"kernel_id":2}}],
"memory_copy":[{"start_timestamp":5000,"end_timestamp":5600}]}}]}"#;

#[test]
fn a_rocpd_database_gives_the_tables_its_json_would() {
    let db = synthetic(DB);
    let before = std::fs::read(&db).unwrap();
    let from_db = trace_summary::summarize_file(&db).unwrap();
    let from_json =
        trace_summary::summarize(SAME_AS_JSON.as_bytes(), Path::new("same.json")).unwrap();

    assert_eq!(from_db.format, Format::Rocprofv3);
    assert_eq!(from_db.outcome, Outcome::Rocprofv3);
    assert_eq!((from_db.events, from_db.gpu_events), (4, 4));
    assert_eq!(from_db.gpus, ["AMD Instinct MI300X"]);
    assert_eq!(from_db.gpu_index, Some(0));
    let csv = |t: Option<&trace_summary::Table>| t.map(|t| t.to_csv());
    assert_eq!(csv(from_db.gpu_timeline.as_ref()), csv(from_json.gpu_timeline.as_ref()));
    assert_eq!(csv(from_db.kernel_summary.as_ref()), csv(from_json.kernel_summary.as_ref()));
    assert_eq!((from_db.gpus, from_db.gpu_index), (from_json.gpus, from_json.gpu_index));
    insta::assert_snapshot!(from_db.gpu_timeline.unwrap().to_csv(), @r"
    type,time ms,percent
    total_time,0.008,100.0
    kernel,0.0017000000000000001,21.250000000000004
    memory,0.0005999999999999996,7.499999999999996
    busy_time,0.0023,28.749999999999996
    idle,0.0057,71.25
    ");
    let kernels = trace_summary::kernel_categories(from_db.kernel_summary.as_ref().unwrap());
    let by: Vec<(&str, u64)> =
        kernels.iter().flatten().map(|c| (c.name.as_str(), c.count)).collect();
    assert_eq!(by, [("COMM", 1), ("GEMM", 2)]);
    // Read-only: the database is as it was.
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn a_rocpd_database_without_kernel_records_says_what_it_holds() {
    let s = trace_summary::summarize_file(&synthetic("rocpd/api_only/4321_results.db")).unwrap();
    assert_eq!(s.outcome, Outcome::NoGpuActivity);
    assert_eq!(s.record_lists, ["region"]);
    assert!(s.gpu_timeline.is_none() && s.kernel_summary.is_none());
}

#[test]
fn format_of_file_knows_a_database() {
    let db = synthetic(DB);
    assert_eq!(Format::of_file(&db), Format::Rocprofv3);
    // Its records take more than its size once read (38 MiB measured for a
    // 21 MB database), unlike JSON's, which take a sixth of theirs.
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(trace_summary::memory_needed(&db, size) >= 2 * size + (16 << 20));
    assert!(trace_summary::memory_needed(&db, size) > Format::Rocprofv3.memory_needed(size));
}

/// A copy of the synthetic database in a temp dir, changed by `sql`.
fn changed(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("5678_results.db");
    std::fs::copy(synthetic(DB), &path).unwrap();
    rusqlite::Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    (dir, path)
}

#[test]
fn dispatches_the_kernels_view_does_not_join_are_an_error_not_an_idle_gpu() {
    let (_dir, path) = changed(&format!("DELETE FROM {SYMBOLS};"));
    let err = trace_summary::summarize_file(&path).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");
    insta::assert_snapshot!(trace_summary::one_line(&err).replace(&path.display().to_string(), "DB"), @"DB is not a readable rocpd database: its rocpd_kernel_dispatch table holds rows, but its `kernels` view joins none of them (a schema other than rocprofiler-sdk's published one?)");
}

#[test]
fn a_database_without_the_kernels_view_is_named() {
    let (_dir, path) = changed("DROP VIEW kernels;");
    let err = trace_summary::one_line(&trace_summary::summarize_file(&path).unwrap_err());
    assert!(err.contains("a rocpd database without the `kernels` view"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("app_results.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
        .unwrap();
    let err = trace_summary::one_line(&trace_summary::summarize_file(&other).unwrap_err());
    assert!(
        err.ends_with(
            "a SQLite database, but not rocprofv3's rocpd output (it has no rocpd_ tables)"
        ),
        "{err}"
    );
}

#[test]
fn a_database_read_from_a_stream_is_refused_by_name() {
    let bytes = std::fs::read(synthetic(DB)).unwrap();
    let err = trace_summary::summarize(&bytes[..], Path::new("x_results.db")).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");
}

#[test]
fn reading_a_database_stops_when_cancelled() {
    let cancel = Arc::new(AtomicBool::new(true));
    let options = Options::default().cancelled_by(cancel);
    let err = trace_summary::summarize_file_with(&synthetic(DB), &options).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");
}

#[test]
fn a_database_cut_short_is_a_database_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1234_results.db");
    let bytes = std::fs::read(synthetic(DB)).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = trace_summary::summarize_file(&path).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");
    let said = trace_summary::one_line(&err);
    let said = said.replace(&path.display().to_string(), "DB");
    insta::assert_snapshot!(said, @"DB is not a readable rocpd database: database disk image is malformed (cut short or damaged: a job killed while rocprofv3 wrote it? a copy cut short?)");
}

/// The JSON a database is converted to: its tables are the database's, and
/// it holds what TraceLens' rocprof report reads, where it reads it
/// (`RocprofParser`: `rocprofiler-sdk-tool[0]`, its `metadata` times,
/// `kernel_symbols` by `kernel_id`, `buffer_records.kernel_dispatch` with
/// `dispatch_info` sizes, `memory_copy`).
#[test]
fn a_database_converts_to_the_rocprofv3_json_of_its_records() {
    let db = synthetic(DB);
    let before = std::fs::read(&db).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("1234_results.json");
    let converted = trace_summary::rocpd_to_json(&db, &json, None).unwrap();
    assert_eq!(converted, trace_summary::Converted { processes: 1, kernels: 3, copies: 1 });
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // Nothing else is left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let from_db = trace_summary::summarize_file(&db).unwrap();
    let from_json = trace_summary::summarize_file(&json).unwrap();
    assert_eq!(from_json.format, Format::Rocprofv3);
    let csv = |t: Option<&trace_summary::Table>| t.map(|t| t.to_csv());
    assert_eq!(csv(from_json.gpu_timeline.as_ref()), csv(from_db.gpu_timeline.as_ref()));
    assert_eq!(csv(from_json.kernel_summary.as_ref()), csv(from_db.kernel_summary.as_ref()));
    assert_eq!((from_json.gpus, from_json.gpu_index), (from_db.gpus, from_db.gpu_index));

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tool = &doc["rocprofiler-sdk-tool"][0];
    let metadata = &tool["metadata"];
    assert_eq!(
        (&metadata["pid"], &metadata["init_time"], &metadata["fini_time"]),
        (&1234.into(), &1000.into(), &9000.into())
    );
    assert_eq!(metadata["node"]["hostname"], "node-1");
    assert_eq!(metadata["command"], serde_json::json!(["python3 train.py"]));
    // Element 0 a placeholder, as rocprofv3 writes it: each symbol at its
    // id's index.
    let symbols = tool["kernel_symbols"].as_array().unwrap();
    assert_eq!(symbols[0], serde_json::json!({"kernel_id": 0, "kernel_name": ""}));
    assert!(symbols.iter().enumerate().all(|(i, s)| s["kernel_id"] == i), "{symbols:?}");
    let names: std::collections::BTreeMap<u64, &str> = symbols[1..]
        .iter()
        .map(|s| {
            let name = ["truncated_kernel_name", "formatted_kernel_name", "kernel_name"]
                .iter()
                .find_map(|k| s[k].as_str().filter(|n| !n.is_empty()))
                .unwrap();
            (s["kernel_id"].as_u64().unwrap(), name)
        })
        .collect();
    let dispatches = tool["buffer_records"]["kernel_dispatch"].as_array().unwrap();
    let seen: Vec<(&str, u64, u64)> = dispatches
        .iter()
        .map(|d| {
            let id = d["dispatch_info"]["kernel_id"].as_u64().unwrap();
            let times = (d["start_timestamp"].as_u64().unwrap(), d["end_timestamp"].as_u64());
            (names[&id], times.0, times.1.unwrap())
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("Cijk_Alik_Bljk_HHS_BH_MT64x64x32", 1300, 1800),
            ("Cijk_Alik_Bljk_HHS_BH_MT64x64x32", 3000, 3400),
            ("ncclDevKernel_Generic", 3200, 4200),
        ]
    );
    let nccl = &symbols[2];
    assert_eq!(
        (&nccl["kernel_name"], &nccl["formatted_kernel_name"]),
        (
            &"ncclDevKernel_Generic.kd".into(),
            &"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)".into()
        )
    );
    let first = &dispatches[0];
    assert_eq!(
        first["dispatch_info"]["grid_size"],
        serde_json::json!({"x": 65536, "y": 1, "z": 1})
    );
    assert_eq!(
        first["dispatch_info"]["workgroup_size"],
        serde_json::json!({"x": 256, "y": 1, "z": 1})
    );
    assert_eq!(first["dispatch_info"]["agent_id"]["handle"], 2);
    assert_eq!(first["dispatch_info"]["queue_id"]["handle"], 1);
    assert_eq!(first["stream_id"]["handle"], 0);
    assert_eq!(first["thread_id"], 1234);
    assert_eq!(first["correlation_id"]["internal"], 2);
    let gpu = &tool["agents"].as_array().unwrap()[1];
    assert_eq!((&gpu["type"], &gpu["product_name"]), (&2.into(), &"AMD Instinct MI300X".into()));
    let copy = &tool["buffer_records"]["memory_copy"][0];
    assert_eq!((&copy["start_timestamp"], &copy["end_timestamp"]), (&5000.into(), &5600.into()));
    assert_eq!(copy["bytes"], 1048576);
}

/// A view without the columns that name a symbol: the kernels' names make
/// the symbols, one per name, and the tables are still the database's.
#[test]
fn a_kernels_view_without_kernel_ids_converts_by_name() {
    let (dir, db) = changed(
        "DROP VIEW kernels; CREATE VIEW kernels AS SELECT S.display_name AS name, K.start, K.\"end\" \
         FROM rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id;",
    );
    let json = dir.path().join("5678_results.json");
    let converted = trace_summary::rocpd_to_json(&db, &json, None).unwrap();
    assert_eq!(converted.kernels, 3);
    let csv = |s: trace_summary::Summary| s.kernel_summary.map(|t| t.to_csv());
    assert_eq!(
        csv(trace_summary::summarize_file(&json).unwrap()),
        csv(trace_summary::summarize_file(&db).unwrap())
    );
}

/// The names of the kernels table: a kernel's truncated name, from its
/// symbol's `extdata` (JSON text as rocprofv3 writes it, or SQLite's binary
/// JSONB), not the display name the `kernels` view gives (the formatted
/// one, with its arguments), as TraceLens names it in the JSON of the same
/// run; where `extdata` has none, the display name cut as rocprofv3 cuts a
/// truncated name: the same name.
#[test]
fn kernels_are_named_by_their_truncated_name_as_in_the_json() {
    let kernel_names = |db: &Path| {
        let summary = trace_summary::summarize_file(db).unwrap();
        let table = summary.kernel_summary.unwrap();
        let mut names: Vec<String> = table.rows.iter().map(|r| r[0].text()).collect();
        names.sort();
        names
    };
    let text = synthetic(DB);
    let (_jsonb_dir, jsonb) =
        changed(&format!("UPDATE {SYMBOLS} SET extdata = jsonb(extdata) WHERE id = 2;"));
    let kind = |db: &Path| -> String {
        let sql = format!("SELECT typeof(extdata) FROM {SYMBOLS} WHERE id = 2");
        rusqlite::Connection::open(db).unwrap().query_row(&sql, [], |r| r.get(0)).unwrap()
    };
    assert_eq!((kind(&jsonb), kind(&text)), ("blob".into(), "text".into()));
    let (_none_dir, none) = changed(&format!("UPDATE {SYMBOLS} SET extdata = '{{}}';"));
    let (_bad_dir, bad) = changed(&format!("UPDATE {SYMBOLS} SET extdata = 'not json';"));
    for db in [&jsonb, &text, &none, &bad] {
        assert_eq!(
            kernel_names(db),
            ["Cijk_Alik_Bljk_HHS_BH_MT64x64x32", "ncclDevKernel_Generic"],
            "{}",
            db.display()
        );
    }
    // The JSON written for each names them the same.
    let out = tempfile::tempdir().unwrap();
    for (i, db) in [&jsonb, &text, &none, &bad].into_iter().enumerate() {
        let json = out.path().join(format!("{i}_results.json"));
        trace_summary::rocpd_to_json(db, &json, None).unwrap();
        assert_eq!(kernel_names(&json), kernel_names(db), "{}", db.display());
    }
}

/// A database of several runs (`rocpd merge`'s, symbols of more than one
/// `guid`), whose kernel symbol ids may overlap: the `kernels` view's names
/// are the ones to go by, truncated as rocprofv3 truncates them (as its JSON
/// names them).
#[test]
fn a_merged_database_names_kernels_as_its_view_does() {
    let (_dir, db) = changed(&format!(
        "ALTER TABLE {SYMBOLS} ADD COLUMN guid TEXT; \
         UPDATE {SYMBOLS} SET guid = CASE id WHEN 1 THEN 'run-a' ELSE 'run-b' END; \
         UPDATE {SYMBOLS} SET display_name = 'void rccl::all_reduce<4>(Args)' WHERE id = 2;"
    ));
    let summary = trace_summary::summarize_file(&db).unwrap();
    let table = summary.kernel_summary.unwrap();
    let mut names: Vec<String> = table.rows.iter().map(|r| r[0].text()).collect();
    names.sort();
    assert_eq!(names, ["Cijk_Alik_Bljk_HHS_BH_MT64x64x32", "all_reduce"], "{}", table.to_csv());
    let json = db.with_extension("json");
    trace_summary::rocpd_to_json(&db, &json, None).unwrap();
    let csv = |s: trace_summary::Summary| s.kernel_summary.map(|t| t.to_csv());
    assert_eq!(
        csv(trace_summary::summarize_file(&json).unwrap()),
        csv(trace_summary::summarize_file(&db).unwrap())
    );
}

/// No JSON is left behind when the database cannot be read, the output
/// cannot be written, or the conversion is stopped.
#[test]
fn a_conversion_that_fails_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let other = dir.path().join("app_results.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (id);").unwrap();
    let err = trace_summary::rocpd_to_json(&other, &json, None).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "{err:?}");
    assert!(trace_summary::one_line(&err).ends_with("(it has no rocpd_ tables)"), "{err}");

    let stop = AtomicBool::new(true);
    let err = trace_summary::rocpd_to_json(&synthetic(DB), &json, Some(&stop)).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err:?}");

    let nowhere = dir.path().join("missing/out.json");
    let err = trace_summary::rocpd_to_json(&synthetic(DB), &nowhere, None).unwrap_err();
    assert!(matches!(&err, Error::Write { path, .. } if *path == nowhere), "{err:?}");
    let files: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(files, ["app_results.db"]);
}

const DISPATCH: &str = "rocpd_kernel_dispatch_0198c0de_2a3b_7c4d_8e5f_a0b1c2d3e4f5";

/// A `kernels` view that is a recursive query (it generates rows without
/// end: `trace convert` wrote forever, `report summary` aborted for want of
/// memory) is refused before it is read; one that generates rows without
/// saying so is stopped once it yields more than the file could hold.
#[test]
fn views_that_generate_rows_are_refused() {
    let (dir, recursive) = changed(
        "DROP VIEW kernels; CREATE VIEW kernels AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL \
         SELECT x + 1 FROM c) SELECT 'k' AS name, x AS start, x + 1 AS \"end\", 0 AS \
         agent_type_index, NULL AS kernel_id FROM c;",
    );
    for err in [
        trace_summary::summarize_file(&recursive).unwrap_err(),
        trace_summary::rocpd_to_json(&recursive, &dir.path().join("o.json"), None).unwrap_err(),
    ] {
        assert!(trace_summary::one_line(&err).contains("view is a recursive query"), "{err}");
    }
    assert!(!dir.path().join("o.json").exists());
    // Rows multiplied by a cross join of the dispatches with a made-up table.
    let (_dir, many) = changed(
        "CREATE TABLE n(x); \
         INSERT INTO n WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT x FROM c; \
         DROP VIEW kernels; CREATE VIEW kernels AS SELECT 'k' AS name, a.x AS start, a.x + 1 AS \"end\", \
         0 AS agent_type_index, NULL AS kernel_id FROM n a, n b;",
    );
    let err = trace_summary::summarize_file(&many).unwrap_err();
    assert!(
        trace_summary::one_line(&err)
            .contains("its views yield more rows than a database of its size holds"),
        "{err}"
    );
}

/// Dispatches whose times cannot be read (NULL, text) are left out, and
/// counted (3 dispatches became 1 with no word).
#[test]
fn records_without_times_are_counted_not_dropped_silently() {
    let (_dir, db) = changed(&format!(
        "UPDATE {DISPATCH} SET start = NULL WHERE id = (SELECT MIN(id) FROM {DISPATCH}); \
                  UPDATE {DISPATCH} SET \"end\" = 'late' WHERE id = (SELECT MAX(id) FROM {DISPATCH});"
    ));
    let summary = trace_summary::summarize_file(&db).unwrap();
    assert_eq!(summary.dropped_records, 2);
    assert_eq!(summary.gpu_events, 2, "one dispatch and the copy are left");
}

/// A database that is an empty file is said so (it was "a SQLite
/// database, but not rocprofv3's"); a WAL-mode one is read without a
/// `-shm` or `-wal` file left beside it.
#[test]
fn empty_and_wal_databases() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("9_results.db");
    std::fs::write(&empty, b"").unwrap();
    let err = trace_summary::rocpd_to_json(&empty, &dir.path().join("o.json"), None).unwrap_err();
    assert!(
        trace_summary::one_line(&err).contains("an empty file (0 bytes), not a database"),
        "{err}"
    );
    let (wal_dir, wal) = changed("PRAGMA journal_mode = WAL;");
    let before: Vec<String> = crate::public_dir::files_under(wal_dir.path())
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    trace_summary::summarize_file(&wal).unwrap();
    let after: Vec<String> = crate::public_dir::files_under(wal_dir.path())
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(after, before, "files were left beside the database");
}
