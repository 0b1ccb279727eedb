//! `mcpeval-probe` against the switchable fixture server and a real one:
//! each probe green and red, the era fallback, protocol breaks, the signed
//! result, the credit binding and the refusals, as users see them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use store::signed::Signed;

use serde_json::{Value, json};
use shared::home::Home;
use shared::probe_result::ProbeResult;
use store::salt::Salt;

use crate::support::{Deps, Store, contains, fixture, measure, text};

const F: &str = "finding-0123456789abcdef";
const MARK: &str = "SECRET-7f3a";

/// A store, a private copy of the fixture server, and its log.
struct Bench {
    store: Store,
    server: PathBuf,
    log: PathBuf,
    manifest: PathBuf,
}

/// A finished probe run, as text (shared with the HTTP probe tests).
pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn result(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", self.stdout, self.stderr))
    }

    pub fn binding(&self) -> String {
        self.result()["binding"].as_str().unwrap().to_owned()
    }
}

fn case(id: &str, probe: &str, tool: &str) -> Value {
    json!({"id": id, "finding": F, "probe": probe, "tool": tool, "timeout_ms": 3000})
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    base[key] = value;
    base
}

impl Bench {
    fn new() -> Bench {
        let store = Store::new();
        let server = store.scratch().join("server.py");
        std::fs::copy(fixture("probe_server.py"), &server).unwrap();
        let log = store.scratch().join("server.log");
        let manifest = store.scratch().join("mcp-eval.manifest.json");
        Bench {
            store,
            server,
            log,
            manifest,
        }
    }

