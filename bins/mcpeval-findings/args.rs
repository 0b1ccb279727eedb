//! Command-line flags of `mcpeval-findings`.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use cli::StoreArgs;
use shared::id::FindingId;

/// Read the promoted findings.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-findings",
    version,
    about = "Read the promoted findings: for people, agents and scripts",
    long_about = "Read the promoted findings: for people (md), for an agent fixing the \
server (agent), and for scripts (json).\n\n\
Every format holds sanitized identifiers, aggregate figures, the defect class \
and its fix hint, argument shapes and the lifecycle state: never an error \
template, an annotation note, a session token, the salt or a raw value.\n\n\
With a valid index and no findings, a one-line explanation goes to stderr and \
the status is 0 (on a store with nothing captured yet, it says how to start). A missing, \
damaged or incomplete index is unavailable evidence (status 3), and so are findings out of \
date: when the index changed after the last promote (new journals indexed, or --rebuild), or \
promote never ran on this store, every format prints nothing on stdout and says \
\"findings are out of date: ... run mcpeval promote\" (or \"not promoted yet\") with \
status 3, so a script never takes a stale store for one without failures.\n\n\
--from FILE reads the findings of a share envelope (mcpeval.share/1, written by \
`mcpeval share`; --from - reads it from standard input) instead of the store, so a maintainer renders what was shared in \
any format, with a store of their own or none at all; the store is not opened. The \
file is untrusted input and is checked whole: known fields only, ids of their exact form, \
enums, numbers in range, and server, tool and argument names as capture writes them (no \
control, bidirectional or invisible character such as a zero-width joiner or a Unicode tag \
character, at most 128 bytes; such a name is refused, not cleaned). \
Any item that breaks the contract refuses the file (status 4), naming the file and the JSON \
Pointer of the value at fault, e.g. /findings/3/server. It is read as a stream, one item at a \
time: an envelope over 256 MiB, or one item (a finding, a record, a server name, any other \
field's value) over 1 MiB, is refused (status 4) as soon as that much was read, and is never \
held.

\
Every format escapes names for its medium: in markdown a name is always a code span (in \
headings and table cells too), so no link, mention, issue reference or HTML comes of it; a quoted literal in \
the agent format (so a name never starts a line), JSON with every control, bidirectional and \
invisible character escaped.

\
One tool can have several findings (one per error template, which is never shown). Each \
finding is labelled with its most frequent argument shape, with the keys that every finding of \
its tool shares left out (an ellipsis marks them) and long shapes cut: in the md table and \
headings and in the agent format's first line of each finding. md groups the sections under \
one heading per server and tool.\n\n\
In the agent format each finding ends with the next step its lifecycle state needs: an open \
finding never verified gets the generate and verify commands; fix-claimed, reopened and \
verifying ones get verify again (with the green runs still needed to close); a closed one \
gets no command, only how it closed and that a red verification run reopens it.\n\n\
--history --format json prints, instead of the findings, the lifecycle history of each listed \
finding from lifecycle.db: {history: [{finding, state, streak, reopened, events: [{at, event, \
from, to, reopened}], runs: [{run_id, result, reason, started_at, finished_at, recorded_at, \
legacy}]}]}, oldest first. Events are promoted, verified, closed-by-hand and rekeyed; reopened \
marks a red run that sent a verifying or closed finding back to open. A closing reason is prose \
and is never printed.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval findings\n  \
mcpeval findings --format agent --state open\n  \
mcpeval findings --format json | jq '.findings[] | {id, defect_class, score}'\n  \
mcpeval findings --from weather.share.json --format agent\n  \
mcpeval findings --history --format json | jq '.history[] | {finding, runs: [.runs[].result]}'"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Read the findings of this share envelope instead of the store (- for standard input)
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,

    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Md)]
    pub format: Format,

    /// Only findings in this lifecycle state (repeatable)
    #[arg(long, value_enum, value_name = "STATE")]
    pub state: Vec<StateFilter>,

    /// Only findings of this server (repeatable)
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,

    /// Only this finding (repeatable); with a team database, only its rows are read
    #[arg(long, value_name = "ID")]
    pub finding: Vec<FindingId>,

    /// Print each listed finding's lifecycle history instead (with --format json)
    #[arg(long, conflicts_with = "from")]
    pub history: bool,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Instructions for an LLM agent fixing the server
    Agent,
    /// Markdown for people
    Md,
    /// One JSON object {"schema": "mcpeval.findings/1", "promoted_at", "findings": [...]}
    Json,
}

/// Lifecycle states to filter on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StateFilter {
    Open,
    FixClaimed,
    Verifying,
    Closed,
}

impl StateFilter {
    /// The lifecycle state filtered on (its spelling is the lifecycle's).
    pub fn state(self) -> store::lifecycle::State {
        use store::lifecycle::State;
        match self {
            StateFilter::Open => State::Open,
            StateFilter::FixClaimed => State::FixClaimed,
            StateFilter::Verifying => State::Verifying,
            StateFilter::Closed => State::Closed,
        }
    }
}
