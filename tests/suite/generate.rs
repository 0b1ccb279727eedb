//! `mcpeval-generate`: the case each class gets, placeholders listed by
//! pointer, sized attempts, every refusal (and that a refusal leaves an
//! existing manifest byte for byte), and a generated case filled in and
//! verified.

use std::path::{Path, PathBuf};
use std::process::Output;

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::records::{self, Rec, event};
use crate::support::{Store, fixture, text};
use crate::verify::{findings, history, succeed};

fn generate(store: &Store, args: &[&str]) -> Output {
    store.cmd("mcpeval-generate").args(args).output().unwrap()
}

/// Indexes `recs`, promotes at threshold 0 and returns the only finding.
fn promoted(store: &Store, recs: &[Rec]) -> Value {
    records::write(store, 1, &records::lines(recs));
    succeed(store, "mcpeval-index", &[]);
    succeed(store, "mcpeval-promote", &["--threshold", "0"]);
    let all = findings(store);
    assert_eq!(all.len(), 1, "{all:#?}");
    all[0].clone()
}

fn retryable(rec: Rec, value: bool) -> Rec {
    let mut rec = rec;
    rec.0["error"]["retryable"] = json!(value);
    rec
}

/// Ten calls to `status` over two sessions, failing at the given
/// (session, seq) pairs with the given retryable flag.
fn calls(failing: &[(u64, u64, bool)]) -> Vec<Rec> {
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=5 {
            let n = session * 10 + seq;
            let rec = match failing.iter().find(|f| f.0 == session && f.1 == seq) {
                Some(&(_, _, r)) => retryable(Rec::error(n, session, seq, "status", Some(1)), r),
                None => Rec::ok(n, session, seq, "status"),
            };
            recs.push(rec);
        }
    }
    recs
}

fn out_path(store: &Store) -> PathBuf {
    store.scratch().join("generated.manifest.json")
}

fn id(f: &Value) -> String {
    f["id"].as_str().unwrap().to_owned()
}

fn generated(store: &Store, finding: &str, extra: &[&str]) -> (Value, String) {
    let out = out_path(store);
    let mut args = vec![
        "--finding",
        finding,
        "--confirm-read-only",
        "--output",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = generate(store, &args);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(run.stdout.is_empty());
    let written = std::fs::read_to_string(&out).unwrap();
    (serde_json::from_str(&written).unwrap(), text(&run.stderr))
}

#[test]
fn an_error_finding_gets_instruction_fidelity_with_placeholders() {
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, false), (2, 1, false)]));
    assert_eq!(f["defect_class"], "tool-error");
    let finding = id(&f);
    let (_, stderr) = generated(&store, &finding, &[]);
    let out = out_path(&store);
    // The exact file: case id = finding id, the tool, its shape as placeholders.
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!(
            r#"{{
  "manifest_version": 1,
  "cases": [
    {{
      "id": "{finding}",
      "finding": "{finding}",
      "probe": "instruction-fidelity",
      "tool": "status",
      "arguments": {{
        "city": "<fill:string>",
        "days": "<fill:integer>"
      }},
      "timeout_ms": 10000,
      "expect": {{
        "outcome": "ok"
      }}
    }}
  ]
}}
"#
        )
    );
    assert_eq!(
        stderr,
        format!(
            "mcpeval-generate: wrote {}: case {finding} (instruction-fidelity, tool status)\n\
mcpeval-generate: fill 2 placeholder(s) before `mcpeval verify`:\n  \
/cases/0/arguments/city: replace \"<fill:string>\" with a string\n  \
/cases/0/arguments/days: replace \"<fill:integer>\" with an integer\n",
            out.display()
        )
    );
}

