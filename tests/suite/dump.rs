//! Reading a store's databases for comparison: every row that carries
//! evidence, printed as text, without what legitimately differs between two
//! runs over the same input (surrogate row ids, the time of a run).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use proptest::test_runner::TestCaseError;
use rusqlite::{Connection, OpenFlags};
use shared::record::COLUMN_NAMES;

/// A directory for scratch stores: memory-backed where the system has one.
/// The tests that use it run the binaries thousands of times and measure
/// their logic, not the disk's fsync.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("mcpeval-prop-").clone();
    if shm.is_dir()
        && let Ok(dir) = builder.tempdir_in(shm)
    {
        return dir;
    }
    builder.tempdir().unwrap()
}

/// Named sections of rows, as [`rows`] prints them.
pub type Dump = Vec<(&'static str, Vec<String>)>;

/// Every row of `sql`, each as its values joined by `|`.
pub fn rows(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        let mut line = String::new();
        for i in 0..n {
            let v: rusqlite::types::Value = r.get(i)?;
            write!(line, "{v:?}|").unwrap();
        }
        Ok(line)
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

pub fn open(home: &Path) -> Connection {
    Connection::open_with_flags(home.join("index.db"), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Every call, in `id` order: its journal's name, its line, then the
/// columns of the row read from it, in the order of `COLUMN_NAMES`.
pub fn calls_query() -> String {
    let columns = COLUMN_NAMES.map(|name| format!("c.{name}")).join(", ");
    format!(
        "SELECT j.name, c.line, {columns}
         FROM calls c JOIN journals j ON j.id = c.journal_id ORDER BY c.id"
    )
}

/// The evidence an index holds, without what legitimately differs between
/// two runs (surrogate row ids, the time of the run). Calls come in id
/// order, which must be journal order on both sides.
pub fn evidence(home: &Path) -> Dump {
    let conn = open(home);
    vec![
        (
            "journals",
            // The last journal's size is only a hint, read again each run;
            // a run that consumed nothing has no reason to store it.
            rows(
                &conn,
                "SELECT name, length, hex(sha256), lines,
                        CASE WHEN name < (SELECT max(name) FROM journals) THEN size END
                 FROM journals ORDER BY name",
            ),
        ),
        (
            "calls",
            rows(&conn, &calls_query()),
        ),
        (
            "windows",
            rows(
                &conn,
                "SELECT session, server, tool, template_id, open_seq, close_seq, recovered, turns,
                        failures, (SELECT group_concat(tool, ',') FROM
                            (SELECT tool FROM window_tools t WHERE t.window_id = w.id ORDER BY tool))
                 FROM windows w ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10",
            ),
        ),
        (
            "links",
            rows(
                &conn,
                "SELECT a.annotation_id, a.kind, a.status, a.call_id IS NULL, j.name, c.line
                 FROM annotation_links a LEFT JOIN calls c ON c.id = a.call_id
                 LEFT JOIN journals j ON j.id = c.journal_id ORDER BY a.annotation_id",
            ),
        ),
        (
            "state",
            rows(&conn, "SELECT calls, annotations_max_id, annotations_count FROM state"),
        ),
    ]
}

/// The findings and promotion facts, without the time promotion ran.
pub fn findings(home: &Path) -> Dump {
    let conn = open(home);
    vec![
        (
            "findings",
            rows(&conn, "SELECT * FROM findings ORDER BY id"),
        ),
        (
            "promotion",
            rows(
                &conn,
                // A promotion the index made out of date stands for no findings.
                "SELECT scored_as_of, threshold, issues, promoted, one_session, below_threshold
                 FROM promotion WHERE outdated_at IS NULL",
            ),
        ),
    ]
}

/// Everything in index.db, the time of the run included.
pub fn everything(home: &Path) -> Option<(Vec<u8>, Dump)> {
    let path = home.join("index.db");
    if !path.exists() {
        return None;
    }
    let mut all = evidence(home);
    all.extend(findings(home));
    all.push(("raw state", rows(&open(home), "SELECT * FROM state")));
    Some((fs::read(&path).unwrap(), all))
}

/// Names the first section and row where `a` and `b` differ.
pub fn same(
    what: &str,
    a: &[(&'static str, Vec<String>)],
    b: &[(&'static str, Vec<String>)],
) -> Result<(), TestCaseError> {
    for ((name, x), (_, y)) in a.iter().zip(b) {
        if x != y {
            let at = x
                .iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .unwrap_or(x.len().min(y.len()));
            return Err(TestCaseError::fail(format!(
                "{what}: {name} differ at row {at}:\n  incremental: {:?}\n  rebuild:     {:?}\n  ({} vs {} rows)",
                x.get(at),
                y.get(at),
                x.len(),
                y.len()
            )));
        }
    }
    Ok(())
}
