//! Turning raw values into what the store may keep: shapes, clean names
//! and salted ids.
//!
//! Nothing returned from here contains a raw argument value or message text.
//! Template text exists only inside [`template_id`], transiently. Argument
//! keys are data too (a map keyed by e-mail addresses or tokens), so a shape
//! keeps a key only when the tool's schema declares it or it looks like a
//! field name; every other key is folded into one [`FOLDED`] key.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use regex::Regex;
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::raw::Entries;
use crate::salt::Salt;
use shared::escape::clean_name;

/// Containers nested deeper than this are replaced by `"object"`/`"array"`.
pub const MAX_SHAPE_DEPTH: usize = 4;

/// Error text beyond this many bytes does not shape the template.
pub const MAX_TEMPLATE_INPUT: usize = 1024;

/// The key under which a shape folds every key it does not keep.
pub const FOLDED: &str = "*";

/// Undeclared keys that look like field names are kept up to this many
/// per object; the rest are folded.
pub const MAX_NAMED_KEYS: usize = 16;

/// A key longer than this (bytes) never looks like a field name.
pub const MAX_FIELD_NAME: usize = 32;

/// The keys a tool's advertised `inputSchema` declares, place by place: the
/// `properties` of each object and the `items` of each array, followed as
/// deep as shapes go. Anything more elaborate (`$ref`, `anyOf`, …) is not
/// followed, and such a place counts as open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    keys: BTreeMap<String, Declared>,
    /// Whether keys beyond `keys` are allowed: no `properties`, or
    /// `additionalProperties` (other than `false`) or `patternProperties`.
    open: bool,
    items: Option<Box<Declared>>,
}

impl Declared {
    /// What `schema` (an `inputSchema`) declares.
    pub fn from_schema(schema: &Value) -> Declared {
        let mut unbounded = usize::MAX;
        Declared::at(schema, 1, &mut unbounded).unwrap_or_default()
    }

    /// What `schema` declares, when that takes at most `*budget` bytes (an
    /// estimate of the memory it holds, [`Declared::bytes`]); the bytes it
    /// takes are subtracted. `None` when it would take more: the caller
    /// then treats the tool as declaring nothing, so its keys are judged by
    /// the field-name rule. Building stops as soon as the budget is out,
    /// so a huge schema costs no more than the budget to look at.
    pub fn from_schema_within(schema: &Value, budget: &mut usize) -> Option<Declared> {
        let mut left = *budget;
        let declared = Declared::at(schema, 1, &mut left)?;
        *budget = left;
        Some(declared)
    }

    /// An estimate of the memory this holds, in bytes: what
    /// [`Declared::from_schema_within`] charges for it.
    pub fn bytes(&self) -> usize {
        let here = std::mem::size_of::<Declared>();
        let keys: usize = self
            .keys
            .iter()
            .map(|(key, below)| key_bytes(key) + below.bytes())
            .sum();
        let items = self.items.as_deref().map_or(0, Declared::bytes);
        here + keys + items
    }

    /// The place of an object or array at `depth` (1 for the arguments):
    /// what lies below it is followed only as deep as shapes go. `None`
    /// once it would take more than `*left` bytes.
    fn at(schema: &Value, depth: usize, left: &mut usize) -> Option<Declared> {
        *left = left.checked_sub(std::mem::size_of::<Declared>())?;
        let deeper = depth < MAX_SHAPE_DEPTH;
        let properties = schema.get("properties").and_then(Value::as_object);
        let mut keys = BTreeMap::new();
        // A declared key the name rule would change is not kept either:
        // it would carry control or bidi characters into the store.
        for (key, sub) in properties.into_iter().flatten() {
            if key.as_str() == FOLDED || clean_name(key) != key.as_str() {
                continue;
            }
            *left = left.checked_sub(key_bytes(key))?;
            let below = if deeper {
                Declared::at(sub, depth + 1, left)?
            } else {
                *left = left.checked_sub(std::mem::size_of::<Declared>())?;
                Declared::default()
            };
            keys.insert(key.clone(), below);
        }
        let open = properties.is_none()
            || schema
                .get("additionalProperties")
                .is_some_and(|a| *a != Value::Bool(false))
            || schema.get("patternProperties").is_some();
        let items = match schema.get("items").filter(|i| i.is_object() && deeper) {
            Some(items) => Some(Box::new(Declared::at(items, depth + 1, left)?)),
            None => None,
        };
        Some(Declared { keys, open, items })
    }
}

/// What one declared key costs besides its place: its text and its share
/// of the map's nodes.
fn key_bytes(key: &str) -> usize {
    key.len() + 64
}

/// The arguments with every scalar replaced by its JSON type name, arrays by
/// `[shape of first element]`, and nesting kept to [`MAX_SHAPE_DEPTH`].
/// A key is kept when `declared` (the tool's schema, when one was seen)
/// declares it at its place, or, where no schema was seen or the object is
/// open, when it looks like a field name ([`is_field_name`]), at most
/// [`MAX_NAMED_KEYS`] of those per object. Every other key is folded into
/// one [`FOLDED`] key shaped like the first folded value, in key order.
pub fn args_shape(args: &Value, declared: Option<&Declared>) -> Value {
    shape(args, declared, 1)
}

