//! Proving a contract-violation repair (SPEC §7, "Proof"): the probe
//! checks the tool's declared outputSchema itself, so the generated case
//! needs no oracle, and a run on the unfixed server is red. What a case
//! cannot show, that its arguments reach the broken result, a witnessed
//! closure shows; a server that stops declaring the schema keeps nothing.
//! Every finding here comes from real captured sessions of
//! `tests/fixtures/contract_server.py` through `mcpeval-capture`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::contract_violation::{contract_server, sdk_client};
use crate::support::{Store, bin, text};
use crate::verify::{Run, finish, succeed};

/// The hint of a red run on the fixture's `job_status:shouty`.
const HINT: &str = "Return structuredContent that conforms to the tool's declared outputSchema \
                    (first violation at /status: enum).";

/// A store whose one job_status finding is the `/status` enum violation,
/// with a generated case filled in and a private copy of the fixture.
struct Proof {
    store: Store,
    finding: String,
    manifest: PathBuf,
    /// The server file verify runs: the fixture's bytes, or a repair of them.
    server: PathBuf,
}

/// The fixture's source with `edits` applied, each checked to apply.
fn fixture_with(edits: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(contract_server()).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "the fixture no longer holds {from:?}");
        text = text.replace(from, to);
    }
    text
}

/// Every call conforms, as with `--fixed`, but from the same command line.
const FIXED: (&str, &str) = (r#"FIXED = "--fixed" in args"#, "FIXED = True");
/// job_status lists no outputSchema any more.
const NO_SCHEMA: (&str, &str) = (
    r#"{"name": "job_status", "inputSchema": one_arg("job"), "outputSchema": JOB_STATUS}"#,
    r#"{"name": "job_status", "inputSchema": one_arg("job")}"#,
);

impl Proof {
    /// Two captured sessions of `job_status` breaking its schema's enum,
    /// indexed and promoted; `generate` writes the case and the test fills
    /// its one argument, as the generated placeholder asks.
    fn new() -> Proof {
        let store = Store::new();
        for _ in 0..2 {
            capture(
                &store,
                &["job_status:shouty", "job_status:ready", "job_status:shouty"],
            );
        }
        succeed(&store, "mcpeval-index", &[]);
        succeed(&store, "mcpeval-promote", &["--threshold", "0"]);
        let shown = succeed(&store, "mcpeval-findings", &["--format", "json"]);
        let all: Value = serde_json::from_str(&shown).unwrap();
        let findings = all["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{shown}");
        let f = &findings[0];
        assert_eq!(f["defect_class"], "contract-violation", "{shown}");
        assert_eq!(f["kind"], "contract", "{shown}");
        assert_eq!(f["server"], "contract-fixture", "{shown}");
        assert_eq!(f["tool"], "job_status", "{shown}");
        assert_eq!(
            f["contract"],
            serde_json::json!({"at": "/status", "keyword": "enum"}),
            "{shown}"
        );
        assert_eq!(f["fix_hint"], HINT, "{shown}");
        let finding = f["id"].as_str().unwrap().to_owned();

        let generated = store.scratch().join("generated.json");
        let out = store
            .cmd("mcpeval-generate")
            .args(["--finding", &finding, "--confirm-read-only", "--output"])
            .arg(&generated)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let said = text(&out.stderr);
        assert!(said.contains("/cases/0/arguments/job"), "{said}");
        assert!(said.contains("no oracle to write"), "{said}");
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&generated).unwrap()).unwrap();
        let case = &mut doc["cases"][0];
        // The schema check is the oracle: outcome ok and nothing else.
        assert_eq!(case["probe"], "instruction-fidelity");
        assert_eq!(case["tool"], "job_status");
        assert_eq!(case["expect"], serde_json::json!({"outcome": "ok"}));
        assert_eq!(
            case["arguments"],
            serde_json::json!({"job": "<fill:string>"})
        );
        case["arguments"]["job"] = "shouty".into();
        let manifest = store.scratch().join("mcp-eval.manifest.json");
        std::fs::write(&manifest, doc.to_string()).unwrap();

        let server = store.scratch().join("server.py");
        std::fs::copy(contract_server(), &server).unwrap();
        Proof {
            store,
            finding,
            manifest,
            server,
        }
    }

    /// `mcpeval-probe` of the generated case, in `store`, against the
    /// server file.
    fn probe_in(&self, store: &Store) -> std::process::Output {
        store
            .cmd("mcpeval-probe")
            .args(["--case", &self.finding, "--manifest"])
            .arg(&self.manifest)
            .args(["--", "python3"])
            .arg(&self.server)
            .output()
            .unwrap()
    }

    /// `mcpeval-verify --record` of a probe result.
    fn record(&self, result: &[u8]) -> Run {
        let file = self.store.scratch().join("result.json");
        std::fs::write(&file, result).unwrap();
        finish(
            self.store
                .cmd("mcpeval-verify")
                .arg("--record")
                .arg(&file)
                .output()
                .unwrap(),
        )
    }

    /// Rewrites the server file verify runs: a repair, or the bug again.
    fn serve(&self, source: &str) {
        std::fs::write(&self.server, source).unwrap();
    }

    /// `mcpeval-verify` of the generated case against `python3 SERVER ARGS`.
    fn verify_on(&self, server: &Path, args: &[&str]) -> Run {
        let out = self
            .store
            .cmd("mcpeval-verify")
            .args(["--finding", &self.finding, "--case", &self.finding])
            .arg("--manifest")
            .arg(&self.manifest)
            .arg("--")
            .arg("python3")
            .arg(server)
            .args(args)
            .output()
            .unwrap();
        finish(out)
    }

    fn verify(&self) -> Run {
        self.verify_on(&self.server, &[])
    }

    /// The line verify prints for `run`, up to its run id.
    fn line(&self, result: &str, state: &str, streak: u32) -> String {
        format!(
            "{} case={} result={result} state={state} streak={streak}/3 run=",
            self.finding, self.finding
        )
    }

    #[track_caller]
    fn expect_green(&self, run: &Run, state: &str, streak: u32) {
        assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
        assert!(
            run.stdout.starts_with(&self.line("green", state, streak)),
            "{}",
            run.stdout
        );
        assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    }

    /// (state, streak, witnessed) as `mcpeval findings` shows them.
    fn lifecycle(&self) -> (String, u64, Value) {
        let shown = succeed(&self.store, "mcpeval-findings", &["--format", "json"]);
        let all: Value = serde_json::from_str(&shown).unwrap();
        let f = &all["findings"][0];
        (
            f["state"].as_str().unwrap().to_owned(),
            f["streak"].as_u64().unwrap(),
            f["witnessed"].clone(),
        )
    }
}

