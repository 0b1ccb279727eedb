//! Signing a probe result with the store's salt, and checking a result's
//! MAC: HMAC-SHA256 keyed by the salt over the canonical JSON of every
//! other field (`ProbeResult::canonical_unsigned`). An edited result, or
//! one made by another store, does not verify.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use shared::probe_result::ProbeResult;

use crate::hash;
use crate::salt::Salt;

/// Signing and checking what a store signs.
pub trait Signed {
    /// Sets the MAC for `salt`.
    fn sign(&mut self, salt: &Salt);

    /// Whether the MAC was made with `salt` over exactly these fields
    /// (compared in constant time).
    fn verify(&self, salt: &Salt) -> bool;
}

impl Signed for ProbeResult {
    fn sign(&mut self, salt: &Salt) {
        let mac = keyed(salt).chain_update(self.canonical_unsigned().as_bytes());
        self.mac = hash::hex(&mac.finalize().into_bytes());
    }

    fn verify(&self, salt: &Salt) -> bool {
        let Some(given) = hash::unhex(&self.mac) else {
            return false;
        };
        keyed(salt)
            .chain_update(self.canonical_unsigned().as_bytes())
            .verify_slice(&given)
            .is_ok()
    }
}

fn keyed(salt: &Salt) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(salt.expose()).expect("HMAC takes any key length")
}

#[cfg(test)]
mod tests {
    use shared::id::TargetId;
    use shared::probe_result::{ADDED_FIELDS, MAX_NAME, Reason, Verdict};

    use super::*;

    /// A red result, signed with the salt of seven bytes.
    fn sample() -> ProbeResult {
        let mut r = ProbeResult::parse(SAMPLE).unwrap();
        r.sign(&Salt::from_bytes([7; 32]));
        r
    }

    const SAMPLE: &str = r#"{"schema":"mcpeval.probe/1","run_id":"0f8fad5b-d9cb-469f-a165-70867728950e","finding":"finding-0123456789abcdef","case":"literal-status","probe":"instruction-fidelity","tools":["get_status"],"steps":[{"tool":"get_status","outcome":"ok","oracle":true}],"budget":1,"server":"jobs","checked":["get_status"],"definition":"case-0011223344556677","target":"target-8899aabbccddeeff","binding":"b-0011223344556677","result":"red","reason":"not-equal","detail":"/structuredContent/status","attempts":1,"started_at":"2026-11-30T07:00:00.123Z","finished_at":"2026-11-30T07:00:00.456Z","mac":"0000000000000000000000000000000000000000000000000000000000000000"}"#;

    #[test]
    fn results_of_earlier_releases_parse_and_verify_without_the_added_fields() {
        let salt = Salt::from_bytes([7; 32]);
        let mut old = sample();
        old.tools.clear();
        old.steps.clear();
        old.budget = None;
        old.server = None;
        old.checked = None;
        old.definition = None;
        old.target = None;
        old.sign(&salt);
        let line = old.to_json_line();
        for field in ADDED_FIELDS {
            assert!(!line.contains(&format!("\"{field}\"")), "{line}");
        }
        let parsed = ProbeResult::parse(&line).unwrap();
        assert!(parsed.verify(&salt));
        assert_eq!(parsed.tools, Vec::<String>::new());
        // The added fields are covered by the MAC.
        let mut edited = sample();
        edited.tools = vec!["other".into()];
        assert!(!edited.verify(&salt));
        let mut renamed = sample();
        renamed.server = Some("other".into());
        assert!(!renamed.verify(&salt));
        let mut unnamed = sample();
        unnamed.server = None;
        assert!(!unnamed.verify(&salt));
        let mut claimed = sample();
        claimed.steps[0].oracle = false;
        assert!(!claimed.verify(&salt));
        let mut fewer = sample();
        fewer.budget = Some(0);
        assert!(!fewer.verify(&salt));
        let mut elsewhere = sample();
        elsewhere.target = Some(TargetId::parse("target-0000000000000000").unwrap());
        assert!(!elsewhere.verify(&salt));
        let mut unchecked = sample();
        unchecked.checked = Some(Vec::new());
        assert!(!unchecked.verify(&salt));
        let mut moved = sample();
        moved.reason = Some(Reason::OutputSchemaViolation);
        moved.contract = Some(shared::finding::Violation {
            at: "/status".into(),
            keyword: "enum".into(),
        });
        moved.sign(&salt);
        assert!(moved.verify(&salt));
        moved.contract.as_mut().unwrap().at = "/eta".into();
        assert!(!moved.verify(&salt), "the violation is covered by the MAC");
    }

    #[test]
    fn names_print_no_control_character_raw() {
        let salt = Salt::from_bytes([7; 32]);
        let mut r = sample();
        r.server = Some("a\u{1b}b\u{7f}c\u{9b}d\ne".into());
        r.tools = vec!["t\u{85}".into()];
        r.checked = Some(r.tools.clone());
        r.sign(&salt);
        let line = r.to_json_line();
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(
            line.contains(r#""server":"a\u001bb\u007fc\u009bd\ne""#),
            "{line}"
        );
        let back = ProbeResult::parse(&line).unwrap();
        assert_eq!(back, r);
        assert!(back.verify(&salt));
        let mut empty = sample();
        empty.tools = vec![String::new()];
        assert!(empty.validate().is_err());
        let mut long = sample();
        long.server = Some("n".repeat(MAX_NAME + 1));
        assert_eq!(
            long.validate().unwrap_err().message(),
            "server is empty or longer than 1024 bytes"
        );
    }

    #[test]
    fn mac_is_hmac_sha256_of_the_canonical_fields() {
        let r = sample();
        // RFC 2104 by hand: H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)), K padded to 64 bytes.
        let mut key = [0u8; 64];
        key[..32].copy_from_slice(&[7; 32]);
        let pad = |byte: u8| key.map(|k| k ^ byte);
        let mut inner = pad(0x36).to_vec();
        inner.extend_from_slice(r.canonical_unsigned().as_bytes());
        let mut outer = pad(0x5c).to_vec();
        outer.extend_from_slice(&hash::sha256(&inner));
        assert_eq!(r.mac, hash::hex(&hash::sha256(&outer)));
        assert!(r.verify(&Salt::from_bytes([7; 32])));
    }

    #[test]
    fn any_edit_or_another_salt_fails() {
        let salt = Salt::from_bytes([7; 32]);
        assert!(!sample().verify(&Salt::from_bytes([8; 32])));
        let edits: [fn(&mut ProbeResult); 8] = [
            |r| r.result = Verdict::Green,
            |r| r.reason = Some(Reason::MissingPath),
            |r| r.detail = None,
            |r| r.attempts = 2,
            |r| r.case = "other".into(),
            |r| r.binding = "b-0011223344556678".into(),
            |r| r.finished_at = "2026-11-30T07:00:00.457Z".into(),
            |r| r.mac = r.mac.replace(|c| c != '0', "0"),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut r = sample();
            edit(&mut r);
            assert!(!r.verify(&salt), "edit {i} still verifies");
        }
    }
}
