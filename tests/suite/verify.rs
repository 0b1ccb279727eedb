//! `mcpeval-verify`: every lifecycle transition, the credit binding, the
//! recording rules (replay, conflict, MAC, transport errors) and the
//! one-time import of index-only evidence, against the switchable fixture
//! server and a real one.

use crate::support::OutputWithin;
use std::path::{Path, PathBuf};
use std::process::Command;
use store::signed::Signed;

use rusqlite::Connection;
use serde_json::{Value, json};
use shared::home::Home;
use shared::probe_result::{ProbeResult, Reason, Verdict};
use store::salt::Salt;

use crate::records::{self, Rec};
use crate::support::{Deps, SYSTEM_PATH, Store, fixture, text};

/// The last failure of the bench's journal: scores are computed as of it.
pub const AS_OF: &str = "2026-11-30T07:00:10.123Z";

const NOT_EQUAL_HINT: &str =
    "A result field differs from the value the case expects: return what the contract promises.";

/// A store with one promoted finding, a private copy of the fixture
/// server, and a manifest whose case `status` proves the finding.
pub struct Bench {
    pub store: Store,
    pub server: PathBuf,
    pub manifest: PathBuf,
    pub finding: String,
    pub log: PathBuf,
}

pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    fn run_id(&self) -> String {
        let at = self
            .stdout
            .find(" run=")
            .unwrap_or_else(|| panic!("no run id in {:?} (stderr {:?})", self.stdout, self.stderr));
        self.stdout[at + 5..at + 5 + 36].to_owned()
    }
}

/// The name the fixture server gives itself (serverInfo.name).
pub const FIXTURE_SERVER: &str = "probe-fixture";

/// Writes journals in which tool `status` of the fixture server fails in
/// two sessions (ten calls each, all failing), indexes and promotes at
/// threshold 0, and returns the finding's id.
pub fn promoted_store(store: &Store) -> String {
    promoted_store_of(store, FIXTURE_SERVER, "status")
}

/// [`promoted_store`] for tool `tool` of server `server`.
pub fn promoted_store_of(store: &Store, server: &str, tool: &str) -> String {
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=10 {
            recs.push(Rec::error(session * 100 + seq, session, seq, tool, Some(1)).server(server));
        }
    }
    records::write(store, 1, &records::lines(&recs));
    succeed(store, "mcpeval-index", &[]);
    succeed(
        store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let all = findings(store);
    assert_eq!(all.len(), 1, "{all:#?}");
    all[0]["id"].as_str().unwrap().to_owned()
}

