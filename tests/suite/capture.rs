//! `mcpeval-capture` over stdio, against real peers and the misbehaving
//! fixture server: the relay changes nothing, and the journal holds one
//! sanitized record per tool call.

use crate::support::OutputWithin;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::{
    CAPTURE_PEAK, Deps, PeakWatch, Store, contains, fixture, repo, text, write_padded,
};

/// A JSON-RPC client speaking raw lines to a capture process.
pub(crate) struct Raw {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

impl Raw {
    pub(crate) fn start(store: &Store, capture_args: &[&str], server: &[&str]) -> Raw {
        let mut cmd = store.cmd("mcpeval-capture");
        cmd.args(capture_args).arg("--").args(server);
        Raw::spawn(cmd)
    }

    /// Runs `cmd` (a capture, however its argv is spelled) as the peer.
    pub(crate) fn spawn(mut cmd: Command) -> Raw {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        Raw { child, to, from }
    }

    pub(crate) fn fixture(store: &Store, extra: &[&str]) -> Raw {
        let server = fixture("misbehaving_server.py");
        let mut argv = vec!["python3", server.to_str().unwrap()];
        argv.extend_from_slice(extra);
        Raw::start(store, &[], &argv)
    }

    pub(crate) fn send(&mut self, message: &Value) {
        writeln!(self.to, "{message}").unwrap();
        self.to.flush().unwrap();
    }

    pub(crate) fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.from.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.recv()
    }

    pub(crate) fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// Closes the client's side and waits for capture to end.
    pub(crate) fn finish(self) -> std::process::Output {
        drop(self.to);
        let mut out = self.child.wait_with_output().unwrap();
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut self.from.into_inner(), &mut rest).unwrap();
        out.stdout = rest;
        out
    }
}

fn by_tool(records: &[Value], tool: &str) -> Value {
    records
        .iter()
        .find(|r| r["tool"] == tool)
        .unwrap_or_else(|| panic!("no record for {tool} in {records:?}"))
        .clone()
}

#[test]
fn every_outcome_kind_is_recorded_once() {
    let store = Store::new();
    let mut c = Raw::fixture(&store, &[]);
    c.request(0, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    c.request(1, "tools/list", json!({}));
    c.call(2, "ok", json!({"city": "Zanzibar-7781", "days": 3}));
    c.call(
        3,
        "jsonrpc_error",
        json!({"city": "Zanzibar-7781", "n": 12}),
    );
    c.call(4, "tool_error", json!({"n": 77}));
    c.call(5, "sdk_error", json!({"n": 5000}));
    c.call(6, "malformed_null", json!({}));
    c.call(7, "malformed_iserror", json!({}));
    c.call(8, "malformed_list", json!({}));
    c.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "never", "arguments": {}}}));
    c.call(10, "not_listed", json!({}));
    c.finish().assert().success();

    let records = store.records();
    assert_eq!(records.len(), 9, "{records:#?}");
    for r in &records {
        assert_eq!(r["schema"], "mcpeval.call/1");
        assert_eq!(r["origin"], "capture");
        assert_eq!(r["transport"], "stdio");
        assert_eq!(r["server"], "misbehaving");
        assert!(r["identity"]["session"].as_str().unwrap().starts_with("s-"));
    }
    let sessions: std::collections::HashSet<_> = records
        .iter()
        .map(|r| r["identity"]["session"].clone())
        .collect();
    assert_eq!(sessions.len(), 1);

    let ok = by_tool(&records, "ok");
    assert_eq!(ok["outcome"], "ok");
    assert_eq!(ok["identity"]["seq"], 1);
    assert_eq!(ok["advertised"], true);
    assert_eq!(
        ok["args_shape"],
        json!({"city": "string", "days": "integer"})
    );
    assert!(ok.get("error").is_none() && ok.get("unknown").is_none());

    let rpc = by_tool(&records, "jsonrpc_error");
    assert_eq!(rpc["outcome"], "error");
    assert_eq!(rpc["error"]["channel"], "jsonrpc");
    assert_eq!(rpc["error"]["code"], -32602);
    assert_eq!(rpc["error"]["retryable"], false);
    assert!(
        rpc["error"]["template_id"]
            .as_str()
            .unwrap()
            .starts_with("t-")
    );

    let tool = by_tool(&records, "tool_error");
    assert_eq!(
        (
            tool["error"]["channel"].clone(),
            tool["error"]["code"].clone()
        ),
        (json!("tool"), json!(404))
    );
    assert_eq!(tool["error"]["retryable"], true);
    let sdk = by_tool(&records, "sdk_error");
    assert_eq!(sdk["error"]["code"], -32001);
    assert_eq!(sdk["error"]["retryable"], Value::Null);

    for name in ["malformed_null", "malformed_iserror", "malformed_list"] {
        let r = by_tool(&records, name);
        assert_eq!(
            (r["outcome"].clone(), r["unknown"].clone()),
            (json!("unknown"), json!("malformed")),
            "{name}"
        );
        assert!(
            r.get("error").is_none(),
            "{name}: no invented error metadata"
        );
    }
    let never = by_tool(&records, "never");
    assert_eq!(
        (never["outcome"].clone(), never["unknown"].clone()),
        (json!("unknown"), json!("unanswered"))
    );
    assert_eq!(never["duration_ms"], Value::Null);
    assert_eq!(by_tool(&records, "not_listed")["advertised"], false);

    // The malformed value and every raw argument stay out of the store.
    let stored = store.all_bytes();
    for raw in [
        "Zanzibar-7781",
        "yes {",
        "Order",
        "not found",
        "timed out",
        "Invalid city",
    ] {
        assert!(!contains(&stored, raw), "{raw:?} leaked into the store");
    }
}

