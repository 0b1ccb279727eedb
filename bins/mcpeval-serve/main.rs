//! `mcpeval-serve`: the suite as an MCP server on stdio, for agents.
//!
//! A small JSON-RPC loop over `serde_json::Value` answers both protocol
//! eras. Every tool runs the suite's own command for it (the reading
//! tools `mcpeval-findings --format json`) and relays or reads what that
//! command said, so no rule is implemented twice. It
//! must never return a template, note, session token, salt or raw value,
//! never write to stdout anything but protocol messages, and never let a
//! client write outside the workspace or run a command the user did not
//! allow (see `workspace.rs` and `allowlist.rs`).

mod allowlist;
mod args;
mod failure;
mod protocol;
mod siblings;
mod tools;
mod workspace;

use std::process::ExitCode;

use crate::allowlist::Allowlist;
use crate::args::Args;

const PROGRAM: &str = "mcpeval-serve";

fn main() -> ExitCode {
    cli::main(|args: Args| {
        let config = args.into_config()?;
        if let Allowlist::Any = config.commands {
            cli::warn(
                PROGRAM,
                "--allow-any-command: verify_finding will run ANY command an MCP client of \
                 this server names, with your rights; allow only your server's command with \
                 --allow-command 'CMD ARGS' instead",
            );
        }
        protocol::serve(&config)
    })
}
