//! A store that joins a team with a lifecycle of its own brings it along
//! (SPEC §11): on its first `index` with the team database, its
//! verification runs, annotations, history and imports go into the
//! team's lifecycle, and the state of each finding it tracked is
//! recomputed from the runs both sides recorded. Nothing is dropped
//! silently, and nothing is brought twice: the store is marked as joined
//! (`stores.joined_at`) in the transaction that writes the merged
//! lifecycle, so a kill leaves either both or neither.
//!
//! The store's own `lifecycle.db` is read, never changed: it stays the
//! record of what the store did alone.

use std::collections::BTreeMap;

use postgres::Transaction;
use rusqlite::{Connection, params};

use shared::error::Result;
use shared::home::Home;
use store::db;
use store::fault;
use store::lifecycle::{self, FindingState, State};
use store::verification;

use super::{Scope, Team, column, pg_error, write_team};

/// What a joining store brought into the team's lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Joined {
    /// Annotations the team did not hold yet.
    pub annotations: u64,
    /// Verification runs the team had not recorded yet.
    pub runs: u64,
    /// Findings whose state the store's lifecycle set or changed.
    pub states: u64,
}

impl Team {
    /// Brings this store's own lifecycle into the team's, once (see the
    /// module's comment); `None` when it had joined already or has none.
    pub fn join(&mut self, own: &Home) -> Result<Option<Joined>> {
        let shown = self.shown.clone();
        let store = self.store_id.clone();
        fault::team_statement();
        let joined: Option<String> = self
            .client
            .query_one(
                "SELECT joined_at FROM mcpeval.stores WHERE store_id = $1",
                &[&store],
            )
            .map_err(pg_error(&shown))
            .and_then(|row| column(&row, 0, &shown))?;
        if joined.is_some() {
            return Ok(None);
        }
        let own = own.own();
        if !own.lifecycle_db().exists() {
            fault::team_statement();
            let mut tx = self.client.transaction().map_err(pg_error(&shown))?;
            mark(&mut tx, &shown, &store)?;
            fault::team_statement();
            tx.commit().map_err(pg_error(&shown))?;
            return Ok(None);
        }
        // Brings an older lifecycle.db to this release's tables first.
        drop(lifecycle::open(&own)?);
        let joined = write_team(
            self,
            &own,
            &Scope::Nothing,
            false,
            Some(&store),
            |view, _| merge(&own, view),
        )?;
        Ok(Some(joined))
    }
}

/// Marks `store` as joined, inside the transaction that brought its
/// lifecycle.
pub(crate) fn mark(tx: &mut Transaction<'_>, shown: &str, store: &str) -> Result<()> {
    fault::team_statement();
    tx.execute(
        "UPDATE mcpeval.stores SET joined_at = $2 WHERE store_id = $1",
        &[&store, &shared::time::now_rfc3339()],
    )
    .map(drop)
    .map_err(pg_error(shown))
}

/// Adds `own`'s lifecycle to the view's (the team's, as the database
/// holds it now) in one SQLite transaction.
fn merge(own: &Home, view: &Home) -> Result<Joined> {
    let path = view.lifecycle_db();
    let mut conn = lifecycle::open(view)?;
    let fail = |e| db::sql_error(&path, e);
    conn.execute("ATTACH DATABASE ?1 AS own", [own.lifecycle_db().as_str()])
        .map_err(fail)?;
    let merged = db::write(&mut conn, |tx| merge_in(tx, &path));
    conn.execute("DETACH DATABASE own", []).map_err(fail)?;
    merged
}

/// Runs of one finding in one lifecycle: `main` (the team's) or `own`.
fn runs(tx: &Connection, schema: &str, finding: &str) -> rusqlite::Result<i64> {
    tx.query_row(
        &format!("SELECT count(*) FROM {schema}.verifications WHERE finding_id = ?1"),
        [finding],
        |r| r.get(0),
    )
}

