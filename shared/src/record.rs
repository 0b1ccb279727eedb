//! Journal records: one JSON object per line, schema `mcpeval.call/1`, and
//! the legacy `mcpeval.call/0` that earlier releases wrote.
//!
//! These types are the journal's contract. They hold shapes, salted ids and
//! codes only: never an argument value, never error text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The schema tag of current records.
pub const SCHEMA_V1: &str = "mcpeval.call/1";
/// The schema tag of legacy records.
pub const SCHEMA_V0: &str = "mcpeval.call/0";
/// A record line longer than this (bytes, without the newline) is oversized.
pub const MAX_LINE: usize = 64 * 1024;

/// One completed (or abandoned) `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// Always [`SCHEMA_V1`].
    pub schema: String,
    /// Who the call is.
    pub identity: Identity,
    /// Captured traffic or a probe's own call.
    pub origin: Origin,
    /// How the call travelled.
    pub transport: Transport,
    /// Server name (flag, `serverInfo.name`, or the executable's name),
    /// cleaned by `escape::clean_name`.
    pub server: String,
    /// Tool name from `params.name`, cleaned by `escape::clean_name`.
    pub tool: String,
    /// When the request was seen, RFC 3339 UTC with milliseconds.
    pub started_at: String,
    /// Request to response; null when no response came.
    pub duration_ms: Option<u64>,
    /// Whether the tool was in the session's last `tools/list`; null if none seen.
    pub advertised: Option<bool>,
    /// The arguments with every scalar replaced by its JSON type and every
    /// key that may be data folded into `"*"` (`sanitize::args_shape`).
    pub args_shape: Value,
    /// What came back.
    pub outcome: Outcome,
    /// Why the outcome is unknown (only with `outcome: unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<Unknown>,
    /// The error's sanitized facts (only with `outcome: error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
}

/// The identity of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// A UUID v4, unique per call.
    pub event_id: String,
    /// `s-` and 16 hex digits: salted hash of the capture's unique id.
    pub session: String,
    /// 1-based ordinal of the `tools/call` within its session: the turn.
    pub seq: u64,
}

/// Where a call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Real traffic relayed by `capture`.
    Capture,
    /// A call made by `probe` or `verify`; never promoted.
    Probe,
}

/// The MCP transport a call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Newline-delimited JSON-RPC over a child's stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// The outcome of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A result object with `isError` false or absent.
    Ok,
    /// A JSON-RPC error, or a result with `isError: true`.
    Error,
    /// A malformed result, or no response at all.
    Unknown,
}

/// Why an outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unknown {
    /// The result was not an object, or `isError` was not a boolean.
    Malformed,
    /// No response arrived before the session ended.
    Unanswered,
}

/// The sanitized facts of an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallError {
    /// Which channel reported it.
    pub channel: Channel,
    /// JSON-RPC error code, or the tool's own integer code; null if none
    /// or outside the 32-bit signed range.
    pub code: Option<i64>,
    /// `t-` and 16 hex digits: salted hash of the normalized message.
    pub template_id: Option<String>,
    /// What the server said about retrying; null when it said nothing.
    pub retryable: Option<bool>,
}

/// The channel an error came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// A JSON-RPC error response.
    Jsonrpc,
    /// A `CallToolResult` with `isError: true`.
    Tool,
}

/// A record as earlier releases wrote it: no identity, no transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyCall {
    /// Always [`SCHEMA_V0`].
    pub schema: String,
    /// Salted session token.
    pub session: String,
    /// Turn within the session.
    pub seq: u64,
    /// Server name.
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// Start time, RFC 3339.
    pub ts: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Error code, if any.
    pub err_code: Option<i64>,
    /// Salted template id, if any.
    pub template_id: Option<String>,
    /// Reported retryability, if any.
    pub retryable: Option<bool>,
    /// Argument shape.
    pub args_shape: Value,
}

