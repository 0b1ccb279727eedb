//! Running a sibling command for its JSON, the way a third-party plugin
//! would: `mcpeval-SUB` beside this executable first, else on `PATH`, run
//! with `--home` (and `MCPEVAL_HOME`) naming the store, stdin closed.
//!
//! Its stdout is parsed as JSON; its stderr is relayed to ours when it
//! succeeds (a "no findings" explanation, a rebuilt cache) and becomes
//! the message when it fails. This module must never run anything but a
//! suite command, nor print a sibling's output raw: control characters in
//! relayed text are escaped first.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use shared::error::Kind;
use shared::{Error, Result};

use crate::PROGRAM;

/// Where `mcpeval-<sub>` is: beside this executable, else the first
/// absolute `PATH` directory holding an executable file of that name.
pub fn find(sub: &str) -> Option<PathBuf> {
    let name = format!("mcpeval-{sub}");
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(&name)));
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    beside
        .into_iter()
        .chain(
            on_path
                .into_iter()
                .filter(|d| d.is_absolute())
                .map(|d| d.join(&name)),
        )
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `mcpeval-<sub> --home HOME ARGS…` and parses its stdout as `T`.
pub fn json<T: DeserializeOwned>(sub: &str, home: &Path, args: &[&str]) -> Result<T> {
    let shown = printable(&format!("mcpeval-{sub} {}", args.join(" ")));
    let program = find(sub).ok_or_else(|| {
        Error::unavailable(format!(
            "mcpeval-{sub} is not installed beside {PROGRAM} or on PATH; the report is built from its JSON"
        ))
        .with_hint(format!(
            "install the whole mcpeval suite, or put mcpeval-{sub} on PATH"
        ))
    })?;
    let mut argv: Vec<OsString> = vec!["--home".into(), home.into()];
    argv.extend(args.iter().map(OsString::from));
    let out = duct::cmd(&program, argv)
        .env("MCPEVAL_HOME", home)
        .stdin_null()
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|e| Error::io(format_args!("cannot run {}", program.display()), e))?;
    let stderr = printable(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        let (status, ended) = match (out.status.code(), out.status.signal()) {
            (Some(code), _) => (code, format!("exited with status {code}")),
            (None, Some(signal)) => (128 + signal, format!("was killed by signal {signal}")),
            (None, None) => (-1, "ended abnormally".to_owned()),
        };
        return Err(Error::new(report_status(status), {
            let said = stderr.trim_end();
            if said.is_empty() {
                format!("{shown} {ended} and said nothing; the report needs its JSON")
            } else {
                format!("{shown} {ended}; the report needs its JSON:\n{said}")
            }
        }));
    }
    if !stderr.is_empty() {
        let _ = std::io::stderr().lock().write_all(stderr.as_bytes());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        // serde's message may quote the offending value: say where, not what.
        Error::unavailable(format!(
            "{shown} printed output this report cannot read ({:?} error at line {} column {}); \
             is {} from another release?",
            e.classify(),
            e.line(),
            e.column(),
            program.display()
        ))
        .with_hint("install mcpeval-report and its siblings from the same release")
    })
}

/// The report's own status for a sibling that failed with `status`: what
/// the user can act on (a malformed journal, a newer database, an I/O
/// error) keeps its meaning; anything else means the evidence is
/// unavailable, even a sibling's usage error, which the user did not make.
fn report_status(status: i32) -> Kind {
    match u8::try_from(status).ok().and_then(Kind::from_status) {
        Some(kind @ (Kind::Rejected | Kind::Refused | Kind::Io)) => kind,
        _ => Kind::Unavailable,
    }
}

/// `text` with every control character but the newline escaped, so a
/// relayed message cannot drive the terminal.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            out.push_str(&c.escape_default().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::exit;

    #[test]
    fn statuses_keep_only_what_the_user_can_act_on() {
        assert_eq!(report_status(3).status(), exit::UNAVAILABLE);
        assert_eq!(report_status(4).status(), exit::REJECTED);
        assert_eq!(report_status(6).status(), exit::REFUSED);
        assert_eq!(report_status(74).status(), exit::IO);
        assert_eq!(report_status(2).status(), exit::UNAVAILABLE);
        assert_eq!(report_status(137).status(), exit::UNAVAILABLE);
        assert_eq!(report_status(-1).status(), exit::UNAVAILABLE);
    }

    #[test]
    fn relayed_text_cannot_drive_a_terminal() {
        assert_eq!(printable("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\n");
    }
}
