//! `mcpeval-hello`: an example third-party command of the mcpeval suite.
//!
//! Put it on `PATH` and `mcpeval hello` runs it, with `MCPEVAL_HOME` set to
//! the store. It reads through the contract crate only:
//!
//! - `mcpeval findings --format json | mcpeval hello --findings -` prints
//!   one line per finding: its id, state, severity and where it fails;
//! - `mcpeval hello` reads every journal of the store and prints, per server
//!   and tool, how many calls it saw and how many failed.
//!
//! Exit statuses are the suite's: 0 on success, 2 for bad flags, 4 for input
//! it rejects, 74 when the store cannot be read.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Write};
use std::process::ExitCode;

use shared::exit;
use shared::findings::Findings;
use shared::home::Home;
use shared::record::{Outcome, Record};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => journals(),
        ["--findings", "-"] => findings(),
        ["--help"] | ["-h"] => {
            println!("usage: mcpeval-hello [--findings -]");
            Ok(())
        }
        _ => Err((
            exit::USAGE,
            "unknown arguments; usage: mcpeval-hello [--findings -]".to_owned(),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((status, message)) => {
            eprintln!("mcpeval-hello: error: {message}");
            ExitCode::from(status)
        }
    }
}

type Done = Result<(), (u8, String)>;

/// Reads `mcpeval.findings/1` from stdin and prints one line per finding.
fn findings() -> Done {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| (exit::IO, format!("cannot read stdin: {e}")))?;
    // The contract's own type: ids, states and severities are checked as
    // they are read, and keys a later release adds are ignored.
    let parsed = Findings::parse(&text).map_err(|e| (e.status(), format!("stdin: {e}")))?;
    let mut out = io::stdout().lock();
    for f in &parsed.findings {
        let d = &f.derived;
        let line = format!(
            "{} {} {} {}/{}",
            d.id, f.state, f.severity, d.server, d.tool
        );
        if writeln!(out, "{line}").is_err() {
            return Ok(()); // a closed pipe ends a reader quietly
        }
    }
    Ok(())
}

/// Reads every journal of the store and counts calls and failures per
/// (server, tool).
fn journals() -> Done {
    let home = Home::resolve(None).map_err(|e| (e.status(), e.to_string()))?;
    let dir = home.journals();
    let mut names = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect::<Vec<_>>(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err((exit::IO, format!("cannot list the journals: {e}"))),
    };
    names.sort();
    let mut counts: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for path in &names {
        let file = std::fs::File::open(path)
            .map_err(|e| (exit::IO, format!("cannot open a journal: {e}")))?;
        for (n, line) in io::BufReader::new(file).split(b'\n').enumerate() {
            let line = line.map_err(|e| (exit::IO, format!("cannot read a journal: {e}")))?;
            if line.is_empty() {
                continue;
            }
            let (server, tool, failed) = match Record::parse(&line) {
                Ok(Record::V1(call)) => {
                    let failed = call.outcome != Outcome::Ok;
                    (call.server.into_owned(), call.tool.into_owned(), failed)
                }
                Ok(Record::V0(call)) => {
                    let failed = call.outcome != Outcome::Ok;
                    (call.server, call.tool, failed)
                }
                Err(why) => {
                    let name = path.file_name().map(|n| n.to_string_lossy());
                    let name = name.unwrap_or_default();
                    return Err((exit::REJECTED, format!("{name}:{}: {why}", n + 1)));
                }
            };
            let entry = counts.entry((server, tool)).or_default();
            entry.0 += 1;
            entry.1 += u64::from(failed);
        }
    }
    let mut out = io::stdout().lock();
    if counts.is_empty() {
        eprintln!("mcpeval-hello: no calls in the journals yet");
    }
    for ((server, tool), (calls, failed)) in counts {
        if writeln!(out, "{server}/{tool}: {calls} calls, {failed} failed").is_err() {
            return Ok(());
        }
    }
    Ok(())
}
