//! What the page is drawn from: the JSON the sibling commands print,
//! read into the few fields the report shows.
//!
//! The types name only fields the siblings' contracts promise; unknown
//! fields are ignored, so a sibling that grows keeps working. Nothing
//! here decides a verdict or a state: the report shows the siblings'
//! answers, it never recomputes them.

use serde::Deserialize;
use serde_json::Value;
use shared::Result;
use shared::history::Histories;
pub use shared::history::{History, Run};
pub use shared::readiness::{Readiness, Server, Tool};

use crate::args::Config;
use crate::siblings;

/// Everything one page shows.
#[derive(Debug)]
pub struct Evidence {
    pub readiness: Readiness,
    pub findings: Vec<Finding>,
    pub history: Vec<History>,
}

#[derive(Debug, Deserialize)]
struct Findings {
    findings: Vec<Finding>,
}

/// One finding of `mcpeval-findings --format json`.
#[derive(Debug, Deserialize)]
pub struct Finding {
    pub id: String,
    pub severity: String,
    pub defect_class: String,
    pub fix_hint: String,
    pub server: String,
    pub tool: String,
    pub score: f64,
    pub failures: u64,
    pub calls: u64,
    pub sessions: u64,
    /// Argument shapes of failing calls, most frequent first.
    #[serde(default)]
    pub args_shapes: Vec<Value>,
    pub state: String,
    pub streak: u32,
    pub reopened: u32,
    /// For a finding closed by verification: whether its closure was
    /// witnessed. Absent from the output of earlier releases.
    #[serde(default)]
    pub witnessed: Option<bool>,
    /// A contract-violation finding's first violation.
    #[serde(default)]
    pub contract: Option<shared::finding::Violation>,
}

/// Runs the three siblings; the first to fail ends the report with its
/// message (see [`siblings::json`]).
pub fn gather(config: &Config) -> Result<Evidence> {
    let home = &config.home;
    // `--server=NAME` in one word: a name starting with `-` stays a value.
    let servers: Vec<String> = config
        .servers
        .iter()
        .map(|s| format!("--server={s}"))
        .collect();
    let args = |fixed: &[&str]| -> Vec<String> {
        fixed
            .iter()
            .map(|a| (*a).to_owned())
            .chain(servers.iter().cloned())
            .collect()
    };
    let findings: Findings = run("findings", home, &args(&["--format", "json"]))?;
    let history: Histories = run("findings", home, &args(&["--history", "--format", "json"]))?;
    let days = config.days.to_string();
    let mut readiness = args(&["--format", "json", "--days", &days]);
    if let Some(now) = &config.now {
        readiness.push(format!("--now={now}"));
    }
    let readiness: Readiness = run("readiness", home, &readiness)?;
    Ok(Evidence {
        readiness,
        findings: findings.findings,
        history: history.history,
    })
}

fn run<T: serde::de::DeserializeOwned>(
    sub: &str,
    home: &shared::home::Home,
    args: &[String],
) -> Result<T> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    siblings::json(sub, home, &args)
}

impl Evidence {
    /// The history of finding `id`, if the siblings printed one.
    pub fn history_of(&self, id: &str) -> Option<&History> {
        self.history.iter().find(|h| h.finding == id)
    }
}
