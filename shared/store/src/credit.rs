//! Proof: what a run must show before it earns a finding credit (SPEC §7,
//! "Proof").
//!
//! The party running the proof may be the one that wrote the fix and
//! wants the finding closed, so every rule here asks one question: would
//! the run also pass on the unfixed server? A run that would proves
//! nothing. The rules, each with its own words, are:
//!
//! 1. the case calls the finding's tool ([`check`]);
//! 2. the server is the finding's server, a nameless one named as capture
//!    names it ([`require_server`]);
//! 3. the expectation is falsifiable by the finding's own evidence: an
//!    expected error names a code the failures never carried, an
//!    error-honesty probe is for an error-honesty finding, a transient
//!    failure is probed by repetition, and repetitions are never fewer
//!    than the failure rate sizes ([`check`]);
//! 4. a false-success finding is probed with an oracle on its tool's step
//!    or a later one that asserts more than every result has ([`check`]);
//! 5. and 6. (time order, witnessed closure) need the finding's recorded
//!    runs and live in [`crate::verification`].
//!
//! A contract-violation finding needs no oracle of the case's: every
//! probe checks its tool's successful results against the declared
//! `outputSchema`, so the unfixed server fails any case that reaches the
//! broken result. Two things could still pass there: a server that no
//! longer declares the schema (its results are then never checked), and
//! arguments that never reach the broken result. The first is red in the
//! probe, and a green result that did not check the tool's schema earns
//! nothing ([`require_checked`]); the second no case can show, so such a
//! finding closes only on a witnessed streak, whatever the store's policy
//! ([`crate::verification::Policy::requires_witness`]), and only a red
//! run that broke the schema witnesses it ([`reproduces`]).
//!
//! `probe` applies 1, 3 and 4 before the server starts and 2 right after
//! the handshake; `verify --record` applies them all again to the signed
//! result, which carries what they need (the steps' claims, the budget,
//! the server's name, the tools whose schemas it checked), so a result
//! made where the finding was unknown meets the same rules in the same
//! words.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::index_db;
use crate::lifecycle;
use shared::error::{Error, Result};
use shared::escape;
use shared::finding::{DefectClass, Kind, Probe};
use shared::home::Home;
use shared::manifest::Outcome;
use shared::probe_result::StepClaim;
use shared::score;

pub use crate::lifecycle::Evidence;
pub use shared::probe_result::MAX_NAME;

/// Attempts cap for degradation when the failure rate is unknown or low.
pub const DEGRADATION_CAP: u32 = 100;
/// Attempts cap for error-honesty.
pub const ERROR_HONESTY_CAP: u32 = 20;

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The server the failing calls went to, as the journal names it.
    pub server: String,
    /// The tool that failed.
    pub tool: String,
}

/// Everything the rules hold a run to: what the finding is about and
/// what its failures showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    /// Its server and tool.
    pub subject: Subject,
    /// Its kind, class, error codes and failure rate.
    pub evidence: Evidence,
}

/// What a run claims to show: its case's steps and the attempts it was
/// given, from the manifest (probe) or the signed result (record).
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The case id.
    pub case: &'a str,
    /// Its probe.
    pub probe: Probe,
    /// What each step asserts.
    pub steps: &'a [StepClaim],
    /// The attempts it runs (degradation, error-honesty).
    pub budget: u32,
}

/// The subject of `finding`: lifecycle.db's record first (kept for every
/// finding promote tracked, so it outlives the index), then index.db's
/// findings. `None` when neither knows it. Reads only: nothing is
/// created, migrated or written.
pub fn subject(home: &Home, finding: &str) -> Result<Option<Subject>> {
    if let Some((server, tool)) = lifecycle::remembered(home, finding)? {
        return Ok(Some(Subject { server, tool }));
    }
    Ok(index_db::finding_facts(home, finding)?.and_then(|facts| {
        Some(Subject {
            server: facts.server?,
            tool: facts.tool?,
        })
    }))
}

