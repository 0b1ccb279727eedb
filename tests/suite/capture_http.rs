//! `mcpeval-capture --listen --upstream` against a real Streamable HTTP
//! server and client, and against a fixture upstream that sends exact bytes:
//! bodies pass unchanged both ways, SSE events are not held back, many
//! clients are served at once, and each session's calls are journaled once.

use crate::support::OutputWithin;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    CAPTURE_PEAK, Deps, Guard, PeakWatch, Store, contains, everything_over_http, fixture,
    free_port, peak_rss, repo, text, write_padded, write_padded_range,
};

/// The fixture upstream (`tests/fixtures/http_upstream.py`).
struct Upstream {
    _guard: Guard,
    port: u16,
    log: std::path::PathBuf,
}

impl Upstream {
    fn start(store: &Store, extra: &[&str]) -> Upstream {
        let log = store.scratch().join("upstream.log");
        let mut cmd = Command::new("python3");
        store.env(&mut cmd);
        cmd.arg(fixture("http_upstream.py"))
            .args(extra)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let guard = Guard(child);
        let port = first
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fixture said {first:?}"));
        Upstream {
            _guard: guard,
            port,
            log,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// What the upstream received and sent, one entry per exchange, once
    /// `n` exchanges are logged (the fixture logs after it answers).
    fn exchanges(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let seen: Vec<Value> = std::fs::read_to_string(&self.log)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            if seen.len() >= n || Instant::now() > deadline {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The fixture logs bytes as latin-1 text: one character per byte.
fn bytes_of(text: &Value) -> Vec<u8> {
    text.as_str().unwrap().chars().map(|c| c as u8).collect()
}

/// A running `mcpeval-capture --listen`.
pub struct Capture {
    guard: Guard,
    pub port: u16,
    stderr: Arc<Mutex<String>>,
    /// Reads stderr until capture closes it.
    reader: std::thread::JoinHandle<()>,
}

impl Capture {
    pub fn start(store: &Store, upstream: &str, extra: &[&str]) -> Capture {
        Capture::start_with(store, upstream, extra, &[])
    }

    fn start_with(
        store: &Store,
        upstream: &str,
        extra: &[&str],
        env: &[(&str, &std::path::Path)],
    ) -> Capture {
        Capture::start_on(store, "127.0.0.1", upstream, extra, env)
    }

    /// Capture listening on port 0 of `ip` (`127.0.0.1`, `[::1]`, …).
    fn start_on(
        store: &Store,
        ip: &str,
        upstream: &str,
        extra: &[&str],
        env: &[(&str, &std::path::Path)],
    ) -> Capture {
        let mut cmd = store.cmd("mcpeval-capture");
        cmd.envs(env.iter().copied());
        let listen = format!("{ip}:0");
        cmd.args(["--listen", &listen, "--upstream", upstream])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let guard = Guard(child);
        let seen = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = seen.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line.clone());
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        // The listening line, after any warning about the address (which
        // the stderr a test reads keeps).
        let first = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("capture printed its listening line");
            if !line.starts_with("mcpeval-capture: warning: ") {
                break line;
            }
        };
        let want = format!(" (upstream {})", origin(upstream));
        let port = first
            .strip_prefix(&format!("mcpeval-capture: listening on http://{ip}:"))
            .and_then(|rest| rest.strip_suffix(&want))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"));
        assert_ne!(port, 0, "the real port is printed");
        Capture {
            guard,
            port,
            stderr: seen,
            reader,
        }
    }

    fn connect(&self) -> Client {
        Client::connect(self.port)
    }

    /// SIGTERM, then the exit status and everything capture said.
    pub fn stop(mut self) -> (ExitStatus, String) {
        unsafe { libc::kill(self.guard.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.guard.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "capture ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        // Everything it said, up to its end of stderr.
        self.reader.join().unwrap();
        let said = self.stderr.lock().unwrap().clone();
        (status, said)
    }
}

/// `scheme://host:port` of a test URL that names its port: how capture
/// shows an upstream.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let authority = rest.split(['/', '?']).next().unwrap();
    let authority = authority.rsplit('@').next().unwrap();
    format!("{scheme}://{authority}")
}

/// A hand-written HTTP/1.1 client over one kept-alive connection, so tests
/// see exactly the bytes and timing that reach a client.
struct Client {
    stream: BufReader<TcpStream>,
    /// The `Host` sent unless a request names another.
    host: String,
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// When each piece of the body arrived, and the piece.
    pieces: Vec<(Instant, Vec<u8>)>,
    ended: Instant,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{}: {e}", text(&self.body)))
    }
}

impl Client {
    fn connect(port: u16) -> Client {
        Client::connect_to("127.0.0.1", port)
    }

    /// A connection to `ip` (no brackets), whose requests name
    /// `127.0.0.1:PORT` as their `Host` unless they say otherwise.
    fn connect_to(ip: &str, port: u16) -> Client {
        let stream = TcpStream::connect((ip, port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        // A request is written as head, then body: no waiting between.
        stream.set_nodelay(true).unwrap();
        Client {
            stream: BufReader::new(stream),
            host: format!("127.0.0.1:{port}"),
        }
    }

    fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        self.send_to(method, "/mcp", headers, body)
    }

    fn send_to(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut head = format!("{method} {target} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.host));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let out = self.stream.get_mut();
        out.write_all(head.as_bytes()).unwrap();
        out.write_all(body).unwrap();
        self.read_reply(method == "HEAD")
    }

    fn post(&mut self, headers: &[(&str, &str)], message: &Value) -> Reply {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.send("POST", &all, message.to_string().as_bytes())
    }

    fn read_reply(&mut self, head_only: bool) -> Reply {
        let mut status_line = String::new();
        self.stream.read_line(&mut status_line).unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).unwrap();
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').unwrap();
            headers.push((k.to_owned(), v.trim().to_owned()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
            pieces: Vec::new(),
            ended: Instant::now(),
        };
        let chunked = reply
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let length: Option<usize> = reply.header("content-length").map(|v| v.parse().unwrap());
        if head_only || status == 204 || status == 304 {
        } else if chunked {
            loop {
                let mut size = String::new();
                self.stream.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                if size == 0 {
                    // Trailers, if any, up to the blank line.
                    let mut rest = String::new();
                    while rest != "\r\n" {
                        rest.clear();
                        self.stream.read_line(&mut rest).unwrap();
                    }
                    break;
                }
                let mut piece = vec![0; size + 2];
                self.stream.read_exact(&mut piece).unwrap();
                piece.truncate(size);
                reply.body.extend_from_slice(&piece);
                reply.pieces.push((Instant::now(), piece));
            }
        } else if let Some(length) = length {
            reply.body = vec![0; length];
            self.stream.read_exact(&mut reply.body).unwrap();
        } else {
            self.stream.read_to_end(&mut reply.body).unwrap();
        }
        reply.ended = Instant::now();
        reply
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "raw", "version": "1"}}})
}

/// Polls the journal until `done` holds (bounded).
fn wait_for_records(store: &Store, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let records = store.finished_records();
        if done(&records) || Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Records grouped by session token, each group in seq order as
/// (seq, tool, outcome).
fn by_session(records: &[Value]) -> Vec<Vec<(u64, String, String)>> {
    let mut groups: BTreeMap<String, Vec<(u64, String, String)>> = BTreeMap::new();
    for r in records {
        assert_eq!(r["transport"], "http");
        groups
            .entry(r["identity"]["session"].as_str().unwrap().to_owned())
            .or_default()
            .push((
                r["identity"]["seq"].as_u64().unwrap(),
                r["tool"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            ));
    }
    let mut out: Vec<_> = groups
        .into_values()
        .map(|mut g| {
            g.sort();
            g
        })
        .collect();
    out.sort();
    out
}

fn group(calls: &[(&str, &str)]) -> Vec<(u64, String, String)> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, outcome))| (i as u64 + 1, tool.to_string(), outcome.to_string()))
        .collect()
}

