//! From an OTLP span to the facts a journal record may keep.
//!
//! Only the spans of `tools/call` (`mcp.method.name`) are read, and of
//! those only the attributes the MCP semantic conventions give a meaning
//! (see docs/otel.md): names (the tool, the server) are cleaned as capture
//! cleans them; ids (`mcp.session.id`, the trace, `jsonrpc.request.id`)
//! become salted hashes or a pairing key held in memory; the error
//! message becomes a salted template id through capture's sanitizer; the
//! arguments become a shape. No other attribute, event, link, resource
//! field or status text is looked at, so none can reach the store.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use serde_json::{Map, Number, Value};
use shared::escape::clean_name;
use shared::record::{Call, Origin};
use shared::record::{CallError, Channel, Identity, Outcome, SCHEMA_V1, Transport, is_kept_code};
use store::salt::Salt;
use store::sanitize;

use crate::limits::ARGUMENTS_BUDGET;

/// The MCP method of a tool call.
pub const TOOLS_CALL: &str = "tools/call";

/// Which end of the request a span describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client's span (kind CLIENT, or no kind): it cannot see a tool
    /// error the server did not mark.
    Client,
    /// The server's span (kind SERVER).
    Server,
}

/// One `tools/call` span read into a record still without its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// Which end reported it.
    pub side: Side,
    /// What both ends' spans of one request share (trace, request id,
    /// tool), hashed; `None` without a `jsonrpc.request.id`.
    pub pair: Option<u128>,
    /// The span's start, for ordering a batch.
    pub started_ns: u64,
    /// Whether the session came from `mcp.session.id` (not the trace).
    pub named_session: bool,
    /// Whether the arguments were reported (`gen_ai.tool.call.arguments`).
    pub args_known: bool,
    /// The record, with seq 0 and no event id until it is journaled.
    pub call: Call<'static>,
}

/// Why a `tools/call` span was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skipped {
    /// Neither `gen_ai.tool.name` nor a span name `… tools/call NAME`.
    NoTool,
    /// No valid trace id (16 bytes, not all zero) and no `mcp.session.id`.
    NoSession,
    /// No start time.
    NoTime,
}

/// What one request held, span by span.
#[derive(Debug, Default)]
pub struct Read {
    /// The `tools/call` spans read.
    pub calls: Vec<Observed>,
    /// Spans of other methods or of no MCP method, left alone.
    pub other: usize,
    /// `tools/call` spans that could not be read, and why.
    pub skipped: Vec<Skipped>,
}

/// Reads every span of `request`. `server` (the `--server` flag) names
/// the server of every record when given.
pub fn read(request: &ExportTraceServiceRequest, salt: &Salt, server: Option<&str>) -> Read {
    let mut read = Read::default();
    for resource_spans in &request.resource_spans {
        let resource = resource_spans
            .resource
            .as_ref()
            .map_or(&[][..], |r| &r.attributes[..]);
        let service = text(resource, "service.name").filter(|s| !is_default_service(s));
        for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
            if text(&span.attributes, "mcp.method.name") != Some(TOOLS_CALL) {
                read.other += 1;
                continue;
            }
            match call(span, service, salt, server) {
                Ok(observed) => read.calls.push(observed),
                Err(skipped) => read.skipped.push(skipped),
            }
        }
    }
    // Within a batch, calls go to the journal in the order they started.
    read.calls.sort_by_key(|o| o.started_ns);
    read
}

/// An SDK's `service.name` when the application set none
/// (`unknown_service`, `unknown_service:python`): it names no server.
fn is_default_service(name: &str) -> bool {
    name == "unknown_service" || name.starts_with("unknown_service:")
}

