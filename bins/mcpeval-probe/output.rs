//! Printing a result: the JSON object, or one line for people. stdout
//! carries this and nothing else.

use std::io::Write;

use shared::Result;
use shared::probe_result::ProbeResult;

use crate::args::Format;

/// Writes `result` to stdout in `format`; a closed pipe ends quietly.
pub fn print(result: &ProbeResult, format: Format) -> Result<()> {
    let line = match format {
        // `--format junit` is refused without --all, where junit.rs prints.
        Format::Json | Format::Junit => result.to_json_line(),
        Format::Text => summary(result),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// `FINDING case=C probe=P result=R attempts=N binding=B run=UUID`, then
/// ` reason=R detail="…"` when it is not green.
pub fn summary(r: &ProbeResult) -> String {
    let mut line = format!(
        "{} case={} probe={} result={} attempts={} binding={} run={}",
        r.finding,
        r.case,
        r.probe,
        r.result.as_str(),
        r.attempts,
        r.binding,
        r.run_id
    );
    if let Some(reason) = r.reason {
        line.push_str(&format!(" reason={}", reason.as_str()));
    }
    if let Some(detail) = &r.detail {
        line.push_str(&format!(" detail={detail:?}"));
    }
    line
}
