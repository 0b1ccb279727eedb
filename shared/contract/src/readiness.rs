//! The readiness report that `mcpeval readiness --format json` prints: per
//! server, a verdict (`ready`, `at-risk`, `not-ready`) with its reasons,
//! the findings that count against it, the verifying ones shown beside
//! it, and each tool's calls and failures per day of the window.
//!
//! Every type ignores keys it does not know, as the format grows by adding
//! fields.

use serde::{Deserialize, Serialize};

use crate::score::Severity;

/// The whole report, as a reader takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    /// The last day reported (UTC), `YYYY-MM-DD`.
    pub as_of: String,
    /// The days of the window, oldest first.
    pub days: Vec<String>,
    /// A tool failing more than this share of its calls on the last day
    /// puts its server at risk.
    pub rate_limit: f64,
    /// One entry per server.
    pub servers: Vec<Server>,
}

/// One server's report, as a reader takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    /// The server's name.
    pub server: String,
    /// `ready`, `at-risk` or `not-ready`.
    pub verdict: String,
    /// Why, one sentence each.
    pub reasons: Vec<String>,
    /// The findings that count against it; null when the store has no
    /// index to read findings from.
    pub open_findings: Option<Open>,
    /// Findings verifying a fix: shown, never counted in the verdict. Null
    /// without an index, and absent from a readiness that predates it.
    #[serde(default)]
    pub verifying: Option<Vec<Verifying>>,
    /// Its tools over the window.
    pub tools: Vec<Tool>,
}

/// The findings that count against a server (open and fix-claimed), by
/// severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    /// Of severity high.
    pub high: u64,
    /// Of severity medium.
    pub medium: u64,
    /// Of severity low.
    pub low: u64,
}

/// A verifying finding: shown beside the verdict, never a reason for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verifying {
    /// The finding's id.
    pub id: String,
    /// The tool it is about.
    pub tool: String,
    /// Its severity.
    pub severity: Severity,
    /// Consecutive green runs towards closing.
    pub streak: u32,
}

/// One tool over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name.
    pub tool: String,
    /// Its calls in the window.
    pub calls: u64,
    /// Its failed calls in the window.
    pub failures: u64,
    /// One entry per day of the window.
    pub daily: Vec<Day>,
}

/// One day of one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Day {
    /// The day (UTC), `YYYY-MM-DD`.
    pub day: String,
    /// Calls that day.
    pub calls: u64,
    /// Failed calls that day.
    pub failures: u64,
    /// failures / calls; null without calls.
    pub failure_rate: Option<f64>,
}
