//! Command-line flags of `mcpeval-promote`, checked into a [`Config`].

use clap::Parser;
pub use cli::Format;
use cli::StoreArgs;
use jiff::Timestamp;
use shared::Result;
use shared::config::{Config as StoreConfig, check_threshold};
use shared::home::Home;

/// The default promotion threshold: the one that maximizes F1 on the
/// checked-in seed corpus (`corpus/seed/`). A test recomputes it.
pub const DEFAULT_THRESHOLD: f64 = 0.0031;

/// Turn recurring failures into scored, classified findings.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-promote",
    version,
    about = "Turn recurring tool failures into scored, classified findings",
    long_about = "Turn recurring tool failures into scored, classified findings.\n\n\
Groups the indexed failures of captured calls (never probe calls): errors by \
server, tool and salted template id; malformed results by server and tool; \
successful calls annotated false-success by server and tool. Each group is \
scored in [0, 1]:\n\n  \
score = W · R · (0.5 + 0.25·min(1, log2(1+T)/4) + 0.25·min(1, (B−1)/4))\n\n\
where W is the 95% Wilson lower bound of failures over all calls to the tool, \
R halves every 14 days since the group's last failure, T is the median length \
of its failure windows in turns and B its blast radius in distinct tools. A \
group becomes a finding when its score reaches the threshold and it occurred \
in at least two sessions (even at threshold 0).\n\n\
Findings are classified (false-success, malformed-result, unknown-tool, \
invalid-arguments, error-honesty, transient, internal-error, tool-error: the \
first that applies wins) and carry a one-line server-side fix hint. Derived \
findings in index.db are replaced; lifecycle state in lifecycle.db is kept.\n\n\
With a team database it promotes the team's evidence as it is now, reading \
no call: it merges in the database the partial aggregates every store's \
`mcpeval index` uploads beside its calls, scores the merged groups as one \
store scores its own, and writes the findings and new lifecycle rows back in \
one transaction under the team's lock. Where the aggregates cannot merge \
exactly (a store not indexed since an earlier release, a journal copied \
between stores) it promotes this machine's team view instead, running \
`mcpeval index` first when the view is behind the database.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval index && mcpeval promote\n  \
mcpeval promote --threshold 0.15\n  \
mcpeval promote --format json | jq .promoted\n\n\
Threshold precedence: --threshold, then promotion_threshold in\n\
<MCPEVAL_HOME>/config.json, then the default calibrated on the seed corpus.\n\n\
Prints: promoted F of I issues (S seen in one session only, L below threshold)"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Minimum score for a finding, finite and ≥ 0 [default: config.json, else the calibrated default]
    #[arg(long, value_name = "NUMBER", value_parser = parse_threshold)]
    pub threshold: Option<f64>,

    /// Score as of this RFC 3339 time instead of now, for reproducible reports
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub now: Option<Timestamp>,

    /// Output: one line for people (text), or one JSON object (json)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// A validated promote run.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub threshold: f64,
    pub now: Timestamp,
    pub format: Format,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        let home = self.store.resolve()?;
        let threshold = match self.threshold {
            Some(t) => t,
            None => StoreConfig::load(&home)?
                .promotion_threshold
                .unwrap_or(DEFAULT_THRESHOLD),
        };
        Ok(Config {
            home,
            threshold,
            now: self.now.unwrap_or_else(Timestamp::now),
            format: self.format,
        })
    }
}

fn parse_threshold(text: &str) -> Result<f64> {
    let t: f64 = text
        .parse()
        .map_err(|_| shared::Error::usage(format!("'{text}' is not a number")))?;
    check_threshold(t)?;
    Ok(t)
}

fn parse_time(text: &str) -> Result<Timestamp> {
    text.parse().map_err(|e| {
        shared::Error::usage(format!(
            "'{text}' is not an RFC 3339 time such as 2026-11-30T07:00:00Z"
        ))
        .with_source(e)
    })
}
