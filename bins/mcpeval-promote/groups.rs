//! Reading failure groups and their evidence out of `index.db`.
//!
//! Only captured calls count: probe calls are the verifier's own traffic and
//! never promote. The calls are read in one pass and aggregated here; the
//! small derived tables (windows, annotation links) by SQL. No raw value
//! exists in the index to be read.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use shared::Result;
use shared::finding::{Evidence, Kind};
use store::db::sql_error;

/// A group's key: kind, server, tool and (errors only) template id.
pub type Key = (Kind, String, String, Option<String>);

/// Args shapes kept per group, most frequent first.
const SHAPES_PER_GROUP: usize = 5;

/// One failure group with everything its score and class need.
#[derive(Debug, Clone)]
pub struct Group {
    pub kind: Kind,
    pub server: String,
    pub tool: String,
    pub template_id: Option<String>,
    pub failures: u64,
    /// All captured calls to (server, tool).
    pub calls: u64,
    pub sessions: u64,
    pub first_seen: String,
    pub last_seen: String,
    pub evidence: Evidence,
    /// Codes with their counts.
    pub codes: Vec<(i64, u64)>,
    pub args_shapes: Vec<String>,
    /// Turns of each failure window.
    pub turns: Vec<f64>,
    pub blast_radius: u64,
}

impl Group {
    pub fn key(&self) -> Key {
        (
            self.kind,
            self.server.clone(),
            self.tool.clone(),
            self.template_id.clone(),
        )
    }

    /// The most frequent code (ties: the smaller code), if any.
    pub fn err_code(&self) -> Option<i64> {
        self.codes
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|c| c.0)
    }
}

/// Loads every group from the index.
pub fn load(conn: &Connection, path: &Path) -> Result<Vec<Group>> {
    let fail = |e| sql_error(path, e);
    let mut scan = Scan::read(conn, path)?;
    let mut groups: HashMap<Key, Group> = HashMap::new();
    for (server, tools) in &scan.servers {
        for (tool, calls) in tools {
            let errors = calls.errors.iter().map(|(t, f)| (Some(t.as_str()), f));
            let untemplated = calls.untemplated.iter().map(|f| (None, f));
            for (template, failures) in errors.chain(untemplated) {
                let group = failures.group(Kind::Error, server, tool, template, calls.calls);
                groups.insert(group.key(), group);
            }
            if let Some(failures) = &calls.malformed {
                let group = failures.group(Kind::Malformed, server, tool, None, calls.calls);
                groups.insert(group.key(), group);
            }
        }
    }

    // Annotated calls are few: SQL reads them through their links.
    let mut stmt = conn
        .prepare(
            "SELECT server, tool, count(*), count(DISTINCT session), min(started_at), max(started_at)
             FROM false_success_calls GROUP BY server, tool",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u64>(2)?,
                r.get::<_, u64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (server, tool, failures, sessions, first_seen, last_seen) = row.map_err(fail)?;
        let group = Group {
            kind: Kind::FalseSuccess,
            calls: scan.calls(&server, &tool),
            template_id: None,
            failures,
            sessions,
            first_seen,
            last_seen,
            evidence: Evidence {
                err_codes: Vec::new(),
                retryable_true: 0,
                retryable_false: 0,
                retryable_unreported: 0,
                unadvertised_failures: 0,
                failures,
            },
            codes: Vec::new(),
            args_shapes: Vec::new(),
            turns: Vec::new(),
            blast_radius: 1,
            server,
            tool,
        };
        groups.insert(group.key(), group);
    }
    false_success_shapes(conn, path, &mut groups)?;

    let error_key = |server: String, tool: String, template: Option<String>| {
        (Kind::Error, server, tool, template)
    };

    let mut stmt = conn
        .prepare("SELECT server, tool, template_id, turns FROM windows ORDER BY id")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                error_key(r.get(0)?, r.get(1)?, r.get(2)?),
                r.get::<_, f64>(3)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (key, turns) = row.map_err(fail)?;
        if let Some(g) = groups.get_mut(&key) {
            g.turns.push(turns);
        }
    }

    for (key, blast) in scan.blast(conn, path)? {
        if let Some(g) = groups.get_mut(&key) {
            g.blast_radius = blast.max(1);
        }
    }

    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by_key(Group::key);
    Ok(groups)
}

/// What one pass over the captured calls gathers: per server and tool,
/// its calls and its failures by group. Hash maps instead of SQL's GROUP
/// BY, which sorted a million rows for the per-tool counts alone; memory
/// grows with distinct names and failed calls, not with all calls.
#[derive(Default)]
struct Scan {
    servers: HashMap<String, HashMap<String, ToolCalls>>,
    /// (server, tool) pairs numbered as first seen.
    tools: u32,
    /// (session, server) pairs with an error call, numbered as first seen.
    streams: HashMap<String, HashMap<String, u32>>,
    stream_count: u32,
    /// Every error call, for the blast radius: (stream, seq, row id, tool).
    errors: Vec<(u32, i64, i64, u32)>,
}

