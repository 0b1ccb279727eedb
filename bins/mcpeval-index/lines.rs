//! Reading a journal as complete lines, hashing exactly the bytes consumed.
//!
//! A line counts only once its newline has been read; an unfinished last
//! line is left for a later run and is neither visited nor hashed. Memory
//! is one fixed buffer, whatever the file or line size: an over-long line
//! is measured, never held.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;

use sha2::Digest;
use shared::error::{Error, Result};
use shared::record::MAX_LINE;
use store::hash::Hasher;

use crate::progress::Progress;

/// Read size; large reads keep hashing and parsing near memory speed.
const BUFFER: usize = 1 << 20;

/// What one read consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumed {
    /// Bytes, up to and including the last newline.
    pub bytes: u64,
    /// Complete lines.
    pub lines: u64,
}

/// A reusable read buffer, and the progress of everything read through it.
pub struct Lines {
    buf: Box<[u8]>,
    pub progress: Progress,
    /// Set once nobody waits for this reading any more: hashing then
    /// stops with an error instead of reading on.
    pub abandoned: Option<Arc<AtomicBool>>,
}

impl Lines {
    pub fn new(progress: Progress) -> Lines {
        const { assert!(BUFFER > MAX_LINE + 1) };
        Lines {
            buf: vec![0; BUFFER].into_boxed_slice(),
            progress,
            abandoned: None,
        }
    }

    /// Feeds exactly `len` bytes of `file`, from its position, to each of
    /// `hashers`. A file that ends early is an `UnexpectedEof` error.
    pub fn hash(
        &mut self,
        file: &mut File,
        len: u64,
        hashers: &mut [&mut Hasher],
    ) -> io::Result<()> {
        let mut left = len;
        while left > 0 {
            if self
                .abandoned
                .as_ref()
                .is_some_and(|a| a.load(Ordering::Relaxed))
            {
                return Err(io::Error::other("abandoned: nobody waits for this hash"));
            }
            let want = left.min(self.buf.len() as u64) as usize;
            let n = read(file, &mut self.buf[..want])?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            for hasher in hashers.iter_mut() {
                hasher.update(&self.buf[..n]);
            }
            left -= n as u64;
            self.progress.advance(n as u64);
        }
        Ok(())
    }

    /// Reads at most `limit` bytes of `file` from its position and calls
    /// `visit(number, bytes)` for each complete line (without its newline),
    /// numbering from `first`. Consumed bytes go to `hasher`. A complete
    /// line over [`MAX_LINE`] bytes is rejected without being visited.
    pub fn read(
        &mut self,
        file: &mut File,
        path: &Path,
        limit: u64,
        first: u64,
        hasher: &mut impl Sink,
        mut visit: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<Consumed> {
        let mut left = limit;
        let mut number = first;
        let mut consumed = 0u64;
        // buf[..pending] holds the start of an unfinished line; once that
        // line is over the limit, only its length (`skipped`) is kept.
        let mut pending = 0usize;
        let mut skipped = 0u64;
        while left > 0 {
            let want = left.min((self.buf.len() - pending) as u64) as usize;
            let n = read(file, &mut self.buf[pending..pending + want])
                .map_err(|e| Error::io(format_args!("cannot read {}", path.display()), e))?;
            if n == 0 {
                break;
            }
            left -= n as u64;
            self.progress.advance(n as u64);
            let end = pending + n;
            if skipped > 0 {
                if let Some(at) = memchr::memchr(b'\n', &self.buf[..end]) {
                    return Err(oversized(path, number, skipped + at as u64));
                }
                skipped += n as u64;
                continue;
            }
            let mut start = 0;
            for at in memchr::memchr_iter(b'\n', &self.buf[pending..end]) {
                let newline = pending + at;
                let line = &self.buf[start..newline];
                if line.len() > MAX_LINE {
                    return Err(oversized(path, number, line.len() as u64));
                }
                visit(number, line)?;
                number += 1;
                start = newline + 1;
            }
            consumed += start as u64;
            let tail = end - start;
            if tail > MAX_LINE {
                hasher.consume(&mut self.buf, start, start);
                skipped = tail as u64;
                pending = 0;
            } else {
                hasher.consume(&mut self.buf, start, end);
                pending = tail;
            }
        }
        Ok(Consumed {
            bytes: consumed,
            lines: number - first,
        })
    }
}

/// Where the bytes a read consumed go.
pub trait Sink {
    /// Takes `buf[..consumed]`, the bytes of complete lines, and leaves
    /// `buf[consumed..keep]`, the start of an unfinished line, at the start
    /// of `buf` (which it may replace with a buffer of the same size).
    fn consume(&mut self, buf: &mut Box<[u8]>, consumed: usize, keep: usize);
}

impl Sink for Hasher {
    fn consume(&mut self, buf: &mut Box<[u8]>, consumed: usize, keep: usize) {
        self.update(&buf[..consumed]);
        buf.copy_within(consumed..keep, 0);
    }
}

/// Buffers taken by a [`Hashing`] thread at once, besides the one read into.
const HASHING: usize = 3;

/// Hashes consumed bytes on a thread of its own: the reading thread hands
/// over each buffer it is done with whole and reads on into another, so
/// hashing costs it one copy of an unfinished line, as before.
pub struct Hashing {
    full: Option<mpsc::SyncSender<(Box<[u8]>, usize)>>,
    empty: mpsc::Receiver<Box<[u8]>>,
    /// Buffers made so far, the one read into excluded.
    made: usize,
    thread: Option<thread::JoinHandle<Hasher>>,
}

impl Hashing {
    /// Carries on from `hasher`.
    pub fn start(mut hasher: Hasher) -> Hashing {
        let (full, filled) = mpsc::sync_channel::<(Box<[u8]>, usize)>(HASHING);
        let (emptied, empty) = mpsc::sync_channel(HASHING + 1);
        let thread = thread::spawn(move || {
            for (buf, len) in filled {
                hasher.update(&buf[..len]);
                // The reader may be gone after an error of its own.
                let _ = emptied.send(buf);
            }
            hasher
        });
        Hashing {
            full: Some(full),
            empty,
            made: 0,
            thread: Some(thread),
        }
    }

