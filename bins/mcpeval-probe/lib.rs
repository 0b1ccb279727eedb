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

/// The program: what `mcpeval-probe` does, from its arguments to its exit status.
pub fn main() -> ExitCode {
    let passed = take_endpoint();
    cli::main_status(|args: Args| {
        let config = args.into_config(passed)?;
        let manifest = shared::manifest::Manifest::load(&config.manifest)?;
        if config.all {
            all::run(&config, &manifest)
        } else {
            run::run(&config, &manifest)
        }
    })
}

/// Takes [`shared::ENDPOINT_ENV`] out of this process's environment: what
/// verify passed is read once, and no server, sibling or later read of the
/// environment sees it again.
fn take_endpoint() -> Option<String> {
    let value = std::env::var_os(shared::ENDPOINT_ENV)?;
    // SAFETY: called first thing in `main`, before this program starts any
    // thread, so nothing reads the environment while it changes.
    unsafe { std::env::remove_var(shared::ENDPOINT_ENV) };
    value.into_string().ok()
}
