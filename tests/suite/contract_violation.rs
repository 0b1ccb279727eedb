//! Capture's verdict on whether a result kept its tool's declared
//! `outputSchema`, held to what the official Python SDK client does with the
//! same result: the SDK raises on exactly the results capture journals as
//! `contract.kept: false`, although the wire said success. Against the
//! fixture that breaks its schemas in every way, against four real servers
//! that keep theirs, and against schemas built to hold or sink a checker.

use crate::support::OutputWithin;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::capture_http::Capture;
use crate::support::{
    CAPTURE_PEAK, Deps, Guard, PeakWatch, Store, bin, contains, fixture, repo, text,
};

/// The calls made to `tests/fixtures/contract_server.py`, `TOOL:CASE`.
const CALLS: &[&str] = &[
    "job_status:ready",
    "job_status:pending",
    "job_status:open",
    "job_status:shouty",
    "job_status:late",
    "job_status:lost",
    "job_status:bare",
    "job_status:void",
    "job_status:crash",
    "inventory:full",
    "inventory:empty",
    "inventory:miscounted",
    "inventory:negative",
    "inventory:unlabelled",
    "inventory:stranger",
    "inventory:tagged",
    "inventory:listed",
    "inventory:fire",
    "echo:hello",
];

/// The calls on which the SDK raises its output-schema error.
const RAISES: &[&str] = &[
    "job_status:shouty",
    "job_status:late",
    "job_status:lost",
    "job_status:bare",
    "job_status:void",
    "inventory:miscounted",
    "inventory:negative",
    "inventory:unlabelled",
    "inventory:stranger",
    "inventory:tagged",
];

/// The isError results, which no SDK checks: no verdict either.
const TOOL_ERRORS: &[&str] = &["job_status:crash", "inventory:fire"];

/// Where capture must place each first violation, and the keyword.
/// `inventory:listed` (an array for structuredContent) makes the SDK raise
/// too, one step earlier: its result model refuses anything but an object.
const VERDICTS: &[(&str, &str, &str)] = &[
    ("job_status:shouty", "/status", "enum"),
    ("job_status:late", "/eta", "type"),
    ("job_status:lost", "/status", "required"),
    ("job_status:bare", "", "required"),
    ("inventory:miscounted", "/items/*/count", "type"),
    ("inventory:negative", "/items/*/count", "minimum"),
    ("inventory:unlabelled", "/items/*/count", "required"),
    ("inventory:tagged", "/labels/*", "type"),
    ("inventory:listed", "", "type"),
];

/// Values and undeclared names that only the results held.
const RESULT_VALUES: &[&str] = &[
    "Ready!",
    "soon-ish",
    "three",
    "Opaque Key 77",
    "Hidden-Field-42",
    "carol@example.com",
    "alice@example.com",
    "Quartermaster",
    "aisle 4",
    "On Fire!",
    "trust me",
    "warehouse",
];

pub fn contract_server() -> String {
    fixture("contract_server.py").display().to_string()
}