fn merge_in(tx: &Connection, path: &camino::Utf8Path) -> Result<Joined> {
    let fail = |e| db::sql_error(path, e);
    // Which side's runs each of the store's findings has, before merging.
    let mut stmt = tx
        .prepare("SELECT finding_id FROM own.finding_state ORDER BY finding_id")
        .map_err(fail)?;
    let findings: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .map_err(fail)?
        .collect::<rusqlite::Result<_>>()
        .map_err(fail)?;
    drop(stmt);
    let mut before: BTreeMap<String, (bool, i64, i64)> = BTreeMap::new();
    for id in &findings {
        let held: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM main.finding_state WHERE finding_id = ?1",
                [id],
                |r| r.get(0),
            )
            .map_err(fail)?;
        let team = runs(tx, "main", id).map_err(fail)?;
        let mine = runs(tx, "own", id).map_err(fail)?;
        before.insert(id.clone(), (held, team, mine));
    }

    // Each annotation once: one made on this store and already pooled
    // (the same moment, kind, note and call) is not added again. Ids go
    // on from the team's: a view's own sequence may have counted an
    // earlier attempt that never reached the database.
    let annotations = tx
        .execute(
            "INSERT INTO main.annotations(id, created_at, kind, note, event_id, session, seq)
             SELECT (SELECT coalesce(max(id), 0) FROM main.annotations)
                        + row_number() OVER (ORDER BY o.id),
                    o.created_at, o.kind, o.note, o.event_id, o.session, o.seq
             FROM own.annotations o
             WHERE NOT EXISTS (SELECT 1 FROM main.annotations a
                 WHERE a.created_at = o.created_at AND a.kind = o.kind AND a.note = o.note
                   AND a.event_id IS o.event_id AND a.session IS o.session AND a.seq IS o.seq)
             ORDER BY o.id",
            [],
        )
        .map_err(fail)?;
    // A run earns credit once: one the team recorded too is not added.
    let runs_added = tx
        .execute(
            "INSERT INTO main.verifications(run_id, finding_id, case_id, binding, result, reason,
                 started_at, finished_at, recorded_at, legacy, digest, definition, target)
             SELECT run_id, finding_id, case_id, binding, result, reason, started_at,
                 finished_at, recorded_at, legacy, digest, definition, target
             FROM own.verifications o
             WHERE o.run_id IS NULL
                OR NOT EXISTS (SELECT 1 FROM main.verifications v WHERE v.run_id = o.run_id)
             ORDER BY o.id",
            [],
        )
        .map_err(fail)?;
    tx.execute(
        "INSERT INTO main.history(finding_id, at, event, from_state, to_state, detail)
         SELECT finding_id, at, event, from_state, to_state, detail FROM own.history ORDER BY id",
        [],
    )
    .map_err(fail)?;
    tx.execute(
        "INSERT OR IGNORE INTO main.imports(name, at, rows) SELECT name, at, rows FROM own.imports",
        [],
    )
    .map_err(fail)?;

    let mut joined = Joined {
        annotations: annotations as u64,
        runs: runs_added as u64,
        states: 0,
    };
    let now = shared::time::now_rfc3339();
    for (id, (held, team, mine)) in before {
        if !held {
            // The team never tracked it: the store's state is the one its
            // runs (all of them) made.
            tx.execute(
                "INSERT INTO main.finding_state(finding_id, state, streak, binding,
                     probe_attached, reopened, retired_for, updated_at, server, tool, kind,
                     defect_class, err_codes, failure_rate, streak_since, witnessed)
                 SELECT finding_id, state, streak, binding, probe_attached, reopened,
                     retired_for, updated_at, server, tool, kind, defect_class, err_codes,
                     failure_rate, streak_since, witnessed
                 FROM own.finding_state WHERE finding_id = ?1",
                [&id],
            )
            .map_err(fail)?;
            joined.states += 1;
        } else if team == 0 && (mine > 0 || own_moved(tx, &id).map_err(fail)?) {
            // Only the store has runs (or a closure by hand): its state
            // is the merged runs' state; the team's knowledge of the
            // finding's evidence is kept where it has one.
            tx.execute(
                "UPDATE main.finding_state SET
                     (state, streak, binding, probe_attached, reopened, updated_at,
                      streak_since, witnessed) =
                     (SELECT state, streak, binding, probe_attached, reopened, updated_at,
                             streak_since, witnessed
                      FROM own.finding_state o WHERE o.finding_id = ?1),
                     server = coalesce(server, (SELECT server FROM own.finding_state WHERE finding_id = ?1)),
                     tool = coalesce(tool, (SELECT tool FROM own.finding_state WHERE finding_id = ?1))
                 WHERE finding_id = ?1 AND retired_for IS NULL",
                [&id],
            )
            .map_err(fail)?;
            joined.states += 1;
        } else if team > 0 && mine > 0 {
            replay(tx, path, &id, &now)?;
            joined.states += 1;
        }
        // Otherwise only the team has runs: its state stands.
    }
    Ok(joined)
}

