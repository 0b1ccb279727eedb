//! Choosing what `mcpeval NAME` runs, and refusing what must not run.
//!
//! Between the lookup and the exec sit the checks a user needs explained:
//! a missing name (with a suggestion), a file that is not executable, and
//! loops back into the front. It must never run anything but the one program
//! the lookup chose, and never pass a changed argument list.

use std::ffi::OsString;

use shared::Error;
use shared::FRONT_ENV;
use shared::HOME_ENV;

use crate::args::Request;
use crate::builtin;
use crate::exec::{self, CANNOT_EXECUTE};
use crate::suggest;
use shared::sibling::{Found, PREFIX, Search};

/// How many dispatches deep the current process is. Internal to the front:
/// plugins inherit it only so that a loop through them can be counted.
pub const DEPTH_ENV: &str = "MCPEVAL_DEPTH";

/// Deeper than any honest chain of wrappers, shallow enough to end a loop
/// in well under a second.
const MAX_DEPTH: u32 = 32;

/// Runs the command `request` names in place of the front. It returns only
/// the error explaining why that could not happen.
pub fn run(search: &Search, request: Request) -> Error {
    let Request { name, args, home } = request;
    let program = match search.find(&name) {
        Found::Program(program) => program,
        Found::NotExecutable(path) => {
            return Error::new(
                CANNOT_EXECUTE,
                format!("cannot run {}: it is not executable", path.display()),
            )
            .with_hint(format!(
                "make it executable (chmod +x {}) or remove it",
                path.display()
            ));
        }
        Found::Missing => return unknown(search, &name),
    };
    if search.is_own(&program) {
        return Error::new(
            CANNOT_EXECUTE,
            format!(
                "refusing to run {}: it is this mcpeval ({}), which would only run itself again",
                program.path.display(),
                search.own().display()
            ),
        )
        .with_hint(format!(
            "remove {} or make it the real command",
            program.path.display()
        ));
    }
    let depth = depth();
    if depth >= MAX_DEPTH {
        return Error::new(
            CANNOT_EXECUTE,
            format!(
                "refusing to run {}: {depth} nested mcpeval commands already run \
                 ({DEPTH_ENV}={depth}), so a command is probably calling itself in a loop",
                program.path.display()
            ),
        )
        .with_hint(format!(
            "check what {} runs through $MCPEVAL",
            program.path.display()
        ));
    }
    let depth = OsString::from((depth + 1).to_string());
    let mut env = vec![
        (FRONT_ENV, search.own().as_os_str()),
        (DEPTH_ENV, depth.as_os_str()),
    ];
    // Every command learns the store: --home, else MCPEVAL_HOME as it is
    // inherited, else the default (a store path that is not UTF-8 is left
    // for the command to refuse in its own words).
    let resolved = match &home {
        Some(_) => None,
        None => shared::home::Home::resolve(None).ok(),
    };
    if let Some(home) = &home {
        env.push((HOME_ENV, home.as_os_str()));
    } else if let Some(resolved) = &resolved {
        env.push((HOME_ENV, resolved.root().as_os_str()));
    }
    exec::replace(&program.path, &args, &env)
}

/// The depth this front runs at. A missing or garbled value counts as zero:
/// the front rewrites it on every dispatch, so a loop is counted from there.
fn depth() -> u32 {
    std::env::var(DEPTH_ENV)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// The error for a name nothing answers to, with the nearest names found.
fn unknown(search: &Search, name: &str) -> Error {
    let where_ = match search.own_dir() {
        Some(dir) => format!("beside mcpeval in {} or on PATH", dir.display()),
        None => "on PATH".to_owned(),
    };
    if builtin::about(name).is_some() {
        // A suite command that is not installed is not a typo.
        return Error::usage(format!(
            "no such command '{name}': {PREFIX}{name} is part of mcpeval but was not found {where_}"
        ))
        .with_hint("reinstall the suite, or add the directory that holds it to PATH");
    }
    let found = search.list();
    let mut names: Vec<&str> = found.iter().map(|l| l.name.as_str()).collect();
    // Pushed one by one: `extend` would demand that `found` live forever.
    for builtin in builtin::names() {
        names.push(builtin);
    }
    let near = suggest::nearest(name, names);
    let error = Error::usage(format!("no such command '{name}'"));
    if near.is_empty() {
        error.with_hint(format!(
            "run 'mcpeval --list' to see the commands; a plugin is any executable \
             {PREFIX}NAME {where_}"
        ))
    } else {
        error.with_hint(format!("did you mean {}?", suggest::or_list(&near)))
    }
}
