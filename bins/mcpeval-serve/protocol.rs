//! The JSON-RPC loop and the two protocol eras.
//!
//! Hand-written over `serde_json::Value` rather than on an SDK: the
//! server's surface is six tools answered one at a time, the eras differ
//! only in a few result fields, and the tests drive it with the official
//! Python SDK in both eras, which is what holds the wire format honest.
//! Requests are answered in order; notifications get no answer; a line
//! that is not JSON gets a parse error, never an echo of its bytes. A line
//! over [`MAX_REQUEST`] gets an invalid-request error after it was read
//! through in bounded chunks: its bytes are never held.

use std::io::Write;

use crate::args::Config;
use crate::tools;
use serde_json::{Map, Value, json};
use shared::Result;
use shared::lines::{BoundedLines, Line};

/// The longest request line read (4 MiB). The largest request a client
/// has reason to send is a `generate_manifest` call whose `expect` is as
/// large as a manifest may be (1 MiB), escaped once more inside the
/// JSON-RPC message; 4 MiB holds that with room to spare and is the
/// bound capture observes messages to. Anything longer is refused unread,
/// so what one line costs serve stays a few MiB.
pub const MAX_REQUEST: usize = 4 * 1024 * 1024;

/// The modern revision (server/discover, protocol data in `_meta`).
pub const MODERN: &str = "2026-07-28";
/// Legacy revisions `initialize` negotiates, newest first.
pub const LEGACY: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC and MCP error codes this server answers with.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const UNSUPPORTED_VERSION: i64 = -32022;

/// What the server tells clients about itself.
const INSTRUCTIONS: &str = "mcpeval: recurring MCP tool failures seen in real agent traffic, \
and the loop that proves their fixes. list_findings shows what fails; generate_manifest writes \
a probe case for a finding; verify_finding runs it against the repaired server (three green \
runs in a row close the finding); annotate_call records an observation about a call; \
readiness sums up each server. generate_manifest writes only inside serve's workspace, and \
verify_finding starts only the server commands the user allowed when starting serve.";

/// Serves on stdin/stdout until stdin closes.
pub fn serve(config: &Config) -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = BoundedLines::new(stdin.lock(), MAX_REQUEST).with_last_line();
    let mut out = std::io::stdout().lock();
    loop {
        let line = match input.next_line() {
            Ok(None) => return Ok(()),
            Ok(Some(line)) => line,
            Err(err) => return Err(shared::Error::io("cannot read stdin", err)),
        };
        let reply = match line {
            Line::Complete(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Complete(line) => match serde_json::from_slice::<Value>(line) {
                Ok(message) => handle(config, &message),
                Err(_) => Some(error(
                    Value::Null,
                    PARSE_ERROR,
                    "Parse error: the line is not JSON",
                    None,
                )),
            },
            Line::Oversized(len) => {
                cli::warn(
                    crate::PROGRAM,
                    format_args!(
                        "refused a request line of {len} bytes, over the limit of {MAX_REQUEST} (4 MiB); it was not read"
                    ),
                );
                Some(error(
                    Value::Null,
                    INVALID_REQUEST,
                    &format!(
                        "Invalid Request: the line is {len} bytes, over the limit of {MAX_REQUEST} bytes (4 MiB); it was not read"
                    ),
                    None,
                ))
            }
        };
        if let Some(reply) = reply {
            let mut bytes = serde_json::to_vec(&reply).map_err(std::io::Error::from)?;
            bytes.push(b'\n');
            out.write_all(&bytes)?;
            out.flush()?;
        }
    }
}

fn error(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut err = json!({"code": code, "message": message});
    if let Some(data) = data {
        err["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": err})
}

fn server_info() -> Value {
    json!({"name": crate::PROGRAM, "title": "mcpeval", "version": env!("CARGO_PKG_VERSION")})
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// The answer to one message, `None` for notifications and responses.
fn handle(config: &Config, message: &Value) -> Option<Value> {
    let Some(object) = message.as_object() else {
        return Some(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object",
            None,
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    let id = object.get("id").cloned();
    let (Some(method), Some(id)) = (method, id) else {
        // A notification (no id) or a response to nothing we asked.
        return None;
    };
    let empty = Map::new();
    let params = match object.get("params") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => {
            return Some(error(
                id,
                INVALID_PARAMS,
                "Invalid params: params must be an object",
                None,
            ));
        }
    };
    let requested = params
        .get("_meta")
        .and_then(|m| m.get(VERSION_META))
        .and_then(Value::as_str);
    if let Some(version) = requested
        && version != MODERN
    {
        let supported = supported();
        return Some(error(
            id,
            UNSUPPORTED_VERSION,
            &format!("Unsupported protocol version {version:?}"),
            Some(json!({"supported": supported, "requested": version})),
        ));
    }
    let modern = requested.is_some();
    let result = match method {
        "initialize" => Ok(initialize(params)),
        "server/discover" => Ok(json!({
            "supportedVersions": supported(),
            "capabilities": capabilities(),
            "instructions": INSTRUCTIONS,
            "_meta": {SERVER_INFO_META: server_info()},
            "cacheScope": "public",
            "ttlMs": 0,
        })),
        "ping" => Ok(json!({})),
        "tools/list" => {
            let mut r = json!({"tools": tools::definitions()});
            if modern {
                r["cacheScope"] = json!("public");
                r["ttlMs"] = json!(0);
            }
            Ok(r)
        }
        "tools/call" => call(config, params),
        other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    };
    Some(match result {
        Ok(mut result) => {
            if modern || method == "server/discover" {
                result["resultType"] = json!("complete");
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        }
        Err((code, message)) => error(id, code, &message, None),
    })
}

/// Every version this server speaks, newest first.
fn supported() -> Vec<&'static str> {
    let mut all = vec![MODERN];
    all.extend(LEGACY);
    all
}

/// The legacy handshake: the client's version when we speak it, else our newest.
fn initialize(params: &Map<String, Value>) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .and_then(|v| LEGACY.iter().find(|l| **l == v))
        .copied()
        .unwrap_or(LEGACY[0]);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

fn call(config: &Config, params: &Map<String, Value>) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).ok_or((
        INVALID_PARAMS,
        "Invalid params: tools/call needs a string \"name\"".to_owned(),
    ))?;
    let empty = Map::new();
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err((
                INVALID_PARAMS,
                "Invalid params: \"arguments\" must be an object".to_owned(),
            ));
        }
    };
    tools::call(config, name, arguments).ok_or_else(|| {
        let names: Vec<&str> = tools::names().collect();
        (
            INVALID_PARAMS,
            format!("Unknown tool {name:?}; the tools are: {}", names.join(", ")),
        )
    })
}
