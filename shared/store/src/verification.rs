//! Recording verification runs and manual closures: the lifecycle rules.
//!
//! A finding moves `open → fix-claimed → verifying → closed`:
//! - a red run on an open or fix-claimed finding leaves it fix-claimed,
//!   with no streak;
//! - a green run starts a streak (verifying, 1/3); further greens under
//!   the same credit binding count up, and the third closes it; a green
//!   under another binding starts a fresh streak at 1;
//! - a red run on a verifying or closed finding reopens it (open, streak
//!   0) and counts a reopening;
//! - a green run on a closed finding keeps it closed and changes nothing
//!   but the record of runs;
//! - `close` closes any finding by hand, with a reason kept in history.
//!
//! Each run is recorded once: its run id is unique, a replay of the same
//! result earns nothing, and another result under a known run id is
//! refused. Everything a run changes (state, the run, the history line)
//! is written in one `BEGIN IMMEDIATE` transaction, so a run is either
//! wholly recorded or not at all. Legacy imported evidence never takes
//! part in a streak. Nothing here ever deletes a row.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use crate::catalog;
use crate::credit::{self, Evidence};
use crate::db;
use crate::hash;
use crate::lifecycle::{self, FindingState, State};
use shared::error::{Error, Kind, Result};
use shared::home::Home;
use shared::id::FindingId;
use shared::probe_result::{ProbeResult, Reason, Verdict};

/// Consecutive green runs under one binding that close a finding.
pub const GREENS_TO_CLOSE: u32 = 3;

/// Whether a finding may be verified or closed, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// It has a lifecycle state: it was promoted at some point.
    Tracked(FindingState),
    /// The current catalog has it, but lifecycle.db has no state yet.
    Promoted,
    /// An id of an earlier release, re-keyed to this one.
    Retired(String),
    /// Neither the lifecycle nor the catalog knows it.
    Unknown,
}

/// Looks `id` up: lifecycle.db first (authoritative, needs no index),
/// then the promoted catalog in index.db (which must then be complete,
/// else status 3).
pub fn standing(home: &Home, conn: &Connection, id: &str) -> Result<Standing> {
    let path = home.lifecycle_db();
    let row: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT finding_id, retired_for FROM finding_state WHERE finding_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(|e| db::sql_error(path.as_std_path(), e))?;
    match row {
        Some((_, Some(to))) => return Ok(Standing::Retired(to)),
        Some(_) => {
            let state = lifecycle::state(conn, path.as_std_path(), id)?.unwrap_or_default();
            return Ok(Standing::Tracked(state));
        }
        None => {}
    }
    let catalog = catalog::load(home)?;
    Ok(match catalog::find(&catalog, id) {
        Some(_) => Standing::Promoted,
        None => Standing::Unknown,
    })
}

impl Standing {
    /// `Ok` for a finding that may be verified or closed; otherwise the
    /// error, with `status`, saying what to do.
    pub fn require(&self, id: &str, status: u8) -> Result<()> {
        let kind = Kind::from(status);
        match self {
            Standing::Tracked(_) | Standing::Promoted => Ok(()),
            Standing::Retired(to) => Err(Error::new(
                kind,
                format!("{id} is an id of an earlier release; its state moved to {to}"),
            )
            .with_hint(format!("use {to}"))),
            Standing::Unknown => Err(Error::new(
                kind,
                format!("no finding {id} in this store: it was never promoted"),
            )
            .with_hint("list the findings with `mcpeval findings`, or run `mcpeval index` and `mcpeval promote`")),
        }
    }
}

/// What a store asks of a closing streak beyond its three greens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    /// An unwitnessed streak stops at `verifying` (SPEC §7, rule 6):
    /// `require_witnessed` in config.json or the team's settings.
    pub require_witnessed: bool,
}

