//! Reading journal lines into the `calls` table, inside the run's
//! transaction.
//!
//! Every complete line must be a valid record; the first that is not ends
//! the run with an error naming its file and line, and the caller rolls the
//! whole transaction back. A repeated event id is accepted only as an exact
//! repeat of the call already indexed (it is then skipped); with different
//! content it is refused.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use rusqlite::{Connection, Statement, ToSql, params};
use sha2::Digest;
use shared::error::{Error, IoContext, Result};
use shared::record::{COLUMN_NAMES, Columns};
use store::hash::Hasher;

use crate::checkpoint::{self, Continuation, Observed, Prefix, Stamp};
use crate::feed::Feed;
use crate::lines::{self, Hashing, Lines};
use crate::many::{Many, PER_ROW};
use crate::row::Batch;
use crate::schema;
use crate::sessions::Numbers;
use crate::windows::Scope;

/// Past this many touched sessions, recomputing every window is cheaper
/// than tracking them (and keeps memory bounded).
const MAX_TOUCHED: usize = 10_000;

/// Rows per message from the reading thread.
const BATCH: usize = 1024;
/// Messages in flight between the two threads.
const QUEUE: usize = 4;
/// Rows per INSERT statement in a bulk load, where no row can conflict.
const ROWS_PER_INSERT: usize = 64;

/// One journal to read.
pub enum Source {
    /// A journal not yet indexed, read from its first byte.
    Whole(PathBuf),
    /// The last indexed journal, verified and positioned at its checkpoint.
    Continue(Box<Continuation>),
}

impl Source {
    /// Where the journal is and its checkpointed prefix, when that prefix
    /// was not hashed yet.
    pub fn deferred(&self) -> Option<(PathBuf, Prefix)> {
        match self {
            Source::Continue(c) if c.deferred => Some((c.path.clone(), c.prefix())),
            _ => None,
        }
    }

    /// About how many bytes there are to read.
    pub fn bytes(&self) -> u64 {
        match self {
            Source::Whole(path) => path.metadata().map_or(0, |m| m.len()),
            Source::Continue(c) => c.stamp.size.saturating_sub(c.checkpoint.length),
        }
    }
}

/// An open journal with what is already indexed of it.
struct Opened {
    path: PathBuf,
    journal_id: Option<i64>,
    file: File,
    stamp: Stamp,
    start: u64,
    lines: u64,
    hasher: Hasher,
    /// The checkpointed bytes before `start`, when not yet hashed.
    prefix: Option<Prefix>,
}

impl Opened {
    fn open(source: Source) -> Result<Opened> {
        Ok(match source {
            Source::Whole(path) => {
                let file = checkpoint::open(&path)?;
                let meta = file
                    .metadata()
                    .context(format_args!("cannot stat {}", path.display()))?;
                Opened {
                    stamp: Stamp::of(&meta),
                    path,
                    journal_id: None,
                    file,
                    start: 0,
                    lines: 0,
                    hasher: Hasher::new(),
                    prefix: None,
                }
            }
            Source::Continue(c) => Opened {
                prefix: c.deferred.then(|| c.prefix()),
                path: c.path,
                journal_id: Some(c.checkpoint.id),
                file: c.file,
                stamp: c.stamp,
                start: c.checkpoint.length,
                lines: c.checkpoint.lines,
                hasher: c.hasher,
            },
        })
    }
}

/// A row's values, as the statements of a [`Loader`] take them: where it
/// was read, its columns in the order of `COLUMN_NAMES`, and the number of
/// its session.
fn columns<'r>(
    journal_id: &'r i64,
    line: &'r u64,
    r: &'r Columns<'_>,
    session_no: &'r i64,
) -> [&'r dyn ToSql; PER_ROW] {
    [
        journal_id,
        line,
        &r.schema,
        &r.event_id,
        &r.session,
        &r.seq,
        &r.origin,
        &r.transport,
        &r.server,
        &r.tool,
        &r.started_at,
        &r.duration_ms,
        &r.advertised,
        &r.args_shape,
        &r.outcome,
        &r.unknown,
        &r.channel,
        &r.code,
        &r.template_id,
        &r.retryable,
        &r.contract_kept,
        &r.contract_at,
        &r.contract_keyword,
        session_no,
    ]
}

