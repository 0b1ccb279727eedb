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
    cli::main_status(|args: Args| verify(args.into_config()?))
}

fn verify(config: Config) -> shared::Result<u8> {
    // A finding to verify, and the salt a recorded result is checked
    // with, live in the store: one that is not there is refused first.
    store::dir::require(&config.home)?;
    match &config.mode {
        Mode::Run(run) => run::run(&config.home, run, config.format),
        Mode::Record(input) => {
            let lines = record::read(input)?;
            let policy = policy(&config.home)?;
            let mut pending = output::Pending::default();
            // The rows of the findings it records, and no other.
            let findings = lines.iter().map(|l| l.result.finding.clone()).collect();
            let scope = team::Scope::Findings(findings);
            let status = team::write(&config.home, scope, |home| {
                record::record_all(home, input, &lines, config.format, policy, &mut pending)
            })?;
            pending.emit()?;
            Ok(status)
        }
    }
}

/// What this store asks of a closing streak: `require_witnessed` in its
/// config.json, or in its team's settings.
pub fn policy(home: &shared::home::Home) -> shared::Result<store::verification::Policy> {
    Ok(store::verification::Policy {
        require_witnessed: shared::config::Config::load(home)?.require_witnessed
            || team::require_witnessed(home)?,
    })
}
