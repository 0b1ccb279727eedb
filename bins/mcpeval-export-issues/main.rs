//! `mcpeval-export-issues`: one issue-ready markdown file per open finding.
//!
//! A reader of the store: it changes no database. What it writes comes
//! from `store::catalog`, the same sanitized facts `findings` prints;
//! it must never write a template, note, session token, event id, salt or
//! raw value, and never delete a file it did not name unless `--prune`.

mod args;
mod export;
mod issue;

use std::process::ExitCode;

#[cfg(test)]
use crate::args::Args;

const PROGRAM: &str = "mcpeval-export-issues";

fn main() -> ExitCode {
    cli::main(export::run)
}

#[cfg(test)]
mod tests {
    #[test]
    fn program_name_matches_clap() {
        use clap::CommandFactory;
        assert_eq!(super::Args::command().get_name(), super::PROGRAM);
    }
}
