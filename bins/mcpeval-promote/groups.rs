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
    let (mut partials, radii) = partial::read_counted(conn, path)?;
    let annotated = partial::false_success_calls(conn, path)?;
    partial::false_success(&annotated, &mut partials);
    Ok(merge(&partials, &radii.into_iter().collect()))
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
    merge(partials, &HashMap::new())
}

/// [`from_partials`], with blast radii counted already (one store's, from
/// [`partial::read_counted`]) where the rows name no tools.
fn merge(partials: &Partials, radii: &HashMap<GroupKey, u64>) -> Vec<Group> {
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
                blast_radius: (m.tools.len() as u64)
                    .max(radii.get(key).copied().unwrap_or(0))
                    .max(1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::partial::{Calls, Detail, Failures};

    fn key(template: &str) -> GroupKey {
        GroupKey {
            kind: Kind::Error,
            server: "s".into(),
            tool: "a".into(),
            template_id: Some(template.into()),
        }
    }

    /// One store's rows of group `t-1`: calls, failures on `day`, and
    /// its details.
    fn store(day: &str, failures: i64, details: &[(What, &str, i64)]) -> Partials {
        Partials {
            calls: vec![Calls {
                server: "s".into(),
                tool: "a".into(),
                day: day.into(),
                calls: 10,
            }],
            failures: vec![Failures {
                group: key("t-1"),
                day: day.into(),
                failures,
                first_seen: format!("{day}T01:00:00Z"),
                last_seen: format!("{day}T02:00:00.5Z"),
                retryable_true: failures,
                retryable_false: 0,
                retryable_unreported: 0,
                unadvertised: 1,
            }],
            details: details
                .iter()
                .map(|&(what, value, n)| Detail {
                    group: key("t-1"),
                    what,
                    value: value.into(),
                    n,
                })
                .collect(),
            streams: Vec::new(),
        }
    }

    #[test]
    fn stores_rows_merge_into_the_group_of_their_union() {
        let a = store(
            "2026-11-30",
            3,
            &[
                (What::Sessions, "", 2),
                (What::Code, "-32603", 3),
                (What::Shape, "{}", 2),
                (What::Shape, r#"{"x":"string"}"#, 1),
                (What::Turns, "1", 2),
                (What::Turns, "7", 1),
                (What::Tool, "a", 1),
                (What::Tool, "b", 1),
            ],
        );
        let b = store(
            "2026-12-01",
            2,
            &[
                (What::Sessions, "", 1),
                (What::Code, "-32603", 1),
                (What::Code, "-32001", 1),
                (What::Shape, r#"{"x":"string"}"#, 2),
                (What::Turns, "4", 1),
                (What::Tool, "b", 1),
                (What::Tool, "c", 1),
            ],
        );
        let mut both = a.clone();
        both.calls.extend(b.calls);
        both.failures.extend(b.failures);
        both.details.extend(b.details);
        let groups = from_partials(&both);
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!((g.failures, g.calls, g.sessions), (5, 20, 3));
        assert_eq!(g.first_seen, "2026-11-30T01:00:00Z");
        assert_eq!(g.last_seen, "2026-12-01T02:00:00.5Z");
        // Codes in numeric order, counted over both stores.
        assert_eq!(g.codes, [(-32603, 4), (-32001, 1)]);
        assert_eq!(g.err_code(), Some(-32603));
        assert_eq!(
            (g.evidence.retryable_true, g.evidence.unadvertised_failures),
            (5, 2)
        );
        // The most frequent shape first; ties by text.
        assert_eq!(g.args_shapes, [r#"{"x":"string"}"#, "{}"]);
        // Every window's turns, whichever store saw it: 1, 1, 4, 7.
        let mut turns = g.turns.clone();
        turns.sort_by(f64::total_cmp);
        assert_eq!(turns, [1.0, 1.0, 4.0, 7.0]);
        // Tools hit in either store's windows, each once.
        assert_eq!(g.blast_radius, 3);
    }

    #[test]
    fn a_detail_of_no_counted_group_is_no_group() {
        let mut p = store("2026-11-30", 1, &[(What::Sessions, "", 1)]);
        p.details.push(Detail {
            group: key("t-2"),
            what: What::Sessions,
            value: String::new(),
            n: 4,
        });
        let groups = from_partials(&p);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].template_id.as_deref(), Some("t-1"));
    }
}
