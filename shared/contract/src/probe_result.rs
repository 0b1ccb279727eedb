//! The result of one probe run, signed with the store's salt.
//!
//! `mcpeval-probe` prints it; `mcpeval-verify --record` reads it back,
//! checks its MAC and records it, so runs compose through files and pipes.
//! The MAC is HMAC-SHA256 keyed by the salt over the canonical JSON of
//! every other field: an edited result, or one made by another store,
//! does not verify. A result judges the server and never echoes it: its
//! `detail` holds only manifest pointers, attempt counts and error codes.
//!
//! The result's form, its parse and its checks are the contract, so a
//! plugin can read `probe`'s output; signing and checking the MAC need the
//! salt, and are the store's (`mcpeval-store`, `signed`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical;
use crate::error::{Error, Result};
use crate::finding::{DefectClass, Probe, Violation};
use crate::id::{DefinitionId, FindingId, RunId, TargetId};
use crate::manifest::{Outcome, Unmet, is_identifier};
use crate::spelling::spelled;

/// The schema tag of probe results.
pub const SCHEMA: &str = "mcpeval.probe/1";

/// The longest `detail`, in bytes.
pub const MAX_DETAIL: usize = 256;

/// Names are compared, and carried in results, cut to this many bytes:
/// the journal cuts names of an oversized record to the same length.
pub const MAX_NAME: usize = 1024;

/// Every field of a result, in the order they are printed (`contract`
/// only with reason `output-schema-violation`).
pub const FIELDS: [&str; 21] = [
    "schema",
    "run_id",
    "finding",
    "case",
    "probe",
    "tools",
    "steps",
    "budget",
    "server",
    "checked",
    "definition",
    "target",
    "binding",
    "result",
    "reason",
    "detail",
    "contract",
    "attempts",
    "started_at",
    "finished_at",
    "mac",
];

/// The fields later releases added to `mcpeval.probe/1`: results of
/// earlier releases lack them and still parse (their MAC still verifies),
/// but cannot earn credit, since the proof rules need every one of them;
/// `server` and `checked` are absent when the run ended before a
/// handshake, `contract` on every result but an output-schema violation.
/// Every other field is required.
pub const ADDED_FIELDS: [&str; 8] = [
    "tools",
    "steps",
    "budget",
    "server",
    "checked",
    "definition",
    "target",
    "contract",
];

/// What one step of a case asserts, as far as the proof rules (SPEC §7,
/// "Proof") need it: carried in the signed result, so `verify --record`
/// holds a run made elsewhere to the rules without the manifest, and
/// without any argument or expected value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepClaim {
    /// The tool the step calls, cut to [`MAX_NAME`] bytes.
    pub tool: String,
    /// The outcome the step expects.
    pub outcome: Outcome,
    /// The error code it expects, with outcome `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// Whether it asserts something of the result that not every
    /// successful result has (see `Expect::says_something`).
    pub oracle: bool,
}

spelled! {
    /// How a run ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Verdict {
        /// The case's contract held.
        Green = "green",
        /// The server answered and broke the case's contract.
        Red = "red",
        /// The server could not be started, failed the handshake, broke the
        /// protocol or returned a malformed result: no evidence either way.
        TransportError = "transport-error",
    }
}

impl Verdict {
    /// The exit status a probe run ends with (0, 1 or 5).
    pub fn exit_status(self) -> u8 {
        match self {
            Verdict::Green => crate::exit::SUCCESS,
            Verdict::Red => crate::exit::RED,
            Verdict::TransportError => crate::exit::TRANSPORT,
        }
    }
}

