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

use shared::Result;
use shared::home::Home;
use shared::time;
use store::catalog::{self, Promotion};
use store::db;
use store::index_db;
use store::lifecycle;
use store::partial::Partials;
use store::salt::Salt;

use crate::args::{Args, Config, Format};

fn main() -> ExitCode {
    cli::main(|args: Args| run(args.into_config()?))
}

fn run(config: Config) -> Result<()> {
    // Promote reads what index made; a store that is not there (a typo'd
    // --home) is said to be missing, not to lack an index.
    store::dir::require(&config.home)?;
    // With a team database: under the team's lock, from every store's
    // partial aggregates merged in the database as they are now, with the
    // findings and lifecycle written back in the same transaction; no
    // call is read but those the team's false-success annotations name.
    // Where the aggregates do not merge exactly (a store not indexed since
    // an earlier release, a journal copied between stores), from the
    // calls of this machine's team view, brought up to date first (and a
    // view that fell behind again meanwhile is refused). Opening the team
    // first refuses another salt or a newer database in promote's own
    // words.
    if let Some(mut team) = team::Team::open(&config.home)?
        && !team.merges_exactly()?
        && !team.view_is_current(&config.home)?
    {
        catch_up(&config.home)?;
    }
    let promotion = team::promote(&config.home, |home, pooled| promote(home, &config, pooled))?;
    let mut out = std::io::stdout().lock();
    match config.format {
        Format::Text => writeln!(out, "{}", summary(&promotion))?,
        Format::Json => {
            // A closed stdout is an I/O error like any other write's, not a panic.
            serde_json::to_writer(&mut out, &promotion).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
    }
    Ok(out.flush()?)
}

/// Promotes the groups of `pooled` (a team's merged aggregates) or, with
/// none, of the store's own index.
fn promote(home: &Home, config: &Config, pooled: Option<Partials>) -> Result<Promotion> {
    // Merged aggregates need no calls here: only the findings' tables.
    let mut index = match pooled {
        Some(_) => db::open(home.index_db().as_std_path(), &index_db::SCHEMA)?,
        None => index_db::open_complete(home)?,
    };
    let salt = Salt::load_or_create(home)?;
    let mut life = lifecycle::open(home)?;

    // One write transaction on index.db spans reading the groups and
    // storing their findings, so an index run cannot commit in between and
    // leave findings of calls it replaced beside the calls it added. The
    // lifecycle is written inside it, first: if that fails, the index still
    // shows the previous run. (Locks are taken index.db, then lifecycle.db;
    // no command takes them the other way round, so none can deadlock.)
    db::write(&mut index, |tx| {
        let groups = match &pooled {
            Some(partials) => groups::from_partials(partials),
            None => {
                index_db::require_state(tx, home.index_db().as_std_path())?;
                groups::load(tx, home.index_db().as_std_path())?
            }
        };
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
        let now = promotion.promoted_at.clone();
        db::write(&mut life, |life| {
            rekey::run(
                life,
                home.lifecycle_db().as_std_path(),
                &salt,
                &groups,
                &now,
            )?;
            for finding in &selection.findings {
                lifecycle::ensure(life, home.lifecycle_db().as_std_path(), &finding.id, &now)?;
                lifecycle::remember(
                    life,
                    home.lifecycle_db().as_std_path(),
                    &finding.id,
                    &finding.server,
                    &finding.tool,
                )?;
                // What a verification run is held to, should a later
                // index no longer list it.
                lifecycle::remember_evidence(
                    life,
                    home.lifecycle_db().as_std_path(),
                    &finding.id,
                    &lifecycle::Evidence {
                        kind: finding.kind,
                        defect_class: Some(finding.defect_class),
                        err_codes: finding.err_codes.clone(),
                        failure_rate: Some(finding.failure_rate),
                    },
                )?;
            }
            Ok(())
        })?;
        catalog::replace(tx, home, &promotion, &selection.findings)?;
        Ok(promotion)
    })
}

/// Runs `mcpeval-index` on the store: it uploads what the store has new
/// and brings the team view up to date. Its summary is not ours to print;
/// its failure is, with its own words.
fn catch_up(home: &Home) -> Result<()> {
    use shared::index_summary::Summary;
    use shared::sibling::{self, Failure};
    let failed = match sibling::json::<Summary>("index", home, &["--format", "json"]) {
        Ok(_) => return Ok(()),
        Err(failed) => failed,
    };
    Err(match failed {
        Failure::Missing => shared::Error::unavailable(
            "mcpeval-index is not installed beside mcpeval-promote or on PATH; \
             with a team database promote runs it to bring the team view up to date",
        )
        .with_hint("install the whole mcpeval suite"),
        Failure::Io(e) => shared::Error::io("cannot run mcpeval-index", e),
        Failure::Failed { ended, said } => {
            let status = u8::try_from(ended.status()).unwrap_or(shared::exit::IO);
            shared::Error::new(
                shared::error::Kind::from_status(status).unwrap_or(shared::error::Kind::Io),
                format!(
                    "bringing the team view up to date failed (mcpeval-index {}); nothing was promoted:\n{}",
                    ended.describe(),
                    said.trim_end()
                ),
            )
        }
        Failure::Unreadable { .. } => shared::Error::unavailable(
            "mcpeval-index printed a summary promote cannot read; nothing was promoted",
        )
        .with_hint("install mcpeval-promote and mcpeval-index from the same release"),
    })
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