fn shape(value: &Value, place: Option<&Declared>, depth: usize) -> Value {
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
        Value::Array(items) => {
            let element = place.and_then(|d| d.items.as_deref());
            Value::Array(
                items
                    .first()
                    .map(|v| shape(v, element, depth + 1))
                    .into_iter()
                    .collect(),
            )
        }
        Value::Object(map) => {
            let open = place.is_none_or(|d| d.open);
            let mut out = Map::new();
            let mut named = 0;
            let mut folded = None;
            // serde_json's map iterates in key order, so the keys kept under
            // the cap and the folded value shown are the same every time.
            for (key, value) in map {
                if let Some(below) = place.and_then(|d| d.keys.get(key)) {
                    out.insert(key.clone(), shape(value, Some(below), depth + 1));
                } else if open && named < MAX_NAMED_KEYS && is_field_name(key) {
                    named += 1;
                    out.insert(key.clone(), shape(value, None, depth + 1));
                } else if folded.is_none() {
                    folded = Some(value);
                }
            }
            if let Some(value) = folded {
                out.insert(FOLDED.to_owned(), shape(value, None, depth + 1));
            }
            Value::Object(out)
        }
    }
}

/// [`args_shape`] of arguments given as their JSON text (part of a text
/// [`crate::raw::object`] accepted), as the compact JSON text `serde_json`
/// makes of that shape (keys in byte order). The arguments are not parsed
/// into a tree, and the shape is written as it is read, by hand: capture
/// shapes every call's arguments, and a tree, or serde's serializer and a
/// raw value made of its text, took most of the time it spends on them.
pub fn args_shape_raw(args: &str, declared: Option<&Declared>) -> ShapeText {
    let mut out = String::with_capacity(64);
    write_shape(args, declared, 1, &mut out);
    ShapeText(Arc::from(out))
}

/// The shapes of the arguments a session sent lately, each by what it
/// follows from: the keys its tool declared, and the arguments' skeleton
/// (each member's key and its value's type, in the order written). A
/// session calls its tools with arguments of a few layouts over and over,
/// and shaping them anew (sorting the keys, judging each as a field name,
/// writing the text) cost capture more than reading them; a skeleton seen
/// before gives back the shape it gave, shared. Only flat arguments (no
/// object or array in them) whose every key their shape shows are
/// remembered: a key folded away as data is held no longer than a message
/// is read. At most [`MAX_REMEMBERED_SHAPES`] are, each small, so what a
/// session holds stays bounded whatever its client sends.
#[derive(Debug, Default)]
pub struct Shapes {
    known: Vec<KnownShape>,
    /// Where the next shape goes once `known` is full.
    next: usize,
    /// The skeleton of the arguments being shaped.
    skeleton: Vec<u8>,
}

#[derive(Debug)]
struct KnownShape {
    /// The key of the tool whose declared keys shaped it; `None` when no
    /// keys were declared.
    declared_by: Option<[u8; 16]>,
    skeleton: Box<[u8]>,
    shape: ShapeText,
}

/// How many shapes a session remembers.
pub const MAX_REMEMBERED_SHAPES: usize = 8;

/// The longest skeleton, and the longest shape, remembered (bytes).
const MAX_REMEMBERED_SKELETON: usize = 512;
const MAX_REMEMBERED_SHAPE: usize = 1024;

impl Shapes {
    /// [`args_shape_raw`] of `args`, whose members, when it is an object,
    /// are `members` ([`crate::raw::entries`], or listed as the message was
    /// read: [`crate::raw::object_within`]), given the keys its tool
    /// declared (if any) with a key naming that tool. A tool's key must
    /// name the same declared keys for as long as these shapes are kept:
    /// when what tools declare changes, [`Shapes::clear`] them.
    pub fn shape(
        &mut self,
        args: &str,
        members: Entries<'_>,
        declared: Option<(&Declared, [u8; 16])>,
    ) -> ShapeText {
        let place = declared.map(|(d, _)| d);
        if !args.starts_with('{') {
            return args_shape_raw(args, place);
        }
        let declared_by = declared.map(|(_, by)| by);
        let flat = skeleton(&members, &mut self.skeleton);
        if flat
            && let Some(known) = self
                .known
                .iter()
                .find(|k| k.declared_by == declared_by && *k.skeleton == *self.skeleton)
        {
            return known.shape.clone();
        }
        let mut out = String::with_capacity(64);
        // A key the shape folds away is data: it is not remembered either.
        let kept = write_object(members, place, 1, &mut out);
        let shape = ShapeText(Arc::from(out));
        if flat && kept == Kept::Every && shape.0.len() <= MAX_REMEMBERED_SHAPE {
            let known = KnownShape {
                declared_by,
                skeleton: self.skeleton.as_slice().into(),
                shape: shape.clone(),
            };
            if self.known.len() < MAX_REMEMBERED_SHAPES {
                self.known.push(known);
            } else {
                self.known[self.next] = known;
                self.next = (self.next + 1) % MAX_REMEMBERED_SHAPES;
            }
        }
        // Nor does the skeleton of a layout not remembered stay.
        self.skeleton.clear();
        shape
    }

