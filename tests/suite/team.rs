//! The team store (SPEC §11): stores of one team index into one PostgreSQL
//! database, and every command reads and writes the team as one store.

use std::fs;
use std::path::{Path, PathBuf};

use crate::postgres::{self, Database};
use crate::support::{Store, private_dir, repo, text};

/// The promotion time every store is promoted at.
pub const NOW: &str = "2026-12-07T07:00:02.123Z";

/// The seed corpus's journals, in name order.
pub fn seed_journals() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(repo().join("corpus/seed/journals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// A store with `salt` (copied from another store) and `journals`.
pub fn store_with(salt: Option<&Path>, journals: &[PathBuf]) -> Store {
    let store = Store::new();
    let dir = store.home().join("journals");
    private_dir(&store.home());
    private_dir(&dir);
    if let Some(salt) = salt {
        fs::copy(salt, store.home().join(".salt")).unwrap();
    }
    for path in journals {
        fs::copy(path, dir.join(path.file_name().unwrap())).unwrap();
    }
    store
}

/// Runs `name ARGS…` on `store` against `db` (through `MCPEVAL_DATABASE_URL`)
/// and returns (status, stdout, stderr).
pub fn run(
    store: &Store,
    db: Option<&Database>,
    name: &str,
    args: &[&str],
) -> (i32, String, String) {
    let mut cmd = store.cmd(name);
    if let Some(db) = db {
        cmd.env("MCPEVAL_DATABASE_URL", &db.url);
    }
    let out = cmd.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Like [`run`], and the command must succeed.
pub fn ok(store: &Store, db: Option<&Database>, name: &str, args: &[&str]) -> String {
    let (status, stdout, stderr) = run(store, db, name, args);
    assert_eq!(status, 0, "{name} {args:?}: {stderr}");
    stdout
}

/// `findings --format json` without its promotion time (the clock's, not
/// `--now`'s).
pub fn findings(store: &Store, db: Option<&Database>) -> serde_json::Value {
    let json = ok(store, db, "mcpeval-findings", &["--format", "json"]);
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value.as_object_mut().unwrap().remove("promoted_at");
    value
}

#[test]
fn three_stores_in_one_database_have_the_findings_of_one_store_with_every_journal() {
    let journals = seed_journals();
    assert!(journals.len() > 30, "{}", journals.len());
    let db = postgres::database();

    // The first store brings the team's salt; the others import it.
    let first = store_with(None, &[]);
    let exported = first.scratch().join("team.salt");
    ok(
        &first,
        None,
        "mcpeval-salt",
        &["--export", exported.to_str().unwrap()],
    );
    let salt = first.home().join(".salt");
    let parts: Vec<Vec<PathBuf>> = (0..3)
        .map(|k| journals.iter().skip(k).step_by(3).cloned().collect())
        .collect();
    let stores: Vec<Store> = parts.iter().map(|p| store_with(Some(&salt), p)).collect();

    // They index at the same moment.
    std::thread::scope(|scope| {
        for store in &stores {
            let db = &db;
            scope.spawn(move || ok(store, Some(db), "mcpeval-index", &[]));
        }
    });
    // One of them, indexing again, sees every store's calls.
    ok(&stores[1], Some(&db), "mcpeval-index", &[]);
    ok(&stores[1], Some(&db), "mcpeval-promote", &["--now", NOW]);

    let single = store_with(Some(&salt), &journals);
    ok(&single, None, "mcpeval-index", &[]);
    ok(&single, None, "mcpeval-promote", &["--now", NOW]);
    let expected = findings(&single, None);
    assert!(
        expected["findings"].as_array().unwrap().len() >= 5,
        "{expected}"
    );

    // Every store reads the team's findings, equal field for field.
    for store in &stores {
        // A store that has not indexed since the others uploaded still
        // reads the team's findings; indexing changes nothing in them.
        assert_eq!(findings(store, Some(&db)), expected);
    }
    let calls: i64 = db
        .psql("SELECT count(*) FROM mcpeval.calls")
        .trim()
        .parse()
        .unwrap();
    let single_calls = journals
        .iter()
        .map(|p| fs::read_to_string(p).unwrap().lines().count() as i64)
        .sum::<i64>();
    assert_eq!(calls, single_calls, "every call once");
}
