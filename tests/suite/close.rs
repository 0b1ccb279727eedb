//! `mcpeval-close`: closing by hand, the only way to close a finding with
//! no attached probe; the reason is kept in history and bounded.

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::Store;
use crate::verify::{Bench, findings, history, promoted_store};

#[test]
fn a_finding_without_a_probe_is_closed_by_hand() {
    let store = Store::new();
    let finding = promoted_store(&store);
    let reason = "tool removed in 3.0";
    store
        .bin("mcpeval-close")
        .args(["--finding", &finding, "--reason", reason])
        .assert()
        .code(0)
        .stdout(format!("{finding} state=closed (was open)\n"))
        .stderr("");
    let f = &findings(&store)[0];
    assert_eq!(
        (&f["state"], &f["probe_attached"], &f["severity"]),
        (&json!("closed"), &json!(false), &json!("medium"))
    );
    let last = history(&store, &finding).pop().unwrap();
    assert_eq!(
        last,
        (
            "closed-by-hand".to_owned(),
            Some("open".to_owned()),
            Some("closed".to_owned()),
            Some(reason.to_owned())
        )
    );
    // Closing again changes and records nothing.
    let lines = history(&store, &finding).len();
    let out = store
        .bin("mcpeval-close")
        .args([
            "--finding",
            &finding,
            "--reason",
            "again",
            "--format",
            "json",
        ])
        .assert()
        .code(0);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.get_output().stdout).unwrap(),
        json!({"finding": finding, "state": "closed", "was": "closed", "changed": false})
    );
    assert_eq!(history(&store, &finding).len(), lines);
}

#[test]
fn a_red_run_reopens_a_finding_closed_by_hand() {
    let b = Bench::new();
    b.green();
    b.store
        .bin("mcpeval-close")
        .args(["--finding", &b.finding, "--reason", "good enough"])
        .assert()
        .code(0);
    assert_eq!(b.lifecycle(), ("closed".to_owned(), 1, 0));
    b.red();
    assert_eq!(b.lifecycle(), ("open".to_owned(), 0, 1));
}

#[test]
fn refusals() {
    let store = Store::new();
    let finding = promoted_store(&store);
    let before = history(&store, &finding);
    let cases = [
        (
            vec!["--finding", finding.as_str(), "--reason", "line\nbreak"],
            "mcpeval-close: error: invalid --reason: the reason contains the control character U+000A \
at character 5; use plain text on one line\n"
                .to_owned(),
        ),
        (
            vec!["--finding", finding.as_str(), "--reason", "   "],
            "mcpeval-close: error: invalid --reason: the reason is empty; say why the finding is closed\n"
                .to_owned(),
        ),
        (
            vec!["--finding", "finding-0000000000000000", "--reason", "x"],
            "mcpeval-close: error: no finding finding-0000000000000000 in this store: it was never \
promoted\n  hint: list the findings with `mcpeval findings`, or run `mcpeval index` and `mcpeval promote`\n"
                .to_owned(),
        ),
        (
            vec!["--finding", "F1", "--reason", "x"],
            "mcpeval-close: error: invalid --finding \"F1\": a finding id is \"finding-\" and 16 \
lower-case hex digits\n"
                .to_owned(),
        ),
    ];
    for (args, stderr) in cases {
        store
            .bin("mcpeval-close")
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(stderr);
    }
    let long = "x".repeat(241);
    store
        .bin("mcpeval-close")
        .args(["--finding", &finding, "--reason", &long])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the reason has 241 characters; the limit is 240",
        ));
    assert_eq!(history(&store, &finding), before);
    assert_eq!(findings(&store)[0]["state"], "open");
}
