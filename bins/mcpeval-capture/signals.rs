//! Signals and exit status pass through capture as if it were the server.
//!
//! A signal sent to capture by another process is forwarded to the server;
//! one the terminal sent to the whole foreground group already reached the
//! server and is not sent twice. When the server dies by a signal, capture
//! dies by the same one after its journal is complete.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use shared::Error;
use shared::Result;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

const FORWARDED: [i32; 6] = [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2];

/// Starts forwarding signals to the server process `pid`.
pub fn forward_to(pid: u32) -> Result<()> {
    let mut signals = SignalsInfo::<WithOrigin>::new(FORWARDED)
        .map_err(|err| Error::io("cannot install signal handlers", err))?;
    let forwarding = move || {
        for origin in signals.forever() {
            if matches!(origin.cause, Cause::Kernel) {
                continue;
            }
            // SAFETY: kill(2) with a pid we spawned and a valid signal number.
            unsafe {
                libc::kill(pid as libc::pid_t, origin.signal);
            }
        }
    };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(forwarding)
        .map_err(|err| Error::io("cannot start forwarding signals", err))?;
    Ok(())
}

/// Ends capture the way the server ended: same exit code, or same signal.
pub fn exit_like(status: ExitStatus) -> Result<()> {
    if let Some(signal) = status.signal() {
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        // Still alive (the signal does not terminate by default): report it
        // the way a shell would.
        std::process::exit(128 + signal);
    }
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => std::process::exit(code),
        None => std::process::exit(1),
    }
}
