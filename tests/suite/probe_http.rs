//! `mcpeval-probe --url` against a switchable Streamable HTTP fixture and a
//! real server: both eras, JSON and event-stream answers, cancellation,
//! protocol breaks, the endpoint binding, and header values and URL
//! secrets that never reach an output or the store.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::probe::{Run, expect, finish, transport};
use crate::support::{Guard, Store, contains, everything_over_http, fixture, free_port};

const F: &str = "finding-0123456789abcdef";
const MARK: &str = "SECRET-7f3a";
const TOKEN: &str = "tok-Quokka-991";
const SECRET: &str = "Quokka";

/// `tests/fixtures/probe_http_server.py` (or another fixture script that
/// logs the same way), running until dropped.
pub struct Fixture {
    _guard: Guard,
    port: u16,
    log: PathBuf,
}

impl Fixture {
    pub fn start(store: &Store, args: &[&str]) -> Fixture {
        Fixture::script(store, "probe_http_server.py", args)
    }

    /// Another fixture script under `tests/fixtures/` that takes `--log
    /// FILE`, logs as this one does and says `PORT n` on its first line.
    pub fn script(store: &Store, script: &str, args: &[&str]) -> Fixture {
        let log = store
            .scratch()
            .join(format!("fixture-{}.log", uuid::Uuid::new_v4()));
        let mut cmd = Command::new("python3");
        store.env(&mut cmd);
        cmd.arg(fixture(script))
            .args(args)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let guard = Guard(child);
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).unwrap();
        let port = first
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the fixture said {first:?}"));
        Fixture {
            _guard: guard,
            port,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Every entry the fixture logged: requests and events.
    pub fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Every request, as "HTTP-method JSON-RPC-method" ("POST reply" for a
    /// POSTed response).
    pub fn requests(&self) -> Vec<String> {
        self.entries()
            .iter()
            .filter(|e| e.get("http").is_some())
            .map(|e| {
                let what = match e["body"].get("method") {
                    Some(m) => m.as_str().unwrap().to_owned(),
                    None if e["body"].is_object() => "reply".to_owned(),
                    None => "-".to_owned(),
                };
                format!("{} {what}", e["http"].as_str().unwrap())
            })
            .collect()
    }

    /// The logged request whose JSON-RPC method is `method`.
    fn request(&self, method: &str) -> Value {
        self.entries()
            .into_iter()
            .find(|e| e["body"]["method"] == method)
            .unwrap_or_else(|| panic!("no {method} in {:?}", self.requests()))
    }

    /// Waits (boundedly) for an event entry such as `{"event": "closed"}`.
    pub fn wait_for_event(&self, event: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.entries().iter().any(|e| e["event"] == event) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

struct Bench {
    store: Store,
    manifest: PathBuf,
}

fn case(id: &str, tool: &str, timeout_ms: u64) -> Value {
    json!({"id": id, "finding": F, "probe": "instruction-fidelity", "tool": tool,
           "timeout_ms": timeout_ms})
}

fn status_case(id: &str, want: &str) -> Value {
    let mut c = case(id, "status", 3000);
    c["expect"] = json!({"outcome": "ok", "equals_paths": {"/structuredContent/status": want}});
    c["sandbox"] = json!("fixture");
    c
}

impl Bench {
    fn new(cases: Value) -> Bench {
        let store = Store::new();
        let manifest = store.scratch().join("mcp-eval.manifest.json");
        let doc = json!({"manifest_version": 1,
            "sandboxes": {"fixture": {"declaration": "a private fixture on loopback"}},
            "cases": cases});
        std::fs::write(&manifest, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        Bench { store, manifest }
    }

    fn run(&self, case: &str, url: &str, headers: &[&str]) -> Run {
        self.run_with(&[], case, url, headers)
    }

    fn run_with(&self, flags: &[&str], case: &str, url: &str, headers: &[&str]) -> Run {
        let mut cmd = self.store.cmd("mcpeval-probe");
        cmd.arg("--manifest")
            .arg(&self.manifest)
            .args(["--case", case])
            .args(flags)
            .args(["--url", url]);
        for h in headers {
            cmd.args(["--header", h]);
        }
        self.finish(cmd)
    }

    fn finish(&self, mut cmd: Command) -> Run {
        finish(cmd.output().unwrap())
    }
}

#[track_caller]
fn green(run: &Run) {
    expect(run, 0, "green", Value::Null, Value::Null, 1);
    assert_eq!(run.stderr, "");
}

#[track_caller]
fn red(run: &Run, reason: &str, detail: &str) {
    expect(run, 1, "red", json!(reason), json!(detail), 1);
}

#[test]
fn green_and_red_in_both_eras_and_both_answer_kinds() {
    let b = Bench::new(json!([status_case("status", "ready")]));
    for era in ["legacy", "modern"] {
        for respond in ["json", "sse"] {
            let kind = format!("--era {era} --respond {respond}");
            let repaired = Fixture::start(&b.store, &["--era", era, "--respond", respond]);
            let buggy = Fixture::start(
                &b.store,
                &["--era", era, "--respond", respond, "--status", "pending"],
            );
            let ok = b.run("status", &repaired.url(), &[]);
            green(&ok);
            let bad = b.run("status", &buggy.url(), &[]);
            red(&bad, "not-equal", "/structuredContent/status");
            assert_eq!(
                bad.stderr,
                "mcpeval-probe: red: case status not-equal: /structuredContent/status\n  \
hint: A result field differs from the value the case expects: return what the contract promises.\n"
            );

            let call = repaired.request("tools/call");
            let headers = &call["headers"];
            assert_eq!(headers["accept"], "application/json, text/event-stream");
            assert_eq!(headers["content-type"], "application/json");
            let discover = repaired.request("server/discover");
            assert_eq!(discover["headers"]["mcp-protocol-version"], "2026-07-28");
            assert_eq!(discover["headers"]["mcp-method"], "server/discover");
            if era == "modern" {
                // tools/list before the call (this fixture refuses it: 404).
                assert_eq!(
                    repaired.requests(),
                    ["POST server/discover", "POST tools/list", "POST tools/call"],
                    "{kind}"
                );
                assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
                assert_eq!(headers["mcp-method"], "tools/call");
                assert_eq!(headers["mcp-name"], "status");
                assert_eq!(
                    call["body"]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                    "2026-07-28"
                );
                assert!(headers.get("mcp-session-id").is_none());
            } else {
                assert_eq!(
                    repaired.requests(),
                    [
                        "POST server/discover",
                        "POST initialize",
                        "POST notifications/initialized",
                        "POST tools/list",
                        "POST tools/call",
                        "DELETE -"
                    ],
                    "{kind}"
                );
                let entries = repaired.entries();
                let init = &entries[1]["headers"];
                assert!(init.get("mcp-session-id").is_none(), "{kind}");
                assert!(init.get("mcp-protocol-version").is_none(), "{kind}");
                let session = entries[2]["headers"]["mcp-session-id"].as_str().unwrap();
                assert!(session.starts_with("sess-"));
                for later in &entries[2..] {
                    assert_eq!(later["headers"]["mcp-session-id"], session, "{kind}");
                    assert_eq!(later["headers"]["mcp-protocol-version"], "2025-11-25");
                    assert!(later["headers"].get("mcp-method").is_none(), "{kind}");
                }
                assert!(call["body"]["params"].get("_meta").is_none(), "{kind}");
            }
        }
    }
    let records = b.store.records();
    assert_eq!(records.len(), 8);
    for r in &records {
        assert_eq!(r["transport"], "http");
        assert_eq!(r["origin"], "probe");
        assert_eq!(r["server"], "probe-http-fixture");
        assert_eq!(r["tool"], "status");
    }
}

#[test]
fn server_requests_on_a_legacy_stream_are_answered_by_post() {
    let mut ask = case("ask", "ask_client", 5000);
    ask["expect"] =
        json!({"outcome": "ok", "equals_paths": {"/structuredContent/answered": "ping-and-roots"}});
    let b = Bench::new(json!([ask]));
    let server = Fixture::start(&b.store, &["--era", "legacy", "--respond", "sse"]);
    green(&b.run("ask", &server.url(), &[]));
    let requests = server.requests();
    // After the handshake (3 requests) and tools/list.
    assert_eq!(
        requests[4..],
        ["POST tools/call", "POST reply", "POST reply", "DELETE -"]
    );
    let entries = server.entries();
    let session = &entries[4]["headers"]["mcp-session-id"];
    for reply in &entries[5..7] {
        assert_eq!(&reply["headers"]["mcp-session-id"], session);
        assert!(reply["body"]["result"].is_object());
    }

    // A 2026-07-28 stream carries no server requests: one is a protocol break.
    let modern = Fixture::start(&b.store, &["--era", "modern", "--respond", "sse"]);
    transport(
        &b.run("ask", &modern.url(), &[]),
        "invalid-message",
        "a server request arrived on a 2026-07-28 response stream, which carries none",
        1,
    );
}

#[test]
fn an_expired_call_is_cancelled_as_its_era_says() {
    let b = Bench::new(json!([case("slow", "slow", 300)]));
    for era in ["legacy", "modern"] {
        let server = Fixture::start(&b.store, &["--era", era]);
        let started = Instant::now();
        let run = b.run("slow", &server.url(), &[]);
        red(&run, "timeout", "no response within 300 ms");
        assert!(started.elapsed() < Duration::from_secs(4), "{era}");
        // Closing the stream is the modern cancellation; legacy also posts
        // the notice. Either way the server sees its stream closed.
        assert!(server.wait_for_event("closed"), "{era}: stream left open");
        let requests = server.requests();
        if era == "legacy" {
            assert_eq!(
                requests[4..],
                [
                    "POST tools/call",
                    "POST notifications/cancelled",
                    "DELETE -"
                ]
            );
            let call = server.request("tools/call");
            let cancel = server.request("notifications/cancelled");
            assert_eq!(cancel["body"]["params"]["requestId"], call["body"]["id"]);
            assert_eq!(cancel["body"]["params"]["reason"], "timeout");
            assert_eq!(
                cancel["headers"]["mcp-session-id"],
                call["headers"]["mcp-session-id"]
            );
        } else {
            assert_eq!(
                requests,
                ["POST server/discover", "POST tools/list", "POST tools/call"]
            );
        }
    }
    let records = b.store.records();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r["unknown"] == "unanswered"));
}

#[test]
fn protocol_breaks_over_http_are_transport_errors() {
    let tools = [
        "malformed_null",
        "malformed_yes",
        "wrong_id",
        "non_json",
        "http_error",
        "html",
        "accepted",
        "no_response",
    ];
    let b = Bench::new(Value::Array(
        tools.iter().map(|t| case(t, t, 3000)).collect(),
    ));
    for (era, respond) in [("legacy", "json"), ("modern", "sse")] {
        let server = Fixture::start(&b.store, &["--era", era, "--respond", respond]);
        let url = server.url();
        let non_json = if respond == "json" {
            "the answer to tools/call is not JSON"
        } else {
            "an event answering tools/call is not JSON"
        };
        let want = [
            ("malformed-result", "call 1: the result is not an object"),
            ("malformed-result", "call 1: isError is not a boolean"),
            (
                "id-mismatch",
                "a response carried an id no pending request had",
            ),
            ("non-json-body", non_json),
            ("http-status", "HTTP 500 in answer to tools/call"),
            (
                "non-json-body",
                "the answer to tools/call is neither application/json nor text/event-stream",
            ),
            (
                "http-status",
                "HTTP 202 without a body in answer to tools/call, a request",
            ),
            (
                "stream-ended",
                "the event stream answering tools/call ended before its response, and the \
endpoint offers no stream to resume (HTTP 405 to GET)",
            ),
        ];
        for (tool, (reason, detail)) in tools.iter().zip(want) {
            let run = b.run(tool, &url, &[]);
            transport(&run, reason, detail, 1);
            assert!(
                run.stderr
                    .starts_with("mcpeval-probe: error: transport failure: case "),
                "{}",
                run.stderr
            );
            assert!(!run.stdout.contains(MARK) && !run.stderr.contains(MARK));
        }
    }
    assert!(!contains(&b.store.all_bytes(), MARK));
    let records = b.store.records();
    assert_eq!(records.len(), 2 * tools.len());
    assert!(records.iter().all(|r| r["transport"] == "http"));
}

#[test]
fn an_unreachable_url_is_a_transport_failure() {
    let b = Bench::new(json!([status_case("status", "ready")]));
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp/{TOKEN}?key={TOKEN}");
    let run = b.run("status", &url, &[&format!("Authorization: Bearer {TOKEN}")]);
    let detail =
        format!("cannot connect to http://127.0.0.1:{port}: Connection refused (os error 111)");
    transport(&run, "unreachable", &detail, 0);
    assert_eq!(
        run.stderr,
        format!(
            "mcpeval-probe: error: transport failure: case status unreachable: {detail}\n  \
hint: The endpoint could not be reached: check --url, and that the server listens there.\n"
        )
    );
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
    assert!(b.store.records().is_empty(), "no call was made");
    assert!(!contains(&b.store.all_bytes(), SECRET));
}

#[test]
fn a_real_server_over_streamable_http() {
    let b = Bench::new(json!(["Cloudy", "Sunny"].map(|conditions| {
        json!({"id": format!("weather-{}", conditions.to_lowercase()), "finding": F,
               "probe": "instruction-fidelity", "tool": "get-structured-content",
               "arguments": {"location": "New York"},
               "expect": {"outcome": "ok", "required_result_paths": ["/content/0/text"],
                          "equals_paths": {"/structuredContent/conditions": conditions,
                                           "/structuredContent/temperature": 33}}})
    })));
    let (_everything, url) = everything_over_http(&b.store);
    green(&b.run("weather-cloudy", &url, &[]));
    red(
        &b.run("weather-sunny", &url, &[]),
        "not-equal",
        "/structuredContent/conditions",
    );
    let records = b.store.records();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["server"], "mcp-servers/everything");
        assert_eq!(r["transport"], "http");
        assert_eq!(r["args_shape"], json!({"location": "string"}));
    }
}

#[test]
fn the_binding_covers_the_endpoint_configuration() {
    let b = Bench::new(json!([status_case("status", "ready")]));
    let server = Fixture::start(&b.store, &["--era", "modern"]);
    let url = server.url();
    let binding = |url: &str, headers: &[&str]| {
        let run = b.run("status", url, headers);
        assert_eq!(run.status, 0, "{}", run.stderr);
        run.binding()
    };
    let first = binding(&url, &["Authorization: Bearer a", "X-Team: blue"]);
    assert_eq!(
        first,
        binding(&url, &["Authorization: Bearer a", "X-Team: blue"])
    );
    // Order and the case of names do not matter.
    assert_eq!(
        first,
        binding(&url, &["x-team: blue", "AUTHORIZATION: Bearer a"])
    );
    let changed = [
        (
            "a header value",
            binding(&url, &["Authorization: Bearer b", "X-Team: blue"]),
        ),
        (
            "the URL",
            binding(
                &format!("{url}?tenant=2"),
                &["Authorization: Bearer a", "X-Team: blue"],
            ),
        ),
        (
            "another header",
            binding(
                &url,
                &["Authorization: Bearer a", "X-Team: blue", "X-Extra: 1"],
            ),
        ),
        ("fewer headers", binding(&url, &["Authorization: Bearer a"])),
    ];
    for (what, other) in &changed {
        assert_ne!(other, &first, "changing {what} kept the binding");
    }
}

#[test]
fn header_values_and_url_secrets_never_leave() {
    let b = Bench::new(json!([
        status_case("status", "ready"),
        status_case("wrong", "pending"),
        case("malformed", "malformed_null", 3000),
    ]));
    let auth = format!("Authorization: Bearer {TOKEN}");
    let server = Fixture::start(&b.store, &["--era", "legacy", "--require", &auth]);
    let url = format!("{}?key={TOKEN}", server.url());
    let runs = [
        b.run("status", &url, &[&auth]),
        b.run_with(&["--format", "text"], "wrong", &url, &[&auth]),
        b.run("malformed", &url, &[&auth]),
        // Without the header the fixture refuses every request.
        b.run("status", &url, &[]),
    ];
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [0, 1, 5, 5]
    );
    transport(
        &runs[3],
        "http-status",
        "HTTP 401 in answer to initialize: check the --header credentials",
        0,
    );
    for run in &runs {
        assert!(!run.stdout.contains(SECRET), "{}", run.stdout);
        assert!(!run.stderr.contains(SECRET), "{}", run.stderr);
    }
    // The header and the query did travel, to the server only.
    let call = server.request("tools/call");
    assert_eq!(call["headers"]["authorization"], format!("Bearer {TOKEN}"));
    assert!(call["path"].as_str().unwrap().ends_with(TOKEN));
    let stored = b.store.all_bytes();
    assert!(!stored.is_empty());
    assert!(!contains(&stored, SECRET), "a secret reached the store");
    let records = b.store.records();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r["server"] == "probe-http-fixture"));
}

