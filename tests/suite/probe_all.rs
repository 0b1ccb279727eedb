//! `mcpeval-probe --all`: every case of a manifest for CI, as JSON Lines
//! or as JUnit XML that a real reporter (junitparser) reads, with the
//! documented status: 1 for any red, else 5 for any transport error.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use shared::probe_result::ProbeResult;

use crate::support::{Deps, Store, fixture, repo, text};

const F1: &str = "finding-0123456789abcdef";
const F2: &str = "finding-fedcba9876543210";

struct Bench {
    store: Store,
    server: PathBuf,
    manifest: PathBuf,
}

impl Bench {
    fn new(cases: Value) -> Bench {
        let store = Store::new();
        let server = store.scratch().join("server.py");
        std::fs::copy(fixture("probe_server.py"), &server).unwrap();
        let manifest = store.scratch().join("ci.manifest.json");
        let doc = json!({"manifest_version": 1, "cases": cases});
        std::fs::write(&manifest, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        Bench {
            store,
            server,
            manifest,
        }
    }

    /// Runs probe with `flags`, asserting it exits with `code`.
    fn run(&self, flags: &[&str], code: i32) -> Output {
        self.store
            .bin("mcpeval-probe")
            .arg("--manifest")
            .arg(&self.manifest)
            .args(flags)
            .arg("--")
            .arg("python3")
            .arg(&self.server)
            .assert()
            .code(code)
            .get_output()
            .clone()
    }
}

fn case(id: &str, finding: &str, tool: &str, expect: Value) -> Value {
    json!({"id": id, "finding": finding, "probe": "instruction-fidelity", "tool": tool,
           "timeout_ms": 5000, "expect": expect})
}

/// green (status is ready), red (status is not "done"), transport error
/// (a malformed result).
fn mixed() -> Value {
    json!([
        case(
            "ready",
            F1,
            "status",
            json!({"outcome": "ok", "equals_paths": {"/structuredContent/status": "ready"}})
        ),
        case(
            "done",
            F1,
            "status",
            json!({"outcome": "ok", "equals_paths": {"/structuredContent/status": "done"}})
        ),
        case("broken", F2, "malformed_null", json!({"outcome": "ok"})),
    ])
}

#[test]
fn json_lines_one_result_per_case_and_red_wins_the_status() {
    let b = Bench::new(mixed());
    let out = b.run(&["--all"], 1);
    let results: Vec<ProbeResult> = text(&out.stdout)
        .lines()
        .map(|l| ProbeResult::parse(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, Option<&str>)> = results
        .iter()
        .map(|r| {
            (
                r.case.as_str(),
                r.result.as_str(),
                r.reason.map(|x| x.as_str()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("ready", "green", None),
            ("done", "red", Some("not-equal")),
            ("broken", "transport-error", Some("malformed-result")),
        ]
    );
    // No lifecycle change; every call journaled as a probe call.
    assert!(!b.store.home().join("lifecycle.db").exists());
    assert!(b.store.records().iter().all(|r| r["origin"] == "probe"));

    // Without the red case, a transport error alone is status 5; with
    // --finding only that finding's cases run.
    let out = b.run(&["--all", "--finding", F2], 5);
    assert_eq!(text(&out.stdout).lines().count(), 1);
    let out = b.run(&["--all", "--finding", F1, "--format", "text"], 1);
    assert_eq!(text(&out.stdout).lines().count(), 2);
}

#[test]
fn junit_xml_is_read_by_a_real_reporter() {
    let b = Bench::new(mixed());
    let out = b.run(&["--all", "--format", "junit"], 1);
    let xml = text(&out.stdout);
    let report = b.store.scratch().join("junit.xml");
    std::fs::write(&report, &xml).unwrap();

    // The structure, read with a Rust XML parser.
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (
            root.attribute("tests"),
            root.attribute("failures"),
            root.attribute("errors")
        ),
        (Some("3"), Some("1"), Some("1"))
    );
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("name"), Some("ci.manifest.json"));
    let cases: Vec<_> = suites[0]
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let ids: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| {
            (
                c.attribute("classname").unwrap(),
                c.attribute("name").unwrap(),
            )
        })
        .collect();
    assert_eq!(ids, vec![(F1, "ready"), (F1, "done"), (F2, "broken")]);
    let child = |i: usize, tag: &str| cases[i].children().find(|n| n.has_tag_name(tag));
    assert!(child(0, "failure").is_none() && child(0, "error").is_none());
    let failure = child(1, "failure").unwrap();
    assert_eq!(failure.attribute("message"), Some("not-equal"));
    assert!(
        failure
            .text()
            .unwrap()
            .starts_with("probe instruction-fidelity: not-equal after 1 attempt\n")
    );
    let error = child(2, "error").unwrap();
    assert_eq!(error.attribute("type"), Some("transport-error"));
    // Each case's signed result rides along for `verify --record`.
    let out0 = child(0, "system-out").unwrap().text().unwrap();
    assert_eq!(ProbeResult::parse(out0).unwrap().case, "ready");

    // The same file through junitparser, as CI reporters read it.
    let parsed = assert_cmd::Command::new(Deps::python())
        .arg(repo().join("tests/clients/junit_report.py"))
        .arg(&report)
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&parsed.get_output().stdout).unwrap();
    let suite = &r["suites"][0];
    assert_eq!(
        (&suite["tests"], &suite["failures"], &suite["errors"]),
        (&json!(3), &json!(1), &json!(1))
    );
    assert_eq!(suite["cases"][1]["result"][0]["tag"], "failure");
    assert_eq!(suite["cases"][1]["result"][0]["message"], "not-equal");
    assert_eq!(suite["cases"][2]["result"][0]["tag"], "error");
    assert_eq!(suite["cases"][0]["result"], json!([]));
    assert_eq!(r["verify"], 1);

    // All green: status 0 and junitparser's verify passes.
    let green = Bench::new(json!([case(
        "ready",
        F1,
        "status",
        json!({"outcome": "ok"})
    )]));
    let out = green.run(&["--all", "--format", "junit"], 0);
    let report = green.store.scratch().join("junit.xml");
    std::fs::write(&report, &out.stdout).unwrap();
    let parsed = std::process::Command::new(Deps::python())
        .arg(repo().join("tests/clients/junit_report.py"))
        .arg(&report)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&parsed.stdout).unwrap();
    assert_eq!(r["verify"], 0);
}

#[test]
fn all_and_case_are_exclusive_and_refusals_come_first() {
    let b = Bench::new(mixed());
    let both = b.run(&["--all", "--case", "ready"], 2);
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
    b.run(&[], 2);
    let junit_one = b.run(&["--case", "ready", "--format", "junit"], 2);
    assert!(text(&junit_one.stderr).contains("use it with --all"));

    // One case with a placeholder stops the run before any server starts.
    let held = Bench::new(json!([
        case("ready", F1, "status", json!({"outcome": "ok"})),
        {"id": "hole", "finding": F1, "probe": "instruction-fidelity", "tool": "status",
         "arguments": {"job": "<fill:string>"}},
    ]));
    let out = held.run(&["--all", "--format", "junit"], 4);
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("case \"hole\" still has 1 placeholder(s)"),
        "{}",
        text(&out.stderr)
    );
    assert!(held.store.records().is_empty(), "no server was started");
}
