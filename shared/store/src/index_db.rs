//! `index.db`: the derived database, and the contract between `index`,
//! which writes it, and the stages that read it (`annotate`, `promote`,
//! `findings`, `serve`).
//!
//! Everything in it can be rebuilt from the journals and `lifecycle.db`, so
//! its tables carry no foreign keys and are always rewritten together in
//! one transaction. It never holds annotation notes, salt or raw values.
//! Later stages add their derived tables as further migrations here, so
//! that one `user_version` describes the whole file.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::db::{self, Schema};
use crate::lifecycle::Target;
use shared::error::{Error, Result};
use shared::finding::DefectClass;
use shared::home::Home;

/// The migrations of `index.db`; append new steps, never edit a released one.
pub const SCHEMA: Schema = Schema {
    name: "index.db",
    migrations: &[
        MIGRATION_1,
        CATALOG_MIGRATION,
        OUTDATED_MIGRATION,
        WINDOW_RANGES_MIGRATION,
        SESSION_ORDER_MIGRATION,
        TRAFFIC_MIGRATION,
        CONTRACT_MIGRATION,
    ],
    // Large pages make the bulk work of building the index cheaper: fewer
    // pages to balance, sort into and write through the WAL.
    page_size: Some(16384),
};

/// The `findings` and `promotion` tables, added to index.db as its second
/// migration; `index` empties both whenever the calls change, so readers
/// never see findings of evidence that is gone.
const CATALOG_MIGRATION: &str = "
-- findings: one row per promoted finding of the last promote run.
-- err_codes and args_shapes are JSON arrays; retryable is 1, 0 or NULL.
CREATE TABLE findings(
    id                  TEXT PRIMARY KEY,
    kind                TEXT NOT NULL,
    server              TEXT NOT NULL,
    tool                TEXT NOT NULL,
    template_id         TEXT,
    defect_class        TEXT NOT NULL,
    score               REAL NOT NULL,
    failures            INTEGER NOT NULL,
    calls               INTEGER NOT NULL,
    failure_rate        REAL NOT NULL,
    wilson_lower        REAL NOT NULL,
    sessions            INTEGER NOT NULL,
    first_seen          TEXT NOT NULL,
    last_seen           TEXT NOT NULL,
    median_window_turns REAL NOT NULL,
    blast_radius        INTEGER NOT NULL,
    err_code            INTEGER,
    err_codes           TEXT NOT NULL,
    retryable           INTEGER,
    args_shapes         TEXT NOT NULL
);
-- promotion: one row describing the last promote run; none when promote
-- never ran on this index.
CREATE TABLE promotion(
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    promoted_at     TEXT NOT NULL,
    scored_as_of    TEXT NOT NULL,
    threshold       REAL NOT NULL,
    issues          INTEGER NOT NULL,
    promoted        INTEGER NOT NULL,
    one_session     INTEGER NOT NULL,
    below_threshold INTEGER NOT NULL
);
";

/// The third migration of index.db: `promotion.outdated_at`, set by
/// `index` (see [`crate::catalog::clear`]) when the evidence changed after
/// that promote run, so readers tell "out of date" from "never promoted".
const OUTDATED_MIGRATION: &str = "
-- promotion.outdated_at: RFC 3339 time `index` changed the calls or
-- annotation links after this promote run (and dropped its findings);
-- NULL while the findings are current.
ALTER TABLE promotion ADD COLUMN outdated_at TEXT;
";

/// Tables of the index (each documented in its SQL comment): the journal
/// checkpoints, the calls, failure windows with their tools, annotation
/// links, the completion state, and views the promotion stage reads.
const MIGRATION_1: &str = "
-- journals: the checkpoints, one row per journal file the index covers.
-- `length` bytes (up to and including the last newline read) were consumed
-- and hash to `sha256`; they held `lines` complete lines. `size` is the
-- file's size when it was read: more than `length` when the last line had
-- no newline yet, which is left for a later run.
CREATE TABLE journals(
    id     INTEGER PRIMARY KEY,
    name   TEXT NOT NULL UNIQUE,
    length INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    lines  INTEGER NOT NULL,
    size   INTEGER NOT NULL
);

