//! A store's partial aggregates: every figure promote scores a failure
//! group with, in a form that merges exactly with another store's.
//!
//! Counts are per (server, tool, UTC day) and failures per (group, day),
//! so stores' rows merge by sums, minima and maxima. What is not a sum is
//! kept as a multiset or a set of values per group ([`Detail`]): error
//! codes and argument shapes with their counts, the turns of each failure
//! window as a histogram (the median needs every window), and the tools
//! failing inside the group's windows (the blast radius is the size of
//! their union). A group's distinct sessions are counted per store: they
//! add up exactly when no (session, server) pair is in two stores, which
//! [`Partials::streams`] lets a team check (sessions are salted hashes of
//! one capture's id, so only a journal copied between stores shares one).
//!
//! One store's promote reads its groups through these same rows, so a
//! team that merges them scores with the same code. Probe calls never
//! count; nothing here holds a raw value.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use shared::Result;
use shared::finding::{Kind, Violation};

use crate::db::sql_error;

/// A failure group: kind, server, tool and (errors only) template id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    /// The kind of group.
    pub kind: Kind,
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The error template, or a contract group's violation
    /// ([`Violation::key`]); `None` for other kinds and untemplated errors.
    pub template_id: Option<String>,
}

/// Captured calls to (server, tool) on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calls {
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Captured calls.
    pub calls: i64,
}

/// A group's failures on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failures {
    /// The group.
    pub group: GroupKey,
    /// `YYYY-MM-DD`.
    pub day: String,
    /// Failed calls.
    pub failures: i64,
    /// The earliest and latest `started_at` among them.
    pub first_seen: String,
    /// See `first_seen`.
    pub last_seen: String,
    /// Failures reporting retryable true, false, or not at all.
    pub retryable_true: i64,
    /// See `retryable_true`.
    pub retryable_false: i64,
    /// See `retryable_true`.
    pub retryable_unreported: i64,
    /// Failures of a tool the session's last `tools/list` did not list.
    pub unadvertised: i64,
}

shared::spelled! {
    /// What a [`Detail`] row counts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum What {
        /// Distinct sessions of the group in one store (value empty).
        Sessions = "sessions",
        /// An error code (decimal) and its failures.
        Code = "code",
        /// An argument shape (JSON text) and its failures.
        Shape = "shape",
        /// A window's turns (decimal) and the windows that long.
        Turns = "turns",
        /// A tool with an error call inside the group's windows.
        Tool = "tool",
    }
}

/// One counted value of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    /// The group.
    pub group: GroupKey,
    /// What is counted.
    pub what: What,
    /// The value counted (see [`What`]).
    pub value: String,
    /// Its count.
    pub n: i64,
}

/// A store's partial aggregates, or several stores' merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partials {
    /// Captured calls per (server, tool, day).
    pub calls: Vec<Calls>,
    /// Failures per (group, day).
    pub failures: Vec<Failures>,
    /// Per group: sessions, codes, shapes, window turns, tools hit.
    pub details: Vec<Detail>,
    /// The store's (session, server) pairs.
    pub streams: Vec<(String, String)>,
}

/// Reads the partial aggregates of the error and malformed-result groups
/// from a complete `index.db` (the caller holds one read transaction).
/// False-success groups come from annotations, which are not one store's:
/// see [`false_success`].
pub fn read(conn: &Connection, path: &Path) -> Result<Partials> {
    let Parts {
        mut partials,
        hits,
        names,
    } = read_parts(conn, path, Tools::Named)?;
    for (group, hit) in hits {
        for tool in hit.tools {
            partials.details.push(Detail {
                group: group.clone(),
                what: What::Tool,
                value: names[tool as usize].clone(),
                n: 1,
            });
        }
    }
    Ok(partials)
}

/// One store's partial aggregates as its own promote scores them: those
/// of [`read`] without the [`What::Tool`] rows, and each error group's
/// blast radius (the number of tools its rows would name) beside them.
/// Only stores merged need the tools by name, to take their union; one
/// store's radius is a count. One failure window over many tools makes
/// a row per (group, tool) — millions for a few thousand tools — and a
/// count per group.
pub fn read_counted(conn: &Connection, path: &Path) -> Result<(Partials, Vec<(GroupKey, u64)>)> {
    let Parts { partials, hits, .. } = read_parts(conn, path, Tools::Counted)?;
    let radii = hits
        .into_iter()
        .map(|(group, hit)| (group, hit.count))
        .collect();
    Ok((partials, radii))
}

