//! Writing the manifest: a temporary file beside the output, then a
//! rename (with `--force`) or a hard link that fails on an existing file
//! (without it), so an existing manifest is either replaced whole by a
//! valid one or left byte for byte.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use shared::error::IoContext;
use shared::{Error, Result};

/// The refusal when `path` exists and `--force` was not given.
pub fn exists_error(path: &Path) -> Error {
    Error::usage(format!("{} exists; nothing was written", path.display()))
        .with_hint("pass --force to replace it, or choose another --output")
}

/// Writes `text` to `path` through a temporary file in the same directory.
pub fn write(path: &Path, text: &str, force: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(
            format_args!("cannot write {}", tmp.display()),
            err,
        ));
    }
    let placed = if force {
        fs::rename(&tmp, path)
    } else {
        let linked = fs::hard_link(&tmp, path);
        let _ = fs::remove_file(&tmp);
        linked
    };
    match placed {
        Ok(()) => Ok(()),
        Err(err) if !force && err.kind() == ErrorKind::AlreadyExists => Err(exists_error(path)),
        Err(err) => {
            let _ = fs::remove_file(&tmp);
            Err(err).context(format_args!("cannot write {}", path.display()))
        }
    }
}
