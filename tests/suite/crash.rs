//! Crash safety: `index`, `promote` and `verify` killed with SIGKILL at
//! every SQL statement they run, through the debug builds' fault hook
//! (`MCPEVAL_FAULT_AFTER_STATEMENTS`, see `shared/store/src/fault.rs`).
//!
//! After each kill both databases pass SQLite's integrity check, a reader
//! sees the state before the run or the state after it and nothing in
//! between, the lifecycle holds no credit for a run that did not finish,
//! and the next run, unhindered, reaches exactly the state a run that was
//! never killed reaches.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rusqlite::{Connection, OpenFlags};
use shared::home::Home;
use store::fault::{FAULT_ENV, FAULT_IN_ENV};
use store::lifecycle::{self, Kind, Target};

use crate::dump::{Dump, evidence, findings, rows, scratch};
use crate::records::{self, Rec, lines};
use crate::support::{SYSTEM_PATH, bin, text};
use crate::verify::Bench;

/// Runs `name ARGS` in the store at `home`, killed at statement `fault`.
fn run(home: &Path, name: &str, args: &[&str], fault: Option<u64>) -> Output {
    run_in(home, name, args, fault, name)
}

/// [`run`], with the fault armed in the binary `armed` (which `name` runs).
fn run_in(home: &Path, name: &str, args: &[&str], fault: Option<u64>, armed: &str) -> Output {
    let mut cmd = Command::new(bin(name));
    cmd.args(args)
        .env_clear()
        .env("MCPEVAL_HOME", home)
        .env("NO_COLOR", "1")
        .env("PATH", SYSTEM_PATH);
    if let Some(n) = fault {
        cmd.env(FAULT_ENV, n.to_string()).env(FAULT_IN_ENV, armed);
    }
    cmd.output().unwrap()
}

fn killed(out: &Output) -> bool {
    out.status.signal() == Some(libc::SIGKILL)
}

