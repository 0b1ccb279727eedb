//! `mcpeval-share`: one JSON envelope (`mcpeval.share/1`) with the
//! sanitized findings, per-tool evidence and journal records of chosen
//! servers, for a maintainer who has no access to the store.
//!
//! It must never put lifecycle.db rows, the salt, the store's session
//! tokens or template ids (they are re-keyed for each file) or (unless
//! asked, and then only after showing them) annotation notes into the
//! envelope, and never write a half file: the envelope is renamed into
//! place whole.

mod args;
mod evidence;
mod notes;
mod pack;
mod rekey;

use std::process::ExitCode;

use crate::args::Args;

const PROGRAM: &str = "mcpeval-share";

fn main() -> ExitCode {
    cli::main(|args: Args| pack::run(args))
}
