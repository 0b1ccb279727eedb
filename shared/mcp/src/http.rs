//! Streamable HTTP under the probe client: every message is a POST to the
//! endpoint; a request's answer is one JSON body or an event stream that
//! may carry notifications and server requests before the response.
//!
//! Both eras: a request whose `_meta` names a protocol version (2026-07-28)
//! carries `MCP-Protocol-Version` with that version, `Mcp-Method`, and
//! `Mcp-Name` for the methods that name something; otherwise (legacy) the
//! `Mcp-Session-Id` the `initialize` answer issued and, after the
//! handshake, the negotiated `MCP-Protocol-Version`. The legacy session
//! ends with a DELETE.
//!
//! An event stream that ends (or breaks off) before its response, having
//! named an event id, is resumed as the 2025-11-25 transport defines: a
//! GET with `Last-Event-ID`, after the wait the server set with `retry`.
//!
//! The probe waits on a std channel exactly as over stdio: a one-worker
//! tokio runtime, owned by this transport, reads each answer in the
//! background and puts what it finds on that channel, so an event stream
//! is read (and a server's `ping` answered) while the probe waits. The
//! probe is not performance-critical; this keeps async code out of it.
//!
//! Nothing the server sent is ever echoed: failures are described by the
//! method, the origin (`scheme://host:port`, never the path or query) and
//! status codes. Header values given by the user travel only to the
//! endpoint.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as Body;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::runtime::Runtime;
use tokio::task::AbortHandle;

use super::{Broken, EXIT_GRACE, Incoming, MAX_LINE, VERSION_META};
use crate::connector::Connector;
use crate::sse::{Decoder, Item};
use store::endpoint::Endpoint;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The methods whose `Mcp-Name` header mirrors `params.name` or `params.uri`.
const NAMED: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];

/// What later legacy requests carry, learnt from earlier answers.
#[derive(Debug, Default)]
struct Learnt {
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
}

/// What every exchange needs, cloned into its task.
#[derive(Clone)]
struct Shared {
    pool: Pool<Connector, Full<Bytes>>,
    origin: Arc<str>,
    learnt: Arc<Mutex<Learnt>>,
    tx: Sender<Incoming>,
}

/// A Streamable HTTP connection to one endpoint.
pub(super) struct Http {
    runtime: Option<Runtime>,
    shared: Shared,
    endpoint: Endpoint,
    rx: Receiver<Incoming>,
    /// The readers of answers still awaited, by request id.
    streams: HashMap<i64, AbortHandle>,
    /// How long a notification's POST may take to be accepted.
    wait: Duration,
}

impl Http {
    /// Prepares the client; nothing is sent yet. `wait` bounds the POST of
    /// each notification.
    pub(super) fn open(endpoint: &Endpoint, wait: Duration) -> Result<Http, Broken> {
        let origin = endpoint.origin();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("probe-http")
            .enable_all()
            .build()
            .map_err(|err| Broken::Unreachable(format!("cannot start the HTTP client: {err}")))?;
        let connector = crate::connector::connector(endpoint.is_https(), None).map_err(|err| {
            Broken::Unreachable(format!(
                "cannot load the trusted certificates for {origin}: {err}"
            ))
        })?;
        let pool = Pool::builder(TokioExecutor::new()).build(connector);
        let (tx, rx) = mpsc::channel();
        Ok(Http {
            runtime: Some(runtime),
            shared: Shared {
                pool,
                origin: origin.into(),
                learnt: Arc::default(),
                tx,
            },
            endpoint: endpoint.clone(),
            rx,
            streams: HashMap::new(),
            wait,
        })
    }

    /// Waits for what the next answer brings.
    pub(super) fn recv_timeout(&self, left: Duration) -> Result<Incoming, RecvTimeoutError> {
        self.rx.recv_timeout(left)
    }

    /// The legacy handshake settled on `version`: later requests say so.
    pub(super) fn negotiated(&mut self, version: &str) {
        let value = HeaderValue::from_str(version)
            .unwrap_or_else(|_| HeaderValue::from_static(super::LEGACY_VERSION));
        lock(&self.shared.learnt).version = Some(value);
    }

