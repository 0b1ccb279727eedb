//! Writing the issue files and finding the stale ones.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use shared::catalog;
use shared::error::{IoContext, Result};

use crate::PROGRAM;
use crate::args::{Args, Format};
use crate::issue;

/// Runs the export.
pub fn run(args: Args) -> Result<()> {
    let home = args.home.resolve()?;
    let catalog = catalog::load(&home)?;
    let open: Vec<&catalog::Finding> = catalog
        .findings
        .iter()
        .filter(|f| f.state != "closed")
        .collect();
    let all_open: BTreeSet<&str> = open.iter().map(|f| f.derived.id.as_str()).collect();
    let chosen: Vec<&catalog::Finding> = open
        .into_iter()
        .filter(|f| args.server.is_empty() || args.server.contains(&f.derived.server))
        .collect();

    shared::atomic_file::ensure_dir(&args.dir)?;
    let mut written = Vec::new();
    let mut unchanged = Vec::new();
    for f in &chosen {
        let path = args.dir.join(issue::file_name(&f.derived.id));
        let body = issue::render(f);
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
            let list = |v: &[PathBuf]| -> Vec<String> {
                v.iter().map(|p| p.display().to_string()).collect()
            };
            let stale_left: Vec<PathBuf> = if args.prune {
                Vec::new()
            } else {
                stale.clone()
            };
            writeln!(
                out,
                "{}",
                json!({
                    "dir": args.dir.display().to_string(),
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
    if catalog.promotion.is_none() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{PROGRAM}: note: nothing was promoted since the index last changed; run `mcpeval promote`"
        );
    }
    Ok(())
}

/// Our files in `dir` whose finding is not open, in name order.
fn stale_files(dir: &Path, open: &BTreeSet<&str>) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).context(format_args!("cannot list {}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.context(format_args!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = issue::finding_of(name)
            && !open.contains(id)
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}
