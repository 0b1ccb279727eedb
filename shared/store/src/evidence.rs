//! The one-time import of index-only verification evidence.
//!
//! Earlier releases kept verification results in `index.db`, in a table
//! `evidence(finding_id, case_id, outcome 'pass'|'fail', recorded_at)`.
//! `index.db` is disposable, so that evidence moves into `lifecycle.db`
//! the first time a command opens it: every row becomes a legacy
//! verification (`legacy = 1`, no binding, no run id), keeping its outcome
//! (pass → green, fail → red) and its time. Legacy runs have no credit
//! binding, so they never take part in a streak and change no finding's
//! state. The import is recorded in `imports` and never runs twice.
//!
//! The old file is only ever read, through a plain read-only connection:
//! this module must never write to, migrate or delete `index.db`. The
//! import is marked done only once an `index.db` was read (with or without
//! the table); while there is none, or it cannot be read, it waits for a
//! later open.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::db;
use shared::error::Result;
use shared::home::Home;
use shared::id::FindingId;

/// The `imports.name` of this import.
pub const IMPORT_NAME: &str = "index-evidence";

/// One row of the old table, as it will be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    finding_id: FindingId,
    case_id: String,
    result: &'static str,
    recorded_at: String,
}

/// Imports the index-only evidence unless that was done before. Returns
/// the number of rows imported now, or `None` when nothing was done.
pub fn import(conn: &mut Connection, home: &Home) -> Result<Option<u64>> {
    let path = home.lifecycle_db();
    if done(conn, path.as_std_path())? {
        return Ok(None);
    }
    let Some(rows) = read(home.index_db().as_std_path()) else {
        return Ok(None);
    };
    db::write(conn, |tx| {
        // Another process may have imported while this one read.
        if done(tx, path.as_std_path())? {
            return Ok(None);
        }
        let fail = |e| db::sql_error(path.as_std_path(), e);
        for row in &rows {
            tx.execute(
                "INSERT INTO verifications(run_id, finding_id, case_id, binding, result, reason,
                     started_at, finished_at, recorded_at, legacy, digest)
                 VALUES (NULL, ?1, ?2, NULL, ?3, NULL, NULL, NULL, ?4, 1, NULL)",
                params![
                    row.finding_id.as_str(),
                    row.case_id,
                    row.result,
                    row.recorded_at
                ],
            )
            .map_err(fail)?;
        }
        tx.execute(
            "INSERT INTO imports(name, at, rows) VALUES (?1, ?2, ?3)",
            params![IMPORT_NAME, shared::time::now_rfc3339(), rows.len() as i64],
        )
        .map_err(fail)?;
        Ok(Some(rows.len() as u64))
    })
}