#[test]
fn repeated_probes_are_sized_from_the_failure_rate() {
    // Transient: every failure retryable, p = 3 / 10 → ceil(ln .05 / ln .7) = 9.
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, true), (1, 2, true), (2, 1, true)]));
    assert_eq!(
        (f["defect_class"].as_str(), f["failure_rate"].as_f64()),
        (Some("transient"), Some(0.3))
    );
    let (doc, stderr) = generated(&store, &id(&f), &[]);
    let case = &doc["cases"][0];
    assert_eq!(
        (&case["probe"], &case["attempts"]),
        (&json!("degradation"), &json!(9))
    );
    assert!(case.get("expect").is_none());
    assert!(
        stderr.contains("(degradation, tool status, 9 attempts)"),
        "{stderr}"
    );

    // Error honesty: retryable reported both ways, p = 2 / 10 → 14 (cap 20).
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, true), (2, 1, false)]));
    assert_eq!(f["defect_class"], "error-honesty");
    let (doc, _) = generated(&store, &id(&f), &[]);
    let case = &doc["cases"][0];
    assert_eq!(
        (&case["probe"], &case["attempts"]),
        (&json!("error-honesty"), &json!(14))
    );

    // --expect selects instruction-fidelity for any class, and is copied in.
    let expect = store.scratch().join("expect.json");
    std::fs::write(&expect, r#"{"outcome": "error", "error_code": 503}"#).unwrap();
    let (doc, stderr) = generated(
        &store,
        &id(&f),
        &["--expect", expect.to_str().unwrap(), "--force"],
    );
    let case = &doc["cases"][0];
    assert_eq!(case["probe"], "instruction-fidelity");
    assert_eq!(
        case["expect"],
        json!({"outcome": "error", "error_code": 503})
    );
    assert!(case.get("attempts").is_none());
    assert!(stderr.ends_with(
        "mcpeval-generate: review the expect: it must tell the reported defect from the repair\n"
    ));
}

#[test]
fn refuses_without_confirm_read_only() {
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, false), (2, 1, false)]));
    let out = out_path(&store);
    store.bin("mcpeval-generate").args(["--finding", &id(&f), "--output", out.to_str().unwrap()]).assert().code(2).stderr("mcpeval-generate: error: refusing to generate without --confirm-read-only: verifying the \
case calls the finding's tool on your server; nothing was written\n  hint: confirm that calling the \
tool with the arguments you fill in is safe to repeat, and pass --confirm-read-only\n");
    assert!(!out.exists());
}

/// A false-success finding: ok calls to `book` annotated in two sessions.
fn false_success(store: &Store) -> String {
    let recs = [
        Rec::ok(1, 1, 1, "book"),
        Rec::ok(2, 1, 2, "book"),
        Rec::ok(3, 2, 1, "book"),
        Rec::ok(4, 2, 2, "book"),
    ];
    records::write(store, 1, &records::lines(&recs));
    for n in [1, 3] {
        succeed(
            store,
            "mcpeval-annotate",
            &[
                "--kind",
                "false-success",
                "--note",
                "said booked, was not",
                "--event-id",
                &event(n),
            ],
        );
    }
    succeed(store, "mcpeval-index", &[]);
    succeed(store, "mcpeval-promote", &["--threshold", "0"]);
    let all = findings(store);
    assert_eq!(all[0]["defect_class"], "false-success");
    id(&all[0])
}

