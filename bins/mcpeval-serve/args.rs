//! Command-line flags of `mcpeval-serve`.

use std::path::PathBuf;

use clap::Parser;
use cli::StoreArgs;
use shared::Error;
use shared::Result;
use shared::home::Home;

use crate::allowlist::{self, AllowedCommand, Allowlist};
use crate::workspace::Workspace;

/// Serve findings and verification as an MCP server on stdio.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-serve",
    version,
    about = "Serve findings and verification as an MCP server on stdio",
    long_about = "Serve findings and verification as an MCP server on stdio, so an agent \
fixing a server can read what fails, write a manifest, prove its fix and annotate calls.\n\n\
Both protocol eras are answered: legacy `initialize`, negotiating 2025-11-25, 2025-06-18 or \
2025-03-26 (a client asking for another gets 2025-11-25), and modern `server/discover` \
(2026-07-28, protocol data in each request's _meta; discover lists every supported version \
and names the server in _meta). A modern request naming an unsupported version is answered \
with error -32022 listing the supported ones.\n\n\
Tools (each with an inputSchema and an outputSchema; results carry structuredContent and the \
same facts as text):\n  \
list_findings      the findings, filtered by state and server (read-only)\n  \
get_finding        one finding by id (read-only)\n  \
generate_manifest  runs `mcpeval-generate`; returns the manifest, writes it in the workspace\n  \
verify_finding     runs `mcpeval-verify` with an allowed server command; changes state\n  \
annotate_call      runs `mcpeval-annotate`; stores a note in lifecycle.db\n  \
readiness          runs `mcpeval-readiness --format json` (read-only)\n\n\
The last four run the suite's own commands, found beside this executable (else on PATH), \
with --home set to this store and the workspace as their directory, and relay their exit \
status, stdout and stderr, so each rule has one implementation. A failed command, like a \
refused input, is an isError result whose text is exactly what the command printed on \
stderr. Before the first `mcpeval index`, list_findings returns no findings with a note; with \
a damaged or incomplete index, or findings out of date (the index changed after the last \
promote), it returns the error `mcpeval findings` prints, never an empty list. Nothing \
unsanitized is ever returned: findings hold identifiers, aggregates and shapes only.\n\n\
Trust model: serve acts with your rights for an MCP client (an agent), which gets no more \
than these flags give it.\n\n\
Writing: generate_manifest writes only inside the workspace (--workspace, default the current \
directory). Its output must be a relative path with no `..` component and no symbolic link on \
the way or at the end, outside the store, and it never replaces a file that is not an mcpeval \
manifest, even with force. The path is walked from the workspace held open since startup, \
following no link, so a directory swapped for a link meanwhile is not followed either.\n\n\
Running: verify_finding starts only a server command you allowed with --allow-command \
(repeatable). The value is split into words as a shell would, without expanding anything: \
blanks separate words, '...' and \"...\" quote, a backslash escapes the next character. A \
command runs when an allowed one is an exact prefix of it, word for word: --allow-command \
'python3 server.py' allows `python3 server.py` and `python3 server.py --debug`, never \
`python3 -c ...` nor `/usr/bin/python3 server.py`, so allow the longest prefix you can. Any \
other command gets an isError result naming --allow-command, and nothing runs. \
--allow-any-command lets every client run any command with your rights; serve says so on \
stderr at startup. verify_finding takes a command only; a URL form would need an allowlist of \
its own (an --allow-url matched on the exact origin and path), since reaching a URL acts with \
your network position.\n\n\
Annotations: readOnlyHint is set only on list_findings, get_finding and readiness; \
destructiveHint on generate_manifest, verify_finding and annotate_call; openWorldHint on \
verify_finding, which starts a server. Reading is not fenced: the manifest verify_finding \
names may be any file you can read, and what comes back is verify's verdict or its error.\n\n\
Requests are JSON-RPC lines of at most 4 MiB (a generate_manifest call with the largest \
expect a manifest may hold fits well within it); a longer line is read through and dropped, \
never held, and answered with an Invalid Request error (id null), and serve goes on with the \
next line. The server ends when its stdin closes.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval serve --allow-command 'python3 server.py'\n  \
mcpeval serve --workspace ~/src/weather --allow-command 'npx -y weather-mcp'\n  \
mcpeval serve --home /srv/mcpeval-store\n\n\
An MCP client configuration (JSON) that starts it:\n  \
{\"mcpServers\": {\"mcpeval\": {\"command\": \"mcpeval\",\n    \"args\": [\"serve\", \"--allow-command\", \"python3 server.py\"]}}}"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The directory generate_manifest writes in, and the directory of the commands serve runs [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Let verify_finding run a server command starting with these words (repeatable; split as a shell would, nothing expanded)
    #[arg(long, value_name = "COMMAND", value_parser = allowlist::parse)]
    pub allow_command: Vec<AllowedCommand>,

    /// Let verify_finding run any command a client names, with your rights (warns on stderr)
    #[arg(long, conflicts_with = "allow_command")]
    pub allow_any_command: bool,
}

/// The checked configuration the server runs with.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub workspace: Workspace,
    pub commands: Allowlist,
}

impl Args {
    /// Resolves the store and opens the workspace.
    pub fn into_config(self) -> Result<Config> {
        // Absolute, as the commands serve runs start in the workspace.
        let home = self.store.resolve()?;
        let home = Home::at(
            &std::path::absolute(home.root())
                .map_err(|e| Error::io("cannot find the current directory", e))?,
        )
        .with_database_flag(home.database_flag().map(str::to_owned));
        let dir = match self.workspace {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| Error::io("cannot find the current directory", e))?,
        };
        let workspace = Workspace::open(&dir, home.root().as_std_path())?;
        let commands = if self.allow_any_command {
            Allowlist::Any
        } else {
            Allowlist::Only(self.allow_command.into_iter().map(|c| c.0).collect())
        };
        Ok(Config {
            home,
            workspace,
            commands,
        })
    }
}
