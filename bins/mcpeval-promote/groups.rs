//! Failure groups and their evidence, built from partial aggregates.
//!
//! One store's come from its `index.db` (`store::partial` reads them in
//! one pass over the captured calls); a team's are every store's merged
//! in the database. Either way the groups are built here, by one code,
//! so a team scores exactly as one store holding every journal. Only
//! captured calls count: probe calls are the verifier's own traffic and
//! never promote. No raw value exists in the index to be read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use rusqlite::Connection;
use shared::Result;
use shared::finding::{Evidence, Kind};
use store::partial::{self, GroupKey, Partials, What};

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
    /// The most frequent code (ties: the smaller code), if any.
    pub fn err_code(&self) -> Option<i64> {
        self.codes
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|c| c.0)
    }
}

/// Loads every group from one store's index.
pub fn load(conn: &Connection, path: &Path) -> Result<Vec<Group>> {
    let mut partials = partial::read(conn, path)?;
    let annotated = partial::false_success_calls(conn, path)?;
    partial::false_success(&annotated, &mut partials);
    Ok(from_partials(&partials))
}

/// What the rows of one group add up to.
#[derive(Default)]
struct Merged {
    failures: u64,
    first_seen: Option<String>,
    last_seen: String,
    retryable_true: u64,
    retryable_false: u64,
    retryable_unreported: u64,
    unadvertised: u64,
    sessions: u64,
    codes: BTreeMap<i64, u64>,
    shapes: BTreeMap<String, u64>,
    turns: BTreeMap<i64, u64>,
    tools: BTreeSet<String>,
}

/// The groups of partial aggregates, of one store or of several merged:
/// rows of the same key add up (sums, the earliest and latest time, the
/// union of the tools hit), whatever their number.
pub fn from_partials(partials: &Partials) -> Vec<Group> {
    let mut calls: HashMap<(&str, &str), u64> = HashMap::new();
    for c in &partials.calls {
        *calls.entry((&c.server, &c.tool)).or_default() += c.calls as u64;
    }
    let mut merged: BTreeMap<&GroupKey, Merged> = BTreeMap::new();
    for f in &partials.failures {
        let m = merged.entry(&f.group).or_default();
        m.failures += f.failures as u64;
        if m.first_seen.as_ref().is_none_or(|s| f.first_seen < *s) {
            m.first_seen = Some(f.first_seen.clone());
        }
        if f.last_seen > m.last_seen {
            m.last_seen.clone_from(&f.last_seen);
        }
        m.retryable_true += f.retryable_true as u64;
        m.retryable_false += f.retryable_false as u64;
        m.retryable_unreported += f.retryable_unreported as u64;
        m.unadvertised += f.unadvertised as u64;
    }
    for d in &partials.details {
        // A detail of a group without failures counts for nothing.
        let Some(m) = merged.get_mut(&d.group) else {
            continue;
        };
        let n = d.n as u64;
        match d.what {
            What::Sessions => m.sessions += n,
            What::Code => {
                if let Ok(code) = d.value.parse() {
                    *m.codes.entry(code).or_default() += n;
                }
            }
            What::Shape => *m.shapes.entry(d.value.clone()).or_default() += n,
            What::Turns => {
                if let Ok(turns) = d.value.parse() {
                    *m.turns.entry(turns).or_default() += n;
                }
            }
            What::Tool => {
                m.tools.insert(d.value.clone());
            }
        }
    }
    merged
        .into_iter()
        .map(|(key, m)| {
            let mut shapes: Vec<(&String, u64)> = m.shapes.iter().map(|(s, &n)| (s, n)).collect();
            shapes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            let codes: Vec<(i64, u64)> = m.codes.into_iter().collect();
            let errors = key.kind == Kind::Error;
            Group {
                kind: key.kind,
                server: key.server.clone(),
                tool: key.tool.clone(),
                template_id: key.template_id.clone(),
                failures: m.failures,
                calls: calls
                    .get(&(key.server.as_str(), key.tool.as_str()))
                    .copied()
                    .unwrap_or(0),
                sessions: m.sessions,
                first_seen: m.first_seen.unwrap_or_default(),
                last_seen: m.last_seen,
                evidence: Evidence {
                    err_codes: codes.iter().map(|c| c.0).collect(),
                    retryable_true: m.retryable_true,
                    retryable_false: m.retryable_false,
                    retryable_unreported: m.retryable_unreported,
                    unadvertised_failures: m.unadvertised,
                    failures: m.failures,
                },
                codes,
                args_shapes: shapes
                    .into_iter()
                    .take(SHAPES_PER_GROUP)
                    .map(|(s, _)| s.clone())
                    .collect(),
                turns: if errors {
                    m.turns
                        .iter()
                        .flat_map(|(&t, &n)| std::iter::repeat_n(t as f64, n as usize))
                        .collect()
                } else {
                    Vec::new()
                },
                blast_radius: (m.tools.len() as u64).max(1),
            }
        })
        .collect()
}
