//! What the PostgreSQL servers of the tests and of the bench both need to
//! know of this machine: where the packaged server programs are, whether
//! we run as root and as whom the server then runs, and a free port.

use std::path::{Path, PathBuf};

/// `/usr/lib/postgresql/N/bin/initdb` for the highest N installed.
pub fn newest_packaged_initdb() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            let initdb = entry.path().join("bin/initdb");
            is_executable(&initdb).then_some((major, initdb))
        })
        .max_by_key(|(major, _)| *major)
        .map(|(_, initdb)| initdb)
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The uid and gid of the `postgres` system user.
pub fn postgres_user() -> Option<(u32, u32)> {
    // SAFETY: getpwnam gets a NUL-terminated name; the record it returns
    // is read at once, before any other call could reuse it.
    unsafe {
        let pw = libc::getpwnam(c"postgres".as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

/// A loopback port nothing listened on a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a loopback port")
}