/// One JSON line per call from `tests/clients/contract_client.py` run with
/// `client_args` (calls, then `-- CMD…` or `--url URL`) and `env`.
pub fn sdk_client(store: &Store, client_args: &[String], env: &[(&str, &str)]) -> Vec<Value> {
    let mut cmd = Command::new(Deps::python());
    store.env(&mut cmd);
    cmd.envs(env.iter().copied());
    let out = cmd
        .arg(repo().join("tests/clients/contract_client.py"))
        .args(client_args)
        .output_within(crate::support::SESSION_LIMIT);
    assert!(
        out.status.success(),
        "contract_client.py {client_args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The fixture's calls through `mcpeval-capture -- contract_server.py
/// FIXTURE_ARGS`, as the SDK client saw them.
fn through_stdio_capture(store: &Store, fixture_args: &[&str]) -> Vec<Value> {
    let mut args: Vec<String> = CALLS.iter().map(|c| c.to_string()).collect();
    args.push("--".into());
    args.push(bin("mcpeval-capture").display().to_string());
    args.extend(["--".into(), "python3".into(), contract_server()]);
    args.extend(fixture_args.iter().map(|a| a.to_string()));
    sdk_client(store, &args, &[])
}

/// `TOOL:CASE` of a client line.
/// The store's contract-violation findings once indexed and promoted at
/// threshold 0, and the whole findings JSON.
fn contract_findings(store: &Store) -> (Vec<Value>, String) {
    crate::verify::succeed(store, "mcpeval", &["index"]);
    crate::verify::succeed(store, "mcpeval", &["promote", "--threshold", "0"]);
    let shown = crate::verify::succeed(store, "mcpeval", &["findings", "--format", "json"]);
    let findings: Value = serde_json::from_str(&shown).unwrap();
    let violations = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["defect_class"] == "contract-violation")
        .cloned()
        .collect();
    (violations, shown)
}

fn call_of(line: &Value) -> String {
    format!(
        "{}:{}",
        line["tool"].as_str().unwrap(),
        line["case"].as_str().unwrap()
    )
}

/// The records of the one session in `records`, in call order.
fn in_call_order(records: &[Value]) -> Vec<Value> {
    let sessions: BTreeSet<String> = records
        .iter()
        .map(|r| r["identity"]["session"].to_string())
        .collect();
    assert_eq!(sessions.len(), 1, "{records:#?}");
    let mut ordered = records.to_vec();
    ordered.sort_by_key(|r| r["identity"]["seq"].as_u64().unwrap());
    ordered
}

/// What the SDK client raised on against the unfixed fixture is exactly
/// the designed set: a wrong fixture or client fails here, not later.
fn assert_sdk_raised_as_designed(lines: &[Value]) {
    let called: Vec<String> = lines.iter().map(call_of).collect();
    assert_eq!(called, CALLS, "the client made the calls in order");
    let raised: Vec<String> = lines
        .iter()
        .filter(|l| l["raised"] == true)
        .map(call_of)
        .collect();
    assert_eq!(raised, RAISES, "{lines:#?}");
    for line in lines {
        let call = call_of(line);
        let is_error = TOOL_ERRORS.contains(&call.as_str());
        if call == "inventory:listed" {
            assert!(line["failure"].is_string(), "{line}");
        } else if !RAISES.contains(&call.as_str()) {
            assert_eq!(line["is_error"], is_error, "{line}");
            assert_eq!(line["failure"], Value::Null, "{line}");
        }
    }
}

/// Capture agrees with the SDK, call by call: a raise is a broken
/// contract, every other ok result of a tool with a schema kept it, and a
/// tool without a schema or an isError result has no verdict at all.
fn assert_capture_agrees(lines: &[Value], records: &[Value], transport: &str) {
    let records = in_call_order(records);
    assert_eq!(records.len(), lines.len(), "{records:#?}");
    for (line, record) in lines.iter().zip(&records) {
        let call = call_of(line);
        assert_eq!(record["tool"], line["tool"], "{call}: {record}");
        assert_eq!(record["server"], "contract-fixture", "{record}");
        assert_eq!(record["transport"], transport, "{record}");
        let contract = record.get("contract");
        if line["is_error"] == true {
            assert_eq!(record["outcome"], "error", "{call}: {record}");
            assert_eq!(contract, None, "{call}: an isError result has no verdict");
            continue;
        }
        assert_eq!(record["outcome"], "ok", "{call}: {record}");
        if line["tool"] == "echo" {
            assert_eq!(contract, None, "{call}: echo declares no outputSchema");
        } else if line["raised"] == true || call == "inventory:listed" {
            let contract = contract.unwrap_or_else(|| panic!("{call}: no verdict: {record}"));
            assert_eq!(contract["kept"], false, "{call}: the SDK raised: {record}");
            assert!(
                contract["at"].is_string() && contract["keyword"].is_string(),
                "{call}: {record}"
            );
        } else {
            assert_eq!(
                contract,
                Some(&json!({"kept": true})),
                "{call}: the SDK accepted it: {record}"
            );
        }
    }
    let by_call = |call: &str| &records[CALLS.iter().position(|c| *c == call).unwrap()];
    for (call, at, keyword) in VERDICTS {
        assert_eq!(
            by_call(call)["contract"],
            json!({"kept": false, "at": at, "keyword": keyword}),
            "{call}"
        );
    }
    // An undeclared property of a closed object: blamed on the object,
    // and its name, which is data, never written.
    let stranger = &by_call("inventory:stranger")["contract"];
    assert_eq!(stranger["keyword"], "additionalProperties", "{stranger}");
    assert!(
        stranger["at"].as_str().unwrap().starts_with("/owner"),
        "{stranger}"
    );
}

/// Fails naming the first of `needles` in `bytes`.
fn assert_absent(bytes: &[u8], needles: &[&str], what: &str) {
    for needle in needles {
        assert!(!contains(bytes, needle), "{what} holds {needle:?}");
    }
}

#[test]
fn capture_agrees_with_the_sdk_client_call_by_call() {
    let store = Store::new();
    let lines = through_stdio_capture(&store, &[]);
    assert_sdk_raised_as_designed(&lines);
    assert_capture_agrees(&lines, &store.records(), "stdio");
    assert_absent(&store.journal_bytes(), RESULT_VALUES, "the journal");

    // Repaired, the same calls raise nothing and every verdict is kept.
    let fixed = Store::new();
    let lines = through_stdio_capture(&fixed, &["--fixed"]);
    assert!(lines.iter().all(|l| l["raised"] == false), "{lines:#?}");
    let records = in_call_order(&fixed.records());
    assert_eq!(records.len(), CALLS.len());
    for record in &records {
        assert_eq!(record["outcome"], "ok", "{record}");
        let want = (record["tool"] != "echo").then(|| json!({"kept": true}));
        assert_eq!(record.get("contract"), want.as_ref(), "{record}");
    }
}

#[test]
fn capture_over_http_agrees_with_the_sdk_client_call_by_call() {
    let store = Store::new();
    let mut cmd = Command::new("python3");
    store.env(&mut cmd);
    let mut child = cmd
        .args([contract_server(), "--http".into()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _server = Guard(child);
    let port: u16 = first
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the fixture said {first:?}"));
    let capture = Capture::start(&store, &format!("http://127.0.0.1:{port}/mcp"), &[]);
    let mut args: Vec<String> = CALLS.iter().map(|c| c.to_string()).collect();
    args.extend([
        "--url".into(),
        format!("http://127.0.0.1:{}/mcp", capture.port),
    ]);
    let lines = sdk_client(&store, &args, &[]);
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");
    assert_sdk_raised_as_designed(&lines);
    assert_capture_agrees(&lines, &store.records(), "http");
    assert_absent(&store.journal_bytes(), RESULT_VALUES, "the journal");
}

#[test]
fn sdk_raises_become_contract_violation_findings() {
    // The other side of the real servers' test below: broken contracts in
    // two sessions are promoted as contract-violation findings, one per
    // (tool, at, keyword), and none for the tool without a schema.
    let store = Store::new();
    through_stdio_capture(&store, &[]);
    through_stdio_capture(&store, &[]);
    let (violations, shown) = contract_findings(&store);
    let tools: BTreeSet<&str> = violations
        .iter()
        .map(|f| f["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        BTreeSet::from(["inventory", "job_status"]),
        "{shown}"
    );
    // One per distinct (tool, at, keyword): the VERDICTS, the stranger's
    // and perhaps the null structuredContent's (it may share "" with bare).
    assert!(
        (VERDICTS.len() + 1..=VERDICTS.len() + 2).contains(&violations.len()),
        "{shown}"
    );
    assert_absent(shown.as_bytes(), RESULT_VALUES, "the findings");
    assert_absent(&store.all_bytes(), RESULT_VALUES, "the store");
}

/// A real server of `scripts/test-deps`: its script in
/// `tests/clients/contract_sessions.py`, how to start it, how many tools it
/// lists and how many of them declare an outputSchema.
struct Real {
    script: &'static str,
    server: Vec<String>,
    tools: usize,
    with_schema: usize,
}

fn real_servers(store: &Store, round: usize) -> Vec<(Real, Vec<String>)> {
    // A fresh directory each round: the script moves a file into place.
    let root = store.scratch().join(format!("files-{round}"));
    std::fs::create_dir_all(&root).unwrap();
    let root = root.display().to_string();
    let path = |p: std::path::PathBuf| p.display().to_string();
    vec![
        (
            Real {
                script: "filesystem",
                server: vec![path(Deps::server_filesystem()), root.clone()],
                tools: 14,
                with_schema: 14,
            },
            vec!["--root".into(), root],
        ),
        (
            Real {
                script: "memory",
                server: vec![path(Deps::server_memory())],
                tools: 9,
                with_schema: 9,
            },
            vec![],
        ),
        (
            Real {
                script: "time",
                server: vec![path(Deps::server_time())],
                tools: 2,
                with_schema: 2,
            },
            vec![],
        ),
        (
            Real {
                script: "everything",
                server: vec![path(Deps::server_everything())],
                tools: 13,
                with_schema: 1,
            },
            vec![],
        ),
    ]
}

#[test]
fn real_servers_keep_their_declared_contracts() {
    let store = Store::new();
    let memory = store.scratch().join("memory.jsonl");
    // server name → the tools that declare an outputSchema.
    let mut schema_tools = std::collections::BTreeMap::<String, BTreeSet<String>>::new();
    let mut calls = 0;
    // Two sessions each, so that a broken contract could be promoted.
    for round in 0..2 {
        for (real, script_args) in real_servers(&store, round) {
            let mut cmd = Command::new(Deps::python());
            store.env(&mut cmd);
            let out = cmd
                .env("MEMORY_FILE_PATH", &memory)
                .arg(repo().join("tests/clients/contract_sessions.py"))
                .arg(real.script)
                .args(&script_args)
                .arg("--")
                .arg(bin("mcpeval-capture"))
                .arg("--")
                .args(&real.server)
                .output_within(crate::support::SESSION_LIMIT);
            let said = text(&out.stdout);
            assert!(
                out.status.success(),
                "{}: {said}{}",
                real.script,
                text(&out.stderr)
            );
            let lines: Vec<Value> = said
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let (summary, made) = lines.split_last().unwrap();
            assert!(made.iter().all(|l| l["raised"] == false), "{said}");
            calls += made.len();
            let declared: BTreeSet<String> = summary["schema_tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned())
                .collect();
            assert_eq!(summary["tools"], real.tools, "{}: {summary}", real.script);
            assert_eq!(declared.len(), real.with_schema, "{summary}");
            schema_tools.insert(summary["server"].as_str().unwrap().to_owned(), declared);
        }
    }
    assert!(memory.exists(), "memory kept its graph in MEMORY_FILE_PATH");

    let records = store.records();
    assert_eq!(records.len(), calls, "one record per call");
    let mut checked = BTreeSet::new();
    for record in &records {
        let server = record["server"].as_str().unwrap();
        let tool = record["tool"].as_str().unwrap();
        let declared = schema_tools
            .get(server)
            .unwrap_or_else(|| panic!("a record of an unknown server: {record}"));
        assert_eq!(record["outcome"], "ok", "{record}");
        if declared.contains(tool) {
            assert_eq!(
                record.get("contract"),
                Some(&json!({"kept": true})),
                "{record}"
            );
            checked.insert((server.to_owned(), tool.to_owned()));
        } else {
            assert_eq!(record.get("contract"), None, "{record}");
        }
    }
    // Every tool with a schema was called, and so checked: 14 + 9 + 2 + 1.
    assert_eq!(checked.len(), 26, "{checked:?}");

    let (violations, shown) = contract_findings(&store);
    assert!(violations.is_empty(), "{shown}");
}

/// The tools `contract_server.py --hostile` lists after its ordinary ones,
/// one page each, in order: each one's outputSchema is built to hold,
/// exhaust or misdirect a schema checker.
const HOSTILE: &[&str] = &[
    "huge",
    "deep",
    "wide",
    "deepish",
    "loop_self",
    "loop_mutual",
    "loop_properties",
    "anyof_bomb",
    "regex_bomb",
    "remote_ref",
    "remote_meta",
    "remote_id",
];

/// The cursor a tools/list page names, found as the fixture spells it:
/// some pages are too deep for serde_json's parser.
fn next_cursor(page: &[u8]) -> Option<String> {
    let key = br#""nextCursor":""#;
    let at = memchr::memmem::find(page, key)? + key.len();
    let end = at + page[at..].iter().position(|b| *b == b'"')?;
    Some(text(&page[at..end]))
}

#[test]
fn hostile_schemas_neither_crash_capture_nor_hold_it() {
    let store = Store::new();
    // The loopback address the remote references name: nothing may fetch.
    let remote = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    remote.set_nonblocking(true).unwrap();
    let sent = store.scratch().join("server-out");
    let mut cmd = store.cmd("mcpeval-capture");
    cmd.args(["--", "python3", &contract_server(), "--hostile"])
        .args([
            "--ref-port",
            &remote.local_addr().unwrap().port().to_string(),
        ])
        .arg("--out")
        .arg(&sent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(20);
    let mut capture = Guard(cmd.spawn().unwrap());
    let peak = PeakWatch::start(capture.0.id());
    let mut to = capture.0.stdin.take().unwrap();
    let from = capture.0.stdout.take().unwrap();
    let mut stderr = capture.0.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all);
        all
    });
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        loop {
            let mut line = Vec::new();
            if from.read_until(b'\n', &mut line).unwrap_or(0) == 0 || tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut received = Vec::new();
    // Sends one request and waits for its answer, all within the deadline.
    let mut ask = |id: u64, method: &str, params: Value| -> Vec<u8> {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(to, "{request}").unwrap();
        to.flush().unwrap();
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no answer to {method} #{id} within 20 s of the start"));
        received.extend_from_slice(&line);
        line
    };
    ask(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "contract-test", "version": "1"}}),
    );
    // Every page, following the cursors as a client does.
    let mut id = 1;
    let mut cursor: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = ask(id, "tools/list", params);
        id += 1;
        cursor = next_cursor(&page);
        pages.push(page);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(pages.len(), 1 + HOSTILE.len());
    for (page, name) in pages[1..].iter().zip(HOSTILE) {
        assert!(contains(page, &format!(r#""name":"{name}""#)), "{name}");
    }
    // A sane tool before and after the hostile ones; each hostile one once.
    let mut calls: Vec<(&str, Value)> = vec![("job_status", json!({"job": "shouty"}))];
    calls.extend(HOSTILE.iter().map(|name| (*name, json!({}))));
    calls.push(("job_status", json!({"job": "shouty"})));
    calls.push(("job_status", json!({"job": "ready"})));
    for (tool, arguments) in &calls {
        let answer = ask(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        id += 1;
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert!(
            answer["result"]["structuredContent"].is_object(),
            "{tool}: {answer}"
        );
    }
    drop(to);
    let status = loop {
        if let Some(status) = capture.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "capture did not exit within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let peak = peak.finish();
    let said = said.join().unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    assert_eq!(
        received,
        std::fs::read(&sent).unwrap(),
        "capture changed what the server sent"
    );
    assert!(peak <= CAPTURE_PEAK, "capture peaked at {} MiB", peak >> 20);
    assert!(
        said.lines()
            .any(|l| l.starts_with("mcpeval-capture: warning: ") && l.contains("schema")),
        "no warning about the schemas it skipped: {said}"
    );
    match remote.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("something fetched a remote reference: {other:?}"),
    }

    let records = in_call_order(&store.records());
    assert_eq!(records.len(), calls.len(), "{records:#?}");
    for (record, (tool, _)) in records.iter().zip(&calls) {
        assert_eq!(record["tool"], *tool, "{record}");
        assert_eq!(record["outcome"], "ok", "{record}");
        // A verdict, where there is one, is well formed.
        if let Some(contract) = record.get("contract") {
            match contract["kept"] {
                Value::Bool(true) => assert_eq!(contract, &json!({"kept": true})),
                Value::Bool(false) => assert!(
                    contract["at"].is_string() && contract["keyword"].is_string(),
                    "{record}"
                ),
                _ => panic!("{record}"),
            }
        }
    }
    // The sane tool is checked before and after the hostile schemas, and
    // no result that breaks a hostile schema is passed as kept.
    let broken = json!({"kept": false, "at": "/status", "keyword": "enum"});
    assert_eq!(records[0]["contract"], broken);
    assert_eq!(records[calls.len() - 2]["contract"], broken);
    assert_eq!(records[calls.len() - 1]["contract"], json!({"kept": true}));
    for record in &records {
        let tool = record["tool"].as_str().unwrap();
        if ["anyof_bomb", "regex_bomb"].contains(&tool) {
            assert_ne!(record["contract"]["kept"], true, "{record}");
        }
        // A loop that never steps into the result makes the SDK recurse
        // until it raises on every result: no verdict, rather than kept.
        if ["loop_self", "loop_mutual"].contains(&tool) {
            assert_eq!(record.get("contract"), None, "{record}");
        }
    }
}
