//! Command-line flags of `mcpeval-share`.

use std::path::PathBuf;

use clap::Parser;
use cli::StoreArgs;

/// Pack share-safe findings and evidence into one file for a server's maintainer.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-share",
    version,
    about = "Pack share-safe findings and evidence into one file for a server's maintainer",
    long_about = "Pack share-safe findings and evidence into one file for a server's maintainer.\n\n\
The file is one JSON object, schema mcpeval.share/1: created_at; servers; findings, exactly as \
`mcpeval findings --format json` prints them; evidence, per server and tool the captured calls, \
successes, errors, unknown outcomes, failure rate, sessions, first and last call and error-code \
counts; and journals, the journal records of the chosen servers, re-serialized from their checked \
fields (argument shapes, salted ids and codes: never a value). Session tokens, template ids and \
event ids are re-keyed with a random key made for that one file and then forgotten: the calls of a \
session still group together and each call keeps an id of its own (a UUID, as in a journal), but \
nothing in the file links them to the store or to another share. \
Server, tool and argument names are cleaned as capture cleans them (control, bidirectional and \
invisible characters become ?, at most 128 bytes). The receiver reads it with \
`mcpeval findings --from FILE`, in a store of their own or none.\n\n\
Never included: lifecycle.db rows, the .salt, annotation notes. Notes are the store's one prose \
channel and are not redacted, so they travel only with --include-notes, and then every note that \
will be included is printed on stderr before the file is written; only notes on calls in the \
shared records are taken. Review them.\n\n\
--server chooses servers (repeatable; default every server with calls or findings); a name with \
neither is a usage error. The file is written to a temporary file beside FILE (mode 0600) and \
renamed into place, so FILE is never half-written; --output - writes it to standard output, and a FILE \
that is not a regular file (a FIFO, a device, a symbolic link such as /dev/stdout) is written in place. Without an index the envelope carries no \
findings (said on stderr); a damaged or incomplete index is status 3; a malformed journal line, or \
one over 64 KiB (measured as it is read, never held), is status 4, naming its file and line, and \
nothing is written. A name in journals/ that is not a regular file (a FIFO, a device) is skipped \
with a warning on stderr, never opened.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval share --output weather.share.json --server weather\n  \
mcpeval share --output all.share.json --include-notes\n  \
mcpeval findings --from weather.share.json --format md    # on the receiving side\n  \
mcpeval share --output - --server weather | ssh maintainer mcpeval findings --from -"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The envelope file to write, or - for standard output
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,

    /// Only this server (repeatable)
    #[arg(long, value_name = "NAME")]
    pub server: Vec<String>,

    /// Include the annotation notes on shared calls (printed on stderr first)
    #[arg(long)]
    pub include_notes: bool,
}
