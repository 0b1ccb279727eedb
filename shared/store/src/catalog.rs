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
use crate::index_db;
use crate::lifecycle::{self, FindingState};
use shared::error::{Error, Result};
use shared::finding::{DefectClass, Kind, State, Violation};
pub use shared::findings::{Derived, Finding, Promotion};
use shared::home::Home;
use shared::id::{self, FindingId};
use shared::score::Severity;

/// Everything a reader needs: the promotion its findings come from, and
/// the findings.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The promote run of the findings. Loaded from a store it is always
    /// there ([`load`] refuses findings no current promotion stands for);
    /// `None` for findings read from elsewhere (a share file).
    pub promotion: Option<Promotion>,
    /// Calls the index holds (0 for findings read from elsewhere): none
    /// means nothing was captured yet.
    pub calls: u64,
    /// Findings, highest score first.
    pub findings: Vec<Finding>,
}

/// Why a complete index has no findings to read: the evidence is
/// unavailable (status 3), because `promote` has not run on what the index
/// now holds. Decided once, in [`load`], so that every reader of findings
/// (`findings`, `export-issues`, `readiness`, `share`, `serve`, `report`)
/// refuses in the same words instead of showing an empty list that a
/// script would take for "no failures".
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpromoted {
    /// `index` changed the evidence after the last `promote`, which
    /// dropped that run's findings.
    OutOfDate,
    /// The store was indexed, but `promote` never ran on it; the index
    /// holds `calls` calls.
    Never {
        /// Calls the index holds; none means nothing was captured yet.
        calls: u64,
    },
}

impl std::fmt::Display for Unpromoted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unpromoted::OutOfDate => f.write_str(
                "findings are out of date: the index changed after the last promote; \
                 run mcpeval promote",
            ),
            Unpromoted::Never { calls: 0 } => write!(
                f,
                "no findings yet: nothing was captured yet (the index holds no calls) and \
                 promote never ran on this store; {START}"
            ),
            Unpromoted::Never { calls } => write!(
                f,
                "findings are not promoted yet: the index holds {calls} call{} but promote \
                 never ran on this store; run mcpeval promote",
                if *calls == 1 { "" } else { "s" }
            ),
        }
    }
}

impl std::error::Error for Unpromoted {}

/// How to begin on a store with nothing captured: every reader that meets
/// an empty store says it in these words.
pub const START: &str = "start by capturing in front of a server \
    (`mcpeval capture -- <server command>`, then let an agent use it), \
    then run `mcpeval index` and `mcpeval promote`";

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
                f.id.as_str(),
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

/// Empties the findings and marks the promotion record out of date:
/// `index` calls it whenever calls or annotation links change, so
/// `promote` must run again, and until it does every reader refuses with
/// [`Unpromoted::OutOfDate`] (the record says a promote did run once).
pub fn clear(conn: &Connection, path: &std::path::Path) -> Result<()> {
    conn.execute("DELETE FROM findings", [])
        .and_then(|_| {
            conn.execute(
                "UPDATE promotion SET outdated_at = ?1 WHERE outdated_at IS NULL",
                [shared::time::now_rfc3339()],
            )
        })
        .map(drop)
        .map_err(|e| sql_error(path, e))
}

/// Loads the catalog: the index must be complete, and promoted since it
/// last changed (else status 3, [`Unpromoted`]); a store with no
/// lifecycle.db yet has every finding open.
pub fn load(home: &Home) -> Result<Catalog> {
    let path = home.index_db();
    if !path.exists() {
        return Err(no_index(home));
    }
    let index = index_db::open_complete(home)?;
    let calls = index_db::require_state(&index, path.as_std_path())?.calls;
    let states = match lifecycle::open_if_present(home)? {
        Some(conn) => lifecycle::states(&conn, home.lifecycle_db())?,
        None => HashMap::new(),
    };
    load_from(&index, home, &states, u64::try_from(calls).unwrap_or(0))
}

