//! Small tables copied whole between the team database and a team view's
//! SQLite files: the lifecycle and the last promote's findings.
//!
//! They hold hundreds to thousands of rows, so a copy is cheap, and a
//! whole-table copy inside one transaction on each side can never mix two
//! states. Which side wins is the caller's choice: the database, when a
//! command starts; the view, when a lifecycle change commits.
//!
//! In the database every row carries a MAC of the team salt (a column
//! `mac` the view's tables do not have): the view takes only the rows
//! that show one (see the module `trust`), and the rows it did not take
//! go back to the database as they came.

use postgres::Transaction;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use rusqlite::types::Value;

use shared::error::Result;
use store::fault;
use store::hash;
use store::salt::Salt;

use super::trust::{self, Fault, Refused};
use super::{column, pg_error};

/// How a column is typed on both sides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ty {
    Int,
    Real,
    Text,
}

/// One mirrored table: its SQLite name, the database's, and its columns
/// (the first is the key), with what the view must check of its rows
/// before it takes one (see the module `trust`).
#[derive(Debug)]
pub struct Table {
    pub local: &'static str,
    pub remote: &'static str,
    pub columns: &'static [(&'static str, Ty)],
    /// Whose rows these are, for a command's [`super::Scope`].
    pub belongs: Belongs,
    /// Columns holding a server or tool name, as capture writes names.
    pub names: &'static [&'static str],
    /// The column holding a finding's argument shapes, as capture writes them.
    pub shapes: Option<&'static str>,
}

/// Whom a mirrored table's rows are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Belongs {
    /// One finding each: the one this column names.
    Finding(&'static str),
    /// The team's lifecycle as a whole (annotations, imports).
    Lifecycle,
    /// The catalog as a whole: its promotion, through which every read of
    /// a finding's catalog row passes (findings of no promotion, or of an
    /// outdated one, are refused).
    Catalog,
}

/// One column value as the database holds it: what a row's MAC covers.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

use Ty::{Int, Real, Text};

/// `lifecycle.db`'s tables.
pub const LIFECYCLE: &[Table] = &[
    Table {
        local: "annotations",
        remote: "mcpeval.life_annotations",
        columns: &[
            ("id", Int),
            ("created_at", Text),
            ("kind", Text),
            ("note", Text),
            ("event_id", Text),
            ("session", Text),
            ("seq", Int),
        ],
        belongs: Belongs::Lifecycle,
        names: &[],
        shapes: None,
    },
    Table {
        local: "finding_state",
        remote: "mcpeval.life_finding_state",
        columns: &[
            ("finding_id", Text),
            ("state", Text),
            ("streak", Int),
            ("binding", Text),
            ("probe_attached", Int),
            ("reopened", Int),
            ("retired_for", Text),
            ("updated_at", Text),
            ("server", Text),
            ("tool", Text),
            ("kind", Text),
            ("defect_class", Text),
            ("err_codes", Text),
            ("failure_rate", Real),
            ("streak_since", Text),
            ("witnessed", Int),
        ],
        belongs: Belongs::Finding("finding_id"),
        names: &["server", "tool"],
        shapes: None,
    },
    Table {
        local: "verifications",
        remote: "mcpeval.life_verifications",
        columns: &[
            ("id", Int),
            ("run_id", Text),
            ("finding_id", Text),
            ("case_id", Text),
            ("binding", Text),
            ("result", Text),
            ("reason", Text),
            ("started_at", Text),
            ("finished_at", Text),
            ("recorded_at", Text),
            ("legacy", Int),
            ("digest", Text),
            ("definition", Text),
            ("target", Text),
        ],
        belongs: Belongs::Finding("finding_id"),
        names: &[],
        shapes: None,
    },
    Table {
        local: "history",
        remote: "mcpeval.life_history",
        columns: &[
            ("id", Int),
            ("finding_id", Text),
            ("at", Text),
            ("event", Text),
            ("from_state", Text),
            ("to_state", Text),
            ("detail", Text),
        ],
        belongs: Belongs::Finding("finding_id"),
        names: &[],
        shapes: None,
    },
    Table {
        local: "imports",
        remote: "mcpeval.life_imports",
        columns: &[("name", Text), ("at", Text), ("rows", Int)],
        belongs: Belongs::Lifecycle,
        names: &[],
        shapes: None,
    },
];

