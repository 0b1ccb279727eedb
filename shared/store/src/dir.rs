//! The store directory on disk: made private, kept private. Readers never
//! create it; only commands that write evidence do, and before they write
//! they make sure it is theirs: a store directory of another user is
//! refused, one open to others is closed again. A reader asked for a store
//! that is not there refuses (status 3) rather than answer "nothing".

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use shared::error::{Error, IoContext, Result};
use shared::home::Home;

use crate::warning::warning;

/// Creates the store `home` and its journal directory (mode 0700) if missing.
/// An existing one must belong to the effective user (else a usage
/// error, status 2, before anything is written); one open to group or
/// others is made 0700 again, with a warning on stderr.
pub fn ensure(home: &Home) -> Result<()> {
    ensure_warning(home, &mut |message| warning(message))
}

/// [`ensure`], handing each warning to `warn` to print.
fn ensure_warning(home: &Home, warn: &mut dyn FnMut(std::fmt::Arguments<'_>)) -> Result<()> {
    let journals = home.journals();
    for dir in [home.root().as_std_path(), journals.as_std_path()] {
        if let Ok(meta) = fs::metadata(dir)
            && meta.is_dir()
        {
            check_private(dir, &meta, warn)?;
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

/// Refuses a store directory that does not exist, for a command that reads
/// the store (status 3, evidence unavailable).
///
/// An empty answer from a store that is not there would let a script
/// pointed at the wrong directory pass, so a reader never gives one. A
/// store the user named (`--home`, `MCPEVAL_HOME`) is most likely a typo
/// and is said to be missing; the default store missing is a first run,
/// worded as a reader words a store with nothing indexed yet.
pub fn require(home: &Home) -> Result<()> {
    let own = home.own();
    let root = own.root();
    let missing = match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => format!("no store at {root}: it is not a directory"),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            if !own.is_named() {
                return Err(crate::catalog::no_index(&own));
            }
            format!("no store at {root}")
        }
        Err(err) => return Err(Error::io(format!("cannot read the store {root}"), err)),
    };
    Err(Error::unavailable(missing)
        .with_hint("check --home and MCPEVAL_HOME, or run `mcpeval index` after a capture"))
}

/// Refuses a store directory the effective user does not own, and takes
/// group and other permissions away from one that has them.
///
/// Another user's directory is refused rather than used: its owner could
/// read the journals and the salt, or plant files for us to trust. The
/// status is 2 (usage), as for a store that cannot be found at all: the
/// repair is to point `--home` or `MCPEVAL_HOME` at the user's own store.
fn check_private(
    dir: &Path,
    meta: &fs::Metadata,
    warn: &mut dyn FnMut(std::fmt::Arguments<'_>),
) -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        return Err(Error::usage(format!(
            "the store directory {} belongs to user id {}, not to you (user id {euid}); nothing was written",
            dir.display(),
            meta.uid()
        ))
        .with_hint("use a store of your own (--home DIR or MCPEVAL_HOME), or have its owner hand it over"));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .context(format_args!("cannot make {} private", dir.display()))?;
        warn(format_args!(
            "the store directory {} was open to other users (mode {mode:04o}); it is now 0700",
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_refuses_a_named_store_that_is_not_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let named = |path: &Path| Home::resolve(Some(path)).unwrap();
        require(&named(dir.path())).unwrap();
        let missing = dir.path().join("hoem");
        let err = require(&named(&missing)).unwrap_err();
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
        assert_eq!(err.message(), format!("no store at {}", missing.display()));
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let err = require(&named(&file)).unwrap_err();
        assert!(err.message().ends_with(": it is not a directory"), "{err}");
        assert!(!missing.exists());
    }

    #[test]
    fn an_open_store_is_made_private_again() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        ensure(&home).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(home.root().as_std_path()), 0o700);
        assert_eq!(mode(home.journals().as_std_path()), 0o700);
        fs::set_permissions(home.root(), fs::Permissions::from_mode(0o777)).unwrap();
        fs::set_permissions(home.journals(), fs::Permissions::from_mode(0o750)).unwrap();
        let mut warned = Vec::new();
        ensure_warning(&home, &mut |message| warned.push(message.to_string())).unwrap();
        assert_eq!(mode(home.root().as_std_path()), 0o700);
        assert_eq!(mode(home.journals().as_std_path()), 0o700);
        assert_eq!(
            warned,
            [
                format!(
                    "the store directory {} was open to other users (mode 0777); it is now 0700",
                    home.root()
                ),
                format!(
                    "the store directory {} was open to other users (mode 0750); it is now 0700",
                    home.journals()
                ),
            ]
        );
    }
}
