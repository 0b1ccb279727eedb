//! Forwarding one HTTP exchange to the upstream and its answer back.
//!
//! Method, target path, end-to-end headers, body bytes and status pass
//! through unchanged; only hop-by-hop headers (RFC 9110 §7.6.1) are dropped
//! and `Host` names the upstream. On a loopback listener a request whose
//! `Host` or `Origin` is not loopback is refused first ([`loopback`]). A
//! request body is read whole before it is forwarded when it is short
//! enough to observe (a JSON-RPC message is useless to the server until
//! complete), and streamed through unobserved when longer ([`outgoing`]);
//! the response is streamed frame by frame. This module decides which
//! session an exchange belongs to, but never parses a message itself.
//!
//! [`loopback`]: store::loopback
//! [`outgoing`]: crate::http::outgoing

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use jiff::Timestamp;
use mcp::connector::Connector;
use serde_json::{Value, json};
use shared::Error;
use shared::Result;

use crate::http::body::{Observed, Watch};
use crate::http::budget::Budget;
use crate::http::outgoing::{self, Outgoing, Read};
use crate::http::sessions::{Key, Observer};
use crate::http::upstream::Upstream;
use crate::limits::{CONNECTION_BUFFER, OBSERVE_LIMIT};
use crate::session::Side;
use store::loopback::{self, Refusal};

/// The legacy era's session header.
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// What the client receives: the upstream's streamed body, or capture's own
/// answer when the upstream cannot give one.
pub type ProxyBody = Either<Observed, Full<Bytes>>;

/// Shared by every connection.
pub struct Proxy {
    client: Client<Connector, Outgoing>,
    upstream: Upstream,
    host: HeaderValue,
    session_header: Option<HeaderName>,
    observer: Observer,
    /// What every connection holds for observation, together.
    budget: Budget,
    /// Refuse requests not addressed to loopback (a loopback listener).
    loopback_only: bool,
    /// Whether a refusal was reported on stderr yet: once is enough, as a
    /// page can send many.
    said_refused: AtomicBool,
}

impl Proxy {
    pub fn new(
        upstream: Upstream,
        session_header: Option<HeaderName>,
        observer: Observer,
        budget: Budget,
        loopback_only: bool,
    ) -> Result<Proxy> {
        let connector = connector(&upstream)?;
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_preserve_header_case(true)
            .http1_max_buf_size(CONNECTION_BUFFER)
            .build(connector);
        let host = HeaderValue::from_str(upstream.authority().as_str())
            .expect("an authority is a valid header value");
        Ok(Proxy {
            client,
            upstream,
            host,
            session_header,
            observer,
            budget,
            loopback_only,
            said_refused: AtomicBool::new(false),
        })
    }

