//! Checkpoints: what each indexed journal held, and whether it still does.
//!
//! A journal's identity is its content: the checkpointed length and the
//! SHA-256 of those bytes. Time stamps never prove a file unchanged; they
//! are used only as a cheap hint that something *did* change during a run,
//! which then triggers a re-hash. Only the last indexed journal may grow,
//! and only journals sorting after it may appear; anything else means the
//! index must be rebuilt, and [`plan`] says why.

use std::collections::BTreeSet;
use std::fs::{self, File, Metadata};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use sha2::Digest;
use shared::error::{Error, IoContext, Result};
use shared::hash::Hasher;

use crate::lines::Lines;
use crate::schema;

/// One row of the `journals` table.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub id: i64,
    pub name: String,
    pub length: u64,
    pub sha256: [u8; 32],
    pub lines: u64,
    pub size: u64,
}

/// Every checkpoint, in journal (name) order.
pub fn load(conn: &Connection, path: &Path) -> Result<Vec<Checkpoint>> {
    let fail = schema::fail(path);
    let mut stmt = conn
        .prepare("SELECT id, name, length, sha256, lines, size FROM journals ORDER BY name")
        .map_err(&fail)?;
    let rows = stmt
        .query_map([], |row| {
            Ok(Checkpoint {
                id: row.get(0)?,
                name: row.get(1)?,
                length: row.get(2)?,
                sha256: row.get(3)?,
                lines: row.get(4)?,
                size: row.get(5)?,
            })
        })
        .map_err(&fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(&fail)
}

/// What `stat` says about a file: any write, rename or replacement changes
/// it (`ctime` cannot be set back by `touch`).
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    key: (u64, u64, (i64, i64), (i64, i64)),
    pub size: u64,
    /// Changed so shortly before it was stamped that a further write could
    /// leave the same coarse time stamps (the "racy git" problem).
    recent: bool,
}

/// Changes this close to the stamp may not show in coarse time stamps.
const RACY: Duration = Duration::from_secs(2);

impl Stamp {
    pub fn of(meta: &Metadata) -> Stamp {
        let ctime =
            UNIX_EPOCH + Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec() as u32);
        Stamp {
            key: (
                meta.dev(),
                meta.ino(),
                (meta.mtime(), meta.mtime_nsec()),
                (meta.ctime(), meta.ctime_nsec()),
            ),
            size: meta.size(),
            recent: SystemTime::now()
                .duration_since(ctime)
                .map_or(true, |age| age < RACY),
        }
    }

    /// Whether `now` proves the file untouched since this stamp.
    fn proves_unchanged(&self, now: &Stamp) -> bool {
        !self.recent && self.key == now.key && self.size == now.size
    }
}

/// Bytes of one journal a run relies on: its first `length` bytes hashed
/// to `sha256` when the file looked like `stamp`.
#[derive(Debug)]
pub struct Observed {
    pub path: PathBuf,
    pub stamp: Stamp,
    pub length: u64,
    pub sha256: [u8; 32],
}

impl Observed {
    /// Whether the file still starts with the observed bytes. A file whose
    /// stamp proves it untouched answers from `stat` alone; any other is
    /// read and hashed again.
    pub fn still_holds(&self, lines: &mut Lines) -> Result<bool> {
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(false),
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot stat {}", self.path.display()),
                    err,
                ));
            }
        };
        if self.stamp.proves_unchanged(&Stamp::of(&meta)) {
            return Ok(true);
        }
        let mut file = open(&self.path)?;
        let mut hasher = Hasher::new();
        lines.progress.expect(self.length);
        match lines.hash(&mut file, self.length, &mut hasher) {
            Ok(()) => Ok(<[u8; 32]>::from(hasher.finalize()) == self.sha256),
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => Ok(false),
            Err(err) => Err(Error::io(
                format_args!("cannot read {}", self.path.display()),
                err,
            )),
        }
    }
}

/// The last indexed journal, verified up to its checkpoint and positioned
/// there, ready for what was appended since.
pub struct Continuation {
    pub checkpoint: Checkpoint,
    pub path: PathBuf,
    pub file: File,
    pub stamp: Stamp,
    pub hasher: Hasher,
}

