//! Opening the store's SQLite databases the one safe way.
//!
//! WAL journal, a bounded `busy_timeout`, forward-only migrations keyed on
//! `PRAGMA user_version`, an `application_id` that tells our files from
//! foreign ones, files created with mode 0600, and every write inside a
//! `BEGIN IMMEDIATE` transaction. A database newer than the binary is
//! refused and never altered.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

use shared::error::{Error, Result};

/// `PRAGMA application_id` of every mcpeval database ("mcpe").
pub const APPLICATION_ID: i32 = 0x6d63_7065;

/// How long a writer waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A database's name (for messages) and its ordered migrations.
/// Migration *n* (0-based) moves `user_version` from *n* to *n + 1*.
#[derive(Debug)]
pub struct Schema {
    /// Short name used in messages, e.g. `"index.db"`.
    pub name: &'static str,
    /// SQL batches, applied in order, never edited once released.
    pub migrations: &'static [&'static str],
    /// Bytes per page of a file this creates (a power of two from 512 to
    /// 65536); `None` for SQLite's default. Existing files keep theirs.
    pub page_size: Option<u32>,
}

impl Schema {
    /// The `user_version` this binary writes.
    pub fn version(&self) -> i64 {
        self.migrations.len() as i64
    }
}

/// Opens (creating if needed) the database at `path` and migrates it.
pub fn open(path: impl AsRef<Path>, schema: &Schema) -> Result<Connection> {
    let path = path.as_ref();
    if !path.exists() {
        // Create the file ourselves so it is private from its first byte;
        // SQLite gives the -wal and -shm files the same mode.
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::io(format_args!("cannot create {}", path.display()), e))?;
    }
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE, schema.page_size)?;
    migrate(&conn, path, schema)?;
    Ok(conn)
}

/// Opens an existing database for reading; `Ok(None)` when the file is absent.
/// The database must already be at this binary's schema version.
pub fn open_existing(path: impl AsRef<Path>, schema: &Schema) -> Result<Option<Connection>> {
    let path = path.as_ref();
    if !path.exists() {
        return Ok(None);
    }
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE, None)?;
    let version = check_identity(&conn, path, schema)?;
    if version < schema.version() {
        return Err(Error::unavailable(format!(
            "{} is at schema version {version}, older than this binary's {}",
            path.display(),
            schema.version()
        )));
    }
    Ok(Some(conn))
}

fn connect(path: &Path, flags: OpenFlags, page_size: Option<u32>) -> Result<Connection> {
    let flags = flags | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, e))?;
    crate::fault::watch(&conn);
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| sql_error(path, e))?;
    // Only an empty file takes a page size, and only before it is in WAL
    // mode; on any other this does nothing.
    if let Some(size) = page_size {
        conn.pragma_update(None, "page_size", size)
            .map_err(|e| sql_error(path, e))?;
    }
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| sql_error(path, e))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| sql_error(path, e))?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(|e| sql_error(path, e))?;
    Ok(conn)
}

/// Checks the file is ours and not from the future; returns its version.
fn check_identity(conn: &Connection, path: &Path, schema: &Schema) -> Result<i64> {
    let read = |pragma: &str| -> Result<i64> {
        conn.pragma_query_value(None, pragma, |row| row.get(0))
            .map_err(|e| sql_error(path, e))
    };
    let app = read("application_id")?;
    let version = read("user_version")?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .map_err(|e| sql_error(path, e))?;
    let ours = app == i64::from(APPLICATION_ID) || (app == 0 && version == 0 && tables == 0);
    if !ours {
        return Err(Error::unavailable(format!(
            "{} is not an mcpeval {} (application id {app:#x})",
            path.display(),
            schema.name
        ))
        .with_hint("move it aside; mcpeval will create a new one"));
    }
    if version > schema.version() {
        return Err(Error::refused(format!(
            "{} has schema version {version}, newer than this binary understands ({}); it was left unchanged",
            path.display(),
            schema.version()
        ))
        .with_hint("use the mcpeval release that wrote it, or a newer one"));
    }
    Ok(version)
}

