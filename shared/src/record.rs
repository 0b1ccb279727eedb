//! Journal records: one JSON object per line, schema `mcpeval.call/1`, and
//! the legacy `mcpeval.call/0` that earlier releases wrote.
//!
//! These types are the journal's contract. They hold shapes, salted ids and
//! codes only: never an argument value, never error text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Server name (flag, `serverInfo.name`, or the executable's name).
    pub server: String,
    /// Tool name from `params.name`.
    pub tool: String,
    /// When the request was seen, RFC 3339 UTC with milliseconds.
    pub started_at: String,
    /// Request to response; null when no response came.
    pub duration_ms: Option<u64>,
    /// Whether the tool was in the session's last `tools/list`; null if none seen.
    pub advertised: Option<bool>,
    /// The arguments with every scalar replaced by its JSON type.
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
    /// JSON-RPC error code, or the tool's own integer code; null if none.
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
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != SCHEMA_V1 {
            return Err(format!(
                "schema is \"{}\", expected \"{SCHEMA_V1}\"",
                self.schema
            ));
        }
        if uuid::Uuid::parse_str(&self.identity.event_id).is_err() {
            return Err("identity.event_id is not a UUID".into());
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
                return Err(format!(
                    "outcome {outcome:?} does not match the presence of \"error\" and \"unknown\""
                ));
            }
        }
        Ok(())
    }
}

impl LegacyCall {
    /// Checks the legacy record's fields (see [`Call::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != SCHEMA_V0 {
            return Err(format!(
                "schema is \"{}\", expected \"{SCHEMA_V0}\"",
                self.schema
            ));
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

fn check_token(value: &str, prefix: &str, field: &str) -> Result<(), String> {
    let ok = value.len() == prefix.len() + 16
        && value.starts_with(prefix)
        && value[prefix.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{field} is not \"{prefix}\" followed by 16 lower-case hex digits"
        ))
    }
}

fn check_seq(seq: u64) -> Result<(), String> {
    if seq == 0 {
        Err("seq must be 1 or more".into())
    } else {
        Ok(())
    }
}

fn check_name(value: &str, field: &str) -> Result<(), String> {
    if value.is_empty() {
        Err(format!("{field} is empty"))
    } else {
        Ok(())
    }
}

fn check_time(value: &str, field: &str) -> Result<(), String> {
    match crate::time::parse(value) {
        Some(_) => Ok(()),
        None => Err(format!("{field} is not an RFC 3339 time stamp")),
    }
}
