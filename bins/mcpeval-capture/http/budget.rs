//! One observation budget shared by every HTTP connection.
//!
//! Each connection may hold a message of up to [`OBSERVE_LIMIT`] for the
//! observer (a request body read whole, a JSON response being copied, an
//! SSE event being decoded), and a copy waits in the observer's queue until
//! it is parsed. Many connections at once could make that gigabytes, so
//! every such byte is charged to one [`Budget`] of [`OBSERVE_BUDGET`]:
//! when a charge cannot grow, its message is relayed unobserved instead of
//! held. A charge travels with the bytes it pays for ([`Charge::attach`])
//! and is given back when the last copy of them is dropped.
//!
//! [`OBSERVE_LIMIT`]: crate::limits::OBSERVE_LIMIT
//! [`OBSERVE_BUDGET`]: crate::limits::OBSERVE_BUDGET

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

/// What a message costs beyond its bytes while it waits for the observer
/// (its note in the queue, its key, its times).
pub const MESSAGE_OVERHEAD: usize = 256;

/// Bytes held for observation across all connections, and the most that
/// may be.
#[derive(Debug, Clone)]
pub struct Budget {
    used: Arc<AtomicUsize>,
    limit: usize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            used: Arc::new(AtomicUsize::new(0)),
            limit,
        }
    }

    /// A new charge, holding nothing yet.
    pub fn charge(&self) -> Charge {
        Charge {
            budget: self.clone(),
            held: 0,
        }
    }

    /// A charge of `len` bytes, if the budget has room.
    pub fn take(&self, len: usize) -> Option<Charge> {
        let mut charge = self.charge();
        charge.resize(len).then_some(charge)
    }

    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// Bytes held against a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Budget,
    held: usize,
}

impl Charge {
    /// Holds `len` bytes in all, more or fewer than before; false, holding
    /// what it held, when more would pass the budget.
    pub fn resize(&mut self, len: usize) -> bool {
        if len <= self.held {
            self.budget
                .used
                .fetch_sub(self.held - len, Ordering::Relaxed);
            self.held = len;
            return true;
        }
        let more = len - self.held;
        let limit = self.budget.limit;
        let grown = self
            .budget
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used + more <= limit).then_some(used + more)
            });
        if grown.is_ok() {
            self.held = len;
        }
        grown.is_ok()
    }

    /// `bytes`, carrying this charge until its last clone is dropped.
    pub fn attach(self, bytes: Bytes) -> Bytes {
        Bytes::from_owner(Paid {
            bytes,
            _charge: self,
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.resize(0);
    }
}

/// Bytes and the charge that pays for them.
struct Paid {
    bytes: Bytes,
    _charge: Charge,
}

impl AsRef<[u8]> for Paid {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_share_one_limit_and_come_back_with_the_last_copy() {
        let budget = Budget::new(100);
        let mut a = budget.take(60).unwrap();
        assert!(budget.take(41).is_none(), "only 40 left");
        let b = budget.take(40).unwrap();
        assert!(!a.resize(61) && budget.used() == 100);
        assert!(a.resize(10) && budget.used() == 50);
        let bytes = b.attach(Bytes::from_static(b"message"));
        let copy = bytes.clone();
        drop(bytes);
        assert_eq!((&copy[..], budget.used()), (&b"message"[..], 50));
        drop(copy);
        assert_eq!(budget.used(), 10);
        drop(a);
        assert_eq!(budget.used(), 0);
    }
}
