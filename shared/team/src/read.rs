//! Reading the team straight from the database: what `findings`,
//! `readiness`, `report`, `export-issues`, `share`, `serve` and
//! `generate` do with a team database.
//!
//! A reader needs no copy of the team and keeps none. It connects with
//! SELECT rights only (a read-only role works), on a machine that may
//! never have run `index` and may hold no journal: it reads the team's
//! lifecycle and the last promote's findings (small tables, whatever
//! the number of calls) in one read-only snapshot, into SQLite files in a
//! private temporary directory that lives as long as the command, and
//! hands that directory to the same code that reads one store. The counts
//! `readiness` shows are sums of the daily counts `index` uploads beside
//! the calls (`mcpeval.daily`), a few rows per day and tool.
//!
//! It must never migrate, insert, lock or write anything in the database,
//! nor write inside the store: a reader may run under a role that cannot,
//! on a store of another machine's CI cache.

use std::fs;

use postgres::{Client, IsolationLevel, Transaction};

use shared::error::{Error, Result};
use shared::escape;
use shared::home::Home;
use store::db;
use store::fault;
use store::index_db;
use store::salt::Salt;

use super::database::Database;
use super::scope::Scope;
use super::{check_salt, column, pg_error, pull, pull_shared, recorded_fingerprint, schema};

/// A read-only connection to a store's team database.
pub(crate) struct Reader {
    pub(crate) client: Client,
    pub(crate) shown: String,
    salt: Salt,
}

/// The calls and failures of one (UTC day, server, tool) over the whole
/// team, counted as `readiness` counts a store's journals: traffic calls
/// only (captured or traced, never a probe's); an error, or a malformed
/// result, is a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Daily {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// Traffic calls (captured or traced).
    pub calls: u64,
    /// Of which failed.
    pub failures: u64,
}

/// The team's daily counts, and the number of journals they come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trends {
    /// Journals of every store.
    pub journals: u64,
    /// Per (day, server, tool), ordered by server, tool, day.
    pub daily: Vec<Daily>,
}

/// What a reader reads: the store itself or, with a team database, a
/// private copy of the team's lifecycle and findings that is removed with
/// this value.
pub struct View {
    home: Home,
    team: Option<(Reader, tempfile::TempDir)>,
}

impl std::ops::Deref for View {
    type Target = Home;

    fn deref(&self) -> &Home {
        &self.home
    }
}

impl View {
    /// The store to read (see the module's comment).
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Whether this reads a team database.
    pub fn is_team(&self) -> bool {
        self.team.is_some()
    }

    /// Brings the calls of every store into the view as journals (what
    /// `share` packs). For one store, its own journals are already there.
    pub fn with_journals(&mut self) -> Result<()> {
        if let Some((reader, _)) = &mut self.team {
            let shown = reader.shown.clone();
            pull::run(&mut reader.client, &shown, &self.home)?;
        }
        Ok(())
    }

