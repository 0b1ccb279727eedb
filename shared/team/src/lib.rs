//! The team store (SPEC §11): many machines' evidence pooled in one
//! PostgreSQL database.
//!
//! Capture stays local. `index` uploads the store's calls (the sanitized
//! rows of its `index.db`, never a journal file or the salt) with its
//! partial aggregates (the module `partials`), which `promote` merges in
//! SQL, and then brings this machine's *team view* up to date: a
//! directory laid out as a store of its own (`team/` inside the store),
//! whose journals are rebuilt from every store's calls and indexed by the
//! same code as any store. The
//! lifecycle and the last promote's findings live in the database; a
//! command copies them into the view when it starts ([`view`]), and a
//! command that changes them does so inside one serializable transaction
//! that holds the team's lifecycle lock from that copy to the write back
//! ([`write()`]). So every command reads and writes a team with the rules,
//! words and statuses it uses on one store, and a team's findings are the
//! findings one store holding every machine's journals would have.
//!
//! The database is shared storage, not a trust root: the team salt is.
//! Every lifecycle and catalog row in it carries a MAC keyed by the team
//! salt, and a view takes only the rows that show a valid one and hold
//! names and argument shapes capture could have written (the module
//! `trust`); so whoever can write the database but has no salt cannot
//! close a finding, record a run or put words in front of an agent. A row
//! that fails is refused: left out of the view, and written back as it
//! was, never signed (only a promote, which recomputes the findings,
//! replaces the catalog's). It stops only the commands that read it: each
//! says what it reads ([`Scope`]), and is refused (status 3, naming the
//! table and the row) when that takes in a refused row.
//!
//! Rows written before this release have no MAC, and SQL has no salt to
//! make one: the first command of this release that connects with the
//! team salt signs every one of them once, in the transaction that adds
//! the MAC column (see the module `schema`), trusting them as they are.
//! After that a row without a MAC is refused like one with a wrong MAC.

mod database;
mod join;
mod mirror;
mod partials;
mod pull;
mod read;
mod schema;
mod scope;
mod tls;
mod token;
mod trust;
mod upload;

use std::fs;

use postgres::{Client, IsolationLevel, Transaction};

pub use database::{DATABASE_ENV, Database};
pub use join::Joined;
pub use pull::{Pulled, mark_indexed};
pub use read::{Daily, Trends, View, check, view};
pub use scope::Scope;
pub use store::partial::Partials;
pub use upload::Uploaded;

use shared::error::{Error, Result};
use shared::escape;
use shared::home::Home;
use store::db;
use store::fault;
use store::hash;
use store::index_db;
use store::lifecycle;
use store::lock::LockFile;
use store::salt::Salt;

/// Advisory lock held while the schema changes.
const LOCK_SCHEMA: i64 = 0x6d63_7065_0001;
/// Advisory lock held by every lifecycle or findings change.
const LOCK_LIFECYCLE: i64 = 0x6d63_7065_0002;

/// A connection to the team database on behalf of one store.
pub struct Team {
    client: Client,
    shown: String,
    store_id: String,
    /// The team salt, keying every row's MAC.
    salt: Salt,
}

impl Team {
    /// Connects to the store's team database, if it has one: refuses a
    /// database newer than this binary and a store whose salt is not the
    /// team's (status 6, before anything is written), brings the schema
    /// up to date and registers the store.
    pub fn open(home: &Home) -> Result<Option<Team>> {
        let Some(database) = Database::resolve(home)? else {
            return Ok(None);
        };
        let own = home.own();
        let shown = database.shown().to_owned();
        let mut client = database.connect()?;
        let version = schema::current(&mut client, &shown)?;
        schema::check_not_newer(version, &shown)?;
        let salt = Salt::load(&own)?;
        let recorded = match version {
            0 => None,
            _ => recorded_fingerprint(&mut client, &shown)?,
        };
        if let Some(recorded) = &recorded {
            check_salt(salt.as_ref(), recorded, &shown, &own)?;
        }
        // The first store of a team brings the team's salt (a store that
        // has none yet makes it now, as its first capture would); the
        // migration signs the rows of an earlier release with it.
        let salt = match salt {
            Some(salt) => salt,
            None => Salt::load_or_create(&own)?,
        };
        schema::migrate(&mut client, &shown, &salt)?;
        fault::team_statement();
        client
            .execute(
                "INSERT INTO mcpeval.meta(key, value) VALUES ('salt_fingerprint', $1)
                 ON CONFLICT (key) DO NOTHING",
                &[&fingerprint(&salt)],
            )
            .map_err(pg_error(&shown))?;
        let recorded = recorded_fingerprint(&mut client, &shown)?.unwrap_or_default();
        check_salt(Some(&salt), &recorded, &shown, &own)?;
        let store_id = store_id(&own)?;
        fault::team_statement();
        client
            .execute(
                "INSERT INTO mcpeval.stores(store_id, first_seen) VALUES ($1, $2)
                 ON CONFLICT (store_id) DO NOTHING",
                &[&store_id, &shared::time::now_rfc3339()],
            )
            .map_err(pg_error(&shown))?;
        Ok(Some(Team {
            client,
            shown,
            store_id,
            salt,
        }))
    }

