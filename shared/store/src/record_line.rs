//! A record as the JSON text of its journal line, written by hand.
//!
//! Capture writes a record for every call it relays, and serializing each
//! through serde (a call per field, serde_json's string escaper for every
//! text) was a tenth of its CPU per call. Here the record's known fields
//! are written in their order with one escaper that copies runs of plain
//! bytes at once. The text must stay byte for byte what serde_json writes
//! for the same [`Call`] (the tests hold it to that), since readers and
//! existing journals know no other; the arguments shape, whose type the
//! writer chooses, writes itself ([`ShapeJson`]).

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use shared::record::{Call, CallError, Contract};

use crate::raw;
use crate::sanitize::ShapeText;

/// An arguments shape as a journal line holds it: its JSON text, as
/// serde_json writes it, which is what a shape that has no faster way
/// writes. A shape held as its text ([`ShapeText`]) is copied as it is.
pub trait ShapeJson: Serialize {
    /// Appends the shape's compact JSON text to `out`.
    fn write_json(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(&mut *out, self).expect("a shape serializes");
    }
}

impl ShapeJson for Value {}
impl ShapeJson for RawValue {}
impl ShapeJson for str {}
impl<T: ShapeJson + ?Sized> ShapeJson for &T {
    fn write_json(&self, out: &mut Vec<u8>) {
        (**self).write_json(out);
    }
}

impl<T: ShapeJson + ?Sized> ShapeJson for Box<T> {
    fn write_json(&self, out: &mut Vec<u8>) {
        (**self).write_json(out);
    }
}

impl ShapeJson for ShapeText {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_str().as_bytes());
    }
}

/// Appends `call` as compact JSON, exactly as `serde_json::to_writer`
/// would write it.
pub fn write<S: ShapeJson>(call: &Call<'_, S>, out: &mut Vec<u8>) {
    let start = out.len();
    fields(call, out);
    // Debug builds (every test run) hold each line to serde's text, so a
    // field added to `Call` and not here, or an escape that differs, fails
    // the first test that journals one.
    debug_assert_eq!(
        std::str::from_utf8(&out[start..]).ok(),
        serde_json::to_string(call).ok().as_deref(),
        "a hand-written record line differs from serde_json's"
    );
}

fn fields<S: ShapeJson>(call: &Call<'_, S>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"schema\":");
    string(&call.schema, out);
    out.extend_from_slice(b",\"identity\":{\"event_id\":");
    string(&call.identity.event_id, out);
    out.extend_from_slice(b",\"session\":");
    string(&call.identity.session, out);
    out.extend_from_slice(b",\"seq\":");
    number(call.identity.seq, out);
    out.extend_from_slice(b"},\"origin\":");
    plain(call.origin.as_str(), out);
    out.extend_from_slice(b",\"transport\":");
    plain(call.transport.as_str(), out);
    out.extend_from_slice(b",\"server\":");
    string(&call.server, out);
    out.extend_from_slice(b",\"tool\":");
    string(&call.tool, out);
    out.extend_from_slice(b",\"started_at\":");
    string(&call.started_at, out);
    out.extend_from_slice(b",\"duration_ms\":");
    match call.duration_ms {
        Some(ms) => number(ms, out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"advertised\":");
    boolean(call.advertised, out);
    out.extend_from_slice(b",\"args_shape\":");
    call.args_shape.write_json(out);
    out.extend_from_slice(b",\"outcome\":");
    plain(call.outcome.as_str(), out);
    if let Some(unknown) = call.unknown {
        out.extend_from_slice(b",\"unknown\":");
        plain(unknown.as_str(), out);
    }
    if let Some(error) = &call.error {
        out.extend_from_slice(b",\"error\":");
        call_error(error, out);
    }
    if let Some(contract) = &call.contract {
        out.extend_from_slice(b",\"contract\":");
        self::contract(contract, out);
    }
    out.push(b'}');
}

fn call_error(error: &CallError<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"channel\":");
    plain(error.channel.as_str(), out);
    out.extend_from_slice(b",\"code\":");
    match error.code {
        Some(code) => {
            if code < 0 {
                out.push(b'-');
            }
            number(code.unsigned_abs(), out);
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"template_id\":");
    match &error.template_id {
        Some(id) => string(id, out),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"retryable\":");
    boolean(error.retryable, out);
    out.push(b'}');
}

fn contract(contract: &Contract<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"kept\":");
    out.extend_from_slice(if contract.kept { b"true" } else { b"false" });
    if let Some(at) = &contract.at {
        out.extend_from_slice(b",\"at\":");
        string(at, out);
    }
    if let Some(keyword) = &contract.keyword {
        out.extend_from_slice(b",\"keyword\":");
        string(keyword, out);
    }
    out.push(b'}');
}

