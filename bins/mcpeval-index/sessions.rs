//! Arrival numbers of (session, server) pairs: `sessions.id`, the key of
//! the session indexes of `calls` and `windows`.
//!
//! Session tokens are salted hashes, so an index keyed on them puts a new
//! session's rows among full pages of older ones. Numbered in the order
//! they are first read, new sessions land at the end of those indexes.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Statement, params};
use shared::error::Result;

use crate::schema;

/// Pairs remembered between lookups; past this the memory is emptied and
/// lookups go to `sessions_by_name` again. A journal's sessions overlap
/// in time, so the ones still running are soon remembered again.
const KEEP: usize = 4096;

/// Numbers (session, server) pairs, adding the pairs not yet numbered.
pub struct Numbers<'a> {
    conn: &'a Connection,
    db: &'a Path,
    find: Statement<'a>,
    add: Statement<'a>,
    /// Numbers by session, then server; looked up for every row, so
    /// hashed with foldhash, seeded at random (tokens are salted digests,
    /// server names come from servers).
    known: HashMap<String, Vec<(String, i64)>, foldhash::fast::RandomState>,
    kept: usize,
}

impl<'a> Numbers<'a> {
    pub fn new(conn: &'a Connection, db: &'a Path) -> Result<Numbers<'a>> {
        let fail = schema::fail(db);
        Ok(Numbers {
            conn,
            db,
            find: conn
                .prepare("SELECT id FROM sessions WHERE session = ?1 AND server = ?2")
                .map_err(&fail)?,
            add: conn
                // Not `RETURNING id`: SQLite runs that as a trigger, which
                // journals every page the statement changes, in case it
                // must be undone alone.
                .prepare("INSERT INTO sessions(session, server) VALUES (?1, ?2)")
                .map_err(&fail)?,
            known: HashMap::default(),
            kept: 0,
        })
    }

    /// The number of `session` of `server`, numbering it when it is new.
    pub fn number(&mut self, session: &str, server: &str) -> Result<i64> {
        if let Some(servers) = self.known.get(session)
            && let Some((_, n)) = servers.iter().find(|(s, _)| s == server)
        {
            return Ok(*n);
        }
        let fail = schema::fail(self.db);
        let found = self
            .find
            .query_row(params![session, server], |row| row.get(0))
            .optional()
            .map_err(&fail)?;
        let n = match found {
            Some(n) => n,
            None => {
                self.add.execute(params![session, server]).map_err(&fail)?;
                self.conn.last_insert_rowid()
            }
        };
        if self.kept >= KEEP {
            self.known.clear();
            self.kept = 0;
        }
        self.kept += 1;
        self.known
            .entry(session.to_owned())
            .or_default()
            .push((server.to_owned(), n));
        Ok(n)
    }
}
