//! The flags that say which server a probe reaches and how, declared once.
//!
//! `mcpeval-probe` takes them, and `mcpeval-verify` takes the same ones
//! and hands them on when it runs the probe: both flatten [`ServerArgs`],
//! and [`ServerArgs::to_probe_argv`] turns what verify was given back into
//! probe's arguments, so a flag added here reaches both and is passed on.
//! Rules one binary alone has (verify's `--record` excludes them all) are
//! added by that binary.

use std::ffi::OsString;

/// `--handshake-timeout`, `--server-stderr`, `--url`, `--header` and the
/// server command after `--`.
#[derive(Clone, clap::Args)]
pub struct ServerArgs {
    /// How long each handshake request (server/discover, initialize) waits, start-up included
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub handshake_timeout: u64,

    /// Pass the server's stderr through (it may contain raw values)
    #[arg(long, conflicts_with = "url")]
    pub server_stderr: bool,

    /// Reach the server at this Streamable HTTP endpoint instead of starting a command
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// An extra request header for --url, as "Name: value" (repeatable); its value is never shown or stored
    #[arg(
        long = "header",
        value_name = "HEADER",
        requires = "url",
        conflicts_with = "command"
    )]
    pub headers: Vec<String>,

    /// The server command and its arguments, after `--`
    #[arg(
        last = true,
        value_name = "CMD",
        required_unless_present = "url",
        conflicts_with = "url"
    )]
    pub command: Vec<OsString>,
}

/// By hand: the URL and header values may hold tokens.
impl std::fmt::Debug for ServerArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerArgs")
            .field("handshake_timeout", &self.handshake_timeout)
            .field("server_stderr", &self.server_stderr)
            .field("url", &self.url.as_ref().map(|_| "…"))
            .field("headers", &self.headers.len())
            .field("command", &self.command)
            .finish()
    }
}

impl ServerArgs {
    /// The flags as `mcpeval-probe` takes them, the server command last
    /// (after `--`); header values and the URL are passed on as given.
    pub fn to_probe_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![
            "--handshake-timeout".into(),
            self.handshake_timeout.to_string().into(),
        ];
        if self.server_stderr {
            argv.push("--server-stderr".into());
        }
        match &self.url {
            Some(url) => {
                argv.push("--url".into());
                argv.push(url.into());
                for header in &self.headers {
                    argv.push("--header".into());
                    argv.push(header.into());
                }
            }
            None => {
                argv.push("--".into());
                argv.extend(self.command.iter().cloned());
            }
        }
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        server: ServerArgs,
    }

    fn round_trip(argv: &[&str]) -> Vec<OsString> {
        let parsed = Probe::try_parse_from(std::iter::once("probe").chain(argv.iter().copied()))
            .unwrap()
            .server;
        let again = parsed.to_probe_argv();
        let reparsed =
            Probe::try_parse_from(std::iter::once(OsString::from("probe")).chain(again.clone()))
                .unwrap()
                .server;
        assert_eq!(reparsed.to_probe_argv(), again);
        again
    }

    #[test]
    fn what_is_parsed_is_passed_on_as_probe_takes_it() {
        assert_eq!(
            round_trip(&["--server-stderr", "--", "srv", "--flag", "--"]),
            [
                "--handshake-timeout",
                "10000",
                "--server-stderr",
                "--",
                "srv",
                "--flag",
                "--"
            ]
        );
        assert_eq!(
            round_trip(&[
                "--url",
                "http://127.0.0.1:1/mcp",
                "--header",
                "A: b",
                "--header=C: d",
                "--handshake-timeout",
                "5"
            ]),
            [
                "--handshake-timeout",
                "5",
                "--url",
                "http://127.0.0.1:1/mcp",
                "--header",
                "A: b",
                "--header",
                "C: d"
            ]
        );
        assert!(Probe::try_parse_from(["probe", "--handshake-timeout", "0", "--", "s"]).is_err());
        assert!(Probe::try_parse_from(["probe", "--header", "A: b", "--", "s"]).is_err());
        assert!(Probe::try_parse_from(["probe"]).is_err());
    }
}
