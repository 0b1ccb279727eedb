//! A map that holds a bounded number of entries and, when full, gives
//! back the least recently used one to make room.
//!
//! Clients choose session ids, so the observer cannot let them decide how
//! many sessions it keeps. Each use stamps an entry with a tick and queues
//! its key with that tick; the oldest entry is the first key in the queue
//! whose tick is still its entry's. A key used again or removed leaves its
//! earlier place in the queue behind, passed over when reached and swept
//! out when such places outnumber the entries, so the queue stays within
//! a few times the entries and each operation costs O(1) on average. It
//! only keeps and orders: what an evicted entry means is the caller's
//! business. The HTTP observer keeps its sessions in one, and each session
//! its unanswered calls (used only by insertion, so oldest first is first
//! asked, and mostly answered in that order, which the queue gives back at
//! once).

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// The maps' hasher: foldhash, seeded at random per map. Keys are ids the
/// client chose, so a hasher anyone can predict would let it choose ids
/// that collide; SipHash, std's keyed default, was a few percent of
/// capture's work per call, hashing each id twice.
type Keyed = foldhash::fast::RandomState;

/// How many places in the queue may be left behind beyond twice the
/// entries before they are swept out. Each entry has one place that is
/// its own, so the queue holds at most one place left behind per entry
/// and `SLACK` more (each keeping its key alive until it is swept).
pub const SLACK: usize = 32;

/// At most `capacity` entries, ordered by last use.
#[derive(Debug)]
pub struct Recent<K, V> {
    entries: HashMap<K, (u64, V), Keyed>,
    /// Keys with the tick of a use, oldest first; a place whose tick is no
    /// longer its entry's (or whose entry is gone) is left behind.
    order: VecDeque<(u64, K)>,
    tick: u64,
    capacity: usize,
    /// Whether room left by removed entries is given back ([`Recent::shrink`]).
    gives_back: bool,
}

impl<K: Hash + Eq + Clone, V> Recent<K, V> {
    /// An empty map for at most `capacity` (at least one) entries.
    pub fn new(capacity: usize) -> Recent<K, V> {
        Recent {
            entries: HashMap::with_hasher(Keyed::default()),
            order: VecDeque::new(),
            tick: 0,
            capacity: capacity.max(1),
            gives_back: true,
        }
    }

    /// An empty map for at most `capacity` entries that keeps the room its
    /// entries once took: for a map that is the only one of its kind, so
    /// that `capacity` bounds the room too. Filled and emptied over and
    /// over (a pipelined session's unanswered calls), a map that gives its
    /// room back builds its table anew each time, on fresh pages.
    pub fn keeping_room(capacity: usize) -> Recent<K, V> {
        Recent {
            gives_back: false,
            ..Recent::new(capacity)
        }
    }

