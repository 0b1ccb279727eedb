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
use std::mem;
use std::path::Path;
use std::sync::Once;
use std::thread;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use shared::error::{Error, IoContext, Result};
use shared::exit;
use store::db;
use store::index_db::{SCHEMA, State};

/// Opens `index.db`. A damaged or foreign file is reported (status 3), or,
/// with `recreate`, deleted and created anew. With `recreate`, a file that
/// opens cleanly comes with its structural check under way ([`Health`]).
pub fn open(path: &Path, recreate: bool) -> Result<(Connection, Option<Health>)> {
    untracked_allocations();
    let hint =
        "index.db is derived from the journals: `mcpeval index --rebuild` deletes and recreates it";
    match db::open(path, &SCHEMA) {
        Ok(conn) if !recreate => Ok((tune(conn, path)?, None)),
        Ok(conn) => Ok((tune(conn, path)?, Some(Health::start(path)))),
        Err(err) if err.status() == exit::UNAVAILABLE && recreate => {
            remove(path)?;
            Ok((tune(db::open(path, &SCHEMA)?, path)?, None))
        }
        Err(err) if err.status() == exit::UNAVAILABLE => Err(err.with_hint(hint)),
        Err(err) => Err(err),
    }
}

/// Replaces the damaged index.db open as `conn` with a new, empty one.
pub fn recreate(conn: &mut Connection, path: &Path) -> Result<()> {
    let placeholder = Connection::open_in_memory().map_err(fail(path))?;
    let damaged = mem::replace(conn, placeholder);
    // Its pages are not worth a checkpoint; the file goes.
    let _ = damaged.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    drop(damaged);
    remove(path)?;
    *conn = tune(db::open(path, &SCHEMA)?, path)?;
    Ok(())
}

/// A structural check of an existing index.db before it is rebuilt in
/// place (a file can open cleanly and still have damaged pages), made on a
/// connection and a thread of its own while the rebuild reads the
/// journals beside it. It reads the file as it was when the check began:
/// the rebuild's writes stay invisible to it until they commit, and the
/// rebuild asks for the answer before committing.
pub struct Health(thread::JoinHandle<bool>);

impl Health {
    fn start(path: &Path) -> Health {
        let path = path.to_owned();
        Health(thread::spawn(move || {
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|conn| conn.busy_timeout(db::BUSY_TIMEOUT).map(|()| conn))
                .is_ok_and(|conn| healthy(&conn))
        }))
    }

    /// Whether the file was healthy; a check that could not run says no,
    /// and the file is then recreated, as a damaged one is.
    pub fn healthy(self) -> bool {
        self.0.join().unwrap_or(false)
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

/// Whether SQLite finds the file's structure sound.
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
/// thread while the second core is busy parsing (see `bulk::finish` for
/// the sorts that come after).
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

/// Empties every derived table but `calls`, for a rebuild inside the
/// transaction: the rebuild replaces the calls one id at a time.
pub fn clear(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch(
        "DELETE FROM windows; DELETE FROM annotation_links;
         DELETE FROM sessions; DELETE FROM journals; DELETE FROM state;",
    )
    .map_err(fail(path))
}

/// Maps an SQLite error on `index.db` to the suite's error.
pub fn fail(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| db::sql_error(path, e)
}
