//! The page's two kinds of inline SVG: a tool's daily failure rate, and a
//! finding's verification timeline.
//!
//! Each chart carries its own axes, labels and legend, and says what it
//! plots in data attributes (`data-points`, `data-runs`) so a test can
//! count from the DOM what a reader counts by eye. Good and bad are told
//! apart by shape and word as well as colour (circle and square, ✓ and ✗,
//! "over 5%"); colours come from the stylesheet, so dark mode and print
//! restyle them. Every name passes through [`shared::escape::html`].

use std::fmt::Write;

use crate::evidence::{History, Run, Server, Tool};
use shared::escape::html as text;

const W: f64 = 320.0;
const H: f64 = 200.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = W - 12.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = H - 36.0;

/// The scale's top: the smallest round rate at or above every point
/// and at least twice the limit, so the limit line never hugs the top.
fn scale_top(max: f64, limit: f64) -> f64 {
    let need = max.max(2.0 * limit);
    [0.1, 0.2, 0.25, 0.5, 1.0]
        .into_iter()
        .find(|t| *t >= need)
        .unwrap_or(1.0)
}

fn percent(rate: f64) -> String {
    let p = 100.0 * rate;
    if p.fract().abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Where the rate charts' axis starts, as a position in the window's
/// days: the first day any tool of the page had calls. A store a few
/// days old is then drawn over those days, not as a point at the edge of
/// an empty month; every chart starts there, so they still line up. The
/// window's first day when nothing was called.
pub fn first_day(servers: &[Server]) -> usize {
    servers
        .iter()
        .flat_map(|s| &s.tools)
        .filter_map(|t| t.daily.iter().position(|d| d.calls > 0))
        .min()
        .unwrap_or(0)
}

/// One tool's daily failure rate over `days` from position `from` (see
/// [`first_day`]), with the verdict's limit. A day without calls has no
/// point and breaks the line.
pub fn rate(out: &mut String, server: &str, tool: &Tool, days: &[String], from: usize, limit: f64) {
    let days = days.get(from..).unwrap_or_default();
    let daily = tool.daily.get(from..).unwrap_or_default();
    let n = daily.len().max(1) as f64;
    let x = |i: usize| LEFT + (i as f64 + 0.5) * (RIGHT - LEFT) / n;
    let max = daily
        .iter()
        .filter_map(|d| d.failure_rate)
        .fold(0.0, f64::max);
    let top = scale_top(max, limit);
    let y = |r: f64| BOTTOM - r / top * (BOTTOM - TOP);
    let points = daily.iter().filter(|d| d.calls > 0).count();
    let over = daily
        .iter()
        .filter(|d| d.failure_rate.is_some_and(|r| r > limit))
        .count();
    let _ = write!(
        out,
        r#"<svg class="rate-chart" viewBox="0 0 {W} {H}" role="img" data-server="{}" data-tool="{}" data-days="{}" data-points="{points}" data-over="{over}" aria-label="Daily failure rate of {} on {} over {}: {points} with calls, {over} over {}">"#,
        text(server),
        text(&tool.tool),
        daily.len(),
        text(&tool.tool),
        text(server),
        crate::count(daily.len(), "day"),
        percent(limit),
    );
    // Legend: shape, line and word for each mark.
    let _ = write!(
        out,
        r#"<g class="legend"><circle class="pt key" cx="{}" cy="12" r="3.5"/><text x="{}" y="15">at or under {}</text><path class="pt over key" d="{}"/><text x="{}" y="15">over</text><line class="limit" x1="{}" y1="12" x2="{}" y2="12"/><text x="{}" y="15">limit</text><text x="{}" y="15">no mark: no calls</text></g>"#,
        LEFT + 4.0,
        LEFT + 10.0,
        percent(limit),
        triangle(LEFT + 96.0, 12.0),
        LEFT + 102.0,
        LEFT + 130.0,
        LEFT + 146.0,
        LEFT + 150.0,
        LEFT + 180.0,
    );
    // Axes, grid and tick labels.
    for r in [0.0, top / 2.0, top] {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" y1="{yy:.1}" x2="{RIGHT}" y2="{yy:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            y(r) + 3.0,
            percent(r),
            yy = y(r),
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}"/><line class="axis" x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{BOTTOM}"/>"#
    );
    let mut ticks = vec![
        0,
        days.len().saturating_sub(1) / 2,
        days.len().saturating_sub(1),
    ];
    ticks.dedup();
    for i in ticks {
        let Some(day) = days.get(i) else { continue };
        let _ = write!(
            out,
            r#"<line class="axis" x1="{xx:.1}" y1="{BOTTOM}" x2="{xx:.1}" y2="{}"/><text class="tick" x="{xx:.1}" y="{}" text-anchor="middle">{}</text>"#,
            BOTTOM + 4.0,
            BOTTOM + 14.0,
            text(day.get(5..).unwrap_or(day)),
            xx = x(i),
        );
    }
    let _ = write!(
        out,
        r#"<text class="axis-title" x="{}" y="{}" text-anchor="middle">UTC day</text><text class="axis-title" transform="translate(11 {}) rotate(-90)" text-anchor="middle">failure rate</text>"#,
        (LEFT + RIGHT) / 2.0,
        H - 6.0,
        (TOP + BOTTOM) / 2.0,
    );
    // The limit the verdict uses.
    let _ = write!(
        out,
        r#"<line class="limit" x1="{LEFT}" y1="{ly:.1}" x2="{RIGHT}" y2="{ly:.1}"/><text class="limit-label" x="{RIGHT}" y="{:.1}" text-anchor="end">{} limit</text>"#,
        y(limit) - 3.0,
        percent(limit),
        ly = y(limit),
    );
    // The line, broken at days without calls, then the points over it.
    let mut segment: Vec<String> = Vec::new();
    let mut lines = String::new();
    for (i, d) in daily.iter().enumerate() {
        match d.failure_rate {
            Some(r) if d.calls > 0 => segment.push(format!("{:.1},{:.1}", x(i), y(r))),
            _ => flush(&mut lines, &mut segment),
        }
    }
    flush(&mut lines, &mut segment);
    out.push_str(&lines);
    for (i, d) in daily.iter().enumerate() {
        let Some(r) = d.failure_rate.filter(|_| d.calls > 0) else {
            continue;
        };
        let title = format!(
            "{}: {} of {} calls failed ({})",
            d.day,
            d.failures,
            d.calls,
            percent(r)
        );
        if r > limit {
            let _ = write!(
                out,
                r#"<path class="pt over" data-day="{}" d="{}"><title>{} over the limit</title></path>"#,
                text(&d.day),
                triangle(x(i), y(r)),
                text(&title)
            );
        } else {
            let _ = write!(
                out,
                r#"<circle class="pt" data-day="{}" cx="{:.1}" cy="{:.1}" r="3.5"><title>{}</title></circle>"#,
                text(&d.day),
                x(i),
                y(r),
                text(&title)
            );
        }
    }
    out.push_str("</svg>");
}

fn flush(out: &mut String, segment: &mut Vec<String>) {
    if segment.len() > 1 {
        let _ = write!(
            out,
            r#"<polyline class="line" points="{}"/>"#,
            segment.join(" ")
        );
    }
    segment.clear();
}

/// A triangle pointing up, centred on (x, y): the "over the limit" mark.
fn triangle(x: f64, y: f64) -> String {
    format!(
        "M{:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}Z",
        x,
        y - 5.0,
        x + 5.0,
        y + 4.0,
        x - 5.0,
        y + 4.0
    )
}

/// One mark of a verification timeline, in the order things happened.
enum Mark<'a> {
    Promoted(&'a str),
    Run {
        green: bool,
        reopened: bool,
        legacy: bool,
        at: &'a str,
        reason: Option<&'a str>,
    },
    ClosedByHand(&'a str),
}

/// The marks of `history`: its events in order, each `verified` event
/// paired with the next recorded run; imported legacy runs first, as
/// they predate every recorded one.
fn marks(history: &History) -> Vec<Mark<'_>> {
    let mut out: Vec<Mark> = history
        .runs
        .iter()
        .filter(|r| r.legacy)
        .map(|r| run(r, false))
        .collect();
    let mut recorded = history.runs.iter().filter(|r| !r.legacy);
    for e in &history.events {
        match e.event.as_str() {
            "promoted" => out.push(Mark::Promoted(&e.at)),
            "closed-by-hand" => out.push(Mark::ClosedByHand(&e.at)),
            "verified" => {
                if let Some(r) = recorded.next() {
                    out.push(run(r, e.reopened));
                }
            }
            _ => {}
        }
    }
    // Runs without a history line (none are expected) still show.
    out.extend(recorded.map(|r| run(r, false)));
    out
}

fn run(r: &Run, reopened: bool) -> Mark<'_> {
    Mark::Run {
        green: r.result == "green",
        reopened,
        legacy: r.legacy,
        at: r.recorded_at.as_str(),
        reason: r.reason.as_deref(),
    }
}

