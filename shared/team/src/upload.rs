//! Uploading a store's calls: per journal, the same checkpoints its
//! `index.db` holds, kept in the database beside the calls.
//!
//! A journal whose database checkpoint is a prefix of the indexed one (its
//! first `length` bytes still hash to the recorded digest) gets its new
//! calls appended; any other difference replaces that journal's calls (a
//! new `epoch`), and a journal the store no longer indexes loses its
//! calls. Beside the calls, the store's partial aggregates (the module
//! `partials`) are replaced whenever its calls change. Everything one run
//! uploads commits in one transaction that holds the store's advisory
//! lock, so two runs of one store queue, and runs of different stores,
//! which touch different rows, run side by side.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use rusqlite::Connection;
use sha2::{Digest, Sha256};

use shared::error::{Error, Result};
use shared::home::Home;
use shared::record::COLUMN_NAMES;
use store::db;
use store::fault;
use store::index_db;

use super::{Team, bump_generation, column, is_traffic, pg_error, schema, token};

/// What an upload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uploaded {
    /// Calls sent to the database.
    pub calls: u64,
    /// Journals whose calls were appended to, replaced, or removed.
    pub appended: u64,
    pub replaced: u64,
    pub removed: u64,
}

/// A journal's checkpoint as an index holds it.
#[derive(Debug, Clone, PartialEq)]
struct Checkpoint {
    length: i64,
    sha256: Vec<u8>,
    lines: i64,
    size: i64,
}

/// What to do with one journal.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Keep,
    /// Send the calls after this line.
    Append(i64),
    /// Replace every call.
    Replace,
}

/// The columns of `mcpeval.calls` an upload fills: the team's own
/// (`dist_key`, `month`, `store_id`), where the call was read (`journal`,
/// `line`), then the row's ([`COLUMN_NAMES`]).
const SENT: usize = 5 + COLUMN_NAMES.len();

/// The types of the [`SENT`] columns, in order.
const TYPES: [Type; SENT] = [
    Type::TEXT,
    Type::INT4,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::BOOL,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::BOOL,
    Type::BOOL,
    Type::TEXT,
    Type::TEXT,
];

