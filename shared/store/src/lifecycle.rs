//! `lifecycle.db`: the store's durable, authoritative database.
//!
//! It holds what cannot be derived from the journals again: the
//! annotations people add to calls, each finding's lifecycle state, every
//! verification run and the history of changes (the rules that move a
//! finding live in [`crate::verification`]). Opening it also imports, once,
//! the index-only evidence of earlier releases ([`crate::evidence`]).
//! Unlike `index.db` it is never deleted or rebuilt, so migrations here
//! only ever add, and nothing in this module may drop or rewrite a stored
//! row.

use std::fmt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::db::{self, Schema};
use shared::error::{Error, Result};
use shared::home::Home;
use shared::id::{self, EventId, FindingId, SessionToken};

/// The lifecycle database's migrations. Migration 1 holds annotations only;
/// append new steps, never edit a released one.
pub const SCHEMA: Schema = Schema {
    name: "lifecycle.db",
    migrations: &[MIGRATION_1, MIGRATION_2, MIGRATION_3, MIGRATION_4],
    page_size: None,
};

/// Annotations: human observations about one call each.
///
/// A row targets a call either by `event_id` (records `mcpeval.call/1`) or
/// by the legacy coordinates (`session`, `seq`), never both. `id` is never
/// reused (AUTOINCREMENT), so the largest id and the row count together tell
/// a reader whether the set changed since it last looked.
const MIGRATION_1: &str = "
CREATE TABLE annotations(
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN
                   ('false-success', 'workaround', 'misleading-error', 'slow', 'other')),
    note       TEXT NOT NULL CHECK (length(note) <= 240),
    event_id   TEXT,
    session    TEXT,
    seq        INTEGER,
    CHECK ((event_id IS NOT NULL AND session IS NULL AND seq IS NULL)
        OR (event_id IS NULL AND session IS NOT NULL AND seq >= 1))
);
";

/// The longest note, in characters (not bytes).
pub const MAX_NOTE_CHARS: usize = 240;

/// Opens `lifecycle.db`, creating the store and the database if needed,
/// and imports the index-only evidence of earlier releases once (see
/// [`crate::evidence`]).
pub fn open(home: &Home) -> Result<Connection> {
    crate::dir::ensure(home)?;
    let mut conn = db::open(home.lifecycle_db().as_std_path(), &SCHEMA)?;
    crate::evidence::import(&mut conn, home)?;
    Ok(conn)
}

/// Opens `lifecycle.db` when it exists (migrating it forward and importing
/// index-only evidence once, as [`open`] does); `Ok(None)` when the store
/// has none yet. Readers use this so they never create it.
pub fn open_if_present(home: &Home) -> Result<Option<Connection>> {
    let path = home.lifecycle_db();
    if !path.exists() {
        return Ok(None);
    }
    let mut conn = db::open(path.as_std_path(), &SCHEMA)?;
    crate::evidence::import(&mut conn, home)?;
    Ok(Some(conn))
}

shared::spelled! {
    /// What an annotation says about its call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Kind {
        /// The call reported success but did not do what was asked.
        FalseSuccess = "false-success",
        /// The agent had to work around the tool.
        Workaround = "workaround",
        /// The error text pointed the agent the wrong way.
        MisleadingError = "misleading-error",
        /// The call took too long.
        Slow = "slow",
        /// Anything else worth a note.
        Other = "other",
    }
}

/// The call an annotation is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A call's `identity.event_id`, as a lower-case hyphenated UUID.
    EventId(EventId),
    /// Legacy coordinates; they may match several calls across servers.
    Coordinates {
        /// Session token, `s-` and 16 hex digits.
        session: SessionToken,
        /// Turn within the session, 1 or more.
        seq: u64,
    },
}

impl Target {
    /// An event-id target; the UUID is stored in its canonical form so it
    /// matches the index whatever case the user typed.
    pub fn event_id(text: &str) -> Result<Target> {
        uuid::Uuid::parse_str(text)
            .map(|u| Target::EventId(EventId::from_uuid(u)))
            .map_err(|_| {
                Error::usage(format!(
                    "event id '{text}' is not a UUID; copy identity.event_id from the journal"
                ))
            })
    }

