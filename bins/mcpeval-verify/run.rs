//! Running a case through the sibling `mcpeval-probe`.
//!
//! verify never probes by itself: it executes `mcpeval-probe` with the
//! same case, server and store, so the evaluator fingerprint in the
//! credit binding is always mcpeval-probe's, and `probe | verify --record`
//! and `verify -- CMD` build one streak. Every refusal happens in the
//! probe, before the server starts, and records nothing here.

use std::ffi::OsString;
use std::path::PathBuf;

use shared::Error;
use shared::Result;
use shared::exit;
use shared::home::Home;
use shared::probe_result::ProbeResult;
use shared::sibling::{self, Ended, Options, Stderr, Stdin};
use store::credit;
use store::lifecycle;
use store::verification;
use team::Scope;

use crate::args::{Format, RunConfig};
use crate::record;

const PROBE: &str = "mcpeval-probe";

/// Runs the case and records its result; returns the exit status.
///
/// The probe's stderr (its notes, the detail of a red run, a refusal) is
/// relayed as it is written; verify reads only its exit status and its
/// JSON result, and prints the hint of a red run itself, from the
/// result's reason, so the probe is asked to leave it out.
pub fn run(home: &Home, config: &RunConfig, format: Format) -> Result<u8> {
    {
        let view = team::view(home, Scope::Finding(config.finding.clone()))?;
        let conn = lifecycle::open(&view)?;
        verification::standing(&view, &conn, &config.finding)?
            .require(&config.finding, exit::USAGE)?;
        // Known here, so mcpeval-probe checks the case's tools against it
        // before the server starts, and the server's name after the handshake.
        credit::require_known(&view, &config.finding, "nothing was run")?;
    }
    let policy = crate::policy(home)?;
    let program = probe_program()?;
    // The endpoint's URL and header values go through the environment:
    // a command line is readable by every user of the machine. (Standard
    // input may be taken by `--manifest -`.)
    let passed = config
        .endpoint
        .as_ref()
        .map(|e| (shared::ENDPOINT_ENV, e.to_env()));
    let options = Options {
        dir: None,
        stderr: Stderr::Relay,
        env: passed.as_slice(),
    };
    // `--manifest -`: the probe reads the manifest from our stdin.
    let stdin = if config.manifest.is_stdin() {
        Stdin::Inherit
    } else {
        Stdin::Null
    };
    let out = sibling::run_with_stdin(&program, home, probe_args(config), options, stdin)
        .map_err(|e| Error::io(format_args!("cannot run {}", program.display()), e))?;

    let code = match out.ended {
        Ended::Exit(code) => code,
        Ended::Signal(signal) => {
            return Err(Error::new(
                exit::IO,
                format!(
                    "{} was killed by signal {signal}; nothing was recorded",
                    program.display()
                ),
            ));
        }
    };
    let verdict_status = [exit::SUCCESS, exit::RED, exit::TRANSPORT].map(i32::from);
    if !verdict_status.contains(&code) {
        // A refusal or failure: the probe said why; nothing ran or was recorded.
        return Ok(u8::try_from(code).unwrap_or(exit::IO));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let result = ProbeResult::parse(text.trim()).map_err(|why| {
        Error::new(
            exit::IO,
            format!(
                "{} exited {code} without a valid result ({why}); nothing was recorded",
                program.display()
            ),
        )
    })?;
    if result.finding != config.finding || result.case != config.case {
        return Err(Error::refused(format!(
            "{} answered for case \"{}\" of {}, not the case asked for; nothing was recorded",
            program.display(),
            result.case,
            result.finding
        )));
    }
    let mut pending = crate::output::Pending::default();
    let scope = Scope::Finding(config.finding.clone());
    let status = team::write(home, scope, |home| {
        record::record(home, PROBE, &result, format, policy, &mut pending)
    })?;
    pending.emit()?;
    Ok(status)
}

/// The probe's arguments after `--home`: the same case, server and
/// options, its result as JSON, and its hint left to verify.
fn probe_args(config: &RunConfig) -> Vec<OsString> {
    let manifest = config
        .manifest
        .path()
        .map_or_else(|| "-".into(), OsString::from);
    let mut args: Vec<OsString> = vec!["--manifest".into(), manifest];
    for a in [
        "--case",
        &config.case,
        "--finding",
        config.finding.as_str(),
        "--format",
        "json",
        "--no-hint",
    ] {
        args.push(a.into());
    }
    args.extend(config.probe.to_probe_argv());
    args
}

/// `mcpeval-probe` beside this executable, else the first on `PATH`.
fn probe_program() -> Result<PathBuf> {
    sibling::find("probe").ok_or_else(|| {
        Error::new(
            exit::IO,
            format!("cannot find {PROBE} beside this executable or on PATH; nothing was run"),
        )
        .with_hint("install mcpeval-probe with the rest of the suite")
    })
}
