//! Running one manifest case against a server: the four probes.
//!
//! - instruction-fidelity: one call, judged against the case's `expect`;
//! - degradation: N calls, green when none fails (an error or a timeout);
//! - error-honesty: N calls; every error must report a boolean
//!   `retryable`; a retryable error must be followed by a success within
//!   the attempts; a non-retryable error must repeat on the next attempt,
//!   and that second error ends the run green; all-success is green. An
//!   error on the last attempt whose rule needs a next attempt gets exactly
//!   one follow-up attempt, so the count can be N + 1;
//! - workflow: the steps in order, each judged against its own `expect`,
//!   stopping at the first red step.
//!
//! After the handshake and before the case's first call the server's tools
//! are listed (`tools/list`, every page, bounded), and each of the case's
//! tools keeps its compiled `outputSchema` ([`store::output_schema`]; one
//! too costly or invalid to compile is not checked). Every successful
//! result of a tool with a checked schema is checked as capture checks
//! it, as the reference clients check it: a violation ends the run red
//! (`output-schema-violation`, with where and which keyword) whatever the
//! case expects, since the agent's SDK raises on that result. For a
//! contract-violation finding a run in which its tool declares no schema
//! this probe can check is red before any call (`output-schema-missing`):
//! removing the promise is not keeping it.
//!
//! A malformed result (not an object, or a non-boolean `isError`) ends the
//! run as a transport error, as does a server that breaks the protocol.
//! Every `tools/call` is journaled as an `mcpeval.call/1` record with origin
//! `probe` through the same classifier, name, key and contract rules
//! capture uses. Results are judged, never echoed: a detail holds manifest
//! pointers, attempt numbers, error codes and a violation's place (names
//! the schema declares, as journals keep them), nothing else the server
//! wrote.

use std::time::{Duration, Instant};

use serde_json::Value;

use shared::error::{Error, Result};
use shared::escape;
use shared::finding::{Probe, Violation};

use crate::{Broken, Client, Listed, Reply, StderrTail, Target};
use shared::manifest::{Case, Expect, Outcome as Expected, Step};
use shared::probe_result::{MAX_DETAIL, Reason, Verdict};
use shared::record::{Call, Channel, Contract, Identity, Origin, Outcome, SCHEMA_V1};
use store::journal::Writer;
use store::outcome;
use store::output_schema::{OutputSchema, Skipped};
use store::salt::Salt;
use store::sanitize::{self, Declared};

pub use store::credit::{DEGRADATION_CAP, ERROR_HONESTY_CAP};

/// The attempt budget of a case: its own `attempts`, else sized from the
/// failure rate (`score::attempts`, capped at 100 for degradation and 20
/// for error-honesty; the cap when the rate is unknown). One for
/// instruction-fidelity, the step count for a workflow.
pub fn attempt_budget(case: &Case, failure_rate: Option<f64>) -> u32 {
    match store::credit::sized_attempts(case.probe, failure_rate) {
        Some(sized) => case.attempts.unwrap_or(sized),
        None => case.steps.len() as u32,
    }
}

/// Everything a run needs besides the case.
#[derive(Debug)]
pub struct Setup<'a> {
    /// The server to start or reach.
    pub target: Target,
    /// How long each handshake request waits (see [`crate::HANDSHAKE_TIMEOUT`]).
    pub handshake_timeout: Duration,
    /// Attempts for degradation and error-honesty (see [`attempt_budget`]).
    pub attempts: u32,
    /// Keys template ids in the journal.
    pub salt: &'a Salt,
    /// The session token of this run's journal records.
    pub session: String,
    /// Server name when the handshake reports none, or an empty one: the
    /// name capture gives it.
    pub fallback_server: String,
    /// The finding's server and how to name it in messages, when the
    /// store knows it: any other server (a nameless one is named by
    /// `fallback_server`) is refused right after the handshake, before
    /// any call.
    pub finding_server: Option<store::credit::Subject>,
    /// The tool of a contract-violation finding, when the store knows the
    /// finding is one: a run in which it declares no `outputSchema` this
    /// probe can check is red (`output-schema-missing`) before any call.
    pub promised_tool: Option<String>,
}

