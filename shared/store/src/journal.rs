//! Journal files: where they live, how they are named, how records are
//! appended.
//!
//! A journal is `journals/YYYYMMDDTHHMMSS.fffZ-<8 hex>.jsonl`, so the byte
//! order of names is creation order. Every reader of journals lists them
//! with [`files`], opens them with [`open`] and reads their lines with
//! [`lines`], so all of them share one set of bounds: a name that is not a
//! regular file (a FIFO would block a reader forever) is skipped with a
//! warning, and a line over [`MAX_LINE`] is measured, never held. Records are
//! whole lines, written together (one `write` per batch, never a line split
//! across two) on an `O_APPEND` file under a shared lock on
//! `journals/.lock`, so concurrent writers never interleave inside a line
//! and the index never sees a torn line it would take for complete. A writer rotates to a new file when its
//! file passes [`ROTATE_BYTES`] or the UTC day changes, so old files freeze.

use std::borrow::{Borrow, Cow};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::lock::LockFile;
use crate::record_line::ShapeJson;
use shared::error::{Error, IoContext, Result};
use shared::home::Home;
use shared::lines::BoundedLines;
use shared::record::{Call, MAX_LINE};
use shared::time;

/// A journal passing this size is frozen and a new one started.
pub const ROTATE_BYTES: u64 = 64 * 1024 * 1024;

/// Whether `name` is a journal file name (`…Z-xxxxxxxx.jsonl`).
pub fn is_journal_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    let b = stem.as_bytes();
    // 20261130T070000.123Z-0123abcd
    b.len() == 29
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'.'
        && b[16..19].iter().all(u8::is_ascii_digit)
        && b[19] == b'Z'
        && b[20] == b'-'
        && b[21..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// The journal files under `dir`, in byte order of their names. Other files
/// (the lock, editor backups) are not journals and are skipped, and so,
/// with a warning on stderr naming it, is a journal's name that is not a
/// regular file (a FIFO, a device, a directory; a symbolic link counts as
/// what it points to). Looking needs no open, so nothing here can block.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(Error::io(
                format_args!("cannot list {}", dir.display()),
                err,
            ));
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.context(format_args!("cannot list {}", dir.display()))?;
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str().filter(|n| is_journal_name(n)) else {
            continue;
        };
        match fs::metadata(entry.path()) {
            Ok(meta) if meta.is_file() => names.push(name.to_owned()),
            Ok(meta) => crate::warning::warning(format_args!(
                "skipped {}: it is {}, not a regular file; move it out of journals/",
                entry.path().display(),
                kind(&meta)
            )),
            // Removed since it was listed: it is no journal any more.
            Err(err) if err.kind() == ErrorKind::NotFound => {}
            Err(err) => crate::warning::warning(format_args!(
                "skipped {}: cannot look at it: {err}",
                entry.path().display()
            )),
        }
    }
    names.sort_unstable();
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

/// What a file that is not a regular file is, for a message.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_dir() {
        "a directory"
    } else {
        "something else"
    }
}

/// Opens a journal for reading, without ever blocking: `O_NONBLOCK` makes
/// opening a FIFO return at once, and the opened handle's own metadata is
/// what is checked, so a regular file swapped for something else after
/// [`files`] listed it is an error (`InvalidInput`), not a hang. (On a
/// regular file `O_NONBLOCK` changes nothing.)
pub fn open(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "it is {}, not a regular file; move it out of journals/",
                kind(&meta)
            ),
        ));
    }
    Ok(file)
}

/// The lines of a journal, each at most [`MAX_LINE`] bytes held; a longer
/// one comes as its length alone ([`shared::lines::Line::Oversized`]), and
/// an unfinished last line is left for a later read.
pub fn lines<R: io::Read>(reader: R) -> BoundedLines<R> {
    BoundedLines::new(reader, MAX_LINE)
}

/// Tool and server names are cut to this many bytes in a record that would
/// otherwise be oversized.
const MAX_NAME: usize = 1024;

