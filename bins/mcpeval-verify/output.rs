//! What verify prints: the result line (and hint), or one JSON object.
//! stdout carries this and nothing else.

use std::io::Write;

use serde::Serialize;
use shared::Result;
use shared::probe_result::ProbeResult;
use shared::verification::{GREENS_TO_CLOSE, Recorded};

use crate::args::Format;

/// The facts of one recorded (or replayed) run.
#[derive(Debug, Serialize)]
struct Facts<'a> {
    finding: &'a str,
    case: &'a str,
    result: &'static str,
    state: &'static str,
    streak: u32,
    streak_to_close: u32,
    reopened: u32,
    run: &'a str,
    reason: Option<&'static str>,
    hint: Option<&'static str>,
    already_recorded: bool,
}

/// What verify prints once the runs it recorded are committed: with a
/// team database that is after the transaction that holds them, so a
/// line never tells of a run the database does not have.
#[derive(Debug, Default)]
pub struct Pending {
    lines: Vec<String>,
    summary: Option<String>,
}

impl Pending {
    /// The outcome of recording `result`, in `format`.
    pub fn push(&mut self, result: &ProbeResult, recorded: &Recorded, format: Format) {
        self.lines.push(render(result, recorded, format));
    }

    /// The summary of several results, for stderr.
    pub fn summary(&mut self, text: String) {
        self.summary = Some(text);
    }

    /// Prints the lines on stdout, then the summary on stderr.
    pub fn emit(self) -> Result<()> {
        let mut out = std::io::stdout().lock();
        for line in &self.lines {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
        if let Some(summary) = self.summary {
            // Diagnostics: a closed stderr is no reason to fail.
            let _ = writeln!(std::io::stderr().lock(), "{summary}");
        }
        Ok(())
    }
}

/// The outcome of recording `result` in `format`.
fn render(result: &ProbeResult, recorded: &Recorded, format: Format) -> String {
    let state = recorded.state();
    let facts = Facts {
        finding: &result.finding,
        case: &result.case,
        result: result.result.as_str(),
        state: state.state.as_str(),
        streak: state.streak,
        streak_to_close: GREENS_TO_CLOSE,
        reopened: state.reopened,
        run: &result.run_id,
        reason: result.reason.map(|r| r.as_str()),
        hint: result.reason.map(|r| r.hint()),
        already_recorded: matches!(recorded, Recorded::Replay { .. }),
    };
    match format {
        Format::Json => serde_json::to_string(&facts).expect("facts serialize"),
        Format::Text => line(&facts),
    }
}

/// `FINDING case=C result=R state=S streak=N/3 run=UUID`, then on red
/// ` reason=R` and an indented hint line; or the replay line.
fn line(f: &Facts<'_>) -> String {
    if f.already_recorded {
        return format!(
            "{} case={} run={} already recorded: no credit added (state={} streak={}/{})",
            f.finding, f.case, f.run, f.state, f.streak, f.streak_to_close
        );
    }
    let mut line = format!(
        "{} case={} result={} state={} streak={}/{} run={}",
        f.finding, f.case, f.result, f.state, f.streak, f.streak_to_close, f.run
    );
    if let (Some(reason), Some(hint)) = (f.reason, f.hint) {
        line.push_str(&format!(" reason={reason}\n  hint: {hint}"));
    }
    line
}
