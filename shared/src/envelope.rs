//! The share envelope (`mcpeval.share/1`): what `mcpeval share` hands to a
//! server's maintainer, and what `mcpeval findings --from FILE` reads back.
//!
//! An envelope carries the sanitized findings exactly as `findings --format
//! json` prints them, per-tool aggregates, and the sanitized journal
//! records of the chosen servers. It never carries lifecycle.db rows, the
//! salt, or annotation notes (notes only when the sender asked for them).
//! Reading one is strict: an unknown schema or a finding field that breaks
//! the contract is rejected with the file and the JSON path at fault, so
//! nothing foreign is rendered as if it were a finding.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Derived, Finding};
use crate::error::{Error, Result};
use crate::finding::{DefectClass, Kind};
use crate::id::FindingId;
use crate::lifecycle::State;

/// The schema tag of share envelopes.
pub const SCHEMA: &str = "mcpeval.share/1";

/// Envelopes larger than this (256 MiB) are refused unread.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Deserialize)]
struct Head {
    schema: Value,
    #[serde(default)]
    findings: Option<Vec<Wire>>,
}

/// A finding as the JSON of `findings --format json` spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    id: String,
    kind: String,
    server: String,
    tool: String,
    defect_class: String,
    #[allow(dead_code)]
    fix_hint: String,
    score: f64,
    failures: u64,
    calls: u64,
    failure_rate: f64,
    wilson_lower: f64,
    sessions: u64,
    first_seen: String,
    last_seen: String,
    median_window_turns: f64,
    blast_radius: u64,
    err_code: Option<i64>,
    err_codes: Vec<i64>,
    retryable: Option<bool>,
    args_shapes: Vec<Value>,
    severity: String,
    state: String,
    streak: u32,
    probe_attached: bool,
    reopened: u32,
}

/// Reads the findings of the envelope at `path`. Status 4 (rejected) for
/// a file that is not an `mcpeval.share/1` envelope or holds a finding
/// that breaks the contract; the message names the file and the value.
pub fn read_findings(path: &Path) -> Result<Vec<Finding>> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::io(format_args!("cannot open the share envelope {shown}"), e))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_BYTES {
        return Err(Error::rejected(format!(
            "{shown} is {len} bytes; share envelopes are limited to 256 MiB"
        )));
    }
    let reader = std::io::BufReader::new(file);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let head: Head = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_io() {
            return Error::io(
                format_args!("cannot read {shown}"),
                std::io::Error::other(inner.to_string()),
            );
        }
        let text = inner.to_string();
        let text = text.split(" at line ").next().unwrap_or("");
        Error::rejected(format!("{shown}: {at}: {text}"))
            .with_hint("the file is not an mcpeval share envelope; create one with `mcpeval share`")
    })?;
    if head.schema.as_str() != Some(SCHEMA) {
        return Err(Error::rejected(format!(
            "{shown}: schema is {}, expected \"{SCHEMA}\"",
            head.schema
        ))
        .with_hint(
            "the file was not written by `mcpeval share`, or by a release this one cannot read",
        ));
    }
    let wires = head.findings.ok_or_else(|| {
        Error::rejected(format!("{shown}: the envelope has no \"findings\" array"))
    })?;
    wires
        .into_iter()
        .enumerate()
        .map(|(n, w)| {
            from_wire(w).map_err(|(field, why)| {
                Error::rejected(format!("{shown}: findings[{n}].{field}: {why}"))
            })
        })
        .collect()
}

fn from_wire(w: Wire) -> Result<Finding, (&'static str, String)> {
    let Ok(id) = FindingId::parse(&w.id) else {
        return Err(("id", "not \"finding-\" and 16 lower-case hex digits".into()));
    };
    let kind = Kind::parse(&w.kind).ok_or(("kind", format!("unknown kind {:?}", w.kind)))?;
    let class = DefectClass::parse(&w.defect_class).ok_or((
        "defect_class",
        format!("unknown defect class {:?}", w.defect_class),
    ))?;
    let severity = ["high", "medium", "low"]
        .into_iter()
        .find(|s| *s == w.severity)
        .ok_or(("severity", format!("unknown severity {:?}", w.severity)))?;
    let state = State::parse(&w.state).ok_or(("state", format!("unknown state {:?}", w.state)))?;
    for (field, value) in [
        ("score", w.score),
        ("failure_rate", w.failure_rate),
        ("wilson_lower", w.wilson_lower),
    ] {
        if !(0.0..=1.0).contains(&value) {
            return Err((field, format!("{value} is outside [0, 1]")));
        }
    }
    for (field, value) in [("first_seen", &w.first_seen), ("last_seen", &w.last_seen)] {
        if crate::time::parse(value).is_none() {
            return Err((field, "not an RFC 3339 time stamp".into()));
        }
    }
    Ok(Finding {
        derived: Derived {
            id,
            kind: kind.as_str(),
            server: w.server,
            tool: w.tool,
            template_id: None,
            defect_class: class.as_str(),
            fix_hint: class.fix_hint(),
            score: w.score,
            failures: w.failures,
            calls: w.calls,
            failure_rate: w.failure_rate,
            wilson_lower: w.wilson_lower,
            sessions: w.sessions,
            first_seen: w.first_seen,
            last_seen: w.last_seen,
            median_window_turns: w.median_window_turns,
            blast_radius: w.blast_radius,
            err_code: w.err_code,
            err_codes: w.err_codes,
            retryable: w.retryable,
            args_shapes: w.args_shapes,
        },
        severity,
        state: state.as_str(),
        streak: w.streak,
        probe_attached: w.probe_attached,
        reopened: w.reopened,
    })
}