#[test]
fn same_message_with_other_values_shares_a_template() {
    let store = Store::new();
    let mut c = Raw::fixture(&store, &[]);
    c.call(1, "tool_error", json!({"n": 1, "who": "alice"}));
    c.call(2, "tool_error", json!({"n": 98765, "who": "bob"}));
    c.call(3, "sdk_error", json!({"n": 3}));
    c.finish();
    let records = store.records();
    let ids: Vec<&Value> = records.iter().map(|r| &r["error"]["template_id"]).collect();
    assert_eq!(ids[0], ids[1], "only numbers and quoted values differ");
    assert_ne!(ids[0], ids[2]);
}

#[test]
fn real_sdk_client_sees_the_same_session_through_capture() {
    let store = Store::new();
    let script = store.scratch().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool": "echo", "arguments": {"message": "Zanzibar-7781"}},
            {"tool": "get-sum", "arguments": {"a": 4417, "b": 2}},
            {"tool": "no-such-tool", "arguments": {"q": "Quokka-991"}},
            {"tool": "get-structured-content", "arguments": {"location": "Chicago"}}
        ])
        .to_string(),
    )
    .unwrap();
    let everything = Deps::server_everything();
    let session = |through_capture: bool| {
        let mut cmd = Command::new(Deps::python());
        store.env(&mut cmd);
        cmd.arg(repo().join("tests/clients/session.py"))
            .arg(&script)
            .arg("--");
        if through_capture {
            // Through the front, as a client configuration would run it.
            cmd.arg(crate::support::bin("mcpeval"))
                .args(["capture", "--"]);
        }
        cmd.arg(&everything);
        let out = cmd
            .output_within(crate::support::SESSION_LIMIT)
            .assert()
            .success()
            .get_output()
            .clone();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let direct = session(false);
    assert!(store.journals().is_empty());
    let captured = session(true);
    assert_eq!(direct, captured, "capture changed what the client saw");

    let records = store.records();
    assert_eq!(records.len(), 4, "{records:#?}");
    let server = direct["server"].as_str().unwrap();
    assert!(records.iter().all(|r| r["server"] == server));
    assert_eq!(by_tool(&records, "echo")["outcome"], "ok");
    assert_eq!(
        by_tool(&records, "get-sum")["args_shape"],
        json!({"a": "integer", "b": "integer"})
    );
    let unknown = by_tool(&records, "no-such-tool");
    assert_eq!(unknown["outcome"], "error");
    assert_eq!(unknown["advertised"], false);
    let stored = store.all_bytes();
    for raw in [
        "Zanzibar-7781",
        "4417",
        "Quokka-991",
        "Chicago",
        "not found",
    ] {
        assert!(!contains(&stored, raw), "{raw:?} leaked into the store");
    }
}

