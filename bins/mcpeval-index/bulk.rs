//! Loading many calls at once: the indexes of `calls` are dropped before
//! the load and built again afterwards, by sorting, instead of being
//! updated one random key at a time.
//!
//! Without the unique event-id index, repeated event ids are found after
//! the load and treated exactly as a row-by-row load treats them: an exact
//! repeat of an earlier call is removed, a different call under a known
//! event id rejects the run. Everything happens inside the run's
//! transaction, so a failure restores the indexes with everything else.

use std::path::Path;

use rusqlite::{Connection, ErrorCode};
use shared::error::Result;
use shared::record::COLUMN_NAMES;

use crate::lines;
use crate::schema;

/// The definitions of the indexes of `calls`, dropped.
pub struct Dropped {
    indexes: Vec<String>,
}

/// Drops the indexes of `calls`, remembering their definitions.
pub fn begin(conn: &Connection, db: &Path) -> Result<Dropped> {
    let fail = schema::fail(db);
    let mut stmt = conn
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL")
        .map_err(&fail)?;
    let found: Vec<(String, String)> = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(&fail)?
        .collect::<rusqlite::Result<_>>()
        .map_err(&fail)?;
    for (name, _) in &found {
        conn.execute_batch(&format!("DROP INDEX \"{name}\""))
            .map_err(&fail)?;
    }
    Ok(Dropped {
        indexes: found.into_iter().map(|(_, sql)| sql).collect(),
    })
}

/// Resolves repeated event ids and builds the indexes again; returns how
/// many exact repeats were removed.
pub fn finish(conn: &Connection, db: &Path, journals: &Path, dropped: Dropped) -> Result<u64> {
    let fail = schema::fail(db);
    // The reading threads are done: the sorts may use the other core.
    conn.pragma_update(None, "threads", 1).map_err(&fail)?;
    let mut removed = 0;
    for sql in &dropped.indexes {
        match conn.execute_batch(sql) {
            Ok(()) => {}
            // Only the unique event-id index can fail, and only when an
            // event id repeats: resolve that, then build it again.
            Err(err) if err.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                removed += resolve_repeats(conn, db, journals)?;
                conn.execute_batch(sql).map_err(&fail)?;
            }
            Err(err) => return Err(fail(err)),
        }
    }
    conn.pragma_update(None, "threads", 0).map_err(&fail)?;
    Ok(removed)
}

/// Removes exact repeats of earlier calls, in journal order, and rejects
/// the first repeat whose content differs from the call it repeats.
fn resolve_repeats(conn: &Connection, db: &Path, journals: &Path) -> Result<u64> {
    let fail = schema::fail(db);
    conn.execute_batch("CREATE INDEX temp_calls_repeats ON calls(event_id, id)")
        .map_err(&fail)?;
    let same = COLUMN_NAMES
        .map(|name| format!("first.{name} IS later.{name}"))
        .join(" AND ");
    let mut stmt = conn
        .prepare(&format!(
            "SELECT later.id, lj.name, later.line, fj.name, first.line, later.event_id, {same}
             FROM calls later
             JOIN calls first ON first.id =
                 (SELECT min(id) FROM calls WHERE event_id = later.event_id)
             JOIN journals lj ON lj.id = later.journal_id
             JOIN journals fj ON fj.id = first.journal_id
             WHERE later.event_id IN
                 (SELECT event_id FROM calls WHERE event_id IS NOT NULL
                  GROUP BY event_id HAVING count(*) > 1)
               AND later.id > first.id
             ORDER BY later.id"
        ))
        .map_err(&fail)?;
    let repeats: Vec<(i64, String, i64, String, i64, String, bool)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .map_err(&fail)?
        .collect::<rusqlite::Result<_>>()
        .map_err(&fail)?;
    let removed = repeats.len() as u64;
    for (id, file, line, first_file, first_line, event_id, same) in repeats {
        if !same {
            return Err(lines::rejected(
                &journals.join(&file),
                line as u64,
                format_args!(
                    "event id {event_id} was already indexed from {first_file}:{first_line} with different content"
                ),
            ));
        }
        conn.execute("DELETE FROM calls WHERE id = ?1", [id])
            .map_err(&fail)?;
    }
    conn.execute_batch("DROP INDEX temp_calls_repeats")
        .map_err(&fail)?;
    Ok(removed)
}
