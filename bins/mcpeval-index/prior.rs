//! The calls a rebuild replaces, remembered inside the run's transaction so
//! the summary can say how many calls the index did not hold before.
//!
//! A call is the same call when its event id is; a legacy record, which has
//! none, when its session, server, seq and start time are. Only counting
//! uses this; it must never decide what is indexed.
//!
//! The event ids are read in order from the unique event-id index and
//! written to an unlinked file beside `index.db`; once the new index is
//! built, its ids are read in the same order and merged with the file's.
//! Two sequential scans cost less than copying every id into a temporary
//! table and looking each new one up there, and memory stays flat.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use rusqlite::Connection;
use shared::error::{Error, Result};

use crate::feed;
use crate::schema;

/// Every event id, in index order (SQLite's BINARY collation: bytewise).
const EVENTS: &str = "SELECT event_id FROM calls WHERE event_id IS NOT NULL ORDER BY event_id";

/// Calls `each` with every event id of `calls`, in index order.
fn each_event(
    conn: &Connection,
    db: &Path,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let fail = schema::fail(db);
    let mut stmt = conn.prepare(EVENTS).map_err(&fail)?;
    let mut rows = stmt.query([]).map_err(&fail)?;
    while let Some(row) = rows.next().map_err(&fail)? {
        let id = row
            .get_ref(0)
            .and_then(|v| Ok(v.as_bytes()?))
            .map_err(&fail)?;
        each(id)?;
    }
    Ok(())
}

/// The identities of the replaced calls.
pub struct Prior {
    /// Their event ids in order, each preceded by its length (u32 LE).
    events: File,
}

fn scratch_error(err: io::Error) -> Error {
    Error::io("cannot set the replaced event ids aside for counting", err)
}

/// Remembers the identities of the indexed calls: event ids in a file,
/// legacy identities in a temporary table.
pub fn remember(conn: &Connection, db: &Path) -> Result<Prior> {
    let fail = schema::fail(db);
    conn.execute_batch(
        "DROP TABLE IF EXISTS temp.prior_legacy;
         CREATE TEMP TABLE prior_legacy(session TEXT, server TEXT, seq INTEGER, started_at TEXT,
             PRIMARY KEY (session, server, seq, started_at)) WITHOUT ROWID;
         INSERT OR IGNORE INTO prior_legacy
             SELECT session, server, seq, started_at FROM calls WHERE event_id IS NULL;",
    )
    .map_err(&fail)?;
    let mut file =
        feed::scratch(db.parent().unwrap_or(Path::new(".")), "prior").map_err(scratch_error)?;
    {
        let mut out = BufWriter::with_capacity(1 << 16, &mut file);
        each_event(conn, db, |id| {
            out.write_all(&(id.len() as u32).to_le_bytes())
                .and_then(|()| out.write_all(id))
                .map_err(scratch_error)
        })?;
        out.flush().map_err(scratch_error)?;
    }
    file.rewind().map_err(scratch_error)?;
    Ok(Prior { events: file })
}

/// The remembered event ids, read back in order.
struct Remembered {
    from: BufReader<File>,
    current: Vec<u8>,
    done: bool,
}

impl Remembered {
    fn new(file: File) -> io::Result<Remembered> {
        let mut ids = Remembered {
            from: BufReader::with_capacity(1 << 16, file),
            current: Vec::new(),
            done: false,
        };
        ids.advance()?;
        Ok(ids)
    }

    fn advance(&mut self) -> io::Result<()> {
        let mut len = [0u8; 4];
        match self.from.read_exact(&mut len) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => {
                self.done = true;
                return Ok(());
            }
            Err(err) => return Err(err),
        }
        self.current.resize(u32::from_le_bytes(len) as usize, 0);
        self.from.read_exact(&mut self.current)
    }

    /// Whether `id` was remembered; ids must be asked in order.
    fn holds(&mut self, id: &[u8]) -> io::Result<bool> {
        while !self.done {
            match self.current.as_slice().cmp(id) {
                Ordering::Less => self.advance()?,
                Ordering::Equal => return Ok(true),
                Ordering::Greater => return Ok(false),
            }
        }
        Ok(false)
    }
}

/// How many indexed calls were not among the remembered ones (all of them
/// when nothing was remembered); drops the temporary table.
pub fn count_new(conn: &Connection, db: &Path, prior: Option<Prior>) -> Result<i64> {
    let fail = schema::fail(db);
    let Some(prior) = prior else {
        return conn
            .query_row("SELECT count(*) FROM calls", [], |row| row.get(0))
            .map_err(&fail);
    };
    let mut remembered = Remembered::new(prior.events).map_err(scratch_error)?;
    let mut new = 0i64;
    each_event(conn, db, |id| {
        if !remembered.holds(id).map_err(scratch_error)? {
            new += 1;
        }
        Ok(())
    })?;
    let legacy: i64 = conn
        .query_row(
            "SELECT count(*) FROM calls c WHERE c.event_id IS NULL AND NOT EXISTS
                (SELECT 1 FROM temp.prior_legacy p WHERE p.session = c.session
                    AND p.server = c.server AND p.seq = c.seq AND p.started_at = c.started_at)",
            [],
            |row| row.get(0),
        )
        .map_err(&fail)?;
    conn.execute_batch("DROP TABLE temp.prior_legacy;")
        .map_err(&fail)?;
    Ok(new + legacy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(conn: &Connection, events: &[Option<&str>]) {
        conn.execute_batch("DELETE FROM calls").unwrap();
        for (seq, id) in events.iter().enumerate() {
            conn.execute(
                "INSERT INTO calls(event_id, session, server, seq, started_at)
                 VALUES (?1, 's', 'v', ?2, 't')",
                (id, seq as i64),
            )
            .unwrap();
        }
    }

    /// New calls sort before, between and after the remembered ones, some
    /// remembered ones are gone, one id is a prefix of another, and legacy
    /// calls count by their identity.
    #[test]
    fn counts_the_calls_not_remembered_in_one_merge() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("index.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE calls(id INTEGER PRIMARY KEY, event_id TEXT, session TEXT,
                 server TEXT, seq INTEGER, started_at TEXT);
             CREATE UNIQUE INDEX calls_by_event ON calls(event_id);",
        )
        .unwrap();
        calls(&conn, &[Some("b"), Some("d"), Some("dd"), Some("f"), None]);
        let prior = remember(&conn, &db).unwrap();
        calls(
            &conn,
            &[
                Some("a"),
                Some("b"),
                Some("c"),
                Some("d"),
                None,
                Some("de"),
                Some("g"),
                None,
            ],
        );
        // New: a, c, de, g and the legacy call of seq 7 (seq 4 was there).
        assert_eq!(count_new(&conn, &db, Some(prior)).unwrap(), 5);
        assert_eq!(count_new(&conn, &db, None).unwrap(), 8);
    }
}
