//! Command-line flags of `mcpeval-generate`, checked into a [`Config`].

use std::path::PathBuf;

use clap::Parser;
use cli::StoreArgs;
use shared::Error;
use shared::Result;
use shared::file_arg::{Input, Output};
use shared::home::Home;
use shared::id::FindingId;

/// Write a one-case manifest that probes a finding.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-generate",
    version,
    about = "Write a one-case manifest that probes a finding, with placeholders to fill",
    long_about = "Write a one-case manifest that probes a finding, with placeholders to fill.\n\n\
The case id is the finding id. The probe follows the finding's defect class: error-honesty \
findings get an error-honesty probe, transient ones a degradation probe, every other class an \
instruction-fidelity probe expecting outcome ok; false-success findings need --expect. A \
contract-violation finding's case needs no oracle to fill: every probe checks the tool's \
successful results against its declared outputSchema, so outcome ok is the whole expectation, \
and its closure must be witnessed (a red run of the case on the unfixed server first). --expect \
FILE (one expect object, at most 64 KiB, unknown properties rejected; - reads standard input) selects instruction-fidelity \
for any class and is copied into the case. A false-success finding is refused without an expect \
that asserts on the result or expects an error: checking outcome ok alone would miss the defect, \
and captured metadata holds no result payload to invent that oracle from.\n\n\
The call uses the finding's tool and its most frequent argument shape, with every scalar replaced \
by a placeholder \"<fill:TYPE>\" (an array keeps one element). Keys that capture folded into one \
\"*\" member (keys that may be data, such as e-mail addresses or tokens) cannot be recovered: that \
member becomes \"*\": \"<fill:entries of TYPE>\", to be replaced by the real members, each value of \
TYPE. Each placeholder is listed on stderr by JSON Pointer; mcpeval verify and mcpeval probe refuse the case until all are filled. Repeated \
probes get attempts = ceil(ln 0.05 / ln(1 - p)) for the finding's failure rate p, at least 3, at \
most 100 (degradation) or 20 (error-honesty); timeout_ms is 10000.\n\n\
Generation reads the store only: it never calls the server and never journals anything. \
--confirm-read-only is required: verifying the case calls the tool, so confirm that calling it with \
the arguments you fill in changes nothing you care about.\n\n\
The manifest is validated before the output is opened, written to a temporary file beside it and \
renamed into place. An existing file is replaced only with --force (without it: status 2), and \
invalid input never replaces it, even with --force. --output - writes the manifest to standard \
output; an output that exists and is not a regular file (a FIFO, a device, a symbolic link such as \
/dev/stdout) is written in place, with or without --force, and never replaced.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval generate --finding finding-0123456789abcdef --confirm-read-only --output m.json\n  \
mcpeval generate --finding finding-0123456789abcdef --confirm-read-only \\\n      \
--expect expect.json --output m.json --force\n  \
jq '.cases[0].arguments.job = \"job_1\"' m.json > filled.json\n  \
mcpeval generate --finding finding-0123456789abcdef --confirm-read-only --output - \\\n      \
| jq '.cases[0].arguments.job = \"job_1\"' \\\n      \
| mcpeval probe --manifest - --case finding-0123456789abcdef -- my-server\n\n\
An expect file: {\"outcome\": \"ok\", \"equals_paths\": {\"/structuredContent/status\": \"ready\"}}"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The finding to probe
    #[arg(long, value_name = "ID")]
    pub finding: String,

    /// Confirm that calling the finding's tool with the filled-in arguments is safe to repeat
    #[arg(long)]
    pub confirm_read_only: bool,

    /// An expect object (at most 64 KiB) for an instruction-fidelity case, or - for standard input
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,

    /// The manifest file to write, or - for standard output
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,

    /// Replace the output file if it exists
    #[arg(long)]
    pub force: bool,
}

/// A generation run, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub finding: FindingId,
    pub expect: Option<Input>,
    pub output: Output,
    pub force: bool,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        if !self.confirm_read_only {
            return Err(Error::usage(
                "refusing to generate without --confirm-read-only: verifying the case calls the \
                 finding's tool on your server; nothing was written",
            )
            .with_hint(
                "confirm that calling the tool with the arguments you fill in is safe to repeat, \
                 and pass --confirm-read-only",
            ));
        }
        let finding: FindingId = shared::id::parse_flag("--finding", &self.finding)?;
        let output = Output::new(self.output);
        if output.path().is_some_and(|p| p.file_name().is_none()) {
            return Err(Error::usage(format!(
                "invalid --output {output}: it names no file"
            )));
        }
        Ok(Config {
            home: self.store.resolve()?,
            finding,
            expect: self.expect.map(Input::new),
            output,
            force: self.force,
        })
    }
}