    /// POSTs one message. A request's answer is read in the background; a
    /// notification waits until it is accepted; a reply to a server
    /// request goes in the background and reports only a failure.
    pub(super) fn send(&mut self, message: &Value) -> Result<(), Broken> {
        let Some(runtime) = &self.runtime else {
            return Err(Broken::StreamEnded("the HTTP client was shut down".into()));
        };
        let method = message.get("method").and_then(Value::as_str);
        let request = self.post(message);
        let shared = self.shared.clone();
        match (method, message.get("id").and_then(Value::as_i64)) {
            (Some(method), Some(id)) => {
                let method = method.to_owned();
                let task = runtime.spawn(async move {
                    if let Err(broken) = exchange(&shared, request, id, &method).await {
                        let _ = shared.tx.send(Incoming::Failed(Some(id), broken));
                    }
                });
                self.streams.insert(id, task.abort_handle());
                // Readers of answered requests are done; forget them.
                self.streams.retain(|_, t| !t.is_finished());
                Ok(())
            }
            (Some(method), None) => {
                let what = method.to_owned();
                // A cancellation goes to a server already late; it gets
                // the short grace, not a handshake's patience.
                let wait = if method == "notifications/cancelled" {
                    self.wait.min(EXIT_GRACE)
                } else {
                    self.wait
                };
                // The timer must be made inside the runtime.
                let delivered = runtime.block_on(async {
                    tokio::time::timeout(wait, deliver(&shared, request, &what)).await
                });
                delivered.unwrap_or_else(|_| {
                    Err(Broken::StreamEnded(format!(
                        "{} did not accept {what} within {} ms",
                        shared.origin,
                        wait.as_millis()
                    )))
                })
            }
            (None, _) => {
                runtime.spawn(async move {
                    let what = "a reply to a server request";
                    if let Err(broken) = deliver(&shared, request, what).await {
                        let _ = shared.tx.send(Incoming::Failed(None, broken));
                    }
                });
                Ok(())
            }
        }
    }

    /// Stops reading the answer to `id`; over 2026-07-28 this closing of
    /// the stream is the cancellation itself.
    pub(super) fn abandon(&mut self, id: i64) {
        if let Some(task) = self.streams.remove(&id) {
            task.abort();
        }
    }

    /// Stops every reader, ends a legacy session with DELETE (its answer,
    /// 405 included, does not matter), and stops the runtime.
    pub(super) fn shutdown(&mut self) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        for (_, task) in self.streams.drain() {
            task.abort();
        }
        let learnt = lock(&self.shared.learnt);
        let session = learnt.session.clone();
        let version = learnt.version.clone();
        drop(learnt);
        if let Some(session) = session {
            let mut request = self.request(Method::DELETE, Full::default());
            let headers = request.headers_mut();
            headers.insert(SESSION_ID, session);
            if let Some(version) = version {
                headers.insert(PROTOCOL_VERSION, version);
            }
            let pool = self.shared.pool.clone();
            runtime.block_on(async move {
                let ended = async {
                    if let Ok(response) = pool.request(request).await {
                        let _ = response.into_body().collect().await;
                    }
                };
                let _ = tokio::time::timeout(EXIT_GRACE, ended).await;
            });
        }
        runtime.shutdown_background();
    }

    /// A request to the endpoint with the user's headers.
    fn request(&self, method: Method, body: Full<Bytes>) -> Request<Full<Bytes>> {
        let mut request = Request::new(body);
        *request.method_mut() = method;
        *request.uri_mut() = self.endpoint.uri().clone();
        let headers = request.headers_mut();
        for (name, value) in self.endpoint.headers() {
            headers.append(name.clone(), value.clone());
        }
        request
    }

    /// The POST carrying `message`, with the headers of its era.
    fn post(&self, message: &Value) -> Request<Full<Bytes>> {
        let body = Bytes::from(serde_json::to_vec(message).expect("messages serialize"));
        let mut request = self.request(Method::POST, Full::new(body));
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let params = message.get("params");
        let modern = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(VERSION_META))
            .and_then(Value::as_str);
        if let Some(version) = modern {
            headers.insert(PROTOCOL_VERSION, header_text(version));
            if let Some(method) = message.get("method").and_then(Value::as_str) {
                headers.insert(MCP_METHOD, header_text(method));
                let name = params
                    .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                    .and_then(Value::as_str);
                if let Some(name) = name.filter(|_| NAMED.contains(&method)) {
                    headers.insert(MCP_NAME, header_text(name));
                }
            }
        } else {
            let learnt = lock(&self.shared.learnt);
            if let Some(session) = &learnt.session {
                headers.insert(SESSION_ID, session.clone());
            }
            if let Some(version) = &learnt.version {
                headers.insert(PROTOCOL_VERSION, version.clone());
            }
        }
        request
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn lock(learnt: &Mutex<Learnt>) -> std::sync::MutexGuard<'_, Learnt> {
    learnt
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends one request and puts what its answer carries on the channel,
/// up to and including the response to `id`. An event stream that ends
/// or breaks before the response is resumed (see [`resume`]).
async fn exchange(
    shared: &Shared,
    request: Request<Full<Bytes>>,
    id: i64,
    method: &str,
) -> Result<(), Broken> {
    let sent_session = request.headers().contains_key(SESSION_ID);
    let again = Again::of(&request);
    let response = shared
        .pool
        .request(request)
        .await
        .map_err(|err| failure(&err, &shared.origin, method))?;
    let (parts, body) = response.into_parts();
    check_status(parts.status, method, sent_session, true)?;
    if method == "initialize"
        && let Some(session) = parts.headers.get(SESSION_ID)
    {
        lock(&shared.learnt).session = Some(session.clone());
    }
    match media_type(&parts.headers).as_str() {
        "text/event-stream" => resume(shared, &again, body, id, method).await,
        m if m == "application/json" || m.ends_with("+json") => {
            json_body(shared, body, id, method).await
        }
        _ => Err(Broken::NonJsonBody(format!(
            "the answer to {method} is neither application/json nor text/event-stream"
        ))),
    }
}

