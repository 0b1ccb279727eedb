//! What a row of the team database must show before a team view takes it.
//!
//! The database is shared storage, not a trust root: whoever can write it
//! can write any row, and only the team salt, which never leaves the
//! team's machines, tells the rows a store of the team wrote from the
//! rest. So every mirrored row carries a MAC, HMAC-SHA256 keyed by the
//! team salt over the table's name and every column value of the row
//! ([`sign`]), and the names and argument shapes a row holds must be ones
//! capture could have written, whatever its MAC says. A row that fails is
//! *refused* ([`Refused`]): it never enters the view, so nothing a
//! command reads or shows can come from it.
//!
//! A MAC proves that a store of the team wrote the row, not that it is the
//! latest such row: a writer without the salt can still delete rows, or
//! put back a row the team wrote earlier. What it can no longer do is
//! write words of its own into any row.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use shared::error::Error;
use shared::escape;
use store::salt::Salt;

use super::mirror::{Cell, Table};

/// The first field of every MAC'd message: what the bytes are, and the
/// version of their layout.
const DOMAIN: &[u8] = b"mcpeval team row/1";

/// How many characters of an untrusted value a message shows.
const SHOWN: usize = 64;

/// The row MAC of `cells`, a row of `table` in column order: lowercase hex.
pub fn sign(salt: &Salt, table: &Table, cells: &[Cell]) -> String {
    store::hash::hex(&keyed(salt, table, cells).finalize().into_bytes())
}

/// Whether `mac` is the row MAC of `cells` (compared in constant time).
/// No MAC (NULL) is never valid.
fn verify(salt: &Salt, table: &Table, cells: &[Cell], mac: Option<&str>) -> bool {
    let Some(given) = mac.and_then(store::hash::unhex) else {
        return false;
    };
    keyed(salt, table, cells).verify_slice(&given).is_ok()
}

/// HMAC-SHA256 keyed by the salt over an encoding no two rows share:
/// [`DOMAIN`], the table's remote name and the number of columns, then
/// each value with a type tag (`N` NULL, `I` integer, `R` real, `T` text)
/// and, for text, its length. Every length is 8 bytes, big-endian; an
/// integer is 8 bytes big-endian and a real its IEEE 754 bits (one NaN
/// for all).
fn keyed(salt: &Salt, table: &Table, cells: &[Cell]) -> Hmac<Sha256> {
    fn length(mac: &mut Hmac<Sha256>, n: usize) {
        mac.update(&(n as u64).to_be_bytes());
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(salt.expose()).expect("HMAC takes any key length");
    for field in [DOMAIN, table.remote.as_bytes()] {
        length(&mut mac, field.len());
        mac.update(field);
    }
    length(&mut mac, cells.len());
    for cell in cells {
        match cell {
            Cell::Null => mac.update(b"N"),
            Cell::Int(i) => {
                mac.update(b"I");
                mac.update(&i.to_be_bytes());
            }
            Cell::Real(r) => {
                let bits = if r.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    r.to_bits()
                };
                mac.update(b"R");
                mac.update(&bits.to_be_bytes());
            }
            Cell::Text(t) => {
                mac.update(b"T");
                length(&mut mac, t.len());
                mac.update(t.as_bytes());
            }
        }
    }
    mac
}

/// Why a row was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Its MAC is missing or is not the team salt's over these values.
    Mac,
    /// A server or tool name capture would have cleaned (or an empty one).
    Name {
        column: &'static str,
        value: String,
        why: String,
    },
    /// Argument shapes capture would not write.
    Shapes { why: String },
    /// The view's table does not take it (a row trusted when the database
    /// was first signed, written by hand before that).
    Unfit { why: String },
}

/// What is wrong with a row of `table` read from the database, if
/// anything: the names and shapes it holds first (they are wrong
/// whoever wrote them), then its MAC.
pub fn fault(salt: &Salt, table: &Table, cells: &[Cell], mac: Option<&str>) -> Option<Fault> {
    let text = |column: &str| {
        let i = table.columns.iter().position(|(name, _)| *name == column)?;
        match &cells[i] {
            Cell::Text(t) => Some(t.as_str()),
            _ => None,
        }
    };
    for &column in table.names {
        if let Some(value) = text(column)
            && let Some(why) = escape::name_fault(value)
        {
            return Some(Fault::Name {
                column,
                value: value.to_owned(),
                why,
            });
        }
    }
    if let Some(column) = table.shapes
        && let Some(why) = text(column).and_then(store::envelope::args_shapes_fault)
    {
        return Some(Fault::Shapes { why });
    }
    (!verify(salt, table, cells, mac)).then_some(Fault::Mac)
}

