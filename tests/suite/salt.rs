//! `mcpeval-salt`: one salt for the stores of a team, exported into a
//! private file and imported only where no id was made with another.

use std::os::unix::fs::PermissionsExt;

use predicates::prelude::*;
use serde_json::Value;

use crate::records::{self, Rec};
use crate::support::{Store, text};

const HEADER: &str = "mcpeval.salt/1 ";

/// The store's `.salt` as hex, as an export file holds it.
fn hex_salt(store: &Store) -> String {
    store::hash::hex(&std::fs::read(store.home().join(".salt")).unwrap())
}

/// Exports `store`'s salt into a file of the scratch directory.
fn export(store: &Store) -> std::path::PathBuf {
    let file = store.scratch().join("team.salt");
    store
        .bin("mcpeval-salt")
        .arg("--export")
        .arg(&file)
        .assert()
        .code(0)
        .stdout("");
    file
}

#[test]
fn export_makes_the_salt_into_a_private_file_of_one_line() {
    let store = Store::new();
    let file = store.scratch().join("team.salt");
    let out = store
        .bin("mcpeval-salt")
        .arg("--export")
        .arg(&file)
        .assert()
        .code(0)
        .stdout("");
    let hex = hex_salt(&store);
    let stderr = text(&out.get_output().stderr);
    assert_eq!(
        stderr,
        format!(
            "mcpeval-salt: exported the salt of {} to {}; keep it secret: it keys every id of the store\n",
            store.home().display(),
            file.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{HEADER}{hex}\n")
    );
    assert_eq!(hex.len(), 64);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let salt_mode = std::fs::metadata(store.home().join(".salt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(salt_mode & 0o777, 0o600);

    // A file open to others is replaced by a private one.
    let open = store.scratch().join("open.salt");
    std::fs::write(&open, "old").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    store
        .bin("mcpeval-salt")
        .arg("--export")
        .arg(&open)
        .assert()
        .code(0);
    assert_eq!(
        std::fs::read_to_string(&open).unwrap(),
        format!("{HEADER}{hex}\n")
    );
    let mode = std::fs::metadata(&open).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // A second export gives the same salt: it is the store's, not a new one.
    let again = store
        .bin("mcpeval-salt")
        .args(["--export", "-"])
        .assert()
        .code(0)
        .stderr(predicate::str::ends_with(
            "to standard output; keep it secret: it keys every id of the store\n",
        ));
    assert_eq!(text(&again.get_output().stdout), format!("{HEADER}{hex}\n"));
    assert!(!stderr.contains(&hex));
    assert!(!text(&again.get_output().stderr).contains(&hex));
}

#[test]
fn exactly_one_of_export_and_import() {
    let store = Store::new();
    store.bin("mcpeval-salt").assert().code(2).stdout("");
    store
        .bin("mcpeval-salt")
        .args(["--export", "a", "--import", "b"])
        .assert()
        .code(2)
        .stdout("");
    assert!(!store.home().exists(), "nothing written");
}

/// Writes the same journal into `store`, indexes and promotes it; returns
/// the finding ids.
fn finding_ids(store: &Store) -> Vec<String> {
    let mut recs = Vec::new();
    for s in 1..=3 {
        recs.push(Rec::error(s * 10, s, 1, "forecast", Some(1)));
        recs.push(Rec::ok(s * 10 + 1, s, 2, "forecast"));
    }
    records::write(store, 1, &records::lines(&recs));
    store.bin("mcpeval-index").assert().success();
    store
        .bin("mcpeval-promote")
        .args(["--threshold", "0"])
        .assert()
        .success();
    let out = store
        .bin("mcpeval-findings")
        .args(["--format", "json"])
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_imported_salt_gives_the_same_finding_ids_on_both_stores() {
    let first = Store::new();
    let file = export(&first);
    let second = Store::new();
    let out = second
        .bin("mcpeval-salt")
        .arg("--import")
        .arg(&file)
        .assert()
        .code(0)
        .stdout("");
    let hex = hex_salt(&first);
    assert_eq!(hex_salt(&second), hex);
    let stderr = text(&out.get_output().stderr);
    assert!(
        stderr.starts_with("mcpeval-salt: imported the salt from "),
        "{stderr}"
    );
    assert!(!stderr.contains(&hex));
    let mode = std::fs::metadata(second.home().join(".salt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let ids = finding_ids(&first);
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(finding_ids(&second), ids);
    // A store of its own salt names the same defect otherwise.
    assert_ne!(finding_ids(&Store::new()), ids);
}

#[test]
fn importing_the_same_salt_again_changes_nothing() {
    let first = Store::new();
    let file = export(&first);
    let before = std::fs::metadata(first.home().join(".salt")).unwrap();
    let out = first
        .bin("mcpeval-salt")
        .args(["--import", "-"])
        .write_stdin(std::fs::read(&file).unwrap())
        .assert()
        .code(0)
        .stdout("");
    assert_eq!(
        text(&out.get_output().stderr),
        format!(
            "mcpeval-salt: {} already has the salt in standard input; nothing to do\n",
            first.home().display()
        )
    );
    let after = std::fs::metadata(first.home().join(".salt")).unwrap();
    assert_eq!(
        before.modified().unwrap(),
        after.modified().unwrap(),
        "not rewritten"
    );
}

#[test]
fn a_store_with_another_salt_refuses_the_import() {
    let first = Store::new();
    let file = export(&first);
    let second = Store::new();
    export(&second);
    let theirs = std::fs::read(second.home().join(".salt")).unwrap();
    second
        .bin("mcpeval-salt")
        .arg("--import")
        .arg(&file)
        .assert()
        .code(6)
        .stdout("")
        .stderr(predicate::str::starts_with(format!(
            "mcpeval-salt: error: refused: {} already has another salt, and its journals' ids were made with it; nothing was changed\n",
            second.home().display()
        )).and(predicate::str::contains(hex_salt(&first)).not()));
    assert_eq!(std::fs::read(second.home().join(".salt")).unwrap(), theirs);
}

#[test]
fn a_store_with_journals_but_no_salt_refuses_the_import() {
    let first = Store::new();
    let file = export(&first);
    let second = Store::new();
    records::write(&second, 1, &Rec::ok(1, 1, 1, "forecast").line());
    second
        .bin("mcpeval-salt")
        .arg("--import")
        .arg(&file)
        .assert()
        .code(6)
        .stdout("")
        .stderr(predicate::str::starts_with(format!(
            "mcpeval-salt: error: refused: {} has journals but no salt: their ids were made with a salt that is gone; nothing was changed\n",
            second.home().display()
        )));
    assert!(!second.home().join(".salt").exists());
}

#[test]
fn a_malformed_salt_file_is_rejected_and_installs_nothing() {
    let hex = "0123456789abcdef".repeat(4);
    let cases = [
        (
            format!("mcpeval.salt/2 {hex}\n"),
            "does not start with \"mcpeval.salt/1 \"",
        ),
        (
            format!("{HEADER}{}\n", &hex[..63]),
            "the line holds 63 bytes there",
        ),
        (
            format!("{HEADER}{}g\n", &hex[..63]),
            "another character is among them",
        ),
        (
            format!("{HEADER}{}\n", hex.to_uppercase()),
            "another character is among them",
        ),
        (
            format!("{HEADER}{hex}\n{HEADER}{hex}\n"),
            "80 bytes of trailing data after the salt line",
        ),
        (
            format!("{HEADER}{hex}"),
            "the salt line does not end with a newline",
        ),
    ];
    for (contents, why) in cases {
        let store = Store::new();
        let file = store.scratch().join("bad.salt");
        std::fs::write(&file, &contents).unwrap();
        let out = store
            .bin("mcpeval-salt")
            .arg("--import")
            .arg(&file)
            .assert()
            .code(4)
            .stdout("")
            .stderr(
                predicate::str::starts_with(format!("mcpeval-salt: error: {}: ", file.display()))
                    .and(predicate::str::contains(why)),
            );
        let stderr = text(&out.get_output().stderr);
        assert!(!stderr.contains(&hex[..16]), "{stderr}");
        assert!(!stderr.contains(&hex.to_uppercase()[..16]), "{stderr}");
        assert!(!store.home().join(".salt").exists(), "{why}");
    }
}
