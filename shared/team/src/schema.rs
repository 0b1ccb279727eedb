//! The team database's tables, versioned like the SQLite files: forward
//! migrations, their count kept in `mcpeval.meta`, and a database newer
//! than the binary refused (status 6) before anything is written.

use postgres::{Client, GenericClient};

use shared::error::{Error, Result};
use store::fault;
use store::salt::Salt;

use super::{LOCK_LIFECYCLE, LOCK_SCHEMA, mirror, pg_error};

/// The migrations, in order; append new steps, never edit a released one.
pub const MIGRATIONS: &[&str] = &[
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_5,
    MIGRATION_6,
    MIGRATION_7,
];

/// The first version whose mirrored rows carry a MAC.
const SIGNED: i64 = 3;

/// Everything lives in the schema `mcpeval`:
///
/// - `meta`: `schema_version`; `salt_fingerprint`, a digest keyed by the
///   team salt (the salt itself never leaves a machine); `generation`, a
///   counter every change of the pooled evidence (calls, annotations)
///   moves on, with `changed_at`; `promoted_generation`, the generation
///   the stored findings were promoted from.
/// - `stores`, `journals`: who uploads, and each store's journal
///   checkpoints as its own `index.db` holds them; `epoch` moves on when a
///   journal's calls are replaced rather than appended to.
/// - `calls`: the sanitized calls of every store, the columns of
///   `index.db`'s `calls`, partitioned by month (`month` = YYYYMM of
///   `started_at`) and keyed for distribution by `dist_key`, a digest of
///   (server, tool).
/// - `life_*`: the lifecycle (`lifecycle.db`'s tables) and `cat_*`: the
///   findings of the last promote (`index.db`'s `findings`, `promotion`);
///   from [`MIGRATION_3`] on, each row with its MAC.
const MIGRATION_1: &str = "
CREATE TABLE mcpeval.stores(
    store_id    text PRIMARY KEY,
    first_seen  text NOT NULL,
    last_upload text
);
CREATE TABLE mcpeval.journals(
    store_id text NOT NULL REFERENCES mcpeval.stores,
    name     text NOT NULL,
    length   bigint NOT NULL,
    sha256   bytea NOT NULL,
    lines    bigint NOT NULL,
    size     bigint NOT NULL,
    epoch    bigint NOT NULL,
    PRIMARY KEY (store_id, name)
);
CREATE TABLE mcpeval.calls(
    dist_key    text NOT NULL,
    month       integer NOT NULL,
    store_id    text NOT NULL,
    journal     text NOT NULL,
    line        bigint NOT NULL,
    schema      bigint NOT NULL,
    event_id    text,
    session     text NOT NULL,
    seq         bigint NOT NULL,
    origin      text NOT NULL,
    transport   text,
    server      text NOT NULL,
    tool        text NOT NULL,
    started_at  text NOT NULL,
    duration_ms bigint,
    advertised  boolean,
    args_shape  text NOT NULL,
    outcome     text NOT NULL,
    unknown     text,
    channel     text,
    code        bigint,
    template_id text,
    retryable   boolean
) PARTITION BY RANGE (month);
CREATE UNIQUE INDEX calls_by_line ON mcpeval.calls(store_id, journal, line, month, dist_key);

CREATE TABLE mcpeval.life_annotations(
    id bigint PRIMARY KEY, created_at text, kind text, note text,
    event_id text, session text, seq bigint
);
CREATE TABLE mcpeval.life_finding_state(
    finding_id text PRIMARY KEY, state text, streak bigint, binding text,
    probe_attached bigint, reopened bigint, retired_for text, updated_at text,
    server text, tool text
);
CREATE TABLE mcpeval.life_verifications(
    id bigint PRIMARY KEY, run_id text, finding_id text, case_id text,
    binding text, result text, reason text, started_at text, finished_at text,
    recorded_at text, legacy bigint, digest text
);
CREATE TABLE mcpeval.life_history(
    id bigint PRIMARY KEY, finding_id text, at text, event text,
    from_state text, to_state text, detail text
);
CREATE TABLE mcpeval.life_imports(name text PRIMARY KEY, at text, rows bigint);
CREATE TABLE mcpeval.cat_findings(
    id text PRIMARY KEY, kind text, server text, tool text, template_id text,
    defect_class text, score double precision, failures bigint, calls bigint,
    failure_rate double precision, wilson_lower double precision,
    sessions bigint, first_seen text, last_seen text,
    median_window_turns double precision, blast_radius bigint,
    err_code bigint, err_codes text, retryable bigint, args_shapes text
);
CREATE TABLE mcpeval.cat_promotion(
    id bigint PRIMARY KEY, promoted_at text, scored_as_of text,
    threshold double precision, issues bigint, promoted bigint,
    one_session bigint, below_threshold bigint, outdated_at text
);
INSERT INTO mcpeval.meta(key, value) VALUES ('generation', '0');
";

