//! The one directory `generate_manifest` may write in, and the rules for
//! writing there.
//!
//! A client of serve is an agent, and a path it names would be written
//! with the user's rights, so an `output` must be a relative path inside
//! the workspace (`serve --workspace DIR`, default the current directory):
//! no absolute path, no `..`, no symbolic link on the way or at the end,
//! not inside the store, and never over an existing file that is not an
//! mcpeval manifest (even with `force`).
//!
//! Checking names and then writing by name would leave a window in which
//! a directory on the way is swapped for a symlink. So the workspace is
//! held open from startup and the path is walked one component at a time
//! with `openat(O_DIRECTORY | O_NOFOLLOW)` from that descriptor: every
//! component is first looked at with `fstatat(AT_SYMLINK_NOFOLLOW)` (the
//! descriptor-relative `symlink_metadata`, for a message that says what is
//! wrong), and the descent itself follows no link whatever it finds by
//! then. The manifest is written to a temporary file created with
//! `O_EXCL | O_NOFOLLOW` in the directory so reached and moved over the
//! name with `renameat` (with `force`) or `linkat` (without, which fails
//! on an existing name); both replace or create the name itself and never
//! follow a link at it. The existing file is checked again right before
//! that step, which leaves only a swap of one regular file for another
//! in the last microseconds, by a process that already has the user's
//! rights.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use shared::Error;
use shared::Result;
use shared::error::Kind as ErrorKind;
use shared::manifest::{MAX_MANIFEST_BYTES, Manifest};

use crate::failure::Failure;

/// The workspace, open for the life of the server.
#[derive(Debug)]
pub struct Workspace {
    /// Its canonical path, for messages and as the commands' directory.
    root: PathBuf,
    dir: OwnedFd,
    /// The store's canonical path: never written into.
    store: PathBuf,
}

/// A checked place to write one manifest: its directory, held open.
#[derive(Debug)]
pub struct Target {
    dir: OwnedFd,
    name: CString,
    /// What the client asked for, for messages.
    output: String,
    /// The full path, for people.
    pub shown: PathBuf,
}

/// What is at a name, looked at without following a link.
enum Kind {
    Missing,
    Symlink,
    Directory,
    File,
    Other,
}

impl Workspace {
    /// Opens `dir` as the workspace of a store at `home`.
    pub fn open(dir: &Path, home: &Path) -> Result<Workspace> {
        let bad = |what: String| {
            Error::usage(format!("--workspace {}: {what}", dir.display()))
                .with_hint("name an existing directory for generate_manifest to write in")
        };
        let root = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY)
            .open(&root)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOTDIR) => bad("not a directory".to_owned()),
                _ => bad(e.to_string()),
            })?;
        Ok(Workspace {
            root,
            dir: OwnedFd::from(file),
            store: canonical_lenient(home),
        })
    }

    /// Its canonical path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks `output` before anything runs: `Err` is the isError text.
    pub fn target(&self, output: &str, force: bool) -> Result<Target, Failure> {
        let refuse = |what: &str, hint: &str| refusal(output, what, hint);
        let outside = format!(
            "generate_manifest writes only inside the workspace {}",
            self.root.display()
        );
        let relative_hint = "give a path relative to the workspace, without \"..\"; \
             start serve with --workspace DIR to choose another workspace";
        let path = Path::new(output);
        if path.is_absolute() {
            return Err(refuse(
                &format!("is an absolute path; {outside}"),
                relative_hint,
            ));
        }
        let mut names = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(name) => names.push(name.to_string_lossy().into_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(refuse(
                        &format!("has a \"..\" component; {outside}"),
                        relative_hint,
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(
                        &format!("is an absolute path; {outside}"),
                        relative_hint,
                    ));
                }
            }
        }
        let Some(last) = names.pop() else {
            return Err(refuse(
                "names no file",
                "give a file name such as ID.manifest.json",
            ));
        };
        if output.ends_with('/') {
            return Err(refuse(
                "ends in \"/\": it names a directory, not a file",
                "give a file name such as ID.manifest.json",
            ));
        }
        let shown = names
            .iter()
            .chain([&last])
            .fold(self.root.clone(), |p, n| p.join(n));
        if shown.starts_with(&self.store) {
            return Err(refuse(
                &format!(
                    "is inside the store {}; generate_manifest never writes into the store",
                    self.store.display()
                ),
                "choose a path in the workspace outside the store",
            ));
        }
        let cstring = |name: &str| {
            CString::new(name).map_err(|_| {
                refuse(
                    "contains a NUL character",
                    "give a file name such as ID.manifest.json",
                )
            })
        };
        let io_error = |what: &str, err: io::Error| {
            Failure::from(Error::new(
                ErrorKind::Io,
                format!("cannot {what} for output {output:?}: {err}; nothing was written"),
            ))
        };
        let mut dir = self
            .dir
            .try_clone()
            .map_err(|e| io_error("open the workspace", e))?;
        for name in &names {
            let c = cstring(name)?;
            let step = match kind_at(&dir, &c).map_err(|e| io_error("look at the path", e))? {
                Kind::Directory => None,
                Kind::Missing => Some((
                    format!(
                        "needs the directory {name:?}, which does not exist in the workspace {}",
                        self.root.display()
                    ),
                    "create the directory first, or write the manifest elsewhere in the workspace",
                )),
                Kind::Symlink => Some((
                    format!(
                        "goes through {name:?}, a symbolic link; generate_manifest follows no \
                         symlink on the way to its output"
                    ),
                    "give the real path inside the workspace",
                )),
                Kind::File | Kind::Other => Some((
                    format!("goes through {name:?}, which is not a directory"),
                    "give a path whose every directory exists in the workspace",
                )),
            };
            if let Some((what, hint)) = step {
                return Err(refuse(&what, hint));
            }
            // No link is followed here, whatever replaced the name since.
            dir = open_at(
                &dir,
                &c,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                0,
            )
            .map_err(|e| io_error("open a directory on the way", e))?;
        }
        let target = Target {
            dir,
            name: cstring(&last)?,
            output: output.to_owned(),
            shown,
        };
        target.check_existing(force)?;
        Ok(target)
    }
}

