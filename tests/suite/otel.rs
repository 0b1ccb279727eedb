//! `mcpeval otel`: the OpenTelemetry spans of real MCP software become the
//! same findings capture finds, through the OTLP/HTTP receiver and through
//! files, in every encoding; what is refused changes nothing.
//!
//! The end-to-end test runs the official Python SDK's client and server
//! under the OpenTelemetry SDK configured the zero-code way
//! (`opentelemetry-instrument` and `OTEL_*` variables), and the same agent
//! sessions through `capture`, and compares the findings of both stores.
//! The other tests use `tests/fixtures/otel/traces.jsonl`: one agent's
//! client spans and one server's spans of the same requests, as a
//! Collector's file exporter writes them.

use crate::support::OutputWithin;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;
use serde_json::{Value, json};

use crate::support::{Deps, Guard, Store, bin, fixture, repo, text};

/// The receiver, listening on a free loopback port.
struct Receiver {
    guard: Guard,
    port: u16,
    lines: mpsc::Receiver<String>,
    reader: std::thread::JoinHandle<String>,
}

impl Receiver {
    fn start(store: &Store, extra: &[&str]) -> Receiver {
        let mut cmd = store.cmd("mcpeval-otel");
        cmd.args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line.clone());
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let first = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the receiver printed its listening line");
        let port = first
            .strip_prefix("mcpeval-otel: listening on http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/v1/traces"))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"));
        Receiver {
            guard: Guard(child),
            port,
            lines,
            reader,
        }
    }

    /// SIGTERM; the exit status, stdout and everything said on stderr.
    fn stop(mut self) -> (ExitStatus, String, String) {
        unsafe { libc::kill(self.guard.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.guard.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the receiver ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        if let Some(mut out) = self.guard.0.stdout.take() {
            out.read_to_string(&mut stdout).unwrap();
        }
        drop(self.lines);
        let said = self.reader.join().unwrap();
        (status, stdout, said)
    }
}

/// `google.rpc.Status`, the body of an OTLP error answer.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// An HTTP answer: status, headers (lower-case names) and body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection, read to the end of the answer.
fn send(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
    {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // A receiver may answer before it has read all of a refused body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {:?}", text(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn post(port: u16, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    send(port, "POST", "/v1/traces", headers, body)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn traces_file() -> PathBuf {
    fixture("otel/traces.jsonl")
}

/// The fixture's lines, each one request.
fn traces() -> Vec<String> {
    std::fs::read_to_string(traces_file())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn protobuf(line: &str) -> Vec<u8> {
    serde_json::from_str::<ExportTraceServiceRequest>(line)
        .unwrap()
        .encode_to_vec()
}

/// A record with what differs from store to store (ids, salted tokens)
/// left out.
fn comparable(record: &Value) -> Value {
    let mut r = record.clone();
    let o = r.as_object_mut().unwrap();
    o.remove("identity");
    if let Some(e) = o.get_mut("error").and_then(Value::as_object_mut) {
        let has_template = e.get("template_id").is_some_and(|t| !t.is_null());
        e.insert("template_id".into(), json!(has_template));
    }
    r
}

/// What the fixture's spans must give, in journal order.
fn fixture_records() -> Vec<Value> {
    let call = |server: &str, tool: &str, at: &str, ms: u64, transport: &str, shape: Value| {
        json!({"schema": "mcpeval.call/1", "origin": "otel", "transport": transport,
            "server": server, "tool": tool, "started_at": at, "duration_ms": ms,
            "advertised": null, "args_shape": shape, "outcome": "ok"})
    };
    let mut lookup = call(
        "weather-otel",
        "lookup",
        "2025-12-02T08:00:02.001Z",
        15,
        "stdio",
        json!({"city": "string", "days": "integer"}),
    );
    lookup["outcome"] = json!("error");
    lookup["error"] =
        json!({"channel": "tool", "code": null, "template_id": false, "retryable": null});
    let mut strict = call(
        "weather-otel",
        "strict",
        "2025-12-02T08:00:03.001Z",
        1,
        "stdio",
        json!("object"),
    );
    strict["outcome"] = json!("error");
    strict["error"] =
        json!({"channel": "jsonrpc", "code": -32602, "template_id": true, "retryable": null});
    vec![
        call(
            "weather-otel",
            "forecast",
            "2025-12-02T08:00:01.001Z",
            2,
            "stdio",
            json!({"city": "string"}),
        ),
        lookup,
        strict,
        call(
            "search.internal:8080",
            "search",
            "2025-12-02T08:00:04.000Z",
            40,
            "http",
            json!({"limit": "integer", "query": "string"}),
        ),
    ]
}

fn check_fixture_records(store: &Store, how: &str) {
    let records = store.records();
    let got: Vec<Value> = records.iter().map(comparable).collect();
    assert_eq!(got, fixture_records(), "{how}");
    // One session for the trace, one for the client that named its own;
    // turns numbered from 1 in each, in the order the calls started.
    let turns: Vec<(String, u64)> = records
        .iter()
        .map(|r| {
            (
                r["identity"]["session"].as_str().unwrap().to_owned(),
                r["identity"]["seq"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        turns.iter().map(|t| t.1).collect::<Vec<_>>(),
        [1, 2, 3, 1],
        "{how}"
    );
    assert!(
        turns[0].0 == turns[2].0 && turns[0].0 != turns[3].0,
        "{how}"
    );
}

#[test]
fn import_reads_collector_json_lines_plain_or_gzip() {
    let store = Store::new();
    let out = store
        .cmd("mcpeval-otel")
        .args(["--import"])
        .arg(traces_file())
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            &summary["requests"],
            &summary["spans"],
            &summary["tool_calls"],
            &summary["journaled"],
            &summary["paired"],
            &summary["no_tool"]
        ),
        (
            &json!(2),
            &json!(10),
            &json!(8),
            &json!(4),
            &json!(3),
            &json!(1)
        )
    );
    assert!(
        text(&out.stderr).contains("1 tools/call span(s) named no tool"),
        "{}",
        text(&out.stderr)
    );
    check_fixture_records(&store, "import of a file");

    // The same file gzip-compressed, on standard input.
    let gz = Store::new();
    let out = gz
        .bin("mcpeval-otel")
        .args(["--import", "-"])
        .write_stdin(gzip(&std::fs::read(traces_file()).unwrap()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_fixture_records(&gz, "import of gzip on stdin");
    // The copy of standard input is gone.
    let left: Vec<_> = std::fs::read_dir(gz.home())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".otel-import"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_bad_line_refuses_the_whole_import_naming_it() {
    let store = Store::new();
    let lines = traces();
    let cases: [(&str, String, &str); 3] = [
        (
            "not json",
            format!("{}\n{{\"resourceSpans\": [\n", lines[0]),
            ":2: the body is not an OTLP ExportTraceServiceRequest in JSON",
        ),
        (
            "a value of the wrong type",
            format!(
                "{}\n{{\"resourceSpans\": \"sk-proj-Qm7Zt4Wx9Kv2Rb8Ln5Hc3Jd6Pf1\"}}\n",
                lines[0]
            ),
            ":2: the body is not an OTLP ExportTraceServiceRequest in JSON: a field of the wrong type at line 1",
        ),
        (
            "a line over the limit",
            format!("{}\n{}\n", lines[0], "x".repeat(9 << 20)),
            ":2: the line is 9437184 bytes, over the 8 MiB one request may hold",
        ),
    ];
    for (what, content, want) in cases {
        let file = store.scratch().join("bad.jsonl");
        std::fs::write(&file, content).unwrap();
        let out = store
            .cmd("mcpeval-otel")
            .arg("--import")
            .arg(&file)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{what}: {err}");
        assert!(
            err.contains(&format!("{}{want}", file.display())),
            "{what}: {err}"
        );
        assert!(err.contains("nothing was journaled"), "{what}: {err}");
        assert!(
            !err.contains("Qm7Zt4Wx9Kv2Rb8Ln5Hc3Jd6Pf1"),
            "{what}: {err}"
        );
        // The good first line was not journaled either.
        assert!(store.journals().is_empty(), "{what}");
    }
}

#[test]
fn the_receiver_takes_protobuf_json_and_gzip_alike() {
    let lines = traces();
    let encodings: [(&str, &str, bool); 4] = [
        ("json", "application/json", false),
        ("protobuf", "application/x-protobuf", false),
        ("gzip json", "application/json", true),
        ("gzip protobuf", "application/x-protobuf", true),
    ];
    for (what, content_type, compressed) in encodings {
        let store = Store::new();
        let receiver = Receiver::start(&store, &["--format", "json"]);
        for line in &lines {
            let mut body = match content_type {
                "application/json" => line.clone().into_bytes(),
                _ => protobuf(line),
            };
            let mut headers = vec![("Content-Type", content_type)];
            if compressed {
                body = gzip(&body);
                headers.push(("Content-Encoding", "gzip"));
            }
            let answer = post(receiver.port, &headers, &body);
            assert_eq!(answer.status, 200, "{what}: {}", text(&answer.body));
            assert_eq!(answer.header("content-type"), Some(content_type), "{what}");
            let response: ExportTraceServiceResponse = match content_type {
                "application/json" => serde_json::from_slice(&answer.body).unwrap(),
                _ => ExportTraceServiceResponse::decode(&answer.body[..]).unwrap(),
            };
            // The server spans' request has one tools/call span without a
            // tool: a partial success that names it.
            let rejected = response
                .partial_success
                .as_ref()
                .map_or(0, |p| p.rejected_spans);
            let want = if line.contains("weather-otel") { 1 } else { 0 };
            assert_eq!(rejected, want, "{what}: {response:?}");
            if want == 1 {
                let message = &response.partial_success.as_ref().unwrap().error_message;
                assert!(message.contains("no tool name"), "{message}");
            }
        }
        let (status, stdout, said) = receiver.stop();
        assert!(status.success(), "{what}: {said}");
        let summary: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(summary["journaled"], 4, "{what}: {stdout}");
        check_fixture_records(&store, what);
    }
}

#[test]
fn a_retried_export_is_journaled_once() {
    let store = Store::new();
    let receiver = Receiver::start(&store, &[]);
    // Server spans first, then the client's, then everything again.
    for line in traces().iter().rev().chain(traces().iter()) {
        let answer = post(
            receiver.port,
            &[("Content-Type", "application/json")],
            line.as_bytes(),
        );
        assert_eq!(answer.status, 200);
    }
    let (status, _, said) = receiver.stop();
    assert!(status.success(), "{said}");
    let tools: Vec<String> = store
        .records()
        .iter()
        .map(|r| r["tool"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tools, ["forecast", "lookup", "strict", "search"]);
}

/// A request the receiver must refuse: what it is, the status it gets,
/// its headers, body, method and path.
type Refusal<'a> = (
    &'a str,
    u16,
    Vec<(&'a str, &'a str)>,
    Vec<u8>,
    &'a str,
    &'a str,
);

#[test]
fn refused_requests_get_the_otlp_error_answer_and_change_nothing() {
    let store = Store::new();
    let receiver = Receiver::start(&store, &[]);
    let port = receiver.port;
    let json_type = ("Content-Type", "application/json");
    let proto_type = ("Content-Type", "application/x-protobuf");
    let good = traces()[1].clone().into_bytes();
    // Every protobuf message of a request, two bytes each: an empty
    // attribute, millions of times, would take gigabytes once decoded.
    let mut flood = Vec::new();
    let span_of_empty_attributes = {
        let attrs: Vec<u8> = [0x4a, 0x00].repeat(300_000);
        let mut span = vec![0x12];
        prost::encoding::encode_varint(attrs.len() as u64, &mut span);
        span.extend(attrs);
        span
    };
    let scope: Vec<u8> = span_of_empty_attributes;
    let mut resource = vec![0x12];
    prost::encoding::encode_varint(scope.len() as u64, &mut resource);
    resource.extend(scope);
    flood.push(0x0a);
    prost::encoding::encode_varint(resource.len() as u64, &mut flood);
    flood.extend(resource);
    let bomb = gzip(&vec![b' '; 9 << 20]);
    // Declared, not sent: the length alone is refused.
    let big_length = (5 << 20).to_string();
    let cases: Vec<Refusal> = vec![
        (
            "malformed protobuf",
            400,
            vec![proto_type],
            b"\xff\xff\xff\xff".to_vec(),
            "POST",
            "/v1/traces",
        ),
        (
            "malformed json",
            400,
            vec![json_type],
            b"{\"resourceSpans\":".to_vec(),
            "POST",
            "/v1/traces",
        ),
        (
            "json of the wrong shape",
            400,
            vec![json_type],
            b"{\"resourceSpans\":{\"a\":1}}".to_vec(),
            "POST",
            "/v1/traces",
        ),
        (
            "a bad gzip body",
            400,
            vec![json_type, ("Content-Encoding", "gzip")],
            good.clone(),
            "POST",
            "/v1/traces",
        ),
        (
            "too many attributes",
            413,
            vec![proto_type],
            flood,
            "POST",
            "/v1/traces",
        ),
        (
            "a gzip bomb",
            413,
            vec![json_type, ("Content-Encoding", "gzip")],
            bomb,
            "POST",
            "/v1/traces",
        ),
        (
            "an oversized body",
            413,
            vec![proto_type, ("Content-Length", &big_length)],
            Vec::new(),
            "POST",
            "/v1/traces",
        ),
        (
            "another content type",
            415,
            vec![("Content-Type", "text/plain")],
            good.clone(),
            "POST",
            "/v1/traces",
        ),
        (
            "another encoding",
            415,
            vec![json_type, ("Content-Encoding", "br")],
            good.clone(),
            "POST",
            "/v1/traces",
        ),
        (
            "metrics",
            404,
            vec![json_type],
            good.clone(),
            "POST",
            "/v1/metrics",
        ),
        (
            "a GET",
            405,
            vec![json_type],
            Vec::new(),
            "GET",
            "/v1/traces",
        ),
        (
            "a rebound Host",
            403,
            vec![json_type, ("Host", "evil.example:4318")],
            good.clone(),
            "POST",
            "/v1/traces",
        ),
        (
            "a foreign page",
            403,
            vec![json_type, ("Origin", "https://evil.example")],
            good.clone(),
            "POST",
            "/v1/traces",
        ),
    ];
    for (what, want, headers, body, method, path) in &cases {
        let answer = send(port, method, path, headers, body);
        assert_eq!(answer.status, *want, "{what}: {}", text(&answer.body));
        // No Retry-After: nothing refused is worth sending again.
        assert_eq!(answer.header("retry-after"), None, "{what}");
        // The body is a google.rpc.Status in the request's encoding.
        let message = if answer.header("content-type") == Some("application/json") {
            let status: Value = serde_json::from_slice(&answer.body).unwrap();
            status["message"].as_str().unwrap().to_owned()
        } else {
            RpcStatus::decode(&answer.body[..]).unwrap().message
        };
        assert!(message.starts_with("mcpeval-otel: "), "{what}: {message}");
        assert!(store.journals().is_empty(), "{what} changed the store");
    }
    // The receiver still works, and journals only what it was sent well.
    let answer = post(port, &[json_type], &good);
    assert_eq!(answer.status, 200);
    let (status, _, said) = receiver.stop();
    assert!(status.success(), "{said}");
    assert!(
        said.contains(&format!("{} request(s) were refused whole", cases.len())),
        "{said}"
    );
    assert!(
        said.contains("refused a request with 403: the request's Host is not a loopback name"),
        "{said}"
    );
    assert_eq!(store.records().len(), 3);
}

/// The agent sessions both stores see: one ok call, a tool error, an ok
/// call to the failing tool, a JSON-RPC error.
const SCRIPT: &str = r#"[
  {"tool": "forecast", "arguments": {"city": "Oslo"}},
  {"tool": "lookup", "arguments": {"city": "Atlantis", "days": 3}},
  {"tool": "lookup", "arguments": {"city": "Paris", "days": 2}},
  {"tool": "strict", "arguments": {"code": -32602}}
]"#;
const SESSIONS: usize = 3;

fn venv(name: &str) -> PathBuf {
    Deps::venv_bin(name)
}

/// Runs the agent's sessions; `server` is the server command.
fn agent(store: &Store, script: &Path, traced_to: Option<u16>, server: &[&Path]) {
    let mut cmd = Command::new(if traced_to.is_some() {
        venv("opentelemetry-instrument")
    } else {
        Deps::python()
    });
    store.env(&mut cmd);
    if traced_to.is_some() {
        cmd.arg(Deps::venv_python());
    }
    cmd.arg(repo().join("tests/clients/otel_agent.py"))
        .arg(script)
        .arg(SESSIONS.to_string())
        .arg("--")
        .args(server);
    if let Some(port) = traced_to {
        // The zero-code way: the distro configured by variables alone.
        cmd.envs([
            ("OTEL_SERVICE_NAME", "agent"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_LOGS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ]);
        cmd.env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        );
    }
    let out = cmd.output_within(crate::support::SESSION_LIMIT);
    assert!(
        out.status.success(),
        "the agent failed: {}",
        text(&out.stderr)
    );
}

/// index, promote (every failure counts) and the findings as JSON.
fn findings(store: &Store) -> Vec<Value> {
    for (name, args) in [
        ("mcpeval-index", &[][..]),
        ("mcpeval-promote", &["--threshold", "0"][..]),
    ] {
        let out = store.cmd(name).args(args).output().unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
    let out = store
        .cmd("mcpeval-findings")
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    listed["findings"].as_array().unwrap().clone()
}

/// A finding by what both stores must agree on.
fn facts(finding: &Value) -> Value {
    let mut facts = json!({});
    for key in [
        "kind",
        "server",
        "tool",
        "defect_class",
        "severity",
        "score",
        "failures",
        "calls",
        "sessions",
        "median_window_turns",
        "blast_radius",
        "err_code",
        "err_codes",
    ] {
        assert!(
            !finding[key].is_null() || key == "err_code",
            "{key}: {finding}"
        );
        facts[key] = finding[key].clone();
    }
    // The score decays with the age of the evidence, and the two runs are
    // seconds apart.
    let score = finding["score"].as_f64().unwrap();
    facts["score"] = json!(format!("{score:.4}"));
    facts
}

#[test]
fn traced_sessions_give_the_findings_capture_gives() {
    let script = Store::new();
    let script_file = script.scratch().join("script.json");
    std::fs::write(&script_file, SCRIPT).unwrap();
    let python = Deps::venv_python();
    let server = fixture("otel_server.py");

    // Traced: the client and every server it starts export their spans.
    let traced = Store::new();
    let receiver = Receiver::start(&traced, &["--format", "json"]);
    let env = PathBuf::from("/usr/bin/env");
    let instrument = venv("opentelemetry-instrument");
    agent(
        &traced,
        &script_file,
        Some(receiver.port),
        &[
            &env,
            Path::new("OTEL_SERVICE_NAME=weather-otel"),
            &instrument,
            &python,
            &server,
        ],
    );
    let (status, stdout, said) = receiver.stop();
    assert!(status.success(), "{said}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let calls = SESSIONS * 4;
    // Every request reported by both ends, journaled once.
    assert_eq!(
        (&summary["journaled"], &summary["paired"]),
        (&json!(calls), &json!(calls)),
        "{stdout}"
    );

    // Captured: the same sessions, capture in front of the server, in a
    // store with the same salt (as a team's machines share one).
    let captured = Store::new();
    let salt = traced.scratch().join("team.salt");
    for (store, flag) in [(&traced, "--export"), (&captured, "--import")] {
        let out = store
            .cmd("mcpeval-salt")
            .arg(flag)
            .arg(&salt)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let capture = bin("mcpeval-capture");
    agent(&captured, &script_file, None, &[&capture, &python, &server]);

    let otel_records = traced.records();
    assert!(otel_records.iter().all(|r| r["origin"] == "otel"));
    let sessions: std::collections::BTreeSet<_> = otel_records
        .iter()
        .map(|r| r["identity"]["session"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sessions.len(), SESSIONS, "one session per agent session");
    // Turn by turn, each session is the captured one.
    let turns = |records: &[Value]| -> Vec<(u64, String, String)> {
        let mut turns: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r["identity"]["seq"].as_u64().unwrap(),
                    r["tool"].as_str().unwrap().to_owned(),
                    r["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        turns.sort();
        turns
    };
    assert_eq!(turns(&otel_records), turns(&captured.records()));

    let traced_findings = findings(&traced);
    let captured_findings = findings(&captured);
    let sorted = |findings: &[Value]| {
        let mut facts: Vec<Value> = findings.iter().map(facts).collect();
        facts.sort_by_key(|f| f.to_string());
        facts
    };
    assert_eq!(sorted(&traced_findings), sorted(&captured_findings));
    // The tool error and the JSON-RPC error, in every session.
    let mut tools: Vec<_> = traced_findings
        .iter()
        .map(|f| {
            (
                f["tool"].clone(),
                f["failures"].clone(),
                f["sessions"].clone(),
            )
        })
        .collect();
    tools.sort_by_key(|t| t.0.to_string());
    assert_eq!(
        tools,
        [
            (json!("lookup"), json!(SESSIONS), json!(SESSIONS)),
            (json!("strict"), json!(SESSIONS), json!(SESSIONS)),
        ]
    );
    // With one salt, the JSON-RPC error's message made capture's template,
    // so its finding is the same finding; the server span marks a tool
    // error with no message, so that template is unknown to the spans.
    let id = |findings: &[Value], tool: &str| {
        findings
            .iter()
            .find(|f| f["tool"] == tool)
            .map(|f| f["id"].clone())
            .unwrap()
    };
    assert_eq!(
        id(&traced_findings, "strict"),
        id(&captured_findings, "strict")
    );
    assert_ne!(
        id(&traced_findings, "lookup"),
        id(&captured_findings, "lookup")
    );
    let templates = |store: &Store, tool: &str| {
        store
            .records()
            .iter()
            .filter(|r| r["tool"] == tool && r["outcome"] == "error")
            .map(|r| r["error"]["template_id"].as_str().map(str::to_owned))
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(templates(&traced, "strict"), templates(&captured, "strict"));
    assert_eq!(templates(&traced, "strict").len(), 1);
    assert_eq!(templates(&traced, "lookup"), [None].into());
    assert!(!templates(&captured, "lookup").contains(&None));
}

/// The largest request the bounds let through: 3,500 tools/call spans of
/// 16 attributes each, just under the 262,144 messages one may decode into.
fn heaviest_request(trace: u8) -> Vec<u8> {
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    let kv = |key: &str, value: &str| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    };
    let spans = (0..3_500u32)
        .map(|i| {
            let mut attributes = vec![
                kv("mcp.method.name", "tools/call"),
                kv("gen_ai.tool.name", &format!("t{}", i % 50)),
                kv("jsonrpc.request.id", &i.to_string()),
            ];
            attributes.extend((0..13).map(|j| kv(&format!("k{j}"), "v")));
            Span {
                trace_id: vec![trace; 16],
                span_id: (u64::from(i) + 1).to_be_bytes().to_vec(),
                name: "tools/call".into(),
                kind: 2,
                start_time_unix_nano: 1_764_662_400_000_000_000 + u64::from(i),
                end_time_unix_nano: 1_764_662_400_000_000_100 + u64::from(i),
                attributes,
                ..Default::default()
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

#[test]
fn the_receiver_stays_under_256_mib_whatever_it_is_sent() {
    let store = Store::new();
    let receiver = Receiver::start(&store, &["--format", "json"]);
    let peak = crate::support::PeakWatch::start(receiver.guard.0.id());
    let port = receiver.port;
    let heavy: Vec<Vec<u8>> = (1..=8).map(heaviest_request).collect();
    assert!(heavy[0].len() < 4 << 20, "{}", heavy[0].len());
    let bomb = gzip(&vec![b'{'; 8 << 20]);
    let flood: Vec<u8> = {
        // As many empty attributes as 4 MiB holds, in one span.
        let attrs = [0x4a, 0x00].repeat((4 << 20) / 2 - 64);
        let mut span = vec![0x12];
        prost::encoding::encode_varint(attrs.len() as u64, &mut span);
        span.extend(attrs);
        let mut resource = vec![0x12];
        prost::encoding::encode_varint(span.len() as u64, &mut resource);
        resource.extend(span);
        let mut request = vec![0x0a];
        prost::encoding::encode_varint(resource.len() as u64, &mut request);
        request.extend(resource);
        request
    };
    let statuses = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|n| {
                let (heavy, bomb, flood) = (&heavy[n], &bomb, &flood);
                scope.spawn(move || {
                    let proto = ("Content-Type", "application/x-protobuf");
                    let gz = ("Content-Encoding", "gzip");
                    vec![
                        post(port, &[proto], heavy).status,
                        post(port, &[proto], flood).status,
                        post(port, &[("Content-Type", "application/json"), gz], bomb).status,
                        post(port, &[proto, gz], &gzip(heavy)).status,
                    ]
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    });
    for s in &statuses {
        assert_eq!(s, &[200, 413, 413, 200], "{statuses:?}");
    }
    let (status, stdout, said) = receiver.stop();
    let peak = peak.finish();
    assert!(status.success(), "{said}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    // Each request's 3,500 calls once: the gzip repeat is the same request.
    assert_eq!(summary["journaled"], 8 * 3_500, "{stdout}");
    eprintln!("peak resident memory: {} MiB", peak >> 20);
    assert!(
        peak < crate::support::CAPTURE_PEAK,
        "the receiver peaked at {} MiB",
        peak >> 20
    );
}
