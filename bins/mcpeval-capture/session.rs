//! Observing one MCP session: pairing each `tools/call` with its response.
//!
//! Fed every JSON-RPC message the relay saw, in the order it saw them, this
//! turns completed calls into `mcpeval.call/1` records. A message is read
//! where it lies ([`store::raw`]): only the members a record needs are
//! looked at, and the rare messages that need more (a `tools/list`
//! result) are parsed whole. It only observes:
//! it never changes, delays or answers a message, and a message it cannot
//! parse is counted, never fatal. It keeps shapes, clean names and salted
//! ids only: names pass through `escape::clean_name`, and each call's
//! arguments are shaped against the tool's schema from the last
//! `tools/list`, so keys that are data are folded.
//!
//! What a session holds is bounded whatever the peers send ([`limits`]):
//! a message that would cost too much to parse is not parsed, the oldest
//! unanswered calls are recorded as unanswered beyond a count or a size,
//! request ids and tool names are kept at a fixed size, and declared
//! schemas past a budget are forgotten (their tools judged by the
//! field-name rule). Each such choice is counted in [`Bounded`].
//!
//! Each listed tool's `outputSchema` is compiled once per `tools/list` (a
//! schema listed again unchanged is not compiled again), and every `ok`
//! result of that tool is checked against it as the reference clients
//! check it ([`store::output_schema`]): the record's `contract` says
//! whether it kept the schema, and where it first broke it. A schema too
//! costly to check, or past the session's budget, is skipped and counted.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Instant;

use jiff::Timestamp;
use serde_json::Value;
use shared::error::Error;
use shared::escape;
use shared::record::{Call, CallError, Contract, Identity, Origin, SCHEMA_V1, Transport};
use shared::time;
use store::ids::EventIdText;
use store::journal::Writer;
use store::outcome::{self, Classified};
use store::output_schema::OutputSchema;
use store::raw;
use store::salt::Salt;
use store::sanitize::{Declared, ShapeText, Shapes, Templates};

// `super`, not `crate`: the fuzz targets compile this file, `limits` and
// `recent` from their sources as siblings in a module of their own.
use super::limits::{
    MAX_ADVERTISED_TOOLS, MAX_DECLARED_BYTES, MAX_OUTPUT_SCHEMA_BYTES, MAX_PENDING_BYTES,
    MAX_PENDING_CALLS, MAX_PENDING_REQUESTS, PARSE_BUDGET,
};
use super::recent::Recent;

/// The `_meta` key under which modern servers name themselves.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// Which side sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// A `tools/call` request waiting for its response.
#[derive(Debug)]
struct Pending {
    tool: Arc<str>,
    seq: u64,
    started_at: Timestamp,
    started: Instant,
    /// The arguments' shape as JSON text ([`shape_text`]).
    args_shape: ShapeText,
    advertised: Option<bool>,
    /// The tool's `outputSchema`, to check an `ok` result against. Weak:
    /// what schemas hold is bounded by the lists that declare them, not by
    /// calls waiting; a schema a later list dropped leaves its result
    /// unchecked.
    output: Option<Weak<OutputSchema>>,
    /// What it holds, as [`Session::bytes`] counts it.
    bytes: usize,
}

/// What a session gave up to stay within its bounds, for the warnings at
/// exit.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Bounded {
    /// Messages not parsed because parsing them would pass
    /// [`PARSE_BUDGET`].
    pub costly: u64,
    /// Calls recorded as unanswered before their session ended, to keep
    /// within [`MAX_PENDING_CALLS`] and [`MAX_PENDING_BYTES`].
    pub evicted_calls: u64,
    /// Tools kept without their declared schema, past
    /// [`MAX_DECLARED_BYTES`].
    pub schemaless: u64,
    /// `tools/list` results with more tools than [`MAX_ADVERTISED_TOOLS`].
    pub long_lists: u64,
    /// Declared `outputSchema`s not checked: too costly, not a schema
    /// checked offline, or past [`MAX_OUTPUT_SCHEMA_BYTES`].
    pub unchecked_schemas: u64,
    /// `ok` results of a tool with a checked schema whose
    /// `structuredContent` could not be read to be checked.
    pub unchecked_results: u64,
}

impl Bounded {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Bounded) {
        self.costly += other.costly;
        self.evicted_calls += other.evicted_calls;
        self.schemaless += other.schemaless;
        self.long_lists += other.long_lists;
        self.unchecked_schemas += other.unchecked_schemas;
        self.unchecked_results += other.unchecked_results;
    }
}

/// A tool's name as a key: a digest, so that a name of megabytes costs
/// no more to remember than a short one.
type ToolKey = [u8; 16];

/// The longest tool name a session remembers with its key (see
/// [`Session::tool_key`]): what it keeps stays small whatever a client
/// sends.
const MAX_REMEMBERED_TOOL: usize = 64;

fn tool_key(name: &str) -> ToolKey {
    let digest = store::hash::sha256(name.as_bytes());
    digest[..16].try_into().expect("16 bytes")
}

/// What a listed tool declared: the keys of its `inputSchema` (`None`
/// when it had none, or when keeping them would pass
/// [`MAX_DECLARED_BYTES`]) and its compiled `outputSchema`.
#[derive(Debug, Default)]
struct Listed {
    declared: Option<Declared>,
    output: Option<Arc<OutputSchema>>,
}

/// A schema's text as a key: a digest, as for tool names.
type SchemaKey = [u8; 16];

/// The tools of the last `tools/list` (all pages), with what each
/// declared.
#[derive(Debug)]
struct Advertised {
    /// Looked up on every call: hashed with foldhash, seeded at random
    /// per map as in [`Recent`], not SipHash.
    tools: HashMap<ToolKey, Listed, foldhash::fast::RandomState>,
    /// Every tool listed is in `tools` (false past [`MAX_ADVERTISED_TOOLS`]).
    complete: bool,
    /// What is left of [`MAX_DECLARED_BYTES`].
    declared_left: usize,
    /// The output schemas compiled for this list, by their text.
    compiled: HashMap<SchemaKey, Arc<OutputSchema>>,
    /// Those of the list before, taken over when listed again unchanged.
    earlier: HashMap<SchemaKey, Arc<OutputSchema>>,
    /// What is left of [`MAX_OUTPUT_SCHEMA_BYTES`].
    outputs_left: usize,
}

