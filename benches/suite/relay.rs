//! The capture relay against a direct connection to the same server.
//!
//! The server is this bench binary itself, re-executed with `--echo-server`:
//! it answers each `tools/call` line at once with a fixed result (every
//! tenth as a tool error), so the time a session takes is the transport's,
//! not the server's. The client is this process. The same session runs
//! directly against the server and through `mcpeval-capture`, alternately,
//! so both see the same machine load.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::live::{self, Live, Protocol};
use crate::{measure, workload};

/// Serves newline-delimited JSON-RPC on stdin/stdout until end of input.
pub fn serve() {
    let input = dup(std::io::stdin().as_fd());
    let output = dup(std::io::stdout().as_fd());
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut out = BufWriter::with_capacity(64 * 1024, output);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(id) = request_id(&line) {
            let reply = if contains(&line, b"\"method\":\"initialize\"") {
                &br#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}"#[..]
            } else if contains(&line, b"\"fail\":true") {
                &br#"{"content":[{"type":"text","text":"no forecast for city 'Atlantis' in 3 days"}],"isError":true}"#[..]
            } else {
                &br#"{"content":[{"type":"text","text":"sunny"}]}"#[..]
            };
            let _ = out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":");
            let _ = out.write_all(id);
            let _ = out.write_all(b",\"result\":");
            let _ = out.write_all(reply);
            let _ = out.write_all(b"}\n");
        }
        // Answer at once when no further request is already waiting, so a
        // sequential client never waits on our buffer; a pipelined one gets
        // its answers in large writes.
        if reader.buffer().is_empty() && out.flush().is_err() {
            break;
        }
    }
    let _ = out.flush();
}

fn dup(fd: std::os::fd::BorrowedFd<'_>) -> File {
    File::from(fd.try_clone_to_owned().expect("dup"))
}

/// The raw `id` value of a request line the bench client wrote
/// (`{"jsonrpc":"2.0","id":N,...`).
fn request_id(line: &[u8]) -> Option<&[u8]> {
    let at = find(line, b"\"id\":")? + 5;
    let len = line[at..].iter().position(|&b| b == b',' || b == b'}')?;
    Some(&line[at..at + len])
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

/// How to start the server: directly, behind capture, or behind a relay
/// to compare capture's with.
pub enum Route<'a> {
    Direct,
    Capture {
        home: &'a Path,
    },
    /// Capture with its observer switched off (the bench knob
    /// `MCPEVAL_CAPTURE_BENCH_UNOBSERVED=1`).
    Unobserved {
        home: &'a Path,
    },
    /// The minimal splice relay (`splice_relay.rs`).
    Splice,
}

