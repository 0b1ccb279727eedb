//! One journal line, checked and turned into the columns of a `calls` row.
//!
//! Both record schemas are read with the contract's strict serde types
//! (unknown fields are errors) and their `validate()`. The reason a line is
//! refused names the field at fault; it never echoes the whole line.
//!
//! Almost every line is a current record exactly as capture writes it:
//! such a line is read by [`crate::plain`], which matches capture's layout
//! and takes each field as written. Every other line is read with the
//! contract's `Call`, borrowing the line (`Call<'_, &RawValue>`): no
//! string is copied, and a field already in the form stored (an event id,
//! a time stamp, an arguments shape in canonical form) is kept as written;
//! only a field in another form is rewritten. The contract's type and its
//! `validate()` stay the rule: the plain reader leaves to them every line
//! it is not sure of, and its tests hold the two readers to the same rows.

use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

use crate::plain;
use shared::Error;
use shared::Result;
use shared::id::EventId;
use shared::record::{
    Call, Columns, LegacyCall, Origin, SCHEMA_V0, SCHEMA_V1, Unknown, is_stored_time,
};

/// A byte range of a batch's text.
type Span = (u32, u32);

/// A row as a batch keeps it: its numbers, and its text as ranges of the
/// batch's text.
#[derive(Debug)]
struct Stored {
    number: u64,
    schema: i64,
    event_id: Option<Span>,
    session: Span,
    seq: i64,
    origin: Span,
    transport: Option<Span>,
    server: Span,
    tool: Span,
    started_at: Span,
    duration_ms: Option<i64>,
    advertised: Option<bool>,
    args_shape: Span,
    outcome: Span,
    unknown: Option<Span>,
    channel: Option<Span>,
    code: Option<i64>,
    template_id: Option<Span>,
    retryable: Option<bool>,
    contract_kept: Option<bool>,
    contract_at: Option<Span>,
    contract_keyword: Option<Span>,
}

/// Parsed rows with their line numbers, their text in one buffer: a batch
/// costs a few allocations, not several per row, and is handed from the
/// reading thread to the inserting one whole.
#[derive(Debug, Default)]
pub struct Batch {
    text: String,
    rows: Vec<Stored>,
}

