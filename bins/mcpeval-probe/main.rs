//! `mcpeval-probe`: run one manifest case (or, with `--all`, every case)
//! against an MCP server, over stdio or Streamable HTTP, and print the
//! signed results.
//!
//! It changes no lifecycle state; it only journals its own calls (origin
//! `probe`). stdout carries the result and nothing else; the server's
//! output is judged, never echoed.

mod all;
mod args;
mod junit;
mod output;
mod run;
mod target;

use std::process::ExitCode;

use crate::args::Args;

const PROGRAM: &str = "mcpeval-probe";

fn main() -> ExitCode {
    shared::cli::main_status(|args: Args| run::run(args.into_config()?))
}
