//! `mcpeval-promote`: score and classify recurring failure groups and
//! store the findings.
//!
//! Derived findings in `index.db` are replaced wholesale; lifecycle state in
//! `lifecycle.db` is only ever added to (new findings start open) or moved
//! (the one-time re-key of legacy ids). Promotion never reads probe calls.

mod args;
mod groups;
mod rekey;
mod select;

use std::io::Write;
use std::process::ExitCode;

use shared::catalog::{self, Promotion};
use shared::salt::Salt;
use shared::{Result, db, index_db, lifecycle, time};

use crate::args::{Args, Config, Format};

fn main() -> ExitCode {
    shared::cli::main(|args: Args| run(args.into_config()?))
}

fn run(config: Config) -> Result<()> {
    let home = &config.home;
    let mut index = index_db::open_complete(home)?;
    let groups = groups::load(&index, &home.index_db())?;
    let salt = Salt::load_or_create(home)?;
    let selection = select::select(&groups, &salt, config.threshold, config.now);

    let promotion = Promotion {
        promoted_at: time::now_rfc3339(),
        scored_as_of: time::rfc3339(config.now),
        threshold: config.threshold,
        issues: groups.len() as u64,
        promoted: selection.findings.len() as u64,
        one_session: selection.one_session,
        below_threshold: selection.below_threshold,
    };

    // Lifecycle first: if it fails, the index still shows the previous run.
    let mut life = lifecycle::open(home)?;
    let now = promotion.promoted_at.clone();
    db::write(&mut life, |tx| {
        rekey::run(tx, &home.lifecycle_db(), &salt, &groups, &now)?;
        for finding in &selection.findings {
            lifecycle::ensure(tx, &home.lifecycle_db(), &finding.id, &now)?;
        }
        Ok(())
    })?;
    db::write(&mut index, |tx| {
        catalog::replace(tx, home, &promotion, &selection.findings)
    })?;

    let mut out = std::io::stdout().lock();
    match config.format {
        Format::Text => writeln!(out, "{}", summary(&promotion))?,
        Format::Json => {
            serde_json::to_writer(&mut out, &promotion).expect("summary serializes");
            writeln!(out)?;
        }
    }
    Ok(out.flush()?)
}

/// `promoted F of I issues`, and the two reasons when there is anything.
fn summary(p: &Promotion) -> String {
    let mut line = format!("promoted {} of {} issues", p.promoted, p.issues);
    if p.promoted > 0 || p.issues > 0 {
        line.push_str(&format!(
            " ({} seen in one session only, {} below threshold)",
            p.one_session, p.below_threshold
        ));
    }
    line
}