/// Whether [`Scan::blast`] keeps the tools it finds or only counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tools {
    Named,
    Counted,
}

/// The tools hit inside one error group's windows: how many, and (when
/// named) their numbers in [`Scan::names`].
#[derive(Default)]
struct Hits {
    count: u64,
    tools: Vec<u32>,
}

/// What [`read`] and [`read_counted`] share.
struct Parts {
    /// Every partial aggregate but the tools hit.
    partials: Partials,
    /// The tools hit, per error group.
    hits: Vec<(GroupKey, Hits)>,
    /// The tools' names, by number.
    names: Vec<String>,
}

fn read_parts(conn: &Connection, path: &Path, tools: Tools) -> Result<Parts> {
    let mut scan = Scan::read(conn, path)?;
    let mut partials = Partials::default();
    let mut keys: Vec<_> = scan.groups.keys().cloned().collect();
    keys.sort();
    for key in &keys {
        let acc = &scan.groups[key];
        acc.emit(key, &mut partials);
    }
    for ((server, tool), days) in &scan.days {
        for (day, calls) in days {
            partials.calls.push(Calls {
                server: server.clone(),
                tool: tool.clone(),
                day: day.clone(),
                calls: *calls,
            });
        }
    }
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare(
            "SELECT turns, server, tool, template_id, count(*) FROM windows GROUP BY 1, 2, 3, 4",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (turns, server, tool, template_id, n) = row.map_err(fail)?;
        let group = GroupKey {
            kind: Kind::Error,
            server,
            tool,
            template_id,
        };
        // Windows of a group with no counted failure (there is none:
        // windows open at failed capture calls) would score nothing.
        if scan.groups.contains_key(&group) {
            partials.details.push(Detail {
                group,
                what: What::Turns,
                value: turns.to_string(),
                n,
            });
        }
    }
    let hits = scan.blast(conn, path, tools)?;
    let mut stmt = conn
        .prepare("SELECT session, server FROM sessions ORDER BY id")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(fail)?;
    partials.streams = rows.collect::<rusqlite::Result<_>>().map_err(fail)?;
    Ok(Parts {
        partials,
        hits,
        names: scan.names,
    })
}

/// An ok capture call with a linked false-success annotation.
#[derive(Debug, Clone)]
pub struct Annotated {
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// Its session token.
    pub session: String,
    /// Its `started_at`.
    pub started_at: String,
    /// Its argument shape.
    pub args_shape: String,
}

/// The false-success groups' partial aggregates of `calls` (each call
/// once), added to `partials`.
pub fn false_success(calls: &[Annotated], partials: &mut Partials) {
    let mut groups: BTreeMap<GroupKey, Acc> = BTreeMap::new();
    for call in calls {
        let key = GroupKey {
            kind: Kind::FalseSuccess,
            server: call.server.clone(),
            tool: call.tool.clone(),
            template_id: None,
        };
        let acc = groups.entry(key).or_default();
        acc.fail(&call.session, &call.started_at, &call.args_shape);
    }
    for (key, acc) in &groups {
        acc.emit(key, partials);
    }
}

/// The calls `read` finds linked by false-success annotations in
/// `index.db` (its view `false_success_calls`).
pub fn false_success_calls(conn: &Connection, path: &Path) -> Result<Vec<Annotated>> {
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare("SELECT server, tool, session, started_at, args_shape FROM false_success_calls")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Annotated {
                server: r.get(0)?,
                tool: r.get(1)?,
                session: r.get(2)?,
                started_at: r.get(3)?,
                args_shape: r.get(4)?,
            })
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// The failed calls of one group, as one pass gathers them.
#[derive(Default)]
struct Acc {
    sessions: HashSet<String>,
    days: BTreeMap<String, Day>,
    codes: HashMap<i64, i64>,
    shapes: HashMap<String, i64>,
}

/// One day of a group's failures.
#[derive(Default)]
struct Day {
    failures: i64,
    first_seen: String,
    last_seen: String,
    retryable_true: i64,
    retryable_false: i64,
    retryable_unreported: i64,
    unadvertised: i64,
}

