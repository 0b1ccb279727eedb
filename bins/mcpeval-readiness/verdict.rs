//! From counts and findings to a verdict per server, with its reasons.
//!
//! The rule, stated once here and in `--help`: an open high finding makes
//! a server not-ready; an open medium finding, or a tool failing more than
//! [`RATE_LIMIT_PERCENT`]% of its calls on the last day, makes it at-risk;
//! otherwise it is ready.

use std::collections::{BTreeMap, BTreeSet};

use jiff::ToSpan;
use serde::{Serialize, Serializer};
use shared::catalog::Catalog;
use shared::finding::State;
use shared::score::Severity;

use crate::args::Config;
use crate::cache::Refresh;

/// A tool failing more than this share of its calls on the last day puts
/// its server at risk (percent).
pub const RATE_LIMIT_PERCENT: u32 = 5;

/// One day of one tool.
#[derive(Debug, Serialize)]
pub struct Day {
    pub day: String,
    pub calls: u64,
    pub failures: u64,
    /// failures / calls; null without calls.
    pub failure_rate: Option<f64>,
}

/// One tool over the window.
#[derive(Debug, Serialize)]
pub struct Tool {
    pub tool: String,
    pub calls: u64,
    pub failures: u64,
    pub daily: Vec<Day>,
}

/// Open findings by severity.
#[derive(Debug, Default, Serialize)]
pub struct Open {
    pub high: u64,
    pub medium: u64,
    pub low: u64,
}

/// A server's open findings: counts, and the high and medium ones by id.
type OpenOf = (Open, Vec<(String, &'static str)>);

/// One server's report.
#[derive(Debug, Serialize)]
pub struct Server {
    pub server: String,
    /// `ready`, `at-risk` or `not-ready`.
    pub verdict: &'static str,
    pub reasons: Vec<Reason>,
    /// Null when the store has no index to read findings from.
    pub open_findings: Option<Open>,
    pub tools: Vec<Tool>,
}

/// One reason for a verdict. JSON gets its sentence with names as they
/// are (serde escapes them); a renderer asks for [`Reason::sentence`]
/// with its medium's escaper, since a tool name is untrusted text.
#[derive(Debug)]
pub enum Reason {
    /// An open high or medium finding.
    Finding { severity: &'static str, id: String },
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
    pub fn sentence<'a>(&'a self, name: impl Fn(&'a str) -> std::borrow::Cow<'a, str>) -> String {
        match self {
            Reason::Finding { severity, id } => format!("open {severity} finding {}", name(id)),
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
        serializer.serialize_str(&self.sentence(std::borrow::Cow::Borrowed))
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

    let mut open: BTreeMap<String, OpenOf> = BTreeMap::new();
    if let Some(catalog) = catalog {
        for f in catalog.findings.iter().filter(|f| f.state != State::Closed) {
            if !wanted(&f.derived.server) {
                continue;
            }
            let entry = open.entry(f.derived.server.clone()).or_default();
            match f.severity {
                Severity::High => entry.0.high += 1,
                Severity::Medium => entry.0.medium += 1,
                Severity::Low => entry.0.low += 1,
            }
            if f.severity != Severity::Low {
                entry
                    .1
                    .push((f.derived.id.to_string(), f.severity.as_str()));
            }
        }
    }
    let findings = match catalog {
        None => "no-index",
        Some(_) => "index",
    };

    let mut names: BTreeSet<String> = counts.keys().map(|(s, _)| s.clone()).collect();
    names.extend(open.keys().cloned());
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
            let found = open.remove(&server);
            let (verdict, reasons) = judge(&as_of, &tools, found.as_ref(), findings);
            Server {
                server,
                verdict,
                reasons,
                open_findings: catalog.map(|_| found.map(|f| f.0).unwrap_or_default()),
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

/// The verdict of one server and every reason for it.
fn judge(
    last_day: &str,
    tools: &[Tool],
    open: Option<&OpenOf>,
    findings: &str,
) -> (&'static str, Vec<Reason>) {
    let mut not_ready = Vec::new();
    let mut at_risk = Vec::new();
    if let Some((_, ids)) = open {
        for (id, severity) in ids {
            let line = Reason::Finding {
                severity,
                id: id.clone(),
            };
            if *severity == "high" {
                not_ready.push(line);
            } else {
                at_risk.push(line);
            }
        }
    }
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