    /// Writes the manifest with the given cases and one sandbox.
    fn cases(&self, cases: Value) -> &Bench {
        let doc = json!({"manifest_version": 1,
            "sandboxes": {"fixture": {"declaration": "a private copy of the fixture; no network"}},
            "cases": cases});
        std::fs::write(&self.manifest, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        self
    }

    fn server_argv(&self, server_args: &[&str]) -> Vec<String> {
        let mut argv = vec!["python3".to_owned(), self.server.display().to_string()];
        argv.extend(server_args.iter().map(|a| a.to_string()));
        argv
    }

    fn run(&self, case: &str, server_args: &[&str]) -> Run {
        self.run_with(&[], case, server_args)
    }

    fn run_with(&self, flags: &[&str], case: &str, server_args: &[&str]) -> Run {
        let argv = self.server_argv(server_args);
        self.run_argv(flags, case, &argv)
    }

    fn run_argv(&self, flags: &[&str], case: &str, argv: &[String]) -> Run {
        let mut cmd = self.store.cmd("mcpeval-probe");
        cmd.arg("--manifest")
            .arg(&self.manifest)
            .args(["--case", case])
            .args(flags)
            .arg("--")
            .args(argv)
            .env("PROBE_FIXTURE_LOG", &self.log);
        finish(cmd.output().unwrap())
    }

    /// Every line the server processes received, parsed.
    fn log_lines(&self) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(&self.log) else {
            return Vec::new();
        };
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn methods(&self) -> Vec<String> {
        self.log_lines()
            .iter()
            .map(|l| match l.get("method") {
                Some(m) => m.as_str().unwrap().to_owned(),
                None if l["fixture"] == "start" => "start".to_owned(),
                None => "reply".to_owned(),
            })
            .collect()
    }

    fn salt(&self) -> Salt {
        Salt::load(&Home::at(&self.store.home())).unwrap().unwrap()
    }

    /// A `findings` table in index.db, as promote writes it.
    fn index_finding(&self, rate: f64, class: &str) {
        crate::support::private_dir(&self.store.home());
        let script = "import sqlite3, sys\n\
c = sqlite3.connect(sys.argv[1])\n\
c.execute('CREATE TABLE findings(id TEXT PRIMARY KEY, failure_rate REAL, defect_class TEXT)')\n\
c.execute('INSERT INTO findings VALUES (?, ?, ?)', (sys.argv[2], float(sys.argv[3]), sys.argv[4]))\n\
c.commit()\n";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(self.store.home().join("index.db"))
            .args([F, &rate.to_string(), class])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

impl Bench {
    /// A `findings` table in index.db naming what finding F is about.
    fn index_subject(&self, server: &str, tool: &str) {
        crate::support::private_dir(&self.store.home());
        let script = "import sqlite3, sys\n\
c = sqlite3.connect(sys.argv[1])\n\
c.execute('CREATE TABLE findings(id TEXT PRIMARY KEY, server TEXT, tool TEXT, kind TEXT, err_codes TEXT)')\n\
c.execute('INSERT INTO findings VALUES (?, ?, ?, \\'error\\', \\'[]\\')', (sys.argv[2], sys.argv[3], sys.argv[4]))\n\
c.commit()\n";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(self.store.home().join("index.db"))
            .args([F, server, tool])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }

    /// Runs every case of the manifest (`--all`).
    fn run_all(&self) -> Run {
        let mut cmd = self.store.cmd("mcpeval-probe");
        cmd.arg("--manifest")
            .arg(&self.manifest)
            .arg("--all")
            .arg("--")
            .args(self.server_argv(&[]))
            .env("PROBE_FIXTURE_LOG", &self.log);
        finish(cmd.output().unwrap())
    }
}

pub fn finish(out: Output) -> Run {
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

/// Asserts the verdict fields of a result and its exit status.
#[track_caller]
pub fn expect(run: &Run, status: i32, result: &str, reason: Value, detail: Value, attempts: u64) {
    let r = run.result();
    assert_eq!(
        (
            run.status,
            r["result"].as_str().unwrap(),
            &r["reason"],
            &r["detail"],
            r["attempts"].as_u64().unwrap()
        ),
        (status, result, &reason, &detail, attempts),
        "stderr: {}",
        run.stderr
    );
}

#[track_caller]
fn green(run: &Run, attempts: u64) {
    expect(run, 0, "green", Value::Null, Value::Null, attempts);
}

#[track_caller]
fn red(run: &Run, reason: &str, detail: &str, attempts: u64) {
    expect(run, 1, "red", json!(reason), json!(detail), attempts);
}

#[track_caller]
pub fn transport(run: &Run, reason: &str, detail: &str, attempts: u64) {
    expect(
        run,
        5,
        "transport-error",
        json!(reason),
        json!(detail),
        attempts,
    );
}

fn status_case(expect: Value) -> Value {
    with(
        with(
            case("status", "instruction-fidelity", "status"),
            "expect",
            expect,
        ),
        "sandbox",
        json!("fixture"),
    )
}

#[test]
fn instruction_fidelity_green_prints_the_whole_result() {
    let b = Bench::new();
    b.cases(json!([status_case(json!({"outcome": "ok",
        "required_result_fields": ["count"],
        "equals": {"count": 3},
        "required_result_paths": ["/structuredContent/nothing", "/content/0/text"],
        "equals_paths": {"/structuredContent/status": "ready", "/structuredContent/a~1b": "slash",
                         "/structuredContent/m~0n": "tilde", "/structuredContent/nothing": null}}))]));
    let run = b.run("status", &[]);
    green(&run, 1);
    assert_eq!(run.stderr, "");
    assert!(run.stdout.ends_with("}\n") && run.stdout.lines().count() == 1);
    let r = run.result();
    let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    // Every field but contract, which only an output-schema violation has.
    let mut fields = shared::probe_result::FIELDS.to_vec();
    fields.retain(|f| *f != "contract");
    fields.sort_unstable();
    assert_eq!(keys, fields);
    assert_eq!(r["schema"], "mcpeval.probe/1");
    assert_eq!(r["finding"], F);
    assert_eq!(r["case"], "status");
    assert_eq!(r["probe"], "instruction-fidelity");
    let parsed = ProbeResult::parse(run.stdout.trim_end()).unwrap();
    assert_eq!(
        uuid::Uuid::parse_str(&parsed.run_id)
            .unwrap()
            .get_version_num(),
        4
    );
    assert!(shared::probe_result::is_binding(&parsed.binding));
    assert!(parsed.started_at <= parsed.finished_at);
    assert!(!b.store.home().join("lifecycle.db").exists());
}

#[test]
fn instruction_fidelity_red_reasons() {
    let b = Bench::new();
    b.cases(json!([
        status_case(
            json!({"outcome": "ok", "equals_paths": {"/structuredContent/status": "ready"}})
        ),
        with(
            case("missing", "instruction-fidelity", "status"),
            "expect",
            json!({"outcome": "ok", "required_result_paths": ["/structuredContent/item"]})
        ),
        with(
            case("want-error", "instruction-fidelity", "status"),
            "expect",
            json!({"outcome": "error"})
        ),
        with(
            case("want-ok", "instruction-fidelity", "fail"),
            "arguments",
            json!({"code": -32603})
        ),
        with(
            with(
                case("code", "instruction-fidelity", "fail"),
                "arguments",
                json!({"code": -32603})
            ),
            "expect",
            json!({"outcome": "error", "error_code": -32602})
        ),
        with(
            with(
                case("code-ok", "instruction-fidelity", "fail"),
                "arguments",
                json!({"code": -32602})
            ),
            "expect",
            json!({"outcome": "error", "error_code": -32602})
        ),
    ]));
    let run = b.run("status", &["--status", "pending"]);
    red(&run, "not-equal", "/structuredContent/status", 1);
    assert_eq!(
        run.stderr,
        "mcpeval-probe: red: case status not-equal: /structuredContent/status\n  \
hint: A result field differs from the value the case expects: return what the contract promises.\n"
    );
    red(
        &b.run("missing", &[]),
        "missing-path",
        "/structuredContent/item",
        1,
    );
    red(
        &b.run("want-error", &[]),
        "expected-error-got-ok",
        "the call succeeded",
        1,
    );
    red(
        &b.run("want-ok", &[]),
        "expected-ok-got-error",
        "JSON-RPC error -32603",
        1,
    );
    red(
        &b.run("code", &[]),
        "error-code",
        "expected error code -32602, got -32603",
        1,
    );
    green(&b.run("code-ok", &[]), 1);
}

#[test]
fn text_format_is_one_line_for_people() {
    let b = Bench::new();
    b.cases(json!([status_case(
        json!({"outcome": "ok", "equals": {"status": "ready"}})
    )]));
    let run = b.run_with(&["--format", "text"], "status", &["--status", "pending"]);
    assert_eq!(run.status, 1);
    let words: Vec<&str> = run.stdout.trim_end().split(' ').collect();
    assert_eq!(run.stdout.lines().count(), 1);
    assert_eq!(
        words[..5],
        [
            F,
            "case=status",
            "probe=instruction-fidelity",
            "result=red",
            "attempts=1"
        ]
    );
    assert!(shared::probe_result::is_binding(
        words[5].strip_prefix("binding=").unwrap()
    ));
    assert!(uuid::Uuid::parse_str(words[6].strip_prefix("run=").unwrap()).is_ok());
    assert_eq!(
        words[7..],
        ["reason=not-equal", "detail=\"/structuredContent/status\""]
    );
    let ok = b.run_with(&["--format", "text"], "status", &[]);
    assert_eq!(ok.status, 0);
    assert_eq!(ok.stdout.trim_end().split(' ').count(), 7, "{}", ok.stdout);
}

#[test]
fn every_call_is_journaled_with_origin_probe() {
    let b = Bench::new();
    b.cases(json!([with(
        with(
            case("honest", "error-honesty", "honesty"),
            "arguments",
            json!({"job": "job_1", "n": 2})
        ),
        "attempts",
        json!(4)
    )]));
    let run = b.run("honest", &["--honesty", "honest"]);
    green(&run, 4);
    let run_id = run.result()["run_id"].as_str().unwrap().to_owned();
    let records = b.store.records();
    assert_eq!(records.len(), 4);
    let session = format!(
        "s-{}",
        b.salt()
            .id16(&[uuid::Uuid::parse_str(&run_id).unwrap().as_bytes()])
    );
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r["schema"], "mcpeval.call/1");
        assert_eq!(r["origin"], "probe");
        assert_eq!(r["transport"], "stdio");
        assert_eq!(r["server"], "probe-fixture");
        assert_eq!(r["tool"], "honesty");
        assert_eq!(r["identity"]["session"], session.as_str());
        assert_eq!(r["identity"]["seq"], i as u64 + 1);
        assert_eq!(r["args_shape"], json!({"job": "string", "n": "integer"}));
        assert_eq!(r["advertised"], Value::Null);
    }
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["error", "ok", "error", "ok"]);
    assert_eq!(records[0]["error"]["channel"], "tool");
    assert_eq!(records[0]["error"]["retryable"], true);
    assert!(!contains(&b.store.all_bytes(), MARK));
    assert!(!contains(&b.store.all_bytes(), "job_1"));
}

/// For each seed, the attempt (1-based) at which the fixture's `flaky`
/// fails first within `n` calls at failure rate `p`, from the same RNG.
fn first_failures(seeds: std::ops::RangeInclusive<u32>, p: f64, n: u32) -> Vec<Option<u32>> {
    let script = format!(
        "import random\n\
for seed in range({}, {}):\n    \
rng = random.Random(seed)\n    \
hit = [i + 1 for i in range({n}) if rng.random() < {p}]\n    \
print(hit[0] if hit else 0)\n",
        seeds.start(),
        seeds.end() + 1
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .map(|l| match l.parse().unwrap() {
            0 => None,
            i => Some(i),
        })
        .collect()
}

#[test]
fn degradation_sized_from_the_index_catches_a_30_percent_failure_rate() {
    let b = Bench::new();
    b.cases(json!([case("flaky", "degradation", "flaky")]));
    b.index_finding(0.3, "transient");
    // ceil(ln 0.05 / ln 0.7) = 9 attempts.
    let expected = first_failures(1..=40, 0.3, 9);
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..=40)
            .map(|seed: u32| {
                let b = &b;
                scope.spawn(move || {
                    let argv = vec![
                        "python3".to_owned(),
                        b.server.display().to_string(),
                        "--fail-rate".to_owned(),
                        "0.3".to_owned(),
                        "--seed".to_owned(),
                        seed.to_string(),
                    ];
                    b.run_argv(&[], "flaky", &argv)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut reds = 0;
    for (run, first) in runs.iter().zip(&expected) {
        match first {
            Some(i) => {
                reds += 1;
                red(
                    run,
                    "attempt-failed",
                    &format!("attempt {i} of 9: tool error"),
                    u64::from(*i),
                );
            }
            None => green(run, 9),
        }
        assert_eq!(run.stderr.matches("note:").count(), 0, "{}", run.stderr);
    }
    assert_eq!(reds, expected.iter().filter(|f| f.is_some()).count());
    assert!(reds >= 38, "red in only {reds} of 40 runs");
    assert_eq!(
        reds, 39,
        "Python's seeded random() is stable across releases"
    );

    let repaired = b.run("flaky", &["--fail-rate", "0"]);
    green(&repaired, 9);
}

#[test]
fn degradation_without_a_failure_rate_runs_the_cap() {
    let b = Bench::new();
    b.cases(json!([
        case("flaky", "degradation", "flaky"),
        with(case("five", "degradation", "flaky"), "attempts", json!(5)),
        with(
            case("slow", "degradation", "slow"),
            "timeout_ms",
            json!(200)
        ),
    ]));
    let run = b.run("flaky", &[]);
    green(&run, 100);
    assert_eq!(
        run.stderr,
        format!(
            "mcpeval-probe: note: no failure rate for {F} in the index; running the cap of 100 attempts\n"
        )
    );
    assert_eq!(b.store.records().len(), 100);
    let five = b.run("five", &[]);
    green(&five, 5);
    assert_eq!(five.stderr, "");
    red(
        &b.run("slow", &[]),
        "timeout",
        "attempt 1 of 100: no response within 200 ms",
        1,
    );
}

#[test]
fn error_honesty_contracts() {
    let b = Bench::new();
    let honesty =
        |id: &str, n: u64| with(case(id, "error-honesty", "honesty"), "attempts", json!(n));
    b.cases(json!([
        honesty("six", 6),
        honesty("five", 5),
        case("sized", "error-honesty", "honesty")
    ]));
    // error, ok, error, ok, …: every retryable error recovers.
    green(&b.run("six", &["--honesty", "honest"]), 6);
    // The fifth attempt errs; its follow-up attempt shows the recovery.
    green(&b.run("five", &["--honesty", "honest"]), 6);
    red(
        &b.run("six", &["--honesty", "lying-retryable"]),
        "retryable-not-recovered",
        "the retryable error of attempt 1 was not followed by a success within 7 attempts",
        7,
    );
    // Two non-retryable errors in a row end the run green.
    green(&b.run("six", &["--honesty", "permanent"]), 2);
    red(
        &b.run("six", &["--honesty", "lying-permanent"]),
        "non-retryable-not-repeated",
        "attempt 2 succeeded right after a non-retryable error",
        2,
    );
    red(
        &b.run("six", &["--honesty", "unreported"]),
        "retryable-unreported",
        "attempt 1: tool error 500 without a boolean retryable",
        1,
    );
    green(&b.run("six", &["--honesty", "ok"]), 6);
    let sized = b.run("sized", &["--honesty", "ok"]);
    green(&sized, 20);
    assert!(sized.stderr.contains("running the cap of 20 attempts"));
}

#[test]
fn workflow_steps_run_in_order_and_stop_at_the_first_red() {
    let b = Bench::new();
    let read = json!({"tool": "read", "expect": {"outcome": "ok",
        "required_result_fields": ["item"], "equals": {"item": "item_1"}}});
    b.cases(json!([
        {"id": "create-then-read", "finding": F, "probe": "workflow", "steps": [
            {"tool": "create", "arguments": {"name": "item_1"}}, read]},
        {"id": "read-first", "finding": F, "probe": "workflow", "steps": [
            read, {"tool": "create", "arguments": {"name": "item_1"}}]},
    ]));
    green(&b.run("create-then-read", &[]), 2);
    red(
        &b.run("create-then-read", &["--item", "no"]),
        "missing-path",
        "step 2: /structuredContent/item",
        2,
    );
    red(
        &b.run("read-first", &[]),
        "expected-ok-got-error",
        "step 1: tool error 404",
        1,
    );
    assert_eq!(b.store.records().len(), 5);
}

#[test]
fn malformed_results_are_transport_errors_that_echo_nothing() {
    let b = Bench::new();
    b.cases(json!([
        case("null", "instruction-fidelity", "malformed_null"),
        case("yes", "instruction-fidelity", "malformed_yes"),
        with(
            case("list", "degradation", "malformed_list"),
            "attempts",
            json!(3)
        ),
    ]));
    let cases = [
        ("null", "call 1: the result is not an object"),
        ("yes", "call 1: isError is not a boolean"),
        ("list", "call 1: the result is not an object"),
    ];
    for (id, detail) in cases {
        let run = b.run_with(&["--format", "text"], id, &[]);
        assert_eq!(run.status, 5, "{}", run.stderr);
        assert!(
            run.stdout
                .contains("result=transport-error attempts=1 binding="),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout
                .ends_with(&format!(" reason=malformed-result detail={detail:?}\n"))
        );
        let json_run = b.run(id, &[]);
        transport(&json_run, "malformed-result", detail, 1);
        assert_eq!(
            json_run.stderr,
            format!(
                "mcpeval-probe: error: transport failure: case {id} malformed-result: {detail}\n  \
hint: Return a CallToolResult object with a boolean isError.\n"
            )
        );
        for out in [&run.stdout, &run.stderr, &json_run.stdout, &json_run.stderr] {
            assert!(!out.contains(MARK), "{out}");
            assert!(!out.contains("yes-"), "{out}");
        }
    }
    let records = b.store.records();
    assert_eq!(records.len(), 6);
    for r in &records {
        assert_eq!(
            (&r["outcome"], &r["unknown"]),
            (&json!("unknown"), &json!("malformed"))
        );
        assert!(r.get("error").is_none());
    }
    assert!(!contains(&b.store.all_bytes(), MARK));
}

#[test]
fn a_timeout_cancels_the_call_and_is_red() {
    let b = Bench::new();
    b.cases(json!([with(
        case("slow", "instruction-fidelity", "slow"),
        "timeout_ms",
        json!(300)
    )]));
    let run = b.run("slow", &["--sleep", "5"]);
    red(&run, "timeout", "no response within 300 ms", 1);
    let lines = b.log_lines();
    let call = lines.iter().find(|l| l["method"] == "tools/call").unwrap();
    let cancel = lines
        .iter()
        .find(|l| l["method"] == "notifications/cancelled")
        .expect("the fixture logged the cancellation");
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    assert_eq!(cancel["params"]["reason"], "timeout");
    assert!(cancel.get("id").is_none(), "a notification has no id");
    let records = b.store.records();
    assert_eq!(
        (
            &records[0]["outcome"],
            &records[0]["unknown"],
            &records[0]["duration_ms"]
        ),
        (&json!("unknown"), &json!("unanswered"), &Value::Null)
    );
}

#[test]
fn a_server_that_stops_reading_cannot_stall_the_probe() {
    let b = Bench::new();
    // The second call's line is far larger than a pipe holds.
    let blob = "x".repeat(900 * 1024);
    b.cases(
        json!([{"id": "deaf", "finding": F, "probe": "workflow", "timeout_ms": 1000,
        "steps": [{"tool": "deaf"}, {"tool": "status", "arguments": {"blob": blob}}]}]),
    );
    let started = std::time::Instant::now();
    let run = b.run("deaf", &["--sleep", "60"]);
    red(&run, "timeout", "step 2: no response within 1000 ms", 2);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_server_ignoring_stdin_and_sigterm_is_killed() {
    let b = Bench::new();
    b.cases(json!([case("deaf", "instruction-fidelity", "deaf")]));
    let started = std::time::Instant::now();
    let run = b.run("deaf", &["--sleep", "60", "--ignore-term"]);
    green(&run, 1);
    // Two grace periods of 2 s: after closing stdin, then after SIGTERM.
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(4) && took < std::time::Duration::from_secs(15),
        "took {took:?}"
    );
    let pid = b.log_lines()[0]["pid"].as_u64().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server outlived the probe"
    );
}

#[test]
fn a_server_writing_on_after_its_answer_never_piles_up_in_the_probe() {
    let b = Bench::new();
    b.cases(json!([case("chatter", "instruction-fidelity", "chatter")]));
    // 128 MiB of notifications written after the answer, while the probe
    // judges it and closes the server's stdin: held, they would be several
    // times this test's limit.
    let argv = b.server_argv(&["--chatter", "128"]);
    let mut cmd = b.store.cmd("mcpeval-probe");
    cmd.arg("--manifest")
        .arg(&b.manifest)
        .args(["--case", "chatter", "--"])
        .args(&argv)
        .env("PROBE_FIXTURE_LOG", &b.log);
    let ran = measure(cmd, None, std::time::Duration::from_secs(60));
    let run = Run {
        status: ran.status,
        stdout: text(&ran.stdout),
        stderr: text(&ran.stderr),
    };
    green(&run, 1);
    eprintln!("mcpeval-probe: peak {} MiB", ran.peak >> 20);
    assert!(
        ran.peak <= 64 << 20,
        "the probe peaked at {} MiB",
        ran.peak >> 20
    );
    // What the server wrote on its way out was read and dropped, so it
    // finished and exited by itself instead of waiting on a full pipe
    // until SIGTERM.
    assert_eq!(
        b.log_lines().last().unwrap()["fixture"],
        json!("chatter-done"),
        "{:?}",
        b.log_lines().last()
    );
}

#[test]
fn modern_servers_get_meta_and_legacy_ones_a_fresh_initialize() {
    let b = Bench::new();
    b.cases(json!([status_case(
        json!({"outcome": "ok", "equals_paths": {"/structuredContent/status": "ready"}})
    )]));
    // Modern only: initialize would fail, and tools/call needs the _meta.
    green(
        &b.run("status", &["--discover", "modern", "--legacy", "no"]),
        1,
    );
    // The tools are listed before the first call, for their outputSchemas.
    assert_eq!(
        b.methods(),
        ["start", "server/discover", "tools/list", "tools/call"]
    );
    let list = b
        .log_lines()
        .into_iter()
        .find(|l| l["method"] == "tools/list")
        .unwrap();
    assert_eq!(
        list["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    let call = b
        .log_lines()
        .into_iter()
        .find(|l| l["method"] == "tools/call")
        .unwrap();
    assert_eq!(
        call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );

    // Legacy: whatever discover gets, initialize follows in a new process;
    // silence costs one handshake timeout first.
    for mode in [
        "error",
        "invalid",
        "unsupported",
        "garbage",
        "exit",
        "silent",
    ] {
        std::fs::remove_file(&b.log).unwrap();
        let started = std::time::Instant::now();
        let run = b.run_with(
            &["--handshake-timeout", "400"],
            "status",
            &["--discover", mode],
        );
        green(&run, 1);
        let mut want = vec!["start", "server/discover"];
        if mode == "silent" {
            want.push("notifications/cancelled");
        }
        want.extend([
            "start",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
        ]);
        assert_eq!(b.methods(), want, "--discover {mode}");
        let lines = b.log_lines();
        let init = lines.iter().find(|l| l["method"] == "initialize").unwrap();
        assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
        let call = lines.iter().find(|l| l["method"] == "tools/call").unwrap();
        assert!(call["params"].get("_meta").is_none(), "--discover {mode}");
        if mode == "silent" {
            assert!(started.elapsed() >= std::time::Duration::from_millis(400));
        }
    }

    // Neither era: a handshake failure.
    transport(
        &b.run("status", &["--discover", "error", "--legacy", "no"]),
        "handshake",
        "server/discover failed and initialize was answered with JSON-RPC error -32601",
        0,
    );
}

#[test]
fn protocol_breaks_are_transport_errors() {
    let b = Bench::new();
    b.cases(json!([
        case("non-json", "instruction-fidelity", "non_json"),
        case("wrong-id", "instruction-fidelity", "wrong_id"),
        case("bad-message", "instruction-fidelity", "bad_message"),
        case("exit", "instruction-fidelity", "exit"),
        case("status", "instruction-fidelity", "status"),
    ]));
    // Line 1 answers server/discover, line 2 tools/list.
    transport(
        &b.run("non-json", &[]),
        "non-json-line",
        "stdout line 3 is not a JSON message",
        1,
    );
    transport(
        &b.run("wrong-id", &[]),
        "id-mismatch",
        "a response carried an id no pending request had",
        1,
    );
    transport(
        &b.run("bad-message", &[]),
        "invalid-message",
        "a response has neither or both of result and error",
        1,
    );
    transport(
        &b.run("exit", &[]),
        "server-exited",
        "the server exited with status 3 before answering tools/call",
        1,
    );
    let missing = b.run_argv(&[], "status", &["no-such-server-xyz".to_owned()]);
    transport(
        &missing,
        "server-start",
        "cannot start no-such-server-xyz: No such file or directory (os error 2)",
        0,
    );
    // A banner on stdout breaks both handshakes.
    let banner = vec![
        "python3".to_owned(),
        fixture("misbehaving_server.py").display().to_string(),
        "--banner".to_owned(),
    ];
    transport(
        &b.run_argv(&[], "status", &banner),
        "non-json-line",
        "stdout line 1 is not a JSON message",
        0,
    );
    for (id, _) in [("non-json", 0), ("wrong-id", 0)] {
        let run = b.run(id, &[]);
        assert!(!run.stdout.contains(MARK) && !run.stderr.contains(MARK));
    }
}

/// A server that dies before its handshake (a missing file, a failed
/// import) said why on its stderr: the error shows the last 20 lines of
/// it in order, escaped, names --server-stderr and blames nobody; the
/// signed result on stdout carries none of it.
#[test]
fn a_server_that_exits_before_its_handshake_shows_its_last_stderr_lines() {
    let b = Bench::new();
    b.cases(json!([case("status", "instruction-fidelity", "status")]));
    let argv = vec![
        "python3".to_owned(),
        fixture("stderr_then_exit.py").display().to_string(),
    ];
    let run = b.run_argv(&[], "status", &argv);
    transport(
        &run,
        "server-exited",
        "the server exited with status 3 before answering initialize",
        0,
    );
    assert!(!run.stdout.contains("stderr line"), "{}", run.stdout);
    let shown: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("stderr line"))
        .collect();
    let expected: Vec<String> = (11..=30)
        .map(|n| {
            let mark = if n == 25 { "\\u{1b}[31m" } else { "" };
            format!("    stderr line {n}{mark}")
        })
        .collect();
    assert_eq!(shown, expected, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the server's stderr (its last 20 of 30 lines; --server-stderr shows all"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\x1b'), "{}", run.stderr);
    assert!(!run.stderr.contains("closed stdout"), "{}", run.stderr);

    // With --server-stderr the server's own stderr arrives whole instead.
    let whole = b.run_argv(&["--server-stderr"], "status", &argv);
    assert_eq!(whole.status, 5, "{}", whole.stderr);
    assert!(
        whole.stderr.starts_with("stderr line 1\n"),
        "{}",
        whole.stderr
    );
    assert!(
        !whole.stderr.contains("the server's stderr ("),
        "{}",
        whole.stderr
    );
}

#[test]
fn server_requests_are_answered() {
    let b = Bench::new();
    b.cases(json!([with(
        case("ask", "instruction-fidelity", "ask_client"),
        "expect",
        json!({"outcome": "ok", "equals_paths": {"/structuredContent/answered": "ping-and-roots"}})
    )]));
    green(&b.run("ask", &[]), 1);
}

#[test]
fn a_real_server_green_and_red() {
    let b = Bench::new();
    let structured = |conditions: &str| {
        json!({"id": format!("weather-{}", conditions.to_lowercase()), "finding": F,
               "probe": "instruction-fidelity", "tool": "get-structured-content",
               "arguments": {"location": "New York"},
               "expect": {"outcome": "ok", "required_result_paths": ["/content/0/text"],
                          "equals_paths": {"/structuredContent/conditions": conditions,
                                           "/structuredContent/temperature": 33}}})
    };
    b.cases(json!([structured("Cloudy"), structured("Sunny")]));
    let argv = vec![Deps::server_everything().display().to_string()];
    green(&b.run_argv(&[], "weather-cloudy", &argv), 1);
    red(
        &b.run_argv(&[], "weather-sunny", &argv),
        "not-equal",
        "/structuredContent/conditions",
        1,
    );
    let records = b.store.records();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["server"], "mcp-servers/everything");
    assert_eq!(records[0]["args_shape"], json!({"location": "string"}));
    assert_eq!(records[0]["origin"], "probe");
}

#[test]
fn the_mac_verifies_only_untouched_results_from_this_store() {
    let b = Bench::new();
    b.cases(json!([status_case(
        json!({"outcome": "ok", "equals": {"status": "ready"}})
    )]));
    let run = b.run("status", &["--status", "pending"]);
    assert_eq!(run.status, 1);
    let result = ProbeResult::parse(run.stdout.trim_end()).unwrap();
    let salt = b.salt();
    assert!(result.verify(&salt));
    let original: Value = run.result();
    let edits = [
        ("result", json!("green")),
        ("reason", json!("timeout")),
        ("detail", json!("/structuredContent/x")),
        ("attempts", json!(2)),
        ("binding", json!("b-0000000000000000")),
        ("run_id", json!("0f8fad5b-d9cb-469f-a165-70867728950e")),
        ("finished_at", json!("2099-01-01T00:00:00.000Z")),
    ];
    for (field, value) in edits {
        let mut edited = original.clone();
        edited[field] = value;
        // Some edits would not even parse as a result; the MAC alone must catch every one.
        let parsed: ProbeResult = serde_json::from_value(edited).unwrap();
        assert!(!parsed.verify(&salt), "editing {field} still verifies");
    }
    let other = Store::new();
    let other_salt = Salt::load_or_create(&Home::at(&other.home())).unwrap();
    assert!(!result.verify(&other_salt));
}

#[test]
fn the_binding_follows_what_ran_and_nothing_else() {
    let b = Bench::new();
    let base = status_case(json!({"outcome": "ok", "equals": {"status": "ready"}}));
    b.cases(json!([base.clone()]));
    let binding = |b: &Bench, args: &[&str]| {
        let run = b.run("status", args);
        assert_eq!(run.status, 0, "{}", run.stderr);
        run.result()["binding"].as_str().unwrap().to_owned()
    };
    let first = binding(&b, &[]);
    assert_eq!(first, binding(&b, &[]), "a second run binds the same");

    // Reformatted, keys reordered, an unrelated case added: same binding.
    let text = format!(
        "{{ \"cases\" : [ {{\"id\":\"other\",\"finding\":\"{F}\",\"probe\":\"degradation\",\"tool\":\"flaky\"}},\n\
           {{\"timeout_ms\":3000,\"tool\":\"status\",\"sandbox\":\"fixture\",\"probe\":\"instruction-fidelity\",\n\
             \"id\":\"status\",\"finding\":\"{F}\",\"expect\":{{\"equals\":{{\"status\":\"ready\"}},\"outcome\":\"ok\"}}}} ],\n\
           \"sandboxes\": {{\"fixture\": {{\"declaration\": \"a private copy of the fixture; no network\"}}}},\n\
           \"manifest_version\": 1 }}"
    );
    std::fs::write(&b.manifest, text).unwrap();
    assert_eq!(binding(&b, &[]), first);

    let mut changed = Vec::new();
    b.cases(json!([with(base.clone(), "timeout_ms", json!(2999))]));
    changed.push(("timeout", binding(&b, &[])));
    let doc = json!({"manifest_version": 1,
        "sandboxes": {"fixture": {"declaration": "a shared staging copy"}}, "cases": [base.clone()]});
    std::fs::write(&b.manifest, doc.to_string()).unwrap();
    changed.push(("sandbox declaration", binding(&b, &[])));
    b.cases(json!([base.clone()]));
    assert_eq!(binding(&b, &[]), first, "back to the first definition");
    changed.push((
        "server arguments",
        binding(&b, &["--name", "probe-fixture"]),
    ));
    let mut script = std::fs::read_to_string(&b.server).unwrap();
    script.push_str("# a harmless edit\n");
    std::fs::write(&b.server, script).unwrap();
    changed.push(("server script", binding(&b, &[])));
    for (what, other) in &changed {
        assert_ne!(other, &first, "changing the {what} kept the binding");
    }
}

#[test]
fn a_server_file_edited_during_the_run_yields_no_result() {
    let b = Bench::new();
    b.cases(json!([case("edit", "instruction-fidelity", "edit_self")]));
    let run = b.run("edit", &[]);
    assert_eq!(run.status, 6);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "mcpeval-probe: error: {} changed during the run: its bytes differ from those pinned at launch, \
so no result was produced\n  hint: run the probe again once the server's files are stable\n",
            b.server.display()
        )
    );
    assert_eq!(b.store.records().len(), 1, "the call itself was journaled");
}

#[test]
fn refusals_before_the_server_starts() {
    let b = Bench::new();
    b.cases(json!([
        status_case(json!({"outcome": "ok"})),
        with(
            case("holes", "instruction-fidelity", "status"),
            "arguments",
            json!({"job": "<fill:string>", "opts": {"n": "<fill:integer>", "ok": 1}})
        ),
        status_case(json!({"outcome": "ok"}))
            .as_object()
            .map(|m| {
                let mut m = m.clone();
                m.insert("id".into(), json!("oracle"));
                m.insert(
                    "expect".into(),
                    json!({"outcome": "ok", "equals": {"status": "ready"}}),
                );
                Value::Object(m)
            })
            .unwrap(),
    ]));
    let m = b.manifest.display().to_string();
    let refused = |run: &Run, status: i32, stderr: String| {
        assert_eq!(
            (run.status, run.stdout.as_str(), run.stderr.clone()),
            (status, "", stderr)
        );
    };
    refused(
        &b.run("nope", &[]),
        2,
        format!(
            "mcpeval-probe: error: {m} has no case \"nope\"; its cases are: status, holes, oracle\n"
        ),
    );
    refused(
        &b.run_with(&["--finding", "finding-ffffffffffffffff"], "status", &[]),
        2,
        format!(
            "mcpeval-probe: error: {m}: case \"status\" proves {F}, not finding-ffffffffffffffff; nothing was run\n  \
hint: pick the case written for that finding, or drop --finding\n"
        ),
    );
    let bad_flag = b.run_with(&["--finding", "F1"], "status", &[]);
    assert_eq!(bad_flag.status, 2);
    refused(
        &b.run("holes", &[]),
        4,
        format!(
            "mcpeval-probe: error: {m}: case \"holes\" still has 2 placeholder(s) to fill: \
/cases/1/arguments/job, /cases/1/arguments/opts/n; nothing was run\n  \
hint: replace each \"<fill:TYPE>\" with a real value of that type\n"
        ),
    );
    let no_oracle = format!(
        "mcpeval-probe: error: {m}: case \"status\" cannot prove a false-success repair: it needs an \
instruction-fidelity expectation, or a workflow step, with a result assertion or an expected error; \
nothing was run\n  hint: add required_result_paths or equals_paths that tell the bug from the repair, \
or expect an error\n"
    );
    refused(
        &b.run_with(&["--require-oracle"], "status", &[]),
        4,
        no_oracle.clone(),
    );
    assert!(!b.log.exists(), "no server was started");
    assert!(b.store.records().is_empty());
    green(&b.run_with(&["--require-oracle"], "oracle", &[]), 1);

    // The index classes the finding false-success: the same refusal.
    let c = Bench::new();
    c.cases(json!([status_case(json!({"outcome": "ok"}))]));
    c.index_finding(0.1, "false-success");
    let m = c.manifest.display().to_string();
    refused(
        &c.run("status", &[]),
        4,
        no_oracle.replace(&b.manifest.display().to_string(), &m),
    );
    assert!(!c.log.exists());
}

#[test]
fn a_damaged_index_is_unavailable_evidence() {
    let b = Bench::new();
    b.cases(json!([status_case(json!({"outcome": "ok"}))]));
    crate::support::private_dir(&b.store.home());
    let index = b.store.home().join("index.db");
    std::fs::write(&index, vec![7u8; 4096]).unwrap();
    let run = b.run("status", &[]);
    assert_eq!((run.status, run.stdout.as_str()), (3, ""));
    assert_eq!(
        run.stderr,
        format!(
            "mcpeval-probe: error: {}: cannot read findings: file is not a database\n  \
hint: rebuild the index with `mcpeval index --rebuild` and `mcpeval promote`\n",
            index.display()
        )
    );
    assert!(!b.log.exists());
}

#[test]
fn manifest_errors_name_the_file_and_the_value() {
    let b = Bench::new();
    b.cases(json!([with(
        status_case(json!({"outcome": "ok"})),
        "retries",
        json!(3)
    )]));
    let run = b.run("status", &[]);
    assert_eq!(run.status, 4);
    assert_eq!(run.stdout, "");
    let m = b.manifest.display();
    assert!(
        run.stderr.starts_with(&format!(
            "mcpeval-probe: error: {m}: at /cases/0/retries: unknown field `retries`, expected one of `id`, \
`finding`, `probe`, `sandbox`, `timeout_ms`, `tool`, `arguments`, `attempts`, `steps`, `expect` at line "
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.ends_with(
        "\n  hint: fix the file and run the command again; nothing was run or changed\n"
    ));
    b.cases(json!([status_case(
        json!({"outcome": "ok", "equals": {"status": "Job is ready!"}})
    )]));
    let prose = b.run("status", &[]);
    assert_eq!(
        (
            prose.status,
            prose.stderr.lines().next().unwrap().to_owned()
        ),
        (
            4,
            format!(
                "mcpeval-probe: error: {m}: at /cases/0/expect/equals/status: a string equality value must be an \
identifier: 1 to 128 characters from A-Z a-z 0-9 _ . : -, so a shared manifest never carries free text"
            )
        )
    );
    assert!(!b.log.exists());
}

#[test]
fn a_case_that_never_calls_the_findings_tool_is_refused_before_the_server_starts() {
    let b = Bench::new();
    b.index_subject("probe-fixture", "status");
    let workflow = |id: &str, tools: &[&str]| {
        let steps: Vec<Value> = tools.iter().map(|t| json!({"tool": t})).collect();
        json!({"id": id, "finding": F, "probe": "workflow", "timeout_ms": 3000, "steps": steps})
    };
    b.cases(json!([
        status_case(json!({"outcome": "ok"})),
        case("flaky", "degradation", "flaky"),
        case("honesty", "error-honesty", "honesty"),
        workflow("elsewhere", &["create", "read", "create"]),
        workflow("through", &["create", "status"]),
    ]));
    let m = b.manifest.display().to_string();
    for (id, called) in [
        ("flaky", "\"flaky\""),
        ("honesty", "\"honesty\""),
        ("elsewhere", "\"create\", \"read\""),
    ] {
        let run = b.run(id, &[]);
        assert_eq!(
            (run.status, run.stdout.as_str(), run.stderr.clone()),
            (
                4,
                "",
                format!(
                    "mcpeval-probe: error: {m}: case \"{id}\" calls {called} but never \"status\", \
the tool of {F}: its runs cannot prove that finding's repair; nothing was run\n  hint: make the case \
call \"status\" (a workflow: in at least one step), or run the case written for {F}\n"
                )
            )
        );
    }
    // --all checks every case first: one refusal and no server starts.
    let all = b.run_all();
    assert_eq!((all.status, all.stdout.as_str()), (4, ""), "{}", all.stderr);
    assert!(
        all.stderr.contains("case \"flaky\" calls \"flaky\""),
        "{}",
        all.stderr
    );
    assert!(!b.log.exists(), "no server was started");
    assert!(b.store.records().is_empty());
    green(&b.run("status", &[]), 1);
    green(&b.run("through", &[]), 2);
}

#[test]
fn a_server_naming_itself_otherwise_yields_no_result() {
    let b = Bench::new();
    b.index_subject("jobs", "status");
    b.cases(json!([status_case(json!({"outcome": "ok"}))]));
    for era in ["modern", "error"] {
        let run = b.run("status", &["--discover", era]);
        assert_eq!(
            (run.status, run.stdout.as_str(), run.stderr.as_str()),
            (
                6,
                "",
                format!(
                    "mcpeval-probe: error: the server is \"probe-fixture\" but {F} is about \
server \"jobs\": its runs earn that finding no credit; nothing was recorded\n  hint: run the case \
against the server the finding was captured from (its name is in `mcpeval findings --format json`; \
a server that gives no name is named by its executable's file name, or host:port over HTTP, as \
capture names it)\n"
                )
                .as_str()
            ),
            "era {era}"
        );
    }
    assert!(
        !b.methods().iter().any(|m| m == "tools/call"),
        "{:?}",
        b.methods()
    );
    assert!(
        b.store.records().is_empty(),
        "no call was made or journaled"
    );
    green(&b.run("status", &["--name", "jobs"]), 1);
    // A server that names itself nothing is named by its command, as
    // capture names it: not "jobs" either.
    assert_eq!(b.run("status", &["--name", ""]).status, 6);
}

#[test]
fn a_result_names_the_cases_tools_and_the_servers_own_name() {
    let b = Bench::new();
    b.cases(json!([
        status_case(json!({"outcome": "ok"})),
        {"id": "wf", "finding": F, "probe": "workflow", "timeout_ms": 3000,
         "steps": [{"tool": "create"}, {"tool": "status"}, {"tool": "create"}]},
    ]));
    // The store does not know F: the probe runs, and says what to check.
    let run = b.run("status", &[]);
    green(&run, 1);
    let r = run.result();
    assert_eq!(
        (&r["tools"], &r["server"]),
        (&json!(["status"]), &json!("probe-fixture"))
    );
    let wf = b.run("wf", &["--name", "x\u{7f}y"]);
    green(&wf, 3);
    assert!(wf.stdout.contains(r#""server":"x?y""#), "{}", wf.stdout);
    assert_eq!(wf.result()["tools"], json!(["create", "status"]));
    // A server that names itself nothing is named as capture names it.
    let unnamed = b.run("status", &["--name", ""]).result();
    assert_eq!(unnamed["server"], "python3", "{unnamed}");
    let unnamed = b.run("status", &["--name", "-"]).result();
    assert_eq!(unnamed["server"], "python3", "{unnamed}");
    let verified = ProbeResult::parse(&b.run("status", &[]).stdout).unwrap();
    assert!(verified.verify(&b.salt()));
}
