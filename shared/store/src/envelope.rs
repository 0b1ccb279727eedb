//! The share envelope (`mcpeval.share/1`): what `mcpeval share` hands to a
//! server's maintainer, and what `mcpeval findings --from FILE` reads back.
//!
//! An envelope carries the sanitized findings exactly as `findings --format
//! json` prints them, per-tool aggregates, and the sanitized journal
//! records of the chosen servers, with session tokens, template ids and
//! event ids re-keyed for that one file. It never carries lifecycle.db rows, the
//! salt, or annotation notes (notes only when the sender asked for them).
//!
//! Reading one is strict, because the file may come from anyone: every
//! part is checked (known fields only, ids of their exact form, enums,
//! numbers in range, time stamps), and every server, tool and argument key
//! must be a name capture could have written, with no control,
//! bidirectional or invisible character and at most 128 bytes. A name breaking that
//! rule is refused rather than cleaned: `share` writes names cleaned, so
//! such a name means the file was made or edited by hand, and the reader
//! should know. The first fault rejects the whole file (status 4), naming
//! the file and the JSON Pointer of the value at fault; nothing foreign is
//! ever rendered as if it were a finding.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufReader, Read};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Derived, Finding};
use crate::lifecycle::State;
use shared::error::{Error, Result};
use shared::escape::{self, name_fault, quoted, terminal};
use shared::file_arg::Input;
use shared::finding::{DefectClass, Kind, Violation};
use shared::id::FindingId;
use shared::record::{Call, LegacyCall, SCHEMA_V0, SCHEMA_V1};
use shared::score::Severity;

/// The schema tag of share envelopes.
pub const SCHEMA: &str = "mcpeval.share/1";

/// Envelopes larger than this (256 MiB) are refused: a regular file
/// unread, a pipe once that much was read.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The top-level fields of an envelope; `notes` is the one optional one.
const FIELDS: [&str; 7] = [
    "schema",
    "created_at",
    "servers",
    "findings",
    "evidence",
    "journals",
    "notes",
];

/// The captured traffic of one (server, tool), as the envelope's
/// `evidence` array holds it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolEvidence {
    /// Server name.
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// Captured calls.
    pub calls: u64,
    /// Calls with outcome ok.
    pub ok: u64,
    /// Calls with outcome error.
    pub errors: u64,
    /// Calls with a malformed result.
    pub malformed: u64,
    /// Calls never answered.
    pub unanswered: u64,
    /// (errors + malformed) / calls.
    pub failure_rate: f64,
    /// Distinct sessions with calls.
    pub sessions: u64,
    /// The first call's start, RFC 3339.
    pub first_call: String,
    /// The last call's start, RFC 3339.
    pub last_call: String,
    /// Error code (as decimal text) → how many errors carried it.
    pub err_codes: BTreeMap<String, u64>,
}

/// One annotation note and the call it is about, as the envelope's
/// `notes` array holds it (only with `share --include-notes`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    /// The annotation kind (`workaround`, …).
    pub kind: String,
    /// When it was recorded, RFC 3339.
    pub created_at: String,
    /// The call's event id (re-keyed like the records'), for current records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// The call's session token (re-keyed like the records'), for legacy records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The call's turn, for legacy records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The note as its author wrote it.
    pub note: String,
}

/// A finding as the JSON of `findings --format json` spells it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    id: String,
    kind: String,
    server: String,
    tool: String,
    defect_class: String,
    /// Not read back: the hint is the defect class's own.
    #[allow(dead_code)]
    fix_hint: String,
    score: f64,
    failures: u64,
    calls: u64,
    failure_rate: f64,
    wilson_lower: f64,
    sessions: u64,
    first_seen: String,
    last_seen: String,
    median_window_turns: f64,
    blast_radius: u64,
    err_code: Option<i64>,
    err_codes: Vec<i64>,
    retryable: Option<bool>,
    args_shapes: Vec<Value>,
    severity: String,
    state: String,
    streak: u32,
    probe_attached: bool,
    reopened: u32,
    #[serde(default)]
    witnessed: Option<bool>,
    #[serde(default)]
    contract: Option<Violation>,
}