/// lifecycle.db's migration 4: what a run's proof is held to (the
/// finding's evidence, the streak's start, whether its closure was
/// witnessed) and the fingerprints of each run's case and target.
const MIGRATION_2: &str = "
ALTER TABLE mcpeval.life_finding_state
    ADD COLUMN kind text, ADD COLUMN defect_class text, ADD COLUMN err_codes text,
    ADD COLUMN failure_rate double precision, ADD COLUMN streak_since text,
    ADD COLUMN witnessed bigint;
ALTER TABLE mcpeval.life_verifications ADD COLUMN definition text, ADD COLUMN target text;
";

/// Every mirrored row's MAC, keyed by the team salt (see `trust`). SQL has
/// no salt: [`migrate`] signs the rows already there in the same
/// transaction.
const MIGRATION_3: &str = "
ALTER TABLE mcpeval.life_annotations ADD COLUMN mac text;
ALTER TABLE mcpeval.life_finding_state ADD COLUMN mac text;
ALTER TABLE mcpeval.life_verifications ADD COLUMN mac text;
ALTER TABLE mcpeval.life_history ADD COLUMN mac text;
ALTER TABLE mcpeval.life_imports ADD COLUMN mac text;
ALTER TABLE mcpeval.cat_findings ADD COLUMN mac text;
ALTER TABLE mcpeval.cat_promotion ADD COLUMN mac text;
";

/// What a store brought along and who uploads as it: `joined_at`, when
/// the store's own lifecycle (from before it joined) went into the
/// team's (see `join`); `upload_token`, a random token each upload
/// replaces, which the store keeps too, so a second machine uploading
/// under the same store id (a copied store) is told apart (see `upload`).
const MIGRATION_4: &str = "
ALTER TABLE mcpeval.stores ADD COLUMN IF NOT EXISTS joined_at text,
    ADD COLUMN IF NOT EXISTS upload_token text;
";

/// `daily`: per store, journal, UTC day, server and tool, the captured
/// calls and the failures among them (an error, or a malformed result),
/// as `readiness` counts a store's journals. `index` keeps it with the
/// calls, in the upload's transaction, so a reader sums a few rows per
/// day and tool instead of every call; this step fills it from the calls
/// already there (once: a database whose version was set back keeps the
/// counts it has).
const MIGRATION_5: &str = "
CREATE TABLE IF NOT EXISTS mcpeval.daily(
    store_id text NOT NULL,
    journal  text NOT NULL,
    day      text NOT NULL,
    server   text NOT NULL,
    tool     text NOT NULL,
    calls    bigint NOT NULL,
    failures bigint NOT NULL,
    PRIMARY KEY (store_id, journal, day, server, tool)
);
INSERT INTO mcpeval.daily
    SELECT store_id, journal, substr(started_at, 1, 10), server, tool, count(*),
           count(*) FILTER (WHERE outcome = 'error'
                            OR (outcome = 'unknown' AND unknown = 'malformed'))
    FROM mcpeval.calls WHERE origin IN ('capture', 'otel')
    GROUP BY 1, 2, 3, 4, 5
ON CONFLICT DO NOTHING;
";