/// What the store knows of `finding`: its subject (see [`subject`]) and
/// its evidence, index.db's row first (the latest promote), then what
/// lifecycle.db kept. `None` when it does not know both. Reads only.
pub fn known(home: &Home, finding: &str) -> Result<Option<Known>> {
    let Some(subject) = subject(home, finding)? else {
        return Ok(None);
    };
    let indexed = index_db::finding_facts(home, finding)?.and_then(|facts| {
        Some(Evidence {
            kind: facts.kind?,
            defect_class: facts.defect_class,
            err_codes: facts.err_codes?,
            failure_rate: facts.failure_rate,
        })
    });
    let evidence = match indexed {
        Some(evidence) => Some(evidence),
        None => lifecycle::remembered_evidence(home, finding)?,
    };
    Ok(evidence.map(|evidence| Known { subject, evidence }))
}

/// [`known`], or status 3 when the store cannot say what `finding` is
/// about or what its failures showed. `outcome` ends the message
/// ("nothing was run", "nothing was recorded").
pub fn require_known(home: &Home, finding: &str, outcome: &str) -> Result<Known> {
    known(home, finding)?.ok_or_else(|| {
        Error::unavailable(format!(
            "this store does not know which server and tool {finding} is about, or what its \
             failures showed (lifecycle.db tracked it before it kept them, and index.db does not \
             list it), so no run can prove its repair; {outcome}"
        ))
        .with_hint(
            "run `mcpeval index` and `mcpeval promote` while its calls are in the journals, or \
             close it by hand with `mcpeval close`",
        )
    })
}

/// A name as carried in a result and compared: as the store keeps names
/// ([`escape::clean_name`]), so a server that names itself with control
/// characters matches the finding capture recorded for it.
pub fn name_key(name: &str) -> Cow<'_, str> {
    escape::clean_name(name)
}

/// The name capture gives a server that names itself nothing (or an
/// empty name) on stdio: its executable's file name.
pub fn command_name(program: &std::ffi::OsStr) -> String {
    std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "server".to_owned())
}

/// The attempts sized from a failure rate for a repeated probe (the cap
/// when the rate is unknown); `None` for probes that make one call a step.
pub fn sized_attempts(probe: Probe, failure_rate: Option<f64>) -> Option<u32> {
    let cap = match probe {
        Probe::Degradation => DEGRADATION_CAP,
        Probe::ErrorHonesty => ERROR_HONESTY_CAP,
        Probe::InstructionFidelity | Probe::Workflow => return None,
    };
    Some(failure_rate.map_or(cap, |p| score::attempts(p, cap)))
}

