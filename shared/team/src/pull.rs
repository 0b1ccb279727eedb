//! Rebuilding the team view's journals from the database's calls.
//!
//! Each journal of each store becomes a file of the same name in the
//! view's `journals/`, one record per call, rebuilt from the call's
//! columns, so the view indexes like any store and its index holds the
//! calls one store holding every machine's journals would hold. A journal
//! whose calls were only appended to gets the new lines appended; one
//! whose calls were replaced (a new epoch) is written anew. `pulled.json`
//! says what each file reflects; it is written after the files, so a run
//! that dies half-way is finished by the next.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use serde::{Deserialize, Serialize};

use shared::atomic_file;
use shared::error::{Error, Result};
use shared::home::Home;
use shared::record::{self, COLUMN_NAMES, Columns};
use store::fault;
use store::journal;

use super::{column, pg_error};

/// What a pull did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pulled {
    /// The evidence generation the view's journals now reflect.
    pub generation: i64,
    /// Calls written into the view's journals.
    pub calls: u64,
    /// Journals of the team (every store's).
    pub journals: u64,
    /// Stores that uploaded any.
    pub stores: u64,
}

/// `pulled.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    /// The generation the journals reflect.
    generation: i64,
    /// The generation the view's index was last built from.
    indexed_generation: i64,
    /// By file name.
    journals: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Entry {
    store_id: String,
    epoch: i64,
    /// The database's `lines` this file reflects.
    lines: i64,
    /// The last line number written.
    last_line: i64,
    /// The file's length when written.
    bytes: u64,
}

fn state_path(view: &Home) -> camino::Utf8PathBuf {
    view.root().join("pulled.json")
}

fn load(view: &Home) -> Result<State> {
    let path = state_path(view);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::unavailable(format!(
                "{path} is damaged: {}",
                shared::escape::terminal(&e.to_string())
            ))
            .with_hint("delete it; the next `mcpeval index` rebuilds the team view")
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
        Err(err) => Err(Error::io(format_args!("cannot read {path}"), err)),
    }
}

fn save(view: &Home, state: &State) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::from)?;
    atomic_file::write(state_path(view).as_std_path(), &bytes, 0o600)
}

/// The generation the view's index was last built from (0: never).
pub fn indexed_generation(view: &Home) -> Result<i64> {
    Ok(load(view)?.indexed_generation)
}

/// Records that the view's index now reflects `generation`.
pub fn mark_indexed(view: &Home, generation: i64) -> Result<()> {
    let mut state = load(view)?;
    state.indexed_generation = generation;
    save(view, &state)
}

/// Brings the view's journals to the database's calls, in one snapshot.
pub fn run(client: &mut postgres::Client, shown: &str, view: &Home) -> Result<Pulled> {
    store::dir::ensure(view)?;
    let shown = shown.to_owned();
    let lock = super::view_lock(view)?;
    let _held = lock.exclusive()?;
    let mut state = load(view)?;
    fault::team_statement();
    let mut tx = super::read::snapshot(client, &shown)?;
    let generation = super::generation(&mut tx, &shown)?;
    fault::team_statement();
    let rows = tx
        .query(
            "SELECT store_id, name, epoch, lines FROM mcpeval.journals ORDER BY name, store_id",
            &[],
        )
        .map_err(pg_error(&shown))?;
    let mut holders: BTreeMap<String, u32> = BTreeMap::new();
    for row in &rows {
        let (store, name): (String, String) = (column(row, 0, &shown)?, column(row, 1, &shown)?);
        if !journal::is_journal_name(&name) {
            return Err(Error::unavailable(format!(
                "team database {shown}: store {} uploaded a journal named {}, which is not a journal name",
                shared::escape::quoted(&store),
                shared::escape::quoted(&name)
            )));
        }
        *holders.entry(name).or_default() += 1;
    }
    // View file name → (store, epoch, lines, the store's journal name).
    let mut wanted: BTreeMap<String, (String, i64, i64, String)> = BTreeMap::new();
    for row in &rows {
        let (store, name): (String, String) = (column(row, 0, &shown)?, column(row, 1, &shown)?);
        let file = match holders.get(&name) {
            Some(1) => name.clone(),
            _ => shared_name(&name, &store),
        };
        wanted.insert(
            file,
            (
                store,
                column(row, 2, &shown)?,
                column(row, 3, &shown)?,
                name,
            ),
        );
    }

    let dir = view.journals();
    let mut pulled = Pulled {
        generation,
        journals: wanted.len() as u64,
        stores: rows
            .iter()
            .map(|r| column::<String>(r, 0, &shown))
            .collect::<Result<std::collections::BTreeSet<_>>>()?
            .len() as u64,
        calls: 0,
    };
    for (name, (store, epoch, lines, journal)) in &wanted {
        let path = dir.join(name);
        // Only a regular file is kept or appended to: anything else under
        // that name (a FIFO would block the open) is replaced whole.
        let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        let old = state
            .journals
            .get(name)
            .filter(|e| &e.store_id == store && regular);
        let entry = match old {
            Some(e) if e.epoch == *epoch && e.lines == *lines => continue,
            Some(e) if e.epoch == *epoch && e.lines < *lines => {
                let file = OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&path)
                    .map_err(|e| Error::io(format_args!("cannot open {path}"), e))?;
                file.set_len(e.bytes)
                    .map_err(|err| Error::io(format_args!("cannot truncate {path}"), err))?;
                let mut file = BufWriter::new(file);
                std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0))
                    .map_err(|err| Error::io(format_args!("cannot append to {path}"), err))?;
                let (calls, last_line, written) = write_calls(
                    &mut tx,
                    &shown,
                    store,
                    journal,
                    e.last_line,
                    &mut file,
                    &path,
                )?;
                file.flush()
                    .map_err(|err| Error::io(format_args!("cannot write {path}"), err))?;
                pulled.calls += calls;
                Entry {
                    store_id: store.clone(),
                    epoch: *epoch,
                    lines: *lines,
                    last_line: last_line.max(e.last_line),
                    bytes: e.bytes + written,
                }
            }
            _ => {
                let tmp = dir.join(format!(".{name}.pull"));
                let file = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&tmp)
                    .map_err(|e| Error::io(format_args!("cannot create {tmp}"), e))?;
                let mut file = BufWriter::new(file);
                let (calls, last_line, written) =
                    write_calls(&mut tx, &shown, store, journal, 0, &mut file, &tmp)?;
                file.flush()
                    .map_err(|err| Error::io(format_args!("cannot write {tmp}"), err))?;
                drop(file);
                fs::rename(&tmp, &path)
                    .map_err(|e| Error::io(format_args!("cannot replace {path}"), e))?;
                pulled.calls += calls;
                Entry {
                    store_id: store.clone(),
                    epoch: *epoch,
                    lines: *lines,
                    last_line,
                    bytes: written,
                }
            }
        };
        state.journals.insert(name.clone(), entry);
    }
    let gone: Vec<String> = state
        .journals
        .keys()
        .filter(|name| !wanted.contains_key(*name))
        .cloned()
        .collect();
    for name in gone {
        let path = dir.join(&name);
        match fs::remove_file(&path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(format_args!("cannot remove {path}"), err));
            }
            _ => {}
        }
        state.journals.remove(&name);
    }
    state.generation = generation;
    save(view, &state)?;
    fault::team_statement();
    tx.commit().map_err(pg_error(&shown))?;
    fault::team_statement();
    Ok(pulled)
}