    /// The database as the suite shows it: without a password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Uploads this store's calls (the module `upload` says how); with
    /// `replace`, every one of them anew.
    pub fn upload(&mut self, own: &Home, replace: bool) -> Result<Uploaded> {
        upload::run(self, own, replace)
    }

    /// Copies the team's lifecycle and findings into this machine's team
    /// view and returns it (see [`view`]); refuses (status 3) when a row
    /// that `scope` reads is refused.
    pub fn refresh_view(&mut self, home: &Home, scope: &Scope) -> Result<Home> {
        let view = home.team_view();
        store::dir::ensure(&view)?;
        let lock = view_lock(&view)?;
        let _held = lock.exclusive()?;
        let shown = self.shown.clone();
        let salt = self.salt.clone();
        fault::team_statement();
        let mut tx = read::snapshot(&mut self.client, &shown)?;
        let refused = pull_shared(&mut tx, &shown, &salt, &view)?;
        fault::team_statement();
        tx.commit().map_err(pg_error(&shown))?;
        scope.check(&refused, &shown)?;
        Ok(view)
    }

    /// Whether this machine's view was indexed from the evidence the
    /// database holds now (no call or annotation arrived since).
    pub fn view_is_current(&mut self, home: &Home) -> Result<bool> {
        let shown = self.shown.clone();
        let mut tx = self.client.transaction().map_err(pg_error(&shown))?;
        let generation = generation(&mut tx, &shown)?;
        tx.commit().map_err(pg_error(&shown))?;
        Ok(pull::indexed_generation(&home.team_view())? >= generation)
    }

    /// Whether every store's partial aggregates merge exactly into the
    /// groups one store holding every journal would have (see the module
    /// `partials`); when not, promote reads the calls in this machine's
    /// view, which `mcpeval index` brings up to date.
    pub fn merges_exactly(&mut self) -> Result<bool> {
        let shown = self.shown.clone();
        fault::team_statement();
        let mut tx = self.client.transaction().map_err(pg_error(&shown))?;
        let inexact = partials::inexact(&mut tx, &shown)?;
        fault::team_statement();
        tx.commit().map_err(pg_error(&shown))?;
        Ok(inexact.is_none())
    }

    /// Rebuilds the view's journals from the database's calls (see
    /// the module `pull`).
    pub fn pull(&mut self, view: &Home) -> Result<Pulled> {
        pull::run(&mut self.client, &self.shown, view)
    }
}

/// Whether the store reads a team: it names a team database, or it
/// joined one (it has a store id) and should.
pub fn belongs(home: &Home) -> Result<bool> {
    Ok(Database::resolve(home)?.is_some() || home.own().store_id().exists())
}

/// Whether the team's settings ask for witnessed closures: the row
/// `require_witnessed` = `true` of `mcpeval.meta`. It can only make a
/// closure harder (a store's own config.json may ask for it too), so a
/// writer of the database without the salt gains nothing by changing it.
pub fn require_witnessed(home: &Home) -> Result<bool> {
    let Some(mut team) = Team::open(home)? else {
        return Ok(false);
    };
    let shown = team.shown.clone();
    fault::team_statement();
    let row = team
        .client
        .query_opt(
            "SELECT value FROM mcpeval.meta WHERE key = 'require_witnessed'",
            &[],
        )
        .map_err(pg_error(&shown))?;
    Ok(match row {
        Some(row) => column::<String>(&row, 0, &shown)?.trim() == "true",
        None => false,
    })
}

/// Runs `work`, a change of the lifecycle or of the findings, on the store
/// or, with a team database, on the team view inside one serializable
/// transaction holding the team's lifecycle lock: the view is brought up
/// to date first (refused, status 3, when a row that `scope` reads is
/// refused), and what `work` changed is written back before the commit,
/// with the refused rows as they were. A failure anywhere leaves the
/// database as it was.
pub fn write<T>(home: &Home, scope: Scope, work: impl FnOnce(&Home) -> Result<T>) -> Result<T> {
    write_on(home, &scope, work)
}