    /// The hash state after every byte consumed.
    pub fn finish(mut self) -> Hasher {
        self.full = None;
        let thread = self.thread.take().expect("joined once");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Sink for Hashing {
    fn consume(&mut self, buf: &mut Box<[u8]>, consumed: usize, keep: usize) {
        if consumed == 0 {
            buf.copy_within(consumed..keep, 0);
            return;
        }
        let mut next = match self.empty.try_recv() {
            Ok(next) => next,
            Err(_) if self.made < HASHING => {
                self.made += 1;
                vec![0; buf.len()].into_boxed_slice()
            }
            Err(_) => self
                .empty
                .recv()
                .expect("the hashing thread runs until finished"),
        };
        next[..keep - consumed].copy_from_slice(&buf[consumed..keep]);
        std::mem::swap(buf, &mut next);
        self.full
            .as_ref()
            .expect("sending until finished")
            .send((next, consumed))
            .expect("the hashing thread runs until finished");
    }
}

impl Drop for Hashing {
    fn drop(&mut self) {
        self.full = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `read`, retried when a signal interrupts it.
fn read(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The error for a complete line that is not an acceptable record: the
/// whole run is rejected and `index.db` keeps its previous state.
pub fn rejected(path: &Path, line: u64, reason: impl std::fmt::Display) -> Error {
    Error::rejected(format!("{}:{line}: {reason}", path.display())).with_hint(
        "index.db was left unchanged; repair that line (or move the journal out of journals/), then run `mcpeval index` again",
    )
}

fn oversized(path: &Path, line: u64, len: u64) -> Error {
    rejected(
        path,
        line,
        format_args!("oversized record: the line is {len} bytes, over the limit of {MAX_LINE}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    type Seen = Vec<(u64, Vec<u8>)>;

    fn lines_of(bytes: &[u8], limit: u64) -> (Result<Consumed>, Seen, [u8; 32]) {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.rewind().unwrap();
        let mut seen = Vec::new();
        let mut hasher = Hasher::new();
        let got = Lines::new(Progress::new()).read(
            &mut file,
            Path::new("j.jsonl"),
            limit,
            1,
            &mut hasher,
            |n, line| {
                seen.push((n, line.to_vec()));
                Ok(())
            },
        );
        (got, seen, hasher.finalize().into())
    }

    #[test]
    fn leaves_an_unfinished_line_unhashed() {
        let (got, seen, hash) = lines_of(b"a\nbb\ncc", 100);
        assert_eq!(got.unwrap(), Consumed { bytes: 5, lines: 2 });
        assert_eq!(seen, vec![(1, b"a".to_vec()), (2, b"bb".to_vec())]);
        assert_eq!(hash, store::hash::sha256(b"a\nbb\n"));
    }

    #[test]
    fn stops_at_the_limit() {
        let (got, seen, _) = lines_of(b"a\nbb\ncc\n", 4);
        assert_eq!(got.unwrap(), Consumed { bytes: 2, lines: 1 });
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn lines_across_buffer_boundaries() {
        let line = vec![b'x'; 1000];
        let mut bytes = Vec::new();
        for _ in 0..3000 {
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
        let (got, seen, hash) = lines_of(&bytes, u64::MAX);
        assert_eq!(
            got.unwrap(),
            Consumed {
                bytes: bytes.len() as u64,
                lines: 3000
            }
        );
        assert!(seen.iter().all(|(_, l)| l.len() == 1000));
        assert_eq!(hash, store::hash::sha256(&bytes));
    }

    #[test]
    fn an_abandoned_hash_stops_reading() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![b'x'; 3 * BUFFER]).unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let mut lines = Lines::new(Progress::new());
        lines.abandoned = Some(Arc::clone(&flag));
        let mut hasher = Hasher::new();
        file.rewind().unwrap();
        lines
            .hash(&mut file, 3 * BUFFER as u64, &mut [&mut hasher])
            .unwrap();
        flag.store(true, Ordering::Relaxed);
        file.rewind().unwrap();
        let err = lines
            .hash(&mut file, 3 * BUFFER as u64, &mut [&mut hasher])
            .unwrap_err();
        assert!(err.to_string().contains("abandoned"), "{err}");
        assert_eq!(file.stream_position().unwrap(), 0, "read after abandoning");
    }

    #[test]
    fn hashing_on_a_thread_sees_exactly_the_bytes_consumed() {
        let mut bytes = Vec::new();
        for i in 0..40_000u32 {
            bytes.extend(std::iter::repeat_n(
                b'a' + (i % 26) as u8,
                50 + (i % 700) as usize,
            ));
            bytes.push(b'\n');
        }
        let whole = bytes.len();
        bytes.extend_from_slice(b"unfinished");
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        file.rewind().unwrap();
        let mut prefix = Hasher::new();
        prefix.update(b"before\n");
        let mut hashing = Hashing::start(prefix);
        let mut seen = 0u64;
        let got = Lines::new(Progress::new())
            .read(
                &mut file,
                Path::new("j.jsonl"),
                u64::MAX,
                2,
                &mut hashing,
                |n, line| {
                    seen += 1;
                    assert_eq!(n, seen + 1);
                    assert!(line.iter().all(|b| *b == line[0]));
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(
            got,
            Consumed {
                bytes: whole as u64,
                lines: 40_000
            }
        );
        let mut expected = b"before\n".to_vec();
        expected.extend_from_slice(&bytes[..whole]);
        let hash: [u8; 32] = hashing.finish().finalize().into();
        assert_eq!(hash, store::hash::sha256(&expected));
    }

    #[test]
    fn rejects_oversized_lines_without_holding_them() {
        let mut bytes = b"ok\n".to_vec();
        bytes.extend(vec![b'x'; 3 * BUFFER]);
        let (unfinished, _, _) = lines_of(&bytes, u64::MAX);
        assert_eq!(unfinished.unwrap(), Consumed { bytes: 3, lines: 1 });
        bytes.push(b'\n');
        let (done, _, _) = lines_of(&bytes, u64::MAX);
        let err = done.unwrap_err();
        assert_eq!(err.status(), shared::exit::REJECTED);
        assert!(
            err.message().starts_with(&format!(
                "j.jsonl:2: oversized record: the line is {} bytes",
                3 * BUFFER
            )),
            "{err}"
        );
        let mut edge = vec![b'x'; MAX_LINE];
        edge.push(b'\n');
        assert!(lines_of(&edge, u64::MAX).0.is_ok());
        edge.insert(0, b'x');
        assert!(lines_of(&edge, u64::MAX).0.is_err());
    }
}
