//! Scoring groups and choosing which become findings.
//!
//! A group is promoted when its score reaches the threshold *and* it failed
//! in at least two distinct sessions; the session rule holds even at a zero
//! threshold, so a single bad session never files a finding.

use jiff::Timestamp;
use serde_json::Value;
use shared::finding::{DefectClass, Kind, Violation};
use shared::score::{Signals, median, wilson_lower};
use store::catalog::Derived;
use store::ids::finding_id;
use store::salt::Salt;

use crate::groups::Group;

/// The outcome of selection.
#[derive(Debug)]
pub struct Selection {
    pub findings: Vec<Derived>,
    pub one_session: u64,
    pub below_threshold: u64,
}

/// Scores every group at `now` and keeps the findings.
pub fn select(groups: &[Group], salt: &Salt, threshold: f64, now: Timestamp) -> Selection {
    let mut selection = Selection {
        findings: Vec::new(),
        one_session: 0,
        below_threshold: 0,
    };
    for group in groups {
        let derived = derive(group, salt, now);
        if group.sessions < 2 {
            selection.one_session += 1;
        } else if derived.score < threshold {
            selection.below_threshold += 1;
        } else {
            selection.findings.push(derived);
        }
    }
    selection
        .findings
        .sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    selection
}

/// Every figure of a group, scored as of `now`.
pub fn derive(group: &Group, salt: &Salt, now: Timestamp) -> Derived {
    // Groups without failure windows (malformed results, false successes)
    // cost one observed call and reach only their own tool.
    let (median_turns, blast_radius) = match group.kind {
        Kind::Error if !group.turns.is_empty() => {
            (median(&mut group.turns.clone()), group.blast_radius.max(1))
        }
        _ => (1.0, 1),
    };
    let age_days = shared::time::parse(&group.last_seen)
        .map(|last| (now.as_millisecond() - last.as_millisecond()) as f64 / 86_400_000.0)
        .unwrap_or(0.0);
    let signals = Signals {
        failures: group.failures,
        calls: group.calls.max(group.failures),
        age_days,
        median_turns,
        blast_radius,
    };
    let class = DefectClass::of(group.kind, &group.evidence);
    let contract = Violation::of_group(group.kind, group.template_id.as_deref());
    let e = &group.evidence;
    let retryable = match group.kind {
        Kind::Error if e.failures > 0 && e.retryable_true == e.failures => Some(true),
        Kind::Error if e.failures > 0 && e.retryable_false == e.failures => Some(false),
        _ => None,
    };
    let (err_code, err_codes) = match group.kind {
        Kind::Error => (group.err_code(), group.evidence.err_codes.clone()),
        _ => (None, Vec::new()),
    };
    Derived {
        id: finding_id(
            salt,
            group.kind,
            &group.server,
            &group.tool,
            group.template_id.as_deref(),
        ),
        kind: group.kind,
        server: group.server.clone(),
        tool: group.tool.clone(),
        template_id: group.template_id.clone(),
        defect_class: class,
        fix_hint: shared::finding::fix_hint(class, contract.as_ref()),
        score: signals.score(),
        failures: group.failures,
        calls: signals.calls,
        failure_rate: group.failures as f64 / signals.calls.max(1) as f64,
        wilson_lower: wilson_lower(group.failures, signals.calls),
        sessions: group.sessions,
        first_seen: group.first_seen.clone(),
        last_seen: group.last_seen.clone(),
        median_window_turns: median_turns,
        blast_radius,
        err_code,
        err_codes,
        retryable,
        args_shapes: group
            .args_shapes
            .iter()
            .map(|s| serde_json::from_str(s).unwrap_or(Value::Null))
            .collect(),
        contract,
    }
}
