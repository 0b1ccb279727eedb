//! What verify prints: the result line (and hint), or one JSON object.
//! stdout carries this and nothing else.

use std::io::Write;

use serde::Serialize;
use shared::Result;
use shared::probe_result::ProbeResult;
use store::verification::{GREENS_TO_CLOSE, Recorded};

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
    hint: Option<String>,
    /// For a finding this run closed: whether a red run of the case
    /// against the same target came before the streak.
    witnessed: Option<bool>,
    already_recorded: bool,
}

/// What verify prints once the runs it recorded are committed: with a
/// team database that is after the transaction that holds them, so a
/// line never tells of a run the database does not have.
#[derive(Debug, Default)]
pub struct Pending {
    lines: Vec<String>,
    notes: Vec<String>,
    summary: Option<String>,
}

impl Pending {
    /// The outcome of recording `result`, in `format`, with the hint of
    /// a red run.
    pub fn push(
        &mut self,
        result: &ProbeResult,
        recorded: &Recorded,
        hint: Option<String>,
        format: Format,
    ) {
        self.lines.push(render(result, recorded, hint, format));
    }

    /// A note for stderr, after the lines.
    pub fn note(&mut self, text: String) {
        self.notes.push(text);
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
        // Diagnostics: a closed stderr is no reason to fail.
        let mut err = std::io::stderr().lock();
        for note in self.notes.iter().chain(&self.summary) {
            let _ = writeln!(err, "{note}");
        }
        Ok(())
    }
}

/// The outcome of recording `result` in `format`.
fn render(
    result: &ProbeResult,
    recorded: &Recorded,
    hint: Option<String>,
    format: Format,
) -> String {
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
        hint: result.reason.and(hint),
        witnessed: state
            .witnessed
            .filter(|_| state.state == shared::finding::State::Closed),
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
    if let (Some(reason), Some(hint)) = (f.reason, &f.hint) {
        line.push_str(&format!(" reason={reason}\n  hint: {hint}"));
    }
    line
}
