//! Failure windows and blast radius, derived from the indexed calls.
//!
//! Windows are computed per session of one server, in `seq` order, over
//! capture calls only: probe calls are the suite's own traffic and must
//! never make a failure look longer, wider or recovered. A window of group
//! G = (server, tool, template_id) opens at a failed call of G and closes
//! at the next ok call to the same (server, tool), or at the session's last
//! call when none comes. Failures of G inside an open window extend it. The
//! tools with an error call inside a window's seq range are kept, so the
//! blast radius of G is the number of distinct tools over its windows.
//!
//! Sessions are independent, so a run recomputes only the sessions its new
//! calls belong to, streaming one call at a time.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::mpsc::Receiver;

use rusqlite::{Connection, Statement, params};
use shared::error::Result;

use crate::feed::Derived;
use crate::schema;

/// Which sessions to recompute.
pub enum Scope {
    /// Every session (after a rebuild).
    All,
    /// These (session, server) pairs.
    Sessions(HashSet<(String, String)>),
    /// None: every session's windows were derived and stored during the
    /// load (see `feed.rs`).
    Derived,
}

/// A closed window, ready to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub tool: String,
    pub template_id: Option<String>,
    pub open_seq: i64,
    pub close_seq: i64,
    pub recovered: bool,
    pub turns: i64,
    pub failures: i64,
    /// Distinct tools with an error call inside the window, sorted.
    pub tools: Vec<String>,
}

#[derive(Debug)]
struct Open {
    tool: String,
    template_id: Option<String>,
    open_seq: i64,
    failures: i64,
    tools: BTreeSet<String>,
}

/// The windows of one session, fed its calls in `seq` order.
#[derive(Debug, Default)]
pub struct Session {
    open: Vec<Open>,
    last_seq: i64,
    closed: Vec<Window>,
}

impl Session {
    /// Feeds the next call of the session.
    pub fn call(&mut self, seq: i64, tool: &str, outcome: &str, template_id: Option<&str>) {
        self.last_seq = seq;
        match outcome {
            "error" => {
                // Every open window sees this error inside its range.
                for w in &mut self.open {
                    if !w.tools.contains(tool) {
                        w.tools.insert(tool.to_owned());
                    }
                }
                match self
                    .open
                    .iter_mut()
                    .find(|w| w.tool == tool && w.template_id.as_deref() == template_id)
                {
                    Some(w) => w.failures += 1,
                    None => self.open.push(Open {
                        tool: tool.to_owned(),
                        template_id: template_id.map(str::to_owned),
                        open_seq: seq,
                        failures: 1,
                        tools: BTreeSet::from([tool.to_owned()]),
                    }),
                }
            }
            "ok" => {
                let (closing, open): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.open)
                    .into_iter()
                    .partition(|w| w.tool == tool);
                self.open = open;
                for w in closing {
                    self.closed.push(close(w, seq, true));
                }
            }
            // An unknown outcome neither fails nor recovers.
            _ => {}
        }
    }

    /// Ends the session: windows still open ran to its last call.
    pub fn finish(mut self) -> Vec<Window> {
        let last = self.last_seq;
        for w in std::mem::take(&mut self.open) {
            self.closed.push(close(w, last, false));
        }
        self.closed
    }
}

fn close(w: Open, close_seq: i64, recovered: bool) -> Window {
    Window {
        turns: close_seq - w.open_seq + i64::from(!recovered),
        tool: w.tool,
        template_id: w.template_id,
        open_seq: w.open_seq,
        close_seq,
        recovered,
        failures: w.failures,
        tools: w.tools.into_iter().collect(),
    }
}

/// Replaces the stored windows of `scope` with freshly computed ones.
pub fn recompute(conn: &Connection, db: &Path, scope: &Scope) -> Result<()> {
    let fail = schema::fail(db);
    let mut store = Store::new(conn, db)?;
    let columns = "SELECT session, server, seq, tool, outcome, template_id FROM calls";
    match scope {
        Scope::Derived => {}
        Scope::All => {
            conn.execute_batch("DELETE FROM window_tools; DELETE FROM windows;")
                .map_err(&fail)?;
            let mut stmt = conn
                .prepare(&format!(
                    "{columns} WHERE origin = 'capture' ORDER BY session, server, seq, id"
                ))
                .map_err(&fail)?;
            feed(&mut stmt, [], &mut store)?;
        }
        Scope::Sessions(sessions) => {
            let mut forget = conn
                .prepare(
                    "DELETE FROM window_tools WHERE window_id IN
                        (SELECT id FROM windows WHERE session = ?1 AND server = ?2)",
                )
                .map_err(&fail)?;
            let mut drop = conn
                .prepare("DELETE FROM windows WHERE session = ?1 AND server = ?2")
                .map_err(&fail)?;
            let mut stmt = conn
                .prepare(&format!(
                    "{columns} WHERE session = ?1 AND server = ?2 AND origin = 'capture' ORDER BY seq, id"
                ))
                .map_err(&fail)?;
            for (session, server) in sessions {
                forget.execute([session, server]).map_err(&fail)?;
                drop.execute([session, server]).map_err(&fail)?;
                feed(&mut stmt, [session, server], &mut store)?;
            }
        }
    }
    Ok(())
}

/// Stores windows derived off the database as they arrive; the caller has
/// emptied the windows tables.
pub fn store(conn: &Connection, db: &Path, derived: &Receiver<Vec<Derived>>) -> Result<()> {
    let mut store = Store::new(conn, db)?;
    for batch in derived {
        for d in batch {
            store.save(&d.session, &d.server, d.windows)?;
        }
    }
    Ok(())
}

