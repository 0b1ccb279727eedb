//! Ids read back from the store are untrusted, and the store is the
//! user's own: a finding id tampered with in index.db or lifecycle.db is
//! refused (status 3) before anything is written, never used as a file
//! name; a store directory open to others is closed again, one owned by
//! another user is refused.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use predicates::prelude::*;
use serde_json::json;

use crate::seeded::{findings, ok, run, seeded, set_state};
use crate::support::{Store, text};

/// Sets the id of the first finding row of index.db to `id`.
fn tamper_index(store: &Store, id: &str) {
    let db = rusqlite::Connection::open(store.home().join("index.db")).unwrap();
    let changed = db
        .execute(
            "UPDATE findings SET id = ?1 WHERE rowid = (SELECT min(rowid) FROM findings)",
            [id],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

/// Every path under `dir`, for "nothing was written" checks.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            out.push(e.path().display().to_string());
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_tampered_finding_id_in_index_db_is_refused_and_nothing_is_written() {
    for bad in ["../../escape", "x/../../../escape", "\u{1b}[31mred\u{202e}"] {
        let store = seeded();
        tamper_index(&store, bad);
        let before = tree(store.scratch());
        let dir = store.scratch().join("out/issues");
        store
            .bin("mcpeval-export-issues")
            .args(["--dir", dir.to_str().unwrap()])
            .assert()
            .code(3)
            .stdout("")
            .stderr(
                predicate::str::starts_with("mcpeval-export-issues: error: ")
                    .and(predicate::str::contains(
                        "index.db is corrupt: finding id \"",
                    ))
                    .and(predicate::str::contains(
                        "at row 1 of table findings is not \"finding-\" and 16 lower-case hex digits",
                    ))
                    .and(predicate::str::contains(
                        "run `mcpeval index --rebuild`, then `mcpeval promote`",
                    ))
                    // The raw bytes never reach the terminal: no escape, no override.
                    .and(predicate::str::contains("\u{1b}").not())
                    .and(predicate::str::contains("\u{202e}").not()),
            );
        assert_eq!(tree(store.scratch()), before, "{bad:?}: nothing written");
        assert!(!store.scratch().join("escape.md").exists());
    }
}

#[test]
fn every_reader_of_a_tampered_index_says_the_same() {
    let store = seeded();
    tamper_index(&store, "../../escape");
    store
        .bin("mcpeval-findings")
        .args(["--format", "json"])
        .assert()
        .code(3)
        .stdout("")
        .stderr(predicate::str::contains(
            "index.db is corrupt: finding id \"../../escape\" at row 1",
        ));
    store
        .bin("mcpeval-generate")
        .args([
            "--finding",
            "finding-0123456789abcdef",
            "--confirm-read-only",
            "--output",
            store.scratch().join("m.json").to_str().unwrap(),
        ])
        .assert()
        .code(3);
    assert!(!store.scratch().join("m.json").exists());

    // serve answers an isError result with the CLI's words.
    let served = crate::serve::client(
        &store,
        "auto",
        json!([
            crate::serve::call("list_findings", json!({})),
            crate::serve::call("get_finding", json!({"id": "finding-0123456789abcdef"}))
        ]),
    );
    let cli = run(&store, "mcpeval-findings", &[]);
    let cli = text(&cli.stderr).trim_end().to_owned();
    for c in served["calls"].as_array().unwrap() {
        assert_eq!(c["is_error"], true, "{c}");
        assert_eq!(c["text"], cli.as_str(), "{c}");
    }
}

#[test]
fn a_tampered_finding_id_in_lifecycle_db_is_refused() {
    let store = seeded();
    set_state(&store, "finding-0123/../../../tmp/pwn", "open");
    let dir = store.scratch().join("issues");
    for (bin, args) in [
        ("mcpeval-findings", vec!["--format", "json"]),
        (
            "mcpeval-export-issues",
            vec!["--dir", dir.to_str().unwrap()],
        ),
    ] {
        store
            .bin(bin)
            .args(&args)
            .assert()
            .code(3)
            .stdout("")
            .stderr(
                predicate::str::contains(
                    "lifecycle.db is corrupt: finding id \"finding-0123/../../../tmp/pwn\" at row",
                )
                .and(predicate::str::contains(
                    "of table finding_state is not \"finding-\"",
                ))
                .and(predicate::str::contains("hint: restore lifecycle.db")),
            );
    }
    assert!(!dir.exists(), "nothing written");
}

#[test]
fn export_issues_prunes_only_the_files_it_could_have_written() {
    let store = seeded();
    let dir = store.scratch().join("issues");
    ok(
        &store,
        "mcpeval-export-issues",
        &["--dir", dir.to_str().unwrap()],
    );
    let keep = [
        "finding-0123456789ABCDEF.md",
        "finding-0123456789abcdef.md~",
        ".finding-0123456789abcdef.md.tmp",
        "notes.md",
    ];
    for name in keep {
        std::fs::write(dir.join(name), "mine").unwrap();
    }
    // A symlink named like an issue is not a file export-issues wrote.
    let target = store.scratch().join("target.txt");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("finding-00000000000000aa.md")).unwrap();
    std::fs::write(dir.join("finding-00000000000000bb.md"), "stale").unwrap();

    let out = store
        .bin("mcpeval-export-issues")
        .args([
            "--dir",
            dir.to_str().unwrap(),
            "--prune",
            "--format",
            "json",
        ])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let pruned = dir.join("finding-00000000000000bb.md");
    assert_eq!(report["pruned"], json!([pruned.display().to_string()]));
    assert!(!pruned.exists());
    for name in keep {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            "mine",
            "{name}"
        );
    }
    assert!(dir.join("finding-00000000000000aa.md").is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    for f in findings(&store) {
        assert!(
            dir.join(format!("{}.md", f["id"].as_str().unwrap()))
                .is_file()
        );
    }
}

#[test]
fn a_store_open_to_others_is_made_private_with_a_warning() {
    let store = Store::new();
    let home = store.home();
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    store
        .bin("mcpeval-index")
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "mcpeval-index: warning: the store directory {} was open to other users (mode 0777); it is now 0700",
            home.display()
        )));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join("journals")), 0o700);
    // Warned once.
    store
        .bin("mcpeval-index")
        .assert()
        .stderr(predicate::str::contains("warning").not());
}

#[test]
fn a_store_owned_by_another_user_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: giving a directory to another user needs root");
        return;
    }
    let store = Store::new();
    let home = store.home();
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (bin, args) in [
        ("mcpeval-index", vec![]),
        (
            "mcpeval-annotate",
            vec![
                "--event-id",
                "6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b",
                "--kind",
                "slow",
                "--note",
                "",
            ],
        ),
        (
            "mcpeval-close",
            vec!["--finding", "finding-0123456789abcdef", "--reason", "gone"],
        ),
    ] {
        store
            .bin(bin)
            .args(&args)
            .assert()
            .code(2)
            .stderr(
                predicate::str::starts_with(format!(
                    "{bin}: error: the store directory {} belongs to user id 65534, not to you (user id 0); nothing was written",
                    home.display()
                ))
                .and(predicate::str::contains("hint: use a store of your own")),
            );
    }
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "nothing written"
    );
    assert_eq!(std::fs::metadata(&home).unwrap().uid(), 65534);
}
