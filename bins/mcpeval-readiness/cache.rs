//! `trends.db`: per-journal daily call and failure counts, kept in step
//! with the journals by the index's own byte rules (`store::checkpoint`).
//!
//! A journal's identity is its content: the cache keeps, per journal, how
//! many bytes it read and their SHA-256, and re-hashes those bytes on every
//! run (time stamps never prove a file unchanged). Only the last cached
//! journal may grow, and only journals sorting after it may appear; any
//! other change throws the cache away and reads everything again. Each
//! refresh is one `BEGIN IMMEDIATE` transaction, so a refused line leaves
//! the cache as it was. The cache holds names and counts, nothing else.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, Transaction, params};
use sha2::Digest;
use shared::error::{Error, IoContext, Result};
use shared::home::Home;
use shared::lines::Line;
use shared::record::{MAX_LINE, Outcome, Record, Unknown};
use store::checkpoint::{self, Mark, file_name};
use store::db::{self, Schema, sql_error};
use store::hash::Hasher;
use store::journal;
use store::lock::LockFile;

/// The migrations of `trends.db`; append new steps, never edit one.
pub const SCHEMA: Schema = Schema {
    name: "trends.db",
    migrations: &[MIGRATION_1],
    page_size: None,
};

const MIGRATION_1: &str = "
-- journals: what the cache read of each journal: `length` bytes (up to the
-- last newline) hashing to `sha256`, holding `lines` lines; `size` is the
-- file's size then (more than `length` while its last line was unfinished).
CREATE TABLE journals(
    name   TEXT PRIMARY KEY,
    length INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    lines  INTEGER NOT NULL,
    size   INTEGER NOT NULL
);
-- daily: captured calls and failures per journal, UTC day, server and tool.
CREATE TABLE daily(
    journal  TEXT NOT NULL,
    day      TEXT NOT NULL,
    server   TEXT NOT NULL,
    tool     TEXT NOT NULL,
    calls    INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    PRIMARY KEY (journal, day, server, tool)
) WITHOUT ROWID;
";

/// Counts of one (day, server, tool), summed over the journals: the same
/// counts a team's database sums over every store's.
pub use team::Daily;

/// What a refresh did, and the counts it leaves.
#[derive(Debug, Default)]
pub struct Refresh {
    /// Why the cache was thrown away and read again, if it was.
    pub rebuilt: Option<String>,
    /// Journals the cache covers.
    pub journals: u64,
    /// Journal bytes read and parsed this run (validation hashing aside).
    pub bytes_read: u64,
    /// Captured calls counted this run.
    pub calls_added: u64,
    /// Every (day, server, tool) with its counts.
    pub daily: Vec<Daily>,
}

impl Refresh {
    /// The counts of a team, which the database sums for every store's
    /// journals: nothing is cached, so every call is counted this run.
    pub fn of_team(team: team::Trends) -> Refresh {
        Refresh {
            rebuilt: None,
            journals: team.journals,
            bytes_read: 0,
            calls_added: team.daily.iter().map(|d| d.calls).sum(),
            daily: team.daily,
        }
    }
}

struct Checkpoint {
    name: String,
    length: u64,
    sha256: Vec<u8>,
    lines: u64,
    size: u64,
}

/// Brings `trends.db` up to date with the journals and reads its counts.
/// A store that does not exist yet has no counts and is not created.
pub fn refresh(home: &Home) -> Result<Refresh> {
    if !home.root().is_dir() {
        return Ok(Refresh::default());
    }
    let journals_dir = home.journals();
    let lock = journals_dir
        .is_dir()
        .then(|| LockFile::open(home.journal_lock().as_std_path()))
        .transpose()?;
    let _guard = lock.as_ref().map(LockFile::shared).transpose()?;
    let files = store::journal::files(journals_dir.as_std_path())?;

    let path = home.trends_db();
    let mut conn = db::open(path.as_std_path(), &SCHEMA)?;
    let mut refresh = Refresh::default();
    db::write(&mut conn, |tx| {
        let checkpoints = load(tx, path.as_std_path())?;
        let mut hashers = BTreeMap::new();
        let reason = if checkpoints.is_empty() {
            None
        } else {
            plan(
                journals_dir.as_std_path(),
                &checkpoints,
                &files,
                &mut hashers,
            )?
        };
        let mut known: BTreeMap<String, Checkpoint> = BTreeMap::new();
        if let Some(reason) = reason {
            tx.execute_batch("DELETE FROM daily; DELETE FROM journals;")
                .map_err(|e| sql_error(&path, e))?;
            hashers.clear();
            refresh.rebuilt = Some(reason);
        } else {
            known = checkpoints
                .into_iter()
                .map(|c| (c.name.clone(), c))
                .collect();
        }
        for file in &files {
            let name = file_name(file);
            let start = known.get(&name);
            let hasher = hashers.remove(&name).unwrap_or_default();
            read_journal(
                tx,
                path.as_std_path(),
                file,
                &name,
                start,
                hasher,
                &mut refresh,
            )?;
        }
        Ok(())
    })?;
    refresh.journals = files.len() as u64;
    refresh.daily = counts(&conn, path.as_std_path())?;
    Ok(refresh)
}

