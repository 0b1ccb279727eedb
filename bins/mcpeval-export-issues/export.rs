//! Writing the issue files and finding the stale ones.
//!
//! Every name this module writes or deletes in `--dir` is
//! `<finding id>.md` for a checked [`FindingId`] — never a string read
//! from index.db as it stood — so nothing lands outside `--dir`, and
//! `--prune` only ever deletes a regular file it could have written.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use shared::error::{IoContext, Result};
use shared::finding::State;
use shared::id::FindingId;
use shared::tool_group::{self, Member};
use store::catalog;

use crate::PROGRAM;
use crate::args::{Args, Format};
use crate::issue;

/// Runs the export.
pub fn run(args: Args) -> Result<()> {
    // JSON strings are Unicode: a directory that is not UTF-8 could only be
    // printed as another path, so it is refused before anything is written.
    let dir_text = match (args.format, args.dir.to_str()) {
        (Format::Json, None) => {
            return Err(shared::Error::usage(format!(
                "--dir {:?} is not valid UTF-8, which --format json cannot print; nothing was written",
                args.dir
            ))
            .with_hint("use a directory whose path is UTF-8, or --format text"));
        }
        (_, text) => text.unwrap_or_default().to_owned(),
    };
    let home = team::view(&args.store.resolve()?, team::Scope::All)?;
    let catalog = catalog::load(&home)?;
    let open: Vec<&catalog::Finding> = catalog
        .findings
        .iter()
        .filter(|f| f.state != State::Closed)
        .collect();
    let all_open: BTreeSet<&FindingId> = open.iter().map(|f| &f.derived.id).collect();
    // Titles tell apart the open findings of one tool, whichever are chosen.
    let members: Vec<Member> = open.iter().map(|f| Member::from(&f.derived)).collect();
    let chosen: Vec<(&catalog::Finding, Option<String>)> = open
        .iter()
        .copied()
        .zip(tool_group::labels(&members))
        .filter(|(f, _)| args.server.is_empty() || args.server.contains(&f.derived.server))
        .collect();

    shared::atomic_file::ensure_dir(&args.dir)?;
    let mut written = Vec::new();
    let mut unchanged = Vec::new();
    for (f, label) in &chosen {
        let path = args.dir.join(file_name(&f.derived.id));
        let body = issue::render(f, label.as_deref());
        if std::fs::read(&path).is_ok_and(|old| old == body.as_bytes()) {
            unchanged.push(path);
            continue;
        }
        shared::atomic_file::write(&path, body.as_bytes(), 0o644)?;
        written.push(path);
    }

    let stale = stale_files(&args.dir, &all_open)?;
    let mut pruned = Vec::new();
    for path in &stale {
        if args.prune {
            std::fs::remove_file(path).context(format_args!("cannot remove {}", path.display()))?;
            pruned.push(path.clone());
        } else {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{PROGRAM}: stale: {} (its finding is closed or no longer promoted; --prune deletes it)",
                path.display()
            );
        }
    }

    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Text => {
            for path in &written {
                writeln!(out, "{}", path.display())?;
            }
        }
        Format::Json => {
            // Every path is --dir joined with a finding's file name: UTF-8.
            fn list(v: &[PathBuf]) -> Vec<&str> {
                v.iter().filter_map(|p| p.to_str()).collect()
            }
            let stale_left: Vec<PathBuf> = if args.prune {
                Vec::new()
            } else {
                stale.clone()
            };
            writeln!(
                out,
                "{}",
                json!({
                    "dir": dir_text,
                    "written": list(&written),
                    "unchanged": list(&unchanged),
                    "stale": list(&stale_left),
                    "pruned": list(&pruned),
                })
            )?;
        }
    }
    out.flush()?;
    let _ = writeln!(
        std::io::stderr().lock(),
        "{PROGRAM}: {} open finding{} in {}: {} written, {} unchanged; {} stale{}",
        chosen.len(),
        if chosen.len() == 1 { "" } else { "s" },
        args.dir.display(),
        written.len(),
        unchanged.len(),
        stale.len(),
        if args.prune { " (pruned)" } else { "" }
    );
    Ok(())
}

/// The file name of a finding's issue: stable across runs, and a plain
/// name (no separator, no `..`) because the id was checked.
fn file_name(id: &FindingId) -> String {
    format!("{id}.md")
}

/// The finding a file name stands for, when it is a name [`file_name`]
/// gives: exactly `finding-<16 lower-case hex>.md`.
fn finding_of(file_name: &str) -> Option<FindingId> {
    let id = FindingId::parse(file_name.strip_suffix(".md")?).ok()?;
    Some(id)
}

/// Our files in `dir` whose finding is not open, in name order: regular
/// files (not symlinks) named by [`file_name`]; nothing else is touched.
fn stale_files(dir: &Path, open: &BTreeSet<&FindingId>) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).context(format_args!("cannot list {}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.context(format_args!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = finding_of(name)
            && !open.contains(&id)
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finding_files_are_ours() {
        let id = FindingId::parse("finding-0123456789abcdef").unwrap();
        assert_eq!(finding_of("finding-0123456789abcdef.md"), Some(id.clone()));
        assert_eq!(finding_of(&file_name(&id)), Some(id));
        for name in [
            "finding-0123456789ABCDEF.md",
            "README.md",
            "finding-0123456789abcdef.md~",
            "finding-0123456789abcdef.MD",
            ".finding-0123456789abcdef.md",
            "finding-0123456789abcdef.md.tmp",
            "finding-0123456789abcde.md",
            ".md",
        ] {
            assert_eq!(finding_of(name), None, "{name}");
        }
    }
}
