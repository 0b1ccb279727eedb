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
//! With a team database (`shared::team`), its statements count too: each
//! statement, transaction start and commit the process sends it (and the
//! moment a commit returns, so a kill also lands just after it), and
//! every [`ROWS_PER_POINT`]-th row a `COPY` sends or a pull reads, so a
//! kill also lands inside a bulk upload and inside a view's rebuilt
//! journal. `MCPEVAL_FAULT_COUNT=team` counts those alone (the sweep of a
//! team command stays short), `=files` the SQLite statements alone.
//!
//! Release builds never read the variable: [`watch`] compiles to nothing
//! there, so no environment can make a shipped binary kill itself.

use rusqlite::Connection;

/// The environment variable naming the statement to die at (1-based).
pub const FAULT_ENV: &str = "MCPEVAL_FAULT_AFTER_STATEMENTS";

/// The environment variable that limits the fault to one binary, by name.
pub const FAULT_IN_ENV: &str = "MCPEVAL_FAULT_IN";

/// The environment variable that limits the count to one kind of
/// database: `team` or `files`.
pub const FAULT_COUNT_ENV: &str = "MCPEVAL_FAULT_COUNT";

/// A team-database row counts as a fault point once in this many.
pub const ROWS_PER_POINT: u64 = 64;

/// Counts the statements `conn` runs against the process's fault budget.
#[cfg(debug_assertions)]
pub fn watch(conn: &Connection) {
    if armed::limit().is_some() && armed::counts("files") {
        conn.trace_v2(
            rusqlite::trace::TraceEventCodes::SQLITE_TRACE_STMT,
            Some(armed::statement),
        );
    }
}

/// Release builds inject no faults.
#[cfg(not(debug_assertions))]
pub fn watch(_conn: &Connection) {}

/// Counts one statement sent to the team database (as it starts).
#[cfg(debug_assertions)]
pub fn team_statement() {
    if armed::limit().is_some() && armed::counts("team") {
        armed::point();
    }
}

/// Release builds inject no faults.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn team_statement() {}

/// Counts the `n`-th (1-based) row of a `COPY` to, or a read from, the
/// team database: row 1 and every [`ROWS_PER_POINT`]-th after it.
#[cfg(debug_assertions)]
pub fn team_row(n: u64) {
    if n % ROWS_PER_POINT == 1 {
        team_statement();
    }
}

/// Release builds inject no faults.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn team_row(_n: u64) {}

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

    /// Whether statements of `kind` (`team`, `files`) count.
    pub fn counts(kind: &str) -> bool {
        static ONLY: OnceLock<Option<String>> = OnceLock::new();
        ONLY.get_or_init(|| std::env::var(super::FAULT_COUNT_ENV).ok())
            .as_deref()
            .is_none_or(|only| only == kind)
    }

    /// Called by SQLite as each statement starts.
    pub fn statement(_event: TraceEvent<'_>) {
        point();
    }

    /// One more statement: the process dies if it is the one named.
    pub fn point() {
        let n = STARTED.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(n) == limit() {
            // SAFETY: kill(2) on our own pid; SIGKILL cannot be caught.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}
