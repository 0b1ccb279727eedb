//! Failure windows and blast radius against a reference: the algorithm the
//! index used before windows were stored as call ranges (every open window
//! kept the set of tools failing inside it), kept here as the oracle. The
//! index's `windows`, `window_tools` and `group_blast`, and the blast
//! radius `promote` stores with each finding, must agree with it on
//! generated journals: one long failure window over many tools, and
//! random mixes of sessions, servers, repeated seqs, probe calls and
//! unanswered calls, after a first index, an incremental refresh and a
//! rebuild.

use std::collections::{BTreeMap, BTreeSet};

use crate::index::{db, indexed};
use crate::records::{Rec, lines, template, write};
use crate::support::{Store, text};

/// A window as the oracle derives it, in the columns the index keeps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Window {
    session: String,
    server: String,
    tool: String,
    template_id: Option<String>,
    open_seq: i64,
    close_seq: i64,
    recovered: bool,
    turns: i64,
    failures: i64,
    tools: Vec<String>,
}

struct Open {
    tool: String,
    template_id: Option<String>,
    open_seq: i64,
    failures: i64,
    tools: BTreeSet<String>,
}

/// The reference: one session of one server, its capture calls in (seq,
/// row) order as (seq, tool, outcome, template).
fn oracle(
    session: &str,
    server: &str,
    calls: &[(i64, String, String, Option<String>)],
) -> Vec<Window> {
    let mut open: Vec<Open> = Vec::new();
    let mut closed = Vec::new();
    let mut last = 0;
    let close = |w: Open, close_seq: i64, recovered: bool| Window {
        session: session.to_owned(),
        server: server.to_owned(),
        turns: close_seq - w.open_seq + i64::from(!recovered),
        tool: w.tool,
        template_id: w.template_id,
        open_seq: w.open_seq,
        close_seq,
        recovered,
        failures: w.failures,
        tools: w.tools.into_iter().collect(),
    };
    for (seq, tool, outcome, template) in calls {
        last = *seq;
        match outcome.as_str() {
            "error" => {
                for w in &mut open {
                    w.tools.insert(tool.clone());
                }
                match open
                    .iter_mut()
                    .find(|w| &w.tool == tool && &w.template_id == template)
                {
                    Some(w) => w.failures += 1,
                    None => open.push(Open {
                        tool: tool.clone(),
                        template_id: template.clone(),
                        open_seq: *seq,
                        failures: 1,
                        tools: BTreeSet::from([tool.clone()]),
                    }),
                }
            }
            "ok" => {
                let (closing, still): (Vec<Open>, Vec<Open>) =
                    open.into_iter().partition(|w| &w.tool == tool);
                open = still;
                closed.extend(closing.into_iter().map(|w| close(w, *seq, true)));
            }
            _ => {}
        }
    }
    closed.extend(open.into_iter().map(|w| close(w, last, false)));
    closed
}

/// The oracle over `records` in row order: windows, and the blast radius of
/// each (server, tool, template) with a window.
fn expected(records: &[Rec]) -> (Vec<Window>, BTreeMap<Group, i64>) {
    let mut sessions: Sessions = BTreeMap::new();
    for (row, r) in records.iter().enumerate() {
        let v = &r.0;
        if v["origin"] != "capture" {
            continue;
        }
        let key = (
            v["identity"]["session"].as_str().unwrap().to_owned(),
            v["server"].as_str().unwrap().to_owned(),
        );
        let call = (
            v["identity"]["seq"].as_i64().unwrap(),
            v["tool"].as_str().unwrap().to_owned(),
            v["outcome"].as_str().unwrap().to_owned(),
            v["error"]["template_id"].as_str().map(str::to_owned),
        );
        sessions.entry(key).or_default().push((call.0, row, call));
    }
    let mut windows = Vec::new();
    for ((session, server), mut calls) in sessions {
        calls.sort_by_key(|c| (c.0, c.1));
        let calls: Vec<Call> = calls.into_iter().map(|c| c.2).collect();
        windows.extend(oracle(&session, &server, &calls));
    }
    windows.sort();
    let mut tools: BTreeMap<Group, BTreeSet<String>> = BTreeMap::new();
    for w in &windows {
        tools
            .entry((w.server.clone(), w.tool.clone(), w.template_id.clone()))
            .or_default()
            .extend(w.tools.iter().cloned());
    }
    let blast = tools
        .into_iter()
        .map(|(g, t)| (g, t.len() as i64))
        .collect();
    (windows, blast)
}

