//! Pipelined calls against `@modelcontextprotocol/server-everything`, the
//! reference server on the TypeScript SDK (Node, stdio), directly and
//! through capture.
//!
//! Like the Python SDK's row (`sdk.rs`), but a server most clients have
//! met: past the handshake and a `tools/list` (which must offer `echo`),
//! timed in bursts of pipelined `echo` calls ([`live`]). The server is the one
//! `scripts/test-deps` installs in `.deps/`; without it the row is skipped.
//! The server may interleave notifications with its replies; they are
//! read and not counted.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Stdio};

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::live::{self, Live, Protocol};
use crate::relay;

/// The installed server's entry point, when the test peers are installed.
pub fn server() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".deps/node/node_modules/.bin/mcp-server-everything");
    bin.exists().then_some(bin)
}

const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
const TOOLS_LIST: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";

/// What the client needs of a message from the server.
#[derive(Deserialize)]
struct Message {
    id: Option<u64>,
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
}

/// Reads messages until the reply to request `id`, skipping notifications
/// and earlier replies; returns the reply's text.
fn reply_to(from: &mut BufReader<ChildStdout>, id: u64) -> Vec<u8> {
    let mut line = Vec::with_capacity(64 * 1024);
    loop {
        live::read_line(from, &mut line, "server-everything");
        let message: Message = serde_json::from_slice(&line).expect("JSON-RPC");
        if message.method.is_none() && message.id == Some(id) {
            return line;
        }
    }
}

/// server-everything's calls: `echo`, each answered with a result.
pub static PROTOCOL: Protocol = Protocol {
    name: "server-everything",
    request: |line, id| {
        let _ = writeln!(
            line,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"call {id}"}}}}}}"#
        );
    },
    reply: |from, line| loop {
        live::read_line(from, line, "server-everything");
        let message: Message = serde_json::from_slice(line).expect("JSON-RPC");
        if message.method.is_none() && message.id.is_some() {
            return message.result.is_some();
        }
    },
    flagged: |_| true,
};

/// Starts `server`, through capture (storing in `home`) or directly, and
/// completes its handshake and a `tools/list`, which must offer `echo`.
pub fn start(server: &Path, capture: Option<&Path>) -> Live {
    let mut cmd = crate::relay::server_command(server, capture);
    let mut child = cmd
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
    to.write_all(relay::INITIALIZE).expect("initialize");
    let reply = reply_to(&mut from, 0);
    assert!(
        memchr::memmem::find(&reply, b"\"result\"").is_some(),
        "initialize reply: {}",
        String::from_utf8_lossy(&reply)
    );
    to.write_all(INITIALIZED).expect("initialized");
    to.write_all(TOOLS_LIST).expect("tools/list");
    let tools = reply_to(&mut from, 1);
    assert!(
        memchr::memmem::find(&tools, b"\"name\":\"echo\"").is_some(),
        "server-everything offers no echo tool: {}",
        String::from_utf8_lossy(&tools)
    );
    Live::new(child, to, from, 2, &PROTOCOL)
}