/// One record as the journal line capture writes (newline included): never
/// over [`MAX_LINE`], so the index can always read it.
pub fn encode<S: ShapeJson>(call: &Call<'_, S>) -> Vec<u8> {
    let mut line = Vec::with_capacity(1024);
    encode_into(call, &mut line);
    line
}

/// Appends `call`'s journal line (newline included) to `out`.
fn encode_into<S: ShapeJson>(call: &Call<'_, S>, out: &mut Vec<u8>) {
    let start = out.len();
    crate::record_line::write(call, out);
    if out.len() - start > MAX_LINE {
        // A huge argument object, or a client or server sending names
        // tens of kilobytes long: keep the record readable by the index
        // rather than lose the call or stop the index at this line.
        out.truncate(start);
        let cut = |name: &str| crate::sanitize::truncate(name, MAX_NAME).to_owned();
        let slim: Call<'_, &str> = Call {
            schema: Cow::Borrowed(&call.schema),
            identity: call.identity.clone(),
            origin: call.origin,
            transport: call.transport,
            server: cut(&call.server).into(),
            tool: cut(&call.tool).into(),
            started_at: Cow::Borrowed(&call.started_at),
            duration_ms: call.duration_ms,
            advertised: call.advertised,
            args_shape: "object",
            outcome: call.outcome,
            unknown: call.unknown,
            error: call.error.clone(),
            contract: call.contract.clone(),
        };
        crate::record_line::write(&slim, out);
    }
    out.push(b'\n');
}

/// Records gathered into one `write` once they pass this many bytes.
const BATCH: usize = 64 * 1024;

/// Appends records to this process's journal, rotating as needed.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    lock: LockFile,
    current: Option<Current>,
    /// Whole lines encoded but not yet written.
    batch: Vec<u8>,
}

#[derive(Debug)]
struct Current {
    file: File,
    path: PathBuf,
    len: u64,
    day: String,
}

impl Writer {
    /// A writer for the store's journals; the first file is created with
    /// the first record, so a session without tool calls leaves no file.
    pub fn new(home: &Home) -> Result<Writer> {
        // A team view's journals are rebuilt from the database; new
        // records go to the store's own.
        let home = &home.own();
        crate::dir::ensure(home)?;
        Ok(Writer {
            dir: home.journals().into_std_path_buf(),
            lock: LockFile::open(home.journal_lock().as_std_path())?,
            current: None,
            batch: Vec::with_capacity(BATCH + 1024),
        })
    }

    /// Appends one record as one whole line.
    pub fn append<S: ShapeJson>(&mut self, call: &Call<'_, S>) -> Result<()> {
        match self.append_all(std::slice::from_ref(call)) {
            (_, Some(err)) => Err(err),
            (_, None) => Ok(()),
        }
    }

