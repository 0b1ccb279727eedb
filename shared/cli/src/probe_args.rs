//! The flags that say which server a probe reaches and how, declared once.
//!
//! `mcpeval-probe` takes them, and `mcpeval-verify` takes the same ones
//! and hands them on when it runs the probe: both flatten [`ServerArgs`],
//! and [`ServerArgs::to_probe_argv`] turns what verify was given back into
//! probe's arguments, so a flag added here reaches both and is passed on.
//! Rules one binary alone has (verify's `--record` excludes them all) are
//! added by that binary.
//!
//! The endpoint of `--url` is never passed on as an argument: its URL and
//! header values may hold tokens, and a process's arguments are readable
//! by every user of the machine. Verify parses it ([`ServerArgs::endpoint`])
//! and hands it over in [`shared::ENDPOINT_ENV`]; the probe is told so by
//! [`ENDPOINT_FLAG`].

use std::ffi::OsString;
use std::path::PathBuf;

/// The probe's hidden flag that says the endpoint is in
/// [`shared::ENDPOINT_ENV`], as `mcpeval-verify` passes it.
pub const ENDPOINT_FLAG: &str = "--endpoint-from-env";

/// `--handshake-timeout`, `--server-stderr`, `--url`, `--header`,
/// `--header-file` and the server command after `--`.
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

    /// Extra request headers for --url from FILE, one "Name: value" a line (# comments and blank lines ignored; repeatable); refused unless only its owner may read it. Keeps secrets off the command line
    #[arg(
        long = "header-file",
        value_name = "FILE",
        requires = "url",
        conflicts_with = "command"
    )]
    pub header_files: Vec<PathBuf>,

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
            .field("header_files", &self.header_files)
            .field("command", &self.command)
            .finish()
    }
}

impl ServerArgs {
    /// The flags as `mcpeval-probe` takes them, the server command last
    /// (after `--`). With `--url`, [`ENDPOINT_FLAG`] stands for the URL
    /// and every header: the caller hands the probe the
    /// [`store::endpoint::Endpoint`] of [`ServerArgs::endpoint`] in
    /// [`shared::ENDPOINT_ENV`].
    pub fn to_probe_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![
            "--handshake-timeout".into(),
            self.handshake_timeout.to_string().into(),
        ];
        if self.server_stderr {
            argv.push("--server-stderr".into());
        }
        match &self.url {
            Some(_) => argv.push(ENDPOINT_FLAG.into()),
            None => {
                argv.push("--".into());
                argv.extend(self.command.iter().cloned());
            }
        }
        argv
    }

    /// The endpoint of `--url`, `--header` and `--header-file`, checked
    /// (each header file read), or `None` for a server command.
    pub fn endpoint(&self) -> shared::Result<Option<store::endpoint::Endpoint>> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        store::endpoint::Endpoint::parse(url, &self.headers)?
            .with_header_files(&self.header_files)
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The flags as probe declares them: [`ServerArgs`] and the hidden
    /// flag that stands for the endpoint.
    #[derive(Debug, Parser)]
    #[command(mut_arg("command", |a| a.required_unless_present_any(["url", "from_env"])))]
    struct Probe {
        #[command(flatten)]
        server: ServerArgs,
        #[arg(long = "endpoint-from-env", conflicts_with_all = ["url", "command"])]
        from_env: bool,
    }

    fn passed_on(argv: &[&str]) -> Vec<OsString> {
        let parsed = Probe::try_parse_from(std::iter::once("probe").chain(argv.iter().copied()))
            .unwrap()
            .server;
        let again = parsed.to_probe_argv();
        let reparsed =
            Probe::try_parse_from(std::iter::once(OsString::from("probe")).chain(again.clone()))
                .unwrap();
        // The probe takes what it was given; an endpoint, from elsewhere.
        assert_eq!(reparsed.from_env, parsed.url.is_some());
        if !reparsed.from_env {
            assert_eq!(reparsed.server.to_probe_argv(), again);
        }
        again
    }

    #[test]
    fn what_is_parsed_is_passed_on_as_probe_takes_it() {
        assert_eq!(
            passed_on(&["--server-stderr", "--", "srv", "--flag", "--"]),
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
        assert!(Probe::try_parse_from(["probe", "--handshake-timeout", "0", "--", "s"]).is_err());
        assert!(Probe::try_parse_from(["probe", "--header", "A: b", "--", "s"]).is_err());
        assert!(Probe::try_parse_from(["probe", "--header-file", "f", "--", "s"]).is_err());
        assert!(Probe::try_parse_from(["probe"]).is_err());
    }

    #[test]
    fn an_endpoint_is_passed_on_by_a_flag_that_holds_none_of_it() {
        let argv = passed_on(&[
            "--url",
            "http://127.0.0.1:1/mcp?key=tok-Quokka-991",
            "--header",
            "A: tok-Quokka-991",
            "--header=C: d",
            "--header-file",
            "secret-headers",
            "--handshake-timeout",
            "5",
        ]);
        assert_eq!(argv, ["--handshake-timeout", "5", ENDPOINT_FLAG]);
    }
}
