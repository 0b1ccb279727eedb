//! The floor for a stdio relay: a program that starts the server and moves
//! bytes client → server and server → client with `splice(2)` and nothing
//! else.
//!
//! It runs as this bench binary re-executed with `--splice-relay CMD ARGS…`.
//! Capture's spliced relay does the same moves plus a `tee(2)` into a tap
//! for its observer; timed against this, with its observer switched off
//! (`MCPEVAL_CAPTURE_BENCH_UNOBSERVED=1`), the difference is what capture's relay costs
//! beyond the least a relay between two pipes can do. It must never do
//! more than that: no buffering, no copies, no signal handling.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::{Command, Stdio};

/// `--splice-relay CMD ARGS…`: relays until the server's output ends,
/// then exits with the server's status.
pub fn main(command: &[String]) {
    let (program, args) = command
        .split_first()
        .expect("--splice-relay takes the server command");
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the server");
    let server_in = OwnedFd::from(child.stdin.take().expect("server stdin"));
    let server_out = OwnedFd::from(child.stdout.take().expect("server stdout"));
    let stdin = dup(io::stdin().as_fd());
    let stdout = dup(io::stdout().as_fd());
    // Client → server on a thread of its own; dropping `server_in` at the
    // client's end of input ends the server's.
    let up = std::thread::spawn(move || pump(&stdin, server_in));
    pump(&server_out, stdout);
    up.join().expect("client to server");
    let status = child.wait().expect("wait for the server");
    std::process::exit(status.code().unwrap_or(1));
}

fn dup(fd: std::os::fd::BorrowedFd<'_>) -> OwnedFd {
    fd.try_clone_to_owned().expect("dup")
}

/// Splices `from` into `to` until end of input or an error; both must be
/// pipes.
fn pump(from: &OwnedFd, to: OwnedFd) {
    loop {
        // SAFETY: splice(2) between two open descriptors we own, without
        // offsets; it moves what `from` holds, up to the length asked.
        let n = unsafe {
            libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                to.as_raw_fd(),
                std::ptr::null_mut(),
                1 << 30,
                libc::SPLICE_F_MOVE,
            )
        };
        if n > 0 {
            continue;
        }
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        break;
    }
}
