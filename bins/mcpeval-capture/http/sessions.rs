//! The observer of every HTTP session: one thread that owns the sessions
//! and the journal writer.
//!
//! Proxy tasks hand it copies of messages through an unbounded queue and go
//! on forwarding; they never wait for parsing or for the journal. Because
//! each message is queued before the bytes it came from are forwarded, the
//! queue's order is causal: a request is always seen before its response,
//! and a result before any request the client based on it. This thread
//! never touches the network, and its records hold no session id, header
//! or raw value.
//!
//! Clients choose session ids, so what the thread keeps is bounded: a
//! session is known by a digest of its id (an id may be kilobytes long),
//! and at most [`MAX_SESSIONS`] are tracked, holding at most
//! [`SESSIONS_BYTES`] together (each session bounds its own calls and
//! schemas, but thousands of them could still add up to gigabytes). A new
//! one beyond the count, or one that grows past the bytes, ends the least
//! recently active, exactly as its end would: its unanswered calls are
//! recorded with outcome unknown. The copies queued for this thread are
//! bounded by the observation budget they carry ([`crate::http::budget`]),
//! and so are the notes that end or rename a session, which carry what a
//! message's note costs; when the budget has no room such a note is not
//! queued but counted, and its session ends when evicted or at exit. What
//! was relayed unobserved, refused or turned away is counted where it
//! happens ([`Counts`]), never queued. So the queue is bounded however long
//! the thread is held up (a stalled journal write) and whatever clients
//! send meanwhile.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use bytes::Bytes;
use jiff::Timestamp;
use sha2::{Digest, Sha256};
use shared::record::Transport;
use store::journal::Writer;
use store::salt::Salt;

use crate::http::budget::{Budget, Charge, MESSAGE_OVERHEAD};
use crate::http::queue::Queue;
use crate::limits::{MAX_SESSIONS, SESSIONS_BYTES};
use crate::recent::Recent;
use crate::session::{self, Bounded, Done, Session, Side};

/// The longest client message queued without waking the observer: with
/// the queue's own count, what waits unseen holds at most 4 MiB of the
/// observation budget.
const QUIET_BYTES: usize = 64 * 1024;

/// What makes requests one session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// An `Mcp-Session-Id` the server issued (legacy era), by digest.
    McpSession([u8; 32]),
    /// The value of the `--session-header` request header (modern era), by
    /// digest.
    Header([u8; 32]),
    /// One client TCP connection, when nothing else names a session.
    Connection(u64),
}

impl Key {
    /// The session named by an `Mcp-Session-Id` value.
    pub fn mcp_session(id: &[u8]) -> Key {
        Key::McpSession(Sha256::digest(id).into())
    }

    /// The session named by a `--session-header` value.
    pub fn header(value: &[u8]) -> Key {
        Key::Header(Sha256::digest(value).into())
    }
}

/// A message for the observer thread.
#[derive(Debug)]
enum Note {
    Message {
        key: Key,
        side: Side,
        bytes: Bytes,
        at: Timestamp,
        now: Instant,
    },
    /// The upstream never got these request bytes.
    Retract {
        key: Key,
        bytes: Bytes,
    },
    /// `from`'s session continues as `to`.
    Adopt {
        from: Key,
        to: Key,
        _charge: Charge,
    },
    End {
        key: Key,
        _charge: Charge,
    },
    Shutdown,
}

/// What the proxy tasks count themselves: events that carry nothing to
/// observe, so they take no room in the queue.
#[derive(Debug, Default)]
struct Counts {
    /// Bodies capture could not read (compressed).
    unobserved: AtomicU64,
    /// Messages longer than capture observes.
    oversized: AtomicU64,
    /// Messages the observation budget had no room for.
    over_budget: AtomicU64,
    /// Requests refused before they reached the upstream.
    refused: AtomicU64,
    /// Connections turned away beyond the connection cap.
    turned_away: AtomicU64,
    /// Session ends and new session ids not queued: no budget.
    unnoted: AtomicU64,
}

impl Counts {
    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds the counts to `tally`. Called after the shutdown note was
    /// taken: every count was made before that note was queued, and the
    /// queue's lock orders the two.
    fn settle(&self, tally: &mut Tally) {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        tally.unparsed += read(&self.unobserved);
        tally.oversized += read(&self.oversized);
        tally.over_budget += read(&self.over_budget);
        tally.refused += read(&self.refused);
        tally.turned_away += read(&self.turned_away);
        tally.unnoted += read(&self.unnoted);
    }
}

/// The sending side, cloned into every proxy task.
#[derive(Debug, Clone)]
pub struct Observer {
    queue: Arc<Queue<Note>>,
    counts: Arc<Counts>,
    budget: Budget,
}

