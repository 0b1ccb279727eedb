//! The first index.db, built aside and put in place whole.
//!
//! While there is no index.db, nothing can read or damage one. So the
//! first index is built in `index.db.new` beside it, with an in-memory
//! rollback journal and no syncs: its pages are written once, where an
//! index.db in WAL mode writes each page into the WAL and again into the
//! file. Only a complete, committed and synced file becomes index.db, by
//! `link`, which fails rather than replace an index.db that appeared
//! meanwhile (another first run finished first); this run then starts over
//! the ordinary way. A run that fails or is killed leaves no index.db, as
//! before. Its unfinished file is removed by itself or by a later run.
//!
//! `index.db.new` is held under an exclusive `flock` for as long as it is
//! being built, so a run never builds into, or removes, another's file.
//! A run that finds it held while there is no index.db waits: were it to
//! create index.db in place, the install could clear that file's WAL from
//! under it.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use shared::error::{Error, IoContext, Result};
use store::lock::{Exclusive, LockFile};

use crate::schema;

/// The file a first index is built in.
pub struct Aside {
    path: PathBuf,
    /// The file, open and locked.
    lock: Exclusive,
}

fn aside_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

/// `path` with `-wal` or `-shm` appended: SQLite's files beside it.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Removes `path` and SQLite's files beside it, if present.
fn remove(path: &Path) -> Result<()> {
    for file in [
        path.to_owned(),
        sibling(path, "-wal"),
        sibling(path, "-shm"),
    ] {
        match fs::remove_file(&file) {
            Err(err) if err.kind() != ErrorKind::NotFound => {
                return Err(Error::io(
                    format_args!("cannot remove {}", file.display()),
                    err,
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Removes the unfinished file of a run that was killed, unless a run is
/// building it now.
pub fn clean(db: &Path) -> Result<()> {
    let path = aside_path(db);
    if !path.exists() {
        return Ok(());
    }
    match LockFile::try_exclusive(&path)? {
        Some(_held) => remove(&path),
        None => Ok(()),
    }
}

impl Aside {
    /// When there is no index.db and no other run is building one, an
    /// empty `index.db.new` opened for a fast first build.
    pub fn begin(db: &Path) -> Result<Option<(Aside, Connection)>> {
        if db.exists() {
            return Ok(None);
        }
        let path = aside_path(db);
        let Some(lock) = LockFile::try_exclusive(&path)? else {
            return Ok(None);
        };
        // Whatever a killed run left here is worthless.
        lock.file()
            .set_len(0)
            .context(format_args!("cannot empty {}", path.display()))?;
        remove(&sibling(&path, "-wal"))?;
        remove(&sibling(&path, "-shm"))?;
        let aside = Aside { path, lock };
        let (conn, _) = schema::open(&aside.path, false)?;
        let fail = schema::fail(db);
        // Nothing needs undoing on disk if this run fails: the file is
        // thrown away. The in-memory journal still serves rollbacks.
        conn.pragma_update(None, "journal_mode", "MEMORY")
            .map_err(&fail)?;
        conn.pragma_update(None, "synchronous", "OFF")
            .map_err(&fail)?;
        Ok(Some((aside, conn)))
    }

    /// The file being built.
    pub fn file(&self) -> &File {
        self.lock.file()
    }

    /// Makes the committed file index.db. Returns false, removing it, when
    /// an index.db appeared meanwhile.
    pub fn install(self, conn: Connection, db: &Path) -> Result<bool> {
        let fail = schema::fail(db);
        // Readers and later runs expect WAL mode, which is written into the
        // file's header.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(&fail)?;
        conn.close().map_err(|(_, e)| fail(e))?;
        self.lock
            .file()
            .sync_all()
            .context(format_args!("cannot sync {}", self.path.display()))?;
        if db.exists() {
            return Ok(false);
        }
        // A WAL left beside a deleted index.db would be replayed into the
        // new one when it is first opened.
        remove(&sibling(db, "-wal"))?;
        remove(&sibling(db, "-shm"))?;
        match fs::hard_link(&self.path, db) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => return Ok(false),
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot create {}", db.display()),
                    err,
                ));
            }
        }
        if let Some(dir) = db.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .context(format_args!("cannot sync {}", dir.display()))?;
        }
        Ok(true)
    }
}

impl Drop for Aside {
    /// The file goes, built or not: once linked, index.db names it; if not,
    /// it is no use to anyone. The lock is released after.
    fn drop(&mut self) {
        let _ = remove(&self.path);
    }
}