    /// Forgets every shape, and gives back what they held.
    pub fn clear(&mut self) {
        *self = Shapes::default();
    }

    /// What the shapes hold, in bytes.
    pub fn bytes(&self) -> usize {
        let known: usize = self
            .known
            .iter()
            .map(|k| k.skeleton.len() + k.shape.0.len())
            .sum();
        self.skeleton.capacity() + self.known.capacity() * std::mem::size_of::<KnownShape>() + known
    }
}

/// Writes the skeleton of an object's `members` to `out`: each key, then
/// its value's type ([`scalar_kind`], a byte below any a key written
/// without escapes can hold). `false` when the object is not flat (a value
/// is an object or an array), a key was written with escapes, or the
/// skeleton would pass [`MAX_REMEMBERED_SKELETON`].
fn skeleton(members: &Entries<'_>, out: &mut Vec<u8>) -> bool {
    out.clear();
    for (key, value) in members {
        let (Cow::Borrowed(key), Some(kind)) = (key, scalar_kind(value)) else {
            return false;
        };
        if out.len() + key.len() + 1 > MAX_REMEMBERED_SKELETON {
            return false;
        }
        out.extend_from_slice(key.as_bytes());
        out.push(kind);
    }
    true
}

/// A shape as its compact JSON text, written by [`args_shape_raw`]. A
/// journal line takes the text as it is
/// ([`crate::record_line::ShapeJson`]); serialized through serde, it is
/// read back as a raw value first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeText(Arc<str>);

impl ShapeText {
    /// The shape a journal line shows for arguments too large to show:
    /// `"object"`.
    pub fn object() -> ShapeText {
        ShapeText(Arc::from(r#""object""#))
    }

    /// The shape's JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What it holds, in bytes (shared or not).
    pub fn bytes(&self) -> usize {
        self.0.len()
    }
}

impl Serialize for ShapeText {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(out)
    }
}

/// The type names of scalars, as a shape shows them, by [`scalar_kind`].
const SCALARS: [&str; 5] = ["null", "boolean", "string", "number", "integer"];

/// The type name of a scalar's JSON text (its first byte tells), or
/// `None` for a container.
fn scalar_name(text: &str) -> Option<&'static str> {
    scalar_kind(text).map(|kind| SCALARS[usize::from(kind)])
}

/// [`scalar_name`] as its place in [`SCALARS`].
fn scalar_kind(text: &str) -> Option<u8> {
    Some(match text.as_bytes().first() {
        Some(b'n') => 0,
        Some(b't' | b'f') => 1,
        Some(b'"') => 2,
        Some(b'{' | b'[') => return None,
        // A number: an integer when serde_json would hold it as one (no
        // fraction or exponent, within i64 or u64, and not `-0`, which it
        // holds as a float).
        _ if text == "-0" || text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => 3,
        // Up to 18 digits, signed or not, always fit an i64: most numbers
        // are told by their length, without parsing them.
        _ if text.len() <= 18 => 4,
        _ if text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok() => 4,
        _ => 3,
    })
}

/// Appends the shape of a value given as its JSON text, at `depth`, to
/// `out`, as serde_json would write the shape [`args_shape`] makes.
fn write_shape(text: &str, place: Option<&Declared>, depth: usize, out: &mut String) {
    if let Some(name) = scalar_name(text) {
        quoted(name, out);
        return;
    }
    let array = text.starts_with('[');
    if depth > MAX_SHAPE_DEPTH {
        quoted(if array { "array" } else { "object" }, out);
        return;
    }
    if array {
        out.push('[');
        if let Some(first) = crate::raw::first_element(text) {
            let element = place.and_then(|d| d.items.as_deref());
            write_shape(first, element, depth + 1, out);
        }
        out.push(']');
        return;
    }
    write_object(
        crate::raw::entries(text).unwrap_or_default(),
        place,
        depth,
        out,
    );
}

/// Appends the shape of an object, given as its members
/// ([`crate::raw::entries`]), at `depth`, to `out`; whether the shape
/// shows every key.
fn write_object(
    mut members: Entries<'_>,
    place: Option<&Declared>,
    depth: usize,
    out: &mut String,
) -> Kept {
    let mut folded = keep_members(&mut members, place);
    let kept = match folded {
        None => Kept::Every,
        Some(_) => Kept::NotEvery,
    };
    out.push('{');
    let mut first = true;
    let mut member = |key: &str, value: &str, below: Option<&Declared>, out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        key_text(key, out);
        out.push(':');
        write_shape(value, below, depth + 1, out);
    };
    for (key, value) in &members {
        // No kept key is FOLDED (declared keys never are, and it is no
        // field name), so the folded member goes just before the first
        // kept key after it in key order, or last.
        if let Some(value) = folded.take_if(|_| key.as_ref() > FOLDED) {
            member(FOLDED, value, None, out);
        }
        let below = place.and_then(|d| d.keys.get(key.as_ref()));
        member(key, value, below, out);
    }
    if let Some(value) = folded {
        member(FOLDED, value, None, out);
    }
    out.push('}');
    kept
}

/// Whether an object's shape shows every key it has.
#[derive(Debug, PartialEq, Eq)]
enum Kept {
    Every,
    NotEvery,
}

