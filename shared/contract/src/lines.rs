//! Reading newline-delimited input with a bound on each line, in memory
//! that the bound sets, whatever the input holds.
//!
//! Journals, share envelopes and JSON-RPC streams come from elsewhere and
//! may hold a line of any length. A reader that collects a line before
//! measuring it holds all of it (a 300 MB line took 313 MB), so
//! [`BoundedLines`] reads in fixed chunks and measures a line while it is
//! read: a line within the bound is handed over whole, one over it only as
//! its length, its bytes dropped as they arrive. It must never grow its
//! buffer past `limit` plus one chunk.

use std::io::{self, ErrorKind, Read};

/// How much is read at once.
const CHUNK: usize = 64 * 1024;

/// One line, without its newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// A line of at most the bound's bytes.
    Complete(&'a [u8]),
    /// A line over the bound, by its length in bytes: its bytes were read
    /// and dropped.
    Oversized(u64),
}

/// Lines of a reader, each at most `limit` bytes held.
#[derive(Debug)]
pub struct BoundedLines<R> {
    inner: R,
    /// `limit` plus one chunk: a line within the bound and the next read
    /// always fit.
    buf: Box<[u8]>,
    /// `buf[start..end]` is read and not yet handed over.
    start: usize,
    end: usize,
    /// How much of `buf[start..end]` is known to hold no newline.
    scanned: usize,
    /// The length so far of an over-long line whose bytes are dropped.
    dropping: Option<u64>,
    limit: usize,
    /// Bytes of the lines handed over, newlines included.
    consumed: u64,
    /// Whether a last line without a newline is a line (a stream that
    /// ended), or an unfinished line left for later (a journal).
    last_line: bool,
    eof: bool,
}

impl<R: Read> BoundedLines<R> {
    /// Lines of `inner`, each handed over whole only when it is at most
    /// `limit` bytes long. A last line without a newline is not a line:
    /// a journal's writer may still be writing it.
    pub fn new(inner: R, limit: usize) -> BoundedLines<R> {
        BoundedLines {
            inner,
            buf: vec![0; limit + CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            scanned: 0,
            dropping: None,
            limit,
            consumed: 0,
            last_line: false,
            eof: false,
        }
    }

    /// The same, except that a last line without a newline counts as a
    /// line, as a stream that ended means it.
    pub fn with_last_line(mut self) -> BoundedLines<R> {
        self.last_line = true;
        self
    }

    /// Bytes of every line handed over so far, each newline included.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The next line; `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            let newline = memchr::memchr(b'\n', &self.buf[self.start + self.scanned..self.end])
                .map(|at| self.start + self.scanned + at);
            if let Some(newline) = newline {
                let (from, len) = (self.start, newline - self.start);
                self.start = newline + 1;
                self.scanned = 0;
                let line = match self.dropping.take() {
                    Some(dropped) => Line::Oversized(dropped + len as u64),
                    None if len > self.limit => Line::Oversized(len as u64),
                    None => Line::Complete(&self.buf[from..newline]),
                };
                self.consumed += match line {
                    Line::Oversized(n) => n + 1,
                    Line::Complete(_) => len as u64 + 1,
                };
                return Ok(Some(line));
            }
            self.scanned = self.end - self.start;
            if self.dropping.is_some() || self.scanned > self.limit {
                // Over the bound: keep its length, drop its bytes.
                *self.dropping.get_or_insert(0) += self.scanned as u64;
                (self.start, self.end, self.scanned) = (0, 0, 0);
            }
            if self.eof {
                return Ok(self.last());
            }
            self.buf.copy_within(self.start..self.end, 0);
            (self.end, self.start) = (self.end - self.start, 0);
            loop {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(0) => self.eof = true,
                    Ok(n) => self.end += n,
                    Err(err) if err.kind() == ErrorKind::Interrupted => continue,
                    Err(err) => return Err(err),
                }
                break;
            }
        }
    }

    /// At the end of the input: the last line without a newline, when it
    /// counts as one, handed over once.
    fn last(&mut self) -> Option<Line<'_>> {
        if !self.last_line {
            return None;
        }
        if let Some(dropped) = self.dropping.take() {
            self.consumed += dropped;
            return Some(Line::Oversized(dropped));
        }
        if self.end == self.start {
            return None;
        }
        let from = self.start;
        self.consumed += (self.end - from) as u64;
        (self.start, self.scanned) = (self.end, 0);
        Some(Line::Complete(&self.buf[from..self.end]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `input`, a complete one as its text, an oversized one
    /// as `#LEN`.
    fn lines(input: &[u8], limit: usize, last_line: bool) -> (Vec<String>, u64) {
        let mut reader = BoundedLines::new(input, limit);
        if last_line {
            reader = reader.with_last_line();
        }
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push(match line {
                Line::Complete(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                Line::Oversized(len) => format!("#{len}"),
            });
        }
        (out, reader.consumed())
    }

    #[test]
    fn lines_within_the_bound_are_handed_over_whole() {
        assert_eq!(
            lines(b"a\n\nbb\ncc", 4, false),
            (vec!["a".into(), "".into(), "bb".into()], 6)
        );
        assert_eq!(
            lines(b"a\n\nbb\ncc", 4, true),
            (vec!["a".into(), "".into(), "bb".into(), "cc".into()], 8)
        );
        assert_eq!(lines(b"", 4, true), (vec![], 0));
        assert_eq!(
            lines(b"abcd\nabcde\n", 4, false),
            (vec!["abcd".into(), "#5".into()], 11)
        );
    }

    #[test]
    fn a_line_over_the_bound_is_measured_across_many_chunks_and_never_held() {
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10 * CHUNK + 7));
        input.extend_from_slice(b"\nafter\n");
        let mut reader = BoundedLines::new(&input[..], 100);
        assert_eq!(reader.next_line().unwrap(), Some(Line::Complete(b"ok")));
        assert_eq!(
            reader.next_line().unwrap(),
            Some(Line::Oversized(10 * CHUNK as u64 + 7))
        );
        assert_eq!(reader.next_line().unwrap(), Some(Line::Complete(b"after")));
        assert_eq!(reader.next_line().unwrap(), None);
        assert_eq!(reader.consumed(), input.len() as u64);
        assert_eq!(reader.buf.len(), 100 + CHUNK);
        // Unfinished, it is no line; at the end of a stream, it is one.
        input.truncate(input.len() - 7);
        assert_eq!(lines(&input, 100, false).0, ["ok"]);
        assert_eq!(
            lines(&input, 100, true).0,
            ["ok".to_owned(), format!("#{}", 10 * CHUNK + 7)]
        );
    }

    #[test]
    fn the_bound_is_exact() {
        let mut edge = vec![b'x'; CHUNK + 3];
        edge.push(b'\n');
        assert_eq!(
            lines(&edge, CHUNK + 3, false).0,
            [String::from_utf8(edge[..CHUNK + 3].to_vec()).unwrap()]
        );
        assert_eq!(
            lines(&edge, CHUNK + 2, false).0,
            [format!("#{}", CHUNK + 3)]
        );
    }
}
