//! Finding and running the suite's commands, `mcpeval-NAME`: the one
//! lookup the front, its siblings and third-party plugins share.
//!
//! A command is looked up beside the running executable first, then in
//! each absolute `PATH` directory; the first executable regular file wins.
//! Looking up only reads directories and metadata: it never opens, reads
//! or runs a file it finds, so listing is safe with any directory on PATH.
//!
//! [`run`] executes a found command for the store at hand: `--home HOME`
//! (and `MCPEVAL_HOME`) name it, stdin is closed (or, for a `-` argument,
//! ours), stdout is captured as
//! data, stderr is relayed to ours or captured, as the caller asks.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};

use crate::Error;
use crate::HOME_ENV;
use crate::home::Home;

/// What every suite command's file name starts with.
pub const PREFIX: &str = "mcpeval-";

/// Whether `name` may follow the prefix: `[a-z0-9][a-z0-9-]*`.
///
/// The rule keeps `../x` and `mcpeval-capture.d` (cargo's dependency file)
/// out, and means a name never needs quoting in a shell.
pub fn is_valid_name(name: &str) -> bool {
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match name.as_bytes() {
        [first, rest @ ..] => {
            lower_or_digit(first) && rest.iter().all(|b| lower_or_digit(b) || *b == b'-')
        }
        [] => false,
    }
}

/// Where a program was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// In the directory of the running executable.
    Sibling,
    /// In a directory listed in PATH.
    Path,
}

impl Origin {
    /// Its one spelling, as `mcpeval --list --format json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Sibling => "sibling",
            Origin::Path => "path",
        }
    }
}

/// A program the lookup chose.
#[derive(Debug)]
pub struct Program {
    /// Where it is.
    pub path: PathBuf,
    meta: Metadata,
}

/// The outcome of looking one name up.
#[derive(Debug)]
pub enum Found {
    /// An executable file of the name.
    Program(Program),
    /// Only files without an execute bit carry the name; the first is kept
    /// so an error can point at it, as a shell's "permission denied" does.
    NotExecutable(PathBuf),
    /// No file carries the name.
    Missing,
}

impl Found {
    /// The program, if an executable one was found.
    pub fn program(self) -> Option<PathBuf> {
        match self {
            Found::Program(program) => Some(program.path),
            Found::NotExecutable(_) | Found::Missing => None,
        }
    }
}

/// One name's programs: the one that runs, and the copies it hides.
#[derive(Debug)]
pub struct Listed {
    /// The command's name: `foo` for `mcpeval-foo`.
    pub name: String,
    /// The program that runs.
    pub path: PathBuf,
    /// Where it was found.
    pub origin: Origin,
    /// Programs of the same name it hides, in search order.
    pub shadowed: Vec<PathBuf>,
}

/// The directories to search, in order, and the executable they start from.
pub struct Search {
    own: PathBuf,
    own_meta: Option<Metadata>,
    dirs: Vec<(PathBuf, Origin)>,
}

impl Search {
    /// The search of the running executable under the current PATH.
    pub fn from_env() -> crate::Result<Search> {
        // `current_exe` resolves symlinks, so a program linked into ~/bin
        // still finds its siblings where it was installed.
        let own = std::env::current_exe()
            .map_err(|e| Error::io("cannot find the path of the running program", e))
            .map_err(|e| {
                e.with_hint("sibling commands are looked up beside it; run it by its full path")
            })?;
        Ok(Search::new(own, std::env::var_os("PATH")))
    }

    /// The search of the executable `own` under the PATH value `path`.
    pub fn new(own: PathBuf, path: Option<OsString>) -> Search {
        let mut dirs = Vec::new();
        if let Some(dir) = own.parent() {
            dirs.push((dir.to_path_buf(), Origin::Sibling));
        }
        for dir in path.iter().flat_map(std::env::split_paths) {
            // An empty or relative entry would make the command depend on the
            // current directory, a classic way to run a planted program.
            if dir.is_absolute() {
                dirs.push((dir, Origin::Path));
            }
        }
        // The own directory is often on PATH too (~/.cargo/bin); one file
        // seen twice is not a shadowed copy, so each directory counts once.
        let mut seen = Vec::new();
        dirs.retain(|(dir, _)| {
            let key = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            let first = !seen.contains(&key);
            seen.push(key);
            first
        });
        let own_meta = fs::metadata(&own).ok();
        Search {
            own,
            own_meta,
            dirs,
        }
    }