-- calls: one row per indexed record, `id` in journal order (file name, then
-- line). Every field of the record is kept: `schema` is 1 or 0 (legacy);
-- `event_id` is the lower-case UUID, NULL for legacy records; `started_at`
-- is RFC 3339 UTC with milliseconds (legacy: `ts`); booleans are 0/1;
-- `args_shape` is canonical JSON (sorted keys, no spaces); `unknown` is
-- 'malformed' or 'unanswered' beside outcome 'unknown'; `channel`, `code`,
-- `template_id` and `retryable` come from the error object (legacy:
-- `err_code` is `code`, `channel` is NULL). Legacy records count as origin
-- 'capture' with no transport. `journal_id` and `line` say where it was read.
CREATE TABLE calls(
    id          INTEGER PRIMARY KEY,
    journal_id  INTEGER NOT NULL,
    line        INTEGER NOT NULL,
    schema      INTEGER NOT NULL,
    event_id    TEXT,
    session     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    origin      TEXT NOT NULL,
    transport   TEXT,
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    duration_ms INTEGER,
    advertised  INTEGER,
    args_shape  TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    unknown     TEXT,
    channel     TEXT,
    code        INTEGER,
    template_id TEXT,
    retryable   INTEGER
);
-- A large load may drop the indexes of calls and build them again from
-- their definitions in sqlite_master, by sorting, which is much faster.
CREATE UNIQUE INDEX calls_by_event ON calls(event_id);
CREATE INDEX calls_by_session ON calls(session, server, seq);

-- windows: failure windows over capture calls (probe calls never count).
-- In one session of one server, a window of group (server, tool,
-- template_id) opens at a failed call of the group and closes at the next
-- ok call to the same (server, tool) (`recovered` = 1), or at the session's
-- last call (`recovered` = 0). Failures of the group inside an open window
-- extend it; `failures` counts them. `turns` = close_seq - open_seq, plus 1
-- when unrecovered.
CREATE TABLE windows(
    id          INTEGER PRIMARY KEY,
    session     TEXT NOT NULL,
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    template_id TEXT,
    open_seq    INTEGER NOT NULL,
    close_seq   INTEGER NOT NULL,
    recovered   INTEGER NOT NULL,
    turns       INTEGER NOT NULL,
    failures    INTEGER NOT NULL
);
CREATE INDEX windows_by_group ON windows(server, tool, template_id);
CREATE INDEX windows_by_session ON windows(session, server);

-- window_tools: the distinct tools with an error call inside a window's
-- seq range (its own tool included); the blast radius of a group is the
-- number of distinct tools over all its windows (view group_blast).
CREATE TABLE window_tools(
    window_id INTEGER NOT NULL,
    tool      TEXT NOT NULL,
    PRIMARY KEY (window_id, tool)
) WITHOUT ROWID;

-- annotation_links: every lifecycle.db annotation and what its target
-- resolved to. `status` is 'linked' (exactly one call matched; `call_id`
-- is set), 'unknown' (none) or 'ambiguous' (legacy coordinates that
-- several calls share). Notes are never copied here.
CREATE TABLE annotation_links(
    annotation_id INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL,
    call_id       INTEGER
);
CREATE INDEX annotation_links_by_call ON annotation_links(call_id);

-- state: one row, written by every successful run in the same transaction
-- as the data. No row means the index is missing or incomplete. The
-- annotation high-water mark (largest id, count) tells the next run whether
-- lifecycle.db's annotations changed since the links were computed.
CREATE TABLE state(
    id                 INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_at         TEXT NOT NULL,
    calls              INTEGER NOT NULL,
    annotations_max_id INTEGER NOT NULL,
    annotations_count  INTEGER NOT NULL
);

-- call_annotations: each (call, kind) once, however often it was annotated.
CREATE VIEW call_annotations AS
    SELECT DISTINCT call_id, kind FROM annotation_links WHERE status = 'linked';

-- false_success_calls: ok capture calls with a linked false-success
-- annotation, each call once: the false-success groups' evidence.
CREATE VIEW false_success_calls AS
    SELECT c.* FROM calls c
    WHERE c.origin = 'capture' AND c.outcome = 'ok'
      AND c.id IN (SELECT call_id FROM call_annotations WHERE kind = 'false-success');

-- group_blast: per error group, its windows and blast radius.
CREATE VIEW group_blast AS
    SELECT w.server, w.tool, w.template_id,
           count(DISTINCT w.id) AS windows,
           count(DISTINCT t.tool) AS blast_radius
    FROM windows w JOIN window_tools t ON t.window_id = w.id
    GROUP BY w.server, w.tool, w.template_id;
