//! Command-line flags of `mcpeval-serve`.

use clap::Parser;
use shared::cli::HomeArg;

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
generate_manifest  runs `mcpeval-generate` and returns the manifest it wrote\n  \
verify_finding     runs `mcpeval-verify` against a server command; changes lifecycle state\n  \
annotate_call      runs `mcpeval-annotate`; stores a note in lifecycle.db\n  \
readiness          runs `mcpeval-readiness --format json` (read-only)\n\n\
The last four run the suite's own commands, found beside this executable (else on PATH), \
with --home set to this store, and relay their exit status, stdout and stderr, so each rule \
has one implementation. A failed command, like a refused input, is an isError result whose \
text is exactly what the command printed on stderr. Before the first `mcpeval index`, \
list_findings returns no findings with a note; with a damaged or incomplete index it returns \
the error `mcpeval findings` prints. Nothing unsanitized is ever returned: findings hold \
identifiers, aggregates and shapes only.\n\n\
The server ends when its stdin closes.",
    after_help = shared::cli::footer(
        "Examples:\n  \
mcpeval serve\n  \
mcpeval serve --home /srv/mcpeval-store\n\n\
An MCP client configuration (JSON) that starts it:\n  \
{\"mcpServers\": {\"mcpeval\": {\"command\": \"mcpeval\", \"args\": [\"serve\"]}}}"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub home: HomeArg,
}
