//! Command-line flags of `mcpeval-report`, checked into a [`Config`].

use std::path::PathBuf;

use clap::Parser;
use cli::StoreArgs;
use shared::Error;
use shared::Result;
use shared::file_arg::Output;
use shared::home::Home;

/// Write one self-contained HTML page of readiness, findings and fixes.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-report",
    version,
    about = "Write one self-contained HTML page of readiness, findings and fixes",
    long_about = "Write one self-contained HTML page of readiness, findings and fixes.\n\n\
Per server: the readiness verdict with its reasons, the open findings (open and fix-claimed) by \
severity, the verifying findings apart (listed with their streak, never counted), and per tool \
a chart of the daily failure rate over the last --days UTC days with the 5% line the verdict \
uses; when the first day with captured calls is more recent, every chart starts on that day \
instead. Then the findings table (severity, class, server / tool, argument shape, score, \
failures, sessions, state, streak) and, under a heading per tool, each finding's fix hint and \
its verification history: a timeline of red and green runs, with the reopenings marked. Where \
one tool has several findings, each is labelled with the part of its argument shape that \
differs from the others.\n\n\
The page holds no script and fetches nothing: styles are inline, charts are inline SVG with axes, \
labels and a legend, and a Content-Security-Policy of default-src 'none' says so to the browser. \
It reads without JavaScript, prints, fits a phone, follows prefers-color-scheme: dark, and never \
tells red from green by colour alone (shapes and words say it too). Every name (server, tool, id) \
is escaped for HTML, control characters shown as escapes.\n\n\
The report is built from what the sibling commands print, as a third-party plugin would be: \
`mcpeval-findings --format json`, `mcpeval-findings --history --format json` and \
`mcpeval-readiness --format json`, each looked up beside this executable first, then on PATH, and \
run with --home naming the store. It shows nothing they do not. When one of them fails, the report \
stops with its message: unavailable evidence (a missing or outdated index) is status 3, a \
malformed journal 4.\n\n\
--output FILE is written to a temporary file beside FILE and renamed into place, so FILE is never \
half-written; --output - writes to stdout, and a FILE that is not a regular file (a FIFO, a device, \
a symbolic link such as /dev/stdout) is written in place, never replaced.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval report --output report.html\n  \
mcpeval report --days 14 --server weather --output weather.html\n  \
mcpeval report --output - | wc -c"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The HTML file to write, or - for stdout
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,

    /// How many UTC days to chart, today included
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=366))]
    pub days: u32,

    /// Only this server (repeatable)
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,

    /// Report as if now were this RFC 3339 time (reproducible reports)
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

/// What a run needs, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub output: Output,
    pub days: u32,
    pub servers: Vec<String>,
    /// Passed on to readiness as given, once known to parse.
    pub now: Option<String>,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        if let Some(text) = &self.now
            && shared::time::parse(text).is_none()
        {
            return Err(Error::usage(format!(
                "invalid --now {text:?}: give an RFC 3339 time such as 2026-11-30T07:00:00Z"
            )));
        }
        let output = Output::new(self.output);
        Ok(Config {
            home: self.store.resolve()?,
            output,
            days: self.days,
            servers: self.server,
            now: self.now,
        })
    }
}
