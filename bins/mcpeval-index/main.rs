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
mod prior;
mod progress;
mod refresh;
mod row;
mod schema;
mod sessions;
mod summary;
mod team;
mod windows;

use std::process::ExitCode;

use crate::args::Args;

fn main() -> ExitCode {
    shared::cli::main(|args: Args| {
        let config = args.into_config()?;
        let outcome = refresh::run(&config)?;
        let team = match shared::team::Team::open(&config.home)? {
            Some(team) => Some(team::run(team, &config)?),
            None => None,
        };
        summary::print(&outcome, team.as_ref(), config.format)
    })
}