/// Uploads what the store's complete `index.db` holds beyond the
/// database's checkpoints.
pub fn run(team: &mut Team, own: &Home, replace: bool) -> Result<Uploaded> {
    let shown = team.shown.clone();
    let store = team.store_id.clone();
    let path = own.index_db();
    let mut index = index_db::open_complete(own)?;
    // One read transaction: the upload sees one state of the index.
    let local = index.transaction().map_err(|e| db::sql_error(&path, e))?;
    index_db::require_state(&local, path.as_std_path())?;
    let journals = local_journals(&local, &path)?;

    let months = months(&local, &path)?;
    schema::ensure_partitions(&mut team.client, &shown, &months)?;

    // This machine's runs take turns with the upload token (see `token`).
    let view = own.team_view();
    store::dir::ensure(&view)?;
    let lock = super::view_lock(&view)?;
    let _held = lock.exclusive()?;
    fault::team_statement();
    let mut tx = team.client.transaction().map_err(pg_error(&shown))?;
    fault::team_statement();
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('mcpeval store ' || $1, 0))",
        &[&store],
    )
    .map_err(pg_error(&shown))?;
    fault::team_statement();
    let (theirs, has_partials): (Option<String>, bool) = tx
        .query_one(
            "SELECT upload_token, partials FROM mcpeval.stores WHERE store_id = $1",
            &[&store],
        )
        .map_err(pg_error(&shown))
        .and_then(|row| Ok((column(&row, 0, &shown)?, column(&row, 1, &shown)?)))?;
    token::check(own, theirs.as_deref(), &store, &shown)?;
    let next = token::fresh();
    let mut pending: Vec<&str> = theirs.as_deref().into_iter().collect();
    pending.push(&next);
    token::write(own, &pending)?;
    fault::team_statement();
    let remote: HashMap<String, (Checkpoint, i64)> = tx
        .query(
            "SELECT name, length, sha256, lines, size, epoch FROM mcpeval.journals WHERE store_id = $1",
            &[&store],
        )
        .map_err(pg_error(&shown))?
        .iter()
        .map(|r| {
            let get = |i| column::<i64>(r, i, &shown);
            Ok((
                column::<String>(r, 0, &shown)?,
                (
                    Checkpoint {
                        length: get(1)?,
                        sha256: column(r, 2, &shown)?,
                        lines: get(3)?,
                        size: get(4)?,
                    },
                    get(5)?,
                ),
            ))
        })
        .collect::<Result<_>>()?;

    let mut done = Uploaded::default();
    let mut steps: HashMap<i64, Step> = HashMap::new();
    for (id, name, checkpoint) in &journals {
        let step = match remote.get(name) {
            _ if replace => Step::Replace,
            None => Step::Replace,
            Some((theirs, _))
                if theirs.length == checkpoint.length && theirs.sha256 == checkpoint.sha256 =>
            {
                Step::Keep
            }
            Some((theirs, _))
                if theirs.length < checkpoint.length
                    && theirs.lines <= checkpoint.lines
                    && prefix_holds(own, name, theirs)? =>
            {
                Step::Append(theirs.lines)
            }
            Some(_) => Step::Replace,
        };
        let epoch = remote.get(name).map_or(0, |(_, e)| *e);
        match step {
            Step::Keep => {}
            Step::Append(_) => done.appended += 1,
            Step::Replace => {
                if remote.contains_key(name) {
                    done.replaced += 1;
                }
                fault::team_statement();
                tx.execute(
                    "WITH calls AS (
                         DELETE FROM mcpeval.calls WHERE store_id = $1 AND journal = $2)
                     DELETE FROM mcpeval.daily WHERE store_id = $1 AND journal = $2",
                    &[&store, name],
                )
                .map_err(pg_error(&shown))?;
            }
        }
        if step != Step::Keep || remote.get(name).is_some_and(|(t, _)| t != checkpoint) {
            let epoch = if step == Step::Replace {
                epoch + 1
            } else {
                epoch
            };
            fault::team_statement();
            tx.execute(
                "INSERT INTO mcpeval.journals(store_id, name, length, sha256, lines, size, epoch)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (store_id, name) DO UPDATE SET length = excluded.length,
                   sha256 = excluded.sha256, lines = excluded.lines, size = excluded.size,
                   epoch = excluded.epoch",
                &[
                    &store,
                    name,
                    &checkpoint.length,
                    &checkpoint.sha256,
                    &checkpoint.lines,
                    &checkpoint.size,
                    &epoch,
                ],
            )
            .map_err(pg_error(&shown))?;
        }
        steps.insert(*id, step);
    }
    let kept: BTreeSet<&str> = journals.iter().map(|(_, n, _)| n.as_str()).collect();
    for name in remote.keys().filter(|n| !kept.contains(n.as_str())) {
        fault::team_statement();
        tx.execute(
            "WITH calls AS (
                 DELETE FROM mcpeval.calls WHERE store_id = $1 AND journal = $2)
             DELETE FROM mcpeval.daily WHERE store_id = $1 AND journal = $2",
            &[&store, name],
        )
        .map_err(pg_error(&shown))?;
        fault::team_statement();
        tx.execute(
            "DELETE FROM mcpeval.journals WHERE store_id = $1 AND name = $2",
            &[&store, name],
        )
        .map_err(pg_error(&shown))?;
        done.removed += 1;
    }

    if steps.values().any(|s| *s != Step::Keep) {
        let names: HashMap<i64, &str> = journals
            .iter()
            .map(|(id, n, _)| (*id, n.as_str()))
            .collect();
        done.calls = copy_calls(&mut tx, &shown, &store, &local, &path, &steps, &names)?;
    }
    let changed = done.calls > 0 || done.replaced > 0 || done.removed > 0;
    if changed || !has_partials {
        // Beside the calls, in their transaction: a store's aggregates
        // never disagree with its calls, whatever is killed when.
        let partials = store::partial::read(&local, path.as_std_path())?;
        super::partials::replace(&mut tx, &shown, &store, &partials)?;
    }
    if changed {
        bump_generation(&mut tx, &shown)?;
    }
    fault::team_statement();
    tx.execute(
        "UPDATE mcpeval.stores SET last_upload = $2, upload_token = $3 WHERE store_id = $1",
        &[&store, &shared::time::now_rfc3339(), &next],
    )
    .map_err(pg_error(&shown))?;
    fault::team_statement();
    tx.commit().map_err(pg_error(&shown))?;
    fault::team_statement();
    token::write(own, &[&next])?;
    Ok(done)
}

