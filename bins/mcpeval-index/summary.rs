//! The run's one summary: a line on stderr, or one JSON object on stdout.

use std::io::{self, Write};

use shared::error::Result;

use crate::args::Format;
use crate::pool::Synced;
use crate::refresh::Outcome;

/// Reports `outcome` (and with a team database what was synced) in `format`.
pub fn print(outcome: &Outcome, team: Option<&Synced>, format: Format) -> Result<()> {
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
            // Written by hand to keep the documented key order.
            let rounded = |s: f64| serde_json::Value::from((s * 1000.0).round() / 1000.0);
            let seconds = rounded(outcome.seconds);
            let rebuild = serde_json::Value::from(outcome.rebuild.clone());
            let mut out = io::stdout().lock();
            let team = match team {
                Some(t) => format!(
                    ",\"team\":{{\"database\":{},\"uploaded\":{},\"stores\":{},\"calls\":{},\"new\":{},\"journals\":{},\"seconds\":{{\"upload\":{},\"pull\":{},\"index\":{}}}}}",
                    serde_json::Value::from(t.database.as_str()),
                    t.uploaded.calls,
                    t.pulled.stores,
                    t.view.calls,
                    t.view.new,
                    t.view.journals,
                    rounded(t.upload_seconds),
                    rounded(t.pull_seconds),
                    rounded(t.view.seconds)
                ),
                None => String::new(),
            };
            writeln!(
                out,
                "{{\"calls\":{},\"new\":{},\"journals\":{},\"seconds\":{seconds},\"rebuild\":{rebuild}{team}}}",
                outcome.calls, outcome.new, outcome.journals
            )?;
            Ok(out.flush()?)
        }
    }
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