#[test]
fn real_sdk_client_sees_the_same_session_over_http() {
    let store = Store::new();
    let (_everything, direct_url) = everything_over_http(&store);
    let capture = Capture::start(&store, &direct_url, &[]);

    let script = store.scratch().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool": "echo", "arguments": {"message": "Zanzibar-7781"}},
            {"tool": "get-sum", "arguments": {"a": 4417, "b": 2}},
            {"tool": "trigger-long-running-operation", "arguments": {"duration": 0.6, "steps": 3}},
            {"tool": "no-such-tool", "arguments": {"q": "Quokka-991"}}
        ])
        .to_string(),
    )
    .unwrap();
    let session = |url: &str| {
        let mut cmd = Command::new(Deps::python());
        store.env(&mut cmd);
        let out = cmd
            .arg(repo().join("tests/clients/http_session.py"))
            .arg(&script)
            .arg(url)
            .output_within(crate::support::SESSION_LIMIT);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let direct = session(&direct_url);
    assert!(store.journals().is_empty());
    let captured = session(&format!("http://127.0.0.1:{}/mcp", capture.port));
    assert_eq!(direct, captured, "capture changed what the client saw");
    let progress = &direct["calls"][2]["progress"];
    assert_eq!(
        progress.as_array().map(Vec::len),
        Some(3),
        "progress arrived as SSE events: {direct}"
    );

    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    assert_eq!(
        by_session(&records),
        [group(&[
            ("echo", "ok"),
            ("get-sum", "ok"),
            ("trigger-long-running-operation", "ok"),
            ("no-such-tool", "error"),
        ])],
        "{records:#?}"
    );
    let server = direct["server"].as_str().unwrap();
    assert!(
        records.iter().all(|r| r["server"] == server),
        "{records:#?}"
    );
    assert!(records.iter().all(|r| r["advertised"] != Value::Null));
    let stored = store.all_bytes();
    for raw in ["Zanzibar-7781", "4417", "Quokka-991", "not found"] {
        assert!(!contains(&stored, raw), "{raw:?} leaked into the store");
    }
}

#[test]
fn bodies_headers_and_statuses_pass_unchanged_both_ways() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &["--server", "exact"]);
    let mut c = capture.connect();

    // Odd request bytes: whitespace, unicode, escapes, a trailing newline.
    let odd_request = "\r\n{ \"jsonrpc\" : \"2.0\",\t\"id\": \"o-1\" ,\n \"method\":\"tools/call\",\
        \"params\":{\"name\":\"odd\",\"arguments\":{\"w\":\"ünï \\u00e9 \u{2028} \\\"\"}}}\n";
    let odd = c.send(
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Connection", "keep-alive, X-Hop"),
            ("X-Hop", "gone"),
            ("Proxy-Authorization", "Basic c2VjcmV0"),
            ("Authorization", "Bearer kept"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "odd"),
            ("X-Custom", "Kept As Is"),
        ],
        odd_request.as_bytes(),
    );
    assert_eq!(odd.status, 200);
    assert_eq!(odd.header("x-fixture"), Some("whole"));
    assert_eq!(odd.header("server"), Some("fixture-upstream/1"));
    assert!(odd.header("date").is_some());
    assert_eq!(odd.header("keep-alive"), None, "hop-by-hop header relayed");

    let stream_request = call(2, "stream", json!({}));
    let stream = c.post(&[], &stream_request);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    assert!(stream.pieces.len() > 1, "the stream arrived in pieces");

    let note = c.post(
        &[],
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!((note.status, note.body.len()), (202, 0));
    let boom = c.post(&[], &call(3, "boom", json!({})));
    assert_eq!(boom.status, 500);
    let get = c.send("GET", &[("Accept", "text/event-stream")], b"");
    assert_eq!((get.status, get.header("allow")), (405, Some("POST")));
    let put = c.send("PUT", &[("Content-Type", "text/plain")], b"any \xff body");
    assert_eq!(
        (put.status, put.body.as_slice()),
        (418, &b"teapot: any \xff body"[..])
    );

    let seen = upstream.exchanges(6);
    assert_eq!(seen.len(), 6, "{seen:#?}");
    let replies = [&odd, &stream, &note, &boom, &get, &put];
    let sent_bodies: [Vec<u8>; 6] = [
        odd_request.into(),
        stream_request.to_string().into(),
        note_body().into(),
        call(3, "boom", json!({})).to_string().into(),
        Vec::new(),
        b"any \xff body".to_vec(),
    ];
    // The fixture logs an exchange once it has answered it, so a streamed
    // answer may be logged after the request that followed it: each
    // request is found by its body (the six differ), not by its place.
    let seen: Vec<&Value> = sent_bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            seen.iter()
                .find(|exchange| bytes_of(&exchange["body"]) == *body)
                .unwrap_or_else(|| {
                    panic!("request body {i} changed on the way to the upstream: {seen:#?}")
                })
        })
        .collect();
    for (i, (exchange, reply)) in seen.iter().zip(replies).enumerate() {
        assert_eq!(
            bytes_of(&exchange["sent"]),
            reply.body,
            "response body {i} changed on the way to the client"
        );
    }
    assert!(
        text(&stream.body)
            .contains("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\ndata:  ")
            && stream
                .body
                .starts_with(b"\xef\xbb\xbf: opening comment\r\n"),
        "{}",
        text(&stream.body)
    );
    let headers: HashMap<String, String> = seen[0]["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
        .collect();
    assert_eq!(headers["host"], format!("127.0.0.1:{}", upstream.port));
    assert_eq!(headers["authorization"], "Bearer kept");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "odd");
    assert_eq!(headers["x-custom"], "Kept As Is");
    for gone in ["x-hop", "proxy-authorization", "connection"] {
        assert!(!headers.contains_key(gone), "{gone} reached the upstream");
    }

    drop(c);
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    assert_eq!(
        by_session(&records),
        [group(&[("odd", "ok"), ("stream", "ok"), ("boom", "error")])],
        "messages in JSON bodies, multi-line SSE data and 5xx bodies are observed: {records:#?}"
    );
    assert!(records.iter().all(|r| r["server"] == "exact"));
    assert_eq!(records[0]["args_shape"], json!({"w": "string"}));
    assert!(!said.contains("warning"), "{said}");
}

fn note_body() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