/// `(id, name, checkpoint)` of every journal the index covers.
fn local_journals(
    conn: &Connection,
    path: &camino::Utf8Path,
) -> Result<Vec<(i64, String, Checkpoint)>> {
    let fail = |e| db::sql_error(path, e);
    let mut stmt = conn
        .prepare("SELECT id, name, length, sha256, lines, size FROM journals ORDER BY name")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                Checkpoint {
                    length: r.get(2)?,
                    sha256: r.get(3)?,
                    lines: r.get(4)?,
                    size: r.get(5)?,
                },
            ))
        })
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// Whether the journal's first `theirs.length` bytes still hash to the
/// database's digest: then its calls there are a prefix of ours.
fn prefix_holds(own: &Home, name: &str, theirs: &Checkpoint) -> Result<bool> {
    let path = own.journals().join(name);
    let Ok(file) = store::journal::open(path.as_std_path()) else {
        return Ok(false);
    };
    let mut hasher = Sha256::new();
    let mut limited = file.take(theirs.length as u64);
    let mut buf = vec![0u8; 1 << 16];
    let mut read = 0u64;
    loop {
        let n = limited
            .read(&mut buf)
            .map_err(|e| Error::io(format_args!("cannot read {path}"), e))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok(read == theirs.length as u64 && hasher.finalize().as_slice() == theirs.sha256.as_slice())
}

/// The months (YYYYMM) the index's calls fall in.
fn months(conn: &Connection, path: &camino::Utf8Path) -> Result<Vec<i32>> {
    let fail = |e| db::sql_error(path, e);
    let mut stmt = conn
        .prepare("SELECT DISTINCT substr(started_at, 1, 7) FROM calls")
        .map_err(fail)?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(fail)?;
    let mut months = Vec::new();
    for text in rows {
        months.push(month(&text.map_err(fail)?, path)?);
    }
    Ok(months)
}

/// YYYYMM of a stored time stamp (`YYYY-MM-…`).
fn month(started_at: &str, path: &camino::Utf8Path) -> Result<i32> {
    let b = started_at.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .map(|d| d.iter().fold(0i32, |n, c| n * 10 + i32::from(c - b'0')))
    };
    match (digits(0..4), b.get(4), digits(5..7)) {
        (Some(year), Some(b'-'), Some(m)) if (1..=12).contains(&m) => Ok(year * 100 + m),
        _ => Err(Error::unavailable(format!(
            "{path}: a call's started_at is not a stored time stamp: {}",
            shared::escape::quoted(started_at)
        ))
        .with_hint("`mcpeval index --rebuild` recreates the index from the journals")),
    }
}

