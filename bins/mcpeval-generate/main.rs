//! `mcpeval-generate`: write a one-case manifest that probes a finding.
//!
//! It reads the catalog and, optionally, an expect file, and writes one
//! file. It never calls the server, never journals, and never replaces an
//! existing manifest with anything that did not pass validation.

mod args;
mod case;
mod output;

use std::io::Write;
use std::process::ExitCode;

use shared::Error;
use shared::Result;
use shared::finding::DefectClass;
use shared::manifest::{Expect, Manifest};
use store::catalog;

use crate::args::{Args, Config};

const PROGRAM: &str = "mcpeval-generate";

fn main() -> ExitCode {
    cli::main(|args: Args| generate(args.into_config()?))
}

fn generate(config: Config) -> Result<()> {
    // With a team database: the finding as the team holds it now.
    let view = team::view(&config.home, team::Scope::Finding(config.finding.clone()))?;
    let config = Config {
        home: view.home().clone(),
        ..config
    };
    if !config.force && config.output.replaces() {
        return Err(output::exists_error(&config.output));
    }
    let expect = config.expect.as_ref().map(Expect::parse_file).transpose()?;
    let catalog = catalog::load(&config.home)?;
    let finding = catalog::find(&catalog, &config.finding).ok_or_else(|| {
        Error::usage(format!(
            "no finding {} in the catalog; nothing was written",
            config.finding
        ))
        .with_hint("list the findings with `mcpeval findings`")
    })?;
    let doc = case::manifest(finding, expect.as_ref())?;
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).expect("manifests serialize")
    );
    let value: serde_json::Value = serde_json::from_str(&text).expect("manifests parse");
    // Validate exactly what will be written, before the output is opened.
    let manifest = Manifest::parse(&text).map_err(|r| r.into_error(&config.output))?;
    output::write(&config.output, &text, config.force)?;

    let case = &manifest.cases[0];
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "{PROGRAM}: wrote {}: case {} ({}, tool {}{})",
        config.output,
        case.id,
        case.probe.as_str(),
        case.steps[0].tool,
        case.attempts
            .map(|n| format!(", {n} attempts"))
            .unwrap_or_default()
    );
    let holes = case.placeholders();
    if !holes.is_empty() {
        let _ = writeln!(
            err,
            "{PROGRAM}: fill {} placeholder(s) before `mcpeval verify`:",
            holes.len()
        );
        for pointer in &holes {
            let placeholder = value
                .pointer(pointer)
                .and_then(|v| v.as_str())
                .unwrap_or("");
            let _ = writeln!(err, "  {pointer}: {}", case::what_to_fill(placeholder));
        }
    }
    if finding.derived.defect_class == DefectClass::ContractViolation {
        // The schema check is the oracle; what no case can show is that
        // its arguments reach the broken result, hence the witness.
        let _ = writeln!(
            err,
            "{PROGRAM}: no oracle to write: every probe checks the tool's results against its \
             declared outputSchema; run the case against the unfixed server first (red), as a \
             contract-violation finding closes only on a witnessed streak"
        );
    }
    if expect.is_some() {
        let _ = writeln!(
            err,
            "{PROGRAM}: review the expect: it must tell the reported defect from the repair"
        );
    }
    Ok(())
}