    /// A legacy-coordinates target, checked like a journal record's fields.
    pub fn coordinates(session: &str, seq: u64) -> Result<Target> {
        let Ok(session) = SessionToken::parse(session) else {
            return Err(Error::usage(format!(
                "session '{session}' is not \"s-\" followed by 16 lower-case hex digits; copy it from the journal"
            )));
        };
        if seq == 0 {
            return Err(Error::usage("seq must be 1 or more"));
        }
        Ok(Target::Coordinates { session, seq })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::EventId(id) => write!(f, "event id {id}"),
            Target::Coordinates { session, seq } => write!(f, "session {session} seq {seq}"),
        }
    }
}

/// Checks a note: at most [`MAX_NOTE_CHARS`] characters, no control
/// characters. The note is prose and is not redacted; these checks only
/// bound it.
pub fn check_note(note: &str) -> Result<()> {
    let chars = note.chars().count();
    if chars > MAX_NOTE_CHARS {
        return Err(Error::usage(format!(
            "the note has {chars} characters; the limit is {MAX_NOTE_CHARS}"
        )));
    }
    if let Some((at, c)) = note.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(Error::usage(format!(
            "the note contains the control character U+{:04X} at character {}; use plain text on one line",
            u32::from(c),
            at + 1
        )));
    }
    Ok(())
}

/// A stored annotation (without its note, which only its author reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// Never-reused row id.
    pub id: i64,
    /// When it was recorded, RFC 3339 UTC.
    pub created_at: String,
    /// What it says about the call.
    pub kind: Kind,
    /// The call it is about.
    pub target: Target,
}

/// Stores an annotation in one `BEGIN IMMEDIATE` transaction and returns
/// its id. The note is checked again here so no caller can skip the check.
pub fn insert(conn: &mut Connection, kind: Kind, target: &Target, note: &str) -> Result<i64> {
    check_note(note)?;
    let (event_id, session, seq) = match target {
        Target::EventId(id) => (Some(id.as_str()), None, None),
        Target::Coordinates { session, seq } => (None, Some(session.as_str()), Some(*seq as i64)),
    };
    let path = path_of(conn);
    db::write(conn, |tx| {
        tx.execute(
            "INSERT INTO annotations(created_at, kind, note, event_id, session, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                shared::time::now_rfc3339(),
                kind.as_str(),
                note,
                event_id,
                session,
                seq
            ],
        )
        .map_err(|e| db::sql_error(&path, e))?;
        Ok(tx.last_insert_rowid())
    })
}

/// Every annotation, oldest first.
pub fn list(conn: &Connection) -> Result<Vec<Annotation>> {
    let path = path_of(conn);
    let fail = |e| db::sql_error(&path, e);
    let mut stmt = conn
        .prepare("SELECT id, created_at, kind, event_id, session, seq FROM annotations ORDER BY id")
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(fail)? {
        let id: i64 = row.get(0).map_err(fail)?;
        let kind: String = row.get(2).map_err(fail)?;
        let event_id: Option<String> = row.get(3).map_err(fail)?;
        let session: Option<String> = row.get(4).map_err(fail)?;
        let seq: Option<i64> = row.get(5).map_err(fail)?;
        let damaged =
            || Error::unavailable(format!("{}: annotation {id} is damaged", path.display()));
        // The ids are checked as any read from a file would be: a
        // damaged row is reported, never handed on to the index.
        let target = match (event_id, session, seq) {
            (Some(event_id), None, None) => {
                Target::EventId(EventId::parse(&event_id).map_err(|_| damaged())?)
            }
            (None, Some(session), Some(seq)) if seq > 0 => Target::Coordinates {
                session: SessionToken::parse(&session).map_err(|_| damaged())?,
                seq: seq as u64,
            },
            _ => return Err(damaged()),
        };
        out.push(Annotation {
            id,
            created_at: row.get(1).map_err(fail)?,
            kind: Kind::parse(&kind).ok_or_else(damaged)?,
            target,
        });
    }
    Ok(out)
}