/// A value at fault: its JSON Pointer and what is wrong with it, in words
/// that hold no untrusted character raw.
struct Fault {
    at: String,
    why: String,
}

impl Fault {
    fn new(at: impl Into<String>, why: impl Into<String>) -> Fault {
        Fault {
            at: at.into(),
            why: why.into(),
        }
    }
}

type Checked<T> = std::result::Result<T, Fault>;

/// Reads the findings of the envelope at `input` (a file, or standard
/// input), after checking the whole envelope. Status 4 (rejected) for a
/// file that is not an `mcpeval.share/1` envelope or holds any value that
/// breaks the contract; the message names the file and the JSON Pointer of
/// the value (e.g. `/findings/3/server`).
///
/// The envelope is read as a stream, one item (a finding, a record, …) at
/// a time, each checked and dropped before the next is read: what it costs
/// is the findings kept and one item, never the file. An envelope over
/// [`MAX_BYTES`], or an item over [`MAX_ITEM`], is refused as soon as the
/// bytes read show it, without reading on.
pub fn read_findings(input: &Input) -> Result<Vec<Finding>> {
    let reader: Box<dyn Read> = match input.path() {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| {
                Error::io(format_args!("cannot open the share envelope {input}"), e)
            })?;
            let len = file.metadata().map(|m| m.len()).unwrap_or(0);
            if len > MAX_BYTES {
                return Err(Error::rejected(format!(
                    "{input} is {len} bytes; share envelopes are limited to 256 MiB"
                )));
            }
            Box::new(file)
        }
        None => Box::new(std::io::stdin()),
    };
    let meter = Meter::default();
    let metered = Metered {
        inner: reader,
        meter: &meter,
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(CHUNK, metered));
    let mut top = Top::new(&meter);
    // Until it shows itself an object, the whole envelope is one item.
    meter.begin(String::new());
    let read = de.deserialize_any(&mut top).and_then(|()| de.end());
    read.map_err(|e| {
        if let Some(trip) = meter.tripped.take() {
            return match trip {
                Trip::Envelope => Error::rejected(format!(
                    "{input}: more than 256 MiB; share envelopes are limited to 256 MiB"
                )),
                Trip::Item(at) => Error::rejected(format!(
                    "{input}: {}: more than 1 MiB in one item; no item `mcpeval share` writes comes near that, so it was not read on",
                    terminal(if at.is_empty() { "/" } else { &at })
                ))
                .with_hint(BAD_FILE),
            };
        }
        if e.is_io() {
            return Error::io(
                format_args!("cannot read {input}"),
                std::io::Error::other(e.to_string()),
            );
        }
        if e.is_data() {
            // The one type error: an envelope that is not an object.
            return rejected(input, Fault::new("", "the envelope is not a JSON object"));
        }
        Error::rejected(format!(
            "{input}: not valid JSON: {}",
            terminal(&e.to_string())
        ))
        .with_hint("the file is not an mcpeval share envelope; create one with `mcpeval share`")
    })?;
    top.verdict().map_err(|fault| rejected(input, fault))
}

/// An item of an envelope (one finding, record, piece of evidence, note
/// or server name, and any other top-level value) is refused past this
/// size, 1 MiB. The largest `share` writes is a finding: five argument
/// shapes of at most a record each (64 KiB) and its error codes, well
/// under 1 MiB; anything larger was not written by `share`, and reading it
/// on would only hold more of it.
pub const MAX_ITEM: u64 = 1024 * 1024;

/// Bytes asked of the input at once.
const CHUNK: usize = 64 * 1024;

