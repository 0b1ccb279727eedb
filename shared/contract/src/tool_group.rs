//! Findings of one tool, as the renderings show them: grouped under one
//! heading, and told apart by a short label of their argument shapes.
//!
//! One tool can stand behind several findings: errors are grouped by
//! template too, and the template is never shown. What a reader can see
//! of the difference is the argument shape of the failing calls, so each
//! finding gets a label: its most frequent shape with the top-level keys
//! that every finding of the tool shares (same key, same shape) left out
//! as `…`. Three findings of `get-sum` read `{"a":"string",…}`,
//! `{"b":"string",…}` and `{…}`; a finding alone on its tool, or one whose
//! siblings have the very same shape, keeps its whole shape.
//!
//! A label is JSON text spelled as [`escape::to_json`] spells it, so it
//! holds no character of [`escape::is_unsafe`]; but its keys are names a
//! remote server chose, so it is data, never markup: a renderer escapes it
//! for its medium exactly as it escapes a tool name. It is cut to
//! [`LABEL_CHARS`] before that, and never inside one of JSON's escapes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::escape;
use crate::findings::Derived;

/// The most characters a label holds, its `…` included.
pub const LABEL_CHARS: usize = 48;

/// What marks left-out keys and a cut label.
const ELLIPSIS: char = '…';

/// One finding as this module reads it: where it is, and its argument
/// shapes, most frequent first.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The finding's `args_shapes`.
    pub args_shapes: &'a [Value],
}

impl<'a> From<&'a Derived> for Member<'a> {
    fn from(d: &'a Derived) -> Member<'a> {
        Member {
            server: &d.server,
            tool: &d.tool,
            args_shapes: &d.args_shapes,
        }
    }
}

/// The positions of `members` grouped by (server, tool): groups in the
/// order of their first member, members in their own order. Findings come
/// highest score first, so the groups do too.
pub fn groups(members: &[Member<'_>]) -> Vec<Vec<usize>> {
    let mut at: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let n = *at.entry((m.server, m.tool)).or_insert_with(|| {
            out.push(Vec::new());
            out.len() - 1
        });
        out[n].push(i);
    }
    out
}

/// Each member's label, in the order of `members`; `None` for a finding
/// with no recorded shape.
pub fn labels(members: &[Member<'_>]) -> Vec<Option<String>> {
    let mut out = vec![None; members.len()];
    for group in groups(members) {
        let shapes: Vec<Option<&Value>> = group
            .iter()
            .map(|&i| members[i].args_shapes.first())
            .collect();
        let shared = shared_keys(&shapes);
        for (&i, shape) in group.iter().zip(&shapes) {
            out[i] = shape.map(|s| cut(&label(s, &shared), LABEL_CHARS));
        }
    }
    out
}

/// The top-level keys to leave out of a group's labels: those every shape
/// has with the same value. None when the shapes are all alike (there is
/// no difference to point at, so each keeps its whole shape) or when one
/// is missing or not an object.
fn shared_keys<'a>(shapes: &[Option<&'a Value>]) -> BTreeSet<&'a str> {
    let objects: Option<Vec<&serde_json::Map<String, Value>>> = shapes
        .iter()
        .map(|s| s.and_then(Value::as_object))
        .collect();
    let Some(objects) = objects.filter(|o| o.len() > 1) else {
        return BTreeSet::new();
    };
    if objects.iter().all(|o| *o == objects[0]) {
        return BTreeSet::new();
    }
    objects[0]
        .iter()
        .filter(|(k, v)| objects[1..].iter().all(|o| o.get(*k) == Some(*v)))
        .map(|(k, _)| k.as_str())
        .collect()
}

/// `shape` as compact JSON without the `shared` keys, with `…` where they
/// were.
fn label(shape: &Value, shared: &BTreeSet<&str>) -> String {
    let Some(object) = shape.as_object().filter(|_| !shared.is_empty()) else {
        return json(shape);
    };
    let mut parts: Vec<String> = object
        .iter()
        .filter(|(k, _)| !shared.contains(k.as_str()))
        .map(|(k, v)| format!("{}:{}", json(k), json(v)))
        .collect();
    parts.push(ELLIPSIS.to_string());
    format!("{{{}}}", parts.join(","))
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    escape::to_json(value).unwrap_or_default()
}

/// `text` (JSON text) cut to at most `max` characters, `…` included, at
/// the end of a character or of a whole escape: `\"`, `\uXXXX`, or a
/// surrogate pair `\uXXXX\uXXXX`, which is one character.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len().min(4 * max));
    let mut kept = 0;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let unit = &rest[..if c == '\\' {
            escape_len(rest)
        } else {
            c.len_utf8()
        }];
        let chars = unit.chars().count();
        if kept + chars + 1 > max {
            break;
        }
        out.push_str(unit);
        kept += chars;
        rest = &rest[unit.len()..];
    }
    out.push(ELLIPSIS);
    out
}

