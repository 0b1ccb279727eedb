//! The rules that decide whether facts cached about the journals still
//! hold: shared by `index` (index.db) and `readiness` (trends.db), so both
//! caches are trusted for the same reasons and rebuilt for the same ones.
//!
//! A journal's identity is its content: the checkpointed length and the
//! SHA-256 of those bytes. Only the last checkpointed journal may grow, and
//! only journals sorting after it may appear. An earlier journal must still
//! end exactly as it did, with the same unfinished line if it had one.
//! Anything else means the cache must be rebuilt, and the reason says why.
//! This module only reads; it never decides to trust a time stamp.

use std::collections::BTreeSet;
use std::fs::{File, Metadata};
use std::io::{self, ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::hash::Hasher;
use shared::error::{Error, IoContext, Result};

/// What a cache recorded about one journal.
#[derive(Debug, Clone, Copy)]
pub struct Mark<'a> {
    /// The journal's file name.
    pub name: &'a str,
    /// Bytes consumed: up to and including the last newline read.
    pub length: u64,
    /// SHA-256 of those bytes.
    pub sha256: [u8; 32],
    /// The file's size when it was read (more than `length` while its last
    /// line was unfinished).
    pub size: u64,
}

/// A checkpointed journal whose prefix still hashes as recorded.
#[derive(Debug)]
pub struct Verified {
    /// Where it is.
    pub path: PathBuf,
    /// Open, positioned at the end of the checkpointed prefix.
    pub file: File,
    /// Its metadata when it was opened.
    pub meta: Metadata,
    /// The hash state after the prefix, ready to take what follows; a
    /// fresh hasher when the prefix check was `deferred`.
    pub hasher: Hasher,
    /// The prefix was not hashed (see [`plan_deferring`]): the caller must
    /// still prove it before relying on it.
    pub deferred: bool,
}

/// What a refresh of the cache must do.
#[derive(Debug)]
pub enum Plan {
    /// Throw the cache away and read every journal; the reason is shown.
    Rebuild(String),
    /// Keep it: every checkpointed journal is `verified` (in order; only
    /// the last may have grown) and `new` journals sort after them all.
    Extend {
        /// One per mark, in the marks' order.
        verified: Vec<Verified>,
        /// Journals not yet checkpointed, to be read whole.
        new: Vec<PathBuf>,
    },
}

