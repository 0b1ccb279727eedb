//! A soak of one store under every writer at once: real captures of a
//! real server, `index`, `promote`, `annotate`, `verify` of a live server
//! and `findings` readers, each in a loop, for `MCPEVAL_SOAK_SECONDS`
//! (10 in CI; `scripts/soak` runs 60 or more).
//!
//! No command may fail or mention a locked or busy database: waits are
//! SQLite's bounded busy timeout. Afterwards nothing is lost: the index
//! holds every record the journals hold, and those every call the
//! captures and probes made; every annotation stored is linked or listed;
//! every green verification is in the lifecycle; and a promotion left in
//! the index is exactly what promoting its calls again gives.

use std::fs;
use std::io::Write;
use std::process::{Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::dump::findings;
use crate::support::{fixture, text};
use crate::verify::Bench;

/// Calls each capture makes before its client hangs up.
const CALLS_PER_CAPTURE: u64 = 12;

const NOW: &str = "2026-12-01T00:00:00Z";

fn seconds() -> u64 {
    std::env::var("MCPEVAL_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// What the client of one capture sends: a handshake, then calls to a
/// tool that always answers and one that fails half the time.
fn client_lines() -> Vec<u8> {
    let mut out = Vec::new();
    let mut send = |v: serde_json::Value| {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "soak", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in 1..=CALLS_PER_CAPTURE {
        let tool = if id.is_multiple_of(2) {
            "flaky"
        } else {
            "status"
        };
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"q": "x"}}}));
    }
    out
}

/// Fails on any sign that a database wait surfaced to the user.
#[track_caller]
fn no_lock_error(what: &str, out: &Output) {
    let err = text(&out.stderr).to_lowercase();
    for word in ["locked", "busy"] {
        assert!(!err.contains(word), "{what}: {err}");
    }
}

/// Complete lines in every journal.
fn journal_lines(bench: &Bench) -> u64 {
    bench
        .store
        .journals()
        .iter()
        .map(|p| fs::read(p).unwrap().iter().filter(|&&b| b == b'\n').count() as u64)
        .sum()
}

/// An event id from the newest journal, for annotate to target.
fn some_event(bench: &Bench, pick: usize) -> Option<String> {
    let files = bench.store.journals();
    let file = files.get(pick % files.len().max(1))?;
    let text = fs::read_to_string(file).ok()?;
    let line = text.lines().next()?;
    let rec: serde_json::Value = serde_json::from_str(line).ok()?;
    rec["identity"]["event_id"].as_str().map(str::to_owned)
}

