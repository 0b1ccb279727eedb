//! The entry point every binary shares: parse, run, report, exit.
//!
//! One error path (`mcpeval-index: error: …` on stderr, the status of
//! [`shared::exit`]), a closed stdout treated as a quiet success, and the
//! hidden `--generate KIND` switch that writes the man page and shell
//! completions from the same clap definition the binary parses with.

pub mod probe_args;

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;

use clap::Parser;

use shared::error::{Error, Result};
use shared::exit;

/// Parses `A` from the process arguments, runs `work`, and maps the outcome
/// to an exit status.
pub fn main<A: Parser>(work: impl FnOnce(A) -> Result<()>) -> ExitCode {
    main_status(|args: A| work(args).map(|()| exit::SUCCESS))
}

/// Like [`main`], for commands that can end well with more than one
/// status: a probe that ran and was red exits 1 with its result printed,
/// not with an error message.
pub fn main_status<A: Parser>(work: impl FnOnce(A) -> Result<u8>) -> ExitCode {
    let program = A::command().get_name().to_owned();
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "--generate") {
        let kind = args.get(2).and_then(|k| k.to_str()).unwrap_or("");
        return finish(&program, generate(A::command(), kind));
    }
    let parsed = match parse::<A>(&program, &args) {
        Ok(parsed) => parsed,
        Err(err) => return ExitCode::from(usage(&program, &err)),
    };
    match work(parsed) {
        Ok(status) => ExitCode::from(status),
        Err(err) => finish(&program, Err(err)),
    }
}

/// Parses `args` as `A`, whose help and usage lines name the command as
/// the user typed it (see [`typed_name`]). Only parsing sees that name:
/// the man page and completions (`--generate`) name the program itself.
fn parse<A: Parser>(program: &str, args: &[OsString]) -> Result<A, clap::Error> {
    let mut cmd = A::command();
    if let Some(typed) = typed_name(program) {
        // A usage line the command spells out itself names it too.
        if let Some(usage) = cmd.get_overridden_usage() {
            let usage = usage.to_string().replace(program, &typed);
            cmd = cmd.override_usage(usage);
        }
        cmd = cmd.bin_name(typed);
    }
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    A::from_arg_matches_mut(&mut matches).map_err(|err| err.format(&mut cmd))
}

/// `mcpeval findings` for `mcpeval-findings` run by the front, which says
/// so by setting [`shared::FRONT_ENV`]; `None` when it ran by its own name.
fn typed_name(program: &str) -> Option<String> {
    let sub = program.strip_prefix("mcpeval-")?;
    let front = std::env::var_os(shared::FRONT_ENV).is_some_and(|v| !v.is_empty());
    front.then(|| format!("mcpeval {sub}"))
}

/// Prints clap's answer to arguments it would not parse and returns the
/// status: help and version go to stdout with status 0; a mistake goes to
/// stderr as every other error does (`program: error: …`), with clap's
/// usage line and tip after it, and status 2.
fn usage(program: &str, err: &clap::Error) -> u8 {
    if !err.use_stderr() {
        let _ = err.print();
        return exit::SUCCESS;
    }
    let text = err.render().to_string();
    let mut stderr = io::stderr().lock();
    let _ = match text.strip_prefix("error: ") {
        Some(rest) => write!(stderr, "{program}: error: {rest}"),
        None => write!(stderr, "{text}"),
    };
    exit::USAGE
}

/// Reports `outcome` the way every binary does and returns its exit status.
///
/// This is the one place a closed pipe is decided: when a broken pipe is
/// among the causes (the reader of `| head` went away), the binary ends
/// quietly with status 0, as a reader expects.
pub fn finish(program: &str, outcome: Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => ExitCode::from(conclude(program, &err, &mut io::stderr().lock())),
    }
}

/// The status `err` ends the binary with, after reporting it on `stderr`
/// (or, for a closed pipe, saying nothing).
fn conclude(program: &str, err: &Error, stderr: &mut impl Write) -> u8 {
    if err.is_broken_pipe() {
        return exit::SUCCESS;
    }
    report_to(stderr, program, err);
    err.status()
}

/// Prints `program: error: message: cause: cause` (and the hint) on stderr.
pub fn report(program: &str, err: &Error) {
    report_to(&mut io::stderr().lock(), program, err);
}

/// [`report`] on a given stream: the tests read what it printed.
fn report_to(stderr: &mut impl Write, program: &str, err: &Error) {
    let _ = writeln!(stderr, "{program}: error: {err}");
}

pub use store::warning::warn;

/// `--format` of a command that prints for people or for scripts; the flag's
/// own help says what each prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people
    Text,
    /// One JSON object, for scripts
    Json,
}

/// Writes the man page (`man`) or a completion script (`complete-bash`,
/// `complete-zsh`, `complete-fish`) for `cmd` to stdout.
pub fn generate(mut cmd: clap::Command, kind: &str) -> Result<()> {
    use clap_complete::Shell;
    let name = cmd.get_name().to_owned();
    let mut out = io::stdout().lock();
    let shell = match kind {
        "man" => {
            clap_mangen::Man::new(cmd).render(&mut out)?;
            return Ok(out.flush()?);
        }
        "complete-bash" => Shell::Bash,
        "complete-zsh" => Shell::Zsh,
        "complete-fish" => Shell::Fish,
        other => {
            return Err(Error::usage(format!(
                "unknown --generate kind '{other}'; use man, complete-bash, complete-zsh or complete-fish"
            )));
        }
    };
    clap_complete::generate(shell, &mut cmd, name, &mut out);
    Ok(out.flush()?)
}