/// The length in bytes of the JSON escape `rest` starts with.
fn escape_len(rest: &str) -> usize {
    let unit = |at: usize| {
        rest.get(at..at + 6)
            .and_then(|u| u.strip_prefix("\\u"))
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
    };
    match (unit(0), unit(6)) {
        (Some(0xd800..=0xdbff), Some(0xdc00..=0xdfff)) => 12,
        (Some(_), _) => 6,
        _ => rest[1..].chars().next().map_or(1, |c| 1 + c.len_utf8()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member<'a>(tool: &'a str, shapes: &'a [Value]) -> Member<'a> {
        Member {
            server: "everything",
            tool,
            args_shapes: shapes,
        }
    }

    #[test]
    fn siblings_are_told_apart_by_what_differs() {
        let a = [json!({"a": "string", "b": "number"})];
        let b = [json!({"a": "number", "b": "string"}), json!({})];
        let c = [json!({"a": "number"})];
        let d = [json!({"a": "number", "b": "number", "c": "null"})];
        let alone = [json!({"url": "string"})];
        let members = [
            member("get-sum", &a),
            member("fetch", &alone),
            member("get-sum", &b),
            member("get-sum", &c),
            member("get-sum", &d),
        ];
        assert_eq!(groups(&members), [vec![0, 2, 3, 4], vec![1]]);
        assert_eq!(
            labels(&members),
            [
                Some(r#"{"a":"string","b":"number"}"#.to_owned()),
                Some(r#"{"url":"string"}"#.to_owned()),
                Some(r#"{"a":"number","b":"string"}"#.to_owned()),
                Some(r#"{"a":"number"}"#.to_owned()),
                Some(r#"{"a":"number","b":"number","c":"null"}"#.to_owned()),
            ]
        );
        // Keys every sibling shares are left out as `…`.
        let x = [json!({"city": "string", "days": "integer"})];
        let y = [json!({"city": "string", "days": "string"})];
        let z = [json!({"city": "string"})];
        let members = [member("t", &x), member("t", &y), member("t", &z)];
        assert_eq!(
            labels(&members),
            [
                Some(r#"{"days":"integer",…}"#.to_owned()),
                Some(r#"{"days":"string",…}"#.to_owned()),
                Some("{…}".to_owned()),
            ]
        );
    }

    #[test]
    fn alike_or_missing_shapes_keep_their_whole_shape() {
        let s = [json!({"q": "string"})];
        let none: [Value; 0] = [];
        let members = [member("t", &s), member("t", &s), member("t", &none)];
        assert_eq!(
            labels(&members),
            [
                Some(r#"{"q":"string"}"#.to_owned()),
                Some(r#"{"q":"string"}"#.to_owned()),
                None
            ]
        );
        let members = [member("t", &s), member("t", &s)];
        assert_eq!(labels(&members)[0].as_deref(), Some(r#"{"q":"string"}"#));
    }

    #[test]
    fn long_labels_are_cut_between_characters_and_escapes() {
        let long = [json!({"attendees": ["string"], "start": "string", "title": "string"})];
        let got = labels(&[member("t", &long)]).remove(0).unwrap();
        assert_eq!(got, r#"{"attendees":["string"],"start":"string","title…"#);
        assert_eq!(got.chars().count(), LABEL_CHARS);
        // An escape is kept whole or left out whole.
        for (text, max, want) in [
            (r#""ab\u202ecd""#, 5, r#""ab…"#),
            (r#""ab\u202ecd""#, 10, r#""ab\u202e…"#),
            (r#""a\"b""#, 3, r#""a…"#),
            (r#""a\"b""#, 5, r#""a\"…"#),
            (r#""\udb40\udc61x""#, 12, r#""…"#),
            (r#""\udb40\udc61x""#, 14, r#""\udb40\udc61…"#),
            ("\"ééééé\"", 4, "\"éé…"),
        ] {
            assert_eq!(cut(text, max), want, "{text} at {max}");
        }
        // Hostile keys come out as JSON spells them: nothing unsafe, one line.
        let hostile = [json!({"k\u{202e}\n`x`|<b>": "string"})];
        let got = labels(&[member("t", &hostile)]).remove(0).unwrap();
        assert_eq!(got, r#"{"k\u202e\n`x`|<b>":"string"}"#);
        assert!(!got.chars().any(escape::is_unsafe));
    }
}
