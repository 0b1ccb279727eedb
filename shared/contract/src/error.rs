//! The one error type every binary reports through.
//!
//! An [`Error`] carries a [`Kind`] (which maps to the exit status), a
//! message that names the file, line or value at fault, an optional hint
//! saying what to do next, and the error that caused it, kept as a value so
//! the top of a binary can walk [`Error::chain`] (to find a closed pipe, for
//! one). It never carries raw captured values.
//!
//! Printed, an error reads `message: cause: cause` and then the hint on its
//! own line.

use std::error::Error as StdError;
use std::fmt;
use std::io;

use crate::exit;

/// Result alias used across the suite.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cause kept behind an [`Error`].
pub type Source = Box<dyn StdError + Send + Sync + 'static>;

/// What went wrong, as scripts see it: each kind is one exit status of
/// SPEC §9 (see [`crate::exit`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Bad flags or arguments (status 2).
    Usage,
    /// Evidence unavailable: index missing, corrupt or incomplete (status 3).
    Unavailable,
    /// Input rejected, nothing changed (status 4).
    Rejected,
    /// The server could not be started or reached, or broke the protocol (status 5).
    Transport,
    /// Refused to record (status 6).
    Refused,
    /// An operating-system I/O failure (status 74).
    Io,
    /// A status outside the table above, such as the 126 and 127 the front
    /// ends with, as a shell does, when it cannot run a command.
    Other(u8),
}

impl Kind {
    /// The exit status this kind maps to.
    pub fn status(self) -> u8 {
        match self {
            Kind::Usage => exit::USAGE,
            Kind::Unavailable => exit::UNAVAILABLE,
            Kind::Rejected => exit::REJECTED,
            Kind::Transport => exit::TRANSPORT,
            Kind::Refused => exit::REFUSED,
            Kind::Io => exit::IO,
            Kind::Other(status) => status,
        }
    }

    /// The kind whose status is `status`; `None` for a status that is no
    /// error (0, 1) or not in the table.
    pub fn from_status(status: u8) -> Option<Kind> {
        [
            Kind::Usage,
            Kind::Unavailable,
            Kind::Rejected,
            Kind::Transport,
            Kind::Refused,
            Kind::Io,
        ]
        .into_iter()
        .find(|kind| kind.status() == status)
    }
}

/// A status of [`crate::exit`] names its kind; any other is [`Kind::Other`].
impl From<u8> for Kind {
    fn from(status: u8) -> Kind {
        Kind::from_status(status).unwrap_or(Kind::Other(status))
    }
}

/// A failure with its kind, a message for people, and its cause.
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
    hint: Option<String>,
    source: Option<Source>,
}

impl Error {
    /// An error of `kind` (a [`Kind`], or an exit status of
    /// [`crate::exit`]) with `message`.
    pub fn new(kind: impl Into<Kind>, message: impl Into<String>) -> Error {
        Error {
            kind: kind.into(),
            message: message.into(),
            hint: None,
            source: None,
        }
    }

    /// Bad flags or arguments (status 2).
    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(Kind::Usage, message)
    }

    /// Evidence unavailable (status 3).
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::new(Kind::Unavailable, message)
    }

    /// Input rejected, nothing changed (status 4).
    pub fn rejected(message: impl Into<String>) -> Error {
        Error::new(Kind::Rejected, message)
    }

    /// Transport failure (status 5).
    pub fn transport(message: impl Into<String>) -> Error {
        Error::new(Kind::Transport, message)
    }

    /// Refused to record (status 6).
    pub fn refused(message: impl Into<String>) -> Error {
        Error::new(Kind::Refused, message)
    }

    /// An I/O failure while doing `what`, e.g. `"cannot create /x/journals"`,
    /// with the I/O error kept as its cause. A closed pipe among the causes
    /// is decided at the top (`mcpeval-cli`'s `finish`), not here.
    pub fn io(what: impl fmt::Display, err: io::Error) -> Error {
        Error::new(Kind::Io, what.to_string()).with_source(err)
    }

    /// Keeps `source` as the cause of this error; it prints after the
    /// message, `message: source`.
    pub fn with_source(mut self, source: impl Into<Source>) -> Error {
        self.source = Some(source.into());
        self
    }

    /// Adds a line telling the user what to do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// What went wrong, for a caller to match on.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exit status this error maps to.
    pub fn status(&self) -> u8 {
        self.kind.status()
    }

    /// The message, without its causes, the program name or the hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The hint line, if any: this error's own, else the first one among
    /// its causes.
    pub fn hint(&self) -> Option<&str> {
        self.chain()
            .find_map(|e| e.downcast_ref::<Error>().and_then(|e| e.hint.as_deref()))
    }

    /// This error, then its cause, then the cause's cause, and so on.
    pub fn chain(&self) -> Chain<'_> {
        Chain { next: Some(self) }
    }

    /// True when a closed pipe caused this error: the reader of `| head`
    /// went away, which a reader takes as a quiet success.
    pub fn is_broken_pipe(&self) -> bool {
        self.chain().any(|e| {
            e.downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        })
    }
}

