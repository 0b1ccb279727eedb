//! `mcpeval-capture`: sit between an MCP client and server, relay every
//! byte unchanged, and journal each tool call as a sanitized record.
//!
//! Two transports: stdio (`CMD ARGS…`, in [`stdio`]) and Streamable HTTP
//! (`--listen ADDR --upstream URL`, in [`http`]). Nothing of capture's own
//! ever goes to stdout; diagnostics go to stderr.

mod args;
mod http;
pub mod limits;
pub mod recent;
mod relay;
pub mod session;
mod signals;
mod stdio;
mod warnings;

use std::process::ExitCode;

use crate::args::{Args, Mode};

const PROGRAM: &str = "mcpeval-capture";

/// The program: what `mcpeval-capture` does, from its arguments to its exit status.
pub fn main() -> ExitCode {
    cli::main(|args: Args| {
        let config = args.into_config()?;
        match config.mode {
            Mode::Stdio(stdio) => stdio::run(&config.home, config.server, stdio),
            Mode::Http(http) => http::run(&config.home, config.server, http),
        }
    })
}
