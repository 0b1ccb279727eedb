//! What parsing a JSON text would cost in memory, weighed before parsing.
//!
//! A parsed JSON tree takes up to some 90 times its text (an object of one
//! short key takes a 640-byte map node), so a reader of untrusted JSON
//! (capture's observer, the OpenTelemetry receiver) weighs a text in one
//! pass over its bytes and refuses to parse one that would cost more than
//! its budget. This never allocates and never parses.

/// An upper bound on the memory `serde_json` takes to parse `bytes` into a
/// [`serde_json::Value`], measured on its parser: a non-empty object's first map node,
/// a non-empty array's first allocation, each further member (its slot and
/// its share of map nodes), and each string's allocation.
pub fn parse_cost(bytes: &[u8]) -> usize {
    const OBJECT: usize = 704;
    const ARRAY: usize = 160;
    const MEMBER: usize = 160;
    const ELEMENT: usize = 64;
    const STRING: usize = 32;
    let mut cost = bytes.len();
    // Whether each open container is an object, as deep as serde_json
    // parses (it refuses more than 128 levels).
    let (mut objects, mut depth) = (0u128, 0u32);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                cost += STRING;
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            open @ (b'{' | b'[') => {
                if depth < 128 {
                    let bit = 1u128 << depth;
                    objects = if open == b'{' {
                        objects | bit
                    } else {
                        objects & !bit
                    };
                }
                depth += 1;
                cost += if open == b'{' { OBJECT } else { ARRAY };
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => {
                let in_object = (1..=128).contains(&depth) && objects & (1 << (depth - 1)) != 0;
                cost += if in_object { MEMBER } else { ELEMENT };
            }
            _ => {}
        }
        i += 1;
    }
    cost
}
