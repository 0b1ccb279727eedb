//! A client's request body on its way to the upstream, held only as far as
//! it can be observed.
//!
//! A JSON-RPC message is useless to the server until it is complete, so a
//! body up to the observation limit is read whole, observed, then sent. A
//! longer one is not held: what was read so far goes first, and the rest is
//! streamed through frame by frame as the upstream takes it, so a client
//! sending a gigabyte costs capture the limit and no more. Its bytes reach
//! the upstream unchanged either way.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The body of a forwarded request.
#[derive(Debug)]
pub enum Outgoing {
    /// Read whole: small enough to observe.
    Whole(Option<Bytes>),
    /// Longer than the limit: the pieces read, then the rest as it comes.
    Streamed {
        read: VecDeque<Bytes>,
        rest: Incoming,
    },
}

/// A request body after reading up to the limit.
pub enum Read {
    Whole(Bytes),
    Oversized(Outgoing),
}

/// Reads `body` until it ends or passes `limit` bytes. Trailers of a body
/// read whole are dropped, as a JSON message has no use for them; a
/// streamed body passes them on.
pub async fn read(mut body: Incoming, limit: usize) -> Result<Read, hyper::Error> {
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut length = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        length += data.len();
        pieces.push(data);
        if length > limit {
            return Ok(Read::Oversized(Outgoing::Streamed {
                read: pieces.into(),
                rest: body,
            }));
        }
    }
    let whole = match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut joined = BytesMut::with_capacity(length);
            for piece in &pieces {
                joined.extend_from_slice(piece);
            }
            joined.freeze()
        }
    };
    Ok(Read::Whole(whole))
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
            Outgoing::Streamed { read, rest } => match read.pop_front() {
                Some(piece) => Poll::Ready(Some(Ok(Frame::data(piece)))),
                None => Pin::new(rest).poll_frame(cx),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Outgoing::Whole(bytes) => bytes.as_ref().is_none_or(Bytes::is_empty),
            Outgoing::Streamed { read, rest } => read.is_empty() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Outgoing::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Outgoing::Streamed { read, rest } => {
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