/// Whether human decoration (progress bars, colour) may go to stderr:
/// only on a terminal, and never when `NO_COLOR` is set.
pub fn decorate_stderr() -> bool {
    io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The help footer every binary shares: its own examples, then the store's
/// environment and the exit statuses, so `--help` and the man page teach
/// the whole contract.
pub fn footer(examples: &str) -> String {
    format!(
        "{examples}\n\n\
Environment:\n  \
MCPEVAL_HOME   the store directory (overridden by --home)\n  \
XDG_DATA_HOME  the store is $XDG_DATA_HOME/mcpeval when MCPEVAL_HOME is unset\n  \
NO_COLOR       no colour or progress bars on stderr\n\n\
Exit status:\n  \
0  success (also: nothing to report, explained on stderr)\n  \
1  a verification or probe ran and was red\n  \
2  usage: bad flags or arguments\n  \
3  evidence unavailable: index missing, corrupt or incomplete\n  \
4  input rejected (journal record, manifest, expect file, config); nothing changed\n  \
5  transport failure: the server could not be started or reached, or broke the protocol\n  \
6  refused to record: conflicting run id, binding changed, database newer than this binary\n  \
74 an operating-system I/O error (disk full, permission denied)"
    )
}

/// The `--home DIR` flag every binary takes: flatten it into the clap
/// struct (`#[command(flatten)] home: HomeArg`) and `resolve()` it. A
/// command that can use a team database takes [`StoreArgs`] instead.
#[derive(Debug, Clone, clap::Args)]
pub struct HomeArg {
    /// Store directory [default: $MCPEVAL_HOME, else $XDG_DATA_HOME/mcpeval, else ~/.local/share/mcpeval]
    #[arg(long, value_name = "DIR")]
    pub home: Option<std::path::PathBuf>,
}

impl HomeArg {
    /// The store: `--home`, else the environment (see [`shared::home::Home::resolve`]).
    pub fn resolve(&self) -> Result<shared::home::Home> {
        shared::home::Home::resolve(self.home.as_deref())
    }
}

/// The store flags of the commands that read or write a team store,
/// `--home DIR` and `--database URL`: flatten them into the clap struct
/// and `resolve()` them once, in `into_config`. Nothing is opened or
/// reached there; the store's `--database` travels in the [`Home`], to
/// the team crate and to every sibling the command runs.
///
/// [`Home`]: shared::home::Home
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    #[command(flatten)]
    home: HomeArg,
    /// Team database: a libpq connection string or postgres:// URL, password from PGPASSWORD or ~/.pgpass [default: $MCPEVAL_DATABASE_URL, else database_url in config.json, else none: this store alone]
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl StoreArgs {
    /// The store, with `--database` if it was given.
    pub fn resolve(&self) -> Result<shared::home::Home> {
        Ok(self
            .home
            .resolve()?
            .with_database_flag(self.database.clone()))
    }
}

/// The address of a `--listen` flag: `PORT` alone means loopback;
/// anything else must resolve to one address. `example_port` is the
/// program's usual port, shown in the error.
pub fn listen_addr(text: &str, example_port: u16) -> Result<SocketAddr> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    let bad = |why: &str| {
        Error::usage(format!(
            "invalid --listen {text:?}: {why}; use HOST:PORT such as 127.0.0.1:{example_port}, or a bare port"
        ))
    };
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|err| bad(&err.to_string()))?;
    addrs.next().ok_or_else(|| bad("it names no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            listen_addr("8931", 8931).unwrap(),
            "127.0.0.1:8931".parse().unwrap()
        );
        assert_eq!(
            listen_addr("[::1]:0", 8931).unwrap(),
            "[::1]:0".parse().unwrap()
        );
        assert!(listen_addr("localhost:0", 8931).unwrap().ip().is_loopback());
        let err = listen_addr("nowhere", 4318).unwrap_err();
        assert!(err.message().contains("\"nowhere\""), "{err}");
        assert!(err.message().contains("127.0.0.1:4318"), "{err}");
    }

    /// The status `err` ends with and what was printed for it.
    fn concluded(err: &Error) -> (u8, String) {
        let mut stderr = Vec::new();
        let status = conclude("mcpeval-test", err, &mut stderr);
        (status, String::from_utf8(stderr).unwrap())
    }

    #[test]
    fn a_broken_pipe_deep_in_the_chain_ends_quietly_with_success() {
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        let err = Error::rejected("cannot print the findings")
            .with_source(Error::io("cannot write output", pipe));
        assert_eq!(concluded(&err), (exit::SUCCESS, String::new()));
    }

    #[test]
    fn any_other_error_ends_with_its_kind_status() {
        let full = io::Error::from(io::ErrorKind::StorageFull);
        let err = Error::io("cannot write output", full);
        let (status, said) = concluded(&err);
        assert_eq!(status, exit::IO);
        assert!(
            said.starts_with("mcpeval-test: error: cannot write output: ") && said.ends_with('\n'),
            "{said:?}"
        );
        assert_eq!(
            concluded(&Error::usage("bad flag")),
            (exit::USAGE, "mcpeval-test: error: bad flag\n".to_owned())
        );
    }
}
