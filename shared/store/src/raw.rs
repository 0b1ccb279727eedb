//! Reading JSON without building a tree: the members of an object, a
//! string or a boolean, each borrowed from the text it was written in.
//!
//! Capture reads a few members of every message it relays; parsing each
//! message into a `serde_json::Value` allocated a node for every member and
//! a string for every key and text, most of it never looked at. Here the
//! members asked for come back as their JSON text ([`RawValue`]), checked
//! but not copied, and read as far as they are needed. The answers are the
//! ones a `Value` would give: when a key repeats, its last member counts,
//! as in a parsed object, and text a parse into a `Value` refuses is
//! refused here too ([`object`], [`elements`]), though reading in place
//! alone would let some of it by.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The members of the object `raw` named `names`, each `None` when absent;
/// `None` when `raw` is not an object. A member's text is as written,
/// `null` included. `raw` is part of a text [`object`] or [`elements`]
/// accepted, so it is not checked again.
pub fn members<'a, const N: usize>(
    raw: &'a RawValue,
    names: [&str; N],
) -> Option<[Option<&'a RawValue>; N]> {
    find(raw.get(), names)
}

/// [`members`] of the JSON text `text`: `None` when it is not one object
/// that parses into a `Value`.
pub fn object<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<&'a RawValue>; N]> {
    let found = find(text, names)?;
    parses(text).then_some(found)
}

fn find<'a, const N: usize>(text: &'a str, names: [&str; N]) -> Option<[Option<&'a RawValue>; N]> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = de.deserialize_map(Members { names }).ok()?;
    de.end().ok()?;
    Some(found)
}

/// Each element of the array `text`, as written; `None` when it is not one
/// array that parses into a `Value`.
pub fn elements(text: &str) -> Option<Vec<&RawValue>> {
    let found = serde_json::from_str(text).ok()?;
    parses(text).then_some(found)
}

/// Nesting this deep is parsed whole to decide whether it parses:
/// serde_json refuses a `Value` of 128 levels, and skipping a member it
/// counts none.
const SUSPECT_DEPTH: usize = 100;

/// A number with a run of more digits than this is parsed whole to decide
/// whether it parses: past 308 integer digits an `f64` is infinite, which
/// serde_json refuses in a `Value` and lets by in a member it skips.
const SUSPECT_DIGITS: usize = 300;

