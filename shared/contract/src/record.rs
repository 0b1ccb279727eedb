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
use crate::id::{EventId, Prefixed, SessionToken, TemplateId, shown};
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
    /// Captured or traced traffic, or a probe's own call.
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
    /// For an `ok` call to a tool whose last `tools/list` declared an
    /// `outputSchema`: whether the result kept it. Absent otherwise, and in
    /// records written before the check existed.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub contract: Option<Contract<'a>>,
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
        /// Real traffic reported by OpenTelemetry spans (`mcpeval otel`).
        Otel = "otel",
    }
}

impl Origin {
    /// Whether the call was real traffic, which promotion counts:
    /// captured or traced, never a probe's own call.
    pub fn is_traffic(self) -> bool {
        matches!(self, Origin::Capture | Origin::Otel)
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
    /// or not one the store keeps ([`is_kept_code`]).
    pub code: Option<i64>,
    /// A [`TemplateId`]: salted hash of the normalized message.
    #[serde(borrow)]
    pub template_id: Option<Cow<'a, str>>,
    /// What the server said about retrying; null when it said nothing.
    pub retryable: Option<bool>,
}

/// Whether `code` is an error code the store keeps: a JSON-RPC code (the
/// reserved range −32768 … −32000) or a small application code (−9,999 …
/// 9,999). A larger number in a code field may be someone's data (an
/// account, order or card number), so capture records it as no code.
pub fn is_kept_code(code: i64) -> bool {
    (-32768..=-32000).contains(&code) || (-9999..=9999).contains(&code)
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

/// Whether an `ok` result kept its tool's declared `outputSchema`, and if
/// not, where it first broke it. Never a value: `at` is a JSON Pointer into
/// `structuredContent` built from names the schema declares (any other name,
/// and every array index, is `*`; `""` is the whole of it), and `keyword`
/// the schema keyword that failed. A result without `structuredContent`
/// breaks it at `""` with `required`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract<'a> {
    /// Whether the result conformed.
    pub kept: bool,
    /// Where the first violation is; only when not kept.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub at: Option<Cow<'a, str>>,
    /// The keyword of the first violation; only when not kept.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<Cow<'a, str>>,
}

/// The longest `contract.at` a record may hold, in bytes.
pub const MAX_CONTRACT_AT: usize = 512;
/// The longest `contract.keyword` a record may hold, in bytes.
pub const MAX_CONTRACT_KEYWORD: usize = 64;

impl Contract<'_> {
    /// The same verdict, owning its text.
    pub fn into_owned(self) -> Contract<'static> {
        Contract {
            kept: self.kept,
            at: self.at.map(|a| Cow::Owned(a.into_owned())),
            keyword: self.keyword.map(|k| Cow::Owned(k.into_owned())),
        }
    }

    /// A result that conformed.
    pub fn kept() -> Contract<'static> {
        Contract {
            kept: true,
            at: None,
            keyword: None,
        }
    }

    /// Checks that `at` and `keyword` appear exactly when the contract was
    /// broken, in their forms: a pointer of clean names (no control,
    /// bidirectional or invisible character: capture cleans each name it
    /// keeps) and a keyword of ASCII letters (`$ref` has its `$`).
    pub fn validate(&self) -> Result<()> {
        match (self.kept, self.at.as_deref(), self.keyword.as_deref()) {
            (true, None, None) => Ok(()),
            (false, Some(at), Some(keyword)) => {
                if at.len() > MAX_CONTRACT_AT
                    || !(at.is_empty() || at.starts_with('/'))
                    || at.chars().any(crate::escape::is_unsafe)
                {
                    return Err(Error::rejected(format!(
                        "contract.at is not a JSON Pointer of at most {MAX_CONTRACT_AT} bytes of clean names"
                    )));
                }
                let word = keyword.strip_prefix('$').unwrap_or(keyword);
                if word.is_empty()
                    || keyword.len() > MAX_CONTRACT_KEYWORD
                    || !word.bytes().all(|b| b.is_ascii_alphabetic())
                {
                    return Err(Error::rejected(
                        "contract.keyword is not a JSON Schema keyword",
                    ));
                }
                Ok(())
            }
            (true, _, _) => Err(Error::rejected(
                "contract is kept but names a violation (\"at\" or \"keyword\")",
            )),
            (false, _, _) => Err(Error::rejected(
                "contract is broken but lacks \"at\" or \"keyword\"",
            )),
        }
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
        if let Some(contract) = &self.contract {
            if self.outcome != Outcome::Ok {
                return Err(Error::rejected(
                    "contract is given for a call whose outcome is not ok",
                ));
            }
            contract.validate()?;
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

/// One row of `index.db`'s `calls` table (see the store's `index_db`),
/// every column but where it was read (`id`, `journal_id`,
/// `line`), as text and integers straight from the database:
/// [`line_from_columns`] turns it back into the journal line it was read
/// from. Booleans are the 0/1 columns read as `bool`; `args_shape` is the
/// canonical JSON text stored. `index` reads each journal line into one
/// and inserts it; its fields are [`COLUMN_NAMES`], in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns<'a> {
    /// 1 for a current record, 0 for a legacy one.
    pub schema: i64,
    /// The lower-case hyphenated UUID; NULL for legacy records.
    pub event_id: Option<&'a str>,
    /// The session token.
    pub session: &'a str,
    /// The turn within the session.
    pub seq: i64,
    /// [`Origin`]'s spelling; legacy records are `capture`.
    pub origin: &'a str,
    /// [`Transport`]'s spelling; NULL for legacy records.
    pub transport: Option<&'a str>,
    /// Server name.
    pub server: &'a str,
    /// Tool name.
    pub tool: &'a str,
    /// RFC 3339 UTC with milliseconds (legacy: `ts`).
    pub started_at: &'a str,
    /// Request to response.
    pub duration_ms: Option<i64>,
    /// Whether the tool was advertised.
    pub advertised: Option<bool>,
    /// The arguments shape, canonical JSON text.
    pub args_shape: &'a str,
    /// [`Outcome`]'s spelling.
    pub outcome: &'a str,
    /// [`Unknown`]'s spelling, beside outcome `unknown`.
    pub unknown: Option<&'a str>,
    /// [`Channel`]'s spelling, beside outcome `error`; NULL for legacy records.
    pub channel: Option<&'a str>,
    /// The error code (legacy: `err_code`).
    pub code: Option<i64>,
    /// The template id.
    pub template_id: Option<&'a str>,
    /// Reported retryability.
    pub retryable: Option<bool>,
    /// Whether an `ok` result kept its tool's `outputSchema`; NULL when
    /// none was declared (and in legacy records).
    pub contract_kept: Option<bool>,
    /// Where a broken contract first broke.
    pub contract_at: Option<&'a str>,
    /// The keyword a broken contract first broke.
    pub contract_keyword: Option<&'a str>,
}

/// The names of the columns a [`Columns`] holds, in the order of its
/// fields: the `calls` columns of `index.db` after `id`, `journal_id` and
/// `line`, and of the team database's `mcpeval.calls` after its own. The
/// SQL that lists them, to insert, select or compare a row, is built from
/// this list, so a row is spelled in one place; the tables' definitions,
/// released migrations that never change, are tested against it.
pub const COLUMN_NAMES: [&str; 21] = [
    "schema",
    "event_id",
    "session",
    "seq",
    "origin",
    "transport",
    "server",
    "tool",
    "started_at",
    "duration_ms",
    "advertised",
    "args_shape",
    "outcome",
    "unknown",
    "channel",
    "code",
    "template_id",
    "retryable",
    "contract_kept",
    "contract_at",
    "contract_keyword",
];

/// The journal line (without its newline) that `index` reads into exactly
/// the row `c`: an `mcpeval.call/1` record for schema 1, a legacy
/// `mcpeval.call/0` record, as legacy capture wrote it, for schema 0.
///
/// The row is untrusted (it may come from another machine's database), so
/// every column is checked: a spelling no enum has, an id or time stamp not
/// in the form the index stores, a shape that is not canonical JSON, a
/// field its outcome does not allow, or a column a legacy record cannot
/// hold is refused (status 4) naming the column, with its value escaped.
/// A row that passes gives a line whose row is `c` again.
pub fn line_from_columns(c: &Columns<'_>) -> Result<String> {
    let line = match c.schema {
        1 => current_line(c)?,
        0 => legacy_line(c)?,
        other => return Err(column("schema", format_args!("{other} is neither 1 nor 0"))),
    };
    if line.len() > MAX_LINE {
        return Err(Error::rejected(format!(
            "calls row of session {} seq {}: its record is {} bytes, over the limit of {MAX_LINE}",
            shown(c.session),
            c.seq,
            line.len()
        )));
    }
    Ok(line)
}

fn current_line(c: &Columns<'_>) -> Result<String> {
    let event_id = c
        .event_id
        .ok_or_else(|| column("event_id", "is NULL, but a schema 1 record has an event id"))?;
    if !EventId::is_valid(event_id) {
        return Err(column(
            "event_id",
            format_args!("{} is not a lower-case hyphenated UUID", shown(event_id)),
        ));
    }
    let transport = c.transport.ok_or_else(|| {
        column(
            "transport",
            "is NULL, but a schema 1 record has a transport",
        )
    })?;
    let outcome = spelling(
        "outcome",
        c.outcome,
        Outcome::parse,
        &Outcome::ALL.map(Outcome::as_str),
    )?;
    let unknown = match (outcome, c.unknown) {
        (Outcome::Unknown, Some(u)) => Some(spelling(
            "unknown",
            u,
            Unknown::parse,
            &Unknown::ALL.map(Unknown::as_str),
        )?),
        (Outcome::Unknown, None) => {
            return Err(column("unknown", "is NULL, but outcome is unknown"));
        }
        (_, Some(_)) => return Err(column("unknown", "is set, but outcome is not unknown")),
        (_, None) => None,
    };
    let error = if outcome == Outcome::Error {
        let channel = c
            .channel
            .ok_or_else(|| column("channel", "is NULL, but outcome is error"))?;
        Some(CallError {
            channel: spelling(
                "channel",
                channel,
                Channel::parse,
                &Channel::ALL.map(Channel::as_str),
            )?,
            code: c.code,
            template_id: template(c.template_id)?.map(Cow::Borrowed),
            retryable: c.retryable,
        })
    } else {
        for (name, set) in [
            ("channel", c.channel.is_some()),
            ("code", c.code.is_some()),
            ("template_id", c.template_id.is_some()),
            ("retryable", c.retryable.is_some()),
        ] {
            if set {
                return Err(column(name, "is set, but outcome is not error"));
            }
        }
        None
    };
    let call = Call {
        schema: Cow::Borrowed(SCHEMA_V1),
        identity: Identity {
            event_id: Cow::Borrowed(event_id),
            session: Cow::Borrowed(session(c.session)?),
            seq: seq(c.seq)?,
        },
        origin: spelling(
            "origin",
            c.origin,
            Origin::parse,
            &Origin::ALL.map(Origin::as_str),
        )?,
        transport: spelling(
            "transport",
            transport,
            Transport::parse,
            &Transport::ALL.map(Transport::as_str),
        )?,
        server: Cow::Borrowed(name("server", c.server)?),
        tool: Cow::Borrowed(name("tool", c.tool)?),
        started_at: Cow::Borrowed(stored_time(c.started_at)?),
        duration_ms: c
            .duration_ms
            .map(|d| {
                u64::try_from(d).map_err(|_| column("duration_ms", format_args!("{d} is negative")))
            })
            .transpose()?,
        advertised: c.advertised,
        args_shape: shape(c.args_shape)?,
        outcome,
        unknown,
        error,
        contract: c.contract_kept.map(|kept| Contract {
            kept,
            at: c.contract_at.map(Cow::Borrowed),
            keyword: c.contract_keyword.map(Cow::Borrowed),
        }),
    };
    if c.contract_kept.is_none() {
        for (name, set) in [
            ("contract_at", c.contract_at.is_some()),
            ("contract_keyword", c.contract_keyword.is_some()),
        ] {
            if set {
                return Err(column(name, "is set, but contract_kept is NULL"));
            }
        }
    }
    call.validate()
        .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V1} record")).with_source(e))?;
    written(&call)
}