#[test]
fn a_false_success_finding_needs_an_oracle() {
    let store = Store::new();
    let finding = false_success(&store);
    let out = out_path(&store);
    let base = [
        "--finding",
        &finding,
        "--confirm-read-only",
        "--output",
        out.to_str().unwrap(),
    ];
    store.bin("mcpeval-generate").args(base).assert().code(2).stderr(format!(
                "mcpeval-generate: error: {finding} is a false-success finding: it needs --expect with a \
result assertion or an expected error; nothing was written\n  hint: write an expect file whose \
equals_paths or required_result_paths tell the bug from the repair, or that expects an error\n"
            ));
    let expect = store.scratch().join("expect.json");
    std::fs::write(&expect, r#"{"outcome": "ok"}"#).unwrap();
    let mut with_expect = base.to_vec();
    with_expect.extend(["--expect", expect.to_str().unwrap()]);
    store
        .bin("mcpeval-generate")
        .args(with_expect)
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "the expect file asserts nothing on the result and expects no error",
        ));
    assert!(!out.exists());

    std::fs::write(
        &expect,
        r#"{"outcome": "ok", "equals_paths": {"/structuredContent/status": "booked"}}"#,
    )
    .unwrap();
    let (doc, _) = generated(&store, &finding, &["--expect", expect.to_str().unwrap()]);
    assert_eq!(doc["cases"][0]["probe"], "instruction-fidelity");
    assert_eq!(
        doc["cases"][0]["expect"]["equals_paths"],
        json!({"/structuredContent/status": "booked"})
    );

    // verify holds handwritten manifests to the same minimum, before the server starts.
    let manifest = store.scratch().join("hand.json");
    std::fs::write(
        &manifest,
        json!({"manifest_version": 1, "cases": [{"id": "c", "finding": finding,
            "probe": "instruction-fidelity", "tool": "book", "expect": {"outcome": "ok"}}]})
        .to_string(),
    )
    .unwrap();
    let before = history(&store, &finding);
    let log = store.scratch().join("server.log");
    let run = store
        .cmd("mcpeval-verify")
        .args(["--finding", &finding, "--case", "c", "--manifest"])
        .arg(&manifest)
        .arg("--")
        .arg("python3")
        .arg(fixture("probe_server.py"))
        .env("PROBE_FIXTURE_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(4), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("cannot prove a false-success repair"));
    assert!(!log.exists());
    assert_eq!(history(&store, &finding), before);
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// Names in the output's directory, to see no temporary file was left.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_existing_manifest_is_kept_unless_forced_with_valid_input() {
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, false), (2, 1, false)]));
    let finding = id(&f);
    let dir = store.scratch().join("out");
    std::fs::create_dir(&dir).unwrap();
    let out = dir.join("m.json");
    std::fs::write(&out, "my own manifest\n").unwrap();
    let base = [
        "--finding",
        finding.as_str(),
        "--confirm-read-only",
        "--output",
        out.to_str().unwrap(),
    ];

    store
        .bin("mcpeval-generate")
        .args(base)
        .assert()
        .code(2)
        .stderr(format!(
            "mcpeval-generate: error: {} exists; nothing was written\n  hint: pass --force to \
replace it, or choose another --output\n",
            out.display()
        ));
    assert_eq!(bytes(&out), b"my own manifest\n");

    // Invalid --expect, even with --force: the file stays byte for byte.
    let expect = store.scratch().join("expect.json");
    std::fs::write(&expect, r#"{"outcome": "ok", "note": "x"}"#).unwrap();
    let mut forced = base.to_vec();
    forced.extend(["--force", "--expect", expect.to_str().unwrap()]);
    let run = generate(&store, &forced);
    assert_eq!(run.status.code(), Some(4));
    assert!(
        text(&run.stderr).starts_with(&format!(
            "mcpeval-generate: error: {}: at /note: unknown field `note`",
            expect.display()
        )),
        "{}",
        text(&run.stderr)
    );
    assert_eq!(bytes(&out), b"my own manifest\n");

    // Over 64 KiB: refused unread.
    std::fs::write(
        &expect,
        format!(r#"{{"outcome":"ok"{}}}"#, " ".repeat(64 * 1024)),
    )
    .unwrap();
    store.bin("mcpeval-generate").args(forced).assert().code(4).stderr(format!(
                "mcpeval-generate: error: {}: larger than 64 KiB; expect files are limited to 65536 bytes\n",
                expect.display()
            ));
    assert_eq!(bytes(&out), b"my own manifest\n");
    assert_eq!(names(&dir), ["m.json"]);

    // Valid input with --force replaces it, through a rename.
    let mut valid = base.to_vec();
    valid.push("--force");
    let run = generate(&store, &valid);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let doc: Value = serde_json::from_slice(&bytes(&out)).unwrap();
    assert_eq!(doc["cases"][0]["id"], finding.as_str());
    assert_eq!(names(&dir), ["m.json"]);
}

#[test]
fn unknown_findings_and_a_missing_index() {
    let empty = Store::new();
    let out = out_path(&empty);
    let args = [
        "--finding",
        "finding-0000000000000000",
        "--confirm-read-only",
        "--output",
        out.to_str().unwrap(),
    ];
    let run = generate(&empty, &args);
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let store = Store::new();
    promoted(&store, &calls(&[(1, 1, false), (2, 1, false)]));
    store.bin("mcpeval-generate").args(args).assert().code(2).stderr("mcpeval-generate: error: no finding finding-0000000000000000 in the catalog; nothing was \
written\n  hint: list the findings with `mcpeval findings`\n");
    assert!(!out.exists());
}

#[test]
fn a_generated_case_filled_with_jq_verifies() {
    let store = Store::new();
    let f = promoted(&store, &calls(&[(1, 1, false), (2, 1, false)]));
    let finding = id(&f);
    generated(&store, &finding, &[]);
    let out = out_path(&store);
    let server = fixture("probe_server.py");
    let verify = |manifest: &Path| {
        store
            .cmd("mcpeval-verify")
            .args(["--finding", &finding, "--case", &finding, "--manifest"])
            .arg(manifest)
            .arg("--")
            .arg("python3")
            .arg(&server)
            // The finding's server, as the fixture names itself.
            .args(["--name", "weather"])
            .output()
            .unwrap()
    };
    let unfilled = verify(&out);
    assert_eq!(unfilled.status.code(), Some(4));
    assert!(
        text(&unfilled.stderr).contains(
            "still has 2 placeholder(s) to fill: /cases/0/arguments/city, /cases/0/arguments/days; nothing was run"
        ),
        "{}",
        text(&unfilled.stderr)
    );
    let filled = store.scratch().join("filled.json");
    let jq = duct::cmd(
        "jq",
        [".cases[0].arguments.city = \"Lyon\" | .cases[0].arguments.days = 3"],
    )
    .stdin_path(&out)
    .stdout_path(&filled)
    .full_env(store.env_pairs())
    .run();
    assert!(jq.is_ok(), "{jq:?}");
    let run = verify(&filled);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(
        text(&run.stdout).starts_with(&format!(
            "{finding} case={finding} result=green state=verifying streak=1/3 run="
        )),
        "{}",
        text(&run.stdout)
    );
}

#[test]
fn folded_keys_become_placeholders_that_probe_refuses_until_replaced() {
    let store = Store::new();
    // Captured calls whose keys were data: folded into "*" at two places.
    let shape = json!({"*": "integer", "q": "string", "users": {"*": {"role": "string"}}});
    let recs: Vec<Rec> = calls(&[(1, 1, false), (2, 1, false)])
        .into_iter()
        .map(|mut rec| {
            rec.0["args_shape"] = shape.clone();
            // As capture records the fixture's hostile name.
            rec.server("probe?[2J?fixture")
        })
        .collect();
    let finding = id(&promoted(&store, &recs));
    let (doc, stderr) = generated(&store, &finding, &[]);
    assert_eq!(
        doc["cases"][0]["arguments"],
        json!({"*": "<fill:entries of integer>", "q": "<fill:string>",
               "users": {"*": "<fill:entries of object>"}})
    );
    let why = "(capture keeps no key that may be data, such as an e-mail address or a token)";
    assert!(
        stderr.ends_with(&format!(
            "mcpeval-generate: fill 3 placeholder(s) before `mcpeval verify`:\n  \
/cases/0/arguments/*: replace this \"*\" member with the members the call needs, each value an integer {why}\n  \
/cases/0/arguments/q: replace \"<fill:string>\" with a string\n  \
/cases/0/arguments/users/*: replace this \"*\" member with the members the call needs, each value an object {why}\n"
        )),
        "{stderr}"
    );

    let out = out_path(&store);
    let server = fixture("probe_server.py");
    let verify = |manifest: &Path| {
        store
            .cmd("mcpeval-verify")
            .args(["--finding", &finding, "--case", &finding, "--manifest"])
            .arg(manifest)
            .arg("--")
            .arg("python3")
            .arg(&server)
            .args(["--name", "probe\u{1b}[2J\u{202e}fixture"])
            .output()
            .unwrap()
    };
    let unfilled = verify(&out);
    assert_eq!(unfilled.status.code(), Some(4));
    assert!(
        text(&unfilled.stderr).contains(
            "still has 3 placeholder(s) to fill: /cases/0/arguments/*, /cases/0/arguments/q, \
             /cases/0/arguments/users/*; nothing was run"
        ),
        "{}",
        text(&unfilled.stderr)
    );
    let filled = store.scratch().join("filled.json");
    let jq = duct::cmd(
        "jq",
        [r#".cases[0].arguments = {"n@corp.example": 1, "q": "x",
             "users": {"alice@corp.example": {"role": "admin"}}}"#],
    )
    .stdin_path(&out)
    .stdout_path(&filled)
    .full_env(store.env_pairs())
    .run();
    assert!(jq.is_ok(), "{jq:?}");
    let run = verify(&filled);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    // The probe journals its call by the same rules as capture: the keys
    // that are data fold again, and the server's name is cleaned.
    let probe = store
        .records()
        .into_iter()
        .find(|r| r["origin"] == "probe")
        .expect("a probe record");
    assert_eq!(probe["args_shape"], shape);
    assert_eq!(probe["server"], "probe?[2J?fixture");
    let journals: Vec<u8> = store
        .journals()
        .iter()
        .flat_map(|j| std::fs::read(j).unwrap())
        .collect();
    assert!(!crate::support::contains(&journals, "@corp.example"));
}
