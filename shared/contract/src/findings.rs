//! The findings JSON, `mcpeval.findings/1`: what `mcpeval findings --format
//! json` prints and every reader of it (a plugin, `report`, `serve`) parses.
//!
//! These are the data types alone, one definition for writer and readers;
//! loading them from the store (the store's `catalog`)
//! and the figures' arithmetic live elsewhere. A reader should ignore keys
//! it does not know: the format grows by adding fields, never by changing
//! one, so none of these types refuses an unknown key.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::finding::{DefectClass, Kind, State, Violation};
use crate::id::FindingId;
use crate::score::Severity;

/// The schema tag of the findings JSON.
pub const SCHEMA: &str = "mcpeval.findings/1";

/// The top-level object of `mcpeval findings --format json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Findings {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// When the promotion these findings come from ran (RFC 3339); null
    /// when none ran since the index last changed, or when the findings
    /// were read from a share file.
    pub promoted_at: Option<String>,
    /// The findings, highest score first.
    pub findings: Vec<Finding>,
}

impl Findings {
    /// The findings of the promotion that ran at `promoted_at`, tagged
    /// with [`SCHEMA`].
    pub fn new(promoted_at: Option<String>, findings: Vec<Finding>) -> Findings {
        Findings {
            schema: SCHEMA.to_owned(),
            promoted_at,
            findings,
        }
    }

    /// Parses the output of `mcpeval findings --format json`, refusing
    /// another schema (status 4). The message names the JSON position at
    /// fault, never the value.
    pub fn parse(text: &str) -> Result<Findings> {
        // serde's own words may quote the value (an unknown variant), so
        // the message keeps only where it went wrong.
        let mut de = serde_json::Deserializer::from_str(text);
        let parsed: Findings = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let what = "not the JSON of `mcpeval findings --format json`";
            let mut at = String::new();
            for segment in e.path().iter() {
                match segment {
                    serde_path_to_error::Segment::Seq { index } => {
                        at.push_str(&format!("/{index}"))
                    }
                    // Only a field name of the contract is named.
                    serde_path_to_error::Segment::Map { key }
                        if key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
                    {
                        at.push('/');
                        at.push_str(key);
                    }
                    _ => {}
                }
            }
            Error::rejected(if at.is_empty() {
                format!("{what}: not an object with schema, promoted_at and findings")
            } else {
                format!("{what}: the value at {at} does not fit")
            })
        })?;
        if parsed.schema != SCHEMA {
            return Err(Error::rejected(format!("schema is not \"{SCHEMA}\"")));
        }
        Ok(parsed)
    }
}

/// What `promote` derives for one finding: the figures of its failure
/// group, as the index holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// The finding's id, checked when read.
    pub id: FindingId,
    /// What kind of group it stands for.
    pub kind: Kind,
    /// Server name (untrusted: escape it for its medium).
    pub server: String,
    /// Tool name (untrusted: escape it for its medium).
    pub tool: String,
    /// The group's salted template id (never output: it only joins).
    #[serde(skip)]
    pub template_id: Option<String>,
    /// The defect class.
    pub defect_class: DefectClass,
    /// The class's one-line fix hint.
    pub fix_hint: String,
    /// The promotion score in [0, 1].
    pub score: f64,
    /// Failures of the group.
    pub failures: u64,
    /// Captured calls to (server, tool).
    pub calls: u64,
    /// failures / calls.
    pub failure_rate: f64,
    /// 95% Wilson lower bound of the failure rate.
    pub wilson_lower: f64,
    /// Distinct sessions with a failure.
    pub sessions: u64,
    /// First failure, RFC 3339.
    pub first_seen: String,
    /// Last failure, RFC 3339.
    pub last_seen: String,
    /// Median failure-window length in turns.
    pub median_window_turns: f64,
    /// Distinct tools failing inside the group's windows.
    pub blast_radius: u64,
    /// The most frequent error code.
    pub err_code: Option<i64>,
    /// Every distinct error code.
    pub err_codes: Vec<i64>,
    /// true: every failure retryable; false: none; null: mixed or unreported.
    pub retryable: Option<bool>,
    /// Argument shapes of failing calls, most frequent first.
    pub args_shapes: Vec<Value>,
    /// A contract-violation finding's place and keyword; absent for
    /// every other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<Violation>,
}