/// What one advertised tool costs besides its schemas: the key, the slot
/// and the map's share.
const TOOL_BYTES: usize = 16 + std::mem::size_of::<Listed>() + 32;

impl Advertised {
    /// A list that takes over the compiled schemas of `earlier`.
    fn new(earlier: Option<Advertised>) -> Advertised {
        Advertised {
            tools: HashMap::default(),
            complete: true,
            declared_left: MAX_DECLARED_BYTES,
            compiled: HashMap::new(),
            earlier: earlier.map(|e| e.compiled).unwrap_or_default(),
            outputs_left: MAX_OUTPUT_SCHEMA_BYTES,
        }
    }

    /// Adds a listed tool; a name listed twice keeps its first schemas.
    fn add(
        &mut self,
        name: &str,
        input: Option<&Value>,
        output: Option<&Value>,
        bounded: &mut Bounded,
    ) {
        let key = tool_key(name);
        if self.tools.contains_key(&key) {
            return;
        }
        if self.tools.len() >= MAX_ADVERTISED_TOOLS {
            if std::mem::replace(&mut self.complete, false) {
                bounded.long_lists += 1;
            }
            return;
        }
        let declared = input.and_then(|schema| {
            let declared = Declared::from_schema_within(schema, &mut self.declared_left);
            bounded.schemaless += u64::from(declared.is_none());
            declared
        });
        let output = output.and_then(|schema| {
            let compiled = self.output(schema);
            bounded.unchecked_schemas += u64::from(compiled.is_none());
            compiled
        });
        self.tools.insert(key, Listed { declared, output });
    }

    /// `schema` compiled, or taken over from this list or the one before;
    /// `None` when it is not checked.
    fn output(&mut self, schema: &Value) -> Option<Arc<OutputSchema>> {
        let text = serde_json::to_vec(schema).ok()?;
        let key: SchemaKey = store::hash::sha256(&text)[..16]
            .try_into()
            .expect("16 bytes");
        if let Some(known) = self.compiled.get(&key) {
            return Some(known.clone());
        }
        let compiled = match self.earlier.remove(&key) {
            Some(known) => known,
            // Past the session's budget it is not even compiled.
            None => Arc::new(OutputSchema::compile_within(schema, self.outputs_left).ok()?),
        };
        self.outputs_left = self.outputs_left.checked_sub(compiled.bytes())?;
        self.compiled.insert(key, compiled.clone());
        Some(compiled)
    }

    /// Whether `name` was listed (`None`: unknown, as the list was cut),
    /// and what it declared.
    fn lookup(&self, key: &ToolKey) -> (Option<bool>, Option<&Listed>) {
        match self.tools.get(key) {
            Some(listed) => (Some(true), Some(listed)),
            None => (self.complete.then_some(false), None),
        }
    }

    fn bytes(&self) -> usize {
        let earlier: usize = self.earlier.values().map(|s| s.bytes()).sum();
        self.tools.len() * TOOL_BYTES
            + (MAX_DECLARED_BYTES - self.declared_left)
            + (MAX_OUTPUT_SCHEMA_BYTES - self.outputs_left)
            + earlier
    }
}

/// A completed call, as the observer hands it over to be journaled:
/// [`Done::call`] is its record. The session's token and server name are
/// shared with the session, not copied, and the event id is held at its
/// fixed size: a record of owned texts cost an allocation and a free for
/// each of them, on every call.
#[derive(Debug)]
pub struct Done {
    session: Arc<str>,
    server: Arc<str>,
    event_id: EventIdText,
    transport: Transport,
    seq: u64,
    tool: Arc<str>,
    started_at: Started,
    duration_ms: Option<u64>,
    advertised: Option<bool>,
    /// The arguments' shape, JSON text as it was written.
    args_shape: ShapeText,
    classified: Classified,
    contract: Option<Contract<'static>>,
}

impl Done {
    /// The `mcpeval.call/1` record of the call, borrowing its texts.
    pub fn call(&self) -> Call<'_, &ShapeText> {
        let error = self.classified.error.as_ref().map(|e| CallError {
            channel: e.channel,
            code: e.code,
            template_id: e.template_id.as_deref().map(Cow::Borrowed),
            retryable: e.retryable,
        });
        let contract = self.contract.as_ref().map(|c| Contract {
            kept: c.kept,
            at: c.at.as_deref().map(Cow::Borrowed),
            keyword: c.keyword.as_deref().map(Cow::Borrowed),
        });
        Call {
            schema: SCHEMA_V1.into(),
            identity: Identity {
                event_id: Cow::Borrowed(self.event_id.as_str()),
                session: Cow::Borrowed(&self.session),
                seq: self.seq,
            },
            origin: Origin::Capture,
            transport: self.transport,
            server: Cow::Borrowed(&self.server),
            tool: Cow::Borrowed(&self.tool),
            started_at: Cow::Borrowed(self.started_at.as_str()),
            duration_ms: self.duration_ms,
            advertised: self.advertised,
            args_shape: &self.args_shape,
            outcome: self.classified.outcome,
            unknown: self.classified.unknown,
            error,
            contract,
        }
    }
}

/// When a call started, as its record writes it: a stamp at its fixed
/// size, or the text of one outside the years 0 to 9999.
#[derive(Debug)]
enum Started {
    Fixed([u8; time::RFC3339_LEN]),
    Text(String),
}

impl Started {
    fn as_str(&self) -> &str {
        match self {
            Started::Fixed(stamp) => raw::utf8(stamp).expect("ASCII digits and separators"),
            Started::Text(text) => text,
        }
    }
}

/// Appends the records of `done` to the journal together
/// ([`Writer::append_all`]): how many were appended, and the failure that
/// stopped the rest.
pub fn append(writer: &mut Writer, done: &[Done]) -> (usize, Option<Error>) {
    writer.append_all(done.iter().map(Done::call))
}

/// The members of a JSON-RPC message the observer reads.
const MESSAGE: [&str; 5] = ["id", "method", "params", "result", "error"];

/// Where `params` and `result` are in [`MESSAGE`]: of a client's message
/// the observer reads the members of `params` (a request's), of a
/// server's those of `result` (a response's).
const PARAMS: usize = 2;
const RESULT: usize = 3;

/// Where `arguments` is in [`WITHIN`]: its members are listed as a
/// request is read.
const ARGUMENTS: usize = 1;

