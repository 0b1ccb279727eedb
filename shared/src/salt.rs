//! The store's secret salt: 32 random bytes in `.salt`, mode 0600.
//!
//! Created once, on first need, atomically even when several processes race:
//! each writes a private temporary file and hard-links it into place; the
//! first link wins and everyone then reads the winner's bytes. The salt is
//! never printed, exported or shared.

use std::fs;
use std::io::ErrorKind;

use crate::error::{Error, Result};
use crate::hash;
use crate::home::Home;

/// Length of the salt in bytes.
pub const LEN: usize = 32;

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
        home.ensure()?;
        let path = home.salt();
        let mut bytes = [0u8; LEN];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::new(
                crate::error::Kind::Io,
                format!("cannot draw random bytes: {e}"),
            )
        })?;
        // The first link wins; a racing process reads the winner's bytes.
        if crate::atomic_file::create(path.as_std_path(), &bytes, 0o600)? {
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
    fn a_damaged_salt_is_reported_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(home.salt(), b"short").unwrap();
        let err = Salt::load_or_create(&home).unwrap_err();
        assert_eq!(err.status(), crate::exit::UNAVAILABLE);
        assert!(err.message().contains("holds 5 bytes, not 32"), "{err}");
        assert_eq!(std::fs::read(home.salt()).unwrap(), b"short");
    }
}
