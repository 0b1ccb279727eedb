//! Checkpoints: what each indexed journal held, and whether it still does.
//!
//! A journal's identity is its content: the checkpointed length and the
//! SHA-256 of those bytes. Time stamps never prove a file unchanged; they
//! are used only as a cheap hint that something *did* change during a run,
//! which then triggers a re-hash. Only the last indexed journal may grow,
//! and only journals sorting after it may appear; anything else means the
//! index must be rebuilt, and [`plan`] says why.
//!
//! A last journal that grew changed a moment ago, so its time stamps prove
//! nothing and it is hashed again before the commit whatever happens. Its
//! checkpointed prefix is therefore not hashed when planning: the run reads
//! the new lines, then proves the prefix and the new lines together in the
//! one pass before the commit (see [`Observed::check`]). A prefix that no
//! longer matches its checkpoint then sends the run back to plan again,
//! hashing that prefix first.

use std::fs::{self, File, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;
use sha2::Digest;
use shared::error::{Error, IoContext, Result};
use store::checkpoint::{self, Mark};
use store::hash::Hasher;
use store::journal;

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
/// to `sha256` when the file looked like `stamp`. With a `prefix`, the bytes
/// up to `prefix.length` are still to be proven and `sha256` covers only
/// those after them.
#[derive(Debug)]
pub struct Observed {
    pub path: PathBuf,
    pub stamp: Stamp,
    pub length: u64,
    pub sha256: [u8; 32],
    pub prefix: Option<Prefix>,
}

impl Observed {
    /// Whether the file still starts with the observed bytes. A file whose
    /// stamp proves it untouched answers from `stat` alone; any other is
    /// read and hashed again. A deferred prefix is always read, with what
    /// follows it, in one pass.
    pub fn check(&self, lines: &mut Lines) -> Result<Check> {
        if let Some(prefix) = &self.prefix {
            return self.prove(prefix, lines);
        }
        let meta = match fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Check::Changed),
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot stat {}", self.path.display()),
                    err,
                ));
            }
        };
        if self.stamp.proves_unchanged(&Stamp::of(&meta)) {
            return Ok(Check::Holds);
        }
        let mut file = open(&self.path)?;
        let mut hasher = Hasher::new();
        lines.progress.expect(self.length);
        match lines.hash(&mut file, self.length, &mut [&mut hasher]) {
            Ok(()) if <[u8; 32]>::from(hasher.finalize()) == self.sha256 => Ok(Check::Holds),
            Ok(()) => Ok(Check::Changed),
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => Ok(Check::Changed),
            Err(err) => Err(unreadable(&self.path, err)),
        }
    }

    /// Hashes the checkpointed prefix and the lines read after it: the
    /// prefix must still hash as its checkpoint says, the lines as they did
    /// when they were read. Each byte is read once; the new lines feed two
    /// hashers, one of them carrying on from the prefix.
    fn prove(&self, prefix: &Prefix, lines: &mut Lines) -> Result<Check> {
        // The plan counted the whole file once; the new lines are read again.
        lines.progress.expect(self.length - prefix.length);
        let Some((mut file, mut whole)) = prefix.hash(&self.path, lines)? else {
            return Ok(Check::Unproven);
        };
        let mut tail = Hasher::new();
        match lines.hash(
            &mut file,
            self.length - prefix.length,
            &mut [&mut whole, &mut tail],
        ) {
            Ok(()) if <[u8; 32]>::from(tail.finalize()) == self.sha256 => {
                Ok(Check::Proven(whole.finalize().into()))
            }
            Ok(()) => Ok(Check::Changed),
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => Ok(Check::Changed),
            Err(err) => Err(unreadable(&self.path, err)),
        }
    }

    /// Records the hash a proven prefix check computed in the journal's
    /// checkpoint, which until then holds no valid hash.
    pub fn settle(&self, conn: &Connection, db: &Path, sha256: [u8; 32]) -> Result<()> {
        let Some(prefix) = &self.prefix else {
            return Ok(());
        };
        conn.execute(
            "UPDATE journals SET sha256 = ?1 WHERE id = ?2",
            rusqlite::params![sha256, prefix.journal_id],
        )
        .map_err(schema::fail(db))?;
        Ok(())
    }
}