/// `index.db`'s findings of the last promote.
pub const CATALOG: &[Table] = &[
    Table {
        local: "findings",
        remote: "mcpeval.cat_findings",
        columns: &[
            ("id", Text),
            ("kind", Text),
            ("server", Text),
            ("tool", Text),
            ("template_id", Text),
            ("defect_class", Text),
            ("score", Real),
            ("failures", Int),
            ("calls", Int),
            ("failure_rate", Real),
            ("wilson_lower", Real),
            ("sessions", Int),
            ("first_seen", Text),
            ("last_seen", Text),
            ("median_window_turns", Real),
            ("blast_radius", Int),
            ("err_code", Int),
            ("err_codes", Text),
            ("retryable", Int),
            ("args_shapes", Text),
        ],
        belongs: Belongs::Finding("id"),
        names: &["server", "tool"],
        shapes: Some("args_shapes"),
    },
    Table {
        local: "promotion",
        remote: "mcpeval.cat_promotion",
        columns: &[
            ("id", Int),
            ("promoted_at", Text),
            ("scored_as_of", Text),
            ("threshold", Real),
            ("issues", Int),
            ("promoted", Int),
            ("one_session", Int),
            ("below_threshold", Int),
            ("outdated_at", Text),
        ],
        belongs: Belongs::Catalog,
        names: &[],
        shapes: None,
    },
];

impl Table {
    fn names(&self) -> String {
        self.columns
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The type of the database's column for `ty`.
    fn pg_type(ty: Ty) -> Type {
        match ty {
            Int => Type::INT8,
            Real => Type::FLOAT8,
            Text => Type::TEXT,
        }
    }
}

impl Cell {
    /// The value as the view's SQLite table holds it.
    fn value(&self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Int(i) => Value::Integer(*i),
            Cell::Real(r) => Value::Real(*r),
            Cell::Text(t) => Value::Text(t.clone()),
        }
    }

    /// A view's value as the database's column of type `ty` takes it:
    /// what [`push`] writes and the MAC covers. SQLite keeps what it was
    /// given; a value of another type (never written by mcpeval) is NULL.
    fn of(value: &Value, ty: Ty) -> Cell {
        match (value, ty) {
            (Value::Integer(i), Int) => Cell::Int(*i),
            (Value::Integer(i), Real) => Cell::Real(*i as f64),
            (Value::Real(r), Real) => Cell::Real(*r),
            (Value::Text(t), Text) => Cell::Text(t.clone()),
            (Value::Integer(i), Text) => Cell::Text(i.to_string()),
            _ => Cell::Null,
        }
    }

    fn to_sql(&self, ty: Ty) -> Box<dyn ToSql + Sync> {
        match (self, ty) {
            (Cell::Int(i), Int) => Box::new(Some(*i)),
            (Cell::Real(r), Real) => Box::new(Some(*r)),
            (Cell::Text(t), Text) => Box::new(Some(t.clone())),
            (_, Int) => Box::new(None::<i64>),
            (_, Real) => Box::new(None::<f64>),
            (_, Text) => Box::new(None::<String>),
        }
    }
}

/// The cells of a row read from the database, in `table`'s column order.
fn cells(row: &postgres::Row, table: &Table, shown: &str) -> Result<Vec<Cell>> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| {
            Ok(match ty {
                Int => column::<Option<i64>>(row, i, shown)?.map_or(Cell::Null, Cell::Int),
                Real => column::<Option<f64>>(row, i, shown)?.map_or(Cell::Null, Cell::Real),
                Text => column::<Option<String>>(row, i, shown)?.map_or(Cell::Null, Cell::Text),
            })
        })
        .collect()
}