impl Acc {
    /// Counts a failed call; returns its day for the error evidence.
    fn fail(&mut self, session: &str, started: &str, shape: &str) -> &mut Day {
        if !self.sessions.contains(session) {
            self.sessions.insert(session.to_owned());
        }
        match self.shapes.get_mut(shape) {
            Some(n) => *n += 1,
            None => {
                self.shapes.insert(shape.to_owned(), 1);
            }
        }
        // Stored time stamps are RFC 3339 UTC: the first ten bytes are the day.
        let day = started.get(..10).unwrap_or(started);
        if !self.days.contains_key(day) {
            self.days.insert(day.to_owned(), Day::default());
        }
        let d = self.days.get_mut(day).expect("inserted");
        d.failures += 1;
        if d.first_seen.is_empty() || started < d.first_seen.as_str() {
            started.clone_into(&mut d.first_seen);
        }
        if started > d.last_seen.as_str() {
            started.clone_into(&mut d.last_seen);
        }
        d
    }

    fn emit(&self, key: &GroupKey, partials: &mut Partials) {
        for (day, d) in &self.days {
            partials.failures.push(Failures {
                group: key.clone(),
                day: day.clone(),
                failures: d.failures,
                first_seen: d.first_seen.clone(),
                last_seen: d.last_seen.clone(),
                retryable_true: d.retryable_true,
                retryable_false: d.retryable_false,
                retryable_unreported: d.retryable_unreported,
                unadvertised: d.unadvertised,
            });
        }
        let detail = |what, value: String, n| Detail {
            group: key.clone(),
            what,
            value,
            n,
        };
        partials.details.push(detail(
            What::Sessions,
            String::new(),
            self.sessions.len() as i64,
        ));
        let mut codes: Vec<_> = self.codes.iter().collect();
        codes.sort();
        for (code, n) in codes {
            partials
                .details
                .push(detail(What::Code, code.to_string(), *n));
        }
        let mut shapes: Vec<_> = self.shapes.iter().collect();
        shapes.sort();
        for (shape, n) in shapes {
            partials
                .details
                .push(detail(What::Shape, shape.clone(), *n));
        }
    }
}

/// What one pass over the captured calls gathers: per (server, tool) its
/// calls by day, and the failures by group. Hash maps instead of SQL's
/// GROUP BY, which sorted a million rows for the per-tool counts alone;
/// memory grows with distinct names and failed calls, not with all calls.
#[derive(Default)]
struct Scan {
    groups: HashMap<GroupKey, Acc>,
    days: BTreeMap<(String, String), BTreeMap<String, i64>>,
    /// (server, tool) numbered as first seen, with their names.
    tools: HashMap<String, HashMap<String, u32>>,
    names: Vec<String>,
    /// (session, server) pairs with an error call, numbered as first seen.
    streams: HashMap<String, HashMap<String, u32>>,
    stream_count: u32,
    /// Every error call, for the blast radius: (stream, seq, row id, tool).
    errors: Vec<(u32, i64, i64, u32)>,
}