type Call = (i64, String, String, Option<String>);
/// Capture calls by (session, server), each with its seq and row.
type Sessions = BTreeMap<(String, String), Vec<(i64, usize, Call)>>;
type Group = (String, String, Option<String>);

/// What the index holds: windows with their tools, and `group_blast`.
fn stored(store: &Store) -> (Vec<Window>, BTreeMap<Group, i64>) {
    let conn = db(store);
    let mut windows: Vec<Window> = conn
        .prepare(
            "SELECT session, server, tool, template_id, open_seq, close_seq, recovered, turns,
                    failures, (SELECT group_concat(tool, char(10)) FROM
                        (SELECT tool FROM window_tools t WHERE t.window_id = w.id ORDER BY tool))
             FROM windows w",
        )
        .unwrap()
        .query_map([], |r| {
            Ok(Window {
                session: r.get(0)?,
                server: r.get(1)?,
                tool: r.get(2)?,
                template_id: r.get(3)?,
                open_seq: r.get(4)?,
                close_seq: r.get(5)?,
                recovered: r.get(6)?,
                turns: r.get(7)?,
                failures: r.get(8)?,
                tools: r
                    .get::<_, String>(9)?
                    .split('\n')
                    .map(str::to_owned)
                    .collect(),
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    windows.sort();
    let blast = conn
        .prepare("SELECT server, tool, template_id, blast_radius FROM group_blast")
        .unwrap()
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (windows, blast)
}

/// The blast radius `promote` stored with each promoted error finding.
fn promoted(store: &Store) -> BTreeMap<Group, i64> {
    let out = store
        .cmd("mcpeval-promote")
        .args(["--threshold", "0", "--now", "2026-12-01T00:00:00Z"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    db(store)
        .prepare(
            "SELECT server, tool, template_id, blast_radius FROM findings WHERE kind = 'error'",
        )
        .unwrap()
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Checks the index and promote against the oracle for `records` (written
/// in row order).
fn check(store: &Store, records: &[Rec]) {
    let (windows, blast) = expected(records);
    let (got_windows, got_blast) = stored(store);
    assert_eq!(got_windows.len(), windows.len());
    for (got, want) in got_windows.iter().zip(&windows) {
        assert_eq!(got, want);
    }
    assert_eq!(got_blast, blast);
    let promoted = promoted(store);
    assert!(!promoted.is_empty(), "nothing promoted");
    for (group, radius) in &promoted {
        assert_eq!(Some(radius), blast.get(group), "{group:?}");
    }
}

/// A small deterministic generator (an LCG).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random mixes: sessions interleaved, repeated and out-of-order seqs,
/// three servers, tools sharing names across servers, several templates,
/// probe and unanswered calls.
fn mix(seed: u64, n: u64, first_event: u64) -> Vec<Rec> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|i| {
            let event = first_event + i;
            let session = rng.below(12);
            let seq = 1 + rng.below(60);
            let tool = format!("tool_{}", rng.below(9));
            let rec = match rng.below(10) {
                0..=4 => Rec::error(
                    event,
                    session,
                    seq,
                    &tool,
                    [None, Some(1), Some(2)][rng.below(3) as usize],
                ),
                5 => Rec::unanswered(event, session, seq, &tool),
                _ => Rec::ok(event, session, seq, &tool),
            };
            let rec = rec.server(["weather", "search", "files"][rng.below(3) as usize]);
            if rng.below(15) == 0 { rec.probe() } else { rec }
        })
        .collect()
}

#[test]
fn windows_and_blast_radius_match_the_reference_on_random_mixes() {
    for seed in [1, 2, 3] {
        let store = Store::new();
        let mut records = mix(seed, 1500, 0);
        for (i, part) in records.chunks(500).enumerate() {
            write(&store, i as u32 + 1, &lines(part));
        }
        indexed(&store);
        check(&store, &records);

        // An incremental refresh recomputes the sessions of the new calls.
        let more = mix(seed + 100, 300, 10_000);
        write(&store, 4, &lines(&more));
        records.extend(more);
        assert!(indexed(&store).starts_with("indexed 1800 calls (300 new)"));
        check(&store, &records);

        // A rebuild derives every session while reading.
        let out = crate::index::index(&store, &["--rebuild"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        check(&store, &records);
    }
}

#[test]
fn one_long_failure_window_over_many_tools_keeps_every_tool_in_each_radius() {
    // Two sessions, each failing 1,200 times over 600 tools without a
    // recovery, then one tool recovering: every group's window spans the
    // other tools' failures. The reference holds 600 tool sets of up to 600
    // names per session; the index stores 1,200 window rows.
    let store = Store::new();
    let mut records = Vec::new();
    for session in [1, 2] {
        for i in 0..1200u64 {
            let tool = format!("tool_{:03}", i % 600);
            records.push(Rec::error(
                session * 10_000 + i,
                session,
                i + 1,
                &tool,
                Some(i % 600),
            ));
        }
        records.push(Rec::ok(session * 10_000 + 1200, session, 1201, "tool_007"));
    }
    write(&store, 1, &lines(&records));
    indexed(&store);
    check(&store, &records);
    let (_, blast) = expected(&records);
    assert_eq!(blast.len(), 600);
    assert!(blast.values().all(|&b| b == 600));
    let seven = (
        "weather".to_owned(),
        "tool_007".to_owned(),
        Some(template(7)),
    );
    assert_eq!(blast[&seven], 600);
}

#[test]
fn an_index_from_before_window_ranges_is_rebuilt_on_the_next_run() {
    let store = Store::new();
    let records = mix(7, 400, 0);
    write(&store, 1, &lines(&records));
    indexed(&store);
    // Put index.db back as the previous release left it: tools listed per
    // window in a table, windows without their call range, version 2.
    before_session_numbers(&store);
    db(&store)
        .execute_batch(
            "DROP VIEW group_blast; DROP VIEW window_tools;
             ALTER TABLE windows DROP COLUMN open_call;
             ALTER TABLE windows DROP COLUMN close_call;
             ALTER TABLE promotion DROP COLUMN outdated_at;
             CREATE TABLE window_tools(window_id INTEGER NOT NULL, tool TEXT NOT NULL,
                 PRIMARY KEY (window_id, tool)) WITHOUT ROWID;
             CREATE VIEW group_blast AS
                 SELECT w.server, w.tool, w.template_id, count(DISTINCT w.id) AS windows,
                        count(DISTINCT t.tool) AS blast_radius
                 FROM windows w JOIN window_tools t ON t.window_id = w.id
                 GROUP BY w.server, w.tool, w.template_id;
             PRAGMA user_version = 2;",
        )
        .unwrap();
    assert_eq!(
        indexed(&store),
        "indexed 400 calls (400 new) from 1 journals in S s; full rebuild: no previous index"
    );
    check(&store, &records);
}

/// Puts `index.db` back as it was before sessions were numbered: calls and
/// windows keyed on the session token, no `sessions` table, version 4.
fn before_session_numbers(store: &Store) {
    db(store)
        .execute_batch(
            "DROP VIEW group_blast; DROP VIEW window_tools;
             DROP INDEX calls_by_session; DROP INDEX windows_by_session;
             ALTER TABLE calls DROP COLUMN session_no;
             ALTER TABLE calls DROP COLUMN contract_kept;
             ALTER TABLE calls DROP COLUMN contract_at;
             ALTER TABLE calls DROP COLUMN contract_keyword;
             ALTER TABLE windows DROP COLUMN session_no;
             DROP TABLE sessions;
             CREATE INDEX calls_by_session ON calls(session, server, seq);
             CREATE INDEX windows_by_session ON windows(session, server);
             CREATE VIEW window_tools AS
                 SELECT DISTINCT w.id AS window_id, c.tool AS tool
                 FROM windows w JOIN calls c
                   ON c.session = w.session AND c.server = w.server
                  AND c.seq BETWEEN w.open_seq AND w.close_seq
                  AND (c.seq, c.id) >= (w.open_seq, w.open_call)
                  AND (c.seq, c.id) <= (w.close_seq, w.close_call)
                 WHERE c.origin = 'capture' AND c.outcome = 'error';
             CREATE VIEW group_blast AS
                 SELECT w.server, w.tool, w.template_id, count(DISTINCT w.id) AS windows,
                        count(DISTINCT t.tool) AS blast_radius
                 FROM windows w JOIN window_tools t ON t.window_id = w.id
                 GROUP BY w.server, w.tool, w.template_id;
             PRAGMA user_version = 4;",
        )
        .unwrap();
}

#[test]
fn an_index_from_before_session_numbers_is_rebuilt_with_the_same_findings() {
    let store = Store::new();
    let records = mix(11, 600, 0);
    write(&store, 1, &lines(&records));
    indexed(&store);
    promoted(&store);
    let home = store.home();
    let before = (crate::dump::evidence(&home), crate::dump::findings(&home));
    before_session_numbers(&store);
    assert_eq!(
        indexed(&store),
        "indexed 600 calls (600 new) from 1 journals in S s; full rebuild: no previous index"
    );
    check(&store, &records);
    let after = (crate::dump::evidence(&home), crate::dump::findings(&home));
    assert_eq!(after, before);
    let numbered: i64 = db(&store)
        .query_row(
            "SELECT count(*) FROM calls c JOIN sessions s ON s.id = c.session_no
             WHERE s.session = c.session AND s.server = c.server",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(numbered, 600);
}

#[test]
fn sessions_are_numbered_in_the_order_they_are_first_read() {
    // Tokens are salted hashes in any order; their numbers follow the
    // journals, so an append's new sessions sort after every indexed one
    // in the session indexes.
    let store = Store::new();
    let first = [
        Rec::ok(1, 9, 1, "a"),
        Rec::error(2, 3, 1, "a", Some(1)),
        Rec::ok(3, 9, 2, "a").server("other"),
        Rec::ok(4, 3, 2, "a"),
    ];
    write(&store, 1, &lines(&first));
    indexed(&store);
    let more = [
        Rec::error(5, 7, 1, "b", Some(2)),
        Rec::ok(6, 1, 1, "b"),
        Rec::ok(7, 3, 3, "a"),
    ];
    crate::records::append(&store, 1, &lines(&more));
    indexed(&store);
    let session = crate::records::session;
    let numbered: Vec<(String, String)> = db(&store)
        .prepare("SELECT session, server FROM sessions ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let pair = |n, server: &str| (session(n), server.to_owned());
    assert_eq!(
        numbered,
        [
            pair(9, "weather"),
            pair(3, "weather"),
            pair(9, "other"),
            pair(7, "weather"),
            pair(1, "weather"),
        ]
    );
    // Session 7's window is stored under its number and spans its calls.
    let window: (i64, String) = db(&store)
        .query_row(
            "SELECT w.session_no, s.session FROM windows w JOIN sessions s ON s.id = w.session_no
             WHERE w.tool = 'b'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(window, (4, session(7)));
    let mut all = first.to_vec();
    all.extend(more);
    let (want, blast) = expected(&all);
    assert_eq!(stored(&store), (want, blast));
}
