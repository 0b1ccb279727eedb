//! From bytes as they arrive (a request body, an import line) to an
//! `ExportTraceServiceRequest`, within the bounds of [`crate::limits`].
//!
//! Both OTLP encodings are read: binary protobuf, weighed first by
//! [`crate::wire`], and the OTLP JSON mapping, weighed first by the same
//! measure capture uses for JSON. A gzip body is inflated through a
//! reader that stops one byte past [`MAX_DECODED`], so a bomb costs no
//! more than the limit. Errors say what was wrong, never what was sent.

use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

use crate::limits::{MAX_DECODED, MAX_NODES, MAX_SPANS, PARSE_BUDGET};
use crate::wire::{self, Malformed, Weight};

/// An OTLP encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`: the OTLP JSON mapping.
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names; `None` for any other type.
    pub fn from_content_type(value: &str) -> Option<Encoding> {
        let essence = value.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Encoding::Protobuf)
        } else if essence.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    /// The `Content-Type` of an answer in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Why bytes were not a request this receiver takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Past a size bound: what was over, for the message.
    TooLarge(String),
    /// Not a request in the encoding it claimed: why, for the message.
    Malformed(String),
}

impl Refused {
    /// The text the sender and stderr are told.
    pub fn message(&self) -> &str {
        match self {
            Refused::TooLarge(why) | Refused::Malformed(why) => why,
        }
    }
}

/// Inflates a gzip body, refusing one that would pass [`MAX_DECODED`].
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, Refused> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(MAX_DECODED as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|err| Refused::Malformed(format!("the gzip body does not inflate: {err}")))?;
    if out.len() > MAX_DECODED {
        return Err(Refused::TooLarge(format!(
            "the body inflates past {} MiB, the most one request may hold; send smaller batches",
            MAX_DECODED >> 20
        )));
    }
    Ok(out)
}

/// Decodes one request in `encoding`, within every bound.
pub fn request(bytes: &[u8], encoding: Encoding) -> Result<ExportTraceServiceRequest, Refused> {
    if bytes.len() > MAX_DECODED {
        return Err(Refused::TooLarge(format!(
            "the request is {} bytes, over the {} MiB one request may hold; send smaller batches",
            bytes.len(),
            MAX_DECODED >> 20
        )));
    }
    let request = match encoding {
        Encoding::Protobuf => {
            let stop = Weight {
                nodes: MAX_NODES,
                spans: MAX_SPANS,
            };
            match wire::weigh(bytes, stop) {
                Ok(_) => {}
                Err(Malformed::TooLarge) => return Err(too_many()),
                Err(Malformed::Wire) => {
                    return Err(Refused::Malformed(
                        "the body is not an OTLP ExportTraceServiceRequest in protobuf".into(),
                    ));
                }
            }
            ExportTraceServiceRequest::decode(bytes).map_err(|err| {
                Refused::Malformed(format!(
                    "the body is not an OTLP ExportTraceServiceRequest in protobuf: {err}"
                ))
            })?
        }
        Encoding::Json => {
            if store::json_cost::parse_cost(bytes) > PARSE_BUDGET {
                return Err(too_many());
            }
            serde_json::from_slice(bytes).map_err(|err| {
                // Where, and what kind of fault; never serde's own text,
                // which quotes the value it did not expect.
                let kind = match err.classify() {
                    serde_json::error::Category::Data => "a field of the wrong type",
                    serde_json::error::Category::Eof => "the text ends early",
                    _ => "not JSON",
                };
                Refused::Malformed(format!(
                    "the body is not an OTLP ExportTraceServiceRequest in JSON: {kind} at line {} column {}",
                    err.line(),
                    err.column()
                ))
            })?
        }
    };
    if spans(&request) > MAX_SPANS {
        return Err(too_many());
    }
    Ok(request)
}

fn too_many() -> Refused {
    Refused::TooLarge(format!(
        "the request carries more than {MAX_SPANS} spans or {MAX_NODES} attributes and values, the most one request may; send smaller batches"
    ))
}

/// The spans a request carries.
pub fn spans(request: &ExportTraceServiceRequest) -> usize {
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn content_types_name_the_encoding() {
        assert_eq!(
            Encoding::from_content_type("application/x-protobuf"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            Encoding::from_content_type("Application/JSON; charset=utf-8"),
            Some(Encoding::Json)
        );
        assert_eq!(Encoding::from_content_type("text/plain"), None);
    }

    #[test]
    fn a_gzip_bomb_is_refused_at_the_limit() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; MAX_DECODED + 1]).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 64 * 1024);
        assert!(matches!(gunzip(&bomb), Err(Refused::TooLarge(_))));
        assert!(matches!(gunzip(b"not gzip"), Err(Refused::Malformed(_))));
    }

    #[test]
    fn json_of_many_small_objects_is_weighed_before_parsing() {
        let mut text = String::from(r#"{"resourceSpans":[{"scopeSpans":[{"spans":["#);
        while text.len() < MAX_DECODED - 16 {
            text.push_str("{},");
        }
        text.push_str("{}]}]}]}");
        assert!(matches!(
            request(text.as_bytes(), Encoding::Json),
            Err(Refused::TooLarge(_))
        ));
    }

    #[test]
    fn malformed_json_is_named_without_its_text() {
        let err = request(br#"{"resourceSpans": "sk-canary-secret"}"#, Encoding::Json).unwrap_err();
        assert!(matches!(err, Refused::Malformed(_)));
        assert!(!err.message().contains("canary"), "{}", err.message());
    }
}
