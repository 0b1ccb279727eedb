//! The stdio byte relay: client stdin → server stdin, server stdout →
//! client stdout.
//!
//! Each direction is one thread doing `read` → `write_all` with no user-space
//! buffering, so a message reaches the other side as soon as its bytes do.
//! Complete lines are copied to the observer over a channel; the relay never
//! parses, re-serializes or waits for the observer.

use std::io::{ErrorKind, Read, Write};
use std::sync::mpsc::Sender;
use std::time::Instant;

use jiff::Timestamp;

use crate::session::Side;

/// A line longer than this is relayed but not observed (counted as unparsed).
const MAX_OBSERVED_LINE: usize = 64 * 1024 * 1024;

/// What a relay thread tells the observer.
#[derive(Debug)]
pub enum Event {
    /// One complete line (without its newline) and when it was read.
    Line {
        side: Side,
        bytes: Vec<u8>,
        at: Timestamp,
        now: Instant,
    },
    /// A line too long to observe.
    Skipped,
    /// The side's stream ended.
    Closed(Side),
}

/// Copies `from` to `to` until end of input, handing complete lines to the
/// observer. Both directions hand a chunk's lines over *before* forwarding
/// it: a peer can only react to bytes it has received, so the observer sees
/// messages in causal order (a request before its response, a `tools/list`
/// result before the call it informed). The hand-over is a copy and a
/// channel send, a microsecond or so; parsing happens on the observer.
///
/// When `to` fails (the reader went away) the relay keeps draining `from`,
/// so the writer on the other end is never blocked by a dead reader.
pub fn pump(side: Side, mut from: impl Read, mut to: impl Write, events: &Sender<Event>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut overflow = false;
    let mut sink = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let (at, now) = (Timestamp::now(), Instant::now());
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            if overflow {
                overflow = false;
                let _ = events.send(Event::Skipped);
            } else {
                line.extend_from_slice(&rest[..pos]);
                let bytes = std::mem::take(&mut line);
                let _ = events.send(Event::Line {
                    side,
                    bytes,
                    at,
                    now,
                });
            }
            rest = &rest[pos + 1..];
        }
        if !overflow && line.len() + rest.len() > MAX_OBSERVED_LINE {
            overflow = true;
            line = Vec::new();
        }
        if !overflow {
            line.extend_from_slice(rest);
        }
        if sink {
            sink = forward(&mut to, chunk);
            if !sink && side == Side::Client {
                // The server closed its input: nothing more can reach it.
                break;
            }
        }
    }
    if !line.is_empty() && !overflow {
        let _ = events.send(Event::Line {
            side,
            bytes: line,
            at: Timestamp::now(),
            now: Instant::now(),
        });
    }
    // Dropping `to` here closes the server's stdin after the client's EOF.
    drop(to);
    let _ = events.send(Event::Closed(side));
}

fn forward(to: &mut impl Write, chunk: &[u8]) -> bool {
    to.write_all(chunk).and_then(|()| to.flush()).is_ok()
}