#[test]
fn sse_events_reach_the_client_before_the_stream_ends() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &[]);
    let mut c = capture.connect();
    let reply = c.post(&[], &call(1, "slow", json!({})));
    let first = reply
        .pieces
        .iter()
        .find(|(_, piece)| contains(piece, "notifications/progress"))
        .map(|(at, _)| *at)
        .expect("the first event arrived");
    let early = reply.ended.duration_since(first);
    assert!(
        early >= Duration::from_millis(700),
        "event 1 arrived only {early:?} before the stream ended"
    );
    assert!(contains(&reply.body, "\"result\""));
    drop(c);
    capture.stop();
    let records = store.records();
    assert_eq!(records.len(), 1);
    assert!(records[0]["duration_ms"].as_u64().unwrap() >= 900);
}

#[test]
fn fifty_clients_at_once_each_get_their_own_answers() {
    const CLIENTS: usize = 50;
    const CALLS: usize = 20;
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &[]);
    let port = capture.port;
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                for i in 0..CALLS {
                    let id = format!("{client}-{i}");
                    let word = format!("w{client}x{i}");
                    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": word}}});
                    let reply = c.post(&[], &message).json();
                    assert_eq!(reply["id"], id.as_str());
                    assert_eq!(reply["result"]["content"][0]["text"], word.as_str());
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a client got another's answer");
    }
    let elapsed = started.elapsed();
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    eprintln!("{} calls through capture in {elapsed:?}", CLIENTS * CALLS);

    let journals = store.journals();
    assert_eq!(journals.len(), 1, "one journal per capture process");
    let body = std::fs::read_to_string(&journals[0]).unwrap();
    assert!(body.ends_with('\n'));
    let records = store.records();
    assert_eq!(records.len(), CLIENTS * CALLS);
    let groups = by_session(&records);
    assert_eq!(groups.len(), CLIENTS, "one session per client connection");
    for g in groups {
        assert_eq!(g, group(&[("echo", "ok"); CALLS]));
    }
    let ids: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["identity"]["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.len(),
        CLIENTS * CALLS,
        "every call journaled exactly once"
    );
}

#[test]
fn an_unreachable_upstream_is_a_502_and_nothing_is_journaled() {
    let store = Store::new();
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let capture = Capture::start(&store, &url, &[]);
    let mut c = capture.connect();
    let reply = c.post(&[], &call(7, "echo", json!({"text": "Unseen-4471"})));
    assert_eq!(reply.status, 502);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let body = reply.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -32000);
    let message = body["error"]["message"].as_str().unwrap();
    let prefix = format!("mcpeval-capture: upstream {} unreachable: ", origin(&url));
    assert!(message.starts_with(&prefix), "{message}");
    assert!(
        message.len() > prefix.len(),
        "the cause is named: {message}"
    );
    let batch = c.send("POST", &[("Content-Type", "application/json")], b"[1,2]");
    assert_eq!(
        (batch.status, batch.json()["id"].clone()),
        (502, Value::Null)
    );
    drop(c);
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "mcpeval-capture: warning: upstream {} unreachable",
            origin(&url)
        )),
        "{said}"
    );
    assert!(store.journals().is_empty(), "nothing journaled");
    assert!(!contains(&store.all_bytes(), "Unseen-4471"));
}

#[test]
fn legacy_sessions_follow_mcp_session_id_across_connections() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &["--sessions"]);
    let capture = Capture::start(&store, &upstream.url(), &[]);
    // Every request on a fresh connection: only the session id ties them.
    let post = |sid: Option<&str>, message: Value| {
        let mut c = capture.connect();
        let headers: Vec<(&str, &str)> = sid.map(|s| ("Mcp-Session-Id", s)).into_iter().collect();
        c.post(&headers, &message)
    };
    let a = post(None, initialize(0));
    let b = post(None, initialize(0));
    let (a, b) = (
        a.header("mcp-session-id").unwrap().to_owned(),
        b.header("mcp-session-id").unwrap().to_owned(),
    );
    assert_ne!(a, b);
    post(Some(&a), call(1, "echo", json!({"text": "x"})));
    post(Some(&b), call(1, "echo", json!({"text": "y"})));
    post(Some(&a), call(2, "fail", json!({})));
    post(Some(&b), call(2, "stream", json!({})));
    post(Some(&a), call(3, "silent", json!({})));
    let mut listen = capture.connect();
    let get = listen.send(
        "GET",
        &[("Mcp-Session-Id", &a), ("Accept", "text/event-stream")],
        b"",
    );
    assert!(
        contains(&get.body, "notifications/message"),
        "{}",
        text(&get.body)
    );
    let records = wait_for_records(&store, |r| r.len() == 4);
    assert!(
        records.iter().all(|r| r["tool"] != "silent"),
        "the silent call is still open"
    );

    // DELETE ends session a at once: its open call is recorded unanswered.
    let mut c = capture.connect();
    let deleted = c.send("DELETE", &[("Mcp-Session-Id", &a)], b"");
    assert_eq!(deleted.status, 200);
    let records = wait_for_records(&store, |r| r.len() == 5);
    let unanswered = records.last().unwrap();
    assert_eq!(
        (unanswered["tool"].clone(), unanswered["unknown"].clone()),
        (json!("silent"), json!("unanswered"))
    );
    // A session id the server forgot gets 404: the request was not
    // processed, so it is no call.
    let gone = post(Some(&a), call(4, "echo", json!({})));
    assert_eq!(gone.status, 404);

    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    let mut want = vec![
        group(&[("echo", "ok"), ("stream", "ok")]),
        group(&[("echo", "ok"), ("fail", "error"), ("silent", "unknown")]),
    ];
    want.sort();
    assert_eq!(by_session(&records), want, "{records:#?}");
    assert!(
        records.iter().all(|r| r["server"] == "fixture-upstream"),
        "named by the initialize response: {records:#?}"
    );
}

#[test]
fn modern_sessions_follow_the_session_header_or_the_connection() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let modern_call = |id: u64, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}, "_meta": meta}})
    };
    let headers = |session: &'static str, tool: &'static str| {
        vec![
            ("X-Agent-Session", session),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
            ("MCP-Protocol-Version", "2026-07-28"),
        ]
    };

    // Keyed by --session-header: connections do not matter.
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(
        &store,
        &upstream.url(),
        &["--session-header", "X-Agent-Session"],
    );
    let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                          "params": {"_meta": meta}});
    let mut one = capture.connect();
    one.post(&[("X-Agent-Session", "alpha")], &discover);
    one.post(&headers("alpha", "echo"), &modern_call(1, "echo"));
    one.post(&headers("beta", "fail"), &modern_call(1, "fail"));
    one.post(&headers("alpha", "silent"), &modern_call(2, "silent"));
    drop(one);
    let mut two = capture.connect();
    two.post(&headers("alpha", "echo"), &modern_call(3, "echo"));
    two.post(&headers("beta", "echo"), &modern_call(2, "echo"));
    drop(two);
    wait_for_records(&store, |r| r.len() == 4);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        store.records().len(),
        4,
        "closing connections ends no header-keyed session"
    );
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    let mut want = vec![
        group(&[("echo", "ok"), ("silent", "unknown"), ("echo", "ok")]),
        group(&[("fail", "error"), ("echo", "ok")]),
    ];
    want.sort();
    assert_eq!(by_session(&records), want, "{records:#?}");
    let servers: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["server"].as_str().unwrap())
        .collect();
    let fallback = format!("127.0.0.1:{}", upstream.port);
    assert_eq!(
        servers,
        ["fixture-upstream", fallback.as_str()]
            .into_iter()
            .collect(),
        "alpha is named by server/discover, beta by the upstream's host:port"
    );

    // Without the flag, each connection is a session, ended when it closes.
    let store = Store::new();
    let capture = Capture::start(&store, &upstream.url(), &[]);
    let mut one = capture.connect();
    let mut two = capture.connect();
    one.post(&headers("alpha", "echo"), &modern_call(1, "echo"));
    two.post(&headers("alpha", "echo"), &modern_call(1, "echo"));
    one.post(&headers("alpha", "silent"), &modern_call(2, "silent"));
    two.post(&headers("alpha", "fail"), &modern_call(2, "fail"));
    drop(one);
    let records = wait_for_records(&store, |r| r.len() == 4);
    assert_eq!(
        records.last().unwrap()["unknown"],
        "unanswered",
        "closing a connection ends its session: {records:#?}"
    );
    drop(two);
    let (status, _) = capture.stop();
    assert!(status.success());
    let mut want = vec![
        group(&[("echo", "ok"), ("silent", "unknown")]),
        group(&[("echo", "ok"), ("fail", "error")]),
    ];
    want.sort();
    assert_eq!(by_session(&store.records()), want);
    assert!(
        store
            .records()
            .iter()
            .all(|r| r["server"] == fallback.as_str())
    );
}

