//! `mcpeval-share` and `mcpeval-findings --from`: the envelope carries the
//! sanitized findings, evidence and records of the chosen servers and
//! nothing private (salt, lifecycle rows, notes unless asked), and a
//! second store, or none, renders it.

use serde_json::{Value, json};

use crate::records::{event, session};
use crate::seeded::{NOTE, findings, ok, run, salt_hex, seeded};
use crate::support::{Store, text};

fn share(store: &Store, args: &[&str]) -> (Value, String, Vec<u8>) {
    let file = store.scratch().join("out.share.json");
    let mut all = vec!["--output", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run(store, "mcpeval-share", &all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let bytes = std::fs::read(&file).unwrap();
    (
        serde_json::from_slice(&bytes).unwrap(),
        text(&out.stderr),
        bytes,
    )
}

fn has(bytes: &[u8], needle: &str) -> bool {
    crate::support::contains(bytes, needle)
}

#[test]
fn the_envelope_holds_what_findings_shows_and_nothing_private() {
    let store = seeded();
    let (env, stderr, bytes) = share(&store, &[]);
    assert_eq!(env["schema"], "mcpeval.share/1");
    assert_eq!(env["servers"], json!(["maps", "weather"]));
    // The findings are exactly those of `findings --format json`.
    assert_eq!(env["findings"], Value::Array(findings(&store)));
    assert_eq!(env["journals"].as_array().unwrap().len(), 12);
    let wrote = format!(
        "mcpeval-share: wrote {}: 3 findings, 12 journal records of 2 servers\n",
        store.scratch().join("out.share.json").display()
    );
    assert_eq!(stderr, wrote);
    // Evidence per tool, counted by hand from the seeded journal.
    let route = env["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "route")
        .unwrap();
    assert_eq!(
        (
            &route["calls"],
            &route["ok"],
            &route["errors"],
            &route["sessions"],
            &route["err_codes"]
        ),
        (
            &json!(4),
            &json!(2),
            &json!(2),
            &json!(2),
            &json!({"-32602": 2})
        )
    );
    assert_eq!(route["failure_rate"], 0.5);

    // Nothing private: no salt (in any case of hex), no note, no
    // lifecycle rows (their tables' words), no raw values.
    let salt = salt_hex(&store);
    assert!(!has(&bytes, &salt) && !has(&bytes, &salt.to_uppercase()));
    assert!(!has(&bytes, &salt[..16]));
    assert!(!has(&bytes, "NOTE-5b1c"));
    for word in [
        "finding_state",
        "verifications",
        "\"history\"",
        "annotations",
        "\"note\"",
    ] {
        assert!(!has(&bytes, word), "{word}");
    }
    assert!(env.get("notes").is_none());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(store.scratch().join("out.share.json"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn journal_records_are_the_sanitized_ones_of_the_chosen_servers() {
    let store = seeded();
    let (env, _, bytes) = share(&store, &["--server", "maps"]);
    assert_eq!(env["servers"], json!(["maps"]));
    let journals = env["journals"].as_array().unwrap();
    assert_eq!(journals.len(), 4);
    assert!(journals.iter().all(|r| r["server"] == "maps"));
    assert_eq!(
        journals[0]["args_shape"],
        json!({"from": "string", "to": "string", "avoid": ["string"]})
    );
    assert!(
        env["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["server"] == "maps")
    );
    assert!(!has(&bytes, &session(1)), "weather's sessions stay home");
    // A server with nothing is a usage error, and no file is written.
    let file = store.scratch().join("none.json");
    let out = run(
        &store,
        "mcpeval-share",
        &["--output", file.to_str().unwrap(), "--server", "nope"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("known servers: maps, weather"),
        "{}",
        text(&out.stderr)
    );
    assert!(!file.exists());
}

#[test]
fn notes_travel_only_when_asked_and_are_shown_first() {
    let store = seeded();
    let (env, stderr, _) = share(&store, &["--include-notes"]);
    assert!(
        stderr.starts_with(&format!(
            "mcpeval-share: --include-notes: 1 note will be included, as written:\n  workaround on event id {}: {NOTE}\n",
            event(2)
        )),
        "{stderr}"
    );
    assert_eq!(env["notes"][0]["note"], NOTE);
    assert_eq!(env["notes"][0]["event_id"], event(2));
    // The note's call is weather's: sharing maps alone takes no note.
    let (maps, stderr, _) = share(&store, &["--include-notes", "--server", "maps"]);
    assert_eq!(maps["notes"], json!([]));
    assert!(stderr.contains("0 notes will be included"), "{stderr}");
}

#[test]
fn a_second_store_and_no_store_read_the_envelope() {
    let store = seeded();
    let (_, _, _) = share(&store, &[]);
    let file = store.scratch().join("out.share.json");
    let original = findings(&store);

    // Another store, never indexed: --from does not need it.
    let other = Store::new();
    let json_out = ok(
        &other,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap(), "--format", "json"],
    );
    let read: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(read["findings"], Value::Array(original.clone()));
    let md = ok(
        &other,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap(), "--format", "md"],
    );
    assert!(md.starts_with("# mcpeval findings\n"), "{md}");
    let id = original[0]["id"].as_str().unwrap();
    assert!(md.contains(id));
    let agent = ok(
        &other,
        "mcpeval-findings",
        &[
            "--from",
            file.to_str().unwrap(),
            "--format",
            "agent",
            "--server",
            "maps",
        ],
    );
    assert!(agent.contains("tool `route` on server `maps`"), "{agent}");
    assert!(
        !other.home().exists(),
        "reading an envelope creates no store"
    );

    // No store at all: no MCPEVAL_HOME, no HOME.
    let out = std::process::Command::new(crate::support::bin("mcpeval-findings"))
        .env_clear()
        .args(["--from", file.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["findings"],
        Value::Array(original)
    );
}

#[test]
fn a_file_that_is_not_an_envelope_is_refused() {
    let store = Store::new();
    let file = store.scratch().join("x.json");
    std::fs::write(&file, r#"{"schema":"other/1","findings":[]}"#).unwrap();
    let out = run(
        &store,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("schema is \"other/1\", expected \"mcpeval.share/1\""),
        "{}",
        text(&out.stderr)
    );

    let seeded = seeded();
    share(&seeded, &[]);
    let good = seeded.scratch().join("out.share.json");
    let mut env: Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    env["findings"][1]["defect_class"] = json!("made-up");
    std::fs::write(&file, env.to_string()).unwrap();
    let out = run(
        &store,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("findings[1].defect_class: unknown defect class \"made-up\""),
        "{}",
        text(&out.stderr)
    );
    env["findings"][1]["defect_class"] = json!("tool-error");
    env["findings"][1]["template"] = json!("t");
    std::fs::write(&file, env.to_string()).unwrap();
    let out = run(
        &store,
        "mcpeval-findings",
        &["--from", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("unknown field `template`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn without_an_index_the_envelope_has_records_but_no_findings() {
    let store = Store::new();
    crate::records::write(
        &store,
        1,
        &crate::records::lines(&crate::seeded::seeded_records()),
    );
    let (env, stderr, _) = share(&store, &[]);
    assert_eq!(env["findings"], json!([]));
    assert_eq!(env["journals"].as_array().unwrap().len(), 12);
    assert!(stderr.contains("no index yet"), "{stderr}");
    crate::records::append(&store, 1, "not json\n");
    let file = store.scratch().join("bad.json");
    let out = run(
        &store,
        "mcpeval-share",
        &["--output", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains(":13: not valid JSON"),
        "{}",
        text(&out.stderr)
    );
    assert!(!file.exists());
}
