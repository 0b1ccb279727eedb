//! The stdio byte relay: client stdin → server stdin, server stdout →
//! client stdout.
//!
//! Each direction is one thread that forwards bytes as soon as they arrive,
//! with no user-space buffering, so a message reaches the other side as
//! soon as its bytes do. The observer gets its own copy of every chunk over
//! a channel; the relay never parses, re-serializes or waits for the
//! observer. The observer cuts the chunks into lines ([`Lines`]), off the
//! relay's threads.
//!
//! Two ways to move the bytes, relaying them identically:
//!
//! - **Spliced** (Linux, both ends pipes): `tee(2)` duplicates what the
//!   source pipe holds into a tap pipe without consuming it, then
//!   `splice(2)` moves the same bytes on to the destination. The relay
//!   thread never copies a byte; a tap thread reads each tap into memory
//!   for the observer, so the tap never fills while the observer lags. On
//!   two shared cores, alternated with copying in the same hour, this kept
//!   53-76% of a pipelined session's direct throughput (median 69%) where
//!   copying kept 44-57% (median 51%), ahead in each of seven pairs.
//!   Relays that read their own taps before splicing on, with no tap
//!   thread, took less CPU in total but lost throughput: the copy then
//!   delays the very bytes it copies.
//! - **Copied** (anywhere else, or when an end is a file, a socket or a
//!   terminal): `read` → `write_all`, with a copy for the observer.
//!
//! The observer, like the tap thread, runs at a lower priority
//! ([`lower_priority`]), looks for chunks every few milliseconds while
//! they flow ([`Observed`]) and may fall behind a fast peer, so the
//! copies waiting for it are bounded ([`Backlog`]): past
//! [`OBSERVE_BUDGET`] a chunk is not copied, the observer is told only
//! how many bytes it missed, and the relay goes on at full speed. Losses
//! in a row add to the one word still waiting ([`Losses`]), so however
//! long the observer is held up (a stalled journal write) and however the
//! peer writes, what waits for it stays bounded. Lines are observed up to
//! [`OBSERVE_LIMIT`]; a longer one is measured and dropped as it streams.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::limits::{OBSERVE_BUDGET, OBSERVE_LIMIT, SPARE_BYTES};
use crate::session::Side;

/// Bytes per read.
const BUFFER: usize = 64 * 1024;

/// The most chunk buffers kept for reuse ([`Spare`]); they hold at most
/// [`SPARE_BYTES`].
const SPARE_BUFFERS: usize = 64;

/// The least room of a chunk buffer kept for reuse: the allocator serves
/// smaller ones cheaply.
const SPARE_LEAST: usize = 16 * 1024;

/// The bytes copied for the observer that it has not finished with, and
/// the room of chunks it has finished with, kept for later ones.
#[derive(Debug, Clone, Default)]
struct Backlog {
    used: Arc<AtomicUsize>,
    spare: Arc<Mutex<Spare>>,
}

/// Chunk buffers the observer is done with, kept for later chunks. Taking
/// fresh memory for each chunk, freed on the observer's thread, cost the
/// thread copying the chunks page faults: the allocator gave freed memory
/// back to the kernel, and a later chunk took it again.
#[derive(Debug, Default)]
struct Spare {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

impl Backlog {
    /// An empty buffer for `len` bytes, and its place in the backlog: one
    /// the observer was done with, if one is large enough and under four
    /// times that (its room is charged whole, and a small chunk must not
    /// use up the budget), or else a new one. None, and nothing taken,
    /// when its room would pass [`OBSERVE_BUDGET`].
    fn buffer(&self, len: usize) -> Option<(Vec<u8>, Held)> {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        let fits = (spare.buffers.iter())
            .rposition(|buffer| (len..=len.saturating_mul(4)).contains(&buffer.capacity()));
        let room = fits.map_or(len, |at| spare.buffers[at].capacity());
        let held = self.admit(room)?;
        let mut buffer = fits.map_or_else(Vec::new, |at| spare.buffers.swap_remove(at));
        spare.bytes -= buffer.capacity();
        drop(spare);
        buffer.reserve_exact(len);
        Some((buffer, held))
    }

    /// Keeps `buffer` for a later chunk if it is one worth keeping (a
    /// smaller one costs the allocator little) and there is room for it.
    fn spare(&self, mut buffer: Vec<u8>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if buffer.capacity() < SPARE_LEAST
            || spare.buffers.len() == SPARE_BUFFERS
            || spare.bytes + buffer.capacity() > SPARE_BYTES
        {
            return;
        }
        buffer.clear();
        spare.bytes += buffer.capacity();
        spare.buffers.push(buffer);
    }