/// Each store's partial aggregates (see `store::partial`), which `index`
/// replaces in the upload's transaction whenever the store's calls change,
/// and `promote` merges in SQL: `part_calls`, captured calls per (server,
/// tool, UTC day); `part_failures`, a failure group's failures per day
/// with their first and last time and evidence counts; `part_details`,
/// per group the counted values that are not sums (sessions in the store,
/// codes, argument shapes, window turns, tools hit); `part_streams`, the
/// store's (session, server) pairs, so that promote can tell that no
/// session is in two stores. `stores.partials` says the store's
/// aggregates are there: a store last indexed by an earlier release has
/// none until it indexes again.
const MIGRATION_6: &str = "
ALTER TABLE mcpeval.stores ADD COLUMN IF NOT EXISTS partials boolean NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS mcpeval.part_calls(
    store_id text NOT NULL,
    server   text NOT NULL,
    tool     text NOT NULL,
    day      text NOT NULL,
    calls    bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS part_calls_by_store ON mcpeval.part_calls(store_id);
CREATE TABLE IF NOT EXISTS mcpeval.part_failures(
    store_id             text NOT NULL,
    kind                 text NOT NULL,
    server               text NOT NULL,
    tool                 text NOT NULL,
    template_id          text,
    day                  text NOT NULL,
    failures             bigint NOT NULL,
    first_seen           text NOT NULL,
    last_seen            text NOT NULL,
    retryable_true       bigint NOT NULL,
    retryable_false      bigint NOT NULL,
    retryable_unreported bigint NOT NULL,
    unadvertised         bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS part_failures_by_store ON mcpeval.part_failures(store_id);
CREATE TABLE IF NOT EXISTS mcpeval.part_details(
    store_id    text NOT NULL,
    kind        text NOT NULL,
    server      text NOT NULL,
    tool        text NOT NULL,
    template_id text,
    what        text NOT NULL,
    value       text NOT NULL,
    n           bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS part_details_by_store ON mcpeval.part_details(store_id);
CREATE TABLE IF NOT EXISTS mcpeval.part_streams(
    store_id text NOT NULL,
    session  text NOT NULL,
    server   text NOT NULL
);
CREATE INDEX IF NOT EXISTS part_streams_by_store ON mcpeval.part_streams(store_id);
";

/// Migration 7: each call's verdict on its tool's declared `outputSchema`
/// (the record's `contract`), as in index.db's migration 7.
const MIGRATION_7: &str = "
ALTER TABLE mcpeval.calls
    ADD COLUMN IF NOT EXISTS contract_kept boolean,
    ADD COLUMN IF NOT EXISTS contract_at text,
    ADD COLUMN IF NOT EXISTS contract_keyword text;
";

/// The schema version this binary writes.
pub fn version() -> i64 {
    MIGRATIONS.len() as i64
}

/// The database's schema version; 0 when it has no mcpeval tables yet.
pub fn current(client: &mut impl GenericClient, shown: &str) -> Result<i64> {
    fault::team_statement();
    let exists: bool = client
        .query_one("SELECT to_regclass('mcpeval.meta') IS NOT NULL", &[])
        .map_err(pg_error(shown))?
        .get(0);
    if !exists {
        return Ok(0);
    }
    fault::team_statement();
    let row = client
        .query_opt(
            "SELECT value FROM mcpeval.meta WHERE key = 'schema_version'",
            &[],
        )
        .map_err(pg_error(shown))?;
    match row {
        None => Ok(0),
        Some(row) => {
            let text: String = row.get(0);
            text.parse().map_err(|_| {
                Error::unavailable(format!(
                    "the team database {shown} has a schema version that is not a number: {}",
                    shared::escape::quoted(&text)
                ))
            })
        }
    }
}

/// Refuses a database newer than this binary (status 6).
pub fn check_not_newer(version: i64, shown: &str) -> Result<()> {
    if version > self::version() {
        return Err(Error::refused(format!(
            "the team database {shown} has schema version {version}; this mcpeval knows versions up to {}: the database is from a newer release; nothing was written",
            self::version()
        ))
        .with_hint("upgrade mcpeval on this machine to the release the team uses"));
    }
    Ok(())
}

/// Brings the database to this binary's schema version. Concurrent first
/// connections wait for each other on an advisory lock.
///
/// The step that gives rows their MAC also signs, with `salt` (the
/// team's: [`super::Team::open`] checked it against the database first),
/// every row already there, trusting them as they are: no release before
/// it could tell a forged row from the team's. It does so in the
/// migration's own transaction, under the lifecycle lock as well, so no
/// one ever sees the new schema with rows unsigned, and only this step
/// signs a row that carries no MAC: a writer of rows cannot ask for it
/// again (a version set back to before it fails at adding the column).
pub fn migrate(client: &mut Client, shown: &str, salt: &Salt) -> Result<()> {
    if current(client, shown)? == version() {
        return Ok(());
    }
    fault::team_statement();
    let mut tx = client.transaction().map_err(pg_error(shown))?;
    fault::team_statement();
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_SCHEMA])
        .map_err(pg_error(shown))?;
    fault::team_statement();
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS mcpeval;
         CREATE TABLE IF NOT EXISTS mcpeval.meta(key text PRIMARY KEY, value text NOT NULL);",
    )
    .map_err(pg_error(shown))?;
    let from = current(&mut tx, shown)?;
    check_not_newer(from, shown)?;
    for step in &MIGRATIONS[from as usize..] {
        fault::team_statement();
        tx.batch_execute(step).map_err(pg_error(shown))?;
    }
    if (1..SIGNED).contains(&from) {
        fault::team_statement();
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_LIFECYCLE])
            .map_err(pg_error(shown))?;
        for table in mirror::LIFECYCLE.iter().chain(mirror::CATALOG) {
            mirror::sign_unsigned(&mut tx, shown, salt, table)?;
        }
    }
    fault::team_statement();
    tx.execute(
        "INSERT INTO mcpeval.meta(key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&version().to_string()],
    )
    .map_err(pg_error(shown))?;
    fault::team_statement();
    tx.commit().map_err(pg_error(shown))
}

/// Creates the monthly partitions of `calls` that `months` (YYYYMM) need.
pub fn ensure_partitions(client: &mut Client, shown: &str, months: &[i32]) -> Result<()> {
    fault::team_statement();
    let existing: Vec<String> = client
        .query(
            "SELECT c.relname FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'mcpeval.calls'::regclass",
            &[],
        )
        .map_err(pg_error(shown))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let missing: Vec<i32> = months
        .iter()
        .copied()
        .filter(|m| !existing.contains(&partition(*m)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    fault::team_statement();
    let mut tx = client.transaction().map_err(pg_error(shown))?;
    fault::team_statement();
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_SCHEMA])
        .map_err(pg_error(shown))?;
    for month in missing {
        let next = if month % 100 == 12 {
            (month / 100 + 1) * 100 + 1
        } else {
            month + 1
        };
        fault::team_statement();
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS mcpeval.{} PARTITION OF mcpeval.calls
             FOR VALUES FROM ({month}) TO ({next})",
            partition(month)
        ))
        .map_err(pg_error(shown))?;
    }
    fault::team_statement();
    tx.commit().map_err(pg_error(shown))
}

/// `calls_YYYYMM`.
fn partition(month: i32) -> String {
    format!("calls_{month}")
}