/// A row of the database the view did not take: kept, as it was read
/// (its values and its MAC), to be written back unchanged.
#[derive(Debug, Clone)]
pub struct Refused {
    pub table: &'static Table,
    pub cells: Vec<Cell>,
    /// The MAC it carried, never made anew: signing it would launder it.
    pub mac: Option<String>,
    pub fault: Fault,
}

impl Refused {
    /// The value of the row's `column`.
    pub fn cell(&self, column: &str) -> Option<&Cell> {
        let i = self.table.columns.iter().position(|(c, _)| *c == column)?;
        self.cells.get(i)
    }

    /// The error a command that depends on this row stops with (status
    /// 3): the table and the row by its key, every value of it shown
    /// escaped, why, and how to repair it. `more` counts the other
    /// refused rows the command depends on.
    pub fn error(&self, shown: &str, more: usize) -> Error {
        let key = format!("{}={}", self.table.columns[0].0, show(&self.cells[0]));
        let why = match &self.fault {
            Fault::Mac => "does not carry a valid MAC of the team salt: it was not written by a \
                           store of this team"
                .to_owned(),
            Fault::Name { column, value, why } => format!(
                "holds a {column} name capture never writes, {} ({why})",
                show_text(value)
            ),
            Fault::Shapes { why } => {
                format!("holds argument shapes capture never writes ({why})")
            }
            Fault::Unfit { why } => format!(
                "does not fit this machine's team view ({})",
                escape::terminal(why)
            ),
        };
        let more = match more {
            0 => String::new(),
            1 => " (and 1 more row of the team database this command reads)".to_owned(),
            n => format!(" (and {n} more rows of the team database this command reads)"),
        };
        let hint = if self.table.remote.starts_with("mcpeval.cat_") {
            "run `mcpeval promote`, which recomputes the team's findings and replaces this row"
        } else {
            "restore the row as a store of the team wrote it (from a backup of the database), \
             or delete it; only mcpeval, with the team salt, writes the team's lifecycle"
        };
        Error::unavailable(format!(
            "team database {shown}: row {key} of {} {why}{more}; nothing was written",
            self.table.remote
        ))
        .with_hint(hint)
    }
}

/// A value of an untrusted row, for a message.
fn show(cell: &Cell) -> String {
    match cell {
        Cell::Null => "NULL".to_owned(),
        Cell::Int(i) => i.to_string(),
        Cell::Real(r) => r.to_string(),
        Cell::Text(t) => show_text(t),
    }
}

/// Text of an untrusted row: quoted, every control and bidirectional
/// character escaped, at most [`SHOWN`] characters and then an ellipsis.
fn show_text(text: &str) -> String {
    let cut: String = text.chars().take(SHOWN).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{more}", escape::quoted(&cut))
}

#[cfg(test)]
mod tests {
    use super::super::mirror::{CATALOG, LIFECYCLE};
    use super::*;

    fn salt(byte: u8) -> Salt {
        Salt::from_bytes([byte; store::salt::LEN])
    }

