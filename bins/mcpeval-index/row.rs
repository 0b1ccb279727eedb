//! One journal line, checked and turned into the columns of a `calls` row.
//!
//! Both record schemas are read with the contract's strict serde types
//! (unknown fields are errors) and their `validate()`. The reason a line is
//! refused names the field at fault; it never echoes the whole line.

use serde_json::Value;
use shared::record::{
    Call, Channel, LegacyCall, Origin, Outcome, SCHEMA_V0, SCHEMA_V1, Transport, Unknown,
};

/// A record flattened to the `calls` columns (see `schema.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub schema: i64,
    pub event_id: Option<String>,
    pub session: String,
    pub seq: i64,
    pub origin: &'static str,
    pub transport: Option<&'static str>,
    pub server: String,
    pub tool: String,
    pub started_at: String,
    pub duration_ms: Option<i64>,
    pub advertised: Option<bool>,
    pub args_shape: String,
    pub outcome: &'static str,
    pub unknown: Option<&'static str>,
    pub channel: Option<&'static str>,
    pub code: Option<i64>,
    pub template_id: Option<String>,
    pub retryable: Option<bool>,
}

/// Parses and checks one line; the error is the reason it is refused.
pub fn parse(line: &[u8]) -> Result<Row, String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err("blank line: every line must be one record".into());
    }
    // The current schema first: it is almost every line.
    let v1_error = match serde_json::from_slice::<Call>(line) {
        Ok(call) => {
            call.validate()
                .map_err(|e| format!("invalid {SCHEMA_V1} record: {e}"))?;
            return from_call(call);
        }
        Err(err) => err,
    };
    if v1_error.is_syntax() || v1_error.is_eof() {
        return Err(format!("not valid JSON: {}", describe(&v1_error)));
    }
    match schema_tag(line).as_deref() {
        Some(SCHEMA_V0) => {
            let legacy = serde_json::from_slice::<LegacyCall>(line)
                .map_err(|e| format!("invalid {SCHEMA_V0} record: {}", describe(&e)))?;
            legacy
                .validate()
                .map_err(|e| format!("invalid {SCHEMA_V0} record: {e}"))?;
            from_legacy(legacy)
        }
        Some(SCHEMA_V1) => Err(format!(
            "invalid {SCHEMA_V1} record: {}",
            describe(&v1_error)
        )),
        Some(other) => Err(format!(
            "unknown schema {other:?}; expected \"{SCHEMA_V1}\" or \"{SCHEMA_V0}\""
        )),
        None => Err("not a record: no \"schema\" string".into()),
    }
}

/// The `schema` member of a JSON object line, if it is a string.
fn schema_tag(line: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(line).ok()? {
        Value::Object(mut map) => match map.remove("schema")? {
            Value::String(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// serde_json's message, with its position said once and briefly.
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let bare = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    format!("{bare} (column {})", err.column())
}

fn from_call(call: Call) -> Result<Row, String> {
    let event_id = lower_hyphenated(call.identity.event_id)?;
    let (channel, code, template_id, retryable) = match call.error {
        Some(e) => (Some(channel(e.channel)), e.code, e.template_id, e.retryable),
        None => (None, None, None, None),
    };
    Ok(Row {
        schema: 1,
        event_id: Some(event_id),
        session: call.identity.session,
        seq: int(call.identity.seq, "identity.seq")?,
        origin: match call.origin {
            Origin::Capture => "capture",
            Origin::Probe => "probe",
        },
        transport: Some(match call.transport {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }),
        server: call.server,
        tool: call.tool,
        started_at: utc(call.started_at, "started_at")?,
        duration_ms: call
            .duration_ms
            .map(|d| int(d, "duration_ms"))
            .transpose()?,
        advertised: call.advertised,
        args_shape: canonical(&call.args_shape)?,
        outcome: outcome(call.outcome),
        unknown: call.unknown.map(|u| match u {
            Unknown::Malformed => "malformed",
            Unknown::Unanswered => "unanswered",
        }),
        channel,
        code,
        template_id,
        retryable,
    })
}

fn from_legacy(call: LegacyCall) -> Result<Row, String> {
    Ok(Row {
        schema: 0,
        event_id: None,
        session: call.session,
        seq: int(call.seq, "seq")?,
        // Earlier releases journaled captured traffic only.
        origin: "capture",
        transport: None,
        server: call.server,
        tool: call.tool,
        started_at: utc(call.ts, "ts")?,
        duration_ms: None,
        advertised: None,
        args_shape: canonical(&call.args_shape)?,
        outcome: outcome(call.outcome),
        unknown: None,
        channel: None,
        code: call.err_code,
        template_id: call.template_id,
        retryable: call.retryable,
    })
}

fn int(value: u64, field: &str) -> Result<i64, String> {
    i64::try_from(value).map_err(|_| format!("{field} {value} is too large"))
}

/// Time stamps are stored as capture writes them, in UTC with
/// milliseconds, so that text order is time order. Most already are.
fn utc(text: String, field: &str) -> Result<String, String> {
    let b = text.as_bytes();
    // validate() has parsed it; this only checks it is in the stored form.
    let canonical = b.len() == 24
        && b[10] == b'T'
        && b[19] == b'.'
        && b[23] == b'Z'
        && b[20..23].iter().all(u8::is_ascii_digit);
    if canonical {
        return Ok(text);
    }
    shared::time::parse(&text)
        .map(shared::time::rfc3339)
        .ok_or_else(|| format!("{field} is not an RFC 3339 time stamp"))
}

/// The event id as a lower-case hyphenated UUID, whatever form the journal
/// used, so that equal ids compare equal.
fn lower_hyphenated(id: String) -> Result<String, String> {
    let b = id.as_bytes();
    let canonical = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        });
    if canonical {
        return Ok(id);
    }
    uuid::Uuid::parse_str(&id)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| "identity.event_id is not a UUID".into())
}