fn legacy_line(c: &Columns<'_>) -> Result<String> {
    // What the index fills in for a legacy record, and nothing else.
    for (name, set) in [
        ("event_id", c.event_id.is_some()),
        ("transport", c.transport.is_some()),
        ("duration_ms", c.duration_ms.is_some()),
        ("advertised", c.advertised.is_some()),
        ("unknown", c.unknown.is_some()),
        ("channel", c.channel.is_some()),
        ("contract_kept", c.contract_kept.is_some()),
        ("contract_at", c.contract_at.is_some()),
        ("contract_keyword", c.contract_keyword.is_some()),
    ] {
        if set {
            return Err(column(
                name,
                "is set, but a legacy (schema 0) record cannot hold it",
            ));
        }
    }
    let origin = spelling(
        "origin",
        c.origin,
        Origin::parse,
        &Origin::ALL.map(Origin::as_str),
    )?;
    if origin != Origin::Capture {
        return Err(column(
            "origin",
            format_args!("is {origin}, but legacy (schema 0) records are captures"),
        ));
    }
    let call = LegacyCall {
        schema: SCHEMA_V0.to_owned(),
        session: session(c.session)?.to_owned(),
        seq: seq(c.seq)?,
        server: name("server", c.server)?.to_owned(),
        tool: name("tool", c.tool)?.to_owned(),
        ts: stored_time(c.started_at)?.to_owned(),
        outcome: spelling(
            "outcome",
            c.outcome,
            Outcome::parse,
            &Outcome::ALL.map(Outcome::as_str),
        )?,
        err_code: c.code,
        template_id: template(c.template_id)?.map(str::to_owned),
        retryable: c.retryable,
        args_shape: shape(c.args_shape)?,
    };
    call.validate()
        .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V0} record")).with_source(e))?;
    written(&call)
}