/// [`write()`] for `promote`, which reads the whole lifecycle
/// ([`Scope::Lifecycle`]) and replaces the findings, refused rows of them
/// included. `work` is handed every store's partial aggregates merged in
/// the database, with the false-success groups of the team's annotations
/// (the module `partials`), read in the transaction its findings are
/// written in; `None` for one store, and for a team whose aggregates do
/// not merge exactly ([`Team::merges_exactly`]): then `work` reads this
/// machine's view, and promote refuses (status 3, nothing written) when
/// that view was indexed from older evidence than the database holds
/// now, since promoting it would replace the team's findings with those
/// of calls the team has moved past.
pub fn promote<T>(
    home: &Home,
    work: impl FnOnce(&Home, Option<Partials>) -> Result<T>,
) -> Result<T> {
    let Some(mut team) = Team::open(home)? else {
        return work(home, None);
    };
    write_team(&mut team, home, &Scope::Lifecycle, true, None, work)
}

fn write_on<T>(home: &Home, scope: &Scope, work: impl FnOnce(&Home) -> Result<T>) -> Result<T> {
    let Some(mut team) = Team::open(home)? else {
        return work(home);
    };
    write_team(&mut team, home, scope, false, None, |view, _| work(view))
}

/// [`write_on`] with the team open; `joining` names a store whose
/// lifecycle `work` brings into the team's, marked as joined in the same
/// transaction. `promoting`: `work` recomputes the catalog (so the
/// catalog's refused rows are not kept) from the merged aggregates, or
/// from a view that must be current (see [`promote`]).
fn write_team<T>(
    team: &mut Team,
    home: &Home,
    scope: &Scope,
    promoting: bool,
    joining: Option<&str>,
    work: impl FnOnce(&Home, Option<Partials>) -> Result<T>,
) -> Result<T> {
    let view = home.team_view();
    store::dir::ensure(&view)?;
    let lock = view_lock(&view)?;
    let _held = lock.exclusive()?;
    let shown = team.shown.clone();
    // The lock is taken before the transaction: a serializable snapshot is
    // taken by its first statement, and one taken while waiting would miss
    // what the holder commits, and fail at the write back. It is released
    // after the commit, or with the connection when anything fails.
    fault::team_statement();
    team.client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_LIFECYCLE])
        .map_err(pg_error(&shown))?;
    fault::team_statement();
    let mut tx = team
        .client
        .build_transaction()
        .isolation_level(IsolationLevel::Serializable)
        .start()
        .map_err(pg_error(&shown))?;
    let refused = pull_shared(&mut tx, &shown, &team.salt, &view)?;
    scope.check(&refused, &shown)?;
    // The generation the findings are promoted from.
    let mut promoted_from = None;
    let mut pooled = None;
    if promoting {
        let generation = generation(&mut tx, &shown)?;
        if partials::inexact(&mut tx, &shown)?.is_none() {
            // The team's annotations, as the view now holds them.
            let annotations = lifecycle::list(&lifecycle::open(&view)?)?;
            pooled = Some(partials::merged(&mut tx, &shown, &annotations)?);
            promoted_from = Some(generation);
        } else if pull::indexed_generation(&view)? < generation {
            return Err(Error::unavailable(format!(
                "this store's view of the team database {shown} is behind it: calls or annotations \
                 arrived since this store last ran mcpeval index; nothing was promoted"
            ))
            .with_hint("run mcpeval index, then mcpeval promote"));
        }
    }
    let before = Snapshot::take(&view)?;
    let value = work(&view, pooled)?;
    let after = Snapshot::take(&view)?;
    let mut evidence_changed = false;
    for (old, new) in before.lifecycle.iter().zip(&after.lifecycle) {
        if old.digest != new.digest {
            mirror::push(&mut tx, &shown, &team.salt, new.table, &new.rows, &refused)?;
            evidence_changed |= new.table.local == "annotations";
        }
    }
    let digests = |s: &Snapshot| s.catalog.iter().map(|m| m.digest).collect::<Vec<_>>();
    if digests(&before) != digests(&after) {
        // A promote's findings replace the catalog, refused rows and all:
        // it is how they are repaired.
        let kept: &[trust::Refused] = if promoting { &[] } else { &refused };
        for new in &after.catalog {
            mirror::push(&mut tx, &shown, &team.salt, new.table, &new.rows, kept)?;
        }
        let indexed = match promoted_from {
            Some(generation) => generation,
            None => pull::indexed_generation(&view)?,
        };
        set_meta(&mut tx, &shown, "promoted_generation", &indexed.to_string())?;
    }
    if evidence_changed {
        bump_generation(&mut tx, &shown)?;
    }
    if let Some(store) = joining {
        join::mark(&mut tx, &shown, store)?;
    }
    fault::team_statement();
    tx.commit().map_err(|e| {
        pg_error(&shown)(e).with_hint("another machine changed the team's lifecycle at the same moment; run the command again")
    })?;
    fault::team_statement();
    team.client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_LIFECYCLE])
        .map_err(pg_error(&shown))?;
    Ok(value)
}