spelled! {
    /// Why a run was not green: a closed set, each with a remediation hint.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Reason {
        /// Red: the case expects success; the call failed.
        ExpectedOkGotError = "expected-ok-got-error",
        /// Red: the case expects an error; the call succeeded.
        ExpectedErrorGotOk = "expected-error-got-ok",
        /// Red: the error's code differs from `expect.error_code`.
        ErrorCode = "error-code",
        /// Red: a required result path (or field) is absent.
        MissingPath = "missing-path",
        /// Red: a result path (or field) holds another value.
        NotEqual = "not-equal",
        /// Red: no response within `timeout_ms`; the call was cancelled.
        Timeout = "timeout",
        /// Red: a degradation attempt failed.
        AttemptFailed = "attempt-failed",
        /// Red: an error did not report a boolean `retryable`.
        RetryableUnreported = "retryable-unreported",
        /// Red: a retryable error was not followed by a success.
        RetryableNotRecovered = "retryable-not-recovered",
        /// Red: a non-retryable error did not repeat on the next attempt.
        NonRetryableNotRepeated = "non-retryable-not-repeated",
        /// Red: a successful result broke its tool's declared
        /// `outputSchema` (or had no `structuredContent`), whatever the
        /// case expects: the reference clients raise on it.
        OutputSchemaViolation = "output-schema-violation",
        /// Red: the tool of a contract-violation finding declared no
        /// `outputSchema` the probe could check (none, one it skips as too
        /// costly or invalid, or the tool was not listed): removing the
        /// promise is not keeping it.
        OutputSchemaMissing = "output-schema-missing",
        /// Transport: the server command could not be started.
        ServerStart = "server-start",
        /// Transport: neither `server/discover` nor `initialize` succeeded.
        Handshake = "handshake",
        /// Transport: the server's stdout closed (it exited) before an answer.
        ServerExited = "server-exited",
        /// Transport: a line on stdout was not JSON.
        NonJsonLine = "non-json-line",
        /// Transport: a response carried an id the probe was not waiting for.
        IdMismatch = "id-mismatch",
        /// Transport: JSON that is not a JSON-RPC message.
        InvalidMessage = "invalid-message",
        /// Transport: a `tools/call` result that is not an object, or whose
        /// `isError` is not a boolean.
        MalformedResult = "malformed-result",
        /// Transport: the HTTP endpoint could not be reached.
        Unreachable = "unreachable",
        /// Transport: the HTTP endpoint answered with an error status, or
        /// without a body where a response was due.
        HttpStatus = "http-status",
        /// Transport: an HTTP answer (a body, or an event of a stream) was
        /// not JSON.
        NonJsonBody = "non-json-body",
        /// Transport: an HTTP answer ended or broke off before the JSON-RPC
        /// response.
        StreamEnded = "stream-ended",
    }
}

impl Reason {
    /// The reason a red result gives for an unmet expectation, and the
    /// JSON Pointer it names.
    pub fn of_unmet(unmet: Unmet) -> (Reason, String) {
        match unmet {
            Unmet::Missing(pointer) => (Reason::MissingPath, pointer),
            Unmet::NotEqual(pointer) => (Reason::NotEqual, pointer),
        }
    }

    /// Whether this reason makes a run red or a transport error.
    pub fn verdict(self) -> Verdict {
        match self {
            Reason::ServerStart
            | Reason::Handshake
            | Reason::ServerExited
            | Reason::NonJsonLine
            | Reason::IdMismatch
            | Reason::InvalidMessage
            | Reason::MalformedResult
            | Reason::Unreachable
            | Reason::HttpStatus
            | Reason::NonJsonBody
            | Reason::StreamEnded => Verdict::TransportError,
            _ => Verdict::Red,
        }
    }

    /// One line telling the server's author (or the case's) what to do.
    pub fn hint(self) -> &'static str {
        match self {
            Reason::ExpectedOkGotError => {
                "The call failed where the case expects success: fix the failing path, or change the case if this error is the contract."
            }
            Reason::ExpectedErrorGotOk => {
                "The call succeeded where the case expects an error: return an error when the request cannot be met."
            }
            Reason::ErrorCode => {
                "The error carries another code than expect.error_code: return the documented code."
            }
            Reason::MissingPath => {
                "A result field the case requires is absent: return it in structuredContent or content."
            }
            Reason::NotEqual => {
                "A result field differs from the value the case expects: return what the contract promises."
            }
            Reason::Timeout => {
                "No response within timeout_ms (the call was cancelled): bound the tool's latency, or raise timeout_ms."
            }
            Reason::AttemptFailed => {
                "A repeated call failed: recover without restart, bound latency, and mark transient errors retryable."
            }
            Reason::RetryableUnreported => {
                "An error did not say whether to retry: report a boolean retryable with every error."
            }
            Reason::RetryableNotRecovered => {
                "An error marked retryable never gave way to a success: mark it retryable only when a retry can succeed."
            }
            Reason::NonRetryableNotRepeated => {
                "An error marked non-retryable did not repeat on the next attempt: mark transient errors retryable."
            }
            Reason::OutputSchemaViolation => DefectClass::ContractViolation.fix_hint(),
            Reason::OutputSchemaMissing => {
                "The finding's tool declares no outputSchema this probe can check (none, one too costly or invalid to check, or the tool is not listed): removing the promise is not keeping it; declare the schema and return structuredContent that conforms to it."
            }
            Reason::ServerStart => {
                "The server command could not be started: check the command after --."
            }
            Reason::Handshake => {
                "The server completed neither server/discover nor initialize: check that it speaks MCP on stdio, or Streamable HTTP at --url."
            }
            Reason::ServerExited => {
                "The server stopped before it answered: what it wrote on stderr says why (all of it with --server-stderr)."
            }
            Reason::NonJsonLine => {
                "The server wrote a line that is not JSON on stdout: send logs to stderr."
            }
            Reason::IdMismatch => {
                "The server answered with an id no pending request had: echo each request's id once."
            }
            Reason::InvalidMessage => {
                "The server sent JSON that is not a JSON-RPC message: answer with result or error."
            }
            Reason::MalformedResult => "Return a CallToolResult object with a boolean isError.",
            Reason::Unreachable => {
                "The endpoint could not be reached: check --url, and that the server listens there."
            }
            Reason::HttpStatus => {
                "The endpoint answered with an HTTP error status: check --url and the --header credentials, and answer each request with its JSON-RPC response."
            }
            Reason::NonJsonBody => {
                "The endpoint's answer was not JSON: answer with application/json or text/event-stream carrying JSON-RPC messages."
            }
            Reason::StreamEnded => {
                "The HTTP answer ended before the JSON-RPC response: keep each response open until its response is sent."
            }
        }
    }
}