/// What the observer did, for the closing summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub journaled: u64,
    pub unparsed: u64,
    /// Messages longer than the observation limit.
    pub oversized: u64,
    /// Messages relayed unobserved for want of observation budget.
    pub over_budget: u64,
    /// Sessions ended early to stay within [`MAX_SESSIONS`] and
    /// [`SESSIONS_BYTES`].
    pub evicted: u64,
    /// Requests refused for their `Host` or `Origin`.
    pub refused: u64,
    /// Connections turned away with 503 beyond the connection cap.
    pub turned_away: u64,
    /// Session ends and new session ids that found no room in the
    /// observation budget: those sessions ended when evicted or at exit.
    pub unnoted: u64,
    /// What the sessions gave up to stay within their bounds.
    pub bounded: Bounded,
    pub journal: Option<PathBuf>,
}

impl Observer {
    /// Starts the observer thread. `fixed` is `--server`; `fallback` names
    /// the server when neither the flag nor the server does. `budget` is
    /// the one the proxy charges its copies to.
    pub fn start(
        salt: Salt,
        writer: Writer,
        fixed: Option<String>,
        fallback: String,
        budget: Budget,
    ) -> (Observer, JoinHandle<Tally>) {
        let queue = Arc::new(Queue::new());
        let counts = Arc::new(Counts::default());
        let state = State {
            salt,
            writer,
            fixed,
            fallback,
            sessions: Recent::new(MAX_SESSIONS),
            bytes: 0,
            tally: Tally::default(),
            failed_write: false,
        };
        let handle = {
            let queue = queue.clone();
            let counts = counts.clone();
            std::thread::spawn(move || state.run(&queue, &counts))
        };
        let observer = Observer {
            queue,
            counts,
            budget,
        };
        (observer, handle)
    }

    /// One JSON-RPC message (or batch) seen in `key`'s session. A short
    /// message of a client's waits without waking the thread until the
    /// answer is over ([`Observer::wake`]) or a later note wakes it; a long
    /// one wakes it, so that the budget its copy holds comes back soon.
    pub fn message(&self, key: &Key, side: Side, bytes: Bytes, at: Timestamp, now: Instant) {
        let wake = side == Side::Server || bytes.len() > QUIET_BYTES;
        let note = Note::Message {
            key: key.clone(),
            side,
            bytes,
            at,
            now,
        };
        self.queue.push(note, wake);
    }

    /// Wakes the thread for what waits in its queue; called when the
    /// answer to a request is over, whether or not it held a message.
    pub fn wake(&self) {
        self.queue.wake();
    }

    fn send(&self, note: Note) {
        self.queue.push(note, true);
    }

    /// What a note that holds no message pays while it waits, as a
    /// message's does; none, and the note is counted instead of queued,
    /// when the budget has no room.
    fn charge(&self) -> Option<Charge> {
        let charge = self.budget.take(MESSAGE_OVERHEAD);
        if charge.is_none() {
            Counts::add(&self.counts.unnoted);
        }
        charge
    }

    /// Takes back a request observed in `key`'s session that the upstream
    /// never received: its calls are forgotten, never recorded.
    pub fn retract(&self, key: &Key, bytes: Bytes) {
        self.send(Note::Retract {
            key: key.clone(),
            bytes,
        });
    }

    /// Moves the session observed as `from` to `to` (a session id the
    /// server issued), unless `to` already has one.
    pub fn adopt(&self, from: Key, to: Key) {
        if let Some(charge) = self.charge() {
            self.send(Note::Adopt {
                from,
                to,
                _charge: charge,
            });
        }
    }

    /// A body that was relayed but could not be observed.
    pub fn unobserved(&self) {
        Counts::add(&self.counts.unobserved);
    }

    /// A message that was relayed but was too long to observe.
    pub fn oversized(&self) {
        Counts::add(&self.counts.oversized);
    }

    /// A message that was relayed unobserved: the observation budget was
    /// in use.
    pub fn over_budget(&self) {
        Counts::add(&self.counts.over_budget);
    }

    /// A connection turned away with 503: too many were open.
    pub fn turned_away(&self) {
        Counts::add(&self.counts.turned_away);
    }

    /// A request that was refused, never relayed.
    pub fn refused(&self) {
        Counts::add(&self.counts.refused);
    }

    /// Ends `key`'s session: its unanswered calls are recorded now.
    pub fn end(&self, key: Key) {
        if let Some(charge) = self.charge() {
            self.send(Note::End {
                key,
                _charge: charge,
            });
        }
    }

    /// Ends every session; the thread then returns its tally.
    pub fn shutdown(&self) {
        self.send(Note::Shutdown);
    }
}

struct State {
    salt: Salt,
    writer: Writer,
    fixed: Option<String>,
    fallback: String,
    sessions: Recent<Key, Session>,
    /// What `sessions` hold together ([`Session::bytes`]).
    bytes: usize,
    tally: Tally,
    failed_write: bool,
}

