//! The one-time re-key of finding ids from earlier releases.
//!
//! Earlier releases hashed the error code into an error finding's id, which
//! split one defect across one finding per code. The next promote moves the
//! most recently updated state of those legacy ids to the current id and
//! retires the others; verification history is never touched. Running it
//! again finds nothing left to move.

use std::path::Path;

use rusqlite::Transaction;
use shared::Result;
use shared::finding::Kind;
use shared::id::FindingId;
use store::ids::{finding_id, legacy_finding_id};
use store::lifecycle;
use store::salt::Salt;

use crate::groups::Group;

/// Re-keys every error group's legacy ids inside the caller's transaction.
pub fn run(tx: &Transaction, path: &Path, salt: &Salt, groups: &[Group], now: &str) -> Result<()> {
    for group in groups.iter().filter(|g| g.kind == Kind::Error) {
        let template = group.template_id.as_deref();
        let current = finding_id(salt, Kind::Error, &group.server, &group.tool, template);
        // Every code the group saw, and "no code", could have been a legacy id.
        let codes = group.codes.iter().map(|c| Some(c.0)).chain([None]);
        let legacy: Vec<FindingId> = codes
            .map(|code| legacy_finding_id(salt, &group.server, &group.tool, template, code))
            .collect();
        lifecycle::rekey(tx, path, &legacy, &current, now)?;
    }
    Ok(())
}