/// Replaces the view's rows of `table` by the database's, taking only
/// the rows that pass [`trust::fault`]; returns the others, refused, for
/// the caller to weigh against its scope and to write back unchanged.
/// A refused row's integer key stays reserved in the view where SQLite
/// keeps a sequence (annotations, whose ids are shown); [`push`] moves a
/// new row off any other refused key.
pub fn pull(
    pg: &mut Transaction<'_>,
    shown: &str,
    salt: &Salt,
    local: &rusqlite::Transaction<'_>,
    path: &std::path::Path,
    table: &'static Table,
) -> Result<Vec<Refused>> {
    let fail = |e| store::db::sql_error(path, e);
    fault::team_statement();
    let rows = pg
        .query(
            &format!(
                "SELECT {}, mac FROM {} ORDER BY 1",
                table.names(),
                table.remote
            ),
            &[],
        )
        .map_err(pg_error(shown))?;
    local
        .execute(&format!("DELETE FROM {}", table.local), [])
        .map_err(fail)?;
    let marks = vec!["?"; table.columns.len()].join(", ");
    let mut insert = local
        .prepare(&format!(
            "INSERT INTO {}({}) VALUES ({marks})",
            table.local,
            table.names()
        ))
        .map_err(fail)?;
    let mut refused = Vec::new();
    for row in rows {
        let cells = cells(&row, table, shown)?;
        let mac = column::<Option<String>>(&row, table.columns.len(), shown)?;
        let fault = match trust::fault(salt, table, &cells, mac.as_deref()) {
            Some(fault) => Some(fault),
            None => match insert.execute(rusqlite::params_from_iter(cells.iter().map(Cell::value)))
            {
                Ok(_) => None,
                // A constraint of the view's table: this row alone is
                // left out (SQLite undoes the one statement).
                Err(rusqlite::Error::SqliteFailure(e, why))
                    if e.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    Some(Fault::Unfit {
                        why: why.unwrap_or_else(|| e.to_string()),
                    })
                }
                Err(e) => return Err(fail(e)),
            },
        };
        if let Some(fault) = fault {
            refused.push(Refused {
                table,
                cells,
                mac,
                fault,
            });
        }
    }
    let top = refused.iter().filter_map(reserved_key).max();
    if let Some(top) = top {
        let sequenced: bool = local
            .query_row(
                "SELECT count(*) > 0 FROM sqlite_master
                 WHERE type = 'table' AND name = ?1 AND sql LIKE '%AUTOINCREMENT%'",
                [table.local],
                |r| r.get(0),
            )
            .map_err(fail)?;
        if sequenced {
            local
                .execute(
                    "INSERT INTO sqlite_sequence(name, seq) SELECT ?1, 0
                     WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?1)",
                    [table.local],
                )
                .map_err(fail)?;
            local
                .execute(
                    "UPDATE sqlite_sequence SET seq = max(seq, ?2) WHERE name = ?1",
                    rusqlite::params![table.local, top],
                )
                .map_err(fail)?;
        }
    }
    Ok(refused)
}

/// The view's rows of `table`, in key order.
pub fn rows(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    table: &Table,
) -> Result<Vec<Vec<Value>>> {
    let fail = |e| store::db::sql_error(path, e);
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {} FROM {} ORDER BY 1",
            table.names(),
            table.local
        ))
        .map_err(fail)?;
    let width = table.columns.len();
    let rows = stmt
        .query_map([], |r| (0..width).map(|i| r.get::<_, Value>(i)).collect())
        .map_err(fail)?;
    rows.collect::<rusqlite::Result<_>>().map_err(fail)
}

/// A digest of rows, to tell whether a command changed a table.
pub fn digest(rows: &[Vec<Value>]) -> [u8; 32] {
    let mut text = String::new();
    for row in rows {
        for value in row {
            match value {
                Value::Null => text.push('N'),
                Value::Integer(i) => text.push_str(&format!("I{i}")),
                Value::Real(r) => text.push_str(&format!("R{}", r.to_bits())),
                Value::Text(t) => text.push_str(&format!("T{}:{t}", t.len())),
                Value::Blob(b) => text.push_str(&format!("B{}", hash::hex(b))),
            }
            text.push('\u{1f}');
        }
        text.push('\n');
    }
    hash::sha256(text.as_bytes())
}