pub fn succeed(store: &Store, bin: &str, args: &[&str]) -> String {
    let out = store.cmd(bin).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

pub fn findings(store: &Store) -> Vec<Value> {
    let out = succeed(store, "mcpeval-findings", &["--format", "json"]);
    serde_json::from_str::<Value>(&out).unwrap()["findings"]
        .as_array()
        .unwrap()
        .clone()
}

/// One history line: (event, from state, to state, detail).
pub type HistoryLine = (String, Option<String>, Option<String>, Option<String>);

/// One verification row: (run id, result, binding, legacy, recorded at).
type VerificationRow = (Option<String>, String, Option<String>, i64, String);

/// Every history line of `finding`, oldest first.
pub fn history(store: &Store, finding: &str) -> Vec<HistoryLine> {
    let conn = Connection::open(store.home().join("lifecycle.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT event, from_state, to_state, detail FROM history WHERE finding_id = ?1 ORDER BY id")
        .unwrap();
    stmt.query_map([finding], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Every row of `verifications`, oldest first.
fn verifications(store: &Store) -> Vec<VerificationRow> {
    let conn = Connection::open(store.home().join("lifecycle.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT run_id, result, binding, legacy, recorded_at FROM verifications ORDER BY id",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

pub fn status_case(finding: &str) -> Value {
    json!({"id": "status", "finding": finding, "probe": "instruction-fidelity",
           "sandbox": "fixture", "tool": "status", "timeout_ms": 3000,
           "expect": {"outcome": "ok", "equals": {"status": "ready"}}})
}

pub fn finish(out: std::process::Output) -> Run {
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: text(&out.stdout),
        stderr: text(&out.stderr),
    }
}

impl Bench {
    pub fn new() -> Bench {
        Bench::of(FIXTURE_SERVER, "status")
    }

    /// A bench whose finding is about tool `tool` of server `server`.
    pub fn of(server: &str, tool: &str) -> Bench {
        let store = Store::new();
        let finding = promoted_store_of(&store, server, tool);
        let server = store.scratch().join("server.py");
        std::fs::copy(fixture("probe_server.py"), &server).unwrap();
        let bench = Bench {
            manifest: store.scratch().join("mcp-eval.manifest.json"),
            log: store.scratch().join("server.log"),
            store,
            server,
            finding,
        };
        bench.cases(json!([status_case(&bench.finding)]));
        bench
    }

    pub fn cases(&self, cases: Value) {
        let doc = json!({"manifest_version": 1,
            "sandboxes": {"fixture": {"declaration": "a private copy of the fixture; no network"}},
            "cases": cases});
        std::fs::write(&self.manifest, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }

    /// `python3 server.py ARGS…`
    pub fn argv(&self, server_args: &[&str]) -> Vec<String> {
        let mut argv = vec!["python3".to_owned(), self.server.display().to_string()];
        argv.extend(server_args.iter().map(|a| a.to_string()));
        argv
    }

    /// Verifies case `status` against the fixture started with `server_args`.
    pub fn verify(&self, server_args: &[&str]) -> Run {
        self.verify_argv("status", &self.argv(server_args), &[])
    }

    pub fn green(&self) -> Run {
        let run = self.verify(&[]);
        assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
        run
    }

    pub fn red(&self) -> Run {
        let run = self.verify(&["--status", "pending"]);
        assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
        run
    }

    pub fn verify_argv(&self, case: &str, argv: &[String], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.store.cmd("mcpeval-verify");
        cmd.args(["--finding", &self.finding, "--case", case, "--manifest"])
            .arg(&self.manifest)
            .arg("--")
            .args(argv)
            .env("PROBE_FIXTURE_LOG", &self.log);
        for (k, v) in env {
            cmd.env(k, v);
        }
        finish(cmd.output().unwrap())
    }

    /// Runs mcpeval-probe alone and returns its stdout (the result).
    pub fn probe(&self, server_args: &[&str]) -> String {
        let out = self
            .store
            .cmd("mcpeval-probe")
            .args(["--case", "status", "--manifest"])
            .arg(&self.manifest)
            .arg("--")
            .args(self.argv(server_args))
            .output()
            .unwrap();
        text(&out.stdout)
    }

    pub fn record(&self, result: &str) -> Run {
        let file = self.store.scratch().join("result.json");
        std::fs::write(&file, result).unwrap();
        let out = self
            .store
            .cmd("mcpeval-verify")
            .arg("--record")
            .arg(&file)
            .output()
            .unwrap();
        finish(out)
    }

    pub fn finding_json(&self) -> Value {
        findings(&self.store)
            .into_iter()
            .find(|f| f["id"] == self.finding.as_str())
            .unwrap()
    }

    /// (state, streak, reopened) as `mcpeval findings` shows them.
    pub fn lifecycle(&self) -> (String, u64, u64) {
        let f = self.finding_json();
        (
            f["state"].as_str().unwrap().to_owned(),
            f["streak"].as_u64().unwrap(),
            f["reopened"].as_u64().unwrap(),
        )
    }

    fn line(&self, result: &str, state: &str, streak: u32, run: &Run) -> String {
        format!(
            "{} case=status result={result} state={state} streak={streak}/3 run={}",
            self.finding,
            run.run_id()
        )
    }

    #[track_caller]
    fn expect_green(&self, run: &Run, state: &str, streak: u32) {
        assert_eq!(
            (run.status, run.stdout.clone()),
            (0, format!("{}\n", self.line("green", state, streak, run))),
            "stderr: {}",
            run.stderr
        );
    }

    #[track_caller]
    fn expect_red(&self, run: &Run, state: &str) {
        assert_eq!(
            (run.status, run.stdout.clone()),
            (
                1,
                format!(
                    "{} reason=not-equal\n  hint: {NOT_EQUAL_HINT}\n",
                    self.line("red", state, 0, run)
                )
            )
        );
    }
}

fn state(s: &str, streak: u64, reopened: u64) -> (String, u64, u64) {
    (s.to_owned(), streak, reopened)
}

/// The hint verify prints after its line is the one probe leaves out when
/// asked: its caller reads the reason from the JSON result, not its text.
#[test]
fn probe_leaves_the_hint_to_a_caller_that_asks() {
    let b = Bench::new();
    let detail = "mcpeval-probe: red: case status not-equal: /structuredContent/status\n";
    for (flags, stderr) in [
        (&[][..], format!("{detail}  hint: {NOT_EQUAL_HINT}\n")),
        (&["--no-hint"][..], detail.to_owned()),
    ] {
        let out = b
            .store
            .cmd("mcpeval-probe")
            .args(["--case", "status", "--manifest"])
            .arg(&b.manifest)
            .args(flags)
            .arg("--")
            .args(b.argv(&["--status", "pending"]))
            .env("PROBE_FIXTURE_LOG", &b.log)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{flags:?}");
        assert_eq!(text(&out.stderr), stderr, "{flags:?}");
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["reason"], "not-equal", "{flags:?}");
    }
}

#[test]
fn red_on_an_open_finding_claims_a_fix() {
    let b = Bench::new();
    assert_eq!(b.lifecycle(), state("open", 0, 0));
    let run = b.red();
    b.expect_red(&run, "fix-claimed");
    // The probe's detail stays on stderr; its hint is printed once, after the line.
    assert_eq!(
        run.stderr,
        "mcpeval-probe: red: case status not-equal: /structuredContent/status\n"
    );
    assert_eq!(b.lifecycle(), state("fix-claimed", 0, 0));
    let last = history(&b.store, &b.finding).pop().unwrap();
    assert_eq!(
        last,
        (
            "verified".to_owned(),
            Some("open".to_owned()),
            Some("fix-claimed".to_owned()),
            Some(format!(
                "case=status result=red streak=0/3 run={} reason=not-equal",
                run.run_id()
            ))
        )
    );
    // Red again: still fix-claimed, no streak, nothing reopened.
    b.expect_red(&b.red(), "fix-claimed");
    assert_eq!(b.lifecycle(), state("fix-claimed", 0, 0));
}

#[test]
fn the_first_green_run_starts_verifying() {
    let b = Bench::new();
    let run = b.green();
    b.expect_green(&run, "verifying", 1);
    assert_eq!(run.stderr, "");
    assert_eq!(b.lifecycle(), state("verifying", 1, 0));
    let rows = verifications(&b.store);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0.as_deref(), Some(run.run_id().as_str()));
    assert_eq!(rows[0].1, "green");
    assert!(rows[0].2.as_deref().unwrap().starts_with("b-"));
    assert_eq!(rows[0].3, 0);
}

#[test]
fn the_third_consecutive_green_run_closes_and_closed_stays_closed() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    b.expect_green(&b.green(), "verifying", 2);
    b.expect_green(&b.green(), "closed", 3);
    assert_eq!(b.lifecycle(), state("closed", 3, 0));
    let events: Vec<(Option<String>, Option<String>)> = history(&b.store, &b.finding)
        .into_iter()
        .map(|h| (h.1, h.2))
        .collect();
    let s = |x: &str| Some(x.to_owned());
    assert_eq!(
        events,
        [
            (None, s("open")),
            (s("open"), s("verifying")),
            (s("verifying"), s("verifying")),
            (s("verifying"), s("closed")),
        ]
    );
    // A fourth green run is recorded and changes nothing.
    b.expect_green(&b.green(), "closed", 3);
    assert_eq!(b.lifecycle(), state("closed", 3, 0));
    assert_eq!(verifications(&b.store).len(), 4);
}

#[test]
fn red_on_a_verifying_finding_reopens_it_with_reason_and_hint() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    let run = b.red();
    b.expect_red(&run, "open");
    assert_eq!(b.lifecycle(), state("open", 0, 1));
    let last = history(&b.store, &b.finding).pop().unwrap();
    assert_eq!(
        (last.1.as_deref(), last.2.as_deref()),
        (Some("verifying"), Some("open"))
    );
    // A green after the reopening starts over at 1.
    b.expect_green(&b.green(), "verifying", 1);
}

#[test]
fn red_on_a_closed_finding_reopens_it_and_counts() {
    let b = Bench::new();
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(b.lifecycle(), state("closed", 3, 0));
    b.expect_red(&b.red(), "open");
    assert_eq!(b.lifecycle(), state("open", 0, 1));
    for _ in 0..3 {
        b.green();
    }
    b.expect_red(&b.red(), "open");
    assert_eq!(b.lifecycle(), state("open", 0, 2));
    let json = b.finding_json();
    assert_eq!(json["reopened"], 2);
}

#[test]
fn json_output_has_the_same_facts() {
    let b = Bench::new();
    let mut cmd = b.store.cmd("mcpeval-verify");
    cmd.args([
        "--format",
        "json",
        "--finding",
        &b.finding,
        "--case",
        "status",
        "--manifest",
    ])
    .arg(&b.manifest)
    .arg("--")
    .args(b.argv(&["--status", "pending"]));
    let run = finish(cmd.output().unwrap());
    assert_eq!(run.status, 1);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    let run_id = v["run"].as_str().unwrap();
    assert_eq!(
        v,
        json!({"finding": b.finding, "case": "status", "result": "red", "state": "fix-claimed",
               "streak": 0, "streak_to_close": 3, "reopened": 0, "run": run_id,
               "reason": "not-equal", "hint": NOT_EQUAL_HINT, "witnessed": null,
               "already_recorded": false})
    );
}

#[test]
fn the_severity_cap_lifts_once_a_probe_is_attached() {
    let b = Bench::new();
    let before = b.finding_json();
    assert!(before["score"].as_f64().unwrap() >= 0.5, "{before}");
    assert_eq!(
        (&before["severity"], &before["probe_attached"]),
        (&json!("medium"), &json!(false))
    );
    b.red();
    let after = b.finding_json();
    assert_eq!(
        (&after["severity"], &after["probe_attached"]),
        (&json!("high"), &json!(true))
    );
}

#[test]
fn editing_the_server_script_starts_a_fresh_streak() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    b.expect_green(&b.green(), "verifying", 2);
    let mut script = std::fs::read_to_string(&b.server).unwrap();
    script.push_str("# a harmless edit\n");
    std::fs::write(&b.server, script).unwrap();
    b.expect_green(&b.green(), "verifying", 1);
    b.expect_green(&b.green(), "verifying", 2);
}

#[test]
fn swapping_the_interpreter_starts_a_fresh_streak() {
    let b = Bench::new();
    let python = store::binding::resolve("python3".as_ref(), Some(SYSTEM_PATH.as_ref())).unwrap();
    // Another interpreter under the same name, first on PATH.
    let dir = b.store.scratch().join("other-python");
    std::fs::create_dir(&dir).unwrap();
    let wrapper = dir.join("python3");
    crate::support::write_executable(
        &wrapper,
        &format!("#!/bin/sh\nexec {} \"$@\"\n", python.display()),
        0o755,
    );
    let other_path = format!("{}:{SYSTEM_PATH}", dir.display());
    let argv = b.argv(&[]);
    b.expect_green(&b.verify_argv("status", &argv, &[]), "verifying", 1);
    b.expect_green(&b.verify_argv("status", &argv, &[]), "verifying", 2);
    let swapped = b.verify_argv("status", &argv, &[("PATH", &other_path)]);
    b.expect_green(&swapped, "verifying", 1);
    // The same interpreter under another path, same bytes: the argv differs.
    let link = b.store.scratch().join("py");
    std::os::unix::fs::symlink(&python, &link).unwrap();
    let mut by_link = argv.clone();
    by_link[0] = link.display().to_string();
    b.expect_green(&b.verify_argv("status", &by_link, &[]), "verifying", 1);
}

#[test]
fn changing_the_timeout_starts_a_fresh_streak() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    b.expect_green(&b.green(), "verifying", 2);
    let mut case = status_case(&b.finding);
    case["timeout_ms"] = json!(3001);
    b.cases(json!([case]));
    b.expect_green(&b.green(), "verifying", 1);
}

#[test]
fn reformatting_and_reordering_the_manifest_keep_the_streak() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    let f = &b.finding;
    // Keys reordered, compact, an unrelated case added.
    std::fs::write(
        &b.manifest,
        format!(
            r#"{{"cases":[{{"tool":"flaky","probe":"degradation","finding":"{f}","id":"other"}},{{"expect":{{"equals":{{"status":"ready"}},"outcome":"ok"}},"timeout_ms":3000,"tool":"status","sandbox":"fixture","probe":"instruction-fidelity","finding":"{f}","id":"status"}}],"sandboxes":{{"fixture":{{"declaration":"a private copy of the fixture; no network"}}}},"manifest_version":1}}"#
        ),
    )
    .unwrap();
    b.expect_green(&b.green(), "verifying", 2);
    // Spread over many lines with other indentation.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&b.manifest).unwrap()).unwrap();
    let text = serde_json::to_string_pretty(&doc)
        .unwrap()
        .replace("  ", "\t\t");
    std::fs::write(&b.manifest, text).unwrap();
    b.expect_green(&b.green(), "closed", 3);
}