/// Streams the calls the steps ask for into the database with `COPY`.
fn copy_calls(
    tx: &mut postgres::Transaction<'_>,
    shown: &str,
    store: &str,
    local: &Connection,
    path: &camino::Utf8Path,
    steps: &HashMap<i64, Step>,
    names: &HashMap<i64, &str>,
) -> Result<u64> {
    let fail = |e| db::sql_error(path, e);
    fault::team_statement();
    let columns = COLUMN_NAMES.join(", ");
    let sink = tx
        .copy_in(&format!(
            "COPY mcpeval.calls(dist_key, month, store_id, journal, line, {columns})
             FROM STDIN (FORMAT binary)"
        ))
        .map_err(pg_error(shown))?;
    let mut writer = BinaryCopyInWriter::new(sink, &TYPES);
    let mut stmt = local
        .prepare(&format!(
            "SELECT journal_id, line, {columns} FROM calls ORDER BY id"
        ))
        .map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let mut sent = 0u64;
    let mut daily = Daily::default();
    while let Some(r) = rows.next().map_err(fail)? {
        let journal: i64 = r.get(0).map_err(fail)?;
        let line: i64 = r.get(1).map_err(fail)?;
        match steps.get(&journal) {
            Some(Step::Replace) => {}
            Some(Step::Append(after)) if line > *after => {}
            _ => continue,
        }
        let server: String = r.get(8).map_err(fail)?;
        let tool: String = r.get(9).map_err(fail)?;
        let started_at: String = r.get(10).map_err(fail)?;
        let month = month(&started_at, path)?;
        let dist_key = store::hash::hex(
            &store::hash::sha256_joined(&[server.as_bytes(), tool.as_bytes()])[..8],
        );
        let name = names.get(&journal).copied().unwrap_or_default();
        let text = |i| r.get::<_, Option<String>>(i).map_err(fail);
        let int = |i| r.get::<_, Option<i64>>(i).map_err(fail);
        let flag = |i| Ok::<_, Error>(int(i)?.map(|v| v != 0));
        let values: [&(dyn ToSql + Sync); SENT] = [
            &dist_key,
            &month,
            &store,
            &name,
            &line,
            &int(2)?,
            &text(3)?,
            &text(4)?,
            &int(5)?,
            &text(6)?,
            &text(7)?,
            &server,
            &tool,
            &started_at,
            &int(11)?,
            &flag(12)?,
            &text(13)?,
            &text(14)?,
            &text(15)?,
            &text(16)?,
            &int(17)?,
            &text(18)?,
            &flag(19)?,
            &flag(20)?,
            &text(21)?,
            &text(22)?,
        ];
        fault::team_row(sent + 1);
        writer.write(&values).map_err(pg_error(shown))?;
        sent += 1;
        if let Some(failed) = failure(text(6)?, text(14)?, text(15)?) {
            daily.count(name, &started_at, &server, &tool, failed);
        }
    }
    fault::team_statement();
    writer.finish().map_err(pg_error(shown))?;
    daily.add(tx, shown, store)?;
    Ok(sent)
}

/// Whether a call failed, as `readiness` counts a journal's: `None` for
/// one it does not count (not captured), else whether it is an error or a
/// malformed result.
fn failure(
    origin: Option<String>,
    outcome: Option<String>,
    unknown: Option<String>,
) -> Option<bool> {
    origin
        .as_deref()
        .is_some_and(is_traffic)
        .then(|| match outcome.as_deref() {
            Some("error") => true,
            Some("unknown") => unknown.as_deref() == Some("malformed"),
            _ => false,
        })
}

/// The daily counts of the calls one upload sends, per (journal, day,
/// server, tool): what `mcpeval.daily` gains (see the module `schema`).
#[derive(Default)]
struct Daily(BTreeMap<(String, String, String, String), (i64, i64)>);

impl Daily {
    /// Counts a call that `failure` says is captured.
    fn count(&mut self, journal: &str, started_at: &str, server: &str, tool: &str, failed: bool) {
        // Stored time stamps are RFC 3339 UTC: the first ten bytes are the day.
        let day = started_at.get(..10).unwrap_or(started_at);
        let entry = self
            .0
            .entry((journal.into(), day.into(), server.into(), tool.into()))
            .or_default();
        entry.0 += 1;
        entry.1 += i64::from(failed);
    }

    /// Adds the counts to `mcpeval.daily`, in the upload's transaction.
    fn add(self, tx: &mut postgres::Transaction<'_>, shown: &str, store: &str) -> Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let mut columns: (Vec<String>, Vec<String>, Vec<String>, Vec<String>) = Default::default();
        let (mut calls, mut failures) = (Vec::new(), Vec::new());
        for ((journal, day, server, tool), (c, f)) in self.0 {
            columns.0.push(journal);
            columns.1.push(day);
            columns.2.push(server);
            columns.3.push(tool);
            calls.push(c);
            failures.push(f);
        }
        fault::team_statement();
        tx.execute(
            "INSERT INTO mcpeval.daily(store_id, journal, day, server, tool, calls, failures)
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[],
                                      $6::bigint[], $7::bigint[])
             ON CONFLICT (store_id, journal, day, server, tool) DO UPDATE
             SET calls = mcpeval.daily.calls + excluded.calls,
                 failures = mcpeval.daily.failures + excluded.failures",
            &[
                &store, &columns.0, &columns.1, &columns.2, &columns.3, &calls, &failures,
            ],
        )
        .map(drop)
        .map_err(pg_error(shown))
    }
}