    /// The path of the executable the search starts from.
    pub fn own(&self) -> &Path {
        &self.own
    }

    /// The directory searched first.
    pub fn own_dir(&self) -> Option<&Path> {
        self.dirs
            .first()
            .filter(|(_, o)| *o == Origin::Sibling)
            .map(|(d, _)| d.as_path())
    }

    /// Looks up `mcpeval-NAME`: the first executable file wins.
    pub fn find(&self, name: &str) -> Found {
        let file = format!("{PREFIX}{name}");
        let mut not_executable = None;
        for (dir, _) in &self.dirs {
            let path = dir.join(&file);
            // Errors (missing file, unreadable directory) just mean "not here",
            // which is how a shell walks PATH as well.
            let Ok(meta) = fs::metadata(&path) else {
                continue;
            };
            if is_executable(&meta) {
                return Found::Program(Program { path, meta });
            }
            if meta.is_file() && not_executable.is_none() {
                not_executable = Some(path);
            }
        }
        not_executable.map_or(Found::Missing, Found::NotExecutable)
    }

    /// Every executable `mcpeval-NAME`, by name, each with its shadowed copies.
    pub fn list(&self) -> Vec<Listed> {
        let mut found: BTreeMap<String, Vec<(PathBuf, Origin)>> = BTreeMap::new();
        for (dir, origin) in &self.dirs {
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let file = entry.file_name();
                let Some(name) = file.to_str().and_then(|f| f.strip_prefix(PREFIX)) else {
                    continue;
                };
                if !is_valid_name(name) {
                    continue;
                }
                let path = entry.path();
                // `fs::metadata` follows symlinks: a link to a program counts,
                // a dangling link or a link to a directory does not.
                if fs::metadata(&path).is_ok_and(|m| is_executable(&m)) {
                    found
                        .entry(name.to_owned())
                        .or_default()
                        .push((path, *origin));
                }
            }
        }
        found
            .into_iter()
            .map(|(name, mut copies)| {
                let (path, origin) = copies.remove(0);
                let shadowed = copies.into_iter().map(|(p, _)| p).collect();
                Listed {
                    name,
                    path,
                    origin,
                    shadowed,
                }
            })
            .collect()
    }

    /// Whether `program` is the running executable under another name.
    pub fn is_own(&self, program: &Program) -> bool {
        if let Some(own) = &self.own_meta
            && same_file(own, &program.meta)
        {
            return true;
        }
        fs::canonicalize(&program.path).is_ok_and(|p| p == self.own)
    }
}

/// Where `mcpeval-NAME` is, beside the running executable or on PATH.
pub fn find(name: &str) -> Option<PathBuf> {
    match Search::from_env() {
        Ok(search) => search.find(name).program(),
        // Without its own path, a program still finds commands on PATH.
        Err(_) => Search::new(PathBuf::new(), std::env::var_os("PATH"))
            .find(name)
            .program(),
    }
}

/// Whether `meta` is an executable regular file's.
#[cfg(unix)]
pub fn is_executable(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
pub fn is_executable(meta: &Metadata) -> bool {
    meta.is_file()
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &Metadata, _: &Metadata) -> bool {
    false
}

/// Where a sibling's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stderr {
    /// Straight to ours, as it is written.
    Relay,
    /// Into [`Ran::stderr`].
    Capture,
}

/// How a sibling ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exit(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Ended {
    /// The status a shell reports: the exit status, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            Ended::Exit(code) => code,
            Ended::Signal(signal) => 128 + signal,
        }
    }

    /// "exited with status N" or "was killed by signal N".
    pub fn describe(self) -> String {
        match self {
            Ended::Exit(code) => format!("exited with status {code}"),
            Ended::Signal(signal) => format!("was killed by signal {signal}"),
        }
    }
}

/// What a sibling did.
#[derive(Debug)]
pub struct Ran {
    /// How it ended.
    pub ended: Ended,
    /// Its stdout, whole: data for the caller, never shown raw.
    pub stdout: Vec<u8>,
    /// Its stderr with [`Stderr::Capture`]; empty with [`Stderr::Relay`].
    pub stderr: Vec<u8>,
}

impl Ran {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.ended == Ended::Exit(0)
    }
}