/// Replaces the database's rows of `table` by `rows` (from the view),
/// each with its MAC, and the rows of `kept` (refused at the pull) as
/// they were, with the MAC they carried: a refused row is neither signed
/// nor lost. A view row whose key a kept row holds is the team's own
/// word on that key and replaces it (a text key: a finding, an import),
/// or, for an integer key, which only numbers the rows, a new row the
/// command made while the refused one was out of the view: the view's
/// new rows then move past every kept row, in their order.
pub fn push(
    pg: &mut Transaction<'_>,
    shown: &str,
    salt: &Salt,
    table: &Table,
    rows: &[Vec<Value>],
    kept: &[Refused],
) -> Result<()> {
    let mut cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(table.columns)
                .map(|(value, (_, ty))| Cell::of(value, *ty))
                .collect()
        })
        .collect();
    let mut kept: Vec<&Refused> = kept
        .iter()
        .filter(|r| r.table.remote == table.remote)
        .collect();
    renumber(&mut cells, &kept);
    kept.retain(|r| !cells.iter().any(|row| row.first() == r.cells.first()));
    fault::team_statement();
    pg.execute(&format!("DELETE FROM {}", table.remote), &[])
        .map_err(pg_error(shown))?;
    let mut types: Vec<Type> = table
        .columns
        .iter()
        .map(|(_, ty)| Table::pg_type(*ty))
        .collect();
    types.push(Type::TEXT);
    fault::team_statement();
    let sink = pg
        .copy_in(&format!(
            "COPY {}({}, mac) FROM STDIN (FORMAT binary)",
            table.remote,
            table.names()
        ))
        .map_err(pg_error(shown))?;
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    let signed = cells
        .iter()
        .map(|row| (row, Some(trust::sign(salt, table, row))));
    let kept = kept.iter().map(|r| (&r.cells, r.mac.clone()));
    for (n, (row, mac)) in (1..).zip(signed.chain(kept)) {
        fault::team_row(n);
        let mut owned: Vec<Box<dyn ToSql + Sync>> = row
            .iter()
            .zip(table.columns)
            .map(|(cell, (_, ty))| cell.to_sql(*ty))
            .collect();
        owned.push(Box::new(mac));
        let refs: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        writer.write(&refs).map_err(pg_error(shown))?;
    }
    fault::team_statement();
    writer.finish().map_err(pg_error(shown))?;
    Ok(())
}

/// Moves the view's rows off the integer keys `kept` holds (see [`push`]):
/// every row from the first that collides on is numbered on past the
/// highest kept key, so the new rows keep their order after every other.
fn renumber(rows: &mut [Vec<Cell>], kept: &[&Refused]) {
    let keys: Vec<i64> = kept.iter().copied().filter_map(reserved_key).collect();
    let Some(&top) = keys.iter().max() else {
        return;
    };
    let first = rows
        .iter()
        .filter_map(|row| match row.first() {
            Some(Cell::Int(id)) if keys.contains(id) => Some(*id),
            _ => None,
        })
        .min();
    let Some(first) = first else {
        return;
    };
    let Some(shift) = top.checked_sub(first).and_then(|d| d.checked_add(1)) else {
        return;
    };
    for row in rows {
        if let Some(Cell::Int(id)) = row.first_mut()
            && *id >= first
        {
            *id = id.saturating_add(shift);
        }
    }
}

/// The integer key a refused row keeps reserved, so the team's new rows
/// never land on it: none for a key no store would reach (a forged row
/// at a huge id must not push every later row past the end of the range,
/// nor fill an AUTOINCREMENT sequence so that nothing can be added).
fn reserved_key(refused: &Refused) -> Option<i64> {
    const REACHABLE: i64 = 1 << 40;
    match refused.cells.first() {
        Some(Cell::Int(id)) if (1..REACHABLE).contains(id) => Some(*id),
        _ => None,
    }
}