/// Writes the calls of one journal after `after` as record lines;
/// returns (calls, last line, bytes).
/// The view's name for journal `name` of `store` when another store has
/// a journal of that name too (names are unique within a store, not
/// across a team): the same time, so the order of journals stays the
/// order they were made in, and the random part made from the store and
/// the name, so each store's journal has a file of its own.
fn shared_name(name: &str, store: &str) -> String {
    let digest = store::hash::sha256_joined(&[store.as_bytes(), name.as_bytes()]);
    format!("{}{}.jsonl", &name[..21], &store::hash::hex(&digest)[..8])
}

fn write_calls(
    tx: &mut postgres::Transaction<'_>,
    shown: &str,
    store: &str,
    name: &str,
    after: i64,
    out: &mut impl Write,
    path: &camino::Utf8Path,
) -> Result<(u64, i64, u64)> {
    let params: [&(dyn ToSql + Sync); 3] = [&store, &name, &after];
    let sql = format!(
        "SELECT line, {} FROM mcpeval.calls
         WHERE store_id = $1 AND journal = $2 AND line > $3 ORDER BY line",
        COLUMN_NAMES.join(", ")
    );
    fault::team_statement();
    let mut rows = tx
        .query_raw(sql.as_str(), params)
        .map_err(pg_error(shown))?;
    let (mut calls, mut last, mut bytes) = (0u64, after, 0u64);
    while let Some(r) = rows.next().map_err(pg_error(shown))? {
        fault::team_row(calls + 1);
        let line: i64 = column(&r, 0, shown)?;
        let columns = Columns {
            schema: column(&r, 1, shown)?,
            event_id: column(&r, 2, shown)?,
            session: column(&r, 3, shown)?,
            seq: column(&r, 4, shown)?,
            origin: column(&r, 5, shown)?,
            transport: column(&r, 6, shown)?,
            server: column(&r, 7, shown)?,
            tool: column(&r, 8, shown)?,
            started_at: column(&r, 9, shown)?,
            duration_ms: column(&r, 10, shown)?,
            advertised: column(&r, 11, shown)?,
            args_shape: column(&r, 12, shown)?,
            outcome: column(&r, 13, shown)?,
            unknown: column(&r, 14, shown)?,
            channel: column(&r, 15, shown)?,
            code: column(&r, 16, shown)?,
            template_id: column(&r, 17, shown)?,
            retryable: column(&r, 18, shown)?,
            contract_kept: column(&r, 19, shown)?,
            contract_at: column(&r, 20, shown)?,
            contract_keyword: column(&r, 21, shown)?,
        };
        let text = record::line_from_columns(&columns).map_err(|e| {
            Error::unavailable(format!(
                "team database {shown}: the call on line {line} of {name} (store {store}) cannot be a journal record: {}",
                e.message()
            ))
        })?;
        out.write_all(text.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| Error::io(format_args!("cannot write {path}"), e))?;
        calls += 1;
        last = line;
        bytes += text.len() as u64 + 1;
    }
    Ok((calls, last, bytes))
}