/// The inputSchema keys a probe keeps per listed tool, at most (as
/// capture's budget for declared names).
const DECLARED_BUDGET: usize = 1024 * 1024;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdicted {
    /// green, red or transport-error.
    pub verdict: Verdict,
    /// Why not green.
    pub reason: Option<Reason>,
    /// Where or when, sanitized.
    pub detail: Option<String>,
    /// `tools/call` requests made.
    pub attempts: u32,
    /// The server's name as capture would record it (the one it gave in
    /// its handshake, else `fallback_server`), cut to
    /// [`store::credit::MAX_NAME`] bytes; `None` when the handshake failed.
    pub server: Option<String>,
    /// The case's tools (named as results name them) whose successful
    /// results were checked against a declared `outputSchema`; `None`
    /// when the run ended before its tools were listed.
    pub checked: Option<Vec<String>>,
    /// With reason `output-schema-violation`: where and which keyword.
    pub contract: Option<Violation>,
    /// What a stdio server wrote last on stderr before its handshake
    /// failed (raw: escape it to show it); `None` otherwise. Never part
    /// of the result.
    pub server_stderr: Option<StderrTail>,
}

/// Runs `case` against the server of `setup`, journaling every call to
/// `journal`. Only a journal failure, or a server naming itself otherwise
/// than the finding's server (status 6, before any call), is an error;
/// everything else the server does is a verdict.
pub fn run(case: &Case, setup: Setup<'_>, journal: &mut Writer) -> Result<Verdicted> {
    let Some(first) = case.steps.first() else {
        return Err(Error::rejected(format!(
            "case \"{}\" has no call to make",
            case.id
        )));
    };
    let timeout = Duration::from_millis(case.timeout_ms);
    let mut client = match Client::open(&setup.target, setup.handshake_timeout) {
        Ok(client) => client,
        Err(unopened) => {
            return Ok(Verdicted {
                server_stderr: unopened.stderr,
                ..transport(&unopened.broken, 0)
            });
        }
    };
    // Self-reported, so never easier to claim than to be: a server that
    // names itself nothing is named as capture names it.
    let named = Some(
        store::credit::name_key(
            client
                .server_name()
                .filter(|n| !n.is_empty())
                .unwrap_or(&setup.fallback_server),
        )
        .into_owned(),
    );
    if let Some(subject) = &setup.finding_server
        && let Err(refused) = store::credit::require_server(
            "",
            named.as_deref(),
            &case.finding,
            subject,
            "nothing was recorded",
        )
    {
        client.shutdown();
        return Err(refused);
    }
    // The case's tools as the server lists them, before any call: what a
    // result must keep is what the server promised in this session.
    let wanted = case.tools();
    let listed = match client.list_tools(setup.handshake_timeout, |name| {
        wanted.iter().any(|t| t == name)
    }) {
        Ok(listed) => listed,
        Err(broken) => {
            client.shutdown();
            return Ok(Verdicted {
                server: named,
                ..transport(&broken, 0)
            });
        }
    };
    let promises = Promises::from_list(listed);
    let checked = Some(
        wanted
            .iter()
            .filter(|t| {
                matches!(
                    promises.of(t),
                    Some(Listing {
                        output: Promise::Checked(_),
                        ..
                    })
                )
            })
            .map(|t| store::credit::name_key(t).into_owned())
            .collect(),
    );
    if let Some(tool) = &setup.promised_tool
        && let Some(why) = promises.missing(tool)
    {
        client.shutdown();
        return Ok(Verdicted {
            verdict: Verdict::Red,
            reason: Some(Reason::OutputSchemaMissing),
            detail: Some(clean_detail(&why)),
            attempts: 0,
            server: named,
            checked,
            contract: None,
            server_stderr: None,
        });
    }
    let mut session = Session {
        client,
        setup: &setup,
        journal,
        seq: 0,
        timeout,
        promises,
    };
    let verdict = match case.probe {
        Probe::InstructionFidelity => session.fidelity(first),
        Probe::Degradation => session.degradation(first),
        Probe::ErrorHonesty => session.honesty(first),
        Probe::Workflow => session.workflow(&case.steps),
    };
    session.client.shutdown();
    let attempts = session.seq;
    let ran = Verdicted {
        attempts,
        server: named,
        checked,
        ..Verdicted::green()
    };
    match verdict {
        Ok(None) => Ok(ran),
        Ok(Some((reason, detail))) => Ok(Verdicted {
            verdict: reason.verdict(),
            reason: Some(reason),
            detail: Some(clean_detail(&detail)),
            ..ran
        }),
        Err(Stop::Broken(broken)) => Ok(Verdicted {
            server: ran.server,
            checked: ran.checked,
            ..transport(&broken, attempts)
        }),
        Err(Stop::Malformed(detail)) => Ok(Verdicted {
            verdict: Verdict::TransportError,
            reason: Some(Reason::MalformedResult),
            detail: Some(clean_detail(&detail)),
            ..ran
        }),
        Err(Stop::Violated { call, violation }) => Ok(Verdicted {
            verdict: Verdict::Red,
            reason: Some(Reason::OutputSchemaViolation),
            detail: Some(clean_detail(&format!(
                "call {call}: structuredContent breaks the tool's outputSchema at {}: {}",
                violation.shown_at(),
                violation.keyword
            ))),
            contract: Some(violation),
            ..ran
        }),
        Err(Stop::Journal(err)) => Err(err),
    }
}