/// A finding as readers see it: derived figures plus lifecycle state, one
/// object of [`Findings::findings`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The derived figures.
    #[serde(flatten)]
    pub derived: Derived,
    /// How bad it is; capped at medium without an attached probe.
    pub severity: Severity,
    /// Its place in the lifecycle.
    pub state: State,
    /// Consecutive green runs towards closing (of 3).
    pub streak: u32,
    /// Whether a manifest case was verified against it at least once.
    pub probe_attached: bool,
    /// How often a red run reopened it.
    pub reopened: u32,
    /// For a finding closed by verification: whether a red run of the
    /// closing case against the same target came before its streak (a
    /// witnessed closure, the strong form). Null for any other finding,
    /// and in the output of releases before it.
    #[serde(default)]
    pub witnessed: Option<bool>,
}

/// The facts of the last promotion run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promotion {
    /// When it ran, RFC 3339.
    pub promoted_at: String,
    /// The "now" scores were computed for.
    pub scored_as_of: String,
    /// The threshold used.
    pub threshold: f64,
    /// Groups considered.
    pub issues: u64,
    /// Findings promoted.
    pub promoted: u64,
    /// Groups seen in one session only.
    pub one_session: u64,
    /// Groups in two or more sessions below the threshold.
    pub below_threshold: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Finding {
        let class = DefectClass::InvalidArguments;
        Finding {
            derived: Derived {
                id: FindingId::parse("finding-0123456789abcdef").unwrap(),
                kind: Kind::Error,
                server: "weather".into(),
                tool: "get_forecast".into(),
                template_id: Some("t-0011223344556677".into()),
                defect_class: class,
                fix_hint: class.fix_hint().into(),
                score: 0.4,
                failures: 3,
                calls: 10,
                failure_rate: 0.3,
                wilson_lower: 0.1,
                sessions: 2,
                first_seen: "2026-11-30T07:00:00Z".into(),
                last_seen: "2026-11-30T08:00:00Z".into(),
                median_window_turns: 1.0,
                blast_radius: 1,
                err_code: Some(-32602),
                err_codes: vec![-32602],
                retryable: Some(false),
                args_shapes: vec![serde_json::json!({"city": "string"})],
                contract: None,
            },
            severity: Severity::Medium,
            state: State::FixClaimed,
            streak: 0,
            probe_attached: false,
            reopened: 1,
            witnessed: None,
        }
    }

    #[test]
    fn writes_and_reads_the_one_contract() {
        let doc = Findings::new(Some("2026-11-30T09:00:00Z".into()), vec![sample()]);
        let text = serde_json::to_string(&doc).unwrap();
        assert!(
            text.starts_with(
                r#"{"schema":"mcpeval.findings/1","promoted_at":"2026-11-30T09:00:00Z","findings":[{"id":"finding-0123456789abcdef","kind":"error","#
            ),
            "{text}"
        );
        assert!(text.contains(r#""severity":"medium","state":"fix-claimed","#));
        assert!(!text.contains("template_id"), "{text}");
        let back = Findings::parse(&text).unwrap();
        let mut expected = doc.clone();
        expected.findings[0].derived.template_id = None;
        assert_eq!(back, expected);
        let none = serde_json::to_string(&Findings::new(None, Vec::new())).unwrap();
        assert_eq!(
            none,
            r#"{"schema":"mcpeval.findings/1","promoted_at":null,"findings":[]}"#
        );
    }

    #[test]
    fn readers_ignore_new_keys_and_refuse_another_schema() {
        let mut value = serde_json::to_value(Findings::new(None, vec![sample()])).unwrap();
        value["later"] = Value::from(1);
        value["findings"][0]["later"] = Value::from(2);
        assert_eq!(
            Findings::parse(&value.to_string()).unwrap().findings.len(),
            1
        );
        value["schema"] = Value::from("mcpeval.findings/2");
        assert_eq!(
            Findings::parse(&value.to_string()).unwrap_err().message(),
            "schema is not \"mcpeval.findings/1\""
        );
        value["schema"] = Value::from(SCHEMA);
        // (A finding's fields are flattened, so the position stops at it.)
        value["findings"][0]["id"] = Value::from("../../x");
        let err = Findings::parse(&value.to_string()).unwrap_err().to_string();
        assert_eq!(
            err,
            "not the JSON of `mcpeval findings --format json`: the value at /findings/0 does not fit"
        );
        assert!(!err.contains("../"), "{err}");
    }
}
