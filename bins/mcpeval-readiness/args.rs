//! Command-line flags of `mcpeval-readiness`, checked into a [`Config`].

use clap::{Parser, ValueEnum};
use cli::StoreArgs;
use jiff::Timestamp;
use shared::Error;
use shared::Result;
use shared::home::Home;

/// Report how ready each server is, from recent traffic and open findings.
/// A tool failing more than this share of its calls on the last day puts
/// its server at risk (percent).
pub const RATE_LIMIT_PERCENT: u32 = 5;

#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-readiness",
    version,
    about = "Report how ready each server is, from recent traffic and open findings",
    long_about = format!("Report how ready each server is, from recent traffic and open findings.\n\n\
Per server and tool: the captured calls and failures of each of the last --days UTC days \
(today included; probe calls never count). A failure is an error or a malformed result; an \
unanswered call counts as a call only. Per server: the open findings (states open and \
fix-claimed) by severity, and a verdict with its reasons:\n\n  \
not-ready  an open finding of severity high\n  \
at-risk    an open finding of severity medium, or a tool that failed more than {RATE_LIMIT_PERCENT}% \
of its calls on the last day\n  \
ready      neither\n\n\
Verifying findings (green so far, not yet closed) are listed apart with their streak and never \
change the verdict: the first green run attaches a probe, which lifts the severity cap and may \
make the finding high, and a green run must never make a server look worse. Closed findings \
are left out.\n\n\
readiness reads the journals itself and does not need `mcpeval index`: it keeps per-journal \
daily counts in <MCPEVAL_HOME>/trends.db, a disposable cache validated like the index, by the \
length and SHA-256 of each journal's bytes read so far. Only the last journal may grow, and only \
journals sorting after it may appear; anything else (changed or truncated bytes, a removed or \
earlier journal) rebuilds the cache, said on stderr. A malformed complete line, or one over 64 \
KiB (measured as it is read, never held), is refused (status 4) with its file and line, and \
trends.db is left as it was. A name in journals/ that is not a regular file (a FIFO, a device) is \
skipped with a warning on stderr, never opened. Findings come from the index \
when one exists (a damaged or incomplete one is status 3, as for `mcpeval findings`); without \
one, the verdict rests on the failure rates and says so. With a team database it reads neither \
journals nor trends.db: the counts are the team's, summed in the database from the daily counts \
each store's `mcpeval index` uploads, and it needs SELECT rights only.\n\n\
The status is 0 whatever the verdicts: they are data. --format json prints one object \
{{as_of, days, rate_limit, findings, servers: [{{server, verdict, reasons, open_findings, \
verifying: [{{id, tool, severity, streak}}], tools: [{{tool, calls, failures, daily: [{{day, calls, \
failures, failure_rate}}]}}]}}], cache}}; open_findings and verifying are null without an index."),
    after_help = cli::footer(
        "Examples:\n  \
mcpeval readiness\n  \
mcpeval readiness --days 14 --server weather\n  \
mcpeval readiness --format json | jq -r '.servers[] | \"\\(.server) \\(.verdict)\"'"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// How many UTC days to report, today included
    #[arg(long, value_name = "N", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=366))]
    pub days: u32,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,

    /// Only this server (repeatable)
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,

    /// Report as if now were this RFC 3339 time (reproducible reports)
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Markdown for people
    Md,
    /// One JSON object
    Json,
}

/// What a run needs, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub days: u32,
    pub format: Format,
    pub servers: Vec<String>,
    pub now: Timestamp,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        let now = match &self.now {
            None => Timestamp::now(),
            Some(text) => shared::time::parse(text).ok_or_else(|| {
                Error::usage(format!(
                    "invalid --now {text:?}: give an RFC 3339 time such as 2026-11-30T07:00:00Z"
                ))
            })?,
        };
        Ok(Config {
            home: self.store.resolve()?,
            days: self.days,
            format: self.format,
            servers: self.server,
            now,
        })
    }
}