/// How many resumed streams in a row may end without bringing a message
/// before the request is given up.
const RESUMPTIONS: u32 = 5;

/// The wait before resuming a stream that named none with `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// What a resumption GET carries from the request it resumes: the
/// endpoint, the user's headers and the era's session and version.
struct Again {
    uri: http::Uri,
    headers: HeaderMap,
}

impl Again {
    fn of(request: &Request<Full<Bytes>>) -> Again {
        let mut headers = request.headers().clone();
        for name in [CONTENT_TYPE, ACCEPT, MCP_METHOD, MCP_NAME] {
            headers.remove(name);
        }
        Again {
            uri: request.uri().clone(),
            headers,
        }
    }
}

/// Reads the event stream answering `id`, and resumes it as the
/// 2025-11-25 transport defines while it ends (or breaks off) before the
/// response: after the wait the server set with `retry` (else 1 s), a GET
/// with `Last-Event-ID` set to the last event id seen. A stream without
/// an event id cannot be resumed; [`RESUMPTIONS`] resumed streams in a
/// row without a message end the request.
async fn resume(
    shared: &Shared,
    again: &Again,
    mut body: Body,
    id: i64,
    method: &str,
) -> Result<(), Broken> {
    let mut last_id: Option<Vec<u8>> = None;
    let mut wait = DEFAULT_RETRY;
    let mut idle = 0;
    let mut resumed = false;
    loop {
        let mut decoder = Decoder::new();
        let read = events(shared, body, id, method, &mut decoder).await;
        if let Some(seen) = decoder.last_event_id() {
            last_id = Some(seen.to_vec());
        }
        if let Some(ms) = decoder.retry() {
            wait = Duration::from_millis(ms);
        }
        let (delivered, cut) = match read? {
            Read::Answered => return Ok(()),
            Read::Cut { delivered, why } => (delivered, why),
        };
        let Some(last) = last_id.as_deref().filter(|l| !l.is_empty()) else {
            return Err(cut);
        };
        idle = if delivered || !resumed { 0 } else { idle + 1 };
        if idle == RESUMPTIONS {
            return Err(Broken::StreamEnded(format!(
                "the event stream answering {method} ended before its response, and \
{RESUMPTIONS} resumptions in a row (GET with Last-Event-ID) brought no message"
            )));
        }
        let Ok(last) = HeaderValue::from_bytes(last) else {
            return Err(Broken::StreamEnded(format!(
                "the event stream answering {method} ended before its response, and its \
last event id cannot be sent back as Last-Event-ID"
            )));
        };
        tokio::time::sleep(wait).await;
        body = reopen(shared, again, last, method).await?;
        resumed = true;
    }
}

