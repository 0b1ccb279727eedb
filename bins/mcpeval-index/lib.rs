//! `mcpeval-index`: read the capture journals into `index.db`, incrementally
//! and verifiably.
//!
//! The index is derived data: every run either commits a state that matches
//! the journals' bytes as they were read, or leaves `index.db` exactly as it
//! was. Journals are only ever read, never written.

mod args;
mod aside;
mod bulk;
mod checkpoint;
mod feed;
mod lines;
mod links;
mod load;
mod many;
mod plain;
mod pool;
mod prior;
mod progress;
mod refresh;
pub mod row;
mod schema;
mod sessions;
mod summary;
mod windows;
mod writeback;

use std::process::ExitCode;

use crate::args::Args;

/// The program: what `mcpeval-index` does, from its arguments to its exit status.
pub fn main() -> ExitCode {
    cli::main(|args: Args| {
        let config = args.into_config()?;
        let outcome = refresh::run(&config)?;
        let team = match team::Team::open(&config.home)? {
            Some(team) => Some(pool::run(team, &config)?),
            None => None,
        };
        summary::print(&outcome, team.as_ref(), config.format)
    })
}