/// What a refusal of the file's content advises.
const BAD_FILE: &str = "the file was not written by `mcpeval share`, or was changed since; nothing in it was rendered; ask its sender for a fresh one";

fn rejected(input: &Input, fault: Fault) -> Error {
    let at = if fault.at.is_empty() { "/" } else { &fault.at };
    Error::rejected(format!("{input}: {}: {}", terminal(at), fault.why)).with_hint(BAD_FILE)
}

/// Which bound the input broke.
#[derive(Debug)]
enum Trip {
    Envelope,
    /// The item at this pointer.
    Item(String),
}

/// Counts the bytes read, and the bytes read since the current item began.
#[derive(Debug, Default)]
struct Meter {
    read: Cell<u64>,
    /// The current item's pointer and the count when it began.
    item: RefCell<Option<(String, u64)>>,
    tripped: RefCell<Option<Trip>>,
}

impl Meter {
    /// Starts the item at `at`. Reads run ahead of the parser by at most
    /// one chunk, so an item is refused a chunk late at worst.
    fn begin(&self, at: String) {
        *self.item.borrow_mut() = Some((at, self.read.get()));
    }

    fn end(&self) {
        *self.item.borrow_mut() = None;
    }

    /// `read` within the item at `at`.
    fn within<T>(&self, at: String, read: impl FnOnce() -> T) -> T {
        self.begin(at);
        let value = read();
        self.end();
        value
    }
}

/// The input, failing a read once it passes a bound (the parser then
/// stops with an I/O error; the meter says which bound).
struct Metered<'m> {
    inner: Box<dyn Read>,
    meter: &'m Meter,
}

impl Read for Metered<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let read = self.meter.read.get() + n as u64;
        self.meter.read.set(read);
        let trip = if read > MAX_BYTES {
            Some(Trip::Envelope)
        } else {
            match &*self.meter.item.borrow() {
                Some((at, began)) if read - began > MAX_ITEM => Some(Trip::Item(at.clone())),
                _ => None,
            }
        };
        if let Some(trip) = trip {
            *self.meter.tripped.borrow_mut() = Some(trip);
            return Err(std::io::Error::other("over the envelope's bounds"));
        }
        Ok(n)
    }
}

/// The arrays of an envelope, in the order their faults are reported.
const LISTS: [&str; 5] = ["servers", "findings", "evidence", "journals", "notes"];

/// What reading the envelope's top-level object found: the small fields
/// whole, of each array whether it was there and its first fault, and the
/// findings. Faults are kept, not returned at once, so that the one
/// reported is the one a whole-file check would report first.
struct Top<'m> {
    meter: &'m Meter,
    schema: Option<Value>,
    created_at: Option<Value>,
    /// The first unknown field, in the order of names.
    unknown: Option<String>,
    /// A field given twice.
    repeated: Option<String>,
    /// Each array that was there, with its first fault.
    lists: BTreeMap<&'static str, Option<Fault>>,
    findings: Vec<Finding>,
}