/// One probe run's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// UUID v4, unique per run: replaying it earns no second credit.
    pub run_id: RunId,
    /// The finding the case proves.
    pub finding: FindingId,
    /// The case id.
    pub case: String,
    /// The probe that ran (`instruction-fidelity`, …).
    pub probe: String,
    /// The tools the case calls, in step order, each once, each cut to
    /// [`MAX_NAME`] bytes; empty (and not printed) only in
    /// results of earlier releases, which cannot earn credit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// What each step of the case asserts, in step order; empty (and not
    /// printed) in results of earlier releases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepClaim>,
    /// The attempts the run was given (degradation, error-honesty; one
    /// per step otherwise); absent in results of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u32>,
    /// The server's name as capture would record it: the name it gave in
    /// its handshake (serverInfo.name), or, when it gave none or an empty
    /// one, its executable's file name (over HTTP: the endpoint's
    /// host:port); cut the same way. Absent when the run ended before a
    /// handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The case's tools (named as in `tools`) whose declared
    /// `outputSchema` the run checked every successful result against: the
    /// tools the server's `tools/list` declared one for that the probe
    /// could compile. Absent when the run ended before a handshake, and in
    /// results of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<Vec<String>>,
    /// The case definition's fingerprint (see [`DefinitionId`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<DefinitionId>,
    /// The target's fingerprint (see [`TargetId`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetId>,
    /// The credit binding, `b-` and 16 hex digits (made by the store's `binding`).
    pub binding: String,
    /// The verdict.
    pub result: Verdict,
    /// Why it was not green; null when green.
    pub reason: Option<Reason>,
    /// Where or when it went wrong: a pointer, an attempt, an error code.
    pub detail: Option<String>,
    /// With reason `output-schema-violation`, and only then: where the
    /// result first broke its tool's `outputSchema` (a JSON Pointer of
    /// names the schema declares, as a journal record's `contract.at`) and
    /// the keyword that failed. Never a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<Violation>,
    /// `tools/call` requests made.
    pub attempts: u32,
    /// RFC 3339 UTC, milliseconds.
    pub started_at: String,
    /// RFC 3339 UTC, milliseconds.
    pub finished_at: String,
    /// Lower-case hex HMAC-SHA256 over the other fields' canonical JSON.
    pub mac: String,
}

impl StepClaim {
    /// What each step of `case` asserts, in step order, names cut as
    /// results carry them.
    pub fn of(case: &crate::manifest::Case) -> Vec<StepClaim> {
        case.steps
            .iter()
            .map(|step| StepClaim {
                tool: crate::escape::clean_name(&step.tool).into_owned(),
                outcome: step.expect.outcome,
                error_code: step.expect.error_code,
                oracle: step.expect.says_something(),
            })
            .collect()
    }
}

impl ProbeResult {
    /// The remediation hint of a result that is not green: its reason's,
    /// naming the place and keyword of an output-schema violation (the
    /// contract-violation fix hint, as `findings` gives it). `None` when
    /// green.
    pub fn hint(&self) -> Option<String> {
        let reason = self.reason?;
        Some(match (reason, &self.contract) {
            (Reason::OutputSchemaViolation, Some(violation)) => violation.fix_hint(),
            _ => reason.hint().to_owned(),
        })
    }