/// Whether the store's state of `id` moved past `open` without a run (a
/// closure by hand).
fn own_moved(tx: &Connection, id: &str) -> rusqlite::Result<bool> {
    tx.query_row(
        "SELECT count(*) > 0 FROM own.finding_state WHERE finding_id = ?1 AND state <> 'open'",
        [id],
        |r| r.get(0),
    )
}

/// Recomputes the state of `id` from every run both sides recorded, in
/// the order they started, by the rules one store applies run by run. A
/// closure is witnessed when either side's was; a contract-violation
/// finding closes only on a witnessed streak (as `verification::record`
/// holds it), so an unwitnessed one stays verifying until a run recorded
/// in the team closes it.
fn replay(tx: &Connection, path: &camino::Utf8Path, id: &str, now: &str) -> Result<()> {
    let fail = |e| db::sql_error(path, e);
    let current = lifecycle::state(tx, path.as_std_path(), id)?.unwrap_or_default();
    let mut stmt = tx
        .prepare(
            "SELECT result, binding, started_at FROM main.verifications
             WHERE finding_id = ?1 AND legacy = 0 AND run_id IS NOT NULL
             ORDER BY started_at, recorded_at, id",
        )
        .map_err(fail)?;
    let runs: Vec<(String, Option<String>, Option<String>)> = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(fail)?
        .collect::<rusqlite::Result<_>>()
        .map_err(fail)?;
    let mut state = FindingState {
        state: State::Open,
        streak: 0,
        binding: None,
        probe_attached: false,
        reopened: 0,
        updated_at: current.updated_at.clone(),
        streak_since: None,
        witnessed: None,
    };
    for (result, binding, started_at) in &runs {
        state = verification::advance(
            &state,
            result == "green",
            binding.as_deref().unwrap_or_default(),
            started_at.as_deref().unwrap_or_default(),
            now,
        );
    }
    if state.state == State::Closed {
        let witnessed: Option<bool> = tx
            .query_row(
                "SELECT max(witnessed) FROM (
                     SELECT witnessed FROM main.finding_state WHERE finding_id = ?1
                     UNION ALL SELECT witnessed FROM own.finding_state WHERE finding_id = ?1)",
                [id],
                |r| r.get(0),
            )
            .map_err(fail)?;
        let contract: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM main.finding_state WHERE finding_id = ?1 AND kind = ?2",
                params![id, shared::finding::Kind::Contract.as_str()],
                |r| r.get(0),
            )
            .map_err(fail)?;
        if contract && witnessed != Some(true) {
            state.state = State::Verifying;
        } else {
            state.witnessed = witnessed;
        }
    }
    tx.execute(
        "UPDATE main.finding_state SET state = ?2, streak = ?3, binding = ?4, probe_attached = ?5,
             reopened = ?6, updated_at = ?7, streak_since = ?8, witnessed = ?9
         WHERE finding_id = ?1",
        params![
            id,
            state.state.as_str(),
            state.streak,
            state.binding,
            state.probe_attached,
            state.reopened,
            state.updated_at,
            state.streak_since,
            state.witnessed
        ],
    )
    .map_err(fail)?;
    Ok(())
}
