//! The statement a bulk load inserts its rows with, several per call,
//! binding their text without copying it.
//!
//! rusqlite binds every string with `SQLITE_TRANSIENT`, so SQLite copies it
//! into memory of its own and frees it at the next bind: nine allocations,
//! copies and frees per row, a tenth of the inserting thread's time on a
//! large load. Here the text is bound `SQLITE_STATIC`, pointing into the
//! batch the rows live in, which outlives the call.
//!
//! Bindings outlast a reset, and the inserting thread is the one a large
//! load waits on: a parameter that is NULL and was NULL at the last run
//! (most of an `ok` call's error columns) is not bound again, and the
//! bindings are not cleared after each run. A pointer into an earlier
//! batch may then stay bound between calls, but it is never read: SQLite
//! reads bound values only when the statement runs, and before each run
//! every parameter holds this call's value, text or NULL.

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
    /// Whether each parameter is bound NULL now (all are, when prepared);
    /// by the parameter's number, which counts from 1.
    null: Vec<bool>,
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
            let wanted = rows * (PER_ROW + usize::from(numbered));
            let many = Many {
                stmt,
                db,
                rows,
                numbered,
                null: vec![true; wanted + 1],
                _conn: PhantomData,
            };
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
        // prepared, and `null` has an entry for each. The text bound
        // SQLITE_STATIC is borrowed from `chunk`, which outlives this call;
        // every parameter not NULL now is bound before the statement runs,
        // so it never reads text bound by an earlier call.
        unsafe {
            let mut bind = Binder {
                stmt: self.stmt,
                null: &mut self.null,
                rc: ffi::SQLITE_OK,
                at: 0,
            };
            for (((line, row), session_no), n) in chunk.iter().zip(sessions).zip(0..) {
                let flag = |b: Option<bool>| b.map(i64::from);
                if let Some(first) = first_id {
                    bind.int(Some(first + n));
                }
                bind.int(Some(journal_id));
                bind.int(Some(*line as i64));
                bind.int(Some(row.schema));
                bind.text(row.event_id);
                bind.text(Some(row.session));
                bind.int(Some(row.seq));
                bind.text(Some(row.origin));
                bind.text(row.transport);
                bind.text(Some(row.server));
                bind.text(Some(row.tool));
                bind.text(Some(row.started_at));
                bind.int(row.duration_ms);
                bind.int(flag(row.advertised));
                bind.text(Some(row.args_shape));
                bind.text(Some(row.outcome));
                bind.text(row.unknown);
                bind.text(row.channel);
                bind.int(row.code);
                bind.text(row.template_id);
                bind.int(flag(row.retryable));
                bind.int(flag(row.contract_kept));
                bind.text(row.contract_at);
                bind.text(row.contract_keyword);
                bind.int(Some(*session_no));
            }
            let mut rc = bind.rc;
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
            result
        }
    }
}

/// Binds the parameters of one run in order, stopping at the first
/// failure (`rc`). Made only by [`Many::insert`], from its own statement,
/// which is live while the binder is; a parameter number out of range is
/// SQLite's `SQLITE_RANGE`, never a read out of bounds.
struct Binder<'b> {
    stmt: *mut ffi::sqlite3_stmt,
    null: &'b mut [bool],
    rc: c_int,
    /// The last parameter bound (they count from 1).
    at: c_int,
}

impl Binder<'_> {
    /// The next parameter: `value`, or NULL.
    fn int(&mut self, value: Option<i64>) {
        self.at += 1;
        match value {
            // SAFETY: the statement is live (see the type).
            Some(v) => self.set(|s, i| unsafe { ffi::sqlite3_bind_int64(s, i, v) }),
            None => self.no_value(),
        }
    }

    /// The next parameter: `value`, bound without a copy, or NULL.
    ///
    /// # Safety
    /// `value` stays valid until the statement's next run is over.
    unsafe fn text(&mut self, value: Option<&str>) {
        self.at += 1;
        match value {
            // SAFETY: the statement is live (see the type) and `value`
            // outlives its run, as the caller promises. A line is at most
            // MAX_LINE bytes, far below c_int's range.
            Some(v) => self.set(|s, i| unsafe {
                ffi::sqlite3_bind_text(
                    s,
                    i,
                    v.as_ptr().cast(),
                    v.len() as c_int,
                    ffi::SQLITE_STATIC(),
                )
            }),
            None => self.no_value(),
        }
    }

    /// Binds a value with `bind` unless an earlier one failed.
    fn set(&mut self, bind: impl FnOnce(*mut ffi::sqlite3_stmt, c_int) -> c_int) {
        if self.rc == ffi::SQLITE_OK {
            self.rc = bind(self.stmt, self.at);
            self.null[self.at as usize] = false;
        }
    }

    /// NULL, unless the parameter is NULL already.
    fn no_value(&mut self) {
        let i = self.at as usize;
        if self.rc == ffi::SQLITE_OK && !self.null[i] {
            // SAFETY: the statement is live (see the type).
            self.rc = unsafe { ffi::sqlite3_bind_null(self.stmt, self.at) };
            self.null[i] = self.rc == ffi::SQLITE_OK;
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