    /// Room for `len` more bytes, unless that would pass
    /// [`OBSERVE_BUDGET`]. Two relays may both pass the check at once; the
    /// budget is then passed by at most one chunk.
    fn admit(&self, len: usize) -> Option<Held> {
        // What a queued chunk costs besides its bytes (the event, its
        // allocation, the channel's slot): a peer writing a byte at a time
        // must not queue a hundred times the budget.
        const EVENT_COST: usize = 128;
        let len = len + EVENT_COST;
        if self.used.load(Ordering::Relaxed) + len > OBSERVE_BUDGET {
            return None;
        }
        self.used.fetch_add(len, Ordering::Relaxed);
        Some(Held {
            backlog: self.clone(),
            len,
        })
    }
}

/// A chunk's place in the backlog, given back when the observer drops it.
#[derive(Debug)]
struct Held {
    backlog: Backlog,
    len: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.backlog.used.fetch_sub(self.len, Ordering::Relaxed);
    }
}

/// A chunk's bytes, in the backlog until dropped; their room then goes
/// back for a later chunk.
#[derive(Debug)]
pub struct Chunk {
    bytes: Vec<u8>,
    /// Its place in the backlog.
    held: Held,
}

impl std::ops::Deref for Chunk {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        self.held.backlog.spare(std::mem::take(&mut self.bytes));
    }
}

/// What the observer is told.
#[derive(Debug)]
pub enum Event {
    /// Bytes read from one side, and when they were read.
    Chunk {
        side: Side,
        bytes: Chunk,
        at: Timestamp,
        now: Instant,
    },
    /// Bytes of the side were relayed but not copied: the observer was
    /// too far behind.
    Lost { side: Side, missed: Missed },
    /// The side's stream ended.
    Closed(Side),
}

/// How many bytes of one side the observer missed in a row. Losses that
/// come while the word of the first still waits add to it.
#[derive(Debug)]
pub struct Missed(Arc<AtomicUsize>);

/// A count the observer took: later losses need a word of their own.
const TAKEN: usize = usize::MAX;

impl Missed {
    /// The bytes missed; later losses no longer add to this count.
    pub fn take(&self) -> usize {
        self.0.swap(TAKEN, Ordering::AcqRel)
    }
}

/// The last word each side's losses were told in, kept by whoever tells
/// the observer of them (one relay, or the tap thread) while no copied
/// bytes of that side came after it.
#[derive(Debug, Default)]
struct Losses([Option<Arc<AtomicUsize>>; 2]);

impl Losses {
    /// `len` more bytes of `side` missed: the event to send, or none when
    /// they were added to the side's word still waiting.
    fn lost(&mut self, side: Side, len: usize) -> Option<Event> {
        let last = &mut self.0[index(side)];
        if let Some(count) = last
            && count
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n != TAKEN).then(|| n.saturating_add(len).min(TAKEN - 1))
                })
                .is_ok()
        {
            return None;
        }
        let count = Arc::new(AtomicUsize::new(len));
        *last = Some(count.clone());
        Some(Event::Lost {
            side,
            missed: Missed(count),
        })
    }

    /// Bytes of `side` were copied for the observer: a later loss comes
    /// after them, in a word of its own.
    fn copied(&mut self, side: Side) {
        self.0[index(side)] = None;
    }
}

fn index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

/// Starts relaying both directions; returns what the observer is told, in
/// the order the relays saw it.
pub fn start(client_in: File, server_in: File, server_out: File, client_out: File) -> Observed {
    let (events, observed) = mpsc::channel();
    let directions = vec![
        (Side::Client, client_in, server_in),
        (Side::Server, server_out, client_out),
    ];
    let observer = Observer {
        to: To::Direct(events),
        backlog: Backlog::default(),
    };
    #[cfg(target_os = "linux")]
    let (directions, observer) = spliced::start(directions, observer);
    for (side, from, to) in directions {
        let observer = observer.clone();
        spawn(relay_name(side), move || pump(side, from, to, &observer));
    }
    Observed {
        events: observed,
        flowing: false,
    }
}

/// Starts a thread named `name`, as `top -H` and `/proc` show it.
fn spawn(name: &str, run: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(run)
        .unwrap_or_else(|err| panic!("cannot start the {name} thread: {err}"))
}

/// The name of the thread relaying what `side` sends.
fn relay_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client relay",
        Side::Server => "server relay",
    }
}

/// How much less CPU the threads that serve only the journal (the
/// observer and the tap thread) get than the relays.
const BEHIND_NICE: i32 = 10;

/// Lowers the priority of this thread, alone, by [`BEHIND_NICE`]: for a
/// thread whose work can wait for a pause in the session, so that the
/// relays, which the client waits on, win the CPU when all are busy.
/// Threads started earlier keep theirs. Measured on two cores:
///
/// - the observer at the relays' priority kept a pipelined session 27-34%
///   of its direct throughput, below them 50-54%;
/// - the tap thread at their priority kept capture, with observation off,
///   92-97% of a bare splice relay's throughput, below them 94-98%, in
///   five runs of each alternated. It only falls behind by what its tap
///   holds; past that, the relay waits to tee, and nothing is lost.
///
/// Best effort: where it fails, nothing changes.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this thread's own id; a failure only
    // leaves the priority as it was.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + BEHIND_NICE).min(19));
    }
}

