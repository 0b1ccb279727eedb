//! Indexing, re-validating, promoting and reading findings over generated
//! stores, each beside its baseline.
//!
//! Every program is run as users run it, as a child process on a store of
//! its own, and checked for the answer it must give (the number of calls
//! indexed, the records parsed), so a fast wrong answer cannot pass as a
//! fast one.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::floor::Depth;
use crate::measure::{self, Run};

/// External programs the baselines use; `None` when not installed.
pub struct Tools {
    pub jq: Option<PathBuf>,
    pub sqlite3: Option<PathBuf>,
    pub sha256sum: PathBuf,
}

impl Tools {
    pub fn find() -> Tools {
        Tools {
            jq: which("jq"),
            sqlite3: which("sqlite3"),
            sha256sum: which("sha256sum").expect("sha256sum (coreutils) on PATH"),
        }
    }
}

/// The first `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A store: its home and its journals in name order.
pub struct Store {
    pub home: PathBuf,
    pub journals: Vec<PathBuf>,
    pub calls: u64,
}

impl Store {
    pub fn bytes(&self) -> u64 {
        self.journals
            .iter()
            .map(|p| p.metadata().map_or(0, |m| m.len()))
            .sum()
    }

    /// Removes `index.db` (and its WAL), so the next index run starts anew.
    pub fn forget_index(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(self.home.join(format!("index.db{suffix}")));
        }
    }
}

/// What one `mcpeval-index --format json` run reported.
pub struct Indexed {
    pub run: Run,
    pub calls: u64,
    pub new: u64,
}

/// Runs `mcpeval-index` on `store`.
pub fn index(store: &Store, scratch: &Path) -> Indexed {
    index_with(store, &[], scratch)
}

/// Runs `mcpeval-index ARGS` on `store`.
pub fn index_with(store: &Store, args: &[&str], scratch: &Path) -> Indexed {
    let run = measure::run(
        Command::new(env!("CARGO_BIN_EXE_mcpeval-index"))
            .arg("--home")
            .arg(&store.home)
            .args(["--format", "json"])
            .args(args),
        scratch,
    );
    let summary: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("index summary {:?}: {e}", run.stdout));
    let number = |key: &str| summary[key].as_u64().expect("a count");
    Indexed {
        calls: number("calls"),
        new: number("new"),
        run,
    }
}

/// Reads and parses `store`'s journals in a child, storing nothing.
pub fn floor(store: &Store, depth: Depth, scratch: &Path) -> Run {
    let run = measure::run(
        Command::new(std::env::current_exe().expect("own path"))
            .args(["--floor", depth.arg()])
            .args(&store.journals),
        scratch,
    );
    assert_eq!(
        run.stdout.trim(),
        store.calls.to_string(),
        "floor line count"
    );
    run
}

/// The columns the naive loader extracts, as jq paths.
const NAIVE_COLUMNS: &str = "[.identity.event_id, .identity.session, .identity.seq, .origin, \
    .transport, .server, .tool, .started_at, .duration_ms, .advertised, (.args_shape | tojson), \
    .outcome, .unknown, .error.channel, .error.code, .error.template_id, .error.retryable] | @csv";

const NAIVE_TABLE: &str = "CREATE TABLE calls(event_id, session, seq, origin, transport, \
    server, tool, started_at, duration_ms, advertised, args_shape, outcome, unknown, channel, \
    code, template_id, retryable);";

/// The naive loader: `jq` flattens every record to CSV, `sqlite3 .import`
/// loads it into a fresh database. No validation, windows or checkpoints.
pub fn naive(store: &Store, tools: &Tools, scratch: &Path) -> Option<Run> {
    let (jq, sqlite3) = (tools.jq.as_ref()?, tools.sqlite3.as_ref()?);
    let db = scratch.join("naive.db");
    let _ = std::fs::remove_file(&db);
    let script = format!(
        "set -o pipefail; \"$0\" -r '{NAIVE_COLUMNS}' \"${{@:3}}\" \
         | \"$1\" -cmd '{NAIVE_TABLE}' -cmd '.mode csv' \"$2\" '.import /dev/stdin calls'"
    );
    let run = measure::run(
        Command::new("bash")
            .args(["-c", &script])
            .arg(jq)
            .arg(sqlite3)
            .arg(&db)
            .args(&store.journals),
        scratch,
    );
    let count = sql(sqlite3, &db, "SELECT count(*) FROM calls", scratch);
    assert_eq!(count.stdout.trim(), store.calls.to_string(), "naive load");
    Some(run)
}

/// One `sqlite3` query on `db`.
pub fn sql(sqlite3: &Path, db: &Path, query: &str, scratch: &Path) -> Run {
    measure::run(Command::new(sqlite3).arg(db).arg(query), scratch)
}

/// `sha256sum` over the store's journals.
pub fn sha256sum(store: &Store, tools: &Tools, scratch: &Path) -> Run {
    let run = measure::run(
        Command::new(&tools.sha256sum).args(&store.journals),
        scratch,
    );
    assert_eq!(run.stdout.lines().count(), store.journals.len());
    run
}

/// `mcpeval-promote`, scored as of `now`.
pub fn promote(store: &Store, now: &str, scratch: &Path) -> Run {
    let promote = measure::run(
        Command::new(env!("CARGO_BIN_EXE_mcpeval-promote"))
            .arg("--home")
            .arg(&store.home)
            .args(["--now", now]),
        scratch,
    );
    assert!(
        promote.stdout.starts_with("promoted "),
        "promote said {:?}",
        promote.stdout
    );
    promote
}

/// `mcpeval-promote` then `mcpeval-findings --format md`, scored as of `now`.
pub fn promote_and_findings(store: &Store, now: &str, scratch: &Path) -> (Run, Run) {
    let promote = promote(store, now, scratch);
    let findings = measure::run(
        Command::new(env!("CARGO_BIN_EXE_mcpeval-findings"))
            .arg("--home")
            .arg(&store.home)
            .args(["--format", "md"]),
        scratch,
    );
    assert!(
        findings.stdout.starts_with("# mcpeval findings"),
        "findings printed {:?}",
        findings.stdout.lines().next()
    );
    (promote, findings)
}
