//! The three renderings of findings. Each shows the same sanitized facts;
//! none may print anything `store::catalog::Finding` does not hold.
//!
//! Names and any other text read from the store or a share file are
//! untrusted: each goes through `shared::escape` for its medium (in
//! markdown a name is always a code span, in headings and table cells too,
//! so no link, autolink, mention, issue reference or HTML can come of it;
//! a quoted literal in the agent format, so a name can never start a line
//! there), and JSON is written with every control, bidirectional and
//! invisible character escaped. An argument-shape label
//! (`shared::tool_group`) holds names a server chose: it is escaped as a
//! name is.

use std::io::Write;

use serde_json::Value;
use shared::Result;
use shared::escape::{self, code_cell, code_span, markdown as md, quoted, terminal};
use shared::finding::{DefectClass, State};
use shared::findings::Findings;
use shared::tool_group::{self, Member};
use store::catalog::{Derived, Finding, Promotion};

/// One [`Findings`] object (`mcpeval.findings/1`) on one line.
pub fn json(
    out: &mut impl Write,
    promotion: Option<&Promotion>,
    findings: &[&Finding],
) -> Result<()> {
    let doc = Findings::new(
        promotion.map(|p| p.promoted_at.clone()),
        findings.iter().map(|f| (*f).clone()).collect(),
    );
    let text = escape::to_json(&doc).map_err(std::io::Error::from)?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// A summary table, then one section per tool and, under it, one per
/// finding. Findings of one tool are told apart by their argument-shape
/// labels, in the table and in their headings.
pub fn markdown(
    out: &mut impl Write,
    findings: &[&Finding],
    promotion: Option<&Promotion>,
) -> Result<()> {
    writeln!(out, "# mcpeval findings\n")?;
    if let Some(p) = promotion {
        writeln!(
            out,
            "{} of {} issues promoted at threshold {} (scored as of {}).\n",
            p.promoted,
            p.issues,
            p.threshold,
            md(&p.scored_as_of)
        )?;
    }
    let members: Vec<Member> = findings.iter().map(|f| Member::from(&f.derived)).collect();
    let labels = tool_group::labels(&members);
    writeln!(
        out,
        "| severity | score | finding | class | server / tool | arguments | failures | sessions | state |"
    )?;
    writeln!(
        out,
        "| --- | ---: | --- | --- | --- | --- | ---: | ---: | --- |"
    )?;
    for (f, label) in findings.iter().zip(&labels) {
        let d = &f.derived;
        writeln!(
            out,
            "| {} | {:.3} | {} | {}{} | {} / {} | {} | {} of {} | {} | {} |",
            f.severity,
            d.score,
            code_cell(&d.id),
            d.defect_class,
            violation(d, code_cell),
            code_cell(&d.server),
            code_cell(&d.tool),
            label.as_deref().map_or("-".into(), code_cell),
            d.failures,
            d.calls,
            d.sessions,
            state(f)
        )?;
    }
    for group in tool_group::groups(&members) {
        let first = &members[group[0]];
        writeln!(
            out,
            "\n## {} / {}",
            code_span(first.server),
            code_span(first.tool)
        )?;
        for i in group {
            section(out, findings[i], labels[i].as_deref())?;
        }
    }
    Ok(())
}

/// One finding's section, under its tool's heading.
fn section(out: &mut impl Write, f: &Finding, label: Option<&str>) -> Result<()> {
    let d = &f.derived;
    writeln!(
        out,
        "\n### {}: {}{}{}\n",
        code_span(&d.id),
        d.defect_class,
        violation(d, code_span),
        label.map_or(String::new(), |l| format!(", arguments {}", code_span(l)))
    )?;
    writeln!(out, "- **Fix hint:** {}", fix_hint(d, code_span))?;
    writeln!(
        out,
        "- **Failures:** {} of {} calls ({:.1}%; 95% Wilson lower bound {:.3}) in {} sessions, {} to {}",
        d.failures,
        d.calls,
        100.0 * d.failure_rate,
        d.wilson_lower,
        d.sessions,
        md(&d.first_seen),
        md(&d.last_seen)
    )?;
    writeln!(
        out,
        "- **Errors:** {}; retryable: {}",
        codes(d.err_code, &d.err_codes),
        retryable(d.retryable)
    )?;
    writeln!(
        out,
        "- **Cost:** failure windows of median {} turns; blast radius {} tool{}",
        d.median_window_turns,
        d.blast_radius,
        if d.blast_radius == 1 { "" } else { "s" }
    )?;
    writeln!(
        out,
        "- **Argument shapes:** {}",
        shapes(&d.args_shapes, code_span)
    )?;
    writeln!(
        out,
        "- **Lifecycle:** {} (streak {}/3), severity {}, probe attached: {}",
        state(f),
        f.streak,
        f.severity,
        if f.probe_attached { "yes" } else { "no" }
    )?;
    Ok(())
}

/// The state, with whether a closure by verification was witnessed.
fn state(f: &Finding) -> String {
    match f.witnessed {
        Some(true) => format!("{} (witnessed)", f.state),
        Some(false) => format!("{} (unwitnessed)", f.state),
        None => f.state.to_string(),
    }
}

/// Plain instructions for an LLM agent that will change the server.
pub fn agent(out: &mut impl Write, findings: &[&Finding]) -> Result<()> {
    writeln!(
        out,
        "These are recurring tool failures that real agents hit on MCP servers, ranked by score.\n\
Each names the failing tool, how often it fails, the class of defect and a server-side fix.\n\
Fix the server code, then prove the fix with the commands given: a finding closes after\n\
three consecutive green verification runs.\n"
    )?;
    let members: Vec<Member> = findings.iter().map(|f| Member::from(&f.derived)).collect();
    let labels = tool_group::labels(&members);
    for (n, (f, label)) in findings.iter().zip(&labels).enumerate() {
        let d = &f.derived;
        // An id from a tampered index could hold anything; a valid one
        // comes out unchanged.
        let id = terminal(&d.id);
        // The label is JSON text, its keys quoted literals as a name is
        // here; it ends the line, so a label cut inside a literal leaves
        // nothing after it to swallow.
        writeln!(
            out,
            "{}. {id} [{}{}; severity {}, score {:.3}, state {}]{}",
            n + 1,
            d.defect_class,
            violation(d, quoted),
            f.severity,
            d.score,
            f.state,
            label
                .as_deref()
                .map_or(String::new(), |l| format!(" arguments {}", terminal(l)))
        )?;
        writeln!(
            out,
            "   what fails: tool {} on server {}; {}",
            quoted(&d.tool),
            quoted(&d.server),
            codes(d.err_code, &d.err_codes)
        )?;
        writeln!(
            out,
            "   how often: {} of {} calls ({:.1}%) in {} sessions; last seen {}",
            d.failures,
            d.calls,
            100.0 * d.failure_rate,
            d.sessions,
            terminal(&d.last_seen)
        )?;
        writeln!(
            out,
            "   arguments seen (shapes, not values): {}",
            shapes(&d.args_shapes, |s| s.to_owned())
        )?;
        writeln!(out, "   fix: {}", fix_hint(d, quoted))?;
        next_steps(out, f, &id)?;
    }
    Ok(())
}

/// What to do next, by lifecycle state: a manifest case to write only
/// while none was verified, runs of `verify` while it is open, and
/// nothing for a closed finding but what would reopen it.
fn next_steps(out: &mut impl Write, f: &Finding, id: &str) -> Result<()> {
    let manifest = format!("{id}.manifest.json");
    let verify = format!(
        "mcpeval verify --finding {id} --case {id} --manifest {manifest} -- <server command>"
    );
    let reopens = "a red verification run reopens it";
    match f.state {
        State::Closed => {
            let how = match f.witnessed {
                Some(true) => {
                    "by three consecutive green verification runs, witnessed (the same case ran \
                     red against the same target before them)"
                }
                Some(false) => {
                    "by three consecutive green verification runs, unwitnessed (no red run of \
                     the case came first, so nothing shows it can tell the bug from the repair)"
                }
                None if f.streak >= 3 => {
                    "by three consecutive green verification runs (recorded before closures were \
                     told witnessed or not)"
                }
                None => "by hand (mcpeval close)",
            };
            writeln!(
                out,
                "   closed {how}: nothing to do; if the failure comes back, {reopens}\n"
            )?;
        }
        State::Verifying => {
            let left = 3u32.saturating_sub(f.streak).max(1);
            writeln!(
                out,
                "   verifying: {} of 3 green runs; run verify {left} more time{}, green each time, to close it ({reopens} instead):\n         \
{verify}\n",
                f.streak,
                if left == 1 { "" } else { "s" }
            )?;
        }
        State::FixClaimed => writeln!(
            out,
            "   fix claimed, but the last verification run was red: fix the server, then run\n         \
{verify}\n"
        )?,
        _ if f.probe_attached => writeln!(
            out,
            "   reopened by a red verification run: fix the server, then run\n         \
{verify}\n"
        )?,
        _ => {
            let expect = if f.derived.defect_class == DefectClass::FalseSuccess {
                writeln!(
                    out,
                    "   first: write expect.json with the result that proves the contract holds, e.g.\n   \
{{\"outcome\": \"ok\", \"equals_paths\": {{\"/structuredContent/status\": \"ready\"}}}}"
                )?;
                " --expect expect.json"
            } else {
                ""
            };
            writeln!(
                out,
                "   next: mcpeval generate --finding {id} --confirm-read-only{expect} --output {manifest}"
            )?;
            writeln!(
                out,
                "   then: fill the placeholders it lists, and run\n         {verify}\n"
            )?;
        }
    }
    Ok(())
}

/// ` at PLACE: KEYWORD` for a contract finding, the place shown by
/// `show`; nothing for any other.
fn violation(d: &Derived, show: impl Fn(&str) -> String) -> String {
    d.contract
        .as_ref()
        .map_or(String::new(), |v| format!(" {}", v.describe_with(show)))
}

/// The fix hint, with a contract finding's place shown by `show`.
fn fix_hint(d: &Derived, show: impl Fn(&str) -> String) -> String {
    d.contract
        .as_ref()
        .map_or_else(|| d.fix_hint.clone(), |v| v.fix_hint_with(show))
}

fn codes(main: Option<i64>, all: &[i64]) -> String {
    match main {
        None => "no error code".into(),
        Some(code) if all.len() <= 1 => format!("error code {code}"),
        Some(code) => {
            let list: Vec<String> = all.iter().map(i64::to_string).collect();
            format!("error codes {} (most frequent {code})", list.join(", "))
        }
    }
}

fn retryable(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "always",
        Some(false) => "never",
        None => "mixed or unreported",
    }
}

/// The argument shapes as JSON, each dressed by `show` for the medium.
fn shapes(shapes: &[Value], show: impl Fn(&str) -> String) -> String {
    if shapes.is_empty() {
        return "none recorded".into();
    }
    shapes
        .iter()
        .map(|s| show(&escape::to_json(s).unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(", ")
}