";

/// Windows keep the rows of their first and last call, and the tools
/// failing inside a window are read from the calls in that range instead
/// of being stored: one long failure over many tools made that list grow
/// with the square of the calls. The windows already stored lack the new
/// columns, so the index is marked incomplete and the next `index` run
/// rebuilds it from the journals.
const WINDOW_RANGES_MIGRATION: &str = "
DROP VIEW group_blast;
DROP TABLE window_tools;
DELETE FROM windows;
DELETE FROM state;

-- windows.open_call / close_call: the calls.id of the window's opening
-- failure and of its closing call (the recovering ok, or the session's
-- last capture call). The window's calls are those of its session and
-- server from (open_seq, open_call) to (close_seq, close_call) in
-- (seq, id) order, a range of calls_by_session.
ALTER TABLE windows ADD COLUMN open_call INTEGER NOT NULL DEFAULT 0;
ALTER TABLE windows ADD COLUMN close_call INTEGER NOT NULL DEFAULT 0;

-- window_tools: the distinct tools with an error capture call inside a
-- window (its own tool included); the blast radius of a group is the
-- number of distinct tools over all its windows (view group_blast). Both
-- are for inspection: a join per window, slow for long windows. promote
-- counts the same in one pass over the calls.
CREATE VIEW window_tools AS
    SELECT DISTINCT w.id AS window_id, c.tool AS tool
    FROM windows w JOIN calls c
      ON c.session = w.session AND c.server = w.server
     AND c.seq BETWEEN w.open_seq AND w.close_seq
     AND (c.seq, c.id) >= (w.open_seq, w.open_call)
     AND (c.seq, c.id) <= (w.close_seq, w.close_call)
    WHERE c.origin = 'capture' AND c.outcome = 'error';

CREATE VIEW group_blast AS
    SELECT w.server, w.tool, w.template_id,
           count(DISTINCT w.id) AS windows,
           count(DISTINCT t.tool) AS blast_radius
    FROM windows w JOIN window_tools t ON t.window_id = w.id
    GROUP BY w.server, w.tool, w.template_id;
";

/// Sessions are numbered in the order they arrive, and the session
/// indexes of calls and windows are on that number. Session tokens are
/// salted hashes, so keys made of them put a new session's calls among
/// full pages of older ones, which split: an append wrote more pages of
/// the session index than of the calls themselves. With arrival numbers,
/// new sessions land at the index's end. The stored rows lack the
/// numbers, so the index is marked incomplete and the next `index` run
/// rebuilds it from the journals.
const SESSION_ORDER_MIGRATION: &str = "
DROP VIEW group_blast;
DROP VIEW window_tools;
DROP INDEX calls_by_session;
DROP INDEX windows_by_session;
DELETE FROM windows;
DELETE FROM state;

-- sessions: each (session, server) pair the index holds calls of, `id`
-- in the order the pairs were first read (file name, then line). The
-- number means nothing beyond this index.db and may change with a
-- rebuild.
CREATE TABLE sessions(
    id      INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    server  TEXT NOT NULL
);
CREATE UNIQUE INDEX sessions_by_name ON sessions(session, server);

-- calls.session_no: the sessions.id of the call's (session, server).
-- calls_by_session orders a session's calls by seq, ties in row order.
ALTER TABLE calls ADD COLUMN session_no INTEGER NOT NULL DEFAULT 0;
CREATE INDEX calls_by_session ON calls(session_no, seq);

-- windows.session_no: the sessions.id of the window's (session, server).
ALTER TABLE windows ADD COLUMN session_no INTEGER NOT NULL DEFAULT 0;
CREATE INDEX windows_by_session ON windows(session_no);

-- window_tools and group_blast: as before, over calls_by_session.
CREATE VIEW window_tools AS
    SELECT DISTINCT w.id AS window_id, c.tool AS tool
    FROM windows w JOIN calls c
      ON c.session_no = w.session_no
     AND c.seq BETWEEN w.open_seq AND w.close_seq
     AND (c.seq, c.id) >= (w.open_seq, w.open_call)
     AND (c.seq, c.id) <= (w.close_seq, w.close_call)
    WHERE c.origin = 'capture' AND c.outcome = 'error';