#[test]
fn every_command_at_once_on_one_store_loses_nothing() {
    let bench = Bench::new();
    let store = &bench.store;
    let initial = journal_lines(&bench);
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let stop = AtomicBool::new(false);
    let captured = AtomicU64::new(0);
    let probed = AtomicU64::new(0);
    let annotations = Mutex::new(Vec::<i64>::new());
    let greens = AtomicU64::new(0);
    let runs: Mutex<Vec<(&str, u64)>> = Mutex::new(Vec::new());
    let client = client_lines();
    let server = fixture("probe_server.py");

    let looping = |name: &'static str, body: &(dyn Fn(u64) + Sync)| {
        let mut n = 0;
        while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
            body(n);
            n += 1;
        }
        runs.lock().unwrap().push((name, n));
    };
    let capture = |_| {
        let mut child = store
            .cmd("mcpeval-capture")
            .args(["--", "python3"])
            .arg(&server)
            .args(["--fail-rate", "0.5"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&client).unwrap();
        let out = child.wait_with_output().unwrap();
        no_lock_error("capture", &out);
        assert!(out.status.success(), "capture: {}", text(&out.stderr));
        // Every call was answered before the server saw end of input.
        let answers = text(&out.stdout).lines().count() as u64;
        assert_eq!(answers, CALLS_PER_CAPTURE + 1);
        captured.fetch_add(CALLS_PER_CAPTURE, Ordering::SeqCst);
    };
    let index = |_| {
        let out = store.cmd("mcpeval-index").output().unwrap();
        no_lock_error("index", &out);
        assert!(out.status.success(), "index: {}", text(&out.stderr));
    };
    let promote = |_| {
        let out = store
            .cmd("mcpeval-promote")
            .args(["--threshold", "0", "--now", NOW])
            .output()
            .unwrap();
        no_lock_error("promote", &out);
        assert!(out.status.success(), "promote: {}", text(&out.stderr));
    };
    let annotate = |n: u64| {
        let Some(event) = some_event(&bench, n as usize) else {
            return;
        };
        let kind = if n.is_multiple_of(3) {
            "false-success"
        } else {
            "workaround"
        };
        let out = store
            .cmd("mcpeval-annotate")
            .args([
                "--event-id",
                &event,
                "--kind",
                kind,
                "--note",
                "seen in the soak",
            ])
            .output()
            .unwrap();
        no_lock_error("annotate", &out);
        assert!(out.status.success(), "annotate: {}", text(&out.stderr));
        let id: i64 = text(&out.stdout).trim().parse().unwrap();
        annotations.lock().unwrap().push(id);
        std::thread::sleep(Duration::from_millis(20));
    };
    let verify = |_| {
        let run = bench.verify(&[]);
        assert!(
            !(run.stderr.contains("locked") || run.stderr.contains("busy")),
            "verify: {}",
            run.stderr
        );
        assert_eq!(run.status, 0, "verify: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(" result=green "), "{}", run.stdout);
        greens.fetch_add(1, Ordering::SeqCst);
        // The probe journals its one call.
        probed.fetch_add(1, Ordering::SeqCst);
    };
    let read = |_| {
        let out = store
            .cmd("mcpeval-findings")
            .args(["--format", "json"])
            .output()
            .unwrap();
        no_lock_error("findings", &out);
        // Between an index run and the next promote the findings are out
        // of date: status 3 and nothing on stdout, never an empty list.
        if out.status.code() == Some(3) {
            assert!(
                text(&out.stderr).contains("findings are out of date"),
                "findings: {}",
                text(&out.stderr)
            );
            assert!(out.stdout.is_empty());
            return;
        }
        assert!(out.status.success(), "findings: {}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
    };

    std::thread::scope(|s| {
        let workers: Vec<(&'static str, &(dyn Fn(u64) + Sync))> = vec![
            ("capture", &capture),
            ("capture", &capture),
            ("index", &index),
            ("promote", &promote),
            ("annotate", &annotate),
            ("verify", &verify),
            ("findings", &read),
        ];
        for (name, body) in workers {
            let (looping, stop) = (&looping, &stop);
            s.spawn(move || {
                let done =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| looping(name, body)));
                if let Err(panic) = done {
                    // Stop the others at once; the scope re-raises the panic.
                    stop.store(true, Ordering::SeqCst);
                    std::panic::resume_unwind(panic);
                }
            });
        }
    });

    let runs = runs.into_inner().unwrap();
    eprintln!("runs: {runs:?}");
    for name in [
        "capture", "index", "promote", "annotate", "verify", "findings",
    ] {
        let n: u64 = runs.iter().filter(|r| r.0 == name).map(|r| r.1).sum();
        assert!(n >= 2, "{name} ran {n} times");
    }

    // A promotion left behind must be that of the calls beside it.
    let left = findings(&store.home());
    let again = store
        .cmd("mcpeval-promote")
        .args(["--threshold", "0", "--now", NOW])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    if !left[1].1.is_empty() {
        assert_eq!(left, findings(&store.home()), "stale findings");
    }

    // Nothing lost: journals hold every call made, the index every record.
    let out = store.cmd("mcpeval-index").output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = journal_lines(&bench);
    let made = captured.load(Ordering::SeqCst) + probed.load(Ordering::SeqCst);
    assert_eq!(lines, initial + made, "journal records");
    let index = crate::dump::open(&store.home());
    let count = |conn: &rusqlite::Connection, sql: &str| -> u64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    assert_eq!(count(&index, "SELECT count(*) FROM calls"), lines);
    let stored = annotations.into_inner().unwrap();
    assert_eq!(
        count(&index, "SELECT count(*) FROM annotation_links"),
        stored.len() as u64
    );
    assert_eq!(
        count(
            &index,
            "SELECT count(*) FROM annotation_links WHERE status = 'linked'"
        ),
        stored.len() as u64,
        "every annotation targets an indexed call"
    );
    let life = rusqlite::Connection::open(store.home().join("lifecycle.db")).unwrap();
    let mut listed: Vec<i64> = life
        .prepare("SELECT id FROM annotations ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut stored = stored;
    stored.sort();
    listed.sort();
    assert_eq!(listed, stored);
    assert_eq!(
        count(&life, "SELECT count(*) FROM verifications WHERE legacy = 0"),
        greens.load(Ordering::SeqCst)
    );
}