/// How long the observer sleeps, once it has caught up, before it looks
/// for more while events flow. Events sent meanwhile wake nobody: parked
/// on the channel instead, it was woken by nearly every chunk of a busy
/// session, at a cost to the thread sending them too. The chunks waiting
/// meanwhile count against the backlog like any others (a pipelined
/// session at pipe speed hands over a few megabytes in this time), and
/// each carries the time it was read, so a late look changes no record.
const LOOK: Duration = Duration::from_millis(5);

/// What the relays hand the observer, and how it waits for the next.
pub struct Observed {
    events: Receiver<Event>,
    /// Whether an event came since the observer last waited.
    flowing: bool,
}

impl Observed {
    /// The next event if one waits.
    pub fn try_next(&mut self) -> Result<Event, TryRecvError> {
        let next = self.events.try_recv();
        self.flowing |= next.is_ok();
        next
    }

    /// The next event, once one comes; none once every relay has ended.
    /// While events flow it sleeps [`LOOK`] and looks again, and waits on
    /// the channel only when that look finds nothing.
    pub fn wait(&mut self) -> Option<Event> {
        if std::mem::take(&mut self.flowing) {
            std::thread::sleep(LOOK);
        }
        let next = self.events.recv().ok();
        self.flowing = next.is_some();
        next
    }

    /// The next event: [`Self::try_next`], or [`Self::wait`] for one.
    pub fn next(&mut self) -> Option<Event> {
        match self.try_next() {
            Ok(event) => Some(event),
            Err(TryRecvError::Empty) => self.wait(),
            Err(TryRecvError::Disconnected) => None,
        }
    }
}

/// Where a relay hands what it saw, and the backlog it counts against.
#[derive(Clone)]
struct Observer {
    to: To,
    backlog: Backlog,
}

/// Where the events go.
#[derive(Clone)]
enum To {
    /// Straight to the observer.
    Direct(Sender<Event>),
    /// Through the tap thread, which every event passes once any direction
    /// is spliced, so the observer's order stays the relays' order.
    #[cfg(target_os = "linux")]
    Tapped(Sender<spliced::Teed>),
}

impl Observer {
    fn send(&self, event: Event) {
        match &self.to {
            To::Direct(events) => {
                let _ = events.send(event);
            }
            #[cfg(target_os = "linux")]
            To::Tapped(teed) => {
                let _ = teed.send(spliced::Teed::Copied(event));
            }
        }
    }

    /// Hands the observer `len` bytes of `side`, which `copy` appends to
    /// the room made for them; when the backlog is full, only word of
    /// their length, and `copy` is not called. Whether they were copied.
    fn chunk(
        &self,
        side: Side,
        len: usize,
        at: Timestamp,
        now: Instant,
        losses: &mut Losses,
        copy: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        let Some((buffer, held)) = self.backlog.buffer(len) else {
            if let Some(event) = losses.lost(side, len) {
                self.send(event);
            }
            return Ok(false);
        };
        let mut bytes = Chunk {
            bytes: buffer,
            held,
        };
        copy(&mut bytes.bytes)?;
        losses.copied(side);
        self.send(Event::Chunk {
            side,
            bytes,
            at,
            now,
        });
        Ok(true)
    }

    /// Hands the observer a copy of `chunk`, or word of its length.
    fn copy(&self, side: Side, chunk: &[u8], losses: &mut Losses) {
        let (at, now) = (Timestamp::now(), Instant::now());
        let _ = self.chunk(side, chunk.len(), at, now, losses, |bytes| {
            bytes.extend_from_slice(chunk);
            Ok(())
        });
    }
}

/// Copies `from` to `to` until end of input, handing each chunk to the
/// observer (or, when the observer is too far behind, only its length).
/// Both directions hand a chunk over *before* forwarding it: a
/// peer can only react to bytes it has received, so the observer sees
/// messages in causal order (a request before its response, a `tools/list`
/// result before the call it informed). The hand-over is one copy and one
/// channel send per read, however many lines the chunk holds: a few
/// microseconds for a large read, nothing per message.
///
/// When `to` fails (the reader went away) the relay keeps draining `from`,
/// so the writer on the other end is never blocked by a dead reader.
fn pump(side: Side, mut from: impl Read, mut to: impl Write, observer: &Observer) {
    let mut buf = vec![0u8; BUFFER];
    let mut losses = Losses::default();
    let mut sink = true;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        observer.copy(side, chunk, &mut losses);
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
    observer.send(Event::Closed(side));
}