impl Verdicted {
    /// A green run that made no call, to fill in.
    fn green() -> Verdicted {
        Verdicted {
            verdict: Verdict::Green,
            reason: None,
            detail: None,
            attempts: 0,
            server: None,
            checked: None,
            contract: None,
            server_stderr: None,
        }
    }
}

fn transport(broken: &Broken, attempts: u32) -> Verdicted {
    Verdicted {
        verdict: Verdict::TransportError,
        reason: Some(broken.reason()),
        detail: Some(clean_detail(&broken.describe())),
        attempts,
        ..Verdicted::green()
    }
}

/// What the server's `tools/list` promised of one of the case's tools.
enum Promise {
    /// An `outputSchema`, compiled: every successful result is checked.
    Checked(OutputSchema),
    /// An `outputSchema` too costly to check, or not one the checker
    /// compiles offline: its results are not checked.
    Skipped(Skipped),
    /// No `outputSchema` (or one that is not an object).
    Undeclared,
}

/// One of the case's tools as the server listed it.
struct Listing {
    output: Promise,
    /// The property names its `inputSchema` declares, for argument shapes.
    input: Option<Declared>,
}

/// The case's tools as this session's `tools/list` gave them.
struct Promises {
    tools: Vec<(String, Listing)>,
    /// Why the list is missing or partial; `None` when it was read whole.
    incomplete: Option<String>,
}

impl Promises {
    fn from_list(listed: Listed) -> Promises {
        let mut budget = DECLARED_BUDGET;
        let tools = listed
            .tools
            .into_iter()
            .map(|(name, tool)| {
                let output = match tool.get("outputSchema").filter(|s| s.is_object()) {
                    None => Promise::Undeclared,
                    Some(schema) => match OutputSchema::compile(schema) {
                        Ok(compiled) => Promise::Checked(compiled),
                        Err(skipped) => Promise::Skipped(skipped),
                    },
                };
                let input = tool
                    .get("inputSchema")
                    .filter(|s| s.is_object())
                    .and_then(|schema| Declared::from_schema_within(schema, &mut budget));
                (name, Listing { output, input })
            })
            .collect();
        Promises {
            tools,
            incomplete: listed.incomplete,
        }
    }

