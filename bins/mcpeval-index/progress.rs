//! A progress bar on stderr for long runs, and nothing otherwise.
//!
//! It appears only when stderr is a terminal that may be decorated and the
//! run has already taken a second, so quick runs and pipelines stay quiet.
//! It must never write to stdout.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

/// Bytes of journal read so far, out of an estimated total.
pub struct Progress {
    enabled: bool,
    started: Instant,
    total: u64,
    done: u64,
    phase: &'static str,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            enabled: cli::decorate_stderr(),
            started: Instant::now(),
            total: 0,
            done: 0,
            phase: "reading journals",
            bar: None,
        }
    }

    /// One that never shows a bar, for reading on another thread; its
    /// count is added to the shown one afterwards.
    pub fn quiet() -> Progress {
        Progress {
            enabled: false,
            ..Progress::new()
        }
    }

    /// Bytes recorded as read so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Adds `bytes` still to be read to the total.
    pub fn expect(&mut self, bytes: u64) {
        self.total += bytes;
        if let Some(bar) = &self.bar {
            bar.set_length(self.total);
        }
    }

    /// Records `bytes` read.
    pub fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        match &self.bar {
            Some(bar) => bar.set_position(self.done),
            None if self.enabled && self.started.elapsed() >= DELAY => {
                let style =
                    ProgressStyle::with_template("{msg:18} [{bar:30}] {bytes}/{total_bytes}")
                        .expect("progress template")
                        .progress_chars("=> ");
                let bar =
                    ProgressBar::with_draw_target(Some(self.total), ProgressDrawTarget::stderr())
                        .with_style(style)
                        .with_message(self.phase)
                        .with_position(self.done);
                self.bar = Some(bar);
            }
            None => {}
        }
    }

    /// Names the step under way once the journals are read.
    pub fn phase(&mut self, name: &'static str) {
        self.phase = name;
        match &self.bar {
            Some(bar) => bar.set_message(name),
            // A slow step after quick reading still earns the bar.
            None => self.advance(0),
        }
    }

    /// Removes the bar, so the summary line stands alone.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