/// Whether the valid JSON text `text` also parses into a `Value`. Reading
/// in place lets three things by that a `Value` refuses: nesting past
/// serde_json's limit, a number out of an `f64`'s range, and a lone
/// surrogate escape. One pass over the bytes finds where any of them could
/// be (deep nesting, an exponent, a long run of digits, a `\uD…`
/// escape); only then, rarely, is the text parsed whole to decide.
fn parses(text: &str) -> bool {
    let bytes = text.as_bytes();
    if clearly_parses(bytes) {
        return true;
    }
    let (mut depth, mut digits) = (0usize, 0usize);
    let mut suspect = false;
    let mut i = 0;
    while i < bytes.len() && !suspect {
        match bytes[i] {
            b'"' => {
                // Strings are most of a message: jump from escape to
                // escape to the closing quote.
                i += 1;
                while let Some(at) = memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    i += at;
                    if bytes[i] == b'"' {
                        break;
                    }
                    suspect |= bytes.get(i + 1) == Some(&b'u')
                        && matches!(bytes.get(i + 2), Some(b'd' | b'D'));
                    i += 2;
                    if i >= bytes.len() {
                        break;
                    }
                }
                digits = 0;
            }
            b'{' | b'[' => {
                depth += 1;
                suspect = depth >= SUSPECT_DEPTH;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'0'..=b'9' => {
                digits += 1;
                suspect = digits > SUSPECT_DIGITS;
            }
            // An exponent follows a digit; the `e` of `true` and `false`
            // does not.
            b'e' | b'E' => suspect = digits > 0,
            _ => digits = 0,
        }
        i += 1;
    }
    !suspect || serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// Whether `bytes` shows none of what [`parses`] looks for, found by
/// a few quick looks instead of its pass over every byte: no backslash (so
/// no `\uD…` escape), no `e` or `E` just after a digit (so no exponent),
/// fewer brackets than [`SUSPECT_DEPTH`], and too short for a run of more
/// than [`SUSPECT_DIGITS`] digits. Most messages are so; one that is not
/// may still parse, and is looked at byte by byte.
fn clearly_parses(bytes: &[u8]) -> bool {
    if bytes.len() > SUSPECT_DIGITS {
        return false;
    }
    // Flags or-ed and counts added in bytes, never a search that stops at
    // its first find: the compiler makes each loop a few vector
    // instructions for a short message.
    let mut found = 0u8;
    for (&b, &after) in bytes.iter().zip(bytes.get(1..).unwrap_or_default()) {
        found |= u8::from(b.is_ascii_digit()) & u8::from(after | 0x20 == b'e');
    }
    for &b in bytes {
        found |= u8::from(b == b'\\');
    }
    let brackets: usize = bytes
        .chunks(u8::MAX.into())
        .map(|chunk| {
            let n = chunk
                .iter()
                .fold(0u8, |n, &b| n + u8::from(b == b'{' || b == b'['));
            usize::from(n)
        })
        .sum();
    found == 0 && brackets < SUSPECT_DEPTH
}

/// The text of a JSON string (`None` when `raw` is not one), borrowed when
/// it holds no escape.
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        // Valid JSON with no escape: the text between the quotes is the
        // string itself.
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// The boolean `raw` is, if it is one.
pub fn boolean(raw: &RawValue) -> Option<bool> {
    match raw.get() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Whether `raw` is `null`.
pub fn is_null(raw: &RawValue) -> bool {
    raw.get() == "null"
}

/// Whether `raw` is an object.
pub fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Finds the members named `names` in one object.
struct Members<'n, const N: usize> {
    names: [&'n str; N],
}

impl<'de, const N: usize> Visitor<'de> for Members<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        while let Some(at) = map.next_key_seed(Name(&self.names))? {
            match at {
                Some(i) => found[i] = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
}

/// A key, as its place among the names looked for.
struct Name<'a, 'n>(&'a [&'n str]);

impl<'de> DeserializeSeed<'de> for Name<'_, '_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name<'_, '_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn members_answer_as_a_parsed_object_would() {
        let text = r#"{"id":1,"m\u0065thod":"a","params":{"x":[1,{"y":2}]},"id":"two","z":null}"#;
        let [id, method, params, z, none] =
            object(text, ["id", "method", "params", "z", "none"]).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            id.unwrap().get(),
            value["id"].to_string(),
            "the last of a repeated key"
        );
        assert_eq!(string(method.unwrap()).as_deref(), Some("a"));
        assert_eq!(params.unwrap().get(), r#"{"x":[1,{"y":2}]}"#);
        assert!(is_null(z.unwrap()));
        assert!(none.is_none());
        for not_one in ["[1]", "1", "\"s\"", "{", "{} x", "{\"a\":}", ""] {
            assert!(object(not_one, ["a"]).is_none(), "{not_one}");
        }
        assert!(members(&raw("[{}]"), ["a"]).is_none());
    }

    #[test]
    fn text_a_value_refuses_is_refused() {
        let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        let digits = |n: usize| format!("{{\"a\":{}}}", "9".repeat(n));
        let cases = [
            nested(90),
            nested(126),
            nested(127),
            nested(200),
            digits(300),
            digits(308),
            digits(309),
            digits(400),
            format!("{{\"a\":0.{}}}", "9".repeat(400)),
            r#"{"a":1e308,"b":[true,false]}"#.to_owned(),
            r#"{"a":1e309}"#.to_owned(),
            r#"{"a":-2.5E+400}"#.to_owned(),
            r#"{"a":1e-400}"#.to_owned(),
            r#"{"a":"\ud83d\ude00"}"#.to_owned(),
            r#"{"a":"\ud800"}"#.to_owned(),
            r#"{"\uDC00":1}"#.to_owned(),
            r#"{"a":"\ud7ff\u00e9"}"#.to_owned(),
            r#"{"a":"1e999","true":"\\udead"}"#.to_owned(),
            r#"{"a":[1E400]}"#.to_owned(),
            r#"{"a":"x","b":-0e-9999}"#.to_owned(),
        ];
        for text in &cases {
            let value = serde_json::from_str::<Value>(text).is_ok();
            assert_eq!(object(text, ["a"]).is_some(), value, "{text}");
            assert!(value || !clearly_parses(text.as_bytes()), "{text}");
            let batch = format!("[{text}]");
            let value = serde_json::from_str::<Value>(&batch).is_ok();
            assert_eq!(elements(&batch).is_some(), value, "[{text}]");
        }
    }

    #[test]
    fn strings_and_booleans() {
        assert_eq!(string(&raw(r#""plain""#)).unwrap(), Cow::Borrowed("plain"));
        assert_eq!(string(&raw(r#""a\nb\u00e9""#)).unwrap(), "a\nb\u{e9}");
        assert_eq!(string(&raw("7")), None);
        assert_eq!(
            (boolean(&raw("true")), boolean(&raw("0"))),
            (Some(true), None)
        );
        assert_eq!(elements("[1, {\"a\":2} ,\"x\"]").unwrap().len(), 3);
        assert!(elements("{}").is_none());
    }
}
