//! Canonical JSON: the one byte form that fingerprints and MACs are taken
//! over.
//!
//! Object keys sorted by their UTF-8 bytes, no whitespace, strings and
//! numbers as `serde_json` writes them. The order is imposed here rather
//! than trusted to the map type, so a crate elsewhere in the build turning
//! on `serde_json/preserve_order` can never change a fingerprint. It must
//! never depend on how the input was formatted or in which order its keys
//! came.

use serde_json::Value;

/// `value` as canonical JSON text.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// `value` as canonical JSON bytes.
pub fn to_vec(value: &Value) -> Vec<u8> {
    to_string(value).into_bytes()
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(key, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(s) => string(s, out),
        // Scalars other than strings have exactly one serde_json spelling.
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn string(s: &str, out: &mut String) {
    out.push_str(&Value::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorted_compact_and_stable() {
        let a: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": null, "a": "x\"y"}], "a": true }"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":true,"b":[1,{"a":"x\"y","z":null}]}"#).unwrap();
        assert_eq!(to_string(&a), r#"{"a":true,"b":[1,{"a":"x\"y","z":null}]}"#);
        assert_eq!(to_string(&a), to_string(&b));
    }

    #[test]
    fn keys_sort_by_bytes_and_numbers_keep_their_spelling() {
        let v = json!({"é": 1, "Z": 2.5, "a": -3, "aa": 1e3});
        assert_eq!(to_string(&v), r#"{"Z":2.5,"a":-3,"aa":1000.0,"é":1}"#);
    }
}
