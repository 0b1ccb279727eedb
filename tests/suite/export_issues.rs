//! `mcpeval-export-issues`: a file for exactly each open finding, the
//! commands in it run as printed, nothing unsanitized in it, stale files
//! reported and pruned only when asked.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use serde_json::Value;

use crate::seeded::{
    self, finding_of, findings, fixture_store, near_duplicates, ok, secrets, seeded, set_state,
};
use crate::support::{Store, bin_dir, text};

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn export(store: &Store, dir: &Path, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["--dir", dir.to_str().unwrap(), "--format", "json"];
    args.extend_from_slice(extra);
    let out = store
        .bin("mcpeval-export-issues")
        .args(&args)
        .assert()
        .success();
    let out = out.get_output();
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        text(&out.stderr),
    )
}

#[test]
fn one_file_per_open_finding_with_its_evidence() {
    let store = seeded();
    let all = findings(&store);
    assert_eq!(all.len(), 3);
    let alerts = finding_of(&store, "weather", "alerts");
    let alerts_id = alerts["id"].as_str().unwrap();
    set_state(&store, alerts_id, "closed");
    let route = finding_of(&store, "maps", "route");
    set_state(&store, route["id"].as_str().unwrap(), "verifying");

    let dir = store.scratch().join("issues");
    let (report, stderr) = export(&store, &dir, &[]);
    let want: BTreeSet<String> = all
        .iter()
        .filter(|f| f["id"] != alerts_id)
        .map(|f| format!("{}.md", f["id"].as_str().unwrap()))
        .collect();
    assert_eq!(names(&dir), want);
    assert_eq!(report["written"].as_array().unwrap().len(), 2);
    assert!(
        stderr.contains("2 open findings in") && stderr.contains("2 written, 0 unchanged; 0 stale"),
        "{stderr}"
    );

    let body =
        std::fs::read_to_string(dir.join(format!("{}.md", route["id"].as_str().unwrap()))).unwrap();
    assert!(
        body.starts_with(
            "# invalid-arguments: `route` on server `maps` fails with arguments \
             `{\"avoid\":[\"string\"],\"from\":\"string\",\"to\":\"strin…`\n"
        ),
        "{body}"
    );
    for row in [
        "| failures | 2 |",
        "| calls | 4 |",
        "| failure rate | 50.0% |",
        "| sessions | 2 |",
        "| blast radius | 1 tool |",
        "| error code | -32602 |",
        "| retryable | never |",
    ] {
        assert!(body.contains(row), "{row} missing:\n{body}");
    }
    let wilson = format!(
        "| 95% Wilson lower bound | {:.3} |",
        route["wilson_lower"].as_f64().unwrap()
    );
    assert!(body.contains(&wilson), "{body}");
    let severity = format!("| severity | {} |", route["severity"].as_str().unwrap());
    let score = format!("| score | {:.3} |", route["score"].as_f64().unwrap());
    assert!(body.contains(&severity) && body.contains(&score), "{body}");
    assert!(body.contains("state verifying"), "{body}");
    // The repro is the shape, with the tool.
    assert!(body.contains("\"name\": \"route\""), "{body}");
    assert!(
        body.contains("\"avoid\": [\n        \"string\"\n      ]"),
        "{body}"
    );
    assert!(
        body.contains("Validate against the advertised inputSchema and name the offending field.")
    );

    // Nothing that identifies a call, a template or a note.
    for file in names(&dir) {
        let bytes = std::fs::read_to_string(dir.join(&file)).unwrap();
        for secret in secrets() {
            assert!(!bytes.contains(&secret), "{file} holds {secret}");
        }
        assert!(!bytes.contains(&seeded::salt_hex(&store)[..16]));
    }

    // A second run rewrites nothing; a closed finding's old file is stale.
    std::fs::write(dir.join(format!("{alerts_id}.md")), "old").unwrap();
    std::fs::write(dir.join("notes.md"), "mine").unwrap();
    let (again, stderr) = export(&store, &dir, &[]);
    assert_eq!(again["written"], Value::Array(vec![]));
    assert_eq!(again["unchanged"].as_array().unwrap().len(), 2);
    let stale_path = dir.join(format!("{alerts_id}.md")).display().to_string();
    assert_eq!(again["stale"], serde_json::json!([stale_path]));
    assert!(stderr.contains(&format!("stale: {stale_path}")), "{stderr}");
    assert!(dir.join(format!("{alerts_id}.md")).exists());

    // --prune removes it, and only it.
    let (pruned, _) = export(&store, &dir, &["--prune"]);
    assert_eq!(pruned["pruned"], serde_json::json!([stale_path]));
    assert!(!dir.join(format!("{alerts_id}.md")).exists());
    assert!(dir.join("notes.md").exists());
}