fn call(
    span: &Span,
    service: Option<&str>,
    salt: &Salt,
    server: Option<&str>,
) -> Result<Observed, Skipped> {
    let attrs = &span.attributes[..];
    let side = if span.kind == SpanKind::Server as i32 {
        Side::Server
    } else {
        Side::Client
    };
    let tool = text(attrs, "gen_ai.tool.name")
        .filter(|t| !t.is_empty())
        .or_else(|| tool_from_name(&span.name))
        .ok_or(Skipped::NoTool)?;
    let tool = clean_name(tool).into_owned();
    let trace_ok = span.trace_id.len() == 16 && span.trace_id.iter().any(|&b| b != 0);
    let session_id = text(attrs, "mcp.session.id").filter(|s| !s.is_empty());
    let session = match (session_id, trace_ok) {
        (Some(id), _) => {
            store::ids::session_token(salt, &[b"otel\0session\0", id.as_bytes()].concat())
        }
        (None, true) => {
            store::ids::session_token(salt, &[b"otel\0trace\0", &span.trace_id[..]].concat())
        }
        (None, false) => return Err(Skipped::NoSession),
    };
    if span.start_time_unix_nano == 0 {
        return Err(Skipped::NoTime);
    }
    let started = jiff::Timestamp::from_nanosecond(i128::from(span.start_time_unix_nano))
        .map_err(|_| Skipped::NoTime)?;
    let duration_ms = (span.end_time_unix_nano >= span.start_time_unix_nano)
        .then(|| (span.end_time_unix_nano - span.start_time_unix_nano) / 1_000_000);
    // Salted, so a sender cannot choose keys that crowd one bucket of the
    // journaler's tables; each part's length goes in, so no two
    // requests' parts run together into the same key.
    let pair = text(attrs, "jsonrpc.request.id").map(|id| {
        let lengths = [span.trace_id.len(), id.len(), tool.len()].map(|n| (n as u64).to_le_bytes());
        let digest = salt.digest(&[
            b"otel-pair",
            &lengths[0],
            &lengths[1],
            &lengths[2],
            &span.trace_id,
            id.as_bytes(),
            tool.as_bytes(),
        ]);
        u128::from_be_bytes(digest[..16].try_into().expect("16 bytes"))
    });
    let server_name = match server {
        Some(name) => name.to_owned(),
        None => server_name(side, attrs, service),
    };
    let (args_shape, args_known) = match attrs
        .iter()
        .find(|kv| kv.key == "gen_ai.tool.call.arguments")
        .and_then(|kv| kv.value.as_ref())
    {
        Some(value) => (arguments_shape(value), true),
        None => (Value::String("object".into()), false),
    };
    let (outcome, error) = outcome(span, salt);
    Ok(Observed {
        side,
        pair,
        started_ns: span.start_time_unix_nano,
        named_session: session_id.is_some(),
        args_known,
        call: Call {
            schema: SCHEMA_V1.into(),
            identity: Identity {
                event_id: String::new().into(),
                session: session.to_string().into(),
                seq: 0,
            },
            origin: Origin::Otel,
            transport: transport(attrs),
            server: clean_name(&server_name).into_owned().into(),
            tool: tool.into(),
            started_at: shared::time::rfc3339(started).into(),
            duration_ms,
            advertised: None,
            args_shape,
            outcome,
            unknown: None,
            error,
            // A span carries no tool's outputSchema to check a result by.
            contract: None,
        },
    })
}

/// The tool of a span named as the conventions say (`tools/call NAME`),
/// or as the Python SDK's client names it (`MCP send tools/call NAME`).
fn tool_from_name(name: &str) -> Option<&str> {
    let at = name.find("tools/call ")?;
    let tool = name[at + "tools/call ".len()..].trim();
    (!tool.is_empty()).then_some(tool)
}

/// A server span's server is its own service; a client span's is the
/// peer it names (`server.address`, `server.port`), else the service
/// that made the span.
fn server_name(side: Side, attrs: &[KeyValue], service: Option<&str>) -> String {
    let address = text(attrs, "server.address").filter(|a| !a.is_empty());
    let peer = address.map(|a| match int(attrs, "server.port") {
        Some(port) => format!("{a}:{port}"),
        None => a.to_owned(),
    });
    let named = match side {
        Side::Server => service.map(str::to_owned).or(peer),
        Side::Client => peer.or(service.map(str::to_owned)),
    };
    named.unwrap_or_else(|| "unknown".to_owned())
}

/// `network.transport` `pipe` is stdio; `tcp`, `quic`, `unix` or an
/// `http` protocol is Streamable HTTP; a span that says neither is taken
/// for stdio, the transport the SDKs leave unmarked.
fn transport(attrs: &[KeyValue]) -> Transport {
    let http = matches!(
        text(attrs, "network.transport"),
        Some("tcp" | "quic" | "unix")
    ) || text(attrs, "network.protocol.name")
        .is_some_and(|p| p.eq_ignore_ascii_case("http"));
    if http {
        Transport::Http
    } else {
        Transport::Stdio
    }
}