    /// Appends records as whole lines, taking the lock once for all of
    /// them and writing them together: one `write` per 64 KiB of lines,
    /// never a line split across two, so concurrent writers never
    /// interleave inside a line (on a busy session one system call for
    /// hundreds of records, where a `write` each cost more than the rest of
    /// journaling). Every record is written before this returns. Stops at
    /// the first failure; returns how many were appended, and the failure.
    /// The records may be references or records made as they are read
    /// (capture's completed calls, each borrowing its texts), so none need
    /// be gathered first.
    pub fn append_all<'c, S, C>(
        &mut self,
        calls: impl IntoIterator<Item = C>,
    ) -> (usize, Option<Error>)
    where
        S: ShapeJson + 'c,
        C: Borrow<Call<'c, S>>,
    {
        let mut calls = calls.into_iter().peekable();
        if calls.peek().is_none() {
            return (0, None);
        }
        let _guard = match self.lock.shared() {
            Ok(guard) => guard,
            Err(err) => return (0, Some(err)),
        };
        let now = jiff::Timestamp::now();
        let day = time::utc_day(now);
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        // Records written, and records in `batch`.
        let (mut done, mut held) = (0, 0);
        let mut outcome = None;
        for call in calls {
            let start = batch.len();
            encode_into(call.borrow(), &mut batch);
            let rotate = match &self.current {
                None => true,
                Some(cur) => cur.day != day || cur.len + batch.len() as u64 > ROTATE_BYTES,
            };
            if rotate {
                // The lines before this one go to the file they were meant
                // for; this one starts the next file.
                if let Err(err) = write(&mut self.current, &batch[..start]) {
                    outcome = Some(err);
                    break;
                }
                done += held;
                batch.drain(..start);
                held = 0;
                match create(&self.dir, now, day.clone()) {
                    Ok(file) => self.current = Some(file),
                    Err(err) => {
                        outcome = Some(err);
                        break;
                    }
                }
            }
            held += 1;
            if batch.len() >= BATCH {
                if let Err(err) = write(&mut self.current, &batch) {
                    outcome = Some(err);
                    break;
                }
                done += held;
                held = 0;
                batch.clear();
            }
        }
        if outcome.is_none() && held > 0 {
            match write(&mut self.current, &batch) {
                Ok(()) => done += held,
                Err(err) => outcome = Some(err),
            }
        }
        // The buffer is kept for the next records, unless one huge batch
        // grew it.
        if batch.capacity() <= 4 * BATCH {
            self.batch = batch;
        }
        (done, outcome)
    }

    /// The file records currently go to, once one exists.
    pub fn path(&self) -> Option<&Path> {
        self.current.as_ref().map(|c| c.path.as_path())
    }
}

/// Writes whole lines to the current file with one `write`; the caller
/// holds the lock.
fn write(current: &mut Option<Current>, lines: &[u8]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let cur = current.as_mut().expect("journal open");
    cur.file
        .write_all(lines)
        .context(format_args!("cannot append to {}", cur.path.display()))?;
    cur.len += lines.len() as u64;
    Ok(())
}

/// A new journal file named for `now`.
fn create(dir: &Path, now: jiff::Timestamp, day: String) -> Result<Current> {
    let stamp = time::file_stamp(now);
    loop {
        let tag = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let path = dir.join(format!("{stamp}-{tag}.jsonl"));
        match OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                return Ok(Current {
                    file,
                    path,
                    len: 0,
                    day,
                });
            }
            Err(err) if err.kind() == ErrorKind::AlreadyExists => continue,
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot create journal {}", path.display()),
                    err,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_names() {
        assert!(is_journal_name("20261130T070000.123Z-0123abcd.jsonl"));
        assert!(!is_journal_name("20261130T070000.123Z-0123ABCD.jsonl"));
        assert!(!is_journal_name(".lock"));
        assert!(!is_journal_name("20261130T070000.123Z-0123abcd.jsonl~"));
    }

    #[test]
    fn an_encoded_record_is_never_oversized() {
        let line = r#"{"schema":"mcpeval.call/1","identity":{"event_id":"6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b","session":"s-1a2b3c4d5e6f7a8b","seq":1},"origin":"capture","transport":"stdio","server":"w","tool":"t","started_at":"2026-11-30T07:00:00.123Z","duration_ms":1,"advertised":null,"args_shape":{},"outcome":"ok"}"#;
        let mut call: Call = serde_json::from_str(line).unwrap();
        assert_eq!(encode(&call), format!("{line}\n").into_bytes());
        // Found by fuzzing capture: names tens of kilobytes long (from a
        // client, or a server's serverInfo) made a line the index refuses.
        call.tool = "é".repeat(40_000).into();
        call.server = "\u{1}".repeat(40_000).into();
        let encoded = encode(&call);
        assert!(encoded.len() <= MAX_LINE + 1, "{}", encoded.len());
        let slim: Call = serde_json::from_slice(&encoded).unwrap();
        assert_eq!((slim.tool.len(), slim.server.len()), (1024, 1024));
        assert_eq!(slim.args_shape, "object");
    }
}