impl Call {
    /// Checks what serde cannot: tags, id formats, time stamps, and that
    /// `error`/`unknown` appear exactly with their outcome. The error text
    /// names the offending field.
    pub fn validate(&self) -> Result<()> {
        if self.schema != SCHEMA_V1 {
            return Err(Error::rejected(format!(
                "schema is \"{}\", expected \"{SCHEMA_V1}\"",
                self.schema
            )));
        }
        if uuid::Uuid::parse_str(&self.identity.event_id).is_err() {
            return Err(Error::rejected("identity.event_id is not a UUID"));
        }
        check_token(&self.identity.session, "s-", "identity.session")?;
        check_seq(self.identity.seq)?;
        check_name(&self.server, "server")?;
        check_name(&self.tool, "tool")?;
        check_time(&self.started_at, "started_at")?;
        match (self.outcome, &self.error, &self.unknown) {
            (Outcome::Ok, None, None) => {}
            (Outcome::Error, Some(err), None) => {
                if let Some(t) = &err.template_id {
                    check_token(t, "t-", "error.template_id")?;
                }
            }
            (Outcome::Unknown, None, Some(_)) => {}
            (outcome, _, _) => {
                return Err(Error::rejected(format!(
                    "outcome {outcome:?} does not match the presence of \"error\" and \"unknown\""
                )));
            }
        }
        Ok(())
    }
}

impl LegacyCall {
    /// Checks the legacy record's fields (see [`Call::validate`]).
    pub fn validate(&self) -> Result<()> {
        if self.schema != SCHEMA_V0 {
            return Err(Error::rejected(format!(
                "schema is \"{}\", expected \"{SCHEMA_V0}\"",
                self.schema
            )));
        }
        check_token(&self.session, "s-", "session")?;
        check_seq(self.seq)?;
        check_name(&self.server, "server")?;
        check_name(&self.tool, "tool")?;
        check_time(&self.ts, "ts")?;
        if let Some(t) = &self.template_id {
            check_token(t, "t-", "template_id")?;
        }
        Ok(())
    }
}

fn check_token(value: &str, prefix: &str, field: &str) -> Result<()> {
    let ok = value.len() == prefix.len() + 16
        && value.starts_with(prefix)
        && value[prefix.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    if ok {
        Ok(())
    } else {
        Err(Error::rejected(format!(
            "{field} is not \"{prefix}\" followed by 16 lower-case hex digits"
        )))
    }
}

fn check_seq(seq: u64) -> Result<()> {
    if seq == 0 {
        Err(Error::rejected("seq must be 1 or more"))
    } else {
        Ok(())
    }
}

fn check_name(value: &str, field: &str) -> Result<()> {
    if value.is_empty() {
        Err(Error::rejected(format!("{field} is empty")))
    } else {
        Ok(())
    }
}

fn check_time(value: &str, field: &str) -> Result<()> {
    match crate::time::parse(value) {
        Some(_) => Ok(()),
        None => Err(Error::rejected(format!(
            "{field} is not an RFC 3339 time stamp"
        ))),
    }
}

/// A journal line read back: either schema, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An `mcpeval.call/1` record.
    V1(Call),
    /// A legacy `mcpeval.call/0` record.
    V0(LegacyCall),
}