impl Target {
    /// Writes `bytes` as the manifest: a new file, or with `force` over
    /// an existing manifest. `Err` is the isError text.
    pub fn install(&self, bytes: &[u8], force: bool) -> Result<(), Failure> {
        // Checked again right before the write: the command took a while.
        self.check_existing(force)?;
        let name = self.name.to_string_lossy();
        let tmp = CString::new(format!(
            ".{name}.{}.tmp",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        ))
        .expect("no NUL in the name");
        let fail = |what: &str, err: io::Error| {
            Failure::from(Error::new(
                ErrorKind::Io,
                format!(
                    "cannot {what} {}: {err}; nothing was written",
                    self.shown.display()
                ),
            ))
        };
        let written = open_at(
            &self.dir,
            &tmp,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o644,
        )
        .and_then(|fd| {
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()
        });
        if let Err(err) = written {
            unlink_at(&self.dir, &tmp);
            return Err(fail("write a temporary file beside", err));
        }
        let d = self.dir.as_raw_fd();
        // SAFETY: both descriptors are open and both names NUL-terminated.
        let placed = if force {
            unsafe { libc::renameat(d, tmp.as_ptr(), d, self.name.as_ptr()) }
        } else {
            unsafe { libc::linkat(d, tmp.as_ptr(), d, self.name.as_ptr(), 0) }
        };
        let placed = if placed == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        };
        if !force || placed.is_err() {
            unlink_at(&self.dir, &tmp);
        }
        match placed {
            Ok(()) => {
                // SAFETY: an open descriptor; a failed sync still leaves the file in place.
                unsafe { libc::fsync(d) };
                Ok(())
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(self.exists()),
            Err(err) => Err(fail("write", err)),
        }
    }

    /// What is at the name may be replaced: nothing, or (with `force`) a
    /// regular file holding an mcpeval manifest.
    fn check_existing(&self, force: bool) -> Result<(), Failure> {
        let refuse = |what: &str, hint: &str| refusal(&self.output, what, hint);
        let kind = kind_at(&self.dir, &self.name).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!(
                    "cannot look at {}: {e}; nothing was written",
                    self.shown.display()
                ),
            )
        })?;
        match kind {
            Kind::Missing => Ok(()),
            Kind::Symlink => Err(refuse(
                "is a symbolic link; generate_manifest never writes through or over one",
                "choose another output in the workspace",
            )),
            Kind::Directory | Kind::Other => Err(refuse(
                "exists and is not a regular file",
                "choose another output in the workspace",
            )),
            Kind::File if !self.holds_manifest() => Err(refuse(
                "exists and is not an mcpeval manifest; generate_manifest replaces only a \
                 manifest, even with force",
                "choose another output; the file was left as it was",
            )),
            Kind::File if force => Ok(()),
            Kind::File => Err(self.exists()),
        }
    }

    fn exists(&self) -> Failure {
        refusal(
            &self.output,
            "exists",
            "pass \"force\": true to replace it, or choose another output",
        )
    }

    /// Whether the regular file at the name parses as a manifest.
    fn holds_manifest(&self) -> bool {
        let Ok(fd) = open_at(
            &self.dir,
            &self.name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0,
        ) else {
            return false;
        };
        let file = File::from(fd);
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return false;
        }
        let mut text = String::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_string(&mut text)
            .is_ok()
            && text.len() as u64 <= MAX_MANIFEST_BYTES
            && Manifest::parse(&text).is_ok()
    }
}

/// A refused `output` (the client's request, so a usage error); it is
/// quoted, as it came from a client.
fn refusal(output: &str, what: &str, hint: &str) -> Failure {
    Error::usage(format!("output {output:?} {what}; nothing was written"))
        .with_hint(hint)
        .into()
}

/// `path` made canonical as far as it exists (the store may not yet).
fn canonical_lenient(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical_lenient(parent).join(name),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_owned()),
    }
}

fn kind_at(dir: &OwnedFd, name: &CStr) -> io::Result<Kind> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: an open descriptor, a NUL-terminated name, room for the result.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::NotFound => Ok(Kind::Missing),
            _ => Err(err),
        };
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    Ok(match mode {
        libc::S_IFLNK => Kind::Symlink,
        libc::S_IFDIR => Kind::Directory,
        libc::S_IFREG => Kind::File,
        _ => Kind::Other,
    })
}

fn open_at(dir: &OwnedFd, name: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: an open descriptor and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: openat returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

fn unlink_at(dir: &OwnedFd, name: &CStr) {
    // SAFETY: an open descriptor and a NUL-terminated name.
    unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
}