#[test]
fn a_client_that_passes_only_its_default_environment_reaches_the_store_named_by_home() {
    // The Python SDK starts a server with HOME, LOGNAME, PATH, SHELL, TERM
    // and USER alone: MCPEVAL_HOME never arrives, so only `--home` in the
    // arguments names the store.
    let store = Store::new();
    let script = store.scratch().join("script.json");
    std::fs::write(
        &script,
        json!([{"tool": "echo", "arguments": {"message": "Zanzibar-7781"}}]).to_string(),
    )
    .unwrap();
    let named = store.scratch().join("named-store");
    let session = |capture_args: &[&std::ffi::OsStr]| {
        let mut cmd = Command::new(Deps::python());
        store.env(&mut cmd);
        let out = cmd
            .arg(repo().join("tests/clients/session.py"))
            .arg(&script)
            .args(["--sdk-env", "--"])
            .arg(crate::support::bin("mcpeval"))
            .arg("capture")
            .args(capture_args)
            .arg(Deps::server_everything())
            .output_within(crate::support::SESSION_LIMIT);
        assert!(out.status.success(), "client: {}", text(&out.stderr));
        let transcript: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(transcript["calls"][0]["is_error"], false, "{transcript}");
    };
    let journals = |home: &std::path::Path| -> Vec<Value> {
        let Ok(dir) = std::fs::read_dir(home.join("journals")) else {
            return Vec::new();
        };
        dir.map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect::<Vec<Value>>()
            })
            .collect()
    };

    session(&["--home".as_ref(), named.as_os_str()]);
    let records = journals(&named);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["tool"], "echo");
    assert_eq!(records[0]["args_shape"], json!({"message": "string"}));
    assert!(!records[0].to_string().contains("Zanzibar-7781"));
    assert!(store.journals().is_empty(), "MCPEVAL_HOME reached capture");

    // Without it, the records go to the default store under HOME.
    session(&[]);
    let default = store.scratch().join(".local/share/mcpeval");
    assert_eq!(journals(&default).len(), 1);
    assert!(store.journals().is_empty(), "MCPEVAL_HOME reached capture");
    assert_eq!(journals(&named).len(), 1);
}

#[test]
fn bytes_pass_unchanged_in_both_directions() {
    // client → tap A → capture → tap B → real server: what A forwarded is
    // what B received, and what B's server wrote is what A received.
    let store = Store::new();
    let logs = store.scratch();
    let tap = fixture("tap.py");
    let script = logs.join("script.json");
    std::fs::write(
        &script,
        json!([{"tool": "echo", "arguments": {"message": "ünïcødé \u{2028} \\n tab\t"}},
               {"tool": "get-tiny-image", "arguments": {}}])
        .to_string(),
    )
    .unwrap();
    let mut cmd = Command::new(Deps::python());
    store.env(&mut cmd);
    let a = |n: &str| logs.join(n).display().to_string();
    cmd.arg(repo().join("tests/clients/session.py"))
        .arg(&script)
        .arg("--");
    cmd.args([
        "python3",
        tap.to_str().unwrap(),
        &a("a.in"),
        &a("a.out"),
        "--",
    ]);
    cmd.arg(crate::support::bin("mcpeval-capture")).arg("--");
    cmd.args([
        "python3",
        tap.to_str().unwrap(),
        &a("b.in"),
        &a("b.out"),
        "--",
    ]);
    cmd.arg(Deps::server_everything());
    cmd.output_within(crate::support::SESSION_LIMIT)
        .assert()
        .success();
    let read = |n: &str| std::fs::read(logs.join(n)).unwrap();
    assert!(read("a.in").len() > 100 && read("b.out").len() > 1000);
    assert_eq!(read("a.in"), read("b.in"), "client → server bytes changed");
    assert_eq!(
        read("b.out"),
        read("a.out"),
        "server → client bytes changed"
    );
    assert_eq!(store.records().len(), 2);
}

/// One end of capture's stdio for [`relay_through`].
#[derive(Clone, Copy)]
enum End {
    File,
    Pipe,
}

