//! The store directory on disk: made private, kept private. Readers never
//! create it; only commands that write evidence do, and before they write
//! they make sure it is theirs: a store directory of another user is
//! refused, one open to others is closed again.

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
