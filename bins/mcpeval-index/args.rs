//! Command-line flags of `mcpeval-index`, checked into a [`Config`].

use clap::Parser;
pub use cli::Format;
use cli::StoreArgs;
use shared::Result;
use shared::home::Home;

/// Index the capture journals into index.db.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-index",
    version,
    about = "Index the capture journals into index.db, incrementally and verifiably",
    long_about = "Index the capture journals into index.db, incrementally and verifiably.\n\n\
Reads every journal under <MCPEVAL_HOME>/journals/ in the byte order of the \
file names, checks each line is a valid mcpeval.call/1 (or legacy \
mcpeval.call/0) record, and derives the calls, failure windows, blast radius \
and annotation links that `mcpeval promote` reads.\n\n\
Each journal's indexed bytes are checkpointed by length and SHA-256. A later \
run re-hashes them (identity is content, never a file's time stamp) and \
parses only what is new: lines appended to the last indexed journal and \
journals sorting after it. Anything else (changed or truncated bytes, a \
removed journal, a new one sorting among indexed ones, an append to an \
earlier journal) rebuilds the index from every journal, and the summary line \
says why. A last line without its newline is left for the next run.\n\n\
A complete line that is not a valid record, or an event id seen before with \
different content, rejects the whole run: index.db is left exactly as it was \
and the error names the file and line (exit status 4). A repeated event id \
with identical content is an exact copy of the call and is indexed once. A line over 64 KiB is \
refused the same way, measured as it is read and never held. A name in journals/ that is not a \
regular file (a FIFO, a device, a directory) is skipped with a warning on stderr, never opened, \
as readiness and share skip it.\n\n\
Failure windows are computed per session and server over capture calls \
only: probe calls never open, extend or close a window.\n\n\
Prints one summary line on stderr: `indexed N calls (M new) from K journals \
in S s`, ending in `; full rebuild: REASON` when the index was rebuilt.\n\n\
With a team database (--database, MCPEVAL_DATABASE_URL or database_url in \
config.json) it then uploads what this store's index holds new, per journal \
by the same checkpoints (--rebuild replaces all of this store's calls there), \
rebuilds this machine's team view (<MCPEVAL_HOME>/team/) from every store's \
calls and indexes it the same way, and prints a second line: `team DB: \
uploaded U calls; the team's view holds N calls (M new) from K journals of S \
stores`. The JSON summary then has a \"team\" object.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval index\n  \
mcpeval index && mcpeval promote && mcpeval findings\n  \
mcpeval index --rebuild          # after repairing or replacing index.db\n  \
mcpeval index --format json | jq .new\n\n\
index.db is disposable: deleting it and running `mcpeval index` and\n\
`mcpeval promote` restores it from the journals and lifecycle.db."
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// Rebuild the index from every journal; recreates a damaged or foreign index.db
    #[arg(long)]
    pub rebuild: bool,

    /// Summary format: `indexed N calls (M new) from K journals in S s` on stderr (text), or on stdout `{"calls":N,"new":M,"journals":K,"seconds":S,"rebuild":REASON|null}`, with a team database also `"team":{"database","uploaded","stores","calls","new","journals","seconds"}` (json)
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,
}

/// What an index run needs, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub rebuild: bool,
    pub format: Format,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        Ok(Config {
            home: self.store.resolve()?,
            rebuild: self.rebuild,
            format: self.format,
        })
    }
}
