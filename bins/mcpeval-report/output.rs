//! Writing the page: to stdout, in place into something that is not a
//! regular file (a FIFO, `/dev/stdout`), or beside the target and
//! renamed into place, so a reader never sees half a page and a failed
//! write keeps the previous one.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use shared::Result;
use shared::error::IoContext;

use crate::args::Output;

/// Writes `bytes` where `output` says.
pub fn write(output: &Output, bytes: &[u8]) -> Result<()> {
    match output {
        Output::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)?;
            Ok(out.flush()?)
        }
        Output::File(path) if exists_not_regular(path) => {
            let mut file = OpenOptions::new()
                .write(true)
                .open(path)
                .context(format_args!("cannot open {}", path.display()))?;
            file.write_all(bytes)
                .context(format_args!("cannot write {}", path.display()))
        }
        Output::File(path) => shared::atomic_file::write(path, bytes, 0o644),
    }
}

fn exists_not_regular(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}
