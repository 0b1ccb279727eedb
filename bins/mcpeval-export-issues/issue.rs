//! One finding as an issue body a tracker accepts as is.
//!
//! It prints only what `store::catalog::Finding` holds, so it is as
//! sanitized as `findings`: shapes, never values. Names (and any text read
//! from the index) are untrusted and go through `shared::escape`: a name is
//! only ever a code span that no backtick closes (so no link, autolink,
//! mention, issue reference or HTML can come of it), table cells are split
//! by no pipe, and JSON has every control, bidirectional and invisible
//! character escaped. The title's argument-shape label (what tells the
//! finding from the others of its tool, `shared::tool_group`) holds names
//! a server chose, so it is a code span too.

use std::fmt::Write;

use serde_json::{Value, json};
use shared::escape::{self, code_span, markdown, terminal};
use shared::finding::DefectClass;
use store::catalog::Finding;

/// The command that writes the finding's one-case manifest.
pub fn generate_command(f: &Finding) -> String {
    let d = &f.derived;
    let id = terminal(&d.id);
    let expect = if d.defect_class == DefectClass::FalseSuccess {
        " --expect expect.json"
    } else {
        ""
    };
    format!(
        "mcpeval generate --finding {id} --confirm-read-only{expect} --output {id}.manifest.json"
    )
}

/// The command that verifies a repair with that manifest.
pub fn verify_command(f: &Finding) -> String {
    format!(
        "mcpeval verify --finding {id} --case {id} --manifest {id}.manifest.json -- <server command>",
        id = terminal(&f.derived.id)
    )
}

/// The whole markdown body; `label` is the finding's argument-shape
/// label among the open findings of its tool.
pub fn render(f: &Finding, label: Option<&str>) -> String {
    let d = &f.derived;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {}: {} on server {} fails{}{}\n",
        d.defect_class,
        code_span(&d.tool),
        code_span(&d.server),
        d.contract.as_ref().map_or(String::new(), |v| format!(
            " its outputSchema {}",
            v.describe_with(code_span)
        )),
        label.map_or(String::new(), |l| format!(
            " with arguments {}",
            code_span(l)
        ))
    );
    let _ = writeln!(
        s,
        "Finding {} ({} severity, score {:.3}; state {}, streak {}/3{}). \
Recorded by mcpeval from real agent traffic; every figure below is an aggregate \
and every argument a shape, never a value.\n",
        code_span(&d.id),
        f.severity,
        d.score,
        f.state,
        f.streak,
        if f.probe_attached {
            ", probe attached"
        } else {
            ", no probe attached yet"
        }
    );
    let _ = writeln!(s, "## Evidence\n");
    let _ = writeln!(s, "| figure | value |\n| --- | --- |");
    let rows: [(&str, String); 13] = [
        ("failures", d.failures.to_string()),
        ("calls", d.calls.to_string()),
        ("failure rate", format!("{:.1}%", 100.0 * d.failure_rate)),
        ("95% Wilson lower bound", format!("{:.3}", d.wilson_lower)),
        ("sessions", d.sessions.to_string()),
        ("first seen", d.first_seen.clone()),
        ("last seen", d.last_seen.clone()),
        (
            "failure windows",
            format!(
                "median {} turn{}",
                d.median_window_turns,
                if d.median_window_turns == 1.0 {
                    ""
                } else {
                    "s"
                }
            ),
        ),
        (
            "blast radius",
            format!(
                "{} tool{}",
                d.blast_radius,
                if d.blast_radius == 1 { "" } else { "s" }
            ),
        ),
        ("error code", codes(d.err_code, &d.err_codes)),
        ("retryable", retryable(d.retryable).to_owned()),
        ("severity", f.severity.to_string()),
        ("score", format!("{:.3}", d.score)),
    ];
    for (name, value) in rows {
        let _ = writeln!(s, "| {name} | {} |", markdown(&value));
    }
    let _ = writeln!(s, "\n## Repro (shape level)\n");
    let _ = writeln!(
        s,
        "Call the tool with arguments of this shape (each scalar stands for a value of that JSON type):\n"
    );
    let shape = d.args_shapes.first().cloned().unwrap_or_else(|| json!({}));
    let call = json!({"method": "tools/call", "params": {"name": d.tool, "arguments": shape}});
    let _ = writeln!(
        s,
        "```json\n{}\n```",
        escape::to_json_pretty(&call).unwrap_or_default()
    );
    if d.args_shapes.len() > 1 {
        let others: Vec<String> = d.args_shapes[1..]
            .iter()
            .map(|v: &Value| code_span(&escape::to_json(v).unwrap_or_default()))
            .collect();
        let _ = writeln!(
            s,
            "\nOther argument shapes seen failing: {}",
            others.join(", ")
        );
    }
    let hint = d
        .contract
        .as_ref()
        .map_or_else(|| d.fix_hint.clone(), |v| v.fix_hint_with(code_span));
    let _ = writeln!(s, "\n## Fix hint\n\n{hint}");
    let _ = writeln!(s, "\n## Prove the fix\n");
    if d.defect_class == DefectClass::FalseSuccess {
        let _ = writeln!(
            s,
            "First write `expect.json`, the result that tells the bug from the repair, e.g. \
`{{\"outcome\": \"ok\", \"equals_paths\": {{\"/structuredContent/status\": \"ready\"}}}}`. Then:\n"
        );
    }
    let verify = verify_command(f);
    let _ = writeln!(
        s,
        "```sh\n{}\n# fill every \"<fill:TYPE>\" placeholder it lists; then, before the fix, against\n\
# the server as it is (red: the case reproduces the bug):\n{verify}\n\
# after the fix, three times against the repaired server, with the same command:\n{verify}\n```",
        generate_command(f),
    );
    let _ = writeln!(
        s,
        "\nThree consecutive green runs close the finding; a red run reopens it. The closure is \
*witnessed* when the same case ran red against the same server command (or URL and headers) before the \
green streak: that shows the case tells the bug from the repair. `mcpeval findings` says \
whether a closure was witnessed, and `\"require_witnessed\": true` in config.json keeps an \
unwitnessed streak at verifying."
    );
    s
}

fn codes(main: Option<i64>, all: &[i64]) -> String {
    match main {
        None => "none".into(),
        Some(code) if all.len() <= 1 => code.to_string(),
        Some(code) => {
            let list: Vec<String> = all.iter().map(i64::to_string).collect();
            format!("{} (most frequent {code})", list.join(", "))
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