#[test]
fn calls_are_numbered_in_the_order_they_were_made() {
    // The first call's JSON answer comes last: seq still follows requests.
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &["--session-header", "X-S"]);
    let port = capture.port;
    let late = std::thread::spawn(move || {
        Client::connect(port).post(&[("X-S", "one")], &call(1, "late", json!({})))
    });
    std::thread::sleep(Duration::from_millis(150));
    let quick = capture
        .connect()
        .post(&[("X-S", "one")], &call(2, "echo", json!({"text": "q"})));
    assert_eq!(quick.status, 200);
    assert_eq!(late.join().unwrap().status, 200);
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    let order: Vec<(&str, u64)> = records
        .iter()
        .map(|r| {
            (
                r["tool"].as_str().unwrap(),
                r["identity"]["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [("echo", 2), ("late", 1)],
        "journaled as answered, numbered as asked"
    );
}

/// Names of the threads of process `pid`.
fn threads(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn only_http_mode_starts_the_async_runtime() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &[]);
    capture.connect().post(&[], &call(1, "echo", json!({})));
    let http = threads(capture.guard.0.id());
    assert!(http.iter().any(|t| t == "capture-http"), "{http:?}");
    capture.stop();

    let mut cmd = store.cmd("mcpeval-capture");
    cmd.arg("--")
        .args([
            "python3",
            fixture("misbehaving_server.py").to_str().unwrap(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap());
    let guard = Guard(child);
    writeln!(to, "{}", call(1, "ok", json!({}))).unwrap();
    let mut line = String::new();
    from.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\": 1"), "{line}");
    let stdio = threads(guard.0.id());
    assert!(
        stdio.len() <= 5 && !stdio.iter().any(|t| t == "capture-http"),
        "the stdio relay runs on a few plain threads: {stdio:?}"
    );
    drop(to);
}

/// Makes a CA (`NAME.pem`) and, when `leaf` is true, a certificate for
/// 127.0.0.1 signed by it (`NAME-leaf.pem`, `NAME-leaf.key`) with openssl.
fn certificates(dir: &std::path::Path, name: &str, leaf: bool) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            text(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let (ca, ca_key) = (format!("{name}.pem"), format!("{name}.key"));
    let subject = format!("/CN=mcpeval test CA {name}");
    let mut args = vec!["req", "-x509", "-days", "2", "-subj", &subject];
    args.extend(ec);
    args.extend(["-keyout", &ca_key, "-out", &ca]);
    args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
    args.extend(["-addext", "keyUsage=critical,keyCertSign"]);
    run(&args);
    if !leaf {
        return;
    }
    let (key, csr, pem) = (
        format!("{name}-leaf.key"),
        format!("{name}-leaf.csr"),
        format!("{name}-leaf.pem"),
    );
    let mut args = vec!["req", "-subj", "/CN=127.0.0.1"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr]);
    run(&args);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        &csr,
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-extfile",
        "leaf.ext",
        "-out",
        &pem,
    ]);
}

#[test]
fn https_upstreams_are_verified_against_the_trusted_roots() {
    let store = Store::new();
    let dir = store.scratch();
    certificates(dir, "ca", true);
    certificates(dir, "other", false);
    let (pem, key) = (dir.join("ca-leaf.pem"), dir.join("ca-leaf.key"));
    let upstream = Upstream::start(
        &store,
        &["--tls", pem.to_str().unwrap(), key.to_str().unwrap()],
    );
    let url = format!("https://127.0.0.1:{}/mcp", upstream.port);

    let trusted = Capture::start_with(&store, &url, &[], &[("SSL_CERT_FILE", &dir.join("ca.pem"))]);
    let reply = trusted
        .connect()
        .post(&[], &call(1, "echo", json!({"text": "over tls"})));
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(reply.json()["result"]["content"][0]["text"], "over tls");
    let (status, said) = trusted.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["outcome"], "ok");
    let host = &upstream.exchanges(1)[0]["headers"];
    assert!(
        host.as_array()
            .unwrap()
            .iter()
            .any(|h| h[0] == "host" && h[1] == format!("127.0.0.1:{}", upstream.port).as_str()),
        "{host}"
    );

    // A certificate from a CA the store of roots does not hold is refused.
    let untrusted = Capture::start_with(
        &store,
        &url,
        &[],
        &[("SSL_CERT_FILE", &dir.join("other.pem"))],
    );
    let reply = untrusted
        .connect()
        .post(&[], &call(2, "echo", json!({"text": "x"})));
    assert_eq!(reply.status, 502);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("certificate"), "{message}");
    untrusted.stop();
    assert_eq!(store.records().len(), 1, "the refused call is not recorded");
}

/// An upstream that reads every request whole, throws its body away and
/// answers 202 with no body, so every call through it stays unanswered;
/// a request for `/huge-json` or `/huge-sse` gets a JSON body or an event
/// of [`HUGE_ANSWER`] bytes instead, answering nothing either. Counts the
/// body bytes it received.
struct Sink {
    port: u16,
    received: Arc<AtomicU64>,
}