fn forward(to: &mut impl Write, chunk: &[u8]) -> bool {
    to.write_all(chunk).and_then(|()| to.flush()).is_ok()
}

#[cfg(target_os = "linux")]
mod spliced {
    //! The zero-copy relay: `tee(2)` into a tap pipe, `splice(2)` onwards.

    use std::fs::File;
    use std::io::{self, Read};
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
    use std::sync::{Arc, OnceLock};
    use std::thread::Thread;
    use std::time::{Duration, Instant};

    use jiff::Timestamp;

    use super::{BUFFER, Event, Losses, Observer, To, index, relay_name, spawn};
    use crate::session::Side;

    /// The most one `tee` or `splice` is asked to move (it moves what the
    /// pipe holds, up to this).
    const MOST: usize = 1 << 30;

    /// The size asked for each tap pipe: the most an unprivileged process
    /// may set by default (`/proc/sys/fs/pipe-max-size`). Best effort: two
    /// per session count against the user's pipe allowance
    /// (`pipe-user-pages-soft`, 64 MiB by default); past it the kernel
    /// refuses, and a tap of the default size only makes the relay wait on
    /// the tap thread more often.
    const TAP_PIPE: libc::c_int = 1 << 20;

    /// What a relay tells the tap thread.
    pub enum Teed {
        /// `len` bytes went into the side's tap, and when.
        Bytes {
            side: Side,
            len: usize,
            at: Timestamp,
            now: Instant,
        },
        /// The side's stream ended.
        Closed(Side),
        /// What a copying relay saw, passed on as it is.
        Copied(Event),
    }

    /// The directions to relay, each a side with its source and destination.
    type Directions = Vec<(Side, File, File)>;

    /// Splices each direction whose ends are both pipes, and starts the tap
    /// thread if any is; gives back the directions left to copy and where
    /// their relays must hand what they see.
    pub fn start(directions: Directions, observer: Observer) -> (Directions, Observer) {
        let Observer {
            to: To::Direct(events),
            backlog,
        } = observer
        else {
            return (directions, observer);
        };
        let (teed, queue) = mpsc::channel();
        let waker = Arc::new(Waker::default());
        let mut readers: [Option<File>; 2] = [None, None];
        let mut copied = Vec::new();
        for (side, from, to) in directions {
            let tap = (is_pipe(&from) && is_pipe(&to)).then(tap_pipe).flatten();
            match tap {
                Some((reader, writer)) => {
                    readers[index(side)] = Some(reader);
                    let (teed, waker) = (teed.clone(), waker.clone());
                    spawn(relay_name(side), move || {
                        relay(side, from, to, writer, &teed, &waker)
                    });
                }
                None => copied.push((side, from, to)),
            }
        }
        if readers.iter().all(Option::is_none) {
            let direct = Observer {
                to: To::Direct(events),
                backlog,
            };
            return (copied, direct);
        }
        let tapped = Observer {
            to: To::Tapped(teed),
            backlog: backlog.clone(),
        };
        let tapping = spawn("tap", {
            let waker = waker.clone();
            let direct = Observer {
                to: To::Direct(events),
                backlog,
            };
            move || tap(&queue, readers, &direct, &waker)
        });
        let _ = waker.thread.set(tapping.thread().clone());
        (copied, tapped)
    }

    /// How long the tap thread sleeps between looks while bytes flow: long
    /// enough that a busy session's relays never wake it (a wake-up per chunk
    /// cost more than the copies splicing saves), short enough that a tap
    /// seldom fills (a megabyte takes a pipelined session over a
    /// millisecond); when one does, its relay waits, and nothing is lost.
    const POLL: Duration = Duration::from_micros(200);

    /// How long the tap thread sleeps between looks while bytes trickle:
    /// they came slower than [`QUIET`] bytes per `QUIET_POLL` since its
    /// last look. A real server answering pipelined calls a millisecond
    /// apart then costs a look every few messages instead of a look, or a
    /// wake-up, each; a tap holds far more than a trickle brings in this
    /// time, and the first look that finds a faster flow goes back to
    /// [`POLL`]. A chunk of [`QUIET`] bytes or more wakes it at once
    /// ([`Waker`]): it may start a message larger than the tap, whose relay
    /// would otherwise wait out the sleep for room. A faster flow, such as
    /// sequential calls tens of microseconds apart, is not gathered this
    /// long: reading a few milliseconds of it at once delayed the calls
    /// made meanwhile (the 99th percentile of their round trips tripled).
    const QUIET_POLL: Duration = Duration::from_millis(2);

    /// The most bytes a trickle brings in [`QUIET_POLL`].
    const QUIET: usize = 4 * 1024;