/// Runs capture in front of the fixture server with `input` as the
/// client's whole input, each of its stdin and stdout a file or a pipe, and
/// checks that each side received exactly what the other sent.
fn relay_through(store: &Store, input: &[u8], stdin: End, stdout: End) {
    let dir = tempfile::tempdir_in(store.scratch()).unwrap();
    let (sent, got) = (dir.path().join("sent"), dir.path().join("got"));
    let (put, received) = (dir.path().join("put"), dir.path().join("received"));
    std::fs::write(&sent, input).unwrap();
    let server = fixture("misbehaving_server.py");
    let mut cmd = store.cmd("mcpeval-capture");
    cmd.args(["--", "python3", server.to_str().unwrap()])
        .args([
            "--log",
            got.to_str().unwrap(),
            "--out",
            put.to_str().unwrap(),
        ])
        .stderr(Stdio::null());
    let mut feed = None;
    match stdin {
        End::File => cmd.stdin(std::fs::File::open(&sent).unwrap()),
        End::Pipe => {
            let (reader, mut writer) = std::io::pipe().unwrap();
            let input = input.to_vec();
            feed = Some(std::thread::spawn(move || {
                writer.write_all(&input).unwrap()
            }));
            cmd.stdin(reader)
        }
    };
    let mut drain = None;
    match stdout {
        End::File => cmd.stdout(std::fs::File::create(&received).unwrap()),
        End::Pipe => {
            let (mut reader, writer) = std::io::pipe().unwrap();
            let received = received.clone();
            drain = Some(std::thread::spawn(move || {
                let mut all = Vec::new();
                std::io::Read::read_to_end(&mut reader, &mut all).unwrap();
                std::fs::write(received, all).unwrap();
            }));
            cmd.stdout(writer)
        }
    };
    let status = cmd.status().unwrap();
    // The command holds the parent's copies of the pipe ends until dropped.
    drop(cmd);
    for thread in feed.into_iter().chain(drain) {
        thread.join().unwrap();
    }
    assert!(status.success(), "{status:?}");
    let read = |p: &std::path::Path| std::fs::read(p).unwrap();
    assert_eq!(read(&got), input, "client → server bytes changed");
    assert!(read(&put).len() > input.len() / 2);
    assert_eq!(read(&received), read(&put), "server → client bytes changed");
}

#[test]
fn pipes_files_and_both_relay_the_same_bytes_in_order() {
    // Between two pipes the relay splices; a file (or a socket, as some
    // clients hand their servers) is copied. Each mix must relay the same
    // bytes and observe every call in order: a response observed before
    // its request would leave that call unanswered.
    let store = Store::new();
    let calls = 3000;
    let mut input = Vec::new();
    input.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n",
    );
    for id in 1..=calls {
        let tool = if id % 3 == 0 { "tool_error" } else { "ok" };
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool,
                                     "arguments": {"text": "ünïcødé \u{2028} \\n tab\t", "n": id}}});
        writeln!(input, "{call}").unwrap();
    }
    input.extend_from_slice(b"not JSON-RPC, relayed all the same\n");
    let mixes = [
        (End::File, End::File),
        (End::Pipe, End::File),
        (End::File, End::Pipe),
        (End::Pipe, End::Pipe),
    ];
    for (stdin, stdout) in mixes {
        relay_through(&store, &input, stdin, stdout);
    }
    let records = store.records();
    assert_eq!(records.len(), mixes.len() * calls);
    let unanswered = records.iter().filter(|r| !r["unknown"].is_null()).count();
    assert_eq!(unanswered, 0, "every call was observed answered");
}

#[test]
fn stdout_carries_only_the_servers_bytes_and_stderr_passes_through() {
    let store = Store::new();
    let served = store.scratch().join("served");
    let mut c = Raw::fixture(&store, &["--banner", "--out", served.to_str().unwrap()]);
    let mut banner = String::new();
    c.from.read_line(&mut banner).unwrap();
    assert_eq!(banner, "this line is not JSON-RPC\n");
    c.call(1, "ok", json!({}));
    c.call(2, "nope", json!({}));
    let out = c.finish();
    assert!(
        out.stdout.is_empty(),
        "nothing after the server's last line"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("misbehaving fixture server started"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 message(s) were not JSON-RPC"),
        "{stderr}"
    );
    assert_eq!(store.records().len(), 2);
}

#[test]
fn exit_status_and_signals_pass_through() {
    let store = Store::new();
    let c = Raw::fixture(&store, &["--exit-code", "3"]);
    assert_eq!(
        c.finish().status.code(),
        Some(3),
        "stdin EOF closes the server's stdin"
    );

    let mut c = Raw::fixture(&store, &[]);
    c.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "die", "arguments": {"signal": 9}}}));
    let out = c.finish();
    assert_eq!(out.status.signal(), Some(9), "{:?}", out.status);
    let records = store.records();
    assert_eq!(records.last().unwrap()["unknown"], "unanswered");

    // A signal sent to capture reaches the server, which dies by it.
    let mut c = Raw::fixture(&store, &[]);
    c.call(1, "ok", json!({}));
    unsafe { libc::kill(c.child.id() as i32, libc::SIGTERM) };
    // Keep the client's side open: the server must end by the signal, not
    // by the end of its input.
    let status = c.child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}