/// The members of a message's `params` (the first three) and `result` (the
/// rest) the observer reads, found as the message is read.
const WITHIN: [&str; 8] = [
    "name",
    "arguments",
    "cursor",
    "_meta",
    "serverInfo",
    "tools",
    "isError",
    "structuredContent",
];

/// The observer of one session.
#[derive(Debug)]
pub struct Session {
    salt: Salt,
    /// The session token, shared by its records.
    token: Arc<str>,
    transport: Transport,
    /// `--server`, which wins over anything the server says.
    fixed_server: Option<String>,
    /// `serverInfo.name` as the server last reported it.
    reported_server: Option<String>,
    fallback_server: String,
    /// The server's name for records: `fixed_server`, else
    /// `reported_server`, else `fallback_server`; shared by the records.
    server: Arc<str>,
    seq: u64,
    /// Unanswered calls by request id, oldest first.
    calls: Recent<Id, Pending>,
    /// What `calls` holds, in bytes.
    pending_bytes: usize,
    /// Pending `tools/list` requests: id → whether it asked for a later page.
    lists: Recent<Id, bool>,
    /// Pending `initialize` / `server/discover` requests.
    handshakes: Recent<Id, ()>,
    /// The tools of the last `tools/list`; `None` until a list is seen.
    advertised: Option<Advertised>,
    /// Messages that were not JSON-RPC we could read.
    pub unparsed: u64,
    /// What was given up to stay within bounds.
    pub bounded: Bounded,
    event_ids: store::ids::EventIds,
    /// Start times as records write them.
    stamper: time::Stamper,
    /// The template ids of error messages seen lately.
    templates: Templates,
    /// The name of the tool last called (when short) and its key: a
    /// session calls the same tool over and over, and its name need not be
    /// digested each time.
    last_tool: (String, ToolKey),
    /// The name of the tool last called (when short) and its clean name,
    /// shared by its calls.
    last_clean: (String, Arc<str>),
    /// The shapes of arguments lately sent, by the keys their tools
    /// declared: forgotten when a list changes what tools declare.
    shapes: Shapes,
}

/// What a session costs before it holds anything: itself, its buffer of
/// random bytes and its maps, and the places each map's queue may leave
/// behind beyond one per entry ([`super::recent::SLACK`]).
const SESSION_BYTES: usize =
    std::mem::size_of::<Session>() + 4096 + 512 + 3 * super::recent::SLACK * LEFT_BYTES;

/// What a pending `tools/list` or handshake costs: its id and the slots.
const REQUEST_BYTES: usize = MAX_ID_KEY + ID_BYTES + 128;

/// A place in a map's queue: a tick and an [`Id`].
const PLACE_BYTES: usize = std::mem::size_of::<(u64, Id)>();

/// What a place left behind in a queue may cost: itself, and the text and
/// count of an id it keeps alive after its entry is gone.
const LEFT_BYTES: usize = PLACE_BYTES + 16 + MAX_ID_KEY;

/// What an [`Id`] costs besides its text: the count beside it, its
/// entry's pointer, its own place in the queue, and one place left behind
/// (a queue holds at most one per entry, beyond [`super::recent::SLACK`]).
const ID_BYTES: usize = 16 + std::mem::size_of::<Id>() + PLACE_BYTES + LEFT_BYTES;

/// What an unanswered call costs besides its id, tool name and shape.
const PENDING_BYTES: usize = std::mem::size_of::<Pending>() + 128;

impl Session {
    /// A new session with a fresh, salted session token.
    pub fn new(
        salt: Salt,
        transport: Transport,
        fixed_server: Option<String>,
        fallback_server: String,
    ) -> Session {
        let capture_id = uuid::Uuid::new_v4();
        let token = store::ids::session_token(&salt, capture_id.as_bytes());
        let mut session = Session {
            salt,
            token: Arc::from(token.as_str()),
            transport,
            fixed_server: fixed_server
                .as_deref()
                .map(|s| escape::clean_name(s).into_owned()),
            reported_server: None,
            fallback_server: escape::clean_name(&fallback_server).into_owned(),
            server: Arc::from(""),
            seq: 0,
            // A stdio capture is one session: the room of its unanswered
            // calls (at most MAX_PENDING_CALLS) is kept as they come and
            // go. On HTTP, sessions are many, and each gives room back.
            calls: match transport {
                Transport::Stdio => Recent::keeping_room(MAX_PENDING_CALLS),
                Transport::Http => Recent::new(MAX_PENDING_CALLS),
            },
            pending_bytes: 0,
            lists: Recent::new(MAX_PENDING_REQUESTS),
            handshakes: Recent::new(MAX_PENDING_REQUESTS),
            advertised: None,
            unparsed: 0,
            bounded: Bounded::default(),
            event_ids: store::ids::EventIds::new(),
            stamper: time::Stamper::default(),
            templates: Templates::default(),
            last_tool: (String::new(), tool_key("")),
            last_clean: (String::new(), Arc::from("")),
            shapes: Shapes::default(),
        };
        session.server = Arc::from(session.server_name());
        session
    }

    /// [`tool_key`] of `name`, remembered for the next call when short.
    fn tool_key(&mut self, name: &str) -> ToolKey {
        if self.last_tool.0 != name {
            let key = tool_key(name);
            if name.len() <= MAX_REMEMBERED_TOOL {
                self.last_tool.0.clear();
                self.last_tool.0.push_str(name);
                self.last_tool.1 = key;
            }
            return key;
        }
        self.last_tool.1
    }

    /// [`escape::clean_name`] of a tool's `name`, shared with the last
    /// call when it called the same tool.
    fn clean_tool(&mut self, name: &str) -> Arc<str> {
        if self.last_clean.0 != name {
            let clean = Arc::from(escape::clean_name(name));
            if name.len() <= MAX_REMEMBERED_TOOL {
                self.last_clean.0.clear();
                self.last_clean.0.push_str(name);
                self.last_clean.1 = Arc::clone(&clean);
            }
            return clean;
        }
        Arc::clone(&self.last_clean.1)
    }

    /// An estimate of the memory this session holds, in bytes: what the
    /// HTTP observer weighs sessions by.
    pub fn bytes(&self) -> usize {
        SESSION_BYTES
            + self.pending_bytes
            + self.advertised.as_ref().map_or(0, Advertised::bytes)
            + (self.lists.len() + self.handshakes.len()) * REQUEST_BYTES
            + self.shapes.bytes()
    }

