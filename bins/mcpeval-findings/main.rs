//! `mcpeval-findings`: the promoted findings in three formats.
//!
//! A reader only: it never creates the store or changes a database. What it
//! prints comes from `store::catalog`, which holds nothing raw, or, with
//! `--from`, from a share envelope read through `store::envelope`, which
//! accepts only what a finding may hold.

mod args;
mod history;
mod render;

use std::io::Write;
use std::process::ExitCode;

use shared::Result;
use shared::file_arg::Input;
use store::catalog::{self, Finding};

use crate::args::{Args, Format};

const PROGRAM: &str = "mcpeval-findings";

fn main() -> ExitCode {
    cli::main(run)
}

fn run(args: Args) -> Result<()> {
    if args.history && args.format != Format::Json {
        return Err(shared::Error::usage(
            "--history prints JSON only; add --format json",
        ));
    }
    let from = args.from.clone().map(Input::new);
    let home = match &from {
        Some(_) => None,
        // Every finding (or those of --finding), and with --history their
        // lifecycle.
        None => Some(team::view(
            &args.store.resolve()?,
            match args.finding.as_slice() {
                [] => team::Scope::All,
                ids => team::Scope::Findings(ids.to_vec()),
            },
        )?),
    };
    let catalog = match &from {
        Some(input) => catalog::Catalog {
            promotion: None,
            calls: 0,
            findings: store::envelope::read_findings(input)?,
        },
        None => catalog::load(home.as_deref().expect("a store without --from"))?,
    };
    let total = catalog.findings.len();
    let findings: Vec<&Finding> = catalog
        .findings
        .iter()
        .filter(|f| args.state.is_empty() || args.state.iter().any(|s| s.state() == f.state))
        .filter(|f| args.server.is_empty() || args.server.contains(&f.derived.server))
        .filter(|f| args.finding.is_empty() || args.finding.contains(&f.derived.id))
        .collect();

    if findings.is_empty() {
        let why = match &from {
            Some(input) if total == 0 => format!("no findings in {input}"),
            Some(_) => format!("no findings match the filters ({total} findings in all)"),
            None => why_none(&catalog, total),
        };
        eprintln!("{PROGRAM}: {why}");
    }
    let mut out = std::io::stdout().lock();
    if args.history {
        let home = match &home {
            Some(view) => view.home().clone(),
            None => args.store.resolve()?,
        };
        history::json(&mut out, &home, &findings)?;
        return Ok(out.flush()?);
    }
    match args.format {
        Format::Json => render::json(&mut out, catalog.promotion.as_ref(), &findings)?,
        _ if findings.is_empty() => {}
        Format::Md => render::markdown(&mut out, &findings, catalog.promotion.as_ref())?,
        Format::Agent => render::agent(&mut out, &findings)?,
    }
    Ok(out.flush()?)
}

/// The one-line explanation for an empty answer from the store, whose
/// findings are current (`catalog::load` refuses any others).
fn why_none(catalog: &catalog::Catalog, total: usize) -> String {
    match &catalog.promotion {
        _ if total > 0 => format!("no findings match the filters ({total} findings in all)"),
        _ if catalog.calls == 0 => format!(
            "no findings: nothing was captured yet (the index holds no calls); {}",
            catalog::START
        ),
        Some(p) => format!(
            "no findings: promote found none of {} issues recurring in two sessions at threshold {} ({} seen in one session only, {} below threshold)",
            p.issues, p.threshold, p.one_session, p.below_threshold
        ),
        None => "no findings".into(),
    }
}
