//! The front's own command line: a few flags, then a command name, then
//! arguments that belong to that command alone.
//!
//! clap parses the front's flags; any name but `help` is an external
//! subcommand, whose arguments clap hands over byte for byte, unparsed — not
//! even `--help` or `--`. The same definition gives `--help`, the man page
//! and the completions.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command, CommandFactory, Parser, Subcommand, ValueHint};
use shared::Error;
use shared::error::IoContext;

use crate::builtin;
use shared::sibling::check_name;

/// What the front was asked to do.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Print this text (help or version) and succeed.
    Print(String),
    List(Format),
    Dispatch(Request),
}

/// How `--list` prints.
pub use cli::Format;

/// Run `mcpeval-NAME` with `args`.
#[derive(Debug, PartialEq)]
pub struct Request {
    pub name: String,
    pub args: Vec<OsString>,
    /// `--home DIR`, made absolute so a command that changes directory
    /// still finds the same store.
    pub home: Option<PathBuf>,
}

const ABOUT: &str = "Find the MCP tool failures agents really hit, and prove their fixes";

const LONG_ABOUT: &str = "\
Find the MCP tool failures agents really hit, and prove their fixes.

mcpeval is a suite of small commands. This front runs one of them: \
'mcpeval NAME ARGS...' runs the program mcpeval-NAME with ARGS exactly as given, \
in its own place, so its input, output, signals and exit status are the command's own.

Examples:
  mcpeval capture --server weather -- weather-server --stdio
  mcpeval index && mcpeval promote
  mcpeval findings --format agent
  mcpeval --home ./store findings --format json
  mcpeval --list --format json
  mcpeval help verify";

const USAGE: &str = "mcpeval [--home DIR] NAME [ARGS]...
       mcpeval --list [--format text|json]
       mcpeval help [NAME]";

const AFTER_HELP: &str = "\
Plugins:
  Every command is a program named mcpeval-NAME, looked up beside the mcpeval \
executable first, then in each PATH directory in order; the first executable \
found runs and later copies are shadowed. To add a command, put an executable \
mcpeval-NAME on PATH: nothing else is needed. NAME is lowercase letters, digits \
and '-'. A command gets MCPEVAL (the path of this front) and MCPEVAL_HOME (the \
store), so plugins find the store and can call back into the suite.

  Front flags go before NAME; everything after NAME belongs to the command.

Exit status:
  The command's own. 2: no such command, or a bad front flag. 126: found but \
cannot be run (not executable, or a loop back into mcpeval). 127: it could not \
be started, e.g. its #! interpreter is missing.";

/// The front's flags, then at most one command: `help [NAME]` or any other
/// name, whose arguments clap hands over untouched (as cargo does).
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    override_usage = USAGE,
    allow_external_subcommands = true,
    disable_help_subcommand = true,
    subcommand_value_name = "NAME"
)]
struct Cli {
    /// The store for the command (sets MCPEVAL_HOME)
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    home: Option<OsString>,
    /// List every mcpeval-NAME found, without running any (same as 'mcpeval help')
    #[arg(long)]
    list: bool,
    /// How --list prints: aligned text, or one JSON object
    #[arg(long, value_name = "FORMAT", value_enum)]
    format: Option<Format>,
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// List the commands, or show a command's own help (mcpeval-NAME --help)
    // Hidden: the usage lines document it, and there is no mcpeval-help to
    // point to. No flags of its own: `help --x` names a command, refused as one.
    #[command(hide = true, disable_help_flag = true)]
    Help {
        #[arg(value_name = "NAME", allow_hyphen_values = true, value_parser = AnyName)]
        names: Vec<OsString>,
    },
    /// Any other NAME runs mcpeval-NAME with every argument after it, unchanged
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

/// Any name at all (it is checked after parsing), offering the built-in
/// ones to shell completion.
#[derive(Clone)]
struct AnyName;

impl TypedValueParser for AnyName {
    type Value = OsString;