    /// Observes one message (a line on stdio, a body or SSE event on HTTP)
    /// and returns the records it completed.
    pub fn observe(&mut self, side: Side, bytes: &[u8], at: Timestamp, now: Instant) -> Vec<Done> {
        let mut done = Vec::new();
        self.observe_into(side, bytes, at, now, &mut done);
        done
    }

    /// [`Session::observe`], adding the records to `done`: the stdio
    /// observer gathers them in one vector, not one per message.
    pub fn observe_into(
        &mut self,
        side: Side,
        bytes: &[u8],
        at: Timestamp,
        now: Instant,
        done: &mut Vec<Done>,
    ) {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if too_costly(bytes) {
            self.bounded.costly += 1;
            return;
        }
        // Text that is not UTF-8 is no JSON.
        let Some(text) = raw::utf8(bytes) else {
            self.unparsed += 1;
            return;
        };
        if json_start(text) == Some(b'[') {
            match raw::elements(text) {
                Some(batch) => {
                    for message in batch {
                        self.message(side, message, at, now, done);
                    }
                }
                None => self.unparsed += 1,
            }
        } else {
            self.message(side, text, at, now, done);
        }
    }

    /// Forgets the requests in `bytes` (one message or a batch) that were
    /// observed but never reached the server, as if never seen. A call
    /// numbered last gives its seq back.
    pub fn retract(&mut self, bytes: &[u8]) {
        if too_costly(bytes) {
            // Never observed, so nothing to forget.
            return;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let messages: Vec<&str> = match json_start(text) {
            Some(b'[') => match raw::elements(text) {
                Some(batch) => batch,
                None => return,
            },
            _ => vec![text],
        };
        let mut ids: Vec<Id> = messages
            .into_iter()
            .filter_map(|m| raw::object(m, ["method", "id"]))
            .filter(|[method, _]| method.is_some())
            .filter_map(|[_, id]| id.filter(|id| !raw::is_null(id)))
            .map(|id| Id::from(id_key(id).as_ref()))
            .collect();
        // Latest first, so a batch gives back all of its seqs.
        ids.sort_by_key(|id| std::cmp::Reverse(self.calls.get(id).map(|p| p.seq)));
        for id in ids {
            if let Some(pending) = self.take_call(&id)
                && pending.seq == self.seq
            {
                self.seq -= 1;
            }
            self.lists.remove(&id);
            self.handshakes.remove(&id);
        }
    }

    /// Ends the session: every call still waiting is recorded unanswered,
    /// in the order they were made.
    pub fn finish(&mut self) -> Vec<Done> {
        let mut done = Vec::with_capacity(self.calls.len());
        while let Some((_, pending)) = self.calls.pop_oldest() {
            self.pending_bytes -= pending.bytes;
            done.push(self.record(pending, None, Classified::unanswered(), None));
        }
        self.shapes.clear();
        done
    }

    /// Takes `id`'s unanswered call out, if any.
    fn take_call(&mut self, id: &str) -> Option<Pending> {
        let pending = self.calls.remove(id)?;
        self.pending_bytes -= pending.bytes;
        Some(pending)
    }

    /// Tracks a new unanswered call; the oldest ones beyond
    /// [`MAX_PENDING_CALLS`] or [`MAX_PENDING_BYTES`] are recorded as
    /// unanswered, as at the session's end.
    fn track(&mut self, id: Id, pending: Pending, done: &mut Vec<Done>) {
        self.pending_bytes += pending.bytes;
        let (replaced, mut evicted) = self.calls.replace(id, pending);
        // A client reusing a pending id has abandoned the first call.
        if let Some(old) = replaced {
            self.pending_bytes -= old.bytes;
            done.push(self.record(old, None, Classified::unanswered(), None));
        }
        loop {
            if let Some((_, oldest)) = evicted {
                self.pending_bytes -= oldest.bytes;
                self.bounded.evicted_calls += 1;
                done.push(self.record(oldest, None, Classified::unanswered(), None));
            }
            if self.pending_bytes <= MAX_PENDING_BYTES || self.calls.len() <= 1 {
                break;
            }
            evicted = self.calls.pop_oldest();
        }
    }

    /// Observes one message, `text` (one JSON value, unparsed).
    fn message(
        &mut self,
        side: Side,
        text: &str,
        at: Timestamp,
        now: Instant,
        done: &mut Vec<Done>,
    ) {
        // A request's arguments are listed as it is read, to be shaped.
        let (within, listed) = match side {
            Side::Client => (PARAMS, Some(ARGUMENTS)),
            Side::Server => (RESULT, None),
        };
        let Some(([id, method, _, result, error], inner, arguments)) =
            raw::object_within(text, MESSAGE, within, WITHIN, listed)
        else {
            self.unparsed += 1;
            return;
        };
        let id = id.filter(|id| !raw::is_null(id)).map(id_key);
        match (side, method.and_then(raw::string), id) {
            (Side::Client, Some(method), Some(id)) => {
                let params = (inner, arguments);
                self.request(&method, Id::from(id.as_ref()), params, at, now, done)
            }
            // A response's id is only looked up: it is not copied.
            (Side::Server, None, Some(id)) => self.response(&id, (result, inner), error, now, done),
            // Notifications, server→client requests and the client's answers
            // to them carry nothing we record.
            _ => {}
        }
    }

    fn request(
        &mut self,
        method: &str,
        id: Id,
        (params, members): (raw::Found<'_, 8>, raw::Entries<'_>),
        at: Timestamp,
        now: Instant,
        done: &mut Vec<Done>,
    ) {
        match method {
            "tools/call" => {
                // A call needs a tool name; an empty one would make a record
                // the index refuses, stopping it for the whole store.
                let [name, arguments, ..] = params;
                let Some(tool) = name.and_then(raw::string).filter(|name| !name.is_empty()) else {
                    self.unparsed += 1;
                    return;
                };
                self.seq += 1;
                let key = self.advertised.is_some().then(|| self.tool_key(&tool));
                let (advertised, listed) = match (&self.advertised, key) {
                    (Some(tools), Some(key)) => tools.lookup(&key),
                    _ => (None, None),
                };
                let declared = listed.and_then(|l| l.declared.as_ref());
                let output = listed.and_then(|l| l.output.as_ref()).map(Arc::downgrade);
                let arguments = arguments.unwrap_or("{}");
                let args_shape =
                    shape_text(self.shapes.shape(arguments, members, declared.zip(key)));
                let tool = self.clean_tool(&tool);
                let bytes = PENDING_BYTES + id.len() + ID_BYTES + tool.len() + args_shape.bytes();
                let pending = Pending {
                    tool,
                    seq: self.seq,
                    started_at: at,
                    started: now,
                    args_shape,
                    advertised,
                    output,
                    bytes,
                };
                self.track(id, pending, done);
            }
            "tools/list" => {
                let [_, _, cursor, ..] = params;
                let continued = cursor.is_some_and(|c| !raw::is_null(c));
                self.lists.insert(id, continued);
            }
            "initialize" | "server/discover" => {
                self.handshakes.insert(id, ());
            }
            _ => {}
        }
    }

    /// Observes a response, its `result` (and the members of it in
    /// [`WITHIN`]) and `error`.
    fn response(
        &mut self,
        id: &str,
        (result, in_result): (Option<&str>, raw::Found<'_, 8>),
        error: Option<&str>,
        now: Instant,
        done: &mut Vec<Done>,
    ) {
        let [_, _, _, meta, info, tools, is_error, structured] = in_result;
        if let Some(name) = meta
            .and_then(|m| raw::members(m, [SERVER_INFO_META]))
            .and_then(|[info]| info)
            .and_then(name_of)
        {
            self.report_server(&name);
        }
        if self.handshakes.remove(id).is_some()
            && let Some(name) = info.and_then(name_of)
        {
            self.report_server(&name);
        }
        if let Some(continued) = self.lists.remove(id)
            && let Some(tools) = tools.and_then(|t| serde_json::from_str::<Vec<Value>>(t).ok())
        {
            self.shapes.clear();
            let known = match (&mut self.advertised, continued) {
                (Some(known), true) => known,
                (slot, _) => {
                    let earlier = slot.take();
                    slot.insert(Advertised::new(earlier))
                }
            };
            for tool in &tools {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let input = tool.get("inputSchema").filter(|s| s.is_object());
                let output = tool.get("outputSchema").filter(|s| s.is_object());
                known.add(name, input, output, &mut self.bounded);
            }
        }
        if let Some(pending) = self.take_call(id) {
            // Most results are plain successes, told from the members
            // already found; anything else is classified from the members
            // of its `error` or `result`, read where they lie.
            let ok = error.is_none()
                && result.is_some_and(raw::is_object)
                && is_error.is_none_or(|e| raw::boolean(e) == Some(false));
            let mut contract = None;
            let classified = if ok {
                if let Some(schema) = &pending.output {
                    contract = self.check(schema, structured);
                }
                Classified::ok()
            } else {
                outcome::classify_raw(error, result, &self.salt, &mut self.templates)
            };
            let millis = now.saturating_duration_since(pending.started).as_millis();
            done.push(self.record(pending, Some(millis as u64), classified, contract));
        }
    }

    /// Whether an `ok` result's `structuredContent` kept its tool's
    /// schema; `None`, counted, when it cannot be checked.
    fn check(
        &mut self,
        schema: &Weak<OutputSchema>,
        structured: Option<&str>,
    ) -> Option<Contract<'static>> {
        let checked = schema.upgrade().and_then(|schema| match structured {
            None => Some(schema.check(None)),
            // Nested past serde_json's depth, it is not checked.
            Some(s) => serde_json::from_str::<Value>(s)
                .ok()
                .map(|value| schema.check(Some(&value))),
        });
        self.bounded.unchecked_results += u64::from(checked.is_none());
        checked
    }

    /// The server's name as it reported it (`serverInfo.name`), clean.
    fn report_server(&mut self, name: &str) {
        self.reported_server = Some(escape::clean_name(name).into_owned());
        if *self.server != *self.server_name() {
            self.server = Arc::from(self.server_name());
        }
    }

    fn server_name(&self) -> &str {
        self.fixed_server
            .as_ref()
            .or(self.reported_server.as_ref())
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.fallback_server)
    }

