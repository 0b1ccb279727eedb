//! Command-line flags of `mcpeval-export-issues`.

use std::path::PathBuf;

use clap::Parser;
pub use cli::Format;
use cli::StoreArgs;

/// Write one issue-ready markdown file per open finding.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-export-issues",
    version,
    about = "Write one issue-ready markdown file per open finding",
    long_about = "Write one issue-ready markdown file per open finding (every lifecycle \
state but closed) into --dir: <finding-id>.md, a stable name, so re-running updates each \
file in place. Every file is written to a temporary file beside it and renamed into place, \
so a tracker or editor never reads half a file.\n\n\
Each file holds a title naming the defect class, server, tool and argument shape (where one \
tool has several open findings, the part of the shape that differs from the others, so their \
titles differ); an evidence table \
(failures, calls, rate, 95% Wilson lower bound, sessions, first and last seen, failure \
windows, blast radius, error codes, retryable); severity and score; the shape-level repro \
(the tool and the argument shapes, never values); the one-line server-side fix hint; and \
the exact `mcpeval generate` and `mcpeval verify` commands that prove a repair. A \
false-success finding's generate command carries --expect expect.json: write that oracle \
first.\n\n\
The files hold the same sanitized facts as `mcpeval findings`: no error template, note, \
session token, event id, salt or raw value.\n\n\
Files in --dir named like a finding (finding-<16 hex>.md) whose finding is no longer open \
(closed, or no longer promoted) are stale: they are listed on stderr and kept, unless \
--prune is given, which deletes them. Other files in --dir are never touched. With \
--server, only that server's findings are written; stale files are judged against every \
open finding, so another server's open issue is never called stale.\n\n\
A summary line goes to stderr; stdout lists the written files, one path a line, or with \
--format json one object {\"dir\", \"written\", \"unchanged\", \"stale\", \"pruned\"}. A \
missing, damaged or incomplete index is unavailable evidence (status 3).",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval export-issues --dir issues/\n  \
mcpeval export-issues --dir issues/ --server weather --prune\n  \
mcpeval export-issues --dir issues/ --format json | jq -r '.stale[]'"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Directory the issue files go to (created if missing)
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,

    /// Only findings of this server (repeatable)
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,

    /// Delete stale issue files instead of only listing them
    #[arg(long)]
    pub prune: bool,

    /// What stdout lists: the written files, one path a line (text), or one JSON object with dir, written, unchanged, stale, pruned (json)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}
