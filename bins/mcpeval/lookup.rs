//! Finding `mcpeval-NAME` programs on disk: beside the front, then on PATH.
//!
//! Dispatch and `--list` share this one search, so the listing shows exactly
//! what `mcpeval NAME` would run and which copies it would pass over. It only
//! reads directories and metadata: it must never open, read or run a program
//! it finds, because listing has to be safe with any directory on PATH.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};

use shared::Error;
use shared::error::IoContext;

/// What every plugin's file name starts with.
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
    /// In the directory of the running front.
    Sibling,
    /// In a directory listed in PATH.
    Path,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Sibling => "sibling",
            Origin::Path => "path",
        }
    }
}

/// The program `mcpeval NAME` would run.
#[derive(Debug)]
pub struct Program {
    pub path: PathBuf,
    meta: Metadata,
}

/// The outcome of looking one name up.
#[derive(Debug)]
pub enum Found {
    Program(Program),
    /// Only files without an execute bit carry the name; the first is kept
    /// so the error can point at it, as a shell's "permission denied" does.
    NotExecutable(PathBuf),
    Missing,
}

/// One line of `--list`: the program that runs, and the copies it hides.
#[derive(Debug)]
pub struct Listed {
    pub name: String,
    pub path: PathBuf,
    pub origin: Origin,
    pub shadowed: Vec<PathBuf>,
}

/// The directories to search, in order, and the front they belong to.
pub struct Search {
    front: PathBuf,
    front_meta: Option<Metadata>,
    dirs: Vec<(PathBuf, Origin)>,
}

impl Search {
    /// The search of the running front under the current PATH.
    pub fn from_env() -> shared::Result<Search> {
        // `current_exe` resolves symlinks, so a front linked into ~/bin
        // still finds its siblings where it was installed.
        let front = std::env::current_exe()
            .context("cannot find the path of the running mcpeval")
            .map_err(|e| {
                e.with_hint("sibling commands are looked up beside it; run it by its full path")
            })?;
        Ok(Search::new(front, std::env::var_os("PATH")))
    }

    /// The search of `front` under the PATH value `path`.
    pub fn new(front: PathBuf, path: Option<OsString>) -> Search {
        let mut dirs = Vec::new();
        if let Some(own) = front.parent() {
            dirs.push((own.to_path_buf(), Origin::Sibling));
        }
        for dir in path.iter().flat_map(std::env::split_paths) {
            // An empty or relative entry would make the command depend on the
            // current directory, a classic way to run a planted program.
            if dir.is_absolute() {
                dirs.push((dir, Origin::Path));
            }
        }
        // The front's own directory is often on PATH too (~/.cargo/bin); one
        // file seen twice is not a shadowed copy, so each directory counts once.
        let mut seen = Vec::new();
        dirs.retain(|(dir, _)| {
            let key = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            let first = !seen.contains(&key);
            seen.push(key);
            first
        });
        let front_meta = fs::metadata(&front).ok();
        Search {
            front,
            front_meta,
            dirs,
        }
    }

    /// The path of the running front.
    pub fn front(&self) -> &Path {
        &self.front
    }

    /// The directory the front looks in first.
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

    /// Whether `program` is the running front under another name, which
    /// would only run the front again.
    pub fn is_front(&self, program: &Program) -> bool {
        if let Some(front) = &self.front_meta
            && same_file(front, &program.meta)
        {
            return true;
        }
        fs::canonicalize(&program.path).is_ok_and(|p| p == self.front)
    }
}

#[cfg(unix)]
fn is_executable(meta: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(meta: &Metadata) -> bool {
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

/// Turns an unusable name into the usage error that says what names look like.
pub fn check_name(name: &std::ffi::OsStr) -> shared::Result<String> {
    match name.to_str() {
        Some(n) if is_valid_name(n) => Ok(n.to_owned()),
        _ => Err(Error::usage(format!(
            "'{}' is not a command name: names are lowercase letters, digits and '-', \
             starting with a letter or digit (like 'export-issues')",
            name.to_string_lossy()
        ))),
    }
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
}
