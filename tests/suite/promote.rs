//! `mcpeval-promote` and `mcpeval-findings`: scores checked by hand,
//! classes in their order, false successes, the re-key of legacy ids, the
//! calibrated default, and that nothing raw ever reaches a finding.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::records::{self, Rec, event, session, template};
use crate::support::{Store, first_found, repo, text};

/// Runs `bin` in `store`, asserting success; returns stdout.
fn ok(store: &Store, bin: &str, args: &[&str]) -> String {
    let out = store.bin(bin).args(args).assert().success();
    text(&out.get_output().stdout)
}

fn findings(store: &Store) -> Vec<Value> {
    let out = ok(store, "mcpeval-findings", &["--format", "json"]);
    serde_json::from_str::<Value>(&out).unwrap()["findings"]
        .as_array()
        .unwrap()
        .clone()
}

fn index_and_promote(store: &Store, promote: &[&str]) -> String {
    ok(store, "mcpeval-index", &[]);
    ok(store, "mcpeval-promote", promote)
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// Wilson lower bound written out independently of the product code.
fn wilson(f: f64, n: f64) -> f64 {
    let z: f64 = 1.96;
    let p = f / n;
    (p + z * z / (2.0 * n) - z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt())
        / (1.0 + z * z / n)
}

#[test]
fn score_and_window_figures_match_hand_computation() {
    let store = Store::new();
    // Session 1: t1 fails at seq 1 and 2 (one window, extended), forecast
    // recovers at 3 → turns 3 − 1 = 2. Session 2: t1 fails at 2, alerts
    // fails inside the window at 3, the session ends at 4 unrecovered →
    // turns 4 − 2 + 1 = 3. Blast radius: forecast and alerts = 2.
    let journal = records::lines(&[
        Rec::error(1, 1, 1, "forecast", Some(1)),
        Rec::error(2, 1, 2, "forecast", Some(1)),
        Rec::ok(3, 1, 3, "forecast"),
        Rec::ok(4, 1, 4, "alerts"),
        Rec::ok(5, 2, 1, "forecast"),
        Rec::error(6, 2, 2, "forecast", Some(1)),
        Rec::error(7, 2, 3, "alerts", Some(2)),
        Rec::ok(8, 2, 4, "alerts"),
    ]);
    records::write(&store, 1, &journal);
    // The last failure of t1 is at 07:00:02.123Z; score a week later.
    let summary = index_and_promote(
        &store,
        &["--threshold", "0", "--now", "2026-12-07T07:00:02.123Z"],
    );
    assert_eq!(
        summary,
        "promoted 1 of 2 issues (1 seen in one session only, 0 below threshold)\n"
    );

    let all = findings(&store);
    assert_eq!(all.len(), 1);
    let f = &all[0];
    assert_eq!(
        (f["server"].as_str(), f["tool"].as_str()),
        (Some("weather"), Some("forecast"))
    );
    assert_eq!(
        (
            f["failures"].as_u64(),
            f["calls"].as_u64(),
            f["sessions"].as_u64()
        ),
        (Some(3), Some(5), Some(2))
    );
    let w = wilson(3.0, 5.0);
    close(f["wilson_lower"].as_f64().unwrap(), w);
    close(f["failure_rate"].as_f64().unwrap(), 0.6);
    close(f["median_window_turns"].as_f64().unwrap(), 2.5);
    assert_eq!(f["blast_radius"], 2);
    let r = 0.5f64.powf(7.0 / 14.0);
    let want = w * r * (0.5 + 0.25 * (3.5f64.log2() / 4.0).min(1.0) + 0.25 * (1.0f64 / 4.0));
    close(f["score"].as_f64().unwrap(), want);
    assert_eq!(f["defect_class"], "tool-error");
    assert_eq!(f["retryable"], false);
    assert_eq!(f["err_code"], Value::Null);
    assert_eq!(f["err_codes"], json!([]));
    assert_eq!(f["state"], "open");
    // 0.11 is high by score (≥ 0.08), capped at medium with no probe.
    assert_eq!(f["severity"], "medium");
    assert_eq!(
        f["args_shapes"],
        json!([{"city": "string", "days": "integer"}])
    );
}

#[test]
fn one_session_never_promotes_and_probe_calls_never_count() {
    let store = Store::new();
    let mut recs = Vec::new();
    for seq in 1..=6 {
        recs.push(Rec::error(seq, 1, seq, "forecast", Some(1)));
    }
    // The same template from a probe, in another session: still one session.
    recs.push(Rec::error(50, 2, 1, "forecast", Some(1)).probe());
    recs.push(Rec::error(51, 3, 1, "forecast", Some(1)).probe());
    records::write(&store, 1, &records::lines(&recs));
    let summary = index_and_promote(&store, &["--threshold", "0"]);
    assert_eq!(
        summary,
        "promoted 0 of 1 issues (1 seen in one session only, 0 below threshold)\n"
    );
    store
        .bin("mcpeval-findings")
        .assert()
        .code(0)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "mcpeval-findings: no findings: promote found none of 1 issues",
        ));
}