    fn parse_ref(
        &self,
        _: &Command,
        _: Option<&Arg>,
        value: &OsStr,
    ) -> Result<OsString, clap::Error> {
        Ok(value.to_owned())
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let names = builtin::BUILTINS
            .iter()
            .map(|b| PossibleValue::new(b.name).help(b.about));
        Some(Box::new(names))
    }
}

/// The clap description of the front, for help, man page and completions.
pub fn command() -> Command {
    Cli::command()
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> shared::Result<Action> {
    let argv = std::iter::once(OsString::from("mcpeval")).chain(args);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => return from_clap(&err),
    };
    let (name, rest) = match cli.command {
        None => (None, Vec::new()),
        Some(Sub::Help { names }) => (Some(OsString::from("help")), names),
        Some(Sub::External(mut args)) => {
            let name = args.remove(0);
            (Some(name), args)
        }
    };
    let is_help = name.as_ref().is_some_and(|n| n == "help");
    if cli.format.is_some() && !(cli.list || is_help && rest.is_empty()) {
        return Err(Error::usage("--format applies to --list only")
            .with_hint("to give --format to a command, put it after the command's name"));
    }
    let listing = Action::List(cli.format.unwrap_or(Format::Text));
    let home = cli.home.map(absolute_home).transpose()?;
    let dispatch = |name: &OsStr, args: Vec<OsString>| -> shared::Result<Action> {
        let name = check_name(name)?;
        Ok(Action::Dispatch(Request { name, args, home }))
    };
    match (name, cli.list) {
        (None, true) => Ok(listing),
        (None, false) => Err(Error::usage("no command given")
            .with_hint("run 'mcpeval --list' to see the commands, or 'mcpeval --help'")),
        (Some(name), true) => Err(Error::usage(format!(
            "--list takes no command name, but '{}' was given",
            name.to_string_lossy()
        ))),
        // `mcpeval help` is `--list`, `mcpeval help NAME` is `mcpeval NAME --help`.
        (Some(_), false) if is_help => match rest.as_slice() {
            [] => Ok(listing),
            [sub] if sub == "help" => Ok(Action::Print(command().render_long_help().to_string())),
            [sub] => dispatch(sub, vec![OsString::from("--help")]),
            [_, extra, ..] => Err(Error::usage(format!(
                "help takes one command name, but '{}' followed it",
                extra.to_string_lossy()
            ))
            .with_hint("to pass arguments, run 'mcpeval NAME ARGS...'")),
        },
        (Some(name), false) => dispatch(&name, rest),
    }
}

/// Help and version become text to print; every other clap error is a
/// usage error worded as the front words its own.
fn from_clap(err: &clap::Error) -> shared::Result<Action> {
    let context = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => s.as_str(),
        _ => "",
    };
    // "--home <DIR>" → "--home".
    let arg = context(ContextKind::InvalidArg);
    let flag = arg.split(' ').next().unwrap_or(arg);
    let value = context(ContextKind::InvalidValue);
    Err(match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            return Ok(Action::Print(err.render().to_string()));
        }
        ErrorKind::UnknownArgument => unknown_flag(arg),
        ErrorKind::ArgumentConflict => Error::usage(format!("{flag} was given more than once")),
        ErrorKind::InvalidValue if value.is_empty() => {
            Error::usage(format!("{flag} needs a value"))
        }
        ErrorKind::InvalidValue => {
            Error::usage(format!("unknown {flag} '{value}': use text or json"))
        }
        ErrorKind::InvalidUtf8 => Error::usage(
            "the command name is not UTF-8: names are lowercase letters, digits and '-', \
             starting with a letter or digit (like 'export-issues')",
        ),
        _ => {
            let text = err.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            Error::usage(first.strip_prefix("error: ").unwrap_or(first).to_owned())
        }
    })
}

fn unknown_flag(arg: &str) -> Error {
    Error::usage(format!("unknown front flag '{arg}'")).with_hint(format!(
        "the front takes --home, --list, --format, --help and --version before the command's \
         name; to give '{arg}' to a command, put it after the name"
    ))
}