    /// How a relay wakes the tap thread from a trickle's sleep: a chunk
    /// bigger than a trickle brings may be the first of a large message,
    /// which must not wait [`QUIET_POLL`] for room in the tap.
    #[derive(Default)]
    struct Waker {
        /// The tap thread, once started.
        thread: OnceLock<Thread>,
        /// Whether it sleeps a trickle's sleep.
        asleep: AtomicBool,
    }

    impl Waker {
        /// The tap thread sleeps `slept`, or until a relay wakes it.
        fn sleep(&self, slept: Duration) {
            self.asleep.store(true, Ordering::Release);
            std::thread::park_timeout(slept);
            self.asleep.store(false, Ordering::Release);
        }

        /// A relay teed `len` bytes: wakes the tap thread if that is more
        /// than a trickle brings while it sleeps a trickle's sleep.
        fn teed(&self, len: usize) {
            if len >= QUIET
                && self.asleep.swap(false, Ordering::AcqRel)
                && let Some(thread) = self.thread.get()
            {
                thread.unpark();
            }
        }
    }

    /// Whether `found` bytes since a look `slept` ago are a trickle.
    fn quiet(found: usize, slept: Duration) -> bool {
        (found as u128) * QUIET_POLL.as_nanos() < QUIET as u128 * slept.as_nanos()
    }

    /// Looks that find nothing before the tap thread waits to be woken.
    /// One: looking on for ten milliseconds woke it five times a message
    /// of a session whose messages come a millisecond apart.
    const IDLE_LOOKS: u32 = 1;

    /// The tap thread: turns each `Teed::Bytes` into the observer's chunk,
    /// read from the side's tap, in the relays' order. When the backlog is
    /// full the bytes are read all the same, so the tap never fills, and
    /// dropped. It runs below the relays' priority.
    fn tap(queue: &Receiver<Teed>, readers: [Option<File>; 2], direct: &Observer, waker: &Waker) {
        super::lower_priority();
        let mut idle = 0;
        // Bytes read from the taps since the last look, and how long the
        // thread slept before it (woken from a wait counts as a trickle).
        let (mut found, mut slept) = (0, QUIET_POLL);
        let mut losses = Losses::default();
        loop {
            let message = match queue.try_recv() {
                Ok(message) => {
                    idle = 0;
                    message
                }
                Err(TryRecvError::Empty) if idle < IDLE_LOOKS => {
                    idle += 1;
                    if quiet(std::mem::take(&mut found), slept) {
                        slept = QUIET_POLL;
                        waker.sleep(slept);
                    } else {
                        slept = POLL;
                        std::thread::sleep(slept);
                    }
                    continue;
                }
                Err(TryRecvError::Empty) => match queue.recv() {
                    Ok(message) => {
                        idle = 0;
                        slept = QUIET_POLL;
                        message
                    }
                    Err(_) => return,
                },
                Err(TryRecvError::Disconnected) => return,
            };
            let event = match message {
                Teed::Bytes { side, len, at, now } => {
                    found += len;
                    let reader = readers[index(side)].as_ref().expect("a spliced side's tap");
                    let read = direct.chunk(side, len, at, now, &mut losses, |bytes| {
                        read_into(reader, bytes, len)
                    });
                    // Bytes not copied are read all the same, so the tap
                    // never fills.
                    if read.is_ok_and(|copied| !copied) {
                        let _ = discard(reader, len);
                    }
                    continue;
                }
                Teed::Closed(side) => Event::Closed(side),
                Teed::Copied(event) => event,
            };
            direct.send(event);
        }
    }

    /// The spliced twin of [`super::pump`]: the same order (the observer's
    /// copy is handed over before the bytes move on) and the same handling
    /// of a reader that went away.
    fn relay(side: Side, from: File, to: File, tap: File, teed: &Sender<Teed>, waker: &Waker) {
        let mut sink = true;
        loop {
            let len = match retry(|| unsafe {
                // SAFETY: tee(2) on two open pipe descriptors we own.
                libc::tee(from.as_raw_fd(), tap.as_raw_fd(), MOST, 0)
            }) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let _ = teed.send(Teed::Bytes {
                side,
                len,
                at: Timestamp::now(),
                now: Instant::now(),
            });
            waker.teed(len);
            if sink {
                sink = move_on(&from, &to, len);
                if !sink && side == Side::Client {
                    break;
                }
            } else if discard(&from, len).is_err() {
                break;
            }
        }
        drop(to);
        drop(tap);
        let _ = teed.send(Teed::Closed(side));
    }

