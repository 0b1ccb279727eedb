//! Pipelined calls against `@modelcontextprotocol/server-everything`, the
//! reference server on the TypeScript SDK (Node, stdio), directly and
//! through capture.
//!
//! Like the Python SDK's row (`sdk.rs`), but a server most clients have
//! met: after the handshake and a `tools/list` (which must offer `echo`),
//! the client writes every `echo` call at once and times from the first
//! until every reply is in, start-up excluded. The server is the one
//! `scripts/test-deps` installs in `.deps/`; without it the row is skipped.
//! The server may interleave notifications with its replies; they are
//! read and not counted.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::{measure, relay};

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
        line.clear();
        let n = from.read_until(b'\n', &mut line).expect("a message");
        assert!(n > 0, "server-everything closed before replying to {id}");
        let message: Message = serde_json::from_slice(&line).expect("JSON-RPC");
        if message.method.is_none() && message.id == Some(id) {
            return line;
        }
    }
}

/// Time from the first of `calls` pipelined `echo` calls until every reply
/// is in, against `server`, through capture (storing in `home`) or
/// directly; through capture, also capture's own CPU by then.
pub fn pipelined(
    server: &Path,
    capture: Option<&Path>,
    calls: u64,
) -> (Duration, Option<Duration>) {
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
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut to = BufWriter::with_capacity(64 * 1024, to);
        for id in 2..calls + 2 {
            writeln!(
                to,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"call {id}"}}}}}}"#
            )
            .expect("request");
        }
        to.flush().expect("requests");
        to
    });
    let (mut replies, mut results) = (0, 0);
    let mut line = Vec::with_capacity(1024);
    while replies < calls {
        line.clear();
        let n = from.read_until(b'\n', &mut line).expect("reply");
        assert!(n > 0, "server-everything closed early");
        let message: Message = serde_json::from_slice(&line).expect("JSON-RPC");
        if message.method.is_none() && message.id.is_some() {
            replies += 1;
            results += u64::from(message.result.is_some());
        }
    }
    let replied = started.elapsed();
    // Capture's own threads, before the session ends.
    let own = capture.and_then(|_| measure::threads_cpu(child.id()));
    assert_eq!(results, calls, "every echo call answered with a result");
    // Closing stdin ends the session.
    drop(writer.join().expect("writer"));
    let (status, _) = measure::reap(child);
    assert_eq!(
        status, 0,
        "the server-everything session exited with wait status {status}"
    );
    (replied, own)
}