/// A finding's verification history as a row of marks: green runs as
/// circles with ✓, red runs as squares with ✗, reopenings as a dashed
/// rule labelled "reopened", a closure by hand as a labelled diamond.
pub fn timeline(out: &mut String, history: &History) {
    let marks = marks(history);
    let runs = marks
        .iter()
        .filter(|m| matches!(m, Mark::Run { .. }))
        .count();
    let reopenings = marks
        .iter()
        .filter(|m| matches!(m, Mark::Run { reopened: true, .. }))
        .count();
    let step = 34.0;
    let width = (40.0 + step * marks.len() as f64).max(W);
    let (base, height) = (40.0, 80.0);
    let _ = write!(
        out,
        r#"<svg class="timeline" viewBox="0 0 {width} {height}" width="{width}" role="img" data-finding="{}" data-runs="{runs}" data-reopenings="{reopenings}" aria-label="Verification history of {}: {runs} runs, {reopenings} reopenings">"#,
        text(&history.finding),
        text(&history.finding),
    );
    let _ = write!(
        out,
        r#"<line class="axis" x1="10" y1="{base}" x2="{}" y2="{base}"/>"#,
        width - 10.0
    );
    let last = marks.len().saturating_sub(1);
    for (i, m) in marks.iter().enumerate() {
        let x = 28.0 + step * i as f64;
        let at = match m {
            Mark::Promoted(at) | Mark::ClosedByHand(at) | Mark::Run { at, .. } => *at,
        };
        match m {
            Mark::Promoted(at) => {
                let _ = write!(
                    out,
                    r#"<g class="mark promoted"><circle cx="{x}" cy="{base}" r="5"/><text x="{x}" y="{}" text-anchor="middle">promoted</text><title>promoted {}</title></g>"#,
                    base - 14.0,
                    text(at)
                );
            }
            Mark::ClosedByHand(at) => {
                let _ = write!(
                    out,
                    r#"<g class="mark closure"><path d="M{x},{}L{},{base}L{x},{}L{},{base}Z"/><text x="{x}" y="{}" text-anchor="middle">closed</text><title>closed by hand {}</title></g>"#,
                    base - 8.0,
                    x + 8.0,
                    base + 8.0,
                    x - 8.0,
                    base - 14.0,
                    text(at)
                );
            }
            Mark::Run {
                green,
                reopened,
                legacy,
                at,
                reason,
            } => {
                if *reopened {
                    let _ = write!(
                        out,
                        r#"<g class="reopen"><line x1="{x}" y1="8" x2="{x}" y2="{}"/><text x="{x}" y="8" text-anchor="middle">reopened</text></g>"#,
                        height - 14.0
                    );
                }
                let word = if *green { "green" } else { "red" };
                let mut title = format!("{word} run {at}");
                if let Some(reason) = reason {
                    let _ = write!(title, " ({reason})");
                }
                if *legacy {
                    title.push_str(", imported from an earlier release; never counts");
                }
                let class = format!("run {word}{}", if *legacy { " legacy" } else { "" });
                if *green {
                    let _ = write!(
                        out,
                        r#"<g class="{class}"><circle cx="{x}" cy="{base}" r="9"/><path class="glyph" d="M{},{base}l3.5,3.5l6,-7"/><title>{}</title></g>"#,
                        x - 4.5,
                        text(&title)
                    );
                } else {
                    let _ = write!(
                        out,
                        r#"<g class="{class}"><rect x="{}" y="{}" width="18" height="18"/><path class="glyph" d="M{},{}l8,8m0,-8l-8,8"/><title>{}</title></g>"#,
                        x - 9.0,
                        base - 9.0,
                        x - 4.0,
                        base - 4.0,
                        text(&title)
                    );
                }
            }
        }
        if i == 0 || i == last {
            let _ = write!(
                out,
                r#"<text class="tick" x="{x}" y="{}" text-anchor="middle">{}</text>"#,
                height - 6.0,
                text(at.get(..10).unwrap_or(at))
            );
        }
    }
    out.push_str("</svg>");
}