    /// Moves the first `len` bytes of `from` to `to`. When `to` fails, the
    /// rest of the `len` bytes is consumed all the same.
    fn move_on(from: &File, to: &File, mut len: usize) -> bool {
        while len > 0 {
            match retry(|| unsafe {
                // SAFETY: splice(2) between two open pipe descriptors we own,
                // without offsets.
                libc::splice(
                    from.as_raw_fd(),
                    std::ptr::null_mut(),
                    to.as_raw_fd(),
                    std::ptr::null_mut(),
                    len,
                    libc::SPLICE_F_MOVE,
                )
            }) {
                Ok(0) => return false,
                Ok(n) => len -= n,
                Err(_) => {
                    let _ = discard(from, len);
                    return false;
                }
            }
        }
        true
    }

    /// Appends the first `len` bytes of `from` to `into`. The bytes are in
    /// the tap already, so this never waits, and one read takes them all:
    /// `read_to_end` would read them at most 8 KiB at a first try, and
    /// `read_exact` would need the room zeroed first.
    fn read_into(from: &File, into: &mut Vec<u8>, len: usize) -> io::Result<()> {
        into.reserve(len);
        let end = into.len() + len;
        while into.len() < end {
            let left = end - into.len();
            let room = &mut into.spare_capacity_mut()[..left];
            let n = retry(|| unsafe {
                // SAFETY: read(2) into room this vector owns, no more than
                // its length.
                libc::read(from.as_raw_fd(), room.as_mut_ptr().cast(), room.len())
            })?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            // SAFETY: read(2) initialized the first `n` bytes of the room.
            unsafe { into.set_len(into.len() + n) };
        }
        Ok(())
    }

    /// Reads and drops the first `len` bytes of `from`.
    fn discard(mut from: &File, mut len: usize) -> io::Result<()> {
        let mut buf = vec![0u8; len.min(BUFFER)];
        while len > 0 {
            let want = len.min(buf.len());
            from.read_exact(&mut buf[..want])?;
            len -= want;
        }
        Ok(())
    }

    /// Runs a system call returning a count, again while it is interrupted.
    fn retry(mut call: impl FnMut() -> isize) -> io::Result<usize> {
        loop {
            let n = call();
            if n >= 0 {
                return Ok(n as usize);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    fn is_pipe(file: &File) -> bool {
        use std::os::unix::fs::FileTypeExt;
        file.metadata().is_ok_and(|m| m.file_type().is_fifo())
    }

    /// A new pipe for a tap, as large as allowed, closed on exec.
    fn tap_pipe() -> Option<(File, File)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2(2) fills two descriptors that we then own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just opened and are owned here only.
        let (reader, writer) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
        // SAFETY: fcntl(2) on our own descriptor; on failure the pipe keeps
        // its default size.
        unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, TAP_PIPE) };
        Some((reader, writer))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_trickle_is_told_by_its_rate() {
            // A server answering a call a millisecond: two answers a look.
            assert!(quiet(600, QUIET_POLL));
            assert!(quiet(0, POLL));
            // Sequential calls 30 us apart: 1.4 KB in 200 us is a flow.
            assert!(!quiet(1_400, POLL));
            assert!(!quiet(14_000, QUIET_POLL));
            // A pipelined burst.
            assert!(!quiet(64 * 1024, POLL));
        }

        #[test]
        fn a_chunk_bigger_than_a_trickle_wakes_the_tap_thread() {
            let waker = Arc::new(Waker::default());
            // Nobody asleep: nothing to wake, nothing claimed.
            waker.teed(QUIET);
            assert!(!waker.asleep.load(Ordering::Acquire));
            // Asleep: a trickle's chunk leaves it so, a bigger one claims
            // the wake-up.
            waker.asleep.store(true, Ordering::Release);
            waker.teed(QUIET - 1);
            assert!(waker.asleep.load(Ordering::Acquire));
            waker.teed(QUIET);
            assert!(!waker.asleep.load(Ordering::Acquire));
            // And the sleeping thread wakes.
            let sleeper = std::thread::spawn({
                let waker = waker.clone();
                move || {
                    let started = Instant::now();
                    waker.sleep(Duration::from_secs(30));
                    started.elapsed()
                }
            });
            let _ = waker.thread.set(sleeper.thread().clone());
            while !waker.asleep.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            waker.teed(QUIET);
            let slept = sleeper.join().unwrap();
            assert!(slept < Duration::from_secs(30), "slept {slept:?}");
        }
    }
}

/// One side's chunks cut into complete lines, on the observer's thread.
#[derive(Debug, Default)]
pub struct Lines {
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
    /// Why the current line is being dropped, if it is.
    dropping: Option<Dropping>,
    /// Lines dropped for passing [`OBSERVE_LIMIT`].
    pub oversized: u64,
    /// Bytes the observer never saw ([`Event::Lost`]).
    pub lost: u64,
}

/// Why a line is not observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dropping {
    /// It passed [`OBSERVE_LIMIT`].
    Long,
    /// Some of its bytes were lost.
    Broken,
}