impl Sink {
    fn start() -> Sink {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(AtomicU64::new(0));
        let count = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let _ = stream.set_nodelay(true);
                let count = count.clone();
                std::thread::spawn(move || Sink::serve(stream, &count));
            }
        });
        Sink { port, received }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn serve(stream: TcpStream, count: &AtomicU64) -> Option<()> {
        let mut out = stream.try_clone().ok()?;
        let mut input = BufReader::with_capacity(1 << 16, stream);
        let mut line = String::new();
        loop {
            line.clear();
            if input.read_line(&mut line).ok()? == 0 {
                return Some(());
            }
            let target = line.split(' ').nth(1)?.to_owned();
            let (mut length, mut chunked) = (0u64, false);
            loop {
                line.clear();
                input.read_line(&mut line).ok()?;
                let header = line.trim_end().to_ascii_lowercase();
                if header.is_empty() {
                    break;
                }
                if let Some(v) = header.strip_prefix("content-length:") {
                    length = v.trim().parse().ok()?;
                }
                chunked |= header.starts_with("transfer-encoding:") && header.ends_with("chunked");
            }
            let mut sink = std::io::sink();
            if chunked {
                loop {
                    line.clear();
                    input.read_line(&mut line).ok()?;
                    let size = u64::from_str_radix(line.trim(), 16).ok()?;
                    let copied = std::io::copy(&mut (&mut input).take(size), &mut sink).ok()?;
                    count.fetch_add(copied, Ordering::Relaxed);
                    line.clear();
                    input.read_line(&mut line).ok()?;
                    if size == 0 {
                        break;
                    }
                }
            } else {
                let copied = std::io::copy(&mut (&mut input).take(length), &mut sink).ok()?;
                count.fetch_add(copied, Ordering::Relaxed);
            }
            let (media, start, end) = match target.as_str() {
                "/huge-json" => (
                    "application/json",
                    r#"{"jsonrpc":"2.0","id":1,"result":{"x":""#,
                    "\"}}",
                ),
                "/huge-sse" => (
                    "text/event-stream",
                    r#"data: {"jsonrpc":"2.0","id":1,"result":{"x":""#,
                    "\"}}\n\n",
                ),
                _ => {
                    out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                        .ok()?;
                    continue;
                }
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {media}\r\nContent-Length: {HUGE_ANSWER}\r\n\r\n"
            );
            out.write_all(head.as_bytes()).ok()?;
            write_padded(&mut out, start, end, HUGE_ANSWER).ok()?;
        }
    }
}

/// The length of each huge answer [`Sink`] sends.
const HUGE_ANSWER: usize = 256 << 20;

/// Reads an answer's head and throws its body away; the status and the
/// body's length.
fn discard_reply(c: &mut Client) -> (u16, u64) {
    let (status, length, _) = discard_reply_with_session(c);
    (status, length)
}

/// [`discard_reply`], and the `Mcp-Session-Id` the answer issued, if any.
fn discard_reply_with_session(c: &mut Client) -> (u16, u64, Option<String>) {
    let mut line = String::new();
    c.stream.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let (mut length, mut session) = (0, None);
    loop {
        line.clear();
        c.stream.read_line(&mut line).unwrap();
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "mcp-session-id" => session = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let read = std::io::copy(&mut (&mut c.stream).take(length), &mut std::io::sink()).unwrap();
    (status, read, session)
}

/// POSTs one JSON-RPC message of `total` bytes (a tools/call of `tool`
/// with one long string argument), written in pieces: the test never holds
/// it whole.
fn post_huge(c: &mut Client, tool: &str, total: usize) -> Reply {
    let start = format!(
        r#"{{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{{"name":"{tool}","arguments":{{"blob":""#
    );
    let end = r#""}}}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {total}\r\n\r\n",
        c.host
    );
    let out = c.stream.get_mut();
    out.write_all(head.as_bytes()).unwrap();
    write_padded(out, &start, end, total).unwrap();
    c.read_reply(false)
}

#[test]
fn memory_stays_bounded_under_a_gigabyte_body_huge_answers_and_20000_session_ids() {
    const HUGE: usize = 1 << 30;
    const SESSIONS: usize = 20_000;
    const CLIENTS: usize = 4;
    let store = Store::new();
    let sink = Sink::start();
    let capture = Capture::start(&store, &sink.url(), &[]);
    let port = capture.port;
    let started = Instant::now();
    let huge = std::thread::spawn(move || {
        let mut c = Client::connect(port);
        let status = post_huge(&mut c, "huge", HUGE).status;
        (status, started.elapsed())
    });
    // The huge answers first, on a connection kept open: its session is
    // then the least recently active, and the first one evicted.
    let mut answers = Client::connect(port);
    let answered = ["/huge-json", "/huge-sse"].map(|target| {
        let body = call(1, &target[1..], json!({})).to_string();
        let head = format!(
            "POST {target} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            answers.host,
            body.len()
        );
        answers.stream.get_mut().write_all(head.as_bytes()).unwrap();
        discard_reply(&mut answers)
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                for i in 0..SESSIONS / CLIENTS {
                    // Long ids, as a client may choose them.
                    let sid = format!("{client}-{i}-{}", "x".repeat(200));
                    let reply = c.post(&[("Mcp-Session-Id", &sid)], &call(1, "t", json!({})));
                    assert_eq!(reply.status, 202);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let (huge_status, huge_took) = huge.join().unwrap();
    assert_eq!(huge_status, 202);
    let whole = (200, HUGE_ANSWER as u64);
    assert_eq!(answered, [whole, whole], "huge answers arrive whole");
    let elapsed = started.elapsed();
    let peak = peak_rss(capture.guard.0.id()).unwrap();
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    eprintln!(
        "1 GiB in {huge_took:?}, with {SESSIONS} sessions in {elapsed:?}; capture's peak RSS {} MiB",
        peak >> 20
    );
    assert!(
        peak <= 64 << 20,
        "capture peaked at {} MiB resident",
        peak >> 20
    );
    // Every byte reached the upstream: the small bodies and the huge one.
    let small = call(1, "t", json!({})).to_string().len() * SESSIONS
        + call(1, "huge-json", json!({})).to_string().len()
        + call(1, "huge-sse", json!({})).to_string().len();
    assert_eq!(sink.received.load(Ordering::Relaxed), (HUGE + small) as u64);
    let records = store.records();
    assert_eq!(records.len(), SESSIONS + 2, "the huge call is not recorded");
    assert!(
        records.iter().all(|r| r["unknown"] == "unanswered"),
        "huge answers are not observed: {:?}",
        records.first()
    );
    let tools: BTreeMap<&str, usize> = records.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r["tool"].as_str().unwrap()).or_default() += 1;
        m
    });
    assert_eq!(
        tools,
        BTreeMap::from([("huge-json", 1), ("huge-sse", 1), ("t", SESSIONS)])
    );
    assert!(
        said.contains(
            "mcpeval-capture: warning: 3 message(s) were longer than the 4 MiB capture observes"
        ),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "mcpeval-capture: warning: {} session(s) were ended early to keep at most 4096 at once",
            SESSIONS + 1 - 4096
        )),
        "{said}"
    );
}