/// A refusal of column `name` of a `calls` row.
fn column(name: &str, what: impl std::fmt::Display) -> Error {
    Error::rejected(format!("calls column {name} {what}"))
}

/// `text` as one of an enum's spellings (`all`).
fn spelling<T>(name: &str, text: &str, parse: fn(&str) -> Option<T>, all: &[&str]) -> Result<T> {
    parse(text).ok_or_else(|| {
        column(
            name,
            format_args!("{} is not one of {}", shown(text), all.join(", ")),
        )
    })
}

fn session(text: &str) -> Result<&str> {
    if SessionToken::is_valid(text) {
        Ok(text)
    } else {
        Err(column(
            "session",
            format_args!(
                "{} is not \"{}\" followed by 16 lower-case hex digits",
                shown(text),
                SessionToken::PREFIX
            ),
        ))
    }
}

fn template(text: Option<&str>) -> Result<Option<&str>> {
    match text {
        Some(t) if !TemplateId::is_valid(t) => Err(column(
            "template_id",
            format_args!(
                "{} is not \"{}\" followed by 16 lower-case hex digits",
                shown(t),
                TemplateId::PREFIX
            ),
        )),
        _ => Ok(text),
    }
}

fn seq(value: i64) -> Result<u64> {
    u64::try_from(value)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| column("seq", format_args!("{value} is not 1 or more")))
}

