//! The capture calls of a rebuild, set aside in session order while they
//! are read, so their failure windows can be derived on the reading thread
//! while the database builds its indexes.
//!
//! Reading the calls back from `index.db` in session order would fetch one
//! table row per call at random, since a journal interleaves its sessions.
//! Instead each capture call is kept as a small fixed-size entry: session
//! token and template id as the numbers their hex digits spell, server and
//! tool as numbers of names seen. Entries are sorted in runs of bounded
//! size, spilled to unlinked temporary files beside `index.db`, and merged,
//! so memory stays the same whatever the journals hold. A full run is
//! sorted and written on a thread of its own while the next one fills.
//!
//! The entries must describe exactly the rows `calls` ends up with: the
//! caller gives the first row id and every row in insertion order, and
//! must not use the result when any row was removed after the load.
//! Anything the entries cannot express (a token that is not hex, too many
//! distinct names) abandons the feed, and windows are then derived from
//! `index.db` as before.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;
use std::thread;

use shared::id::{Prefixed, SessionToken, TemplateId};
use shared::record::Columns;

use crate::windows::{Derived, Session};

/// Entries per sorted run: a few MB of memory (two runs are held while
/// one is spilled).
const RUN: usize = 1 << 17;
/// Distinct server and tool names kept; past this the feed is abandoned.
const MAX_NAMES: usize = 1 << 16;
/// Sessions per message to the database thread.
const BATCH: usize = 256;
/// Bytes per entry in a spilled run.
const ENTRY: usize = 42;

/// One capture call, as much as windows need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    session: u64,
    server: u32,
    seq: i64,
    id: i64,
    tool: u32,
    outcome: Outcome,
    template: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Error,
    Other,
}

impl Entry {
    /// The order windows need: each (session, server) together, in seq
    /// order, ties in row order.
    fn key(&self) -> (u64, u32, i64, i64) {
        (self.session, self.server, self.seq, self.id)
    }

    fn encode(&self, out: &mut [u8; ENTRY]) {
        out[0..8].copy_from_slice(&self.session.to_le_bytes());
        out[8..12].copy_from_slice(&self.server.to_le_bytes());
        out[12..20].copy_from_slice(&self.seq.to_le_bytes());
        out[20..28].copy_from_slice(&self.id.to_le_bytes());
        out[28..32].copy_from_slice(&self.tool.to_le_bytes());
        out[32] = self.outcome as u8;
        out[33] = u8::from(self.template.is_some());
        out[34..42].copy_from_slice(&self.template.unwrap_or(0).to_le_bytes());
    }

    fn decode(b: &[u8; ENTRY]) -> Entry {
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        Entry {
            session: u64_at(0),
            server: u32_at(8),
            seq: u64_at(12) as i64,
            id: u64_at(20) as i64,
            tool: u32_at(28),
            outcome: match b[32] {
                0 => Outcome::Ok,
                1 => Outcome::Error,
                _ => Outcome::Other,
            },
            template: (b[33] == 1).then(|| u64_at(34)),
        }
    }
}

/// Server and tool names, numbered in the order they are first seen;
/// looked up twice a row, so hashed with foldhash, seeded at random.
#[derive(Default)]
struct Names {
    ids: HashMap<String, u32, foldhash::fast::RandomState>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        if self.names.len() >= MAX_NAMES {
            return None;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        Some(id)
    }
}

/// Capture calls in session order, collected during a rebuild.
pub struct Feed {
    dir: PathBuf,
    next_id: i64,
    names: Names,
    run: Vec<Entry>,
    spilled: Vec<File>,
    /// The run being sorted and written on a thread of its own, beside the
    /// one filling: the inserting thread goes on while the other core sorts.
    spilling: Option<thread::JoinHandle<io::Result<File>>>,
    /// Set when an entry could not be kept: windows then come from the
    /// database.
    abandoned: bool,
}

impl Feed {
    /// A feed whose first row will get id `first_id`; spilled runs go to
    /// `dir` (the directory of `index.db`).
    pub fn new(dir: &Path, first_id: i64) -> Feed {
        Feed {
            dir: dir.to_owned(),
            next_id: first_id,
            names: Names::default(),
            run: Vec::new(),
            spilled: Vec::new(),
            spilling: None,
            abandoned: false,
        }
    }