/// A text known to need no escape, between quotes.
fn quoted(text: &str, out: &mut String) {
    out.push('"');
    out.push_str(text);
    out.push('"');
}

/// A key as a JSON string, escaped as serde_json escapes it. Field names
/// never need an escape; a declared key might.
fn key_text(key: &str, out: &mut String) {
    if key.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&serde_json::to_string(key).expect("a string serializes"));
    } else {
        quoted(key, out);
    }
}

/// Sorts an object's members (as [`crate::raw::entries`] reads them) by
/// key and keeps, in place, those its shape shows under their own key at
/// `place`, chosen as [`args_shape`] chooses them; returns the value of
/// the first member folded, in key order, which the shape shows under
/// [`FOLDED`]. No second list of the kept members is made: capture shapes
/// every call's arguments.
fn keep_members<'a>(
    members: &mut Vec<(Cow<'_, str>, &'a str)>,
    place: Option<&Declared>,
) -> Option<&'a str> {
    // In key order, the last of a repeated key kept: as a parsed map
    // holds them.
    members.sort_by(|a, b| a.0.cmp(&b.0));
    members.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            std::mem::swap(later, earlier);
        }
        same
    });
    let open = place.is_none_or(|d| d.open);
    let mut named = 0;
    let mut folded = None;
    members.retain(|(key, value)| {
        if place.is_some_and(|d| d.keys.contains_key(key.as_ref())) {
            true
        } else if open && named < MAX_NAMED_KEYS && is_field_name(key) {
            named += 1;
            true
        } else {
            folded = folded.or(Some(*value));
            false
        }
    });
    folded
}

/// Whether `key` looks like a field name rather than data: at most
/// [`MAX_FIELD_NAME`] bytes of snake, kebab or lower camel case, with no
/// run of more than 4 digits (which an id, a phone or card number has).
/// The two cases are `^[a-z][a-z0-9]*([_-][a-z0-9]+)*$` and
/// `^[a-z][a-z0-9]*([A-Z][a-z0-9]+)*$`, matched by hand: every key of
/// every call's arguments is judged, and the regexes took longer than the
/// rest of the shaping.
pub fn is_field_name(key: &str) -> bool {
    let mut digits = 0;
    let short_runs = key.bytes().all(|b| {
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        digits <= 4
    });
    key.len() <= MAX_FIELD_NAME
        && short_runs
        && (joined(key, |b| matches!(b, b'_' | b'-')) || joined(key, |b| b.is_ascii_uppercase()))
}

