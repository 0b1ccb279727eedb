//! The ids this store makes from its salt: a finding's, a capture
//! session's. Salted, so they are stable across rebuilds of the index and
//! meaningless outside the store.

use shared::finding::Kind;
use shared::id::{FindingId, SessionToken};

use crate::salt::Salt;

/// The id of the finding a group becomes in this store.
pub fn finding_id(
    salt: &Salt,
    kind: Kind,
    server: &str,
    tool: &str,
    template_id: Option<&str>,
) -> FindingId {
    let id = match kind {
        Kind::Error => salt.id16(&[
            b"error",
            server.as_bytes(),
            tool.as_bytes(),
            template_id.unwrap_or("-").as_bytes(),
        ]),
        // Contract groups: one per (server, tool, violation key).
        Kind::Contract => salt.id16(&[
            b"contract",
            server.as_bytes(),
            tool.as_bytes(),
            template_id.unwrap_or("-").as_bytes(),
        ]),
        // Malformed and false-success groups: one per (server, tool).
        _ => salt.id16(&[kind.as_str().as_bytes(), server.as_bytes(), tool.as_bytes()]),
    };
    FindingId::from_hex16(&id).expect("id16 gives 16 hex digits")
}

/// The id earlier releases gave an error group: one per error code, which
/// split one defect across several findings. Kept to re-key old state.
pub fn legacy_finding_id(
    salt: &Salt,
    server: &str,
    tool: &str,
    template_id: Option<&str>,
    err_code: Option<i64>,
) -> FindingId {
    let code = err_code.map_or_else(|| "-".to_owned(), |c| c.to_string());
    let id = salt.id16(&[
        b"error",
        server.as_bytes(),
        tool.as_bytes(),
        template_id.unwrap_or("-").as_bytes(),
        code.as_bytes(),
    ]);
    FindingId::from_hex16(&id).expect("id16 gives 16 hex digits")
}

/// The token of a capture: the salted hash of its unique id, so the id
/// itself never reaches the store.
pub fn session_token(salt: &Salt, capture_id: &[u8]) -> SessionToken {
    SessionToken::from_hex16(&salt.id16(&[capture_id])).expect("id16 gives 16 hex digits")
}

/// Time-ordered version-7 UUIDs for records (capture's and the
/// OpenTelemetry receiver's): the Unix time in
/// milliseconds, then 74 random bits. New ids sort after the ones already
/// indexed, so the index's unique event-id index grows at its end instead
/// of touching nearly every page. The random bits come from the system's
/// random source read 4 KiB at a time: one system call per 409 calls
/// instead of one each, which showed in capture's observer's profile on
/// busy sessions.
#[derive(Debug)]
pub struct EventIds {
    random: Box<[u8; 4096]>,
    used: usize,
}

/// Random bytes per id.
const RANDOM: usize = 10;

impl EventIds {
    /// A generator; its first id reads the system's random source.
    pub fn new() -> EventIds {
        EventIds {
            random: Box::new([0; 4096]),
            used: 4096,
        }
    }

    /// The next id, as its hyphenated text.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> String {
        self.next_text().as_str().to_owned()
    }

    /// The next id, as its hyphenated text held at its fixed size: what
    /// capture keeps for every call until it journals it.
    pub fn next_text(&mut self) -> EventIdText {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if self.used + RANDOM > self.random.len() {
            match getrandom::fill(&mut self.random[..]) {
                Ok(()) => self.used = 0,
                // As uuid's own generator would, only less quietly.
                Err(_) => {
                    let fallback = *uuid::Uuid::new_v4().as_bytes();
                    let bytes: [u8; RANDOM] = fallback[..RANDOM].try_into().expect("10 bytes");
                    return v7(millis, &bytes);
                }
            }
        }
        let bytes: [u8; RANDOM] = self.random[self.used..self.used + RANDOM]
            .try_into()
            .expect("10 bytes");
        self.used += RANDOM;
        v7(millis, &bytes)
    }
}

/// An event id's hyphenated text, at its fixed size: no allocation, and
/// encoded without the formatting machinery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventIdText([u8; uuid::fmt::Hyphenated::LENGTH]);

impl EventIdText {
    /// The id's text, as a record writes it.
    pub fn as_str(&self) -> &str {
        crate::raw::utf8(&self.0).expect("hyphenated hex digits")
    }
}

fn v7(millis: u64, random: &[u8; RANDOM]) -> EventIdText {
    let uuid = uuid::Builder::from_unix_timestamp_millis(millis, random).into_uuid();
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    uuid.hyphenated().encode_lower(&mut text);
    EventIdText(text)
}

impl Default for EventIds {
    fn default() -> EventIds {
        EventIds::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_salted_and_stable() {
        let salt = Salt::from_bytes([5; 32]);
        let a = finding_id(&salt, Kind::Error, "s", "t", Some("t-0123456789abcdef"));
        assert!(FindingId::parse(&a).is_ok(), "{a}");
        assert_eq!(
            a,
            finding_id(&salt, Kind::Error, "s", "t", Some("t-0123456789abcdef"))
        );
        assert_ne!(a, finding_id(&salt, Kind::Error, "s", "t", None));
        assert_ne!(
            a,
            legacy_finding_id(&salt, "s", "t", Some("t-0123456789abcdef"), Some(1))
        );
        assert_ne!(
            finding_id(&salt, Kind::Malformed, "s", "t", None),
            finding_id(&salt, Kind::FalseSuccess, "s", "t", None)
        );
        // The joining rule: salt ‖ "error" ‖ server ‖ tool ‖ "-", with 0x00 between.
        let mut bytes = vec![5u8; 32];
        bytes.extend_from_slice(b"\0error\0s\0t\0-");
        let want = format!(
            "finding-{}",
            &crate::hash::hex(&crate::hash::sha256(&bytes))[..16]
        );
        assert_eq!(finding_id(&salt, Kind::Error, "s", "t", None), want);
    }

    #[test]
    fn event_ids_are_distinct_time_ordered_version_7_uuids() {
        let mut ids = EventIds::new();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        // Across several refills of the random buffer.
        let list: Vec<String> = (0..1000).map(|_| ids.next()).collect();
        let all: std::collections::HashSet<&String> = list.iter().collect();
        assert_eq!(all.len(), 1000);
        for id in &list {
            let uuid = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(uuid.get_version_num(), 7);
            assert_eq!(uuid.hyphenated().to_string(), *id);
            // The first 48 bits are the milliseconds it was made.
            let millis = u64::from_be_bytes(uuid.as_bytes()[..8].try_into().unwrap()) >> 16;
            assert!(millis >= before && millis < before + 60_000, "{id}");
        }
        // Ids of later milliseconds sort after earlier ones.
        let first = list[0].clone();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(ids.next() > first);
    }
}