    /// The entry for `key`, now the most recently used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.sweep();
        let (used, value) = self.entries.get_mut(key)?;
        self.tick += 1;
        *used = self.tick;
        self.order.push_back((self.tick, key.clone()));
        Some(value)
    }

    /// The entry for `key`, without counting it as a use.
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).map(|(_, value)| value)
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `key` has an entry (not a use).
    pub fn contains_key(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// Adds or replaces `key`'s entry as the most recently used, and
    /// returns the least recently used one if the map was full.
    pub fn insert(&mut self, key: K, value: V) -> Option<(K, V)> {
        self.replace(key, value).1
    }

    /// [`Recent::insert`], returning also the value `key` had: one lookup
    /// where a removal first took two.
    pub fn replace(&mut self, key: K, value: V) -> (Option<V>, Option<(K, V)>) {
        // (The key is looked up only when the map is full: every lookup
        // hashes it again, and this runs for every call observed.)
        let evicted = if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.pop_oldest()
        } else {
            None
        };
        self.sweep();
        self.tick += 1;
        self.order.push_back((self.tick, key.clone()));
        let replaced = self.entries.insert(key, (self.tick, value));
        (replaced.map(|(_, value)| value), evicted)
    }

    /// Removes `key`'s entry.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        // An empty map is asked often (a response looked up among the
        // pending `tools/list` and handshake requests): no need to hash.
        if self.entries.is_empty() {
            return None;
        }
        let (used, value) = self.entries.remove(key)?;
        // Calls are mostly answered in the order they were made: the
        // oldest place is most often the one just left behind.
        if self.order.front().is_some_and(|(tick, _)| *tick == used) {
            self.order.pop_front();
        }
        self.sweep();
        self.shrink();
        Some(value)
    }

    /// Whether `place` in the queue is still its entry's.
    fn holds(&self, (tick, key): &(u64, K)) -> bool {
        self.entries.get(key).is_some_and(|(used, _)| used == tick)
    }

    /// Sweeps out the places left behind once they outnumber the entries
    /// (twice over, and by [`SLACK`]): the queue's length stays within a
    /// bound of the entries', and the sweeps cost O(1) a use on average.
    fn sweep(&mut self) {
        if self.order.len() <= 2 * self.entries.len() + SLACK {
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        order.retain(|place| self.holds(place));
        self.order = order;
        self.shrink();
    }

    /// Gives back the room of a map that once held many more entries than
    /// it holds now: a session that had 65,536 calls waiting and has a few
    /// must not keep the room for all of them (its bytes are counted
    /// against the sessions' bound by what it holds, not what it held).
    fn shrink(&mut self) {
        if !self.gives_back {
            return;
        }
        if self.entries.capacity() > 64 && self.entries.len() < self.entries.capacity() / 4 {
            self.entries.shrink_to(self.entries.len() * 2);
        }
        if self.order.capacity() > 64 && self.order.len() < self.order.capacity() / 4 {
            self.order.shrink_to(self.order.len() * 2);
        }
    }

    /// Takes every entry out, least recently used first.
    pub fn drain(&mut self) -> Vec<V> {
        let mut all = Vec::with_capacity(self.entries.len());
        while let Some((_, value)) = self.pop_oldest() {
            all.push(value);
        }
        all
    }

    /// Takes out the least recently used entry.
    pub fn pop_oldest(&mut self) -> Option<(K, V)> {
        while let Some(place) = self.order.pop_front() {
            if self.holds(&place) {
                let (_, key) = place;
                let (_, value) = self.entries.remove(&key)?;
                self.shrink();
                return Some((key, value));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_that_emptied_gives_its_room_back() {
        let mut map: Recent<u32, u32> = Recent::new(100_000);
        for i in 0..65_536 {
            map.insert(i, i);
        }
        let full = map.entries.capacity();
        for i in 0..65_530 {
            map.remove(&i);
        }
        assert!(
            map.entries.capacity() < full / 100,
            "{}",
            map.entries.capacity()
        );
        assert!(
            map.order.capacity() < full / 100,
            "{}",
            map.order.capacity()
        );
        assert_eq!(map.remove(&65_535), Some(65_535));
    }

    #[test]
    fn a_map_keeping_its_room_keeps_it() {
        let mut map: Recent<u32, u32> = Recent::keeping_room(100_000);
        for i in 0..65_536 {
            map.insert(i, i);
        }
        let full = map.entries.capacity();
        for i in 0..65_530 {
            map.remove(&i);
        }
        // (A removed entry may leave a marker that counts against the
        // room until the table is rebuilt, so the room is not all free.)
        assert!(
            map.entries.capacity() >= full / 2,
            "{} of {full}",
            map.entries.capacity()
        );
        assert_eq!(map.len(), 6);
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut r = Recent::new(3);
        assert_eq!(r.insert("a", 1), None);
        assert_eq!(r.insert("b", 2), None);
        assert_eq!(r.insert("c", 3), None);
        *r.get_mut(&"a").unwrap() += 10;
        assert_eq!(r.insert("d", 4), Some(("b", 2)));
        assert_eq!(
            r.replace("a", 5),
            (Some(11), None),
            "a replacement evicts nothing"
        );
        assert_eq!(r.insert("e", 6), Some(("c", 3)));
        assert!(!r.contains_key(&"c"));
        assert_eq!(r.remove(&"d"), Some(4));
        assert_eq!(r.insert("f", 7), None);
        assert_eq!(r.drain(), [5, 6, 7]);
        assert_eq!(r.remove(&"a"), None);
        assert!(r.order.is_empty() && r.entries.is_empty());
    }

    #[test]
    fn places_left_behind_are_swept_out() {
        let mut r = Recent::new(1_000);
        for i in 0..100 {
            r.insert(i, i);
        }
        // Used again and again, out of order: each use leaves a place
        // behind, and the queue stays within its bound all along.
        for round in 0..100 {
            for i in (0..100).rev() {
                *r.get_mut(&i).unwrap() += round;
                assert!(r.order.len() <= 2 * r.len() + SLACK + 1);
            }
        }
        // Removed out of order: no place at the front is freed at once.
        for i in (0..90).rev() {
            r.remove(&i);
            assert!(r.order.len() <= 2 * r.len() + SLACK + 1);
        }
        let left: Vec<_> = std::iter::from_fn(|| r.pop_oldest())
            .map(|(k, _)| k)
            .collect();
        assert_eq!(left, (90..100).rev().collect::<Vec<_>>());
        assert!(r.order.is_empty());
    }
}
