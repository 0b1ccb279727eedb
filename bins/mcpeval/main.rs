//! `mcpeval`: the front of the suite. `mcpeval NAME ARGS…` becomes
//! `mcpeval-NAME ARGS…`, found beside this program or on PATH.
//!
//! The front stays tiny on purpose: it owns no store, no data and no flags of
//! the commands, so any `mcpeval-NAME` on PATH is as much a part of the suite
//! as the built-in ones.

mod args;
mod builtin;
mod completion;
mod dispatch;
mod exec;
mod listing;
mod suggest;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::args::Action;
use shared::sibling::Search;

const PROGRAM: &str = "mcpeval";

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    // The same hidden switch every binary has, for scripts/gen-docs.
    if argv.get(1).is_some_and(|a| a == "--generate") {
        let kind = argv.get(2).and_then(|k| k.to_str()).unwrap_or("");
        // clap cannot complete external subcommands: the front writes its own.
        let generated = if kind.starts_with("complete-") {
            completion::write(args::command(), kind)
        } else {
            cli::generate(args::command(), kind)
        };
        return cli::finish(PROGRAM, generated);
    }
    cli::finish(PROGRAM, run(argv.into_iter().skip(1)))
}

fn run(argv: impl IntoIterator<Item = OsString>) -> shared::Result<()> {
    match args::parse(argv)? {
        Action::Print(text) => write!(io::stdout().lock(), "{text}")?,
        Action::List(format) => listing::write(&Search::from_env()?, format)?,
        // Only a failure comes back: on success the command has replaced us.
        Action::Dispatch(request) => return Err(dispatch::run(&Search::from_env()?, request)),
    }
    Ok(())
}