/// The timelines' shared legend.
pub fn timeline_legend(out: &mut String) {
    out.push_str(concat!(
        r#"<svg class="legend-strip" viewBox="0 0 420 28" role="img" aria-label="Legend: green run, red run, reopening, closed by hand">"#,
        r#"<g class="run green"><circle cx="12" cy="14" r="9"/><path class="glyph" d="M7.5,14l3.5,3.5l6,-7"/></g><text x="26" y="18">green run</text>"#,
        r#"<g class="run red"><rect x="103" y="5" width="18" height="18"/><path class="glyph" d="M108,10l8,8m0,-8l-8,8"/></g><text x="126" y="18">red run</text>"#,
        r#"<g class="reopen"><line x1="196" y1="2" x2="196" y2="26"/></g><text x="202" y="18">reopened</text>"#,
        r#"<g class="mark closure"><path d="M290,6L298,14L290,22L282,14Z"/></g><text x="302" y="18">closed by hand</text>"#,
        "</svg>"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_leaves_room_above_the_limit() {
        assert_eq!(scale_top(0.0, 0.05), 0.1);
        assert_eq!(scale_top(0.12, 0.05), 0.2);
        assert_eq!(scale_top(0.3, 0.05), 0.5);
        assert_eq!(scale_top(1.0, 0.05), 1.0);
        assert_eq!(percent(0.05), "5%");
        assert_eq!(percent(0.125), "12.5%");
    }
}
