//! The front's own command line: a few flags, then a command name, then
//! arguments that belong to that command alone.
//!
//! The arguments after the name are handed over byte for byte, so they are
//! never parsed here — not even `--help` or `--`. clap cannot promise that
//! for arbitrary OS strings, so the dispatch parse is done by hand; the clap
//! [`command`] describes the same flags for `--help`, the man page and the
//! completions, and must stay in step with [`parse`] (a test checks the flags).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, Command, ValueHint};
use shared::Error;
use shared::error::IoContext;

use crate::builtin;
use shared::sibling::check_name;

/// What the front was asked to do.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Print the front's help (`--help` is the long form).
    Help {
        long: bool,
    },
    Version,
    List(Format),
    Dispatch(Request),
}

/// How `--list` prints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Format {
    Text,
    Json,
}

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

/// The clap description of the front, for help, man page and completions.
pub fn command() -> Command {
    let mut names: Vec<&str> = builtin::names().collect();
    names.push("help");
    Command::new("mcpeval")
        .version(env!("CARGO_PKG_VERSION"))
        .about(ABOUT)
        .long_about(LONG_ABOUT)
        .after_help(AFTER_HELP)
        .override_usage(
            "mcpeval [--home DIR] NAME [ARGS]...\n       \
             mcpeval --list [--format text|json]\n       \
             mcpeval help [NAME]",
        )
        .arg(
            Arg::new("home")
                .long("home")
                .value_name("DIR")
                .value_hint(ValueHint::DirPath)
                .help("The store for the command (sets MCPEVAL_HOME)"),
        )
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help(
                    "List every mcpeval-NAME found, without running any (same as 'mcpeval help')",
                ),
        )
        .arg(
            Arg::new("format")
                .long("format")
                .value_name("FORMAT")
                .value_parser(["text", "json"])
                .requires("list")
                .help("How --list prints: aligned text, or one JSON object"),
        )
        .arg(
            Arg::new("name")
                .value_name("NAME")
                .value_parser(PossibleValuesParser::new(names))
                .hide_possible_values(true)
                .help("The command to run: mcpeval-NAME"),
        )
        .arg(
            Arg::new("args")
                .value_name("ARGS")
                .num_args(0..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .help("Passed to the command unchanged"),
        )
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> shared::Result<Action> {
    let mut args = args.into_iter();
    let mut home: Option<OsString> = None;
    let mut list: Option<()> = None;
    let mut format: Option<Format> = None;
    let mut name: Option<OsString> = None;
    while let Some(arg) = args.next() {
        match arg.as_encoded_bytes() {
            // Help and version win over anything else, as with clap.
            b"-h" => return Ok(Action::Help { long: false }),
            b"--help" => return Ok(Action::Help { long: true }),
            b"-V" | b"--version" => return Ok(Action::Version),
            b"--list" => set(&mut list, "--list", ())?,
            b"--home" => set(&mut home, "--home", value(&mut args, "--home")?)?,
            b"--format" => set(&mut format, "--format", format_value(&mut args)?)?,
            // `--` only ends the front's flags; the name still follows.
            b"--" => {
                name = args.next();
                break;
            }
            _ => {
                if let Some(dir) = strip_flag(&arg, "--home=") {
                    set(&mut home, "--home", dir)?;
                } else if let Some(f) = strip_flag(&arg, "--format=") {
                    set(&mut format, "--format", parse_format(&f)?)?;
                } else if arg.len() > 1 && arg.as_encoded_bytes().starts_with(b"-") {
                    // A command's flag put before its name, most likely.
                    return Err(unknown_flag(&arg));
                } else {
                    name = Some(arg);
                    break;
                }
            }
        }
    }
    let rest: Vec<OsString> = args.collect();
    let is_help = name.as_ref().is_some_and(|n| n == "help");
    if format.is_some() && !(list.is_some() || is_help && rest.is_empty()) {
        return Err(Error::usage("--format applies to --list only")
            .with_hint("to give --format to a command, put it after the command's name"));
    }
    let listing = Action::List(format.unwrap_or(Format::Text));
    let home = home.map(absolute_home).transpose()?;
    let dispatch = |name: &OsStr, args: Vec<OsString>| -> shared::Result<Action> {
        let name = check_name(name)?;
        Ok(Action::Dispatch(Request { name, args, home }))
    };
    match (name, list) {
        (None, Some(())) => Ok(listing),
        (None, None) => Err(Error::usage("no command given")
            .with_hint("run 'mcpeval --list' to see the commands, or 'mcpeval --help'")),
        (Some(name), Some(())) => Err(Error::usage(format!(
            "--list takes no command name, but '{}' was given",
            name.to_string_lossy()
        ))),
        // `mcpeval help` is `--list`, `mcpeval help NAME` is `mcpeval NAME --help`.
        (Some(_), None) if is_help => match rest.as_slice() {
            [] => Ok(listing),
            [sub] if sub == "help" => Ok(Action::Help { long: true }),
            [sub] => dispatch(sub, vec![OsString::from("--help")]),
            [_, extra, ..] => Err(Error::usage(format!(
                "help takes one command name, but '{}' followed it",
                extra.to_string_lossy()
            ))
            .with_hint("to pass arguments, run 'mcpeval NAME ARGS...'")),
        },
        (Some(name), None) => dispatch(&name, rest),
    }
}

fn format_value(args: &mut impl Iterator<Item = OsString>) -> shared::Result<Format> {
    parse_format(&value(args, "--format")?)
}

fn parse_format(value: &OsStr) -> shared::Result<Format> {
    match value.as_encoded_bytes() {
        b"text" => Ok(Format::Text),
        b"json" => Ok(Format::Json),
        _ => Err(Error::usage(format!(
            "unknown --format '{}': use text or json",
            value.to_string_lossy()
        ))),
    }
}

/// The value after a flag that takes one.
fn value(args: &mut impl Iterator<Item = OsString>, flag: &str) -> shared::Result<OsString> {
    args.next()
        .ok_or_else(|| Error::usage(format!("{flag} needs a value")))
}

/// `--flag=VALUE` → `VALUE`, keeping non-UTF-8 bytes of the value.
fn strip_flag(arg: &OsStr, prefix: &str) -> Option<OsString> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        arg.as_bytes()
            .strip_prefix(prefix.as_bytes())
            .map(|v| OsStr::from_bytes(v).to_owned())
    }
    #[cfg(not(unix))]
    {
        arg.to_str()
            .and_then(|a| a.strip_prefix(prefix))
            .map(OsString::from)
    }
}

/// Records a flag given once; a second one is a mistake worth saying, as
/// clap does for the other binaries.
fn set<T>(slot: &mut Option<T>, flag: &str, value: T) -> shared::Result<()> {
    if slot.replace(value).is_some() {
        return Err(Error::usage(format!("{flag} was given more than once")));
    }
    Ok(())
}

fn unknown_flag(arg: &OsStr) -> Error {
    let arg = arg.to_string_lossy();
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
    }

    #[test]
    fn front_flags() {
        assert_eq!(parse_str(&["-h"]).unwrap(), Action::Help { long: false });
        assert_eq!(
            parse_str(&["--help", "x"]).unwrap(),
            Action::Help { long: true }
        );
        assert_eq!(parse_str(&["-V"]).unwrap(), Action::Version);
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
        assert_eq!(
            parse_str(&["help", "help"]).unwrap(),
            Action::Help { long: true }
        );
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
        // The flags the hand parser knows are the ones the help describes.
        let command = command();
        let longs: Vec<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        assert_eq!(longs, ["home", "list", "format"]);
    }
}