impl<'m> Top<'m> {
    fn new(meter: &'m Meter) -> Top<'m> {
        Top {
            meter,
            schema: None,
            created_at: None,
            unknown: None,
            repeated: None,
            lists: BTreeMap::new(),
            findings: Vec::new(),
        }
    }

    /// Checks item `n` of array `list` unless the array has a fault already.
    fn item(&mut self, list: &'static str, n: usize, item: &Value) {
        if self.lists.get(list).is_some_and(Option::is_some) {
            return;
        }
        let at = format!("/{list}/{n}");
        let checked = match list {
            "servers" => item
                .as_str()
                .ok_or_else(|| Fault::new(&at, "not a string"))
                .and_then(|server| name(server, &at)),
            "findings" => parse(item, &at)
                .and_then(|wire| from_wire(wire, &at))
                .map(|finding| self.findings.push(finding)),
            "evidence" => parse(item, &at).and_then(|t| evidence(t, &at)),
            "journals" => record(item, &at),
            _ => parse(item, &at).and_then(|n| note(n, &at)),
        };
        if let Err(fault) = checked {
            self.lists.insert(list, Some(fault));
        }
    }

    /// The findings, or the first fault in the order of the contract:
    /// the schema, an unknown or repeated field, `created_at`, then each
    /// array in turn.
    fn verdict(mut self) -> Checked<Vec<Finding>> {
        match &self.schema {
            Some(Value::String(s)) if s == SCHEMA => {}
            Some(other) => {
                return Err(Fault::new(
                    "/schema",
                    format!(
                        "schema is {}, expected \"{SCHEMA}\" (written by another program, or by a release this one cannot read)",
                        escape::to_json(&cut(other)).unwrap_or_default()
                    ),
                ));
            }
            None => return Err(Fault::new("/schema", "missing")),
        }
        if let Some(key) = &self.unknown {
            return Err(Fault::new(
                pointer("", key),
                format!("unknown field; an envelope holds {}", FIELDS.join(", ")),
            ));
        }
        if let Some(key) = &self.repeated {
            return Err(Fault::new(pointer("", key), "the field is given twice"));
        }
        match &self.created_at {
            Some(value) => time(value, "/created_at")?,
            None => return Err(Fault::new("/created_at", "missing")),
        }
        for list in LISTS {
            match self.lists.remove(list) {
                Some(Some(fault)) => return Err(fault),
                Some(None) => {}
                None if list == "notes" => {}
                None => return Err(Fault::new(format!("/{list}"), "missing")),
            }
        }
        Ok(self.findings)
    }
}

impl<'de> Visitor<'de> for &mut Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an envelope object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        self.meter.end();
        loop {
            let key = self
                .meter
                .within(String::new(), || map.next_key::<String>())?;
            let Some(key) = key else {
                return Ok(());
            };
            let at = pointer("", &key);
            let known = FIELDS.iter().find(|f| **f == key);
            let again = match known {
                Some(&"schema") => self.schema.is_some(),
                Some(&"created_at") => self.created_at.is_some(),
                Some(list) => self.lists.contains_key(list),
                None => false,
            };
            if again && self.repeated.is_none() {
                self.repeated = Some(key.clone());
            }
            match known {
                Some(&"schema") => self.schema = Some(self.meter.within(at, || map.next_value())?),
                Some(&"created_at") => {
                    self.created_at = Some(self.meter.within(at, || map.next_value())?);
                }
                Some(list) => map.next_value_seed(List { top: self, list })?,
                None => {
                    if self.unknown.as_ref().is_none_or(|u| key < *u) {
                        self.unknown = Some(key);
                    }
                    self.meter.within(at, || map.next_value::<IgnoredAny>())?;
                }
            }
        }
    }
}

/// One array field of the envelope, read an item at a time.
struct List<'a, 'm> {
    top: &'a mut Top<'m>,
    list: &'static str,
}

impl List<'_, '_> {
    /// The value is there and is not an array.
    fn not_an_array<E>(self) -> std::result::Result<(), E> {
        self.top.meter.end();
        let fault = Fault::new(format!("/{}", self.list), "not an array");
        self.top.lists.insert(self.list, Some(fault));
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for List<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        // Until it shows itself an array, the whole value is one item.
        self.top.meter.begin(format!("/{}", self.list));
        self.top.lists.entry(self.list).or_insert(None);
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for List<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> std::result::Result<(), S::Error> {
        let (top, list) = (self.top, self.list);
        top.meter.end();
        for n in 0.. {
            let at = format!("/{list}/{n}");
            let Some(item) = top.meter.within(at, || seq.next_element::<Value>())? else {
                break;
            };
            top.item(list, n, &item);
        }
        Ok(())
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> std::result::Result<(), M::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        self.not_an_array()
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
        self.not_an_array()
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
        self.not_an_array()
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
        self.not_an_array()
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
        self.not_an_array()
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
        self.not_an_array()
    }

    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        self.not_an_array()
    }
}