    /// Relays one request that arrived on client connection `conn`.
    pub async fn handle(
        &self,
        conn: u64,
        request: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Infallible> {
        let (mut parts, body) = request.into_parts();
        if self.loopback_only
            && let Err(refusal) = loopback::check(&parts.headers, &parts.uri)
        {
            return Ok(self.refuse(refusal));
        }
        let sent_session = parts
            .headers
            .get(&MCP_SESSION_ID)
            .map(|v| Key::mcp_session(v.as_bytes()));
        let key = match &sent_session {
            Some(key) => key.clone(),
            None => self.unnamed_key(&parts.headers, conn),
        };
        let method = parts.method.clone();
        // `whole` is the body when it is short enough to observe.
        let (body, whole) = match outgoing::read(body, OBSERVE_LIMIT, &self.budget).await {
            Ok(Read::Whole(whole)) => (Outgoing::Whole(Some(whole.clone())), whole),
            Ok(Read::Oversized(streamed)) => {
                if method == Method::POST {
                    self.observer.oversized();
                }
                (streamed, Bytes::new())
            }
            Ok(Read::OverBudget(streamed)) => {
                if method == Method::POST {
                    self.observer.over_budget();
                }
                (streamed, Bytes::new())
            }
            // The client went away mid-request; nobody reads this answer.
            Err(_) => return Ok(plain(StatusCode::BAD_REQUEST, Bytes::new())),
        };
        let (at, now) = (Timestamp::now(), Instant::now());
        // Observed before it is forwarded, so calls in one session are
        // numbered in the order the client made them, whenever their
        // answers come. Only POST carries JSON-RPC messages.
        let observed = method == Method::POST && !whole.is_empty();
        if observed {
            self.observer
                .message(&key, Side::Client, whole.clone(), at, now);
        }

        self.address(&mut parts);
        let response = match self.client.request(Request::from_parts(parts, body)).await {
            Ok(response) => response,
            Err(err) => {
                // The server never got it: not a call.
                if observed {
                    self.observer.retract(&key, whole.clone());
                }
                return Ok(self.bad_gateway(&whole, &err));
            }
        };

        let (mut parts, incoming) = response.into_parts();
        // A 404 for a session id: the server has forgotten the session and
        // did not process the request.
        let forgotten = sent_session.is_some() && parts.status == StatusCode::NOT_FOUND;
        if forgotten && observed {
            self.observer.retract(&key, whole);
        }
        // A session id issued to a request that had none (an `initialize`):
        // what was seen so far joins the session it opens. One issued in
        // place of the id sent replaces it, as clients take the latest id:
        // the session goes on under the new one, and nothing is kept for
        // the old.
        let key = match parts.headers.get(&MCP_SESSION_ID) {
            Some(issued) => {
                let opened = Key::mcp_session(issued.as_bytes());
                if opened != key {
                    self.observer.adopt(key, opened.clone());
                }
                opened
            }
            None => key,
        };
        let ends = forgotten || (method == Method::DELETE && parts.status.is_success());
        strip_hop_by_hop(&mut parts.headers);
        let (watch, unobservable) = Watch::for_headers(&parts.headers);
        if unobservable {
            self.observer.unobserved();
        }
        let streamed = Observed::new(
            incoming,
            watch,
            &self.budget,
            key,
            self.observer.clone(),
            ends,
        );
        Ok(Response::from_parts(parts, Either::Left(streamed)))
    }

    /// The session of a request that names none by `Mcp-Session-Id`.
    fn unnamed_key(&self, headers: &HeaderMap, conn: u64) -> Key {
        match self
            .session_header
            .as_ref()
            .and_then(|name| headers.get(name))
        {
            Some(value) => Key::header(value.as_bytes()),
            None => Key::Connection(conn),
        }
    }

    /// Readdresses a client's request to the upstream.
    fn address(&self, parts: &mut http::request::Parts) {
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.insert(header::HOST, self.host.clone());
        parts.uri = self.upstream.target(parts.uri.path_and_query());
        parts.version = Version::HTTP_11;
    }

    /// 403 with a JSON-RPC error; the request goes nowhere and nothing of
    /// it is observed or shown.
    fn refuse(&self, refusal: Refusal) -> Response<ProxyBody> {
        self.observer.refused();
        if !self.said_refused.swap(true, Ordering::Relaxed) {
            cli::warn(
                crate::PROGRAM,
                format_args!(
                    "refused a request: {}; the client got 403 (further refusals are counted)",
                    refusal.reason("capture")
                ),
            );
        }
        json_error(
            StatusCode::FORBIDDEN,
            Value::Null,
            &refusal.reason("capture"),
        )
    }

    /// 502 with a JSON-RPC error naming the upstream and the cause.
    fn bad_gateway(
        &self,
        body: &[u8],
        err: &hyper_util::client::legacy::Error,
    ) -> Response<ProxyBody> {
        let what = if err.is_connect() {
            "unreachable"
        } else {
            "failed"
        };
        let cause = causes(err);
        let message = format!("upstream {} {what}: {cause}", self.upstream);
        cli::warn(
            crate::PROGRAM,
            format_args!("{message}; the client got 502 and the request was not recorded"),
        );
        json_error(StatusCode::BAD_GATEWAY, request_id(body), &message)
    }
}

/// The id of the request in `body`, for an answer of capture's own: parsed
/// alone, so a body of many megabytes costs nothing to look at, and null
/// unless it is a short string or number.
fn request_id(body: &[u8]) -> Value {
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    let Ok(Request { id: Some(id) }) = serde_json::from_slice::<Request<'_>>(body) else {
        return Value::Null;
    };
    if id.get().len() > 1024 {
        return Value::Null;
    }
    match serde_json::from_str::<Value>(id.get()) {
        Ok(id @ (Value::String(_) | Value::Number(_))) => id,
        _ => Value::Null,
    }
}

/// Capture's own answer: `status` with a JSON-RPC error for request `id`.
fn json_error(status: StatusCode, id: Value, message: &str) -> Response<ProxyBody> {
    let answer = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32000, "message": format!("{}: {message}", crate::PROGRAM)},
    });
    let mut response = plain(status, Bytes::from(answer.to_string()));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The suite's connector (`mcp::connector`), with a bounded connect.
fn connector(upstream: &Upstream) -> Result<Connector> {
    mcp::connector::connector(upstream.is_https(), Some(Duration::from_secs(10))).map_err(|err| {
        let what = format!("cannot load the trusted certificates for {upstream}");
        Error::transport(what)
            .with_source(err)
            .with_hint("install the CA certificates, or name a PEM file in SSL_CERT_FILE")
    })
}

fn plain(status: StatusCode, body: Bytes) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(body)));
    *response.status_mut() = status;
    response
}

/// An error and its sources, most specific last: `client error (Connect):
/// tcp connect error: Connection refused (os error 111)`.
fn causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}

/// Removes the headers that describe one connection rather than the
/// message: the fixed hop-by-hop set and any the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        header::TRANSFER_ENCODING,
        header::TE,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    let proxy: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("proxy-"))
        .cloned()
        .collect();
    for name in proxy {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_only_hop_by_hop_headers() {
        let mut h = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, X-Hop"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("te", "trailers"),
            ("upgrade", "h2c"),
            ("proxy-authorization", "Basic x"),
            ("proxy-connection", "keep-alive"),
            ("x-hop", "1"),
            ("mcp-session-id", "abc"),
            ("authorization", "Bearer t"),
            ("content-length", "12"),
        ] {
            h.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        strip_hop_by_hop(&mut h);
        let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(left, ["authorization", "content-length", "mcp-session-id"]);
    }
}
