//! Command-line flags of `mcpeval-probe`, checked into a [`Config`].

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use cli::StoreArgs;
use cli::probe_args::ServerArgs;
use shared::Error;
use shared::Result;
use shared::file_arg::Input;
use shared::home::Home;
use shared::id::FindingId;
use store::endpoint::Endpoint;

/// Run one manifest case against an MCP server and print the signed result.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-probe",
    version,
    about = "Run one manifest case against an MCP server (stdio or Streamable HTTP) and print the signed result",
    long_about = "Run one manifest case against an MCP server (stdio or Streamable HTTP) and print the signed result.\n\n\
mcpeval-probe starts the server command given after --, or reaches the Streamable HTTP endpoint \
given with --url, completes a handshake, makes the case's tool calls and judges them. It changes \
no lifecycle state: pipe the result into `mcpeval verify --record -` to earn credit. Every \
tools/call is journaled with origin probe (and transport stdio or http).\n\n\
Handshake: server/discover (2026-07-28) first; on any other answer (an error of any code, another \
version, garbage, an exit, or silence) the server is started afresh for the legacy initialize \
(2025-11-25), since a legacy server is in an undefined state after an unknown request. Each \
handshake request waits --handshake-timeout (default 10000 ms, server start-up included), so a \
server that ignores server/discover costs that long once per run. \
Server requests (ping, roots/list) are answered. After the handshake and before the case's first call the server's tools are listed (tools/list, following nextCursor for at most 64 pages, each page waiting --handshake-timeout), and each of the case's tools keeps its declared outputSchema, compiled as capture compiles it (a schema too costly or invalid to compile is not checked; nothing is fetched). Every successful result (no isError) of a tool with a checked schema is checked as the reference SDK clients check it, structuredContent required: a violation makes the run red (output-schema-violation) whatever the case expects, and the result carries where and which keyword (contract). A server that refuses tools/list is probed all the same, its results unchecked; for a contract-violation finding, though, a run in which the finding's tool declares no outputSchema this probe can check (none, one too costly or invalid, or the tool is not listed) is red before any call (output-schema-missing): removing the promise is not keeping it. The server gets your environment without the \
suite's own variables (MCPEVAL and MCPEVAL_*: the store, the team database's URL, an endpoint \
verify passed on) and without libpq's (PG*: PGPASSWORD, PGPASSFILE, ...), so the code under \
test never learns the team database's password; a server that needs one of those gets it from \
a wrapper script of its own. The server's stderr is not shown unless \
--server-stderr is given, except its last 20 lines when the handshake fails; at the end its stdin is closed, then SIGTERM and SIGKILL follow, 2 s apart.\n\n\
Streamable HTTP (--url URL, with --header \"Name: value\" for each extra request header, such as \
Authorization): every message is a POST; an answer may be one JSON body or an event stream that \
carries notifications and server requests (answered with a POST) before the response. \
server/discover goes first with MCP-Protocol-Version and Mcp-Method headers and the version in \
_meta; if the endpoint speaks 2026-07-28, every request carries them (and Mcp-Name for tools/call) \
and a call past its timeout is cancelled by closing its response stream. On any other answer a \
fresh client falls back to initialize: the Mcp-Session-Id it issues and the negotiated \
MCP-Protocol-Version go with every later request, an expired call is cancelled with \
notifications/cancelled, and the session ends with DELETE. An endpoint that cannot be reached at \
all gets no fallback. An event stream that ends or breaks off before its response, having named \
an event id, is resumed with a GET carrying Last-Event-ID after the wait its retry field set (1 s \
when it set none); five resumed streams in a row without a message end the case (stream-ended). \
Credentials in the URL are refused; header values, the URL's path and query \
are never printed, journaled or stored: messages show the origin (scheme://host:port) and header \
names only. A command line is readable by every user of the machine, so keep secret headers in \
a file: --header-file FILE reads one \"Name: value\" a line (blank lines and lines starting \
with # are ignored), and refuses (status 4) a file that is not a regular file or that its \
group or others may read or write (chmod 600 FILE). mcpeval verify hands the endpoint (URL and \
every header) to mcpeval-probe in the environment variable MCPEVAL_PROBE_ENDPOINT, never as \
arguments; the probe takes it out of its environment as it starts. https is checked against the system's trusted roots (SSL_CERT_FILE and SSL_CERT_DIR \
name others).\n\n\
Probes. instruction-fidelity: one call, judged against the case's expect (default outcome ok). \
degradation: N calls, green when none fails (an error or a timeout). error-honesty: N calls; every \
error must report a boolean retryable, a retryable error must be followed by a success within the \
attempts, and a non-retryable error must repeat on the next attempt, the second ending the run \
green; an error on the last attempt whose rule needs a next attempt gets one follow-up attempt. \
workflow: the steps in order, each against its own expect, stopping at the first red step. N is \
the case's attempts, else ceil(ln 0.05 / ln(1 - p)) for the finding's failure rate p in index.db, \
at least 3, capped at 100 (degradation) or 20 (error-honesty); the cap when p is unknown. A call \
without an answer within timeout_ms is cancelled (notifications/cancelled) and is red (timeout).\n\n\
Result: one JSON object with schema (mcpeval.probe/1), run_id, finding, case, probe, tools (the \
tools the case calls, in step order, each once), server (the name the server gave itself in its \
handshake; left out when it gave none), checked (the case's tools whose outputSchema the run \
checked; left out when it ended before listing them), binding, result (green, red or \
transport-error), reason, detail, contract (with output-schema-violation only: at, a JSON Pointer \
of names the schema declares, and keyword, the schema keyword that failed; never a value), \
attempts, started_at, finished_at and mac, an HMAC-SHA256 keyed by the store's salt over \
the canonical JSON (sorted keys, no whitespace) of the other fields. tools and server are new in \
this release: results of earlier releases lack them and still parse, but `mcpeval verify --record` \
refuses them (status 4), since they cannot show which tool their case called. Names are cut to \
1024 bytes, and a control character in one is printed as a \\u escape. It judges the server and never echoes it: detail holds manifest pointers, attempt \
numbers, error codes and a violation's place only. Red reasons: expected-ok-got-error, \
expected-error-got-ok, error-code, missing-path, not-equal, timeout, attempt-failed, \
retryable-unreported, retryable-not-recovered, non-retryable-not-repeated, \
output-schema-violation, output-schema-missing. Transport reasons (no evidence either way): \
server-start, handshake, server-exited, non-json-line, id-mismatch, invalid-message, \
malformed-result (a result that is not an object, or a non-boolean isError); over HTTP also \
unreachable, http-status (an error status, or 202 to a request), non-json-body and stream-ended \
(an answer that ended before its response).\n\n\
Binding: a salted fingerprint of the case definition (canonical, defaults filled in) and manifest \
version, the timeout, the sandbox declaration, the command line, this executable, and the bytes of \
the server executable (found along PATH, symlinks followed; a #! script and the interpreter it \
names, env's program looked up along PATH) and of every argument naming a regular file. Those \
files are hashed before launch and again after the run; if one changed, no result is printed \
(status 6), so pass files the server writes through a --flag=path form or the environment. Raw \
arguments, paths and sandbox prose are never printed. Over HTTP the target is the endpoint \
configuration: the URL as given, and each header's name (case-insensitive) with a salted \
fingerprint of its value, in any order; the software and data behind the endpoint are not bound, \
so use an immutable deployment when they matter.\n\n\
Manifest (mcp-eval.manifest.json, at most 1 MiB; --manifest - reads it from standard input): unknown \
properties are rejected at every level; \
errors name the file, the JSON Pointer of the value and the rule. Case ids and successful string \
equality values must be identifiers (1 to 128 characters from A-Z a-z 0-9 _ . : -); equality \
values must be scalars; numbers compare by value. Result paths are JSON Pointers starting \
/structuredContent or /content (~0 for ~, ~1 for /); a path holding null is present, and an \
equality with null needs it present and null.\n\n\
Refusals, before any server starts: a case that does not exist or names another finding than \
--finding (status 2); one still holding \"<fill:TYPE>\" placeholders, listed by JSON Pointer, or \
one lacking the oracle a false-success finding needs, a result assertion or an expected error \
(status 4). The finding counts as false-success when index.db classes it so or --require-oracle \
is given.\n\n\
A run earns credit only when it could fail on the unfixed server. Where this store knows the \
finding (lifecycle.db keeps its server, tool and evidence for every finding promote tracked; else \
index.db's findings), the case is held to the proof rules before any server starts (status 4): \
it calls the finding's tool (the tool of a single-call probe, a step of a workflow); an expected \
error names an error_code the finding's failures never carried; an error-honesty probe is for an \
error-honesty finding only; a transient finding is probed by degradation; attempts are never \
below the count the failure rate sizes; a false-success finding has an expected error, or a \
result assertion that not every result satisfies (not /content, nor anything under it, nor a \
bare /structuredContent), on its tool's step or a later one. Right after the handshake, before \
any call, a server whose name is not the finding's server prints no result (status 6; the \
message shows both names, escaped). A server that gives no name, or an empty one, is named as \
capture names it: its executable's file name (over HTTP the endpoint's host:port). No flag \
overrides a server's name. Where the store does not know the finding, the case runs: its signed \
result carries each step's expectation, the attempts, the server's name and fingerprints of the \
case and the target, and `mcpeval verify --record` applies every rule.\n\n\
--all runs every case of the manifest in file order (with --finding, only that finding's cases), \
each against a freshly started server (with --url, a fresh client and session), and changes no \
lifecycle state. Every case is checked \
first: one that would be refused stops the run before any server starts; a server that names \
itself otherwise than a case's finding stops the run at that case (status 6). stdout carries JSON \
Lines, one result per case (--format json), one line per case (text), or one JUnit XML document \
(--format junit) that CI test reporters read: a <testsuite> named after the manifest file, one \
<testcase> per case with classname the finding id and name the case id; a red case has a \
<failure> (type and message the reason; its text the attempts, detail and hint), a transport \
error an <error>; each case's signed result is its <system-out>, ready for `mcpeval verify \
--record`. Status with --all: 1 when any case was red; else 5 when any case met a transport \
error; else 0. Red wins because it is evidence about the server that CI must fail on, while a \
transport error is a broken run.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval probe --manifest mcp-eval.manifest.json --case literal-status -- my-server --flag\n  \
mcpeval probe --manifest m.json --case flaky-search --format text -- python3 server.py\n  \
mcpeval probe --manifest m.json --case literal-status -- my-server | mcpeval verify --record -\n  \
mcpeval probe --manifest m.json --all --format junit -- my-server > mcpeval-junit.xml\n  \
mcpeval probe --manifest m.json --case literal-status --url http://127.0.0.1:3001/mcp \\\n      \
--header-file mcp.headers\n\n\
Manifests are limited to 1 MiB. Timeouts are per call (timeout_ms, default 10000);\n\
an expired call is cancelled (notifications/cancelled; over 2026-07-28 HTTP by closing\n\
its response stream) and is red with reason timeout."
    ),
    // verify passes an endpoint in the environment, never as arguments.
    mut_arg("command", |a| a.required_unless_present_any(["url", "endpoint_from_env"])),
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The manifest file (mcp-eval.manifest.json), or - for standard input
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,

    /// The id of the case to run
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub case: Option<String>,

    /// Run every case of the manifest, one after another, each against a fresh server
    #[arg(long)]
    pub all: bool,

    /// Refuse unless the case names this finding
    #[arg(long, value_name = "ID")]
    pub finding: Option<String>,

    /// Output: one JSON object, or one line for people
    #[arg(long, value_enum, default_value_t = Format::Json, value_name = "FORMAT")]
    pub format: Format,

    /// Require the false-success oracle even when the index does not class the finding so
    #[arg(long)]
    pub require_oracle: bool,

    #[command(flatten)]
    pub server: ServerArgs,

    /// Leave the hint of a red or transport-error result off stderr: for a
    /// caller (mcpeval-verify) that prints it itself, from the result's reason
    #[arg(long, hide = true)]
    pub no_hint: bool,

    /// Reach the endpoint that MCPEVAL_PROBE_ENDPOINT holds (URL and
    /// headers): how mcpeval-verify passes one without putting its
    /// secrets on a command line
    #[arg(long, hide = true, conflicts_with_all = ["url", "command"])]
    pub endpoint_from_env: bool,
}

