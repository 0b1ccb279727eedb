//! Reading a journal as complete lines, hashing exactly the bytes consumed.
//!
//! A line counts only once its newline has been read; an unfinished last
//! line is left for a later run and is neither visited nor hashed. Memory
//! is one fixed buffer, whatever the file or line size: an over-long line
//! is measured, never held.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::Digest;
use shared::error::{Error, Result};
use shared::hash::Hasher;
use shared::record::MAX_LINE;

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
}

impl Lines {
    pub fn new(progress: Progress) -> Lines {
        const { assert!(BUFFER > MAX_LINE + 1) };
        Lines {
            buf: vec![0; BUFFER].into_boxed_slice(),
            progress,
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
        hasher: &mut Hasher,
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
            hasher.update(&self.buf[..start]);
            consumed += start as u64;
            let tail = end - start;
            if tail > MAX_LINE {
                skipped = tail as u64;
                pending = 0;
            } else {
                self.buf.copy_within(start..end, 0);
                pending = tail;
            }
        }
        Ok(Consumed {
            bytes: consumed,
            lines: number - first,
        })
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
        assert_eq!(hash, shared::hash::sha256(b"a\nbb\n"));
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
        assert_eq!(hash, shared::hash::sha256(&bytes));
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
