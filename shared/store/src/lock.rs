//! Advisory file locks on `journals/.lock`, through std's `File::lock*`.
//!
//! Journal writers and the index both take the lock *shared*: appends never
//! wait for each other, and the index re-checks the bytes it read before it
//! commits. The lock exists so a future maintenance command that must see no
//! writer at all can take it exclusively.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use shared::error::{IoContext, Result};

/// An open lock file; the lock is held while the guard lives.
#[derive(Debug)]
pub struct LockFile {
    file: File,
}

impl LockFile {
    /// Opens (creating, mode 0600) the lock file at `path`.
    pub fn open(path: &Path) -> Result<LockFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .context(format_args!("cannot open the lock file {}", path.display()))?;
        Ok(LockFile { file })
    }

    /// Blocks until a shared lock is held; released when the guard drops.
    pub fn shared(&self) -> Result<Guard<'_>> {
        self.file
            .lock_shared()
            .context("cannot take the journal lock")?;
        Ok(Guard { file: &self.file })
    }

    /// Blocks until the exclusive lock is held; released when the guard drops.
    pub fn exclusive(&self) -> Result<Guard<'_>> {
        self.file.lock().context("cannot take the journal lock")?;
        Ok(Guard { file: &self.file })
    }
}

/// A held lock.
#[derive(Debug)]
pub struct Guard<'a> {
    file: &'a File,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
