//! `--history`: the lifecycle history of each listed finding, as JSON.
//!
//! Per finding: its state changes (promoted, verified, closed by hand,
//! re-keyed) and its verification runs, red and green, with their times,
//! read from `lifecycle.db`. It prints only ids, states, verdicts, reason
//! codes and times: never a closing reason (unredacted prose a person
//! typed), a case id, a binding or a digest, so it holds no more than the
//! findings themselves do. It never creates or changes a database beyond
//! what opening the lifecycle for the findings already does.

use std::io::Write;
use std::path::Path;

use rusqlite::Connection;
use shared::Result;
use shared::history::{Event, Histories, History, Run};
use shared::home::Home;
use store::catalog::Finding;
use store::db;

/// `{"history": [...]}` on one line, one entry per finding in `findings`.
pub fn json(out: &mut impl Write, home: &Home, findings: &[&Finding]) -> Result<()> {
    let conn = store::lifecycle::open_if_present(home)?;
    let path = home.lifecycle_db();
    let mut entries = Vec::with_capacity(findings.len());
    for f in findings {
        let (events, runs) = match &conn {
            Some(conn) => (
                events(conn, path.as_std_path(), &f.derived.id)?,
                runs(conn, path.as_std_path(), &f.derived.id)?,
            ),
            None => (Vec::new(), Vec::new()),
        };
        entries.push(History {
            finding: f.derived.id.clone(),
            state: f.state,
            streak: f.streak,
            reopened: f.reopened,
            events,
            runs,
        });
    }
    serde_json::to_writer(&mut *out, &Histories { history: entries })
        .map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

fn events(conn: &Connection, path: &Path, id: &str) -> Result<Vec<Event>> {
    let fail = |e| db::sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT at, event, from_state, to_state FROM history WHERE finding_id = ?1 ORDER BY id",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([id], |r| {
            let from: Option<String> = r.get(2)?;
            let to: Option<String> = r.get(3)?;
            let reopened = matches!(from.as_deref(), Some("verifying" | "closed"))
                && to.as_deref() == Some("open");
            Ok(Event {
                at: r.get(0)?,
                event: r.get(1)?,
                from,
                to,
                reopened,
            })
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

fn runs(conn: &Connection, path: &Path, id: &str) -> Result<Vec<Run>> {
    let fail = |e| db::sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT run_id, result, reason, started_at, finished_at, recorded_at, legacy
             FROM verifications WHERE finding_id = ?1 ORDER BY id",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([id], |r| {
            Ok(Run {
                run_id: r.get(0)?,
                result: r.get(1)?,
                reason: r.get(2)?,
                started_at: r.get(3)?,
                finished_at: r.get(4)?,
                recorded_at: r.get(5)?,
                legacy: r.get(6)?,
            })
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}
