//! Where the store lives and what is inside it.
//!
//! `--home DIR` › `MCPEVAL_HOME` › `$XDG_DATA_HOME/mcpeval` ›
//! `~/.local/share/mcpeval`. The directory is private (mode 0700). Readers
//! never create it; only commands that write evidence do, and before they
//! write they make sure it is theirs and private: a store directory of
//! another user is refused, one open to others is closed again.

use std::path::{Path, PathBuf};

use camino::{Utf8Path, Utf8PathBuf};

use crate::error::{Error, Result};

/// The store directory and the fixed names inside it.
///
/// Store paths are UTF-8 ([`Utf8Path`]), so every path the suite prints, in
/// JSON or in prose, is the path itself, never a lossy rendering of it.
#[derive(Debug, Clone)]
pub struct Home {
    root: Utf8PathBuf,
    /// For a team view: the store it is a view of, whose salt, settings
    /// and journal writers it keeps (see [`Home::team_view`]).
    base: Option<Utf8PathBuf>,
    /// `--database URL`, when given (see `team::Database::resolve`).
    database: Option<String>,
    /// Whether `--home` or `MCPEVAL_HOME` named it (see [`Home::is_named`]).
    named: bool,
}

/// The environment variable `name`, unless unset or empty.
fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

impl Home {
    /// Resolves the store from the `--home` flag, then the environment
    /// (`MCPEVAL_HOME`, then `$XDG_DATA_HOME/mcpeval`, then
    /// `$HOME/.local/share/mcpeval`). A directory that is not valid UTF-8 is
    /// a usage error (status 2) naming where it came from.
    pub fn resolve(flag: Option<&Path>) -> Result<Home> {
        if let Some(dir) = flag {
            return Home::checked(dir.to_path_buf(), "the --home directory", true);
        }
        let default = Home::default_dir();
        if let Some(dir) = var(crate::HOME_ENV) {
            // The `mcpeval` front hands every command the store it resolved,
            // the default included: that one was not named by the user.
            let named = default.as_ref().is_none_or(|(d, _)| *d != dir);
            return Home::checked(dir, crate::HOME_ENV, named);
        }
        match default {
            Some((dir, source)) => Home::checked(dir, source, false),
            None => Err(Error::usage(
                "cannot find the store: set MCPEVAL_HOME or HOME, or pass --home DIR",
            )),
        }
    }