CREATE VIEW group_blast AS
    SELECT w.server, w.tool, w.template_id,
           count(DISTINCT w.id) AS windows,
           count(DISTINCT t.tool) AS blast_radius
    FROM windows w JOIN window_tools t ON t.window_id = w.id
    GROUP BY w.server, w.tool, w.template_id;
";

/// Calls reported by OpenTelemetry spans (origin `otel`) are real traffic
/// as captured calls are: the views over traffic take both. Views hold no
/// rows, so nothing is rebuilt.
const TRAFFIC_MIGRATION: &str = "
DROP VIEW group_blast;
DROP VIEW window_tools;
DROP VIEW false_success_calls;

-- false_success_calls: ok traffic calls (captured or traced) with a
-- linked false-success annotation, each call once.
CREATE VIEW false_success_calls AS
    SELECT c.* FROM calls c
    WHERE c.origin IN ('capture', 'otel') AND c.outcome = 'ok'
      AND c.id IN (SELECT call_id FROM call_annotations WHERE kind = 'false-success');

-- window_tools and group_blast: as before, over traffic calls.
CREATE VIEW window_tools AS
    SELECT DISTINCT w.id AS window_id, c.tool AS tool
    FROM windows w JOIN calls c
      ON c.session_no = w.session_no
     AND c.seq BETWEEN w.open_seq AND w.close_seq
     AND (c.seq, c.id) >= (w.open_seq, w.open_call)
     AND (c.seq, c.id) <= (w.close_seq, w.close_call)
    WHERE c.origin IN ('capture', 'otel') AND c.outcome = 'error';

CREATE VIEW group_blast AS
    SELECT w.server, w.tool, w.template_id,
           count(DISTINCT w.id) AS windows,
           count(DISTINCT t.tool) AS blast_radius
    FROM windows w JOIN window_tools t ON t.window_id = w.id
    GROUP BY w.server, w.tool, w.template_id;
";

/// The seventh migration of index.db: each call's verdict on its tool's
/// declared `outputSchema` (the record's `contract`).
const CONTRACT_MIGRATION: &str = "
-- calls.contract_kept: for an ok call to a tool that declared an
-- outputSchema, 1 when the result kept it, 0 when not; NULL when no
-- schema was declared (and in records written before the check).
-- contract_at and contract_keyword: where and by which keyword a broken
-- contract first broke, as the record's contract.at and contract.keyword.
ALTER TABLE calls ADD COLUMN contract_kept INTEGER;
ALTER TABLE calls ADD COLUMN contract_at TEXT;
ALTER TABLE calls ADD COLUMN contract_keyword TEXT;
";

/// What the last complete indexing run recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// When it committed, RFC 3339 UTC.
    pub indexed_at: String,
    /// Calls the index holds.
    pub calls: i64,
    /// `(largest id, count)` of lifecycle.db's annotations when linked.
    pub annotations: (i64, i64),
}

/// The `state` row; `None` when no indexing run ever completed.
pub fn state(conn: &Connection, path: &Path) -> Result<Option<State>> {
    conn.query_row(
        "SELECT indexed_at, calls, annotations_max_id, annotations_count FROM state WHERE id = 1",
        [],
        |row| {
            Ok(State {
                indexed_at: row.get(0)?,
                calls: row.get(1)?,
                annotations: (row.get(2)?, row.get(3)?),
            })
        },
    )
    .optional()
    .map_err(|e| db::sql_error(path, e))
}

/// Opens a complete index for reading. A missing, damaged, foreign or
/// incomplete `index.db` is "evidence unavailable" (status 3), with what to
/// run next.
pub fn open_complete(home: &Home) -> Result<Connection> {
    let path = home.index_db();
    let rebuild = "index.db is derived from the journals: `mcpeval index --rebuild` recreates it";
    let conn = match db::open_existing(path.as_std_path(), &SCHEMA) {
        Ok(Some(conn)) => conn,
        Ok(None) => {
            return Err(
                Error::unavailable(format!("no index yet: {} does not exist", path))
                    .with_hint("run `mcpeval index` first"),
            );
        }
        Err(err) if err.status() == shared::exit::UNAVAILABLE => return Err(err.with_hint(rebuild)),
        Err(err) => return Err(err),
    };
    require_state(&conn, path.as_std_path())?;
    Ok(conn)
}

