//! From read spans to journal records: one record per request, however
//! many ends reported it, each numbered in its session.
//!
//! The conventions give a request two spans, the client's and the
//! server's, exported by two processes at their own times. The server's
//! says more (a tool error the client never marks, the server's own
//! name), so a server span is journaled as it comes, and a client span is
//! held until its server span arrives (and it is dropped, lending the
//! record what only it said: the arguments, the session id) or until it
//! has waited long enough (`--pair-wait`, or the end of an import), when
//! it is journaled alone. Requests journaled are remembered, so the other
//! end's span coming later is recognized and dropped. Both the held spans
//! and the memory are bounded ([`crate::limits`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use shared::error::Result;
use shared::record::Call;
use store::journal::Writer;

use crate::limits::{MAX_HELD, MAX_REMEMBERED, MAX_SESSIONS};
use crate::span::{Observed, Side};
use crate::tally::Tally;

/// Turns observed calls into journal lines.
#[derive(Debug)]
pub struct Journaler {
    writer: Writer,
    held: HashMap<u128, (Instant, Observed)>,
    /// Held pairing keys in arrival order (stale entries are skipped).
    order: VecDeque<(Instant, u128)>,
    remembered: HashSet<u128>,
    remembered_order: VecDeque<u128>,
    turns: HashMap<String, (u64, u64)>,
    /// Counts uses, so the least recently used session is found.
    clock: u64,
    /// What has happened, for the summary.
    pub tally: Tally,
}

impl Journaler {
    /// A journaler appending through `writer`.
    pub fn new(writer: Writer) -> Journaler {
        Journaler {
            writer,
            held: HashMap::new(),
            order: VecDeque::new(),
            remembered: HashSet::new(),
            remembered_order: VecDeque::new(),
            turns: HashMap::new(),
            clock: 0,
            tally: Tally::default(),
        }
    }

    /// Takes the calls of one request (or import line), journaling what is
    /// ready; returns how many records were appended.
    pub fn take(&mut self, calls: Vec<Observed>, now: Instant) -> Result<usize> {
        let mut ready = Vec::new();
        for observed in calls {
            let Some(key) = observed.pair else {
                ready.push(observed);
                continue;
            };
            if self.remembered.contains(&key) {
                self.tally.paired += 1;
                continue;
            }
            match observed.side {
                Side::Server => {
                    let mut record = observed;
                    if let Some((_, client)) = self.held.remove(&key) {
                        self.tally.paired += 1;
                        lend(&mut record, client);
                    }
                    self.remember(key);
                    ready.push(record);
                }
                Side::Client => {
                    if self.held.contains_key(&key) {
                        // The same client span twice (a retried export).
                        self.tally.paired += 1;
                        continue;
                    }
                    if self.held.len() >= MAX_HELD {
                        self.tally.held_out += 1;
                        ready.extend(self.release_oldest());
                    }
                    self.held.insert(key, (now, observed));
                    self.order.push_back((now, key));
                }
            }
        }
        self.write(ready)
    }

    /// Journals the client spans held since before `deadline`: their
    /// server spans are not coming.
    pub fn expire(&mut self, deadline: Instant) -> Result<usize> {
        let mut ready = Vec::new();
        while let Some(&(at, _)) = self.order.front() {
            if at > deadline {
                break;
            }
            ready.extend(self.release_oldest());
        }
        self.write(ready)
    }

    /// Journals every span still held (the end of an import or of the
    /// receiver).
    pub fn finish(&mut self) -> Result<usize> {
        let far = Instant::now() + Duration::from_secs(3600);
        self.expire(far)
    }

    /// Where records went, once one was written.
    pub fn journal(&self) -> Option<&std::path::Path> {
        self.writer.path()
    }

    fn release_oldest(&mut self) -> Option<Observed> {
        while let Some((at, key)) = self.order.pop_front() {
            if self
                .held
                .get(&key)
                .is_some_and(|(held_at, _)| *held_at == at)
            {
                let (_, observed) = self.held.remove(&key).expect("held");
                self.remember(key);
                return Some(observed);
            }
        }
        None
    }

    fn remember(&mut self, key: u128) {
        if self.remembered.insert(key) {
            self.remembered_order.push_back(key);
            if self.remembered_order.len() > MAX_REMEMBERED
                && let Some(old) = self.remembered_order.pop_front()
            {
                self.remembered.remove(&old);
            }
        }
    }

    /// Numbers each record in its session and appends them all.
    fn write(&mut self, ready: Vec<Observed>) -> Result<usize> {
        if ready.is_empty() {
            return Ok(0);
        }
        let calls: Vec<Call<'static>> = ready
            .into_iter()
            .map(|observed| {
                let mut call = observed.call;
                call.identity.seq = self.turn(&call.identity.session);
                call.identity.event_id = uuid::Uuid::new_v4().to_string().into();
                call
            })
            .collect();
        let (done, failed) = self.writer.append_all(&calls);
        self.tally.journaled += done as u64;
        match failed {
            Some(err) => Err(err),
            None => Ok(done),
        }
    }

    /// The next turn of `session`, starting at 1.
    fn turn(&mut self, session: &str) -> u64 {
        self.clock += 1;
        if !self.turns.contains_key(session) && self.turns.len() >= MAX_SESSIONS {
            // Forget the least recently used session's counter; a later
            // call of it starts again at 1.
            if let Some(oldest) = self
                .turns
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                self.turns.remove(&oldest);
                self.tally.sessions_forgotten += 1;
            }
        }
        let entry = self.turns.entry(session.to_owned()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 = self.clock;
        entry.0
    }
}

/// What only the client's span said, lent to the server's record: the
/// arguments when the server did not record them, and the session when
/// the client named it and the server did not.
fn lend(server: &mut Observed, client: Observed) {
    if !server.args_known && client.args_known {
        server.call.args_shape = client.call.args_shape;
        server.args_known = true;
    }
    if !server.named_session && client.named_session {
        server.call.identity.session = client.call.identity.session;
        server.named_session = true;
    }
}