/// Compares the journals on disk (`files`, in name order, under `dir`)
/// with the cache's `marks` (in name order). Cheap name checks come first,
/// so a removed or reordered journal costs no hashing; then each prefix is
/// hashed with `hash` (which may report progress). `past` names the cache
/// in reasons: "indexed" gives "J sorts before indexed files".
pub fn plan(
    dir: &Path,
    marks: &[Mark<'_>],
    files: &[PathBuf],
    past: &str,
    hash: &mut dyn FnMut(&mut File, u64, &mut Hasher) -> io::Result<()>,
) -> Result<Plan> {
    plan_with(dir, marks, files, past, hash, false)
}

/// [`plan`], except that the last journal's prefix is left unhashed when
/// the journal grew since its mark: it comes back `deferred`, open at its
/// checkpoint with a fresh hasher. A caller that checks the grown journal
/// again anyway before relying on it (because it changed a moment ago)
/// proves the prefix then, and reads those bytes once instead of twice.
/// Every other rule (names, sizes, earlier journals' bytes) is checked here
/// as by [`plan`].
pub fn plan_deferring(
    dir: &Path,
    marks: &[Mark<'_>],
    files: &[PathBuf],
    past: &str,
    hash: &mut dyn FnMut(&mut File, u64, &mut Hasher) -> io::Result<()>,
) -> Result<Plan> {
    plan_with(dir, marks, files, past, hash, true)
}

fn plan_with(
    dir: &Path,
    marks: &[Mark<'_>],
    files: &[PathBuf],
    past: &str,
    hash: &mut dyn FnMut(&mut File, u64, &mut Hasher) -> io::Result<()>,
    defer_grown_last: bool,
) -> Result<Plan> {
    let on_disk: BTreeSet<String> = files.iter().map(|p| file_name(p)).collect();
    let known: BTreeSet<&str> = marks.iter().map(|m| m.name).collect();
    let new = || {
        files
            .iter()
            .filter(|p| !known.contains(file_name(p).as_str()))
            .cloned()
            .collect()
    };
    let Some(last) = marks.last() else {
        return Ok(Plan::Extend {
            verified: Vec::new(),
            new: new(),
        });
    };
    // In name order, the first journal that breaks the rules names the reason.
    let mut all: BTreeSet<&str> = known.clone();
    all.extend(on_disk.iter().map(String::as_str));
    for name in all {
        if !on_disk.contains(name) {
            return Ok(Plan::Rebuild(format!("{name} removed")));
        }
        if !known.contains(name) && name < last.name {
            return Ok(Plan::Rebuild(format!("{name} sorts before {past} files")));
        }
    }
    let mut verified = Vec::with_capacity(marks.len());
    for (i, mark) in marks.iter().enumerate() {
        let path = dir.join(mark.name);
        let mut file =
            crate::journal::open(&path).context(format_args!("cannot open {}", path.display()))?;
        let meta = file
            .metadata()
            .context(format_args!("cannot stat {}", path.display()))?;
        let is_last = i + 1 == marks.len();
        if meta.len() < mark.length {
            return Ok(Plan::Rebuild(format!("{} truncated", mark.name)));
        }
        if !is_last && meta.len() > mark.size {
            return Ok(Plan::Rebuild(format!(
                "{} grew after later journals were {past}",
                mark.name
            )));
        }
        if is_last && defer_grown_last && meta.len() > mark.size {
            file.seek(SeekFrom::Start(mark.length))
                .context(format_args!("cannot read {}", path.display()))?;
            verified.push(Verified {
                path,
                file,
                meta,
                hasher: Hasher::new(),
                deferred: true,
            });
            continue;
        }
        let mut hasher = Hasher::new();
        match hash(&mut file, mark.length, &mut hasher) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => {
                return Ok(Plan::Rebuild(format!("{} truncated", mark.name)));
            }
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot read {}", path.display()),
                    err,
                ));
            }
        }
        if <[u8; 32]>::from(hasher.clone().finalize()) != mark.sha256 {
            return Ok(Plan::Rebuild(format!("bytes changed in {}", mark.name)));
        }
        // Only the last journal is read past its checkpoint, so an earlier
        // one must still end exactly as it did: with the same unfinished
        // line, if any. Were that line shortened or finished, a rebuild
        // would read what this refresh never would.
        if !is_last && unfinished_line_changed(&mut file, &path, mark, meta.len())? {
            return Ok(Plan::Rebuild(format!(
                "{} changed after later journals were {past}",
                mark.name
            )));
        }
        verified.push(Verified {
            path,
            file,
            meta,
            hasher,
            deferred: false,
        });
    }
    Ok(Plan::Extend {
        verified,
        new: new(),
    })
}

/// Whether the bytes after an earlier journal's checkpoint (`file` is
/// positioned there) are no longer an unfinished line of the size it had.
/// That tail is at most one line, read in a small buffer however long it
/// grew; a journal without one costs no read at all.
fn unfinished_line_changed(
    file: &mut File,
    path: &Path,
    mark: &Mark<'_>,
    size: u64,
) -> Result<bool> {
    if size != mark.size {
        return Ok(true);
    }
    let mut tail = (&mut *file).take(size - mark.length);
    let mut buf = [0u8; 8192];
    loop {
        let n = match tail.read(&mut buf) {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot read {}", path.display()),
                    err,
                ));
            }
        };
        if buf[..n].contains(&b'\n') {
            return Ok(true);
        }
    }
}

/// The file name of a journal path, as text.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