impl Record {
    /// Parses and checks one line (without its newline) with the strict
    /// types of either schema. The error names the field or rule at fault
    /// and never echoes the line.
    pub fn parse(line: &[u8]) -> Result<Record> {
        if line.len() > MAX_LINE {
            return Err(Error::rejected(format!(
                "oversized record: the line is {} bytes, over the limit of {MAX_LINE}",
                line.len()
            )));
        }
        let value: Value = serde_json::from_slice(line).map_err(|e| {
            Error::rejected(format!(
                "not valid JSON: {}",
                e.to_string().split(" at line ").next().unwrap_or("")
            ))
        })?;
        let schema = value
            .get("schema")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match schema.as_deref() {
            Some(SCHEMA_V1) => {
                let call: Call = serde_json::from_value(value)
                    .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V1} record: {e}")))?;
                call.validate().map_err(|e| {
                    Error::rejected(format!("invalid {SCHEMA_V1} record")).with_source(e)
                })?;
                Ok(Record::V1(call))
            }
            Some(SCHEMA_V0) => {
                let call: LegacyCall = serde_json::from_value(value)
                    .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V0} record: {e}")))?;
                call.validate().map_err(|e| {
                    Error::rejected(format!("invalid {SCHEMA_V0} record")).with_source(e)
                })?;
                Ok(Record::V0(call))
            }
            Some(other) => Err(Error::rejected(format!(
                "unknown schema {other:?}; expected \"{SCHEMA_V1}\" or \"{SCHEMA_V0}\""
            ))),
            None => Err(Error::rejected("not a record: no \"schema\" string")),
        }
    }

    /// The server name.
    pub fn server(&self) -> &str {
        match self {
            Record::V1(c) => &c.server,
            Record::V0(c) => &c.server,
        }
    }

    /// The tool name.
    pub fn tool(&self) -> &str {
        match self {
            Record::V1(c) => &c.tool,
            Record::V0(c) => &c.tool,
        }
    }

    /// When the call started (legacy: `ts`), RFC 3339.
    pub fn started_at(&self) -> &str {
        match self {
            Record::V1(c) => &c.started_at,
            Record::V0(c) => &c.ts,
        }
    }

    /// Captured traffic or a probe's call; legacy records are captures.
    pub fn origin(&self) -> Origin {
        match self {
            Record::V1(c) => c.origin,
            Record::V0(_) => Origin::Capture,
        }
    }

    /// What came back.
    pub fn outcome(&self) -> Outcome {
        match self {
            Record::V1(c) => c.outcome,
            Record::V0(c) => c.outcome,
        }
    }

    /// Why the outcome is unknown (legacy records do not say).
    pub fn unknown(&self) -> Option<Unknown> {
        match self {
            Record::V1(c) => c.unknown,
            Record::V0(_) => None,
        }
    }

    /// The error code, if any.
    pub fn code(&self) -> Option<i64> {
        match self {
            Record::V1(c) => c.error.as_ref().and_then(|e| e.code),
            Record::V0(c) => c.err_code,
        }
    }

    /// The session token.
    pub fn session(&self) -> &str {
        match self {
            Record::V1(c) => &c.identity.session,
            Record::V0(c) => &c.session,
        }
    }

    /// The turn within the session.
    pub fn seq(&self) -> u64 {
        match self {
            Record::V1(c) => c.identity.seq,
            Record::V0(c) => c.seq,
        }
    }

    /// The event id (current records only).
    pub fn event_id(&self) -> Option<&str> {
        match self {
            Record::V1(c) => Some(&c.identity.event_id),
            Record::V0(_) => None,
        }
    }

    /// The record as JSON, re-serialized from its checked fields, so only
    /// what the contract allows is in it.
    pub fn to_value(&self) -> Value {
        match self {
            Record::V1(c) => serde_json::to_value(c),
            Record::V0(c) => serde_json::to_value(c),
        }
        .unwrap_or(Value::Null)
    }
}

/// The complete lines of journal bytes (each without its newline), and
/// how many bytes they span: an unfinished last line is left out, for a
/// later read once its newline arrives.
pub fn complete_lines(bytes: &[u8]) -> (usize, impl Iterator<Item = &[u8]>) {
    let end = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let lines = bytes[..end]
        .split(|&b| b == b'\n')
        .take(bytes[..end].iter().filter(|&&b| b == b'\n').count());
    (end, lines)
}

#[cfg(test)]
mod record_tests {
    use super::*;

    #[test]
    fn only_complete_lines_count() {
        let (end, lines) = complete_lines(b"a\n\nbb\ncc");
        assert_eq!(end, 6);
        assert_eq!(lines.collect::<Vec<_>>(), vec![&b"a"[..], b"", b"bb"]);
        assert_eq!(complete_lines(b"x").0, 0);
    }

    #[test]
    fn parses_both_schemas_and_names_what_is_wrong() {
        let v1 = br#"{"schema":"mcpeval.call/1","identity":{"event_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000001","session":"s-0000000000000001","seq":1},"origin":"capture","transport":"stdio","server":"w","tool":"t","started_at":"2026-11-30T07:00:00.123Z","duration_ms":4,"advertised":true,"args_shape":{},"outcome":"ok"}"#;
        let r = Record::parse(v1).unwrap();
        assert_eq!((r.server(), r.tool(), r.seq()), ("w", "t", 1));
        let v0 = br#"{"schema":"mcpeval.call/0","session":"s-0000000000000001","seq":2,"server":"w","tool":"t","ts":"2026-11-30T07:00:00Z","outcome":"error","err_code":-32603,"template_id":null,"retryable":null,"args_shape":{}}"#;
        assert_eq!(Record::parse(v0).unwrap().code(), Some(-32603));
        assert!(
            Record::parse(b"{")
                .unwrap_err()
                .message()
                .starts_with("not valid JSON")
        );
        assert!(
            Record::parse(br#"{"schema":"x"}"#)
                .unwrap_err()
                .message()
                .contains("unknown schema")
        );
        let extra = br#"{"schema":"mcpeval.call/0","session":"s-0000000000000001","seq":2,"server":"w","tool":"t","ts":"2026-11-30T07:00:00Z","outcome":"ok","err_code":null,"template_id":null,"retryable":null,"args_shape":{},"raw":"v"}"#;
        assert!(
            Record::parse(extra)
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
    }
}
