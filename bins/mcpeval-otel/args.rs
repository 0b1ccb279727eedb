//! Command-line flags of `mcpeval-otel`, checked into a [`Config`].

use std::net::SocketAddr;
use std::time::Duration;

use clap::{ArgGroup, Parser};
use cli::{Format, HomeArg};
use shared::Error;
use shared::Result;
use shared::file_arg::Input;
use shared::home::Home;

/// Journal the MCP tool calls in OpenTelemetry traces.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-otel",
    version,
    about = "Journal the MCP tool calls in OpenTelemetry traces (an OTLP/HTTP receiver, or OTLP JSON files)",
    long_about = "Journal the MCP tool calls in OpenTelemetry traces, so the findings of \
traffic a team already traces need no proxy in front of each server.\n\n\
With --listen ADDR, mcpeval-otel is an OTLP/HTTP receiver: point an \
OpenTelemetry SDK's exporter (OTEL_EXPORTER_OTLP_ENDPOINT=http://ADDR, \
OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf or http/json) or a Collector's \
otlphttp exporter at it. It answers POST /v1/traces in protobuf \
(application/x-protobuf) or JSON (application/json), gzip-compressed or not, as \
the OTLP specification says: 200 with a partial success naming the tools/call \
spans it could not read; 400 for a malformed request, 413 for one too large, \
415 for another content type or encoding (none of them retryable: nothing of \
the request was kept); 503 when the journal cannot be written (retryable). On a \
loopback address (the default is 127.0.0.1:4318) a request whose Host is not \
localhost, 127.0.0.0/8 or [::1], or whose Origin is a web page on another host, \
gets 403. It runs until SIGINT or SIGTERM, then journals what it still holds \
and prints its summary.\n\n\
With --import FILE (or - for standard input), it reads OTLP JSON as a \
Collector's file exporter writes it: one ExportTraceServiceRequest a line, the \
file gzip-compressed or not. The whole file is checked before anything is \
journaled: a malformed line is refused with its line number and nothing is \
changed. Import a file once: a second import journals its calls again.\n\n\
One record (origin otel) is journaled per tools/call span (mcp.method.name), \
and one per request when both its client and its server span come (they \
share the trace, jsonrpc.request.id and tool): the server's span, lent the \
arguments or session only the client's reported. A client span waits up to \
--pair-wait for its server span. The session is mcp.session.id, else the \
trace, so an agent session traced under one parent span is one session; its \
calls are numbered in the order they started. The tool is gen_ai.tool.name, \
else the span name's \"tools/call NAME\". The server is --server, else for a \
server span the resource's service.name, for a client span server.address \
and server.port, else service.name. The outcome is an error when the span has \
error.type or status ERROR: error.type tool_error is a tool error (isError), \
anything else a JSON-RPC error with the code of rpc.response.status_code; the \
template is the status message's, made by capture's sanitizer. Argument shapes \
come from gen_ai.tool.call.arguments when present, else the shape is \"object\".\n\n\
What a span cannot tell: a tool result with isError true that the span does \
not mark with error.type tool_error (the Python SDK's client span never does; \
its server span does) is journaled as ok; a tool error's text and code \
(a server span marks tool_error with no message), whether the tool was \
advertised, whether the result kept its outputSchema, and retryable are not \
in any attribute the conventions define; the arguments' shape only with the \
opt-in gen_ai.tool.call.arguments; the transport only with network.transport \
(pipe: stdio; tcp, quic: Streamable HTTP; unmarked: stdio).\n\n\
Nothing raw is kept: no attribute, event, link, resource field, status \
message, exception or stack trace reaches the store, only cleaned names \
(tool, server), salted ids and argument shapes, as capture keeps. Bounded \
whatever is sent: a body over 4 MiB (8 MiB once inflated), over 16384 spans \
or 262144 attributes and values, or JSON that would take more than 64 MiB \
parsed is refused whole; two requests are decoded at once and 64 connections \
served; at most 65536 client spans are held for pairing.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval otel --listen 127.0.0.1:4318\n  \
OTEL_SERVICE_NAME=weather OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 \\\n    \
OTEL_TRACES_EXPORTER=otlp opentelemetry-instrument python weather_server.py\n  \
mcpeval otel --import traces.json --format json\n  \
zcat traces.json.gz | mcpeval otel --import - --server weather\n\n\
Then mcpeval index && mcpeval promote && mcpeval findings, as after capture.\n\
Records go to <MCPEVAL_HOME>/journals/YYYYMMDDTHHMMSS.fffZ-XXXXXXXX.jsonl."
    ),
    group(ArgGroup::new("mode").required(true).args(["listen", "import"]))
)]
pub struct Args {
    #[command(flatten)]
    pub home: HomeArg,

    /// Serve OTLP/HTTP on ADDR [default: 127.0.0.1:4318] (HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks a free one)
    #[arg(long, value_name = "ADDR", conflicts_with = "import", num_args = 0..=1, default_missing_value = "127.0.0.1:4318")]
    pub listen: Option<String>,

    /// Read OTLP JSON lines from FILE (- for standard input; gzip is recognized)
    #[arg(long, value_name = "FILE")]
    pub import: Option<String>,

    /// Server name for every record [default: from each span, see above]
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,

    /// Seconds a client span waits for its server span before it is journaled alone
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 10,
        requires = "listen"
    )]
    pub pair_wait: u64,

    /// Print the summary for people (stderr) or as one JSON object (stdout)
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// What to do, checked.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    pub server: Option<String>,
    pub format: Format,
    pub mode: Mode,
}

/// Receive or import.
#[derive(Debug)]
pub enum Mode {
    Listen(Listen),
    Import(Input),
}

/// The receiver's address and how long a client span waits.
#[derive(Debug)]
pub struct Listen {
    pub addr: SocketAddr,
    pub pair_wait: Duration,
}

impl Args {
    /// Checks the flags; no I/O beyond resolving the store's path and a
    /// listen address's name.
    pub fn into_config(self) -> Result<Config> {
        let home = self.home.resolve()?;
        if let Some(server) = &self.server
            && server.trim().is_empty()
        {
            return Err(Error::usage("--server is empty; give the server's name"));
        }
        let mode = match (self.listen, self.import) {
            (Some(listen), None) => Mode::Listen(Listen {
                addr: cli::listen_addr(&listen, 4318)?,
                pair_wait: Duration::from_secs(self.pair_wait),
            }),
            (None, Some(file)) => Mode::Import(Input::new(file)),
            _ => unreachable!("clap requires exactly one of --listen and --import"),
        };
        Ok(Config {
            home,
            server: self.server,
            format: self.format,
            mode,
        })
    }
}