    fn record(
        &mut self,
        pending: Pending,
        duration_ms: Option<u64>,
        classified: Classified,
        contract: Option<Contract<'static>>,
    ) -> Done {
        Done {
            session: self.token.clone(),
            server: self.server.clone(),
            event_id: self.event_ids.next_text(),
            transport: self.transport,
            seq: pending.seq,
            tool: pending.tool,
            started_at: match self.stamper.stamp(pending.started_at) {
                Some(stamp) => Started::Fixed(stamp),
                None => Started::Text(time::rfc3339(pending.started_at)),
            },
            duration_ms,
            advertised: pending.advertised,
            args_shape: pending.args_shape,
            classified,
            contract,
        }
    }
}

/// A request id as the maps of pending requests key it ([`id_key`]):
/// shared, not copied, between an entry and its places in the map's queue.
type Id = Arc<str>;

/// The longest request id kept as it is in a map key.
const MAX_ID_KEY: usize = 64;

/// A request id as a map key: its JSON text, so `1` and `"1"` differ; a
/// longer id (a client may send megabytes) by a digest of that text, after
/// a `#` that starts no JSON text, so it never equals a short id's key.
fn id_key(id: &str) -> Cow<'_, str> {
    let text = canonical_id(id);
    if text.len() <= MAX_ID_KEY {
        return text;
    }
    let digest = store::hash::sha256(text.as_bytes());
    Cow::Owned(format!("#{}", store::hash::hex(&digest[..16])))
}

/// An id's JSON text as a parsed value prints it (compact, strings escaped
/// the one way), so that `1` and ` 1`, or `"a"` and `"\u0061"`, are one
/// id. The usual ids, small integers and strings without escapes, are
/// already so.
fn canonical_id(text: &str) -> Cow<'_, str> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let integer = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    let string =
        text.len() >= 2 && text.starts_with('"') && text.ends_with('"') && !text.contains('\\');
    if integer || string {
        return Cow::Borrowed(text);
    }
    let value = serde_json::from_str::<Value>(text);
    Cow::Owned(value.map_or_else(|_| text.to_owned(), |v| v.to_string()))
}