fn migrate(conn: &Connection, path: &Path, schema: &Schema) -> Result<()> {
    if check_identity(conn, path, schema)? == schema.version() {
        return Ok(());
    }
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(|e| sql_error(path, e))?;
    // Re-read under the write lock: another process may have migrated first.
    let version = check_identity(&tx, path, schema)?;
    for (step, sql) in schema.migrations.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql).map_err(|e| {
            Error::unavailable(format!(
                "cannot migrate {} to schema version {}: {e}",
                path.display(),
                step + 1
            ))
        })?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| sql_error(path, e))?;
    tx.pragma_update(None, "user_version", schema.version())
        .map_err(|e| sql_error(path, e))?;
    tx.commit().map_err(|e| sql_error(path, e))
}

/// Runs `work` in a `BEGIN IMMEDIATE` transaction, committing on `Ok`.
/// A busy database is reported as [`sql_error`] does: after waiting
/// [`BUSY_TIMEOUT`], naming the file, never as a bare "database is locked".
pub fn write<T>(conn: &mut Connection, work: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
    let path = std::path::PathBuf::from(conn.path().unwrap_or("the database"));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(&path, e))?;
    let value = work(&tx)?;
    tx.commit().map_err(|e| sql_error(&path, e))?;
    Ok(value)
}

/// Maps an SQLite failure on `path` to an error with the right status.
pub fn sql_error(path: impl AsRef<Path>, err: rusqlite::Error) -> Error {
    let path = path.as_ref();
    let code = err.sqlite_error_code();
    let msg = format!("{}: {err}", path.display());
    match code {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => Error::unavailable(
            format!("{msg}: the database is damaged"),
        )
        .with_hint("move it aside or rebuild it (derived databases: `mcpeval index --rebuild`)"),
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            Error::unavailable(format!(
                "{msg}: another mcpeval process held it for more than {} s",
                BUSY_TIMEOUT.as_secs()
            ))
        }
        Some(ErrorCode::ReadOnly)
        | Some(ErrorCode::CannotOpen)
        | Some(ErrorCode::PermissionDenied) => Error::new(shared::error::Kind::Io, msg),
        _ => Error::unavailable(msg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const V1: Schema = Schema {
        name: "test.db",
        migrations: &["CREATE TABLE a(x INTEGER);"],
        page_size: None,
    };
    const V2: Schema = Schema {
        name: "test.db",
        migrations: &[
            "CREATE TABLE a(x INTEGER);",
            "ALTER TABLE a ADD COLUMN y TEXT;",
        ],
        page_size: Some(8192),
    };

    #[test]
    fn creates_private_file_and_migrates_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path, &V1).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let conn = open(&path, &V2).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 2);
        // Created by V1: the page size V2 asks for applies to new files only.
        let size: i64 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        assert_eq!(size, 4096);
        let fresh = dir.path().join("fresh.db");
        let size: i64 = open(&fresh, &V2)
            .unwrap()
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        assert_eq!(size, 8192);
        conn.execute("INSERT INTO a(x, y) VALUES (1, 'z')", [])
            .unwrap();
    }

    #[test]
    fn refuses_newer_database_without_touching_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path, &V2).unwrap());
        let before = std::fs::read(&path).unwrap();
        let err = open(&path, &V1).unwrap_err();
        assert_eq!(err.status(), shared::exit::REFUSED);
        assert!(err.message().contains("newer"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn refuses_foreign_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE other(z);")
            .unwrap();
        let err = open(&path, &V1).unwrap_err();
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
        assert!(err.message().contains("not an mcpeval"), "{err}");
    }

    #[test]
    fn reports_damaged_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let err = open(&path, &V1).unwrap_err();
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
    }
}
