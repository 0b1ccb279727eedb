//! Recording a signed probe result: read it, check its MAC against this
//! store's salt, and hand it to the lifecycle. Both modes end here, so a
//! run and a recorded file earn credit by exactly the same rules.

use std::fs::File;
use std::io::{ErrorKind, Read};

use shared::credit::{self, Subject};
use shared::error::IoContext;
use shared::home::Home;
use shared::probe_result::{ProbeResult, Verdict};
use shared::salt::Salt;
use shared::verification::{self, Recorded};
use shared::{Error, Result, exit, lifecycle};

use crate::args::{Format, Source};
use crate::output;

/// Results are a few hundred bytes; anything much larger is not one.
const MAX_RESULT_BYTES: u64 = 64 * 1024;

/// Reads and parses the result at `source` (status 4 when it is not one).
pub fn read(source: &Source) -> Result<ProbeResult> {
    let mut bytes = Vec::new();
    match source {
        Source::Stdin => std::io::stdin()
            .lock()
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .context("cannot read stdin")?,
        Source::File(path) => File::open(path)
            .map_err(|err| match err.kind() {
                ErrorKind::NotFound => Error::rejected(format!("{}: no such file", path.display()))
                    .with_hint("give the file mcpeval-probe's output was saved to, or - for stdin"),
                _ => Error::io(format_args!("cannot read {}", path.display()), err),
            })?
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .context(format_args!("cannot read {source}"))?,
    };
    if bytes.len() as u64 > MAX_RESULT_BYTES {
        return Err(Error::rejected(format!(
            "{source}: larger than {MAX_RESULT_BYTES} bytes: not a probe result; nothing was recorded"
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    if text.trim().is_empty() {
        return Err(Error::rejected(format!(
            "{source}: empty: no probe result to record; nothing was recorded"
        ))
        .with_hint("did mcpeval-probe refuse the case? its message says why"));
    }
    ProbeResult::parse(text.trim()).map_err(|why| {
        Error::rejected(format!(
            "{source}: not an mcpeval.probe/1 result: {why}; nothing was recorded"
        ))
        .with_hint(
            "record the JSON that mcpeval-probe prints (its default --format json), unchanged",
        )
    })
}

/// Checks and records `result`, prints the outcome, and returns the exit
/// status: 0 green or replay, 1 red.
pub fn record(home: &Home, source: &str, result: &ProbeResult, format: Format) -> Result<u8> {
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
    let subject = earns_credit(home, source, result)?;
    let recorded = verification::record(&mut conn, home.lifecycle_db().as_std_path(), result)?;
    // A finding only the index listed is tracked from now on: keep what it
    // is about beside its state, for when a later index drops it.
    lifecycle::remember(
        &conn,
        home.lifecycle_db().as_std_path(),
        &result.finding,
        &subject.server,
        &subject.tool,
    )?;
    output::print(result, &recorded, format)?;
    Ok(match (&recorded, result.result) {
        (Recorded::New { .. }, Verdict::Red) => exit::RED,
        _ => exit::SUCCESS,
    })
}

/// Holds a result to the rules a probe applies where the finding is known:
/// its case called the finding's tool (status 4), and its server did not
/// name itself otherwise than the finding's server (status 6). Returns
/// what the finding is about.
fn earns_credit(home: &Home, source: &str, result: &ProbeResult) -> Result<Subject> {
    const OUTCOME: &str = "nothing was recorded";
    let subject = credit::require_subject(home, &result.finding, OUTCOME)?;
    if result.tools.is_empty() {
        return Err(Error::rejected(format!(
            "{source}: the result does not say which tools its case calls (an earlier release of \
             mcpeval-probe made it), so it cannot show that the case calls the tool of {}; {OUTCOME}",
            result.finding
        ))
        .with_hint("run the case again with this release's mcpeval-probe"));
    }
    credit::require_tool(
        source,
        &result.case,
        &result.tools,
        &result.finding,
        &subject,
        OUTCOME,
    )?;
    credit::require_server(
        &format!("{source}: "),
        result.server.as_deref(),
        &result.finding,
        &subject,
        OUTCOME,
    )?;
    Ok(subject)
}
