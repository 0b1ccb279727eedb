//! Hostile input meets bounded readers: a FIFO named like a journal is
//! skipped, never opened blocking; a huge journal line, request line or
//! share item is measured and refused, never held. Memory is the child's
//! own peak resident set (`wait4`), and every run has a time limit, so a
//! hang fails the test instead of stalling the suite.

use std::io::Write;
use std::process::{ChildStdin, Command};
use std::time::Duration;

use serde_json::Value;

use crate::records::{self, Rec};
use crate::seeded::seeded_records;
use crate::support::{Measured, Store, measure, text};

const MIB: u64 = 1 << 20;
/// How long any one run may take before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(120);

fn run(store: &Store, bin: &str, args: &[&str]) -> Measured {
    let mut cmd = store.cmd(bin);
    cmd.args(args);
    measure(cmd, None, LIMIT)
}

#[test]
fn a_fifo_named_like_a_journal_is_skipped_with_a_warning_by_every_reader() {
    let store = Store::new();
    records::write(&store, 1, &records::lines(&seeded_records()));
    let fifo = records::journal(&store, 2);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let warning = |bin: &str| {
        format!(
            "{bin}: warning: skipped {}: it is a FIFO, not a regular file; move it out of journals/\n",
            fifo.display()
        )
    };
    let out = store.scratch().join("out.share.json");
    let readers: [(&str, Vec<&str>); 3] = [
        ("mcpeval-readiness", vec!["--format", "json"]),
        ("mcpeval-share", vec!["--output", out.to_str().unwrap()]),
        ("mcpeval-index", vec![]),
    ];
    for (bin, args) in readers {
        let ran = run(&store, bin, &args);
        let stderr = text(&ran.stderr);
        assert_eq!(ran.status, 0, "{bin}: {stderr}");
        assert!(stderr.contains(&warning(bin)), "{bin}: {stderr}");
        match bin {
            "mcpeval-index" => assert!(
                stderr.contains("indexed 12 calls (12 new) from 1 journals"),
                "{stderr}"
            ),
            "mcpeval-share" => assert!(stderr.contains("12 journal records"), "{stderr}"),
            _ => assert!(
                text(&ran.stdout).contains("\"forecast\""),
                "{}",
                text(&ran.stdout)
            ),
        }
    }
    // Indexed once, the store indexes again with the FIFO still there.
    let again = run(&store, "mcpeval-index", &[]);
    assert_eq!(again.status, 0, "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("(0 new) from 1 journals"));
}

/// Appends `len` bytes that hold no newline to `path` without writing
/// them (a hole reads as zeros), then `tail`.
fn append_hole(path: &std::path::Path, len: u64, tail: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    let size = file.metadata().unwrap().len();
    file.set_len(size + len).unwrap();
    file.write_all(tail).unwrap();
}

#[test]
fn a_300_mb_journal_line_is_refused_by_every_reader_without_being_held() {
    let store = Store::new();
    let journal = records::write(&store, 1, &records::lines(&[Rec::ok(1, 1, 1, "status")]));
    const LINE: u64 = 300 * 1000 * 1000;
    append_hole(&journal, LINE, b"\n");
    let out = store.scratch().join("out.share.json");
    let refused = format!(
        "{}:2: oversized record: the line is {LINE} bytes, over the limit of 65536",
        journal.display()
    );
    let readers: [(&str, Vec<&str>); 3] = [
        ("mcpeval-readiness", vec![]),
        ("mcpeval-share", vec!["--output", out.to_str().unwrap()]),
        ("mcpeval-index", vec![]),
    ];
    for (bin, args) in &readers {
        let ran = run(&store, bin, args);
        let stderr = text(&ran.stderr);
        eprintln!(
            "{bin}: peak {} MiB refusing a {LINE}-byte line",
            ran.peak / MIB
        );
        assert_eq!(ran.status, 4, "{bin}: {stderr}");
        assert!(
            stderr.starts_with(&format!("{bin}: error: {refused}")),
            "{bin}: {stderr}"
        );
        assert!(
            ran.peak <= 64 * MIB,
            "{bin} peaked at {} MiB",
            ran.peak / MIB
        );
    }
    assert!(!out.exists());

    // Unfinished, the same bytes are a line still being written: left
    // for later, in as little memory.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap();
    file.set_len(file.metadata().unwrap().len() - 1).unwrap();
    for (bin, args) in &readers {
        let ran = run(&store, bin, args);
        let stderr = text(&ran.stderr);
        eprintln!(
            "{bin}: peak {} MiB passing an unfinished {LINE}-byte line",
            ran.peak / MIB
        );
        assert_eq!(ran.status, 0, "{bin}: {stderr}");
        assert!(
            ran.peak <= 64 * MIB,
            "{bin} peaked at {} MiB",
            ran.peak / MIB
        );
    }
    let shared: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(shared["journals"].as_array().unwrap().len(), 1);
}

/// Writes `head`, then `len` bytes of `x`, then `tail`, a MiB at a time,
/// never holding more; a reader that stops early ends the writing.
fn stream(head: String, len: u64, tail: String) -> Box<dyn FnOnce(ChildStdin) + Send> {
    Box::new(move |mut stdin: ChildStdin| {
        let chunk = vec![b'x'; MIB as usize];
        let mut write = || -> std::io::Result<()> {
            stdin.write_all(head.as_bytes())?;
            let mut left = len;
            while left > 0 {
                let n = left.min(MIB);
                stdin.write_all(&chunk[..n as usize])?;
                left -= n;
            }
            stdin.write_all(tail.as_bytes())
        };
        let _ = write();
    })
}

#[test]
fn serve_refuses_a_gigabyte_request_line_unread_and_answers_the_next() {
    let store = Store::new();
    const LINE: u64 = 1 << 30;
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_owned();
    let tail = "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n".to_owned();
    let total = head.len() as u64 + LINE + 3;
    let mut cmd = store.cmd("mcpeval-serve");
    cmd.current_dir(store.scratch());
    let ran = measure(cmd, Some(stream(head, LINE, tail)), LIMIT);
    let stderr = text(&ran.stderr);
    eprintln!(
        "mcpeval-serve: peak {} MiB reading a 1 GiB request line",
        ran.peak / MIB
    );
    assert_eq!(ran.status, 0, "{stderr}");
    let replies: Vec<Value> = text(&ran.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[0]["id"], Value::Null);
    assert_eq!(replies[0]["error"]["code"], -32600);
    assert_eq!(
        replies[0]["error"]["message"],
        format!(
            "Invalid Request: the line is {total} bytes, over the limit of 4194304 bytes (4 MiB); it was not read"
        )
    );
    assert_eq!(replies[1]["id"], 2);
    assert_eq!(replies[1]["result"], serde_json::json!({}));
    assert!(
        stderr.contains(&format!(
            "mcpeval-serve: warning: refused a request line of {total} bytes, over the limit of 4194304 (4 MiB); it was not read\n"
        )),
        "{stderr}"
    );
    assert!(
        ran.peak <= 256 * MIB,
        "serve peaked at {} MiB",
        ran.peak / MIB
    );
}

/// The start of an envelope whose first journal record is still open.
fn envelope_head() -> String {
    r#"{"schema":"mcpeval.share/1","created_at":"2026-11-30T07:00:00.000Z","servers":[],"findings":[],"evidence":[],"journals":[{"schema":"mcpeval.call/1","pad":""#.to_owned()
}

#[test]
fn findings_from_refuses_an_item_over_its_limit_without_holding_it() {
    let store = Store::new();
    let mut cmd = store.cmd("mcpeval-findings");
    cmd.args(["--from", "-", "--format", "json"]);
    let ran = measure(
        cmd,
        Some(stream(envelope_head(), 1 << 30, "\"}]}\n".into())),
        LIMIT,
    );
    let stderr = text(&ran.stderr);
    eprintln!(
        "mcpeval-findings --from -: peak {} MiB refusing a 1 GiB item",
        ran.peak / MIB
    );
    assert_eq!(ran.status, 4, "{stderr}");
    assert!(
        stderr.starts_with(
            "mcpeval-findings: error: standard input: /journals/0: more than 1 MiB in one item"
        ),
        "{stderr}"
    );
    assert_eq!(ran.stdout, b"");
    assert!(
        ran.peak <= 64 * MIB,
        "findings peaked at {} MiB",
        ran.peak / MIB
    );

    // A file of 3 MiB, far below the envelope's limit: the item alone is
    // too large.
    let file = store.scratch().join("big-item.share.json");
    let mut bytes = envelope_head().into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', 3 * MIB as usize));
    bytes.extend_from_slice(b"\"}]}\n");
    std::fs::write(&file, bytes).unwrap();
    let ran = run(
        &store,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap()],
    );
    let stderr = text(&ran.stderr);
    assert_eq!(ran.status, 4, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "mcpeval-findings: error: {}: /journals/0: more than 1 MiB in one item",
            file.display()
        )),
        "{stderr}"
    );
}