/// The command that starts `program`, through capture journaling in `home`
/// when given, else directly.
pub fn server_command(program: impl AsRef<std::ffi::OsStr>, capture: Option<&Path>) -> Command {
    match capture {
        Some(home) => {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpeval-capture"));
            cmd.arg("--home").arg(home).arg("--").arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

fn spawn(route: &Route<'_>) -> Child {
    let me = std::env::current_exe().expect("own path");
    let capture = |home: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpeval-capture"));
        cmd.arg("--home").arg(home);
        cmd
    };
    let mut cmd = match route {
        Route::Direct => Command::new(&me),
        Route::Capture { home } => {
            let mut cmd = capture(home);
            cmd.arg("--").arg(&me);
            cmd
        }
        Route::Unobserved { home } => {
            let mut cmd = capture(home);
            cmd.env("MCPEVAL_CAPTURE_BENCH_UNOBSERVED", "1")
                .arg("--")
                .arg(&me);
            cmd
        }
        Route::Splice => {
            let mut cmd = Command::new(&me);
            cmd.arg("--splice-relay").arg(&me);
            cmd
        }
    };
    cmd.arg("--echo-server")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the echo server")
}

/// Request `id` of a bench session: a `tools/call`, every tenth failing.
pub fn request(out: &mut Vec<u8>, id: u64) {
    out.clear();
    let fail = id.is_multiple_of(10);
    let _ = writeln!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_forecast","arguments":{{"city":"Paris","days":3,"fail":{fail}}}}}}}"#
    );
}

pub const INITIALIZE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n";

/// The echo's calls, every tenth answered as a tool error.
pub static ECHO: Protocol = Protocol {
    name: "the trivial echo",
    request,
    reply: |from, line| {
        live::read_line(from, line, "the echo");
        contains(line, b"\"isError\":true")
    },
    flagged: |id| id.is_multiple_of(10),
};

/// Starts the echo behind `route` and completes its handshake.
pub fn start(route: &Route<'_>) -> Live {
    let mut child = spawn(route);
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
    let mut reply = Vec::with_capacity(256);
    to.write_all(INITIALIZE).expect("initialize");
    live::read_line(&mut from, &mut reply, "the echo");
    Live::new(child, to, from, 1, &ECHO)
}

/// Round-trip times of `calls` sequential tools/call requests.
pub fn sequential(route: &Route<'_>, calls: u64) -> Vec<Duration> {
    let mut child = spawn(route);
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::new(child.stdout.take().expect("stdout"));
    let mut reply = Vec::new();
    to.write_all(INITIALIZE).expect("initialize");
    from.read_until(b'\n', &mut reply)
        .expect("initialize reply");
    let mut line = Vec::with_capacity(256);
    let mut times = Vec::with_capacity(calls as usize);
    for id in 1..=calls {
        request(&mut line, id);
        reply.clear();
        let started = Instant::now();
        // One write per request, as a client's transport does.
        to.write_all(&line).expect("request");
        from.read_until(b'\n', &mut reply).expect("reply");
        times.push(started.elapsed());
        assert!(
            contains(&reply, format!("\"id\":{id},").as_bytes()),
            "reply to {id}: {}",
            String::from_utf8_lossy(&reply)
        );
    }
    drop(to);
    finish(child);
    times.sort();
    times
}

/// Time until all replies to `calls` pipelined requests arrived, and until
/// the server (behind capture: capture, with its journal written) exited.
/// Both count from the first call, after the `initialize` handshake: what
/// is timed is relaying, not starting the server (or capture) up.
pub fn pipelined(route: &Route<'_>, calls: u64) -> (Duration, Duration) {
    let mut child = spawn(route);
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
    let mut reply = Vec::with_capacity(256);
    to.write_all(INITIALIZE).expect("initialize");
    from.read_until(b'\n', &mut reply)
        .expect("initialize reply");
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut to = BufWriter::with_capacity(64 * 1024, to);
        let mut line = Vec::with_capacity(256);
        for id in 1..=calls {
            request(&mut line, id);
            to.write_all(&line).expect("request");
        }
        to.flush().expect("requests");
        // Dropping stdin ends the session once every reply is out.
    });
    for _ in 0..calls {
        reply.clear();
        let n = from.read_until(b'\n', &mut reply).expect("reply");
        assert!(n > 0, "the server closed early");
    }
    let replied = started.elapsed();
    writer.join().expect("writer");
    finish(child);
    (replied, started.elapsed())
}

fn finish(child: Child) {
    let (status, _) = measure::reap(child);
    assert_eq!(
        status, 0,
        "the echo session exited with wait status {status}"
    );
}

/// Records in the journals under `home`.
pub fn journaled(home: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(home.join("journals")) else {
        return 0;
    };
    let files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    workload::count_lines(&files)
}

/// The calls journaled in `home` whose result kept its tool's
/// outputSchema, and those whose result broke it.
pub fn contracts(home: &Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(home.join("journals")) else {
        return (0, 0);
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            (
                text.matches(r#""contract":{"kept":true}"#).count() as u64,
                text.matches(r#""contract":{"kept":false"#).count() as u64,
            )
        })
        .fold((0, 0), |(k, b), (k2, b2)| (k + k2, b + b2))
}
