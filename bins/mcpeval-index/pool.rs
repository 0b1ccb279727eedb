//! With a team database: upload this store's calls, then bring this
//! machine's team view up to date and index it like any store.

use std::time::Instant;

use shared::Result;
use team::{self, Joined, Pulled, Team, Uploaded};

use crate::args::Config;
use crate::refresh::{self, Outcome};

/// What the team part of a run did, for the summary.
#[derive(Debug)]
pub struct Synced {
    /// The database, shown without a password.
    pub database: String,
    pub uploaded: Uploaded,
    /// What this store's own lifecycle brought into the team's, on its
    /// first run with the database.
    pub joined: Option<Joined>,
    pub pulled: Pulled,
    /// The view's own index run.
    pub view: Outcome,
    /// Seconds spent uploading, and bringing the view's lifecycle and
    /// journals up to date (its index run has its own seconds).
    pub upload_seconds: f64,
    pub pull_seconds: f64,
}

/// Uploads, pulls and indexes the view. `--rebuild` replaces this store's
/// calls in the database and rebuilds the view's index.
pub fn run(mut team: Team, config: &Config) -> Result<Synced> {
    let database = team.shown().to_owned();
    let started = Instant::now();
    let uploaded = team.upload(&config.home, config.rebuild)?;
    let joined = team.join(&config.home)?;
    let upload_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    // The view's annotations come from the team's lifecycle.
    // Indexing reads no row for itself: a refused one stays out of the view
    // for the readers to refuse.
    let view = team.refresh_view(&config.home, &team::Scope::Nothing)?;
    let pulled = team.pull(&view)?;
    let pull_seconds = started.elapsed().as_secs_f64();
    let outcome = refresh::run(&Config {
        home: view.clone(),
        rebuild: config.rebuild,
        format: config.format,
    })?;
    team::mark_indexed(&view, pulled.generation)?;
    Ok(Synced {
        database,
        uploaded,
        joined,
        pulled,
        view: outcome,
        upload_seconds,
        pull_seconds,
    })
}
