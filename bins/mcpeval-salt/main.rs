//! `mcpeval-salt`: share one store salt between the machines of a team.
//!
//! `--export` writes the salt into a file the user names (the only place
//! the salt ever leaves `.salt`); `--import` installs such a file's salt
//! into a store that has none and nothing keyed by another one. Neither
//! prints the salt, its hex or the imported file's bytes on stderr.

mod args;

use std::io::Write;
use std::process::ExitCode;

use shared::Error;
use shared::Result;
use shared::file_arg::{Input, Output};
use shared::home::Home;
use store::salt::{Installed, Salt};

use crate::args::Args;

const PROGRAM: &str = "mcpeval-salt";

/// An export file is one line of 80 bytes; anything much longer is not one.
const LIMIT: u64 = 4096;

fn main() -> ExitCode {
    cli::main(run)
}

fn run(args: Args) -> Result<()> {
    let home = args.home.resolve()?;
    match (args.export, args.import) {
        (Some(file), _) => export(&home, &Output::new(file)),
        (None, Some(file)) => import(&home, &Input::new(file)),
        (None, None) => unreachable!("clap requires --export or --import"),
    }
}

fn export(home: &Home, output: &Output) -> Result<()> {
    let salt = Salt::load_or_create(home)?;
    output.write(salt.export_line().as_bytes(), 0o600)?;
    say(format_args!(
        "exported the salt of {} to {output}; keep it secret: it keys every id of the store",
        home.root()
    ));
    Ok(())
}

fn import(home: &Home, input: &Input) -> Result<()> {
    let bytes = input.read_limited(LIMIT)?;
    let salt = Salt::parse_export(&bytes, input)?;
    let refused = |why: &str| {
        Error::refused(format!(
            "refused: {} {why}; nothing was changed",
            home.root()
        ))
    };
    if Salt::load(home)?.is_none() && has_journals(home)? {
        return Err(refused(
            "has journals but no salt: their ids were made with a salt that is gone",
        )
        .with_hint("import a salt only into a new store, before its first capture"));
    }
    match Salt::install(home, &salt)? {
        Installed::New => say(format_args!(
            "imported the salt from {input} into {}; its ids now agree with every store of that salt",
            home.root()
        )),
        Installed::Same => say(format_args!(
            "{} already has the salt in {input}; nothing to do",
            home.root()
        )),
        Installed::Other => {
            return Err(refused(
                "already has another salt, and its journals' ids were made with it",
            )
            .with_hint(
                "import into a new store (--home DIR), or export this store's salt and share that one",
            ));
        }
    }
    Ok(())
}

/// Whether `journals/` holds any journal (by the journal's file name rule).
fn has_journals(home: &Home) -> Result<bool> {
    let dir = home.journals();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(Error::io(format_args!("cannot read {dir}"), err)),
    };
    for entry in entries {
        let entry = entry.map_err(|err| Error::io(format_args!("cannot read {dir}"), err))?;
        if entry
            .file_name()
            .to_str()
            .is_some_and(store::journal::is_journal_name)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn say(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{PROGRAM}: {message}");
}
