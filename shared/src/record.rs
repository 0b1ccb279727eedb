//! Journal records: one JSON object per line, schema `mcpeval.call/1`, and
//! the legacy `mcpeval.call/0` that earlier releases wrote.
//!
//! These types are the journal's contract. They hold shapes, salted ids and
//! codes only: never an argument value, never error text.
//!
//! [`Call`] is the one definition of a current record, for writers and
//! readers alike. Its text fields are `Cow<'a, str>` and its arguments shape
//! a type parameter, so a reader that wants speed deserializes it with
//! `serde_json::from_slice` straight from the line it holds: every string
//! without escapes is borrowed, and `Call<'a, &'a RawValue>` keeps the shape
//! as written. Writers build a `Call<'static>` (owned text, a `Value`
//! shape). The checks serde cannot make are written once, in
//! [`Call::validate`], for both.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::id::{EventId, SessionToken, TemplateId};
use crate::spelling::spelled;

/// The schema tag of current records.
pub const SCHEMA_V1: &str = "mcpeval.call/1";
/// The schema tag of legacy records.
pub const SCHEMA_V0: &str = "mcpeval.call/0";
/// A record line longer than this (bytes, without the newline) is oversized.
pub const MAX_LINE: usize = 64 * 1024;

/// One completed (or abandoned) `tools/call`.
///
/// `Shape` is how the arguments shape is held: a `Value` by writers and
/// most readers, a borrowed `&RawValue` by one that keeps its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call<'a, Shape = Value> {
    /// Always [`SCHEMA_V1`].
    #[serde(borrow)]
    pub schema: Cow<'a, str>,
    /// Who the call is.
    #[serde(borrow)]
    pub identity: Identity<'a>,
    /// Captured traffic or a probe's own call.
    pub origin: Origin,
    /// How the call travelled.
    pub transport: Transport,
    /// Server name (flag, `serverInfo.name`, or the executable's name),
    /// cleaned by `escape::clean_name`.
    #[serde(borrow)]
    pub server: Cow<'a, str>,
    /// Tool name from `params.name`, cleaned by `escape::clean_name`.
    #[serde(borrow)]
    pub tool: Cow<'a, str>,
    /// When the request was seen, RFC 3339 UTC with milliseconds.
    #[serde(borrow)]
    pub started_at: Cow<'a, str>,
    /// Request to response; null when no response came.
    pub duration_ms: Option<u64>,
    /// Whether the tool was in the session's last `tools/list`; null if none seen.
    pub advertised: Option<bool>,
    /// The arguments with every scalar replaced by its JSON type and every
    /// key that may be data folded into `"*"` (`sanitize::args_shape`).
    pub args_shape: Shape,
    /// What came back.
    pub outcome: Outcome,
    /// Why the outcome is unknown (only with `outcome: unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<Unknown>,
    /// The error's sanitized facts (only with `outcome: error`).
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError<'a>>,
}

/// The identity of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity<'a> {
    /// A UUID v4, unique per call (an [`EventId`] once in canonical text).
    #[serde(borrow)]
    pub event_id: Cow<'a, str>,
    /// A [`SessionToken`]: salted hash of the capture's unique id.
    #[serde(borrow)]
    pub session: Cow<'a, str>,
    /// 1-based ordinal of the `tools/call` within its session: the turn.
    pub seq: u64,
}

spelled! {
    /// Where a call came from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Origin {
        /// Real traffic relayed by `capture`.
        Capture = "capture",
        /// A call made by `probe` or `verify`; never promoted.
        Probe = "probe",
    }
}

spelled! {
    /// The MCP transport a call used.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Transport {
        /// Newline-delimited JSON-RPC over a child's stdin/stdout.
        Stdio = "stdio",
        /// Streamable HTTP.
        Http = "http",
    }
}

spelled! {
    /// The outcome of a call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Outcome {
        /// A result object with `isError` false or absent.
        Ok = "ok",
        /// A JSON-RPC error, or a result with `isError: true`.
        Error = "error",
        /// A malformed result, or no response at all.
        Unknown = "unknown",
    }
}

