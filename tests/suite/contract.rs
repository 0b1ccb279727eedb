//! The contract crate's documents as the binaries print them: what a
//! third-party plugin parses with `mcpeval-shared`'s default features.

use serde_json::Value;
use shared::findings::{Findings, SCHEMA};

use crate::records::{self, Rec};
use crate::support::{Store, text};

fn stdout(store: &Store, bin: &str, args: &[&str]) -> String {
    let out = store.bin(bin).args(args).assert().success();
    text(&out.get_output().stdout)
}

/// Two sessions failing the same way: one finding once promoted.
fn one_finding(store: &Store) {
    let journal = records::lines(&[
        Rec::error(1, 1, 1, "forecast", Some(1)),
        Rec::ok(2, 1, 2, "forecast"),
        Rec::error(3, 2, 1, "forecast", Some(1)),
        Rec::ok(4, 2, 2, "forecast"),
    ]);
    records::write(store, 1, &journal);
    stdout(store, "mcpeval-index", &[]);
}

#[test]
fn findings_json_names_its_schema_and_the_promotion_it_comes_from() {
    let store = Store::new();
    one_finding(&store);
    // Indexed but not promoted is status 3 with nothing on stdout (see
    // `reading`); from a promote run on, the object names that run.
    // Promotion times are cut to milliseconds.
    let started = jiff::Timestamp::now() - jiff::SignedDuration::from_millis(1);
    stdout(&store, "mcpeval-promote", &["--threshold", "0"]);
    let out = stdout(&store, "mcpeval-findings", &["--format", "json"]);
    assert!(
        out.starts_with(&format!("{{\"schema\":\"{SCHEMA}\",\"promoted_at\":\"")),
        "{out}"
    );
    let value: Value = serde_json::from_str(&out).unwrap();
    // An RFC 3339 time taken while promote ran.
    let promoted_at = shared::time::parse(value["promoted_at"].as_str().unwrap()).unwrap();
    assert!(promoted_at >= started, "{promoted_at} before {started}");
    assert!(promoted_at <= jiff::Timestamp::now());

    // The contract type reads it back, typed and checked.
    let parsed = Findings::parse(&out).unwrap();
    assert_eq!(parsed.schema, SCHEMA);
    assert_eq!(parsed.promoted_at.as_deref(), value["promoted_at"].as_str());
    assert_eq!(parsed.findings.len(), 1);
    let f = &parsed.findings[0];
    assert_eq!(f.derived.tool, "forecast");
    assert_eq!(f.state, shared::finding::State::Open);
    assert_eq!(
        f.severity,
        shared::score::Severity::of(f.derived.score, false)
    );
    assert_eq!(f.derived.fix_hint, f.derived.defect_class.fix_hint());
    // …and writes it back byte for byte, as `findings` printed it.
    assert_eq!(
        format!("{}\n", serde_json::to_string(&parsed).unwrap()),
        out
    );
}

#[test]
fn findings_read_from_a_share_file_carry_no_promotion_time() {
    let store = Store::new();
    one_finding(&store);
    stdout(&store, "mcpeval-promote", &["--threshold", "0"]);
    let share = store.scratch().join("share.json");
    let share = share.to_str().unwrap();
    store
        .bin("mcpeval-share")
        .args(["--output", share])
        .assert()
        .success();
    let out = stdout(
        &store,
        "mcpeval-findings",
        &["--from", share, "--format", "json"],
    );
    let parsed = Findings::parse(&out).unwrap();
    assert_eq!(parsed.promoted_at, None);
    assert_eq!(parsed.findings.len(), 1);
}

/// JSON carries Unicode only: a path that is not UTF-8 is never printed as
/// another one. `export-issues --format json` refuses such a `--dir`
/// before it writes anything.
#[test]
fn export_issues_json_refuses_a_dir_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let store = Store::new();
    let dir = store
        .scratch()
        .join(std::ffi::OsStr::from_bytes(b"issues-\xff"));
    let out = store
        .bin("mcpeval-export-issues")
        .arg("--dir")
        .arg(&dir)
        .args(["--format", "json"])
        .assert()
        .code(2);
    let out = out.get_output();
    assert_eq!(text(&out.stdout), "");
    let scratch = store.scratch().to_str().unwrap();
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcpeval-export-issues: error: --dir \"{scratch}/issues-\\xFF\" is not valid UTF-8, \
             which --format json cannot print; nothing was written\n  \
             hint: use a directory whose path is UTF-8, or --format text\n"
        )
    );
    assert!(!dir.exists());
}
