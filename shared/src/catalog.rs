//! The promoted findings, as `promote` stores them in `index.db` and every
//! reader (`findings`, `generate`, `export-issues`, `serve`, `readiness`)
//! sees them: derived figures from the index joined with the authoritative
//! lifecycle state from `lifecycle.db`.
//!
//! A finding carries sanitized identifiers, aggregate figures, argument
//! shapes and its class: never a template text, a note, a session token,
//! the salt or a raw value.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::db::sql_error;
use crate::error::{Error, Result};
use crate::finding::{DefectClass, Kind};
pub use crate::findings::{Derived, Finding, Promotion};
use crate::home::Home;
use crate::id::{self, FindingId};
use crate::index_db;
use crate::lifecycle::{self, FindingState};
use crate::score::Severity;

/// Everything a reader needs: whether promotion ran, and its findings.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// `None` when no promotion ran since the index last changed.
    pub promotion: Option<Promotion>,
    /// Findings, highest score first.
    pub findings: Vec<Finding>,
}

/// Replaces the derived findings (inside the caller's transaction).
pub fn replace(
    tx: &Transaction,
    home: &Home,
    promotion: &Promotion,
    findings: &[Derived],
) -> Result<()> {
    let path = home.index_db();
    let fail = |e| sql_error(&path, e);
    tx.execute("DELETE FROM findings", []).map_err(fail)?;
    tx.execute("DELETE FROM promotion", []).map_err(fail)?;
    let mut insert = tx
        .prepare(
            "INSERT INTO findings(id, kind, server, tool, template_id, defect_class, score, failures, calls,
                failure_rate, wilson_lower, sessions, first_seen, last_seen, median_window_turns,
                blast_radius, err_code, err_codes, retryable, args_shapes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
        )
        .map_err(fail)?;
    for f in findings {
        insert
            .execute(params![
                f.id,
                f.kind.as_str(),
                f.server,
                f.tool,
                f.template_id,
                f.defect_class.as_str(),
                f.score,
                f.failures,
                f.calls,
                f.failure_rate,
                f.wilson_lower,
                f.sessions,
                f.first_seen,
                f.last_seen,
                f.median_window_turns,
                f.blast_radius,
                f.err_code,
                serde_json::to_string(&f.err_codes).expect("codes serialize"),
                f.retryable,
                serde_json::to_string(&f.args_shapes).expect("shapes serialize"),
            ])
            .map_err(fail)?;
    }
    tx.execute(
        "INSERT INTO promotion(id, promoted_at, scored_as_of, threshold, issues, promoted, one_session, below_threshold)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            promotion.promoted_at,
            promotion.scored_as_of,
            promotion.threshold,
            promotion.issues,
            promotion.promoted,
            promotion.one_session,
            promotion.below_threshold
        ],
    )
    .map_err(fail)?;
    Ok(())
}

/// Empties the findings and the promotion record: `index` calls it
/// whenever calls or annotation links change, so `promote` must run again.
pub fn clear(conn: &Connection, path: &std::path::Path) -> Result<()> {
    conn.execute_batch("DELETE FROM findings; DELETE FROM promotion;")
        .map_err(|e| sql_error(path, e))
}

/// Loads the catalog: the index must be complete (else status 3); a store
/// with no lifecycle.db yet has every finding open.
pub fn load(home: &Home) -> Result<Catalog> {
    let index = index_db::open_complete(home)?;
    let states = match lifecycle::open_if_present(home)? {
        Some(conn) => lifecycle::states(&conn, home.lifecycle_db())?,
        None => HashMap::new(),
    };
    load_from(&index, home, &states)
}

/// Like [`load`], but a store that was never indexed (no `index.db`)
/// is `Ok(None)`, not an error: readers that also work before the first
/// index (`serve`, `readiness`, `share`) start here. A damaged or
/// incomplete index is still status 3, in the words `load` uses.
pub fn load_if_indexed(home: &Home) -> Result<Option<Catalog>> {
    if !home.index_db().exists() {
        return Ok(None);
    }
    load(home).map(Some)
}

