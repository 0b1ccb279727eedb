//! Failure windows, derived from the indexed calls.
//!
//! Windows are computed per session of one server, in `seq` order (ties in
//! row order), over capture calls only: probe calls are the suite's own
//! traffic and must never make a failure look longer, wider or recovered.
//! A window of group G = (server, tool, template_id) opens at a failed call
//! of G and closes at the next ok call to the same (server, tool), or at
//! the session's last call when none comes. Failures of G inside an open
//! window extend it.
//!
//! A window is stored with the rows of its first and last call, so the
//! calls inside it are a range of `calls_by_session` (sessions by their
//! number, see `sessions.rs`). The tools failing in
//! that range (the blast radius) are never listed per window: a long
//! failure over many tools would make that list quadratic. Readers count
//! them from the calls in one pass (see `group_blast` in index.db).
//!
//! Sessions are independent, so a run recomputes only the sessions its new
//! calls belong to, streaming one call at a time. Each call costs a hash
//! lookup whatever the number of open windows.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::Receiver;

use rusqlite::{Connection, Statement, params};
use shared::error::Result;

use crate::schema;

/// The windows of one session of one server.
pub struct Derived {
    pub session: String,
    pub server: String,
    pub windows: Vec<Window>,
}

/// Which sessions to recompute.
pub enum Scope {
    /// Every session (after a rebuild).
    All,
    /// The (session, server) pairs of these numbers.
    Sessions(HashSet<i64>),
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
    /// Row ids of the opening call and of the closing one (the recovering
    /// ok call, or the session's last call).
    pub open_call: i64,
    pub close_call: i64,
    pub recovered: bool,
    pub turns: i64,
    pub failures: i64,
}

#[derive(Debug)]
struct Open {
    tool: String,
    template_id: Option<String>,
    open_seq: i64,
    open_call: i64,
    failures: i64,
}

/// The windows of one session, fed its calls in `(seq, id)` order.
#[derive(Debug, Default)]
pub struct Session {
    /// Windows in the order they opened; `None` once closed.
    open: Vec<Option<Open>>,
    /// Open windows by (tool, template): where in `open`.
    by_group: HashMap<(String, Option<String>), usize>,
    /// Open windows by tool, in the order they opened.
    by_tool: HashMap<String, Vec<usize>>,
    last: (i64, i64),
    closed: Vec<Window>,
}

impl Session {
    /// Feeds the next call of the session: its seq, row id, tool, outcome
    /// and template.
    pub fn call(
        &mut self,
        seq: i64,
        id: i64,
        tool: &str,
        outcome: &str,
        template_id: Option<&str>,
    ) {
        self.last = (seq, id);
        match outcome {
            "error" => {
                let key = (tool.to_owned(), template_id.map(str::to_owned));
                match self.by_group.get(&key) {
                    Some(&at) => {
                        if let Some(w) = &mut self.open[at] {
                            w.failures += 1;
                        }
                    }
                    None => {
                        let at = self.open.len();
                        self.open.push(Some(Open {
                            tool: key.0.clone(),
                            template_id: key.1.clone(),
                            open_seq: seq,
                            open_call: id,
                            failures: 1,
                        }));
                        match self.by_tool.get_mut(tool) {
                            Some(list) => list.push(at),
                            None => {
                                self.by_tool.insert(key.0.clone(), vec![at]);
                            }
                        }
                        self.by_group.insert(key, at);
                    }
                }
            }
            "ok" => {
                for at in self.by_tool.remove(tool).unwrap_or_default() {
                    if let Some(w) = self.open[at].take() {
                        self.by_group
                            .remove(&(w.tool.clone(), w.template_id.clone()));
                        self.closed.push(close(w, (seq, id), true));
                    }
                }
            }
            // An unknown outcome neither fails nor recovers.
            _ => {}
        }
    }

    /// Ends the session: windows still open ran to its last call.
    pub fn finish(mut self) -> Vec<Window> {
        let last = self.last;
        for w in std::mem::take(&mut self.open).into_iter().flatten() {
            self.closed.push(close(w, last, false));
        }
        self.closed
    }
}

fn close(w: Open, (close_seq, close_call): (i64, i64), recovered: bool) -> Window {
    Window {
        turns: close_seq - w.open_seq + i64::from(!recovered),
        tool: w.tool,
        template_id: w.template_id,
        open_seq: w.open_seq,
        close_seq,
        open_call: w.open_call,
        close_call,
        recovered,
        failures: w.failures,
    }
}

