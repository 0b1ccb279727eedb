//! A client's request body on its way to the upstream, held only as far as
//! it can be observed.
//!
//! A JSON-RPC message is useless to the server until it is complete, so a
//! body up to the observation limit is read whole, observed, then sent. A
//! longer one is not held: what was read so far goes first, and the rest is
//! streamed through frame by frame as the upstream takes it, so a client
//! sending a gigabyte costs capture the limit and no more. What is held is
//! charged to the observation budget shared by all connections; when the
//! budget has no room, the body is streamed through unobserved the same
//! way, so many slow clients cannot make capture hold more than the budget.
//! Its bytes reach the upstream unchanged either way.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::http::budget::{Budget, Charge, MESSAGE_OVERHEAD};

/// The body of a forwarded request.
#[derive(Debug)]
pub enum Outgoing {
    /// Read whole: small enough to observe.
    Whole(Option<Bytes>),
    /// Not held whole: the pieces read (and their charge, given back once
    /// they are sent), then the rest as it comes.
    Streamed {
        read: VecDeque<Bytes>,
        held: Option<Charge>,
        rest: Incoming,
    },
}

/// A request body after reading up to the limit.
pub enum Read {
    /// The whole body, carrying its charge.
    Whole(Bytes),
    /// Longer than the limit.
    Oversized(Outgoing),
    /// The budget had no room for it.
    OverBudget(Outgoing),
}

/// Reads `body` until it ends or passes `limit` bytes, charging what it
/// holds to `budget`. Trailers of a body read whole are dropped, as a JSON
/// message has no use for them; a streamed body passes them on.
pub async fn read(mut body: Incoming, limit: usize, budget: &Budget) -> Result<Read, hyper::Error> {
    // The first piece as hyper gave it; later ones are copied into `joined`
    // with it, so a body sent a byte at a time holds no piece per byte.
    let mut first: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    let mut length = 0usize;
    let mut charge = budget.charge();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        length += data.len();
        if first.is_none() && joined.is_empty() {
            first = Some(data);
        } else {
            if let Some(first) = first.take() {
                joined.extend_from_slice(&first);
            }
            joined.extend_from_slice(&data);
        }
        let over = length > limit;
        let holding = length.max(joined.capacity()) + MESSAGE_OVERHEAD;
        if over || !charge.resize(holding) {
            let rest = (!joined.is_empty()).then(|| joined.freeze());
            let read = first.into_iter().chain(rest).collect();
            let streamed = Outgoing::Streamed {
                read,
                held: Some(charge),
                rest: body,
            };
            return Ok(if over {
                Read::Oversized(streamed)
            } else {
                Read::OverBudget(streamed)
            });
        }
    }
    let whole = first.unwrap_or_else(|| joined.freeze());
    Ok(Read::Whole(charge.attach(whole)))
}

impl Body for Outgoing {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            Outgoing::Whole(bytes) => Poll::Ready(
                bytes
                    .take()
                    .filter(|b| !b.is_empty())
                    .map(|b| Ok(Frame::data(b))),
            ),
            Outgoing::Streamed { read, held, rest } => match read.pop_front() {
                Some(piece) => {
                    if read.is_empty() {
                        // Handed to hyper: what it holds, it bounds.
                        *held = None;
                    }
                    Poll::Ready(Some(Ok(Frame::data(piece))))
                }
                None => Pin::new(rest).poll_frame(cx),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Outgoing::Whole(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            Outgoing::Streamed { read, rest, .. } => read.is_empty() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Outgoing::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Outgoing::Streamed { read, rest, .. } => {
                let held: u64 = read.iter().map(|b| b.len() as u64).sum();
                let rest = rest.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(rest.lower() + held);
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper + held);
                }
                hint
            }
        }
    }
}