#[test]
fn modern_discovery_names_the_server_and_flag_wins() {
    let store = Store::new();
    let mut c = Raw::fixture(&store, &["--name", "modern-one"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    c.request(1, "server/discover", json!({"_meta": meta}));
    c.request(
        2,
        "tools/call",
        json!({"name": "ok", "arguments": {}, "_meta": meta}),
    );
    c.finish();
    assert_eq!(store.records()[0]["server"], "modern-one");

    let store = Store::new();
    let server = fixture("misbehaving_server.py");
    let mut c = Raw::start(
        &store,
        &["--server", "weather"],
        &["python3", server.to_str().unwrap()],
    );
    c.request(0, "initialize", json!({}));
    c.call(1, "ok", json!({}));
    c.finish();
    assert_eq!(store.records()[0]["server"], "weather");
}

#[test]
fn a_thousand_round_trips_are_never_held_back() {
    // Each request waits for its response: a response held in a buffer
    // would stall the session, and the watchdog below would fail the test.
    let store = Store::new();
    let mut c = Raw::fixture(&store, &[]);
    let pid = c.child.id();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    for id in 1..=1000u64 {
        let reply = c.call(id, "ok", json!({"i": id}));
        assert_eq!(reply["id"], id);
    }
    let out = c.finish();
    assert!(out.status.success());
    drop(watchdog);
    let records = store.records();
    assert_eq!(records.len(), 1000);
    let mut seqs: Vec<u64> = records
        .iter()
        .map(|r| r["identity"]["seq"].as_u64().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(seqs, (1..=1000).collect::<Vec<_>>());
}

/// Each thread of process `pid`, as its name and its nice value.
#[cfg(target_os = "linux")]
fn threads_nice(pid: u32) -> Vec<(u32, String, i32)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    let mut threads: Vec<_> = tasks
        .filter_map(|task| {
            let tid: u32 = task.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            // Fields from the 3rd on; the nice value is the 19th.
            let nice = rest.split_whitespace().nth(16)?.parse().ok()?;
            Some((tid, name, nice))
        })
        .collect();
    threads.sort();
    threads
}

#[cfg(target_os = "linux")]
#[test]
fn the_threads_that_serve_only_the_journal_run_below_the_relays() {
    // SAFETY: getpriority(2) on this process; it only reads.
    let ours = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let behind = (ours + 10).min(19);
    let store = Store::new();
    let mut c = Raw::fixture(&store, &[]);
    c.call(1, "ok", json!({}));
    let pid = c.child.id();
    let expected = |tid: u32, name: &str| match name {
        "tap" => Some(behind),
        "client relay" | "server relay" => Some(ours),
        // The observer.
        _ if tid == pid => Some(behind),
        _ => None,
    };
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = threads_nice(pid);
        let named = ["tap", "client relay", "server relay"]
            .iter()
            .all(|name| seen.iter().any(|(_, n, _)| n == name));
        let right = seen
            .iter()
            .all(|(tid, name, nice)| expected(*tid, name).is_none_or(|e| e == *nice));
        if named && right {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = c.finish();
    assert!(out.status.success());
    for name in ["tap", "client relay", "server relay"] {
        assert!(
            seen.iter().any(|(_, n, _)| n == name),
            "no {name:?} thread among {seen:?}"
        );
    }
    for (tid, name, nice) in &seen {
        if let Some(e) = expected(*tid, name) {
            assert_eq!(
                *nice, e,
                "thread {tid} {name:?} (relays at {ours}): {seen:?}"
            );
        }
    }
}

#[test]
fn two_captures_at_once_write_two_whole_journals() {
    let store = Store::new();
    let run = |tag: &'static str| {
        let mut c = Raw::fixture(&store, &["--name", tag]);
        for id in 1..=300u64 {
            c.call(id, "tool_error", json!({"n": id}));
        }
        c.finish();
    };
    std::thread::scope(|s| {
        s.spawn(|| run("left"));
        s.spawn(|| run("right"));
    });
    let journals = store.journals();
    assert_eq!(journals.len(), 2);
    for file in journals {
        let body = std::fs::read_to_string(&file).unwrap();
        assert!(body.ends_with('\n'));
        let servers: std::collections::HashSet<String> = body
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["server"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(servers.len(), 1, "one capture per file");
        assert_eq!(body.lines().count(), 300);
    }
}

#[test]
fn a_server_that_cannot_start_is_a_transport_failure() {
    let store = Store::new();
    store
        .bin("mcpeval-capture")
        .args(["--", "/nonexistent/server"])
        .assert()
        .code(5)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "mcpeval-capture: error: cannot start the server \"/nonexistent/server\"",
        ));
}

#[test]
fn the_store_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::new();
    let mut c = Raw::fixture(&store, &[]);
    c.call(1, "ok", json!({}));
    c.finish();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store.home()), 0o700);
    assert_eq!(mode(&store.home().join(".salt")), 0o600);
    assert_eq!(std::fs::read(store.home().join(".salt")).unwrap().len(), 32);
    assert_eq!(mode(&store.journals()[0]), 0o600);
}

