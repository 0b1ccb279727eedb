//! Running the suite's own commands for the tools that decide or change
//! something, so each rule keeps one implementation.
//!
//! A command is looked up beside this executable first, then on `PATH`,
//! as the `mcpeval` front does. It runs with `--home` naming this store,
//! the workspace as its directory (so a relative manifest or server path
//! means the same to every tool), stdin closed, and its stdout, stderr and
//! exit status are relayed whole.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a command did.
#[derive(Debug)]
pub struct Ran {
    /// Its exit status (128 + signal when a signal ended it).
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Where `mcpeval-<sub>` is, if anywhere.
pub fn find(sub: &str) -> Option<PathBuf> {
    let name = format!("mcpeval-{sub}");
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&name)));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .filter(|d| d.is_absolute())
        .map(|d| d.join(&name));
    beside.into_iter().chain(on_path).find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `mcpeval-<sub> --home HOME ARGS…` in `dir`. `Err` carries the
/// words for an isError result when the command cannot be run at all.
pub fn run(sub: &str, home: &Path, dir: &Path, args: &[OsString]) -> Result<Ran, String> {
    let program = find(sub).ok_or_else(|| {
        format!(
            "mcpeval-serve: error: mcpeval-{sub} is not installed beside mcpeval-serve or on PATH; \
             install the whole mcpeval suite, whose {sub} command this tool runs"
        )
    })?;
    let out = Command::new(&program)
        .arg("--home")
        .arg(home)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "mcpeval-serve: error: cannot run {}: {e}",
                program.display()
            )
        })?;
    use std::os::unix::process::ExitStatusExt;
    let status = out
        .status
        .code()
        .or_else(|| out.status.signal().map(|s| 128 + s))
        .unwrap_or(-1);
    Ok(Ran {
        status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}