#[test]
fn a_recorded_probe_result_and_a_verify_run_build_one_streak() {
    let b = Bench::new();
    let result = b.probe(&[]);
    let pipe = b
        .store
        .duct("mcpeval-verify", &["--record", "-"])
        .stdin_bytes(result.clone())
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .unwrap();
    let piped = Run {
        status: pipe.status.code().unwrap(),
        stdout: text(&pipe.stdout),
        stderr: text(&pipe.stderr),
    };
    b.expect_green(&piped, "verifying", 1);
    b.expect_green(&b.green(), "verifying", 2);

    // Replaying the recorded result adds nothing.
    let history_before = history(&b.store, &b.finding);
    let replay = b.record(&result);
    let run_id = serde_json::from_str::<Value>(&result).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        (replay.status, replay.stdout.as_str(), replay.stderr.as_str()),
        (
            0,
            format!(
                "{} case=status run={run_id} already recorded: no credit added (state=verifying streak=2/3)\n",
                b.finding
            )
            .as_str(),
            ""
        )
    );
    assert_eq!(history(&b.store, &b.finding), history_before);
    assert_eq!(verifications(&b.store).len(), 2);
    assert_eq!(b.lifecycle(), state("verifying", 2, 0));
}

#[test]
fn a_conflicting_result_under_a_recorded_run_id_is_refused() {
    let b = Bench::new();
    let result = b.probe(&[]);
    assert_eq!(b.record(&result).status, 0);
    let salt = Salt::load(&Home::at(&b.store.home())).unwrap().unwrap();
    let mut other = ProbeResult::parse(result.trim()).unwrap();
    other.result = Verdict::Red;
    other.reason = Some(Reason::NotEqual);
    other.detail = Some("/structuredContent/status".into());
    other.sign(&salt);
    let before = (history(&b.store, &b.finding), verifications(&b.store));
    let run = b.record(&other.to_json_line());
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr),
        (
            6,
            "",
            format!(
                "mcpeval-verify: error: run {} is already recorded with a different result; a run earns \
credit once\n  hint: record the result the run printed, or run the case again for a new run\n",
                other.run_id
            )
        )
    );
    assert_eq!(
        (history(&b.store, &b.finding), verifications(&b.store)),
        before
    );
    assert_eq!(b.lifecycle(), state("verifying", 1, 0));
}

