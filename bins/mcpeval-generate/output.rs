//! Writing the manifest: a temporary file beside the output, then a
//! rename (with `--force`) or a hard link that fails on an existing file
//! (without it), so an existing manifest is either replaced whole by a
//! valid one or left byte for byte. Standard output (`-`) and what is not
//! a regular file (a FIFO, `/dev/stdout`) are written in place.

use shared::Error;
use shared::Result;
use shared::file_arg::Output;

/// The refusal when `output` exists and `--force` was not given.
pub fn exists_error(output: &Output) -> Error {
    Error::usage(format!("{output} exists; nothing was written"))
        .with_hint("pass --force to replace it, or choose another --output")
}

/// Writes `text` to `output`: standard output, in place into a FIFO, a
/// device or a link, else through a temporary file in the same directory,
/// replacing an existing file only with `force`.
pub fn write(output: &Output, text: &str, force: bool) -> Result<()> {
    if force {
        output.write(text.as_bytes(), 0o644)
    } else if output.create(text.as_bytes(), 0o644)? {
        Ok(())
    } else {
        Err(exists_error(output))
    }
}
