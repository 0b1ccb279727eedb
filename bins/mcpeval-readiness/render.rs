//! The report for people (markdown) and for scripts (one JSON object).
//!
//! Server and tool names are untrusted: in markdown each is a code span
//! (`shared::escape::code_span`, a table cell's `|` escaped too), so no
//! link, autolink, mention, issue reference or HTML can come of one; JSON
//! has every control, bidirectional and invisible character escaped.

use std::borrow::Cow;
use std::io::Write;

use shared::Result;
use shared::escape::{self, code_cell, code_span};

use crate::verdict::Report;

/// One JSON object on one line.
pub fn json(out: &mut impl Write, report: &Report) -> Result<()> {
    let text = escape::to_json(report).map_err(std::io::Error::from)?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// A section per server: verdict, reasons, counted findings, the
/// verifying ones apart from the reasons, then a table of failures/calls
/// per tool and day.
pub fn markdown(out: &mut impl Write, report: &Report) -> Result<()> {
    writeln!(
        out,
        "# mcpeval readiness: {} UTC day{} to {}\n",
        report.days.len(),
        if report.days.len() == 1 { "" } else { "s" },
        report.as_of
    )?;
    if report.servers.is_empty() {
        writeln!(out, "No captured calls in these days and no open findings.")?;
        return Ok(());
    }
    // Every name (and finding id) in a sentence is a code span.
    let name = |text: &str| Cow::Owned(code_span(text));
    for s in &report.servers {
        writeln!(out, "## {}: {}\n", code_span(&s.server), s.verdict)?;
        for reason in &s.reasons {
            writeln!(out, "- {}", reason.sentence(name))?;
        }
        if let Some(o) = &s.open_findings {
            writeln!(
                out,
                "\nOpen findings: {} high, {} medium, {} low.",
                o.high, o.medium, o.low
            )?;
        }
        if let Some(verifying) = s.verifying.as_ref().filter(|v| !v.is_empty()) {
            writeln!(out, "\nVerifying, not counted against the verdict:\n")?;
            for v in verifying {
                writeln!(out, "- {}", crate::verdict::verifying_sentence(v, name))?;
            }
        }
        if s.tools.is_empty() {
            writeln!(out)?;
            continue;
        }
        write!(out, "\n| tool |")?;
        for day in &report.days {
            write!(out, " {} |", &day[5..])?;
        }
        write!(out, "\n| --- |")?;
        for _ in &report.days {
            write!(out, " ---: |")?;
        }
        writeln!(out)?;
        for t in &s.tools {
            write!(out, "| {} |", code_cell(&t.tool))?;
            for d in &t.daily {
                if d.calls == 0 {
                    write!(out, " - |")?;
                } else {
                    write!(out, " {}/{} |", d.failures, d.calls)?;
                }
            }
            writeln!(out)?;
        }
        writeln!(
            out,
            "\nCells are failures/calls of captured traffic; - is no calls.\n"
        )?;
    }
    Ok(())
}
