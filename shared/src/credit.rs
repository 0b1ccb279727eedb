//! Credit is for the finding's own failure.
//!
//! A run earns a finding credit only when its case calls the finding's
//! tool (the `tool` of a single-call probe; at least one step of a
//! workflow) and the server it reached does not name itself otherwise than
//! the finding's server. A server that names itself nothing is judged by
//! the command or endpoint alone, as capture names it.
//!
//! `probe` checks the tools before any server starts and the name right
//! after the handshake, before any call. Its signed result carries the
//! case's tools and the name the server gave, so `verify --record` holds a
//! result made where the finding was unknown to the same rules.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::home::Home;
use crate::{escape, index_db, lifecycle};

pub use crate::probe_result::MAX_NAME;

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The server the failing calls went to, as the journal names it.
    pub server: String,
    /// The tool that failed.
    pub tool: String,
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

/// The subject of a finding the store tracks or lists; status 3 when it
/// knows neither its server nor its tool. `outcome` ends the message
/// ("nothing was run", "nothing was recorded").
pub fn require_subject(home: &Home, finding: &str, outcome: &str) -> Result<Subject> {
    subject(home, finding)?.ok_or_else(|| {
        Error::unavailable(format!(
            "this store does not know which server and tool {finding} is about (lifecycle.db \
             tracked it before it kept them, and index.db does not list it), so no run can prove \
             its repair; {outcome}"
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

/// Refuses (status 4) a case whose `tools` never include the finding's
/// tool. `at` names the file the case or result came from.
pub fn require_tool(
    at: &str,
    case: &str,
    tools: &[String],
    finding: &str,
    subject: &Subject,
    outcome: &str,
) -> Result<()> {
    let want = name_key(&subject.tool);
    if tools.iter().any(|t| name_key(t) == want) {
        return Ok(());
    }
    let called = match tools {
        [] => "no tool".to_owned(),
        [one] => shown(one),
        many => many.iter().map(|t| shown(t)).collect::<Vec<_>>().join(", "),
    };
    let tool = shown(&subject.tool);
    Err(Error::rejected(format!(
        "{at}: case {} calls {called} but never {tool}, the tool of {finding}: its runs cannot \
         prove that finding's repair; {outcome}",
        shown(case)
    ))
    .with_hint(format!(
        "make the case call {tool} (a workflow: in at least one step), or run the case written \
         for {finding}"
    )))
}

/// Refuses (status 6) a run whose server named itself otherwise than the
/// finding's server; a server that gave no name passes. `at` prefixes the
/// message (a file and ": ", or nothing).
pub fn require_server(
    at: &str,
    named: Option<&str>,
    finding: &str,
    subject: &Subject,
    outcome: &str,
) -> Result<()> {
    match named {
        Some(name) if !name.is_empty() && name_key(name) != name_key(&subject.server) => {
            Err(Error::refused(format!(
                "{at}the server names itself {} but {finding} is about server {}: its runs earn \
                 that finding no credit; {outcome}",
                shown(name),
                shown(&subject.server)
            ))
            .with_hint(
                "run the case against the server the finding was captured from (its name is in \
                 `mcpeval findings --format json`)",
            ))
        }
        _ => Ok(()),
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

    fn subject() -> Subject {
        Subject {
            server: "jobs".into(),
            tool: "get_status".into(),
        }
    }

    const F: &str = "finding-0123456789abcdef";

    #[test]
    fn the_case_must_call_the_findings_tool() {
        let s = subject();
        let tools = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert!(require_tool("m.json", "c", &tools(&["get_status"]), F, &s, "x").is_ok());
        assert!(
            require_tool(
                "m.json",
                "w",
                &tools(&["list_jobs", "get_status"]),
                F,
                &s,
                "x"
            )
            .is_ok()
        );
        let err = require_tool(
            "m.json",
            "c",
            &tools(&["list_jobs"]),
            F,
            &s,
            "nothing was run",
        )
        .unwrap_err();
        assert_eq!(err.status(), crate::exit::REJECTED);
        assert_eq!(
            err.message(),
            "m.json: case \"c\" calls \"list_jobs\" but never \"get_status\", the tool of \
             finding-0123456789abcdef: its runs cannot prove that finding's repair; nothing was run"
        );
        let err = require_tool("m.json", "w", &tools(&["a", "b"]), F, &s, "x").unwrap_err();
        assert!(
            err.message().contains("calls \"a\", \"b\" but never"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn a_server_naming_itself_otherwise_is_refused_and_escaped() {
        let s = subject();
        assert!(require_server("", None, F, &s, "x").is_ok());
        assert!(require_server("", Some(""), F, &s, "x").is_ok());
        assert!(require_server("", Some("jobs"), F, &s, "x").is_ok());
        let err =
            require_server("", Some("evil\u{1b}[2J\n"), F, &s, "nothing was recorded").unwrap_err();
        assert_eq!(err.status(), crate::exit::REFUSED);
        assert_eq!(
            err.message(),
            "the server names itself \"evil\\u{1b}[2J\\n\" but finding-0123456789abcdef is about \
             server \"jobs\": its runs earn that finding no credit; nothing was recorded"
        );
        assert!(!err.message().chars().any(char::is_control));
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
        assert!(require_tool("m", "c", &[longer], F, &s, "x").is_ok());
        assert_eq!(shown(&long).chars().count(), 64 + 2 + 1);
    }
}