    /// Takes the next row inserted into `calls`, in insertion order.
    pub fn push(&mut self, row: &Columns<'_>) -> io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        if self.abandoned || !is_traffic(row.origin) {
            return Ok(());
        }
        let (Some(session), Some(server), Some(tool)) = (
            SessionToken::number(row.session),
            self.names.id(row.server),
            self.names.id(row.tool),
        ) else {
            self.abandon();
            return Ok(());
        };
        let template = match row.template_id {
            None => None,
            Some(t) => match TemplateId::number(t) {
                Some(n) => Some(n),
                None => {
                    self.abandon();
                    return Ok(());
                }
            },
        };
        self.run.push(Entry {
            session,
            server,
            seq: row.seq,
            id,
            tool,
            outcome: match row.outcome {
                "ok" => Outcome::Ok,
                "error" => Outcome::Error,
                _ => Outcome::Other,
            },
            template,
        });
        if self.run.len() == RUN {
            self.spill()?;
        }
        Ok(())
    }

    fn abandon(&mut self) {
        self.abandoned = true;
        self.run = Vec::new();
        // Whatever the run being spilled comes to is of no use.
        let _ = self.settle();
        self.spilled.clear();
    }

    /// Hands the full run to a thread that sorts it and writes it to an
    /// unlinked file, once the run before it is written: two runs at most
    /// are held at once.
    fn spill(&mut self) -> io::Result<()> {
        self.settle()?;
        let run = std::mem::replace(&mut self.run, Vec::with_capacity(RUN));
        let file = scratch(&self.dir, "feed")?;
        self.spilling = Some(thread::spawn(move || write_run(run, file)));
        Ok(())
    }

    /// Waits for the run being spilled, if any, and keeps its file.
    fn settle(&mut self) -> io::Result<()> {
        if let Some(spilling) = self.spilling.take() {
            let file = spilling
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            self.spilled.push(file);
        }
        Ok(())
    }

    /// Whether the entries describe every capture call read.
    pub fn usable(&self) -> bool {
        !self.abandoned
    }

    /// Derives the windows of every session and sends them, a batch of
    /// sessions at a time; stops quietly when the receiver hangs up.
    pub fn derive(mut self, send: &SyncSender<Vec<Derived>>) -> io::Result<()> {
        self.settle()?;
        self.run.sort_unstable_by_key(Entry::key);
        let run = std::mem::take(&mut self.run);
        let mut sources: Vec<Source> = vec![Source::Memory(run.into_iter())];
        for file in std::mem::take(&mut self.spilled) {
            sources.push(Source::File(BufReader::with_capacity(1 << 16, file)));
        }
        // The k-way merge: each source's next entry, and a heap of their keys.
        let mut heads = Vec::with_capacity(sources.len());
        let mut heap = BinaryHeap::new();
        for (i, source) in sources.iter_mut().enumerate() {
            let head = source.next()?;
            if let Some(entry) = &head {
                heap.push(Reverse((entry.key(), i)));
            }
            heads.push(head);
        }
        let mut batch = Vec::with_capacity(BATCH);
        let mut current: Option<((u64, u32), Session)> = None;
        while let Some(Reverse((_, i))) = heap.pop() {
            let entry = heads[i].take().expect("a head for every key in the heap");
            heads[i] = sources[i].next()?;
            if let Some(next) = &heads[i] {
                heap.push(Reverse((next.key(), i)));
            }
            let group = (entry.session, entry.server);
            if current.as_ref().is_none_or(|(g, _)| *g != group) {
                if let Some((done, session)) = current.take() {
                    batch.push(self.derived(done, session));
                    if batch.len() == BATCH
                        && send
                            .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                            .is_err()
                    {
                        return Ok(());
                    }
                }
                current = Some((group, Session::default()));
            }
            if let Some((_, session)) = &mut current {
                let template = entry.template.map(|t| format!("t-{t:016x}"));
                session.call(
                    entry.seq,
                    entry.id,
                    &self.names.names[entry.tool as usize],
                    match entry.outcome {
                        Outcome::Ok => "ok",
                        Outcome::Error => "error",
                        Outcome::Other => "unknown",
                    },
                    template.as_deref(),
                );
            }
        }
        if let Some((done, session)) = current.take() {
            batch.push(self.derived(done, session));
        }
        if !batch.is_empty() {
            let _ = send.send(batch);
        }
        Ok(())
    }

    fn derived(&self, (session, server): (u64, u32), windows: Session) -> Derived {
        Derived {
            session: format!("s-{session:016x}"),
            server: self.names.names[server as usize].clone(),
            windows: windows.finish(),
        }
    }
}

