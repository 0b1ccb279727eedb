//! `mcpeval-verify --url` walks a finding's lifecycle over Streamable
//! HTTP, and the endpoint configuration is what its credit is bound to.

use serde_json::json;

use crate::probe_http::Fixture;
use crate::support::{Store, contains, text};
use crate::verify::{findings, promoted_store_of, status_case};

const TOKEN: &str = "tok-Quokka-991";

#[test]
fn verify_over_http_walks_the_lifecycle_and_binds_the_endpoint() {
    let store = Store::new();
    let finding = promoted_store_of(&store, "probe-http-fixture", "status");
    let manifest = store.scratch().join("mcp-eval.manifest.json");
    let doc = json!({"manifest_version": 1,
        "sandboxes": {"fixture": {"declaration": "a private fixture on loopback"}},
        "cases": [status_case(&finding)]});
    std::fs::write(&manifest, doc.to_string()).unwrap();
    let auth = format!("Authorization: Bearer {TOKEN}");
    let require = ["--require", auth.as_str()];
    let buggy = Fixture::start(&store, &[&["--status", "pending"][..], &require].concat());
    let repaired = Fixture::start(
        &store,
        &[&["--era", "modern", "--respond", "sse"][..], &require].concat(),
    );

    let verify = |url: &str, headers: &[&str]| {
        let mut cmd = store.cmd("mcpeval-verify");
        cmd.args(["--finding", &finding, "--case", "status", "--manifest"])
            .arg(&manifest)
            .args(["--url", url]);
        for h in headers {
            cmd.args(["--header", h]);
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(!stdout.contains("Quokka") && !stderr.contains("Quokka"));
        (out.status.code().unwrap(), stdout, stderr)
    };
    let step = |url: &str, headers: &[&str], status: i32, line: &str| {
        let (code, stdout, stderr) = verify(url, headers);
        let want = format!("{finding} case=status {line} run=");
        assert_eq!(code, status, "{stdout}{stderr}");
        assert!(stdout.starts_with(&want), "want {want:?}, got {stdout:?}");
    };

    let team = |colour: &str| format!("X-Team: {colour}");
    let blue = [auth.as_str(), &team("blue")];
    step(
        &buggy.url(),
        &blue,
        1,
        "result=red state=fix-claimed streak=0/3",
    );
    let url = repaired.url();
    step(&url, &blue, 0, "result=green state=verifying streak=1/3");
    // The same headers in another order and case: the same binding.
    let lower = format!("authorization: Bearer {TOKEN}");
    let reordered = ["x-team: blue", lower.as_str()];
    step(
        &url,
        &reordered,
        0,
        "result=green state=verifying streak=2/3",
    );
    // Another header value: a fresh streak.
    let red_team = [auth.as_str(), &team("red")];
    step(
        &url,
        &red_team,
        0,
        "result=green state=verifying streak=1/3",
    );
    // Another URL: a fresh streak, then three greens close the finding.
    let other = format!("{url}?tenant=2");
    step(
        &other,
        &red_team,
        0,
        "result=green state=verifying streak=1/3",
    );
    step(
        &other,
        &red_team,
        0,
        "result=green state=verifying streak=2/3",
    );
    step(&other, &red_team, 0, "result=green state=closed streak=3/3");

    let f = findings(&store)
        .into_iter()
        .find(|f| f["id"] == finding.as_str())
        .unwrap();
    assert_eq!((&f["state"], &f["streak"]), (&json!("closed"), &json!(3)));
    // The token reached the servers, and nothing under the store.
    assert!(
        repaired.entries().iter().all(|e| e.get("http").is_none()
            || e["headers"]["authorization"] == format!("Bearer {TOKEN}"))
    );
    assert!(!contains(&store.all_bytes(), "Quokka"));
}
