//! Running a sibling command for its JSON, the way a third-party plugin
//! would, through `shared::sibling`: `mcpeval-SUB` beside this executable
//! first, else on `PATH`, run with `--home` (and `MCPEVAL_HOME`) naming the
//! store, stdin closed.
//!
//! Its stdout is parsed as JSON; its stderr is relayed to ours when it
//! succeeds (a "no findings" explanation, a rebuilt cache) and becomes
//! the message when it fails. This module must never run anything but a
//! suite command, nor print a sibling's output raw: control characters in
//! relayed text are escaped first.

use std::io::Write;

use serde::de::DeserializeOwned;
use shared::Error;
use shared::Result;
use shared::exit;
use shared::home::Home;
use shared::sibling::{self, Ended, Failure};

use crate::PROGRAM;

/// Runs `mcpeval-<sub> --home HOME ARGS…` and parses its stdout as `T`.
pub fn json<T: DeserializeOwned>(sub: &str, home: &Home, args: &[&str]) -> Result<T> {
    let shown = sibling::printable(&format!("mcpeval-{sub} {}", args.join(" ")));
    match sibling::json(sub, home, args) {
        Ok((parsed, said)) => {
            if !said.is_empty() {
                let _ = std::io::stderr().lock().write_all(said.as_bytes());
            }
            Ok(parsed)
        }
        Err(Failure::Missing) => Err(Error::unavailable(format!(
            "mcpeval-{sub} is not installed beside {PROGRAM} or on PATH; the report is built from its JSON"
        ))
        .with_hint(format!(
            "install the whole mcpeval suite, or put mcpeval-{sub} on PATH"
        ))),
        Err(Failure::Io(e)) => Err(Error::io(format_args!("cannot run mcpeval-{sub}"), e)),
        Err(Failure::Failed { ended, said }) => Err(Error::new(report_status(ended), {
            let described = ended.describe();
            let said = said.trim_end();
            if said.is_empty() {
                format!("{shown} {described} and said nothing; the report needs its JSON")
            } else {
                format!("{shown} {described}; the report needs its JSON:\n{said}")
            }
        })),
        // serde's message may quote the offending value: say where, not what.
        Err(Failure::Unreadable {
            category,
            line,
            column,
        }) => Err(Error::unavailable(format!(
            "{shown} printed output this report cannot read ({category:?} error at line {line} \
             column {column}); is mcpeval-{sub} from another release?"
        ))
        .with_hint("install mcpeval-report and its siblings from the same release")),
    }
}

/// The report's own status for a sibling that failed with `status`: what
/// the user can act on (a malformed journal, a newer database, an I/O
/// error) keeps its meaning; anything else means the evidence is
/// unavailable, even a sibling's usage error, which the user did not make.
fn report_status(ended: Ended) -> u8 {
    match u8::try_from(ended.status()) {
        Ok(s @ (exit::REJECTED | exit::REFUSED | exit::IO)) => s,
        _ => exit::UNAVAILABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::exit;

    #[test]
    fn statuses_keep_only_what_the_user_can_act_on() {
        let code = |c| report_status(Ended::Exit(c));
        assert_eq!(code(3), exit::UNAVAILABLE);
        assert_eq!(code(4), exit::REJECTED);
        assert_eq!(code(6), exit::REFUSED);
        assert_eq!(code(74), exit::IO);
        assert_eq!(code(2), exit::UNAVAILABLE);
        assert_eq!(report_status(Ended::Signal(9)), exit::UNAVAILABLE);
        assert_eq!(code(-1), exit::UNAVAILABLE);
    }
}
