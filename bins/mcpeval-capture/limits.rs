//! Every bound on what capture holds, in one place.
//!
//! Either peer may send anything: a gigabyte line, a million calls never
//! answered, a `tools/list` of megabytes, thousands of connections. The
//! relay moves every byte whatever happens; these bounds only limit what is
//! *observed*, so capture's peak resident memory stays under 256 MiB. When
//! a bound is reached, observation gives way (a message goes unobserved, a
//! call is recorded as unanswered, a schema is forgotten) and a warning at
//! exit counts what was given up; the relay never waits for the observer.

/// The longest message observed, in either direction and on either
/// transport: a line (stdio), a JSON body or an SSE event (HTTP). A longer
/// one is relayed whole, measured as it streams and never held.
pub const OBSERVE_LIMIT: usize = 4 * 1024 * 1024;

/// The most a message may cost once parsed. A message of `{"a":1},` pieces
/// takes some 90 times its length as a parsed tree, so one under
/// [`OBSERVE_LIMIT`] could still take hundreds of megabytes; one whose
/// estimated cost passes this is relayed unobserved instead.
pub const PARSE_BUDGET: usize = 64 * 1024 * 1024;

/// The bytes waiting for the observer at once: chunks copied off the stdio
/// relay but not yet cut into lines, or, on HTTP, message copies being read,
/// queued or parsed across all connections. Past it, observation of what
/// comes is dropped (and counted) rather than held or waited for.
pub const OBSERVE_BUDGET: usize = 64 * 1024 * 1024;

/// The most bytes of stdio chunk buffers the observer is done with that
/// are kept for later chunks, besides [`OBSERVE_BUDGET`]: about what a
/// busy session hands the observer between two of its looks.
pub const SPARE_BYTES: usize = 4 * 1024 * 1024;

/// The most unanswered calls one session tracks; a call beyond it records
/// the oldest as unanswered.
pub const MAX_PENDING_CALLS: usize = 65_536;

/// The most bytes the unanswered calls of one session may hold (their
/// argument shapes, mostly); beyond it, the oldest are recorded as
/// unanswered too.
pub const MAX_PENDING_BYTES: usize = 32 * 1024 * 1024;

/// The most bytes of declared `inputSchema` keys one session keeps from
/// its last `tools/list`; tools beyond it are kept without their schema, so
/// their argument keys are judged by the field-name rule.
pub const MAX_DECLARED_BYTES: usize = 1024 * 1024;

/// The most one session's compiled `outputSchema`s may hold, as
/// [`store::output_schema::OutputSchema::bytes`] estimates it; the results
/// of tools beyond it are not checked. Each schema is also bounded on its
/// own ([`store::output_schema::MAX_EXPANDED_NODES`]).
pub const MAX_OUTPUT_SCHEMA_BYTES: usize = 8 * 1024 * 1024;

/// The most tools of one `tools/list` (all pages) whose names are kept;
/// beyond it, whether a tool was advertised is unknown (null).
pub const MAX_ADVERTISED_TOOLS: usize = 16_384;

/// The most pending `tools/list`, `initialize` or `server/discover`
/// requests one session tracks; beyond it the oldest is forgotten.
pub const MAX_PENDING_REQUESTS: usize = 1024;

/// The most HTTP sessions tracked at once; beyond it the least recently
/// active one ends early.
pub const MAX_SESSIONS: usize = 4096;

/// The most bytes all tracked HTTP sessions may hold together (unanswered
/// calls and declared schemas); beyond it the least recently active ones
/// end early, as beyond [`MAX_SESSIONS`].
pub const SESSIONS_BYTES: usize = 64 * 1024 * 1024;

/// The most HTTP client connections served at once; a connection beyond it
/// gets `503` with a JSON-RPC error and is closed.
pub const MAX_CONNECTIONS: usize = 256;

/// The most bytes hyper buffers per HTTP connection, each way (the
/// default is about 400 KiB): it bounds a request or response head too.
pub const CONNECTION_BUFFER: usize = 64 * 1024;