/// Three open findings of one tool, one per error template: each issue's
/// title names the part of its argument shape that differs from the
/// others, so a tracker shows three titles, not one three times; closing
/// one leaves the other two told apart by what still differs.
#[test]
fn near_duplicate_findings_get_titles_of_their_own() {
    let store = near_duplicates();
    let dir = store.scratch().join("issues");
    export(&store, &dir, &[]);
    let title = |id: &str| -> String {
        let body = std::fs::read_to_string(dir.join(format!("{id}.md"))).unwrap();
        body.lines().next().unwrap().to_owned()
    };
    let get_sum: Vec<String> = findings(&store)
        .iter()
        .filter(|f| f["tool"] == "get-sum")
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect();
    let titles: Vec<String> = get_sum.iter().map(|id| title(id)).collect();
    let head = "# invalid-arguments: `get-sum` on server `everything` fails with arguments";
    assert_eq!(
        titles,
        [
            format!("{head} `{{\"a\":\"string\",\"b\":\"number\",…}}`"),
            format!("{head} `{{\"a\":\"number\",\"b\":\"string\",…}}`"),
            format!("{head} `{{\"a\":\"number\",…}}`"),
        ]
    );
    let echo = finding_of(&store, "everything", "echo");
    assert_eq!(
        title(echo["id"].as_str().unwrap()),
        "# internal-error: `echo` on server `everything` fails with arguments \
         `{\"message\":\"string\"}`"
    );

    // Closed, the first no longer counts: `b` is then all that differs.
    set_state(&store, &get_sum[0], "closed");
    export(&store, &dir, &["--prune"]);
    assert_eq!(
        [title(&get_sum[1]), title(&get_sum[2])],
        [
            format!("{head} `{{\"b\":\"string\",…}}`"),
            format!("{head} `{{…}}`"),
        ]
    );
}

#[test]
fn server_filter_and_text_output() {
    let store = seeded();
    let dir = store.scratch().join("issues");
    let out = ok(
        &store,
        "mcpeval-export-issues",
        &["--dir", dir.to_str().unwrap(), "--server", "maps"],
    );
    let route = finding_of(&store, "maps", "route");
    let path = dir.join(format!("{}.md", route["id"].as_str().unwrap()));
    assert_eq!(out, format!("{}\n", path.display()));
    assert_eq!(names(&dir).len(), 1);
}

#[test]
fn an_index_that_is_missing_is_unavailable_evidence() {
    let store = Store::new();
    crate::support::private_dir(&store.home());
    let dir = store.scratch().join("issues");
    store
        .bin("mcpeval-export-issues")
        .args(["--dir", dir.to_str().unwrap()])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("no index yet"));
}

/// The commands in an issue file, run exactly as printed through the
/// `mcpeval` front in a shell, in the directory the issue suggests.
#[test]
fn the_commands_in_an_issue_run_as_printed() {
    let store = seeded();
    let dir = store.scratch().join("issues");
    export(&store, &dir, &[]);
    let forecast = finding_of(&store, "weather", "forecast");
    let id = forecast["id"].as_str().unwrap();
    let body = std::fs::read_to_string(dir.join(format!("{id}.md"))).unwrap();
    let block = body
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        vec![
            format!(
                "mcpeval generate --finding {id} --confirm-read-only --output {id}.manifest.json"
            ),
            // Before the fix (red), then after it: the same command, so a
            // closure is witnessed.
            format!(
                "mcpeval verify --finding {id} --case {id} --manifest {id}.manifest.json -- <server command>"
            ),
            format!(
                "mcpeval verify --finding {id} --case {id} --manifest {id}.manifest.json -- <server command>"
            ),
        ]
    );
    let work = store.scratch().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut sh = Command::new("sh");
    store.env(&mut sh);
    let path = format!("{}:{}", bin_dir().display(), crate::support::SYSTEM_PATH);
    sh.env("PATH", path)
        .current_dir(&work)
        .args(["-c", lines[0]])
        .assert()
        .success();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(work.join(format!("{id}.manifest.json"))).unwrap())
            .unwrap();
    assert_eq!(manifest["cases"][0]["id"], id);
    assert_eq!(manifest["cases"][0]["finding"], id);
}

/// Both commands of an issue, run as printed, on a finding of the fixture
/// server's `status` tool: only `<server command>` and the placeholders
/// are the reader's to fill.
#[test]
fn generate_then_verify_as_printed_turns_green() {
    let (store, id) = fixture_store();
    let dir = store.scratch().join("issues");
    export(&store, &dir, &[]);
    let body = std::fs::read_to_string(dir.join(format!("{id}.md"))).unwrap();
    let block = body
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let lines: Vec<&str> = block.lines().filter(|l| !l.starts_with('#')).collect();
    let work = store.scratch().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(
        crate::support::fixture("probe_server.py"),
        work.join("server.py"),
    )
    .unwrap();
    let sh = |line: &str| {
        let mut sh = Command::new("sh");
        store.env(&mut sh);
        let path = format!("{}:{}", bin_dir().display(), crate::support::SYSTEM_PATH);
        sh.env("PATH", path)
            .current_dir(&work)
            .args(["-c", line])
            .assert()
    };
    sh(lines[0]).success();
    let manifest = work.join(format!("{id}.manifest.json"));
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    crate::seeded::fill(&mut doc);
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let verify = lines[1].replace("<server command>", "python3 server.py");
    sh(&verify)
        .code(0)
        .stdout(predicate::str::starts_with(format!(
            "{id} case={id} result=green state=verifying streak=1/3 run="
        )));
}
