//! `mcpeval-report`: one self-contained HTML page of each server's
//! readiness and daily failure rates, the findings, and the history of
//! their fixes.
//!
//! It composes like a third-party plugin: everything it shows comes from
//! the JSON its siblings print (`findings`, `findings --history`,
//! `readiness`), run through [`siblings`]; it opens no database itself.
//! It must never emit a script or a reference to anything outside the
//! page, nor a name unescaped.

mod args;
mod chart;
mod evidence;
mod page;
mod siblings;

use std::process::ExitCode;

use shared::Result;

use crate::args::{Args, Config};

const PROGRAM: &str = "mcpeval-report";

fn main() -> ExitCode {
    cli::main(|args: Args| run(args.into_config()?))
}

fn run(config: Config) -> Result<()> {
    // Its siblings read the team; a store that cannot is refused here,
    // in the report's own words.
    team::check(&config.home)?;
    let evidence = evidence::gather(&config)?;
    let html = page::render(&evidence);
    config.output.write(html.as_bytes(), 0o644)?;
    if let Some(path) = config.output.path() {
        let charts: usize = evidence
            .readiness
            .servers
            .iter()
            .map(|s| s.tools.len())
            .sum();
        eprintln!(
            "{PROGRAM}: wrote {}: {}, {}, {} ({} KiB)",
            path.display(),
            count(evidence.readiness.servers.len(), "server"),
            count(charts, "tool chart"),
            count(evidence.findings.len(), "finding"),
            html.len().div_ceil(1024)
        );
    }
    Ok(())
}

/// `1 server`, `2 servers`.
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