#[derive(Default)]
struct ToolCalls {
    /// The number of (server, tool) among all seen.
    index: u32,
    calls: u64,
    /// Errors by template id.
    errors: HashMap<String, Failures>,
    /// Errors without a template id (their own group).
    untemplated: Option<Failures>,
    malformed: Option<Failures>,
}

/// The failed calls of one group.
#[derive(Default)]
struct Failures {
    failures: u64,
    sessions: HashSet<String>,
    first_seen: String,
    last_seen: String,
    retryable_true: u64,
    retryable_false: u64,
    retryable_unreported: u64,
    unadvertised: u64,
    codes: HashMap<i64, u64>,
    shapes: HashMap<String, u64>,
}

impl Scan {
    fn read(conn: &Connection, path: &Path) -> Result<Scan> {
        let fail = |e| sql_error(path, e);
        let mut stmt = conn
            .prepare(
                "SELECT server, tool, outcome, unknown, template_id, session, started_at,
                        retryable, advertised, code, args_shape, seq, id
                 FROM calls WHERE origin IN ('capture', 'otel')",
            )
            .map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut scan = Scan::default();
        while let Some(r) = rows.next().map_err(fail)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
            let calls = scan.tool(text(0).map_err(fail)?, text(1).map_err(fail)?);
            calls.calls += 1;
            let tool = calls.index;
            let (failures, kind) = match (text(2).map_err(fail)?, r.get_ref(3).map_err(fail)?) {
                ("error", _) => {
                    let template = r
                        .get_ref(4)
                        .and_then(|v| Ok(v.as_str_or_null()?))
                        .map_err(fail)?;
                    let failures = match template {
                        Some(t) => match calls.errors.get_mut(t) {
                            Some(f) => f,
                            None => calls.errors.entry(t.to_owned()).or_default(),
                        },
                        None => calls.untemplated.get_or_insert_default(),
                    };
                    (failures, Kind::Error)
                }
                ("unknown", ValueRef::Text(b"malformed")) => {
                    (calls.malformed.get_or_insert_default(), Kind::Malformed)
                }
                _ => continue,
            };
            failures.failures += 1;
            let session = text(5).map_err(fail)?;

            if !failures.sessions.contains(session) {
                failures.sessions.insert(session.to_owned());
            }
            let started = text(6).map_err(fail)?;
            if failures.first_seen.is_empty() || started < failures.first_seen.as_str() {
                started.clone_into(&mut failures.first_seen);
            }
            if started > failures.last_seen.as_str() {
                started.clone_into(&mut failures.last_seen);
            }
            let shape = text(10).map_err(fail)?;
            match failures.shapes.get_mut(shape) {
                Some(n) => *n += 1,
                None => {
                    failures.shapes.insert(shape.to_owned(), 1);
                }
            }
            // Malformed results carry no error: codes and retryability
            // are an error group's evidence only.
            if kind == Kind::Error {
                match r.get::<_, Option<bool>>(7).map_err(fail)? {
                    Some(true) => failures.retryable_true += 1,
                    Some(false) => failures.retryable_false += 1,
                    None => failures.retryable_unreported += 1,
                }
                if r.get::<_, Option<bool>>(8).map_err(fail)? == Some(false) {
                    failures.unadvertised += 1;
                }
                if let Some(code) = r.get::<_, Option<i64>>(9).map_err(fail)? {
                    *failures.codes.entry(code).or_default() += 1;
                }
                let stream = scan.stream(text(5).map_err(fail)?, text(0).map_err(fail)?);
                let (seq, id) = (r.get(11).map_err(fail)?, r.get(12).map_err(fail)?);
                scan.errors.push((stream, seq, id, tool));
            }
        }
        Ok(scan)
    }

    /// The entry of (server, tool), copying the names only when new.
    fn tool(&mut self, server: &str, tool: &str) -> &mut ToolCalls {
        if !self.servers.contains_key(server) {
            self.servers.insert(server.to_owned(), HashMap::new());
        }
        let tools = self.servers.get_mut(server).expect("inserted");
        if !tools.contains_key(tool) {
            let index = self.tools;
            self.tools += 1;
            tools.insert(
                tool.to_owned(),
                ToolCalls {
                    index,
                    ..ToolCalls::default()
                },
            );
        }
        tools.get_mut(tool).expect("inserted")
    }

    /// The number of (session, server).
    fn stream(&mut self, session: &str, server: &str) -> u32 {
        let next = self.stream_count;
        if !self.streams.contains_key(server) {
            self.streams.insert(server.to_owned(), HashMap::new());
        }
        let sessions = self.streams.get_mut(server).expect("inserted");
        match sessions.get(session) {
            Some(&n) => n,
            None => {
                sessions.insert(session.to_owned(), next);
                self.stream_count += 1;
                next
            }
        }
    }

    /// The blast radius of every error group with a window: the distinct
    /// tools with an error call inside any of its windows. Each window is a
    /// range of its session's error calls in (seq, row id) order; a tool is
    /// counted once per group by stamping it with the group's number, so
    /// nothing is allocated per window or per tool counted.
    fn blast(&mut self, conn: &Connection, path: &Path) -> Result<Vec<(Key, u64)>> {
        let fail = |e| sql_error(path, e);
        self.errors.sort_unstable();
        let mut stmt = conn
            .prepare(
                "SELECT server, tool, template_id, session, open_seq, open_call, close_seq,
                        close_call
                 FROM windows ORDER BY server, tool, template_id",
            )
            .map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut stamps = vec![0u32; self.tools as usize];
        let mut out: Vec<(Key, u64)> = Vec::new();
        while let Some(r) = rows.next().map_err(fail)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
            let (server, tool) = (text(0).map_err(fail)?, text(1).map_err(fail)?);
            let template = r
                .get_ref(2)
                .and_then(|v| Ok(v.as_str_or_null()?))
                .map_err(fail)?;
            let same = matches!(out.last(), Some(((_, s, t, p), _))
                if s == server && t == tool && p.as_deref() == template);
            if !same {
                let key = (
                    Kind::Error,
                    server.to_owned(),
                    tool.to_owned(),
                    template.map(str::to_owned),
                );
                out.push((key, 0));
            }
            let group = out.len() as u32;
            let session = text(3).map_err(fail)?;
            let Some(&stream) = self.streams.get(server).and_then(|s| s.get(session)) else {
                continue;
            };
            let from: (i64, i64) = (r.get(4).map_err(fail)?, r.get(5).map_err(fail)?);
            let to: (i64, i64) = (r.get(6).map_err(fail)?, r.get(7).map_err(fail)?);
            let lo = self
                .errors
                .partition_point(|e| (e.0, e.1, e.2) < (stream, from.0, from.1));
            let hi = self
                .errors
                .partition_point(|e| (e.0, e.1, e.2) <= (stream, to.0, to.1));
            let count = &mut out.last_mut().expect("pushed").1;
            for e in &self.errors[lo..hi.max(lo)] {
                let stamp = &mut stamps[e.3 as usize];
                if *stamp != group {
                    *stamp = group;
                    *count += 1;
                }
            }
        }
        Ok(out)
    }

    /// Captured calls to (server, tool): every group's denominator.
    fn calls(&self, server: &str, tool: &str) -> u64 {
        self.servers
            .get(server)
            .and_then(|tools| tools.get(tool))
            .map_or(0, |t| t.calls)
    }
}