spelled! {
    /// Why an outcome is unknown.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Unknown {
        /// The result was not an object, or `isError` was not a boolean.
        Malformed = "malformed",
        /// No response arrived before the session ended.
        Unanswered = "unanswered",
    }
}

/// The sanitized facts of an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallError<'a> {
    /// Which channel reported it.
    pub channel: Channel,
    /// JSON-RPC error code, or the tool's own integer code; null if none
    /// or outside the 32-bit signed range.
    pub code: Option<i64>,
    /// A [`TemplateId`]: salted hash of the normalized message.
    #[serde(borrow)]
    pub template_id: Option<Cow<'a, str>>,
    /// What the server said about retrying; null when it said nothing.
    pub retryable: Option<bool>,
}

spelled! {
    /// The channel an error came through.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Channel {
        /// A JSON-RPC error response.
        Jsonrpc = "jsonrpc",
        /// A `CallToolResult` with `isError: true`.
        Tool = "tool",
    }
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

impl<Shape> Call<'_, Shape> {
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
        check_uuid(&self.identity.event_id)?;
        check_token::<SessionToken>(&self.identity.session, "identity.session")?;
        check_seq(self.identity.seq)?;
        check_name(&self.server, "server")?;
        check_name(&self.tool, "tool")?;
        check_time(&self.started_at, "started_at")?;
        match (self.outcome, &self.error, &self.unknown) {
            (Outcome::Ok, None, None) => {}
            (Outcome::Error, Some(err), None) => {
                if let Some(t) = &err.template_id {
                    check_token::<TemplateId>(t, "error.template_id")?;
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
        check_token::<SessionToken>(&self.session, "session")?;
        check_seq(self.seq)?;
        check_name(&self.server, "server")?;
        check_name(&self.tool, "tool")?;
        check_time(&self.ts, "ts")?;
        if let Some(t) = &self.template_id {
            check_token::<TemplateId>(t, "template_id")?;
        }
        Ok(())
    }
}

/// A salted token, checked by its id type; the message keeps the wording
/// journals have always been refused with.
fn check_token<Id: crate::id::Prefixed>(value: &str, field: &str) -> Result<()> {
    if Id::is_valid(value) {
        Ok(())
    } else {
        Err(Error::rejected(format!(
            "{field} is not \"{}\" followed by 16 lower-case hex digits",
            Id::PREFIX
        )))
    }
}

/// Any UUID text `uuid` accepts; readers store it in [`EventId`]'s
/// canonical form, which needs no parse.
fn check_uuid(value: &str) -> Result<()> {
    if EventId::is_valid(value) || uuid::Uuid::parse_str(value).is_ok() {
        Ok(())
    } else {
        Err(Error::rejected("identity.event_id is not a UUID"))
    }
}

/// Whether `text` is a time stamp in the form capture writes and readers
/// store, `YYYY-MM-DDTHH:MM:SS.mmmZ`, naming a real instant. Such a text
/// needs no parse; leap seconds and every other form are left to
/// [`crate::time::parse`].
pub fn is_stored_time(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() != 24
        || [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ]
        .iter()
        .any(|&(at, c)| b[at] != c)
    {
        return false;
    }
    let fields = (
        digits(0, 4),
        digits(5, 7),
        digits(8, 10),
        digits(11, 13),
        digits(14, 16),
        digits(17, 19),
        digits(20, 23),
    );
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second), Some(_)) =
        fields
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day) && hour < 24 && minute < 60 && second < 60
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
    if is_stored_time(value) || crate::time::parse(value).is_some() {
        Ok(())
    } else {
        Err(Error::rejected(format!(
            "{field} is not an RFC 3339 time stamp"
        )))
    }
}

/// A journal line read back: either schema, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An `mcpeval.call/1` record.
    V1(Call<'static>),
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
                // `Call` borrows where it can; from a `Value` it owns.
                let call = Call::deserialize(value)
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
            Record::V1(c) => Some(c.identity.event_id.as_ref()),
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