    fn of(&self, tool: &str) -> Option<&Listing> {
        self.tools.iter().find(|(n, _)| n == tool).map(|(_, l)| l)
    }

    /// Whether `tool` was in the list: unknown when the list was not read
    /// whole and did not name it.
    fn advertised(&self, tool: &str) -> Option<bool> {
        match (self.of(tool), &self.incomplete) {
            (Some(_), _) => Some(true),
            (None, None) => Some(false),
            (None, Some(_)) => None,
        }
    }

    /// Why the results of `tool` cannot be checked, for a run that must
    /// check them; `None` when its schema is checked.
    fn missing(&self, tool: &str) -> Option<String> {
        let why = match (self.of(tool).map(|l| &l.output), &self.incomplete) {
            (Some(Promise::Checked(_)), _) => return None,
            (Some(Promise::Undeclared), _) => {
                "the finding's tool is listed without an outputSchema".to_owned()
            }
            (Some(Promise::Skipped(Skipped::TooCostly)), _) => {
                "the finding's tool declares an outputSchema too costly to check".to_owned()
            }
            (Some(Promise::Skipped(Skipped::Invalid)), _) => "the finding's tool declares an \
                 outputSchema this probe cannot compile (invalid, or referring outside itself)"
                .to_owned(),
            (None, None) => "the finding's tool is not in the server's tools/list".to_owned(),
            (None, Some(why)) => format!("the finding's tool was not listed: {why}"),
        };
        Some(why)
    }
}

/// One call's outcome, as the probes judge it.
enum Called {
    Ok(Value),
    Error {
        what: String,
        code: Option<i64>,
        retryable: Option<bool>,
    },
    Timeout,
}

/// Why a run stopped before its probe could judge it.
enum Stop {
    Broken(Broken),
    Malformed(String),
    /// Call number `call` succeeded with a result that broke its tool's
    /// `outputSchema`: red whatever the case expects.
    Violated {
        call: u32,
        violation: Violation,
    },
    Journal(Error),
}

/// A red reason with its detail; `None` is green.
type Judged = std::result::Result<Option<(Reason, String)>, Stop>;

struct Session<'s, 'a> {
    client: Client,
    setup: &'s Setup<'a>,
    journal: &'s mut Writer,
    seq: u32,
    timeout: Duration,
    promises: Promises,
}

impl Session<'_, '_> {
    fn fidelity(&mut self, step: &Step) -> Judged {
        let called = self.call(step)?;
        Ok(self.judge(&step.expect, &called))
    }

    fn degradation(&mut self, step: &Step) -> Judged {
        let n = self.setup.attempts;
        for i in 1..=n {
            match self.call(step)? {
                Called::Ok(_) => {}
                Called::Error { what, .. } => {
                    return Ok(Some((
                        Reason::AttemptFailed,
                        format!("attempt {i} of {n}: {what}"),
                    )));
                }
                Called::Timeout => {
                    return Ok(Some((
                        Reason::Timeout,
                        format!("attempt {i} of {n}: {}", self.no_response()),
                    )));
                }
            }
        }
        Ok(None)
    }

