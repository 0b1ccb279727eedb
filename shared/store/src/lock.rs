//! Advisory file locks, through std's `File::lock*`: the one place a lock
//! file is opened and locked.
//!
//! Journal writers and the index both take `journals/.lock` *shared*:
//! appends never wait for each other, and the index re-checks the bytes it
//! read before it commits. The lock exists so a future maintenance command
//! that must see no writer at all can take it exclusively. A file that one
//! run alone may work on (the first index, built aside) is held under an
//! exclusive lock taken without waiting ([`LockFile::try_exclusive`]).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use shared::error::{Error, IoContext, Result};

/// An open lock file; the lock is held while the guard lives.
#[derive(Debug)]
pub struct LockFile {
    file: File,
}

/// Opens (creating, mode 0600) the file at `path`, to lock.
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

impl LockFile {
    /// Opens (creating, mode 0600) the lock file at `path`.
    pub fn open(path: &Path) -> Result<LockFile> {
        let file =
            open(path).context(format_args!("cannot open the lock file {}", path.display()))?;
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

    /// Takes the exclusive lock of the file at `path` (creating it, mode
    /// 0600) when no one else holds it, without waiting: `None` when
    /// someone does. The lock is on the file the path names now: one that
    /// was removed or replaced while the lock was taken is opened again.
    pub fn try_exclusive(path: &Path) -> Result<Option<Exclusive>> {
        loop {
            let file = open(path).context(format_args!("cannot open {}", path.display()))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(None),
                Err(TryLockError::Error(err)) => {
                    return Err(Error::io(
                        format_args!("cannot lock {}", path.display()),
                        err,
                    ));
                }
            }
            // A run that removed the file while this one waited leaves the
            // lock on a file no path names: try again.
            let held = file
                .metadata()
                .context(format_args!("cannot stat {}", path.display()))?;
            match fs::metadata(path) {
                Ok(now) if (now.dev(), now.ino()) == (held.dev(), held.ino()) => {
                    return Ok(Some(Exclusive { file }));
                }
                Ok(_) => continue,
                Err(err) if err.kind() == ErrorKind::NotFound => continue,
                Err(err) => {
                    return Err(Error::io(
                        format_args!("cannot stat {}", path.display()),
                        err,
                    ));
                }
            }
        }
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

/// A file held under its exclusive lock, which goes when this is dropped
/// (the file is closed).
#[derive(Debug)]
pub struct Exclusive {
    file: File,
}

impl Exclusive {
    /// The locked file, open for reading and writing.
    pub fn file(&self) -> &File {
        &self.file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_lock_is_one_holder_s_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.new");
        let held = LockFile::try_exclusive(&path).unwrap().expect("free");
        assert_eq!(path.metadata().unwrap().mode() & 0o777, 0o600);
        assert!(LockFile::try_exclusive(&path).unwrap().is_none());
        let open = LockFile::open(&path).unwrap();
        assert!(open.file.try_lock_shared().is_err(), "held exclusively");
        drop(held);
        let again = LockFile::try_exclusive(&path).unwrap().expect("free again");
        // A file removed and made anew is locked afresh, by its new name.
        fs::remove_file(&path).unwrap();
        let renewed = LockFile::try_exclusive(&path).unwrap().expect("a new file");
        assert_ne!(
            again.file().metadata().unwrap().ino(),
            renewed.file().metadata().unwrap().ino()
        );
    }
}
