//! Opening `index.db` for a run, recreating it on request, and the writes
//! that bracket a run: clearing for a rebuild, and the completion state.
//!
//! The tables themselves are the suite's contract and live in
//! `store::index_db`. This module must never delete a database that is
//! healthy: a rebuild of a good index happens inside a transaction, so
//! readers see the old index until the new one commits.

use std::ffi::c_int;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Once;

use rusqlite::Connection;
use shared::error::{Error, IoContext, Result};
use shared::exit;
use store::db;
use store::index_db::{SCHEMA, State};

/// Opens `index.db`. A damaged or foreign file is reported (status 3), or,
/// with `recreate`, deleted and created anew.
pub fn open(path: &Path, recreate: bool) -> Result<Connection> {
    untracked_allocations();
    let hint =
        "index.db is derived from the journals: `mcpeval index --rebuild` deletes and recreates it";
    match db::open(path, &SCHEMA) {
        Ok(conn) if !recreate || healthy(&conn) => tune(conn, path),
        Ok(conn) => {
            drop(conn);
            remove(path)?;
            tune(db::open(path, &SCHEMA)?, path)
        }
        Err(err) if err.status() == exit::UNAVAILABLE && recreate => {
            remove(path)?;
            tune(db::open(path, &SCHEMA)?, path)
        }
        Err(err) if err.status() == exit::UNAVAILABLE => Err(err.with_hint(hint)),
        Err(err) => Err(err),
    }
}

/// Turns off SQLite's allocation statistics, which take a process-wide
/// mutex on every allocation; nothing here reads them. It must precede the
/// first connection; later it is refused and harmless.
fn untracked_allocations() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int argument; SQLite
        // refuses (SQLITE_MISUSE) rather than misbehaves once initialized.
        unsafe {
            rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int);
        }
    });
}

/// A structural check, run only when a rebuild was asked for: a file can
/// open cleanly and still have damaged pages.
fn healthy(conn: &Connection) -> bool {
    conn.query_row("PRAGMA quick_check(1)", [], |row| row.get::<_, String>(0))
        .is_ok_and(|answer| answer == "ok")
}

/// Page cache, in KiB. It also sizes each in-memory run of the sorts that
/// build indexes, so it bounds the run's memory whatever the journals
/// hold. Small runs sort faster (they stay in the CPU caches) and a larger
/// cache buys nothing here: the big writes append, the rest reads once.
const CACHE_KIB: i64 = 8 * 1024;

/// Settings for the one big write transaction. Sorts get no helper
/// thread: the second core is busy parsing and deriving windows, and on a
/// shared machine the helper cost more time than it saved.
fn tune(conn: Connection, path: &Path) -> Result<Connection> {
    conn.pragma_update(None, "cache_size", -CACHE_KIB)
        .map_err(fail(path))?;
    Ok(conn)
}

fn remove(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match fs::remove_file(&name) {
            Err(err) if err.kind() != ErrorKind::NotFound => {
                return Err(err)
                    .context(format_args!("cannot remove {}", Path::new(&name).display()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Writes the `state` row that marks the index complete.
pub fn set_state(conn: &Connection, path: &Path, state: &State) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO state(id, indexed_at, calls, annotations_max_id, annotations_count)
         VALUES (1, ?1, ?2, ?3, ?4)",
        (
            &state.indexed_at,
            state.calls,
            state.annotations.0,
            state.annotations.1,
        ),
    )
    .map_err(fail(path))?;
    Ok(())
}

/// Empties every derived table, for a rebuild inside the transaction.
pub fn clear(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch(
        "DELETE FROM windows; DELETE FROM annotation_links;
         DELETE FROM calls; DELETE FROM sessions; DELETE FROM journals; DELETE FROM state;",
    )
    .map_err(fail(path))
}

/// Maps an SQLite error on `index.db` to the suite's error.
pub fn fail(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| db::sql_error(path, e)
}