/// The iterator of [`Error::chain`].
#[derive(Clone)]
pub struct Chain<'a> {
    next: Option<&'a (dyn StdError + 'static)>,
}

impl<'a> Iterator for Chain<'a> {
    type Item = &'a (dyn StdError + 'static);

    fn next(&mut self) -> Option<Self::Item> {
        let current = self.next?;
        self.next = current.source();
        Some(current)
    }
}

/// `message: cause: cause`, then the hint on an indented line.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut separator = "";
        for e in self.chain() {
            // An error of this type prints its own message alone: its causes
            // follow in the walk.
            match e.downcast_ref::<Error>() {
                Some(ours) if ours.message.is_empty() => continue,
                Some(ours) => write!(f, "{separator}{}", ours.message)?,
                None => write!(f, "{separator}{e}")?,
            }
            separator = ": ";
        }
        if let Some(hint) = self.hint() {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn StdError + 'static))
    }
}

/// Writing data to stdout: only a closed pipe is expected, and it is quiet.
impl From<io::Error> for Error {
    fn from(err: io::Error) -> Error {
        Error::io("cannot write output", err)
    }
}

/// Attaches "what was being done" to an I/O result.
pub trait IoContext<T> {
    /// Maps an I/O error to [`Error::io`] with the given description.
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|err| Error::io(what, err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_maps_to_its_exit_status() {
        let table = [
            (Kind::Usage, exit::USAGE),
            (Kind::Unavailable, exit::UNAVAILABLE),
            (Kind::Rejected, exit::REJECTED),
            (Kind::Transport, exit::TRANSPORT),
            (Kind::Refused, exit::REFUSED),
            (Kind::Io, exit::IO),
        ];
        for (kind, status) in table {
            assert_eq!(kind.status(), status);
            assert_eq!(Kind::from_status(status), Some(kind));
            assert_eq!(Error::new(kind, "x").status(), status);
            assert_eq!(Error::new(kind, "x").kind(), kind);
        }
        assert_eq!(Kind::from_status(exit::SUCCESS), None);
        assert_eq!(Kind::from_status(exit::RED), None);
        assert_eq!(Kind::from(exit::REFUSED), Kind::Refused);
        assert_eq!(Kind::from(127), Kind::Other(127));
        assert_eq!(Error::new(126, "cannot run").status(), 126);
        assert_eq!(Error::rejected("x").kind(), Kind::Rejected);
        assert_eq!(Error::refused("x").kind(), Kind::Refused);
    }

    #[test]
    fn causes_stay_values_and_print_after_the_message() {
        let io = io::Error::new(io::ErrorKind::PermissionDenied, "permission denied");
        let err = Error::io("cannot create /store/journals", io);
        assert_eq!(err.kind(), Kind::Io);
        assert_eq!(err.message(), "cannot create /store/journals");
        assert_eq!(
            err.to_string(),
            "cannot create /store/journals: permission denied"
        );
        let cause = StdError::source(&err).expect("the I/O error is kept");
        let io = cause.downcast_ref::<io::Error>().expect("as an io::Error");
        assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn a_chain_of_our_errors_prints_each_message_once() {
        let inner = Error::rejected("the field \"reason\" is missing");
        let middle = Error::rejected("not an mcpeval.probe/1 result").with_source(inner);
        let outer = Error::refused("result.json")
            .with_source(middle)
            .with_hint("record the JSON unchanged");
        let messages: Vec<String> = outer.chain().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            outer.to_string(),
            "result.json: not an mcpeval.probe/1 result: the field \"reason\" is missing\n  \
             hint: record the JSON unchanged"
        );
        // The outer kind decides the status; a caller can still match on an inner one.
        assert_eq!(outer.status(), exit::REFUSED);
        let kinds: Vec<Kind> = outer
            .chain()
            .filter_map(|e| e.downcast_ref::<Error>().map(Error::kind))
            .collect();
        assert_eq!(kinds, [Kind::Refused, Kind::Rejected, Kind::Rejected]);
    }

    #[test]
    fn a_hint_among_the_causes_is_shown_once() {
        let inner = Error::unavailable("no index yet").with_hint("run mcpeval index");
        let outer = Error::unavailable("cannot list findings").with_source(inner);
        assert_eq!(outer.hint(), Some("run mcpeval index"));
        assert_eq!(
            outer.to_string(),
            "cannot list findings: no index yet\n  hint: run mcpeval index"
        );
    }

    #[test]
    fn a_broken_pipe_is_found_anywhere_in_the_chain() {
        let pipe = || io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(Error::from(pipe()).is_broken_pipe());
        let deep = Error::transport("cannot relay the response")
            .with_source(Error::io("cannot write output", pipe()));
        assert!(deep.is_broken_pipe());
        assert_eq!(deep.status(), exit::TRANSPORT);
        let other = Error::io(
            "cannot write output",
            io::Error::from(io::ErrorKind::StorageFull),
        );
        assert!(!other.is_broken_pipe());
        assert!(!Error::usage("bad flag").is_broken_pipe());
    }
}
