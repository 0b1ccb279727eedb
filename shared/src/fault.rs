//! Fault injection for the crash-safety tests, in debug builds only.
//!
//! With `MCPEVAL_FAULT_AFTER_STATEMENTS=N` in its environment, a debug
//! build of any binary kills itself with SIGKILL as its N-th SQL statement
//! starts, counted over every database connection the process opened. A
//! test runs a command with N = 1, 2, 3, … until it finishes, and so sees
//! the store after a crash at every statement boundary: before and after
//! each write, inside and between transactions, before and after each
//! commit. SIGKILL runs no destructor, flushes nothing and leaves the WAL
//! and lock files as a power cut or the OOM killer would.
//!
//! Child processes inherit the environment; `MCPEVAL_FAULT_IN=NAME` arms
//! only the binary of that file name (e.g. the `mcpeval-probe` that
//! `mcpeval-verify` runs), so each process's statements can be swept alone.
//!
//! Release builds never read the variable: [`watch`] compiles to nothing
//! there, so no environment can make a shipped binary kill itself.

use rusqlite::Connection;

/// The environment variable naming the statement to die at (1-based).
pub const FAULT_ENV: &str = "MCPEVAL_FAULT_AFTER_STATEMENTS";

/// The environment variable that limits the fault to one binary, by name.
pub const FAULT_IN_ENV: &str = "MCPEVAL_FAULT_IN";

/// Counts the statements `conn` runs against the process's fault budget.
#[cfg(debug_assertions)]
pub fn watch(conn: &Connection) {
    if armed::limit().is_some() {
        conn.trace_v2(
            rusqlite::trace::TraceEventCodes::SQLITE_TRACE_STMT,
            Some(armed::statement),
        );
    }
}

/// Release builds inject no faults.
#[cfg(not(debug_assertions))]
pub fn watch(_conn: &Connection) {}

#[cfg(debug_assertions)]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rusqlite::trace::TraceEvent;

    static LIMIT: OnceLock<Option<u64>> = OnceLock::new();
    static STARTED: AtomicU64 = AtomicU64::new(0);

    pub fn limit() -> Option<u64> {
        *LIMIT.get_or_init(|| {
            let here = std::env::current_exe()
                .ok()
                .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()));
            let armed_here = match std::env::var(super::FAULT_IN_ENV) {
                Ok(name) => here.as_deref() == Some(name.as_str()),
                Err(_) => true,
            };
            std::env::var(super::FAULT_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0 && armed_here)
        })
    }

    /// Called by SQLite as each statement starts.
    pub fn statement(_event: TraceEvent<'_>) {
        let n = STARTED.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == limit() {
            // SAFETY: kill(2) on our own pid; SIGKILL cannot be caught.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}