/// Inserts calls and checkpoints; counts what it did.
pub struct Loader<'a> {
    conn: &'a Connection,
    db: &'a Path,
    insert: Statement<'a>,
    /// ROWS_PER_INSERT rows at once; bulk loads only.
    insert_many: Option<Many<'a>>,
    existing: Statement<'a>,
    /// Calls inserted (exact repeats are not).
    pub inserted: u64,
    /// Bytes consumed, repeats included.
    pub consumed: u64,
    /// Journals that got their first checkpoint.
    pub journals_added: u64,
    /// The numbers of the sessions of new capture calls.
    touched: Option<HashSet<i64>>,
    sessions: Numbers<'a>,
    /// Every row inserted, for deriving windows off the database.
    feed: Option<Feed>,
    /// The statements of rows replacing the calls under their ids, until
    /// the rows are found to differ from them.
    in_place: Option<InPlace<'a>>,
}

/// A row takes the id it would take in an empty table, and the call under
/// that id is rewritten only where it differs (see [`Loader::new`]).
struct InPlace<'a> {
    next_id: i64,
    one: Statement<'a>,
    many: Many<'a>,
}

impl<'a> InPlace<'a> {
    /// The upserts of one row and of ROWS_PER_INSERT rows, each row led by
    /// its id, over the columns `filled`.
    fn prepare(conn: &'a Connection, filled: &[&str]) -> rusqlite::Result<Self> {
        let set: Vec<String> = filled
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        let differs: Vec<String> = filled
            .iter()
            .map(|c| format!("calls.{c} IS NOT excluded.{c}"))
            .collect();
        let into = format!("INTO calls(id, {})", filled.join(", "));
        let conflict = format!(
            "ON CONFLICT(id) DO UPDATE SET {} WHERE {}",
            set.join(", "),
            differs.join(" OR ")
        );
        let values = format!("({})", ["?"; PER_ROW + 1].join(", "));
        let sql = |rows: usize| {
            format!(
                "INSERT OR FAIL {into} VALUES {} {conflict}",
                vec![values.as_str(); rows].join(", ")
            )
        };
        Ok(InPlace {
            next_id: 1,
            one: conn.prepare(&sql(1))?,
            many: Many::prepare(conn, &sql(ROWS_PER_INSERT), ROWS_PER_INSERT, true)?,
        })
    }
}

