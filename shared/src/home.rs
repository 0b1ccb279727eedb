//! Where the store lives and what is inside it.
//!
//! `--home DIR` › `MCPEVAL_HOME` › `$XDG_DATA_HOME/mcpeval` ›
//! `~/.local/share/mcpeval`. The directory is private (mode 0700). Readers
//! never create it; only commands that write evidence do.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// The store directory and the fixed names inside it.
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Resolves the store from the `--home` flag, then the environment.
    pub fn resolve(flag: Option<&Path>) -> Result<Home> {
        if let Some(dir) = flag {
            return Ok(Home::at(dir));
        }
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(dir) = var(crate::HOME_ENV) {
            return Ok(Home::at(&dir));
        }
        // XDG says a relative XDG_DATA_HOME is invalid and must be ignored.
        if let Some(data) = var("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
            return Ok(Home::at(&data.join("mcpeval")));
        }
        match var("HOME") {
            Some(home) => Ok(Home::at(&home.join(".local/share/mcpeval"))),
            None => Err(Error::usage(
                "cannot find the store: set MCPEVAL_HOME or HOME, or pass --home DIR",
            )),
        }
    }

    /// A store rooted at `dir`.
    pub fn at(dir: &Path) -> Home {
        Home {
            root: dir.to_path_buf(),
        }
    }

    /// Creates the store and its journal directory (mode 0700) if missing.
    pub fn ensure(&self) -> Result<()> {
        for dir in [self.root.as_path(), &self.journals()] {
            if dir.is_dir() {
                continue;
            }
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .context(format_args!(
                    "cannot create the store directory {}",
                    dir.display()
                ))?;
            // `recursive` applies the mode to the last component only if the
            // umask allows it; make sure the store itself is private.
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .context(format_args!("cannot make {} private", dir.display()))?;
        }
        Ok(())
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `journals/`: capture journals, never rewritten by mcpeval.
    pub fn journals(&self) -> PathBuf {
        self.root.join("journals")
    }

    /// `journals/.lock`: shared by journal writers and the index.
    pub fn journal_lock(&self) -> PathBuf {
        self.journals().join(".lock")
    }

    /// `lifecycle.db`: authoritative lifecycle state and history.
    pub fn lifecycle_db(&self) -> PathBuf {
        self.root.join("lifecycle.db")
    }

    /// `index.db`: derived, disposable.
    pub fn index_db(&self) -> PathBuf {
        self.root.join("index.db")
    }

    /// `trends.db`: derived readiness cache.
    pub fn trends_db(&self) -> PathBuf {
        self.root.join("trends.db")
    }

    /// `config.json`: the user's settings.
    pub fn config(&self) -> PathBuf {
        self.root.join("config.json")
    }

    /// `.salt`: 32 secret bytes keying every salted hash.
    pub fn salt(&self) -> PathBuf {
        self.root.join(".salt")
    }
}
