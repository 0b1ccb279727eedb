//! The run's one summary: a line on stderr, or one JSON object on stdout.

use std::io::{self, Write};

use shared::error::Result;

use crate::args::Format;
use crate::refresh::Outcome;

/// Reports `outcome` in `format`.
pub fn print(outcome: &Outcome, format: Format) -> Result<()> {
    match format {
        Format::Text => {
            // Diagnostics: a closed stderr is no reason to fail the run.
            let _ = writeln!(io::stderr().lock(), "{}", line(outcome));
            Ok(())
        }
        Format::Json => {
            // Written by hand to keep the documented key order.
            let seconds = serde_json::Value::from((outcome.seconds * 1000.0).round() / 1000.0);
            let rebuild = serde_json::Value::from(outcome.rebuild.clone());
            let mut out = io::stdout().lock();
            writeln!(
                out,
                "{{\"calls\":{},\"new\":{},\"journals\":{},\"seconds\":{seconds},\"rebuild\":{rebuild}}}",
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
