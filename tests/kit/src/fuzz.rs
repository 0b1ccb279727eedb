//! The fuzz targets' bodies, shared by the libFuzzer binaries under
//! `fuzz/fuzz_targets/` (cargo fuzz, nightly) and the stable runner in the test
//! suite (`tests/suite/fuzz.rs`), so CI exercises exactly what the fuzzer
//! runs. Each target panics only on a broken invariant, never on bad input:
//! parsers must refuse input with an error, not a panic.

use serde_json::{Value, json};
use shared::manifest::{Expect, Manifest};
use shared::record::{Call, MAX_LINE};
use store::salt::Salt;

use mcpeval_capture::session;
use mcpeval_index::row;

/// The index's reading of one line, as comparable text, or why it refuses it.
fn index_row(line: &[u8]) -> shared::Result<String> {
    let mut batch = row::Batch::default();
    batch.push(1, line).map(|row| format!("{row:?}"))
}

fn salt() -> Salt {
    Salt::from_bytes([7; 32])
}

/// A journal line: the index accepts it or names why not; a record it
/// accepts survives a round trip through the record types unchanged.
pub fn record(data: &[u8]) {
    let Ok(row) = index_row(data) else { return };
    if let Ok(call) = serde_json::from_slice::<Call>(data) {
        let again = serde_json::to_vec(&call).expect("records serialize");
        let reparsed = index_row(&again).expect("a serialized record parses");
        assert_eq!(row, reparsed);
    }
}

/// The template normalizer: no digits and no whitespace runs survive, and
/// the id is a salted `t-` token.
pub fn template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let normal = store::sanitize::normalize(&text);
    assert!(!normal.bytes().any(|b| b.is_ascii_digit()), "{normal:?}");
    assert!(!normal.contains("  "), "{normal:?}");
    assert_eq!(normal.trim(), normal);
    let id = store::sanitize::template_id(&salt(), &text);
    assert!(id.len() == 18 && id.starts_with("t-"), "{id}");
}

/// The manifest parser: a manifest it accepts is accepted again, with the
/// same case definitions (the credit binding's input), once reformatted
/// with its keys reordered, as the manifest contract promises.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(manifest) = Manifest::parse(text) else {
        return;
    };
    let value: Value = serde_json::from_str(text).expect("an accepted manifest is JSON");
    let again = Manifest::parse(&serde_json::to_string_pretty(&value).unwrap())
        .expect("a reformatted manifest parses");
    let canonical = |m: &Manifest| m.cases.iter().map(|c| c.canonical()).collect::<Vec<_>>();
    assert_eq!(canonical(&again), canonical(&manifest));
    let holes = |m: &Manifest| m.cases.iter().map(|c| c.placeholders()).collect::<Vec<_>>();
    assert_eq!(holes(&again), holes(&manifest));
}

/// The expect parser and JSON Pointer checks: `EXPECT\0RESULT`. An accepted
/// expectation round-trips through its canonical value; checking any
/// result never panics; and a result built to satisfy its top-level fields
/// and equalities does satisfy them, whatever the keys (`~`, `/`, …).
pub fn expect(data: &[u8]) {
    let (head, tail) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(head) else {
        return;
    };
    let Ok(expect) = Expect::parse(text) else {
        return;
    };
    let canonical = expect.to_value();
    assert_eq!(
        Expect::parse(&canonical.to_string()).map(|e| e.to_value()),
        Ok(canonical.clone())
    );
    if let Ok(result) = serde_json::from_slice::<Value>(tail) {
        let _ = expect.first_unmet(&result);
    }
    if expect.required_result_paths.is_empty() && expect.equals_paths.is_empty() {
        let mut fields = serde_json::Map::new();
        for key in &expect.required_result_fields {
            fields.insert(key.clone(), Value::Null);
        }
        for (key, want) in &expect.equals {
            fields.insert(key.clone(), want.clone());
        }
        let built = json!({"content": [], "structuredContent": fields});
        assert_eq!(expect.first_unmet(&built), None, "{text}");
    }
}

/// The response classifier: outcome, error and unknown always agree, and
/// the template id is a salted token.
pub fn classify(data: &[u8]) {
    let Ok(response) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let c = store::outcome::classify(&response, &salt());
    // Read where it lies, as capture reads it, the answer is the same.
    if let Ok(text) = std::str::from_utf8(data)
        && let Some([error, result]) = store::raw::object(text, ["error", "result"])
    {
        let templates = &mut store::sanitize::Templates::default();
        assert_eq!(
            store::outcome::classify_raw(error, result, &salt(), templates),
            c,
            "{text}"
        );
    }
    use shared::record::Outcome;
    match c.outcome {
        Outcome::Ok => assert!(c.error.is_none() && c.unknown.is_none()),
        Outcome::Error => assert!(c.error.is_some() && c.unknown.is_none()),
        Outcome::Unknown => assert!(c.error.is_none() && c.unknown.is_some()),
    }
    if let Some(t) = c.error.and_then(|e| e.template_id) {
        assert!(t.len() == 18 && t.starts_with("t-"), "{t}");
    }
}

/// Capture's observer over a conversation: each line is one message, from
/// the client when it starts with `>`, else from the server. Every record
/// it makes is one the index accepts, as the journal writer encodes it.
pub fn observe(data: &[u8]) {
    let mut s = session::Session::new(
        salt(),
        shared::record::Transport::Stdio,
        None,
        "fuzz-server".into(),
    );
    let at = jiff::Timestamp::from_second(1_800_000_000).unwrap();
    let now = std::time::Instant::now();
    let mut calls = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let (side, bytes) = match line.strip_prefix(b">") {
            Some(rest) => (session::Side::Client, rest),
            None => (session::Side::Server, line),
        };
        calls.extend(s.observe(side, bytes, at, now));
    }
    calls.extend(s.finish());
    for call in calls {
        let line = store::journal::encode(&call.call());
        assert!(line.len() <= MAX_LINE + 1 && line.ends_with(b"\n"));
        if let Err(why) = index_row(&line[..line.len() - 1]) {
            panic!("capture wrote a record the index refuses: {why}");
        }
    }
}

/// A target's body.
pub type Target = fn(&[u8]);

/// Every target by name, for the stable runner.
pub const ALL: [(&str, Target); 6] = [
    ("record", record),
    ("template", template),
    ("manifest", manifest),
    ("expect", expect),
    ("classify", classify),
    ("observe", observe),
];