/// There is no index: say whether anything was captured to index.
pub(crate) fn no_index(home: &Home) -> Error {
    let path = home.index_db();
    let journals = home.journals();
    let captured = std::fs::read_dir(&journals).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(crate::journal::is_journal_name)
        })
    });
    if captured {
        Error::unavailable(format!("no index yet: {path} does not exist"))
            .with_hint("run `mcpeval index`, then `mcpeval promote`")
    } else {
        Error::unavailable(format!(
            "no index yet: {} does not exist, and nothing was captured yet ({} holds no journal)",
            path, journals
        ))
        .with_hint(START)
    }
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
    calls: u64,
) -> Result<Catalog> {
    let path = home.index_db();
    let fail = |e| sql_error(&path, e);
    let promotion = index
        .query_row(
            "SELECT promoted_at, scored_as_of, threshold, issues, promoted, one_session, below_threshold,
                    outdated_at IS NOT NULL
             FROM promotion WHERE id = 1",
            [],
            |r| {
                let promotion = Promotion {
                    promoted_at: r.get(0)?,
                    scored_as_of: r.get(1)?,
                    threshold: r.get(2)?,
                    issues: r.get(3)?,
                    promoted: r.get(4)?,
                    one_session: r.get(5)?,
                    below_threshold: r.get(6)?,
                };
                Ok((promotion, r.get::<_, bool>(7)?))
            },
        )
        .optional()
        .map_err(fail)?;
    let promotion = match promotion {
        Some((promotion, false)) => promotion,
        Some((_, true)) => return Err(unpromoted(Unpromoted::OutOfDate)),
        None => return Err(unpromoted(Unpromoted::Never { calls })),
    };
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
            let kind = Kind::parse(&kind).unwrap_or(Kind::Error);
            let template_id: Option<String> = r.get(4)?;
            let contract = Violation::of_group(kind, template_id.as_deref());
            Ok(Ok(Derived {
                id,
                kind,
                server: r.get(2)?,
                tool: r.get(3)?,
                template_id,
                defect_class: class,
                fix_hint: shared::finding::fix_hint(class, contract.as_ref()),
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
                contract,
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
            witnessed: state.witnessed.filter(|_| state.state == State::Closed),
            derived,
        });
    }
    Ok(Catalog {
        promotion: Some(promotion),
        calls,
        findings,
    })
}

/// The status-3 error of `why`, whose words are the whole message (a
/// reader finds the kind again with `err.chain()` and a downcast).
fn unpromoted(why: Unpromoted) -> Error {
    Error::unavailable("").with_source(why)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db;

    fn why(err: &Error) -> Option<Unpromoted> {
        err.chain()
            .find_map(|e| e.downcast_ref::<Unpromoted>().copied())
    }

    #[test]
    fn the_load_tells_never_promoted_from_out_of_date() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let mut conn = db::open(home.index_db(), &index_db::SCHEMA).unwrap();
        conn.execute(
            "INSERT INTO state(id, indexed_at, calls, annotations_max_id, annotations_count)
             VALUES (1, '2026-11-30T07:00:00.000Z', 4, 0, 0)",
            [],
        )
        .unwrap();
        let never = load(&home).unwrap_err();
        assert_eq!(never.status(), shared::exit::UNAVAILABLE);
        assert_eq!(why(&never), Some(Unpromoted::Never { calls: 4 }));

        let promotion = Promotion {
            promoted_at: "2026-11-30T08:00:00.000Z".into(),
            scored_as_of: "2026-11-30T08:00:00.000Z".into(),
            threshold: 0.0,
            issues: 0,
            promoted: 0,
            one_session: 0,
            below_threshold: 0,
        };
        let tx = conn.transaction().unwrap();
        replace(&tx, &home, &promotion, &[]).unwrap();
        tx.commit().unwrap();
        let current = load(&home).unwrap();
        assert_eq!(current.promotion, Some(promotion.clone()));
        assert_eq!(current.calls, 4);

        clear(&conn, home.index_db().as_std_path()).unwrap();
        let stale = load(&home).unwrap_err();
        assert_eq!(why(&stale), Some(Unpromoted::OutOfDate));
        assert_eq!(
            stale.to_string(),
            "findings are out of date: the index changed after the last promote; \
             run mcpeval promote"
        );

        // promote again: current once more.
        let tx = conn.transaction().unwrap();
        replace(&tx, &home, &promotion, &[]).unwrap();
        tx.commit().unwrap();
        assert!(load(&home).is_ok());
    }
}