    /// The team's daily counts (see [`Trends`]); `None` for one store,
    /// whose `readiness` counts its own journals.
    pub fn trends(&mut self) -> Result<Option<Trends>> {
        let Some((reader, _)) = &mut self.team else {
            return Ok(None);
        };
        let shown = reader.shown.clone();
        fault::team_statement();
        let mut tx = snapshot(&mut reader.client, &shown)?;
        fault::team_statement();
        let journals: i64 = tx
            .query_one("SELECT count(*) FROM mcpeval.journals", &[])
            .map_err(pg_error(&shown))
            .and_then(|row| column(&row, 0, &shown))?;
        // `index` keeps each journal's daily counts beside its calls.
        fault::team_statement();
        let rows = tx
            .query(
                "SELECT day, server, tool, sum(calls)::bigint, sum(failures)::bigint
                 FROM mcpeval.daily GROUP BY 1, 2, 3",
                &[],
            )
            .map_err(pg_error(&shown))?;
        let mut daily = rows
            .iter()
            .map(|r| {
                Ok(Daily {
                    day: column(r, 0, &shown)?,
                    server: column(r, 1, &shown)?,
                    tool: column(r, 2, &shown)?,
                    calls: column::<i64>(r, 3, &shown)?.unsigned_abs(),
                    failures: column::<i64>(r, 4, &shown)?.unsigned_abs(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        fault::team_statement();
        tx.commit().map_err(pg_error(&shown))?;
        // Byte order, as one store's SQLite orders its names.
        daily.sort_by(|a, b| (&a.server, &a.tool, &a.day).cmp(&(&b.server, &b.tool, &b.day)));
        Ok(Some(Trends {
            journals: journals.unsigned_abs(),
            daily,
        }))
    }
}

/// The store to read: the store itself, or, with a team database, the
/// team's lifecycle and findings as the database holds them now, read
/// with SELECT rights alone (see the module's comment). A store that does
/// not exist is refused first (status 3, see [`store::dir::require`]),
/// since its salt is what keys the team; so is a store that belongs to a
/// team but names no database. A command that reads a row the database
/// holds refused (`scope` says which it reads) is refused with it
/// (status 3).
pub fn view(home: &Home, scope: Scope) -> Result<View> {
    store::dir::require(home)?;
    let Some(mut reader) = Reader::open(home)? else {
        return Ok(View {
            home: home.clone(),
            team: None,
        });
    };
    // Private from its first moment, as a store is.
    let dir = tempfile::Builder::new()
        .prefix("mcpeval-team-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .map_err(|e| {
            Error::io(
                "cannot create a temporary directory for the team's findings",
                e,
            )
        })?;
    let path = camino::Utf8Path::from_path(dir.path()).ok_or_else(|| {
        Error::usage(format!(
            "the temporary directory {} is not valid UTF-8",
            dir.path().display()
        ))
        .with_hint("point TMPDIR at a directory whose path is UTF-8")
    })?;
    let view = home.team_reading(path);
    reader.fill(&view, &scope)?;
    Ok(View {
        home: view,
        team: Some((reader, dir)),
    })
}

/// Refuses, as [`view`] does, a store that is not there or cannot read
/// its team database; for commands that leave the reading to their
/// siblings.
pub fn check(home: &Home) -> Result<()> {
    store::dir::require(home)?;
    Reader::open(home).map(drop)
}

impl Reader {
    /// Connects to the store's team database for reading, if it has one:
    /// refuses a database newer than this binary (status 6), one no store
    /// of this release has written to yet (status 3: a reader changes
    /// nothing, the schema included), and a store whose salt is not the
    /// team's (status 6). A store that joined a team but names no
    /// database is refused (status 3) rather than read as if alone.
    pub(crate) fn open(home: &Home) -> Result<Option<Reader>> {
        let own = home.own();
        let Some(database) = Database::resolve(home)? else {
            return match joined(&own)? {
                Some(id) => Err(no_database(&own, &id)),
                None => Ok(None),
            };
        };
        let shown = database.shown().to_owned();
        let mut client = database.connect()?;
        let version = schema::current(&mut client, &shown)?;
        schema::check_not_newer(version, &shown)?;
        let recorded = match version {
            0 => None,
            _ => recorded_fingerprint(&mut client, &shown)?,
        };
        let Some(recorded) = recorded else {
            return Err(Error::unavailable(format!(
                "the team database {shown} holds no team yet: no store has run mcpeval index with it"
            ))
            .with_hint(
                "run `mcpeval index`, then `mcpeval promote`, on a machine of the team that may write to the database",
            ));
        };
        if version < schema::version() {
            return Err(Error::unavailable(format!(
                "the team database {shown} has schema version {version}, older than this mcpeval's {}; a reader does not change it",
                schema::version()
            ))
            .with_hint(
                "run `mcpeval index` once on a machine of the team that may write to the database: it brings the schema up to date",
            ));
        }
        let salt = Salt::load(&own)?;
        check_salt(salt.as_ref(), &recorded, &shown, &own)?;
        let salt = salt.expect("check_salt refuses a store without a salt");
        Ok(Some(Reader {
            client,
            shown,
            salt,
        }))
    }

    /// Copies the team's lifecycle and findings into `view` in one
    /// read-only snapshot, with an index state that holds the team's
    /// calls; refuses (status 3) when a row `scope` reads is refused.
    fn fill(&mut self, view: &Home, scope: &Scope) -> Result<()> {
        let shown = self.shown.clone();
        let salt = self.salt.clone();
        fault::team_statement();
        let mut tx = snapshot(&mut self.client, &shown)?;
        let refused = pull_shared(&mut tx, &shown, &salt, view)?;
        // Each journal's lines are its calls (a line that is not a call
        // refuses the whole upload), so their sum is the team's calls,
        // without counting millions of rows.
        fault::team_statement();
        let calls: i64 = tx
            .query_one(
                "SELECT coalesce(sum(lines), 0)::bigint FROM mcpeval.journals",
                &[],
            )
            .map_err(pg_error(&shown))
            .and_then(|row| column(&row, 0, &shown))?;
        fault::team_statement();
        tx.commit().map_err(pg_error(&shown))?;
        let path = view.index_db();
        let mut index = db::open(path.as_std_path(), &index_db::SCHEMA)?;
        db::write(&mut index, |local| {
            local
                .execute(
                    "INSERT OR REPLACE INTO state(id, indexed_at, calls, annotations_max_id, annotations_count)
                     VALUES (1, ?1, ?2, 0, 0)",
                    (shared::time::now_rfc3339(), calls),
                )
                .map(drop)
                .map_err(|e| db::sql_error(&path, e))
        })?;
        scope.check(&refused, &shown)
    }
}

/// A read-only transaction that sees one state of the database.
pub(crate) fn snapshot<'a>(client: &'a mut Client, shown: &str) -> Result<Transaction<'a>> {
    client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(pg_error(shown))
}

/// The store id of a store that joined a team (`store-id`, written by its
/// first `index` with a database), if it did.
fn joined(own: &Home) -> Result<Option<String>> {
    let path = own.store_id();
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io(format_args!("cannot read {path}"), err)),
    }
}

/// A store of a team read without its database: its own files hold only
/// what it captured, and findings and lifecycle as they were before it
/// joined, so it is refused rather than shown as the team.
fn no_database(own: &Home, id: &str) -> Error {
    Error::unavailable(format!(
        "this store ({}) belongs to a team (it uploads to a team database as store {}), but no team database is named: its own files are not the team's findings",
        own.root(),
        escape::quoted(id)
    ))
    .with_hint(format!(
        "name the database as \"database_url\" in {} (it reaches every command, `mcpeval serve` started by an MCP client included), or with MCPEVAL_DATABASE_URL or --database URL; to use this store alone again, delete {}",
        own.config(),
        own.store_id()
    ))
}
