//! Pipelined calls against a real MCP server, the Python SDK's, directly
//! and through capture.
//!
//! A trivial echo answers faster than any real server, so its pipelined
//! row measures the relay alone. Here the server is the MCP Python SDK's
//! (`sdk_server.py`, from the venv `scripts/test-deps` installs in
//! `.deps/`), timed past its handshake in bursts of pipelined calls
//! ([`live`]).

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::live::{self, Live, Protocol};
use crate::relay;

/// The venv's Python, when the test peers are installed.
pub fn python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv/bin/python");
    python.exists().then_some(python)
}

const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// The SDK server's calls: `get_forecast`, every tenth failing as a tool
/// error.
pub static PROTOCOL: Protocol = Protocol {
    name: "the MCP Python SDK server",
    request: relay::request,
    reply: |from, line| {
        live::read_line(from, line, "the SDK server");
        memchr::memmem::find(line, b"\"isError\":true").is_some()
    },
    flagged: |id| id.is_multiple_of(10),
};

/// Starts the SDK server, run by `python` from `scratch`, through capture
/// (storing in `home`) or directly, and completes its handshake.
pub fn start(python: &Path, scratch: &Path, capture: Option<&Path>) -> Live {
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
    live::read_line(&mut from, &mut reply, "the SDK server");
    assert!(
        reply.starts_with(b"{") && memchr::memmem::find(&reply, b"\"result\"").is_some(),
        "initialize reply: {}",
        String::from_utf8_lossy(&reply)
    );
    to.write_all(INITIALIZED).expect("initialized");
    Live::new(child, to, from, 1, &PROTOCOL)
}
