//! File arguments that may be `-`: one rule for every command, so that
//! `--manifest -`, `--from -`, `--expect -` and `--record -` read standard
//! input and `--output -` writes standard output, as Unix tools do.
//!
//! An [`Input`] or [`Output`] is made once, where the flag is checked, and
//! names itself in messages as "standard input" or "standard output",
//! never as `-`. An output path that exists and is not a regular file (a
//! FIFO, a device, a symbolic link such as `/dev/stdout`) is written in
//! place: a rename would replace the link or the device node, so it is
//! never used there. A regular file keeps the atomic write of
//! [`crate::atomic_file`]: a temporary file beside it, renamed into place.

use std::fmt;
use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What a file argument of `-` means.
pub const DASH: &str = "-";

/// A file a command reads: a path, or standard input for `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// `-`: standard input.
    Stdin,
    /// A path as given.
    Path(PathBuf),
}

impl Input {
    /// `-` is standard input; any other argument is a path.
    pub fn new(arg: impl Into<PathBuf>) -> Input {
        let path = arg.into();
        if path.as_os_str() == DASH {
            Input::Stdin
        } else {
            Input::Path(path)
        }
    }

    /// Whether this reads standard input.
    pub fn is_stdin(&self) -> bool {
        matches!(self, Input::Stdin)
    }

    /// The path, unless this is standard input.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Stdin => None,
            Input::Path(path) => Some(path),
        }
    }

    /// Opens the input for reading. A path that does not exist is rejected
    /// input (status 4) naming it; any other failure is an I/O error.
    pub fn open(&self) -> Result<Box<dyn Read>> {
        match self {
            Input::Stdin => Ok(Box::new(io::stdin())),
            Input::Path(path) => match File::open(path) {
                Ok(file) => Ok(Box::new(file)),
                Err(err) if err.kind() == ErrorKind::NotFound => {
                    Err(Error::rejected(format!("{}: no such file", path.display()))
                        .with_hint("check the path given, or give - to read standard input"))
                }
                Err(err) => Err(Error::io(format_args!("cannot read {self}"), err)),
            },
        }
    }

    /// Reads at most `limit + 1` bytes, so that the caller can tell an
    /// input of exactly `limit` bytes from a longer one without holding
    /// more than that.
    pub fn read_limited(&self, limit: u64) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open()?
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|err| Error::io(format_args!("cannot read {self}"), err))?;
        Ok(bytes)
    }

    /// Refuses two inputs of one command that both read standard input
    /// (status 2): it can be read only once. `inputs` pairs each flag
    /// with its value.
    pub fn one_stdin(inputs: &[(&str, Option<&Input>)]) -> Result<()> {
        let mut dashes = inputs
            .iter()
            .filter(|(_, input)| input.is_some_and(Input::is_stdin))
            .map(|(flag, _)| *flag);
        match (dashes.next(), dashes.next()) {
            (Some(first), Some(second)) => Err(Error::usage(format!(
                "{first} - and {second} - both read standard input, which can be read only once"
            ))
            .with_hint(format!(
                "save one of them to a file and give its path to {second}"
            ))),
            _ => Ok(()),
        }
    }
}