/// What this run must do.
pub enum Plan {
    /// Throw the index away and read every journal; the reason is shown.
    Rebuild(String),
    /// Keep the index: `verified` journals are unchanged, `last` may have
    /// grown, and `new` journals (all sorting after it) are read whole.
    Extend {
        verified: Vec<Observed>,
        last: Option<Box<Continuation>>,
        new: Vec<PathBuf>,
    },
}

/// Compares the journals on disk with the checkpoints. Cheap `stat` checks
/// come first, so a removed or reordered journal costs no hashing; then
/// every indexed prefix is read and hashed.
pub fn plan(
    dir: &Path,
    checkpoints: &[Checkpoint],
    files: &[PathBuf],
    lines: &mut Lines,
) -> Result<Plan> {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let on_disk: BTreeSet<String> = files.iter().map(|p| name(p)).collect();
    let indexed: BTreeSet<&str> = checkpoints.iter().map(|c| c.name.as_str()).collect();
    let Some(last) = checkpoints.last() else {
        return Ok(Plan::Extend {
            verified: Vec::new(),
            last: None,
            new: files.to_vec(),
        });
    };
    // In name order, the first journal that breaks the rules names the reason.
    let mut all: BTreeSet<&str> = indexed.clone();
    all.extend(on_disk.iter().map(String::as_str));
    for file in all {
        if !on_disk.contains(file) {
            return Ok(Plan::Rebuild(format!("{file} removed")));
        }
        if !indexed.contains(file) && file < last.name.as_str() {
            return Ok(Plan::Rebuild(format!("{file} sorts before indexed files")));
        }
    }
    let mut verified = Vec::new();
    let mut continuation = None;
    for (i, cp) in checkpoints.iter().enumerate() {
        let path = dir.join(&cp.name);
        let mut file = open(&path)?;
        let stamp = Stamp::of(
            &file
                .metadata()
                .context(format_args!("cannot stat {}", path.display()))?,
        );
        let is_last = i + 1 == checkpoints.len();
        if stamp.size < cp.length {
            return Ok(Plan::Rebuild(format!("{} truncated", cp.name)));
        }
        if !is_last && stamp.size > cp.size {
            return Ok(Plan::Rebuild(format!(
                "{} grew after later journals were indexed",
                cp.name
            )));
        }
        let mut hasher = Hasher::new();
        match lines.hash(&mut file, cp.length, &mut hasher) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => {
                return Ok(Plan::Rebuild(format!("{} truncated", cp.name)));
            }
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot read {}", path.display()),
                    err,
                ));
            }
        }
        if <[u8; 32]>::from(hasher.clone().finalize()) != cp.sha256 {
            return Ok(Plan::Rebuild(format!("bytes changed in {}", cp.name)));
        }
        // Only the last journal is read past its checkpoint, so an earlier
        // one must still end exactly as it did: with the same unfinished
        // line, if any. Were that line shortened or finished, a rebuild
        // would read what this run never would.
        if !is_last && unfinished_line_changed(&mut file, &path, cp, stamp.size)? {
            return Ok(Plan::Rebuild(format!(
                "{} changed after later journals were indexed",
                cp.name
            )));
        }
        if is_last {
            continuation = Some(Box::new(Continuation {
                checkpoint: cp.clone(),
                path,
                file,
                stamp,
                hasher,
            }));
        } else {
            verified.push(Observed {
                path,
                stamp,
                length: cp.length,
                sha256: cp.sha256,
            });
        }
    }
    let new = files
        .iter()
        .filter(|p| !indexed.contains(name(p).as_str()))
        .cloned()
        .collect();
    Ok(Plan::Extend {
        verified,
        last: continuation,
        new,
    })
}

/// Whether the bytes after an earlier journal's checkpoint, its unfinished
/// last line, are no longer an unfinished line of the size it had: `file`
/// is positioned at the checkpoint. That tail is at most one line, so
/// reading it is cheap (and done in a small buffer, however long the line
/// grew); a journal without one costs no read at all.
fn unfinished_line_changed(
    file: &mut File,
    path: &Path,
    cp: &Checkpoint,
    size: u64,
) -> Result<bool> {
    if size != cp.size {
        return Ok(true);
    }
    let mut tail = (&mut *file).take(size - cp.length);
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
        if memchr::memchr(b'\n', &buf[..n]).is_some() {
            return Ok(true);
        }
    }
}

/// Opens a journal for reading.
pub fn open(path: &Path) -> Result<File> {
    File::open(path).context(format_args!("cannot open {}", path.display()))
}
