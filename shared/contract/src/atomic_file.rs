//! Replacing a file so that readers see the old bytes or the new ones,
//! never a torn mixture: write a temporary file beside it, flush it to
//! disk, and rename it into place.
//!
//! The temporary file lives in the target's own directory (a rename never
//! crosses file systems) and is removed when anything fails, so a failed
//! write leaves the previous file exactly as it was.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// Writes `bytes` to `path` atomically, creating the file with `mode`
/// (an existing file's mode is replaced by `mode` too).
pub fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let (dir, tmp) = write_temp(path, bytes, mode)?;
    if let Err(err) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(
            format_args!("cannot replace {}", path.display()),
            err,
        ));
    }
    sync_dir(dir);
    Ok(())
}

/// Creates `path` holding `bytes` (mode `mode`) only if nothing is there:
/// the complete file appears at once through a hard link, which fails on
/// an existing name. `Ok(false)` when `path` already existed; it is left
/// byte for byte, and so is everything else.
pub fn create(path: &Path, bytes: &[u8], mode: u32) -> Result<bool> {
    let (dir, tmp) = write_temp(path, bytes, mode)?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(dir);
            Ok(true)
        }
        Err(err) if err.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(Error::io(
            format_args!("cannot create {}", path.display()),
            err,
        )),
    }
}

/// 16 hex digits no other writer guesses: std seeds each `RandomState`
/// from the system's random source. (The file is created exclusively, so
/// even a collision would refuse rather than share a file.)
fn unpredictable() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

/// Writes and syncs a temporary file beside `path`; returns its directory
/// and name. A failed write leaves no temporary file behind.
fn write_temp<'a>(path: &'a Path, bytes: &[u8], mode: u32) -> Result<(&'a Path, PathBuf)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::usage(format!("{} is not a file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        unpredictable()
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(
            format_args!("cannot write {}", tmp.display()),
            err,
        ));
    }
    Ok((dir, tmp))
}

/// Makes a rename or link durable; a directory that cannot be opened for
/// syncing (some file systems) still has the new file in place.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Creates `dir` (and its parents) when missing.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).context(format_args!(
        "cannot create the directory {}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        write(&path, b"one", 0o644).unwrap();
        write(&path, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        write(&path, b"one", 0o644).unwrap();
        // A directory in the way of the rename.
        let blocked = dir.path().join("sub");
        fs::create_dir(&blocked).unwrap();
        fs::write(blocked.join("x"), b"x").unwrap();
        assert!(write(&blocked, b"two", 0o644).is_err());
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
