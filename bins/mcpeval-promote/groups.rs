//! Reading failure groups and their evidence out of `index.db`.
//!
//! Only captured calls count: probe calls are the verifier's own traffic and
//! never promote. Everything here is aggregate SQL over the derived tables;
//! no raw value exists in the index to be read.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;
use shared::Result;
use shared::db::sql_error;
use shared::finding::{Evidence, Kind};

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
    let calls = tool_calls(conn, path)?;
    let mut groups: HashMap<Key, Group> = HashMap::new();

    let sources = [
        (
            Kind::Error,
            "SELECT server, tool, template_id, count(*), count(DISTINCT session), min(started_at), max(started_at),
                    sum(retryable IS 1), sum(retryable IS 0), sum(retryable IS NULL), sum(advertised IS 0)
             FROM calls WHERE origin = 'capture' AND outcome = 'error'
             GROUP BY server, tool, template_id",
        ),
        (
            Kind::Malformed,
            "SELECT server, tool, NULL, count(*), count(DISTINCT session), min(started_at), max(started_at), 0, 0, 0, 0
             FROM calls WHERE origin = 'capture' AND outcome = 'unknown' AND unknown = 'malformed'
             GROUP BY server, tool",
        ),
        (
            Kind::FalseSuccess,
            "SELECT server, tool, NULL, count(*), count(DISTINCT session), min(started_at), max(started_at), 0, 0, 0, 0
             FROM false_success_calls GROUP BY server, tool",
        ),
    ];
    for (kind, sql) in sources {
        let mut stmt = conn.prepare(sql).map_err(fail)?;
        let rows = stmt
            .query_map([], |r| {
                let server: String = r.get(0)?;
                let tool: String = r.get(1)?;
                let failures: u64 = r.get(3)?;
                Ok(Group {
                    kind,
                    calls: 0,
                    template_id: r.get(2)?,
                    failures,
                    sessions: r.get(4)?,
                    first_seen: r.get(5)?,
                    last_seen: r.get(6)?,
                    evidence: Evidence {
                        err_codes: Vec::new(),
                        retryable_true: r.get(7)?,
                        retryable_false: r.get(8)?,
                        retryable_unreported: r.get(9)?,
                        unadvertised_failures: r.get(10)?,
                        failures,
                    },
                    codes: Vec::new(),
                    args_shapes: Vec::new(),
                    turns: Vec::new(),
                    blast_radius: 1,
                    server,
                    tool,
                })
            })
            .map_err(fail)?;
        for group in rows {
            let mut group = group.map_err(fail)?;
            group.calls = calls
                .get(&(group.server.clone(), group.tool.clone()))
                .copied()
                .unwrap_or(0);
            groups.insert(group.key(), group);
        }
    }

    let error_key = |server: String, tool: String, template: Option<String>| {
        (Kind::Error, server, tool, template)
    };

    let mut stmt = conn
        .prepare(
            "SELECT server, tool, template_id, code, count(*) FROM calls
             WHERE origin = 'capture' AND outcome = 'error' AND code IS NOT NULL
             GROUP BY server, tool, template_id, code ORDER BY code",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                error_key(r.get(0)?, r.get(1)?, r.get(2)?),
                r.get::<_, i64>(3)?,
                r.get::<_, u64>(4)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (key, code, count) = row.map_err(fail)?;
        if let Some(g) = groups.get_mut(&key) {
            g.codes.push((code, count));
            g.evidence.err_codes.push(code);
        }
    }

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

    let mut stmt = conn
        .prepare("SELECT server, tool, template_id, blast_radius FROM group_blast")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                error_key(r.get(0)?, r.get(1)?, r.get(2)?),
                r.get::<_, u64>(3)?,
            ))
        })
        .map_err(fail)?;
    for row in rows {
        let (key, blast) = row.map_err(fail)?;
        if let Some(g) = groups.get_mut(&key) {
            g.blast_radius = blast.max(1);
        }
    }

    load_shapes(conn, path, &mut groups)?;
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by_key(Group::key);
    Ok(groups)
}

/// Captured calls per (server, tool): every group's denominator.
fn tool_calls(conn: &Connection, path: &Path) -> Result<HashMap<(String, String), u64>> {
    let fail = |e| sql_error(path, e);
    let mut stmt = conn
        .prepare("SELECT server, tool, count(*) FROM calls WHERE origin = 'capture' GROUP BY server, tool")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// The failing calls' argument shapes, most frequent first.
fn load_shapes(conn: &Connection, path: &Path, groups: &mut HashMap<Key, Group>) -> Result<()> {
    let fail = |e| sql_error(path, e);
    let sources = [
        (
            Kind::Error,
            "SELECT server, tool, template_id, args_shape, count(*) AS n FROM calls
             WHERE origin = 'capture' AND outcome = 'error'
             GROUP BY server, tool, template_id, args_shape ORDER BY n DESC, args_shape",
        ),
        (
            Kind::Malformed,
            "SELECT server, tool, NULL, args_shape, count(*) AS n FROM calls
             WHERE origin = 'capture' AND outcome = 'unknown' AND unknown = 'malformed'
             GROUP BY server, tool, args_shape ORDER BY n DESC, args_shape",
        ),
        (
            Kind::FalseSuccess,
            "SELECT server, tool, NULL, args_shape, count(*) AS n FROM false_success_calls
             GROUP BY server, tool, args_shape ORDER BY n DESC, args_shape",
        ),
    ];
    for (kind, sql) in sources {
        let mut stmt = conn.prepare(sql).map_err(fail)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    (kind, r.get(0)?, r.get(1)?, r.get(2)?),
                    r.get::<_, String>(3)?,
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
    }
    Ok(())
}