/// Holds a claim to rules 1, 3 and 4 for `finding`. Refusals are status 4;
/// `at` names the file the case or result came from, and `outcome` ends
/// the message.
pub fn check(
    at: &str,
    finding: &str,
    known: &Known,
    claim: &Claim<'_>,
    outcome: &str,
) -> Result<()> {
    let Known { subject, evidence } = known;
    let case = shown(claim.case);
    let tool = shown(&subject.tool);
    let refuse = |why: String, hint: String| {
        Err(Error::rejected(format!("{at}: case {case} {why}; {outcome}")).with_hint(hint))
    };
    let want = name_key(&subject.tool);
    let on_tool = |step: &StepClaim| name_key(&step.tool) == want;

    // 1. The finding's tool.
    let Some(first) = claim.steps.iter().position(on_tool) else {
        let mut called: Vec<String> = Vec::new();
        for step in claim.steps {
            let name = shown(&step.tool);
            if !called.contains(&name) {
                called.push(name);
            }
        }
        let called = if called.is_empty() {
            "no tool".to_owned()
        } else {
            called.join(", ")
        };
        return refuse(
            format!(
                "calls {called} but never {tool}, the tool of {finding}: its runs cannot prove \
                 that finding's repair"
            ),
            format!(
                "make the case call {tool} (a workflow: in at least one step), or run the case \
                 written for {finding}"
            ),
        );
    };

    // 3. Falsifiable by the finding's own evidence.
    if evidence.kind == Kind::Error {
        for step in claim.steps.iter().filter(|s| on_tool(s)) {
            if step.outcome != Outcome::Error {
                continue;
            }
            match step.error_code {
                None => {
                    return refuse(
                        format!(
                            "expects {tool} to fail with any error, as it failed when {finding} \
                             was found: the unfixed server passes it, so it proves nothing"
                        ),
                        codes_hint(&evidence.err_codes),
                    );
                }
                Some(code) if evidence.err_codes.contains(&code) => {
                    return refuse(
                        format!(
                            "expects {tool} to fail with error code {code}, a code of the \
                             failures of {finding} itself: the unfixed server passes it, so it \
                             proves nothing"
                        ),
                        codes_hint(&evidence.err_codes),
                    );
                }
                Some(_) => {}
            }
        }
    }
    if claim.probe == Probe::ErrorHonesty
        && evidence.defect_class != Some(DefectClass::ErrorHonesty)
    {
        return refuse(
            format!(
                "is an error-honesty probe, which a server passes by failing consistently, and \
                 {finding} is not an error-honesty finding: the unfixed server can pass it"
            ),
            "probe it with instruction-fidelity (expecting success, or an error the failures \
             never carried), degradation or a workflow; `mcpeval generate` writes the probe its \
             class needs"
                .to_owned(),
        );
    }
    if evidence.defect_class == Some(DefectClass::Transient)
        && matches!(claim.probe, Probe::InstructionFidelity | Probe::Workflow)
    {
        return refuse(
            format!(
                "calls {tool} once a step, and {finding} is a transient failure that comes and \
                 goes: the unfixed server passes a single call most of the time"
            ),
            "probe it with degradation, which repeats the call as often as the failure rate \
             needs (`mcpeval generate` writes it)"
                .to_owned(),
        );
    }
    if let Some(sized) = sized_attempts(claim.probe, evidence.failure_rate)
        && claim.budget < sized
    {
        let rate = evidence.failure_rate.map_or_else(
            || "an unknown failure rate (the cap applies)".to_owned(),
            |p| format!("a failure rate of {:.1}%", p * 100.0),
        );
        return refuse(
            format!(
                "runs {} attempts, and {finding}, with {rate}, needs {sized} for one of them to \
                 fail on the unfixed server with 95% probability",
                claim.budget
            ),
            format!("remove \"attempts\" from the case, or set it to {sized} or more"),
        );
    }

    // 4. An oracle that says something, where it matters.
    if evidence.kind == Kind::FalseSuccess
        && !claim.steps[first..]
            .iter()
            .any(|s| s.oracle || s.outcome == Outcome::Error)
    {
        return refuse(
            format!(
                "cannot prove a false-success repair: no step from the first call of {tool} on \
                 expects an error or asserts more of a result than every successful result has \
                 (`/content`, `/isError` and a bare `/structuredContent` are in all of them)"
            ),
            format!(
                "on the step that calls {tool}, or a later one that reads what it did, add \
                 required_result_paths or equals_paths under /structuredContent (or values under \
                 /content) that tell the bug from the repair, or expect an error"
            ),
        );
    }
    Ok(())
}

/// Whether a red run with `reason` failed the way the finding's calls
/// failed, so that it can witness a closure (rule 6): an error finding
/// by an error (or, for a transient one, a timeout too); a false success
/// by a result that lacks or contradicts the assertion, or by success
/// where an error was expected; a contract violation by a result that
/// broke the tool's outputSchema (not by one that lost the schema). A red
/// for any other reason (a timeout of a server that never timed out in
/// the evidence) shows the case can fail, not that it caught this bug. A
/// malformed result is never red (it is no evidence), so a malformed
/// finding takes any red run.
pub fn reproduces(reason: shared::probe_result::Reason, evidence: &Evidence) -> bool {
    use shared::probe_result::Reason as R;
    match evidence.kind {
        Kind::Error => match reason {
            R::ExpectedOkGotError
            | R::ErrorCode
            | R::AttemptFailed
            | R::RetryableUnreported
            | R::RetryableNotRecovered
            | R::NonRetryableNotRepeated => true,
            R::Timeout => evidence.defect_class == Some(DefectClass::Transient),
            _ => false,
        },
        Kind::FalseSuccess => {
            matches!(reason, R::MissingPath | R::NotEqual | R::ExpectedErrorGotOk)
        }
        Kind::Contract => reason == R::OutputSchemaViolation,
        _ => reason.verdict() == shared::probe_result::Verdict::Red,
    }
}