/// A server that prints its own arguments as one JSON line and exits.
const PRINT_ARGV: &str = "import json, sys; print(json.dumps(sys.argv[1:]))";

/// What the server started by `mcpeval-capture CAPTURE_ARGS` (or the front's
/// `mcpeval capture`) was given, with the store's scratch as the working
/// directory; asserts success.
fn server_argv(store: &Store, front: bool, capture_args: &[&str]) -> Vec<String> {
    let mut cmd = if front {
        let mut cmd = store.cmd("mcpeval");
        cmd.arg("capture");
        cmd
    } else {
        store.cmd("mcpeval-capture")
    };
    let out = cmd
        .current_dir(store.scratch())
        .args(capture_args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{}: {e}", text(&out.stdout)))
}

#[test]
fn the_server_command_needs_no_double_dash() {
    let store = Store::new();
    let server = fixture("misbehaving_server.py");
    let server = server.to_str().unwrap();
    // As a client that strips the first `--` would start it.
    let mut cmd = store.cmd("mcpeval-capture");
    cmd.args(["--server", "plain", "python3", server]);
    let mut c = Raw::spawn(cmd);
    c.call(1, "ok", json!({"city": "Zanzibar-7781"}));
    c.finish().assert().success();
    // The same through the front.
    let mut cmd = store.cmd("mcpeval");
    cmd.args(["capture", "python3", server, "--name", "fronted"]);
    let mut c = Raw::spawn(cmd);
    c.request(0, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    c.call(1, "ok", json!({}));
    c.finish().assert().success();

    let records = store.records();
    let servers: Vec<&Value> = records.iter().map(|r| &r["server"]).collect();
    assert_eq!(
        servers,
        [&json!("plain"), &json!("fronted")],
        "{records:#?}"
    );
    assert!(records.iter().all(|r| r["outcome"] == "ok"));
    assert!(!contains(&store.all_bytes(), "Zanzibar-7781"));
}

#[test]
fn a_double_dash_before_the_command_is_still_accepted() {
    let store = Store::new();
    for front in [false, true] {
        assert_eq!(
            server_argv(
                &store,
                front,
                &["--", "python3", "-c", PRINT_ARGV, "a", "--", "b"]
            ),
            ["a", "--", "b"]
        );
        assert_eq!(
            server_argv(
                &store,
                front,
                &[
                    "--server", "s", "--", "python3", "-c", PRINT_ARGV, "--server", "t"
                ]
            ),
            ["--server", "t"]
        );
    }
}

#[test]
fn arguments_after_the_command_go_to_the_server_even_when_they_look_like_capture_flags() {
    let store = Store::new();
    let elsewhere = store.scratch().join("elsewhere");
    for front in [false, true] {
        let argv = server_argv(
            &store,
            front,
            &[
                "--server",
                "s",
                "python3",
                "-c",
                PRINT_ARGV,
                "--home",
                "elsewhere",
                "--listen",
                "8931",
                "--",
                "--help",
            ],
        );
        assert_eq!(
            argv,
            ["--home", "elsewhere", "--listen", "8931", "--", "--help"]
        );
    }
    // Capture kept its own store; the server's --home was not capture's.
    assert!(!elsewhere.exists());
    assert!(store.home().join(".salt").exists());
}

#[test]
fn no_server_command_is_a_usage_error() {
    let store = Store::new();
    for args in [
        &[][..],
        &["--"],
        &["--server", "s"],
        &["--server", "s", "--"],
    ] {
        store
            .bin("mcpeval-capture")
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("<CMD|--listen <ADDR>>"));
    }
    assert!(store.journals().is_empty());
}

/// Capture in front of `flood_server.py`, with its peak memory watched.
struct Flood {
    child: Child,
    to: Option<ChildStdin>,
    count: std::path::PathBuf,
    peak: PeakWatch,
}

/// What a flood left: capture's status, stderr and peak, what the client
/// received, and what the server said it received and sent.
struct Flooded {
    status: std::process::ExitStatus,
    said: String,
    peak: u64,
    client_received: u64,
    server_received: u64,
    server_sent: u64,
}

impl Flood {
    fn start(store: &Store) -> Flood {
        Flood::start_with(store, &[])
    }

    /// With the fixture's `extra` arguments.
    fn start_with(store: &Store, extra: &[&str]) -> Flood {
        let count = store.scratch().join("flood-count");
        let server = fixture("flood_server.py");
        let mut cmd = store.cmd("mcpeval-capture");
        cmd.args(["--", "python3", server.to_str().unwrap()])
            .arg(&count)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let peak = PeakWatch::start(child.id());
        let to = child.stdin.take();
        Flood {
            child,
            to,
            count,
            peak,
        }
    }

    /// Writes what `write` writes to capture's stdin on a thread of its
    /// own; meanwhile `read` reads capture's stdout. Then capture's stdin
    /// is closed and it is waited for.
    fn run(
        mut self,
        write: impl FnOnce(&mut std::io::BufWriter<ChildStdin>) + Send + 'static,
        read: impl FnOnce(&mut BufReader<ChildStdout>) -> u64,
    ) -> Flooded {
        let to = self.to.take().unwrap();
        let writer = std::thread::spawn(move || {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, to);
            write(&mut out);
            out.flush().unwrap();
        });
        let mut stderr = self.child.stderr.take().unwrap();
        let said = std::thread::spawn(move || {
            let mut said = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
            said
        });
        let mut from = BufReader::new(self.child.stdout.take().unwrap());
        let mut client_received = read(&mut from);
        client_received += std::io::copy(&mut from, &mut std::io::sink()).unwrap();
        writer.join().unwrap();
        let status = self.child.wait().unwrap();
        let peak = self.peak.finish();
        let said = said.join().unwrap();
        let counts = std::fs::read_to_string(&self.count).unwrap();
        let words: Vec<&str> = counts.split_whitespace().collect();
        Flooded {
            status,
            said,
            peak,
            client_received,
            server_received: words[1].parse().unwrap(),
            server_sent: words[3].parse().unwrap(),
        }
    }
}