    fn honesty(&mut self, step: &Step) -> Judged {
        let n = self.setup.attempts;
        let mut limit = n;
        // The attempt of a retryable error still waiting for a success.
        let mut unrecovered: Option<u32> = None;
        // Whether the previous attempt was a non-retryable error.
        let mut after_final = false;
        let mut i = 0;
        loop {
            if i == limit {
                if limit == n && (unrecovered.is_some() || after_final) {
                    limit += 1;
                } else {
                    break;
                }
            }
            i += 1;
            match self.call(step)? {
                Called::Timeout => {
                    return Ok(Some((
                        Reason::Timeout,
                        format!("attempt {i}: {}", self.no_response()),
                    )));
                }
                Called::Ok(_) if after_final => {
                    return Ok(Some((
                        Reason::NonRetryableNotRepeated,
                        format!("attempt {i} succeeded right after a non-retryable error"),
                    )));
                }
                Called::Ok(_) => unrecovered = None,
                Called::Error {
                    what,
                    retryable: None,
                    ..
                } => {
                    return Ok(Some((
                        Reason::RetryableUnreported,
                        format!("attempt {i}: {what} without a boolean retryable"),
                    )));
                }
                Called::Error {
                    retryable: Some(true),
                    ..
                } => {
                    if after_final {
                        return Ok(Some((
                            Reason::NonRetryableNotRepeated,
                            format!(
                                "attempt {i} was a retryable error right after a non-retryable one"
                            ),
                        )));
                    }
                    unrecovered.get_or_insert(i);
                }
                Called::Error {
                    retryable: Some(false),
                    ..
                } => {
                    if after_final {
                        return Ok(None);
                    }
                    after_final = true;
                }
            }
        }
        Ok(unrecovered.map(|at| {
            (
                Reason::RetryableNotRecovered,
                format!("the retryable error of attempt {at} was not followed by a success within {i} attempts"),
            )
        }))
    }

    fn workflow(&mut self, steps: &[Step]) -> Judged {
        for (k, step) in steps.iter().enumerate() {
            let called = self.call(step)?;
            if let Some((reason, detail)) = self.judge(&step.expect, &called) {
                return Ok(Some((reason, format!("step {}: {detail}", k + 1))));
            }
        }
        Ok(None)
    }

    fn no_response(&self) -> String {
        format!("no response within {} ms", self.timeout.as_millis())
    }

    fn judge(&self, expect: &Expect, called: &Called) -> Option<(Reason, String)> {
        match (called, expect.outcome) {
            (Called::Timeout, _) => Some((Reason::Timeout, self.no_response())),
            (Called::Ok(result), Expected::Ok) => expect.first_unmet(result).map(Reason::of_unmet),
            (Called::Ok(_), Expected::Error) => {
                Some((Reason::ExpectedErrorGotOk, "the call succeeded".into()))
            }
            (Called::Error { what, .. }, Expected::Ok) => {
                Some((Reason::ExpectedOkGotError, what.clone()))
            }
            (Called::Error { code, .. }, Expected::Error) => match expect.error_code {
                Some(want) if *code != Some(want) => Some((
                    Reason::ErrorCode,
                    format!(
                        "expected error code {want}, got {}",
                        code.map_or_else(|| "none".to_owned(), |c| c.to_string())
                    ),
                )),
                _ => None,
            },
        }
    }