/// `(largest id, row count)` of the annotations: a reader that remembers
/// this pair knows the set is unchanged while the pair is.
pub fn high_water(conn: &Connection) -> Result<(i64, i64)> {
    let path = path_of(conn);
    conn.query_row(
        "SELECT coalesce(max(id), 0), count(*) FROM annotations",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .map_err(|e| db::sql_error(&path, e))
}

/// The database's file, for messages.
fn path_of(conn: &Connection) -> PathBuf {
    conn.path().map(PathBuf::from).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        (dir, home)
    }

    #[test]
    fn stores_and_lists_both_target_forms() {
        let (_dir, home) = store();
        let mut conn = open(&home).unwrap();
        let by_event = Target::event_id("6F1C2A3B-4D5E-4F60-8A7B-9C8D7E6F5A4B").unwrap();
        assert_eq!(
            by_event,
            Target::EventId(EventId::parse("6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b").unwrap())
        );
        let by_coords = Target::coordinates("s-0123456789abcdef", 4).unwrap();
        let a = insert(
            &mut conn,
            Kind::FalseSuccess,
            &by_event,
            "said done, was not",
        )
        .unwrap();
        let b = insert(&mut conn, Kind::Slow, &by_coords, "").unwrap();
        assert!(b > a);
        let all = list(&conn).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            (all[0].kind, &all[0].target),
            (Kind::FalseSuccess, &by_event)
        );
        assert_eq!((all[1].kind, &all[1].target), (Kind::Slow, &by_coords));
        assert_eq!(high_water(&conn).unwrap(), (b, 2));
    }

    #[test]
    fn the_subject_of_a_finding_is_kept_once_and_read_without_writing() {
        let (_dir, home) = store();
        let id = "finding-0123456789abcdef";
        assert_eq!(remembered(&home, id).unwrap(), None, "no lifecycle.db");
        assert!(!home.lifecycle_db().exists(), "reading creates nothing");
        let conn = open(&home).unwrap();
        let path = home.lifecycle_db();
        remember(&conn, path.as_std_path(), id, "jobs", "get_status").unwrap();
        assert_eq!(remembered(&home, id).unwrap(), None, "no state row yet");
        ensure(
            &conn,
            path.as_std_path(),
            &FindingId::parse(id).unwrap(),
            "2026-11-30T07:00:00Z",
        )
        .unwrap();
        remember(&conn, path.as_std_path(), id, "jobs", "get_status").unwrap();
        remember(&conn, path.as_std_path(), id, "other", "other").unwrap();
        let kept = Some(("jobs".to_owned(), "get_status".to_owned()));
        assert_eq!(remembered(&home, id).unwrap(), kept, "never rewritten");
        assert_eq!(remembered_in(&conn, path.as_std_path(), id).unwrap(), kept);
        drop(conn);
        // A lifecycle.db of the release before: no columns, no subject, no change.
        let (_old_dir, old) = store();
        crate::dir::ensure(&old).unwrap();
        let c = Connection::open(old.lifecycle_db()).unwrap();
        c.execute_batch(MIGRATION_1).unwrap();
        c.execute_batch(MIGRATION_2).unwrap();
        c.pragma_update(None, "user_version", 2).unwrap();
        drop(c);
        let before = std::fs::read(old.lifecycle_db()).unwrap();
        assert_eq!(remembered(&old, id).unwrap(), None);
        assert_eq!(std::fs::read(old.lifecycle_db()).unwrap(), before);
    }

    #[test]
    fn notes_are_bounded_in_characters() {
        assert!(check_note(&"é".repeat(240)).is_ok());
        let long = check_note(&"é".repeat(241)).unwrap_err();
        assert!(long.message().contains("241 characters"), "{long}");
        let ctl = check_note("line\nbreak").unwrap_err();
        assert!(ctl.message().contains("U+000A at character 5"), "{ctl}");
        assert!(check_note("tab\there").is_err());
    }

    #[test]
    fn refuses_bad_targets() {
        assert!(Target::event_id("not-a-uuid").is_err());
        assert!(Target::coordinates("s-0123", 1).is_err());
        assert!(Target::coordinates("s-0123456789ABCDEF", 1).is_err());
        assert!(Target::coordinates("s-0123456789abcdef", 0).is_err());
    }

    #[test]
    fn the_database_enforces_the_bounds_too() {
        let (_dir, home) = store();
        let conn = open(&home).unwrap();
        let long = "x".repeat(241);
        let err = conn.execute(
            "INSERT INTO annotations(created_at, kind, note, event_id) VALUES ('t', 'slow', ?1, 'e')",
            [long],
        );
        assert!(err.is_err());
        let both = conn.execute(
            "INSERT INTO annotations(created_at, kind, note, event_id, session, seq)
             VALUES ('t', 'slow', 'n', 'e', 's', 1)",
            [],
        );
        assert!(both.is_err());
    }
}