impl<'a> Loader<'a> {
    /// A loader; `bulk` when the indexes of `calls` were dropped (see
    /// `bulk.rs`), so repeated event ids are resolved after the load. A
    /// `feed` sees every row in insertion order (rebuilds only: then every
    /// session's windows are derived anew and none needs tracking).
    /// `in_place` (a bulk rebuild that kept the calls it replaces): the
    /// rows take the ids they would take in an empty table, from 1, and a
    /// call already under a row's id is rewritten only where it differs, so
    /// a rebuild that finds what the index holds writes none of it again.
    pub fn new(
        conn: &'a Connection,
        db: &'a Path,
        bulk: bool,
        feed: Option<Feed>,
        in_place: bool,
    ) -> Result<Loader<'a>> {
        let fail = schema::fail(db);
        assert!(bulk || !in_place, "rows replace calls in bulk only");
        // The columns of `calls` a row fills, in the order of `columns`.
        let filled: Vec<&str> = ["journal_id", "line"]
            .into_iter()
            .chain(COLUMN_NAMES)
            .chain(["session_no"])
            .collect();
        let into = format!("INTO calls({})", filled.join(", "));
        let values = format!("({})", ["?"; PER_ROW].join(", "));
        let insert = conn
            .prepare(&format!(
                "INSERT {into} VALUES {values}{}",
                if bulk {
                    ""
                } else {
                    " ON CONFLICT(event_id) DO NOTHING"
                }
            ))
            .map_err(&fail)?;
        // Bound with the same values as `insert` (?1 and ?2, the place, go
        // unused): where the event id (?4) was indexed before, and whether
        // that was this very call.
        let same = COLUMN_NAMES
            .iter()
            .zip(3..)
            .map(|(name, at)| format!("c.{name} IS ?{at}"))
            .collect::<Vec<_>>()
            .join(" AND ");
        let existing = conn
            .prepare(&format!(
                "SELECT j.name, c.line, {same} AND c.session_no = ?{PER_ROW}
                 FROM calls c JOIN journals j ON j.id = c.journal_id
                 WHERE c.event_id = ?4"
            ))
            .map_err(&fail)?;
        let insert_many = if bulk {
            // OR FAIL: a statement of several rows that may abort on a
            // constraint has SQLite copy every page it changes aside first,
            // so that the statement alone can be undone; FAIL leaves the
            // undoing to the run's transaction, which any failure ends.
            let sql = format!(
                "INSERT OR FAIL {into} VALUES {}",
                vec![values; ROWS_PER_INSERT].join(", ")
            );
            Some(Many::prepare(conn, &sql, ROWS_PER_INSERT, false).map_err(&fail)?)
        } else {
            None
        };
        let in_place = match in_place {
            true => Some(InPlace::prepare(conn, &filled).map_err(&fail)?),
            false => None,
        };
        Ok(Loader {
            conn,
            db,
            insert,
            insert_many,
            existing,
            inserted: 0,
            consumed: 0,
            journals_added: 0,
            touched: feed.is_none().then(HashSet::new),
            sessions: Numbers::new(conn, db)?,
            feed,
            in_place,
        })
    }

    /// Reads the complete lines of `source` into `calls` and moves its
    /// checkpoint; returns the bytes it now relies on.
    pub fn load(&mut self, source: Source, lines: &mut Lines) -> Result<Observed> {
        let fail = schema::fail(self.db);
        let Opened {
            path,
            journal_id,
            mut file,
            stamp,
            start,
            lines: lines_before,
            hasher,
            prefix,
        } = Opened::open(source)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let journal_id = match journal_id {
            Some(id) => id,
            None => {
                self.conn
                    .execute(
                        "INSERT INTO journals(name, length, sha256, lines, size) VALUES (?1, 0, x'', 0, 0)",
                        [&name],
                    )
                    .map_err(&fail)?;
                self.journals_added += 1;
                self.conn.last_insert_rowid()
            }
        };
        // Read no further than the size seen at open, so the checkpoint
        // describes one observed state of the file.
        let limit = stamp.size.saturating_sub(start);
        let first = lines_before + 1;
        // Reading, hashing and parsing run on a second thread, inserting on
        // this one; a bounded channel keeps memory flat.
        let (batches, received) = mpsc::sync_channel::<Batch>(QUEUE);
        let (consumed, inserted) = thread::scope(|scope| {
            let path = &path;
            let reader = scope.spawn(move || {
                let mut batch = Batch::with_capacity(BATCH);
                // SHA-256 of the bytes read runs on a third thread.
                let mut hashing = Hashing::start(hasher);
                let read = lines.read(&mut file, path, limit, first, &mut hashing, |n, line| {
                    batch
                        .push(n, line)
                        .map_err(|reason| lines::rejected(path, n, reason))?;
                    if batch.len() == BATCH {
                        let full = std::mem::replace(&mut batch, Batch::with_capacity(BATCH));
                        // The inserter only hangs up after an error of its own.
                        batches.send(full).map_err(|_| Error::rejected("stopped"))?;
                    }
                    Ok(())
                });
                if read.is_ok() && !batch.is_empty() {
                    let _ = batches.send(batch);
                }
                read.map(|consumed| (consumed, hashing.finish()))
            });
            let inserted = received
                .iter()
                .try_for_each(|batch| self.add_batch(journal_id, path, &batch));
            drop(received);
            let consumed = reader
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (consumed, inserted)
        });
        // Rows arrive in order, so an insert error is about an earlier line
        // than any error the reader met after it.
        inserted?;
        let (consumed, hasher) = consumed?;
        let length = start + consumed.bytes;
        let sha256: [u8; 32] = hasher.finalize().into();
        // Past a deferred prefix, the hasher saw only the new lines: the
        // checkpoint gets its hash once the prefix is proven (a hash of
        // zeros matches no journal meanwhile).
        let recorded = match prefix {
            Some(_) => [0; 32],
            None => sha256,
        };
        self.conn
            .execute(
                "UPDATE journals SET length = ?1, sha256 = ?2, lines = ?3, size = ?4 WHERE id = ?5",
                params![
                    length,
                    recorded,
                    lines_before + consumed.lines,
                    stamp.size,
                    journal_id
                ],
            )
            .map_err(&fail)?;
        self.consumed += consumed.bytes;
        Ok(Observed {
            path,
            stamp,
            length,
            sha256,
            prefix,
        })
    }

    /// Inserts a batch of rows from `path`, several per statement when no
    /// conflict can arise, and hands them to the feed. The feed is kept on
    /// this thread: the reading one, parsing and hashing, is the busier.
    fn add_batch(&mut self, journal_id: i64, path: &Path, batch: &Batch) -> Result<()> {
        let rows: Vec<(u64, Columns<'_>)> = batch.rows().collect();
        self.insert_batch(journal_id, path, &rows)?;
        if let Some(feed) = &mut self.feed {
            for (_, row) in &rows {
                feed.push(row)
                    .map_err(|e| Error::io("cannot set calls aside for deriving windows", e))?;
            }
        }
        Ok(())
    }

    fn insert_batch(
        &mut self,
        journal_id: i64,
        path: &Path,
        rows: &[(u64, Columns<'_>)],
    ) -> Result<()> {
        if self.insert_many.is_none() {
            return rows
                .iter()
                .try_for_each(|(n, row)| self.add(journal_id, path, *n, row));
        }
        let mut chunks = rows.chunks_exact(ROWS_PER_INSERT);
        for chunk in &mut chunks {
            self.add_chunk(journal_id, chunk)?;
        }
        chunks
            .remainder()
            .iter()
            .try_for_each(|(n, row)| self.add(journal_id, path, *n, row))
    }

    /// Inserts ROWS_PER_INSERT rows with one statement (bulk loads only).
    fn add_chunk(&mut self, journal_id: i64, chunk: &[(u64, Columns<'_>)]) -> Result<()> {
        let mut numbers = [0; ROWS_PER_INSERT];
        for (n, (_, row)) in numbers.iter_mut().zip(chunk) {
            *n = self.sessions.number(row.session, row.server)?;
        }
        let fail = schema::fail(self.db);
        if let Some(place) = &mut self.in_place {
            place
                .many
                .insert(Some(place.next_id), journal_id, chunk, &numbers)
                .map_err(&fail)?;
            let first = place.next_id;
            place.next_id += chunk.len() as i64;
            // Rows that differ this much are shifted or derived anew, and
            // comparing the rest would only add to rewriting them: the
            // calls from here on are deleted and the rest inserted. At the
            // first rows, all of them go at once (SQLite frees a whole
            // table's pages without reading them), and these rows are
            // inserted again.
            if self.conn.changes() * 2 >= chunk.len() as u64 {
                self.in_place = None;
                if first == 1 {
                    self.conn.execute("DELETE FROM calls", []).map_err(&fail)?;
                    if let Some(many) = &mut self.insert_many {
                        many.insert(None, journal_id, chunk, &numbers)
                            .map_err(&fail)?;
                    }
                } else {
                    self.conn
                        .execute(
                            "DELETE FROM calls WHERE id >= ?1",
                            [first + chunk.len() as i64],
                        )
                        .map_err(&fail)?;
                }
            }
        } else if let Some(many) = &mut self.insert_many {
            many.insert(None, journal_id, chunk, &numbers)
                .map_err(&fail)?;
        }
        self.inserted += chunk.len() as u64;
        for ((_, row), session_no) in chunk.iter().zip(numbers) {
            self.touch(row, session_no);
        }
        Ok(())
    }

    fn add(&mut self, journal_id: i64, path: &Path, number: u64, row: &Columns<'_>) -> Result<()> {
        let fail = schema::fail(self.db);
        let session_no = self.sessions.number(row.session, row.server)?;
        let values = columns(&journal_id, &number, row, &session_no);
        if let Some(place) = &mut self.in_place {
            // No repeat is found here: the event-id index is dropped.
            let id = place.next_id;
            let numbered: Vec<&dyn ToSql> = [&id as &dyn ToSql].into_iter().chain(values).collect();
            place.one.execute(&numbered[..]).map_err(&fail)?;
            place.next_id += 1;
            self.inserted += 1;
            self.touch(row, session_no);
            return Ok(());
        }
        if self.insert.execute(&values[..]).map_err(&fail)? == 0 {
            let (file, at, same): (String, i64, bool) = self
                .existing
                .query_row(&values[..], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(&fail)?;
            if same {
                return Ok(());
            }
            let id = row.event_id.unwrap_or_default();
            return Err(lines::rejected(
                path,
                number,
                format_args!(
                    "event id {id} was already indexed from {file}:{at} with different content"
                ),
            ));
        }
        self.inserted += 1;
        self.touch(row, session_no);
        Ok(())
    }

    /// Remembers the session of a new capture call.
    fn touch(&mut self, row: &Columns<'_>, session_no: i64) {
        let Some(touched) = &mut self.touched else {
            return;
        };
        if !crate::feed::is_traffic(row.origin) {
            return;
        }
        touched.insert(session_no);
        if touched.len() > MAX_TOUCHED {
            self.touched = None;
        }
    }

    /// The id the next row would take, when rows replace calls under
    /// their ids: every call from it on was not replaced.
    pub fn next_id(&self) -> Option<i64> {
        self.in_place.as_ref().map(|place| place.next_id)
    }

    /// The feed of every row inserted, when there is one.
    pub fn take_feed(&mut self) -> Option<Feed> {
        self.feed.take()
    }

    /// The sessions whose windows the new calls may have changed.
    pub fn scope(self) -> Scope {
        match self.touched {
            Some(sessions) => Scope::Sessions(sessions),
            None => Scope::All,
        }
    }
}
