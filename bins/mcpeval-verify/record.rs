//! Recording a signed probe result: read it, check its MAC against this
//! store's salt, and hand it to the lifecycle. Both modes end here, so a
//! run and a recorded file earn credit by exactly the same rules.

use shared::Error;
use shared::Result;
use shared::error::Kind;
use shared::exit;
use shared::file_arg::Input;
use shared::finding::{DefectClass, Probe};
use shared::home::Home;
use shared::probe_result::{ProbeResult, Reason, Verdict};
use store::credit::{self, Claim, Known};
use store::lifecycle;
use store::salt::Salt;
use store::signed::Signed;
use store::verification::{self, Policy, Recorded};

use crate::args::Format;
use crate::output::Pending;

const PROGRAM: &str = "mcpeval-verify";

/// Results are a few hundred bytes; a line much larger is not one.
const MAX_RESULT_BYTES: usize = 64 * 1024;

/// A whole input of results (`probe --all` of a large manifest) is read
/// before anything is recorded; beyond this it is not such an output.
const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// One result of the input and the line it is on.
#[derive(Debug)]
pub struct Line {
    pub number: usize,
    pub result: ProbeResult,
}

/// Reads and parses every result of `input`: JSON Lines, one result a
/// line (blank lines ignored), or one result spread over several lines
/// (pretty-printed). Every line is checked before anything is recorded:
/// a line that is not a result is status 4, naming it.
pub fn read(input: &Input) -> Result<Vec<Line>> {
    let bytes = input.read_limited(MAX_INPUT_BYTES).map_err(|err| {
        if err.kind() == Kind::Rejected {
            err.with_hint(
                "give the file mcpeval-probe's output was saved to, or - for standard input",
            )
        } else {
            err
        }
    })?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(Error::rejected(format!(
            "{input}: larger than 64 MiB: not the output of mcpeval-probe; nothing was recorded"
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
        .collect();
    let not_a_result = |place: String, why: Error| {
        Error::rejected(format!(
            "{place}: not an mcpeval.probe/1 result: {why}; nothing was recorded"
        ))
        .with_hint(
            "record the JSON that mcpeval-probe prints (its default --format json), unchanged",
        )
    };
    match lines.as_slice() {
        [] => Err(Error::rejected(format!(
            "{input}: empty: no probe result to record; nothing was recorded"
        ))
        .with_hint("did mcpeval-probe refuse the case? its message says why")),
        [(number, line)] => {
            check_length(input, None, line)?;
            let result =
                ProbeResult::parse(line).map_err(|why| not_a_result(input.to_string(), why))?;
            Ok(vec![Line {
                number: *number,
                result,
            }])
        }
        [(first, _), ..] => {
            let whole = text.trim();
            if whole.len() <= MAX_RESULT_BYTES
                && let Ok(result) = ProbeResult::parse(whole)
            {
                return Ok(vec![Line {
                    number: *first,
                    result,
                }]);
            }
            lines
                .iter()
                .map(|&(number, line)| {
                    check_length(input, Some(number), line)?;
                    let result = ProbeResult::parse(line)
                        .map_err(|why| not_a_result(format!("{input}:{number}"), why))?;
                    Ok(Line { number, result })
                })
                .collect()
        }
    }
}

/// Refuses a line longer than any result (status 4).
fn check_length(input: &Input, number: Option<usize>, line: &str) -> Result<()> {
    if line.len() <= MAX_RESULT_BYTES {
        return Ok(());
    }
    let place = number.map_or_else(|| input.to_string(), |n| format!("{input}:{n}"));
    Err(Error::rejected(format!(
        "{place}: larger than {MAX_RESULT_BYTES} bytes: not a probe result; nothing was recorded"
    )))
}

/// Records every result of `lines`, read from `input`, in order, and
/// prints a line for each; with more than one, a summary on stderr. A
/// result that cannot be recorded is reported (naming its line) and the
/// rest are still recorded. The status: a refused or rejected result's
/// (the first), else 1 when a recorded run was red, else 5 when a result
/// was a transport error, else 0.
pub fn record_all(
    home: &Home,
    input: &Input,
    lines: &[Line],
    format: Format,
    policy: Policy,
    pending: &mut Pending,
) -> Result<u8> {
    if let [line] = lines {
        return record(
            home,
            &input.to_string(),
            &line.result,
            format,
            policy,
            pending,
        );
    }
    let (mut green, mut red, mut replays) = (0, 0, 0);
    let mut failed: Vec<u8> = Vec::new();
    for line in lines {
        let source = format!("{input}:{}", line.number);
        match record_one(home, &source, &line.result, format, policy, pending) {
            Ok(Recorded::Replay { .. }) => replays += 1,
            Ok(_) if line.result.result == Verdict::Red => red += 1,
            Ok(_) => green += 1,
            Err(err) if err.is_broken_pipe() => return Err(err),
            Err(err) => {
                // Every message names the line of the result it is about.
                let err = if err.message().starts_with(&format!("{source}: ")) {
                    err
                } else {
                    let named = Error::new(err.kind(), format!("{source}: {}", err.message()));
                    match err.hint() {
                        Some(hint) => named.with_hint(hint.to_owned()),
                        None => named,
                    }
                };
                cli::report(PROGRAM, &err);
                failed.push(err.status());
            }
        }
    }
    pending.summary(format!(
        "{PROGRAM}: recorded {} of {} results from {input} ({green} green, {red} red); \
         {replays} already recorded, {} not recorded",
        green + red,
        lines.len(),
        failed.len()
    ));
    let refused = failed.iter().copied().find(|&s| s != exit::TRANSPORT);
    Ok(match refused {
        Some(status) => status,
        None if red > 0 => exit::RED,
        None if !failed.is_empty() => exit::TRANSPORT,
        None => exit::SUCCESS,
    })
}

/// Checks and records `result`, adds the outcome to `pending`, and
/// returns the exit status: 0 green or replay, 1 red.
pub fn record(
    home: &Home,
    source: &str,
    result: &ProbeResult,
    format: Format,
    policy: Policy,
    pending: &mut Pending,
) -> Result<u8> {
    let recorded = record_one(home, source, result, format, policy, pending)?;
    Ok(match (&recorded, result.result) {
        (Recorded::New { .. }, Verdict::Red) => exit::RED,
        _ => exit::SUCCESS,
    })
}

/// Checks and records `result` and adds its line to `pending`.
fn record_one(
    home: &Home,
    source: &str,
    result: &ProbeResult,
    format: Format,
    policy: Policy,
    pending: &mut Pending,
) -> Result<Recorded> {
    let signed_here = Salt::load(home)?.is_some_and(|salt| result.verify(&salt));
    if !signed_here {
        return Err(Error::refused(format!(
            "{source}: the result's mac does not verify with this store's salt: it was edited, \
             or made by another store; nothing was recorded"
        ))
        .with_hint("run the case again against this store (--home or MCPEVAL_HOME)"));
    }
    if result.result == Verdict::TransportError {
        let reason = result.reason.map_or("transport-error", |r| r.as_str());
        let mut err = Error::transport(format!(
            "run {} of case \"{}\" ended in a transport error ({reason}); no verification evidence was recorded",
            result.run_id, result.case
        ));
        if let Some(r) = result.reason {
            err = err.with_hint(r.hint());
        }
        return Err(err);
    }
    let mut conn = lifecycle::open(home)?;
    verification::standing(home, &conn, &result.finding)?
        .require(&result.finding, exit::REFUSED)?;
    let known = earns_credit(home, source, result)?;
    let recorded = verification::record(
        &mut conn,
        home.lifecycle_db().as_std_path(),
        result,
        &known.evidence,
        policy,
    )?;
    // A finding only the index listed is tracked from now on: keep what it
    // is about beside its state, for when a later index drops it.
    lifecycle::remember(
        &conn,
        home.lifecycle_db().as_std_path(),
        &result.finding,
        &known.subject.server,
        &known.subject.tool,
    )?;
    lifecycle::remember_evidence(
        &conn,
        home.lifecycle_db().as_std_path(),
        &result.finding,
        &known.evidence,
    )?;
    pending.push(result, &recorded, hint(result, &known), format);
    if let Recorded::New {
        held_unwitnessed: true,
        ..
    } = recorded
    {
        let why = if policy.require_witnessed {
            "require_witnessed is set"
        } else {
            "a contract-violation finding closes only on a witnessed streak (nothing in a case \
             shows that its arguments reach the broken result)"
        };
        pending.note(format!(
            "{PROGRAM}: note: {} stays verifying: {why}, and no red run of case \
             \"{}\" against this target came before its streak, so the streak does not show that \
             the bug was reproduced where the fix was made",
            result.finding, result.case
        ));
    }
    Ok(recorded)
}

/// The hint of a red result: its reason's, except where the failure may
/// be the agent's. An invalid-arguments finding whose server still
/// refuses the case's arguments may be a server right to refuse them:
/// flipping the expectation to that error would prove nothing (rule 3),
/// so the way out is a closure by hand, with the reason said.
fn hint(result: &ProbeResult, known: &Known) -> Option<String> {
    let reason = result.reason?;
    if reason == Reason::ExpectedOkGotError
        && known.evidence.defect_class == Some(DefectClass::InvalidArguments)
    {
        return Some(format!(
            "The server still refuses these arguments. If they break its inputSchema, the server \
             is right and the agent was at fault: close the finding by hand, saying so: mcpeval \
             close --finding {} --reason \"the arguments break the inputSchema; the server is right \
             to refuse them\". Otherwise make the server accept them.",
            result.finding
        ));
    }
    result.hint()
}

/// Holds a result to the proof rules a probe applies where the finding
/// is known (`store::credit`): rules 1, 3 and 4 (status 4), then the
/// server's identity (status 6). Returns what the store knows of the
/// finding.
fn earns_credit(home: &Home, source: &str, result: &ProbeResult) -> Result<Known> {
    const OUTCOME: &str = "nothing was recorded";
    let known = credit::require_known(home, &result.finding, OUTCOME)?;
    let (Some(probe), Some(budget), false, Some(_), Some(_)) = (
        Probe::parse(&result.probe),
        result.budget,
        result.steps.is_empty(),
        &result.definition,
        &result.target,
    ) else {
        return Err(Error::rejected(format!(
            "{source}: the result does not carry what the proof rules need (the steps of its case, \
             its attempts, the fingerprints of its case and target): an earlier release of \
             mcpeval-probe made it, so it cannot show that it proves {}; {OUTCOME}",
            result.finding
        ))
        .with_hint("run the case again with this release's mcpeval-probe"));
    };
    let claim = Claim {
        case: &result.case,
        probe,
        steps: &result.steps,
        budget,
    };
    credit::check(source, &result.finding, &known, &claim, OUTCOME)?;
    if result.result == Verdict::Green {
        credit::require_checked(
            source,
            &result.finding,
            &known,
            result.checked.as_deref(),
            OUTCOME,
        )?;
    }
    credit::require_server(
        &format!("{source}: "),
        result.server.as_deref(),
        &result.finding,
        &known.subject,
        OUTCOME,
    )?;
    Ok(known)
}
