//! A map that holds a bounded number of entries and, when full, gives
//! back the least recently used one to make room.
//!
//! Clients choose session ids, so the observer cannot let them decide how
//! many sessions it keeps. Each use stamps an entry with a tick; a second
//! map from tick to key finds the oldest in O(log n). It only keeps and
//! orders: what an evicted entry means is the caller's business. The
//! HTTP observer keeps its sessions in one, and each session its unanswered
//! calls (used only by insertion, so oldest first is first asked).

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// The maps' hasher: foldhash, seeded at random per map. Keys are ids the
/// client chose, so a hasher anyone can predict would let it choose ids
/// that collide; SipHash, std's keyed default, was a few percent of
/// capture's work per call, hashing each id twice.
type Keyed = foldhash::fast::RandomState;

/// At most `capacity` entries, ordered by last use.
#[derive(Debug)]
pub struct Recent<K, V> {
    entries: HashMap<K, (u64, V), Keyed>,
    order: BTreeMap<u64, K>,
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
            order: BTreeMap::new(),
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
        let (used, value) = self.entries.get_mut(key)?;
        self.tick += 1;
        self.order.remove(used);
        self.order.insert(self.tick, key.clone());
        *used = self.tick;
        Some(value)
    }

    /// The entry for `key`, without counting it as a use.
    pub fn get(&self, key: &K) -> Option<&V> {
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
        // (The key is looked up only when the map is full: every lookup
        // hashes it again, and this runs for every call observed.)
        let evicted = if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.pop_oldest()
        } else {
            None
        };
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        if let Some((used, _)) = self.entries.insert(key, (self.tick, value)) {
            self.order.remove(&used);
        }
        evicted
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
        self.order.remove(&used);
        self.shrink();
        Some(value)
    }

    /// Gives back the table of a map that once held many more entries than
    /// it holds now: a session that had 65,536 calls waiting and has a few
    /// must not keep the room for all of them (its bytes are counted
    /// against the sessions' bound by what it holds, not what it held).
    fn shrink(&mut self) {
        if self.gives_back
            && self.entries.capacity() > 64
            && self.entries.len() < self.entries.capacity() / 4
        {
            self.entries.shrink_to(self.entries.len() * 2);
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
        let (_, key) = self.order.pop_first()?;
        let (_, value) = self.entries.remove(&key)?;
        self.shrink();
        Some((key, value))
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
        assert_eq!(r.insert("a", 5), None, "a replacement evicts nothing");
        assert_eq!(r.insert("e", 6), Some(("c", 3)));
        assert!(!r.contains_key(&"c"));
        assert_eq!(r.remove(&"d"), Some(4));
        assert_eq!(r.insert("f", 7), None);
        assert_eq!(r.drain(), [5, 6, 7]);
        assert_eq!(r.remove(&"a"), None);
        assert!(r.order.is_empty() && r.entries.is_empty());
    }
}