    /// Makes one `tools/call`, journals it, and reduces the answer to what
    /// the probes judge.
    fn call(&mut self, step: &Step) -> std::result::Result<Called, Stop> {
        self.seq += 1;
        let started_at = jiff::Timestamp::now();
        let started = Instant::now();
        let reply = self
            .client
            .call_tool(&step.tool, &step.arguments, self.timeout);
        let (classified, response, duration) = match &reply {
            Ok(Reply::Response(response)) => (
                outcome::classify(response, self.setup.salt),
                Some(response),
                Some(started.elapsed().as_millis() as u64),
            ),
            Ok(Reply::Timeout) | Err(_) => (outcome::Classified::unanswered(), None, None),
        };
        let listing = self.promises.of(&step.tool);
        // A successful result of a tool with a checked schema keeps it or
        // not, as capture judges it.
        let contract = match (classified.outcome, response, listing.map(|l| &l.output)) {
            (Outcome::Ok, Some(response), Some(Promise::Checked(schema))) => {
                Some(schema.check(response["result"].get("structuredContent")))
            }
            _ => None,
        };
        let record = Call {
            schema: SCHEMA_V1.into(),
            identity: Identity {
                event_id: uuid::Uuid::new_v4().to_string().into(),
                session: self.setup.session.clone().into(),
                seq: u64::from(self.seq),
            },
            origin: Origin::Probe,
            transport: self.setup.target.transport(),
            // Names and keys pass the same rules as captured calls: the
            // server names itself, and the case's arguments may be data.
            server: escape::clean_name(
                self.client
                    .server_name()
                    .filter(|n| !n.is_empty())
                    .unwrap_or(&self.setup.fallback_server),
            )
            .into_owned()
            .into(),
            tool: escape::clean_name(&step.tool).into_owned().into(),
            started_at: shared::time::rfc3339(started_at).into(),
            duration_ms: duration,
            advertised: self.promises.advertised(&step.tool),
            // Keys are kept as capture keeps them: declared by the listed
            // inputSchema, else when they look like field names.
            args_shape: sanitize::args_shape(
                &Value::Object(step.arguments.clone()),
                listing.and_then(|l| l.input.as_ref()),
            ),
            outcome: classified.outcome,
            unknown: classified.unknown,
            error: classified.error.clone(),
            contract: contract.clone(),
        };
        self.journal.append(&record).map_err(Stop::Journal)?;
        let response = match reply {
            Err(broken) => return Err(Stop::Broken(broken)),
            Ok(Reply::Timeout) => return Ok(Called::Timeout),
            Ok(Reply::Response(_)) => response.expect("a response"),
        };
        match (classified.outcome, classified.unknown) {
            (Outcome::Ok, _) => match contract {
                Some(Contract {
                    kept: false,
                    at: Some(at),
                    keyword: Some(keyword),
                }) => Err(Stop::Violated {
                    call: self.seq,
                    violation: Violation {
                        at: at.into_owned(),
                        keyword: keyword.into_owned(),
                    },
                }),
                _ => Ok(Called::Ok(response["result"].clone())),
            },
            (Outcome::Error, _) => {
                let error = classified.error.expect("errors carry facts");
                let what = match (error.channel, error.code) {
                    (Channel::Jsonrpc, Some(code)) => {
                        format!("JSON-RPC error {code}")
                    }
                    (Channel::Jsonrpc, None) => "JSON-RPC error".into(),
                    (Channel::Tool, Some(code)) => format!("tool error {code}"),
                    (Channel::Tool, None) => "tool error".into(),
                };
                Ok(Called::Error {
                    what,
                    code: error.code,
                    retryable: error.retryable,
                })
            }
            (Outcome::Unknown, _) => {
                let what = if response.get("result").is_some_and(Value::is_object) {
                    "isError is not a boolean"
                } else {
                    "the result is not an object"
                };
                Err(Stop::Malformed(format!("call {}: {what}", self.seq)))
            }
        }
    }
}