/// Signs every row of `table` that carries no MAC: once, when this
/// release first migrates a database whose rows were written before
/// rows were signed (see the module `schema`).
pub fn sign_unsigned(
    pg: &mut Transaction<'_>,
    shown: &str,
    salt: &Salt,
    table: &Table,
) -> Result<u64> {
    fault::team_statement();
    let rows = pg
        .query(
            &format!(
                "SELECT {} FROM {} WHERE mac IS NULL",
                table.names(),
                table.remote
            ),
            &[],
        )
        .map_err(pg_error(shown))?;
    let key = table.columns[0].0;
    let update = format!("UPDATE {} SET mac = $1 WHERE {key} = $2", table.remote);
    for row in &rows {
        let cells = cells(row, table, shown)?;
        let mac = trust::sign(salt, table, &cells);
        fault::team_statement();
        pg.execute(
            &update,
            &[&mac, cells[0].to_sql(table.columns[0].1).as_ref()],
        )
        .map_err(pg_error(shown))?;
    }
    Ok(rows.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mirrored columns are exactly the SQLite tables' columns: a
    /// migration of lifecycle.db or index.db that adds one must add it here
    /// (and to the database's schema).
    #[test]
    fn mirrored_tables_have_every_column_of_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let life = store::db::open(dir.path().join("l.db"), &store::lifecycle::SCHEMA).unwrap();
        let index = store::db::open(dir.path().join("i.db"), &store::index_db::SCHEMA).unwrap();
        for (conn, tables) in [(&life, LIFECYCLE), (&index, CATALOG)] {
            for table in tables {
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT name FROM pragma_table_info('{}')",
                        table.local
                    ))
                    .unwrap();
                let names: Vec<String> = stmt
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap();
                let ours: Vec<&str> = table.columns.iter().map(|c| c.0).collect();
                assert_eq!(names, ours, "{}", table.local);
            }
        }
    }

    fn kept(table: &'static Table, id: i64) -> Refused {
        let mut cells = vec![Cell::Null; table.columns.len()];
        cells[0] = Cell::Int(id);
        Refused {
            table,
            cells,
            mac: None,
            fault: Fault::Mac,
        }
    }

    /// A refused run keeps its id; the runs a command adds meanwhile move
    /// past it, in their order, and nothing else moves.
    #[test]
    fn new_rows_move_off_the_ids_refused_rows_hold() {
        let history = &LIFECYCLE[3];
        let row = |id: i64| vec![Cell::Int(id), Cell::Text(format!("row {id}"))];
        let mut rows: Vec<Vec<Cell>> = (1..=5).map(row).collect();
        let refused = [kept(history, 4), kept(history, 9)];
        renumber(&mut rows, &refused.iter().collect::<Vec<_>>());
        let ids: Vec<&Cell> = rows.iter().map(|r| &r[0]).collect();
        assert_eq!(
            ids,
            [1, 2, 3, 10, 11].map(Cell::Int).iter().collect::<Vec<_>>()
        );
        assert_eq!(rows[3][1], Cell::Text("row 4".into()));
        // No collision: nothing moves.
        let mut rows: Vec<Vec<Cell>> = (1..=3).map(row).collect();
        renumber(&mut rows, &[&kept(history, 7)]);
        assert_eq!(rows, (1..=3).map(row).collect::<Vec<_>>());
        // A forged row at an id no store reaches reserves nothing: no
        // overflow, and the new rows keep their ids.
        let mut rows: Vec<Vec<Cell>> = (1..=3).map(row).collect();
        let far = [kept(history, 3), kept(history, i64::MAX)];
        renumber(&mut rows, &far.iter().collect::<Vec<_>>());
        let ids: Vec<&Cell> = rows.iter().map(|r| &r[0]).collect();
        assert_eq!(ids, [1, 2, 4].map(Cell::Int).iter().collect::<Vec<_>>());
        assert_eq!(reserved_key(&kept(history, i64::MAX)), None);
        assert_eq!(reserved_key(&kept(history, -1)), None);
    }
}