fn copy_dir(from: &Path, to: &Path) {
    crate::support::private_dir(to);
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Runs `name ARGS` on fresh copies of `template`, killed at statement 1,
/// 2, … until a run succeeds; `after` sees each copy after its failed run.
/// Returns the number of statements the successful run ran.
fn every_statement(
    template: &Path,
    name: &str,
    args: &[&str],
    after: impl FnMut(&Path, &Output),
) -> u64 {
    every_statement_in(template, name, args, name, after)
}

/// [`every_statement`], killing the binary `armed` that `name` runs.
fn every_statement_in(
    template: &Path,
    name: &str,
    args: &[&str],
    armed: &str,
    mut after: impl FnMut(&Path, &Output),
) -> u64 {
    let root = scratch();
    for n in 1..5000 {
        let home = root.path().join(n.to_string());
        copy_dir(template, &home);
        let out = run_in(&home, name, args, Some(n), armed);
        if out.status.success() {
            return n - 1;
        }
        after(&home, &out);
        fs::remove_dir_all(&home).unwrap();
    }
    panic!("{name} never finished");
}

fn integrity(db: &Path) {
    if !db.exists() {
        return;
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok", "{}", db.display());
}

/// The index's evidence when an indexing run completed, else `None`.
fn complete_evidence(home: &Path) -> Option<Dump> {
    if !home.join("index.db").exists() {
        return None;
    }
    // A run killed before its schema committed leaves an empty file.
    let conn = crate::dump::open(home);
    conn.query_row("SELECT calls FROM state", [], |_| Ok(()))
        .ok()
        .map(|()| evidence(home))
}

/// What the run would reach unhindered, from a copy of `template`.
fn reference(template: &Path, name: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let root = scratch();
    let home = root.path().join("reference");
    copy_dir(template, &home);
    let out = run(&home, name, args, None);
    assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    (root, home)
}

fn annotate(home: &Path, kind: Kind, event_no: u64) {
    let mut conn = lifecycle::open(&Home::at(home)).unwrap();
    let target = Target::event_id(&records::event(event_no)).unwrap();
    lifecycle::insert(&mut conn, kind, &target, "checked by hand").unwrap();
}

/// Two sessions failing on `search` and `fetch`, with recoveries, so
/// windows, blast radius and links all have rows.
fn calls(first: u64, sessions: std::ops::Range<u64>) -> Vec<Rec> {
    let mut recs = Vec::new();
    for s in sessions {
        for seq in 1..=6 {
            let n = first + s * 10 + seq;
            recs.push(match seq {
                1 | 3 => Rec::error(n, s, seq, "search", Some(1)),
                2 => Rec::error(n, s, seq, "fetch", Some(2)),
                _ => Rec::ok(n, s, seq, if seq == 4 { "search" } else { "fetch" }),
            });
        }
    }
    recs
}

fn journal(home: &Path, n: u32) -> PathBuf {
    crate::support::private_dir(&home.join("journals"));
    home.join("journals").join(records::journal_name(n))
}

/// A store whose journals and annotations `index` has not read yet.
fn unindexed(dir: &Path) -> PathBuf {
    let home = dir.join("template");
    // Finding ids are salted: every copy must share the salt.
    store::salt::Salt::load_or_create(&Home::at(&home)).unwrap();
    fs::write(journal(&home, 1), lines(&calls(0, 1..3))).unwrap();
    fs::write(journal(&home, 2), lines(&calls(100, 3..4))).unwrap();
    annotate(&home, Kind::FalseSuccess, 14);
    annotate(&home, Kind::Workaround, 999);
    home
}

fn index_killed_everywhere(template: &Path, args: &[&str]) -> u64 {
    let before = complete_evidence(template);
    let (_keep, done) = reference(template, "mcpeval-index", args);
    let after = evidence(&done);
    every_statement(template, "mcpeval-index", args, |home, out| {
        assert!(killed(out), "{}", text(&out.stderr));
        integrity(&home.join("index.db"));
        integrity(&home.join("lifecycle.db"));
        let seen = complete_evidence(home);
        assert!(
            seen == before || seen.as_ref() == Some(&after),
            "a reader saw a state between: {seen:#?}"
        );
        let again = run(home, "mcpeval-index", &[], None);
        assert!(again.status.success(), "{}", text(&again.stderr));
        assert_eq!(evidence(home), after);
    })
}

#[test]
fn a_first_index_killed_at_any_statement_leaves_no_index_or_the_whole_one() {
    let dir = scratch();
    let template = unindexed(dir.path());
    let points = index_killed_everywhere(&template, &[]);
    assert!(points >= 20, "only {points} statements");
}

#[test]
fn an_incremental_index_killed_at_any_statement_keeps_the_previous_one() {
    let dir = scratch();
    let template = unindexed(dir.path());
    assert!(run(&template, "mcpeval-index", &[], None).status.success());
    records::append_to(&journal(&template, 2), &lines(&calls(200, 4..5)));
    fs::write(journal(&template, 3), lines(&calls(300, 5..6))).unwrap();
    annotate(&template, Kind::FalseSuccess, 204);
    let points = index_killed_everywhere(&template, &[]);
    assert!(points >= 20, "only {points} statements");
}

#[test]
fn a_rebuild_killed_at_any_statement_keeps_the_previous_index() {
    let dir = scratch();
    let template = unindexed(dir.path());
    assert!(run(&template, "mcpeval-index", &[], None).status.success());
    // Another tool name in the first journal: its bytes changed.
    let path = journal(&template, 1);
    let changed = fs::read_to_string(&path)
        .unwrap()
        .replacen("\"fetch\"", "\"fetcH\"", 1);
    fs::write(&path, changed).unwrap();
    let points = index_killed_everywhere(&template, &[]);
    assert!(points >= 20, "only {points} statements");
}

/// The lifecycle's finding states, without the times they were written.
fn states(home: &Path) -> Vec<String> {
    let path = home.join("lifecycle.db");
    if !path.exists() {
        return Vec::new();
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    rows(
        &conn,
        "SELECT finding_id, state, streak, binding, probe_attached, reopened, retired_for
         FROM finding_state ORDER BY finding_id",
    )
}

fn promote_killed_everywhere(template: &Path, args: &[&str]) -> u64 {
    let before = findings(template);
    let states_before = states(template);
    let (_keep, done) = reference(template, "mcpeval-promote", args);
    let (after, states_after) = (findings(&done), states(&done));
    assert_ne!(before, after, "the run must change the findings");
    every_statement(template, "mcpeval-promote", args, |home, out| {
        assert!(killed(out), "{}", text(&out.stderr));
        integrity(&home.join("index.db"));
        integrity(&home.join("lifecycle.db"));
        let seen = findings(home);
        assert!(
            seen == before || seen == after,
            "a reader saw findings between: {seen:#?}"
        );
        // Lifecycle rows are written first: a kill may leave the new open
        // states without the catalog, never states of another run.
        let now = states(home);
        assert!(now == states_before || now == states_after, "{now:#?}");
        let again = run(home, "mcpeval-promote", args, None);
        assert!(again.status.success(), "{}", text(&again.stderr));
        assert_eq!(findings(home), after);
        assert_eq!(states(home), states_after);
    })
}

const NOW: &str = "2026-12-01T00:00:00Z";

#[test]
fn promote_killed_at_any_statement_keeps_or_replaces_the_findings_whole() {
    let dir = scratch();
    let template = unindexed(dir.path());
    assert!(run(&template, "mcpeval-index", &[], None).status.success());
    let args = ["--threshold", "0", "--now", NOW];
    let points = promote_killed_everywhere(&template, &args);
    assert!(points >= 15, "only {points} statements");

    // Replacing an earlier promotion with fewer findings.
    assert!(
        run(&template, "mcpeval-promote", &args, None)
            .status
            .success()
    );
    let fewer = ["--threshold", "0.3", "--now", NOW];
    promote_killed_everywhere(&template, &fewer);
}

/// (verifications of `run_id`, state, streak, `verified` history lines).
fn credit(home: &Path, finding: &str, run_id: &str) -> (i64, String, i64, i64) {
    let conn =
        Connection::open_with_flags(home.join("lifecycle.db"), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(
        "SELECT (SELECT count(*) FROM verifications WHERE run_id = ?2),
                coalesce((SELECT state FROM finding_state WHERE finding_id = ?1), 'open'),
                coalesce((SELECT streak FROM finding_state WHERE finding_id = ?1), 0),
                (SELECT count(*) FROM history WHERE finding_id = ?1 AND event = 'verified')",
        [finding, run_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )
    .unwrap()
}

#[test]
fn verify_killed_at_any_statement_records_a_run_wholly_or_not_at_all() {
    let bench = Bench::new();
    let template = bench.store.home();
    let probe = run(
        &template,
        "mcpeval-probe",
        &[
            "--case",
            "status",
            "--manifest",
            bench.manifest.to_str().unwrap(),
            "--",
            "python3",
            bench.server.to_str().unwrap(),
        ],
        None,
    );
    assert!(probe.status.success(), "{}", text(&probe.stderr));
    let result = bench.store.scratch().join("result.json");
    fs::write(&result, &probe.stdout).unwrap();
    let run_id = serde_json::from_slice::<serde_json::Value>(&probe.stdout).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let finding = bench.finding.clone();
    let args = ["--record", result.to_str().unwrap()];
    let none = (0, "open".to_owned(), 0, 0);
    let whole = (1, "verifying".to_owned(), 1, 1);
    let mut recorded = 0;
    let points = every_statement(&template, "mcpeval-verify", &args, |home, out| {
        assert!(killed(out), "{}", text(&out.stderr));
        integrity(&home.join("lifecycle.db"));
        let seen = credit(home, &finding, &run_id);
        assert!(seen == none || seen == whole, "partial credit: {seen:?}");
        recorded += i32::from(seen == whole);
        // Recording the same result again completes it, and a run that
        // was recorded already earns nothing more.
        let again = run(home, "mcpeval-verify", &args, None);
        assert!(again.status.success(), "{}", text(&again.stderr));
        assert_eq!(credit(home, &finding, &run_id), whole);
    });
    assert!(points >= 10, "only {points} statements");
    eprintln!("{points} statements; {recorded} kills came after the commit");
}

#[test]
fn verify_of_a_live_server_killed_at_any_statement_never_holds_credit_for_it() {
    let bench = Bench::new();
    let template = bench.store.home();
    let args = [
        "--finding",
        &bench.finding,
        "--case",
        "status",
        "--manifest",
        bench.manifest.to_str().unwrap(),
        "--",
        "python3",
        bench.server.to_str().unwrap(),
    ];
    let no_partial_credit = |home: &Path| {
        integrity(&home.join("lifecycle.db"));
        let conn = Connection::open_with_flags(
            home.join("lifecycle.db"),
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let runs = rows(&conn, "SELECT run_id FROM verifications");
        let state = rows(
            &conn,
            "SELECT state, streak FROM finding_state WHERE state <> 'open' OR streak <> 0",
        );
        let verified = rows(&conn, "SELECT 1 FROM history WHERE event = 'verified'");
        assert!(
            (runs.is_empty() && state.is_empty() && verified.is_empty())
                || (runs.len() == 1
                    && state == ["Text(\"verifying\")|Integer(1)|"]
                    && verified.len() == 1),
            "partial credit: {runs:?} {state:?} {verified:?}"
        );
        runs.len()
    };
    let points = every_statement(&template, "mcpeval-verify", &args, |home, out| {
        assert!(killed(out), "{}", text(&out.stderr));
        no_partial_credit(home);
    });
    assert!(points >= 10, "only {points} statements");
    // The probe it runs, killed: verify says so and records nothing.
    let probe_points = every_statement_in(
        &template,
        "mcpeval-verify",
        &args,
        "mcpeval-probe",
        |home, out| {
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(74), "{stderr}");
            assert!(
                stderr.contains("mcpeval-probe was killed by signal 9; nothing was recorded"),
                "{stderr}"
            );
            assert_eq!(no_partial_credit(home), 0);
        },
    );
    assert!(probe_points >= 1, "the probe ran no statement");
}