impl Failures {
    fn group(
        &self,
        kind: Kind,
        server: &str,
        tool: &str,
        template: Option<&str>,
        calls: u64,
    ) -> Group {
        let mut codes: Vec<(i64, u64)> = self.codes.iter().map(|(&c, &n)| (c, n)).collect();
        codes.sort_unstable();
        let mut shapes: Vec<(&String, u64)> = self.shapes.iter().map(|(s, &n)| (s, n)).collect();
        shapes.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        Group {
            kind,
            server: server.to_owned(),
            tool: tool.to_owned(),
            template_id: template.map(str::to_owned),
            failures: self.failures,
            calls,
            sessions: self.sessions.len() as u64,
            first_seen: self.first_seen.clone(),
            last_seen: self.last_seen.clone(),
            evidence: Evidence {
                err_codes: codes.iter().map(|c| c.0).collect(),
                retryable_true: self.retryable_true,
                retryable_false: self.retryable_false,
                retryable_unreported: self.retryable_unreported,
                unadvertised_failures: self.unadvertised,
                failures: self.failures,
            },
            codes,
            args_shapes: shapes
                .into_iter()
                .take(SHAPES_PER_GROUP)
                .map(|(s, _)| s.clone())
                .collect(),
            turns: Vec::new(),
            blast_radius: 1,
        }
    }
}

/// The argument shapes of the false-success groups, most frequent first.
fn false_success_shapes(
    conn: &Connection,
    path: &Path,
    groups: &mut HashMap<Key, Group>,
) -> Result<()> {
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT server, tool, args_shape, count(*) AS n FROM false_success_calls
             GROUP BY server, tool, args_shape ORDER BY n DESC, args_shape",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                (Kind::FalseSuccess, r.get(0)?, r.get(1)?, None),
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (key, shape): (Key, String) = row.map_err(fail)?;
        if let Some(g) = groups.get_mut(&key)
            && g.args_shapes.len() < SHAPES_PER_GROUP
        {
            g.args_shapes.push(shape);
        }
    }
    Ok(())
}
