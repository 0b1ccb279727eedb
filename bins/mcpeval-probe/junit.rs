//! JUnit XML, in the shape CI test reporters (Jenkins, GitLab, GitHub
//! actions that publish test results) read: `<testsuites>` holding one
//! `<testsuite>`, one `<testcase>` per manifest case. It carries what the
//! results carry and nothing the server wrote.

use std::fmt::Write;

use shared::probe_result::{ProbeResult, Verdict};

/// The whole document for `results` of the manifest named `suite`.
pub fn document(suite: &str, results: &[ProbeResult]) -> String {
    let count = |v: Verdict| results.iter().filter(|r| r.result == v).count();
    let (failures, errors) = (count(Verdict::Red), count(Verdict::TransportError));
    let total: f64 = results.iter().map(seconds).sum();
    let timestamp = results
        .first()
        .map(|r| r.started_at.trim_end_matches('Z').to_owned())
        .unwrap_or_default();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"mcpeval\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{total:.3}\">",
        results.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{total:.3}\" timestamp=\"{}\">",
        escape(suite),
        results.len(),
        escape(&timestamp)
    );
    for r in results {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
            escape(&r.finding),
            escape(&r.case),
            seconds(r)
        );
        if let Some(reason) = r.reason {
            let tag = if r.result == Verdict::TransportError {
                "error"
            } else {
                "failure"
            };
            let text = format!(
                "probe {}: {} after {} attempt{}\ndetail: {}\nhint: {}",
                r.probe,
                reason.as_str(),
                r.attempts,
                if r.attempts == 1 { "" } else { "s" },
                r.detail.as_deref().unwrap_or("-"),
                r.hint().unwrap_or_default()
            );
            let _ = writeln!(
                x,
                "      <{tag} message=\"{}\" type=\"{}\">{}</{tag}>",
                escape(reason.as_str()),
                escape(r.result.as_str()),
                escape(&text)
            );
        }
        let _ = writeln!(
            x,
            "      <system-out>{}</system-out>\n    </testcase>",
            escape(&r.to_json_line())
        );
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// The run's wall time in seconds, from its two stamps.
fn seconds(r: &ProbeResult) -> f64 {
    match (
        shared::time::parse(&r.started_at),
        shared::time::parse(&r.finished_at),
    ) {
        (Some(a), Some(b)) => (b.as_millisecond() - a.as_millisecond()).max(0) as f64 / 1000.0,
        _ => 0.0,
    }
}

/// Escapes text for an XML attribute or element; drops the characters
/// XML 1.0 cannot hold at all.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if u32::from(c) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(escape("a<b>&\"c'\u{1}"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\ny"), "x&#10;y");
    }
}
