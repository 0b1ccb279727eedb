//! The stdio byte relay: client stdin → server stdin, server stdout →
//! client stdout.
//!
//! Each direction is one thread doing `read` → `write_all` with no user-space
//! buffering, so a message reaches the other side as soon as its bytes do.
//! A copy of every chunk read goes to the observer over a channel; the relay
//! never parses, re-serializes or waits for the observer. The observer cuts
//! the chunks into lines ([`Lines`]), off the relay's threads.

use std::io::{ErrorKind, Read, Write};
use std::sync::mpsc::Sender;
use std::time::Instant;

use jiff::Timestamp;

use crate::session::Side;

/// Bytes per read.
const BUFFER: usize = 64 * 1024;

/// A line longer than this is relayed but not observed (counted as unparsed).
const MAX_OBSERVED_LINE: usize = 64 * 1024 * 1024;

/// What a relay thread tells the observer.
#[derive(Debug)]
pub enum Event {
    /// Bytes read from one side, and when they were read.
    Chunk {
        side: Side,
        bytes: Vec<u8>,
        at: Timestamp,
        now: Instant,
    },
    /// The side's stream ended.
    Closed(Side),
}

/// Copies `from` to `to` until end of input, handing each chunk to the
/// observer. Both directions hand a chunk over *before* forwarding it: a
/// peer can only react to bytes it has received, so the observer sees
/// messages in causal order (a request before its response, a `tools/list`
/// result before the call it informed). The hand-over is one copy and one
/// channel send per read, however many lines the chunk holds: a few
/// microseconds for a large read, nothing per message.
///
/// When `to` fails (the reader went away) the relay keeps draining `from`,
/// so the writer on the other end is never blocked by a dead reader.
pub fn pump(side: Side, mut from: impl Read, mut to: impl Write, events: &Sender<Event>) {
    let mut buf = vec![0u8; BUFFER];
    let mut sink = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let _ = events.send(Event::Chunk {
            side,
            bytes: chunk.to_vec(),
            at: Timestamp::now(),
            now: Instant::now(),
        });
        if sink {
            sink = forward(&mut to, chunk);
            if !sink && side == Side::Client {
                // The server closed its input: nothing more can reach it.
                break;
            }
        }
    }
    // Dropping `to` here closes the server's stdin after the client's EOF.
    drop(to);
    let _ = events.send(Event::Closed(side));
}

fn forward(to: &mut impl Write, chunk: &[u8]) -> bool {
    to.write_all(chunk).and_then(|()| to.flush()).is_ok()
}

/// One side's chunks cut into complete lines, on the observer's thread.
#[derive(Debug, Default)]
pub struct Lines {
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
    /// The current line passed [`MAX_OBSERVED_LINE`]: it is dropped.
    overflow: bool,
    /// Lines dropped for their length.
    pub skipped: u64,
}

impl Lines {
    /// Calls `line` with each line `chunk` completes (without its newline).
    pub fn feed(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = chunk;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            if self.overflow {
                self.overflow = false;
                self.skipped += 1;
            } else if self.partial.is_empty() {
                line(&rest[..pos]);
            } else {
                self.partial.extend_from_slice(&rest[..pos]);
                line(&self.partial);
                self.partial.clear();
            }
            rest = &rest[pos + 1..];
        }
        if !self.overflow && self.partial.len() + rest.len() > MAX_OBSERVED_LINE {
            self.overflow = true;
            self.partial = Vec::new();
        }
        if !self.overflow {
            self.partial.extend_from_slice(rest);
        }
    }

    /// The unfinished last line of a stream that ended, if any.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let last = std::mem::take(&mut self.partial);
        (!last.is_empty() && !self.overflow).then_some(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Option<Vec<u8>>) {
        let mut splitter = Lines::default();
        let mut seen = Vec::new();
        for chunk in chunks {
            splitter.feed(chunk, |l| seen.push(l.to_vec()));
        }
        (seen, splitter.finish())
    }

    #[test]
    fn lines_span_chunks_and_the_last_waits_for_the_end() {
        let (seen, last) = lines(&[b"a\nb", b"c\n\nd", b"e"]);
        assert_eq!(seen, [b"a".to_vec(), b"bc".to_vec(), Vec::new()]);
        assert_eq!(last, Some(b"de".to_vec()));
        assert_eq!(lines(&[b"x\n"]).1, None);
    }
}
