//! One indexing run: plan, load, derive, re-check, commit, or change
//! nothing at all.
//!
//! Everything happens inside one `BEGIN IMMEDIATE` transaction on
//! `index.db`, opened before the checkpoints are read, so the plan can never
//! be stale and a failure anywhere rolls back to the previous index. The
//! shared journal lock is held throughout, as capture writers hold it for
//! each append; since appends do not wait for us, the bytes this run relies
//! on are checked again just before the commit. A journal that changed
//! meanwhile makes the run start over, a bounded number of times: a commit
//! never mixes two states of a file. The grown last journal's indexed
//! prefix is proven in that same check (see `checkpoint.rs`); should it no
//! longer match, the run starts over once more, this time hashing it
//! before reading anything.

use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior};
use sha2::Digest;
use shared::error::{Error, Result};
use shared::home::Home;
use store::hash::Hasher;
use store::index_db::{self, State};
use store::journal;
use store::lifecycle::{self, Annotation};
use store::lock::LockFile;

use crate::args::Config;
use crate::aside::{self, Aside};
use crate::checkpoint::{self, Check, Checkpoint, Continuation, Observed, Plan, Stamp};
use crate::feed::Feed;
use crate::lines::Lines;
use crate::load::{Loader, Source};
use crate::progress::Progress;
use crate::schema::Health;
use crate::windows::Scope;
use crate::writeback::{Stop, Writeback};
use crate::{bulk, links, prior, schema, windows};

/// Runs that find a journal changed before their commit start over; after
/// this many, the run gives up.
const ATTEMPTS: u32 = 3;

/// A load of at least this many bytes, and more than is already indexed,
/// drops the indexes of `calls` and sorts them afterwards (see `bulk.rs`).
const BULK_BYTES: u64 = 16 << 20;

/// Batches of derived windows in flight to the database thread.
const WINDOW_BATCHES: usize = 4;

/// What a run did, for the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Calls the index now holds.
    pub calls: i64,
    /// Calls it did not hold before this run.
    pub new: i64,
    /// Journals it covers.
    pub journals: i64,
    pub seconds: f64,
    /// Why the index was rebuilt, when it was.
    pub rebuild: Option<String>,
}

/// The annotations as read from `lifecycle.db`, with their high-water mark.
struct Annotations {
    list: Vec<Annotation>,
    mark: (i64, i64),
}

impl Annotations {
    fn read(home: &Home) -> Result<Annotations> {
        let list = match lifecycle::open_if_present(home)? {
            Some(conn) => lifecycle::list(&conn)?,
            None => Vec::new(),
        };
        let mark = (
            list.iter().map(|a| a.id).max().unwrap_or(0),
            list.len() as i64,
        );
        Ok(Annotations { list, mark })
    }
}

enum Attempt {
    Done(Outcome),
    /// This journal changed under the run; nothing was committed.
    Changed(PathBuf),
    /// The grown journal's deferred prefix no longer matches its
    /// checkpoint; nothing was committed.
    Unproven,
    /// The plan made while the new lines were read ahead is not the one
    /// they were read for; nothing was committed.
    Replan,
    /// The file rebuilt in place was damaged before the run; nothing was
    /// committed.
    Damaged,
}

/// How often a run waiting for another's first index looks again.
const AWAIT_FIRST: Duration = Duration::from_millis(50);

