//! Starting the disk's work early. A long run writes hundreds of
//! megabytes that are synced only at its end (a first index before it is
//! linked into place, a rebuild's WAL before its checkpoint), and the
//! kernel would otherwise hold them until then: the run waited for the
//! disk after its CPU work was done. A thread asks the kernel every
//! quarter second to write out what the file holds so far, so that the
//! writing overlaps the reading and sorting, and the sync at the end finds
//! little left. Durability is unchanged: the end's sync still decides.

use std::fs::File;
use std::path::Path;
use std::sync::{Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

/// How often the file is written out.
const EVERY: Duration = Duration::from_millis(250);

/// Asked to stop, and woken when it is.
#[derive(Default)]
pub struct Stop {
    asked: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// Waits a tick; true once stopping was asked.
    fn wait(&self) -> bool {
        let asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        let (asked, _) = self
            .wake
            .wait_timeout_while(asked, EVERY, |asked| !*asked)
            .unwrap_or_else(|e| e.into_inner());
        *asked
    }

    fn ask(&self) {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }
}

/// The writing-out thread; it stops when this is dropped.
pub struct Writeback<'scope, 'stop> {
    stop: &'stop Stop,
    _thread: ScopedJoinHandle<'scope, ()>,
}

impl<'scope, 'stop: 'scope> Writeback<'scope, 'stop> {
    /// Writes out `file` as it grows. It is borrowed, never duplicated or
    /// closed here: closing any descriptor of a file would release the
    /// POSIX locks SQLite holds on it.
    pub fn file<'env>(
        scope: &'scope Scope<'scope, 'env>,
        stop: &'stop Stop,
        file: &'scope File,
    ) -> Writeback<'scope, 'stop> {
        Writeback::every_tick(scope, stop, move || {
            let _ = file.sync_data();
        })
    }

    /// Writes out the WAL of the database at `db` as it grows, opening it
    /// once it exists. SQLite locks a WAL-mode database through its `-shm`
    /// file and the database itself, never the WAL, so a descriptor of the
    /// WAL may come and go.
    pub fn wal<'env>(
        scope: &'scope Scope<'scope, 'env>,
        stop: &'stop Stop,
        db: &'scope Path,
    ) -> Writeback<'scope, 'stop> {
        let mut name = db.as_os_str().to_owned();
        name.push("-wal");
        let mut wal: Option<File> = None;
        Writeback::every_tick(scope, stop, move || {
            if wal.is_none() {
                wal = File::open(&name).ok();
            }
            if let Some(file) = &wal {
                let _ = file.sync_data();
            }
        })
    }

    /// Runs `tick` every [`EVERY`] until stopping is asked.
    fn every_tick<'env>(
        scope: &'scope Scope<'scope, 'env>,
        stop: &'stop Stop,
        mut tick: impl FnMut() + Send + 'scope,
    ) -> Writeback<'scope, 'stop> {
        let thread = scope.spawn(move || {
            while !stop.wait() {
                tick();
            }
        });
        Writeback {
            stop,
            _thread: thread,
        }
    }
}

impl Drop for Writeback<'_, '_> {
    fn drop(&mut self) {
        self.stop.ask();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::create(dir.path().join("f")).unwrap();
        file.write_all(b"data").unwrap();
        let stop = Stop::default();
        let db = dir.path().join("db");
        // The scope joins the thread: a writer that did not stop would
        // hang here.
        std::thread::scope(|scope| {
            let _writing = Writeback::file(scope, &stop, &file);
            let _wal = Writeback::wal(scope, &stop, &db);
        });
        assert!(stop.wait(), "asked, the wait says so");
        assert!(!Stop::default().wait(), "not asked, a tick passes");
    }
}
