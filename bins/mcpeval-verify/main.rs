//! `mcpeval-verify`: probe a claimed fix through `mcpeval-probe`, or
//! record a result it printed, and move the finding's lifecycle.
//!
//! It never judges a server by itself and never records a result whose
//! MAC does not verify with this store's salt. stdout carries the result
//! line (or JSON object) and nothing else.

mod args;
mod output;
mod record;
mod run;

use std::process::ExitCode;

use crate::args::{Args, Config, Mode};

fn main() -> ExitCode {
    shared::cli::main_status(|args: Args| verify(args.into_config()?))
}

fn verify(config: Config) -> shared::Result<u8> {
    match &config.mode {
        Mode::Run(run) => run::run(&config.home, run, config.format),
        Mode::Record(input) => {
            let lines = record::read(input)?;
            let mut pending = output::Pending::default();
            let status = shared::team::write(&config.home, |home| {
                record::record_all(home, input, &lines, config.format, &mut pending)
            })?;
            pending.emit()?;
            Ok(status)
        }
    }
}
