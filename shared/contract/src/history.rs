//! The lifecycle history that `mcpeval findings --history --format json`
//! prints: `{"history": [...]}` on one line, one [`History`] per listed
//! finding, oldest event first.
//!
//! It holds only ids, states, verdicts, reason codes and times: never a
//! closing reason (prose a person typed), a case id, a binding or a digest.
//! Every type ignores keys it does not know, as the format grows by adding
//! fields.

use serde::{Deserialize, Serialize};

use crate::finding::State;
use crate::id::FindingId;

/// The whole output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histories {
    /// One entry per finding, in the order the findings were listed.
    pub history: Vec<History>,
}

/// The history of one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The finding.
    pub finding: FindingId,
    /// Its lifecycle state now.
    pub state: State,
    /// Consecutive green runs towards closing.
    pub streak: u32,
    /// How often a red run reopened it.
    pub reopened: u32,
    /// Its state changes, oldest first.
    pub events: Vec<Event>,
    /// Its recorded verification runs, oldest first.
    pub runs: Vec<Run>,
}

/// One state change: promoted, verified, closed by hand, re-keyed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, RFC 3339.
    pub at: String,
    /// What happened (`promoted`, `verified`, `closed`, …).
    pub event: String,
    /// The state before, if it had one.
    pub from: Option<String>,
    /// The state after, if it changed.
    pub to: Option<String>,
    /// A red run that sent a verifying or closed finding back to open.
    pub reopened: bool,
}

/// One recorded verification run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its run id (none for evidence imported from an earlier release).
    pub run_id: Option<String>,
    /// `green` or `red`.
    pub result: String,
    /// Why a red run was red (a reason code).
    pub reason: Option<String>,
    /// When the run started, RFC 3339.
    pub started_at: Option<String>,
    /// When it finished, RFC 3339.
    pub finished_at: Option<String>,
    /// When it was recorded, RFC 3339.
    pub recorded_at: String,
    /// Imported index-only evidence of an earlier release; never counts.
    pub legacy: bool,
}
