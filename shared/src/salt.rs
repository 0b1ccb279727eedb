//! The store's secret salt: 32 random bytes in `.salt`, mode 0600.
//!
//! Created once, on first need, atomically even when several processes race:
//! each writes a private temporary file and hard-links it into place; the
//! first link wins and everyone then reads the winner's bytes. The salt is
//! never printed, exported or shared.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;

use crate::error::{Error, IoContext, Result};
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
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::new(crate::exit::IO, format!("cannot draw random bytes: {e}")))?;
        let tmp = home
            .root()
            .join(format!(".salt.{}.tmp", uuid::Uuid::new_v4().simple()));
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()
        })();
        written.context(format_args!("cannot write {}", tmp.display()))?;
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(Salt(bytes)),
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                Salt::load(home)?.ok_or_else(|| {
                    Error::unavailable(format!("{} vanished while being created", path.display()))
                })
            }
            Err(err) => Err(Error::io(
                format_args!("cannot create {}", path.display()),
                err,
            )),
        }
    }

    /// Loads the salt if the store has one.
    pub fn load(home: &Home) -> Result<Option<Salt>> {
        let path = home.salt();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(Error::io(
                    format_args!("cannot read {}", path.display()),
                    err,
                ));
            }
        };
        let bytes: [u8; LEN] = bytes.try_into().map_err(|b: Vec<u8>| {
            Error::unavailable(format!(
                "{} holds {} bytes, not {LEN}: the salt is damaged",
                path.display(),
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