impl Policy {
    /// Whether a streak closing the finding of `evidence` must be
    /// witnessed: when the store asks it of every finding, and always for
    /// a contract violation. Its case needs no oracle (the probe checks the
    /// outputSchema itself), so nothing in the case shows that its
    /// arguments reach the broken result; a red run of it on the unfixed
    /// server is the only evidence that they do.
    pub fn requires_witness(self, evidence: &Evidence) -> bool {
        self.require_witnessed || evidence.kind == shared::finding::Kind::Contract
    }
}

/// The state after one green or red run under `binding` that started at
/// `started_at`. Whether a closure is witnessed is the caller's to set
/// ([`record`] looks at the runs before the streak).
pub fn advance(
    current: &FindingState,
    green: bool,
    binding: &str,
    started_at: &str,
    now: &str,
) -> FindingState {
    let mut next = FindingState {
        probe_attached: true,
        updated_at: now.to_owned(),
        ..current.clone()
    };
    let reset = |next: &mut FindingState, state| {
        next.state = state;
        next.streak = 0;
        next.binding = None;
        next.streak_since = None;
        next.witnessed = None;
    };
    match (current.state, green) {
        // Closed stays closed until a red run says otherwise.
        (State::Closed, true) => {}
        (State::Open | State::FixClaimed, false) => reset(&mut next, State::FixClaimed),
        (State::Verifying | State::Closed, false) => {
            reset(&mut next, State::Open);
            next.reopened += 1;
        }
        (State::Verifying, true) if current.binding.as_deref() == Some(binding) => {
            // A streak held at verifying (unwitnessed) stays at 3/3.
            next.streak = (current.streak + 1).min(GREENS_TO_CLOSE);
            if next.streak >= GREENS_TO_CLOSE {
                next.state = State::Closed;
            }
        }
        (State::Open | State::FixClaimed | State::Verifying, true) => {
            next.state = State::Verifying;
            next.streak = 1;
            next.binding = Some(binding.to_owned());
            next.streak_since = Some(started_at.to_owned());
            next.witnessed = None;
        }
    }
    next
}

/// What recording a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A new run: the state before and after it.
    New {
        /// Before the run.
        before: FindingState,
        /// After the run.
        after: FindingState,
        /// Its green would have closed the finding, but no red run of
        /// its case against its target came before the streak and the
        /// store, or the finding's class, requires that (rule 6): the
        /// finding stays verifying.
        held_unwitnessed: bool,
    },
    /// The same result was recorded before: no credit, no change.
    Replay {
        /// The finding's state, unchanged.
        state: FindingState,
    },
}

impl Recorded {
    /// The finding's state after recording.
    pub fn state(&self) -> &FindingState {
        match self {
            Recorded::New { after, .. } => after,
            Recorded::Replay { state } => state,
        }
    }
}

/// SHA-256 of a result's canonical form: tells a replay from a conflict.
pub fn digest(result: &ProbeResult) -> String {
    hash::hex(&hash::sha256(result.canonical_unsigned().as_bytes()))
}

