//! What the page is drawn from: the JSON the sibling commands print,
//! read into the few fields the report shows.
//!
//! The types name only fields the siblings' contracts promise; unknown
//! fields are ignored, so a sibling that grows keeps working. Nothing
//! here decides a verdict or a state: the report shows the siblings'
//! answers, it never recomputes them.

use serde::Deserialize;
use shared::Result;

use crate::args::Config;
use crate::siblings;

/// Everything one page shows.
#[derive(Debug)]
pub struct Evidence {
    pub readiness: Readiness,
    pub findings: Vec<Finding>,
    pub history: Vec<History>,
}

/// `mcpeval-readiness --format json`.
#[derive(Debug, Deserialize)]
pub struct Readiness {
    pub as_of: String,
    pub days: Vec<String>,
    pub rate_limit: f64,
    pub servers: Vec<Server>,
}

#[derive(Debug, Deserialize)]
pub struct Server {
    pub server: String,
    pub verdict: String,
    pub reasons: Vec<String>,
    pub open_findings: Option<Open>,
    /// Findings verifying a fix: shown, never counted in the verdict. Null
    /// without an index, and absent from a readiness that predates it.
    pub verifying: Option<Vec<Verifying>>,
    pub tools: Vec<Tool>,
}

#[derive(Debug, Deserialize)]
pub struct Open {
    pub high: u64,
    pub medium: u64,
    pub low: u64,
}

#[derive(Debug, Deserialize)]
pub struct Verifying {
    pub id: String,
    pub tool: String,
    pub severity: String,
    pub streak: u32,
}

#[derive(Debug, Deserialize)]
pub struct Tool {
    pub tool: String,
    pub calls: u64,
    pub failures: u64,
    pub daily: Vec<Day>,
}

#[derive(Debug, Deserialize)]
pub struct Day {
    pub day: String,
    pub calls: u64,
    pub failures: u64,
    pub failure_rate: Option<f64>,
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
    pub state: String,
    pub streak: u32,
    pub reopened: u32,
    /// For a finding closed by verification: whether its closure was
    /// witnessed. Absent from the output of earlier releases.
    #[serde(default)]
    pub witnessed: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Histories {
    history: Vec<History>,
}

/// One finding of `mcpeval-findings --history --format json`.
#[derive(Debug, Deserialize)]
pub struct History {
    pub finding: String,
    pub events: Vec<Event>,
    pub runs: Vec<Run>,
}

#[derive(Debug, Deserialize)]
pub struct Event {
    pub at: String,
    pub event: String,
    pub from: Option<String>,
    pub to: Option<String>,
    pub reopened: bool,
}

#[derive(Debug, Deserialize)]
pub struct Run {
    pub result: String,
    pub reason: Option<String>,
    pub recorded_at: String,
    pub legacy: bool,
}

/// Runs the three siblings; the first to fail ends the report with its
/// message (see [`siblings::json`]).
pub fn gather(config: &Config) -> Result<Evidence> {
    let home = config.home.root().as_std_path();
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
    home: &std::path::Path,
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
