//! Writing the manifest: a temporary file beside the output, then a
//! rename (with `--force`) or a hard link that fails on an existing file
//! (without it), so an existing manifest is either replaced whole by a
//! valid one or left byte for byte.

use std::path::Path;

use shared::{Error, Result, atomic_file};

/// The refusal when `path` exists and `--force` was not given.
pub fn exists_error(path: &Path) -> Error {
    Error::usage(format!("{} exists; nothing was written", path.display()))
        .with_hint("pass --force to replace it, or choose another --output")
}

/// Writes `text` to `path` through a temporary file in the same directory:
/// replacing an existing file only with `force`.
pub fn write(path: &Path, text: &str, force: bool) -> Result<()> {
    if force {
        atomic_file::write(path, text.as_bytes(), 0o644)
    } else if atomic_file::create(path, text.as_bytes(), 0o644)? {
        Ok(())
    } else {
        Err(exists_error(path))
    }
}
