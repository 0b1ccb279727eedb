//! The run's one summary: a line on stderr, or one JSON object on stdout.

use std::io::{self, Write};

use shared::error::Result;
use shared::index_summary::{Summary, Team, TeamSeconds, millis};

use crate::args::Format;
use crate::pool::Synced;
use crate::refresh::Outcome;

/// Reports `outcome` (and with a team database what was synced) in `format`.
pub fn print(outcome: &Outcome, team: Option<&Synced>, format: Format) -> Result<()> {
    if let Some(line) = team.and_then(joined_line) {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }
    match format {
        Format::Text => {
            // Diagnostics: a closed stderr is no reason to fail the run.
            let mut err = io::stderr().lock();
            let _ = writeln!(err, "{}", line(outcome));
            if let Some(team) = team {
                let _ = writeln!(err, "{}", team_line(team));
            }
            Ok(())
        }
        Format::Json => {
            let team = team.map(|t| Team {
                database: t.database.clone(),
                uploaded: t.uploaded.calls,
                stores: t.pulled.stores,
                calls: count(t.view.calls),
                new: count(t.view.new),
                journals: count(t.view.journals),
                seconds: TeamSeconds {
                    upload: millis(t.upload_seconds),
                    pull: millis(t.pull_seconds),
                    index: millis(t.view.seconds),
                },
            });
            let summary = Summary {
                calls: count(outcome.calls),
                new: count(outcome.new),
                journals: count(outcome.journals),
                seconds: millis(outcome.seconds),
                rebuild: outcome.rebuild.clone(),
                team,
            };
            let mut out = io::stdout().lock();
            serde_json::to_writer(&mut out, &summary).map_err(io::Error::from)?;
            writeln!(out)?;
            Ok(out.flush()?)
        }
    }
}

/// A count as the summary reports it (SQLite counts are never negative).
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// `indexed N calls (M new) from K journals in S s[; full rebuild: REASON]`.
pub fn line(o: &Outcome) -> String {
    let rebuild = match &o.rebuild {
        Some(reason) => format!("; full rebuild: {reason}"),
        None => String::new(),
    };
    format!(
        "indexed {} calls ({} new) from {} journals in {:.2} s{rebuild}",
        o.calls, o.new, o.journals, o.seconds
    )
}

/// What a store's own lifecycle brought into the team's, when it
/// joined, so nothing it held is left behind unsaid.
pub fn joined_line(t: &Synced) -> Option<String> {
    let j = t.joined.as_ref()?;
    Some(format!(
        "team {}: this store joined with a lifecycle of its own: {} runs and {} annotations added, {} finding states recomputed from the merged runs",
        t.database, j.runs, j.annotations, j.states
    ))
}

/// `team DB: uploaded U calls; the team's view holds N calls (M new) from
/// K journals of S stores[; full rebuild: REASON]`.
pub fn team_line(t: &Synced) -> String {
    let rebuild = match &t.view.rebuild {
        Some(reason) => format!("; full rebuild: {reason}"),
        None => String::new(),
    };
    format!(
        "team {}: uploaded {} calls; the team's view holds {} calls ({} new) from {} journals of {} stores{rebuild}",
        t.database, t.uploaded.calls, t.view.calls, t.view.new, t.view.journals, t.pulled.stores
    )
}