/// Checks that an indexing run completed (status 3 when none did). A
/// writer that read the index before its transaction checks again inside.
pub fn require_state(conn: &Connection, path: &Path) -> Result<State> {
    let rebuild = "index.db is derived from the journals: `mcpeval index --rebuild` recreates it";
    match state(conn, path) {
        Ok(Some(state)) => Ok(state),
        Ok(None) => Err(Error::unavailable(format!(
            "{} is incomplete: no indexing run has finished",
            path.display()
        ))
        .with_hint("run `mcpeval index`")),
        Err(err) => Err(err.with_hint(rebuild)),
    }
}

/// How an annotation's target resolves against the indexed calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Exactly one call has the target: its `calls.id`.
    Linked(i64),
    /// No indexed call has it (yet).
    Unknown,
    /// Several calls share the legacy coordinates; they never link.
    Ambiguous,
}

impl Link {
    /// The `annotation_links.status` text.
    pub fn status(self) -> &'static str {
        match self {
            Link::Linked(_) => "linked",
            Link::Unknown => "unknown",
            Link::Ambiguous => "ambiguous",
        }
    }
}

/// Resolves `target`: an event id links when exactly one call has it;
/// legacy coordinates (session, seq) only when exactly one indexed call,
/// across every server and capture, has them.
pub fn resolve(conn: &Connection, path: &Path, target: &Target) -> Result<Link> {
    let fail = |e| db::sql_error(path, e);
    let ids = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<Vec<i64>> {
        let mut stmt = conn.prepare_cached(sql).map_err(fail)?;
        let rows = stmt.query_map(params, |row| row.get(0)).map_err(fail)?;
        rows.collect::<rusqlite::Result<_>>().map_err(fail)
    };
    let found = match target {
        Target::EventId(id) => ids(
            "SELECT id FROM calls WHERE event_id = ?1 LIMIT 2",
            &[&id.as_str()],
        )?,
        Target::Coordinates { session, seq } => ids(
            "SELECT id FROM calls WHERE session_no IN (SELECT id FROM sessions WHERE session = ?1)
               AND seq = ?2 LIMIT 2",
            &[&session.as_str(), &i64::try_from(*seq).unwrap_or(i64::MAX)],
        )?,
    };
    Ok(match found[..] {
        [] => Link::Unknown,
        [id] => Link::Linked(id),
        _ => Link::Ambiguous,
    })
}

/// What the store knows about a finding that a probe needs.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingFacts {
    /// Failures over calls of the finding's (server, tool).
    pub failure_rate: Option<f64>,
    /// The finding's class, when it is one this release knows.
    pub defect_class: Option<DefectClass>,
    /// The server the finding is about.
    pub server: Option<String>,
    /// The tool the finding is about.
    pub tool: Option<String>,
    /// The kind of group it stands for.
    pub kind: Option<shared::finding::Kind>,
    /// Every error code of its failures; `None` when the row has none
    /// that reads as a list of codes.
    pub err_codes: Option<Vec<i64>>,
}