#[test]
fn the_least_recently_active_session_is_ended_first_beyond_4096() {
    let store = Store::new();
    let sink = Sink::start();
    let capture = Capture::start(&store, &sink.url(), &[]);
    let mut c = capture.connect();
    let mut post = |sid: &str, id: u64, tool: &str| {
        let reply = c.post(&[("Mcp-Session-Id", sid)], &call(id, tool, json!({})));
        assert_eq!(reply.status, 202);
    };
    post("old", 1, "old-call");
    post("keep", 1, "keep-call");
    for i in 0..4094 {
        post(&format!("filler-{i}"), 1, "filler");
    }
    // 4,096 tracked; "keep" is active again, so "old" is now the oldest.
    post("keep", 2, "keep-again");
    assert!(
        wait_for_records(&store, |r| !r.is_empty()).is_empty(),
        "no session ended yet"
    );
    post("new", 1, "newcomer");
    let records = wait_for_records(&store, |r| !r.is_empty());
    std::thread::sleep(Duration::from_millis(200));
    let records_then = store.records();
    assert_eq!(records_then.len(), 1, "{records_then:#?}");
    assert_eq!(
        (
            records[0]["tool"].clone(),
            records[0]["outcome"].clone(),
            records[0]["unknown"].clone()
        ),
        (json!("old-call"), json!("unknown"), json!("unanswered")),
        "the evicted session's open call is recorded as on session end"
    );
    post("another", 1, "late");
    let records = wait_for_records(&store, |r| r.len() == 2);
    assert_eq!(records[1]["tool"], "filler", "the next oldest went next");

    drop(c);
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    assert_eq!(records.len(), 4099, "every call recorded once");
    // "keep" was never ended early: both its calls are one session's.
    let keep: Vec<(&Value, &Value)> = records
        .iter()
        .filter(|r| r["tool"].as_str().unwrap().starts_with("keep"))
        .map(|r| (&r["identity"]["session"], &r["identity"]["seq"]))
        .collect();
    assert_eq!(keep.len(), 2);
    assert_eq!(keep[0].0, keep[1].0, "{keep:?}");
    assert!(said.contains("2 session(s) were ended early"), "{said}");
}

#[test]
fn a_request_for_a_foreign_host_or_from_a_foreign_page_gets_403() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    let capture = Capture::start(&store, &upstream.url(), &[]);
    let port = capture.port;
    let send = |headers: &[(&str, &str)], word: &str| {
        let mut c = capture.connect();
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        let body = call(1, "echo", json!({"text": word})).to_string();
        c.send("POST", &all, body.as_bytes())
    };
    let host = format!("127.0.0.1:{port}");
    let refused = [
        send(&[("Host", "evil.example")], "Rebound-1"),
        send(&[("Host", &format!("evil.example:{port}"))], "Rebound-2"),
        send(&[("Host", "127.0.0.1.evil.example")], "Rebound-3"),
        send(
            &[("Host", &host), ("Origin", "https://evil.example")],
            "Page-1",
        ),
        send(&[("Host", &host), ("Origin", "null")], "Page-2"),
    ];
    for (i, reply) in refused.iter().enumerate() {
        assert_eq!(reply.status, 403, "{i}: {}", text(&reply.body));
        assert_eq!(reply.header("content-type"), Some("application/json"));
        let body = reply.json();
        assert_eq!(
            (&body["jsonrpc"], &body["id"]),
            (&json!("2.0"), &Value::Null)
        );
        assert_eq!(body["error"]["code"], -32000);
        let message = body["error"]["message"].as_str().unwrap();
        let what = if i < 3 { "Host" } else { "Origin" };
        assert!(
            message.starts_with(&format!("mcpeval-capture: the request's {what} is ")),
            "{i}: {message}"
        );
        assert!(!message.contains("evil"), "{message}");
    }
    let accepted = [
        send(&[("Host", &format!("localhost:{port}"))], "fine-1"),
        send(
            &[("Host", "[::1]"), ("Origin", "http://localhost:5173")],
            "fine-2",
        ),
    ];
    for reply in &accepted {
        assert_eq!(reply.status, 200, "{}", text(&reply.body));
    }
    // Only the accepted requests reached the upstream.
    let seen = upstream.exchanges(2);
    std::thread::sleep(Duration::from_millis(100));
    let seen_then = upstream.exchanges(2);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert_eq!(seen_then.len(), 2, "{seen_then:#?}");
    let bodies: String = seen.iter().map(|e| e["body"].as_str().unwrap()).collect();
    assert!(
        bodies.contains("fine-1") && bodies.contains("fine-2"),
        "{bodies}"
    );

    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    let records = store.records();
    assert_eq!(records.len(), 2, "refused requests are not journaled");
    for word in ["Rebound", "Page", "evil"] {
        assert!(!contains(&store.all_bytes(), word));
        assert!(!said.contains(word), "{said}");
    }
    assert_eq!(
        said.matches(
            "mcpeval-capture: warning: refused a request: the request's Host is not a loopback name"
        )
        .count(),
        1,
        "said once: {said}"
    );
    assert!(
        said.contains("mcpeval-capture: warning: 5 request(s) were refused with 403"),
        "{said}"
    );
}

#[test]
fn a_listener_on_ipv4_mapped_or_ipv6_loopback_refuses_a_foreign_host() {
    let store = Store::new();
    let upstream = Upstream::start(&store, &[]);
    // The listening address as --listen takes it, and as a client dials it.
    for (listen, dial) in [("[::ffff:127.0.0.1]", "127.0.0.1"), ("[::1]", "::1")] {
        let capture = Capture::start_on(&store, listen, &upstream.url(), &[], &[]);
        let port = capture.port;
        let send = |host: &str, word: &str| {
            let mut c = Client::connect_to(dial, port);
            let body = call(1, "echo", json!({"text": word})).to_string();
            c.send(
                "POST",
                &[("Content-Type", "application/json"), ("Host", host)],
                body.as_bytes(),
            )
        };
        let refused = send("evil.example", "Rebound");
        assert_eq!(refused.status, 403, "{listen}: {}", text(&refused.body));
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with("mcpeval-capture: the request's Host is not a loopback name"),
            "{listen}: {message}"
        );
        let fine = send(&format!("{listen}:{port}"), "fine");
        assert_eq!(fine.status, 200, "{listen}: {}", text(&fine.body));
        let (status, said) = capture.stop();
        assert_eq!(status.code(), Some(0), "{said}");
        assert!(
            !said.contains("is not a loopback address"),
            "{listen}: {said}"
        );
        assert!(
            said.contains("warning: 1 request(s) were refused with 403"),
            "{listen}: {said}"
        );
    }
    // Only the accepted requests reached the upstream.
    let seen = upstream.exchanges(2);
    let bodies: String = seen.iter().map(|e| e["body"].as_str().unwrap()).collect();
    assert!(!bodies.contains("Rebound"), "{bodies}");
    assert_eq!(seen.len(), 2, "{seen:#?}");
}