/// A long value cut for a message.
fn cut(value: &Value) -> Value {
    match value {
        Value::String(s) if s.len() > 64 => {
            Value::String(format!("{}…", crate::sanitize::truncate(s, 64)))
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.clone(),
        Value::Array(_) => Value::String("an array".into()),
        Value::Object(_) => Value::String("an object".into()),
    }
}

/// The pointer of `key` inside the value at `at` (RFC 6901 escapes).
fn pointer(at: &str, key: &str) -> String {
    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Deserializes the item at `at`; a fault points into it where serde
/// says, and at the field itself for an unknown field.
fn parse<'v, T: Deserialize<'v>>(item: &'v Value, at: &str) -> Checked<T> {
    serde_path_to_error::deserialize(item).map_err(|e| {
        let mut here = at.to_owned();
        let mut inner = item;
        for segment in e.path().iter() {
            use serde_path_to_error::Segment;
            match segment {
                Segment::Seq { index } => {
                    here = format!("{here}/{index}");
                    inner = &inner[*index];
                }
                Segment::Map { key } | Segment::Enum { variant: key } => {
                    here = pointer(&here, key);
                    inner = &inner[key.as_str()];
                }
                Segment::Unknown => {}
            }
        }
        let text = e.into_inner().to_string();
        // serde names an unknown field in its message; point at it instead.
        if let Some(key) = inner.as_object().and_then(|m| {
            m.keys()
                .find(|k| text.starts_with(&format!("unknown field `{k}`")))
        }) {
            return Fault::new(pointer(&here, key), "unknown field");
        }
        Fault::new(here, terminal(&text).into_owned())
    })
}

fn name(value: &str, at: &str) -> Checked<()> {
    match name_fault(value) {
        None => Ok(()),
        Some(why) => Err(Fault::new(at, why)),
    }
}

fn time(value: &Value, at: &str) -> Checked<()> {
    match value.as_str().map(shared::time::parse) {
        Some(Some(_)) => Ok(()),
        _ => Err(Fault::new(at, "not an RFC 3339 time stamp")),
    }
}

fn fraction(value: f64, at: String) -> Checked<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(Fault::new(at, format!("{value} is outside [0, 1]")))
    }
}

/// The type names an argument shape may hold in place of a value.
const SHAPE_TYPES: [&str; 7] = [
    "string", "integer", "number", "boolean", "null", "object", "array",
];

/// An argument shape: type names where values were, arrays of at most one
/// element, keys that are names (control and bidirectional characters
/// refused) of at most 128 bytes.
fn shape(value: &Value, at: &str) -> Checked<()> {
    match value {
        Value::String(s) if SHAPE_TYPES.contains(&s.as_str()) => Ok(()),
        Value::Array(items) if items.len() <= 1 => items
            .iter()
            .enumerate()
            .try_for_each(|(n, v)| shape(v, &format!("{at}/{n}"))),
        Value::Array(_) => Err(Fault::new(
            at,
            "an array shape holds the shape of its first element only",
        )),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            let here = pointer(at, k);
            if !k.is_empty() {
                name(k, &here)?;
            }
            shape(v, &here)
        }),
        _ => Err(Fault::new(
            at,
            format!(
                "a shape holds JSON type names ({}), never a value",
                SHAPE_TYPES.join(", ")
            ),
        )),
    }
}

