//! Turning raw values into what the store may keep: shapes and salted ids.
//!
//! Nothing returned from here contains a raw argument value or message text.
//! Template text exists only inside [`template_id`], transiently.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::salt::Salt;

/// Containers nested deeper than this are replaced by `"object"`/`"array"`.
pub const MAX_SHAPE_DEPTH: usize = 4;

/// Error text beyond this many bytes does not shape the template.
pub const MAX_TEMPLATE_INPUT: usize = 1024;

/// The arguments with every scalar replaced by its JSON type name, arrays by
/// `[shape of first element]`, and nesting kept to [`MAX_SHAPE_DEPTH`].
pub fn args_shape(args: &Value) -> Value {
    shape(args, 1)
}

fn shape(value: &Value, depth: usize) -> Value {
    let name = |s: &str| Value::String(s.to_owned());
    match value {
        Value::Null => name("null"),
        Value::Bool(_) => name("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => name("integer"),
        Value::Number(_) => name("number"),
        Value::String(_) => name("string"),
        Value::Array(_) | Value::Object(_) if depth > MAX_SHAPE_DEPTH => {
            name(if value.is_array() { "array" } else { "object" })
        }
        Value::Array(items) => Value::Array(
            items
                .first()
                .map(|v| shape(v, depth + 1))
                .into_iter()
                .collect(),
        ),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), shape(v, depth + 1));
            }
            Value::Object(out)
        }
    }
}

struct Rule {
    pattern: Regex,
    replacement: &'static str,
}

/// Replacement rules, applied in order: the broad, structured kinds first
/// so that a URL is not half-eaten by the path rule, then numbers last.
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |p: &str, replacement| Rule {
        pattern: Regex::new(p).expect("sanitizer pattern"),
        replacement,
    };
    vec![
        rule(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s]+", "<url>"),
        rule(
            r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+",
            "<email>",
        ),
        rule(
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+\-]\d{2}:?\d{2})?)?",
            "<time>",
        ),
        rule(
            r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}",
            "<uuid>",
        ),
        // A quote opens after a non-word character and closes before one, so
        // the apostrophe in "can't" does not start a string.
        rule(r#"(^|[^\w])"(?:[^"\\]|\\.)*"(\W|$)"#, "${1}<str>${2}"),
        rule(r"(^|[^\w])'[^'\n]*'(\W|$)", "${1}<str>${2}"),
        rule(r"(^|[^\w])`[^`\n]*`(\W|$)", "${1}<str>${2}"),
        rule(
            r"(^|[\s(=:,\[])(?:~|[A-Za-z]:\\|/)[^\s:,;)\]]*",
            "${1}<path>",
        ),
        rule(r"\b0[xX][0-9A-Fa-f]+\b", "<hex>"),
        rule(r"[0-9A-Fa-f]{8,}", "<hex>"),
        rule(r"\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?", "<n>"),
        rule(r"\s+", " "),
    ]
});

/// The message with volatile parts replaced by placeholders and whitespace
/// folded, so the same error with other values yields the same template.
pub fn normalize(message: &str) -> String {
    let mut text = truncate(message, MAX_TEMPLATE_INPUT).to_owned();
    for rule in RULES.iter() {
        // Quote rules can overlap at a shared boundary; run them to a fixpoint.
        loop {
            let next = rule
                .pattern
                .replace_all(&text, rule.replacement)
                .into_owned();
            if next == text {
                break;
            }
            text = next;
        }
    }
    text.trim().to_owned()
}

/// `t-` + the salted hash of the normalized message; the text is dropped.
pub fn template_id(salt: &Salt, message: &str) -> String {
    format!("t-{}", salt.id16(&[normalize(message).as_bytes()]))
}

/// The first `max` bytes of `s`, cut at a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_keep_keys_and_drop_values() {
        let args = json!({"city": "Paris", "days": 3, "ratio": 0.5, "ok": true, "n": null,
            "opts": {"units": "metric"}, "tags": ["a", "b"], "empty": []});
        assert_eq!(
            args_shape(&args),
            json!({"city": "string", "days": "integer", "ratio": "number", "ok": "boolean",
                "n": "null", "opts": {"units": "string"}, "tags": ["string"], "empty": []})
        );
    }

    #[test]
    fn shapes_stop_at_depth_four() {
        let args = json!({"a": {"b": {"c": {"d": {"e": 1}}, "l": [[1]]}}});
        assert_eq!(
            args_shape(&args),
            json!({"a": {"b": {"c": {"d": "object"}, "l": ["array"]}}})
        );
    }

    #[test]
    fn placeholders_cover_every_kind() {
        let cases = [
            ("timeout after 30 ms", "timeout after <n> ms"),
            ("no file /srv/data/x.csv here", "no file <path> here"),
            ("user bob@example.com denied", "user <email> denied"),
            ("see https://x.example/a?b=1 now", "see <url> now"),
            (
                "job 0f8fad5b-d9cb-469f-a165-70867728950e gone",
                "job <uuid> gone",
            ),
            ("at 2026-11-30T07:00:00.123Z failed", "at <time> failed"),
            ("blob deadbeefcafe missing", "blob <hex> missing"),
            ("city \"Paris\" unknown", "city <str> unknown"),
            ("can't find 'Lyon'", "can't find <str>"),
            ("  folded \n\t spaces ", "folded spaces"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "{input}");
        }
    }

    #[test]
    fn same_message_other_values_same_id() {
        let salt = Salt::from_bytes([1; 32]);
        let a = template_id(&salt, "Order 1234 not found for 'alice' at /tmp/a");
        let b = template_id(&salt, "Order 98 not found for 'bob' at /var/b/c");
        let c = template_id(&salt, "Permission denied for 'alice'");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(
            a,
            template_id(
                &Salt::from_bytes([2; 32]),
                "Order 1 not found for 'x' at /y"
            )
        );
        assert!(a.starts_with("t-") && a.len() == 18);
    }
}
