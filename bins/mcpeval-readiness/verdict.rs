//! From counts and findings to a verdict per server, with its reasons.
//!
//! The rule, stated once here and in `--help`: a finding counts against
//! its server while it is open or fix-claimed. A counted high finding
//! makes a server not-ready; a counted medium finding, or a tool failing
//! more than [`RATE_LIMIT_PERCENT`]% of its calls on the last day, makes
//! it at-risk; otherwise it is ready. A verifying finding is shown and
//! never counted: its first green run attaches a probe, which lifts the
//! severity cap, and a green run must never make a server look worse.
//! Closed findings are left out.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use jiff::ToSpan;
use serde::{Serialize, Serializer};
use shared::finding::State;
use shared::readiness::{Day, Open, Tool, Verifying};
use shared::score::Severity;
use store::catalog::Catalog;
use store::verification::GREENS_TO_CLOSE;

use crate::args::{Config, RATE_LIMIT_PERCENT};
use crate::cache::Refresh;

/// The line people read for a verifying finding, with its id and its tool
/// name passed through `name` (a tool name is untrusted text, as in
/// [`Reason`]).
pub fn verifying_sentence<'a>(v: &'a Verifying, name: impl Fn(&'a str) -> Cow<'a, str>) -> String {
    format!(
        "{} finding {} on {}: verifying, streak {}/{GREENS_TO_CLOSE}",
        v.severity,
        name(&v.id),
        name(&v.tool),
        v.streak
    )
}

/// What a finding's lifecycle state does to its server's verdict.
enum Standing {
    /// Open or fix-claimed: counted, and a reason when high or medium.
    Counted,
    /// At least one green run and not yet closed: shown, never counted.
    Verifying,
    /// Closed: left out.
    Ignored,
}

impl Standing {
    // No wildcard: a new state must be placed here on purpose.
    fn of(state: State) -> Standing {
        match state {
            State::Open | State::FixClaimed => Standing::Counted,
            State::Verifying => Standing::Verifying,
            State::Closed => Standing::Ignored,
        }
    }
}

/// One server's findings, sorted by what they do to its verdict.
#[derive(Debug, Default)]
struct Found {
    open: Open,
    /// The counted high and medium findings, as reasons.
    reasons: Vec<Reason>,
    verifying: Vec<Verifying>,
}

/// One server's report.
#[derive(Debug, Serialize)]
pub struct Server {
    pub server: String,
    /// `ready`, `at-risk` or `not-ready`.
    pub verdict: &'static str,
    pub reasons: Vec<Reason>,
    /// Null when the store has no index to read findings from.
    pub open_findings: Option<Open>,
    /// The verifying findings, which never change the verdict; null
    /// without an index, like `open_findings`.
    pub verifying: Option<Vec<Verifying>>,
    pub tools: Vec<Tool>,
}

/// One reason for a verdict. JSON gets its sentence with names as they
/// are (serde escapes them); a renderer asks for [`Reason::sentence`]
/// with its medium's escaper, since a tool name is untrusted text.
#[derive(Debug)]
pub enum Reason {
    /// A counted (open or fix-claimed) high or medium finding, named with
    /// its tool: one tool may have several.
    Finding {
        state: State,
        severity: Severity,
        id: String,
        tool: String,
    },
    /// A tool failing over the limit on the last day.
    Failing {
        tool: String,
        failures: u64,
        calls: u64,
        rate: f64,
        day: String,
    },
    /// A sentence with nothing untrusted in it.
    Said(String),
}

impl Reason {
    /// The sentence, with the finding id and the tool name passed through `name`.
    pub fn sentence<'a>(&'a self, name: impl Fn(&'a str) -> Cow<'a, str>) -> String {
        match self {
            Reason::Finding {
                state,
                severity,
                id,
                tool,
            } => format!("{state} {severity} finding {} on {}", name(id), name(tool)),
            Reason::Failing {
                tool,
                failures,
                calls,
                rate,
                day,
            } => format!(
                "{} failed {failures} of {calls} calls ({:.1}%) on {day}, over {RATE_LIMIT_PERCENT}%",
                name(tool),
                rate * 100.0
            ),
            Reason::Said(text) => text.clone(),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.sentence(Cow::Borrowed))
    }
}

/// Where the open findings came from.
#[derive(Debug, Serialize)]
pub struct Cache {
    pub journals: u64,
    pub rebuilt: Option<String>,
    pub bytes_read: u64,
    pub calls_added: u64,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The last day reported (UTC), `YYYY-MM-DD`.
    pub as_of: String,
    pub days: Vec<String>,
    /// [`RATE_LIMIT_PERCENT`] as a fraction.
    pub rate_limit: f64,
    /// `index` (open findings read from it) or `no-index`. An index not
    /// promoted since it changed is no report at all (status 3).
    pub findings: &'static str,
    pub servers: Vec<Server>,
    pub cache: Cache,
}

