//! The store's salted tokens, re-keyed for one share file.
//!
//! Session tokens and template ids are salted hashes made with the store's
//! salt, and event ids are random ids kept verbatim in the journals, so the
//! same call carries the same tokens in the store, in every journal and in
//! every share. A share file must not: each one gets a random key of its
//! own, drawn when it is written and never kept, and every session token,
//! template id and event id in it is replaced by a hash under that key.
//! Calls of one session (and errors of one template) still share one token
//! within the file, and distinct calls keep distinct event ids (a note
//! still names its call), but nothing in it can be matched to the store or
//! to another share.

use std::borrow::Cow;

use serde_json::Value;
use shared::error::{Error, Result};
use shared::escape::clean_name;
use shared::record::Record;
use store::catalog::Finding;
use store::salt::Salt;

/// The key of one share file.
pub struct Rekey(Salt);

impl Rekey {
    /// A fresh random key.
    pub fn new() -> Result<Rekey> {
        let mut bytes = [0u8; store::salt::LEN];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::new(shared::exit::IO, format!("cannot draw random bytes: {e}")))?;
        Ok(Rekey(Salt::from_bytes(bytes)))
    }

    /// The file's token for the store's session token `token`.
    pub fn session(&self, token: &str) -> String {
        format!("s-{}", self.0.id16(&[b"session", token.as_bytes()]))
    }

    /// The file's id for the store's template id `id`.
    pub fn template(&self, id: &str) -> String {
        format!("t-{}", self.0.id16(&[b"template", id.as_bytes()]))
    }

    /// The file's event id for the store's event id `id`: a UUID in the v4
    /// form, as every event id is, made of the keyed hash of `id` (its
    /// lower-case spelling, so one call has one id however it was
    /// written). 122 bits of the hash survive the version and variant
    /// bits: distinct calls keep distinct ids.
    pub fn event(&self, id: &str) -> String {
        let digest = self
            .0
            .digest(&[b"event", id.to_ascii_lowercase().as_bytes()]);
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
            .to_string()
    }

    /// `record` as the file carries it: session, template and event id re-keyed,
    /// server and tool names cleaned as capture cleans them (a journal of
    /// an earlier release may hold any text), so that a reader's checks
    /// accept what `share` writes.
    pub fn record(&self, record: &mut Record) {
        match record {
            Record::V1(c) => {
                c.identity.event_id = self.event(&c.identity.event_id).into();
                c.identity.session = self.session(&c.identity.session).into();
                if let Some(t) = c.error.as_mut().and_then(|e| e.template_id.as_mut()) {
                    *t = self.template(t).into();
                }
                clean(c.server.to_mut());
                clean(c.tool.to_mut());
                clean_shape(&mut c.args_shape);
            }
            Record::V0(c) => {
                c.session = self.session(&c.session);
                if let Some(t) = c.template_id.as_mut() {
                    *t = self.template(t);
                }
                clean(&mut c.server);
                clean(&mut c.tool);
                clean_shape(&mut c.args_shape);
            }
        }
    }
}

/// `finding` as the file carries it: names and argument keys cleaned as
/// [`Rekey::record`] cleans a record's, so both still agree. (Findings
/// carry no session token or template id.)
pub fn finding(finding: &Finding) -> Finding {
    let mut f = finding.clone();
    clean(&mut f.derived.server);
    clean(&mut f.derived.tool);
    f.derived.args_shapes.iter_mut().for_each(clean_shape);
    f
}

/// Replaces `name` by capture's cleaned form when it differs.
pub fn clean(name: &mut String) {
    if let Cow::Owned(c) = clean_name(name) {
        *name = c;
    }
}

/// Cleans every key of an argument shape as a name is cleaned.
fn clean_shape(shape: &mut Value) {
    match shape {
        Value::Array(items) => items.iter_mut().for_each(clean_shape),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (mut key, mut value) in old {
                clean(&mut key);
                clean_shape(&mut value);
                map.insert(key, value);
            }
        }
        _ => {}
    }
}