/// Whether `key` is a lower-case letter, then lower-case letters and
/// digits, where a byte that is `joint` may stand before each run of them
/// after the first (never two together, never last).
fn joined(key: &str, joint: impl Fn(u8) -> bool) -> bool {
    let bytes = key.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    let mut after_joint = false;
    first.is_ascii_lowercase()
        && rest.iter().all(|&b| {
            if b.is_ascii_lowercase() || b.is_ascii_digit() {
                after_joint = false;
                true
            } else if joint(b) && !after_joint {
                after_joint = true;
                true
            } else {
                false
            }
        })
        && !after_joint
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
pub fn template_id(salt: &Salt, message: &str) -> shared::id::TemplateId {
    shared::id::TemplateId::from_hex16(&salt.id16(&[normalize(message).as_bytes()]))
        .expect("id16 gives 16 hex digits")
}

/// The template ids of the messages seen lately, each message known by a
/// SHA-256 digest of the text it is normalized from (never by the text):
/// a failing tool repeats its message, and normalizing it again is most of
/// what classifying an error costs.
#[derive(Debug, Default)]
pub struct Templates {
    ids: HashMap<[u8; 32], String>,
}

/// The most template ids a [`Templates`] remembers; when full, it starts
/// over.
const MAX_TEMPLATES: usize = 1024;

impl Templates {
    /// [`template_id`] of `message`, as text.
    pub fn id(&mut self, salt: &Salt, message: &str) -> String {
        let input = truncate(message, MAX_TEMPLATE_INPUT);
        let key = crate::hash::sha256(input.as_bytes());
        if let Some(id) = self.ids.get(&key) {
            return id.clone();
        }
        let id = template_id(salt, input).into_string();
        if self.ids.len() >= MAX_TEMPLATES {
            self.ids.clear();
        }
        self.ids.insert(key, id.clone());
        id
    }
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
            args_shape(&args, None),
            json!({"city": "string", "days": "integer", "ratio": "number", "ok": "boolean",
                "n": "null", "opts": {"units": "string"}, "tags": ["string"], "empty": []})
        );
    }

    #[test]
    fn shapes_stop_at_depth_four() {
        let args = json!({"a": {"b": {"c": {"d": {"e": 1}}, "l": [[1]]}}});
        assert_eq!(
            args_shape(&args, None),
            json!({"a": {"b": {"c": {"d": "object"}, "l": ["array"]}}})
        );
    }

    #[test]
    fn keys_that_are_data_are_folded() {
        let mut users = Map::new();
        for i in 0..200 {
            users.insert(format!("user{i}@corp.example"), json!(i));
        }
        let long = "k".repeat(40 * 1024);
        let args = json!({"users": users, "tokens": {
            "sk-proj-Ab3dE5fGh7iJk9LmN0pQr2StU4vWx6Yz": "x",
            "sk-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e": "x",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln": "y",
            long.clone(): true}});
        let shape = args_shape(&args, None);
        assert_eq!(
            shape,
            json!({"users": {"*": "integer"}, "tokens": {"*": "string"}})
        );
        let text = shape.to_string();
        assert!(!text.contains('@') && !text.contains("sk-") && !text.contains("eyJ"));
    }

    #[test]
    fn field_names_follow_the_two_patterns() {
        let kept = [
            "a",
            "city",
            "max_results",
            "dry-run",
            "userId",
            "pageToken2",
            "item1234",
            "v2_beta",
            "abcdefghijklmnopqrstuvwxyzabcdef",
        ];
        let folded = [
            "",
            "*",
            "City",
            "getHTTP",
            "snake__double",
            "trailing_",
            "_lead",
            "mixed_camelCase",
            "item12345",
            "4111111111111111",
            "a.b",
            "with space",
            "user@corp.example",
            "abcdefghijklmnopqrstuvwxyzabcdefg",
            "caf\u{e9}",
        ];
        for key in kept {
            assert!(is_field_name(key), "{key:?} should be kept");
        }
        for key in folded {
            assert!(!is_field_name(key), "{key:?} should be folded");
        }
    }

    #[test]
    fn at_most_sixteen_named_keys_per_object_and_the_fold_is_deterministic() {
        let mut map = Map::new();
        for c in 'a'..='t' {
            // The first folded key in key order is "fieldq": its value shapes "*".
            let value = if c == 'q' { json!("s") } else { json!(1) };
            map.insert(format!("field{c}"), value);
        }
        map.insert("b@x.example".into(), json!([true]));
        let shape = args_shape(&Value::Object(map), None);
        let keys: Vec<&String> = shape.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 17);
        assert_eq!(keys[0], "*");
        assert_eq!(keys[16], "fieldp");
        // "b@x.example" sorts before "fieldq", so its shape is the fold's.
        assert_eq!(shape["*"], json!(["boolean"]));
    }

    #[test]
    fn declared_keys_are_kept_at_their_place() {
        let schema = json!({"type": "object", "properties": {
            "Odd Key.v2": {"type": "string"},
            "opts": {"type": "object", "properties": {"Mode!": {}}},
            "rows": {"type": "array", "items": {"properties": {"ID": {}}}},
            "free": {"type": "object", "additionalProperties": {"type": "integer"}},
            "pattern": {"patternProperties": {"^x": {}}, "properties": {"Known": {}}},
            "shut": {"properties": {"Known": {}}, "additionalProperties": false},
            "esc\u{1b}[31m": {}, "*": {}}});
        let declared = Declared::from_schema(&schema);
        let args = json!({"Odd Key.v2": "v", "extra": 1, "Extra": 2,
            "opts": {"Mode!": 1, "other": 2, "Other": 3},
            "rows": [{"ID": 1, "name": "n"}],
            "free": {"limit": 1, "a@b.example": 2},
            "pattern": {"Known": 1, "x1": 2, "X1": 3},
            "shut": {"Known": 1, "other": 2},
            "esc\u{1b}[31m": 1});
        assert_eq!(
            args_shape(&args, Some(&declared)),
            json!({"Odd Key.v2": "string", "*": "integer",
                "opts": {"Mode!": "integer", "*": "integer"},
                "rows": [{"ID": "integer", "*": "string"}],
                "free": {"limit": "integer", "*": "integer"},
                "pattern": {"Known": "integer", "x1": "integer", "*": "integer"},
                "shut": {"Known": "integer", "*": "integer"}})
        );
        // No `properties` at all: open, and field names are kept.
        let bare = Declared::from_schema(&json!({"type": "object"}));
        assert_eq!(
            args_shape(&json!({"q": 1, "Q": 2}), Some(&bare)),
            json!({"q": "integer", "*": "integer"})
        );
    }

    #[test]
    fn a_schema_is_declared_within_a_budget_or_not_at_all() {
        let schema = json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "opts": {"type": "object", "properties": {"units": {}}},
            "rows": {"type": "array", "items": {"properties": {"ID": {}}}}}});
        let whole = Declared::from_schema(&schema);
        let cost = whole.bytes();
        let mut budget = cost;
        assert_eq!(
            Declared::from_schema_within(&schema, &mut budget),
            Some(whole.clone())
        );
        assert_eq!(budget, 0, "exactly what bytes() says is charged");
        let mut short = cost - 1;
        assert_eq!(Declared::from_schema_within(&schema, &mut short), None);
        assert_eq!(short, cost - 1, "nothing is charged for a refusal");
        // A schema of a hundred thousand keys stops at the budget.
        let wide: serde_json::Map<String, Value> =
            (0..100_000).map(|i| (format!("k{i}"), json!({}))).collect();
        let mut budget = 1 << 20;
        let huge = json!({"properties": wide});
        assert_eq!(Declared::from_schema_within(&huge, &mut budget), None);
        assert_eq!(budget, 1 << 20);
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

#[cfg(test)]
mod text_tests {
    use super::*;
    use serde_json::json;