impl State {
    fn run(mut self, queue: &Queue<Note>, counts: &Counts) -> Tally {
        'notes: loop {
            for note in queue.take() {
                match note {
                    Note::Message {
                        key,
                        side,
                        bytes,
                        at,
                        now,
                    } => {
                        let session = self.session(key);
                        let before = session.bytes();
                        let calls = session.observe(side, &bytes, at, now);
                        let after = session.bytes();
                        // The copy's budget is free once it is parsed.
                        drop(bytes);
                        self.bytes = self.bytes + after - before;
                        self.append(calls);
                        self.shed();
                    }
                    Note::Retract { key, bytes } => {
                        if let Some(session) = self.sessions.get_mut(&key) {
                            let before = session.bytes();
                            session.retract(&bytes);
                            self.bytes = self.bytes + session.bytes() - before;
                        }
                    }
                    Note::Adopt { from, to, .. } => {
                        if !self.sessions.contains_key(&to)
                            && let Some(session) = self.sessions.remove(&from)
                            && let Some((_, evicted)) = self.sessions.insert(to, session)
                        {
                            // One out, one in, so nothing is evicted; were it, it ends properly.
                            self.close(evicted);
                        }
                    }
                    Note::End { key, .. } => {
                        if let Some(session) = self.sessions.remove(&key) {
                            self.close(session);
                        }
                    }
                    Note::Shutdown => break 'notes,
                }
            }
        }
        counts.settle(&mut self.tally);
        for session in self.sessions.drain() {
            self.close(session);
        }
        self.tally.journal = self.writer.path().map(PathBuf::from);
        self.tally
    }

    /// `key`'s session, now the most recently active; a new one when it
    /// has none, which may end the least recently active.
    fn session(&mut self, key: Key) -> &mut Session {
        if !self.sessions.contains_key(&key) {
            let fresh = Session::new(
                self.salt.clone(),
                Transport::Http,
                self.fixed.clone(),
                self.fallback.clone(),
            );
            self.bytes += fresh.bytes();
            if let Some((_, oldest)) = self.sessions.insert(key.clone(), fresh) {
                self.tally.evicted += 1;
                self.close(oldest);
            }
        }
        self.sessions
            .get_mut(&key)
            .expect("the session was just looked up or added")
    }

    /// Ends the least recently active sessions while all of them together
    /// hold more than [`SESSIONS_BYTES`]; the one just used is the most
    /// recent, so it goes last, and never alone (it bounds itself).
    fn shed(&mut self) {
        while self.bytes > SESSIONS_BYTES && self.sessions.len() > 1 {
            let Some((_, oldest)) = self.sessions.pop_oldest() else {
                break;
            };
            self.tally.evicted += 1;
            self.close(oldest);
        }
    }

    /// Ends a session that is no longer tracked: its unanswered calls are
    /// recorded now.
    fn close(&mut self, mut session: Session) {
        self.bytes = self.bytes.saturating_sub(session.bytes());
        let calls = session.finish();
        self.append(calls);
        self.tally.unparsed += session.unparsed;
        self.tally.bounded.add(session.bounded);
    }

    /// Appends the records together, under one hold of the journal lock.
    fn append(&mut self, calls: Vec<Done>) {
        let (done, failed) = session::append(&mut self.writer, &calls);
        self.tally.journaled += done as u64;
        match failed {
            // Keep relaying: the clients' sessions matter more than the
            // journal. Say so once, loudly.
            Some(err) if !self.failed_write => {
                self.failed_write = true;
                cli::warn(
                    crate::PROGRAM,
                    format_args!("{err}; further records are lost"),
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observer(budget: usize) -> Observer {
        Observer {
            queue: Arc::new(Queue::new()),
            counts: Arc::new(Counts::default()),
            budget: Budget::new(budget),
        }
    }

    #[test]
    fn counted_events_take_no_room_in_the_queue() {
        let observer = observer(0);
        for _ in 0..100_000 {
            observer.refused();
            observer.turned_away();
            observer.over_budget();
        }
        observer.oversized();
        observer.unobserved();
        observer.shutdown();
        let queued = observer.queue.take();
        assert!(
            matches!(queued.iter().collect::<Vec<_>>()[..], [Note::Shutdown]),
            "only the shutdown was queued, not {} notes",
            queued.len()
        );
        let mut tally = Tally::default();
        observer.counts.settle(&mut tally);
        assert_eq!(
            (
                tally.refused,
                tally.turned_away,
                tally.over_budget,
                tally.oversized,
                tally.unparsed
            ),
            (100_000, 100_000, 100_000, 1, 1)
        );
    }

    #[test]
    fn session_notes_wait_only_while_the_budget_has_room() {
        let observer = observer(2 * MESSAGE_OVERHEAD);
        for id in 0..10 {
            observer.end(Key::Connection(id));
        }
        observer.adopt(Key::Connection(10), Key::Connection(11));
        let queued = observer.queue.take();
        assert_eq!(queued.len(), 2, "two notes' worth of budget");
        let mut tally = Tally::default();
        observer.counts.settle(&mut tally);
        assert_eq!(tally.unnoted, 9);
        drop(queued);
        observer.adopt(Key::Connection(10), Key::Connection(11));
        assert!(
            matches!(
                observer.queue.take().iter().collect::<Vec<_>>()[..],
                [Note::Adopt { .. }]
            ),
            "the budget came back with the notes taken"
        );
    }
}