/// Builds the report for `config`'s window.
pub fn report(config: &Config, refresh: &Refresh, catalog: Option<&Catalog>) -> Report {
    let last = config.now.to_zoned(jiff::tz::TimeZone::UTC).date();
    let days: Vec<String> = (0..config.days)
        .rev()
        .filter_map(|back| last.checked_sub(i64::from(back).days()).ok())
        .map(|d| d.strftime("%Y-%m-%d").to_string())
        .collect();
    let as_of = last.strftime("%Y-%m-%d").to_string();
    let wanted =
        |server: &str| config.servers.is_empty() || config.servers.iter().any(|s| s == server);

    // (server, tool) → day → (calls, failures), inside the window only.
    let mut counts: BTreeMap<(String, String), BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    let first = days.first().cloned().unwrap_or_default();
    for d in &refresh.daily {
        if d.day < first || d.day > as_of || !wanted(&d.server) {
            continue;
        }
        let e = counts
            .entry((d.server.clone(), d.tool.clone()))
            .or_default()
            .entry(d.day.clone())
            .or_default();
        e.0 += d.calls;
        e.1 += d.failures;
    }

    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for f in catalog.iter().flat_map(|c| &c.findings) {
        if !wanted(&f.derived.server) {
            continue;
        }
        let id = f.derived.id.to_string();
        match Standing::of(f.state) {
            Standing::Ignored => {}
            Standing::Verifying => {
                let entry = found.entry(f.derived.server.clone()).or_default();
                entry.verifying.push(Verifying {
                    id,
                    tool: f.derived.tool.clone(),
                    severity: f.severity,
                    streak: f.streak,
                });
            }
            Standing::Counted => {
                let entry = found.entry(f.derived.server.clone()).or_default();
                match f.severity {
                    Severity::High => entry.open.high += 1,
                    Severity::Medium => entry.open.medium += 1,
                    Severity::Low => entry.open.low += 1,
                }
                if f.severity != Severity::Low {
                    entry.reasons.push(Reason::Finding {
                        state: f.state,
                        severity: f.severity,
                        id,
                        tool: f.derived.tool.clone(),
                    });
                }
            }
        }
    }
    let findings = match catalog {
        None => "no-index",
        Some(_) => "index",
    };

    let mut names: BTreeSet<String> = counts.keys().map(|(s, _)| s.clone()).collect();
    names.extend(found.keys().cloned());
    let servers = names
        .into_iter()
        .map(|server| {
            let tools: Vec<Tool> = counts
                .iter()
                .filter(|((s, _), _)| *s == server)
                .map(|((_, tool), by_day)| {
                    let daily: Vec<Day> = days
                        .iter()
                        .map(|day| {
                            let (calls, failures) = by_day.get(day).copied().unwrap_or((0, 0));
                            Day {
                                day: day.clone(),
                                calls,
                                failures,
                                failure_rate: (calls > 0).then(|| failures as f64 / calls as f64),
                            }
                        })
                        .collect();
                    Tool {
                        tool: tool.clone(),
                        calls: daily.iter().map(|d| d.calls).sum(),
                        failures: daily.iter().map(|d| d.failures).sum(),
                        daily,
                    }
                })
                .collect();
            let found = found.remove(&server).unwrap_or_default();
            let (verdict, reasons) = judge(&as_of, &tools, found.reasons, findings);
            Server {
                server,
                verdict,
                reasons,
                open_findings: catalog.map(|_| found.open),
                verifying: catalog.map(|_| found.verifying),
                tools,
            }
        })
        .collect();

    Report {
        as_of,
        days,
        rate_limit: f64::from(RATE_LIMIT_PERCENT) / 100.0,
        findings,
        servers,
        cache: Cache {
            journals: refresh.journals,
            rebuilt: refresh.rebuilt.clone(),
            bytes_read: refresh.bytes_read,
            calls_added: refresh.calls_added,
        },
    }
}

/// The verdict of one server and every reason for it, from its counted
/// findings (verifying ones never reach here) and its tools' last day.
fn judge(
    last_day: &str,
    tools: &[Tool],
    counted: Vec<Reason>,
    findings: &str,
) -> (&'static str, Vec<Reason>) {
    let (mut not_ready, mut at_risk): (Vec<Reason>, Vec<Reason>) =
        counted.into_iter().partition(|r| {
            matches!(
                r,
                Reason::Finding {
                    severity: Severity::High,
                    ..
                }
            )
        });
    for t in tools {
        let Some(day) = t.daily.last() else { continue };
        if let Some(rate) = day.failure_rate
            && rate * 100.0 > f64::from(RATE_LIMIT_PERCENT)
        {
            at_risk.push(Reason::Failing {
                tool: t.tool.clone(),
                failures: day.failures,
                calls: day.calls,
                rate,
                day: last_day.to_owned(),
            });
        }
    }
    let caveat = match findings {
        "no-index" => {
            Some("open findings unknown: no index yet (run `mcpeval index` and `mcpeval promote`)")
        }
        _ => None,
    };
    let (verdict, mut reasons) = if !not_ready.is_empty() {
        not_ready.extend(at_risk);
        ("not-ready", not_ready)
    } else if !at_risk.is_empty() {
        ("at-risk", at_risk)
    } else {
        let calls: u64 = tools
            .iter()
            .filter_map(|t| t.daily.last())
            .map(|d| d.calls)
            .sum();
        let line = if calls == 0 {
            format!("no open high or medium finding; no captured calls on {last_day}")
        } else {
            format!(
                "no open high or medium finding; no tool failed more than {RATE_LIMIT_PERCENT}% of its calls on {last_day}"
            )
        };
        ("ready", vec![Reason::Said(line)])
    };
    reasons.extend(caveat.map(|c| Reason::Said(c.to_owned())));
    (verdict, reasons)
}
