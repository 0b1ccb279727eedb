//! The proof rules (SPEC §7, "Proof"): a run that would also pass on the
//! unfixed server proves nothing, so it earns no credit. Each test is an
//! attack by someone who wants a finding closed without a fix (an agent
//! rewarded for closing findings), through the real binaries, and checks
//! that it records nothing; then that the honest run still counts.

use serde_json::{Value, json};

use crate::records::{self, Rec};
use crate::seeded::{filled_manifest, fixture_store};
use crate::serve::client_with;
use crate::support::{Store, fixture, text};
use crate::verify::{AS_OF, Bench, FIXTURE_SERVER, Run, findings, finish, succeed};

/// A bench whose finding comes from `recs` (server `probe-fixture`): two
/// sessions of ten calls to `tool`, each made by `rec`.
fn bench_from(tool: &str, false_success: bool, rec: impl Fn(u64, u64, u64) -> Rec) -> Bench {
    let store = Store::new();
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=10 {
            recs.push(rec(session * 100 + seq, session, seq).server(FIXTURE_SERVER));
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    succeed(&store, "mcpeval-index", &[]);
    if false_success {
        annotate_false_successes(&store);
        succeed(&store, "mcpeval-index", &[]);
    }
    succeed(
        &store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let all = findings(&store);
    let finding = all
        .iter()
        .find(|f| f["tool"] == tool)
        .unwrap_or_else(|| panic!("no finding on {tool}: {all:#?}"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let server = store.scratch().join("server.py");
    std::fs::copy(fixture("probe_server.py"), &server).unwrap();
    Bench {
        manifest: store.scratch().join("mcp-eval.manifest.json"),
        log: store.scratch().join("server.log"),
        store,
        server,
        finding,
    }
}

/// How the bench's server is broken.
#[derive(Clone, Copy)]
enum Bug {
    /// `status` fails with a tool error, as the finding's calls did.
    Fails,
    /// `status` answers "pending": a red run, but not the finding's failure.
    Pending,
}

/// Makes the bench's server a buggy one: the same file, other bytes.
fn break_server(b: &Bench, bug: Bug) {
    let text = std::fs::read_to_string(fixture("probe_server.py")).unwrap();
    let buggy = match bug {
        Bug::Fails => text.replace(
            "    if name == \"status\":\n",
            "    if name == \"status\":\n        return tool_error(rid, False)\n",
        ),
        Bug::Pending => text.replace(
            r#"STATUS = opt("--status", "ready")"#,
            r#"STATUS = opt("--status", "pending")"#,
        ),
    };
    assert_ne!(text, buggy);
    std::fs::write(&b.server, buggy).unwrap();
}

/// Makes the bench's server the repaired one again.
fn repair_server(b: &Bench) {
    std::fs::copy(fixture("probe_server.py"), &b.server).unwrap();
}

/// A red run against the buggy server, then the server repaired.
fn red_on_the_bug(b: &Bench, bug: Bug) {
    break_server(b, bug);
    let run = b.verify(&[]);
    assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
    repair_server(b);
}

/// Annotates every successful call of the store as a false success (so
/// a store of successes gets a false-success finding).
fn annotate_false_successes(store: &Store) {
    for rec in store.records() {
        if rec["outcome"] == "ok" {
            let event = rec["identity"]["event_id"].as_str().unwrap();
            succeed(
                store,
                "mcpeval-annotate",
                &[
                    "--event-id",
                    event,
                    "--kind",
                    "false-success",
                    "--note",
                    "said done",
                ],
            );
        }
    }
}

/// An error with a JSON-RPC code and the given `retryable`.
fn coded(event: u64, session: u64, seq: u64, tool: &str, code: i64, retryable: bool) -> Rec {
    let mut rec = Rec::error(event, session, seq, tool, Some(7));
    rec.0["error"]["channel"] = json!("jsonrpc");
    rec.0["error"]["code"] = json!(code);
    rec.0["error"]["retryable"] = json!(retryable);
    rec
}

/// A case of the bench's finding: `fields` over an instruction-fidelity
/// case named `c` calling `status`.
fn case(b: &Bench, fields: Value) -> Value {
    let mut case = json!({"id": "c", "finding": b.finding, "probe": "instruction-fidelity",
                          "sandbox": "fixture", "tool": "status", "timeout_ms": 3000});
    for (k, v) in fields.as_object().unwrap() {
        case[k] = v.clone();
    }
    case
}

impl Bench {
    /// Verifies case `c` against the fixture started with `server_args`.
    fn verify_c(&self, server_args: &[&str]) -> Run {
        self.verify_argv("c", &self.argv(server_args), &[])
    }

    /// The verification runs lifecycle.db holds.
    fn runs(&self) -> i64 {
        let conn = rusqlite::Connection::open(self.store.home().join("lifecycle.db")).unwrap();
        conn.query_row("SELECT count(*) FROM verifications", [], |r| r.get(0))
            .unwrap()
    }
}

/// A refusal: `status`, the words, no run recorded and the finding open.
#[track_caller]
fn refused(b: &Bench, run: &Run, status: i32, words: &str) {
    assert_eq!(run.status, status, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(words),
        "{words:?} not in {}",
        run.stderr
    );
    assert_eq!(run.stdout, "", "{}", run.stdout);
    assert_eq!(b.runs(), 0, "a refused run was recorded");
    assert_eq!(b.lifecycle().0, "open");
}

/// Rule 2: a server that gives no name, or an empty one, is named as
/// capture names it (its executable's file name), so it cannot stand in
/// for a named server; and a finding captured from a nameless server is
/// proved by that server.
#[test]
fn a_nameless_server_is_named_as_capture_names_it() {
    let b = Bench::new();
    for name in ["-", ""] {
        let run = b.verify(&["--name", name]);
        refused(
            &b,
            &run,
            6,
            &format!(
                "the server is \"python3\" but {} is about server \"probe-fixture\": its runs \
                 earn that finding no credit; nothing was recorded",
                b.finding
            ),
        );
    }
    // A finding of a server capture named by its command.
    let nameless = Bench::of("python3", "status");
    let run = nameless.verify(&["--name", "-"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let run = nameless.verify(&[]);
    assert_eq!(run.status, 6, "{}", run.stderr);
}

/// Rule 3: an expected error proves a repair only when the failures
/// themselves never carried it.
#[test]
fn an_expectation_the_failures_satisfy_earns_nothing() {
    let b = Bench::new();
    b.cases(json!([case(&b, json!({"expect": {"outcome": "error"}}))]));
    let run = b.verify_c(&[]);
    refused(
        &b,
        &run,
        4,
        "expects \"status\" to fail with any error, as it failed when",
    );
    assert!(
        run.stderr
            .contains("the unfixed server passes it, so it proves nothing")
    );

    // Failures with a code: that code proves nothing, another does.
    let coded = bench_from("fail", false, |e, s, q| {
        coded(e, s, q, "fail", -32602, false)
    });
    let expecting = |code: i64| {
        coded.cases(
            json!([{"id": "c", "finding": coded.finding, "probe": "instruction-fidelity",
            "sandbox": "fixture", "tool": "fail", "arguments": {"code": code},
            "expect": {"outcome": "error", "error_code": code}}]),
        );
        coded.verify_c(&[])
    };
    let run = expecting(-32602);
    refused(
        &coded,
        &run,
        4,
        "expects \"fail\" to fail with error code -32602, a code of the failures of",
    );
    assert!(
        run.stderr.contains("close the finding by hand"),
        "{}",
        run.stderr
    );
    let run = expecting(-32001);
    assert_eq!(run.status, 0, "{}", run.stderr);
}

/// Rule 3: an error-honesty probe passes a server that fails the same way
/// every time, so it proves only an error-honesty finding.
#[test]
fn an_error_honesty_probe_proves_only_error_honesty() {
    let b = Bench::new();
    b.cases(json!([case(&b, json!({"probe": "error-honesty"}))]));
    refused(
        &b,
        &b.verify_c(&[]),
        4,
        "is an error-honesty probe, which a server passes by failing consistently",
    );
}

/// Rule 3: repetitions never fewer than the failure rate sizes, and a
/// transient failure is never proved by a single call.
#[test]
fn attempts_below_the_sized_count_and_single_calls_of_transient_failures_are_refused() {
    let b = Bench::new();
    for attempts in [1, 2] {
        b.cases(json!([case(
            &b,
            json!({"probe": "degradation", "attempts": attempts})
        )]));
        refused(
            &b,
            &b.verify_c(&[]),
            4,
            &format!(
                "runs {attempts} attempts, and {}, with a failure rate of 100.0%, needs 3",
                b.finding
            ),
        );
    }
    b.cases(json!([case(
        &b,
        json!({"probe": "degradation", "attempts": 3})
    )]));
    assert_eq!(b.verify_c(&[]).status, 0);

    let transient = bench_from("flaky", false, |e, s, q| {
        if q % 2 == 0 {
            coded(e, s, q, "flaky", -32001, true)
        } else {
            Rec::ok(e, s, q, "flaky")
        }
    });
    assert_eq!(transient.finding_json()["defect_class"], "transient");
    transient.cases(json!([{"id": "c", "finding": transient.finding,
        "probe": "instruction-fidelity", "sandbox": "fixture", "tool": "flaky"}]));
    refused(
        &transient,
        &transient.verify_c(&["--fail-rate", "0.5"]),
        4,
        "is a transient failure that comes and goes",
    );
}

/// Rule 4: a false-success finding closes only on an oracle on its
/// tool's step or a later one that asserts more than every result has.
#[test]
fn a_false_success_oracle_must_be_on_the_tool_and_say_something() {
    let b = bench_from("status", true, |e, s, q| Rec::ok(e, s, q, "status"));
    assert_eq!(b.finding_json()["defect_class"], "false-success");
    let words = "cannot prove a false-success repair: no step from the first call of \"status\" on";
    // The assertion is on another tool, before the finding's.
    b.cases(
        json!([{"id": "c", "finding": b.finding, "probe": "workflow", "sandbox": "fixture",
        "steps": [
            {"tool": "create", "arguments": {"name": "x"},
             "expect": {"outcome": "ok", "required_result_paths": ["/structuredContent/created"]}},
            {"tool": "status"}]}]),
    );
    refused(&b, &b.verify_c(&[]), 4, words);
    // Assertions every successful result satisfies.
    for expect in [
        json!({"outcome": "ok", "required_result_paths": ["/content"]}),
        json!({"outcome": "ok", "required_result_paths": ["/content/0/text", "/structuredContent"]}),
        json!({"outcome": "ok", "equals_paths": {"/content/0/type": "text"}}),
    ] {
        b.cases(json!([case(&b, json!({"expect": expect}))]));
        refused(&b, &b.verify_c(&[]), 4, words);
    }
    // An oracle that says something runs, and a later step may hold it.
    b.cases(json!([case(
        &b,
        json!({"expect": {"outcome": "ok",
        "equals_paths": {"/structuredContent/status": "ready"}}})
    )]));
    assert_eq!(b.verify_c(&[]).status, 0);
    b.cases(
        json!([{"id": "c", "finding": b.finding, "probe": "workflow", "sandbox": "fixture",
        "steps": [
            {"tool": "status"},
            {"tool": "create", "arguments": {"name": "x"},
             "expect": {"outcome": "ok", "equals": {"created": true}}}]}]),
    );
    assert_eq!(b.verify_c(&[]).status, 0);
}

/// Rule 5: greens probed against a repaired server, then a red run that
/// reopens the finding: the older greens add nothing when recorded.
#[test]
fn a_green_run_older_than_the_latest_red_earns_nothing() {
    let b = Bench::new();
    let greens: Vec<String> = (0..3).map(|_| b.probe(&[])).collect();
    b.red();
    assert_eq!(b.lifecycle(), ("fix-claimed".to_owned(), 0, 0));
    let run = b.record(&greens.concat());
    assert_eq!(run.status, 4, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr.matches("a green run older than the evidence against the fix adds no credit; nothing was recorded").count(),
        3,
        "{}",
        run.stderr
    );
    assert_eq!(b.lifecycle(), ("fix-claimed".to_owned(), 0, 0));
    assert_eq!(b.runs(), 1);
    // A run made after the red one counts.
    let run = b.record(&b.probe(&[]));
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(b.lifecycle(), ("verifying".to_owned(), 1, 0));
}

/// Rule 6: red on the bug, then three greens on the fix against the same
/// target: a witnessed closure; three greens alone close it unwitnessed;
/// a red against another command witnesses nothing; and with
/// `require_witnessed` an unwitnessed streak stays verifying.
#[test]
fn a_closure_is_witnessed_when_the_case_ran_red_on_the_same_target_first() {
    let witnessed = |b: &Bench| b.finding_json()["witnessed"].clone();
    let b = Bench::new();
    red_on_the_bug(&b, Bug::Fails);
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(b.lifecycle().0, "closed");
    assert_eq!(witnessed(&b), json!(true));
    let md = succeed(&b.store, "mcpeval-findings", &["--format", "md"]);
    assert!(md.contains("| closed (witnessed) |"), "{md}");
    let agent = succeed(&b.store, "mcpeval-findings", &["--format", "agent"]);
    assert!(
        agent.contains("closed by three consecutive green verification runs, witnessed"),
        "{agent}"
    );

    let b = Bench::new();
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(b.lifecycle().0, "closed");
    assert_eq!(witnessed(&b), json!(false));
    let agent = succeed(&b.store, "mcpeval-findings", &["--format", "agent"]);
    assert!(agent.contains("unwitnessed"), "{agent}");

    // A red run against another command line is not this target's.
    let b = Bench::new();
    b.red();
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(witnessed(&b), json!(false));

    // A red run on the target that fails otherwise than the finding's
    // calls did (a wrong value, where they failed with an error) shows the
    // case can fail, not that it caught this bug.
    let b = Bench::new();
    red_on_the_bug(&b, Bug::Pending);
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(witnessed(&b), json!(false));

    // require_witnessed: the unwitnessed streak stays at verifying 3/3,
    // says why, and a red run on the target then three greens close it.
    let b = Bench::new();
    std::fs::write(
        b.store.home().join("config.json"),
        r#"{"require_witnessed": true}"#,
    )
    .unwrap();
    for _ in 0..3 {
        b.green();
    }
    let run = b.green();
    assert!(
        run.stdout.contains("state=verifying streak=3/3"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("stays verifying: require_witnessed is set"),
        "{}",
        run.stderr
    );
    assert_eq!(b.lifecycle(), ("verifying".to_owned(), 3, 0));
    assert_eq!(witnessed(&b), Value::Null);
    red_on_the_bug(&b, Bug::Fails);
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(b.lifecycle(), ("closed".to_owned(), 3, 1));
    assert_eq!(witnessed(&b), json!(true));
    let report = b.store.scratch().join("report.html");
    succeed(
        &b.store,
        "mcpeval-report",
        &["--output", report.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(page.contains("(witnessed: the case ran red on the same target first)"));
}

/// A result made in a store that does not know the finding (same salt)
/// is held to the same rules, in the same words, when it is recorded
/// where the finding is known.
#[test]
fn results_made_elsewhere_meet_the_same_rules_when_recorded() {
    let b = Bench::new();
    let elsewhere = Store::new();
    std::fs::create_dir_all(elsewhere.home()).unwrap();
    std::fs::copy(b.store.home().join(".salt"), elsewhere.home().join(".salt")).unwrap();
    let probe = |case: Value, server_args: &[&str]| {
        b.cases(json!([case]));
        let out = elsewhere
            .cmd("mcpeval-probe")
            .args(["--case", "c", "--manifest"])
            .arg(&b.manifest)
            .arg("--")
            .args(b.argv(server_args))
            .output()
            .unwrap();
        text(&out.stdout)
    };
    // A nameless server, and an expectation the bug satisfies: probed
    // where the finding is unknown, refused where it is known.
    let nameless = probe(case(&b, json!({})), &["--name", "-"]);
    let run = b.record(&nameless);
    refused(&b, &run, 6, "the server is \"python3\" but");
    let erring = probe(
        case(&b, json!({"expect": {"outcome": "error"}})),
        &["--status", "x"],
    );
    let run = b.record(&erring);
    refused(&b, &run, 4, "to fail with any error");
    // An honest one records.
    let honest = probe(case(&b, json!({})), &[]);
    assert_eq!(b.record(&honest).status, 0);
}

/// serve's `verify_finding`, driven by the MCP Python SDK, refuses as the
/// CLI does, with the same words, and records nothing.
#[test]
fn verify_finding_over_mcp_holds_runs_to_the_same_rules() {
    let (store, id) = fixture_store();
    let dir = store.scratch();
    let (manifest, mut doc) = filled_manifest(&store, &id);
    doc["cases"][0]["expect"] = json!({"outcome": "error"});
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let script = json!([
        {"tool": "verify_finding", "arguments":
            {"finding": id, "manifest": "m.json", "command": ["python3", "server.py"]}},
        {"tool": "verify_finding", "arguments":
            {"finding": id, "manifest": "m.json", "command": ["python3", "server.py", "--name", "-"]}},
    ]);
    let allowed = ["--allow-command", "python3 server.py"];
    let out = client_with(&store, "auto", &allowed, script.clone());
    let calls = out["calls"].as_array().unwrap();
    assert_eq!(calls[0]["is_error"], true, "{}", calls[0]);
    let text0 = calls[0]["text"].as_str().unwrap();
    assert!(
        text0.contains("expects \"status\" to fail with any error"),
        "{text0}"
    );
    // The CLI says the same.
    let cli = finish(
        store
            .cmd("mcpeval-verify")
            .current_dir(dir)
            .args([
                "--finding",
                &id,
                "--case",
                &id,
                "--manifest",
                "m.json",
                "--",
                "python3",
                "server.py",
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(cli.status, 4);
    let words = |s: &str| {
        s.lines()
            .find(|l| l.contains("proves nothing"))
            .map(str::to_owned)
    };
    assert_eq!(words(text0), words(&cli.stderr));
    // With an honest expectation, a nameless server is refused as on the CLI.
    doc["cases"][0]["expect"] = json!({"outcome": "ok"});
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let again = client_with(&store, "auto", &allowed, script);
    let nameless = &again["calls"][1];
    assert_eq!(nameless["is_error"], true, "{nameless}");
    assert!(
        nameless["text"]
            .as_str()
            .unwrap()
            .contains("the server is \"python3\" but"),
        "{nameless}"
    );
    // Only the honest run against the named server was recorded.
    let f = &findings(&store)[0];
    assert_eq!(
        (f["state"].as_str(), f["streak"].as_u64()),
        (Some("verifying"), Some(1))
    );
}

/// A finding whose evidence the store no longer holds (a lifecycle.db of
/// an earlier release, and an index that dropped the finding) cannot be
/// proved: no rule could be checked (status 3, nothing run).
#[test]
fn a_finding_whose_evidence_is_unknown_cannot_be_proved() {
    let b = Bench::new();
    b.green();
    records::write(&b.store, 1, &Rec::ok(900, 9, 1, "status").line());
    succeed(&b.store, "mcpeval-index", &["--rebuild"]);
    succeed(&b.store, "mcpeval-promote", &["--threshold", "0"]);
    let conn = rusqlite::Connection::open(b.store.home().join("lifecycle.db")).unwrap();
    conn.execute("UPDATE finding_state SET kind = NULL", [])
        .unwrap();
    drop(conn);
    let run = b.verify(&[]);
    assert_eq!(run.status, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "this store does not know which server and tool {} is about, or what its failures \
             showed",
            b.finding
        )),
        "{}",
        run.stderr
    );
    assert_eq!(b.runs(), 1);
}

/// An invalid-arguments finding whose server still refuses the case's
/// arguments: the hint is a closure by hand, since expecting that error
/// would prove nothing.
#[test]
fn a_server_right_to_refuse_is_closed_by_hand_not_by_a_flipped_case() {
    let b = bench_from("fail", false, |e, s, q| {
        coded(e, s, q, "fail", -32602, false)
    });
    assert_eq!(b.finding_json()["defect_class"], "invalid-arguments");
    b.cases(
        json!([{"id": "c", "finding": b.finding, "probe": "instruction-fidelity",
        "sandbox": "fixture", "tool": "fail", "arguments": {"code": -32602}}]),
    );
    let run = b.verify_c(&[]);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "reason=expected-ok-got-error\n  hint: The server still refuses these arguments. If \
             they break its inputSchema, the server is right and the agent was at fault: close \
             the finding by hand, saying so: mcpeval close --finding {} --reason",
            b.finding
        )),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("change the case"), "{}", run.stdout);
}