/// Records a green or red run whose MAC the caller has verified, in one
/// `BEGIN IMMEDIATE` transaction. A transport error records nothing
/// (status 5); another result under a recorded run id is refused
/// (status 6). A green run that started before the finding's latest red
/// run adds no credit and is refused (status 4, rule 5). A green that
/// closes the finding is witnessed when a red run of the same case
/// definition against the same target started before its streak did
/// (rule 6); where the policy requires a witness for the finding
/// ([`Policy::requires_witness`]) an unwitnessed one leaves it verifying.
pub fn record(
    conn: &mut Connection,
    path: &Path,
    result: &ProbeResult,
    evidence: &Evidence,
    policy: Policy,
) -> Result<Recorded> {
    let green = match result.result {
        Verdict::Green => true,
        Verdict::Red => false,
        Verdict::TransportError => {
            return Err(Error::transport(format!(
                "run {} of case \"{}\" ended in a transport error; no verification evidence was recorded",
                result.run_id, result.case
            )));
        }
    };
    let digest = digest(result);
    let fail = |e| db::sql_error(path, e);
    db::write(conn, |tx| {
        let known: Option<Option<String>> = tx
            .query_row(
                "SELECT digest FROM verifications WHERE run_id = ?1",
                [result.run_id.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        if let Some(recorded) = known {
            if recorded.as_deref() != Some(digest.as_str()) {
                return Err(Error::refused(format!(
                    "run {} is already recorded with a different result; a run earns credit once",
                    result.run_id
                ))
                .with_hint(
                    "record the result the run printed, or run the case again for a new run",
                ));
            }
            let state = lifecycle::state(tx, path, &result.finding)?.unwrap_or_default();
            return Ok(Recorded::Replay { state });
        }
        let now = shared::time::now_rfc3339();
        let retired: Option<String> = tx
            .query_row(
                "SELECT retired_for FROM finding_state WHERE finding_id = ?1",
                [result.finding.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?
            .flatten();
        if let Some(to) = retired {
            return Err(Error::refused(format!(
                "{} is an id of an earlier release; its state moved to {to}; nothing was recorded",
                result.finding
            ))
            .with_hint(format!("run the case again with its finding set to {to}")));
        }
        if green {
            refuse_older_than_red(tx, path, result)?;
        }
        lifecycle::ensure(tx, path, &result.finding, &now)?;
        let before = lifecycle::state(tx, path, &result.finding)?.unwrap_or_default();
        let mut after = advance(&before, green, &result.binding, &result.started_at, &now);
        let mut held_unwitnessed = false;
        if after.state == State::Closed && before.state != State::Closed {
            let witnessed = witnessed(tx, path, result, evidence, after.streak_since.as_deref())?;
            if !witnessed && policy.requires_witness(evidence) {
                after.state = State::Verifying;
                held_unwitnessed = true;
            } else {
                after.witnessed = Some(witnessed);
            }
        }
        tx.execute(
            "UPDATE finding_state SET state = ?2, streak = ?3, binding = ?4, probe_attached = ?5,
                 reopened = ?6, updated_at = ?7, streak_since = ?8, witnessed = ?9
             WHERE finding_id = ?1",
            params![
                result.finding.as_str(),
                after.state.as_str(),
                after.streak,
                after.binding,
                after.probe_attached,
                after.reopened,
                now,
                after.streak_since,
                after.witnessed
            ],
        )
        .map_err(fail)?;
        tx.execute(
            "INSERT INTO verifications(run_id, finding_id, case_id, binding, result, reason,
                 started_at, finished_at, recorded_at, legacy, digest, definition, target)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, ?11, ?12)",
            params![
                result.run_id.as_str(),
                result.finding.as_str(),
                result.case,
                result.binding,
                result.result.as_str(),
                result.reason.map(|r| r.as_str()),
                result.started_at,
                result.finished_at,
                now,
                digest,
                result.definition.as_ref().map(|d| d.as_str()),
                result.target.as_ref().map(|t| t.as_str())
            ],
        )
        .map_err(fail)?;
        let mut detail = format!(
            "case={} result={} streak={}/{GREENS_TO_CLOSE} run={}",
            result.case,
            result.result.as_str(),
            after.streak,
            result.run_id
        );
        if let Some(reason) = result.reason {
            detail.push_str(&format!(" reason={}", reason.as_str()));
        }
        if let Some(witnessed) = after.witnessed.filter(|_| after.state == State::Closed) {
            detail.push_str(&format!(" witnessed={witnessed}"));
        }
        if held_unwitnessed {
            detail.push_str(" held=unwitnessed");
        }
        lifecycle::record_history(
            tx,
            path,
            &result.finding,
            &now,
            "verified",
            Some(before.state),
            Some(after.state),
            Some(&detail),
        )?;
        Ok(Recorded::New {
            before,
            after,
            held_unwitnessed,
        })
    })
}

/// Rule 5: refuses (status 4) a green run that started before the
/// finding's latest red run: evidence older than the evidence against the
/// fix (a repaired server probed, then broken again) proves nothing now.
fn refuse_older_than_red(tx: &Connection, path: &Path, result: &ProbeResult) -> Result<()> {
    let fail = |e| db::sql_error(path, e);
    let started = shared::time::parse(&result.started_at);
    let mut stmt = tx
        .prepare(
            "SELECT started_at FROM verifications
             WHERE finding_id = ?1 AND result = 'red' AND started_at IS NOT NULL",
        )
        .map_err(fail)?;
    let reds = stmt
        .query_map([result.finding.as_str()], |r| r.get::<_, String>(0))
        .map_err(fail)?;
    let mut latest: Option<(jiff::Timestamp, String)> = None;
    for red in reds {
        let text = red.map_err(fail)?;
        if let Some(at) = shared::time::parse(&text)
            && latest.as_ref().is_none_or(|(l, _)| at > *l)
        {
            latest = Some((at, text));
        }
    }
    match (started, latest) {
        (Some(started), Some((red, red_text))) if started < red => Err(Error::rejected(format!(
            "run {} of case \"{}\" started at {}, before the latest red run of {} (started at \
             {red_text}): a green run older than the evidence against the fix adds no credit; \
             nothing was recorded",
            result.run_id, result.case, result.started_at, result.finding
        ))
        .with_hint("run the case again now, against the server as it is")),
        _ => Ok(()),
    }
}

/// Rule 6: whether a red run of `result`'s case definition against its
/// target, red the way the finding fails ([`credit::reproduces`]), started
/// before the streak that `result` completes (which began at `since`):
/// the bug was reproduced where the fix was then made.
fn witnessed(
    tx: &Connection,
    path: &Path,
    result: &ProbeResult,
    evidence: &Evidence,
    since: Option<&str>,
) -> Result<bool> {
    let (Some(definition), Some(target), Some(since)) = (
        &result.definition,
        &result.target,
        since.and_then(shared::time::parse),
    ) else {
        return Ok(false);
    };
    let fail = |e| db::sql_error(path, e);
    let mut stmt = tx
        .prepare(
            "SELECT started_at, reason FROM verifications
             WHERE finding_id = ?1 AND result = 'red' AND definition = ?2 AND target = ?3",
        )
        .map_err(fail)?;
    let reds = stmt
        .query_map(
            params![
                result.finding.as_str(),
                definition.as_str(),
                target.as_str()
            ],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                ))
            },
        )
        .map_err(fail)?;
    for red in reds {
        let (at, reason) = red.map_err(fail)?;
        let at = at.as_deref().and_then(shared::time::parse);
        let reproduced = reason
            .as_deref()
            .and_then(Reason::parse)
            .is_some_and(|r| credit::reproduces(r, evidence));
        if reproduced && at.is_some_and(|at| at < since) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The longest closing reason, in characters.
pub const MAX_REASON_CHARS: usize = 240;

/// Checks a closing reason: not blank, at most [`MAX_REASON_CHARS`]
/// characters, no control characters.
pub fn check_reason(reason: &str) -> Result<()> {
    if reason.trim().is_empty() {
        return Err(Error::usage(
            "the reason is empty; say why the finding is closed",
        ));
    }
    let chars = reason.chars().count();
    if chars > MAX_REASON_CHARS {
        return Err(Error::usage(format!(
            "the reason has {chars} characters; the limit is {MAX_REASON_CHARS}"
        )));
    }
    if let Some((at, c)) = reason.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(Error::usage(format!(
            "the reason contains the control character U+{:04X} at character {}; use plain text on one line",
            u32::from(c),
            at + 1
        )));
    }
    Ok(())
}

