//! `mcpeval-readiness`: per server, recent daily failure rates, the
//! findings that count (open and fix-claimed) by severity, the verifying
//! ones apart, and a verdict with its reasons.
//!
//! It reads the journals itself through its own cache, `trends.db`, so it
//! works without `mcpeval index`. It must never trust a cache it has not
//! validated against the journals' bytes, never change `index.db` or
//! `lifecycle.db`, and never print anything the journals do not hold in
//! sanitized form (server and tool names, counts, finding ids).

mod args;
mod cache;
mod render;
mod verdict;

use std::io::Write;
use std::process::ExitCode;

use shared::Result;

use crate::args::{Args, Config, Format};

const PROGRAM: &str = "mcpeval-readiness";

fn main() -> ExitCode {
    cli::main(|args: Args| run(args.into_config()?))
}

fn run(config: Config) -> Result<()> {
    // With a team database: the team's findings and counts, read from it.
    let mut view = team::view(&config.home, team::Scope::All)?;
    let config = Config {
        home: view.home().clone(),
        ..config
    };
    // Findings not promoted since the index changed end the run first,
    // before the trends cache is touched.
    let catalog = store::catalog::load_if_indexed(&config.home)?;
    let refresh = match view.trends()? {
        Some(team) => cache::Refresh::of_team(team),
        None => cache::refresh(&config.home)?,
    };
    if let Some(reason) = &refresh.rebuilt {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{PROGRAM}: trends.db rebuilt: {reason}"
        );
    }
    let report = verdict::report(&config, &refresh, catalog.as_ref());
    let mut out = std::io::stdout().lock();
    match config.format {
        Format::Json => render::json(&mut out, &report)?,
        Format::Md => render::markdown(&mut out, &report)?,
    }
    Ok(out.flush()?)
}