fn name<'t>(column_name: &str, text: &'t str) -> Result<&'t str> {
    if text.is_empty() {
        Err(column(column_name, "is empty"))
    } else {
        Ok(text)
    }
}

/// The index stores time stamps in one form; any other was not stored by it.
fn stored_time(text: &str) -> Result<&str> {
    if is_stored_time(text) {
        Ok(text)
    } else {
        Err(column(
            "started_at",
            format_args!(
                "{} is not a time stamp in the stored form YYYY-MM-DDTHH:MM:SS.mmmZ",
                shown(text)
            ),
        ))
    }
}

/// The shape, which must be the canonical text of itself: sorted keys, no
/// spaces, as serde_json writes it (and the index stores it). The text is
/// never shown: it is JSON of any length.
fn shape(text: &str) -> Result<Value> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        column(
            "args_shape",
            format_args!(
                "is not JSON: {}",
                e.to_string().split(" at line ").next().unwrap_or("")
            ),
        )
    })?;
    if serde_json::to_string(&value).ok().as_deref() != Some(text) {
        return Err(column(
            "args_shape",
            "is not canonical JSON (sorted keys, no spaces)",
        ));
    }
    Ok(value)
}

/// A record as capture writes it, on one line.
fn written(record: &impl Serialize) -> Result<String> {
    serde_json::to_string(record)
        .map_err(|e| Error::rejected(format!("the record cannot be written: {e}")))
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

    /// The columns of an error call, as `index` stores them.
    fn error_row() -> Columns<'static> {
        Columns {
            schema: 1,
            event_id: Some("6f1c2a3b-4d5e-4f60-8a7b-000000000001"),
            session: "s-0000000000000001",
            seq: 3,
            origin: "capture",
            transport: Some("http"),
            server: "weather",
            tool: "get_forecast",
            started_at: "2026-11-30T07:00:00.123Z",
            duration_ms: Some(41),
            advertised: Some(true),
            args_shape: r#"{"city":"string","days":"integer"}"#,
            outcome: "error",
            unknown: None,
            channel: Some("jsonrpc"),
            code: Some(-32602),
            template_id: Some("t-9a8b7c6d5e4f3a2b"),
            retryable: None,
            contract_kept: None,
            contract_at: None,
            contract_keyword: None,
        }
    }

    #[test]
    fn a_broken_contract_goes_through_a_row_and_back() {
        let row = Columns {
            outcome: "ok",
            channel: None,
            code: None,
            template_id: None,
            contract_kept: Some(false),
            contract_at: Some("/status"),
            contract_keyword: Some("enum"),
            ..error_row()
        };
        let line = line_from_columns(&row).unwrap();
        assert!(
            line.ends_with(
                r#""outcome":"ok","contract":{"kept":false,"at":"/status","keyword":"enum"}}"#
            ),
            "{line}"
        );
        let Record::V1(call) = Record::parse(line.as_bytes()).unwrap() else {
            panic!("not a current record");
        };
        assert_eq!(call.contract.unwrap().at.as_deref(), Some("/status"));
        for (bad, why) in [
            (
                Columns {
                    contract_kept: None,
                    ..row
                },
                "contract_at is set",
            ),
            (
                Columns {
                    contract_at: None,
                    ..row
                },
                "lacks",
            ),
            (
                Columns {
                    contract_keyword: Some("<b>"),
                    ..row
                },
                "not a JSON Schema keyword",
            ),
            (
                Columns {
                    contract_at: Some("status"),
                    ..row
                },
                "not a JSON Pointer",
            ),
            (
                Columns {
                    contract_at: Some("/st\u{202e}atus"),
                    ..row
                },
                "clean names",
            ),
            (
                Columns {
                    contract_kept: Some(true),
                    ..row
                },
                "names a violation",
            ),
            (
                Columns {
                    outcome: "error",
                    channel: Some("tool"),
                    ..row
                },
                "not ok",
            ),
        ] {
            let refused = format!("{:#}", line_from_columns(&bad).unwrap_err());
            assert!(refused.contains(why), "{refused}");
        }
    }

    #[test]
    fn the_column_names_are_the_fields_of_a_row_in_order() {
        // Pretty Debug puts each field on a line of its own, indented once.
        let shown = format!("{:#?}", error_row());
        let fields: Vec<&str> = shown
            .lines()
            .filter_map(|line| line.strip_prefix("    "))
            .filter(|line| !line.starts_with(' '))
            .filter_map(|line| line.split_once(':').map(|(name, _)| name))
            .collect();
        assert_eq!(fields, COLUMN_NAMES);
    }

    #[test]
    fn a_current_row_becomes_the_record_capture_writes() {
        let line = line_from_columns(&error_row()).unwrap();
        assert_eq!(
            line,
            r#"{"schema":"mcpeval.call/1","identity":{"event_id":"6f1c2a3b-4d5e-4f60-8a7b-000000000001","session":"s-0000000000000001","seq":3},"origin":"capture","transport":"http","server":"weather","tool":"get_forecast","started_at":"2026-11-30T07:00:00.123Z","duration_ms":41,"advertised":true,"args_shape":{"city":"string","days":"integer"},"outcome":"error","error":{"channel":"jsonrpc","code":-32602,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":null}}"#
        );
        let unanswered = Columns {
            origin: "probe",
            duration_ms: None,
            advertised: None,
            outcome: "unknown",
            unknown: Some("unanswered"),
            channel: None,
            code: None,
            template_id: None,
            ..error_row()
        };
        let Record::V1(call) =
            Record::parse(line_from_columns(&unanswered).unwrap().as_bytes()).unwrap()
        else {
            panic!("not a current record");
        };
        assert_eq!(
            (call.origin, call.unknown, call.error, call.duration_ms),
            (Origin::Probe, Some(Unknown::Unanswered), None, None)
        );
    }

    #[test]
    fn a_legacy_row_becomes_the_record_legacy_capture_wrote() {
        let row = Columns {
            schema: 0,
            event_id: None,
            transport: None,
            duration_ms: None,
            advertised: None,
            channel: None,
            retryable: Some(false),
            args_shape: "{}",
            ..error_row()
        };
        let line = line_from_columns(&row).unwrap();
        assert_eq!(
            line,
            r#"{"schema":"mcpeval.call/0","session":"s-0000000000000001","seq":3,"server":"weather","tool":"get_forecast","ts":"2026-11-30T07:00:00.123Z","outcome":"error","err_code":-32602,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":false,"args_shape":{}}"#
        );
        let record = Record::parse(line.as_bytes()).unwrap();
        assert_eq!(
            (record.code(), record.started_at(), record.event_id()),
            (Some(-32602), "2026-11-30T07:00:00.123Z", None)
        );
    }

    #[test]
    fn a_row_the_records_cannot_hold_is_refused_by_column() {
        let legacy = Columns {
            schema: 0,
            event_id: None,
            duration_ms: None,
            advertised: None,
            channel: None,
            ..error_row()
        };
        let cases = [
            (
                Columns {
                    origin: "capture\u{202e}\n",
                    ..error_row()
                },
                r#"calls column origin "capture\u{202e}\u{a}" is not one of capture, probe, otel"#,
            ),
            (
                Columns {
                    schema: 2,
                    ..error_row()
                },
                "calls column schema 2 is neither 1 nor 0",
            ),
            (
                Columns {
                    event_id: Some("6F1C2A3B-4D5E-4F60-8A7B-000000000001"),
                    ..error_row()
                },
                r#"calls column event_id "6F1C2A3B-4D5E-4F60-8A7B-000000000001" is not a lower-case hyphenated UUID"#,
            ),
            (
                Columns {
                    started_at: "2026-11-30T08:00:00.123+01:00",
                    ..error_row()
                },
                r#"calls column started_at "2026-11-30T08:00:00.123+01:00" is not a time stamp in the stored form YYYY-MM-DDTHH:MM:SS.mmmZ"#,
            ),
            (
                Columns {
                    args_shape: r#"{"days":"integer","city":"string"}"#,
                    ..error_row()
                },
                "calls column args_shape is not canonical JSON (sorted keys, no spaces)",
            ),
            (
                Columns {
                    outcome: "ok",
                    ..error_row()
                },
                "calls column channel is set, but outcome is not error",
            ),
            (
                Columns {
                    seq: 0,
                    ..error_row()
                },
                "calls column seq 0 is not 1 or more",
            ),
            (
                legacy,
                "calls column transport is set, but a legacy (schema 0) record cannot hold it",
            ),
            (
                Columns {
                    transport: None,
                    origin: "probe",
                    ..legacy
                },
                "calls column origin is probe, but legacy (schema 0) records are captures",
            ),
        ];
        for (row, want) in cases {
            let err = line_from_columns(&row).unwrap_err();
            assert_eq!(err.status(), crate::exit::REJECTED, "{want}");
            assert_eq!(err.message(), want);
        }
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
