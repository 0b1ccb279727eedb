//! `mcpeval-serve`: the suite as an MCP server on stdio, for agents.
//!
//! A small JSON-RPC loop over `serde_json::Value` answers both protocol
//! eras. Reading tools use `shared::catalog` directly; every tool that
//! decides or changes something runs the suite's own command for it and
//! relays what that command said, so no rule is implemented twice. It
//! must never return a template, note, session token, salt or raw value,
//! and never write to stdout anything but protocol messages.

mod args;
mod protocol;
mod siblings;
mod tools;

use std::process::ExitCode;

use crate::args::Args;

const PROGRAM: &str = "mcpeval-serve";

fn main() -> ExitCode {
    shared::cli::main(|args: Args| {
        let home = args.home.resolve()?;
        protocol::serve(&home)
    })
}