/// One mirrored table's rows in the view, with their digest.
struct Mirrored {
    table: &'static mirror::Table,
    digest: [u8; 32],
    rows: Vec<Vec<rusqlite::types::Value>>,
}

/// The view's mirrored tables as `work` found and left them.
struct Snapshot {
    lifecycle: Vec<Mirrored>,
    catalog: Vec<Mirrored>,
}

impl Snapshot {
    fn take(view: &Home) -> Result<Snapshot> {
        let read = |conn: &rusqlite::Connection,
                    path: &camino::Utf8Path,
                    tables: &'static [mirror::Table]| {
            tables
                .iter()
                .map(|table| {
                    let rows = mirror::rows(conn, path.as_std_path(), table)?;
                    Ok(Mirrored {
                        table,
                        digest: mirror::digest(&rows),
                        rows,
                    })
                })
                .collect::<Result<Vec<_>>>()
        };
        let life = lifecycle::open(view)?;
        let index = db::open(view.index_db().as_std_path(), &index_db::SCHEMA)?;
        Ok(Snapshot {
            lifecycle: read(&life, &view.lifecycle_db(), mirror::LIFECYCLE)?,
            catalog: read(&index, &view.index_db(), mirror::CATALOG)?,
        })
    }
}

/// Copies the lifecycle and the findings from the database into the view,
/// and returns the rows it refused (see [`mirror::pull`]); findings
/// promoted from calls the database has since moved past are marked out
/// of date, as `index` marks a store's.
///
/// A refused row never enters the view, so no command, whatever its
/// scope, can read or show what it holds, even one that reads the view
/// while another command's pull is refusing rows it does not read.
fn pull_shared(
    tx: &mut Transaction<'_>,
    shown: &str,
    salt: &Salt,
    view: &Home,
) -> Result<Vec<trust::Refused>> {
    let mut refused = Vec::new();
    let life_path = view.lifecycle_db();
    let mut life = lifecycle::open(view)?;
    db::write(&mut life, |local| {
        for table in mirror::LIFECYCLE {
            refused.extend(mirror::pull(
                tx,
                shown,
                salt,
                local,
                life_path.as_std_path(),
                table,
            )?);
        }
        Ok(())
    })?;
    let generation = meta(tx, shown, "generation")?;
    let promoted = meta(tx, shown, "promoted_generation")?;
    let changed_at = meta(tx, shown, "changed_at")?;
    let index_path = view.index_db();
    let mut index = db::open(index_path.as_std_path(), &index_db::SCHEMA)?;
    db::write(&mut index, |local| {
        for table in mirror::CATALOG {
            refused.extend(mirror::pull(
                tx,
                shown,
                salt,
                local,
                index_path.as_std_path(),
                table,
            )?);
        }
        if promoted != generation {
            let at = changed_at.unwrap_or_else(shared::time::now_rfc3339);
            local
                .execute(
                    "UPDATE promotion SET outdated_at = ?1 WHERE outdated_at IS NULL",
                    [at],
                )
                .map_err(|e| db::sql_error(&index_path, e))?;
        }
        Ok(())
    })?;
    Ok(refused)
}

/// `team/.lock`: one command at a time brings this machine's view up to
/// date or changes it.
fn view_lock(view: &Home) -> Result<LockFile> {
    LockFile::open(view.root().join(".lock").as_std_path())
}

fn meta(tx: &mut Transaction<'_>, shown: &str, key: &str) -> Result<Option<String>> {
    fault::team_statement();
    tx.query_opt("SELECT value FROM mcpeval.meta WHERE key = $1", &[&key])
        .map_err(pg_error(shown))?
        .map(|row| column(&row, 0, shown))
        .transpose()
}

fn set_meta(tx: &mut Transaction<'_>, shown: &str, key: &str, value: &str) -> Result<()> {
    fault::team_statement();
    tx.execute(
        "INSERT INTO mcpeval.meta(key, value) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&key, &value],
    )
    .map(drop)
    .map_err(pg_error(shown))
}