/// Why `text`, a finding's argument shapes as `index.db` keeps them (a JSON
/// array), is not what capture writes, by the checks a share file's
/// `args_shapes` get; `None` when it is. The words hold no untrusted
/// character raw, and at most 64 of the text's: the team store reads its
/// database's findings with this.
pub fn args_shapes_fault(text: &str) -> Option<String> {
    let Ok(Value::Array(shapes)) = serde_json::from_str::<Value>(text) else {
        return Some("not a JSON array of argument shapes".to_owned());
    };
    let fault = shapes
        .iter()
        .enumerate()
        .find_map(|(n, s)| shape(s, &format!("/{n}")).err())?;
    let at = terminal(&fault.at);
    let cut = crate::sanitize::truncate(&at, 64);
    let more = if cut.len() < at.len() { "…" } else { "" };
    Some(format!("{cut}{more}: {}", fault.why))
}

fn from_wire(w: Wire, at: &str) -> Checked<Finding> {
    let here = |field: &str| format!("{at}/{field}");
    let Ok(id) = FindingId::parse(&w.id) else {
        return Err(Fault::new(
            here("id"),
            "not \"finding-\" and 16 lower-case hex digits",
        ));
    };
    let unknown = |field: &str, what: &str, value: &str| {
        Fault::new(here(field), format!("unknown {what} {}", quoted(value)))
    };
    let kind = Kind::parse(&w.kind).ok_or_else(|| unknown("kind", "kind", &w.kind))?;
    let class = DefectClass::parse(&w.defect_class)
        .ok_or_else(|| unknown("defect_class", "defect class", &w.defect_class))?;
    let severity =
        Severity::parse(&w.severity).ok_or_else(|| unknown("severity", "severity", &w.severity))?;
    let state = State::parse(&w.state).ok_or_else(|| unknown("state", "state", &w.state))?;
    name(&w.server, &here("server"))?;
    name(&w.tool, &here("tool"))?;
    match (&w.contract, kind) {
        (None, Kind::Contract) => {
            return Err(Fault::new(
                here("contract"),
                "missing for a contract finding",
            ));
        }
        (Some(_), kind) if kind != Kind::Contract => {
            return Err(Fault::new(
                here("contract"),
                "given for a finding that is no contract finding",
            ));
        }
        (Some(v), _) => {
            let record = shared::record::Contract {
                kept: false,
                at: Some(v.at.as_str().into()),
                keyword: Some(v.keyword.as_str().into()),
            };
            if record.validate().is_err()
                || v.at
                    .split('/')
                    .skip(1)
                    .any(|token| name_fault(token).is_some())
            {
                return Err(Fault::new(
                    here("contract"),
                    "not a JSON Pointer of names and a schema keyword",
                ));
            }
        }
        (None, _) => {}
    }
    fraction(w.score, here("score"))?;
    fraction(w.failure_rate, here("failure_rate"))?;
    fraction(w.wilson_lower, here("wilson_lower"))?;
    if w.failures > w.calls {
        return Err(Fault::new(
            here("failures"),
            format!("{} failures of {} calls", w.failures, w.calls),
        ));
    }
    if !(w.median_window_turns.is_finite() && w.median_window_turns >= 0.0) {
        return Err(Fault::new(
            here("median_window_turns"),
            format!("{} is not a number of turns", w.median_window_turns),
        ));
    }
    for field in ["first_seen", "last_seen"] {
        let value = if field == "first_seen" {
            &w.first_seen
        } else {
            &w.last_seen
        };
        if shared::time::parse(value).is_none() {
            return Err(Fault::new(here(field), "not an RFC 3339 time stamp"));
        }
    }
    for (n, s) in w.args_shapes.iter().enumerate() {
        shape(s, &format!("{at}/args_shapes/{n}"))?;
    }
    Ok(Finding {
        derived: Derived {
            id,
            kind,
            server: w.server,
            tool: w.tool,
            template_id: None,
            defect_class: class,
            fix_hint: shared::finding::fix_hint(class, w.contract.as_ref()),
            score: w.score,
            failures: w.failures,
            calls: w.calls,
            failure_rate: w.failure_rate,
            wilson_lower: w.wilson_lower,
            sessions: w.sessions,
            first_seen: w.first_seen,
            last_seen: w.last_seen,
            median_window_turns: w.median_window_turns,
            blast_radius: w.blast_radius,
            err_code: w.err_code,
            err_codes: w.err_codes,
            retryable: w.retryable,
            args_shapes: w.args_shapes,
            contract: w.contract,
        },
        severity,
        state,
        streak: w.streak,
        probe_attached: w.probe_attached,
        reopened: w.reopened,
        witnessed: w.witnessed,
    })
}

