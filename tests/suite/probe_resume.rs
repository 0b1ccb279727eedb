//! `mcpeval-probe --url` and `mcpeval-verify --url` resume an event stream
//! that ends before its response (GET with `Last-Event-ID`, after the
//! server's `retry`), and give up, boundedly, on one that never brings it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::probe::{Run, expect, finish, transport};
use crate::probe_http::Fixture;
use crate::support::{Store, text};
use crate::verify::promoted_store_of;

const F: &str = "finding-0123456789abcdef";

/// `tests/fixtures/resume_server.py`, running until dropped.
fn start(store: &Store, args: &[&str]) -> Fixture {
    Fixture::script(store, "resume_server.py", args)
}

/// The GETs, and each one's wait since the stream before it ended.
fn resumptions(server: &Fixture) -> Vec<(Value, f64)> {
    let mut ended = None;
    let mut out = Vec::new();
    for e in server.entries() {
        if e["event"] == "ended" {
            ended = Some(e);
        } else if e["http"] == "GET" {
            let before = ended.take().expect("a GET after an ended stream");
            let waited = e["t"].as_f64().unwrap() - before["t"].as_f64().unwrap();
            assert_eq!(e["headers"]["last-event-id"], before["last"], "{e}");
            out.push((e, waited));
        }
    }
    out
}

fn manifest(store: &Store, finding: &str) -> PathBuf {
    let path = store.scratch().join("mcp-eval.manifest.json");
    let doc = json!({"manifest_version": 1,
        "sandboxes": {"fixture": {"declaration": "a private fixture on loopback"}},
        "cases": [{"id": "status", "finding": finding, "probe": "instruction-fidelity",
                   "sandbox": "fixture", "tool": "status", "timeout_ms": 10000,
                   "expect": {"outcome": "ok",
                              "equals_paths": {"/structuredContent/status": "resumed"}}}]});
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

fn probe(store: &Store, url: &str) -> Run {
    let mut cmd = store.cmd("mcpeval-probe");
    cmd.arg("--manifest")
        .arg(manifest(store, F))
        .args(["--case", "status", "--url", url]);
    finish(cmd.output().unwrap())
}

#[test]
fn a_stream_ended_before_its_response_is_resumed_after_retry() {
    let store = Store::new();
    let server = start(&store, &["--retry", "250"]);
    let run = probe(&store, &server.url());
    expect(&run, 0, "green", Value::Null, Value::Null, 1);
    assert_eq!(run.stderr, "");
    let resumed = resumptions(&server);
    assert_eq!(resumed.len(), 1, "{:?}", server.entries());
    let (get, waited) = &resumed[0];
    // The last id the broken stream named (its notification's, not the
    // priming event's), checked by `resumptions`; the session goes along.
    assert_eq!(get["headers"]["last-event-id"], "ev-2");
    assert_eq!(get["headers"]["accept"], "text/event-stream");
    assert!(get["headers"]["mcp-session-id"].is_string(), "{get}");
    assert_eq!(get["headers"]["mcp-protocol-version"], "2025-11-25");
    assert!(get["headers"].get("content-type").is_none(), "{get}");
    // retry's 250 ms, not the 1 s used when a stream names no wait.
    assert!((0.23..0.9).contains(waited), "waited {waited} s");
}

#[test]
fn a_stream_that_never_brings_its_response_ends_with_status_5() {
    let store = Store::new();
    let server = start(&store, &["--resume", "never", "--retry", "100"]);
    let started = Instant::now();
    let run = probe(&store, &server.url());
    let took = started.elapsed();
    let detail = "the event stream answering tools/call ended before its response, and 5 \
resumptions in a row (GET with Last-Event-ID) brought no message";
    transport(&run, "stream-ended", detail, 1);
    assert!(run.stderr.contains(detail), "{}", run.stderr);
    // Five GETs, each naming the id the stream before it ended on, each
    // after retry's 100 ms; well before the case's 10 s timeout.
    let resumed = resumptions(&server);
    let ids: Vec<&str> = resumed
        .iter()
        .map(|(g, _)| g["headers"]["last-event-id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ev-2", "ev-3", "ev-4", "ev-5", "ev-6"]);
    assert!(
        resumed.iter().all(|(_, w)| (0.09..0.9).contains(w)),
        "{resumed:?}"
    );
    assert!(took < Duration::from_secs(8), "took {took:?}");
}

#[test]
fn verify_over_http_resumes_the_stream_too() {
    let store = Store::new();
    let finding = promoted_store_of(&store, "resume-fixture", "status");
    let server = start(&store, &["--retry", "200"]);
    let out = store
        .cmd("mcpeval-verify")
        .args(["--finding", &finding, "--case", "status", "--manifest"])
        .arg(manifest(&store, &finding))
        .args(["--url", &server.url()])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(&format!("{finding} case=status result=green")),
        "{stdout}"
    );
    assert_eq!(resumptions(&server).len(), 1);
}
