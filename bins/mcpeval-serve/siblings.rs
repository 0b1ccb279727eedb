//! Running the suite's own commands for the tools that decide or change
//! something, so each rule keeps one implementation.
//!
//! A command is found and run by `shared::sibling`, as the `mcpeval` front
//! and every plugin find theirs. It runs with `--home` naming this store,
//! the workspace as its directory (so a relative manifest or server path
//! means the same to every tool), stdin closed, and its stdout, stderr and
//! exit status are relayed whole.

use std::ffi::OsString;
use std::path::Path;

use shared::Error;
use shared::Result;
use shared::error::Kind;
use shared::home::Home;
use shared::sibling::{self, Options, Stderr};

/// What a command did.
#[derive(Debug)]
pub struct Ran {
    /// Its exit status (128 + signal when a signal ended it).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `mcpeval-<sub> --home HOME ARGS…` in `dir`. `Err` says why the
/// command could not be run at all.
pub fn run(sub: &str, home: &Home, dir: &Path, args: &[OsString]) -> Result<Ran> {
    let program = sibling::find(sub).ok_or_else(|| {
        Error::new(
            Kind::Io,
            format!(
                "mcpeval-{sub} is not installed beside mcpeval-serve or on PATH; \
                 install the whole mcpeval suite, whose {sub} command this tool runs"
            ),
        )
    })?;
    let options = Options {
        dir: Some(dir),
        stderr: Stderr::Capture,
        env: &[],
    };
    let out = sibling::run(&program, home, args.iter().cloned(), options)
        .map_err(|e| Error::new(Kind::Io, format!("cannot run {}: {e}", program.display())))?;
    Ok(Ran {
        status: out.ended.status(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