fn load(conn: &Connection, path: &Path) -> Result<Vec<Checkpoint>> {
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare("SELECT name, length, sha256, lines, size FROM journals ORDER BY name")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Checkpoint {
                name: r.get(0)?,
                length: r.get(1)?,
                sha256: r.get(2)?,
                lines: r.get(3)?,
                size: r.get(4)?,
            })
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// Checks every cached journal against the disk by the index's rules
/// (`store::checkpoint`); `Some(reason)` when the cache must be rebuilt.
/// The hash state after each verified prefix is kept in `hashers`, so the
/// last journal's growth is hashed once.
fn plan(
    dir: &Path,
    checkpoints: &[Checkpoint],
    files: &[PathBuf],
    hashers: &mut BTreeMap<String, Hasher>,
) -> Result<Option<String>> {
    let marks: Vec<Mark<'_>> = checkpoints
        .iter()
        .map(|c| Mark {
            name: &c.name,
            length: c.length,
            // A damaged hash column cannot match any content.
            sha256: c.sha256.as_slice().try_into().unwrap_or([0; 32]),
            size: c.size,
        })
        .collect();
    let mut hash = |file: &mut File, len: u64, hasher: &mut Hasher| hash_prefix(file, len, hasher);
    match checkpoint::plan(dir, &marks, files, "cached", &mut hash)? {
        checkpoint::Plan::Rebuild(reason) => Ok(Some(reason)),
        checkpoint::Plan::Extend { verified, .. } => {
            for (cp, v) in checkpoints.iter().zip(verified) {
                hashers.insert(cp.name.clone(), v.hasher);
            }
            Ok(None)
        }
    }
}

fn hash_prefix(file: &mut File, len: u64, hasher: &mut Hasher) -> std::io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(ErrorKind::UnexpectedEof.into());
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}

/// Reads the complete lines of `file` after `start` (all of it when
/// `None`), adds their counts and moves the checkpoint.
fn read_journal(
    tx: &Transaction,
    db: &Path,
    file: &Path,
    name: &str,
    start: Option<&Checkpoint>,
    mut hasher: Hasher,
    refresh: &mut Refresh,
) -> Result<()> {
    let (offset, first_line) = start.map_or((0, 0), |c| (c.length, c.lines));
    let mut f = journal::open(file).context(format_args!("cannot open {}", file.display()))?;
    let size = f
        .metadata()
        .context(format_args!("cannot stat {}", file.display()))?
        .len();
    if start.is_some_and(|c| c.size == size && c.length == size) {
        return Ok(());
    }
    f.seek(SeekFrom::Start(offset))
        .context(format_args!("cannot read {}", file.display()))?;
    // Line by line, each held only up to the record limit: a huge line is
    // measured and refused, never read into memory.
    let mut lines = journal::lines(&mut f);
    let mut counts: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
    let mut number = first_line;
    while let Some(line) = lines
        .next_line()
        .context(format_args!("cannot read {}", file.display()))?
    {
        number += 1;
        let rejected = |why: &dyn std::fmt::Display| {
            Error::rejected(format!("{}:{number}: {why}", file.display())).with_hint(
                "trends.db was left unchanged; repair that line (or move the journal out of journals/), then run `mcpeval readiness` again",
            )
        };
        let line = match line {
            Line::Complete(line) => line,
            Line::Oversized(len) => {
                return Err(rejected(&format_args!(
                    "oversized record: the line is {len} bytes, over the limit of {MAX_LINE}"
                )));
            }
        };
        hasher.update(line);
        hasher.update(b"\n");
        let record = Record::parse(line).map_err(|why| rejected(&why))?;
        if !record.origin().is_traffic() {
            continue;
        }
        let Some(day) =
            shared::time::parse(record.started_at()).map(|t| t.strftime("%Y-%m-%d").to_string())
        else {
            continue;
        };
        let failed = match record.outcome() {
            Outcome::Error => true,
            Outcome::Unknown => record.unknown() == Some(Unknown::Malformed),
            Outcome::Ok => false,
        };
        let entry = counts
            .entry((day, record.server().to_owned(), record.tool().to_owned()))
            .or_default();
        entry.0 += 1;
        entry.1 += u64::from(failed);
        refresh.calls_added += 1;
    }
    let complete = lines.consumed();
    refresh.bytes_read += complete;

    let fail = |e| sql_error(db, e);
    let mut upsert = tx
        .prepare_cached(
            "INSERT INTO daily(journal, day, server, tool, calls, failures) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(journal, day, server, tool)
             DO UPDATE SET calls = calls + excluded.calls, failures = failures + excluded.failures",
        )
        .map_err(fail)?;
    for ((day, server, tool), (calls, failures)) in counts {
        upsert
            .execute(params![name, day, server, tool, calls, failures])
            .map_err(fail)?;
    }
    tx.execute(
        "INSERT INTO journals(name, length, sha256, lines, size) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(name) DO UPDATE SET length = excluded.length, sha256 = excluded.sha256,
            lines = excluded.lines, size = excluded.size",
        params![
            name,
            offset + complete,
            hasher.finalize().as_slice(),
            number,
            size
        ],
    )
    .map_err(fail)?;
    Ok(())
}

fn counts(conn: &Connection, path: &Path) -> Result<Vec<Daily>> {
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT day, server, tool, sum(calls), sum(failures) FROM daily
             GROUP BY day, server, tool ORDER BY server, tool, day",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Daily {
                day: r.get(0)?,
                server: r.get(1)?,
                tool: r.get(2)?,
                calls: r.get(3)?,
                failures: r.get(4)?,
            })
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}