/// Brings `index.db` up to date with the journals.
pub fn run(config: &Config) -> Result<Outcome> {
    let started = Instant::now();
    let home = &config.home;
    store::dir::ensure(home)?;
    let db = home.index_db();
    if db.exists() {
        // Earlier releases kept verification results in index.db; opening
        // lifecycle.db imports them once, and must do so before a rebuild
        // may replace the file that holds them.
        drop(lifecycle::open(home)?);
    }
    aside::clean(db.as_std_path())?;
    let mut lines = Lines::new(Progress::new());
    let outcome = loop {
        match Aside::begin(db.as_std_path()) {
            Ok(Some((aside, conn))) => {
                break first(config, db.as_std_path(), aside, conn, &mut lines);
            }
            // Another run is building the first index aside. Creating
            // index.db in place meanwhile would race its install, which
            // clears the WAL a deleted index.db may have left before it
            // links the new file: wait until it is installed, or until
            // that run ends without it and this one can build it.
            Ok(None) if !db.exists() => {
                lines
                    .progress
                    .phase("waiting for another run's first index");
                thread::sleep(AWAIT_FIRST);
            }
            Ok(None) => break in_place(config, db.as_std_path(), &mut lines),
            Err(err) => break Err(err),
        }
    };
    lines.progress.finish();
    outcome.map(|o| Outcome {
        seconds: started.elapsed().as_secs_f64(),
        ..o
    })
}

/// The first run, building index.db aside (see `aside.rs`).
fn first(
    config: &Config,
    db: &Path,
    aside: Aside,
    mut conn: Connection,
    lines: &mut Lines,
) -> Result<Outcome> {
    let stop = Stop::default();
    let outcome = thread::scope(|scope| {
        let _writing = Writeback::file(scope, &stop, aside.file());
        attempts(config, db, &mut conn, lines, None)
    })?;
    if aside.install(conn, db)? {
        Ok(outcome)
    } else {
        // Another first run won: index.db is there now.
        in_place(config, db, lines)
    }
}

/// A run on index.db itself, inside one transaction.
fn in_place(config: &Config, db: &Path, lines: &mut Lines) -> Result<Outcome> {
    let (mut conn, check) = schema::open(db, config.rebuild)?;
    let stop = Stop::default();
    let outcome = thread::scope(|scope| {
        // A rebuild writes the whole index into the WAL.
        let _writing = config.rebuild.then(|| Writeback::wal(scope, &stop, db));
        attempts(config, db, &mut conn, lines, check)
    });
    if outcome.is_err() {
        // Closing would checkpoint a WAL left by an earlier, killed run into
        // index.db; a failed run leaves even the file's bytes alone.
        let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
    }
    outcome
}

/// Whether the file being rebuilt in place was sound, once its check is
/// done (true when there was none); asked before anything is committed.
fn sound(check: &mut Option<Health>) -> bool {
    check.take().is_none_or(Health::healthy)
}

/// Runs attempts until one is not overtaken by a changing journal. A
/// file the `check` finds damaged is recreated, and the run starts over.
fn attempts(
    config: &Config,
    db: &Path,
    conn: &mut Connection,
    lines: &mut Lines,
    mut check: Option<Health>,
) -> Result<Outcome> {
    let home = &config.home;
    let lock = LockFile::open(home.journal_lock().as_std_path())?;
    let mut changed = PathBuf::new();
    let journals = home.journals();
    let mut defer = true;
    let mut ahead = true;
    let mut failed = 0;
    while failed < ATTEMPTS {
        lines.progress.phase("reading journals");
        let annotations = Annotations::read(home)?;
        let _shared = lock.shared()?;
        let run = Run {
            db,
            journals: journals.as_std_path(),
            forced: config.rebuild,
            defer,
            ahead,
            annotations: &annotations,
        };
        let attempt = match run.attempt(conn, lines, &mut check) {
            Ok(attempt) => attempt,
            // Damage explains whatever went wrong reading the file.
            Err(err) => match check.take().map(Health::healthy) {
                Some(false) => Attempt::Damaged,
                _ => return Err(err),
            },
        };
        match attempt {
            Attempt::Done(outcome) => return Ok(outcome),
            Attempt::Damaged => schema::recreate(conn, db)?,
            Attempt::Changed(path) => {
                changed = path;
                failed += 1;
            }
            // Not a change seen during the run (the prefix may have changed
            // long before): plan again, hashing it first, which says whether
            // to rebuild. Happens once at most.
            Attempt::Unproven => defer = false,
            // Something else changed too: plan first, as without reading
            // ahead. Happens once at most.
            Attempt::Replan => ahead = false,
        }
    }
    Err(Error::unavailable(format!(
        "{} changed while it was being indexed, {ATTEMPTS} times in a row; index.db was left unchanged",
        changed.display()
    ))
    .with_hint("run `mcpeval index` again once the program rewriting it has stopped, or index a stable copy"))
}

