//! Command-line flags of `mcpeval-capture`, checked into a [`Config`].
//!
//! Two modes share the binary: stdio (`CMD ARGS…`, after capture's own
//! options, with or without `--`) and Streamable HTTP (`--listen ADDR
//! --upstream URL`). clap keeps them exclusive; this module
//! turns either into a validated [`Mode`], so the work never re-checks flags.

use std::ffi::OsString;
use std::net::SocketAddr;

use clap::{ArgGroup, Parser};
use cli::HomeArg;
use http::HeaderName;
use shared::Error;
use shared::Result;
use shared::home::Home;

use crate::http::upstream::Upstream;

/// Relay an MCP server's traffic unchanged and journal every tool call.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-capture",
    version,
    about = "Relay an MCP server's traffic (stdio or Streamable HTTP) unchanged and journal every tool call",
    long_about = "Relay an MCP server's traffic unchanged and journal every tool call.\n\n\
Over stdio, put mcpeval-capture in front of the server command in your MCP \
client's configuration. Capture's own options come first; everything from the \
first argument that is not one of them is the server command, passed on \
untouched, its own options and any later -- included. A -- before the command \
is accepted and ends capture's options. The client talks to it exactly as to the server: every \
byte passes through unchanged and in order, the server's stderr goes to \
mcpeval-capture's stderr, and its exit status (or the signal that killed it) \
is mcpeval-capture's own.\n\n\
Over Streamable HTTP (--listen ADDR --upstream URL), mcpeval-capture is a \
reverse proxy: point the client at http://ADDR with the upstream's path (a \
request for / itself goes to the upstream URL). Requests of every method, their \
headers (less hop-by-hop ones; Host names the upstream), bodies and status \
codes pass through unchanged, and SSE streams are relayed event by event. On a \
loopback --listen address (127.0.0.0/8, [::1], or 127.0.0.0/8 mapped into IPv6 \
as [::ffff:127.0.0.1]), a request whose Host is not localhost, 127.0.0.0/8 or \
[::1] (any port), or whose Origin is a web page on another host, gets 403 with a \
JSON-RPC error and goes no further: a web page cannot reach the upstream \
through capture by DNS rebinding. The upstream is shown \
only as scheme://host:port: its user info, path and query never appear on \
stderr, in a 502 body or in the store. A \
session is one Mcp-Session-Id; when the server issues none, one client \
connection, or the value of the request header named by --session-header. A \
session ends on DELETE, when its connection closes (connection sessions), or \
when mcpeval-capture stops on SIGINT or SIGTERM, which ends every session and \
exits 0. When the upstream cannot be reached the client gets 502 with a \
JSON-RPC error and the call is not recorded at all. An https upstream's \
certificate is checked against the system's trusted roots (SSL_CERT_FILE or \
SSL_CERT_DIR name others).\n\n\
What capture holds is bounded whatever either peer sends, and every byte is \
still relayed. A message (a line, a request body, a JSON response body or an \
SSE event) longer than 4 MiB, or one that would take more than 64 MiB to \
parse, is relayed but neither observed nor recorded; when the observer falls \
more than 64 MiB behind, what it missed is relayed unobserved. A session \
tracks at most 65536 unanswered calls (32 MiB), the oldest recorded as \
unanswered beyond them, and keeps at most 1 MiB of declared schemas from its \
last tools/list (later tools are kept without theirs). Over HTTP, all \
connections together hold at most 64 MiB for observation (past it a message \
goes unobserved), at most 256 connections are served at once (another gets \
503 with a JSON-RPC error), and at most 4096 sessions, 64 MiB together, are \
tracked, the least recently active ended first as if it had ended. A warning \
at exit counts what was given up.\n\n\
Each tools/call is paired with its response and appended as one \
mcpeval.call/1 record to a journal under <MCPEVAL_HOME>/journals/. Records \
hold argument shapes, error codes and salted template ids: never an argument \
value, error text or header. A call still unanswered when its session ends is \
recorded with outcome unknown.",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval capture npx -y @modelcontextprotocol/server-everything\n  \
mcpeval capture --server weather python -m weather_server --port 0\n  \
mcpeval capture --home /srv/mcpeval -- ./my-server --home /var/lib/my-server\n  \
mcpeval capture --listen 127.0.0.1:8931 --upstream http://127.0.0.1:3001/mcp\n  \
mcpeval capture --listen 8931 --upstream https://mcp.example.com/mcp --session-header X-Agent-Session\n\n\
In a client configuration, replace \"command\": \"my-server\" with\n  \
\"command\": \"mcpeval\", \"args\": [\"capture\", \"--home\", \"/path/to/store\", \"my-server\", ...]\n\
or replace the server's URL http://HOST:PORT/mcp with http://127.0.0.1:8931/mcp.\n\
Give --home in the args: many clients start servers with a few variables\n\
only (HOME, PATH, USER, ...), so MCPEVAL_HOME or XDG_DATA_HOME set in your\n\
shell would not reach capture and the records would go to the default store.\n\n\
Records go to <MCPEVAL_HOME>/journals/YYYYMMDDTHHMMSS.fffZ-XXXXXXXX.jsonl, one\n\
file per capture, rotated at 64 MiB or when the UTC day changes."
    ),
    override_usage = "mcpeval-capture [OPTIONS] [--] <CMD> [ARGS]...\n       \
mcpeval-capture [OPTIONS] --listen <ADDR> --upstream <URL> [--session-header <NAME>]",
    group(ArgGroup::new("mode").required(true).args(["command", "listen"]))
)]
pub struct Args {
    #[command(flatten)]
    pub home: HomeArg,