/// Lifecycle state, verification history, re-keys and imports: what makes
/// a finding's progress towards closed durable. Rows are only added or
/// updated in place, never deleted; a re-keyed state row is retired, not
/// removed.
const MIGRATION_2: &str = "
-- finding_state: the lifecycle of each finding id. `streak` counts
-- consecutive green runs under `binding` (a fresh binding starts a fresh
-- streak); `probe_attached` is set once a manifest case was verified
-- against the finding; `reopened` counts red runs that reopened it;
-- `retired_for` names the id a legacy row was re-keyed to.
CREATE TABLE finding_state(
    finding_id     TEXT PRIMARY KEY,
    state          TEXT NOT NULL CHECK (state IN ('open', 'fix-claimed', 'verifying', 'closed')),
    streak         INTEGER NOT NULL DEFAULT 0,
    binding        TEXT,
    probe_attached INTEGER NOT NULL DEFAULT 0,
    reopened       INTEGER NOT NULL DEFAULT 0,
    retired_for    TEXT,
    updated_at     TEXT NOT NULL
);

-- verifications: every recorded run, green or red, never deleted.
-- `run_id` is unique (NULL for legacy imports, which have no binding and
-- never count towards a streak); `digest` is the SHA-256 of the run's
-- canonical result, to tell a replay from a conflicting result.
CREATE TABLE verifications(
    id          INTEGER PRIMARY KEY,
    run_id      TEXT UNIQUE,
    finding_id  TEXT NOT NULL,
    case_id     TEXT NOT NULL,
    binding     TEXT,
    result      TEXT NOT NULL,
    reason      TEXT,
    started_at  TEXT,
    finished_at TEXT,
    recorded_at TEXT NOT NULL,
    legacy      INTEGER NOT NULL DEFAULT 0,
    digest      TEXT
);
CREATE INDEX verifications_by_finding ON verifications(finding_id, id);

-- history: every state change, manual closure and re-key, in order.
CREATE TABLE history(
    id         INTEGER PRIMARY KEY,
    finding_id TEXT NOT NULL,
    at         TEXT NOT NULL,
    event      TEXT NOT NULL,
    from_state TEXT,
    to_state   TEXT,
    detail     TEXT
);
CREATE INDEX history_by_finding ON history(finding_id, id);

-- imports: one-time imports already done (e.g. index-only evidence).
CREATE TABLE imports(
    name  TEXT PRIMARY KEY,
    at    TEXT NOT NULL,
    rows  INTEGER NOT NULL
);
";

/// The server and tool a tracked finding is about, kept beside its state
/// so that credit can be checked against them after a later index no
/// longer lists the finding. Filled when promote first sees the finding
/// (or when a run is recorded for a finding only the index knew); rows of
/// earlier releases keep NULL until then.
const MIGRATION_3: &str = "
ALTER TABLE finding_state ADD COLUMN server TEXT;
ALTER TABLE finding_state ADD COLUMN tool TEXT;
";

/// What a run must be held to (SPEC §7, "Proof"), kept beside each state
/// so that it outlives the index: the finding's kind, class, error codes
/// and failure rate as the latest promote that listed it saw them; and,
/// per run, the fingerprints that tell whether a red run and a closing
/// streak ran the same case definition against the same target. A
/// state's `streak_since` is when the current streak's first green run
/// started; `witnessed` is set when a streak closes the finding (1 when
/// a red run of that case against that target came before the streak,
/// else 0) and cleared when anything else moves it.
const MIGRATION_4: &str = "
ALTER TABLE finding_state ADD COLUMN kind TEXT;
ALTER TABLE finding_state ADD COLUMN defect_class TEXT;
ALTER TABLE finding_state ADD COLUMN err_codes TEXT;
ALTER TABLE finding_state ADD COLUMN failure_rate REAL;
ALTER TABLE finding_state ADD COLUMN streak_since TEXT;
ALTER TABLE finding_state ADD COLUMN witnessed INTEGER;
ALTER TABLE verifications ADD COLUMN definition TEXT;
ALTER TABLE verifications ADD COLUMN target TEXT;
";