#[test]
fn an_edited_or_foreign_result_is_refused() {
    let b = Bench::new();
    let result = b.probe(&["--status", "pending"]);
    let file = b.store.scratch().join("result.json");
    let edited = result
        .replace("\"result\":\"red\"", "\"result\":\"green\"")
        .replace("\"reason\":\"not-equal\"", "\"reason\":null")
        .replace(
            "\"detail\":\"/structuredContent/status\"",
            "\"detail\":null",
        );
    assert_ne!(edited, result);
    let run = b.record(&edited);
    let refusal = format!(
        "mcpeval-verify: error: {}: the result's mac does not verify with this store's salt: it was \
edited, or made by another store; nothing was recorded\n  hint: run the case again against this store \
(--home or MCPEVAL_HOME)\n",
        file.display()
    );
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.clone()),
        (6, "", refusal.clone())
    );

    // The untouched result, recorded into another store.
    let other = Store::new();
    promoted_store(&other);
    std::fs::write(&file, &result).unwrap();
    let out = other
        .cmd("mcpeval-verify")
        .arg("--record")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!((out.status.code(), text(&out.stderr)), (Some(6), refusal));
    assert!(verifications(&b.store).is_empty());
    assert!(verifications(&other).is_empty());
    assert_eq!(b.lifecycle(), state("open", 0, 0));
}

#[test]
fn a_transport_error_records_nothing() {
    let b = Bench::new();
    let before = history(&b.store, &b.finding);
    let missing = b.store.scratch().join("no-such-server");
    let run = b.verify_argv("status", &[missing.display().to_string()], &[]);
    assert_eq!((run.status, run.stdout.as_str()), (5, ""));
    assert!(
        run.stderr
            .contains("mcpeval-probe: error: transport failure: case status server-start: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.ends_with(&format!(
            "ended in a transport error (server-start); no verification evidence was recorded\n  \
hint: {}\n",
            Reason::ServerStart.hint()
        )),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("hint:").count(), 1, "{}", run.stderr);
    assert_eq!(history(&b.store, &b.finding), before);
    assert!(verifications(&b.store).is_empty());

    // The same result recorded from a file: status 5 again, nothing kept.
    let out = b
        .store
        .cmd("mcpeval-probe")
        .args(["--case", "status", "--manifest"])
        .arg(&b.manifest)
        .arg("--")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let recorded = b.record(&text(&out.stdout));
    assert_eq!((recorded.status, recorded.stdout.as_str()), (5, ""));
    assert_eq!(history(&b.store, &b.finding), before);
    assert!(verifications(&b.store).is_empty());
}

