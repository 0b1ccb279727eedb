//! The MAC every row of the team database carries.
//!
//! The database is shared storage, not a trust root: whoever can write it
//! can write any row, and only the team salt, which never leaves the
//! team's machines, tells the rows a store of the team wrote from the
//! rest. So every mirrored row carries a MAC, HMAC-SHA256 keyed by the
//! team salt over the table's name and every column value of the row
//! ([`sign`]).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::salt::Salt;

use super::mirror::{Cell, Table};

/// The first field of every MAC'd message: what the bytes are, and the
/// version of their layout.
const DOMAIN: &[u8] = b"mcpeval team row/1";

/// The row MAC of `cells`, a row of `table` in column order: lowercase hex.
pub fn sign(salt: &Salt, table: &Table, cells: &[Cell]) -> String {
    crate::hash::hex(&keyed(salt, table, cells).finalize().into_bytes())
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

#[cfg(test)]
mod tests {
    use super::super::mirror::{CATALOG, LIFECYCLE};
    use super::*;

    fn salt(byte: u8) -> Salt {
        Salt::from_bytes([byte; crate::salt::LEN])
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
}