    /// Server name for the records [default: serverInfo.name from the server, else the command's file name or the upstream's host:port]
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,

    /// Serve Streamable HTTP on ADDR (HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks a free one)
    #[arg(
        long,
        value_name = "ADDR",
        requires = "upstream",
        conflicts_with = "command"
    )]
    pub listen: Option<String>,

    /// The MCP server's Streamable HTTP endpoint (http or https), e.g. http://127.0.0.1:3001/mcp
    #[arg(long, value_name = "URL", requires = "listen")]
    pub upstream: Option<String>,

    /// Key sessions by this request header when the server issues no Mcp-Session-Id
    #[arg(long, value_name = "NAME", requires = "listen")]
    pub session_header: Option<String>,

    /// The server command and its arguments, passed on untouched (a `--` before it is optional)
    #[arg(value_name = "CMD", trailing_var_arg = true, num_args = 1..)]
    pub command: Vec<OsString>,
}

/// What a capture run needs, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    /// Given by `--server`; wins over anything the server says.
    pub server: Option<String>,
    pub mode: Mode,
}

/// Which transport to capture.
#[derive(Debug)]
pub enum Mode {
    Stdio(Stdio),
    Http(Http),
}

/// A server command to run and relay over stdio.
#[derive(Debug)]
pub struct Stdio {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Used when neither the flag nor the server names it.
    pub fallback_server: String,
    /// Observe nothing ([`BENCH_UNOBSERVED`], a bench knob): the relays run
    /// unchanged and the observer drops what they hand it.
    pub unobserved: bool,
}

/// A bench knob, not a feature, and deliberately no flag (so no help, man
/// page or completion offers it): with this variable set to `1`, stdio
/// capture relays exactly as always but drops everything the relays hand
/// its observer, journaling nothing. `benches/suite` times it against a
/// minimal splice relay, to show what the relay costs apart from
/// observing. Read once, here.
pub const BENCH_UNOBSERVED: &str = "MCPEVAL_CAPTURE_BENCH_UNOBSERVED";

/// A Streamable HTTP endpoint to stand in for.
#[derive(Debug)]
pub struct Http {
    pub listen: SocketAddr,
    pub upstream: Upstream,
    pub session_header: Option<HeaderName>,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        if let Some(name) = &self.server {
            check_server_name(name)?;
        }
        let mode = match (self.listen, self.upstream) {
            (Some(listen), Some(upstream)) => Mode::Http(Http {
                listen: cli::listen_addr(&listen, 8931)?,
                upstream: Upstream::parse(&upstream)?,
                session_header: self
                    .session_header
                    .as_deref()
                    .map(session_header)
                    .transpose()?,
            }),
            _ => Mode::Stdio(stdio(self.command)?),
        };
        Ok(Config {
            home: self.home.resolve()?,
            server: self.server,
            mode,
        })
    }
}

fn stdio(command: Vec<OsString>) -> Result<Stdio> {
    let mut command = command.into_iter();
    let program = command.next().ok_or_else(|| {
        Error::usage("missing the server command: give it after capture's options")
    })?;
    let fallback_server = store::credit::command_name(&program);
    Ok(Stdio {
        program,
        args: command.collect(),
        fallback_server,
        unobserved: std::env::var_os(BENCH_UNOBSERVED).is_some_and(|v| v == "1"),
    })
}

fn session_header(name: &str) -> Result<HeaderName> {
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        Error::usage(format!(
            "invalid --session-header {name:?}: use an HTTP header name such as X-Agent-Session"
        ))
    })
}

fn check_server_name(name: &str) -> Result<()> {
    if name.is_empty() || name.chars().any(char::is_control) || name.len() > 200 {
        return Err(Error::usage(format!(
            "invalid --server {name:?}: use 1 to 200 printable characters"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_header_names() {
        assert_eq!(
            session_header("X-Agent-Session").unwrap(),
            "x-agent-session"
        );
        assert!(session_header("bad header").is_err());
    }
}