#[test]
fn refusals_happen_before_the_server_starts_and_record_nothing() {
    let b = Bench::new();
    let before = history(&b.store, &b.finding);
    let mut holes = status_case(&b.finding);
    holes["arguments"] = json!({"job": "<fill:string>"});
    b.cases(json!([holes]));
    let run = b.verify(&[]);
    assert_eq!((run.status, run.stdout.as_str()), (4, ""));
    assert!(
        run.stderr.starts_with(&format!(
            "mcpeval-probe: error: {}: case \"status\" still has 1 placeholder(s) to fill: /cases/0/arguments/job",
            b.manifest.display()
        )),
        "{}",
        run.stderr
    );

    // A case of another finding.
    let mut other = status_case("finding-ffffffffffffffff");
    other["id"] = json!("other");
    b.cases(json!([status_case(&b.finding), other]));
    let run = b.verify_argv("other", &b.argv(&[]), &[]);
    assert_eq!(run.status, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("proves finding-ffffffffffffffff, not"),
        "{}",
        run.stderr
    );

    // A finding this store never promoted.
    let unknown = b
        .store
        .cmd("mcpeval-verify")
        .args([
            "--finding",
            "finding-0000000000000000",
            "--case",
            "status",
            "--manifest",
        ])
        .arg(&b.manifest)
        .arg("--")
        .args(b.argv(&[]))
        .env("PROBE_FIXTURE_LOG", &b.log)
        .output()
        .unwrap();
    assert_eq!(
        (unknown.status.code(), text(&unknown.stderr)),
        (
            Some(2),
            "mcpeval-verify: error: no finding finding-0000000000000000 in this store: it was never \
promoted\n  hint: list the findings with `mcpeval findings`, or run `mcpeval index` and `mcpeval promote`\n"
                .to_owned()
        )
    );
    assert!(!b.log.exists(), "no server was started");
    assert_eq!(history(&b.store, &b.finding), before);
    assert!(verifications(&b.store).is_empty());
}

#[test]
fn mcpeval_probe_is_found_beside_verify_else_on_path() {
    let b = Bench::new();
    let lone = b.store.scratch().join("lone");
    std::fs::create_dir(&lone).unwrap();
    let verify = lone.join("mcpeval-verify");
    crate::support::copy_bin("mcpeval-verify", &verify);
    let run_with_path = |path: &str| {
        let mut cmd = Command::new(&verify);
        b.store.env(&mut cmd);
        cmd.env("PATH", path)
            .args(["--finding", &b.finding, "--case", "status", "--manifest"])
            .arg(&b.manifest)
            .arg("--")
            .args(b.argv(&[]));
        finish(cmd.output().unwrap())
    };
    let alone = run_with_path(SYSTEM_PATH);
    assert_eq!(
        (alone.status, alone.stderr.as_str()),
        (
            74,
            "mcpeval-verify: error: cannot find mcpeval-probe beside this executable or on PATH; nothing \
was run\n  hint: install mcpeval-probe with the rest of the suite\n"
        )
    );
    let on_path = run_with_path(&format!(
        "{}:{SYSTEM_PATH}",
        crate::support::bin_dir().display()
    ));
    b.expect_green(&on_path, "verifying", 1);
}

#[test]
fn a_real_server_red_then_three_greens_close() {
    let b = Bench::of("mcp-servers/everything", "get-structured-content");
    let weather = |id: &str, conditions: &str| {
        json!({"id": id, "finding": b.finding, "probe": "instruction-fidelity",
               "tool": "get-structured-content", "arguments": {"location": "New York"},
               "expect": {"outcome": "ok", "equals_paths": {"/structuredContent/conditions": conditions}}})
    };
    b.cases(json!([
        weather("sunny", "Sunny"),
        weather("cloudy", "Cloudy")
    ]));
    let argv = vec![Deps::server_everything().display().to_string()];
    let red = b.verify_argv("sunny", &argv, &[]);
    assert_eq!(red.status, 1, "{}", red.stderr);
    assert!(
        red.stdout.starts_with(&format!(
            "{} case=sunny result=red state=fix-claimed streak=0/3 run=",
            b.finding
        )),
        "{}",
        red.stdout
    );
    for streak in 1..=3 {
        let green = b.verify_argv("cloudy", &argv, &[]);
        let state = if streak == 3 { "closed" } else { "verifying" };
        assert_eq!(green.status, 0, "{}", green.stderr);
        assert!(
            green.stdout.starts_with(&format!(
                "{} case=cloudy result=green state={state} streak={streak}/3 run=",
                b.finding
            )),
            "{}",
            green.stdout
        );
    }
    assert_eq!(b.lifecycle(), state("closed", 3, 0));
}