fn absolute_home(dir: OsString) -> shared::Result<PathBuf> {
    if dir.is_empty() {
        return Err(Error::usage("--home needs a directory, but was given ''"));
    }
    std::path::absolute(&dir).context(format!("cannot resolve --home {}", dir.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &[&str]) -> shared::Result<Action> {
        parse(args.iter().map(OsString::from))
    }

    fn dispatch(name: &str, args: &[&str], home: Option<&str>) -> Action {
        Action::Dispatch(Request {
            name: name.into(),
            args: args.iter().map(OsString::from).collect(),
            home: home.map(PathBuf::from),
        })
    }

    #[test]
    fn everything_after_the_name_is_untouched() {
        assert_eq!(
            parse_str(&["index", "--help", "--", "-V", "--list"]).unwrap(),
            dispatch("index", &["--help", "--", "-V", "--list"], None)
        );
        assert_eq!(
            parse_str(&["--home", "/s", "--", "findings", "--home=x"]).unwrap(),
            dispatch("findings", &["--home=x"], Some("/s"))
        );
        assert_eq!(
            parse_str(&["--home=/s", "x"]).unwrap(),
            dispatch("x", &[], Some("/s"))
        );
        // Flags of the front after the name belong to the command.
        assert_eq!(
            parse_str(&[
                "hello", "--", "--home", "/x", "--list", "--format", "json", "-h"
            ])
            .unwrap(),
            dispatch(
                "hello",
                &["--", "--home", "/x", "--list", "--format", "json", "-h"],
                None
            )
        );
        assert_eq!(
            parse_str(&["help", "--home"]).unwrap_err().message(),
            check_name(OsStr::new("--home")).unwrap_err().message()
        );
    }

    fn printed(args: &[&str]) -> String {
        match parse_str(args).unwrap() {
            Action::Print(text) => text,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn front_flags() {
        // -h is the summary, --help the long form; help and version win
        // over anything after them.
        assert!(printed(&["-h"]).starts_with(&format!("{ABOUT}\n\nUsage: ")));
        assert!(printed(&["--help", "x"]).starts_with(LONG_ABOUT.lines().next().unwrap()));
        assert_eq!(
            printed(&["-V"]),
            format!("mcpeval {}\n", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(parse_str(&["--list"]).unwrap(), Action::List(Format::Text));
        assert_eq!(
            parse_str(&["--format=json", "--list"]).unwrap(),
            Action::List(Format::Json)
        );
        assert_eq!(parse_str(&["help"]).unwrap(), Action::List(Format::Text));
        assert_eq!(
            parse_str(&["--format", "json", "help"]).unwrap(),
            Action::List(Format::Json)
        );
        assert_eq!(printed(&["help", "help"]), printed(&["--help"]));
        assert_eq!(
            parse_str(&["help", "verify"]).unwrap(),
            dispatch("verify", &["--help"], None)
        );
    }

    #[test]
    fn mistakes_are_usage_errors() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "no command given"),
            (&["--bogus", "x"], "unknown front flag '--bogus'"),
            (
                &["--list", "x"],
                "--list takes no command name, but 'x' was given",
            ),
            (&["--list", "--list"], "--list was given more than once"),
            (&["--home"], "--home needs a value"),
            (
                &["--home", ""],
                "--home needs a directory, but was given ''",
            ),
            (
                &["--home", "a", "--home", "b", "x"],
                "--home was given more than once",
            ),
            (
                &["--format", "yaml", "--list"],
                "unknown --format 'yaml': use text or json",
            ),
            (
                &["--format", "json", "x"],
                "--format applies to --list only",
            ),
            (&["--format", "json"], "--format applies to --list only"),
            (
                &["help", "a", "b"],
                "help takes one command name, but 'b' followed it",
            ),
            (&["../x"], "'../x' is not a command name"),
            (&["Foo"], "'Foo' is not a command name"),
            (&[""], "'' is not a command name"),
            (&["help", "-x"], "'-x' is not a command name"),
        ];
        for (args, message) in cases {
            let err = parse_str(args).unwrap_err();
            assert_eq!(err.status(), shared::exit::USAGE, "{args:?}");
            assert!(
                err.message().starts_with(message),
                "{args:?}: {}",
                err.message()
            );
        }
    }

    #[test]
    #[cfg(unix)]
    fn a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let name = OsStr::from_bytes(b"\xffx").to_owned();
        let err = parse([name]).unwrap_err();
        assert_eq!(err.status(), shared::exit::USAGE);
        assert!(
            err.message().starts_with("the command name is not UTF-8"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn relative_home_is_made_absolute() {
        let Action::Dispatch(request) = parse_str(&["--home", "store", "x"]).unwrap() else {
            panic!("not a dispatch")
        };
        assert_eq!(
            request.home,
            Some(std::env::current_dir().unwrap().join("store"))
        );
    }

    #[test]
    fn clap_definition_is_consistent() {
        command().debug_assert();
        let command = command();
        let longs: Vec<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        // The flags the unknown-flag hint names (clap adds --help and --version).
        assert_eq!(longs, ["home", "list", "format"]);
        assert!(command.is_allow_external_subcommands_set());
    }
}