/// One session of `calls` (TOOL:CASE) made by the official SDK client
/// through `mcpeval-capture -- python3 contract_server.py`.
fn capture(store: &Store, calls: &[&str]) {
    let mut args: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
    args.push("--".into());
    args.push(bin("mcpeval-capture").display().to_string());
    args.extend(["--".into(), "python3".into(), contract_server()]);
    let lines = sdk_client(store, &args, &[]);
    let raised: Vec<bool> = lines.iter().map(|l| l["raised"] == true).collect();
    assert_eq!(raised, [true, false, true], "{lines:?}");
}

/// The red line of an output-schema violation, and its hint naming where
/// and which keyword.
#[track_caller]
fn expect_violation(p: &Proof, run: &Run, state: &str) {
    assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
    let (line, hint) = run.stdout.split_once('\n').unwrap();
    assert!(line.starts_with(&p.line("red", state, 0)), "{line}");
    assert!(line.ends_with(" reason=output-schema-violation"), "{line}");
    assert_eq!(hint, format!("  hint: {HINT}\n"));
    assert!(
        run.stderr.contains(
            "red: case {} output-schema-violation: call 1: structuredContent breaks the tool's \
             outputSchema at /status: enum"
                .replace("{}", &p.finding)
                .as_str()
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn the_unfixed_server_is_red_and_a_repair_it_reproduced_closes_witnessed() {
    let p = Proof::new();
    // The case expects only outcome ok, which the wire says: the probe's
    // own check of the outputSchema makes the unfixed server red.
    let red = p.verify();
    expect_violation(&p, &red, "fix-claimed");

    // The probe's own journal record carries the verdict, as capture's do.
    let probed: Vec<Value> = p
        .store
        .records()
        .into_iter()
        .filter(|r| r["origin"] == "probe")
        .collect();
    assert_eq!(probed.len(), 1, "{probed:?}");
    assert_eq!(
        probed[0]["contract"],
        serde_json::json!({"kept": false, "at": "/status", "keyword": "enum"})
    );
    assert_eq!(probed[0]["advertised"], true);
    assert_eq!(
        probed[0]["args_shape"],
        serde_json::json!({"job": "string"})
    );
    assert!(!text(&p.store.all_bytes()).contains("Ready!"));

    // The same command line, repaired bytes: three greens close it, and
    // the red run before them makes the closure witnessed.
    p.serve(&fixture_with(&[FIXED]));
    p.expect_green(&p.verify(), "verifying", 1);
    p.expect_green(&p.verify(), "verifying", 2);
    let last = p.verify();
    p.expect_green(&last, "closed", 3);
    assert_eq!(last.stderr, "");
    assert_eq!(
        p.lifecycle(),
        ("closed".to_owned(), 3, Value::Bool(true)),
        "a closure after a red run of the case on the same target is witnessed"
    );
}

#[test]
fn the_probe_result_carries_the_violation_and_the_checked_tools() {
    let p = Proof::new();
    let out = p.probe_in(&p.store);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "red");
    assert_eq!(result["reason"], "output-schema-violation");
    assert_eq!(
        result["contract"],
        serde_json::json!({"at": "/status", "keyword": "enum"})
    );
    assert_eq!(result["checked"], serde_json::json!(["job_status"]));
    assert_eq!(
        result["detail"],
        "call 1: structuredContent breaks the tool's outputSchema at /status: enum"
    );
    assert!(
        text(&out.stderr).ends_with(&format!("  hint: {HINT}\n")),
        "{}",
        text(&out.stderr)
    );
    // The violation is signed with the rest: recorded, it is the red run.
    let recorded = p.record(&out.stdout);
    expect_violation_line(&p, &recorded);
    // An edited place no longer verifies.
    let edited = text(&out.stdout).replace("\"/status\"", "\"/eta\"");
    let refused = p.record(edited.as_bytes());
    assert_eq!(refused.status, 6, "{}", refused.stderr);
}

/// `verify --record`'s line for a red output-schema violation.
#[track_caller]
fn expect_violation_line(p: &Proof, run: &Run) {
    assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
    let (line, hint) = run.stdout.split_once('\n').unwrap();
    assert!(line.starts_with(&p.line("red", "fix-claimed", 0)), "{line}");
    assert!(line.ends_with(" reason=output-schema-violation"), "{line}");
    assert_eq!(hint, format!("  hint: {HINT}\n"));
}

#[test]
fn three_greens_with_no_red_first_stay_verifying() {
    // Nothing in the case shows that its arguments reach the broken
    // result: only a red run of it on the unfixed server does. Without
    // one, three greens on a good server hold the finding at verifying,
    // whatever require_witnessed says.
    let p = Proof::new();
    let fixed = PathBuf::from(contract_server());
    p.expect_green(&p.verify_on(&fixed, &["--fixed"]), "verifying", 1);
    p.expect_green(&p.verify_on(&fixed, &["--fixed"]), "verifying", 2);
    let third = p.verify_on(&fixed, &["--fixed"]);
    p.expect_green(&third, "verifying", 3);
    assert_eq!(
        third.stderr,
        format!(
            "mcpeval-verify: note: {} stays verifying: a contract-violation finding closes only on \
             a witnessed streak (nothing in a case shows that its arguments reach the broken \
             result), and no red run of case \"{}\" against this target came before its streak, \
             so the streak does not show that the bug was reproduced where the fix was made\n",
            p.finding, p.finding
        )
    );
    assert_eq!(p.lifecycle(), ("verifying".to_owned(), 3, Value::Null));
    // A red run of that very command line would not witness it afterwards
    // either: it reopens the finding.
}

#[test]
fn a_repair_that_drops_the_output_schema_is_red() {
    let p = Proof::new();
    expect_violation(&p, &p.verify(), "fix-claimed");
    // Conforming results, but no promise left to keep.
    p.serve(&fixture_with(&[FIXED, NO_SCHEMA]));
    let run = p.verify();
    assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
    let (line, hint) = run.stdout.split_once('\n').unwrap();
    assert!(line.starts_with(&p.line("red", "fix-claimed", 0)), "{line}");
    assert!(line.ends_with(" reason=output-schema-missing"), "{line}");
    assert!(
        hint.starts_with("  hint: The finding's tool declares no outputSchema"),
        "{hint}"
    );
    assert!(
        run.stderr.contains(
            "output-schema-missing: the finding's tool is listed without an outputSchema"
        ),
        "{}",
        run.stderr
    );
    // Red before any call: the tool was never called.
    assert_eq!(
        p.store
            .records()
            .iter()
            .filter(|r| r["origin"] == "probe")
            .count(),
        1,
        "only the first run called the tool"
    );
    // A schema too costly to check is no promise either.
    let costly = format!(
        r#"{{"type": "object", "properties": {{{}}}, "required": ["status"]}}"#,
        (0..25_000)
            .map(|i| format!(r#""p{i}": {{"type": "string"}}"#))
            .collect::<Vec<_>>()
            .join(", ")
    );
    p.serve(&fixture_with(&[
        FIXED,
        (
            r#""outputSchema": JOB_STATUS}"#,
            &format!(r#""outputSchema": json.loads({costly:?})}}"#),
        ),
    ]));
    let run = p.verify();
    assert_eq!(run.status, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(" reason=output-schema-missing"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("the finding's tool declares an outputSchema too costly to check"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_green_result_that_checked_no_schema_earns_nothing() {
    // A probe in a store that does not know the finding runs the case
    // (its result carries what the rules need); the same salt signs it.
    // Recorded where the finding is known, a green run that never checked
    // the tool's outputSchema proves nothing.
    let p = Proof::new();
    let elsewhere = Store::new();
    let salt = p.store.scratch().join("team.salt");
    succeed(
        &p.store,
        "mcpeval-salt",
        &["--export", salt.to_str().unwrap()],
    );
    succeed(
        &elsewhere,
        "mcpeval-salt",
        &["--import", salt.to_str().unwrap()],
    );
    p.serve(&fixture_with(&[FIXED, NO_SCHEMA]));
    let out = p.probe_in(&elsewhere);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["checked"], serde_json::json!([]));
    let run = p.record(&out.stdout);
    assert_eq!(run.status, 4, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            "the green run did not check \"job_status\"'s results against an outputSchema"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(p.lifecycle(), ("open".to_owned(), 0, Value::Null));
}