/// A detail text made safe to carry: control characters dropped, at most
/// [`MAX_DETAIL`] bytes.
pub fn clean_detail(text: &str) -> String {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    sanitize::truncate(&clean, MAX_DETAIL).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::finding::DefectClass;
    use shared::home::Home;
    use shared::manifest::Manifest;
    use store::index_db::{FindingFacts, finding_facts};

    fn case(probe: &str, extra: &str) -> Case {
        let text = format!(
            r#"{{"manifest_version":1,"cases":[{{"id":"c","finding":"finding-0123456789abcdef",
               "probe":"{probe}","tool":"t"{extra}}}]}}"#
        );
        Manifest::parse(&text).unwrap().cases.remove(0)
    }

    #[test]
    fn attempt_budgets() {
        assert_eq!(
            attempt_budget(&case("instruction-fidelity", ""), Some(0.3)),
            1
        );
        assert_eq!(attempt_budget(&case("degradation", ""), Some(0.3)), 9);
        assert_eq!(attempt_budget(&case("degradation", ""), None), 100);
        assert_eq!(attempt_budget(&case("degradation", ""), Some(0.001)), 100);
        assert_eq!(attempt_budget(&case("degradation", ""), Some(0.9)), 3);
        assert_eq!(attempt_budget(&case("error-honesty", ""), Some(0.01)), 20);
        assert_eq!(attempt_budget(&case("error-honesty", ""), None), 20);
        assert_eq!(
            attempt_budget(&case("degradation", r#","attempts":7"#), Some(0.3)),
            7
        );
        let wf = Manifest::parse(
            r#"{"manifest_version":1,"cases":[{"id":"w","finding":"finding-0123456789abcdef",
               "probe":"workflow","steps":[{"tool":"a"},{"tool":"b"}]}]}"#,
        )
        .unwrap();
        assert_eq!(attempt_budget(&wf.cases[0], None), 2);
    }

    #[test]
    fn finding_facts_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let id = "finding-0123456789abcdef";
        assert_eq!(finding_facts(&home, id).unwrap(), None, "no index.db");
        let conn = rusqlite::Connection::open(home.index_db()).unwrap();
        // As the store keeps it: WAL, and read while a writer has it open.
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE calls(x);").unwrap();
        assert_eq!(finding_facts(&home, id).unwrap(), None, "no findings table");
        conn.execute_batch(
            "CREATE TABLE findings(id TEXT PRIMARY KEY, failure_rate REAL, defect_class TEXT);
             INSERT INTO findings VALUES ('finding-0123456789abcdef', 0.25, 'false-success');
             INSERT INTO findings VALUES ('finding-ffffffffffffffff', NULL, 'no-such-class');",
        )
        .unwrap();
        assert_eq!(
            finding_facts(&home, id).unwrap(),
            Some(FindingFacts {
                failure_rate: Some(0.25),
                defect_class: Some(DefectClass::FalseSuccess),
                server: None,
                tool: None,
                kind: None,
                err_codes: None,
            })
        );
        assert_eq!(
            finding_facts(&home, "finding-ffffffffffffffff").unwrap(),
            Some(FindingFacts {
                failure_rate: None,
                defect_class: None,
                server: None,
                tool: None,
                kind: None,
                err_codes: None,
            })
        );
        assert_eq!(
            finding_facts(&home, "finding-0000000000000000").unwrap(),
            None
        );
        drop(conn);
        // Closed cleanly: no -wal left, and still readable.
        assert!(!dir.path().join("index.db-wal").exists());
        assert_eq!(
            finding_facts(&home, id).unwrap().unwrap().failure_rate,
            Some(0.25)
        );
        std::fs::write(home.index_db(), vec![7u8; 4096]).unwrap();
        let err = finding_facts(&home, id).unwrap_err();
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
        assert!(
            err.message()
                .starts_with(&format!("{}: cannot read findings: ", home.index_db())),
            "{}",
            err.message()
        );
    }

    #[test]
    fn finding_facts_carry_the_server_and_tool() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let conn = rusqlite::Connection::open(home.index_db()).unwrap();
        conn.execute_batch(
            "CREATE TABLE findings(id TEXT, server TEXT, tool TEXT);
             INSERT INTO findings VALUES ('finding-0123456789abcdef', 'jobs', 'get_status');",
        )
        .unwrap();
        let facts = finding_facts(&home, "finding-0123456789abcdef")
            .unwrap()
            .unwrap();
        assert_eq!(
            (facts.server.as_deref(), facts.tool.as_deref()),
            (Some("jobs"), Some("get_status"))
        );
    }

    #[test]
    fn a_findings_table_without_the_columns_is_no_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let conn = rusqlite::Connection::open(home.index_db()).unwrap();
        conn.execute_batch(
            "CREATE TABLE findings(id TEXT); INSERT INTO findings VALUES ('finding-0123456789abcdef');",
        )
        .unwrap();
        assert_eq!(
            finding_facts(&home, "finding-0123456789abcdef").unwrap(),
            Some(FindingFacts {
                failure_rate: None,
                defect_class: None,
                server: None,
                tool: None,
                kind: None,
                err_codes: None,
            })
        );
    }

    #[test]
    fn details_are_cleaned() {
        assert_eq!(clean_detail("a\nb\u{7}c"), "abc");
        assert_eq!(clean_detail(&"é".repeat(200)).len(), 256);
    }
}
