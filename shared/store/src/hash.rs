//! SHA-256 and hex helpers.
//!
//! `sha2` picks the CPU's SHA extensions at run time where they exist, which
//! is what keeps journal re-validation close to `sha256sum`.

use sha2::{Digest, Sha256};

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// The bytes that lower-case hex `text` spells; `None` for anything else.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// SHA-256 of the parts joined with one 0x00 byte between each two.
pub fn sha256_joined(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

pub use sha2::Sha256 as Hasher;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_of_known_digest() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn joined_parts_use_one_zero_byte() {
        assert_eq!(sha256_joined(&[b"a", b"b"]), sha256(b"a\0b"));
        assert_ne!(sha256_joined(&[b"a", b"b"]), sha256(b"ab"));
    }
}