fn done(conn: &Connection, path: &Path) -> Result<bool> {
    conn.query_row(
        "SELECT 1 FROM imports WHERE name = ?1",
        [IMPORT_NAME],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
    .map_err(|e| db::sql_error(path, e))
}

/// The rows of `evidence` in `index.db`: `None` when there is no file or
/// it cannot be read (the import then waits), an empty list when the file
/// has no such table. Rows without a finding id, case or time, or with an
/// outcome other than `pass` or `fail`, are not evidence and are skipped.
fn read(index: &Path) -> Option<Vec<Row>> {
    if !index.exists() {
        return None;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(index, flags).ok()?;
    crate::fault::watch(&conn);
    conn.busy_timeout(db::BUSY_TIMEOUT).ok()?;
    let has_table = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'evidence'",
            [],
            |_| Ok(()),
        )
        .optional()
        .ok()?
        .is_some();
    if !has_table {
        return Some(Vec::new());
    }
    let mut stmt = conn
        .prepare("SELECT finding_id, case_id, outcome, recorded_at FROM evidence")
        .ok()?;
    let mut rows = stmt.query([]).ok()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ok()? {
        let text = |i| match row.get_ref(i) {
            Ok(ValueRef::Text(bytes)) => std::str::from_utf8(bytes).ok().map(str::to_owned),
            _ => None,
        };
        let result = match text(2).as_deref() {
            Some("pass") => "green",
            Some("fail") => "red",
            _ => continue,
        };
        let finding_id = text(0).and_then(|id| FindingId::parse(&id).ok());
        if let (Some(finding_id), Some(case_id), Some(recorded_at)) = (finding_id, text(1), text(3))
        {
            out.push(Row {
                finding_id,
                case_id,
                result,
                recorded_at,
            });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle;

    fn old_index(home: &Home, rows: &str) {
        crate::dir::ensure(home).unwrap();
        let conn = Connection::open(home.index_db()).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE evidence(finding_id TEXT, case_id TEXT, outcome TEXT, recorded_at TEXT);
             {rows}"
        ))
        .unwrap();
    }

    fn verifications(conn: &Connection) -> Vec<(String, String, String, String, i64)> {
        let mut stmt = conn
            .prepare(
                "SELECT finding_id, case_id, result, recorded_at, legacy FROM verifications
                 WHERE run_id IS NULL AND binding IS NULL ORDER BY id",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    #[test]
    fn imports_once_keeping_outcomes_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        old_index(
            &home,
            "INSERT INTO evidence VALUES ('finding-0123456789abcdef', 'c1', 'pass', '2025-03-01T10:00:00Z');
             INSERT INTO evidence VALUES ('finding-0123456789abcdef', 'c1', 'fail', '2025-03-02T10:00:00Z');
             INSERT INTO evidence VALUES ('finding-0123456789abcdef', 'c1', 'maybe', '2025-03-03T10:00:00Z');
             INSERT INTO evidence VALUES (NULL, 'c1', 'pass', '2025-03-04T10:00:00Z');",
        );
        let before = std::fs::read(home.index_db()).unwrap();
        let conn = lifecycle::open(&home).unwrap();
        let want = vec![
            (
                "finding-0123456789abcdef".to_owned(),
                "c1".to_owned(),
                "green".to_owned(),
                "2025-03-01T10:00:00Z".to_owned(),
                1,
            ),
            (
                "finding-0123456789abcdef".to_owned(),
                "c1".to_owned(),
                "red".to_owned(),
                "2025-03-02T10:00:00Z".to_owned(),
                1,
            ),
        ];
        assert_eq!(verifications(&conn), want);
        let rows: i64 = conn
            .query_row(
                "SELECT rows FROM imports WHERE name = ?1",
                [IMPORT_NAME],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 2);
        // No state changes: legacy evidence never counts.
        assert!(
            lifecycle::states(&conn, home.lifecycle_db())
                .unwrap()
                .is_empty()
        );
        drop(conn);
        assert_eq!(
            std::fs::read(home.index_db()).unwrap(),
            before,
            "index.db untouched"
        );
        let again = lifecycle::open(&home).unwrap();
        assert_eq!(verifications(&again), want, "imported once");
    }

    #[test]
    fn waits_for_an_index_and_marks_a_table_less_one_done() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        let mut conn = lifecycle::open(&home).unwrap();
        assert!(
            !done(&conn, home.lifecycle_db().as_std_path()).unwrap(),
            "no index.db yet"
        );
        old_index(
            &home,
            "INSERT INTO evidence VALUES ('finding-0123456789abcdef', 'c', 'pass', '2025-01-01T00:00:00Z');",
        );
        assert_eq!(import(&mut conn, &home).unwrap(), Some(1));
        assert_eq!(import(&mut conn, &home).unwrap(), None);

        let other = Home::at(&dir.path().join("other"));
        crate::dir::ensure(&other).unwrap();
        Connection::open(other.index_db())
            .unwrap()
            .execute_batch("CREATE TABLE calls(x);")
            .unwrap();
        let conn = lifecycle::open(&other).unwrap();
        assert!(done(&conn, other.lifecycle_db().as_std_path()).unwrap());
        assert!(verifications(&conn).is_empty());
    }
}
