//! Man pages and completions are generated from the clap definitions and
//! checked in; this fails when a flag changed without `scripts/gen-docs`.

use crate::support::{Store, bin, repo};

fn binaries() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("bins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("mcpeval"))
        .collect();
    names.sort();
    names
}

fn generated(name: &str, kind: &str) -> Vec<u8> {
    let out = assert_cmd::Command::new(bin(name))
        .args(["--generate", kind])
        .assert()
        .success();
    out.get_output().stdout.clone()
}

#[test]
fn man_pages_and_completions_are_current() {
    let mut stale = Vec::new();
    for name in binaries() {
        let files = [
            ("man", format!("man/{name}.1")),
            ("complete-bash", format!("completions/bash/{name}")),
            ("complete-zsh", format!("completions/zsh/_{name}")),
            ("complete-fish", format!("completions/fish/{name}.fish")),
        ];
        for (kind, rel) in files {
            let on_disk = std::fs::read(repo().join(&rel)).unwrap_or_default();
            if on_disk != generated(&name, kind) {
                stale.push(rel);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run scripts/gen-docs): {stale:?}"
    );
}

#[test]
fn every_binary_answers_help() {
    for name in binaries() {
        assert_cmd::Command::new(bin(&name))
            .arg("--help")
            .assert()
            .success()
            .stdout(predicates::str::contains("Usage"));
    }
}

/// Rust files under `dir`, recursively.
fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_bad_input_row_names_a_test_that_exists() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("## When input is bad\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a section 'When input is bad'");
    let mut files = Vec::new();
    for dir in ["tests/suite", "bins", "shared/src"] {
        sources(&repo().join(dir), &mut files);
    }
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| input") && !l.starts_with("| ---"))
        .collect();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for row in rows {
        let test = row
            .trim_end_matches(" |")
            .rsplit(" | ")
            .next()
            .and_then(|cell| cell.strip_prefix('`')?.strip_suffix('`'))
            .unwrap_or_else(|| panic!("no test named in: {row}"));
        let (file, name) = (
            test.split("::").next().unwrap(),
            test.rsplit("::").next().unwrap(),
        );
        let found = files.iter().any(|path| {
            path.file_stem().is_some_and(|s| s == file)
                && std::fs::read_to_string(path)
                    .unwrap()
                    .contains(&format!("fn {name}("))
        });
        assert!(found, "README names {test}, which no {file}.rs defines");
    }
}

/// The reader of `| head` may go away before a binary writes a byte: that
/// closed pipe is a quiet success (status 0, nothing on stderr) for every
/// binary, decided once where each one's main ends.
#[test]
fn generating_into_a_closed_pipe_is_a_quiet_success() {
    for name in binaries() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(bin(&name))
            .args(["--generate", "man"])
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        assert_eq!(stderr, "", "{name}");
    }
}

/// The front's help is the first thing a user reads: a change to it is a
/// reviewed snapshot diff.
#[test]
fn the_front_help_reads_as_reviewed() {
    let store = Store::new();
    let out = store
        .bin("mcpeval")
        .arg("--help")
        .assert()
        .code(0)
        .stderr("");
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("mcpeval_help", help);
}
