//! The calls a rebuild replaces, remembered inside the run's transaction so
//! the summary can say how many calls the index did not hold before.
//!
//! A call is the same call when its event id is; a legacy record, which has
//! none, when its session, server, seq and start time are. Only counting
//! uses this; it must never decide what is indexed.

use std::path::Path;

use rusqlite::Connection;
use shared::error::Result;

use crate::schema;

/// Copies the identities of the indexed calls into temporary tables.
pub fn remember(conn: &Connection, db: &Path) -> Result<()> {
    conn.execute_batch(
        "DROP TABLE IF EXISTS temp.prior_events;
         DROP TABLE IF EXISTS temp.prior_legacy;
         CREATE TEMP TABLE prior_events(event_id TEXT PRIMARY KEY) WITHOUT ROWID;
         CREATE TEMP TABLE prior_legacy(session TEXT, server TEXT, seq INTEGER, started_at TEXT,
             PRIMARY KEY (session, server, seq, started_at)) WITHOUT ROWID;
         INSERT INTO prior_events SELECT event_id FROM calls WHERE event_id IS NOT NULL;
         INSERT OR IGNORE INTO prior_legacy
             SELECT session, server, seq, started_at FROM calls WHERE event_id IS NULL;",
    )
    .map_err(schema::fail(db))
}

/// How many indexed calls were not among the remembered ones (all of them
/// when nothing was remembered); drops the temporary tables.
pub fn count_new(conn: &Connection, db: &Path, remembered: bool) -> Result<i64> {
    let fail = schema::fail(db);
    if !remembered {
        return conn
            .query_row("SELECT count(*) FROM calls", [], |row| row.get(0))
            .map_err(&fail);
    }
    let new = conn
        .query_row(
            "SELECT
                (SELECT count(*) FROM calls WHERE event_id IS NOT NULL
                    AND event_id NOT IN (SELECT event_id FROM temp.prior_events))
              + (SELECT count(*) FROM calls c WHERE c.event_id IS NULL AND NOT EXISTS
                    (SELECT 1 FROM temp.prior_legacy p WHERE p.session = c.session
                        AND p.server = c.server AND p.seq = c.seq AND p.started_at = c.started_at))",
            [],
            |row| row.get(0),
        )
        .map_err(&fail)?;
    conn.execute_batch("DROP TABLE temp.prior_events; DROP TABLE temp.prior_legacy;")
        .map_err(&fail)?;
    Ok(new)
}
