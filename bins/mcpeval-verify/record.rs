//! Recording a signed probe result: read it, check its MAC against this
//! store's salt, and hand it to the lifecycle. Both modes end here, so a
//! run and a recorded file earn credit by exactly the same rules.

use std::fs::File;
use std::io::{ErrorKind, Read};

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
    let recorded = verification::record(&mut conn, &home.lifecycle_db(), result)?;
    output::print(result, &recorded, format)?;
    Ok(match (&recorded, result.result) {
        (Recorded::New { .. }, Verdict::Red) => exit::RED,
        _ => exit::SUCCESS,
    })
}