    fn table(remote: &str) -> &'static Table {
        LIFECYCLE
            .iter()
            .chain(CATALOG)
            .find(|t| t.remote == remote)
            .unwrap()
    }

    fn text(t: &str) -> Cell {
        Cell::Text(t.to_owned())
    }

    /// A `cat_findings` row as promote writes one.
    fn finding(tool: &str, shapes: &str) -> Vec<Cell> {
        let mut cells = vec![
            text("finding-0123456789abcdef"),
            text("error"),
            text("weather"),
            text(tool),
            Cell::Null,
            text("tool-error"),
            Cell::Real(0.5),
            Cell::Int(4),
            Cell::Int(8),
            Cell::Real(0.5),
            Cell::Real(0.2),
            Cell::Int(2),
            text("2026-01-01T00:00:00Z"),
            text("2026-01-02T00:00:00Z"),
            Cell::Real(1.0),
            Cell::Int(1),
            Cell::Int(7),
            text("[7]"),
            Cell::Null,
        ];
        cells.push(text(shapes));
        cells
    }

    #[test]
    fn a_row_signed_with_the_salt_verifies_and_no_other_does() {
        let t = table("mcpeval.cat_findings");
        let row = finding("get_status", r#"[{"city":"string"}]"#);
        let mac = sign(&salt(1), t, &row);
        assert_eq!(mac.len(), 64);
        assert_eq!(fault(&salt(1), t, &row, Some(&mac)), None);
        // Another salt, no MAC, a MAC in capitals, a changed value, a MAC
        // of the same values in another table: all refused.
        assert_eq!(fault(&salt(2), t, &row, Some(&mac)), Some(Fault::Mac));
        assert_eq!(fault(&salt(1), t, &row, None), Some(Fault::Mac));
        let upper = mac.to_uppercase();
        assert_eq!(fault(&salt(1), t, &row, Some(&upper)), Some(Fault::Mac));
        let mut changed = row.clone();
        changed[7] = Cell::Int(5);
        assert_eq!(fault(&salt(1), t, &changed, Some(&mac)), Some(Fault::Mac));
        let state = table("mcpeval.life_finding_state");
        let other = sign(&salt(1), state, &row);
        assert_ne!(other, mac);
    }

    #[test]
    fn the_encoding_tells_null_from_empty_and_where_each_value_ends() {
        let t = table("mcpeval.life_imports");
        let s = salt(3);
        let rows = [
            vec![Cell::Null, text(""), Cell::Int(0)],
            vec![text(""), text(""), Cell::Int(0)],
            vec![text("ab"), text("c"), Cell::Int(0)],
            vec![text("a"), text("bc"), Cell::Int(0)],
            vec![text("a"), text("bc"), Cell::Real(0.0)],
            vec![text("a"), text("bc"), Cell::Null],
        ];
        let macs: Vec<String> = rows.iter().map(|r| sign(&s, t, r)).collect();
        for (i, a) in macs.iter().enumerate() {
            for b in &macs[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn names_and_shapes_capture_would_not_write_are_refused_whatever_the_mac() {
        let t = table("mcpeval.cat_findings");
        let s = salt(1);
        let check = |row: Vec<Cell>| {
            let mac = sign(&s, t, &row);
            fault(&s, t, &row, Some(&mac))
        };
        match check(finding("get\u{1b}[2Jstatus", "[]")) {
            Some(Fault::Name { column, value, why }) => {
                assert_eq!((column, value.as_str()), ("tool", "get\u{1b}[2Jstatus"));
                assert!(why.contains("U+001B"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(check(finding("", "[]")), Some(Fault::Name { .. })));
        for shapes in [
            "{}",
            "not json",
            r#"["Paris"]"#,
            r#"[{"city":"Paris"}]"#,
            r#"[["string","string"]]"#,
            "[{\"ci\\u001bty\":\"string\"}]",
        ] {
            assert!(
                matches!(
                    check(finding("get_status", shapes)),
                    Some(Fault::Shapes { .. })
                ),
                "{shapes}"
            );
        }
        assert_eq!(check(finding("get_status", r#"[{"*":["object"]}]"#)), None);
        // A state row of an earlier release names no server or tool.
        let state = table("mcpeval.life_finding_state");
        let mut row = vec![Cell::Null; state.columns.len()];
        row[0] = text("finding-0123456789abcdef");
        let mac = sign(&s, state, &row);
        assert_eq!(fault(&s, state, &row, Some(&mac)), None);
    }

    #[test]
    fn a_refusal_names_table_and_row_and_shows_every_value_escaped() {
        let t = table("mcpeval.cat_findings");
        let mut cells = finding("get\u{1b}[2Jstatus\u{202e}", "[]");
        cells[0] = text("finding-\u{7}\"x");
        let refused = Refused {
            table: t,
            mac: None,
            fault: fault(&salt(1), t, &cells, None).unwrap(),
            cells,
        };
        let err = refused.error("postgres://u@h:5432/db", 2);
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
        assert_eq!(
            err.message(),
            "team database postgres://u@h:5432/db: row id=\"finding-\\u0007\\\"x\" of \
             mcpeval.cat_findings holds a tool name capture never writes, \
             \"get\\u001b[2Jstatus\\u202e\" (the name holds the control, bidirectional or \
             invisible character U+001B at byte 3) (and 2 more rows of the team database this command \
             reads); nothing was written"
        );
        assert!(err.hint().unwrap().contains("mcpeval promote"));
        let long = Refused {
            table: table("mcpeval.life_imports"),
            cells: vec![text(&"x".repeat(100)), Cell::Null, Cell::Int(1)],
            mac: None,
            fault: Fault::Mac,
        };
        let err = long.error("db", 0);
        assert!(
            err.message().starts_with(&format!(
                "team database db: row name=\"{}\"… of mcpeval.life_imports does not carry a valid MAC",
                "x".repeat(64)
            )),
            "{}",
            err.message()
        );
        assert!(err.hint().unwrap().starts_with("restore the row"));
    }
}
