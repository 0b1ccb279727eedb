//! Command-line flags of `mcpeval-capture`, checked into a [`Config`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Parser;
use shared::home::Home;
use shared::{Error, Result};

/// Relay an MCP server's traffic unchanged and journal every tool call.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-capture",
    version,
    about = "Relay an MCP server's stdio traffic unchanged and journal every tool call",
    long_about = "Relay an MCP server's stdio traffic unchanged and journal every tool call.\n\n\
Put mcpeval-capture in front of the server command in your MCP client's \
configuration. The client talks to it exactly as to the server: every byte \
passes through unchanged and in order, the server's stderr goes to \
mcpeval-capture's stderr, and its exit status (or the signal that killed it) \
is mcpeval-capture's own.\n\n\
Each tools/call is paired with its response and appended as one \
mcpeval.call/1 record to a journal under <MCPEVAL_HOME>/journals/. Records \
hold argument shapes, error codes and salted template ids: never an argument \
value or error text. A call still unanswered when the server exits is \
recorded with outcome unknown.",
    after_help = shared::cli::footer(
        "Examples:\n  \
mcpeval capture -- npx -y @modelcontextprotocol/server-everything\n  \
mcpeval capture --server weather -- python -m weather_server --port 0\n\n\
In a client configuration, replace \"command\": \"my-server\" with\n  \
\"command\": \"mcpeval-capture\", \"args\": [\"--\", \"my-server\", ...]\n\n\
Records go to <MCPEVAL_HOME>/journals/YYYYMMDDTHHMMSS.fffZ-XXXXXXXX.jsonl, one\n\
file per capture, rotated at 64 MiB or when the UTC day changes."
    )
)]
pub struct Args {
    /// Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Server name for the records [default: serverInfo.name from the server, else the command's file name]
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,

    /// The server command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// What a capture run needs, validated.
#[derive(Debug)]
pub struct Config {
    pub home: Home,
    /// Given by `--server`; wins over anything the server says.
    pub server: Option<String>,
    /// Used when neither the flag nor the server names it.
    pub fallback_server: String,
    pub program: OsString,
    pub args: Vec<OsString>,
}

impl Args {
    pub fn into_config(self) -> Result<Config> {
        if let Some(name) = &self.server {
            check_server_name(name)?;
        }
        let mut command = self.command.into_iter();
        let program = command
            .next()
            .ok_or_else(|| Error::usage("missing the server command after --"))?;
        let fallback_server = Path::new(&program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "server".to_owned());
        Ok(Config {
            home: Home::resolve(self.home.as_deref())?,
            server: self.server,
            fallback_server,
            program,
            args: command.collect(),
        })
    }
}

fn check_server_name(name: &str) -> Result<()> {
    if name.is_empty() || name.chars().any(char::is_control) || name.len() > 200 {
        return Err(Error::usage(format!(
            "invalid --server {name:?}: use 1 to 200 printable characters"
        )));
    }
    Ok(())
}