/// The GET that resumes the stream answering `method` after `last`.
async fn reopen(
    shared: &Shared,
    again: &Again,
    last: HeaderValue,
    method: &str,
) -> Result<Body, Broken> {
    let what = format!("the resumption of {method}");
    let mut request = Request::new(Full::default());
    *request.method_mut() = Method::GET;
    *request.uri_mut() = again.uri.clone();
    let headers = request.headers_mut();
    *headers = again.headers.clone();
    if !headers.contains_key(SESSION_ID)
        && let Some(session) = lock(&shared.learnt).session.clone()
    {
        // The stream answering initialize broke after issuing a session.
        headers.insert(SESSION_ID, session);
    }
    let sent_session = headers.contains_key(SESSION_ID);
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.insert(LAST_EVENT_ID, last);
    let response = shared
        .pool
        .request(request)
        .await
        .map_err(|err| failure(&err, &shared.origin, &what))?;
    let (parts, body) = response.into_parts();
    if parts.status == StatusCode::METHOD_NOT_ALLOWED {
        return Err(Broken::StreamEnded(format!(
            "the event stream answering {method} ended before its response, and the endpoint \
offers no stream to resume (HTTP 405 to GET)"
        )));
    }
    check_status(parts.status, &what, sent_session, true)?;
    if media_type(&parts.headers) != "text/event-stream" {
        return Err(Broken::NonJsonBody(format!(
            "the answer to {what} is not text/event-stream"
        )));
    }
    Ok(body)
}

/// A JSON answer: one message (or batch) that must hold the response.
async fn json_body(shared: &Shared, mut body: Body, id: i64, method: &str) -> Result<(), Broken> {
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| broke_off(&err, method))?;
        if let Some(data) = frame.data_ref() {
            if (bytes.len() + data.len()) as u64 > MAX_LINE {
                return Err(Broken::NonJsonBody(format!(
                    "the answer to {method} is longer than 64 MiB"
                )));
            }
            bytes.extend_from_slice(data);
        }
    }
    let message: Value = serde_json::from_slice(&bytes)
        .map_err(|_| Broken::NonJsonBody(format!("the answer to {method} is not JSON")))?;
    let answered = responds_to(&message, id);
    let _ = shared.tx.send(Incoming::Message(message));
    if answered {
        Ok(())
    } else {
        Err(Broken::StreamEnded(format!(
            "the JSON answer to {method} holds no response to it"
        )))
    }
}

/// How reading one event stream ended.
enum Read {
    /// The response to the request came.
    Answered,
    /// The stream ended or broke off first; `delivered` when it brought
    /// at least one message.
    Cut { delivered: bool, why: Broken },
}

/// An event stream: every event's data is a message; reading stops at the
/// response to `id`. Events without data (a stream's priming event) and
/// comments carry nothing. `decoder` keeps the event id and `retry` seen.
async fn events(
    shared: &Shared,
    mut body: Body,
    id: i64,
    method: &str,
    decoder: &mut Decoder,
) -> Result<Read, Broken> {
    let mut items = Vec::new();
    let mut delivered = false;
    loop {
        let Some(frame) = body.frame().await else {
            let why = Broken::StreamEnded(format!(
                "the event stream answering {method} ended before its response"
            ));
            return Ok(Read::Cut { delivered, why });
        };
        let frame = match frame {
            Ok(frame) => frame,
            Err(err) => {
                let why = broke_off(&err, method);
                return Ok(Read::Cut { delivered, why });
            }
        };
        let Some(data) = frame.data_ref() else {
            continue;
        };
        decoder.feed(data, &mut |item| items.push(item));
        for item in items.drain(..) {
            let data = match item {
                Item::Oversized => {
                    return Err(Broken::NonJsonBody(format!(
                        "an event answering {method} is longer than 64 MiB"
                    )));
                }
                Item::Data(data) if data.iter().all(u8::is_ascii_whitespace) => continue,
                Item::Data(data) => data,
            };
            let message: Value = serde_json::from_slice(&data).map_err(|_| {
                Broken::NonJsonBody(format!("an event answering {method} is not JSON"))
            })?;
            let answered = responds_to(&message, id);
            delivered = true;
            if shared.tx.send(Incoming::Message(message)).is_err() || answered {
                // The rest of the stream is not read: the connection closes.
                return Ok(Read::Answered);
            }
        }
    }
}