/// serde_json's map keeps keys sorted, so this text is the same for the
/// same shape however the journal ordered it. (`to_string` serializes
/// straight into a buffer; `Display` would go through the formatter.)
fn canonical(shape: &Value) -> Result<String, String> {
    serde_json::to_string(shape).map_err(|e| format!("args_shape cannot be stored: {e}"))
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Error => "error",
        Outcome::Unknown => "unknown",
    }
}

fn channel(c: Channel) -> &'static str {
    match c {
        Channel::Jsonrpc => "jsonrpc",
        Channel::Tool => "tool",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &str = r#"{"schema":"mcpeval.call/1","identity":{"event_id":"6F1C2A3B-4D5E-4F60-8A7B-9C8D7E6F5A4B","session":"s-1a2b3c4d5e6f7a8b","seq":4},"origin":"capture","transport":"stdio","server":"weather","tool":"get_forecast","started_at":"2026-11-30T08:00:00.123+01:00","duration_ms":41,"advertised":true,"args_shape":{"days":"integer","city":"string"},"outcome":"error","error":{"channel":"tool","code":null,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":false}}"#;

    #[test]
    fn flattens_a_current_record() {
        let row = parse(CALL.as_bytes()).unwrap();
        assert_eq!(
            row.event_id.as_deref(),
            Some("6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b")
        );
        assert_eq!(row.started_at, "2026-11-30T07:00:00.123Z");
        assert_eq!(row.args_shape, r#"{"city":"string","days":"integer"}"#);
        assert_eq!(
            (row.outcome, row.channel, row.retryable),
            ("error", Some("tool"), Some(false))
        );
    }

    #[test]
    fn reads_legacy_records() {
        let line = r#"{"schema":"mcpeval.call/0","session":"s-1a2b3c4d5e6f7a8b","seq":2,"server":"w","tool":"t","ts":"2026-11-30T07:00:00Z","outcome":"error","err_code":-32602,"template_id":null,"retryable":null,"args_shape":{}}"#;
        let row = parse(line.as_bytes()).unwrap();
        assert_eq!(
            (row.schema, row.event_id, row.code, row.origin),
            (0, None, Some(-32602), "capture")
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let cases = [
            ("", "blank line"),
            ("{\"schema\":", "not valid JSON: EOF while parsing"),
            ("[1]", "not a record"),
            (
                r#"{"schema":"mcpeval.call/9"}"#,
                "unknown schema \"mcpeval.call/9\"",
            ),
            (
                r#"{"schema":"mcpeval.call/0","session":"s-1"}"#,
                "invalid mcpeval.call/0 record: missing field",
            ),
        ];
        for (line, want) in cases {
            let err = parse(line.as_bytes()).unwrap_err();
            assert!(err.starts_with(want), "{line}: {err}");
        }
        let extra = CALL.replace("\"origin\"", "\"colour\":1,\"origin\"");
        assert!(
            parse(extra.as_bytes())
                .unwrap_err()
                .contains("unknown field `colour`")
        );
        let bad_outcome = CALL.replace("\"outcome\":\"error\"", "\"outcome\":\"ok\"");
        assert!(
            parse(bad_outcome.as_bytes())
                .unwrap_err()
                .starts_with("invalid mcpeval.call/1 record: outcome")
        );
    }
}
