//! A response body that is forwarded frame by frame while a copy of each
//! JSON-RPC message in it goes to the observer.
//!
//! Nothing is held back: every frame is handed on in the same poll that
//! received it. A message is handed to the observer *before* the frame that
//! completes it is forwarded, so the observer never sees a client's next
//! request before the response it reacted to. Bodies that are neither JSON
//! nor an event stream are relayed unobserved. A copy never grows past
//! [`OBSERVE_LIMIT`]: a longer message is relayed, counted, never held.
//! What a body holds for observation (its copy, or its event decoder's
//! buffers) is charged to the budget shared by every connection; when the
//! budget has no room, the rest of the body is relayed unobserved.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use jiff::Timestamp;

use crate::http::budget::{Budget, Charge, MESSAGE_OVERHEAD};
use crate::http::json::Scanner;
use crate::http::sessions::{Key, Observer};
use crate::limits::OBSERVE_LIMIT;
use crate::session::Side;
use mcp::sse::{Decoder, Item};

/// How a body's messages are found.
#[derive(Debug)]
pub enum Watch {
    /// One JSON value (a message or a batch).
    Json { scanner: Scanner, copy: Vec<u8> },
    /// `data:` of each server-sent event.
    Events(Decoder),
    /// Not observed.
    Nothing,
}

impl Watch {
    /// The watch for a body with these headers: JSON and event streams are
    /// observed; compressed bodies and every other type are not.
    pub fn for_headers(headers: &HeaderMap) -> (Watch, bool) {
        let encoded = headers
            .get(CONTENT_ENCODING)
            .is_some_and(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"));
        let media = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let watch = if media == "text/event-stream" {
            Watch::Events(Decoder::with_limit(OBSERVE_LIMIT))
        } else if media == "application/json" || media.ends_with("+json") {
            Watch::Json {
                scanner: Scanner::default(),
                copy: Vec::new(),
            }
        } else {
            return (Watch::Nothing, false);
        };
        if encoded {
            (Watch::Nothing, true)
        } else {
            (watch, false)
        }
    }
}

/// The upstream's response body on its way to the client.
pub struct Observed {
    inner: Incoming,
    watch: Watch,
    /// What `watch` holds, charged to the shared budget.
    charge: Charge,
    budget: Budget,
    key: Key,
    observer: Observer,
    /// End the session once the body is done (a DELETE, an expired session).
    end_session: bool,
    done: bool,
    failed: bool,
}

impl Observed {
    pub fn new(
        inner: Incoming,
        watch: Watch,
        budget: &Budget,
        key: Key,
        observer: Observer,
        end_session: bool,
    ) -> Observed {
        Observed {
            inner,
            watch,
            charge: budget.charge(),
            budget: budget.clone(),
            key,
            observer,
            end_session,
            done: false,
            failed: false,
        }
    }

    fn see(&mut self, data: &[u8]) {
        let (at, now) = (Timestamp::now(), Instant::now());
        let (key, observer, budget) = (&self.key, &self.observer, &self.budget);
        match &mut self.watch {
            Watch::Json { scanner, copy } => {
                let need = copy.len() + data.len();
                if need > OBSERVE_LIMIT {
                    observer.oversized();
                    self.stop_watching();
                    return;
                }
                if need > copy.capacity() {
                    // Grown as a vector would, but charged first.
                    let room = need.max(2 * copy.capacity()).min(OBSERVE_LIMIT);
                    if !self.charge.resize(room + MESSAGE_OVERHEAD) {
                        observer.over_budget();
                        self.stop_watching();
                        return;
                    }
                    copy.reserve_exact(room - copy.len());
                }
                copy.extend_from_slice(data);
                if scanner.feed(data) {
                    let whole = Bytes::from(std::mem::take(copy));
                    let charge = std::mem::replace(&mut self.charge, budget.charge());
                    observer.message(key, Side::Server, charge.attach(whole), at, now);
                    self.watch = Watch::Nothing;
                }
            }
            Watch::Events(decoder) => {
                if !self.charge.resize(decoder.held() + data.len()) {
                    observer.over_budget();
                    self.stop_watching();
                    return;
                }
                decoder.feed(data, &mut |item| match item {
                    Item::Data(bytes) => match budget.take(bytes.len() + MESSAGE_OVERHEAD) {
                        Some(charge) => {
                            let bytes = charge.attach(Bytes::from(bytes));
                            observer.message(key, Side::Server, bytes, at, now);
                        }
                        None => observer.over_budget(),
                    },
                    Item::Oversized => observer.oversized(),
                });
                self.charge.resize(decoder.held());
            }
            Watch::Nothing => {}
        }
    }

    /// Relays the rest of the body unobserved, holding nothing.
    fn stop_watching(&mut self) {
        self.watch = Watch::Nothing;
        self.charge.resize(0);
    }

    /// The body ended (or was dropped): hand over what is left, once.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if let Watch::Json { copy, .. } = &mut self.watch
            && !copy.is_empty()
            && !self.failed
        {
            // Not an object or array: let the observer count it.
            let charge = std::mem::replace(&mut self.charge, self.budget.charge());
            let rest = charge.attach(Bytes::from(std::mem::take(copy)));
            self.observer.message(
                &self.key,
                Side::Server,
                rest,
                Timestamp::now(),
                Instant::now(),
            );
        }
        self.stop_watching();
        if self.end_session {
            self.observer.end(self.key.clone());
        }
        // The request's copy waits unseen until an answer's end says so.
        self.observer.wake();
    }
}

impl Body for Observed {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        match &polled {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.see(data);
                }
            }
            Some(Err(_)) => this.failed = true,
            None => this.finish(),
        }
        Poll::Ready(polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn watch(content_type: &str, encoding: Option<&str>) -> (&'static str, bool) {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
        if let Some(e) = encoding {
            h.insert(CONTENT_ENCODING, HeaderValue::from_str(e).unwrap());
        }
        let (w, counted) = Watch::for_headers(&h);
        let kind = match w {
            Watch::Json { .. } => "json",
            Watch::Events(_) => "events",
            Watch::Nothing => "nothing",
        };
        (kind, counted)
    }

    #[test]
    fn chooses_by_media_type() {
        assert_eq!(
            watch("application/json; charset=utf-8", None),
            ("json", false)
        );
        assert_eq!(watch("Text/Event-Stream", None), ("events", false));
        assert_eq!(watch("text/html", None), ("nothing", false));
        assert_eq!(watch("application/json", Some("gzip")), ("nothing", true));
        assert_eq!(watch("application/json", Some("identity")), ("json", false));
    }
}
