//! The one HTML page: head with its Content-Security-Policy and inline
//! stylesheet, then per server the verdict and the tools' charts, then
//! the findings table and, under a heading per tool, each finding's fix
//! hint and history. Findings of one tool are told apart wherever they
//! are named by their argument-shape labels (`shared::tool_group`).
//!
//! It must never emit a script, an event handler, an external reference
//! or an unescaped name: everything that came from a sibling goes through
//! [`text`], and everything else is a literal of this file.

use std::fmt::Write;

use crate::chart;
use crate::evidence::{Evidence, Finding, History, Server};
use shared::escape::html as text;
use shared::tool_group::{self, Member};

/// What the browser may load: nothing, except the inline styles.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The findings as the page arranges them: grouped by tool, and each
/// with its argument-shape label, both by position in the findings.
struct Arranged {
    labels: Vec<Option<String>>,
    groups: Vec<Vec<usize>>,
}

impl Arranged {
    fn new(findings: &[Finding]) -> Arranged {
        let members: Vec<Member> = findings
            .iter()
            .map(|f| Member {
                server: &f.server,
                tool: &f.tool,
                args_shapes: &f.args_shapes,
            })
            .collect();
        Arranged {
            labels: tool_group::labels(&members),
            groups: tool_group::groups(&members),
        }
    }

