//! The store's secret salt: 32 random bytes in `.salt`, mode 0600.
//!
//! Created once, on first need, atomically even when several processes race:
//! each writes a private temporary file and hard-links it into place; the
//! first link wins and everyone then reads the winner's bytes. The salt is
//! never printed: `mcpeval salt --export FILE` alone writes it out, into a
//! file the user names, so that the machines of a team can share one salt
//! (`--import FILE` installs it, through the same first-link-wins path).

use std::fs;
use std::io::ErrorKind;

use crate::hash;
use shared::error::{Error, Result};
use shared::home::Home;

/// Length of the salt in bytes.
pub const LEN: usize = 32;

/// The start of an exported salt file's one line, before the hex digits.
pub const EXPORT_HEADER: &str = "mcpeval.salt/1 ";

/// What installing a salt into a store found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// The store had no salt; it now has this one.
    New,
    /// The store already had this very salt; nothing was written.
    Same,
    /// The store has another salt (perhaps made a moment ago by a racing
    /// process); it was left as it is.
    Other,
}

/// The salt keying session ids, template ids, finding ids and MACs.
#[derive(Clone)]
pub struct Salt([u8; LEN]);

impl std::fmt::Debug for Salt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Salt(..)")
    }
}

impl Salt {
    /// Loads the store's salt, creating it (and the store) if missing.
    pub fn load_or_create(home: &Home) -> Result<Salt> {
        if let Some(salt) = Salt::load(home)? {
            return Ok(salt);
        }
        crate::dir::ensure(home)?;
        let path = home.salt();
        let mut bytes = [0u8; LEN];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::new(
                shared::error::Kind::Io,
                format!("cannot draw random bytes: {e}"),
            )
        })?;
        // The first link wins; a racing process reads the winner's bytes.
        if shared::atomic_file::create(path.as_std_path(), &bytes, 0o600)? {
            return Ok(Salt(bytes));
        }
        Salt::load(home)?
            .ok_or_else(|| Error::unavailable(format!("{} vanished while being created", path)))
    }

    /// Loads the salt if the store has one.
    pub fn load(home: &Home) -> Result<Option<Salt>> {
        let path = home.salt();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(Error::io(format_args!("cannot read {}", path), err));
            }
        };
        let bytes: [u8; LEN] = bytes.try_into().map_err(|b: Vec<u8>| {
            Error::unavailable(format!(
                "{} holds {} bytes, not {LEN}: the salt is damaged",
                path,
                b.len()
            ))
            .with_hint("restore .salt from the backup taken with lifecycle.db")
        })?;
        Ok(Some(Salt(bytes)))
    }

    /// Installs `salt` as the store's salt when it has none, atomically
    /// (mode 0600, the first link wins, as in [`Salt::load_or_create`]).
    /// A store that has a salt keeps it: [`Installed::Same`] or
    /// [`Installed::Other`] says whether it is this one.
    pub fn install(home: &Home, salt: &Salt) -> Result<Installed> {
        let existing = |found: Option<Salt>| match found {
            Some(found) if found.0 == salt.0 => Ok(Installed::Same),
            Some(_) => Ok(Installed::Other),
            None => Err(Error::unavailable(format!(
                "{} vanished while being installed",
                home.salt()
            ))),
        };
        if let Some(found) = Salt::load(home)? {
            return existing(Some(found));
        }
        crate::dir::ensure(home)?;
        if shared::atomic_file::create(home.salt().as_std_path(), &salt.0, 0o600)? {
            return Ok(Installed::New);
        }
        existing(Salt::load(home)?)
    }

    /// The salt as 64 lowercase hex digits: only for the export file.
    pub fn to_hex(&self) -> String {
        hash::hex(&self.0)
    }

    /// A salt from exactly 64 lowercase hex digits.
    pub fn from_hex(text: &[u8]) -> Option<Salt> {
        fn digit(b: u8) -> Option<u8> {
            match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'a'..=b'f' => Some(b - b'a' + 10),
                _ => None,
            }
        }
        if text.len() != 2 * LEN {
            return None;
        }
        let mut bytes = [0u8; LEN];
        for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
            *byte = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Salt(bytes))
    }

    /// The export file's contents: [`EXPORT_HEADER`], the hex, a newline.
    pub fn export_line(&self) -> String {
        format!("{EXPORT_HEADER}{}\n", self.to_hex())
    }

    /// Reads an export file's whole contents, read from `source`. A bad
    /// file is rejected (status 4) naming `source` and what is wrong,
    /// without quoting any of its bytes.
    pub fn parse_export(bytes: &[u8], source: impl std::fmt::Display) -> Result<Salt> {
        let rejected = |why: String| {
            Error::rejected(format!("{source}: {why}"))
                .with_hint("give the file mcpeval salt --export wrote, unchanged")
        };
        let Some(rest) = bytes.strip_prefix(EXPORT_HEADER.as_bytes()) else {
            return Err(rejected(format!(
                "not an exported salt: the file does not start with \"{EXPORT_HEADER}\""
            )));
        };
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let (field, after) = rest.split_at(end);
        let Some(salt) = Salt::from_hex(field) else {
            return Err(rejected(if field.len() != 2 * LEN {
                format!(
                    "the salt must be {} lowercase hex digits after the header; the line holds {} bytes there",
                    2 * LEN,
                    field.len()
                )
            } else {
                format!(
                    "the salt must be {} lowercase hex digits after the header; another character is among them",
                    2 * LEN
                )
            }));
        };
        match after {
            b"\n" => Ok(salt),
            [] => Err(rejected(
                "the salt line does not end with a newline".to_owned(),
            )),
            _ => Err(rejected(format!(
                "{} bytes of trailing data after the salt line; the file holds one line",
                after.len() - 1
            ))),
        }
    }

    /// A salt from known bytes (tests, and stores restored from backup).
    pub fn from_bytes(bytes: [u8; LEN]) -> Salt {
        Salt(bytes)
    }

    /// `hex(sha256(salt ‖ part₁ ‖ part₂ …))[..16]`, where ‖ is one 0x00 byte.
    pub fn id16(&self, parts: &[&[u8]]) -> String {
        let digest = self.digest(parts);
        hash::hex(&digest[..8])
    }

    /// `sha256(salt ‖ part₁ ‖ part₂ …)`, where ‖ is one 0x00 byte.
    pub fn digest(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
        all.push(&self.0);
        all.extend_from_slice(parts);
        hash::sha256_joined(&all)
    }

    /// The raw bytes, for keying an HMAC. Never write them anywhere.
    pub fn expose(&self) -> &[u8; LEN] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racing_first_uses_agree_on_one_salt() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("store"));
        let salts: Vec<[u8; LEN]> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..16)
                .map(|_| s.spawn(|| *Salt::load_or_create(&home).unwrap().expose()))
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert!(
            salts.windows(2).all(|w| w[0] == w[1]),
            "every racer reads one salt"
        );
        assert_eq!(std::fs::read(home.salt()).unwrap(), salts[0]);
        let leftovers: Vec<_> = std::fs::read_dir(home.root())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn an_export_line_reads_back_and_bad_ones_say_why() {
        let salt = Salt::from_bytes([0xa5; LEN]);
        let line = salt.export_line();
        assert_eq!(line, format!("mcpeval.salt/1 {}\n", "a5".repeat(LEN)));
        assert_eq!(Salt::parse_export(line.as_bytes(), "f").unwrap().0, salt.0);
        let hex = "a5".repeat(LEN);
        let why = |text: &str| {
            let err = Salt::parse_export(text.as_bytes(), "f").unwrap_err();
            assert_eq!(err.status(), 4);
            assert!(err.message().starts_with("f: "), "{}", err.message());
            err.message().to_owned()
        };
        assert!(why(&format!("salt/1 {hex}\n")).contains("does not start with"));
        assert!(why(&format!("mcpeval.salt/1 {}\n", &hex[1..])).contains("holds 63 bytes"));
        assert!(
            why(&format!("mcpeval.salt/1 {}\n", hex.to_uppercase())).contains("another character")
        );
        assert!(why(&format!("mcpeval.salt/1 {hex}")).contains("newline"));
        assert!(why(&format!("mcpeval.salt/1 {hex}\nx\n")).contains("2 bytes of trailing data"));
    }

    #[test]
    fn install_keeps_a_store_that_has_a_salt() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("store"));
        let salt = Salt::from_bytes([7; LEN]);
        assert_eq!(Salt::install(&home, &salt).unwrap(), Installed::New);
        assert_eq!(Salt::install(&home, &salt).unwrap(), Installed::Same);
        let other = Salt::from_bytes([8; LEN]);
        assert_eq!(Salt::install(&home, &other).unwrap(), Installed::Other);
        assert_eq!(std::fs::read(home.salt()).unwrap(), [7; LEN]);
    }

    #[test]
    fn a_damaged_salt_is_reported_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(home.salt(), b"short").unwrap();
        let err = Salt::load_or_create(&home).unwrap_err();
        assert_eq!(err.status(), shared::exit::UNAVAILABLE);
        assert!(err.message().contains("holds 5 bytes, not 32"), "{err}");
        assert_eq!(std::fs::read(home.salt()).unwrap(), b"short");
    }
}
