//! Pipelined calls against a real MCP server, the Python SDK's, directly
//! and through capture.
//!
//! A trivial echo answers faster than any real server, so its pipelined
//! row measures the relay alone. Here the server is the MCP Python SDK's
//! (`sdk_server.py`, from the venv `scripts/test-deps` installs in
//! `.deps/`): after the handshake, the client writes every call at once
//! and times from the first call until every reply is in, start-up
//! excluded.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{measure, relay};

/// The venv's Python, when the test peers are installed.
pub fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv/bin/python");
    python.exists().then_some(python)
}

const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// Time from the first of `calls` pipelined calls until every reply is
/// in, against the SDK server run by `python` from `scratch`, through
/// capture (storing in `home`) or directly; through capture, also
/// capture's own CPU by then.
pub fn pipelined(
    python: &Path,
    scratch: &Path,
    capture: Option<&Path>,
    calls: u64,
) -> (Duration, Option<Duration>) {
    let script = scratch.join("sdk_server.py");
    std::fs::write(&script, include_str!("sdk_server.py")).expect("write the SDK server");
    let mut cmd = crate::relay::server_command(python, capture);
    let mut child = cmd
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the SDK server");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
    let mut reply = Vec::with_capacity(1024);
    to.write_all(relay::INITIALIZE).expect("initialize");
    from.read_until(b'\n', &mut reply)
        .expect("initialize reply");
    assert!(
        reply.starts_with(b"{") && reply.windows(8).any(|w| w == b"\"result\""),
        "initialize reply: {}",
        String::from_utf8_lossy(&reply)
    );
    to.write_all(INITIALIZED).expect("initialized");
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut to = BufWriter::with_capacity(64 * 1024, to);
        let mut line = Vec::with_capacity(256);
        for id in 1..=calls {
            relay::request(&mut line, id);
            to.write_all(&line).expect("request");
        }
        to.flush().expect("requests");
        to
    });
    let mut errors = 0;
    for _ in 0..calls {
        reply.clear();
        let n = from.read_until(b'\n', &mut reply).expect("reply");
        assert!(n > 0, "the SDK server closed early");
        errors += usize::from(reply.windows(14).any(|w| w == b"\"isError\":true"));
    }
    let replied = started.elapsed();
    // Capture's own threads, before the session ends.
    let own = capture.and_then(|_| measure::threads_cpu(child.id()));
    assert_eq!(errors as u64, calls / 10, "every tenth call a tool error");
    // Closing stdin ends the session.
    drop(writer.join().expect("writer"));
    let (status, _) = measure::reap(child);
    assert_eq!(
        status, 0,
        "the SDK session exited with wait status {status}"
    );
    (replied, own)
}
