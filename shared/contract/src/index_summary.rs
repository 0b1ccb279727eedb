//! The summary that `mcpeval index --format json` prints on stdout: one
//! JSON object, keys in this order.
//!
//! Every type ignores keys it does not know, as the format grows by adding
//! fields.

use serde::{Deserialize, Serialize};

/// One index run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Calls in the index after the run.
    pub calls: u64,
    /// Calls the run added.
    pub new: u64,
    /// Journals read.
    pub journals: u64,
    /// Wall-clock seconds, to the millisecond.
    pub seconds: f64,
    /// Why the run rebuilt the index from scratch; null when it did not.
    pub rebuild: Option<String>,
    /// With a team database: what was synced. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<Team>,
}

/// What an index run synced with the team database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Team {
    /// The database, shown without a password.
    pub database: String,
    /// Calls this store uploaded.
    pub uploaded: u64,
    /// Stores whose calls the team's view holds.
    pub stores: u64,
    /// Calls in the team's view.
    pub calls: u64,
    /// Calls the view's index run added.
    pub new: u64,
    /// Journals of the view.
    pub journals: u64,
    /// Where the time went.
    pub seconds: TeamSeconds,
}

/// Seconds of a team sync, each to the millisecond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamSeconds {
    /// Uploading this store's new calls.
    pub upload: f64,
    /// Bringing the view's lifecycle and journals up to date.
    pub pull: f64,
    /// The view's own index run.
    pub index: f64,
}

/// `seconds` to the millisecond, as the summary reports time.
pub fn millis(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}