/// Reads one line without holding it; its length, newline included.
fn skip_line(from: &mut impl BufRead) -> u64 {
    let mut length = 0;
    loop {
        let buf = from.fill_buf().unwrap();
        assert!(!buf.is_empty(), "the stream ended inside a line");
        match memchr(b'\n', buf) {
            Some(at) => {
                from.consume(at + 1);
                return length + at as u64 + 1;
            }
            None => {
                let n = buf.len();
                from.consume(n);
                length += n as u64;
            }
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

fn assert_bounded(flooded: &Flooded) {
    eprintln!("capture's peak RSS {} MiB", flooded.peak >> 20);
    assert!(flooded.peak > 0, "the peak was read");
    assert!(
        flooded.peak <= CAPTURE_PEAK,
        "capture peaked at {} MiB resident:\n{}",
        flooded.peak >> 20,
        flooded.said
    );
}

#[test]
fn a_gigabyte_request_line_is_relayed_whole_and_never_held() {
    const LINE: usize = 1 << 30;
    // Meanwhile the server sends 400,000 notifications of 88 bytes: the
    // observer, busy with them, falls behind the line, and what it has not
    // read yet must not pile up.
    const NOTES: u64 = 400_000;
    let store = Store::new();
    let notes = NOTES.to_string();
    let flooded = Flood::start_with(&store, &["--chatter", &notes]).run(
        |out| {
            let start = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"blob":""#;
            write_padded(out, start, "\"}}}\n", LINE).unwrap();
        },
        |_| 0,
    );
    assert!(flooded.status.success(), "{}", flooded.said);
    assert_eq!(
        flooded.server_received, LINE as u64,
        "every byte reached the server"
    );
    assert_eq!(flooded.server_sent, NOTES * 88);
    assert_eq!(
        flooded.client_received, flooded.server_sent,
        "every byte reached the client"
    );
    assert_bounded(&flooded);
    // Past 4 MiB the line is measured and dropped; were the observer ever
    // 64 MiB behind, the bytes it missed are counted instead.
    assert!(
        flooded
            .said
            .contains("1 message(s) were longer than the 4 MiB capture observes")
            || flooded
                .said
                .contains("while capture's observer was more than 64 MiB behind"),
        "{}",
        flooded.said
    );
    assert!(store.records().is_empty(), "the call was not observed");
}

#[test]
fn a_hundred_thousand_calls_never_answered_keep_at_most_65536_waiting() {
    // 100,000 calls of 100 bytes: half again as many as are tracked, and
    // under the observer's 64 MiB backlog, so every one is observed however
    // far the observer falls behind.
    const CALLS: u64 = 100_000;
    const TRACKED: u64 = 65_536;
    let store = Store::new();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = sent.clone();
    let flooded = Flood::start(&store).run(
        move |out| {
            let mut total = 0;
            for id in 1..=CALLS {
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"arguments\":{{\"q\":{id}}}}}}}\n"
                );
                out.write_all(line.as_bytes()).unwrap();
                total += line.len() as u64;
            }
            counted.store(total, std::sync::atomic::Ordering::Relaxed);
        },
        |_| 0,
    );
    assert!(flooded.status.success(), "{}", flooded.said);
    assert_eq!(
        flooded.server_received,
        sent.load(std::sync::atomic::Ordering::Relaxed),
        "every byte reached the server"
    );
    assert_bounded(&flooded);

    // Every call observed is recorded once, unanswered, whether it was
    // evicted or still waiting at the end; read a record at a time.
    let mut seen = vec![false; CALLS as usize + 1];
    let mut records = 0u64;
    for journal in store.journals() {
        let file = std::fs::File::open(journal).unwrap();
        for line in BufReader::new(file).lines() {
            let record: Value = serde_json::from_str(&line.unwrap()).unwrap();
            assert_eq!(record["unknown"], "unanswered", "{record}");
            let seq = record["identity"]["seq"].as_u64().unwrap() as usize;
            assert!(!std::mem::replace(&mut seen[seq], true), "seq {seq} twice");
            records += 1;
        }
    }
    let lagged = flooded
        .said
        .contains("observer was more than 64 MiB behind");
    if !lagged {
        assert_eq!(records, CALLS, "{}", flooded.said);
    }
    assert!(
        records > TRACKED,
        "{records} calls observed:\n{}",
        flooded.said
    );
    assert!(
        flooded.said.contains(&format!(
            "mcpeval-capture: warning: {} unanswered call(s) were recorded as unknown before their session ended, to track at most 65536 calls",
            records - TRACKED
        )),
        "{}",
        flooded.said
    );
}

#[test]
fn tools_lists_of_many_megabytes_are_relayed_whole_and_never_held() {
    // A 56 MB list (past the 4 MiB a message is observed up to), a 4 MB
    // one of tiny tools (under it, but hundreds of MB once parsed), and a
    // 3 MB one of schemas (observed, but past the 1 MiB of schemas kept).
    let lists = [
        (56_000_000u64, "schemas"),
        (4_000_000, "dense"),
        (3_000_000, "schemas"),
    ];
    let store = Store::new();
    // The fixture's tool n declares 200 keys, "k", 200n + i in 7 digits,
    // then 100 x (128 bytes at most, or no name rule would keep them).
    let key = |n: usize| format!("k{:07}{}", 200 * n, "x".repeat(100));
    let (first, far) = (key(0), key(40));
    // The calls go once the lists are answered, as a client's would.
    let (answered, lists_seen) = std::sync::mpsc::channel();
    let flooded = Flood::start(&store).run(
        move |out| {
            for (id, (fill, shape)) in lists.iter().enumerate() {
                let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
                                  "params": {"fill": fill, "shape": shape}});
                writeln!(out, "{list}").unwrap();
            }
            out.flush().unwrap();
            lists_seen.recv().unwrap();
            for (id, (tool, key)) in [("t0", first), ("t40", far)].into_iter().enumerate() {
                let call = json!({"jsonrpc": "2.0", "id": 10 + id, "method": "tools/call",
                                  "params": {"name": tool, "arguments": {key: 1}}});
                writeln!(out, "{call}").unwrap();
            }
        },
        |from| {
            let mut got = 0;
            for (fill, _) in lists {
                let line = skip_line(from);
                assert_eq!(line, fill, "each answer arrives whole");
                got += line;
            }
            answered.send(()).unwrap();
            got
        },
    );
    assert!(flooded.status.success(), "{}", flooded.said);
    assert_eq!(flooded.client_received, flooded.server_sent);
    assert_eq!(flooded.server_sent, lists.iter().map(|l| l.0).sum::<u64>());
    assert_bounded(&flooded);
    for warning in [
        "1 message(s) were longer than the 4 MiB capture observes",
        "1 message(s) would have taken more than 64 MiB to parse",
        "tool(s) were kept without their declared schema",
    ] {
        assert!(
            flooded.said.contains(warning),
            "{warning}:\n{}",
            flooded.said
        );
    }
    let records = store.records();
    assert_eq!(records.len(), 2, "{records:#?}");
    // Both tools were listed; the first one's schema was kept, so its key
    // is declared; the far one's was not, so its key is judged as a name.
    assert_eq!(records[0]["advertised"], true);
    assert_eq!(records[0]["args_shape"], json!({key(0): "integer"}));
    assert_eq!(records[1]["advertised"], true);
    assert_eq!(records[1]["args_shape"], json!({"*": "integer"}));
}