struct Run<'a> {
    db: &'a Path,
    journals: &'a Path,
    forced: bool,
    /// Whether a grown last journal's prefix is proven before the commit
    /// rather than when planning.
    defer: bool,
    /// Whether the new lines of a grown last journal may be read while the
    /// other journals are hashed on another thread.
    ahead: bool,
    annotations: &'a Annotations,
}

/// What the load step did inside the transaction.
struct Loaded {
    /// Why the index is being rebuilt, when it is.
    rebuild: Option<String>,
    /// The journal bytes the new state relies on.
    observed: Vec<Observed>,
    /// Calls added (exact repeats not counted).
    inserted: i64,
    /// Journals the index now covers.
    journals: i64,
    /// Whether anything at all was read or added.
    moved: bool,
    /// Sessions whose windows may have changed.
    scope: Scope,
    /// The replaced calls, remembered to count new ones.
    prior: Option<prior::Prior>,
    /// The plan still being made, when the new lines were read ahead.
    pending: Option<Pending>,
}

/// A plan made on another thread while a grown last journal's new lines
/// are read: it hashes the other journals, which is most of a small
/// append's time, and may say that something else changed too.
struct Pending {
    planning: Option<thread::JoinHandle<(Result<Plan>, u64)>>,
    /// Set when the run leaves without waiting for the plan, so that its
    /// hashing stops rather than competing with the next attempt's.
    abandoned: Arc<AtomicBool>,
}

impl Pending {
    /// Starts the plan when the journals look as after an append to the
    /// last one alone (the same names, the last one longer than when
    /// indexed), and returns that journal open at its checkpoint, its
    /// prefix deferred, as the plan will find it.
    fn start(
        dir: &Path,
        checkpoints: &[Checkpoint],
        files: &[PathBuf],
    ) -> Option<(Box<Continuation>, Pending)> {
        let last = checkpoints.last()?;
        let same = files.len() == checkpoints.len()
            && files
                .iter()
                .zip(checkpoints)
                .all(|(f, c)| store::checkpoint::file_name(f) == c.name);
        if !same {
            return None;
        }
        let path = dir.join(&last.name);
        let mut file = journal::open(&path).ok()?;
        let meta = file.metadata().ok()?;
        if meta.len() <= last.size {
            return None;
        }
        file.seek(SeekFrom::Start(last.length)).ok()?;
        let continuation = Box::new(Continuation {
            checkpoint: last.clone(),
            path,
            file,
            stamp: Stamp::of(&meta),
            hasher: Hasher::new(),
            deferred: true,
        });
        let (dir, checkpoints, files) = (dir.to_path_buf(), checkpoints.to_vec(), files.to_vec());
        let abandoned = Arc::new(AtomicBool::new(false));
        let mut quiet = Lines::new(Progress::quiet());
        quiet.abandoned = Some(Arc::clone(&abandoned));
        let planning = thread::spawn(move || {
            let plan = checkpoint::plan(&dir, &checkpoints, &files, &mut quiet, true);
            (plan, quiet.progress.done())
        });
        let planning = Some(planning);
        Some((
            continuation,
            Pending {
                planning,
                abandoned,
            },
        ))
    }

