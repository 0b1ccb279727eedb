//! Running a case through the sibling `mcpeval-probe`.
//!
//! verify never probes by itself: it executes `mcpeval-probe` with the
//! same case, server and store, so the evaluator fingerprint in the
//! credit binding is always mcpeval-probe's, and `probe | verify --record`
//! and `verify -- CMD` build one streak. Every refusal happens in the
//! probe, before the server starts, and records nothing here.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use shared::home::Home;
use shared::probe_result::{ProbeResult, Verdict};
use shared::{Error, Result, binding, credit, exit, lifecycle, verification};

use crate::args::{Format, RunConfig, Server};
use crate::record;

const PROBE: &str = "mcpeval-probe";

/// Runs the case and records its result; returns the exit status.
pub fn run(home: &Home, config: &RunConfig, format: Format) -> Result<u8> {
    {
        let conn = lifecycle::open(home)?;
        verification::standing(home, &conn, &config.finding)?
            .require(&config.finding, exit::USAGE)?;
    }
    // Known here, so mcpeval-probe checks the case's tools against it
    // before the server starts, and the server's name after the handshake.
    credit::require_subject(home, &config.finding, "nothing was run")?;
    let program = probe_program()?;
    let mut cmd = Command::new(&program);
    cmd.arg("--home")
        .arg(home.root())
        .arg("--manifest")
        .arg(&config.manifest)
        .args(["--case", &config.case, "--finding", &config.finding])
        .args(["--format", "json"]);
    if let Some(ms) = config.handshake_timeout {
        cmd.args(["--handshake-timeout", &ms.to_string()]);
    }
    if config.server_stderr {
        cmd.arg("--server-stderr");
    }
    match &config.server {
        Server::Command(command) => {
            cmd.arg("--").args(command);
        }
        Server::Endpoint { url, headers } => {
            cmd.args(["--url", url]);
            for header in headers {
                cmd.args(["--header", header]);
            }
        }
    }
    cmd.stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| Error::io(format_args!("cannot run {}", program.display()), e))?;

    let code = match out.status.code() {
        Some(code) => code,
        None => {
            forward(&out.stderr);
            return Err(Error::new(
                exit::IO,
                format!(
                    "{} was killed by signal {}; nothing was recorded",
                    program.display(),
                    out.status.signal().unwrap_or(0)
                ),
            ));
        }
    };
    let verdict_status = [exit::SUCCESS, exit::RED, exit::TRANSPORT].map(i32::from);
    if !verdict_status.contains(&code) {
        // A refusal or failure: the probe said why; nothing ran or was recorded.
        forward(&out.stderr);
        return Ok(u8::try_from(code).unwrap_or(exit::IO));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let result = ProbeResult::parse(text.trim()).map_err(|why| {
        forward(&out.stderr);
        Error::new(
            exit::IO,
            format!(
                "{} exited {code} without a valid result ({why}); nothing was recorded",
                program.display()
            ),
        )
    })?;
    forward(without_hint(&out.stderr, &result));
    if result.finding != config.finding || result.case != config.case {
        return Err(Error::refused(format!(
            "{} answered for case \"{}\" of {}, not the case asked for; nothing was recorded",
            program.display(),
            result.case,
            result.finding
        )));
    }
    record::record(home, PROBE, &result, format)
}

/// `mcpeval-probe` beside this executable, else the first on `PATH`.
fn probe_program() -> Result<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(PROBE)));
    if let Some(path) = beside
        && std::fs::metadata(&path)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    {
        return Ok(path);
    }
    binding::resolve(OsStr::new(PROBE), std::env::var_os("PATH").as_deref()).ok_or_else(|| {
        Error::new(
            exit::IO,
            format!("cannot find {PROBE} beside this executable or on PATH; nothing was run"),
        )
        .with_hint("install mcpeval-probe with the rest of the suite")
    })
}

/// The probe's stderr without the hint line it ends a red or transport
/// result with: verify prints that hint itself, after its result line.
fn without_hint<'a>(stderr: &'a [u8], result: &ProbeResult) -> &'a [u8] {
    match result.reason {
        Some(reason) if result.result != Verdict::Green => {
            let hint = format!("  hint: {}\n", reason.hint());
            stderr.strip_suffix(hint.as_bytes()).unwrap_or(stderr)
        }
        _ => stderr,
    }
}

fn forward(bytes: &[u8]) {
    let _ = std::io::stderr().lock().write_all(bytes);
}