impl Scan {
    fn read(conn: &Connection, path: &Path) -> Result<Scan> {
        let fail = |e| sql_error(path, e);
        let mut stmt = conn
            .prepare(
                "SELECT server, tool, outcome, unknown, template_id, session, started_at,
                        retryable, advertised, code, args_shape, seq, id, contract_kept,
                        contract_at, contract_keyword
                 FROM calls WHERE origin IN ('capture', 'otel')",
            )
            .map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut scan = Scan::default();
        // Per (server, tool) its calls by day: a run of calls shares the
        // last entry, so most calls cost no lookup of their day.
        let mut per_day: HashMap<u32, HashMap<String, i64>> = HashMap::new();
        let mut last: Option<(u32, String)> = None;
        let mut pending = 0i64;
        while let Some(r) = rows.next().map_err(fail)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
            let server = text(0).map_err(fail)?;
            let tool_name = text(1).map_err(fail)?;
            let tool = scan.tool(server, tool_name);
            let started = text(6).map_err(fail)?;
            let day = started.get(..10).unwrap_or(started);
            match &last {
                Some((t, d)) if *t == tool && d == day => pending += 1,
                _ => {
                    if let Some((t, d)) = last.take() {
                        *per_day.entry(t).or_default().entry(d).or_default() += pending;
                    }
                    last = Some((tool, day.to_owned()));
                    pending = 1;
                }
            }
            let (kind, template) = match (text(2).map_err(fail)?, r.get_ref(3).map_err(fail)?) {
                ("error", _) => {
                    let template = r
                        .get_ref(4)
                        .and_then(|v| Ok(v.as_str_or_null()?))
                        .map_err(fail)?;
                    (Kind::Error, template)
                }
                ("unknown", ValueRef::Text(b"malformed")) => (Kind::Malformed, None),
                ("ok", _) if r.get::<_, Option<bool>>(13).map_err(fail)? == Some(false) => {
                    (Kind::Contract, None)
                }
                _ => continue,
            };
            let template = match kind {
                Kind::Contract => Some(
                    Violation {
                        at: text(14).map_err(fail)?.to_owned(),
                        keyword: text(15).map_err(fail)?.to_owned(),
                    }
                    .key(),
                ),
                _ => template.map(str::to_owned),
            };
            let key = GroupKey {
                kind,
                server: server.to_owned(),
                tool: tool_name.to_owned(),
                template_id: template,
            };
            let session = text(5).map_err(fail)?;
            let acc = scan.groups.entry(key).or_default();
            let shape = text(10).map_err(fail)?;
            let d = acc.fail(session, started, shape);
            // Malformed results carry no error: codes and retryability
            // are an error group's evidence only.
            if kind == Kind::Error {
                match r.get::<_, Option<bool>>(7).map_err(fail)? {
                    Some(true) => d.retryable_true += 1,
                    Some(false) => d.retryable_false += 1,
                    None => d.retryable_unreported += 1,
                }
                if r.get::<_, Option<bool>>(8).map_err(fail)? == Some(false) {
                    d.unadvertised += 1;
                }
                if let Some(code) = r.get::<_, Option<i64>>(9).map_err(fail)? {
                    *acc.codes.entry(code).or_default() += 1;
                }
                let stream = scan.stream(session, server);
                let (seq, id) = (r.get(11).map_err(fail)?, r.get(12).map_err(fail)?);
                scan.errors.push((stream, seq, id, tool));
            }
        }
        if let Some((t, d)) = last.take() {
            *per_day.entry(t).or_default().entry(d).or_default() += pending;
        }
        for (server, tools) in &scan.tools {
            for (tool, index) in tools {
                if let Some(days) = per_day.remove(index) {
                    scan.days
                        .insert((server.clone(), tool.clone()), days.into_iter().collect());
                }
            }
        }
        Ok(scan)
    }

    /// The number of (server, tool), copying the names only when new.
    fn tool(&mut self, server: &str, tool: &str) -> u32 {
        if let Some(&n) = self.tools.get(server).and_then(|t| t.get(tool)) {
            return n;
        }
        let n = self.names.len() as u32;
        self.names.push(tool.to_owned());
        self.tools
            .entry(server.to_owned())
            .or_default()
            .insert(tool.to_owned(), n);
        n
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

    /// The tools hit inside every error group's windows: the tools with
    /// an error call inside any of its windows. Each window is a range of
    /// its session's error calls in (seq, row id) order; a tool is taken
    /// once per group by stamping it with the group's number, so nothing
    /// is allocated per window, and kept by number only when `tools` asks
    /// for them named.
    fn blast(
        &mut self,
        conn: &Connection,
        path: &Path,
        tools: Tools,
    ) -> Result<Vec<(GroupKey, Hits)>> {
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
        let mut stamps = vec![0u32; self.names.len()];
        let mut out: Vec<(GroupKey, Hits)> = Vec::new();
        while let Some(r) = rows.next().map_err(fail)? {
            let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?));
            let (server, tool) = (text(0).map_err(fail)?, text(1).map_err(fail)?);
            let template = r
                .get_ref(2)
                .and_then(|v| Ok(v.as_str_or_null()?))
                .map_err(fail)?;
            let same = matches!(out.last(), Some((k, _))
                if k.server == server && k.tool == tool && k.template_id.as_deref() == template);
            if !same {
                let key = GroupKey {
                    kind: Kind::Error,
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    template_id: template.map(str::to_owned),
                };
                out.push((key, Hits::default()));
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
            let hit = &mut out.last_mut().expect("pushed").1;
            for e in &self.errors[lo..hi.max(lo)] {
                let stamp = &mut stamps[e.3 as usize];
                if *stamp != group {
                    *stamp = group;
                    hit.count += 1;
                    if tools == Tools::Named {
                        hit.tools.push(e.3);
                    }
                }
            }
        }
        out.retain(|(key, _)| self.groups.contains_key(key));
        Ok(out)
    }
}
