//! `mcpeval-annotate`: store a human observation about one call in
//! `lifecycle.db`, and say whether the index can link it.
//!
//! Annotating never writes `index.db`: links are derived data, made by
//! `mcpeval index`. The note is never printed back or copied anywhere.

mod args;
mod target;

use std::io::{self, Write};
use std::process::ExitCode;

use shared::Result;
use store::lifecycle;

use crate::args::{Args, Config};

fn main() -> ExitCode {
    cli::main(|args: Args| run(args.into_config()?))
}

fn run(config: Config) -> Result<()> {
    // An annotation reads no row of the team's: it is added beside them.
    let scope = team::Scope::Nothing;
    let (id, status) = team::write(&config.home, scope, |home| {
        let mut conn = lifecycle::open(home)?;
        let id = lifecycle::insert(&mut conn, config.kind, &config.target, &config.note)?;
        Ok((id, target::describe(home, &config.target)))
    })?;
    let _ = writeln!(io::stderr().lock(), "annotation {id} stored{status}");
    let mut out = io::stdout().lock();
    writeln!(out, "{id}")?;
    Ok(out.flush()?)
}
