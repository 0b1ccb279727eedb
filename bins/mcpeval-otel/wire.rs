//! Weighing an OTLP protobuf request before decoding it.
//!
//! Decoded, a message takes far more memory than its wire form: an empty
//! attribute is two bytes on the wire and some hundred once decoded. So a
//! request is walked once, without allocating, along the trace schema
//! (`ExportTraceServiceRequest` → `ResourceSpans` → `ScopeSpans` → `Span`
//! and the attributes, events, links and values below them), counting the
//! messages and strings it would decode into and the spans it carries. A
//! request over [`MAX_NODES`] or [`MAX_SPANS`] is refused before any of
//! it is decoded. Malformed wire data stops the walk; the decoder that
//! follows names the fault.
//!
//! [`MAX_NODES`]: crate::limits::MAX_NODES
//! [`MAX_SPANS`]: crate::limits::MAX_SPANS

/// What a request would decode into.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    /// Messages and length-delimited fields (strings, bytes).
    pub nodes: usize,
    /// Spans.
    pub spans: usize,
}

/// The message types of the trace schema whose fields are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    Request,
    ResourceSpans,
    Resource,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    /// Any other message (a status, an entity reference): its fields are
    /// counted, not followed.
    Leaf,
}

impl Message {
    /// The message type of field `number`, when it holds one.
    fn field(self, number: u64) -> Option<Message> {
        use Message::*;
        Some(match (self, number) {
            (Request, 1) => ResourceSpans,
            (ResourceSpans, 1) => Resource,
            (ResourceSpans, 2) => ScopeSpans,
            (Resource, 1) | (Scope, 3) | (Span, 9) | (Event, 3) | (Link, 4) | (KeyValueList, 1) => {
                KeyValue
            }
            (ScopeSpans, 1) => Scope,
            (ScopeSpans, 2) => Span,
            (Span, 11) => Event,
            (Span, 13) => Link,
            (KeyValue, 2) | (ArrayValue, 1) => AnyValue,
            (AnyValue, 5) => ArrayValue,
            (AnyValue, 6) => KeyValueList,
            _ => return None,
        })
    }
}

/// Nesting beyond this is refused by the decoder anyway (prost's limit).
const MAX_DEPTH: usize = 100;

/// Weighs `bytes` as an `ExportTraceServiceRequest`; `None` when the walk
/// gives up early: malformed wire data (left to the decoder to name) or a
/// count past a bound (`stop` says which is reached first).
pub fn weigh(bytes: &[u8], stop: Weight) -> Result<Weight, Malformed> {
    let mut weight = Weight::default();
    walk(bytes, Message::Request, 0, &mut weight, stop)?;
    Ok(weight)
}

/// Why the walk stopped before the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// The wire data is not a protobuf message.
    Wire,
    /// Past a bound of `stop`: the request is too large to decode.
    TooLarge,
}

fn walk(
    mut bytes: &[u8],
    message: Message,
    depth: usize,
    weight: &mut Weight,
    stop: Weight,
) -> Result<(), Malformed> {
    if depth > MAX_DEPTH {
        return Err(Malformed::Wire);
    }
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let number = key >> 3;
        match key & 7 {
            0 => {
                varint(&mut bytes)?;
            }
            1 => bytes = bytes.get(8..).ok_or(Malformed::Wire)?,
            5 => bytes = bytes.get(4..).ok_or(Malformed::Wire)?,
            2 => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| Malformed::Wire)?;
                let inner = bytes.get(..len).ok_or(Malformed::Wire)?;
                bytes = &bytes[len..];
                weight.nodes += 1;
                if weight.nodes > stop.nodes {
                    return Err(Malformed::TooLarge);
                }
                if let Some(sub) = message.field(number) {
                    if sub == Message::Span {
                        weight.spans += 1;
                        if weight.spans > stop.spans {
                            return Err(Malformed::TooLarge);
                        }
                    }
                    walk(inner, sub, depth + 1, weight, stop)?;
                } else if message == Message::Span && number == 15 {
                    walk(inner, Message::Leaf, depth + 1, weight, stop)?;
                }
            }
            _ => return Err(Malformed::Wire),
        }
    }
    Ok(())
}

fn varint(bytes: &mut &[u8]) -> Result<u64, Malformed> {
    let mut value = 0u64;
    for shift in (0..70).step_by(7) {
        let (&b, rest) = bytes.split_first().ok_or(Malformed::Wire)?;
        *bytes = rest;
        if shift == 63 && b > 1 {
            return Err(Malformed::Wire);
        }
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Malformed::Wire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::KeyValue;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message as _;

    const UNBOUNDED: Weight = Weight {
        nodes: usize::MAX,
        spans: usize::MAX,
    };

    fn request(spans: usize, attributes: usize) -> Vec<u8> {
        let span = Span {
            attributes: vec![KeyValue::default(); attributes],
            ..Default::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![span; spans],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    }

    #[test]
    fn counts_spans_and_what_they_decode_into() {
        let weight = weigh(&request(3, 2), UNBOUNDED).unwrap();
        // resource spans, scope spans, 3 spans of 2 attributes each
        assert_eq!(
            weight,
            Weight {
                nodes: 1 + 1 + 3 * 3,
                spans: 3
            }
        );
    }

    #[test]
    fn a_request_past_a_bound_stops_the_walk() {
        let stop = Weight {
            nodes: 100,
            spans: 10,
        };
        assert_eq!(weigh(&request(11, 0), stop), Err(Malformed::TooLarge));
        assert_eq!(weigh(&request(1, 200), stop), Err(Malformed::TooLarge));
        assert!(weigh(&request(10, 5), stop).is_ok());
    }

    #[test]
    fn truncated_or_foreign_bytes_are_malformed() {
        let mut bytes = request(2, 1);
        bytes.pop();
        assert_eq!(weigh(&bytes, UNBOUNDED), Err(Malformed::Wire));
        assert_eq!(
            weigh(b"{\"resourceSpans\":[]}", UNBOUNDED),
            Err(Malformed::Wire)
        );
        assert_eq!(weigh(&[0xff; 11], UNBOUNDED), Err(Malformed::Wire));
    }
}