#[test]
fn the_upstream_is_shown_by_its_origin_alone() {
    const SECRET: &str = "Sekrit-7719";
    let store = Store::new();
    // Refused URLs are not quoted back.
    for url in [
        format!("http://user:{SECRET}@127.0.0.1:9/mcp"),
        format!("http://{SECRET}@127.0.0.1:9/mcp"),
        format!("ftp://127.0.0.1:9/mcp?api_key={SECRET}"),
        format!("127.0.0.1:9/mcp?api_key={SECRET}"),
    ] {
        let out = store
            .cmd("mcpeval-capture")
            .args(["--listen", "127.0.0.1:0", "--upstream", &url])
            .output()
            .unwrap();
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.starts_with("mcpeval-capture: error: invalid --upstream: "),
            "{said}"
        );
        assert!(!said.contains(SECRET) && !said.contains("user"), "{said}");
    }
    let said = text(
        &store
            .cmd("mcpeval-capture")
            .args(["--listen", "127.0.0.1:0", "--upstream"])
            .arg(format!("http://user:{SECRET}@127.0.0.1:9/mcp"))
            .output()
            .unwrap()
            .stderr,
    );
    assert!(
        said.contains("credentials in the URL are not passed on"),
        "{said}"
    );

    // An unreachable upstream with a key in its query: the listening line,
    // the 502 and its warning name the origin only.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp/{SECRET}?api_key={SECRET}");
    let capture = Capture::start(&store, &url, &[]);
    let reply = capture.connect().post(&[], &call(7, "echo", json!({})));
    assert_eq!(reply.status, 502);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with(&format!(
            "mcpeval-capture: upstream http://127.0.0.1:{port} unreachable: "
        )),
        "{message}"
    );
    assert!(
        !contains(&reply.body, SECRET) && !contains(&reply.body, "/mcp"),
        "{message}"
    );
    let listening = capture.port;
    let (_, said) = capture.stop();
    assert!(
        said.starts_with(&format!(
            "mcpeval-capture: listening on http://127.0.0.1:{listening} (upstream http://127.0.0.1:{port})\n"
        )),
        "{said}"
    );
    assert!(!said.contains(SECRET), "{said}");

    // A reachable one: the key travels to the upstream, and nowhere else.
    let upstream = Upstream::start(&store, &[]);
    let url = format!("http://127.0.0.1:{}/mcp?api_key={SECRET}", upstream.port);
    let capture = Capture::start(&store, &url, &[]);
    let reply = capture.connect().send_to(
        "POST",
        "/",
        &[("Content-Type", "application/json")],
        call(1, "echo", json!({"text": "hi"}))
            .to_string()
            .as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(
        upstream.exchanges(1)[0]["path"],
        format!("/mcp?api_key={SECRET}")
    );
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(!said.contains(SECRET), "{said}");
    let records = store.records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["server"],
        format!("127.0.0.1:{}", upstream.port),
        "named by host:port"
    );
    assert!(
        !contains(&store.all_bytes(), SECRET),
        "the key reached the store"
    );
}

/// The most connections capture serves at once.
const MAX_CONNECTIONS: usize = 256;

#[test]
fn five_hundred_slow_bodies_share_one_observation_budget_and_a_connection_cap() {
    // Each client sends a body capture would observe (under 4 MiB), all at
    // once and slowly: the first part, then, once every client has sent
    // its first part, the rest. Held whole for observation, they would be
    // a gigabyte at once.
    const CLIENTS: usize = 500;
    const BODY: usize = (4 << 20) - 4096;
    const FIRST: usize = 2 << 20;
    let store = Store::new();
    let sink = Sink::start();
    let capture = Capture::start(&store, &sink.url(), &[]);
    let peak = PeakWatch::start(capture.guard.0.id());
    let port = capture.port;
    let barrier = Arc::new(std::sync::Barrier::new(CLIENTS + 1));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(port);
                let mut silence = Silence::new();
                let start = format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"slow","arguments":{{"blob":""#
                );
                let end = r#""}}}"#;
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
                     Accept: application/json, text/event-stream\r\nContent-Length: {BODY}\r\n\r\n",
                    c.host
                );
                // Sends the body's bytes `range`; false once capture has
                // closed the connection.
                let send = |silence: &mut Silence, out: &mut TcpStream, range| {
                    let written =
                        write_padded_range(&mut silence.timed(out), &start, end, BODY, range);
                    !silence.closed(written)
                };
                // A client that fails before the barrier must still reach
                // it, or every other client would wait there for ever: its
                // panic is carried past the barrier and raised after it.
                let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let out = c.stream.get_mut();
                    let written = silence.timed(out).write_all(head.as_bytes());
                    if silence.closed(written) {
                        return Some(None);
                    }
                    // A connection turned away is answered at once, and its
                    // client stops sending; one served is answered only once
                    // its body is whole. The first part goes in steps, with a
                    // look for an answer after each, so a turned-away client
                    // is seldom still sending when capture stops reading it.
                    const STEP: usize = 256 << 10;
                    let mut at = 0;
                    while at < FIRST {
                        let next = (at + STEP).min(FIRST);
                        if !send(&mut silence, out, at..next) {
                            return Some(None);
                        }
                        at = next;
                        out.set_nonblocking(true).unwrap();
                        let answered = matches!(out.peek(&mut [0]), Ok(1));
                        out.set_nonblocking(false).unwrap();
                        if answered {
                            return Some(Some(c.read_reply(false)));
                        }
                    }
                    None
                }));
                barrier.wait();
                match first {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(Some(reply)) => reply,
                    Ok(None) => {
                        if !send(&mut silence, c.stream.get_mut(), FIRST..BODY) {
                            return None;
                        }
                        Some(c.read_reply(false))
                    }
                }
            })
        })
        .collect();
    barrier.wait();
    // A client's failure is told with what capture said.
    let joined: Vec<_> = clients.into_iter().map(|c| c.join()).collect();
    let failed = joined.iter().filter(|j| j.is_err()).count();
    let (status, said) = capture.stop();
    assert_eq!(
        failed, 0,
        "{failed} client(s) failed; capture said:\n{said}"
    );
    let replies: Vec<Option<Reply>> = joined.into_iter().map(Result::unwrap).collect();
    let reset = replies.iter().filter(|r| r.is_none()).count();
    let replies: Vec<Reply> = replies.into_iter().flatten().collect();
    let peak = peak.finish();
    assert_eq!(status.code(), Some(0), "{said}");
    eprintln!("capture's peak RSS {} MiB", peak >> 20);
    assert!(
        peak <= CAPTURE_PEAK,
        "capture peaked at {} MiB resident:\n{said}",
        peak >> 20
    );

    let served = replies.iter().filter(|r| r.status == 202).count();
    let turned: Vec<&Reply> = replies.iter().filter(|r| r.status == 503).collect();
    assert_eq!(served, MAX_CONNECTIONS, "{said}");
    // A turned-away client is read from until it falls silent for
    // seconds: one held up that long on a loaded machine (500 clients
    // share its cores) finds the connection closed when it goes on
    // writing, its answer lost with it (`Silence::closed` holds capture
    // to that). Every served client was answered.
    assert_eq!(
        turned.len() + reset,
        CLIENTS - MAX_CONNECTIONS,
        "{reset} reset"
    );
    let answer = turned.first().expect("a 503 read").json();
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("mcpeval-capture: 256 connections are open"),
        "{answer}"
    );
    // Every byte of every body served reached the upstream.
    assert_eq!(
        sink.received.load(Ordering::Relaxed),
        (MAX_CONNECTIONS * BODY) as u64
    );
    assert!(
        said.contains(&format!(
            "mcpeval-capture: warning: {} connection(s) got 503 because 256 were open",
            CLIENTS - MAX_CONNECTIONS
        )),
        "{said}"
    );
    // The bodies the budget had room for were observed (and their calls,
    // answered 202, recorded unanswered); the rest were relayed unobserved.
    let unobserved: usize = said
        .lines()
        .find_map(|l| {
            l.strip_prefix("mcpeval-capture: warning: ")?
                .strip_suffix(" message(s) were relayed unobserved while connections held the 64 MiB capture observes at once; their calls were not recorded")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no over-budget warning:\n{said}"));
    assert_eq!(
        store.records().len() + unobserved,
        MAX_CONNECTIONS,
        "{said}"
    );
}

/// How long capture reads a turned-away client that has fallen silent,
/// and how long it reads one in all (`TURN_AWAY_IDLE`, `TURN_AWAY_GRACE`).
const TURN_AWAY_IDLE: Duration = Duration::from_secs(5);
const TURN_AWAY_GRACE: Duration = Duration::from_secs(60);

/// A client's silences: when it connected, when its last write returned,
/// and the longest it has gone without writing.
struct Silence {
    connected: Instant,
    last: Instant,
    longest: Duration,
}

impl Silence {
    fn new() -> Silence {
        let now = Instant::now();
        Silence {
            connected: now,
            last: now,
            longest: Duration::ZERO,
        }
    }

    /// `out`, its silences timed at each `write`.
    fn timed<'a>(&'a mut self, out: &'a mut TcpStream) -> Timed<'a> {
        Timed { out, silence: self }
    }

    /// Whether a write failed because capture closed the connection, which
    /// it may do only to a turned-away client silent for
    /// [`TURN_AWAY_IDLE`] or read for [`TURN_AWAY_GRACE`]; any other
    /// failure fails the test.
    fn closed(&self, written: std::io::Result<()>) -> bool {
        match written {
            Ok(()) => false,
            Err(err)
                if matches!(
                    err.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
                ) =>
            {
                assert!(
                    self.longest >= TURN_AWAY_IDLE || self.connected.elapsed() >= TURN_AWAY_GRACE,
                    "capture closed a connection silent for at most {:?}: {err}",
                    self.longest
                );
                true
            }
            Err(err) => panic!("write: {err}"),
        }
    }
}

/// A stream whose writes time a client's [`Silence`].
struct Timed<'a> {
    out: &'a mut TcpStream,
    silence: &'a mut Silence,
}

