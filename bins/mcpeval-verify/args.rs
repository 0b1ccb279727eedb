//! Command-line flags of `mcpeval-verify`, checked into a [`Config`].

use std::path::PathBuf;

use clap::Parser;
pub use cli::Format;
use cli::StoreArgs;
use cli::probe_args::ServerArgs;
use shared::Error;
use shared::Result;
use shared::file_arg::Input;
use shared::home::Home;
use shared::id::FindingId;
use store::endpoint::Endpoint;

/// Probe a claimed fix and credit the finding's lifecycle.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-verify",
    version,
    about = "Probe a claimed fix and move the finding towards closed: three green runs in a row close it",
    long_about = "Probe a claimed fix and move the finding towards closed: three green runs in a row close it.\n\n\
With --finding, --case, --manifest and a server command after -- (or --url URL, with --header \
\"Name: value\" or --header-file FILE for extra request headers, for a server that speaks \
Streamable HTTP), it runs the case by executing mcpeval-probe (found beside this executable, else \
on PATH) with the same arguments, then records the signed result exactly as --record does. The \
URL and header values reach mcpeval-probe in its environment (MCPEVAL_PROBE_ENDPOINT), never on \
its command line, which every user of the machine may read; keep secret headers off this \
command's own command line with --header-file (a regular file only its owner may read or \
write, else status 4). A server the probe starts gets your environment without the MCPEVAL* \
and PG* variables (see mcpeval-probe --help). Header values and the URL's \
path and query are never printed or stored; lifecycle.db keeps only the binding's fingerprint. Every refusal of mcpeval-probe (no such case, a case of \
another finding, placeholders left to fill, a case that breaks a proof rule: see mcpeval-probe \
--help) happens before the server starts and records nothing; a server whose name is not the \
finding's server (a nameless one is named by its executable's file name, as capture names it) is \
refused right after its handshake (status 6) and records nothing. The finding must be known: \
promoted in the current catalog, or tracked in lifecycle.db (a finding that was promoted once \
stays verifiable when a later promote no longer lists it: lifecycle.db keeps its server, tool and \
evidence, and credit is still checked against them).\n\n\
Time order and witnessed closure: a green run that started before the finding's latest red run \
adds no credit (status 4). A streak that closes the finding is witnessed when the same case ran \
red on it against the same target (the same command line, or URL and headers) before the streak began, \
failing as the finding's calls did (an error for an error finding; a missing or different \
result, or an unexpected success, for a false success); \
`mcpeval findings` shows witnessed true or false. With \"require_witnessed\": true in \
config.json (or require_witnessed = true in the team database's mcpeval.meta) an unwitnessed \
streak stays verifying at 3/3, with a note on stderr. A contract-violation finding always needs \
a witnessed closure, whatever the setting: its case needs no oracle (the probe checks the tool's \
outputSchema on every successful result), so nothing in the case shows that its arguments reach \
the broken result, and only a red run that broke the schema (output-schema-violation) witnesses \
it. A green result for a contract-violation finding whose run did not check the tool's \
outputSchema (the server declared none, or one too costly or invalid to check) earns nothing \
(status 4): removing the promise is not keeping it.\n\n\
With --record FILE (or - for standard input) it records the results that mcpeval-probe printed \
earlier: JSON Lines, one result a line (blank lines ignored), as `mcpeval probe` and `mcpeval probe \
--all` print them, or one result spread over several lines. Every line is read and checked first: \
a line that is not a result is status 4, naming its line number, and nothing is recorded. Then each \
result is recorded in turn, by the rules below, with one output line each; a result that cannot be \
recorded is reported on stderr, naming its line, and the others are still recorded. With more than \
one result a summary line goes to stderr, and the status is that of the first refused or rejected \
result (6, 4), else 1 when a recorded run was red, else 5 when a result was a transport error, \
else 0. --manifest - hands standard input to mcpeval-probe, which reads the manifest from it. A \
result's mac must verify with this store's salt: an edited result, or one made by another store, \
is refused (status 6). It is held to every proof rule of the probe (status 4; a result of an earlier release lacks \
what they need and is refused), and the server it names must be the finding's server \
(status 6). A run is \
credited once: recording the same result again adds nothing and \
says so (status 0); a different result under a recorded run id is refused (status 6). A \
transport-error result records nothing (status 5).\n\n\
Lifecycle: a red run on an open or fix-claimed finding leaves it fix-claimed with no streak; a \
green run makes it verifying with streak 1; each further green run under the same credit binding \
counts up, and the third closes it; a green run under another binding (the case definition, its \
timeout or sandbox, the server command, the server's files, the URL or a header value, or \
mcpeval-probe itself changed) \
starts a fresh streak at 1. A red run on a verifying or closed finding reopens it (state=open) and \
counts a reopening. A green run on a closed finding keeps it closed and leaves its streak as it \
is. The first recorded run attaches the probe, which lifts the finding's severity cap. Imported \
legacy evidence never counts towards a streak. Every run is kept in lifecycle.db with its binding \
and run id, and every change in the finding's history, in one transaction.\n\n\
Output: FINDING case=C result=green|red state=S streak=N/3 run=UUID; a red line ends with \
reason=R and is followed by an indented hint: line. A replayed result prints FINDING case=C \
run=UUID already recorded: no credit added (state=S streak=N/3). With --format json, one object \
with the same facts. mcpeval-probe's own diagnostics (notes, the detail of a red run) appear on \
stderr.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval verify --finding finding-0123456789abcdef --case literal-status \\\n      \
--manifest mcp-eval.manifest.json -- my-server --flag\n  \
mcpeval verify --finding finding-0123456789abcdef --case literal-status \\\n      \
--manifest mcp-eval.manifest.json --url http://127.0.0.1:3001/mcp \\\n      \
--header-file mcp.headers\n  \
mcpeval probe --manifest m.json --case literal-status -- my-server | mcpeval verify --record -\n  \
mcpeval probe --manifest m.json --all -- my-server | mcpeval verify --record -\n  \
mcpeval verify --record result.json --format json | jq .state\n\n\
Exit status 0 is a green run (or a replay), 1 a red run. A refused or failed run records\n\
nothing: 2 an unknown finding or case, 3 a finding whose server, tool or evidence the\n\
store does not know, 4 an invalid manifest or result file, a case that breaks a proof\n\
rule or a green run older than the latest red one, 5 a transport error, 6 a result that\n\
does not verify, a conflicting run id, a server that is not the finding's server, or\n\
(with --record) an unknown finding; 74 when mcpeval-probe cannot be found."
    ),
    // The probe's flags, declared once in `ServerArgs`, say here that they
    // are passed on, and make no sense with --record.
    mut_arg("handshake_timeout", |a| a
        .help("Passed to mcpeval-probe: how long each handshake request waits, start-up included")
        .conflicts_with("record")),
    mut_arg("server_stderr", |a| a
        .help("Passed to mcpeval-probe: let the server's stderr through (it may contain raw values)")
        .conflicts_with("record")),
    mut_arg("url", |a| a
        .help("Passed to mcpeval-probe: reach the server at this Streamable HTTP endpoint instead of starting a command")
        .conflicts_with("record")),
    mut_arg("headers", |a| a
        .help("Passed to mcpeval-probe: an extra request header for --url, as \"Name: value\" (repeatable); its value is never shown or stored")
        .conflicts_with("record")),
    mut_arg("header_files", |a| a
        .help("Passed to mcpeval-probe: extra request headers for --url from FILE, one \"Name: value\" a line (# comments and blank lines ignored; repeatable); refused unless only its owner may read it. Keeps secrets off the command line")
        .conflicts_with("record")),
    mut_arg("command", |a| a
        .required_unless_present_any(["record", "url"])
        .conflicts_with("record")),
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The finding the case proves
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "record",
        conflicts_with = "record"
    )]
    pub finding: Option<String>,

    /// The id of the case to run (its finding must be --finding)
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "record",
        conflicts_with = "record"
    )]
    pub case: Option<String>,

    /// The manifest file (mcp-eval.manifest.json), or - for standard input
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "record",
        conflicts_with = "record"
    )]
    pub manifest: Option<PathBuf>,

    /// Record the results printed by mcpeval-probe (JSON Lines), from FILE or - for standard input
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Output: one line (two when red) for people, or one JSON object
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,

    /// The server and how to reach it, as mcpeval-probe takes them
    #[command(flatten)]
    pub server: ServerArgs,
}

