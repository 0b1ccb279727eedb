//! The statement a bulk load inserts its rows with, several per call,
//! binding their text without copying it.
//!
//! rusqlite binds every string with `SQLITE_TRANSIENT`, so SQLite copies it
//! into memory of its own and frees it at the next bind: nine allocations,
//! copies and frees per row, a tenth of the inserting thread's time on a
//! large load. Here the text is bound `SQLITE_STATIC`, pointing into the
//! batch the rows live in, which outlives the call: every parameter is
//! bound, the statement run and reset, and the bindings cleared before
//! `insert` returns, so SQLite never holds a pointer past it.

use std::ffi::{CStr, CString, c_int};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::{Connection, ffi};
use shared::record::{COLUMN_NAMES, Columns};

/// The parameters [`Many::insert`] binds per row: where it was read
/// (`journal_id`, `line`), its columns, and the number of its session;
/// a numbered statement binds the row's id before them.
pub const PER_ROW: usize = 2 + COLUMN_NAMES.len() + 1;

/// A prepared multi-row INSERT of `calls`, alive no longer than its
/// connection.
pub struct Many<'c> {
    stmt: *mut ffi::sqlite3_stmt,
    db: *mut ffi::sqlite3,
    rows: usize,
    numbered: bool,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> Many<'c> {
    /// Prepares `sql`, which must take `rows` rows of the columns
    /// [`insert`](Many::insert) binds, each led by its id when `numbered`.
    pub fn prepare(
        conn: &'c Connection,
        sql: &str,
        rows: usize,
        numbered: bool,
    ) -> rusqlite::Result<Many<'c>> {
        let sql = CString::new(sql).map_err(|_| rusqlite::Error::InvalidQuery)?;
        // SAFETY: the handle is valid while `conn` is borrowed, which the
        // lifetime ties this statement to; the statement is used on the
        // connection's thread only (this type is neither Send nor Sync).
        unsafe {
            let db = conn.handle();
            let mut stmt = ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut());
            if rc != ffi::SQLITE_OK {
                return Err(error(db, rc));
            }
            let many = Many {
                stmt,
                db,
                rows,
                numbered,
                _conn: PhantomData,
            };
            let wanted = rows * (PER_ROW + usize::from(numbered));
            let found = ffi::sqlite3_bind_parameter_count(stmt) as usize;
            if found != wanted {
                return Err(rusqlite::Error::InvalidParameterCount(found, wanted));
            }
            Ok(many)
        }
    }

    /// Inserts `chunk`, exactly as many rows as prepared, from journal
    /// `journal_id`, each row with the number of its session; a numbered
    /// statement's rows get the ids from `first_id` on.
    pub fn insert(
        &mut self,
        first_id: Option<i64>,
        journal_id: i64,
        chunk: &[(u64, Columns<'_>)],
        sessions: &[i64],
    ) -> rusqlite::Result<()> {
        assert_eq!(chunk.len(), self.rows, "a chunk of the prepared size");
        assert_eq!(sessions.len(), self.rows, "a session number per row");
        assert_eq!(
            first_id.is_some(),
            self.numbered,
            "ids for a numbered statement"
        );
        // SAFETY: `stmt` is a live prepared statement with PER_ROW
        // parameters per row (one more when numbered), checked when it was
        // prepared. The text bound
        // SQLITE_STATIC is borrowed from `chunk`, which outlives this call,
        // and the bindings are cleared before it returns.
        unsafe {
            let mut rc = ffi::SQLITE_OK;
            let mut at: c_int = 0;
            let mut next = || {
                at += 1;
                at
            };
            for (((line, row), session_no), n) in chunk.iter().zip(sessions).zip(0..) {
                let s = self.stmt;
                let ints = |rc: &mut c_int, i: c_int, v: Option<i64>| {
                    if *rc == ffi::SQLITE_OK {
                        *rc = match v {
                            Some(v) => ffi::sqlite3_bind_int64(s, i, v),
                            None => ffi::sqlite3_bind_null(s, i),
                        };
                    }
                };
                let text = |rc: &mut c_int, i: c_int, v: Option<&str>| {
                    if *rc == ffi::SQLITE_OK {
                        *rc = match v {
                            // A line is at most MAX_LINE bytes, far below c_int's range.
                            Some(v) => ffi::sqlite3_bind_text(
                                s,
                                i,
                                v.as_ptr().cast(),
                                v.len() as c_int,
                                ffi::SQLITE_STATIC(),
                            ),
                            None => ffi::sqlite3_bind_null(s, i),
                        };
                    }
                };
                let flag = |b: Option<bool>| b.map(i64::from);
                if let Some(first) = first_id {
                    ints(&mut rc, next(), Some(first + n));
                }
                ints(&mut rc, next(), Some(journal_id));
                ints(&mut rc, next(), Some(*line as i64));
                ints(&mut rc, next(), Some(row.schema));
                text(&mut rc, next(), row.event_id);
                text(&mut rc, next(), Some(row.session));
                ints(&mut rc, next(), Some(row.seq));
                text(&mut rc, next(), Some(row.origin));
                text(&mut rc, next(), row.transport);
                text(&mut rc, next(), Some(row.server));
                text(&mut rc, next(), Some(row.tool));
                text(&mut rc, next(), Some(row.started_at));
                ints(&mut rc, next(), row.duration_ms);
                ints(&mut rc, next(), flag(row.advertised));
                text(&mut rc, next(), Some(row.args_shape));
                text(&mut rc, next(), Some(row.outcome));
                text(&mut rc, next(), row.unknown);
                text(&mut rc, next(), row.channel);
                ints(&mut rc, next(), row.code);
                text(&mut rc, next(), row.template_id);
                ints(&mut rc, next(), flag(row.retryable));
                ints(&mut rc, next(), flag(row.contract_kept));
                text(&mut rc, next(), row.contract_at);
                text(&mut rc, next(), row.contract_keyword);
                ints(&mut rc, next(), Some(*session_no));
            }
            if rc == ffi::SQLITE_OK {
                rc = match ffi::sqlite3_step(self.stmt) {
                    ffi::SQLITE_DONE => ffi::SQLITE_OK,
                    other => other,
                };
            }
            let result = match rc {
                ffi::SQLITE_OK => Ok(()),
                rc => Err(error(self.db, rc)),
            };
            ffi::sqlite3_reset(self.stmt);
            ffi::sqlite3_clear_bindings(self.stmt);
            result
        }
    }
}

impl Drop for Many<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared by `prepare` and is finalized
        // once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

/// The error SQLite reports for `rc` on `db`, with its message.
///
/// # Safety
/// `db` must be a live connection handle.
unsafe fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: the caller passes a live handle; the message is copied
    // before any other call on it.
    let message = unsafe {
        let at = ffi::sqlite3_errmsg(db);
        (!at.is_null()).then(|| CStr::from_ptr(at).to_string_lossy().into_owned())
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}