/// The evidence generation: it moves on with every change of the calls
/// or annotations.
/// A value that is not a number (the row was tampered with) is status 3,
/// naming it, rather than read as some generation.
fn generation(tx: &mut Transaction<'_>, shown: &str) -> Result<i64> {
    match meta(tx, shown, "generation")? {
        None => Ok(0),
        Some(text) => text.parse().map_err(|_| {
            Error::unavailable(format!(
                "the team database {shown} has a generation that is not a number: {}",
                escape::quoted(&text)
            ))
        }),
    }
}

/// Moves the evidence generation on: findings promoted before are out of
/// date from now.
fn bump_generation(tx: &mut Transaction<'_>, shown: &str) -> Result<()> {
    fault::team_statement();
    tx.execute(
        "UPDATE mcpeval.meta SET value = (value::bigint + 1)::text WHERE key = 'generation'",
        &[],
    )
    .map_err(pg_error(shown))?;
    set_meta(tx, shown, "changed_at", &shared::time::now_rfc3339())
}

/// A digest keyed by the team salt that tells the team's salt from
/// another without revealing it.
fn fingerprint(salt: &Salt) -> String {
    hash::hex(&salt.digest(&[b"mcpeval team salt fingerprint"]))
}

fn recorded_fingerprint(client: &mut Client, shown: &str) -> Result<Option<String>> {
    fault::team_statement();
    client
        .query_opt(
            "SELECT value FROM mcpeval.meta WHERE key = 'salt_fingerprint'",
            &[],
        )
        .map_err(pg_error(shown))?
        .map(|row| column(&row, 0, shown))
        .transpose()
}

/// Refuses a store without the team's salt (status 6).
fn check_salt(salt: Option<&Salt>, recorded: &str, shown: &str, own: &Home) -> Result<()> {
    let hint = "every machine of a team shares one salt: on a machine of the team run \
                `mcpeval salt --export FILE`, then here `mcpeval salt --import FILE` \
                (before this store's first capture)";
    match salt {
        None => Err(Error::refused(format!(
            "this store ({}) has no salt yet, and the team database {shown} has one; nothing was written",
            own.root()
        ))
        .with_hint(hint)),
        Some(salt) if fingerprint(salt) != recorded => Err(Error::refused(format!(
            "this store's salt ({}) is not the team's salt of {shown}: its ids would never match the team's; nothing was written",
            own.salt()
        ))
        .with_hint(hint)),
        Some(_) => Ok(()),
    }
}

/// The store's id in the team, made on first use (`store-id`).
fn store_id(own: &Home) -> Result<String> {
    let path = own.store_id();
    let read = |path: &camino::Utf8Path| -> Result<Option<String>> {
        match fs::read_to_string(path) {
            Ok(text) => {
                let id = text.trim();
                uuid::Uuid::try_parse(id)
                    .map(|_| Some(id.to_owned()))
                    .map_err(|_| {
                        Error::rejected(format!(
                            "{path} does not hold a store id (a UUID): {}",
                            escape::quoted(id)
                        ))
                        .with_hint("delete it: the store gets a new id, and its calls are uploaded again under it")
                    })
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(Error::io(format_args!("cannot read {path}"), err)),
        }
    };
    if let Some(id) = read(&path)? {
        return Ok(id);
    }
    store::dir::ensure(own)?;
    let id = uuid::Uuid::new_v4().to_string();
    let line = format!("{id}\n");
    shared::atomic_file::create(path.as_std_path(), line.as_bytes(), 0o600)?;
    read(&path)?.ok_or_else(|| Error::unavailable(format!("{path} vanished while being created")))
}

/// Whether a call's origin is real traffic (captured or traced), which
/// readiness and false-success annotations count; a probe's own calls
/// never are.
fn is_traffic(origin: &str) -> bool {
    shared::record::Origin::parse(origin).is_some_and(shared::record::Origin::is_traffic)
}

/// Column `i` of a row read from the database: a value of another type
/// (a schema someone altered) is status 3, naming the database, never a
/// panic.
fn column<'a, T: postgres::types::FromSql<'a>>(
    row: &'a postgres::Row,
    i: usize,
    shown: &str,
) -> Result<T> {
    row.try_get(i).map_err(pg_error(shown))
}

/// Maps a database failure to the suite's error (status 3), naming the
/// database without its password.
fn pg_error(shown: &str) -> impl Fn(postgres::Error) -> Error + '_ {
    move |e| {
        let text = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        Error::unavailable(format!(
            "team database {shown}: {}",
            escape::terminal(&text)
        ))
    }
}
