//! Per-tool aggregates of the shared records: what a maintainer needs to
//! weigh the findings, counted from captured calls only.

use std::collections::{BTreeMap, BTreeSet};

use shared::record::{Outcome, Record, Unknown};
use store::envelope::ToolEvidence as Tool;

/// Aggregates `records` per (server, tool), in name order.
pub fn per_tool(records: &[Record]) -> Vec<Tool> {
    let mut tools: BTreeMap<(String, String), (Tool, BTreeSet<String>)> = BTreeMap::new();
    for r in records.iter().filter(|r| r.origin().is_traffic()) {
        let (t, sessions) = tools
            .entry((r.server().to_owned(), r.tool().to_owned()))
            .or_insert_with(|| {
                (
                    Tool {
                        server: r.server().to_owned(),
                        tool: r.tool().to_owned(),
                        first_call: r.started_at().to_owned(),
                        last_call: r.started_at().to_owned(),
                        ..Tool::default()
                    },
                    BTreeSet::new(),
                )
            });
        t.calls += 1;
        match (r.outcome(), r.unknown()) {
            (Outcome::Ok, _) => t.ok += 1,
            (Outcome::Error, _) => {
                t.errors += 1;
                if let Some(code) = r.code() {
                    *t.err_codes.entry(code.to_string()).or_default() += 1;
                }
            }
            (Outcome::Unknown, Some(Unknown::Malformed)) => t.malformed += 1,
            (Outcome::Unknown, _) => t.unanswered += 1,
        }
        sessions.insert(r.session().to_owned());
        let at = r.started_at();
        if later(&t.first_call, at) {
            t.first_call = at.to_owned();
        }
        if later(at, &t.last_call) {
            t.last_call = at.to_owned();
        }
    }
    tools
        .into_values()
        .map(|(mut t, sessions)| {
            t.sessions = sessions.len() as u64;
            t.failure_rate = (t.errors + t.malformed) as f64 / t.calls as f64;
            t
        })
        .collect()
}

/// Whether time stamp `a` is after `b` (compared as instants).
fn later(a: &str, b: &str) -> bool {
    match (shared::time::parse(a), shared::time::parse(b)) {
        (Some(a), Some(b)) => a > b,
        _ => a > b,
    }
}