/// Refuses (status 4) a green result for a contract-violation finding
/// whose run did not check the finding's tool's results against a declared
/// `outputSchema` (`checked`: the tools it checked; `None` for a result of
/// an earlier release): the tool declared none, or one too costly or
/// invalid to check, and a result that is never checked always passes.
/// A probe that knew the finding made such a run red
/// (`output-schema-missing`); one that did not carries what shows it.
pub fn require_checked(
    at: &str,
    finding: &str,
    known: &Known,
    checked: Option<&[String]>,
    outcome: &str,
) -> Result<()> {
    if known.evidence.kind != Kind::Contract {
        return Ok(());
    }
    let want = name_key(&known.subject.tool);
    if checked.is_some_and(|tools| tools.iter().any(|t| name_key(t) == want)) {
        return Ok(());
    }
    let tool = shown(&known.subject.tool);
    let why = match checked {
        None => "does not say which tools' outputSchema it checked (an earlier release of \
                 mcpeval-probe made it)"
            .to_owned(),
        Some(_) => format!(
            "did not check {tool}'s results against an outputSchema: the server declared none \
             for it, or one too costly or invalid to check, and a result that is never checked \
             always passes"
        ),
    };
    Err(Error::rejected(format!(
        "{at}: the green run {why}; {finding} is a contract violation of that schema, and \
         removing the promise is not keeping it; {outcome}"
    ))
    .with_hint(format!(
        "declare {tool}'s outputSchema again and run the case with this release's mcpeval-probe"
    )))
}

fn codes_hint(codes: &[i64]) -> String {
    let codes = match codes {
        [] => "no error code".to_owned(),
        codes => {
            let list: Vec<String> = codes.iter().map(i64::to_string).collect();
            format!("the codes {}", list.join(", "))
        }
    };
    format!(
        "its failures carried {codes}: expect success, or an error_code the repair returns and \
         the failures never did; if the server is right to refuse, close the finding by hand \
         with `mcpeval close --reason`"
    )
}

/// Rule 2: refuses (status 6) a run whose server is not the finding's
/// server. `named` is the name as capture would record it (see
/// [`shared::probe_result::ProbeResult::server`]); `None` (a result of an
/// earlier release) cannot show it. `at` prefixes the message (a file and
/// ": ", or nothing).
pub fn require_server(
    at: &str,
    named: Option<&str>,
    finding: &str,
    subject: &Subject,
    outcome: &str,
) -> Result<()> {
    let hint = "run the case against the server the finding was captured from (its name is in \
                `mcpeval findings --format json`; a server that gives no name is named by its \
                executable's file name, or host:port over HTTP, as capture names it)";
    match named {
        Some(name) if name_key(name) == name_key(&subject.server) => Ok(()),
        Some(name) => Err(Error::refused(format!(
            "{at}the server is {} but {finding} is about server {}: its runs earn that finding \
             no credit; {outcome}",
            shown(name),
            shown(&subject.server)
        ))
        .with_hint(hint)),
        None => Err(Error::refused(format!(
            "{at}the result does not say which server answered (an earlier release of \
             mcpeval-probe made it), so it cannot show that {finding}'s server {} did; {outcome}",
            shown(&subject.server)
        ))
        .with_hint("run the case again with this release's mcpeval-probe")),
    }
}