/// The server a run reaches.
#[derive(Debug)]
pub enum Server {
    /// Start this command (argv) and speak over its stdin/stdout.
    Command(Vec<OsString>),
    /// POST to this endpoint.
    Endpoint(Endpoint),
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object (mcpeval.probe/1)
    Json,
    /// One line: finding, case, probe, result, attempts, binding, run, reason, detail
    Text,
    /// JUnit XML for CI test reporters (with --all only)
    Junit,
}

/// What a probe run needs, validated.
#[derive(Debug)]
pub struct Config {
    /// The store. With a team database, what the cases' findings are is
    /// read from the team view, brought up to date for them once the
    /// manifest says which they are (see `run::view`).
    pub home: Home,
    pub manifest: Input,
    pub case: Option<String>,
    pub all: bool,
    pub finding: Option<FindingId>,
    pub format: Format,
    pub require_oracle: bool,
    pub server_stderr: bool,
    /// Whether stderr ends a red or transport-error result with its hint.
    pub hint: bool,
    pub handshake_timeout: std::time::Duration,
    pub server: Server,
}

impl Args {
    /// The checked configuration; `passed` is what [`shared::ENDPOINT_ENV`]
    /// held when the program started (it is taken out of the environment
    /// then, before any thread or server starts).
    pub fn into_config(self, passed: Option<String>) -> Result<Config> {
        let finding = match &self.finding {
            Some(id) => Some(shared::id::parse_flag("--finding", id)?),
            None => None,
        };
        if self.format == Format::Junit && !self.all {
            return Err(Error::usage(
                "--format junit reports a whole manifest: use it with --all",
            ));
        }
        let s = self.server;
        let server = match s.endpoint()? {
            Some(endpoint) => Server::Endpoint(endpoint),
            None if self.endpoint_from_env => {
                let text = passed.ok_or_else(|| {
                    Error::usage(format!(
                        "{} is not set (or not text), so there is no endpoint to reach; use --url",
                        shared::ENDPOINT_ENV
                    ))
                })?;
                Server::Endpoint(Endpoint::from_env(&text)?)
            }
            None if s.command.first().is_none_or(|p| p.is_empty()) => {
                return Err(Error::usage("missing the server command after --"));
            }
            None => Server::Command(s.command),
        };
        Ok(Config {
            home: self.store.resolve()?,
            manifest: Input::new(self.manifest),
            case: self.case,
            all: self.all,
            finding,
            format: self.format,
            require_oracle: self.require_oracle,
            server_stderr: s.server_stderr,
            hint: !self.no_hint,
            handshake_timeout: std::time::Duration::from_millis(s.handshake_timeout),
            server,
        })
    }
}
