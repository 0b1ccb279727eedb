//! Command-line flags of `mcpeval-salt`.

use std::path::PathBuf;

use clap::{ArgGroup, Parser};
use cli::HomeArg;

/// Export the store's salt to a file, or import one from a file.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-salt",
    version,
    about = "Export the store's secret salt, or import a team's salt into a new store",
    long_about = "Export the store's secret salt, or import a team's salt into a new store.\n\n\
Every id a store makes (session tokens, template ids, finding ids) and the MAC of every probe \
result are keyed by its salt: 32 random bytes in .salt, made on first need. Two stores with \
different salts give the same error different template ids and the same defect different \
finding ids. For the machines of a team to agree, give them one salt: export it once, then \
import it on each other machine before that store's first capture.\n\n\
--export FILE writes the salt as one line, \"mcpeval.salt/1 \" and 64 hex digits, into FILE, \
made anew with mode 0600 (or - for standard output), making the salt (and the store) first when there \
is none yet.\n\n\
--import FILE (or - for standard input) checks the whole file, then installs its salt into a \
store that has none and no journals yet. The same salt again changes nothing. A store that \
already has another salt, or has journals whose ids were made with a salt that is gone, is \
refused (status 6) and left unchanged: its ids cannot be made again.\n\n\
The file is a secret: whoever holds it can tell which ids come from which values and sign \
probe results this store accepts. Move it by a private channel and delete it afterwards. The \
salt is never printed on stderr.",
    group(ArgGroup::new("mode").args(["export", "import"]).required(true)),
    after_help = cli::footer(
        "Examples:\n  \
mcpeval salt --export team.salt            # on the first machine\n  \
mcpeval salt --import team.salt            # on each other machine, before capturing\n  \
ssh first mcpeval salt --export - | mcpeval salt --import -"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub home: HomeArg,

    /// Write the store's salt to FILE (mode 0600; - for standard output), making it if missing
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,

    /// Install the salt in FILE (- for standard input) into a store that has none
    #[arg(long, value_name = "FILE")]
    pub import: Option<PathBuf>,
}