/// The outcome and the error's sanitized facts: an error when the span
/// has `error.type` or status ERROR. `error.type: tool_error` is a tool
/// result with `isError: true`; any other error came back as a JSON-RPC
/// error (or the request failed on its way), with the code of
/// `rpc.response.status_code` (or a numeric `error.type`) when the store
/// keeps such a code. The template is the status message's.
fn outcome(span: &Span, salt: &Salt) -> (Outcome, Option<CallError<'static>>) {
    let attrs = &span.attributes[..];
    let error_type = text(attrs, "error.type").filter(|t| !t.is_empty());
    let status = span.status.as_ref();
    let failed = status.is_some_and(|s| s.code == StatusCode::Error as i32);
    if error_type.is_none() && !failed {
        return (Outcome::Ok, None);
    }
    let channel = if error_type == Some("tool_error") {
        Channel::Tool
    } else {
        Channel::Jsonrpc
    };
    let code = [text(attrs, "rpc.response.status_code"), error_type]
        .into_iter()
        .flatten()
        .find_map(|t| t.trim().parse::<i64>().ok())
        .filter(|&c| is_kept_code(c) && channel == Channel::Jsonrpc);
    let message = status
        .map(|s| s.message.as_str())
        .filter(|m| !m.trim().is_empty());
    let template_id = message.map(|m| sanitize::template_id(salt, m).to_string().into());
    (
        Outcome::Error,
        Some(CallError {
            channel,
            code,
            template_id,
            retryable: None,
        }),
    )
}

/// The shape of `gen_ai.tool.call.arguments`: structured (a key-value
/// list), or JSON text as SDKs that cannot record structure write it.
/// Values never leave this function.
fn arguments_shape(value: &AnyValue) -> Value {
    let value = match &value.value {
        Some(any_value::Value::StringValue(text)) => {
            if store::json_cost::parse_cost(text.as_bytes()) > ARGUMENTS_BUDGET {
                return Value::String("object".into());
            }
            serde_json::from_str(text).unwrap_or(Value::String(String::new()))
        }
        _ => to_json(value, 0),
    };
    sanitize::args_shape(&value, None)
}

/// An attribute value as the JSON it stands for, as deep as shapes go
/// (deeper levels become an empty object: their shape is "object").
fn to_json(value: &AnyValue, depth: usize) -> Value {
    use any_value::Value as V;
    let deeper = depth < sanitize::MAX_SHAPE_DEPTH + 1;
    match &value.value {
        None => Value::Null,
        Some(V::StringValue(_) | V::BytesValue(_) | V::StringValueStrindex(_)) => {
            Value::String(String::new())
        }
        Some(V::BoolValue(_)) => Value::Bool(false),
        Some(V::IntValue(_)) => Value::Number(0.into()),
        Some(V::DoubleValue(_)) => Value::Number(Number::from_f64(0.5).expect("finite")),
        Some(V::ArrayValue(array)) if deeper => Value::Array(
            array
                .values
                .first()
                .map(|v| to_json(v, depth + 1))
                .into_iter()
                .collect(),
        ),
        Some(V::KvlistValue(list)) if deeper => {
            let mut map = Map::new();
            for kv in &list.values {
                let v = kv
                    .value
                    .as_ref()
                    .map_or(Value::Null, |v| to_json(v, depth + 1));
                map.entry(kv.key.clone()).or_insert(v);
            }
            Value::Object(map)
        }
        Some(V::ArrayValue(_)) => Value::Array(Vec::new()),
        Some(V::KvlistValue(_)) => Value::Object(Map::new()),
    }
}

/// The string value of attribute `key`.
fn text<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

/// The integer value of attribute `key` (or its text, as some SDKs send it).
fn int(attrs: &[KeyValue], key: &str) -> Option<i64> {
    attrs.iter().find(|kv| kv.key == key).and_then(|kv| {
        match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::IntValue(i) => Some(*i),
            any_value::Value::StringValue(s) => s.parse().ok(),
            _ => None,
        }
    })
}