impl Batch {
    pub fn with_capacity(rows: usize) -> Batch {
        Batch {
            text: String::with_capacity(rows * 256),
            rows: Vec::with_capacity(rows),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Parses and checks line `number` and keeps its row; the error is the
    /// reason it is refused.
    pub fn push(&mut self, number: u64, line: &[u8]) -> Result<()> {
        with_row(line, |row| self.store(number, row))
    }

    fn store(&mut self, number: u64, row: &Columns<'_>) {
        let text = &mut self.text;
        let mut span = |s: &str| {
            let start = text.len() as u32;
            text.push_str(s);
            (start, text.len() as u32)
        };
        let stored = Stored {
            number,
            schema: row.schema,
            event_id: row.event_id.map(&mut span),
            session: span(row.session),
            seq: row.seq,
            origin: span(row.origin),
            transport: row.transport.map(&mut span),
            server: span(row.server),
            tool: span(row.tool),
            started_at: span(row.started_at),
            duration_ms: row.duration_ms,
            advertised: row.advertised,
            args_shape: span(row.args_shape),
            outcome: span(row.outcome),
            unknown: row.unknown.map(&mut span),
            channel: row.channel.map(&mut span),
            code: row.code,
            template_id: row.template_id.map(&mut span),
            retryable: row.retryable,
            contract_kept: row.contract_kept,
            contract_at: row.contract_at.map(&mut span),
            contract_keyword: row.contract_keyword.map(&mut span),
        };
        self.rows.push(stored);
    }

    /// Row `i` with its line number.
    pub fn row(&self, i: usize) -> (u64, Columns<'_>) {
        let s = &self.rows[i];
        let at = |(start, end): Span| &self.text[start as usize..end as usize];
        (
            s.number,
            Columns {
                schema: s.schema,
                event_id: s.event_id.map(at),
                session: at(s.session),
                seq: s.seq,
                origin: at(s.origin),
                transport: s.transport.map(at),
                server: at(s.server),
                tool: at(s.tool),
                started_at: at(s.started_at),
                duration_ms: s.duration_ms,
                advertised: s.advertised,
                args_shape: at(s.args_shape),
                outcome: at(s.outcome),
                unknown: s.unknown.map(at),
                channel: s.channel.map(at),
                code: s.code,
                template_id: s.template_id.map(at),
                retryable: s.retryable,
                contract_kept: s.contract_kept,
                contract_at: s.contract_at.map(at),
                contract_keyword: s.contract_keyword.map(at),
            },
        )
    }

    /// Every row with its line number, in order.
    pub fn rows(&self) -> impl Iterator<Item = (u64, Columns<'_>)> {
        (0..self.rows.len()).map(|i| self.row(i))
    }
}

// A current record: the contract's own type, borrowing the line's text.

/// A current record as the index reads it: every string without escapes,
/// and the arguments shape, borrowed from the line.
type Line<'a> = Call<'a, &'a RawValue>;

/// Reads `line` into a row and hands it to `keep`; the error is the
/// reason the line is refused. A field already in the form stored is
/// borrowed from the line; only one in another form is rewritten. A line
/// in capture's own layout is read by [`plain`], any other by serde.
fn with_row<R>(line: &[u8], keep: impl FnOnce(&Columns<'_>) -> R) -> Result<R> {
    if let Ok(text) = std::str::from_utf8(line)
        && let Some(row) = plain::columns(text)
    {
        return Ok(keep(&row));
    }
    read_fully(line, keep)
}

/// [`with_row`] for any line, through serde and the contract's
/// `validate()`.
pub(crate) fn read_fully<R>(line: &[u8], keep: impl FnOnce(&Columns<'_>) -> R) -> Result<R> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::rejected("blank line: every line must be one record"));
    }
    // The current schema first: it is almost every line. A line checked
    // as UTF-8 whole (fast for ASCII) is parsed as text, so serde_json
    // does not check each string again; any other line is parsed as bytes,
    // which finds the same errors in the same places.
    let parsed = match std::str::from_utf8(line) {
        Ok(text) => serde_json::from_str::<Line<'_>>(text),
        Err(_) => serde_json::from_slice::<Line<'_>>(line),
    };
    let call = match parsed {
        Ok(call) => call,
        Err(err) => return other(line, &err, keep),
    };
    call.validate()
        .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V1} record: {e}")))?;
    let event_id = lower_hyphenated(&call.identity.event_id)?;
    let started_at = utc(&call.started_at, "started_at")?;
    let args_shape = shape(call.args_shape.get())?;
    let (channel, code, template_id, retryable) = match &call.error {
        Some(e) => (
            Some(e.channel.as_str()),
            e.code,
            e.template_id.as_deref(),
            e.retryable,
        ),
        None => (None, None, None, None),
    };
    Ok(keep(&Columns {
        schema: 1,
        event_id: Some(&event_id),
        session: &call.identity.session,
        seq: int(call.identity.seq, "identity.seq")?,
        origin: call.origin.as_str(),
        transport: Some(call.transport.as_str()),
        server: &call.server,
        tool: &call.tool,
        started_at: &started_at,
        duration_ms: call
            .duration_ms
            .map(|d| int(d, "duration_ms"))
            .transpose()?,
        advertised: call.advertised,
        args_shape: &args_shape,
        outcome: call.outcome.as_str(),
        unknown: call.unknown.map(Unknown::as_str),
        channel,
        code,
        template_id,
        retryable,
        contract_kept: call.contract.as_ref().map(|c| c.kept),
        contract_at: call.contract.as_ref().and_then(|c| c.at.as_deref()),
        contract_keyword: call.contract.as_ref().and_then(|c| c.keyword.as_deref()),
    }))
}

/// The arguments shape as stored: as written when it is in canonical
/// form already (almost always), else rewritten into it.
fn shape(raw: &str) -> Result<Cow<'_, str>> {
    if canonical_shape(raw) {
        return Ok(Cow::Borrowed(raw));
    }
    let value: Value = serde_json::from_str(raw).map_err(|e| {
        Error::rejected(format!(
            "invalid {SCHEMA_V1} record: args_shape: {}",
            describe(&e)
        ))
    })?;
    canonical(&value).map(Cow::Owned)
}

/// Whether `json` (valid JSON) is already what [`canonical`] would make
/// of it: no whitespace, every object's keys in strictly increasing byte
/// order, strings without escapes and no numbers (whose text serde_json
/// may rewrite). Arguments shapes hold type names, so this is the rule.
fn canonical_shape(json: &str) -> bool {
    enum Open<'a> {
        /// Whether a key comes next, and the last key seen.
        Object(bool, Option<&'a [u8]>),
        Array,
    }
    let b = json.as_bytes();
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => open.push(Open::Object(true, None)),
            b'[' => open.push(Open::Array),
            b'}' | b']' => {
                open.pop();
            }
            b',' => {
                if let Some(Open::Object(key_next, _)) = open.last_mut() {
                    *key_next = true;
                }
            }
            b':' => {}
            b'"' => {
                let Some(len) = memchr::memchr2(b'"', b'\\', &b[i + 1..]) else {
                    return false;
                };
                let end = i + 1 + len;
                if b[end] == b'\\' {
                    return false;
                }
                if let Some(Open::Object(key_next @ true, last)) = open.last_mut() {
                    let key = &b[i + 1..end];
                    if last.is_some_and(|last| key <= last) {
                        return false;
                    }
                    *key_next = false;
                    *last = Some(key);
                }
                i = end;
            }
            // true, false and null are written the same way again.
            b't' | b'r' | b'u' | b'e' | b'f' | b'a' | b'l' | b's' | b'n' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

// A line that is not a current record: a legacy one, or the reason.

/// Reads a line that is not a current record (`v1_error` says why not)
/// and hands it to `keep` when it is a legacy record; else the reason the
/// line is refused.
fn other<R>(
    line: &[u8],
    v1_error: &serde_json::Error,
    keep: impl FnOnce(&Columns<'_>) -> R,
) -> Result<R> {
    if v1_error.is_syntax() || v1_error.is_eof() {
        return Err(Error::rejected(format!(
            "not valid JSON: {}",
            describe(v1_error)
        )));
    }
    match schema_tag(line).as_deref() {
        Some(SCHEMA_V0) => {
            let legacy = serde_json::from_slice::<LegacyCall>(line).map_err(|e| {
                Error::rejected(format!("invalid {SCHEMA_V0} record: {}", describe(&e)))
            })?;
            legacy
                .validate()
                .map_err(|e| Error::rejected(format!("invalid {SCHEMA_V0} record: {e}")))?;
            from_legacy(&legacy, keep)
        }
        Some(SCHEMA_V1) => Err(Error::rejected(format!(
            "invalid {SCHEMA_V1} record: {}",
            describe(v1_error)
        ))),
        Some(other) => Err(Error::rejected(format!(
            "unknown schema {other:?}; expected \"{SCHEMA_V1}\" or \"{SCHEMA_V0}\""
        ))),
        None => Err(Error::rejected("not a record: no \"schema\" string")),
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

fn from_legacy<R>(call: &LegacyCall, keep: impl FnOnce(&Columns<'_>) -> R) -> Result<R> {
    Ok(keep(&Columns {
        schema: 0,
        event_id: None,
        session: &call.session,
        seq: int(call.seq, "seq")?,
        // Earlier releases journaled captured traffic only.
        origin: Origin::Capture.as_str(),
        transport: None,
        server: &call.server,
        tool: &call.tool,
        started_at: &utc(&call.ts, "ts")?,
        duration_ms: None,
        advertised: None,
        args_shape: &canonical(&call.args_shape)?,
        outcome: call.outcome.as_str(),
        unknown: None,
        channel: None,
        code: call.err_code,
        template_id: call.template_id.as_deref(),
        retryable: call.retryable,
        contract_kept: None,
        contract_at: None,
        contract_keyword: None,
    }))
}

fn int(value: u64, field: &str) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::rejected(format!("{field} {value} is too large")))
}

/// Time stamps are stored as capture writes them, in UTC with
/// milliseconds, so that text order is time order. Most already are.
fn utc<'t>(text: &'t str, field: &str) -> Result<Cow<'t, str>> {
    if is_stored_time(text) {
        return Ok(Cow::Borrowed(text));
    }
    shared::time::parse(text)
        .map(|t| Cow::Owned(shared::time::rfc3339(t)))
        .ok_or_else(|| Error::rejected(format!("{field} is not an RFC 3339 time stamp")))
}

/// The event id as a lower-case hyphenated UUID, whatever form the journal
/// used, so that equal ids compare equal.
fn lower_hyphenated(id: &str) -> Result<Cow<'_, str>> {
    if EventId::is_valid(id) {
        return Ok(Cow::Borrowed(id));
    }
    uuid::Uuid::parse_str(id)
        .map(|u| Cow::Owned(u.hyphenated().to_string()))
        .map_err(|_| Error::rejected("identity.event_id is not a UUID"))
}

/// serde_json's map keeps keys sorted, so this text is the same for the
/// same shape however the journal ordered it. (`to_string` serializes
/// straight into a buffer; `Display` would go through the formatter.)
fn canonical(shape: &Value) -> Result<String> {
    serde_json::to_string(shape)
        .map_err(|e| Error::rejected(format!("args_shape cannot be stored: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALL: &str = r#"{"schema":"mcpeval.call/1","identity":{"event_id":"6F1C2A3B-4D5E-4F60-8A7B-9C8D7E6F5A4B","session":"s-1a2b3c4d5e6f7a8b","seq":4},"origin":"capture","transport":"stdio","server":"weather","tool":"get_forecast","started_at":"2026-11-30T08:00:00.123+01:00","duration_ms":41,"advertised":true,"args_shape":{"days":"integer","city":"string"},"outcome":"error","error":{"channel":"tool","code":null,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":false}}"#;

    /// A batch of the row of `line` as the index stores it, or the reason
    /// it is not.
    fn parse(line: &str) -> Result<Batch> {
        let mut batch = Batch::default();
        batch.push(7, line.as_bytes())?;
        Ok(batch)
    }

    #[test]
    fn flattens_a_current_record() {
        let batch = parse(CALL).unwrap();
        let (_, row) = batch.row(0);
        assert_eq!(row.event_id, Some("6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b"));
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
        let batch = parse(line).unwrap();
        let (_, row) = batch.row(0);
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
            let err = parse(line).unwrap_err();
            assert_eq!(err.status(), shared::exit::REJECTED);
            assert!(err.message().starts_with(want), "{line}: {err}");
        }
        let extra = CALL.replace("\"origin\"", "\"colour\":1,\"origin\"");
        assert!(
            parse(&extra)
                .unwrap_err()
                .message()
                .contains("unknown field `colour`")
        );
        let bad_outcome = CALL.replace("\"outcome\":\"error\"", "\"outcome\":\"ok\"");
        assert!(
            parse(&bad_outcome)
                .unwrap_err()
                .message()
                .starts_with("invalid mcpeval.call/1 record: outcome")
        );
    }

    /// A record in the form capture writes, with parts replaced.
    fn canonical_line(replace: &[(&str, &str)]) -> String {
        let mut line = r#"{"schema":"mcpeval.call/1","identity":{"event_id":"6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b","session":"s-1a2b3c4d5e6f7a8b","seq":4},"origin":"capture","transport":"stdio","server":"weather","tool":"get_forecast","started_at":"2026-11-30T07:00:00.123Z","duration_ms":41,"advertised":true,"args_shape":{"city":"string","days":"integer","opts":{"deep":["boolean"],"mode":"null"}},"outcome":"error","error":{"channel":"tool","code":-32602,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":null}}"#.to_owned();
        for (from, to) in replace {
            assert!(line.contains(from), "{from}");
            line = line.replace(from, to);
        }
        line
    }

    #[test]
    fn a_line_in_stored_form_is_read_without_a_copy() {
        let cases: Vec<(Vec<(&str, &str)>, bool)> = vec![
            (vec![], true),
            (
                vec![(
                    r#""outcome":"error","error":{"channel":"tool","code":-32602,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":null}"#,
                    r#""outcome":"ok""#,
                )],
                true,
            ),
            (
                vec![
                    (
                        r#""outcome":"error","error":{"channel":"tool","code":-32602,"template_id":"t-9a8b7c6d5e4f3a2b","retryable":null}"#,
                        r#""outcome":"unknown","unknown":"unanswered""#,
                    ),
                    (r#""duration_ms":41"#, r#""duration_ms":null"#),
                ],
                true,
            ),
            (
                vec![(
                    r#""args_shape":{"city":"string","days":"integer","opts":{"deep":["boolean"],"mode":"null"}}"#,
                    r#""args_shape":"object""#,
                )],
                true,
            ),
            (
                vec![(
                    r#""args_shape":{"city":"string","days":"integer","opts":{"deep":["boolean"],"mode":"null"}}"#,
                    r#""args_shape":{}"#,
                )],
                true,
            ),
            // Not in stored form: the row holds the field rewritten.
            (
                vec![(
                    r#""args_shape":{"city":"string","days":"integer","opts":{"deep":["boolean"],"mode":"null"}}"#,
                    r#""args_shape":{"days":"integer","city":"string"}"#,
                )],
                false,
            ),
            (
                vec![
                    (r#""deep":["boolean"],"mode""#, r#""mode":"null","deep""#),
                    (r#""deep":"null"}"#, r#""deep":["boolean"]}"#),
                ],
                false,
            ),
            (vec![(r#""city":"string""#, r#""city": "string""#)], false),
            (
                vec![(r#""city":"string""#, r#""city":"str\u0069ng""#)],
                false,
            ),
            (
                vec![(r#""city":"string""#, r#""city":"string","city":"number""#)],
                false,
            ),
            (vec![(r#""mode":"null""#, r#""mode":1.50"#)], false),
            (vec![("07:00:00.123Z", "08:00:00.123+01:00")], false),
            (vec![("6f1c2a3b", "6F1C2A3B")], false),
            (vec![("T07:00:00", "T07:00:60")], false),
            (vec![("2026-11-30", "2028-02-29")], true),
            // Refused: the reason is named (see `names_what_is_wrong`).
            (vec![("2026-11-30", "2026-02-29")], false),
            (vec![(r#""server":"weather""#, r#""server":"""#)], false),
            (vec![(r#""seq":4"#, r#""seq":0"#)], false),
            (vec![("t-9a8b7c6d5e4f3a2b", "t-9A8B7C6D5E4F3A2B")], false),
            (
                vec![(
                    r#""retryable":null}"#,
                    r#""retryable":null},"unknown":"malformed""#,
                )],
                false,
            ),
        ];
        for (replace, as_written) in cases {
            let line = canonical_line(&replace);
            let bytes = line.as_bytes();
            let within = |text: &str| bytes.as_ptr_range().contains(&text.as_ptr());
            let borrowed = with_row(bytes, |row| {
                [
                    row.event_id.unwrap_or_default(),
                    row.session,
                    row.server,
                    row.tool,
                    row.started_at,
                    row.args_shape,
                ]
                .iter()
                .all(|t| within(t))
            });
            match borrowed {
                Ok(borrowed) => assert_eq!(borrowed, as_written, "{line}"),
                Err(e) => assert!(!as_written, "refused ({e}): {line}"),
            }
        }
    }

    #[test]
    fn a_batch_keeps_every_row_whole() {
        let mut batch = Batch::with_capacity(2);
        batch.push(1, canonical_line(&[]).as_bytes()).unwrap();
        batch.push(2, CALL.as_bytes()).unwrap();
        let rows: Vec<_> = batch.rows().collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1.tool, "get_forecast");
        assert_eq!(rows[1].1.started_at, "2026-11-30T07:00:00.123Z");
        assert_eq!(rows[1].1.event_id, rows[0].1.event_id);
        assert_eq!((rows[0].0, rows[1].0), (1, 2));
    }
}