fn evidence(t: ToolEvidence, at: &str) -> Checked<()> {
    let here = |field: &str| format!("{at}/{field}");
    name(&t.server, &here("server"))?;
    name(&t.tool, &here("tool"))?;
    let counted = [t.ok, t.errors, t.malformed, t.unanswered]
        .iter()
        .try_fold(0u64, |sum, n| sum.checked_add(*n));
    if counted != Some(t.calls) {
        return Err(Fault::new(
            here("calls"),
            format!(
                "{} calls, but ok, errors, malformed and unanswered do not add up to it",
                t.calls
            ),
        ));
    }
    fraction(t.failure_rate, here("failure_rate"))?;
    time(&Value::String(t.first_call), &here("first_call"))?;
    time(&Value::String(t.last_call), &here("last_call"))?;
    for key in t.err_codes.keys() {
        if key.parse::<i64>().is_err() {
            return Err(Fault::new(
                pointer(&here("err_codes"), key),
                "an error code key is a decimal integer",
            ));
        }
    }
    Ok(())
}

/// A journal record of either schema, checked as `index` checks a line,
/// and its names and argument shape as capture writes them.
fn record(item: &Value, at: &str) -> Checked<()> {
    let schema = item.get("schema").and_then(Value::as_str);
    let (server, tool, shape_of) = match schema {
        Some(SCHEMA_V1) => {
            let call: Call<'_> = parse(item, at)?;
            call.validate()
                .map_err(|why| Fault::new(at, terminal(&why.to_string()).into_owned()))?;
            (
                call.server.into_owned(),
                call.tool.into_owned(),
                call.args_shape,
            )
        }
        Some(SCHEMA_V0) => {
            let call: LegacyCall = parse(item, at)?;
            call.validate()
                .map_err(|why| Fault::new(at, terminal(&why.to_string()).into_owned()))?;
            (call.server, call.tool, call.args_shape)
        }
        _ => {
            return Err(Fault::new(
                format!("{at}/schema"),
                format!("not a journal record: schema must be \"{SCHEMA_V1}\" or \"{SCHEMA_V0}\""),
            ));
        }
    };
    name(&server, &format!("{at}/server"))?;
    name(&tool, &format!("{at}/tool"))?;
    shape(&shape_of, &format!("{at}/args_shape"))
}

fn note(n: Note, at: &str) -> Checked<()> {
    let here = |field: &str| format!("{at}/{field}");
    if crate::lifecycle::Kind::parse(&n.kind).is_none() {
        return Err(Fault::new(
            here("kind"),
            format!("unknown annotation kind {}", quoted(&n.kind)),
        ));
    }
    time(&Value::String(n.created_at), &here("created_at"))?;
    crate::lifecycle::check_note(&n.note).map_err(|why| Fault::new(here("note"), why.message()))?;
    match (&n.event_id, &n.session, n.seq) {
        (Some(id), None, None) => crate::lifecycle::Target::event_id(id)
            .map(drop)
            .map_err(|_| Fault::new(here("event_id"), "not a UUID")),
        (None, Some(session), Some(seq)) => crate::lifecycle::Target::coordinates(session, seq)
            .map(drop)
            .map_err(|_| {
                Fault::new(
                    here("session"),
                    "not \"s-\" and 16 lower-case hex digits with a seq of 1 or more",
                )
            }),
        _ => Err(Fault::new(
            at,
            "a note names its call by event_id alone, or by session and seq",
        )),
    }
}