    /// The shape read from text, against the shape of the parsed value.
    fn same(args: &str, declared: Option<&Declared>) {
        let value: Value = serde_json::from_str(args).unwrap();
        let shape = args_shape_raw(args, declared);
        let text = shape.as_str();
        assert_eq!(
            text,
            args_shape(&value, declared).to_string(),
            "{args} with {declared:?}"
        );
        let _: Value = serde_json::from_str(text).expect("the shape is JSON");
    }

    #[test]
    fn shapes_read_from_text_are_the_shapes_of_the_parsed_value() {
        let many: String = (0..40)
            .map(|i| format!(r#""key_{i}":{i}"#))
            .collect::<Vec<_>>()
            .join(",");
        let cases = [
            r#"{"city":"Paris","days":3,"fail":false}"#.to_owned(),
            r#"{"z":1, "a" : [ {"b":null,"c":[1.5]} ], "a":"again", "e":1e3, "f":-0, "g":-7}"#.to_owned(),
            r#"{"n":18446744073709551615,"m":18446744073709551616,"o":-9223372036854775808,"p":-9223372036854775809}"#.to_owned(),
            r#"{"a":{"b":{"c":{"d":{"e":1}}, "l":[[1]]}}}"#.to_owned(),
            r##"{"alice@example.com":1,"bob@example.com":"x","!bang":true,"#tag":[],"Odd Key":{}}"##.to_owned(),
            r#"{"\u0061":1,"a\"b":2,"tab\tkey":3,"é":4,"*":5,"\ud83d\ude00":6}"#.to_owned(),
            format!("{{{many}}}"),
            "[1,2]".to_owned(),
            "[]".to_owned(),
            "{}".to_owned(),
            r#""text""#.to_owned(),
            "null".to_owned(),
            "12.5".to_owned(),
            "[[[[[1]]]]]".to_owned(),
            "[{}, 1]".to_owned(),
            // A repeated key: its last member counts.
            r#"{"a":1,"a":"x"}"#.to_owned(),
            r#"{"a":{"b":1},"b":2,"a":[true],"\u0061":null}"#.to_owned(),
            // More field names than are kept, among data keys.
            format!(r#"{{{many},"A":1,"user@x.example":"s","!x":true,"zz@z":[]}}"#),
            // Keys a declared schema may keep that need escaping.
            r#"{"a\"b":1,"back\\slash":2,"\"":3,"\\":4,"tab\tkey":5,"\u0001":6}"#.to_owned(),
            // Containers at the depth limit and past it.
            r#"{"a":{"b":{"c":{"d":[]}}}}"#.to_owned(),
            r#"{"a":{"b":{"c":[{}]}}}"#.to_owned(),
            r#"{"a":{"b":[[{"x":1}]]},"c":[[[]]],"d":{"e":{"f":{}}}}"#.to_owned(),
            "[[[[]]]]".to_owned(),
            "[[[{}]]]".to_owned(),
            // Empty containers, with and without whitespace.
            r#"{"a":{},"b":[],"c":{ },"d":[ ]}"#.to_owned(),
            "{ }".to_owned(),
            "[ ]".to_owned(),
            // The fold among kept keys before and after it: `!`, `#` and `)`
            // sort before `*`, `+` and letters after it.
            r##"{"!a":1,"#b":"s","*":true,"zz@x":null,"a":1}"##.to_owned(),
            r#"{"!a":1,"b@x":2.5,"c":3}"#.to_owned(),
            r#"{")":1,"+":"s","c":[1]}"#.to_owned(),
            r#"{"+":1,"*":"s"}"#.to_owned(),
            r#"{"User":{"k":1},"a":2}"#.to_owned(),
        ];
        let schemas = [
            json!({"type": "object", "properties": {"Odd Key": {"properties": {"x": {}}}, "#tag": {"items": {"properties": {"q": {}}}}, "a": {}}}),
            json!({"type": "object", "properties": {"city": {}}, "additionalProperties": false}),
            json!({"type": "object", "properties": {"!bang": {}, "z": {}}, "additionalProperties": true}),
            json!({"items": {"properties": {"b": {}}}}),
            json!({"type": "object", "properties": {"a\"b": {}, "back\\slash": {}, "\"": {}, "\\": {}, "tab\tkey": {}, "\u{1}": {}, "key_3": {}, "!x": {}}}),
            json!({"type": "object", "properties": {"!a": {}, "#b": {}, ")": {}, "+": {}, "a": {"properties": {"b": {"properties": {"c": {"items": {}}}}}}}}),
            json!({"type": "object", "properties": {"!a": {}}, "additionalProperties": false}),
        ];
        let declared: Vec<Declared> = schemas.iter().map(Declared::from_schema).collect();
        for case in &cases {
            same(case, None);
            for d in &declared {
                same(case, Some(d));
            }
        }
    }

    /// A small deterministic generator (SplitMix64): the same arguments on
    /// every run, and no dependency for them.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// A number below `n`.
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        /// One of `from`, each as likely.
        fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
            &from[self.below(from.len())]
        }
    }

    /// Pieces of keys, each as written in JSON text and as the text it
    /// stands for: field-name parts, bytes that sort before and after
    /// [`FOLDED`], escapes, and text beyond ASCII written both ways.
    const KEY_PIECES: [(&str, &str); 22] = [
        ("a", "a"),
        ("b", "b"),
        ("z", "z"),
        ("_", "_"),
        ("-", "-"),
        ("B", "B"),
        ("7", "7"),
        ("12345", "12345"),
        ("*", "*"),
        ("!", "!"),
        ("#", "#"),
        ("+", "+"),
        ("@", "@"),
        (" ", " "),
        (r#"\""#, "\""),
        (r"\\", "\\"),
        (r"\/", "/"),
        (r"\n", "\n"),
        (r"\u0001", "\u{1}"),
        ("é", "é"),
        (r"\u00e9", "é"),
        (r"\ud83d\ude00", "😀"),
    ];

    /// A key as written in JSON text and as read: two times in three a
    /// field name, else up to three pieces.
    fn key(draw: &mut Draw) -> (String, String) {
        if draw.below(3) > 0 {
            let name = format!("{}{}", draw.pick(&["a", "b", "k", "z"]), draw.below(40));
            return (name.clone(), name);
        }
        let mut key = (String::new(), String::new());
        for _ in 0..draw.below(4) {
            let (written, read) = draw.pick(&KEY_PIECES);
            key.0.push_str(written);
            key.1.push_str(read);
        }
        key
    }

    /// The keys of one case, which its arguments and its schema both draw
    /// from: keys repeat, and are declared.
    fn keys(draw: &mut Draw) -> Vec<(String, String)> {
        (0..1 + draw.below(48)).map(|_| key(draw)).collect()
    }

    /// Whitespace, now and then.
    fn space(draw: &mut Draw) -> &'static str {
        const SPACES: [&str; 5] = ["", "", "", " ", "\n\t"];
        SPACES[draw.below(SPACES.len())]
    }

    /// The JSON text of a value at `depth` (1 for the arguments): a
    /// container no deeper than 6.
    fn value(draw: &mut Draw, keys: &[(String, String)], depth: usize) -> String {
        const SCALARS: [&str; 12] = [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "-7",
            "1.5",
            "1e3",
            "18446744073709551615",
            "18446744073709551616",
            r#""s""#,
            r#""\u0041""#,
        ];
        match draw.below(if depth <= 6 { 5 } else { 2 }) {
            0 | 1 => draw.pick(&SCALARS).to_string(),
            2 => {
                let items: Vec<String> = (0..draw.below(3))
                    .map(|_| value(draw, keys, depth + 1))
                    .collect();
                format!("[{}{}]", items.join(","), space(draw))
            }
            _ => object(draw, keys, depth),
        }
    }

    /// The JSON text of an object at `depth`; at the top, now and then
    /// one of more members than [`MAX_NAMED_KEYS`].
    fn object(draw: &mut Draw, keys: &[(String, String)], depth: usize) -> String {
        let count = match depth == 1 && draw.below(4) == 0 {
            true => 20 + draw.below(40),
            false => draw.below(7),
        };
        let members: Vec<String> = (0..count)
            .map(|_| {
                let (written, _) = draw.pick(keys);
                let (before, after) = (space(draw), space(draw));
                let value = value(draw, keys, depth + 1);
                format!("{before}\"{written}\"{after}:{value}")
            })
            .collect();
        format!("{{{}{}}}", members.join(","), space(draw))
    }

    /// A schema for an object at `depth`, declaring some of `keys` (as
    /// read), open or not.
    fn schema(draw: &mut Draw, keys: &[(String, String)], depth: usize) -> Value {
        let mut out = Map::new();
        if draw.below(4) > 0 {
            let count = if depth < 6 { draw.below(6) } else { 0 };
            let properties: Map<String, Value> = (0..count)
                .map(|_| (draw.pick(keys).1.clone(), schema(draw, keys, depth + 1)))
                .collect();
            out.insert("properties".into(), Value::Object(properties));
        }
        match draw.below(4) {
            0 => drop(out.insert("additionalProperties".into(), json!(false))),
            1 => drop(out.insert("additionalProperties".into(), json!(true))),
            2 => drop(out.insert("patternProperties".into(), json!({"^x": {}}))),
            _ => {}
        }
        if depth < 6 && draw.below(3) == 0 {
            out.insert("items".into(), schema(draw, keys, depth + 1));
        }
        Value::Object(out)
    }

    #[test]
    fn shapes_read_from_random_text_are_the_shapes_of_the_parsed_value() {
        let mut draw = Draw(0x5eed);
        for _ in 0..3000 {
            let keys = keys(&mut draw);
            let args = object(&mut draw, &keys, 1);
            let declared = Declared::from_schema(&schema(&mut draw, &keys, 1));
            same(&args, None);
            same(&args, Some(&declared));
        }
    }

    #[test]
    fn remembered_shapes_are_the_shapes_made_afresh() {
        // A few arguments, flat and not, of keys some schemas keep and
        // others fold, and of values whose types differ only in the number
        // they are, so that skeletons repeat and some differ by a type.
        let mut draw = Draw(0x5a9e);
        let keys = [
            r#""city""#,
            r#""Odd Key""#,
            r#""x@y.example""#,
            r#""\u0061""#,
            r#""*""#,
        ];
        let values = [
            "1",
            "-0",
            "2.5",
            "1e3",
            "18446744073709551616",
            r#""s""#,
            "true",
            "null",
            "[1]",
        ];
        let pool: Vec<String> = (0..12)
            .map(|_| {
                let members: Vec<String> = (0..draw.below(4))
                    .map(|_| format!("{}:{}", draw.pick(&keys), draw.pick(&values)))
                    .collect();
                format!("{{{}}}", members.join(","))
            })
            // Skeletons that differ by a type alone, and two that would be
            // one if escaped keys were remembered: a key's control
            // character read as a type.
            .chain(
                [
                    r#"{"city":1,"days":2}"#,
                    r#"{"city":"s","days":2}"#,
                    r#"{"city":1.5,"days":2}"#,
                    r#"{"city":1,"days":18446744073709551616}"#,
                    r#"{"a":true,"":1}"#,
                    r#"{"a\u0001":1}"#,
                ]
                .map(String::from),
            )
            .collect();
        let schemas = [
            json!({"type": "object", "properties": {"city": {}}}),
            json!({"type": "object", "properties": {"Odd Key": {}, "*": {}}}),
            json!({"properties": {"x@y.example": {}}, "additionalProperties": true}),
            json!({"type": "object", "properties": {"a": {}, "": {}, "a\u{1}": {}}}),
        ];
        let declared: Vec<Declared> = schemas.iter().map(Declared::from_schema).collect();
        let mut shapes = Shapes::default();
        let mut remembered = 0;
        for _ in 0..20_000 {
            let args = draw.pick(&pool);
            // Tools 0 to 3 declare a schema each, tool 4 none.
            let tool = draw.below(5);
            let place = declared.get(tool).map(|d| (d, [tool as u8; 16]));
            let known: Vec<ShapeText> = shapes.known.iter().map(|k| k.shape.clone()).collect();
            let members = crate::raw::entries(args).expect("an object");
            let shape = shapes.shape(args, members, place);
            assert_eq!(
                shape,
                args_shape_raw(args, place.map(|(d, _)| d)),
                "{args} as tool {tool} declares it"
            );
            remembered += usize::from(known.iter().any(|k| Arc::ptr_eq(&k.0, &shape.0)));
            assert!(shapes.known.len() <= MAX_REMEMBERED_SHAPES);
            if draw.below(500) == 0 {
                shapes.clear();
            }
        }
        assert!(remembered > 2_000, "{remembered} shapes remembered");
        // A key folded away as data is not remembered, nor is anything
        // not flat; field names are.
        let mut shapes = Shapes::default();
        for args in [
            r#"{"x@y.example":1}"#,
            r#"{"city":"s","Odd Key":2}"#,
            r#"{"a":[1]}"#,
        ] {
            let members = crate::raw::entries(args).expect("an object");
            shapes.shape(args, members, None);
        }
        assert!(shapes.known.is_empty(), "{:?}", shapes.known);
        let args = r#"{"city":"s","days":2}"#;
        shapes.shape(args, crate::raw::entries(args).expect("an object"), None);
        assert_eq!(shapes.known.len(), 1);
    }

    #[test]
    fn field_names_are_the_two_patterns_exactly() {
        let snake = Regex::new(r"^[a-z][a-z0-9]*([_-][a-z0-9]+)*$").unwrap();
        let camel = Regex::new(r"^[a-z][a-z0-9]*([A-Z][a-z0-9]+)*$").unwrap();
        let alphabet = ["a", "z", "0", "9", "_", "-", "A", "Z", " ", "é", "."];
        // Every key of up to four pieces from the alphabet.
        let mut keys = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = keys
                .iter()
                .flat_map(|k| alphabet.iter().map(move |a| format!("{k}{a}")))
                .collect();
            keys.extend(longer);
        }
        keys.extend(
            [
                "maxResults",
                "max_results",
                "max-results",
                "aB1cD",
                "a__b",
                "a_B",
                "aBC",
            ]
            .map(String::from),
        );
        for key in &keys {
            let want = snake.is_match(key) || camel.is_match(key);
            assert_eq!(
                joined(key, |b| matches!(b, b'_' | b'-'))
                    || joined(key, |b| b.is_ascii_uppercase()),
                want,
                "{key:?}"
            );
        }
    }

    #[test]
    fn templates_are_remembered_by_digest_and_match_template_id() {
        let salt = Salt::from_bytes([4; 32]);
        let mut templates = Templates::default();
        let long = format!("{}{}", "x".repeat(MAX_TEMPLATE_INPUT), "tail 1");
        for message in ["no city 'Atlantis'", "no city 'Paris'", "", &long] {
            let want = template_id(&salt, message).into_string();
            assert_eq!(templates.id(&salt, message), want, "{message}");
            assert_eq!(templates.id(&salt, message), want, "again: {message}");
        }
        assert_eq!(templates.ids.len(), 4);
        for n in 0..MAX_TEMPLATES + 1 {
            templates.id(&salt, &format!("m{n}"));
        }
        assert!(templates.ids.len() <= MAX_TEMPLATES);
    }
}