fn boolean(value: Option<bool>, out: &mut Vec<u8>) {
    out.extend_from_slice(match value {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
}

/// A spelled enum's text, which needs no escape.
fn plain(text: &str, out: &mut Vec<u8>) {
    debug_assert!(raw::stop(text.as_bytes(), 0).is_none());
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// An unsigned integer in decimal.
fn number(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether any byte of `bytes` needs an escape (a byte [`raw::stop`]
/// stops at: serde_json escapes those): eight at a time, and no stop at
/// the first found. The last few are looked at in the last eight
/// bytes (again, for those already looked at), or padded with spaces
/// when there are fewer than eight in all. A record's texts are short and
/// almost never need an escape, so this is all most of them cost before
/// they are copied whole.
fn any_escape_in(bytes: &[u8]) -> bool {
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if bytes.len() < 8 {
        let mut last = [b' '; 8];
        last[..bytes.len()].copy_from_slice(bytes);
        return raw::word_stops(u64::from_le_bytes(last)) != 0;
    }
    let mut found = raw::word_stops(word(bytes.len() - 8));
    let mut at = 0;
    while at + 8 <= bytes.len() {
        found |= raw::word_stops(word(at));
        at += 8;
    }
    found != 0
}

/// `text` as a JSON string, escaped as serde_json escapes it: the short
/// forms `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx` (lower-case
/// hex) for the other control characters.
fn string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !any_escape_in(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    while let Some(at) = raw::stop(bytes, start) {
        out.extend_from_slice(&bytes[start..at]);
        start = at + 1;
        match bytes[at] {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            byte => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::value::RawValue;
    use shared::record::{Channel, Origin, Outcome, Transport, Unknown};
    use std::borrow::Cow;

    fn both<S: ShapeJson>(call: &Call<'_, S>) {
        let mut ours = Vec::new();
        write(call, &mut ours);
        let theirs = serde_json::to_vec(call).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
    }

    fn tricky() -> Vec<String> {
        let mut all: Vec<String> = [
            "",
            "plain",
            "quote\"back\\slash/solidus",
            "new\nline\r\ttab\u{8}\u{c}",
            "\u{0}\u{1}\u{1f}\u{7f}\u{80}",
            "é中😀",
            "line\u{2028}para\u{2029}",
            "bidi\u{202e}\u{2066}zero\u{200b}\u{feff}",
            "\\u0041",
            "\"\"\\\\",
        ]
        .map(String::from)
        .to_vec();
        all.push((0u8..0x80).map(char::from).collect());
        all
    }

    #[test]
    fn escapes_wherever_in_a_long_text_the_byte_falls() {
        for special in ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{2028}'] {
            // Every place in texts short and long, the last few bytes of
            // each (looked at padded) included.
            for len in 0..21 {
                for at in 0..=len {
                    let mut text = "a".repeat(at);
                    text.push(special);
                    text.push_str(&"b".repeat(len - at));
                    let mut ours = Vec::new();
                    string(&text, &mut ours);
                    assert_eq!(ours, serde_json::to_vec(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    fn call(text: &str) -> Call<'static, Value> {
        Call {
            schema: Cow::Owned(text.to_owned()),
            identity: shared::record::Identity {
                event_id: text.to_owned().into(),
                session: text.to_owned().into(),
                seq: u64::MAX,
            },
            origin: Origin::Capture,
            transport: Transport::Stdio,
            server: text.to_owned().into(),
            tool: text.to_owned().into(),
            started_at: text.to_owned().into(),
            duration_ms: Some(0),
            advertised: None,
            args_shape: serde_json::json!({ text: "string", "*": ["integer"] }),
            outcome: Outcome::Ok,
            unknown: None,
            error: None,
            contract: None,
        }
    }

    #[test]
    fn writes_what_serde_json_writes() {
        for text in tricky() {
            let mut c = call(&text);
            both(&c);
            c.duration_ms = None;
            c.advertised = Some(false);
            c.transport = Transport::Http;
            c.origin = Origin::Otel;
            c.outcome = Outcome::Unknown;
            c.unknown = Some(Unknown::Unanswered);
            both(&c);
            c.advertised = Some(true);
            c.outcome = Outcome::Error;
            c.unknown = None;
            for code in [None, Some(0), Some(-32_000), Some(i64::MIN), Some(i64::MAX)] {
                c.error = Some(CallError {
                    channel: Channel::Tool,
                    code,
                    template_id: code.map(|_| text.clone().into()),
                    retryable: code.map(|c| c > 0),
                });
                both(&c);
            }
            c.error = None;
            c.outcome = Outcome::Ok;
            c.duration_ms = Some(1234567890);
            for contract in [
                Contract::kept(),
                Contract {
                    kept: false,
                    at: Some(text.clone().into()),
                    keyword: Some("type".into()),
                },
                Contract {
                    kept: false,
                    at: None,
                    keyword: Some(text.clone().into()),
                },
            ] {
                c.contract = Some(contract);
                both(&c);
            }
            // The shape as capture holds it: JSON text, written as it is.
            let raw: Call<'_, Box<RawValue>> = Call {
                args_shape: RawValue::from_string(r#"{"a b":"string"}"#.into()).unwrap(),
                schema: c.schema.clone(),
                identity: c.identity.clone(),
                origin: c.origin,
                transport: c.transport,
                server: c.server.clone(),
                tool: c.tool.clone(),
                started_at: c.started_at.clone(),
                duration_ms: c.duration_ms,
                advertised: c.advertised,
                outcome: c.outcome,
                unknown: c.unknown,
                error: c.error.clone(),
                contract: c.contract.clone(),
            };
            both(&raw);
        }
    }
}