/// Adds an `evidence` table as earlier releases kept it to `index.db`.
fn old_evidence(index: &Path, finding: &str) {
    let conn = Connection::open(index).unwrap();
    conn.execute_batch(
        "CREATE TABLE evidence(finding_id TEXT, case_id TEXT, outcome TEXT, recorded_at TEXT);",
    )
    .unwrap();
    for (outcome, at) in [
        ("pass", "2025-06-01T10:00:00Z"),
        ("pass", "2025-06-02T10:00:00Z"),
        ("fail", "2025-06-03T10:00:00Z"),
        ("pass", "2025-06-04T10:00:00Z"),
        ("pass", "2025-06-05T10:00:00Z"),
    ] {
        conn.execute(
            "INSERT INTO evidence VALUES (?1, 'old-case', ?2, ?3)",
            [finding, outcome, at],
        )
        .unwrap();
    }
}

#[test]
fn a_rebuild_imports_index_only_evidence_before_replacing_the_file() {
    let store = Store::new();
    records::write(&store, 1, &Rec::ok(1, 1, 1, "status").line());
    // An earlier release's index.db: not ours, so a rebuild replaces it.
    old_evidence(&store.home().join("index.db"), "finding-0123456789abcdef");
    assert!(!store.home().join("lifecycle.db").exists());
    succeed(&store, "mcpeval-index", &["--rebuild"]);
    let conn = Connection::open(store.home().join("lifecycle.db")).unwrap();
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM verifications WHERE legacy = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 5, "imported before the rebuild replaced index.db");
}

#[test]
fn index_only_evidence_is_imported_once_and_never_counts() {
    let store = Store::new();
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=3 {
            recs.push(
                Rec::error(session * 10 + seq, session, seq, "status", Some(1))
                    .server(FIXTURE_SERVER),
            );
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    succeed(&store, "mcpeval-index", &[]);
    assert!(!store.home().join("lifecycle.db").exists());
    // The index file of an earlier release still holds verification results.
    let index = store.home().join("index.db");
    // The finding id is stable: compute it as promote will.
    let salt = Salt::load_or_create(&Home::at(&store.home())).unwrap();
    let template = crate::records::template(1);
    let id = store::ids::finding_id(
        &salt,
        shared::finding::Kind::Error,
        FIXTURE_SERVER,
        "status",
        Some(&template),
    );
    old_evidence(&index, &id);

    // The first command that opens lifecycle.db imports it.
    succeed(&store, "mcpeval-promote", &["--threshold", "0"]);
    let legacy = |store: &Store| -> Vec<(String, String, i64)> {
        verifications(store)
            .into_iter()
            .filter(|v| v.3 == 1)
            .map(|v| {
                assert_eq!(
                    (v.0.as_deref(), v.2.as_deref()),
                    (None, None),
                    "no run id, no binding"
                );
                (v.1, v.4, v.3)
            })
            .collect()
    };
    let want: Vec<(String, String, i64)> = [
        ("green", "2025-06-01T10:00:00Z"),
        ("green", "2025-06-02T10:00:00Z"),
        ("red", "2025-06-03T10:00:00Z"),
        ("green", "2025-06-04T10:00:00Z"),
        ("green", "2025-06-05T10:00:00Z"),
    ]
    .iter()
    .map(|(r, at)| (r.to_string(), at.to_string(), 1))
    .collect();
    assert_eq!(legacy(&store), want);
    let conn = Connection::open(store.home().join("lifecycle.db")).unwrap();
    let imported: (String, i64) = conn
        .query_row("SELECT name, rows FROM imports", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(imported, ("index-evidence".to_owned(), 5));

    // Imported once: later opens add nothing.
    succeed(&store, "mcpeval-promote", &["--threshold", "0"]);
    succeed(&store, "mcpeval-findings", &[]);
    assert_eq!(legacy(&store), want);

    // Four legacy passes, the last two in a row: no streak, no state.
    let f = findings(&store)
        .into_iter()
        .find(|f| f["id"] == id.as_str())
        .unwrap();
    assert_eq!(
        (&f["state"], &f["streak"], &f["probe_attached"]),
        (&json!("open"), &json!(0), &json!(false))
    );

    // A new green run starts at 1.
    let server = store.scratch().join("server.py");
    std::fs::copy(fixture("probe_server.py"), &server).unwrap();
    let manifest = store.scratch().join("m.json");
    let mut case = status_case(&id);
    case.as_object_mut().unwrap().remove("sandbox");
    std::fs::write(
        &manifest,
        json!({"manifest_version": 1, "cases": [case]}).to_string(),
    )
    .unwrap();
    let out = store
        .cmd("mcpeval-verify")
        .args(["--finding", &id, "--case", "status", "--manifest"])
        .arg(&manifest)
        .arg("--")
        .arg("python3")
        .arg(&server)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(" result=green state=verifying streak=1/3 "));
}

#[test]
fn the_demo_loop_runs_on_the_bundled_server() {
    let store = Store::new();
    let demo = crate::support::repo().join("corpus/demo");
    let mode = store.scratch().join("mode");
    std::fs::write(&mode, "buggy\n").unwrap();
    let server = [
        "python3".to_owned(),
        demo.join("jobs_server.py").display().to_string(),
        mode.display().to_string(),
    ];
    for session in ["session-1.json", "session-2.json"] {
        let mut cmd = Command::new(Deps::python());
        store.env(&mut cmd);
        let out = cmd
            .arg(crate::support::repo().join("tests/clients/session.py"))
            .arg(demo.join(session))
            .arg("--")
            .arg(crate::support::bin("mcpeval-capture"))
            .arg("--")
            .args(&server)
            .output_within(crate::support::SESSION_LIMIT);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    succeed(&store, "mcpeval-index", &[]);
    succeed(&store, "mcpeval-promote", &[]);
    let all = findings(&store);
    assert_eq!(all.len(), 1, "{all:#?}");
    let f = &all[0];
    assert_eq!(
        (&f["server"], &f["tool"], &f["defect_class"], &f["failures"]),
        (
            &json!("jobs"),
            &json!("get_status"),
            &json!("internal-error"),
            &json!(4)
        )
    );
    let id = f["id"].as_str().unwrap();
    let generated = store.scratch().join("generated.json");
    succeed(
        &store,
        "mcpeval-generate",
        &[
            "--finding",
            id,
            "--confirm-read-only",
            "--output",
            generated.to_str().unwrap(),
        ],
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&generated).unwrap()).unwrap();
    assert_eq!(
        doc["cases"][0]["arguments"],
        json!({"job": "<fill:string>"})
    );
    doc["cases"][0]["arguments"]["job"] = json!("job_1");
    let manifest = store.scratch().join("mcp-eval.manifest.json");
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let verify = || {
        let out = store
            .cmd("mcpeval-verify")
            .args(["--finding", id, "--case", id, "--manifest"])
            .arg(&manifest)
            .arg("--")
            .args(&server)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stdout))
    };
    let (status, red) = verify();
    assert_eq!(status, Some(1));
    assert!(
        red.contains(" result=red state=fix-claimed streak=0/3 "),
        "{red}"
    );
    std::fs::write(&mode, "repaired\n").unwrap();
    for (streak, state) in [(1, "verifying"), (2, "verifying"), (3, "closed")] {
        let (status, green) = verify();
        assert_eq!(status, Some(0), "{green}");
        assert!(
            green.contains(&format!(" result=green state={state} streak={streak}/3 ")),
            "{green}"
        );
    }
}

