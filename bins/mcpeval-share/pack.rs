//! Building the envelope and writing it whole.
//!
//! What goes in is re-keyed for this one file (see `rekey.rs`) and holds
//! names cleaned as capture cleans them; what is said on stderr shows
//! every name and note escaped for a terminal.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use shared::error::{Error, IoContext, Result};
use shared::escape::{quoted, terminal};
use shared::file_arg::Output;
use shared::home::Home;
use shared::lines::Line;
use shared::record::{MAX_LINE, Record};
use store::catalog::Finding;
use store::envelope::{Note, SCHEMA, ToolEvidence};
use store::journal;

use crate::PROGRAM;
use crate::args::Args;
use crate::evidence;
use crate::notes;
use crate::rekey::{self, Rekey};

/// The envelope, fields in the order they are written.
#[derive(Serialize)]
struct Envelope {
    schema: &'static str,
    created_at: String,
    servers: Vec<String>,
    findings: Vec<Finding>,
    evidence: Vec<ToolEvidence>,
    journals: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<Vec<Note>>,
}

/// Runs `share`.
pub fn run(args: Args) -> Result<()> {
    // With a team database: its findings, and every store's calls.
    let mut home = team::view(&args.store.resolve()?, team::Scope::All)?;
    home.with_journals()?;
    let catalog = store::catalog::load_if_indexed(&home)?;
    let records = read_journals(&home)?;

    let known: BTreeSet<&str> = records
        .iter()
        .map(Record::server)
        .chain(
            catalog
                .iter()
                .flat_map(|c| c.findings.iter().map(|f| f.derived.server.as_str())),
        )
        .collect();
    for name in &args.server {
        if !known.contains(name.as_str()) {
            let list: Vec<_> = known.iter().map(|s| terminal(s)).collect();
            return Err(Error::usage(format!(
                "--server {} has no captured calls and no findings in this store; known servers: {}",
                quoted(name),
                if list.is_empty() {
                    "none".to_owned()
                } else {
                    list.join(", ")
                }
            )));
        }
    }
    let servers: Vec<String> = if args.server.is_empty() {
        known.iter().map(|s| (*s).to_owned()).collect()
    } else {
        let set: BTreeSet<&String> = args.server.iter().collect();
        set.into_iter().cloned().collect()
    };
    let chosen = |s: &str| servers.iter().any(|c| c == s);
    let records: Vec<Record> = records.into_iter().filter(|r| chosen(r.server())).collect();
    let findings: Vec<&Finding> = catalog
        .iter()
        .flat_map(|c| c.findings.iter())
        .filter(|f| chosen(&f.derived.server))
        .collect();

    let mut stderr = std::io::stderr().lock();
    if catalog.is_none() {
        let _ = writeln!(
            stderr,
            "{PROGRAM}: note: no index yet, so the envelope carries no findings; run `mcpeval index` and `mcpeval promote` first to include them"
        );
    }
    let notes = if args.include_notes {
        let notes = notes::on(&home, &records)?;
        let _ = writeln!(
            stderr,
            "{PROGRAM}: --include-notes: {} note{} will be included, as written:",
            notes.len(),
            if notes.len() == 1 { "" } else { "s" }
        );
        for n in &notes {
            let _ = writeln!(
                stderr,
                "  {} on {}: {}",
                terminal(&n.kind),
                terminal(&notes::target(n)),
                terminal(&n.note)
            );
        }
        Some(notes)
    } else {
        None
    };

    // Nothing of the store's own tokens leaves: one random key per file.
    let key = Rekey::new()?;
    let mut records = records;
    records.iter_mut().for_each(|r| key.record(r));
    let notes = notes.map(|mut notes| {
        for n in &mut notes {
            if let Some(s) = n.session.as_mut() {
                *s = key.session(s);
            }
            if let Some(id) = n.event_id.as_mut() {
                *id = key.event(id);
            }
        }
        notes
    });
    let mut servers = servers;
    servers.iter_mut().for_each(rekey::clean);
    servers.sort();
    servers.dedup();
    let envelope = Envelope {
        schema: SCHEMA,
        created_at: shared::time::now_rfc3339(),
        servers,
        findings: findings.into_iter().map(rekey::finding).collect(),
        evidence: evidence::per_tool(&records),
        journals: records.iter().map(Record::to_value).collect(),
        notes,
    };
    let text = shared::escape::to_json(&envelope).map_err(std::io::Error::from)?;
    let mut bytes = text.into_bytes();
    bytes.push(b'\n');
    let output = Output::new(&args.output);
    output.write(&bytes, 0o600)?;
    let _ = writeln!(
        stderr,
        "{PROGRAM}: wrote {output}: {}, {} of {}{}",
        count(envelope.findings.len(), "finding"),
        count(envelope.journals.len(), "journal record"),
        count(envelope.servers.len(), "server"),
        envelope
            .notes
            .as_ref()
            .map(|n| format!(", {}", count(n.len(), "note")))
            .unwrap_or_default()
    );
    Ok(())
}

/// `1 finding`, `2 findings`.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Every complete line of every journal, checked; a bad line refuses the
/// whole run before anything is written.
fn read_journals(home: &Home) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for path in store::journal::files(home.journals().as_std_path())? {
        read_journal(&path, &mut out)?;
    }
    Ok(out)
}

/// The complete lines of one journal, each held only up to the record
/// limit: a longer one is measured and refuses the run, never read whole.
fn read_journal(path: &Path, out: &mut Vec<Record>) -> Result<()> {
    let file = journal::open(path).context(format_args!("cannot open {}", path.display()))?;
    let mut lines = journal::lines(file);
    let mut n = 0u64;
    while let Some(line) = lines
        .next_line()
        .context(format_args!("cannot read {}", path.display()))?
    {
        n += 1;
        let rejected = |why: &dyn std::fmt::Display| {
            Error::rejected(format!("{}:{n}: {why}", path.display()))
                .with_hint("nothing was written; repair that line (or move the journal out of journals/) and share again")
        };
        let record = match line {
            Line::Complete(line) => Record::parse(line).map_err(|why| rejected(&why))?,
            Line::Oversized(len) => {
                return Err(rejected(&format_args!(
                    "oversized record: the line is {len} bytes, over the limit of {MAX_LINE}"
                )));
            }
        };
        out.push(record);
    }
    Ok(())
}