/// A line buffer grown past this is given back once its line is done, so
/// one long line does not keep its memory for the rest of the session.
const KEEP_PARTIAL: usize = 1024 * 1024;

impl Lines {
    /// Calls `line` with each line `chunk` completes (without its newline).
    pub fn feed(&mut self, chunk: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = chunk;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            match self.dropping.take() {
                Some(Dropping::Long) => self.oversized += 1,
                Some(Dropping::Broken) => {}
                None if self.partial.is_empty() => line(&rest[..pos]),
                None => {
                    self.partial.extend_from_slice(&rest[..pos]);
                    line(&self.partial);
                    self.partial.clear();
                    if self.partial.capacity() > KEEP_PARTIAL {
                        self.partial = Vec::new();
                    }
                }
            }
            rest = &rest[pos + 1..];
        }
        if self.dropping.is_none() && self.partial.len() + rest.len() > OBSERVE_LIMIT {
            self.dropping = Some(Dropping::Long);
            self.partial = Vec::new();
        }
        if self.dropping.is_none() {
            self.partial.extend_from_slice(rest);
        }
    }

    /// `len` bytes of the stream were relayed unseen: the line they fell in
    /// cannot be observed, and the next one starts after a newline.
    pub fn lose(&mut self, len: usize) {
        self.lost += len as u64;
        self.partial = Vec::new();
        self.dropping.get_or_insert(Dropping::Broken);
    }

    /// The unfinished last line of a stream that ended, if any.
    pub fn finish(&mut self) -> Option<Vec<u8>> {
        let last = std::mem::take(&mut self.partial);
        match self.dropping.take() {
            Some(Dropping::Long) => {
                self.oversized += 1;
                None
            }
            Some(Dropping::Broken) => None,
            None => (!last.is_empty()).then_some(last),
        }
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

    #[test]
    fn a_line_past_the_limit_is_measured_and_dropped_as_it_streams() {
        let mut splitter = Lines::default();
        let mut seen = Vec::new();
        splitter.feed(b"a\n", |l| seen.push(l.to_vec()));
        let piece = vec![b'x'; 1 << 20];
        for _ in 0..(OBSERVE_LIMIT >> 20) + 3 {
            splitter.feed(&piece, |l| seen.push(l.to_vec()));
            assert!(splitter.partial.capacity() <= 2 * OBSERVE_LIMIT);
        }
        assert_eq!(splitter.partial.capacity(), 0, "nothing of it is held");
        splitter.feed(b"x\nb\n", |l| seen.push(l.to_vec()));
        assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(splitter.oversized, 1);
        // One just under the limit is observed whole.
        let mut under = vec![b'y'; OBSERVE_LIMIT];
        under.push(b'\n');
        let mut got = 0;
        splitter.feed(&under, |l| got = l.len());
        assert_eq!((got, splitter.oversized), (OBSERVE_LIMIT, 1));
    }

    /// An observer whose backlog is full, or empty, as `full` says.
    fn behind(full: bool) -> (Observer, Receiver<Event>) {
        let (events, observed) = mpsc::channel();
        let observer = Observer {
            to: To::Direct(events),
            backlog: Backlog::default(),
        };
        fill(&observer, full);
        (observer, observed)
    }

    fn fill(observer: &Observer, full: bool) {
        let used = if full { OBSERVE_BUDGET } else { 0 };
        observer.backlog.used.store(used, Ordering::Relaxed);
    }

    /// What waits for the observer: each loss's side and bytes, `None`
    /// for a copied chunk.
    fn waiting(observed: &Receiver<Event>) -> Vec<Option<(Side, usize)>> {
        observed
            .try_iter()
            .map(|event| match event {
                Event::Lost { side, missed } => Some((side, missed.take())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn losses_in_a_row_wait_as_one_word_whatever_the_peer_writes() {
        let (observer, observed) = behind(true);
        let mut losses = Losses::default();
        for _ in 0..100_000 {
            observer.copy(Side::Server, b"x", &mut losses);
        }
        observer.copy(Side::Client, b"yy", &mut losses);
        observer.copy(Side::Server, b"x", &mut losses);
        assert_eq!(
            waiting(&observed),
            [Some((Side::Server, 100_001)), Some((Side::Client, 2))]
        );
        // Once the observer took the count, a loss is a word of its own.
        observer.copy(Side::Server, b"zzz", &mut losses);
        assert_eq!(waiting(&observed), [Some((Side::Server, 3))]);
    }

    #[test]
    fn a_copied_chunk_between_two_losses_keeps_them_apart() {
        let (observer, observed) = behind(true);
        let mut losses = Losses::default();
        observer.copy(Side::Server, b"x", &mut losses);
        fill(&observer, false);
        observer.copy(Side::Server, b"a\n", &mut losses);
        fill(&observer, true);
        observer.copy(Side::Server, b"yy", &mut losses);
        assert_eq!(
            waiting(&observed),
            [Some((Side::Server, 1)), None, Some((Side::Server, 2))]
        );
    }

    /// The bytes the backlog counts, and the spare buffers' count and room.
    fn counted(observer: &Observer) -> (usize, usize, usize) {
        let spare = observer.backlog.spare.lock().unwrap();
        let used = observer.backlog.used.load(Ordering::Relaxed);
        (used, spare.buffers.len(), spare.bytes)
    }

    #[test]
    fn a_chunk_is_charged_its_room_and_leaves_it_for_the_next() {
        let (observer, observed) = behind(false);
        let mut losses = Losses::default();
        observer.copy(Side::Server, &[b'x'; 60_000], &mut losses);
        assert_eq!(counted(&observer), (60_000 + 128, 0, 0));
        drop(observed.try_recv().unwrap());
        assert_eq!(counted(&observer), (0, 1, 60_000));
        // A chunk as large or up to four times smaller takes that room,
        // and is charged all of it.
        observer.copy(Side::Server, &[b'y'; 20_000], &mut losses);
        assert_eq!(counted(&observer), (60_000 + 128, 0, 0));
        let Ok(Event::Chunk { bytes, .. }) = observed.try_recv() else {
            panic!("a chunk");
        };
        assert_eq!(*bytes, [b'y'; 20_000]);
    }

    #[test]
    fn a_small_chunk_leaves_a_large_spare_buffer_alone() {
        let (observer, observed) = behind(false);
        let mut losses = Losses::default();
        observer.copy(Side::Client, &[b'x'; 64 * 1024], &mut losses);
        drop(observed.try_recv().unwrap());
        observer.copy(Side::Client, b"{}\n", &mut losses);
        assert_eq!(counted(&observer), (3 + 128, 1, 64 * 1024));
        // Nor is a small buffer kept.
        drop(observed.try_recv().unwrap());
        assert_eq!(counted(&observer), (0, 1, 64 * 1024));
    }

    #[test]
    fn a_chunk_the_backlog_has_no_room_for_takes_no_memory() {
        let (observer, observed) = behind(false);
        let mut losses = Losses::default();
        observer.copy(Side::Server, &[b'x'; 60_000], &mut losses);
        drop(observed.try_recv().unwrap());
        // Far past the budget: asking for its room would fail.
        assert!(observer.backlog.buffer(isize::MAX as usize).is_none());
        // A full backlog leaves the spare buffer where it was.
        fill(&observer, true);
        assert!(observer.backlog.buffer(20_000).is_none());
        assert_eq!(counted(&observer), (OBSERVE_BUDGET, 1, 60_000));
    }

    #[test]
    fn spare_buffers_stay_bounded_however_many_chunks_wait() {
        // Many buffers, or large ones: each bound holds, and is reached.
        for (len, full) in [(20_000, SPARE_BUFFERS * 20_000), (300_000, 13 * 300_000)] {
            let (observer, observed) = behind(false);
            let mut losses = Losses::default();
            for _ in 0..1_000 {
                observer.copy(Side::Server, &vec![b'x'; len], &mut losses);
            }
            drop(observed);
            let (used, buffers, bytes) = counted(&observer);
            assert_eq!((used, bytes), (0, full), "{len}-byte chunks");
            assert!(buffers <= SPARE_BUFFERS && bytes <= SPARE_BYTES);
        }
    }

    #[test]
    fn the_observer_gets_every_event_in_order_then_the_end() {
        let (events, receiver) = mpsc::channel();
        let mut observed = Observed {
            events: receiver,
            flowing: false,
        };
        events.send(Event::Closed(Side::Client)).unwrap();
        assert!(matches!(observed.next(), Some(Event::Closed(Side::Client))));
        // Events flowed: the next look comes after a sleep, and finds what
        // was sent meanwhile or waits for it.
        let later = std::thread::spawn(move || events.send(Event::Closed(Side::Server)).unwrap());
        assert!(matches!(observed.next(), Some(Event::Closed(Side::Server))));
        later.join().unwrap();
        assert!(observed.next().is_none(), "every sender is gone");
    }

    #[test]
    fn lost_bytes_break_their_line_and_the_next_line_is_observed() {
        let mut splitter = Lines::default();
        let mut seen = Vec::new();
        splitter.feed(b"a\n{\"half", |l| seen.push(l.to_vec()));
        splitter.lose(10);
        splitter.feed(b"rest}\nb\nc", |l| seen.push(l.to_vec()));
        assert_eq!(seen, [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!((splitter.lost, splitter.oversized), (10, 0));
        assert_eq!(splitter.finish(), Some(b"c".to_vec()));
        splitter.lose(3);
        assert_eq!(
            splitter.finish(),
            None,
            "a broken last line is not observed"
        );
    }
}