/// What a journal's check before the commit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// It still starts with the observed bytes.
    Holds,
    /// So does a journal whose prefix was deferred, its first `length`
    /// bytes hashing to this.
    Proven([u8; 32]),
    /// Bytes this run read changed, or the file is gone.
    Changed,
    /// A deferred prefix no longer hashes as its checkpoint says: the plan
    /// must hash it before anything is read.
    Unproven,
}

/// The checkpointed start of a grown journal, not yet hashed by this run.
#[derive(Debug, Clone, Copy)]
pub struct Prefix {
    /// The journal's row in `journals`.
    pub journal_id: i64,
    pub length: u64,
    pub sha256: [u8; 32],
}

impl Prefix {
    /// Whether the file at `path` still starts with this prefix.
    pub fn holds(&self, path: &Path, lines: &mut Lines) -> Result<bool> {
        lines.progress.expect(self.length);
        Ok(self.hash(path, lines)?.is_some())
    }

    /// Hashes the first `length` bytes at `path`: when they match, the
    /// file positioned after them and the hash state there.
    fn hash(&self, path: &Path, lines: &mut Lines) -> Result<Option<(File, Hasher)>> {
        let mut file = match journal::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot open {}", path.display()),
                    err,
                ));
            }
        };
        let mut hasher = Hasher::new();
        match lines.hash(&mut file, self.length, &mut [&mut hasher]) {
            Ok(()) if <[u8; 32]>::from(hasher.clone().finalize()) == self.sha256 => {
                Ok(Some((file, hasher)))
            }
            Ok(()) => Ok(None),
            Err(err) if err.kind() == ErrorKind::UnexpectedEof => Ok(None),
            Err(err) => Err(unreadable(path, err)),
        }
    }
}

fn unreadable(path: &Path, err: std::io::Error) -> Error {
    Error::io(format_args!("cannot read {}", path.display()), err)
}

/// The last indexed journal, verified up to its checkpoint and positioned
/// there, ready for what was appended since.
pub struct Continuation {
    pub checkpoint: Checkpoint,
    pub path: PathBuf,
    pub file: File,
    pub stamp: Stamp,
    /// The hash state after the checkpoint, or a fresh one when the prefix
    /// was `deferred`.
    pub hasher: Hasher,
    /// The checkpointed prefix was not hashed: the run must prove it.
    pub deferred: bool,
}

impl Continuation {
    /// Its checkpointed prefix.
    pub fn prefix(&self) -> Prefix {
        Prefix {
            journal_id: self.checkpoint.id,
            length: self.checkpoint.length,
            sha256: self.checkpoint.sha256,
        }
    }
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
/// `store::checkpoint`, and keeps what this run needs: the stamps of the
/// verified journals, to check again before committing, and the last one
/// open where its checkpoint ends. With `defer`, a last journal that grew
/// comes back with its prefix not yet hashed.
pub fn plan(
    dir: &Path,
    checkpoints: &[Checkpoint],
    files: &[PathBuf],
    lines: &mut Lines,
    defer: bool,
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
    let mut hash =
        |file: &mut File, len: u64, hasher: &mut Hasher| lines.hash(file, len, &mut [hasher]);
    let planned = if defer {
        checkpoint::plan_deferring(dir, &marks, files, "indexed", &mut hash)?
    } else {
        checkpoint::plan(dir, &marks, files, "indexed", &mut hash)?
    };
    let (checked, new) = match planned {
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
                deferred: v.deferred,
            }));
        } else {
            verified.push(Observed {
                path: v.path,
                stamp,
                length: cp.length,
                sha256: cp.sha256,
                prefix: None,
            });
        }
    }
    Ok(Plan::Extend {
        verified,
        last,
        new,
    })
}

/// Opens a journal for reading (never blocking; see `journal::open`).
pub fn open(path: &Path) -> Result<File> {
    journal::open(path).context(format_args!("cannot open {}", path.display()))
}
