//! Every bound on what the receiver holds, in one place.
//!
//! Senders may post anything: a gigabyte body, a gzip bomb, a million empty
//! spans, attributes nested a hundred deep. These bounds keep the process
//! under 256 MiB whatever arrives: a request past one is refused whole with
//! the OTLP error answer (nothing of it is journaled), and a bound on state
//! kept between requests gives way (a held span is journaled early, a
//! remembered pair is forgotten) rather than grow.

/// The longest request body read, compressed or not; a longer one gets 413.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// The most a body may expand to once gunzipped, and the longest line of
/// an `--import` file.
pub const MAX_DECODED: usize = 8 * 1024 * 1024;

/// The most spans one request (or one import line) may carry.
pub const MAX_SPANS: usize = 16_384;

/// The most protobuf messages and strings one request may decode into:
/// each takes at most some 256 bytes once decoded, so a request of empty
/// attributes two bytes each cannot take 100 times its size.
pub const MAX_NODES: usize = 262_144;

/// The most a JSON request (or import line) may cost once parsed, weighed
/// by `store::json_cost` before parsing.
pub const PARSE_BUDGET: usize = 64 * 1024 * 1024;

/// The most a `gen_ai.tool.call.arguments` text may cost once parsed; a
/// costlier one is shaped as `"object"`.
pub const ARGUMENTS_BUDGET: usize = 4 * 1024 * 1024;

/// Requests decoded at once; others wait before their body is read, so
/// at most this many bodies and decoded requests are held.
pub const DECODING_AT_ONCE: usize = 2;

/// Connections served at once; another is closed after a 503.
pub const MAX_CONNECTIONS: usize = 64;

/// Client spans held while their server span may still come.
pub const MAX_HELD: usize = 65_536;

/// Requests remembered as journaled, so the other side's span of one is
/// recognized when it comes later.
pub const MAX_REMEMBERED: usize = 262_144;

/// Sessions whose turn counter is kept; the least recently used is
/// forgotten first.
pub const MAX_SESSIONS: usize = 65_536;
