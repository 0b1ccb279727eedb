//! The observer thread's queue: notes in the order they were sent, where a
//! sender chooses whether its note wakes the thread.
//!
//! Every wake is a system call in the relay, made just before it forwards
//! the bytes, and a thread made runnable beside the client and the server
//! that are about to need the processor. A request's copy cannot become a
//! record before its answer, or the end of its session, is seen, and those
//! wake the thread: so a request waits quietly, and an exchange costs one
//! wake instead of two. Order is kept whatever wakes: one queue, one lock.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Notes a sleeping taker may leave queued: the next wakes it whatever its
/// sender chose, so requests an upstream never answers still reach the
/// observer, and the budget their copies hold comes back, in batches of
/// this many.
const QUIET: usize = 64;

#[derive(Debug)]
pub struct Queue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

#[derive(Debug)]
struct State<T> {
    items: VecDeque<T>,
    /// The taker is asleep and must be woken to see what is queued.
    asleep: bool,
}

impl<T> Queue<T> {
    pub fn new() -> Queue<T> {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                asleep: false,
            }),
            ready: Condvar::new(),
        }
    }

    /// Queues `item`, waking the taker when `wake` or when [`QUIET`]
    /// items wait.
    pub fn push(&self, item: T, wake: bool) {
        let mut state = self.lock();
        state.items.push_back(item);
        let wake = wake || state.items.len() >= QUIET;
        self.notify(state, wake);
    }

    /// Wakes the taker if something waits for it.
    pub fn wake(&self) {
        let state = self.lock();
        self.notify(state, true);
    }

    /// Everything queued, in order, waiting while there is nothing. A
    /// sleeping taker wakes only when asked, so what was queued quietly
    /// meanwhile comes with the next note that wakes it. The queue keeps
    /// none of the room a burst took: it goes with what is taken.
    pub fn take(&self) -> VecDeque<T> {
        let mut state = self.lock();
        while state.items.is_empty() {
            state.asleep = true;
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            state.asleep = false;
        }
        std::mem::take(&mut state.items)
    }

    fn notify(&self, state: MutexGuard<'_, State<T>>, wake: bool) {
        let asleep = wake && state.asleep && !state.items.is_empty();
        drop(state);
        if asleep {
            self.ready.notify_one();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, mpsc};

    #[test]
    fn quiet_items_come_in_order_with_the_next_that_wakes() {
        let queue = Queue::new();
        queue.push(1, false);
        queue.push(2, false);
        queue.push(3, true);
        assert_eq!(queue.take(), [1, 2, 3]);
    }

    #[test]
    fn a_burst_leaves_no_room_behind() {
        let queue = Queue::new();
        for i in 0..10_000 {
            queue.push(i, true);
        }
        assert_eq!(queue.take().len(), 10_000);
        assert_eq!(queue.lock().items.capacity(), 0);
    }

    #[test]
    fn enough_quiet_items_wake_a_sleeping_taker() {
        let queue = Arc::new(Queue::new());
        let taken = taker(&queue);
        for i in 0..QUIET {
            queue.push(i, false);
        }
        let taken = taken
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the taker was woken");
        assert_eq!(taken, (0..QUIET).collect::<Vec<_>>());
    }

    /// A thread that sleeps on `queue` until woken and sends what it took.
    fn taker<T: Send + 'static>(queue: &Arc<Queue<T>>) -> mpsc::Receiver<VecDeque<T>> {
        let (send, taken) = mpsc::channel();
        let sleeper = queue.clone();
        std::thread::spawn(move || {
            let _ = send.send(sleeper.take());
        });
        // Wait until it sleeps, so what is pushed next finds it asleep.
        while !queue.lock().asleep {
            std::thread::yield_now();
        }
        taken
    }

    #[test]
    fn a_sleeping_taker_gets_what_was_queued_quietly_once_woken() {
        let queue = Arc::new(Queue::new());
        let taken = taker(&queue);
        queue.push("request", false);
        queue.wake();
        let taken = taken
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the taker was woken");
        assert_eq!(taken, ["request"]);
    }
}
