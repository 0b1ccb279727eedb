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
}
