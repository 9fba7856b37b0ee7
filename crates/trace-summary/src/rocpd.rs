//! rocprofv3's rocpd output: a SQLite database (`<pid>_results.db`, the
//! default output format since ROCm 7), read into the same tables as its
//! JSON (`rocprof.rs`).
//!
//! It is read through the views rocprofv3 writes into every database beside
//! its tables, as rocprofiler-sdk's published schema defines them: `kernels`
//! (a dispatch's kernel `name`, `start` and `end` in ns, its GPU's
//! `agent_type_index`) and `memory_copies` (`start`, `end`), with the
//! processes' `init` / `fini` from `rocpd_info_process` and the GPUs' names
//! from `rocpd_info_agent`. The tables' own layout changes between schema
//! versions; the views are what rocprofiler-sdk's own `rocpd` tools query.
//! The file is opened read-only: the database is never changed, and rows are
//! stepped through one at a time, not loaded.

use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
};

use rusqlite::{Connection, OpenFlags, types::ValueRef};

use crate::rocprof::{Records, Tables};

/// Why a database could not be read: a message that names what was missing
/// or what SQLite said.
#[derive(Debug)]
pub(crate) enum Failure {
    /// `cancel` was raised.
    Cancelled,
    /// What went wrong, in words.
    Said(String),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        let why = match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                " (cut short or damaged: a job killed while rocprofv3 wrote it? a copy cut short?)"
            }
            _ => "",
        };
        Failure::Said(format!("{e}{why}"))
    }
}

/// How many rows are read between looks at `cancel`.
const CANCEL_EVERY: u32 = 1 << 16;

/// The tables of the rocpd database at `path`.
pub(crate) fn tables(path: &Path, cancel: Option<&AtomicBool>) -> Result<Tables, Failure> {
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let objects = objects(&db)?;
    let has = |name: &str| objects.iter().any(|o| o == name);
    if !has("kernels") || !has("rocpd_info_process") {
        let what = if objects.iter().any(|o| o.starts_with("rocpd_")) {
            "a rocpd database without the `kernels` view rocprofv3 writes (an older or newer \
             schema than rocprofiler-sdk's published one?)"
        } else {
            "a SQLite database, but not rocprofv3's rocpd output (it has no rocpd_ tables)"
        };
        return Err(Failure::Said(what.into()));
    }
    let stopped = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let mut records = Records::default();
    let mut processes = db.prepare("SELECT init, fini, start, \"end\" FROM rocpd_info_process")?;
    let mut rows = processes.query([])?;
    while let Some(row) = rows.next()? {
        let init = int(row.get_ref(0)?).or(int(row.get_ref(2)?));
        let fini = int(row.get_ref(1)?).or(int(row.get_ref(3)?));
        if let (Some(init), Some(fini)) = (init, fini) {
            records.process(init, fini);
        }
    }
    if has("rocpd_info_agent") {
        let mut agents = db.prepare(
            "SELECT product_name, model_name, name FROM rocpd_info_agent \
             WHERE type = 'GPU' ORDER BY type_index",
        )?;
        let mut rows = agents.query([])?;
        while let Some(row) = rows.next()? {
            let name = (0..3)
                .filter_map(|i| row.get::<_, Option<String>>(i).ok().flatten())
                .find(|n| !n.trim().is_empty());
            records.gpus.extend(name);
        }
    }
    let columns = columns(&db, "kernels")?;
    let agent =
        if columns.iter().any(|c| c == "agent_type_index") { "agent_type_index" } else { "NULL" };
    let mut kernels = db.prepare(&format!("SELECT name, start, \"end\", {agent} FROM kernels"))?;
    let mut rows = kernels.query([])?;
    let mut read = 0u32;
    let mut tick = || {
        read = read.wrapping_add(1);
        if read.is_multiple_of(CANCEL_EVERY) && stopped() {
            Err(Failure::Cancelled)
        } else {
            Ok(())
        }
    };
    while let Some(row) = rows.next()? {
        tick()?;
        let (Some(start), Some(end)) = (int(row.get_ref(1)?), int(row.get_ref(2)?)) else {
            continue;
        };
        let name = match row.get_ref(0)? {
            ValueRef::Text(t) => String::from_utf8_lossy(t),
            _ => "".into(),
        };
        records.kernel(&name, start, end);
        records.devices.insert(int(row.get_ref(3)?).and_then(|i| u32::try_from(i).ok()));
    }
    if has("memory_copies") {
        let mut copies = db.prepare("SELECT start, \"end\" FROM memory_copies")?;
        let mut rows = copies.query([])?;
        while let Some(row) = rows.next()? {
            tick()?;
            if let (Some(start), Some(end)) = (int(row.get_ref(0)?), int(row.get_ref(1)?)) {
                records.copy(start, end);
            }
        }
    }
    if stopped() {
        return Err(Failure::Cancelled);
    }
    if records.kernels.is_empty()
        && has("rocpd_kernel_dispatch")
        && db.query_row("SELECT EXISTS (SELECT 1 FROM rocpd_kernel_dispatch)", [], |r| r.get(0))?
    {
        // Rows the view does not join (a schema it does not match): say so,
        // rather than report a GPU that ran no kernel.
        return Err(Failure::Said(
            "its rocpd_kernel_dispatch table holds rows, but its `kernels` view joins none of \
             them (a schema other than rocprofiler-sdk's published one?)"
                .into(),
        ));
    }
    // What the database holds instead, for a run without GPU records.
    let lists = if records.kernels.is_empty() && records.copies.is_empty() {
        holding(&db, &objects)?
    } else {
        Vec::new()
    };
    Ok(records.tables(lists))
}

/// The tables and views of the database.
fn objects(db: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement =
        db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// The columns of a table or view.
fn columns(db: &Connection, of: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = db.prepare(&format!("SELECT name FROM pragma_table_info('{of}')"))?;
    statement.query_map([], |row| row.get(0))?.collect()
}

/// The rocpd record views that hold rows, by rocprofv3's names for the
/// records in them (as its JSON's `buffer_records` keys are).
fn holding(db: &Connection, objects: &[String]) -> rusqlite::Result<Vec<String>> {
    const RECORDS: [(&str, &str); 6] = [
        ("rocpd_kernel_dispatch", "kernel_dispatch"),
        ("rocpd_memory_copy", "memory_copy"),
        ("rocpd_memory_allocate", "memory_allocation"),
        ("rocpd_region", "region"),
        ("rocpd_sample", "sample"),
        ("rocpd_pmc_event", "pmc_event"),
    ];
    let mut held = Vec::new();
    for (view, records) in RECORDS {
        if !objects.iter().any(|o| o == view) {
            continue;
        }
        let rows: bool =
            db.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {view})"), [], |r| r.get(0))?;
        if rows {
            held.push(records.to_string());
        }
    }
    Ok(held)
}

/// A column's integer value (ns timestamps, indices); a NULL or text is none.
fn int(value: ValueRef<'_>) -> Option<u64> {
    match value {
        ValueRef::Integer(i) => u64::try_from(i).ok(),
        ValueRef::Real(r) if r >= 0.0 => Some(r as u64),
        _ => None,
    }
}