    /// Waits for the plan: the journals it verified when it is the plan
    /// the new lines were read for, `None` when the run must plan again.
    fn finish(mut self, lines: &mut Lines) -> Result<Option<Vec<Observed>>> {
        let planning = self.planning.take().expect("joined once");
        let (plan, hashed) = planning
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        lines.progress.advance(hashed);
        Ok(match plan? {
            Plan::Extend {
                verified,
                last: Some(last),
                new,
            } if last.deferred && new.is_empty() => Some(verified),
            _ => None,
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.planning.is_some() {
            self.abandoned.store(true, Ordering::Relaxed);
        }
    }
}

/// What a plan says to read, with what it already verified.
struct Planned {
    checkpoints: Vec<Checkpoint>,
    /// Why the index is being rebuilt, when it is.
    rebuild: Option<String>,
    observed: Vec<Observed>,
    sources: Vec<Source>,
}

impl Run<'_> {
    fn attempt(
        &self,
        conn: &mut Connection,
        lines: &mut Lines,
        check: &mut Option<Health>,
    ) -> Result<Attempt> {
        let db = self.db;
        let fail = schema::fail(db);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&fail)?;
        let previous = index_db::state(&tx, db)?;
        let mut loaded = match self.load(&tx, previous.as_ref(), lines)? {
            Ok(loaded) => loaded,
            Err(retry) => return Ok(retry),
        };
        let pending = loaded.pending.take();

        let previous_calls = previous.as_ref().map_or(0, |p| p.calls);
        let calls_changed = loaded.rebuild.is_some() || loaded.inserted > 0;
        let links_stale = calls_changed
            || previous.as_ref().map(|p| p.annotations) != Some(self.annotations.mark);
        if !links_stale && !loaded.moved {
            // Nothing to write: the transaction rolls back untouched, once
            // a deferred prefix is proven (the other journals were hashed
            // when planning).
            let deferred = loaded.observed.iter().filter(|o| o.prefix.is_some());
            if let Some(retry) = self.check(&tx, deferred, lines)? {
                return Ok(retry);
            }
            if let Some(pending) = pending
                && pending.finish(lines)?.is_none()
            {
                return Ok(Attempt::Replan);
            }
            if !sound(check) {
                return Ok(Attempt::Damaged);
            }
            return Ok(Attempt::Done(Outcome {
                calls: previous_calls,
                new: 0,
                journals: loaded.journals,
                seconds: 0.0,
                rebuild: None,
            }));
        }

        lines.progress.phase("deriving windows");
        if calls_changed {
            windows::recompute(&tx, db, &loaded.scope)?;
        }
        if links_stale {
            links::relink(&tx, db, &self.annotations.list)?;
            // Findings were derived from the evidence that just changed:
            // drop them so no reader sees findings of calls that are gone.
            store::catalog::clear(&tx, db)?;
        }
        let (calls, new) = match loaded.rebuild {
            Some(_) => {
                let calls = tx
                    .query_row("SELECT count(*) FROM calls", [], |row| row.get(0))
                    .map_err(&fail)?;
                (calls, prior::count_new(&tx, db, loaded.prior)?)
            }
            None => (previous_calls + loaded.inserted, loaded.inserted),
        };
        let state = State {
            indexed_at: shared::time::now_rfc3339(),
            calls,
            annotations: self.annotations.mark,
        };
        schema::set_state(&tx, db, &state)?;

        lines.progress.phase("checking journals");
        if let Some(retry) = self.check(&tx, loaded.observed.iter(), lines)? {
            return Ok(retry);
        }
        // Read ahead, the new lines were proven first, while the plan was
        // still hashing the other journals.
        if let Some(pending) = pending {
            let Some(verified) = pending.finish(lines)? else {
                return Ok(Attempt::Replan);
            };
            if let Some(retry) = self.check(&tx, verified.iter(), lines)? {
                return Ok(retry);
            }
        }
        if !sound(check) {
            return Ok(Attempt::Damaged);
        }
        lines.progress.phase("committing");
        tx.commit().map_err(&fail)?;
        Ok(Attempt::Done(Outcome {
            calls,
            new,
            journals: loaded.journals,
            seconds: 0.0,
            rebuild: loaded.rebuild,
        }))
    }

