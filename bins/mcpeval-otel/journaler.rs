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
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
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
    held: HashMap<u128, (Instant, Observed), PairKeys>,
    /// Held pairing keys in arrival order (stale entries are skipped).
    order: VecDeque<(Instant, u128)>,
    remembered: HashSet<u128, PairKeys>,
    remembered_order: VecDeque<u128>,
    /// Per session: its last turn and the clock of its last use.
    turns: HashMap<Arc<str>, (u64, u64)>,
    /// Uses of sessions in order, `(clock, session)`.
    uses: VecDeque<(u64, Arc<str>)>,
    /// Counts uses, so the least recently used session is found.
    clock: u64,
    event_ids: store::ids::EventIds,
    /// What has happened, for the summary.
    pub tally: Tally,
}

impl Journaler {
    /// A journaler appending through `writer`.
    pub fn new(writer: Writer) -> Journaler {
        Journaler {
            writer,
            held: HashMap::default(),
            order: VecDeque::new(),
            remembered: HashSet::default(),
            remembered_order: VecDeque::new(),
            turns: HashMap::new(),
            uses: VecDeque::new(),
            clock: 0,
            event_ids: store::ids::EventIds::new(),
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
                call.identity.event_id = self.event_ids.next().into();
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
        if !self.turns.contains_key(session) {
            while self.turns.len() >= MAX_SESSIONS {
                self.forget_least_recent();
            }
        }
        let clock = self.clock;
        // A session seen before costs no allocation: its name is shared
        // by its counter and its uses.
        let name: Arc<str> = match self.turns.get_key_value(session) {
            Some((name, _)) => name.clone(),
            None => session.into(),
        };
        let entry = self.turns.entry(name.clone()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 = clock;
        let turn = entry.0;
        self.uses.push_back((clock, name));
        if self.uses.len() > 4 * MAX_SESSIONS {
            // Drop the uses that are no session's last, keeping the queue
            // as long as the sessions it orders.
            let turns = &self.turns;
            self.uses
                .retain(|(at, s)| turns.get(s).is_some_and(|(_, last)| last == at));
        }
        turn
    }

    /// Forgets the counter of the session used least recently; a later
    /// call of it starts again at 1. The queue holds every use in order,
    /// so the first entry that is still its session's last use is it.
    fn forget_least_recent(&mut self) {
        while let Some((at, session)) = self.uses.pop_front() {
            if self
                .turns
                .get(&session)
                .is_some_and(|(_, last)| *last == at)
            {
                self.turns.remove(&session);
                self.tally.sessions_forgotten += 1;
                return;
            }
        }
    }
}

/// Hashes pairing keys, which are already the leading bits of a salted
/// SHA-256 digest that a sender cannot steer: folding them is as good a
/// hash as any, and cheaper than SipHash (the set of remembered requests
/// is touched by every span).
#[derive(Debug, Default)]
struct FoldedKey(u64);

impl Hasher for FoldedKey {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, key: u128) {
        self.0 ^= (key as u64) ^ ((key >> 64) as u64);
    }
}

type PairKeys = BuildHasherDefault<FoldedKey>;

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::home::Home;

    fn observed(side: Side, pair: u128, tool: &str, args: Option<serde_json::Value>) -> Observed {
        let line = json!({"schema": "mcpeval.call/1",
            "identity": {"event_id": "6f1c2a3b-4d5e-4f60-8a7b-9c8d7e6f5a4b",
                "session": "s-0000000000000001", "seq": 1},
            "origin": "otel", "transport": "stdio", "server": "w", "tool": tool,
            "started_at": "2026-11-30T07:00:00.000Z", "duration_ms": 1,
            "advertised": null, "args_shape": args.clone().unwrap_or(json!("object")),
            "outcome": "ok"});
        let call = match shared::record::Record::parse(line.to_string().as_bytes()) {
            Ok(shared::record::Record::V1(call)) => call,
            other => panic!("{line}: {other:?}"),
        };
        Observed {
            side,
            pair: Some(pair),
            started_ns: 1,
            named_session: false,
            args_known: args.is_some(),
            call,
        }
    }

    fn journaler(dir: &tempfile::TempDir) -> Journaler {
        Journaler::new(Writer::new(&Home::at(&dir.path().join("home"))).unwrap())
    }

    fn written(dir: &tempfile::TempDir) -> Vec<serde_json::Value> {
        let journals = store::journal::files(&dir.path().join("home/journals")).unwrap();
        journals
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn both_ends_of_a_request_make_one_record_in_either_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = journaler(&dir);
        let now = Instant::now();
        let args = json!({"city": "string"});
        // Client first: held, then lends its arguments to the server's.
        assert_eq!(
            j.take(
                vec![observed(Side::Client, 1, "a", Some(args.clone()))],
                now
            )
            .unwrap(),
            0
        );
        assert_eq!(
            j.take(vec![observed(Side::Server, 1, "a", None)], now)
                .unwrap(),
            1
        );
        // Server first: the client's span coming later is dropped.
        assert_eq!(
            j.take(vec![observed(Side::Server, 2, "b", None)], now)
                .unwrap(),
            1
        );
        assert_eq!(
            j.take(vec![observed(Side::Client, 2, "b", None)], now)
                .unwrap(),
            0
        );
        // A client span alone waits for its deadline.
        assert_eq!(
            j.take(vec![observed(Side::Client, 3, "c", None)], now)
                .unwrap(),
            0
        );
        assert_eq!(j.expire(now - Duration::from_secs(1)).unwrap(), 0);
        assert_eq!(j.expire(now).unwrap(), 1);
        assert_eq!(j.finish().unwrap(), 0);
        let records = written(&dir);
        let got: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r["tool"].clone(),
                    r["identity"]["seq"].clone(),
                    r["args_shape"].clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (json!("a"), json!(1), args),
                (json!("b"), json!(2), json!("object")),
                (json!("c"), json!(3), json!("object")),
            ]
        );
        assert_eq!(j.tally.paired, 2);
        assert!(
            records
                .iter()
                .all(
                    |r| uuid::Uuid::parse_str(r["identity"]["event_id"].as_str().unwrap()).is_ok()
                )
        );
    }

    #[test]
    fn sessions_past_the_bound_forget_the_least_recent() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = journaler(&dir);
        assert_eq!(j.turn("first"), 1);
        for n in 0..MAX_SESSIONS {
            j.turn(&format!("s{n}"));
            if n % 1000 == 0 {
                // `first` stays recent, so others are forgotten before it.
                assert_eq!(j.turn("first"), 2 + (n / 1000) as u64);
            }
        }
        assert!(j.turns.len() <= MAX_SESSIONS);
        assert!(j.turns.contains_key("first"));
        assert!(j.tally.sessions_forgotten > 0);
        assert!(j.uses.len() <= 4 * MAX_SESSIONS + 1);
    }
}