/// How to run a sibling beyond its arguments.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// Its working directory; ours when `None`.
    pub dir: Option<&'a Path>,
    /// What becomes of its stderr.
    pub stderr: Stderr,
    /// Variables set for it alone: how a value that must stay off every
    /// command line (a token) reaches a sibling.
    pub env: &'a [(&'a str, String)],
}

/// What a sibling reads on its stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// Nothing: its stdin is closed.
    Null,
    /// Ours, for a sibling given a file argument of `-`.
    Inherit,
}

/// Runs `program --home HOME ARGS…` with `MCPEVAL_HOME=HOME` (and the
/// store's `--database`, if it was given one, as `MCPEVAL_DATABASE_URL`),
/// stdin closed and stdout captured. `Err` only when it could not be
/// started or waited for.
pub fn run<I, A>(program: &Path, home: &Home, args: I, options: Options<'_>) -> std::io::Result<Ran>
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    run_with_stdin(program, home, args, options, Stdin::Null)
}

/// Like [`run`], with the sibling's stdin as `stdin` says.
pub fn run_with_stdin<I, A>(
    program: &Path,
    home: &Home,
    args: I,
    options: Options<'_>,
    stdin: Stdin,
) -> std::io::Result<Ran>
where
    I: IntoIterator<Item = A>,
    A: Into<OsString>,
{
    let root = home.root().as_std_path();
    let mut argv: Vec<OsString> = vec!["--home".into(), root.into()];
    argv.extend(args.into_iter().map(Into::into));
    let mut expression = duct::cmd(program, argv)
        .env(HOME_ENV, root)
        .stdout_capture()
        .unchecked();
    if let Some(url) = home.database_flag() {
        expression = expression.env(crate::DATABASE_ENV, url);
    }
    for (name, value) in options.env {
        expression = expression.env(name, value);
    }
    if stdin == Stdin::Null {
        expression = expression.stdin_null();
    }
    if options.stderr == Stderr::Capture {
        expression = expression.stderr_capture();
    }
    if let Some(dir) = options.dir {
        expression = expression.dir(dir);
    }
    let out = expression.run()?;
    Ok(Ran {
        ended: ended(&out.status),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

#[cfg(unix)]
fn ended(status: &std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ended::Exit(code),
        (None, Some(signal)) => Ended::Signal(signal),
        (None, None) => Ended::Exit(-1),
    }
}

#[cfg(not(unix))]
fn ended(status: &std::process::ExitStatus) -> Ended {
    Ended::Exit(status.code().unwrap_or(-1))
}

/// `name` as a command name, or the usage error that says what names look like.
pub fn check_name(name: &OsStr) -> crate::Result<String> {
    match name.to_str() {
        Some(n) if is_valid_name(n) => Ok(n.to_owned()),
        _ => Err(Error::usage(format!(
            "'{}' is not a command name: names are lowercase letters, digits and '-', \
             starting with a letter or digit (like 'export-issues')",
            name.to_string_lossy()
        ))),
    }
}

/// Why a sibling run for its JSON ([`json`]) gave none.
#[derive(Debug)]
pub enum Failure {
    /// `mcpeval-SUB` is neither beside this executable nor on `PATH`.
    Missing,
    /// It could not be started or waited for.
    Io(std::io::Error),
    /// It did not succeed: how it ended, and what it said on stderr with
    /// every control character but the newline escaped.
    Failed {
        /// How it ended.
        ended: Ended,
        /// Its stderr, printable.
        said: String,
    },
    /// Its stdout is not the JSON asked for: where serde stopped reading
    /// it, never the text (which may hold anything).
    Unreadable {
        /// What kind of error serde found.
        category: serde_json::error::Category,
        /// Its line, from 1.
        line: usize,
        /// Its column, from 1.
        column: usize,
    },
}

impl Failure {
    /// For `mcpeval-SUB` that failed with a suite error of its own (a line
    /// `mcpeval-SUB: error: MESSAGE`, perhaps then `  hint: …`): that
    /// error, with the sibling's status, as the caller's own. `None` for
    /// any other failure, or a sibling that said something else.
    pub fn own_error(&self, sub: &str) -> Option<Error> {
        let Failure::Failed {
            ended: Ended::Exit(code),
            said,
        } = self
        else {
            return None;
        };
        let status = u8::try_from(*code).ok().filter(|s| *s != 0)?;
        let prefix = format!("mcpeval-{sub}: error: ");
        let rest = match said.strip_prefix(&prefix) {
            Some(rest) => rest,
            None => &said[said.find(&format!("\n{prefix}"))? + 1 + prefix.len()..],
        };
        let (message, hint) = match rest.split_once("\n  hint: ") {
            Some((message, hint)) => (message, Some(hint.trim_end())),
            None => (rest.trim_end(), None),
        };
        let error = Error::new(status, message);
        Some(match hint {
            Some(hint) => error.with_hint(hint),
            None => error,
        })
    }
}

/// Runs `mcpeval-SUB --home HOME ARGS…` (found as [`find`] finds it, stdin
/// closed, stderr captured) and parses its stdout as `T`: the one way a
/// command reads another's `--format json`. On success, also returns what
/// it said on stderr (printable; a note the caller may relay).
pub fn json<T: serde::de::DeserializeOwned>(
    sub: &str,
    home: &Home,
    args: &[&str],
) -> std::result::Result<(T, String), Failure> {
    let program = find(sub).ok_or(Failure::Missing)?;
    let options = Options {
        dir: None,
        stderr: Stderr::Capture,
        env: &[],
    };
    let out = run(&program, home, args.iter().copied(), options).map_err(Failure::Io)?;
    let said = printable(&String::from_utf8_lossy(&out.stderr));
    if !out.success() {
        return Err(Failure::Failed {
            ended: out.ended,
            said,
        });
    }
    let parsed = serde_json::from_slice(&out.stdout).map_err(|e| Failure::Unreadable {
        category: e.classify(),
        line: e.line(),
        column: e.column(),
    })?;
    Ok((parsed, said))
}

/// `text` with every control character but the newline escaped, so a
/// relayed message cannot drive the terminal.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            out.push_str(&c.escape_default().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["capture", "export-issues", "a", "0", "x-", "9lives"] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-x",
            "Foo",
            "../x",
            "a/b",
            "capture.d",
            "a_b",
            "é",
            " x",
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn relative_and_repeated_path_entries_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let own = tmp.path().join("own");
        let other = tmp.path().join("other");
        fs::create_dir_all(&own).unwrap();
        fs::create_dir_all(&other).unwrap();
        let path =
            std::env::join_paths([Path::new(""), Path::new("rel"), &other, &own, &other]).unwrap();
        let search = Search::new(own.join("mcpeval"), Some(path));
        let dirs: Vec<_> = search.dirs.iter().map(|(d, o)| (d.clone(), *o)).collect();
        assert_eq!(
            dirs,
            [(own.clone(), Origin::Sibling), (other, Origin::Path)]
        );
        assert_eq!(search.own_dir(), Some(own.as_path()));
    }

    #[test]
    fn statuses_follow_the_shell() {
        assert_eq!(Ended::Exit(3).status(), 3);
        assert_eq!(Ended::Signal(9).status(), 137);
        assert_eq!(Ended::Signal(9).describe(), "was killed by signal 9");
    }

    #[test]
    fn relayed_text_cannot_drive_a_terminal() {
        assert_eq!(printable("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\n");
    }

    #[test]
    fn a_siblings_own_error_becomes_the_callers() {
        let failed = |code, said: &str| Failure::Failed {
            ended: Ended::Exit(code),
            said: said.to_owned(),
        };
        // A warning before the error line, with error-like words in it.
        let err = failed(
            6,
            "mcpeval-findings: warning: a: error: b\n\
             mcpeval-findings: error: refused; nothing was written\n  hint: restore it\n",
        )
        .own_error("findings")
        .unwrap();
        assert_eq!(
            (err.status(), err.message(), err.hint()),
            (6, "refused; nothing was written", Some("restore it"))
        );
        let bare = failed(3, "mcpeval-findings: error: no store\n")
            .own_error("findings")
            .unwrap();
        assert_eq!(
            (bare.status(), bare.message(), bare.hint()),
            (3, "no store", None)
        );
        assert!(
            failed(1, "thread 'main' panicked")
                .own_error("findings")
                .is_none()
        );
        // Another program's error line is not the sibling's.
        assert!(
            failed(3, "mcpeval-index: error: x\n")
                .own_error("findings")
                .is_none()
        );
        assert!(Failure::Missing.own_error("findings").is_none());
    }
}