fn with_code(rec: Rec, code: i64) -> Rec {
    let mut rec = rec;
    rec.0["error"]["code"] = json!(code);
    rec.0["error"]["channel"] = json!("jsonrpc");
    rec
}

#[test]
fn the_first_matching_class_wins() {
    let store = Store::new();
    let mut recs = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    for s in 1..=2 {
        // Template 1: -32601 and -32602 mixed → unknown-tool (listed first).
        recs.push(with_code(
            Rec::error(next(), s, 1, "forecast", Some(1)),
            -32601,
        ));
        recs.push(with_code(
            Rec::error(next(), s, 2, "forecast", Some(1)),
            -32602,
        ));
        // Template 2: -32602 and mixed retryable → invalid-arguments.
        let mut a = with_code(Rec::error(next(), s, 3, "alerts", Some(2)), -32602);
        a.0["error"]["retryable"] = json!(s == 1);
        recs.push(a);
        // Template 3: -32603, always retryable → transient before internal-error.
        let mut t = with_code(Rec::error(next(), s, 4, "geocode", Some(3)), -32603);
        t.0["error"]["retryable"] = json!(true);
        recs.push(t);
        // Template 4: -32603, never retryable → internal-error.
        recs.push(with_code(
            Rec::error(next(), s, 5, "history", Some(4)),
            -32603,
        ));
    }
    records::write(&store, 1, &records::lines(&recs));
    index_and_promote(&store, &["--threshold", "0"]);
    let classes: HashMap<String, String> = findings(&store)
        .iter()
        .map(|f| {
            (
                f["tool"].as_str().unwrap().to_owned(),
                f["defect_class"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(classes["forecast"], "unknown-tool");
    assert_eq!(classes["alerts"], "invalid-arguments");
    assert_eq!(classes["geocode"], "transient");
    assert_eq!(classes["history"], "internal-error");
    let forecast = findings(&store)
        .into_iter()
        .find(|f| f["tool"] == "forecast")
        .unwrap();
    assert_eq!(forecast["err_codes"], json!([-32602, -32601]));
    assert_eq!(
        forecast["fix_hint"],
        "Keep tools/list and dispatch in sync, and answer an unknown name with an error listing the valid ones."
    );
}

fn annotate(store: &Store, args: &[&str]) {
    let mut all = vec![
        "--kind",
        "false-success",
        "--note",
        "result said done, nothing was booked",
    ];
    all.extend_from_slice(args);
    ok(store, "mcpeval-annotate", &all);
}

#[test]
fn false_success_needs_two_sessions_and_counts_a_call_once() {
    let store = Store::new();
    records::write(
        &store,
        1,
        &records::lines(&[
            Rec::ok(1, 1, 1, "book"),
            Rec::ok(2, 1, 2, "book"),
            Rec::ok(3, 2, 1, "book"),
            Rec::ok(4, 2, 2, "book"),
        ]),
    );
    // One call annotated twice is one observation, in one session.
    annotate(&store, &["--event-id", &event(1)]);
    annotate(&store, &["--event-id", &event(1)]);
    index_and_promote(&store, &["--threshold", "0"]);
    assert!(findings(&store).is_empty());

    // A second session's call makes it recur.
    annotate(&store, &["--event-id", &event(3)]);
    index_and_promote(&store, &["--threshold", "0"]);
    let all = findings(&store);
    assert_eq!(all.len(), 1, "{all:#?}");
    let f = &all[0];
    assert_eq!(f["kind"], "false-success");
    assert_eq!(f["defect_class"], "false-success");
    assert_eq!(
        (f["failures"].as_u64(), f["calls"].as_u64()),
        (Some(2), Some(4))
    );
    assert_eq!(f["err_code"], Value::Null);
    assert_eq!(f["retryable"], Value::Null);
    assert_eq!(f["err_codes"], json!([]));
    assert_eq!(f["median_window_turns"], 1.0);
    assert_eq!(f["blast_radius"], 1);
    // The note is never part of a finding.
    for format in ["json", "md", "agent"] {
        let out = ok(&store, "mcpeval-findings", &["--format", format]);
        assert!(!out.contains("nothing was booked"), "{format}");
    }
}

#[test]
fn ambiguous_or_other_annotations_cannot_form_false_success() {
    let store = Store::new();
    // Legacy coordinates (session 1, seq 1) exist on two servers: ambiguous.
    records::write(
        &store,
        1,
        &records::lines(&[
            Rec::ok(1, 1, 1, "book"),
            Rec::ok(2, 1, 1, "book").server("other"),
            Rec::ok(3, 2, 1, "book"),
            Rec::ok(4, 3, 1, "book"),
        ]),
    );
    annotate(&store, &["--session", &session(1), "--seq", "1"]);
    annotate(&store, &["--event-id", &event(3)]);
    // Another kind on the third call never counts.
    ok(
        &store,
        "mcpeval-annotate",
        &[
            "--event-id",
            &event(4),
            "--kind",
            "workaround",
            "--note",
            "x",
        ],
    );
    index_and_promote(&store, &["--threshold", "0"]);
    assert!(
        findings(&store).is_empty(),
        "only one unambiguous false-success call"
    );
}

#[test]
fn legacy_ids_are_rekeyed_once_and_history_is_kept() {
    use shared::finding::Kind;
    use store::ids::{finding_id, legacy_finding_id};
    let store = Store::new();
    let recs: Vec<Rec> = (1..=4)
        .map(|s| with_code(Rec::error(s, s, 1, "forecast", Some(1)), -32602))
        .collect();
    records::write(&store, 1, &records::lines(&recs));
    ok(&store, "mcpeval-index", &[]);
    ok(&store, "mcpeval-promote", &["--threshold", "0"]); // creates salt and lifecycle.db
    let salt = store::salt::Salt::load(&shared::home::Home::at(&store.home()))
        .unwrap()
        .unwrap();
    let current = finding_id(
        &salt,
        Kind::Error,
        "weather",
        "forecast",
        Some(&template(1)),
    )
    .into_string();
    let legacy = legacy_finding_id(
        &salt,
        "weather",
        "forecast",
        Some(&template(1)),
        Some(-32602),
    )
    .into_string();
    let older =
        legacy_finding_id(&salt, "weather", "forecast", Some(&template(1)), None).into_string();

    let db = rusqlite::Connection::open(store.home().join("lifecycle.db")).unwrap();
    db.execute_batch(&format!(
        "DELETE FROM finding_state;
         INSERT INTO finding_state(finding_id, state, streak, binding, probe_attached, reopened, updated_at)
           VALUES ('{legacy}', 'verifying', 2, 'b-1', 1, 1, '2026-11-20T00:00:00.000Z'),
                  ('{older}', 'fix-claimed', 0, NULL, 0, 0, '2026-10-01T00:00:00.000Z');
         INSERT INTO verifications(run_id, finding_id, case_id, binding, result, recorded_at)
           VALUES ('r-1', '{legacy}', 'c', 'b-1', 'green', '2026-11-20T00:00:00.000Z');"
    ))
    .unwrap();
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    let f = &findings(&store)[0];
    assert_eq!(f["id"], current);
    assert_eq!(
        (f["state"].as_str(), f["streak"].as_u64()),
        (Some("verifying"), Some(2))
    );
    assert_eq!(f["probe_attached"], true);

    let snapshot = |db: &rusqlite::Connection| -> Vec<(String, Option<String>, String)> {
        let mut stmt = db
            .prepare("SELECT finding_id, retired_for, state FROM finding_state ORDER BY finding_id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let after_first = snapshot(&db);
    assert!(after_first.contains(&(legacy.clone(), Some(current.clone()), "verifying".into())));
    assert!(after_first.contains(&(older.clone(), Some(current.clone()), "fix-claimed".into())));
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    assert_eq!(
        snapshot(&db),
        after_first,
        "a second promote changes nothing"
    );
    let kept: i64 = db
        .query_row(
            "SELECT count(*) FROM verifications WHERE run_id = 'r-1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 1);
}

#[test]
fn statuses_follow_the_contract() {
    let store = Store::new();
    crate::support::private_dir(&store.home());
    for bin in ["mcpeval-promote", "mcpeval-findings"] {
        store
            .bin(bin)
            .assert()
            .code(3)
            .stderr(predicate::str::contains("no index yet"));
    }
    records::write(&store, 1, &Rec::ok(1, 1, 1, "forecast").line());
    ok(&store, "mcpeval-index", &[]);
    for bad in ["-1", "NaN", "inf", "x"] {
        store
            .bin("mcpeval-promote")
            .args(["--threshold", bad])
            .assert()
            .code(2);
    }
    std::fs::write(
        store.home().join("config.json"),
        r#"{"promotion_treshold": 0.1}"#,
    )
    .unwrap();
    store
        .bin("mcpeval-promote")
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "unknown key \"promotion_treshold\"",
        ));
    std::fs::write(
        store.home().join("config.json"),
        r#"{"promotion_threshold": 0.5}"#,
    )
    .unwrap();
    let out = ok(&store, "mcpeval-promote", &["--format", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["threshold"],
        0.5
    );
    let out = ok(
        &store,
        "mcpeval-promote",
        &["--format", "json", "--threshold", "0.25"],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["threshold"],
        0.25,
        "the flag wins"
    );
    // With no failures at all: zero of zero, nothing more on the line.
    assert_eq!(
        ok(&store, "mcpeval-promote", &[]),
        "promoted 0 of 0 issues\n"
    );
    // Indexing again after new calls makes the findings out of date until
    // promote runs: status 3, never an empty list.
    records::append(&store, 1, &Rec::ok(2, 1, 2, "forecast").line());
    ok(&store, "mcpeval-index", &[]);
    store
        .bin("mcpeval-findings")
        .args(["--format", "json"])
        .assert()
        .code(3)
        .stdout("")
        .stderr(
            "mcpeval-findings: error: findings are out of date: the index changed after \
             the last promote; run mcpeval promote\n",
        );
}

/// The seed corpus in a fresh store, annotated as its labels say.
fn seed_store() -> (Store, Value) {
    let store = Store::new();
    let seed = repo().join("corpus/seed");
    let dir = store.home().join("journals");
    crate::support::private_dir(&dir);
    for entry in std::fs::read_dir(seed.join("journals")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let annotations: Value =
        serde_json::from_str(&std::fs::read_to_string(seed.join("annotations.json")).unwrap())
            .unwrap();
    for a in annotations.as_array().unwrap() {
        ok(
            &store,
            "mcpeval-annotate",
            &[
                "--event-id",
                a["event_id"].as_str().unwrap(),
                "--kind",
                "false-success",
                "--note",
                "seed",
            ],
        );
    }
    let labels: Value =
        serde_json::from_str(&std::fs::read_to_string(seed.join("labels.json")).unwrap()).unwrap();
    (store, labels)
}

type GroupKey = (String, String, String, Option<String>);

fn scored_groups(home: &Path) -> Vec<(GroupKey, f64)> {
    let db = rusqlite::Connection::open(home.join("index.db")).unwrap();
    let mut stmt = db
        .prepare("SELECT kind, server, tool, template_id, score FROM findings")
        .unwrap();
    stmt.query_map([], |r| {
        Ok(((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?), r.get(4)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn the_default_threshold_maximizes_f1_on_the_seed_corpus() {
    let (store, labels) = seed_store();
    let as_of = labels["as_of"].as_str().unwrap();
    index_and_promote(&store, &["--threshold", "0", "--now", as_of]);
    let defects: BTreeSet<GroupKey> = labels["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["defect"] == true)
        .map(|g| {
            let kind = g["kind"].as_str().unwrap().to_owned();
            (
                kind,
                g["server"].as_str().unwrap().to_owned(),
                g["tool"].as_str().unwrap().to_owned(),
                g["template_id"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let scored = scored_groups(&store.home());
    assert!(defects.len() >= 16, "labels name every class of defect");

    // F1 over a grid of thresholds; the default is the middle of the best run.
    let f1_at = |t: f64| {
        let predicted: BTreeSet<&GroupKey> = scored
            .iter()
            .filter(|(_, s)| *s >= t)
            .map(|(k, _)| k)
            .collect();
        let tp = predicted.iter().filter(|k| defects.contains(**k)).count() as f64;
        let precision = if predicted.is_empty() {
            0.0
        } else {
            tp / predicted.len() as f64
        };
        let recall = tp / defects.len() as f64;
        let f1 = if tp == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        (f1, precision, recall)
    };
    let grid: Vec<f64> = (0..=10_000).map(|k| k as f64 / 10_000.0).collect();
    let best = grid.iter().map(|&t| f1_at(t).0).fold(0.0, f64::max);
    let tied: Vec<f64> = grid
        .iter()
        .copied()
        .filter(|&t| f1_at(t).0 == best)
        .collect();
    let chosen = tied[(tied.len() - 1) / 2];
    let (f1, precision, recall) = f1_at(chosen);
    eprintln!(
        "calibration: threshold {chosen} precision {precision:.3} recall {recall:.3} F1 {f1:.3}"
    );

    let out = ok(
        &store,
        "mcpeval-promote",
        &["--format", "json", "--now", as_of],
    );
    let default = serde_json::from_str::<Value>(&out).unwrap()["threshold"]
        .as_f64()
        .unwrap();
    assert_eq!(
        default, chosen,
        "DEFAULT_THRESHOLD in bins/mcpeval-promote/args.rs must be {chosen}"
    );
}

/// The figures of the seed corpus's severity spread in docs/findings.md
/// are what the suite measures: by score (as if every finding had an
/// attached probe) and as shown before any verification (capped at medium).
#[test]
fn the_docs_give_the_seed_corpus_severity_spread() {
    let (store, labels) = seed_store();
    index_and_promote(&store, &["--now", labels["as_of"].as_str().unwrap()]);
    let listed = findings(&store);
    let spread = |severity: &dyn Fn(&Value) -> String| {
        let mut n = [0usize; 3];
        for f in &listed {
            let at = ["high", "medium", "low"]
                .iter()
                .position(|s| *s == severity(f))
                .unwrap();
            n[at] += 1;
        }
        n
    };
    let by_score = spread(&|f| {
        shared::score::Severity::of(f["score"].as_f64().unwrap(), true)
            .as_str()
            .to_owned()
    });
    let shown = spread(&|f| f["severity"].as_str().unwrap().to_owned());
    let want = format!(
        "Of the seed corpus's {} findings, {} score high, {} medium and {} low; before any \
         verification they show as {} high, {} medium and {} low.",
        listed.len(),
        by_score[0],
        by_score[1],
        by_score[2],
        shown[0],
        shown[1],
        shown[2]
    );
    eprintln!("severity spread: {want}");
    let page = std::fs::read_to_string(repo().join("docs/findings.md")).unwrap();
    let flat = page.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&want),
        "the calibration paragraph of docs/findings.md must say: {want}"
    );
    assert!(
        by_score[0] > 0 && by_score[1] > 0,
        "the spread is not all low"
    );
}

#[test]
fn findings_from_the_seed_corpus_hold_nothing_raw() {
    let (store, labels) = seed_store();
    index_and_promote(&store, &["--now", labels["as_of"].as_str().unwrap()]);
    let mut forbidden: BTreeSet<String> = BTreeSet::new();
    for file in store.journals() {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let rec: Value = serde_json::from_str(line).unwrap();
            forbidden.insert(rec["identity"]["session"].as_str().unwrap().to_owned());
            forbidden.insert(rec["identity"]["event_id"].as_str().unwrap().to_owned());
            if let Some(t) = rec["error"]["template_id"].as_str() {
                forbidden.insert(t.to_owned());
            }
        }
    }
    forbidden.insert(hex_salt(&store.home()));
    for format in ["json", "md", "agent"] {
        let out = ok(&store, "mcpeval-findings", &["--format", format]);
        assert!(out.len() > 500, "{format} output is substantial");
        if let Some(bad) = first_found(out.as_bytes(), &forbidden) {
            panic!("{format} output holds {bad}");
        }
        assert!(
            !out.contains("seed"),
            "{format}: annotation notes never appear"
        );
    }
}

fn hex_salt(home: &Path) -> String {
    store::hash::hex(&std::fs::read(home.join(".salt")).unwrap())
}

#[test]
fn the_seed_corpus_is_what_its_generator_writes() {
    let out_dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("python3")
        .arg(repo().join("corpus/seed/generate.py"))
        .arg(out_dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let seed = repo().join("corpus/seed");
    for rel in ["labels.json", "annotations.json"] {
        assert_eq!(
            std::fs::read(out_dir.path().join(rel)).unwrap(),
            std::fs::read(seed.join(rel)).unwrap(),
            "{rel}"
        );
    }
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let made = names(&out_dir.path().join("journals"));
    assert_eq!(made, names(&seed.join("journals")));
    for name in made {
        assert_eq!(
            std::fs::read(out_dir.path().join("journals").join(&name)).unwrap(),
            std::fs::read(seed.join("journals").join(&name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn index_promote_findings_compose_as_a_pipeline() {
    let (store, labels) = seed_store();
    let as_of = labels["as_of"].as_str().unwrap().to_owned();
    // `index && promote && findings --format json | jq ...`: each stage
    // must succeed, and duct's pipe fails when either side fails, as
    // `-o pipefail` does.
    let mut stderr = String::new();
    for args in [vec!["index"], vec!["promote", "--now", &as_of]] {
        let out = store
            .duct("mcpeval", &args)
            .stdout_to_stderr()
            .stderr_capture()
            .unchecked()
            .run()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        stderr.push_str(&text(&out.stderr));
    }
    let jq = duct::cmd!("jq", "-c", "[.findings[] | .defect_class] | length")
        .full_env(store.env_pairs());
    let out = store
        .duct("mcpeval", &["findings", "--format", "json"])
        .pipe(jq)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let count: u64 = text(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{:?}", text(&out.stdout)));
    assert!(count >= 10, "{count}");
    assert!(stderr.contains("promoted 17 of 57 issues"), "{stderr}");
    assert!(
        stderr.contains("indexed 8434 calls (8434 new) from 89 journals"),
        "{stderr}"
    );
}

#[test]
fn a_failing_stage_fails_the_pipeline() {
    // No index yet: findings fails (status 3) and jq, reading nothing,
    // succeeds; the pipeline reports the failure, as under `-o pipefail`.
    let store = Store::new();
    let jq = duct::cmd!("jq", "-c", ".").full_env(store.env_pairs());
    let out = store
        .duct("mcpeval", &["findings", "--format", "json"])
        .pipe(jq)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

/// What people and agents read of the seed corpus, scored as of its
/// labelled day: a change to either rendering is a reviewed diff.
#[test]
fn the_seed_corpus_renders_for_people_and_agents() {
    let (store, labels) = seed_store();
    let as_of = labels["as_of"].as_str().unwrap();
    index_and_promote(&store, &["--now", as_of]);
    for format in ["md", "agent"] {
        let out = store
            .bin("mcpeval-findings")
            .args(["--format", format])
            .assert()
            .code(0)
            .stderr("");
        let shown = store.redact_ids(&text(&out.get_output().stdout));
        insta::assert_snapshot!(format!("seed_findings_{format}"), shown);
    }
    // The issue file of the top finding, as a maintainer receives it.
    let top = findings(&store)[0]["id"].as_str().unwrap().to_owned();
    let dir = store.scratch().join("issues");
    store
        .bin("mcpeval-export-issues")
        .args(["--dir", dir.to_str().unwrap(), "--server", "tickets"])
        .assert()
        .code(0);
    let issue = std::fs::read_to_string(dir.join(format!("{top}.md"))).unwrap();
    insta::assert_snapshot!("seed_top_issue", store.redact_ids(&issue));
}

#[test]
fn broken_contracts_group_by_place_and_keyword_over_all_calls_to_the_tool() {
    let store = Store::new();
    let status = Some(("/status", "enum"));
    let journal = records::lines(&[
        Rec::ok(1, 1, 1, "job").contract(status),
        Rec::ok(2, 1, 2, "job").contract(None),
        Rec::ok(3, 2, 1, "job").contract(status),
        Rec::ok(4, 2, 2, "job").contract(Some(("", "required"))),
        Rec::ok(5, 3, 1, "job").contract(Some(("", "required"))),
        // An error and an ok call with no schema count as calls to the tool.
        Rec::error(6, 3, 2, "job", None),
        Rec::ok(7, 3, 3, "job"),
        // A probe's broken contract never counts.
        Rec::ok(8, 4, 1, "job").contract(status).probe(),
        Rec::ok(9, 5, 1, "job").contract(status).probe(),
    ]);
    records::write(&store, 1, &journal);
    index_and_promote(&store, &["--threshold", "0"]);
    let found = findings(&store);
    let contract: Vec<&Value> = found.iter().filter(|f| f["kind"] == "contract").collect();
    assert_eq!(contract.len(), 2, "{found:#?}");
    let by_place = |at: &str| {
        contract
            .iter()
            .find(|f| f["contract"]["at"] == at)
            .unwrap_or_else(|| panic!("no finding at {at:?}: {contract:#?}"))
    };
    let enum_ = by_place("/status");
    assert_eq!(enum_["defect_class"], "contract-violation");
    assert_eq!(enum_["contract"]["keyword"], "enum");
    assert_eq!(
        (enum_["failures"].as_u64(), enum_["calls"].as_u64()),
        (Some(2), Some(7))
    );
    assert_eq!(enum_["sessions"], 2);
    assert_eq!(
        enum_["fix_hint"],
        "Return structuredContent that conforms to the tool's declared outputSchema (first violation at /status: enum)."
    );
    let missing = by_place("");
    assert_eq!(missing["contract"]["keyword"], "required");
    assert_ne!(missing["id"], enum_["id"]);
    // Both are told apart wherever people read them.
    let md = ok(&store, "mcpeval-findings", &["--format", "md"]);
    assert!(md.contains("contract-violation at `/status`: enum"), "{md}");
    assert!(
        md.contains("contract-violation at `(root)`: required"),
        "{md}"
    );
    let agent = ok(&store, "mcpeval-findings", &["--format", "agent"]);
    assert!(
        agent.contains("[contract-violation at \"/status\": enum;"),
        "{agent}"
    );
}
