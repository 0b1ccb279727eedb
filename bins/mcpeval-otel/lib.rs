//! `mcpeval-otel`: journal the MCP tool calls an OpenTelemetry-instrumented
//! client or server already reports, so a team gets findings without a
//! proxy in front of each server.
//!
//! Two ways in: an OTLP/HTTP receiver (`--listen`, [`listen`]) and OTLP
//! JSON files as a Collector's file exporter writes them (`--import`,
//! [`import`]). Either way a request is decoded within fixed bounds
//! ([`decode`], [`wire`], [`limits`]), its `tools/call` spans are read into
//! records with nothing raw left ([`span`]), and both ends' spans of one
//! request become one record ([`journaler`]), appended by the store's
//! journal writer exactly as capture appends. Diagnostics go to stderr;
//! stdout carries only the `--format json` summary.

mod args;
pub mod decode;
mod import;
pub mod journaler;
pub mod limits;
mod listen;
pub mod receiver;
pub mod span;
pub mod tally;
pub mod wire;

use std::process::ExitCode;

use crate::args::{Args, Mode};

const PROGRAM: &str = "mcpeval-otel";

/// The program: what `mcpeval-otel` does, from its arguments to its exit status.
pub fn main() -> ExitCode {
    cli::main(|args: Args| {
        let config = args.into_config()?;
        let tally = match config.mode {
            Mode::Listen(listen) => listen::run(&config.home, config.server, listen)?,
            Mode::Import(input) => import::run(&config.home, config.server, &input)?,
        };
        tally::report(&tally, config.format)
    })
}