/// Sorts `run` and writes it to `file`, rewound to be read back.
fn write_run(mut run: Vec<Entry>, mut file: File) -> io::Result<File> {
    run.sort_unstable_by_key(Entry::key);
    {
        let mut out = BufWriter::with_capacity(1 << 16, &mut file);
        let mut bytes = [0u8; ENTRY];
        for entry in &run {
            entry.encode(&mut bytes);
            out.write_all(&bytes)?;
        }
        out.flush()?;
    }
    file.rewind()?;
    Ok(file)
}

/// A sorted run: the last one in memory, the others on disk.
enum Source {
    Memory(std::vec::IntoIter<Entry>),
    File(BufReader<File>),
}

impl Source {
    fn next(&mut self) -> io::Result<Option<Entry>> {
        match self {
            Source::Memory(entries) => Ok(entries.next()),
            Source::File(reader) => {
                let mut bytes = [0u8; ENTRY];
                match reader.read_exact(&mut bytes) {
                    Ok(()) => Ok(Some(Entry::decode(&bytes))),
                    Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(err) => Err(err),
                }
            }
        }
    }
}

/// A private temporary file in `dir` (the directory of `index.db`), named
/// after `what`, already unlinked so a crash leaves nothing behind.
pub fn scratch(dir: &Path, what: &str) -> io::Result<File> {
    let mut n = 0u32;
    loop {
        let path = dir.join(format!(".index-{what}-{}-{n}", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => n += 1,
            Err(err) => return Err(err),
        }
    }
}

/// Whether a row's origin is real traffic (captured or traced), whose
/// failures open windows; a probe's own calls never do.
pub fn is_traffic(origin: &str) -> bool {
    shared::record::Origin::parse(origin).is_some_and(shared::record::Origin::is_traffic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Pushes a capture call of server `srv` with these facts.
    fn push(feed: &mut Feed, session: &str, seq: i64, outcome: &'static str, t: Option<u64>) {
        let template = t.map(|t| format!("t-{t:016x}"));
        feed.push(&Columns {
            schema: 1,
            event_id: None,
            session,
            seq,
            origin: "capture",
            transport: None,
            server: "srv",
            tool: "a",
            started_at: "",
            duration_ms: None,
            advertised: None,
            args_shape: "{}",
            outcome,
            unknown: None,
            channel: None,
            code: None,
            template_id: template.as_deref(),
            retryable: None,
            contract_kept: None,
            contract_at: None,
            contract_keyword: None,
        })
        .unwrap();
    }

    fn derive(feed: Feed) -> Vec<Derived> {
        let (send, receive) = mpsc::sync_channel(1024);
        feed.derive(&send).unwrap();
        drop(send);
        receive.iter().flatten().collect()
    }

    #[test]
    fn merges_spilled_runs_into_session_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut feed = Feed::new(dir.path(), 1);
        // Two sessions, interleaved and in reverse seq order, over several
        // runs; each error (odd seq) is closed by the ok after it.
        let per_session = 3 * RUN as i64 / 2;
        for seq in (1..=per_session).rev() {
            for session in 0..2 {
                let outcome = if seq % 2 == 1 { "error" } else { "ok" };
                push(
                    &mut feed,
                    &format!("s-{session:016x}"),
                    seq,
                    outcome,
                    Some(7),
                );
            }
        }
        assert!(feed.usable());
        feed.settle().unwrap();
        assert_eq!(feed.spilled.len(), 3);
        let derived = derive(feed);
        assert_eq!(derived.len(), 2);
        for d in &derived {
            assert_eq!(d.windows.len() as i64, per_session / 2);
            assert!(d.windows.iter().all(|w| w.recovered && w.turns == 1));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn gives_up_on_what_it_cannot_express() {
        let dir = tempfile::tempdir().unwrap();
        let mut feed = Feed::new(dir.path(), 1);
        push(&mut feed, "s-NOT-HEX", 1, "error", None);
        assert!(!feed.usable());
    }

    #[test]
    fn entries_survive_the_disk() {
        let e = Entry {
            session: u64::MAX,
            server: 7,
            seq: -3,
            id: 1 << 40,
            tool: 9,
            outcome: Outcome::Error,
            template: Some(42),
        };
        let mut bytes = [0u8; ENTRY];
        e.encode(&mut bytes);
        assert_eq!(Entry::decode(&bytes), e);
    }
}