/// Replaces the stored windows of `scope` with freshly computed ones.
pub fn recompute(conn: &Connection, db: &Path, scope: &Scope) -> Result<()> {
    let fail = schema::fail(db);
    let mut store = Store::new(conn, db)?;
    let columns =
        "SELECT session, server, seq, tool, outcome, template_id, id, session_no FROM calls";
    match scope {
        Scope::Derived => {}
        Scope::All => {
            conn.execute_batch("DELETE FROM windows;").map_err(&fail)?;
            let mut stmt = conn
                .prepare(&format!(
                    "{columns} WHERE origin IN ('capture', 'otel') ORDER BY session_no, seq, id"
                ))
                .map_err(&fail)?;
            feed(&mut stmt, [], &mut store)?;
        }
        Scope::Sessions(sessions) => {
            // The touched sessions as one set, so their old windows go in
            // one statement and their calls come in one ordered scan: a
            // statement per session was most of a small append's cost.
            let mut numbers: Vec<i64> = sessions.iter().copied().collect();
            numbers.sort_unstable();
            let set = serde_json::to_string(&numbers).expect("numbers serialize");
            let touched = "SELECT value FROM json_each(?1)";
            conn.execute(
                &format!("DELETE FROM windows WHERE session_no IN ({touched})"),
                [&set],
            )
            .map_err(&fail)?;
            let mut stmt = conn
                .prepare(&format!(
                    "{columns} WHERE session_no IN ({touched}) AND origin IN ('capture', 'otel') \
                     ORDER BY session_no, seq, id"
                ))
                .map_err(&fail)?;
            feed(&mut stmt, [&set], &mut store)?;
        }
    }
    Ok(())
}

/// Stores windows derived off the database as they arrive; the caller has
/// emptied the windows tables.
pub fn store(conn: &Connection, db: &Path, derived: &Receiver<Vec<Derived>>) -> Result<()> {
    let fail = schema::fail(db);
    let mut store = Store::new(conn, db)?;
    // Each session comes once, and the load numbered every one.
    let mut number = conn
        .prepare("SELECT id FROM sessions WHERE session = ?1 AND server = ?2")
        .map_err(&fail)?;
    for batch in derived {
        for d in batch {
            let session_no: i64 = number
                .query_row([&d.session, &d.server], |row| row.get(0))
                .map_err(&fail)?;
            store.save(&d.session, &d.server, session_no, d.windows)?;
        }
    }
    Ok(())
}

/// Streams calls ordered by (session number, seq) through [`Session`].
fn feed(
    stmt: &mut Statement<'_>,
    args: impl rusqlite::Params,
    store: &mut Store<'_>,
) -> Result<()> {
    let fail = schema::fail(store.db);
    let mut rows = stmt.query(args).map_err(&fail)?;
    let mut current: Option<(i64, String, String, Session)> = None;
    while let Some(row) = rows.next().map_err(&fail)? {
        let session_no: i64 = row.get(7).map_err(&fail)?;
        let same = matches!(&current, Some((n, ..)) if *n == session_no);
        if !same {
            if let Some((n, s, v, done)) = current.take() {
                store.save(&s, &v, n, done.finish())?;
            }
            let session = row
                .get_ref(0)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(&fail)?;
            let server = row
                .get_ref(1)
                .and_then(|v| Ok(v.as_str()?))
                .map_err(&fail)?;
            current = Some((
                session_no,
                session.to_owned(),
                server.to_owned(),
                Session::default(),
            ));
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
        let id: i64 = row.get(6).map_err(&fail)?;
        if let Some((.., s)) = &mut current {
            s.call(seq, id, tool, outcome, template);
        }
    }
    if let Some((n, s, v, done)) = current {
        store.save(&s, &v, n, done.finish())?;
    }
    Ok(())
}

struct Store<'a> {
    db: &'a Path,
    window: Statement<'a>,
}

impl<'a> Store<'a> {
    fn new(conn: &'a Connection, db: &'a Path) -> Result<Store<'a>> {
        let fail = schema::fail(db);
        Ok(Store {
            db,
            window: conn
                .prepare(
                    "INSERT INTO windows(session, server, tool, template_id, open_seq, close_seq,
                        recovered, turns, failures, open_call, close_call, session_no)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )
                .map_err(&fail)?,
        })
    }

    fn save(
        &mut self,
        session: &str,
        server: &str,
        session_no: i64,
        windows: Vec<Window>,
    ) -> Result<()> {
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
                    w.failures,
                    w.open_call,
                    w.close_call,
                    session_no
                ])
                .map_err(&fail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(calls: &[(i64, &str, &str, Option<&str>)]) -> Vec<Window> {
        let mut s = Session::default();
        for (id, &(seq, tool, outcome, template)) in (1..).zip(calls) {
            s.call(seq, id, tool, outcome, template);
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
    fn a_window_spans_the_rows_from_its_opening_to_its_closing_call() {
        let w = run(&[
            (1, "a", "error", None),
            (2, "b", "error", Some("t-2")),
            (3, "c", "unknown", None),
            (4, "b", "ok", None),
            (5, "c", "error", Some("t-3")),
            (6, "a", "ok", None),
        ]);
        let a = w.iter().find(|w| w.tool == "a").unwrap();
        assert_eq!((a.open_call, a.close_call), (1, 6));
        assert_eq!((a.turns, a.template_id.as_deref()), (5, None));
        let b = w.iter().find(|w| w.tool == "b").unwrap();
        assert_eq!((b.open_call, b.close_call, b.turns), (2, 4, 2));
        let c = w.iter().find(|w| w.tool == "c").unwrap();
        assert_eq!((c.close_seq, c.turns, c.recovered), (6, 2, false));
        // Unrecovered: it runs to the session's last row.
        assert_eq!((c.open_call, c.close_call), (5, 6));
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
                .all(|w| w.close_seq == 3 && w.failures == 1 && w.close_call == 3)
        );
    }
}