/// POSTs a notification or a reply and checks that it was accepted.
async fn deliver(shared: &Shared, request: Request<Full<Bytes>>, what: &str) -> Result<(), Broken> {
    let sent_session = request.headers().contains_key(SESSION_ID);
    let response = shared
        .pool
        .request(request)
        .await
        .map_err(|err| failure(&err, &shared.origin, what))?;
    check_status(response.status(), what, sent_session, false)?;
    // Read what little there is, so the connection can be reused.
    let _ = response.into_body().collect().await;
    Ok(())
}

/// A 2xx is an answer; a request also needs a body, so 202 and 204 are
/// not. The status code is the only thing of the answer described.
fn check_status(
    status: StatusCode,
    what: &str,
    sent_session: bool,
    request: bool,
) -> Result<(), Broken> {
    let code = status.as_u16();
    if request && (status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT) {
        return Err(Broken::HttpStatus(format!(
            "HTTP {code} without a body in answer to {what}, a request"
        )));
    }
    if status.is_success() {
        return Ok(());
    }
    let why = match code {
        404 if sent_session => ": the server no longer knows the session",
        401 | 403 => ": check the --header credentials",
        _ => "",
    };
    Err(Broken::HttpStatus(format!(
        "HTTP {code} in answer to {what}{why}"
    )))
}

/// The lower-cased media type of a `Content-Type`, without parameters.
fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether `message` is (or a batch holds) the response to `id`.
fn responds_to(message: &Value, id: i64) -> bool {
    match message {
        Value::Object(map) => {
            map.get("method").is_none() && map.get("id").and_then(Value::as_i64) == Some(id)
        }
        Value::Array(batch) => batch.iter().any(|m| responds_to(m, id)),
        _ => false,
    }
}

/// A request that got no answer at all: unreachable when no connection
/// was made, else the connection broke.
fn failure(err: &hyper_util::client::legacy::Error, origin: &str, what: &str) -> Broken {
    let cause = root_cause(err);
    if err.is_connect() {
        Broken::Unreachable(format!("cannot connect to {origin}: {cause}"))
    } else {
        Broken::StreamEnded(format!(
            "the connection to {origin} broke off before the answer to {what}: {cause}"
        ))
    }
}

fn broke_off(err: &hyper::Error, method: &str) -> Broken {
    Broken::StreamEnded(format!(
        "the answer to {method} broke off: {}",
        root_cause(err)
    ))
}

/// The innermost error: `Connection refused (os error 111)` rather than
/// the layers of client errors around it.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

/// A header value for a method or name: as is when it is plain visible
/// ASCII (spaces inside allowed), else the `=?base64?…?=` form the
/// 2026-07-28 transport defines, which a value looking like that form
/// also takes.
fn header_text(text: &str) -> HeaderValue {
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let plain = !sentinel && !padded && text.bytes().all(|b| b == b' ' || b.is_ascii_graphic());
    let encoded;
    let text = if plain {
        text
    } else {
        encoded = format!("=?base64?{}?=", base64(text.as_bytes()));
        &encoded
    };
    HeaderValue::from_str(text).expect("visible ASCII is a header value")
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_values_follow_the_2026_encoding() {
        assert_eq!(header_text("get_weather"), "get_weather");
        assert_eq!(header_text("a b"), "a b");
        assert_eq!(
            header_text("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_text(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_text("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_text("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(header_text(""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }

    #[test]
    fn responses_are_found_by_id() {
        assert!(responds_to(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            3
        ));
        assert!(!responds_to(
            &json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
            3
        ));
        assert!(!responds_to(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
            3
        ));
        assert!(responds_to(
            &json!([{"method": "notifications/progress"}, {"id": 3, "error": {}}]),
            3
        ));
        assert!(!responds_to(&json!("x"), 3));
    }

    #[test]
    fn statuses_are_described_by_code_only() {
        let ok =
            |s: u16, request| check_status(StatusCode::from_u16(s).unwrap(), "m", true, request);
        assert_eq!(ok(200, true), Ok(()));
        assert_eq!(ok(202, false), Ok(()));
        assert_eq!(
            ok(202, true),
            Err(Broken::HttpStatus(
                "HTTP 202 without a body in answer to m, a request".into()
            ))
        );
        assert_eq!(
            ok(404, true),
            Err(Broken::HttpStatus(
                "HTTP 404 in answer to m: the server no longer knows the session".into()
            ))
        );
        assert_eq!(
            ok(500, false),
            Err(Broken::HttpStatus("HTTP 500 in answer to m".into()))
        );
    }
}