/// Whether the fixture's log shows a `tools/call` (every line it read).
fn called_a_tool(log: &Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|text| text.contains("\"tools/call\""))
}

/// What a run must leave alone: (history, verifications, lifecycle).
type Untouched = (Vec<HistoryLine>, Vec<VerificationRow>, (String, u64, u64));

fn untouched(b: &Bench) -> Untouched {
    (
        history(&b.store, &b.finding),
        verifications(&b.store),
        b.lifecycle(),
    )
}

#[test]
fn green_runs_of_a_case_calling_another_tool_never_close_the_finding() {
    let b = Bench::new();
    let mut other = status_case(&b.finding);
    other["id"] = json!("other");
    other["tool"] = json!("flaky");
    other["expect"] = json!({"outcome": "ok", "equals": {"status": "ready"}});
    b.cases(json!([status_case(&b.finding), other]));
    let before = untouched(&b);
    let refusal = format!(
        "mcpeval-probe: error: {}: case \"other\" calls \"flaky\" but never \"status\", the tool of \
{}: its runs cannot prove that finding's repair; nothing was run\n  hint: make the case call \
\"status\" (a workflow: in at least one step), or run the case written for {}\n",
        b.manifest.display(),
        b.finding,
        b.finding
    );
    for _ in 0..3 {
        let run = b.verify_argv("other", &b.argv(&[]), &[]);
        assert_eq!(
            (run.status, run.stdout.as_str(), run.stderr.as_str()),
            (4, "", refusal.as_str())
        );
    }
    assert!(!b.log.exists(), "no server was started");
    assert_eq!(untouched(&b), before);
    assert_eq!(b.lifecycle(), state("open", 0, 0));
    // The case that calls the finding's tool still earns credit.
    b.expect_green(&b.green(), "verifying", 1);
}