/// A name fit for a message: quoted, every control character escaped,
/// at most 64 characters and then an ellipsis. Names come from servers
/// and journals: they are untrusted.
pub fn shown(name: &str) -> String {
    const SHOWN: usize = 64;
    let mut out = String::new();
    let cut: String = name.chars().take(SHOWN).collect();
    let _ = write!(out, "{cut:?}");
    if name.chars().nth(SHOWN).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &str = "finding-0123456789abcdef";

    fn known(kind: Kind, class: DefectClass, codes: &[i64], rate: Option<f64>) -> Known {
        Known {
            subject: Subject {
                server: "jobs".into(),
                tool: "get_status".into(),
            },
            evidence: Evidence {
                kind,
                defect_class: Some(class),
                err_codes: codes.to_vec(),
                failure_rate: rate,
            },
        }
    }

    fn step(tool: &str, outcome: Outcome, code: Option<i64>, oracle: bool) -> StepClaim {
        StepClaim {
            tool: tool.into(),
            outcome,
            error_code: code,
            oracle,
        }
    }

    fn judge(known: &Known, probe: Probe, steps: &[StepClaim], budget: u32) -> Result<()> {
        let claim = Claim {
            case: "c",
            probe,
            steps,
            budget,
        };
        check("m.json", F, known, &claim, "nothing was run")
    }

    #[test]
    fn rule_1_the_case_must_call_the_findings_tool() {
        let k = known(Kind::Error, DefectClass::ToolError, &[-32603], None);
        let ok = step("get_status", Outcome::Ok, None, false);
        assert!(judge(&k, Probe::InstructionFidelity, std::slice::from_ref(&ok), 1).is_ok());
        let other = step("list_jobs", Outcome::Ok, None, true);
        let err = judge(
            &k,
            Probe::InstructionFidelity,
            std::slice::from_ref(&other),
            1,
        )
        .unwrap_err();
        assert_eq!(err.status(), shared::exit::REJECTED);
        assert_eq!(
            err.message(),
            "m.json: case \"c\" calls \"list_jobs\" but never \"get_status\", the tool of \
             finding-0123456789abcdef: its runs cannot prove that finding's repair; nothing was run"
        );
        let both = [other.clone(), step("b", Outcome::Ok, None, false), other];
        let err = judge(&k, Probe::Workflow, &both, 3).unwrap_err();
        assert!(
            err.message()
                .contains("calls \"list_jobs\", \"b\" but never"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn rule_3_an_expected_error_must_be_one_the_failures_never_carried() {
        let k = known(Kind::Error, DefectClass::InvalidArguments, &[-32602], None);
        let run = |code| {
            judge(
                &k,
                Probe::InstructionFidelity,
                &[step("get_status", Outcome::Error, code, true)],
                1,
            )
        };
        let any = run(None).unwrap_err();
        assert!(any.message().contains("to fail with any error"), "{any}");
        let same = run(Some(-32602)).unwrap_err();
        assert!(
            same.message().contains("error code -32602, a code of"),
            "{same}"
        );
        assert!(
            same.hint().unwrap().contains("close the finding by hand"),
            "{same:?}"
        );
        assert!(run(Some(-32001)).is_ok());
        // Errors expected of other tools are not the finding's evidence.
        let wf = [
            step("cleanup", Outcome::Error, None, true),
            step("get_status", Outcome::Ok, None, false),
        ];
        assert!(judge(&k, Probe::Workflow, &wf, 2).is_ok());
        // A false-success finding has no error of its own: an expected
        // error is its oracle.
        let fs = known(Kind::FalseSuccess, DefectClass::FalseSuccess, &[], None);
        assert!(
            judge(
                &fs,
                Probe::InstructionFidelity,
                &[step("get_status", Outcome::Error, None, true)],
                1
            )
            .is_ok()
        );
    }

    #[test]
    fn rule_3_probes_and_attempts_the_evidence_calls_for() {
        let tool_error = known(Kind::Error, DefectClass::ToolError, &[], Some(0.3));
        let once = [step("get_status", Outcome::Ok, None, false)];
        let err = judge(&tool_error, Probe::ErrorHonesty, &once, 20).unwrap_err();
        assert!(err.message().contains("error-honesty probe"), "{err}");
        let honesty = known(Kind::Error, DefectClass::ErrorHonesty, &[], Some(0.3));
        assert!(judge(&honesty, Probe::ErrorHonesty, &once, 9).is_ok());
        let err = judge(&honesty, Probe::ErrorHonesty, &once, 8).unwrap_err();
        assert!(
            err.message()
                .contains("runs 8 attempts, and finding-0123456789abcdef, with a failure rate of 30.0%, needs 9"),
            "{err}"
        );
        let transient = known(Kind::Error, DefectClass::Transient, &[-32001], Some(0.2));
        let err = judge(&transient, Probe::InstructionFidelity, &once, 1).unwrap_err();
        assert!(err.message().contains("transient failure"), "{err}");
        assert!(judge(&transient, Probe::Degradation, &once, 14).is_ok());
        assert!(judge(&transient, Probe::Degradation, &once, 13).is_err());
        let unknown_rate = known(Kind::Error, DefectClass::Transient, &[], None);
        assert!(judge(&unknown_rate, Probe::Degradation, &once, 99).is_err());
        assert!(judge(&unknown_rate, Probe::Degradation, &once, 100).is_ok());
    }

    #[test]
    fn rule_4_a_false_success_oracle_on_the_tool_or_after_it() {
        let k = known(Kind::FalseSuccess, DefectClass::FalseSuccess, &[], None);
        let before = [
            step("list_jobs", Outcome::Ok, None, true),
            step("get_status", Outcome::Ok, None, false),
        ];
        let err = judge(&k, Probe::Workflow, &before, 2).unwrap_err();
        assert!(
            err.message()
                .contains("cannot prove a false-success repair"),
            "{err}"
        );
        let after = [
            step("get_status", Outcome::Ok, None, false),
            step("list_jobs", Outcome::Ok, None, true),
        ];
        assert!(judge(&k, Probe::Workflow, &after, 2).is_ok());
        let bare = [step("get_status", Outcome::Ok, None, false)];
        assert!(judge(&k, Probe::InstructionFidelity, &bare, 1).is_err());
        assert!(judge(&k, Probe::Degradation, &bare, 100).is_err());
    }

    #[test]
    fn rule_2_the_server_named_as_capture_names_it() {
        let s = Subject {
            server: "jobs".into(),
            tool: "get_status".into(),
        };
        assert!(require_server("", Some("jobs"), F, &s, "x").is_ok());
        let err = require_server("", None, F, &s, "nothing was recorded").unwrap_err();
        assert_eq!(err.status(), shared::exit::REFUSED);
        let err =
            require_server("", Some("evil\u{1b}[2J\n"), F, &s, "nothing was recorded").unwrap_err();
        assert_eq!(err.status(), shared::exit::REFUSED);
        assert_eq!(
            err.message(),
            "the server is \"evil\\u{1b}[2J\\n\" but finding-0123456789abcdef is about server \
             \"jobs\": its runs earn that finding no credit; nothing was recorded"
        );
        assert!(!err.message().chars().any(char::is_control));
        assert_eq!(command_name("/usr/bin/python3".as_ref()), "python3");
        assert_eq!(command_name("".as_ref()), "server");
    }

    #[test]
    fn a_contract_violation_is_proved_only_by_a_checked_schema() {
        use shared::probe_result::Reason;
        let k = known(Kind::Contract, DefectClass::ContractViolation, &[], None);
        // The schema check is the oracle: outcome ok alone is admitted.
        let bare = [step("get_status", Outcome::Ok, None, false)];
        assert!(judge(&k, Probe::InstructionFidelity, &bare, 1).is_ok());
        let tools = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert!(require_checked("r.json", F, &k, Some(&tools(&["get_status"])), "x").is_ok());
        let err = require_checked("r.json", F, &k, Some(&tools(&["other"])), "x").unwrap_err();
        assert_eq!(err.status(), shared::exit::REJECTED);
        assert!(
            err.message().starts_with(
                "r.json: the green run did not check \"get_status\"'s results against an \
                 outputSchema"
            ),
            "{err}"
        );
        let old = require_checked("r.json", F, &k, None, "x").unwrap_err();
        assert!(old.message().contains("an earlier release"), "{old}");
        // Other findings ask nothing of the schemas.
        let e = known(Kind::Error, DefectClass::ToolError, &[], None);
        assert!(require_checked("r.json", F, &e, None, "x").is_ok());
        // Only a broken schema witnesses its repair.
        assert!(reproduces(Reason::OutputSchemaViolation, &k.evidence));
        assert!(!reproduces(Reason::OutputSchemaMissing, &k.evidence));
        assert!(!reproduces(Reason::ExpectedOkGotError, &k.evidence));
        assert!(!reproduces(Reason::OutputSchemaViolation, &e.evidence));
        let policy = crate::verification::Policy::default();
        assert!(policy.requires_witness(&k.evidence));
        assert!(!policy.requires_witness(&e.evidence));
    }

    #[test]
    fn long_names_are_cut_alike() {
        let long = "n".repeat(5000);
        let s = Subject {
            server: long.clone(),
            tool: long.clone(),
        };
        assert_eq!(name_key(&long).len(), escape::MAX_NAME_BYTES);
        let mut longer = long.clone();
        longer.push('x');
        assert!(require_server("", Some(&longer), F, &s, "x").is_ok());
        assert_eq!(shown(&long).chars().count(), 64 + 2 + 1);
    }
}