/// What to do, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub format: Format,
    pub mode: Mode,
}

/// Run a case, or record a result.
#[derive(Debug)]
pub enum Mode {
    /// Boxed: the endpoint makes it far larger than a file to record.
    Run(Box<RunConfig>),
    Record(Input),
}

/// A case to run through mcpeval-probe.
#[derive(Debug)]
pub struct RunConfig {
    pub finding: FindingId,
    pub case: String,
    pub manifest: Input,
    /// The server flags as given (checked), passed on to mcpeval-probe.
    pub probe: ServerArgs,
    /// The endpoint of `--url`, its headers read: handed to mcpeval-probe
    /// in its environment, never as arguments.
    pub endpoint: Option<Endpoint>,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        let home = self.store.resolve()?;
        let manifest = self.manifest.map(Input::new);
        let record = self.record.map(Input::new);
        Input::one_stdin(&[
            ("--manifest", manifest.as_ref()),
            ("--record", record.as_ref()),
        ])?;
        let mode = match record {
            Some(input) => Mode::Record(input),
            None => {
                let missing = |flag: &str| Error::usage(format!("missing {flag}"));
                let finding = self.finding.ok_or_else(|| missing("--finding"))?;
                let finding = shared::id::parse_flag("--finding", &finding)?;
                let probe = self.server;
                // Refused here, with this program's name, before the
                // finding is looked up or a probe starts; passed on
                // unchanged, so the probe binds exactly what was given.
                let endpoint = probe.endpoint()?;
                if endpoint.is_none() && probe.command.first().is_none_or(|p| p.is_empty()) {
                    return Err(Error::usage("missing the server command after --"));
                }
                Mode::Run(Box::new(RunConfig {
                    finding,
                    case: self.case.ok_or_else(|| missing("--case"))?,
                    manifest: manifest.ok_or_else(|| missing("--manifest"))?,
                    probe,
                    endpoint,
                }))
            }
        };
        Ok(Config {
            home,
            format: self.format,
            mode,
        })
    }
}
