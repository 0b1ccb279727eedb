//! The three renderings of findings. Each shows the same sanitized facts;
//! none may print anything `shared::catalog::Finding` does not hold.

use std::io::Write;

use serde_json::{Value, json};
use shared::Result;
use shared::catalog::{Finding, Promotion};

/// `{"findings": [...]}` on one line.
pub fn json(out: &mut impl Write, findings: &[&Finding]) -> Result<()> {
    serde_json::to_writer(&mut *out, &json!({ "findings": findings }))
        .map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// A summary table, then one section per finding.
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
            p.promoted, p.issues, p.threshold, p.scored_as_of
        )?;
    }
    writeln!(
        out,
        "| severity | score | finding | class | server / tool | failures | sessions | state |"
    )?;
    writeln!(out, "| --- | ---: | --- | --- | --- | ---: | ---: | --- |")?;
    for f in findings {
        let d = &f.derived;
        writeln!(
            out,
            "| {} | {:.3} | `{}` | {} | {} / {} | {} of {} | {} | {} |",
            f.severity,
            d.score,
            d.id,
            d.defect_class,
            cell(&d.server),
            cell(&d.tool),
            d.failures,
            d.calls,
            d.sessions,
            f.state
        )?;
    }
    for f in findings {
        let d = &f.derived;
        writeln!(
            out,
            "\n## `{}`: {} in {} / {}\n",
            d.id,
            d.defect_class,
            cell(&d.server),
            cell(&d.tool)
        )?;
        writeln!(out, "- **Fix hint:** {}", d.fix_hint)?;
        writeln!(
            out,
            "- **Failures:** {} of {} calls ({:.1}%; 95% Wilson lower bound {:.3}) in {} sessions, {} to {}",
            d.failures,
            d.calls,
            100.0 * d.failure_rate,
            d.wilson_lower,
            d.sessions,
            d.first_seen,
            d.last_seen
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
            shapes(&d.args_shapes, "`")
        )?;
        writeln!(
            out,
            "- **Lifecycle:** {} (streak {}/3), severity {}, probe attached: {}",
            f.state,
            f.streak,
            f.severity,
            if f.probe_attached { "yes" } else { "no" }
        )?;
    }
    Ok(())
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
    for (n, f) in findings.iter().enumerate() {
        let d = &f.derived;
        let manifest = format!("{}.manifest.json", d.id);
        writeln!(
            out,
            "{}. {} [{}; severity {}, score {:.3}, state {}]",
            n + 1,
            d.id,
            d.defect_class,
            f.severity,
            d.score,
            f.state
        )?;
        writeln!(
            out,
            "   what fails: tool `{}` on server `{}`; {}",
            d.tool,
            d.server,
            codes(d.err_code, &d.err_codes)
        )?;
        writeln!(
            out,
            "   how often: {} of {} calls ({:.1}%) in {} sessions; last seen {}",
            d.failures,
            d.calls,
            100.0 * d.failure_rate,
            d.sessions,
            d.last_seen
        )?;
        writeln!(
            out,
            "   arguments seen (shapes, not values): {}",
            shapes(&d.args_shapes, "")
        )?;
        writeln!(out, "   fix: {}", d.fix_hint)?;
        let expect = if d.defect_class == "false-success" {
            " --expect expect.json"
        } else {
            ""
        };
        if d.defect_class == "false-success" {
            writeln!(
                out,
                "   first: write expect.json with the result that proves the contract holds, e.g.\n   \
{{\"outcome\": \"ok\", \"equals_paths\": {{\"/structuredContent/status\": \"ready\"}}}}"
            )?;
        }
        writeln!(
            out,
            "   next: mcpeval generate --finding {} --confirm-read-only{expect} --output {manifest}",
            d.id
        )?;
        writeln!(
            out,
            "   then: fill the placeholders it lists, and run\n         \
mcpeval verify --finding {id} --case {id} --manifest {manifest} -- <server command>\n",
            id = d.id
        )?;
    }
    Ok(())
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

fn shapes(shapes: &[Value], quote: &str) -> String {
    if shapes.is_empty() {
        return "none recorded".into();
    }
    shapes
        .iter()
        .map(|s| format!("{quote}{s}{quote}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Escapes a table cell's pipes.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
