//! Reading findings when there are none to read: findings out of date
//! (the index changed after the last promote), a store indexed but never
//! promoted, a store with nothing captured yet, and a store that is not
//! there at all. Every reader of findings refuses a stale catalog with
//! status 3 and the same words, never an empty list a CI gate would take
//! for "no failures". Also what the agent format suggests in each
//! lifecycle state.

use serde_json::json;

use crate::records::{self, Rec};
use crate::seeded::{findings, ok, run, seeded, set_state};
use crate::serve::{call, client};
use crate::support::{Store, private_dir, text};

const OUT_OF_DATE: &str = "findings are out of date: the index changed after the last \
                           promote; run mcpeval promote";

/// The seeded store after new calls were indexed but not promoted, and
/// the id of a finding it held before.
fn out_of_date_with_id() -> (Store, String) {
    let store = seeded();
    let id = findings(&store)[0]["id"].as_str().unwrap().to_owned();
    records::write(
        &store,
        2,
        &records::lines(&[
            Rec::error(101, 9, 1, "forecast", Some(1)),
            Rec::ok(102, 9, 2, "forecast"),
        ]),
    );
    ok(&store, "mcpeval-index", &[]);
    (store, id)
}

fn out_of_date() -> Store {
    out_of_date_with_id().0
}

/// Asserts `bin ARGS` exits 3, prints nothing on stdout, and says `words`
/// as its one error line.
fn refuses(store: &Store, bin: &str, args: &[&str], words: &str) {
    let out = run(store, bin, args);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{bin} {args:?}: {}",
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "", "{bin} {args:?}");
    assert_eq!(
        text(&out.stderr),
        format!("{bin}: error: {words}\n"),
        "{bin} {args:?}"
    );
}

#[test]
fn findings_out_of_date_are_status_3_in_every_format() {
    let store = out_of_date();
    for args in [
        &["--format", "json"][..],
        &["--format", "md"],
        &["--format", "agent"],
        &[],
        &["--format", "json", "--state", "open"],
        &["--format", "json", "--state", "closed"],
        &["--format", "agent", "--server", "weather"],
        &["--history", "--format", "json"],
    ] {
        refuses(&store, "mcpeval-findings", args, OUT_OF_DATE);
    }
    // `index --rebuild` changes the evidence too.
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    assert_eq!(findings(&store).len(), 3);
    ok(&store, "mcpeval-index", &["--rebuild"]);
    refuses(
        &store,
        "mcpeval-findings",
        &["--format", "json"],
        OUT_OF_DATE,
    );
}

#[test]
fn promote_makes_out_of_date_findings_current_again() {
    let store = out_of_date();
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    let listed = findings(&store);
    assert_eq!(listed.len(), 3);
    let forecast = listed.iter().find(|f| f["tool"] == "forecast").unwrap();
    assert_eq!(forecast["sessions"], 3, "the new session counts");
    // An index run that finds nothing new keeps them current.
    ok(&store, "mcpeval-index", &[]);
    assert_eq!(findings(&store).len(), 3);
}

#[test]
fn every_reader_of_findings_refuses_them_out_of_date() {
    let (store, id) = out_of_date_with_id();
    let dir = store.scratch().join("issues");
    let dir = dir.to_str().unwrap();
    refuses(
        &store,
        "mcpeval-export-issues",
        &["--dir", dir],
        OUT_OF_DATE,
    );
    assert!(
        !std::path::Path::new(dir).exists(),
        "no issue directory is made"
    );
    refuses(
        &store,
        "mcpeval-readiness",
        &["--format", "json"],
        OUT_OF_DATE,
    );
    assert!(!store.home().join("trends.db").exists());
    let share = store.scratch().join("store.share.json");
    refuses(
        &store,
        "mcpeval-share",
        &["--output", share.to_str().unwrap()],
        OUT_OF_DATE,
    );
    assert!(!share.exists());
    let manifest = store.scratch().join("m.json");
    refuses(
        &store,
        "mcpeval-generate",
        &[
            "--finding",
            &id,
            "--confirm-read-only",
            "--output",
            manifest.to_str().unwrap(),
        ],
        OUT_OF_DATE,
    );

    // report builds on `findings --format json`: its failure is the report's.
    let page = store.scratch().join("report.html");
    let out = run(
        &store,
        "mcpeval-report",
        &["--output", page.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("mcpeval-findings: error: {OUT_OF_DATE}")),
        "{stderr}"
    );
    assert!(!page.exists());
}

#[test]
fn serve_lists_no_findings_out_of_date_but_the_error() {
    let store = out_of_date();
    let out = client(
        &store,
        "auto",
        json!([
            call("list_findings", json!({})),
            call("list_findings", json!({"state": ["open"]})),
        ]),
    );
    for c in out["calls"].as_array().unwrap() {
        assert_eq!(c["is_error"], true, "{c}");
        assert_eq!(c["text"], format!("mcpeval-findings: error: {OUT_OF_DATE}"));
        assert!(c["structured"].is_null(), "no list at all: {c}");
    }
}