#[test]
fn a_workflow_earns_credit_only_with_a_step_on_the_findings_tool() {
    let b = Bench::new();
    let workflow = |id: &str, tools: &[&str]| {
        let steps: Vec<Value> = tools
            .iter()
            .map(|t| json!({"tool": t, "arguments": {"name": "job_1"}}))
            .collect();
        json!({"id": id, "finding": b.finding, "probe": "workflow", "sandbox": "fixture",
               "timeout_ms": 3000, "steps": steps})
    };
    b.cases(json!([
        workflow("elsewhere", &["create", "read"]),
        workflow("through", &["create", "status", "read"])
    ]));
    let before = untouched(&b);
    let refused = b.verify_argv("elsewhere", &b.argv(&[]), &[]);
    assert_eq!((refused.status, refused.stdout.as_str()), (4, ""));
    assert!(
        refused.stderr.contains(&format!(
            "case \"elsewhere\" calls \"create\", \"read\" but never \"status\", the tool of {}",
            b.finding
        )),
        "{}",
        refused.stderr
    );
    assert!(!b.log.exists(), "no server was started");
    assert_eq!(untouched(&b), before);
    let run = b.verify_argv("through", &b.argv(&[]), &[]);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with(&format!(
            "{} case=through result=green state=verifying streak=1/3 run=",
            b.finding
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn a_server_naming_itself_otherwise_earns_nothing() {
    let b = Bench::new();
    let before = untouched(&b);
    let run = b.verify(&["--name", "impostor\u{1b}[31m\u{9b}"]);
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.as_str()),
        (
            6,
            "",
            format!(
                "mcpeval-probe: error: the server is \"impostor?[31m?\" but \
{} is about server \"probe-fixture\": its runs earn that finding no credit; nothing was recorded\n  \
hint: run the case against the server the finding was captured from (its name is in `mcpeval \
findings --format json`; a server that gives no name is named by its executable's file name, or \
host:port over HTTP, as capture names it)\n",
                b.finding
            )
            .as_str()
        )
    );
    assert!(!run.stderr.chars().any(|c| c.is_control() && c != '\n'));
    assert!(b.log.exists(), "the server was reached");
    assert!(!called_a_tool(&b.log), "but no tool was called");
    assert_eq!(untouched(&b), before);
    // A server that names itself nothing is named by its command, as
    // capture names it: not the finding's server either.
    let nameless = b.verify(&["--name", ""]);
    assert_eq!(nameless.status, 6, "{}", nameless.stderr);
    assert!(nameless.stderr.contains("the server is \"python3\" but"));
    assert_eq!(untouched(&b), before);
}

/// Signs `result` after `edit` with the bench's salt, as a probe of this
/// store would have.
fn resigned(b: &Bench, result: &str, edit: impl FnOnce(&mut ProbeResult)) -> String {
    let salt = Salt::load(&Home::at(&b.store.home())).unwrap().unwrap();
    let mut r = ProbeResult::parse(result.trim()).unwrap();
    edit(&mut r);
    r.sign(&salt);
    r.to_json_line()
}

fn record_stdin(b: &Bench, result: &str) -> Run {
    let out = b
        .store
        .duct("mcpeval-verify", &["--record", "-"])
        .stdin_bytes(result.as_bytes().to_vec())
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .unwrap();
    finish(out)
}

#[test]
fn recording_a_result_for_another_tool_or_server_is_refused() {
    // A probe made before the store knew the finding: it runs, and its
    // result says which tool the case called and what the server is named.
    let store = Store::new();
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=10 {
            let n = session * 100 + seq;
            recs.push(Rec::error(n, session, seq, "status", Some(1)).server(FIXTURE_SERVER));
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    succeed(&store, "mcpeval-index", &[]);
    let salt = Salt::load_or_create(&Home::at(&store.home())).unwrap();
    let template = crate::records::template(1);
    let id = store::ids::finding_id(
        &salt,
        shared::finding::Kind::Error,
        FIXTURE_SERVER,
        "status",
        Some(&template),
    );
    let b = Bench {
        server: store.scratch().join("server.py"),
        manifest: store.scratch().join("mcp-eval.manifest.json"),
        log: store.scratch().join("server.log"),
        finding: id.to_string(),
        store,
    };
    std::fs::copy(fixture("probe_server.py"), &b.server).unwrap();
    let mut other = status_case(&b.finding);
    other["tool"] = json!("flaky");
    b.cases(json!([other]));
    let for_flaky = b.probe(&[]);
    assert!(for_flaky.contains(r#""tools":["flaky"]"#), "{for_flaky}");
    b.cases(json!([status_case(&b.finding)]));
    let impostor = b.probe(&["--name", "impostor"]);
    assert!(impostor.contains(r#""server":"impostor""#), "{impostor}");
    let genuine = b.probe(&[]);
    succeed(
        &b.store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    assert_eq!(findings(&b.store)[0]["id"], b.finding.as_str());
    let before = untouched(&b);

    let run = record_stdin(&b, &for_flaky);
    assert_eq!(
        (run.status, run.stdout.as_str(), run.stderr.as_str()),
        (
            4,
            "",
            format!(
                "mcpeval-verify: error: standard input: case \"status\" calls \"flaky\" but never \"status\", \
the tool of {f}: its runs cannot prove that finding's repair; nothing was recorded\n  hint: make the \
case call \"status\" (a workflow: in at least one step), or run the case written for {f}\n",
                f = b.finding
            )
            .as_str()
        )
    );
    let run = record_stdin(&b, &impostor);
    assert_eq!((run.status, run.stdout.as_str()), (6, ""));
    assert!(
        run.stderr.starts_with(&format!(
            "mcpeval-verify: error: standard input: the server is \"impostor\" but {} is about \
server \"probe-fixture\": its runs earn that finding no credit; nothing was recorded\n",
            b.finding
        )),
        "{}",
        run.stderr
    );
    // A result of an earlier release carries none of what the rules need.
    let old = resigned(&b, &genuine, |r| {
        r.tools.clear();
        r.steps.clear();
        r.budget = None;
        r.server = None;
        r.definition = None;
        r.target = None;
    });
    let run = record_stdin(&b, &old);
    assert_eq!((run.status, run.stdout.as_str()), (4, ""));
    assert!(
        run.stderr.starts_with(
            "mcpeval-verify: error: standard input: the result does not carry what the proof rules need"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(untouched(&b), before);
    // The genuine result, for the finding's tool on its server, earns credit.
    b.expect_green(&record_stdin(&b, &genuine), "verifying", 1);
}

#[test]
fn the_subject_outlives_the_index_that_listed_it() {
    let b = Bench::new();
    b.expect_green(&b.green(), "verifying", 1);
    // A later index no longer lists the finding: lifecycle.db still says
    // what it is about, so a case of another tool is still refused.
    records::write(&b.store, 1, &Rec::ok(900, 9, 1, "status").line());
    succeed(&b.store, "mcpeval-index", &["--rebuild"]);
    succeed(&b.store, "mcpeval-promote", &["--threshold", "0"]);
    assert!(
        findings(&b.store)
            .iter()
            .all(|f| f["id"] != b.finding.as_str())
    );
    let mut other = status_case(&b.finding);
    other["id"] = json!("other");
    other["tool"] = json!("flaky");
    b.cases(json!([status_case(&b.finding), other]));
    let run = b.verify_argv("other", &b.argv(&[]), &[]);
    assert_eq!((run.status, run.stdout.as_str()), (4, ""), "{}", run.stderr);
    let run = b.verify_argv("status", &b.argv(&[]), &[]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(" state=verifying streak=2/3 "),
        "{}",
        run.stdout
    );
}
