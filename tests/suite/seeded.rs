//! A store with known findings on two servers, an annotation with a note,
//! and the secrets no export may carry, for the stages that hand findings
//! on (export-issues, share, serve).

#![allow(dead_code)]

use std::process::Output;

use serde_json::{Value, json};

use crate::records::{self, Rec, event, session, template};
use crate::support::{Store, text};

/// The note put on one call; it must never leave the store uninvited.
pub const NOTE: &str = "NOTE-5b1c customer acme said the key was abc";

/// Runs `bin` in `store`, asserting success; returns stdout.
pub fn ok(store: &Store, bin: &str, args: &[&str]) -> String {
    let out = store.bin(bin).args(args).assert().success();
    text(&out.get_output().stdout)
}

pub fn run(store: &Store, bin: &str, args: &[&str]) -> Output {
    store.cmd(bin).args(args).output().unwrap()
}

/// The records of the seeded store: `weather` with two recurring errors
/// (forecast, template 1; alerts, template 2, code -32603) and `maps`
/// with one (route, template 3, code -32602), each in two sessions.
pub fn seeded_records() -> Vec<Rec> {
    let mut recs = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    for s in 1..=2 {
        recs.push(Rec::error(next(), s, 1, "forecast", Some(1)));
        recs.push(Rec::ok(next(), s, 2, "forecast"));
        let mut a = Rec::error(next(), s, 3, "alerts", Some(2));
        a.0["error"]["code"] = json!(-32603);
        a.0["error"]["channel"] = json!("jsonrpc");
        recs.push(a);
        recs.push(Rec::ok(next(), s, 4, "alerts"));
    }
    for s in 3..=4 {
        let mut r = Rec::error(next(), s, 1, "route", Some(3)).server("maps");
        r.0["error"]["code"] = json!(-32602);
        r.0["error"]["channel"] = json!("jsonrpc");
        r.0["args_shape"] = json!({"from": "string", "to": "string", "avoid": ["string"]});
        recs.push(r);
        recs.push(Rec::ok(next(), s, 2, "route").server("maps"));
    }
    recs
}

/// Writes the seeded journal, annotates call 2 with [`NOTE`], indexes
/// and promotes at threshold 0.
pub fn seeded() -> Store {
    let store = Store::new();
    records::write(&store, 1, &records::lines(&seeded_records()));
    ok(
        &store,
        "mcpeval-annotate",
        &[
            "--event-id",
            &event(2),
            "--kind",
            "workaround",
            "--note",
            NOTE,
        ],
    );
    ok(&store, "mcpeval-index", &[]);
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    store
}

/// `findings --format json` of `store`.
pub fn findings(store: &Store) -> Vec<Value> {
    let out = ok(store, "mcpeval-findings", &["--format", "json"]);
    serde_json::from_str::<Value>(&out).unwrap()["findings"]
        .as_array()
        .unwrap()
        .clone()
}

/// The finding of (server, tool).
pub fn finding_of(store: &Store, server: &str, tool: &str) -> Value {
    findings(store)
        .into_iter()
        .find(|f| f["server"] == server && f["tool"] == tool)
        .unwrap_or_else(|| panic!("no finding for {server}/{tool}"))
}

/// Sets a finding's lifecycle state directly in lifecycle.db, as the
/// verify and close stages would leave it.
pub fn set_state(store: &Store, id: &str, state: &str) {
    let home = shared::home::Home::at(&store.home());
    let conn = store::lifecycle::open(&home).unwrap();
    conn.execute(
        "INSERT INTO finding_state(finding_id, state, updated_at) VALUES (?1, ?2, '2026-12-01T00:00:00.000Z')
         ON CONFLICT(finding_id) DO UPDATE SET state = excluded.state",
        [id, state],
    )
    .unwrap();
}

/// Every string that identifies a call or a template in the seeded
/// journal, and the note: none may appear in what a stage hands on.
pub fn secrets() -> Vec<String> {
    let mut out = vec![NOTE.to_owned(), "NOTE-5b1c".to_owned()];
    for n in 1..=12 {
        out.push(event(n));
    }
    for s in 1..=4 {
        out.push(session(s));
    }
    for t in 1..=3 {
        out.push(template(t));
    }
    out
}

/// The store's salt as hex.
pub fn salt_hex(store: &Store) -> String {
    let bytes = std::fs::read(store.home().join(".salt")).unwrap();
    store::hash::hex(&bytes)
}