#[test]
fn indexed_but_never_promoted_is_status_3() {
    let store = Store::new();
    records::write(
        &store,
        1,
        &records::lines(&[
            Rec::error(1, 1, 1, "forecast", Some(1)),
            Rec::error(2, 2, 1, "forecast", Some(1)),
            Rec::ok(3, 2, 2, "forecast"),
        ]),
    );
    ok(&store, "mcpeval-index", &[]);
    let words = "findings are not promoted yet: the index holds 3 calls but promote never \
                 ran on this store; run mcpeval promote";
    for args in [&["--format", "json"][..], &["--format", "agent"], &[]] {
        refuses(&store, "mcpeval-findings", args, words);
    }
    refuses(&store, "mcpeval-readiness", &[], words);
    ok(&store, "mcpeval-promote", &["--threshold", "0"]);
    assert_eq!(findings(&store).len(), 1);
}

#[test]
fn an_empty_store_says_nothing_was_captured_and_how_to_start() {
    let start = "start by capturing in front of a server (`mcpeval capture -- <server \
                 command>`, then let an agent use it), then run `mcpeval index` and `mcpeval \
                 promote`";
    // No journals, no index: status 3, and how to begin.
    let store = Store::new();
    private_dir(&store.home());
    let index = store.home().join("index.db");
    let journals = store.home().join("journals");
    refuses(
        &store,
        "mcpeval-findings",
        &["--format", "json"],
        &format!(
            "no index yet: {} does not exist, and nothing was captured yet ({} holds no \
             journal)\n  hint: {start}",
            index.display(),
            journals.display()
        ),
    );

    // Indexed with no calls, never promoted: still status 3, same advice.
    ok(&store, "mcpeval-index", &[]);
    refuses(
        &store,
        "mcpeval-findings",
        &["--format", "json"],
        &format!(
            "no findings yet: nothing was captured yet (the index holds no calls) and \
             promote never ran on this store; {start}"
        ),
    );

    // Indexed with no calls and promoted: an empty answer (status 0) with
    // the one-line explanation, in every format.
    assert_eq!(
        ok(&store, "mcpeval-promote", &[]),
        "promoted 0 of 0 issues\n"
    );
    for format in ["json", "md", "agent"] {
        let out = run(&store, "mcpeval-findings", &["--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}");
        if format == "json" {
            assert_promoted_and_empty(&text(&out.stdout));
        } else {
            assert_eq!(text(&out.stdout), "", "{format}");
        }
        assert_eq!(
            text(&out.stderr),
            format!(
                "mcpeval-findings: no findings: nothing was captured yet (the index holds no \
                 calls); {start}\n"
            ),
            "{format}"
        );
    }
}

const FINDING: &str = "finding-0123456789abcdef";

/// Every command that reads the store (and those that change a finding's
/// lifecycle, which need one to read), with arguments that take it as far
/// as opening the store.
const READERS: [(&str, &[&str]); 10] = [
    ("mcpeval-findings", &["--format", "json"]),
    ("mcpeval-readiness", &[]),
    ("mcpeval-report", &["--output", "report.html"]),
    ("mcpeval-export-issues", &["--dir", "issues"]),
    ("mcpeval-share", &["--output", "share.json"]),
    (
        "mcpeval-generate",
        &[
            "--finding",
            FINDING,
            "--output",
            "m.json",
            "--confirm-read-only",
        ],
    ),
    (
        "mcpeval-close",
        &["--finding", FINDING, "--reason", "fixed"],
    ),
    (
        "mcpeval-verify",
        &[
            "--finding",
            FINDING,
            "--manifest",
            "m.json",
            "--case",
            "c",
            "--",
            "true",
        ],
    ),
    ("mcpeval-verify", &["--record", "-"]),
    ("mcpeval-promote", &[]),
];

/// Runs `bin ARGS` in the scratch directory with the store's environment
/// changed by `env`, and asserts it exits 3 with nothing on stdout and
/// exactly `stderr`.
#[track_caller]
fn refuses_with(
    store: &Store,
    bin: &str,
    args: &[&str],
    env: impl FnOnce(&mut std::process::Command),
    stderr: &str,
) {
    let mut cmd = store.cmd(bin);
    cmd.args(args)
        .current_dir(store.scratch())
        .stdin(std::process::Stdio::null());
    env(&mut cmd);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{bin} {args:?}");
    assert_eq!(text(&out.stdout), "", "{bin} {args:?}");
    assert_eq!(text(&out.stderr), stderr, "{bin} {args:?}");
}

fn no_store_at(bin: &str, dir: &std::path::Path) -> String {
    format!(
        "{bin}: error: no store at {}\n  hint: check --home and MCPEVAL_HOME, or run `mcpeval \
         index` after a capture\n",
        dir.display()
    )
}

#[test]
fn a_named_store_that_does_not_exist_is_refused_by_every_reader() {
    // MCPEVAL_HOME names a directory that is not there: every reader says
    // so, in the same words, and creates nothing.
    let store = Store::new();
    for (bin, args) in READERS {
        refuses_with(&store, bin, args, |_| {}, &no_store_at(bin, &store.home()));
    }
    let left: Vec<_> = std::fs::read_dir(store.scratch()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // A typo'd --home beside a store that is there, given to a command
    // and to the front (which makes it absolute).
    private_dir(&store.home());
    let typo = store.scratch().join("hoem");
    for (bin, args) in READERS {
        let args = [&["--home", typo.to_str().unwrap()], args].concat();
        refuses_with(&store, bin, &args, |_| {}, &no_store_at(bin, &typo));
    }
    refuses_with(
        &store,
        "mcpeval",
        &["--home", "hoem", "findings"],
        |cmd| {
            cmd.env("PATH", crate::support::bin_dir());
        },
        &no_store_at("mcpeval-findings", &typo),
    );
    assert!(!typo.exists());

    // A file where the store should be is no store either.
    let file = store.scratch().join("file");
    std::fs::write(&file, "").unwrap();
    refuses_with(
        &store,
        "mcpeval-findings",
        &["--home", file.to_str().unwrap()],
        |_| {},
        &format!(
            "mcpeval-findings: error: no store at {}: it is not a directory\n  hint: check \
             --home and MCPEVAL_HOME, or run `mcpeval index` after a capture\n",
            file.display()
        ),
    );
}

#[test]
fn the_default_store_not_there_yet_says_how_to_start() {
    // Neither --home nor MCPEVAL_HOME: a first run, not a typo, told how
    // to begin, as for a store with nothing indexed; still status 3, and
    // still nothing created.
    let store = Store::new();
    let default = store.scratch().join(".local/share/mcpeval");
    let words = format!(
        "no index yet: {} does not exist, and nothing was captured yet ({} holds no journal)\n  \
         hint: start by capturing in front of a server (`mcpeval capture -- <server command>`, \
         then let an agent use it), then run `mcpeval index` and `mcpeval promote`\n",
        default.join("index.db").display(),
        default.join("journals").display()
    );
    for (bin, args) in READERS {
        let unset = |cmd: &mut std::process::Command| {
            cmd.env_remove("MCPEVAL_HOME");
        };
        refuses_with(&store, bin, args, unset, &format!("{bin}: error: {words}"));
    }
    // Through the front, which hands every command the store it resolved
    // (the default too, SPEC §2): still the words of a first run.
    let mut cmd = store.cmd("mcpeval");
    cmd.env_remove("MCPEVAL_HOME")
        .args(["findings", "--format", "json"])
        .current_dir(store.scratch())
        .stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        format!("mcpeval-findings: error: {words}")
    );
    assert!(!store.scratch().join(".local").exists());
}

/// One line of `mcpeval.findings/1` with no findings, from a promote run.
#[track_caller]
fn assert_promoted_and_empty(stdout: &str) {
    assert!(
        stdout.ends_with('\n') && stdout.lines().count() == 1,
        "{stdout:?}"
    );
    let doc: serde_json::Value = serde_json::from_str(stdout).unwrap();
    assert_eq!(doc["schema"], "mcpeval.findings/1", "{stdout}");
    assert!(doc["promoted_at"].is_string(), "{stdout}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{stdout}");
}

#[test]
fn journals_without_an_index_say_to_index() {
    let store = Store::new();
    records::write(&store, 1, &Rec::ok(1, 1, 1, "forecast").line());
    refuses(
        &store,
        "mcpeval-findings",
        &[],
        &format!(
            "no index yet: {} does not exist\n  hint: run `mcpeval index`, then `mcpeval promote`",
            store.home().join("index.db").display()
        ),
    );
}

#[test]
fn a_promoted_store_with_calls_and_no_findings_explains_why() {
    let store = Store::new();
    records::write(&store, 1, &Rec::error(1, 1, 1, "forecast", Some(1)).line());
    ok(&store, "mcpeval-index", &[]);
    ok(&store, "mcpeval-promote", &[]);
    let out = run(&store, "mcpeval-findings", &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_promoted_and_empty(&text(&out.stdout));
    assert_eq!(
        text(&out.stderr),
        "mcpeval-findings: no findings: promote found none of 1 issues recurring in two \
         sessions at threshold 0.0031 (1 seen in one session only, 0 below threshold)\n"
    );
}

/// The agent format's lines for the finding of `tool` in the seeded store.
fn agent_entry(store: &Store, tool: &str) -> String {
    let out = ok(store, "mcpeval-findings", &["--format", "agent"]);
    let quoted = format!("tool \"{tool}\"");
    let start = out
        .split("\n\n")
        .find(|block| block.contains(&quoted))
        .unwrap_or_else(|| panic!("no entry for {tool}:\n{out}"));
    start.to_owned()
}

fn set(store: &Store, id: &str, state: &str, streak: u32, probe: bool) {
    set_state(store, id, state);
    let home = shared::home::Home::at(&store.home());
    let conn = store::lifecycle::open(&home).unwrap();
    conn.execute(
        "UPDATE finding_state SET streak = ?2, probe_attached = ?3, witnessed = NULL
         WHERE finding_id = ?1",
        rusqlite::params![id, streak, probe],
    )
    .unwrap();
}

#[test]
fn the_agent_format_suggests_what_each_state_needs() {
    let store = seeded();
    let id = crate::seeded::finding_of(&store, "weather", "forecast")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let manifest = format!("{id}.manifest.json");
    let verify = format!(
        "mcpeval verify --finding {id} --case {id} --manifest {manifest} -- <server command>"
    );
    let generate =
        format!("mcpeval generate --finding {id} --confirm-read-only --output {manifest}");

    // Open, never verified: write the case, then verify it.
    let open = agent_entry(&store, "forecast");
    assert!(open.contains(&format!("   next: {generate}\n")), "{open}");
    assert!(open.contains(&verify), "{open}");

    // Closed by three green runs: nothing to do, and what reopens it;
    // whether the closure was witnessed, or recorded before that was told.
    set(&store, &id, "closed", 3, true);
    let closed = agent_entry(&store, "forecast");
    assert!(closed.contains("state closed]"), "{closed}");
    assert!(
        closed.ends_with(
            "   closed by three consecutive green verification runs (recorded before closures \
             were told witnessed or not): nothing to do; if the failure comes back, a red \
             verification run reopens it"
        ),
        "{closed}"
    );
    for (witnessed, words) in [
        (
            1,
            "witnessed (the same case ran red against the same target before them)",
        ),
        (
            0,
            "unwitnessed (no red run of the case came first, so nothing shows it can tell the bug from the repair)",
        ),
    ] {
        let home = shared::home::Home::at(&store.home());
        let conn = store::lifecycle::open(&home).unwrap();
        conn.execute(
            "UPDATE finding_state SET witnessed = ?2 WHERE finding_id = ?1",
            rusqlite::params![id, witnessed],
        )
        .unwrap();
        let closed = agent_entry(&store, "forecast");
        assert!(
            closed.ends_with(&format!(
                "   closed by three consecutive green verification runs, {words}: nothing to do; \
                 if the failure comes back, a red verification run reopens it"
            )),
            "{closed}"
        );
    }
    assert!(!closed.contains("mcpeval generate"), "{closed}");
    assert!(!closed.contains("mcpeval verify"), "{closed}");

    // Closed by hand.
    set(&store, &id, "closed", 0, false);
    let by_hand = agent_entry(&store, "forecast");
    assert!(
        by_hand.contains("   closed by hand (mcpeval close): nothing to do;"),
        "{by_hand}"
    );
    assert!(!by_hand.contains("mcpeval generate"), "{by_hand}");

    // Verifying, one green run so far: two more, no new case.
    set(&store, &id, "verifying", 1, true);
    let verifying = agent_entry(&store, "forecast");
    assert!(
        verifying.contains(&format!(
            "   verifying: 1 of 3 green runs; run verify 2 more times, green each time, to \
             close it (a red verification run reopens it instead):\n         {verify}"
        )),
        "{verifying}"
    );
    assert!(!verifying.contains("mcpeval generate"), "{verifying}");
    set(&store, &id, "verifying", 2, true);
    assert!(agent_entry(&store, "forecast").contains("run verify 1 more time, green"));

    // Fix claimed: a red run on an open finding; fix, then verify again.
    set(&store, &id, "fix-claimed", 0, true);
    let claimed = agent_entry(&store, "forecast");
    assert!(
        claimed.contains(&format!(
            "   fix claimed, but the last verification run was red: fix the server, then \
             run\n         {verify}"
        )),
        "{claimed}"
    );
    assert!(!claimed.contains("mcpeval generate"), "{claimed}");

    // Reopened by a red run: its case exists; fix, then verify again.
    set(&store, &id, "open", 0, true);
    let reopened = agent_entry(&store, "forecast");
    assert!(
        reopened.contains(&format!(
            "   reopened by a red verification run: fix the server, then run\n         {verify}"
        )),
        "{reopened}"
    );
    assert!(!reopened.contains("mcpeval generate"), "{reopened}");
}