#[test]
fn bad_endpoint_flags_are_usage_errors_that_show_no_secret() {
    let b = Bench::new(json!([status_case("status", "ready")]));
    let usage = |args: &[String]| {
        let mut cmd = b.store.cmd("mcpeval-probe");
        cmd.arg("--manifest")
            .arg(&b.manifest)
            .args(["--case", "status"])
            .args(args);
        let run = b.finish(cmd);
        assert_eq!((run.status, run.stdout.as_str()), (2, ""), "{args:?}");
        assert!(!run.stderr.contains(SECRET), "{}", run.stderr);
        run.stderr
    };
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let url = "http://127.0.0.1:9/mcp";
    let header = |h: &str| usage(&s(&["--url", url, "--header", h]));
    assert_eq!(
        header(&format!("Bearer {TOKEN}")),
        "mcpeval-probe: error: invalid --header (number 1): it has no colon; write it as \"Name: value\"\n"
    );
    assert_eq!(
        header(&format!("Content-Type: {TOKEN}")),
        "mcpeval-probe: error: invalid --header content-type: the probe sets this header itself; leave it out\n"
    );
    assert!(
        header(&format!("X-Key: {TOKEN}\r\nInjected: 1"))
            .starts_with("mcpeval-probe: error: invalid --header x-key: its value holds a control")
    );
    assert_eq!(
        usage(&s(&[
            "--url",
            &format!("http://me:{TOKEN}@127.0.0.1:9/mcp")
        ])),
        "mcpeval-probe: error: invalid --url: credentials in the URL are not sent; pass them with \
--header \"Authorization: …\"\n"
    );
    assert_eq!(
        usage(&s(&["--url", &format!("ftp://127.0.0.1:9/{TOKEN}")])),
        "mcpeval-probe: error: invalid --url ftp://127.0.0.1:9: the scheme must be http or https\n"
    );
    // Exactly one of --url and -- CMD; headers only with --url.
    assert!(usage(&s(&["--url", url, "--", "my-server"])).contains("cannot be used with"));
    assert!(
        usage(&s(&[
            "--header",
            &format!("X-Key: {TOKEN}"),
            "--",
            "my-server"
        ]))
        .contains("cannot be used with")
    );
    assert!(usage(&[]).contains("the following required arguments were not provided"));
    assert!(!contains(&b.store.all_bytes(), SECRET));
}

#[test]
fn every_case_of_a_manifest_over_http() {
    let b = Bench::new(json!([
        status_case("ready", "ready"),
        status_case("pending", "pending")
    ]));
    let server = Fixture::start(&b.store, &["--era", "legacy", "--respond", "sse"]);
    let mut cmd = b.store.cmd("mcpeval-probe");
    cmd.arg("--manifest")
        .arg(&b.manifest)
        .args(["--all", "--url", &server.url()]);
    let run = b.finish(cmd);
    assert_eq!(run.status, 1, "{}", run.stderr);
    let verdicts: Vec<(String, String)> = run
        .stdout
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["case"].as_str().unwrap().to_owned(),
                r["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("ready".to_owned(), "green".to_owned()),
            ("pending".to_owned(), "red".to_owned())
        ]
    );
    // Each case gets a fresh client: its own session, ended with DELETE.
    let requests = server.requests();
    assert_eq!(
        requests.iter().filter(|r| *r == "POST initialize").count(),
        2
    );
    assert_eq!(requests.iter().filter(|r| *r == "DELETE -").count(), 2);
}
