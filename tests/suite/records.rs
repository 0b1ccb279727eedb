//! Journal records and files written directly by tests, as capture would
//! write them, so index and annotate can be tested on exact, known input.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::Store;

/// The session token `s-` + n as 16 hex digits.
pub fn session(n: u64) -> String {
    format!("s-{n:016x}")
}

/// The template id `t-` + n as 16 hex digits.
pub fn template(n: u64) -> String {
    format!("t-{n:016x}")
}

/// A UUID v4 whose last group is n.
pub fn event(n: u64) -> String {
    format!("6f1c2a3b-4d5e-4f60-8a7b-{n:012x}")
}

/// An `mcpeval.call/1` record under construction.
#[derive(Clone)]
pub struct Rec(pub Value);

impl Rec {
    /// A successful capture call to `tool` on server `weather`.
    pub fn ok(event_no: u64, session_no: u64, seq: u64, tool: &str) -> Rec {
        Rec(json!({
            "schema": "mcpeval.call/1",
            "identity": {"event_id": event(event_no), "session": session(session_no), "seq": seq},
            "origin": "capture",
            "transport": "stdio",
            "server": "weather",
            "tool": tool,
            "started_at": format!("2026-11-30T07:{:02}:{:02}.123Z", seq / 60 % 60, seq % 60),
            "duration_ms": 41,
            "advertised": true,
            "args_shape": {"city": "string", "days": "integer"},
            "outcome": "ok"
        }))
    }

    /// A failed capture call with template `t` (None: no message).
    pub fn error(event_no: u64, session_no: u64, seq: u64, tool: &str, t: Option<u64>) -> Rec {
        let mut rec = Rec::ok(event_no, session_no, seq, tool);
        rec.0["outcome"] = json!("error");
        rec.0["error"] = json!({
            "channel": "tool",
            "code": null,
            "template_id": t.map(template),
            "retryable": false
        });
        rec
    }

    /// An unanswered capture call.
    pub fn unanswered(event_no: u64, session_no: u64, seq: u64, tool: &str) -> Rec {
        let mut rec = Rec::ok(event_no, session_no, seq, tool);
        rec.0["outcome"] = json!("unknown");
        rec.0["unknown"] = json!("unanswered");
        rec.0["duration_ms"] = Value::Null;
        rec
    }

    pub fn server(mut self, name: &str) -> Rec {
        self.0["server"] = json!(name);
        self
    }

    /// An ok call's verdict on its tool's outputSchema: kept (`None`), or
    /// broken at `at` by `keyword`.
    pub fn contract(mut self, broken: Option<(&str, &str)>) -> Rec {
        self.0["contract"] = match broken {
            None => json!({"kept": true}),
            Some((at, keyword)) => json!({"kept": false, "at": at, "keyword": keyword}),
        };
        self
    }

    pub fn probe(mut self) -> Rec {
        self.0["origin"] = json!("probe");
        self
    }

    /// The record as one journal line, newline included.
    pub fn line(&self) -> String {
        format!("{}\n", self.0)
    }
}

/// A legacy `mcpeval.call/0` line.
pub fn legacy(
    session_no: u64,
    seq: u64,
    server: &str,
    tool: &str,
    outcome: &str,
    code: Option<i64>,
) -> String {
    let rec = json!({
        "schema": "mcpeval.call/0",
        "session": session(session_no),
        "seq": seq,
        "server": server,
        "tool": tool,
        "ts": "2026-11-30T07:00:00.000Z",
        "outcome": outcome,
        "err_code": code,
        "template_id": null,
        "retryable": null,
        "args_shape": {"q": "string"}
    });
    format!("{rec}\n")
}

/// Lines of `records`, concatenated.
pub fn lines(records: &[Rec]) -> String {
    records.iter().map(Rec::line).collect()
}

/// The journal file name number `n`; names sort in `n` order.
pub fn journal_name(n: u32) -> String {
    format!("20261130T07{:02}{:02}.000Z-{n:08x}.jsonl", n / 60, n % 60)
}

/// The path of journal `n` in `store`, creating `journals/`.
pub fn journal(store: &Store, n: u32) -> PathBuf {
    let dir = store.home().join("journals");
    crate::support::private_dir(&dir);
    dir.join(journal_name(n))
}

/// Writes (replacing) journal `n`.
pub fn write(store: &Store, n: u32, text: &str) -> PathBuf {
    let path = journal(store, n);
    fs::write(&path, text).unwrap();
    path
}

/// Appends to journal `n`.
pub fn append(store: &Store, n: u32, text: &str) -> PathBuf {
    let path = journal(store, n);
    append_to(&path, text);
    path
}

pub fn append_to(path: &Path, text: &str) {
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}
