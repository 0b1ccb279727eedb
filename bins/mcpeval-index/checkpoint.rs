//! Checkpoints: what each indexed journal held, and whether it still does.
//!
//! A journal's identity is its content: the checkpointed length and the
//! SHA-256 of those bytes. Time stamps never prove a file unchanged; they
//! are used only as a cheap hint that something *did* change during a run,
//! which then triggers a re-hash. Only the last indexed journal may grow,
//! and only journals sorting after it may appear; anything else means the
//! index must be rebuilt, and [`plan`] says why.

use std::fs::{self, File, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use sha2::Digest;
use shared::checkpoint::{self, Mark};
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

/// Compares the journals on disk with the checkpoints, by the rules of
/// `shared::checkpoint`, and keeps what this run needs: the stamps of the
/// verified journals, to check again before committing, and the last one
/// open where its checkpoint ends.
pub fn plan(
    dir: &Path,
    checkpoints: &[Checkpoint],
    files: &[PathBuf],
    lines: &mut Lines,
) -> Result<Plan> {
    let marks: Vec<Mark<'_>> = checkpoints
        .iter()
        .map(|c| Mark {
            name: &c.name,
            length: c.length,
            sha256: c.sha256,
            size: c.size,
        })
        .collect();
    let mut hash = |file: &mut File, len: u64, hasher: &mut Hasher| lines.hash(file, len, hasher);
    let (checked, new) = match checkpoint::plan(dir, &marks, files, "indexed", &mut hash)? {
        checkpoint::Plan::Rebuild(reason) => return Ok(Plan::Rebuild(reason)),
        checkpoint::Plan::Extend { verified, new } => (verified, new),
    };
    let mut verified = Vec::with_capacity(checked.len());
    let mut last = None;
    for (cp, v) in checkpoints.iter().zip(checked) {
        let stamp = Stamp::of(&v.meta);
        if cp.name == checkpoints[checkpoints.len() - 1].name {
            last = Some(Box::new(Continuation {
                checkpoint: cp.clone(),
                path: v.path,
                file: v.file,
                stamp,
                hasher: v.hasher,
            }));
        } else {
            verified.push(Observed {
                path: v.path,
                stamp,
                length: cp.length,
                sha256: cp.sha256,
            });
        }
    }
    Ok(Plan::Extend {
        verified,
        last,
        new,
    })
}

/// Opens a journal for reading.
pub fn open(path: &Path) -> Result<File> {
    File::open(path).context(format_args!("cannot open {}", path.display()))
}