    /// The label of finding `i` as inline code after a space, or nothing.
    fn shape(&self, i: usize) -> String {
        self.labels[i].as_deref().map_or(String::new(), |l| {
            format!(r#" <code class="shape">{}</code>"#, text(l))
        })
    }
}

/// The complete page.
pub fn render(evidence: &Evidence) -> String {
    let arranged = Arranged::new(&evidence.findings);
    let r = &evidence.readiness;
    let open = evidence.findings.iter().filter(|f| counted(f)).count();
    let verifying = evidence
        .findings
        .iter()
        .filter(|f| f.state == "verifying")
        .count();
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>mcpeval report to {}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>mcpeval report</h1>
<p class="lede">{} UTC day{} to {} · {} server{} · {} finding{}, {open} open, {verifying} verifying</p>
</header>
"#,
        text(&r.as_of),
        r.days.len(),
        plural(r.days.len()),
        text(&r.as_of),
        r.servers.len(),
        plural(r.servers.len()),
        evidence.findings.len(),
        plural(evidence.findings.len()),
    );
    nav(&mut out, evidence);
    out.push_str("<main>\n<section id=\"servers\">\n<h2>Servers</h2>\n");
    if r.servers.is_empty() {
        out.push_str(
            "<p class=\"empty\">No captured calls in these days and no open findings.</p>\n",
        );
    }
    let from = chart::first_day(&r.servers);
    for (i, s) in r.servers.iter().enumerate() {
        server(&mut out, i, s, evidence, &arranged, from);
    }
    out.push_str("</section>\n");
    findings(&mut out, evidence, &arranged);
    out.push_str(
        "</main>\n<footer>Written by mcpeval-report from the JSON of <code>mcpeval findings</code>, \
<code>mcpeval findings --history</code> and <code>mcpeval readiness</code>. \
This page holds no script and loads nothing.</footer>\n</body>\n</html>\n",
    );
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether a finding counts against its server, as readiness counts it:
/// open or fix-claimed. Verifying findings are shown apart, closed ones
/// not at all.
fn counted(f: &Finding) -> bool {
    f.state == "open" || f.state == "fix-claimed"
}

fn nav(out: &mut String, evidence: &Evidence) {
    out.push_str("<nav aria-label=\"Contents\"><ul>");
    for (i, s) in evidence.readiness.servers.iter().enumerate() {
        let _ = write!(
            out,
            r##"<li><a href="#server-{i}">{}</a> {}</li>"##,
            text(&s.server),
            verdict(&s.verdict)
        );
    }
    out.push_str(r##"<li><a href="#findings">Findings</a></li></ul></nav>"##);
    out.push('\n');
}

/// A verdict as a badge: a symbol and the word, never colour alone.
fn verdict(v: &str) -> String {
    let (class, symbol) = match v {
        "ready" => ("ready", "✓"),
        "at-risk" => ("at-risk", "▲"),
        "not-ready" => ("not-ready", "✖"),
        _ => ("unknown", "?"),
    };
    format!(
        r#"<span class="verdict v-{class}">{symbol} {}</span>"#,
        text(v)
    )
}

/// One server's card; its charts start at day `from` (see
/// [`chart::first_day`]).
fn server(
    out: &mut String,
    i: usize,
    s: &Server,
    evidence: &Evidence,
    arranged: &Arranged,
    from: usize,
) {
    let _ = write!(
        out,
        r#"<section class="server" id="server-{i}" data-server="{}">
<h3><span class="name">{}</span> {}</h3>
<ul class="reasons">"#,
        text(&s.server),
        text(&s.server),
        verdict(&s.verdict),
    );
    for reason in &s.reasons {
        let _ = write!(out, "<li>{}</li>", text(reason));
    }
    out.push_str("</ul>\n");
    match &s.open_findings {
        Some(o) => {
            out.push_str(r#"<p class="open">Open findings:"#);
            for (n, sev) in [(o.high, "high"), (o.medium, "medium"), (o.low, "low")] {
                let zero = if n == 0 { " zero" } else { "" };
                let _ = write!(
                    out,
                    r#" <span class="sev sev-{sev}{zero}">{n} {sev}</span>"#
                );
            }
            // A tool's findings side by side, each with its label.
            let listed = arranged.groups.iter().flatten().copied().filter(|&n| {
                let f = &evidence.findings[n];
                f.server == s.server && counted(f)
            });
            for n in listed {
                let f = &evidence.findings[n];
                let _ = write!(
                    out,
                    r##" · <a href="#{}">{}{}</a>"##,
                    text(&f.id),
                    text(&f.tool),
                    arranged.shape(n)
                );
            }
            out.push_str("</p>\n");
        }
        None => out.push_str("<p class=\"open\">Open findings: unknown (no index).</p>\n"),
    }
    if let Some(verifying) = s.verifying.as_ref().filter(|v| !v.is_empty()) {
        out.push_str(r#"<p class="verifying">Verifying, not counted:"#);
        for (i, v) in verifying.iter().enumerate() {
            let shape = evidence
                .findings
                .iter()
                .position(|f| f.id == v.id)
                .map_or(String::new(), |n| arranged.shape(n));
            let _ = write!(
                out,
                r##"{} <a href="#{}">{}{shape}</a> <span class="sev sev-{sev}">{sev}</span>, streak {}/3"##,
                if i == 0 { "" } else { " ·" },
                text(&v.id),
                text(&v.tool),
                v.streak,
                sev = text(v.severity.as_str()),
            );
        }
        out.push_str("</p>\n");
    }
    if s.tools.is_empty() {
        out.push_str("<p class=\"empty\">No captured calls in these days.</p>\n");
    } else {
        out.push_str("<div class=\"charts\">\n");
        for t in &s.tools {
            let rate = if t.calls == 0 {
                String::new()
            } else {
                format!(" ({:.1}%)", 100.0 * t.failures as f64 / t.calls as f64)
            };
            let _ = write!(
                out,
                r#"<figure class="tool"><figcaption><span class="name">{}</span> <span class="muted">{} of {} calls failed{rate}</span></figcaption>"#,
                text(&t.tool),
                t.failures,
                t.calls,
            );
            chart::rate(
                out,
                &s.server,
                t,
                &evidence.readiness.days,
                from,
                evidence.readiness.rate_limit,
            );
            out.push_str("</figure>\n");
        }
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

fn findings(out: &mut String, evidence: &Evidence, arranged: &Arranged) {
    out.push_str("<section id=\"findings\">\n<h2>Findings</h2>\n");
    if evidence.findings.is_empty() {
        out.push_str(
            "<p class=\"empty\">No findings: nothing recurring was promoted.</p>\n</section>\n",
        );
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>severity</th><th>class</th><th>server / tool</th>\
<th>arguments</th><th class=\"num\">score</th><th class=\"num\">failures</th><th class=\"num\">sessions</th>\
<th>state</th><th class=\"num\">streak</th></tr></thead>\n<tbody>\n",
    );
    for (n, f) in evidence.findings.iter().enumerate() {
        let _ = writeln!(
            out,
            r##"<tr><td><span class="sev sev-{sev}">{sev}</span></td><td>{}{}</td><td><a href="#{}"><span class="name">{}</span> / <span class="name">{}</span></a></td><td>{}</td><td class="num">{:.3}</td><td class="num">{} of {}</td><td class="num">{}</td><td><span class="state st-{state}">{state}</span>{}</td><td class="num">{}/3</td></tr>"##,
            text(&f.defect_class),
            violation(f),
            text(&f.id),
            text(&f.server),
            text(&f.tool),
            arranged.shape(n).trim_start(),
            f.score,
            f.failures,
            f.calls,
            f.sessions,
            closure(f),
            f.streak,
            sev = text(&f.severity),
            state = text(&f.state),
        );
    }
    out.push_str("</tbody>\n</table></div>\n<h3>Verification history</h3>\n");
    chart::timeline_legend(out);
    for group in &arranged.groups {
        let first = &evidence.findings[group[0]];
        let _ = writeln!(
            out,
            r#"<section class="tool-findings"><h4><span class="name">{}</span> / <span class="name">{}</span></h4>"#,
            text(&first.server),
            text(&first.tool),
        );
        for &n in group {
            let f = &evidence.findings[n];
            finding(out, f, &arranged.shape(n), evidence.history_of(&f.id));
        }
        out.push_str("</section>\n");
    }
    out.push_str("</section>\n");
}

/// ` at PLACE: KEYWORD` for a contract finding (the place is the schema's
/// names, so inline code like any name); nothing for any other.
fn violation(f: &Finding) -> String {
    f.contract.as_ref().map_or(String::new(), |v| {
        format!(
            r#" at <code class="name">{}</code>: {}"#,
            text(v.shown_at()),
            text(&v.keyword)
        )
    })
}

/// Whether a closure by verification was witnessed: a red run of the
/// case against the same target came first (the strong form of proof).
fn closure(f: &Finding) -> &'static str {
    match f.witnessed {
        Some(true) => " (witnessed: the case ran red on the same target first)",
        Some(false) => " (unwitnessed: no red run of the case came first)",
        None => "",
    }
}

/// One finding under its tool's heading; `shape` is its label as
/// [`Arranged::shape`] writes it.
fn finding(out: &mut String, f: &Finding, shape: &str, history: Option<&History>) {
    let _ = write!(
        out,
        r#"<article class="finding" id="{}">
<h5><code>{}</code> {}{}{}</h5>
<p class="hint"><b>Fix hint:</b> {}</p>
"#,
        text(&f.id),
        text(&f.id),
        text(&f.defect_class),
        violation(f),
        if shape.is_empty() {
            String::new()
        } else {
            format!(", arguments{shape}")
        },
        text(&f.fix_hint),
    );
    let Some(h) = history.filter(|h| !h.runs.is_empty()) else {
        let _ = write!(
            out,
            "<p class=\"muted\">State <span class=\"state st-{state}\">{state}</span>; no verification \
run yet: <code>mcpeval generate --finding {}</code> writes a case to verify a fix with.</p>\n</article>\n",
            text(&f.id),
            state = text(&f.state),
        );
        return;
    };
    let green = h.runs.iter().filter(|r| r.result == "green").count();
    let red = h.runs.iter().filter(|r| r.result == "red").count();
    let _ = write!(
        out,
        "<p class=\"muted\">State <span class=\"state st-{state}\">{state}</span>{}, streak {}/3; \
{} run{}: {red} red, {green} green; reopened {} time{}.</p>\n<div class=\"scroll\">",
        closure(f),
        f.streak,
        h.runs.len(),
        plural(h.runs.len()),
        f.reopened,
        plural(f.reopened as usize),
        state = text(&f.state),
    );
    chart::timeline(out, h);
    out.push_str("</div>\n<ol class=\"events\">");
    for e in &h.events {
        let _ = write!(out, "<li><time>{}</time> {}", text(&e.at), text(&e.event));
        if let (Some(from), Some(to)) = (&e.from, &e.to) {
            let _ = write!(out, ": {} → {}", text(from), text(to));
        } else if let Some(to) = &e.to {
            let _ = write!(out, ": {}", text(to));
        }
        if e.reopened {
            out.push_str(" <strong class=\"reopened\">reopened</strong>");
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>\n</article>\n");
}

/// The whole stylesheet: light, dark, narrow screens and print. Colours
/// are from the Okabe–Ito palette, which stays distinct under the common
/// colour-vision deficiencies.
const STYLE: &str = r#"
:root{--bg:#ffffff;--fg:#1d1d1f;--muted:#55575c;--grid:#dcdde0;--card:#f5f5f2;--border:#d3d3cf;
--good:#007a5c;--bad:#c24e00;--warn:#9a6700;--line:#0072b2;--limit:#a8437e;--link:#005a8e}
@media (prefers-color-scheme: dark){:root{--bg:#15171a;--fg:#e9e9ea;--muted:#a9abb0;--grid:#373a40;
--card:#1e2126;--border:#3a3d44;--good:#35c79b;--bad:#ff8c4d;--warn:#f0b445;--line:#63b3ed;
--limit:#e092c0;--link:#8cc8ff}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1200px;padding:16px 20px 40px;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{margin:0;font-size:1.7em}h2{margin:1.6em 0 .4em;border-bottom:2px solid var(--border);padding-bottom:.2em}
h3{margin:.2em 0 .3em;font-size:1.2em}h4{margin:0 0 .3em;font-size:1.02em}h5{margin:0 0 .3em;font-size:1em}
.tool-findings>h4{margin:1.1em 0 0}code.shape{overflow-wrap:anywhere}
a{color:var(--link)}code{font:0.92em ui-monospace,SFMono-Regular,Menlo,monospace}
.lede,.muted,footer{color:var(--muted)}footer{margin-top:2em;font-size:.9em}
.name{overflow-wrap:anywhere;font-weight:600}
nav ul{list-style:none;padding:0;margin:.8em 0;display:flex;flex-wrap:wrap;gap:6px 14px}
.server,.finding{background:var(--card);border:1px solid var(--border);border-radius:8px;padding:12px 14px;margin:12px 0}
.reasons{margin:.2em 0 .4em;padding-left:1.2em}.open,.verifying{margin:.3em 0}
.verdict{display:inline-block;font-size:.8em;font-weight:700;padding:1px 8px;border-radius:10px;border:2px solid}
.v-ready{color:var(--good)}.v-at-risk{color:var(--warn);border-style:dashed}.v-not-ready{color:var(--bad);border-style:double;border-width:3px}
.sev{font-weight:600}.sev-high{color:var(--bad)}.sev-high::before{content:"▲ "}.sev-medium{color:var(--warn)}.sev-medium::before{content:"◆ "}.sev-low::before{content:"● "}
.state{font-weight:600}.st-closed{color:var(--good)}.st-closed::before{content:"✓ "}.st-open::before{content:"○ "}.st-fix-claimed::before{content:"✗ "}.st-fix-claimed{color:var(--bad)}.st-verifying::before{content:"◐ "}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(290px,1fr));gap:10px}
figure{margin:0;background:var(--bg);border:1px solid var(--border);border-radius:6px;padding:6px 8px 2px}
figcaption{font-size:.92em}
svg{display:block;max-width:100%;height:auto}
svg text{fill:var(--muted);font:9px system-ui,sans-serif}
.rate-chart .axis-title{font-size:9px}
.grid{stroke:var(--grid);stroke-width:1}.axis{stroke:var(--fg);stroke-width:1}
.limit{stroke:var(--limit);stroke-width:1.5;stroke-dasharray:5 3}.limit-label{fill:var(--limit)}
.line{fill:none;stroke:var(--line);stroke-width:1.6}
.pt{fill:var(--line)}.pt.over{fill:var(--bad)}
.timeline{max-width:none}.legend-strip{width:420px;margin:.3em 0}.legend-strip text{font-size:12px}
.sev.zero{color:var(--muted);font-weight:400}
.run.green circle{fill:var(--good)}.run.red rect{fill:var(--bad)}
.glyph{fill:none;stroke:#fff;stroke-width:2.2;stroke-linecap:round}
.run.legacy{opacity:.45}
.reopen line{stroke:var(--bad);stroke-width:1.5;stroke-dasharray:3 2}.reopen text,.reopened{fill:var(--bad);color:var(--bad)}
.mark.closure path{fill:var(--warn)}.mark.promoted circle{fill:var(--bg);stroke:var(--muted);stroke-width:2}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.93em}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--border);vertical-align:top}
th{background:var(--card)}.num{text-align:right;white-space:nowrap}
.events{margin:.4em 0 0;padding-left:1.4em;font-size:.88em;color:var(--muted)}
.hint{margin:.2em 0 .4em}
@media (max-width:640px){body{padding:10px 10px 30px;font-size:14px}.charts{grid-template-columns:1fr}
.server,.finding{padding:10px}th,td{padding:4px 5px}}
@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--card:#fff;--border:#999;--grid:#ccc}
body{max-width:none;padding:0;font-size:11pt}nav{display:none}
.server,.finding,figure,tr{break-inside:avoid}.charts{grid-template-columns:repeat(3,1fr)}
a{color:inherit;text-decoration:none}.scroll{overflow:visible}}
"#;