/// Closes `finding` by hand in one `BEGIN IMMEDIATE` transaction and
/// returns the state before and after; a closed finding stays as it is
/// (`None`). The streak and binding are kept; the reason goes to history.
pub fn close(
    conn: &mut Connection,
    path: &Path,
    finding: &FindingId,
    reason: &str,
) -> Result<Option<(FindingState, FindingState)>> {
    check_reason(reason)?;
    db::write(conn, |tx| {
        let now = shared::time::now_rfc3339();
        lifecycle::ensure(tx, path, finding, &now)?;
        let before = lifecycle::state(tx, path, finding)?.unwrap_or_default();
        if before.state == State::Closed {
            return Ok(None);
        }
        let after = FindingState {
            state: State::Closed,
            updated_at: now.clone(),
            witnessed: None,
            ..before.clone()
        };
        tx.execute(
            "UPDATE finding_state SET state = 'closed', updated_at = ?2, witnessed = NULL
             WHERE finding_id = ?1",
            params![finding.as_str(), now],
        )
        .map_err(|e| db::sql_error(path, e))?;
        lifecycle::record_history(
            tx,
            path,
            finding,
            &now,
            "closed-by-hand",
            Some(before.state),
            Some(State::Closed),
            Some(reason),
        )?;
        Ok(Some((before, after)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(state: State, streak: u32, binding: Option<&str>) -> FindingState {
        FindingState {
            state,
            streak,
            binding: binding.map(str::to_owned),
            ..FindingState::default()
        }
    }

    fn step(from: &FindingState, green: bool, binding: &str) -> (State, u32, u32) {
        let next = advance(from, green, binding, "s", "t");
        assert!(next.probe_attached);
        (next.state, next.streak, next.reopened)
    }

    #[test]
    fn the_transitions() {
        use State::*;
        let open = at(Open, 0, None);
        assert_eq!(step(&open, false, "b-1"), (FixClaimed, 0, 0));
        assert_eq!(
            step(&at(FixClaimed, 0, None), false, "b-1"),
            (FixClaimed, 0, 0)
        );
        assert_eq!(step(&open, true, "b-1"), (Verifying, 1, 0));
        assert_eq!(
            step(&at(FixClaimed, 0, None), true, "b-1"),
            (Verifying, 1, 0)
        );
        let one = at(Verifying, 1, Some("b-1"));
        assert_eq!(step(&one, true, "b-1"), (Verifying, 2, 0));
        assert_eq!(
            step(&at(Verifying, 2, Some("b-1")), true, "b-1"),
            (Closed, 3, 0)
        );
        assert_eq!(
            step(&at(Verifying, 2, Some("b-1")), true, "b-2"),
            (Verifying, 1, 0)
        );
        assert_eq!(step(&one, false, "b-1"), (Open, 0, 1));
        let closed = at(Closed, 3, Some("b-1"));
        assert_eq!(step(&closed, true, "b-2"), (Closed, 3, 0));
        assert_eq!(step(&closed, false, "b-1"), (Open, 0, 1));
        assert_eq!(advance(&one, false, "b-1", "s", "t").binding, None);
        let fresh = advance(&one, true, "b-2", "s2", "t");
        assert_eq!(fresh.binding.as_deref(), Some("b-2"));
        assert_eq!(fresh.streak_since.as_deref(), Some("s2"));
        // A streak held at verifying stays at 3/3 and closes on the next green.
        assert_eq!(
            step(&at(Verifying, 3, Some("b-1")), true, "b-1"),
            (Closed, 3, 0)
        );
    }

    #[test]
    fn reasons_are_bounded() {
        assert!(check_reason("fixed upstream in 2.4.1").is_ok());
        assert!(check_reason(&"é".repeat(240)).is_ok());
        assert!(
            check_reason(&"é".repeat(241))
                .unwrap_err()
                .message()
                .contains("241 characters")
        );
        assert!(
            check_reason("a\tb")
                .unwrap_err()
                .message()
                .contains("U+0009 at character 2")
        );
        assert!(check_reason("  ").is_err());
    }
}