/// Streams calls ordered by (session, server, seq) through [`Session`].
fn feed(
    stmt: &mut Statement<'_>,
    args: impl rusqlite::Params,
    store: &mut Store<'_>,
) -> Result<()> {
    let fail = schema::fail(store.db);
    let mut rows = stmt.query(args).map_err(&fail)?;
    let mut current: Option<(String, String, Session)> = None;
    while let Some(row) = rows.next().map_err(&fail)? {
        let session = row
            .get_ref(0)
            .and_then(|v| Ok(v.as_str()?))
            .map_err(&fail)?;
        let server = row
            .get_ref(1)
            .and_then(|v| Ok(v.as_str()?))
            .map_err(&fail)?;
        let same = matches!(&current, Some((s, v, _)) if s == session && v == server);
        if !same {
            if let Some((s, v, done)) = current.take() {
                store.save(&s, &v, done.finish())?;
            }
            current = Some((session.to_owned(), server.to_owned(), Session::default()));
        }
        let tool = row
            .get_ref(3)
            .and_then(|v| Ok(v.as_str()?))
            .map_err(&fail)?;
        let outcome = row
            .get_ref(4)
            .and_then(|v| Ok(v.as_str()?))
            .map_err(&fail)?;
        let template = row
            .get_ref(5)
            .and_then(|v| Ok(v.as_str_or_null()?))
            .map_err(&fail)?;
        let seq: i64 = row.get(2).map_err(&fail)?;
        if let Some((_, _, s)) = &mut current {
            s.call(seq, tool, outcome, template);
        }
    }
    if let Some((s, v, done)) = current {
        store.save(&s, &v, done.finish())?;
    }
    Ok(())
}

struct Store<'a> {
    conn: &'a Connection,
    db: &'a Path,
    window: Statement<'a>,
    tool: Statement<'a>,
}

impl<'a> Store<'a> {
    fn new(conn: &'a Connection, db: &'a Path) -> Result<Store<'a>> {
        let fail = schema::fail(db);
        Ok(Store {
            conn,
            db,
            window: conn
                .prepare(
                    "INSERT INTO windows(session, server, tool, template_id, open_seq, close_seq,
                        recovered, turns, failures) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(&fail)?,
            tool: conn
                .prepare("INSERT INTO window_tools(window_id, tool) VALUES (?1, ?2)")
                .map_err(&fail)?,
        })
    }

    fn save(&mut self, session: &str, server: &str, windows: Vec<Window>) -> Result<()> {
        let fail = schema::fail(self.db);
        for w in windows {
            self.window
                .execute(params![
                    session,
                    server,
                    w.tool,
                    w.template_id,
                    w.open_seq,
                    w.close_seq,
                    w.recovered,
                    w.turns,
                    w.failures
                ])
                .map_err(&fail)?;
            let id = self.conn.last_insert_rowid();
            for tool in &w.tools {
                self.tool.execute(params![id, tool]).map_err(&fail)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(calls: &[(i64, &str, &str, Option<&str>)]) -> Vec<Window> {
        let mut s = Session::default();
        for &(seq, tool, outcome, template) in calls {
            s.call(seq, tool, outcome, template);
        }
        s.finish()
    }

    #[test]
    fn a_window_recovers_at_the_next_ok_call_to_its_tool() {
        let w = run(&[
            (1, "a", "error", Some("t-1")),
            (2, "b", "ok", None),
            (3, "a", "error", Some("t-1")),
            (4, "a", "ok", None),
            (5, "a", "error", Some("t-1")),
        ]);
        assert_eq!(w.len(), 2);
        assert_eq!(
            (
                w[0].open_seq,
                w[0].close_seq,
                w[0].turns,
                w[0].failures,
                w[0].recovered
            ),
            (1, 4, 3, 2, true)
        );
        // Unrecovered: runs to the last call, turns = last - open + 1.
        assert_eq!(
            (w[1].open_seq, w[1].close_seq, w[1].turns, w[1].recovered),
            (5, 5, 1, false)
        );
    }

    #[test]
    fn blast_radius_counts_tools_failing_inside_the_window() {
        let w = run(&[
            (1, "a", "error", None),
            (2, "b", "error", Some("t-2")),
            (3, "c", "unknown", None),
            (4, "b", "ok", None),
            (5, "c", "error", Some("t-3")),
            (6, "a", "ok", None),
        ]);
        let a = w.iter().find(|w| w.tool == "a").unwrap();
        assert_eq!(a.tools, ["a", "b", "c"]);
        assert_eq!((a.turns, a.template_id.as_deref()), (5, None));
        let b = w.iter().find(|w| w.tool == "b").unwrap();
        assert_eq!((b.tools.clone(), b.turns), (vec!["b".to_owned()], 2));
        let c = w.iter().find(|w| w.tool == "c").unwrap();
        assert_eq!((c.close_seq, c.turns, c.recovered), (6, 2, false));
    }

    #[test]
    fn other_templates_of_a_tool_are_other_groups_closed_by_the_same_ok() {
        let w = run(&[
            (1, "a", "error", Some("t-1")),
            (2, "a", "error", Some("t-2")),
            (3, "a", "ok", None),
        ]);
        assert_eq!(w.len(), 2);
        assert!(
            w.iter()
                .all(|w| w.close_seq == 3 && w.failures == 1 && w.tools == ["a"])
        );
    }
}