impl Write for Timed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let silence = &mut *self.silence;
        silence.longest = silence.longest.max(silence.last.elapsed());
        let n = self.out.write(buf)?;
        silence.last = Instant::now();
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// An upstream that answers every `tools/list` with [`SCHEMA_LIST`] bytes
/// of declared schemas and a new `Mcp-Session-Id`, and every `tools/call`
/// with an empty result. Its tool `t{n}` declares 200 keys, each "k", then
/// 200n + i in 7 digits, then 100 x.
struct SchemaUpstream {
    port: u16,
}

/// The length of each `tools/list` answer: under the 4 MiB a message is
/// observed up to, over the 1 MiB of schemas a session keeps.
const SCHEMA_LIST: usize = 1_500_000;

impl SchemaUpstream {
    fn start() -> SchemaUpstream {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let issued = Arc::new(AtomicU64::new(0));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let issued = issued.clone();
                std::thread::spawn(move || SchemaUpstream::serve(stream, &issued));
            }
        });
        SchemaUpstream { port }
    }

    fn serve(stream: TcpStream, issued: &AtomicU64) -> Option<()> {
        let mut out = stream.try_clone().ok()?;
        let mut input = BufReader::new(stream);
        let mut line = String::new();
        loop {
            line.clear();
            if input.read_line(&mut line).ok()? == 0 {
                return Some(());
            }
            let mut length = 0;
            loop {
                line.clear();
                input.read_line(&mut line).ok()?;
                let header = line.trim_end().to_ascii_lowercase();
                if header.is_empty() {
                    break;
                }
                if let Some(v) = header.strip_prefix("content-length:") {
                    length = v.trim().parse().ok()?;
                }
            }
            let mut body = vec![0; length];
            input.read_exact(&mut body).ok()?;
            let request: Value = serde_json::from_slice(&body).ok()?;
            let id = request["id"].to_string();
            if request["method"] == "tools/list" {
                let n = issued.fetch_add(1, Ordering::Relaxed);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Mcp-Session-Id: fresh-{n}\r\nContent-Length: {SCHEMA_LIST}\r\n\r\n"
                );
                out.write_all(head.as_bytes()).ok()?;
                write_schema_list(&mut out, &id, SCHEMA_LIST).ok()?;
            } else {
                let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    answer.len()
                );
                out.write_all(head.as_bytes()).ok()?;
                out.write_all(answer.as_bytes()).ok()?;
            }
        }
    }
}

/// A declared key of [`SchemaUpstream`]'s tool `t{tool}`.
fn schema_key(tool: usize, i: usize) -> String {
    format!("k{:07}{}", 200 * tool + i, "x".repeat(100))
}

/// Writes a `tools/list` answer to request `id` of exactly `total` bytes,
/// a tool at a time, padded by a last tool's description.
fn write_schema_list(out: &mut impl Write, id: &str, total: usize) -> std::io::Result<()> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#);
    let (last, tail) = (r#"{"name":"pad","description":""#, r#""}]}}"#);
    out.write_all(head.as_bytes())?;
    let mut left = total - head.len() - last.len() - tail.len();
    for tool in 0.. {
        let keys: Vec<String> = (0..200)
            .map(|i| format!(r#""{}":{{"type":"string"}}"#, schema_key(tool, i)))
            .collect();
        let piece = format!(
            r#"{{"name":"t{tool}","inputSchema":{{"type":"object","properties":{{{}}}}}}},"#,
            keys.join(",")
        );
        if piece.len() > left {
            break;
        }
        out.write_all(piece.as_bytes())?;
        left -= piece.len();
    }
    write_padded(out, last, tail, last.len() + left + tail.len())
}

#[test]
fn sessions_holding_megabytes_of_schemas_are_bounded_together() {
    // Every session sees a 1.5 MB tools/list under a new session id, then
    // makes one call: kept whole, each list's schemas would be megabytes.
    const SESSIONS: usize = 80;
    let store = Store::new();
    let upstream = SchemaUpstream::start();
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let capture = Capture::start(&store, &url, &[]);
    let peak = PeakWatch::start(capture.guard.0.id());
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    for done in 0..SESSIONS {
        // One session at a time, once the last one's call is journaled: the
        // observer keeps up, so every list is observed and kept.
        let records = wait_for_records(&store, |r| r.len() == done);
        assert_eq!(records.len(), done);
        let mut c = capture.connect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{list}",
            c.host,
            list.len()
        );
        c.stream.get_mut().write_all(head.as_bytes()).unwrap();
        let (status, length, session) = discard_reply_with_session(&mut c);
        assert_eq!((status, length), (200, SCHEMA_LIST as u64), "arrived whole");
        let session = session.expect("a session id was issued");
        let reply = c.post(
            &[("Mcp-Session-Id", &session)],
            &call(2, "t0", json!({schema_key(0, 0): 1})),
        );
        assert_eq!(reply.status, 200);
    }
    let (status, said) = capture.stop();
    let peak = peak.finish();
    assert_eq!(status.code(), Some(0), "{said}");
    eprintln!("capture's peak RSS {} MiB", peak >> 20);
    assert!(
        peak <= CAPTURE_PEAK,
        "capture peaked at {} MiB resident:\n{said}",
        peak >> 20
    );
    // Each call was recorded once, shaped by the schema its session kept.
    let records = store.records();
    assert_eq!(records.len(), SESSIONS, "{said}");
    for r in &records {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["advertised"], true, "{r}");
        assert_eq!(r["args_shape"], json!({schema_key(0, 0): "integer"}), "{r}");
    }
    for warning in [
        "tool(s) were kept without their declared schema",
        "session(s) were ended early to keep at most 4096 at once (64 MiB)",
    ] {
        assert!(said.contains(warning), "{warning}:\n{said}");
    }
}
