//! Replacing the front with the chosen program.
//!
//! On Unix the front execs: the command takes over this very process, so its
//! signals, standard streams and exit status reach the caller untouched, with
//! no parent left to forward them. This module must never write to stdout (a
//! pipeline sees only the command's bytes) nor alter the arguments it is given.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

use shared::Error;

/// "Found but cannot be executed", as a shell reports it.
pub const CANNOT_EXECUTE: u8 = 126;

/// "Could not be started at all", as a shell reports a missing command.
pub const NOT_FOUND: u8 = 127;

/// Runs `program` with `args` and the extra environment `env` in place of
/// the front. It returns only when that failed, with the error to report.
pub fn replace(program: &Path, args: &[OsString], env: &[(&str, &OsStr)]) -> Error {
    let mut command = Command::new(program);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    match run(command) {
        Ok(never) => match never {},
        Err(err) => failure(program, &err),
    }
}

#[cfg(unix)]
fn run(mut command: Command) -> std::io::Result<std::convert::Infallible> {
    use std::os::unix::process::CommandExt;
    // std resets SIGPIPE (which Rust programs ignore) to its default in the
    // new image, so `mcpeval x | head` ends the command as a shell would.
    Err(command.exec())
}

#[cfg(not(unix))]
fn run(mut command: Command) -> std::io::Result<std::convert::Infallible> {
    // Without exec, wait for the command and pass its status on.
    let status = command.status()?;
    std::process::exit(status.code().unwrap_or(1))
}

/// The error for a program the OS would not start: 127 when something it
/// needs is missing (ENOENT, typically the `#!` interpreter), else 126.
fn failure(program: &Path, err: &std::io::Error) -> Error {
    let missing = err.kind() == std::io::ErrorKind::NotFound;
    let status = if missing { NOT_FOUND } else { CANNOT_EXECUTE };
    let error = Error::new(status, format!("cannot run {}: {err}", program.display()));
    if missing {
        error.with_hint("if it is a script, check that the interpreter on its #! line is installed")
    } else {
        error.with_hint("check that it is a program for this machine, or a script with a #! line")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_shell() {
        let enoent = std::io::Error::from_raw_os_error(libc::ENOENT);
        let eacces = std::io::Error::from_raw_os_error(libc::EACCES);
        let enoexec = std::io::Error::from_raw_os_error(libc::ENOEXEC);
        let p = Path::new("/x/mcpeval-foo");
        assert_eq!(failure(p, &enoent).status(), NOT_FOUND);
        assert_eq!(failure(p, &eacces).status(), CANNOT_EXECUTE);
        assert_eq!(failure(p, &enoexec).status(), CANNOT_EXECUTE);
        assert!(
            failure(p, &eacces)
                .message()
                .starts_with("cannot run /x/mcpeval-foo: Permission denied")
        );
    }
}
