//! Man pages and completions are generated from the clap definitions and
//! checked in; this fails when a flag changed without `scripts/gen-docs`.

use crate::support::{bin, repo};

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
    let out = std::process::Command::new(bin(name))
        .args(["--generate", kind])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} --generate {kind}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
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
        let out = std::process::Command::new(bin(&name))
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{name} --help failed");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{name} --help has no usage"
        );
    }
}