    /// The default store directory and the variable it comes from:
    /// `$XDG_DATA_HOME/mcpeval`, else `$HOME/.local/share/mcpeval`.
    fn default_dir() -> Option<(PathBuf, &'static str)> {
        // XDG says a relative XDG_DATA_HOME is invalid and must be ignored.
        if let Some(data) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
            return Some((data.join("mcpeval"), "XDG_DATA_HOME"));
        }
        var("HOME").map(|home| (home.join(".local/share/mcpeval"), "HOME"))
    }

    /// The store at `dir`, which `source` gave; `named` when the user
    /// spelled it out.
    fn checked(dir: PathBuf, source: &str, named: bool) -> Result<Home> {
        match Utf8PathBuf::from_path_buf(dir) {
            Ok(root) => Ok(Home {
                root,
                base: None,
                database: None,
                named,
            }),
            Err(_) => Err(Error::usage(format!(
                "{source} is not valid UTF-8; the store path must be"
            ))
            .with_hint("point --home or MCPEVAL_HOME at a directory whose path is UTF-8")),
        }
    }

    /// A store rooted at `dir`, a path the program made itself.
    ///
    /// # Panics
    ///
    /// If `dir` is not valid UTF-8; a path from the user goes through
    /// [`Home::resolve`], which refuses it with a message instead.
    pub fn at(dir: &Path) -> Home {
        Home {
            root: Utf8Path::from_path(dir)
                .expect("store paths made by the program are UTF-8")
                .to_path_buf(),
            base: None,
            database: None,
            named: false,
        }
    }

    /// Whether the user named this store, with `--home` or `MCPEVAL_HOME`,
    /// rather than taking the default (or the program making it). A named
    /// store that does not exist is most likely a typo, and is worded as
    /// one; a default one that does not exist is a first run.
    pub fn is_named(&self) -> bool {
        self.named
    }

    /// The same store with the `--database` flag's value, if one was given.
    pub fn with_database_flag(mut self, url: Option<String>) -> Home {
        self.database = url;
        self
    }

    /// The `--database` flag's value, if one was given.
    pub fn database_flag(&self) -> Option<&str> {
        self.database.as_deref()
    }

    /// `team/`: this machine's view of a team store, laid out as a store of
    /// its own (`journals/` rebuilt from the database's calls, `index.db`
    /// over them, `lifecycle.db` as the database holds it), so every
    /// command reads a team exactly as it reads one store. Its salt and
    /// settings are this store's; journal writers (capture, probe) write
    /// into this store's own journals.
    pub fn team_view(&self) -> Home {
        Home {
            root: self.own_root().join("team"),
            base: Some(self.own_root().to_path_buf()),
            database: self.database.clone(),
            named: self.named,
        }
    }

    /// A reader's view of the team at `dir`, a directory of its own that
    /// lives as long as the command: laid out like [`Home::team_view`]
    /// (this store's salt and settings), but filled from the team
    /// database for one command and never kept in the store.
    pub fn team_reading(&self, dir: &Utf8Path) -> Home {
        Home {
            root: dir.to_path_buf(),
            base: Some(self.own_root().to_path_buf()),
            database: self.database.clone(),
            named: self.named,
        }
    }

    /// Whether this is a team view.
    pub fn is_team_view(&self) -> bool {
        self.base.is_some()
    }

    /// The store itself: for a team view, the store it is a view of.
    pub fn own(&self) -> Home {
        Home {
            root: self.own_root().to_path_buf(),
            base: None,
            database: self.database.clone(),
            named: self.named,
        }
    }

    fn own_root(&self) -> &Utf8Path {
        self.base.as_deref().unwrap_or(&self.root)
    }

    /// The store directory.
    pub fn root(&self) -> &Utf8Path {
        &self.root
    }

    /// `journals/`: capture journals, never rewritten by mcpeval.
    pub fn journals(&self) -> Utf8PathBuf {
        self.root.join("journals")
    }

    /// `journals/.lock`: shared by journal writers and the index.
    pub fn journal_lock(&self) -> Utf8PathBuf {
        self.journals().join(".lock")
    }

    /// `lifecycle.db`: authoritative lifecycle state and history.
    pub fn lifecycle_db(&self) -> Utf8PathBuf {
        self.root.join("lifecycle.db")
    }

    /// `index.db`: derived, disposable.
    pub fn index_db(&self) -> Utf8PathBuf {
        self.root.join("index.db")
    }

    /// `trends.db`: derived readiness cache.
    pub fn trends_db(&self) -> Utf8PathBuf {
        self.root.join("trends.db")
    }

    /// `config.json`: the user's settings.
    pub fn config(&self) -> Utf8PathBuf {
        self.own_root().join("config.json")
    }

    /// `.salt`: 32 secret bytes keying every salted hash.
    pub fn salt(&self) -> Utf8PathBuf {
        self.own_root().join(".salt")
    }

    /// `store-id`: the random id a team database knows this store by.
    pub fn store_id(&self) -> Utf8PathBuf {
        self.own_root().join("store-id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_path_that_is_not_utf8_is_refused_by_name() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let dir = Path::new(OsStr::from_bytes(b"/tmp/store-\xff"));
        let err = Home::resolve(Some(dir)).unwrap_err();
        assert_eq!(err.status(), crate::exit::USAGE);
        let text = err.to_string();
        assert!(
            text.contains("the --home directory is not valid UTF-8"),
            "{text}"
        );
        assert!(!text.contains('\u{fffd}'), "{text}");
        let home = Home::resolve(Some(Path::new("/tmp/store"))).unwrap();
        assert_eq!(home.root(), Utf8Path::new("/tmp/store"));
        assert!(home.is_named() && home.team_view().own().is_named());
        assert!(!Home::at(Path::new("/tmp/store")).is_named());
    }
}
