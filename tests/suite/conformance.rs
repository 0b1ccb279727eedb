//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned
//! by `scripts/test-deps`) on both sides of the suite's HTTP code: its
//! server scenarios see `mcp-server-everything` the same directly and
//! through `mcpeval-capture --listen`, and `mcpeval-probe --url` passes its
//! `sse-retry` client scenario. The tool needs no network beyond loopback.
//!
//! Every active server scenario runs (about 6 s a run: the whole module
//! stays well under a minute), so no selection is made; the client side
//! runs `sse-retry` alone, the only client scenario about the transport
//! that probe's one-case runs can perform (the others need elicitation
//! or OAuth, which probe does not speak).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::capture_http::Capture;
use crate::support::{Deps, Store, bin, everything_over_http, fixture, text};

/// A check's outcome as the tool reports it: its id and status
/// (SUCCESS, FAILURE, WARNING, SKIPPED or INFO), without timings.
type Outcome = (String, String);

/// Runs the conformance tool with `args` in the store's environment.
fn conformance(store: &Store, args: &[&str]) -> Output {
    let mut cmd = Command::new(Deps::node22());
    store.env(&mut cmd);
    cmd.arg(Deps::conformance())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The outcomes of every scenario saved under `dir` (`-o dir`), by
/// scenario: the tool saves each in `server-<scenario>-<timestamp>/`.
fn outcomes(dir: &Path) -> BTreeMap<String, Vec<Outcome>> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        // The timestamp is an ISO instant with `-` for `:` and `.`.
        let scenario = name
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(25)?))
            .unwrap_or_else(|| panic!("unexpected result directory {name:?}"))
            .to_owned();
        all.insert(scenario, checks(&path.join("checks.json")));
    }
    all
}

fn checks(path: &Path) -> Vec<Outcome> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap().to_owned();
            (field("id"), field("status"))
        })
        .collect()
}

/// Runs every active server scenario against `url`.
fn server_run(store: &Store, url: &str, out: &Path) -> BTreeMap<String, Vec<Outcome>> {
    let ran = conformance(
        store,
        &["server", "--url", url, "-o", out.to_str().unwrap()],
    );
    // Its status is 1 when any check failed: server-everything is not the
    // suite's reference server, and fails some scenarios on purpose.
    assert!(
        matches!(ran.status.code(), Some(0 | 1)),
        "{}",
        text(&ran.stderr)
    );
    outcomes(out)
}

#[test]
fn server_scenarios_see_the_same_server_directly_and_through_capture() {
    let store = Store::new();
    let (_everything, upstream) = everything_over_http(&store);

    let direct = server_run(&store, &upstream, &store.scratch().join("direct"));
    assert!(store.journals().is_empty());
    let capture = Capture::start(&store, &upstream, &[]);
    let through = server_run(
        &store,
        &format!("http://127.0.0.1:{}/mcp", capture.port),
        &store.scratch().join("through"),
    );
    let (status, said) = capture.stop();
    assert_eq!(status.code(), Some(0), "{said}");

    let count = |runs: &BTreeMap<String, Vec<Outcome>>, status: &str| {
        runs.values().flatten().filter(|(_, s)| s == status).count()
    };
    assert!(direct.len() >= 30, "{direct:#?}");
    assert!(count(&direct, "SUCCESS") >= 10, "{direct:#?}");
    // One scenario differs, by design: capture answers a request for a
    // foreign Host itself, with 403 (its guard against DNS rebinding), so
    // the rebinding check that server-everything fails passes through it.
    let rebinding = "dns-rebinding-protection";
    let outcome = |runs: &BTreeMap<String, Vec<Outcome>>, check: &str| {
        runs[rebinding]
            .iter()
            .find(|(id, _)| id == check)
            .map(|(_, s)| s.clone())
    };
    let rejected = "localhost-host-rebinding-rejected";
    assert_eq!(outcome(&direct, rejected).as_deref(), Some("FAILURE"));
    assert_eq!(outcome(&through, rejected).as_deref(), Some("SUCCESS"));
    let accepted = "localhost-host-valid-accepted";
    assert_eq!(outcome(&direct, accepted).as_deref(), Some("SUCCESS"));
    assert_eq!(outcome(&through, accepted).as_deref(), Some("SUCCESS"));
    let without = |runs: &BTreeMap<String, Vec<Outcome>>| {
        let mut runs = runs.clone();
        runs.remove(rebinding);
        runs
    };
    assert_eq!(
        without(&through),
        without(&direct),
        "capture changed what the conformance suite saw"
    );

    // And the run through capture was journaled.
    assert!(!store.journals().is_empty(), "capture wrote no journal");
    let records = store.records();
    assert!(
        records.iter().any(|r| r["origin"] == "capture"),
        "{records:#?}"
    );
}

#[test]
fn probe_passes_the_sse_retry_client_scenario() {
    let store = Store::new();
    // The tool runs the client command split at spaces, with the server's
    // URL appended as the last argument. Probe runs manifest cases, so the
    // command is probe with a manifest of one case that calls the
    // scenario's one tool, `test_reconnection`: its answer stream closes
    // after a priming event, and the response comes only on resumption.
    let manifest = fixture("sse-retry.manifest.json");
    let probe = bin("mcpeval-probe");
    let command = format!(
        "{} --manifest {} --case sse-retry --url",
        probe.display(),
        manifest.display()
    );
    assert!(!command.contains("  "), "paths with spaces: {command}");
    let out: PathBuf = store.scratch().join("client");
    let ran = conformance(
        &store,
        &[
            "client",
            "--scenario",
            "sse-retry",
            "--timeout",
            "20000",
            "--command",
            &command,
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let said = format!("{}{}", text(&ran.stdout), text(&ran.stderr));
    assert_eq!(ran.status.code(), Some(0), "{said}");
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("sse-retry-")
        })
        .unwrap_or_else(|| panic!("no results saved: {said}"));
    let checks: BTreeMap<String, String> = checks(&dir.join("checks.json"))
        .into_iter()
        .filter(|(id, _)| id.starts_with("client-"))
        .collect();
    let status = |id: &str| checks.get(id).map(String::as_str);
    assert_eq!(
        status("client-sse-graceful-reconnect"),
        Some("SUCCESS"),
        "{checks:?}"
    );
    assert_eq!(
        status("client-sse-last-event-id"),
        Some("SUCCESS"),
        "{checks:?}"
    );
    // The reconnection must come after retry's 500 ms, and at most 200 ms
    // later; the tool itself calls a later one, up to 1 s, acceptable
    // (WARNING): a loaded machine may take that long to schedule it.
    assert!(
        matches!(
            status("client-sse-retry-timing"),
            Some("SUCCESS" | "WARNING")
        ),
        "{checks:?}"
    );
    // What the probe printed: a green result for the case.
    let result: Value =
        serde_json::from_slice(&std::fs::read(dir.join("stdout.txt")).unwrap()).unwrap();
    assert_eq!(result["result"], "green", "{result}");
    assert_eq!(result["tools"], serde_json::json!(["test_reconnection"]));
}