/// Reads the finding's row from `index.db`'s `findings` table, if both exist.
/// The index is derived and may predate promotion: a missing file, table
/// or row is `None`; a damaged database is an error (status 3).
pub fn finding_facts(home: &Home, finding: &str) -> Result<Option<FindingFacts>> {
    let path = home.index_db();
    if !path.exists() {
        return Ok(None);
    }
    let fail = |e: rusqlite::Error| {
        Error::unavailable(format!("{}: cannot read findings: {e}", path))
            .with_hint("rebuild the index with `mcpeval index --rebuild` and `mcpeval promote`")
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = rusqlite::Connection::open_with_flags(&path, flags).map_err(fail)?;
    crate::fault::watch(&conn);
    conn.busy_timeout(crate::db::BUSY_TIMEOUT).map_err(fail)?;
    let mut columns = Vec::new();
    {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info('findings')")
            .map_err(fail)?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(fail)?;
        for name in rows {
            columns.push(name.map_err(fail)?);
        }
    }
    if !columns.iter().any(|c| c == "id") {
        return Ok(None);
    }
    let pick = |name: &str| {
        if columns.iter().any(|c| c == name) {
            name.to_owned()
        } else {
            "NULL".to_owned()
        }
    };
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, {} FROM findings WHERE id = ?1",
        pick("failure_rate"),
        pick("defect_class"),
        pick("server"),
        pick("tool"),
        pick("kind"),
        pick("err_codes")
    );
    type Row = (
        Option<f64>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = conn
        .query_row(&sql, [finding], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
            ))
        })
        .optional()
        .map_err(fail)?;
    Ok(row.map(
        |(failure_rate, class, server, tool, kind, codes)| FindingFacts {
            failure_rate: failure_rate.filter(|p| p.is_finite()),
            defect_class: class.as_deref().and_then(DefectClass::parse),
            server: server.filter(|s| !s.is_empty()),
            tool: tool.filter(|t| !t.is_empty()),
            kind: kind.as_deref().and_then(shared::finding::Kind::parse),
            err_codes: codes.and_then(|text| serde_json::from_str(&text).ok()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        (dir, home)
    }

    #[test]
    fn tells_missing_and_incomplete_from_complete() {
        let (_dir, home) = store();
        let missing = open_complete(&home).unwrap_err();
        assert_eq!(missing.status(), shared::exit::UNAVAILABLE);
        assert!(missing.message().starts_with("no index yet"), "{missing}");

        let conn = db::open(home.index_db(), &SCHEMA).unwrap();
        let incomplete = open_complete(&home).unwrap_err();
        assert_eq!(incomplete.status(), shared::exit::UNAVAILABLE);
        assert!(
            incomplete
                .message()
                .ends_with("is incomplete: no indexing run has finished"),
            "{incomplete}"
        );

        conn.execute(
            "INSERT INTO state(id, indexed_at, calls, annotations_max_id, annotations_count)
             VALUES (1, '2026-11-30T07:00:00.000Z', 0, 0, 0)",
            [],
        )
        .unwrap();
        let empty = open_complete(&home).unwrap();
        let state = state(&empty, home.index_db().as_std_path())
            .unwrap()
            .unwrap();
        assert_eq!((state.calls, state.annotations), (0, (0, 0)));
    }

    #[test]
    fn the_calls_table_holds_a_row_s_columns_in_order() {
        let (_dir, home) = store();
        let conn = db::open(home.index_db(), &SCHEMA).unwrap();
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info('calls') ORDER BY cid")
            .unwrap();
        let names: Vec<String> = stmt
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        // Where the call was read, the row, and its session's number.
        // The contract columns came after the session number.
        let mut want = vec!["id", "journal_id", "line"];
        let (before, contract) = shared::record::COLUMN_NAMES.split_at(18);
        want.extend(before);
        want.push("session_no");
        want.extend(contract);
        assert_eq!(names, want);
    }

    #[test]
    fn legacy_coordinates_resolve_only_when_unique() {
        let (_dir, home) = store();
        let conn = db::open(home.index_db(), &SCHEMA).unwrap();
        let add = |event: Option<&str>, server: &str, seq: i64| {
            conn.execute(
                "INSERT OR IGNORE INTO sessions(session, server) VALUES ('s-0000000000000001', ?1)",
                [server],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO calls(journal_id, line, schema, event_id, session, seq, origin, server, tool,
                    started_at, args_shape, outcome, session_no) VALUES (1, 1, 1, ?1, 's-0000000000000001', ?2,
                    'capture', ?3, 't', '2026-11-30T07:00:00.000Z', '{}', 'ok',
                    (SELECT id FROM sessions WHERE session = 's-0000000000000001' AND server = ?3))",
                rusqlite::params![event, seq, server],
            )
            .unwrap();
            conn.last_insert_rowid()
        };
        let only = add(Some("6f1c2a3b-4d5e-4f60-8a7b-000000000001"), "a", 1);
        add(None, "b", 1);
        let second = add(None, "a", 2);
        let path = home.index_db();
        let coords = |seq| Target::coordinates("s-0000000000000001", seq).unwrap();
        assert_eq!(
            resolve(&conn, path.as_std_path(), &coords(1)).unwrap(),
            Link::Ambiguous
        );
        assert_eq!(
            resolve(&conn, path.as_std_path(), &coords(2)).unwrap(),
            Link::Linked(second)
        );
        assert_eq!(
            resolve(&conn, path.as_std_path(), &coords(3)).unwrap(),
            Link::Unknown
        );
        let event = Target::event_id("6F1C2A3B-4D5E-4F60-8A7B-000000000001").unwrap();
        assert_eq!(
            resolve(&conn, path.as_std_path(), &event).unwrap(),
            Link::Linked(only)
        );
    }
}
