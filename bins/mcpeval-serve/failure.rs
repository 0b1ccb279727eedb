//! Why a tool call failed: the words of its isError result.
//!
//! A failed call has one of three sources, and each keeps the words a
//! person would read elsewhere: the client's arguments break the tool's
//! schema; serve itself refuses or cannot act (said as serve says it on
//! stderr, with its hint line); or a command serve ran failed, and its own
//! output is relayed whole. It never holds a raw value of the client's
//! unquoted.

use std::fmt;

use shared::Error;

/// A failed tool call.
#[derive(Debug)]
pub enum Failure {
    /// The arguments do not fit the tool's input schema.
    Arguments(String),
    /// serve refused or could not act; the error's kind says which.
    Serve(Error),
    /// A command serve ran failed: its stdout and stderr.
    Relayed(String),
}

impl Failure {
    /// Arguments that break the schema: "invalid arguments: …".
    pub fn arguments(message: impl Into<String>) -> Failure {
        Failure::Arguments(message.into())
    }
}

impl From<Error> for Failure {
    fn from(err: Error) -> Failure {
        Failure::Serve(err)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Arguments(message) => write!(f, "invalid arguments: {message}"),
            Failure::Serve(err) => write!(f, "mcpeval-serve: error: {err}"),
            Failure::Relayed(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_reads_as_before() {
        assert_eq!(
            Failure::arguments("seq must be a positive integer").to_string(),
            "invalid arguments: seq must be a positive integer"
        );
        let refused =
            Error::usage("output \"x\" exists; nothing was written").with_hint("pass force");
        assert_eq!(
            Failure::from(refused).to_string(),
            "mcpeval-serve: error: output \"x\" exists; nothing was written\n  hint: pass force"
        );
        assert_eq!(Failure::Relayed("out\nerr".into()).to_string(), "out\nerr");
    }
}
