//! `mcpeval-close`: close a finding by hand, with a reason in its history.
//!
//! The only way to close a finding without an attached probe. It writes
//! one state change and one history line in one transaction, and never
//! touches verification runs.

mod args;

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use shared::Error;
use shared::Result;
use shared::exit;
use shared::id::FindingId;
use store::lifecycle;
use store::verification;

use crate::args::{Args, Format};

fn main() -> ExitCode {
    cli::main(close)
}

fn close(args: Args) -> Result<()> {
    let finding: FindingId = shared::id::parse_flag("--finding", &args.finding)?;
    verification::check_reason(&args.reason)
        .map_err(|why| Error::usage("invalid --reason").with_source(why))?;
    let home = args.store.resolve()?;
    // Only a promoted finding can be closed: a store that is not there is
    // refused before the lifecycle is opened, which would create it.
    store::dir::require(&home)?;
    let scope = team::Scope::Finding(finding.clone());
    let changed = team::write(&home, scope, |home| {
        let mut conn = lifecycle::open(home)?;
        verification::standing(home, &conn, &finding)?.require(&finding, exit::USAGE)?;
        verification::close(
            &mut conn,
            home.lifecycle_db().as_std_path(),
            &finding,
            &args.reason,
        )
    })?;
    let was = changed.as_ref().map(|(before, _)| before.state.as_str());
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Text => match was {
            Some(was) => writeln!(out, "{finding} state=closed (was {was})")?,
            None => writeln!(out, "{finding} state=closed (already closed)")?,
        },
        Format::Json => writeln!(
            out,
            "{}",
            json!({"finding": finding, "state": "closed", "was": was.unwrap_or("closed"),
                   "changed": was.is_some()})
        )?,
    }
    Ok(out.flush()?)
}