impl From<PathBuf> for Input {
    fn from(path: PathBuf) -> Input {
        Input::new(path)
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Stdin => f.write_str("standard input"),
            Input::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A file a command writes: a path, or standard output for `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `-`: standard output.
    Stdout,
    /// A path as given.
    Path(PathBuf),
}

impl Output {
    /// `-` is standard output; any other argument is a path.
    pub fn new(arg: impl Into<PathBuf>) -> Output {
        let path = arg.into();
        if path.as_os_str() == DASH {
            Output::Stdout
        } else {
            Output::Path(path)
        }
    }

    /// The path, unless this is standard output.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Output::Stdout => None,
            Output::Path(path) => Some(path),
        }
    }

    /// Whether writing would replace a file: a regular file or a directory
    /// is there, itself or at the end of a symbolic link (what `--force`
    /// guards: a link's target is what would be overwritten). A FIFO or a
    /// device, also through a link, is written into, never replaced, and
    /// standard output always takes what is written.
    pub fn replaces(&self) -> bool {
        match self {
            Output::Stdout => false,
            Output::Path(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file() || m.is_dir()),
        }
    }
}

impl Output {
    /// Whether `path` is written in place: it exists and is neither a
    /// regular file nor a directory. The link itself is looked at, not
    /// what it points to: `/dev/stdout` is a link, and replacing it by a
    /// rename would break the system for every later program.
    fn in_place(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
    }

    /// Writes `bytes`, replacing a regular file atomically (a new file
    /// gets `mode`), writing in place into anything else that exists, or
    /// to standard output.
    pub fn write(&self, bytes: &[u8], mode: u32) -> Result<()> {
        match self {
            Output::Stdout => write_stdout(bytes),
            Output::Path(path) if Output::in_place(path) => write_in_place(path, bytes),
            Output::Path(path) => crate::atomic_file::write(path, bytes, mode),
        }
    }

    /// Like [`Output::write`], but never replaces a regular file, itself
    /// or at the end of a link: `Ok(false)` when one is there (or any
    /// other name in the way of the new file), and it is left byte for
    /// byte.
    pub fn create(&self, bytes: &[u8], mode: u32) -> Result<bool> {
        match self {
            Output::Path(_) if self.replaces() => Ok(false),
            Output::Path(path) if !Output::in_place(path) => {
                crate::atomic_file::create(path, bytes, mode)
            }
            _ => self.write(bytes, mode).map(|()| true),
        }
    }
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    Ok(out.flush()?)
}

/// Opens what is at `path` for writing (truncated where that means
/// anything: through a link to a regular file) and writes `bytes` to it.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let shown = path.display();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|err| Error::io(format_args!("cannot open {shown} for writing"), err))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|err| Error::io(format_args!("cannot write {shown}"), err))
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Stdout => f.write_str("standard output"),
            Output::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    #[test]
    fn a_dash_is_the_standard_stream_and_says_so() {
        assert_eq!(Input::new("-"), Input::Stdin);
        assert_eq!(Input::new("-").to_string(), "standard input");
        assert_eq!(Input::new("./-"), Input::Path("./-".into()));
        assert_eq!(Output::new("-"), Output::Stdout);
        assert_eq!(Output::new("-").to_string(), "standard output");
        assert_eq!(Output::new("a.json").to_string(), "a.json");
    }

    #[test]
    fn two_inputs_cannot_both_read_standard_input() {
        let dash = Input::new("-");
        let file = Input::new("m.json");
        assert!(
            Input::one_stdin(&[("--manifest", Some(&dash)), ("--expect", Some(&file))]).is_ok()
        );
        assert!(Input::one_stdin(&[("--manifest", Some(&dash)), ("--expect", None)]).is_ok());
        let err = Input::one_stdin(&[("--manifest", Some(&dash)), ("--expect", Some(&dash))])
            .unwrap_err();
        assert_eq!(err.kind(), Kind::Usage);
        assert_eq!(
            err.message(),
            "--manifest - and --expect - both read standard input, which can be read only once"
        );
    }

    #[test]
    fn a_missing_input_is_rejected_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Input::new(dir.path().join("nope.json"));
        let err = missing.read_limited(10).unwrap_err();
        assert_eq!(err.kind(), Kind::Rejected);
        assert!(err.message().ends_with("nope.json: no such file"));
        let file = dir.path().join("a");
        std::fs::write(&file, b"0123456789abc").unwrap();
        assert_eq!(Input::new(&file).read_limited(4).unwrap(), b"01234");
    }

    #[test]
    fn links_and_devices_are_written_in_place_files_are_replaced() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "old old old").unwrap();
        let link = dir.path().join("link.txt");
        symlink(&target, &link).unwrap();
        // A link to a regular file guards its target like the file itself:
        // create leaves it, write (--force) writes through the link.
        let out = Output::new(&link);
        assert!(out.replaces());
        assert!(!out.create(b"new", 0o600).unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"old old old");
        out.write(b"new", 0o600).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");

        // A link to a FIFO is written into, with or without --force.
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let to_fifo = dir.path().join("to-fifo");
        symlink(&fifo, &to_fifo).unwrap();
        assert!(!Output::new(&to_fifo).replaces());

        // /dev/null takes the bytes and stays a device.
        Output::new("/dev/null").write(b"x", 0o600).unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());

        // A regular file is replaced whole, and only by write.
        let file = Output::new(&target);
        assert!(file.replaces());
        assert!(!file.create(b"other", 0o600).unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        file.write(b"other", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"other");
    }
}