    /// The canonical JSON of every field but `mac`: what the MAC covers.
    pub fn canonical_unsigned(&self) -> String {
        let mut value = serde_json::to_value(self).expect("results serialize");
        if let Value::Object(map) = &mut value {
            map.remove("mac");
        }
        canonical::to_string(&value)
    }

    /// The result as one line of JSON, fields in [`FIELDS`] order. Names
    /// may hold any character; every control character is written as a
    /// `\u` escape (serde_json leaves DEL and the C1 range raw).
    pub fn to_json_line(&self) -> String {
        let line = serde_json::to_string(self).expect("results serialize");
        let mut out = String::with_capacity(line.len());
        for c in line.chars() {
            if c.is_control() {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Parses a result and checks every field's form; the MAC is checked
    /// separately, by the store, which holds the salt. The
    /// error names the field.
    pub fn parse(text: &str) -> Result<ProbeResult> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::rejected("not a JSON object").with_source(e))?;
        let Value::Object(map) = &value else {
            return Err(Error::rejected("not a JSON object"));
        };
        if let Some(missing) = FIELDS
            .iter()
            .filter(|f| !ADDED_FIELDS.contains(f))
            .find(|f| !map.contains_key(**f))
        {
            return Err(Error::rejected(format!(
                "the field \"{missing}\" is missing"
            )));
        }
        // The pointer names the field whose form is wrong (an id, a
        // verdict), as manifest errors do; the fields are all top level.
        let result: ProbeResult = serde_path_to_error::deserialize(value).map_err(|e| {
            Error::rejected(match e.path().to_string().as_str() {
                "." => e.inner().to_string(),
                path => format!("at /{path}: {}", e.inner()),
            })
        })?;
        result.validate()?;
        Ok(result)
    }

    /// Checks what serde cannot: tags, id forms, time stamps, and that the
    /// reason fits the verdict.
    pub fn validate(&self) -> Result<()> {
        if self.schema != SCHEMA {
            return Err(Error::rejected(format!("schema is not \"{SCHEMA}\"")));
        }
        match uuid::Uuid::parse_str(&self.run_id) {
            Ok(id) if id.get_version_num() == 4 => {}
            _ => return Err(Error::rejected("run_id is not a UUID v4")),
        }
        if !is_identifier(&self.case) {
            return Err(Error::rejected("case is not an identifier"));
        }
        if Probe::parse(&self.probe).is_none() {
            return Err(Error::rejected("probe is not a probe name"));
        }
        let fits = |name: &str| !name.is_empty() && name.len() <= MAX_NAME;
        if !self
            .tools
            .iter()
            .chain(self.steps.iter().map(|s| &s.tool))
            .all(|t| fits(t))
        {
            return Err(Error::rejected(format!(
                "tools or steps hold an empty name or one longer than {} bytes",
                MAX_NAME
            )));
        }
        if self
            .checked
            .iter()
            .flatten()
            .any(|t| !fits(t) || !self.tools.contains(t))
        {
            return Err(Error::rejected(
                "checked names a tool that is not one of the result's tools",
            ));
        }
        if self.server.as_deref().is_some_and(|s| !fits(s)) {
            return Err(Error::rejected(format!(
                "server is empty or longer than {} bytes",
                MAX_NAME
            )));
        }
        if self
            .steps
            .iter()
            .any(|s| s.error_code.is_some() && s.outcome != Outcome::Error)
        {
            return Err(Error::rejected(
                "steps holds an error code on a step whose outcome is not \"error\"",
            ));
        }
        if !is_binding(&self.binding) {
            return Err(Error::rejected(
                "binding is not \"b-\" and 16 lower-case hex digits",
            ));
        }
        match (self.result, self.reason) {
            (Verdict::Green, None) if self.detail.is_none() => {}
            (Verdict::Green, _) => {
                return Err(Error::rejected("a green result has no reason or detail"));
            }
            (verdict, Some(reason)) if reason.verdict() == verdict => {}
            (verdict, _) => {
                return Err(Error::rejected(format!(
                    "a {} result needs one of its own reasons",
                    verdict.as_str()
                )));
            }
        }
        match (&self.contract, self.reason) {
            (Some(violation), Some(Reason::OutputSchemaViolation)) => {
                crate::record::Contract {
                    kept: false,
                    at: Some(violation.at.as_str().into()),
                    keyword: Some(violation.keyword.as_str().into()),
                }
                .validate()?;
            }
            (None, Some(Reason::OutputSchemaViolation)) => {
                return Err(Error::rejected(
                    "an output-schema-violation result lacks its contract (at and keyword)",
                ));
            }
            (Some(_), _) => {
                return Err(Error::rejected(
                    "contract is given on a result whose reason is not output-schema-violation",
                ));
            }
            (None, _) => {}
        }
        if let Some(detail) = &self.detail
            && (detail.len() > MAX_DETAIL || detail.chars().any(char::is_control))
        {
            return Err(Error::rejected(format!(
                "detail is longer than {MAX_DETAIL} bytes or holds control characters"
            )));
        }
        let started = crate::time::parse(&self.started_at)
            .ok_or_else(|| Error::rejected("started_at is not an RFC 3339 time stamp"))?;
        let finished = crate::time::parse(&self.finished_at)
            .ok_or_else(|| Error::rejected("finished_at is not an RFC 3339 time stamp"))?;
        if finished < started {
            return Err(Error::rejected("finished_at is before started_at"));
        }
        let hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
        if self.mac.len() != 64 || !self.mac.bytes().all(hex) {
            return Err(Error::rejected("mac is not 64 lower-case hex digits"));
        }
        Ok(())
    }
}

/// Whether `s` is a binding fingerprint: `b-` and 16 lower-case hex digits.
pub fn is_binding(s: &str) -> bool {
    crate::id::BindingId::is_valid(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ProbeResult {
        ProbeResult {
            schema: SCHEMA.into(),
            run_id: RunId::parse("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap(),
            finding: FindingId::parse("finding-0123456789abcdef").unwrap(),
            case: "literal-status".into(),
            probe: "instruction-fidelity".into(),
            tools: vec!["get_status".into()],
            steps: vec![StepClaim {
                tool: "get_status".into(),
                outcome: Outcome::Ok,
                error_code: None,
                oracle: true,
            }],
            budget: Some(1),
            server: Some("jobs".into()),
            checked: Some(vec!["get_status".into()]),
            definition: Some(DefinitionId::parse("case-0011223344556677").unwrap()),
            target: Some(TargetId::parse("target-8899aabbccddeeff").unwrap()),
            binding: "b-0011223344556677".into(),
            result: Verdict::Red,
            reason: Some(Reason::NotEqual),
            detail: Some("/structuredContent/status".into()),
            contract: None,
            attempts: 1,
            started_at: "2026-11-30T07:00:00.123Z".into(),
            finished_at: "2026-11-30T07:00:00.456Z".into(),
            mac: "0".repeat(64),
        }
    }

    #[test]
    fn field_order_and_canonical_form() {
        let r = sample();
        // A violation's result has every field.
        let line = violated().to_json_line();
        let positions: Vec<usize> = FIELDS
            .iter()
            .map(|f| line.find(&format!("\"{f}\":")).unwrap())
            .collect();
        assert!(positions.is_sorted(), "{line}");
        assert!(
            line.starts_with(r#"{"schema":"mcpeval.probe/1","run_id":"#),
            "{line}"
        );
        assert_eq!(
            r.canonical_unsigned(),
            r#"{"attempts":1,"binding":"b-0011223344556677","budget":1,"case":"literal-status","checked":["get_status"],"definition":"case-0011223344556677","detail":"/structuredContent/status","finding":"finding-0123456789abcdef","finished_at":"2026-11-30T07:00:00.456Z","probe":"instruction-fidelity","reason":"not-equal","result":"red","run_id":"0f8fad5b-d9cb-469f-a165-70867728950e","schema":"mcpeval.probe/1","server":"jobs","started_at":"2026-11-30T07:00:00.123Z","steps":[{"oracle":true,"outcome":"ok","tool":"get_status"}],"target":"target-8899aabbccddeeff","tools":["get_status"]}"#
        );
    }

    #[test]
    fn parse_round_trips_and_checks_fields() {
        let r = sample();
        assert_eq!(ProbeResult::parse(&r.to_json_line()).unwrap(), r);
        let mut v: Value = serde_json::from_str(&r.to_json_line()).unwrap();
        v.as_object_mut().unwrap().remove("reason");
        assert_eq!(
            ProbeResult::parse(&v.to_string()).unwrap_err().message(),
            "the field \"reason\" is missing"
        );
        let mut extra: Value = serde_json::from_str(&r.to_json_line()).unwrap();
        extra["note"] = Value::from(1);
        assert!(
            ProbeResult::parse(&extra.to_string())
                .unwrap_err()
                .message()
                .starts_with("at /note: unknown field `note`")
        );
        // An id is checked as it is read, and the message names its field
        // without repeating the text.
        let mut bad: Value = serde_json::from_str(&r.to_json_line()).unwrap();
        bad["finding"] = Value::from("../../escape");
        let err = ProbeResult::parse(&bad.to_string())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("at /finding: not a finding id"), "{err}");
        assert!(!err.contains("escape"), "{err}");
        bad["finding"] = r.finding.to_string().into();
        bad["run_id"] = Value::from("0F8FAD5B-D9CB-469F-A165-70867728950E");
        let err = ProbeResult::parse(&bad.to_string())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("at /run_id: not a run id"), "{err}");
        let mut green = r.clone();
        green.result = Verdict::Green;
        assert_eq!(
            green.validate().unwrap_err().message(),
            "a green result has no reason or detail"
        );
        let mut transport = r.clone();
        transport.result = Verdict::TransportError;
        assert_eq!(
            transport.validate().unwrap_err().message(),
            "a transport-error result needs one of its own reasons"
        );
        let mut v1 = r.clone();
        v1.run_id = RunId::parse("0f8fad5b-d9cb-169f-a165-70867728950e").unwrap();
        assert_eq!(
            v1.validate().unwrap_err().message(),
            "run_id is not a UUID v4"
        );
    }

    #[test]
    fn reasons_are_a_closed_set_with_hints() {
        for reason in Reason::ALL {
            assert_eq!(Reason::parse(reason.as_str()), Some(reason));
            let json = serde_json::to_value(reason).unwrap();
            assert_eq!(json, reason.as_str());
            assert!(reason.hint().ends_with('.'), "{reason:?}");
        }
        let red = Reason::ALL
            .iter()
            .filter(|r| r.verdict() == Verdict::Red)
            .count();
        assert_eq!(red, 12);
        assert_eq!(
            Reason::MalformedResult.hint(),
            crate::finding::DefectClass::MalformedResult.fix_hint()
        );
        assert_eq!(
            Reason::OutputSchemaViolation.hint(),
            crate::finding::DefectClass::ContractViolation.fix_hint()
        );
    }

    fn violated() -> ProbeResult {
        ProbeResult {
            reason: Some(Reason::OutputSchemaViolation),
            detail: Some("call 1: structuredContent breaks the outputSchema".into()),
            contract: Some(Violation {
                at: "/status".into(),
                keyword: "enum".into(),
            }),
            ..sample()
        }
    }

    #[test]
    fn an_output_schema_violation_carries_where_and_which_keyword() {
        let r = violated();
        let line = r.to_json_line();
        assert!(
            line.contains(r#""contract":{"at":"/status","keyword":"enum"},"attempts":1"#),
            "{line}"
        );
        assert_eq!(ProbeResult::parse(&line).unwrap(), r);
        assert!(
            r.canonical_unsigned()
                .contains(r#""contract":{"at":"/status","keyword":"enum"}"#)
        );
        assert_eq!(
            r.hint().unwrap(),
            "Return structuredContent that conforms to the tool's declared outputSchema \
             (first violation at /status: enum)."
        );
        assert_eq!(
            sample().hint().unwrap(),
            Reason::NotEqual.hint(),
            "other reasons give their own hint"
        );
        let mut bare = r.clone();
        bare.contract = None;
        assert_eq!(
            bare.validate().unwrap_err().message(),
            "an output-schema-violation result lacks its contract (at and keyword)"
        );
        let mut stray = sample();
        stray.contract = r.contract.clone();
        assert_eq!(
            stray.validate().unwrap_err().message(),
            "contract is given on a result whose reason is not output-schema-violation"
        );
        let mut valued = r.clone();
        valued.contract.as_mut().unwrap().keyword = "enum: Ready!".into();
        assert_eq!(
            valued.validate().unwrap_err().message(),
            "contract.keyword is not a JSON Schema keyword"
        );
        let mut unlisted = sample();
        unlisted.checked = Some(vec!["other".into()]);
        assert_eq!(
            unlisted.validate().unwrap_err().message(),
            "checked names a tool that is not one of the result's tools"
        );
        let missing = ProbeResult {
            reason: Some(Reason::OutputSchemaMissing),
            checked: Some(Vec::new()),
            ..sample()
        };
        assert!(missing.validate().is_ok());
        assert!(missing.to_json_line().contains(r#""checked":[]"#));
    }
}
