//! The one error type every binary reports through.
//!
//! An [`Error`] carries the exit status it maps to and a message that names
//! the file, line or value at fault. It never carries raw captured values.

use std::fmt;
use std::io;

use crate::exit;

/// Result alias used across the suite.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure with its exit status and a message for people.
#[derive(Debug)]
pub struct Error {
    status: u8,
    message: String,
    hint: Option<String>,
}

impl Error {
    /// An error with an explicit exit status (see [`crate::exit`]).
    pub fn new(status: u8, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
            hint: None,
        }
    }

    /// Bad flags or arguments (status 2).
    pub fn usage(message: impl Into<String>) -> Error {
        Error::new(exit::USAGE, message)
    }

    /// Evidence unavailable (status 3).
    pub fn unavailable(message: impl Into<String>) -> Error {
        Error::new(exit::UNAVAILABLE, message)
    }

    /// Input rejected, nothing changed (status 4).
    pub fn rejected(message: impl Into<String>) -> Error {
        Error::new(exit::REJECTED, message)
    }

    /// Transport failure (status 5).
    pub fn transport(message: impl Into<String>) -> Error {
        Error::new(exit::TRANSPORT, message)
    }

    /// Refused to record (status 6).
    pub fn refused(message: impl Into<String>) -> Error {
        Error::new(exit::REFUSED, message)
    }

    /// An I/O failure while doing `what`, e.g. `"cannot create /x/journals"`.
    /// A broken pipe becomes the quiet success a reader of `| head` expects.
    pub fn io(what: impl fmt::Display, err: io::Error) -> Error {
        if err.kind() == io::ErrorKind::BrokenPipe {
            return Error::broken_pipe();
        }
        Error::new(exit::IO, format!("{what}: {err}"))
    }

    /// The reader went away: end quietly with status 0.
    pub fn broken_pipe() -> Error {
        Error::new(exit::SUCCESS, String::new())
    }

    /// Adds a line telling the user what to do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// The exit status this error maps to.
    pub fn status(&self) -> u8 {
        self.status
    }

    /// The message, without the program name or hint.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The hint line, if any.
    pub fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// True for the quiet end of a closed pipe.
    pub fn is_quiet(&self) -> bool {
        self.status == exit::SUCCESS && self.message.is_empty()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

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
