//! A live session with a real MCP server, past its handshake, that answers
//! bursts of pipelined calls on demand.
//!
//! A real server's pace drifts with the machine's other work by several
//! percent from one second to the next, more than capture costs it. Two
//! sessions started one after the other, each timed once, see different
//! drifts, and over a handful of pairs the median of their ratios moved by
//! more than the target it was read against. So the real-server rows keep
//! one session direct and one through capture alive at once and let them
//! take turns (`main::pipelined_real`): each route's time is the sum of its
//! bursts, and the two routes meet the same drift.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout};
use std::time::{Duration, Instant};

use crate::measure;

/// What differs between the servers a session can talk to.
pub struct Protocol {
    /// The server, as the bench names it.
    pub name: &'static str,
    /// Writes the request line of call `id` into the cleared buffer.
    pub request: fn(&mut Vec<u8>, u64),
    /// Reads messages into the buffer until the next reply to a call;
    /// whether it is flagged (what `flagged` expects of its call).
    pub reply: fn(&mut BufReader<ChildStdout>, &mut Vec<u8>) -> bool,
    /// Whether the reply to call `id` must be flagged.
    pub flagged: fn(u64) -> bool,
}

/// A session past its handshake.
pub struct Live {
    child: Child,
    to: Option<ChildStdin>,
    from: BufReader<ChildStdout>,
    /// The id of the next call.
    next: u64,
    protocol: &'static Protocol,
}

impl Live {
    /// A session whose handshake is done, the next call to carry `next`.
    pub fn new(
        child: Child,
        to: ChildStdin,
        from: BufReader<ChildStdout>,
        next: u64,
        protocol: &'static Protocol,
    ) -> Live {
        Live {
            child,
            to: Some(to),
            from,
            next,
            protocol,
        }
    }

    /// Time from the first of `calls` pipelined calls, all written at once
    /// by a thread of their own, until every reply is in.
    pub fn burst(&mut self, calls: u64) -> Duration {
        let Protocol {
            name,
            request,
            reply,
            flagged,
        } = *self.protocol;
        let ids = self.next..self.next + calls;
        self.next = ids.end;
        let to = self.to.take().expect("the session's stdin");
        let started = Instant::now();
        let writer = std::thread::spawn({
            let ids = ids.clone();
            move || {
                let mut to = BufWriter::with_capacity(64 * 1024, to);
                let mut line = Vec::with_capacity(256);
                for id in ids {
                    line.clear();
                    request(&mut line, id);
                    to.write_all(&line).expect("request");
                }
                to.into_inner().expect("requests")
            }
        });
        let mut line = Vec::with_capacity(1024);
        let seen = (0..calls)
            .filter(|_| reply(&mut self.from, &mut line))
            .count();
        let replied = started.elapsed();
        self.to = Some(writer.join().expect("writer"));
        let expected = ids.filter(|&id| flagged(id)).count();
        assert_eq!(seen, expected, "flagged replies from {name}");
        replied
    }

    /// The CPU time the session's process has had so far, its own threads'
    /// (capture's, through capture).
    pub fn cpu(&self) -> Option<Duration> {
        measure::threads_cpu(self.child.id())
    }

    /// Ends the session by closing its input; the server (and capture
    /// with it) must exit with status 0.
    pub fn finish(mut self) {
        drop(self.to.take());
        let name = self.protocol.name;
        let (status, _) = measure::reap(self.child);
        assert_eq!(
            status, 0,
            "the {name} session exited with wait status {status}"
        );
    }
}

/// Reads one line into the cleared `line`; the server must not have closed.
pub fn read_line(from: &mut BufReader<ChildStdout>, line: &mut Vec<u8>, name: &str) {
    line.clear();
    let n = from.read_until(b'\n', line).expect("a message");
    assert!(n > 0, "{name} closed early");
}
