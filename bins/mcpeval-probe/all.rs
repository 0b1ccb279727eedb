//! `--all`: every case of a manifest, for CI. Each case is admitted before
//! any server starts, then run against a fresh server in file order.

use std::io::Write;

use shared::Error;
use shared::Result;
use shared::exit;
use shared::manifest::{Case, Manifest};
use shared::probe_result::{ProbeResult, Verdict};

use crate::args::{Config, Format};
use crate::junit;
use crate::output;
use crate::run::{self, Runner};

/// Runs every selected case; the status is 1 when any was red, else 5
/// when any met a transport error, else 0.
pub fn run(config: &Config, manifest: &Manifest) -> Result<u8> {
    let cases: Vec<&Case> = manifest
        .cases
        .iter()
        .filter(|c| config.finding.as_ref().is_none_or(|f| *f == c.finding))
        .collect();
    if cases.is_empty() {
        let what = match &config.finding {
            Some(f) => format!("no case for {f}"),
            None => "no cases".to_owned(),
        };
        return Err(Error::usage(format!(
            "{} has {what}; nothing was run",
            config.manifest
        )));
    }
    let view = run::view(config, &cases)?;
    let mut admitted = Vec::with_capacity(cases.len());
    for case in &cases {
        admitted.push(run::admit(case, config, &view)?);
    }
    let mut runner = Runner::new(config)?;
    let mut results: Vec<ProbeResult> = Vec::with_capacity(cases.len());
    for (case, admitted) in cases.iter().zip(admitted) {
        let result = runner.run(manifest, case, admitted)?;
        run::explain(&result, runner.server_stderr(), config.hint);
        if config.format != Format::Junit {
            // Streamed, so a long manifest shows progress as it runs.
            output::print(&result, config.format)?;
        }
        results.push(result);
    }
    if config.format == Format::Junit {
        let suite = match config.manifest.path() {
            Some(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "manifest".to_owned()),
            None => config.manifest.to_string(),
        };
        let mut out = std::io::stdout().lock();
        out.write_all(junit::document(&suite, &results).as_bytes())?;
        out.flush()?;
    }
    let any = |v: Verdict| results.iter().any(|r| r.result == v);
    Ok(if any(Verdict::Red) {
        exit::RED
    } else if any(Verdict::TransportError) {
        exit::TRANSPORT
    } else {
        exit::SUCCESS
    })
}