/// A store with one finding on the fixture server's `status` tool, in
/// two sessions, so a generated manifest can be verified against it.
pub fn fixture_store() -> (Store, String) {
    let store = Store::new();
    let mut recs = Vec::new();
    for s in 1..=2 {
        recs.push(Rec::error(s * 10, s, 1, "status", Some(1)).server("probe-fixture"));
        recs.push(Rec::ok(s * 10 + 1, s, 2, "status").server("probe-fixture"));
    }
    records::write(&store, 1, &records::lines(&recs));
    ok(&store, "mcpeval-index", &[]);
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    let id = findings(&store)[0]["id"].as_str().unwrap().to_owned();
    (store, id)
}

/// The case `generate` writes for `id` into the store's scratch directory
/// (`m.json`), placeholders filled, beside a copy of the fixture server
/// (`server.py`): what serve's `verify_finding` runs, with the scratch
/// directory as its workspace. Returns the manifest's path and document.
pub fn filled_manifest(store: &Store, id: &str) -> (std::path::PathBuf, Value) {
    let dir = store.scratch();
    let manifest = dir.join("m.json");
    ok(
        store,
        "mcpeval-generate",
        &[
            "--finding",
            id,
            "--confirm-read-only",
            "--output",
            manifest.to_str().unwrap(),
        ],
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    fill(&mut doc);
    std::fs::write(&manifest, doc.to_string()).unwrap();
    std::fs::copy(
        crate::support::fixture("probe_server.py"),
        dir.join("server.py"),
    )
    .unwrap();
    (manifest, doc)
}

/// Replaces every `"<fill:TYPE>"` with a value of that type.
pub fn fill(value: &mut Value) {
    match value {
        Value::String(s) if s.starts_with("<fill:") => {
            *value = match s.as_str() {
                "<fill:integer>" => json!(1),
                "<fill:number>" => json!(1.5),
                "<fill:boolean>" => json!(true),
                "<fill:null>" => Value::Null,
                _ => json!("x"),
            }
        }
        Value::Array(items) => items.iter_mut().for_each(fill),
        Value::Object(map) => map.values_mut().for_each(fill),
        _ => {}
    }
}

/// The time [`near_duplicates`] is promoted and reported as of.
pub const NEAR_NOW: &str = "2026-11-30T12:00:00Z";

/// The argument shapes of the three `get-sum` findings of
/// [`near_duplicates`], most failures first: `a` of the wrong type, `b`
/// of the wrong type, `b` missing; every one carries `round`.
pub fn get_sum_shapes() -> [Value; 3] {
    [
        json!({"a": "string", "b": "number", "round": "boolean"}),
        json!({"a": "number", "b": "string", "round": "boolean"}),
        json!({"a": "number", "round": "boolean"}),
    ]
}

/// Near-duplicate findings, as the reference server `everything` gives
/// them: `get-sum` failing with -32602 under three error templates, one
/// argument shape each (4, 3 and 2 of its 12 calls, so their scores
/// differ), over 2026-11-28 to 30 in two sessions; beside it `echo`,
/// failing alone. Indexed and promoted as of [`NEAR_NOW`].
pub fn near_duplicates() -> Store {
    let store = Store::new();
    let mut recs = Vec::new();
    let mut n = 0;
    let mut at = |tool: &str, failing: Option<(u64, &Value)>, k: u64| {
        n += 1;
        let (s, day) = (1 + k % 2, 28 + k % 3);
        let mut rec = match failing {
            Some((t, shape)) => {
                let mut r = Rec::error(n, s, n, tool, Some(t));
                r.0["error"]["code"] = json!(-32602);
                r.0["error"]["channel"] = json!("jsonrpc");
                r.0["args_shape"] = shape.clone();
                r
            }
            None => Rec::ok(n, s, n, tool),
        }
        .server("everything");
        rec.0["started_at"] = json!(format!("2026-11-{day}T07:00:{:02}.123Z", n % 60));
        rec
    };
    let shapes = get_sum_shapes();
    for (t, (shape, failures)) in shapes.iter().zip([4, 3, 2]).enumerate() {
        for k in 0..failures {
            recs.push(at("get-sum", Some((4 + t as u64, shape)), k));
        }
    }
    for k in 0..3 {
        recs.push(at("get-sum", None, k));
    }
    let echo = json!({"message": "string"});
    for k in 0..2 {
        let mut r = at("echo", Some((7, &echo)), k);
        r.0["error"]["code"] = json!(-32603);
        recs.push(r);
        recs.push(at("echo", None, k + 1));
    }
    records::write(&store, 1, &records::lines(&recs));
    ok(&store, "mcpeval-index", &[]);
    ok(
        &store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", NEAR_NOW],
    );
    store
}