/// The first byte of the JSON text `text`, past whitespace.
fn json_start(text: &str) -> Option<u8> {
    text.bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// The `name` string of an object (a `serverInfo`).
fn name_of(info: &str) -> Option<Cow<'_, str>> {
    raw::members(info, ["name"])
        .and_then(|[name]| name)
        .and_then(raw::string)
}

/// Whether parsing `bytes` would take more than [`PARSE_BUDGET`]. A parsed
/// JSON tree takes up to some 90 times its text (an object of one short
/// key takes a 640-byte map node), so a message is weighed, in one pass
/// over its bytes, before it is parsed. Short messages cannot pass the
/// budget and are not weighed at all.
fn too_costly(bytes: &[u8]) -> bool {
    bytes.len() > PARSE_BUDGET / 128 && store::json_cost::parse_cost(bytes) > PARSE_BUDGET
}

/// A shape as the compact JSON text it is held as until its call completes:
/// a parsed map takes a 640-byte node for even one key, its text a few
/// bytes. A shape whose text alone passes a record's limit becomes
/// `"object"` now, as the journal would write it ([`store::journal::encode`]).
fn shape_text(shape: ShapeText) -> ShapeText {
    match shape.as_str().len() > shared::record::MAX_LINE {
        true => ShapeText::object(),
        false => shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::record::{Outcome, Unknown};

    fn session() -> Session {
        Session::new(
            Salt::from_bytes([3; 32]),
            Transport::Stdio,
            None,
            "srv-bin".into(),
        )
    }

    /// A record as the tests look at it: its texts owned.
    type Record = Call<'static, ShapeText>;

    fn owned(done: Vec<Done>) -> Vec<Record> {
        let text = |t: Cow<'_, str>| Cow::Owned(t.into_owned());
        done.iter()
            .map(|d| {
                let c = d.call();
                Call {
                    schema: text(c.schema),
                    identity: Identity {
                        event_id: text(c.identity.event_id),
                        session: text(c.identity.session),
                        seq: c.identity.seq,
                    },
                    origin: c.origin,
                    transport: c.transport,
                    server: text(c.server),
                    tool: text(c.tool),
                    started_at: text(c.started_at),
                    duration_ms: c.duration_ms,
                    advertised: c.advertised,
                    args_shape: c.args_shape.to_owned(),
                    outcome: c.outcome,
                    unknown: c.unknown,
                    error: c.error.map(|e| CallError {
                        template_id: e.template_id.map(text),
                        ..e
                    }),
                    contract: c.contract.map(Contract::into_owned),
                }
            })
            .collect()
    }

    fn feed(s: &mut Session, side: Side, line: &str) -> Vec<Record> {
        owned(s.observe(side, line.as_bytes(), Timestamp::now(), Instant::now()))
    }

    /// A record's arguments shape, parsed.
    fn shape(call: &Record) -> Value {
        serde_json::from_str(call.args_shape.as_str()).unwrap()
    }

    #[test]
    fn pairs_out_of_order_with_string_and_integer_ids() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"b"}}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        );
        let first = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":"1","result":{"content":[]}}"#,
        );
        assert_eq!((first[0].tool.as_ref(), first[0].identity.seq), ("b", 2));
        let second = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#,
        );
        assert_eq!(
            (second[0].tool.as_ref(), second[0].outcome),
            ("a", Outcome::Error)
        );
        assert_eq!(shape(&second[0]), serde_json::json!({"x": "integer"}));
        assert!(owned(s.finish()).is_empty());
    }

    #[test]
    fn messages_read_in_place_answer_as_parsed_ones() {
        let mut s = session();
        for line in [
            r#"{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":  7 ,"method":"tools/call","params":{"name":"b","arguments":{"x":[1]}}}"#,
            r#"{"jsonrpc":"2.0","id":{"k":1, "j":[2]},"method":"tools/call","params":{"name":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":8,"method":"tools/call","params":{"name":"d"}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":5,"params":{"name":"e"}}"#,
        ] {
            assert!(feed(&mut s, Side::Client, line).is_empty());
        }
        let answers = [
            (
                r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"text":"x"}]}}"#,
                "a",
                Outcome::Ok,
            ),
            (
                r#"{"id":7,"jsonrpc":"2.0","result":{"isError":false}}"#,
                "b",
                Outcome::Ok,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"j":[2],"k":1},"error":null}"#,
                "c",
                Outcome::Error,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"result":{"isError":"yes"}}"#,
                "d",
                Outcome::Unknown,
            ),
        ];
        for (line, tool, outcome) in answers {
            let done = feed(&mut s, Side::Server, line);
            assert_eq!(
                (done[0].tool.as_ref(), done[0].outcome),
                (tool, outcome),
                "{line}"
            );
        }
        // A method that is no string made no request, and an id of 9 is
        // the server's own request then, not an answer.
        assert!(feed(&mut s, Side::Server, r#"{"id":9,"result":{}}"#).is_empty());
        assert_eq!(s.unparsed, 0);
        // A batch: each member observed, what is not an object counted.
        let batch =
            r#"[{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"f"}}, 3, "x"]"#;
        feed(&mut s, Side::Client, batch);
        assert_eq!(s.unparsed, 2);
        for junk in ["{\"id\":1", "[1,", "\u{ff}", "7", "{\"a\":1} 2"] {
            feed(&mut s, Side::Server, junk);
        }
        let not_utf8 = b"{\"id\":1,\"x\":\"\xff\"}";
        s.observe(Side::Server, not_utf8, Timestamp::now(), Instant::now());
        assert_eq!(s.unparsed, 8);
        let left = owned(s.finish());
        assert_eq!(left.len(), 1);
        assert_eq!(shape(&left[0]), serde_json::json!({}));
    }

    #[test]
    fn server_requests_are_not_responses() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a"}}"#,
        );
        // The server asks the client something with the same id number.
        assert!(
            feed(
                &mut s,
                Side::Server,
                r#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}"#
            )
            .is_empty()
        );
        assert!(
            feed(
                &mut s,
                Side::Client,
                r#"{"jsonrpc":"2.0","id":5,"result":{}}"#
            )
            .is_empty()
        );
        let left = owned(s.finish());
        assert_eq!(left[0].unknown, Some(Unknown::Unanswered));
        assert_eq!(left[0].duration_ms, None);
    }

    #[test]
    fn names_and_advertised_tools_from_the_handshake_and_lists() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":0,"result":{"serverInfo":{"name":"weather"}}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}],"nextCursor":"c"}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b"}]}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"b"}},{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"zz"}}]"#,
        );
        let done = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        );
        assert_eq!(done[0].server, "weather");
        assert_eq!(
            done[0].advertised, None,
            "no tools/list had been seen when it was called"
        );
        let mut rest = owned(s.finish());
        rest.sort_by_key(|c| c.identity.seq);
        assert_eq!(
            rest.iter().map(|c| c.advertised).collect::<Vec<_>>(),
            [Some(true), Some(false)]
        );
    }

    #[test]
    fn modern_server_info_in_meta_and_fallback_name() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        let done = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern"}}}}"#,
        );
        assert_eq!(done[0].server, "modern");
        let mut plain = session();
        feed(
            &mut plain,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
        );
        assert_eq!(
            feed(
                &mut plain,
                Side::Server,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
            )[0]
            .server,
            "srv-bin"
        );
    }

    #[test]
    fn arguments_are_shaped_against_the_schemas_of_the_last_list() {
        let mut s = session();
        let call_with = |s: &mut Session, id: u64, tool: &str, arguments: &str| {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
            );
            feed(s, Side::Client, &line);
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            feed(s, Side::Server, &answer).remove(0)
        };
        let call = |s: &mut Session, id: u64, tool: &str| {
            let arguments = r#"{"Odd Key":1,"x@corp.example":"s","extra":true}"#;
            call_with(s, id, tool, arguments)
        };
        let open = serde_json::json!({"extra": "boolean", "*": "integer"});
        assert_eq!(shape(&call(&mut s, 1, "a")), open, "no list seen yet");
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"Odd Key":{}}}}],"nextCursor":"c"}}"#,
        );
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b"},{"name":"a","inputSchema":{}}]}}"#,
        );
        let a = call(&mut s, 4, "a");
        assert_eq!(
            shape(&a),
            serde_json::json!({"Odd Key": "integer", "*": "boolean"}),
            "a closed schema from the first page keeps only its own keys"
        );
        assert_eq!(a.advertised, Some(true));
        let b = call(&mut s, 5, "b");
        assert_eq!((shape(&b), b.advertised), (open.clone(), Some(true)));
        // A new list replaces the old one: "a" is gone, and so is its schema.
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#,
        );
        feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":6,"result":{"tools":[{"name":"b"}]}}"#,
        );
        let gone = call(&mut s, 7, "a");
        assert_eq!((shape(&gone), gone.advertised), (open, Some(false)));
        // Listed again, with one schema and then another: each call is
        // shaped by the schema of the last list, not by a shape remembered
        // from the one before. Only a layout whose every key its shape
        // shows is remembered, so the calls send one key the first schema
        // declares and the second does not.
        let odd = |s: &mut Session, id: u64| call_with(s, id, "a", r#"{"Odd Key":1}"#);
        let list = |s: &mut Session, id: u64, key: &str| {
            let ask = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            feed(s, Side::Client, &ask);
            let tools = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"a","inputSchema":{{"type":"object","properties":{{"{key}":{{}}}}}}}}]}}}}"#
            );
            feed(s, Side::Server, &tools);
        };
        list(&mut s, 8, "Odd Key");
        for id in [9, 10] {
            let a = odd(&mut s, id);
            assert_eq!(shape(&a), serde_json::json!({"Odd Key": "integer"}));
        }
        list(&mut s, 11, "x@corp.example");
        let a = odd(&mut s, 12);
        assert_eq!(shape(&a), serde_json::json!({"*": "integer"}));
        let a = call(&mut s, 13, "a");
        assert_eq!(
            shape(&a),
            serde_json::json!({"x@corp.example": "string", "*": "integer"})
        );
    }

    #[test]
    fn names_are_stored_clean() {
        let hostile = "evil\\n`x`\\u001b[31m\\u202e";
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
        );
        feed(
            &mut s,
            Side::Server,
            &format!(
                r#"{{"jsonrpc":"2.0","id":0,"result":{{"serverInfo":{{"name":"{hostile}"}}}}}}"#
            ),
        );
        feed(
            &mut s,
            Side::Client,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t{hostile}"}}}}"#
            ),
        );
        let done = feed(
            &mut s,
            Side::Server,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"m{hostile}"}}}}}}}}"#
            ),
        );
        assert_eq!(done[0].server, "mevil?`x`?[31m?");
        assert_eq!(done[0].tool, "tevil?`x`?[31m?");
        let mut fixed = Session::new(
            Salt::from_bytes([3; 32]),
            Transport::Stdio,
            Some("flag\u{2066}name".into()),
            "bin\u{7}".into(),
        );
        assert_eq!(fixed.server_name(), "flag?name");
        fixed.fixed_server = None;
        assert_eq!(fixed.server_name(), "bin?");
    }

    #[test]
    fn a_pending_id_used_again_abandons_the_first_call() {
        let mut s = session();
        assert!(feed(&mut s, Side::Client, &call_line("1", "one")).is_empty());
        let before = s.pending_bytes;
        let abandoned = feed(&mut s, Side::Client, &call_line("1", "two"));
        assert_eq!(abandoned.len(), 1);
        assert_eq!(abandoned[0].tool, "one");
        assert_eq!(abandoned[0].unknown, Some(Unknown::Unanswered));
        assert_eq!(s.pending_bytes, before, "one call pending, the second");
        let answered = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        );
        assert_eq!(answered[0].tool, "two");
        assert_eq!(answered[0].outcome, Outcome::Ok);
        assert_eq!((s.pending_bytes, s.calls.len()), (0, 0));
        assert!(owned(s.finish()).is_empty());
    }

    #[test]
    fn retracted_requests_are_never_recorded() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
        );
        let batch = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c"}}]"#;
        feed(&mut s, Side::Client, batch);
        s.retract(batch.as_bytes());
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"d"}}"#,
        );
        let mut left = owned(s.finish());
        left.sort_by_key(|c| c.identity.seq);
        let got: Vec<(&str, u64)> = left
            .iter()
            .map(|c| (c.tool.as_ref(), c.identity.seq))
            .collect();
        assert_eq!(got, [("a", 1), ("d", 2)]);
    }

    fn call_line(id: &str, tool: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"q":1}}}}}}"#
        )
    }

    #[test]
    fn the_oldest_unanswered_calls_are_recorded_beyond_the_cap() {
        let mut s = session();
        let mut early = Vec::new();
        for id in 1..=MAX_PENDING_CALLS + 2 {
            early.extend(feed(&mut s, Side::Client, &call_line(&id.to_string(), "t")));
        }
        let seqs: Vec<u64> = early.iter().map(|c| c.identity.seq).collect();
        assert_eq!(seqs, [1, 2], "the two oldest, as they are evicted");
        assert!(early.iter().all(|c| c.unknown == Some(Unknown::Unanswered)));
        assert_eq!(s.bounded.evicted_calls, 2);
        // An evicted call's answer is no one's; a tracked one's pairs.
        assert!(
            feed(
                &mut s,
                Side::Server,
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
            )
            .is_empty()
        );
        let answered = feed(
            &mut s,
            Side::Server,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        );
        assert_eq!(
            (answered[0].identity.seq, answered[0].outcome),
            (3, Outcome::Ok)
        );
        assert_eq!(shape(&answered[0]), serde_json::json!({"q": "integer"}));
        let rest = owned(s.finish());
        assert_eq!(rest.len(), MAX_PENDING_CALLS - 1);
        assert!(
            rest.windows(2)
                .all(|w| w[0].identity.seq < w[1].identity.seq)
        );
        assert_eq!(s.bytes(), SESSION_BYTES, "nothing is held after the end");
    }

    #[test]
    fn unanswered_calls_are_bounded_in_bytes_too() {
        let mut s = session();
        // Sixteen named keys of 30 bytes: a kilobyte a call.
        let args: serde_json::Map<String, Value> = (0..16)
            .map(|k| (format!("field{k:02}{}", "x".repeat(23)), Value::from(1)))
            .collect();
        let args = Value::Object(args).to_string();
        let mut evicted = 0;
        // On until the bytes bound evicts, then a thousand calls more, each
        // evicting as it comes.
        let mut first_eviction = None;
        for id in 0..MAX_PENDING_CALLS {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#
            );
            evicted += feed(&mut s, Side::Client, &line).len();
            if evicted > 0 && *first_eviction.get_or_insert(id) + 1_000 == id {
                break;
            }
        }
        assert!(
            evicted > 1_000,
            "32 MiB holds well under 65,536 such calls: {evicted} evicted"
        );
        assert!(s.pending_bytes <= MAX_PENDING_BYTES);
        assert_eq!(s.bounded.evicted_calls, evicted as u64);
    }

    #[test]
    fn a_long_request_id_is_kept_as_a_digest() {
        let mut s = session();
        let id = format!("\"{}\"", "i".repeat(1 << 20));
        feed(&mut s, Side::Client, &call_line(&id, "t"));
        assert!(s.bytes() < SESSION_BYTES + 1024, "{}", s.bytes());
        let other = format!("\"{}j\"", "i".repeat((1 << 20) - 1));
        let none = format!(r#"{{"jsonrpc":"2.0","id":{other},"result":{{}}}}"#);
        assert!(feed(&mut s, Side::Server, &none).is_empty());
        let done = feed(
            &mut s,
            Side::Server,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
        );
        assert_eq!(done[0].outcome, Outcome::Ok);
        assert_ne!(
            id_key(&format!("\"{}\"", "i".repeat(100))),
            id_key(&format!("\"{}\"", "i".repeat(101)))
        );
    }

    #[test]
    fn a_message_too_costly_to_parse_is_counted_not_parsed() {
        // 1 MiB of one-key objects would take some 90 MiB parsed.
        let mut dense = String::from(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"rows":["#,
        );
        while dense.len() < 1 << 20 {
            dense.push_str(r#"{"a":1},"#);
        }
        dense.push_str("1]}}}");
        assert!(store::json_cost::parse_cost(dense.as_bytes()) > PARSE_BUDGET);
        assert!(feed(&mut s_with_call(), Side::Client, &dense).is_empty());
        let mut s = session();
        feed(&mut s, Side::Client, &dense);
        assert_eq!(
            (s.bounded.costly, s.unparsed, owned(s.finish()).len()),
            (1, 0, 0)
        );
        // Text of the same length, in strings, costs about its length.
        let plain = format!(r#"{{"x":"{}"}}"#, "{".repeat(1 << 20));
        assert!(store::json_cost::parse_cost(plain.as_bytes()) < 2 << 20);
    }

    fn s_with_call() -> Session {
        let mut s = session();
        feed(&mut s, Side::Client, &call_line("0", "t"));
        s
    }

    #[test]
    fn tools_past_the_cap_are_neither_advertised_nor_not() {
        let mut s = session();
        feed(
            &mut s,
            Side::Client,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        let tools: Vec<Value> = (0..=MAX_ADVERTISED_TOOLS)
            .map(|n| serde_json::json!({"name": format!("t{n}")}))
            .collect();
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
        feed(&mut s, Side::Server, &list.to_string());
        assert_eq!(s.bounded.long_lists, 1);
        let advertised = |s: &mut Session, id: u64, tool: &str| {
            feed(s, Side::Client, &call_line(&id.to_string(), tool));
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            feed(s, Side::Server, &answer)[0].advertised
        };
        assert_eq!(advertised(&mut s, 2, "t0"), Some(true));
        let last = format!("t{MAX_ADVERTISED_TOOLS}");
        assert_eq!(advertised(&mut s, 3, &last), None, "left out: unknown");
    }

    #[test]
    fn junk_is_counted_not_fatal() {
        let mut s = session();
        feed(&mut s, Side::Server, "Starting server on stdio...");
        feed(&mut s, Side::Client, "   ");
        assert_eq!(s.unparsed, 1);
    }

    #[test]
    fn a_call_without_a_tool_name_is_counted_not_recorded() {
        // Found by fuzzing: a record with an empty tool name is one the
        // index refuses, which would stop indexing for the whole store.
        let mut s = session();
        for params in [r#"{"name":""}"#, r#"{"name":7}"#, "{}"] {
            let call =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
            feed(&mut s, Side::Client, &call);
        }
        assert!(owned(s.finish()).is_empty());
        assert_eq!((s.unparsed, s.seq), (3, 0));
    }
}