fn load_from(
    index: &Connection,
    home: &Home,
    states: &HashMap<FindingId, FindingState>,
) -> Result<Catalog> {
    let path = home.index_db();
    let fail = |e| sql_error(&path, e);
    let promotion = index
        .query_row(
            "SELECT promoted_at, scored_as_of, threshold, issues, promoted, one_session, below_threshold
             FROM promotion WHERE id = 1",
            [],
            |r| {
                Ok(Promotion {
                    promoted_at: r.get(0)?,
                    scored_as_of: r.get(1)?,
                    threshold: r.get(2)?,
                    issues: r.get(3)?,
                    promoted: r.get(4)?,
                    one_session: r.get(5)?,
                    below_threshold: r.get(6)?,
                })
            },
        )
        .optional()
        .map_err(fail)?;
    let mut stmt = index
        .prepare(
            "SELECT id, kind, server, tool, template_id, defect_class, score, failures, calls, failure_rate,
                    wilson_lower, sessions, first_seen, last_seen, median_window_turns, blast_radius,
                    err_code, err_codes, retryable, args_shapes, rowid
             FROM findings ORDER BY score DESC, id",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            // The id names files (`export-issues`) and is handed to agents:
            // a row that does not hold one is damage, never a value.
            let raw: String = r.get(0)?;
            let Ok(id) = FindingId::parse(&raw) else {
                return Ok(Err((raw, r.get::<_, i64>(20)?)));
            };
            let kind: String = r.get(1)?;
            let class: String = r.get(5)?;
            let codes: String = r.get(17)?;
            let shapes: String = r.get(19)?;
            let class = DefectClass::parse(&class).unwrap_or(DefectClass::ToolError);
            Ok(Ok(Derived {
                id,
                kind: Kind::parse(&kind).unwrap_or(Kind::Error),
                server: r.get(2)?,
                tool: r.get(3)?,
                template_id: r.get(4)?,
                defect_class: class,
                fix_hint: class.fix_hint().to_owned(),
                score: r.get(6)?,
                failures: r.get(7)?,
                calls: r.get(8)?,
                failure_rate: r.get(9)?,
                wilson_lower: r.get(10)?,
                sessions: r.get(11)?,
                first_seen: r.get(12)?,
                last_seen: r.get(13)?,
                median_window_turns: r.get(14)?,
                blast_radius: r.get(15)?,
                err_code: r.get(16)?,
                err_codes: serde_json::from_str(&codes).unwrap_or_default(),
                retryable: r.get(18)?,
                args_shapes: serde_json::from_str(&shapes).unwrap_or_default(),
            }))
        })
        .map_err(fail)?;
    let mut findings = Vec::new();
    for derived in rows {
        let derived = derived
            .map_err(fail)?
            .map_err(|(raw, row)| corrupt_id(&path, &raw, row))?;
        let state = states.get(&derived.id).cloned().unwrap_or_default();
        findings.push(Finding {
            severity: Severity::of(derived.score, state.probe_attached),
            state: state.state,
            streak: state.streak,
            probe_attached: state.probe_attached,
            reopened: state.reopened,
            derived,
        });
    }
    Ok(Catalog {
        promotion,
        findings,
    })
}

/// A finding row of index.db whose id is not a finding id (status 3).
/// index.db is derived, so deriving it again is the repair.
fn corrupt_id(path: &camino::Utf8Path, raw: &str, row: i64) -> Error {
    Error::unavailable(format!(
        "{path} is corrupt: finding id {} at row {row} of table findings is not \
         {}",
        id::shown(raw),
        FindingId::FORM,
    ))
    .with_hint("derive it again: run `mcpeval index --rebuild`, then `mcpeval promote`")
}

/// Looks one finding up by id.
pub fn find<'a>(catalog: &'a Catalog, id: &str) -> Option<&'a Finding> {
    catalog.findings.iter().find(|f| f.derived.id == id)
}

/// The `findings` and `promotion` tables, added to index.db as its second
/// migration; `index` empties both whenever the calls change, so readers
/// never see findings of evidence that is gone.
pub const INDEX_MIGRATION: &str = "
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
-- promotion: one row describing the last promote run; none when no promote
-- ran since the index last changed.
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