/// Records the (server, tool) of `finding_id` unless its state row already
/// has them: an id is a digest of its server and tool, so they never
/// change, and a stored value is never rewritten. No state row: no change.
pub fn remember(
    conn: &Connection,
    path: &Path,
    finding_id: &str,
    server: &str,
    tool: &str,
) -> Result<()> {
    conn.execute(
        "UPDATE finding_state SET server = ?2, tool = ?3
         WHERE finding_id = ?1 AND server IS NULL AND tool IS NULL",
        params![finding_id, server, tool],
    )
    .map_err(|e| db::sql_error(path, e))?;
    Ok(())
}

/// What the latest promote saw of `finding_id`'s evidence, kept beside
/// its state (rewritten by every promote that lists it): what a run is
/// held to when no index lists the finding any more.
pub fn remember_evidence(
    conn: &Connection,
    path: &Path,
    finding_id: &str,
    evidence: &Evidence,
) -> Result<()> {
    let codes = serde_json::to_string(&evidence.err_codes).expect("codes serialize");
    conn.execute(
        "UPDATE finding_state SET kind = ?2, defect_class = ?3, err_codes = ?4, failure_rate = ?5
         WHERE finding_id = ?1",
        params![
            finding_id,
            evidence.kind.as_str(),
            evidence.defect_class.map(|c| c.as_str()),
            codes,
            evidence.failure_rate
        ],
    )
    .map_err(|e| db::sql_error(path, e))?;
    Ok(())
}

/// The evidence facts lifecycle.db keeps for `finding_id` (see
/// [`remember_evidence`]); `None` when it keeps none or the database
/// predates them. Reads only, like [`remembered`].
pub fn remembered_evidence(home: &Home, finding_id: &str) -> Result<Option<Evidence>> {
    let Some(conn) = read_only(home)? else {
        return Ok(None);
    };
    let path = home.lifecycle_db();
    let fail = |e: rusqlite::Error| db::sql_error(path.as_std_path(), e);
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(fail)?;
    if version < 4 {
        return Ok(None);
    }
    // kind, defect_class, err_codes, failure_rate, each NULL in rows of
    // earlier releases.
    type Row = (Option<String>, Option<String>, Option<String>, Option<f64>);
    let row: Option<Row> = conn
        .query_row(
            "SELECT kind, defect_class, err_codes, failure_rate FROM finding_state
             WHERE finding_id = ?1",
            [finding_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(fail)?;
    let Some((Some(kind), class, codes, rate)) = row else {
        return Ok(None);
    };
    let damaged = || {
        Error::unavailable(format!(
            "{path} is corrupt: the evidence kept for {finding_id} in table finding_state is not \
             what promote writes"
        ))
        .with_hint("run `mcpeval promote` to write it again")
    };
    let kind = shared::finding::Kind::parse(&kind).ok_or_else(damaged)?;
    let defect_class = match class {
        Some(c) => Some(shared::finding::DefectClass::parse(&c).ok_or_else(damaged)?),
        None => None,
    };
    let err_codes = match codes {
        Some(text) => serde_json::from_str(&text).map_err(|_| damaged())?,
        None => return Err(damaged()),
    };
    Ok(Some(Evidence {
        kind,
        defect_class,
        err_codes,
        failure_rate: rate.filter(|p| p.is_finite()),
    }))
}

/// What a finding's failures showed, as far as a run's proof depends on
/// it (SPEC §7, "Proof").
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// The kind of group it stands for.
    pub kind: shared::finding::Kind,
    /// Its defect class, when known.
    pub defect_class: Option<shared::finding::DefectClass>,
    /// Every error code its failures carried.
    pub err_codes: Vec<i64>,
    /// Failures over calls to its (server, tool).
    pub failure_rate: Option<f64>,
}

/// lifecycle.db opened read-only, with no write, migration or creation;
/// `None` when the store has none.
fn read_only(home: &Home) -> Result<Option<Connection>> {
    let path = home.lifecycle_db();
    if !path.exists() {
        return Ok(None);
    }
    let fail = |e: rusqlite::Error| db::sql_error(path.as_std_path(), e);
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&path, flags).map_err(fail)?;
    crate::fault::watch(&conn);
    conn.busy_timeout(db::BUSY_TIMEOUT).map_err(fail)?;
    Ok(Some(conn))
}