    /// Checks that the journals still hold the bytes this run relies on,
    /// recording the hash of a proven deferred prefix in its checkpoint;
    /// says why the run must start over when they do not.
    fn check<'o>(
        &self,
        tx: &Connection,
        observed: impl Iterator<Item = &'o Observed>,
        lines: &mut Lines,
    ) -> Result<Option<Attempt>> {
        for seen in observed {
            match seen.check(lines)? {
                Check::Holds => {}
                Check::Proven(sha256) => seen.settle(tx, self.db, sha256)?,
                Check::Changed => return Ok(Some(Attempt::Changed(seen.path.clone()))),
                Check::Unproven => return Ok(Some(Attempt::Unproven)),
            }
        }
        Ok(None)
    }

    /// Builds the dropped indexes again and resolves repeats; meanwhile a
    /// second thread derives windows from the `feed`, which are stored when
    /// they describe the table (no repeat was removed). Returns the repeats
    /// removed and whether windows were stored.
    fn finish_bulk(
        &self,
        tx: &Connection,
        dropped: bulk::Dropped,
        feed: Option<Feed>,
    ) -> Result<(u64, bool)> {
        let db = self.db;
        thread::scope(|scope| {
            let (send, derived) = mpsc::sync_channel(WINDOW_BATCHES);
            let deriving = feed
                .filter(Feed::usable)
                .map(|feed| scope.spawn(move || feed.derive(&send)));
            let repeats = bulk::finish(tx, db, self.journals, dropped);
            let stored = match (&repeats, &deriving) {
                (Ok(0), Some(_)) => windows::store(tx, db, &derived).map(|()| true),
                _ => Ok(false),
            };
            // Hanging up stops a derivation whose windows are not wanted.
            drop(derived);
            if let Some(deriving) = deriving {
                deriving
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    .map_err(|e| Error::io("cannot derive failure windows", e))?;
            }
            Ok((repeats?, stored?))
        })
    }

    /// Plans against the checkpoints and reads what the plan says into
    /// `calls`, bringing the checkpoints up to date. `Unproven` when lines
    /// after a deferred prefix were refused and that prefix no longer
    /// matches its checkpoint: they were never the lines that follow it,
    /// and the plan must hash the prefix first to say what to do. Lines
    /// read ahead of a plan that turns out not to be theirs are `Replan`.
    fn load(
        &self,
        tx: &Connection,
        previous: Option<&State>,
        lines: &mut Lines,
    ) -> Result<std::result::Result<Loaded, Attempt>> {
        let db = self.db;
        let checkpoints = checkpoint::load(tx, db)?;
        let files = journal::files(self.journals)?;
        let sizes = files
            .iter()
            .filter_map(|p| p.metadata().ok())
            .map(|m| m.len());
        lines.progress.expect(sizes.sum());

        let ahead = match previous {
            Some(_) if !self.forced && self.defer && self.ahead => {
                Pending::start(self.journals, &checkpoints, &files)
            }
            _ => None,
        };
        if let Some((last, pending)) = ahead {
            let (path, prefix) = (last.path.clone(), last.prefix());
            let planned = Planned {
                checkpoints,
                rebuild: None,
                observed: Vec::new(),
                sources: vec![Source::Continue(last)],
            };
            return match self.read(tx, previous, lines, planned) {
                Ok(loaded) => Ok(Ok(Loaded {
                    pending: Some(pending),
                    ..loaded
                })),
                // The plan's errors and reasons come first, as without
                // reading ahead.
                Err(err) => match pending.finish(lines)? {
                    None => Ok(Err(Attempt::Replan)),
                    Some(_) if !prefix.holds(&path, lines)? => Ok(Err(Attempt::Unproven)),
                    Some(_) => Err(err),
                },
            };
        }

        let plan = match previous {
            _ if self.forced => Plan::Rebuild("--rebuild".into()),
            None => Plan::Rebuild("no previous index".into()),
            Some(_) => checkpoint::plan(self.journals, &checkpoints, &files, lines, self.defer)?,
        };
        let (rebuild, observed, sources) = match plan {
            Plan::Rebuild(reason) => (
                Some(reason),
                Vec::new(),
                files.into_iter().map(Source::Whole).collect(),
            ),
            Plan::Extend {
                verified,
                last,
                new,
            } => {
                let mut sources: Vec<Source> = last.into_iter().map(Source::Continue).collect();
                sources.extend(new.into_iter().map(Source::Whole));
                (None, verified, sources)
            }
        };
        let deferred = sources.iter().find_map(Source::deferred);
        let planned = Planned {
            checkpoints,
            rebuild,
            observed,
            sources,
        };
        match self.read(tx, previous, lines, planned) {
            Ok(loaded) => Ok(Ok(loaded)),
            Err(err) => match deferred {
                Some((path, prefix)) if !prefix.holds(&path, lines)? => Ok(Err(Attempt::Unproven)),
                _ => Err(err),
            },
        }
    }

    /// Reads the sources of a plan into `calls`.
    fn read(
        &self,
        tx: &Connection,
        previous: Option<&State>,
        lines: &mut Lines,
        planned: Planned,
    ) -> Result<Loaded> {
        let db = self.db;
        let Planned {
            checkpoints,
            rebuild,
            mut observed,
            sources,
        } = planned;
        let remember = rebuild.is_some() && previous.is_some_and(|p| p.calls > 0);
        let prior = match remember {
            true => Some(prior::remember(tx, db)?),
            false => None,
        };
        // A rebuild over calls keeps them until each is compared with the
        // row that takes its id, and writes again only what differs.
        let in_place = remember;
        if rebuild.is_some() {
            schema::clear(tx, db)?;
            if !in_place {
                tx.execute_batch("DELETE FROM calls")
                    .map_err(schema::fail(db))?;
            }
        }

        // Loading at least as much as is indexed: sort the indexes afterwards.
        let to_read: u64 = sources.iter().map(Source::bytes).sum();
        let indexed: u64 = checkpoints.iter().map(|c| c.length).sum();
        let bulk = rebuild.is_some() || (to_read >= BULK_BYTES && to_read > indexed);
        let dropped = if bulk {
            Some(bulk::begin(tx, db)?)
        } else {
            None
        };
        // A rebuild sets its calls aside in session order as it reads them;
        // their ids start at 1, in place or in an emptied table.
        let feed = rebuild
            .as_ref()
            .map(|_| Feed::new(db.parent().unwrap_or(Path::new(".")), 1));
        let mut loader = Loader::new(tx, db, bulk, feed, in_place)?;
        for source in sources {
            observed.push(loader.load(source, lines)?);
        }
        if let Some(end) = loader.next_id() {
            tx.execute("DELETE FROM calls WHERE id >= ?1", [end])
                .map_err(schema::fail(db))?;
        }
        lines.progress.phase("building indexes");
        let feed = loader.take_feed();
        let (repeats, derived) = match dropped {
            Some(dropped) => self.finish_bulk(tx, dropped, feed)?,
            None => (0, false),
        };

        let kept = if rebuild.is_some() {
            0
        } else {
            checkpoints.len() as i64
        };
        let journals = kept + loader.journals_added as i64;
        let moved = loader.consumed > 0 || loader.journals_added > 0;
        let inserted = (loader.inserted - repeats) as i64;
        let touched = loader.scope();
        Ok(Loaded {
            scope: match (&rebuild, derived) {
                (_, true) => Scope::Derived,
                (Some(_), false) => Scope::All,
                (None, false) => touched,
            },
            rebuild,
            observed,
            inserted,
            journals,
            moved,
            prior,
            pending: None,
        })
    }
}