/// The (server, tool) lifecycle.db keeps for `finding_id`, read without
/// creating, migrating or writing anything: `None` when the store has no
/// lifecycle.db, the database predates the columns, or the row has no
/// values. Probes, which change no lifecycle state, read it this way.
pub fn remembered(home: &Home, finding_id: &str) -> Result<Option<(String, String)>> {
    let Some(conn) = read_only(home)? else {
        return Ok(None);
    };
    let path = home.lifecycle_db();
    let fail = |e: rusqlite::Error| db::sql_error(path.as_std_path(), e);
    let columns: i64 = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('finding_state') WHERE name IN ('server', 'tool')",
            [],
            |r| r.get(0),
        )
        .map_err(fail)?;
    if columns != 2 {
        return Ok(None);
    }
    remembered_in(&conn, path.as_std_path(), finding_id)
}

/// Like [`remembered`], on an open, current lifecycle.db.
pub fn remembered_in(
    conn: &Connection,
    path: &Path,
    finding_id: &str,
) -> Result<Option<(String, String)>> {
    let row: Option<(Option<String>, Option<String>)> = conn
        .query_row(
            "SELECT server, tool FROM finding_state WHERE finding_id = ?1",
            [finding_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(|e| db::sql_error(path, e))?;
    Ok(match row {
        Some((Some(server), Some(tool))) => Some((server, tool)),
        _ => None,
    })
}

pub use shared::finding::State;

/// The durable lifecycle facts of one finding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingState {
    /// Where it is.
    pub state: State,
    /// Consecutive green runs under `binding`.
    pub streak: u32,
    /// The binding fingerprint of the current streak.
    pub binding: Option<String>,
    /// Whether a manifest case was verified against it at least once.
    pub probe_attached: bool,
    /// Red runs that reopened it.
    pub reopened: u32,
    /// When it last changed, RFC 3339.
    pub updated_at: String,
    /// When the current streak's first green run started (RFC 3339);
    /// `None` without a streak.
    pub streak_since: Option<String>,
    /// For a finding closed by verification: whether a red run of the
    /// closing case against the same target came before its streak.
    /// `None` otherwise.
    pub witnessed: Option<bool>,
}

/// Every current (not retired) finding state, by finding id. A row whose
/// id is not a finding id makes the database corrupt (status 3).
pub fn states(
    conn: &Connection,
    path: impl AsRef<Path>,
) -> Result<std::collections::HashMap<FindingId, FindingState>> {
    let path = path.as_ref();
    let fail = |e| db::sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT finding_id, state, streak, binding, probe_attached, reopened, updated_at, rowid,
                    streak_since, witnessed
             FROM finding_state WHERE retired_for IS NULL",
        )
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let mut out = std::collections::HashMap::new();
    while let Some(r) = rows.next().map_err(fail)? {
        let raw: String = r.get(0).map_err(fail)?;
        let id =
            FindingId::parse(&raw).map_err(|_| corrupt_id(path, &raw, r.get(7).unwrap_or(0)))?;
        let state: String = r.get(1).map_err(fail)?;
        let state = FindingState {
            state: State::parse(&state).unwrap_or_default(),
            streak: r.get(2).map_err(fail)?,
            binding: r.get(3).map_err(fail)?,
            probe_attached: r.get(4).map_err(fail)?,
            reopened: r.get(5).map_err(fail)?,
            updated_at: r.get(6).map_err(fail)?,
            streak_since: r.get(8).map_err(fail)?,
            witnessed: r.get(9).map_err(fail)?,
        };
        out.insert(id, state);
    }
    Ok(out)
}

/// A `finding_state` row whose id is not a finding id (status 3).
/// lifecycle.db is authoritative and cannot be derived again, so the
/// repair is the user's: a backup, or the row mended by hand.
fn corrupt_id(path: &Path, raw: &str, row: i64) -> Error {
    Error::unavailable(format!(
        "{} is corrupt: finding id {} at row {row} of table finding_state is not {}",
        path.display(),
        id::shown(raw),
        FindingId::FORM,
    ))
    .with_hint(
        "restore lifecycle.db (with .salt) from a backup, or correct that row; nothing was changed",
    )
}

/// The current (not retired) state of one finding, if it has one.
pub fn state(conn: &Connection, path: &Path, finding_id: &str) -> Result<Option<FindingState>> {
    conn.query_row(
        "SELECT state, streak, binding, probe_attached, reopened, updated_at, streak_since,
                witnessed
         FROM finding_state WHERE finding_id = ?1 AND retired_for IS NULL",
        [finding_id],
        |r| {
            let state: String = r.get(0)?;
            Ok(FindingState {
                state: State::parse(&state).unwrap_or_default(),
                streak: r.get(1)?,
                binding: r.get(2)?,
                probe_attached: r.get(3)?,
                reopened: r.get(4)?,
                updated_at: r.get(5)?,
                streak_since: r.get(6)?,
                witnessed: r.get(7)?,
            })
        },
    )
    .optional()
    .map_err(|e| db::sql_error(path, e))
}

/// Gives `finding_id` an `open` state unless it already has one.
pub fn ensure(conn: &Connection, path: &Path, finding_id: &FindingId, now: &str) -> Result<()> {
    let inserted = conn
        .execute(
            "INSERT OR IGNORE INTO finding_state(finding_id, state, updated_at) VALUES (?1, 'open', ?2)",
            params![finding_id.as_str(), now],
        )
        .map_err(|e| db::sql_error(path, e))?;
    if inserted > 0 {
        record_history(
            conn,
            path,
            finding_id,
            now,
            "promoted",
            None,
            Some(State::Open),
            None,
        )?;
    }
    Ok(())
}

/// Moves the most recently updated state among `legacy` ids (and `current`
/// itself, if it has one) to `current`, and retires the legacy rows.
/// Verifications keep their original ids. Nothing to move: no change.
pub fn rekey(
    conn: &Connection,
    path: &Path,
    legacy: &[FindingId],
    current: &FindingId,
    now: &str,
) -> Result<()> {
    let fail = |e| db::sql_error(path, e);
    let mut found: Vec<(String, FindingId)> = Vec::new();
    for id in legacy.iter().filter(|id| *id != current) {
        let row: Option<String> = conn
            .query_row(
                "SELECT updated_at FROM finding_state WHERE finding_id = ?1 AND retired_for IS NULL",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        if let Some(updated) = row {
            found.push((updated, id.clone()));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let current_updated: Option<String> = conn
        .query_row(
            "SELECT updated_at FROM finding_state WHERE finding_id = ?1 AND retired_for IS NULL",
            [current.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(fail)?;
    found.sort();
    let (newest_at, newest) = found.last().cloned().expect("non-empty");
    if current_updated
        .as_deref()
        .is_none_or(|at| at < newest_at.as_str())
    {
        conn.execute(
            "DELETE FROM finding_state WHERE finding_id = ?1",
            [current.as_str()],
        )
        .map_err(fail)?;
        conn.execute(
            "INSERT INTO finding_state(finding_id, state, streak, binding, probe_attached, reopened,
                 updated_at, streak_since, witnessed)
             SELECT ?1, state, streak, binding, probe_attached, reopened, updated_at, streak_since,
                 witnessed
             FROM finding_state WHERE finding_id = ?2",
            params![current.as_str(), newest.as_str()],
        )
        .map_err(fail)?;
    }
    for (_, id) in &found {
        conn.execute(
            "UPDATE finding_state SET retired_for = ?1 WHERE finding_id = ?2",
            params![current.as_str(), id.as_str()],
        )
        .map_err(fail)?;
        record_history(conn, path, id, now, "rekeyed", None, None, Some(current))?;
    }
    Ok(())
}

/// Appends one line of a finding's history.
#[allow(clippy::too_many_arguments)]
pub fn record_history(
    conn: &Connection,
    path: &Path,
    finding_id: &FindingId,
    at: &str,
    event: &str,
    from: Option<State>,
    to: Option<State>,
    detail: Option<&str>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO history(finding_id, at, event, from_state, to_state, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![finding_id.as_str(), at, event, from.map(State::as_str), to.map(State::as_str), detail],
    )
    .map_err(|e| db::sql_error(path, e))?;
    Ok(())
}
