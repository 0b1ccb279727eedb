//! The OTLP/HTTP receiver: `POST /v1/traces`, answered as the OTLP
//! specification says.
//!
//! Only this mode starts an async runtime (tokio, hyper). Each request is
//! checked before its body is read (path, method, loopback `Host` and
//! `Origin` as capture checks them, content type and encoding, declared
//! length), then read and decoded by at most [`DECODING_AT_ONCE`] at a
//! time within [`crate::limits`], and journaled under one lock. A refused
//! request changes nothing. On SIGINT or SIGTERM the receiver stops
//! accepting, journals the client spans it still holds and ends.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message as _;
use shared::Error;
use shared::Result;
use shared::home::Home;
use store::loopback;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Semaphore;

use crate::PROGRAM;
use crate::args::Listen;
use crate::decode::{self, Encoding, Refused};
use crate::limits::{DECODING_AT_ONCE, MAX_BODY, MAX_CONNECTIONS};
use crate::receiver::Receiver;
use crate::tally::Tally;

/// The one path OTLP/HTTP sends traces to.
const TRACES: &str = "/v1/traces";

/// Serves until SIGINT or SIGTERM; returns what the run did.
pub fn run(home: &Home, server: Option<String>, listen: Listen) -> Result<Tally> {
    // Open the store first, so a receiver that cannot journal fails
    // before any exporter connects.
    let receiver = Receiver::open(home, server)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("otel-http")
        .build()
        .map_err(|err| Error::io("cannot start the HTTP runtime", err))?;
    let shared = Arc::new(Shared {
        receiver: Mutex::new(receiver),
        decoding: Semaphore::new(DECODING_AT_ONCE),
        loopback: loopback::is_loopback_listener(listen.addr.ip()),
        said: Mutex::new(Said::default()),
    });
    let served = runtime.block_on(serve(listen, shared.clone()));
    runtime.shutdown_background();
    served?;
    let mut receiver = shared.receiver.lock().unwrap_or_else(|p| p.into_inner());
    receiver.finish()
}

/// What every connection shares.
struct Shared {
    receiver: Mutex<Receiver>,
    decoding: Semaphore,
    loopback: bool,
    said: Mutex<Said>,
}

/// Which kinds of refusal were already reported on stderr (the first of
/// each is; the rest are counted).
#[derive(Default)]
struct Said {
    kinds: Vec<&'static str>,
}

async fn serve(listen: Listen, shared: Arc<Shared>) -> Result<()> {
    let listener = TcpListener::bind(listen.addr).await.map_err(|err| {
        Error::io(format_args!("cannot listen on {}", listen.addr), err)
            .with_hint("choose another address, or port 0 for any free port")
    })?;
    let local = listener
        .local_addr()
        .map_err(|err| Error::io("cannot read the listening address", err))?;
    if !shared.loopback {
        cli::warn(
            PROGRAM,
            format_args!(
                "{local} is not a loopback address: anyone who can reach it can write tool calls into this store"
            ),
        );
    }
    eprintln!("{PROGRAM}: listening on http://{local}{TRACES}");
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|err| Error::io("cannot install signal handlers", err))?;
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|err| Error::io("cannot install signal handlers", err))?;
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let Ok(slot) = connections.clone().try_acquire_owned() else {
                        // Full: the client is told to come back later, without a read.
                        tokio::spawn(async move {
                            use tokio::io::AsyncWriteExt;
                            let mut stream = stream;
                            let _ = stream.write_all(b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                        });
                        continue;
                    };
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request| {
                            let shared = shared.clone();
                            async move { Ok::<_, Infallible>(handle(&shared, request).await) }
                        });
                        let _ = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(Duration::from_secs(30))
                            .max_buf_size(64 * 1024)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                        drop(slot);
                    });
                }
                Err(err) => {
                    cli::warn(PROGRAM, format_args!("cannot accept a connection: {err}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = tick.tick() => {
                let deadline = Instant::now().checked_sub(listen.pair_wait);
                if let Some(deadline) = deadline {
                    let mut receiver = shared.receiver.lock().unwrap_or_else(|p| p.into_inner());
                    if let Err(err) = receiver.expire(deadline) {
                        cli::warn(PROGRAM, format_args!("{err}"));
                    }
                }
            }
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        }
    }
    Ok(())
}

/// An answer and, for a refusal, the kind reported on stderr.
type Answer = Response<Full<Bytes>>;

async fn handle(shared: &Shared, request: Request<Incoming>) -> Answer {
    let (parts, body) = request.into_parts();
    let encoding = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(Encoding::from_content_type);
    match check(shared, &parts, encoding) {
        Ok(checked) => take(shared, checked, body).await,
        Err(answer) => {
            drain(body).await;
            *answer
        }
    }
}

/// What a request that passed the checks made before its body said.
struct Checked {
    encoding: Encoding,
    gzip: bool,
}

/// The checks made before a body is read: where it goes, from where, in
/// which type and encoding, and how long it says it is.
fn check(
    shared: &Shared,
    parts: &http::request::Parts,
    encoding: Option<Encoding>,
) -> std::result::Result<Checked, Box<Answer>> {
    // Errors before the encoding is known are answered in protobuf, the
    // default of OTLP/HTTP.
    let answer_in = encoding.unwrap_or(Encoding::Protobuf);
    if shared.loopback
        && let Err(refusal) = loopback::check(&parts.headers, &parts.uri)
    {
        return Err(Box::new(refuse(
            shared,
            answer_in,
            StatusCode::FORBIDDEN,
            "loopback",
            &refusal.reason("the receiver"),
        )));
    }
    if parts.uri.path() != TRACES {
        return Err(Box::new(refuse(
            shared,
            answer_in,
            StatusCode::NOT_FOUND,
            "path",
            &format!("this receiver answers POST {TRACES} only (traces; not metrics or logs)"),
        )));
    }
    if parts.method != Method::POST {
        let mut answer = refuse(
            shared,
            answer_in,
            StatusCode::METHOD_NOT_ALLOWED,
            "method",
            &format!("{TRACES} takes POST only"),
        );
        answer
            .headers_mut()
            .insert(header::ALLOW, http::HeaderValue::from_static("POST"));
        return Err(Box::new(answer));
    }
    let Some(encoding) = encoding else {
        return Err(Box::new(refuse(
            shared,
            answer_in,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "type",
            "the Content-Type is neither application/x-protobuf nor application/json",
        )));
    };
    let gzip = match parts
        .headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().map(str::trim))
    {
        None => false,
        Some(Ok(e)) if e.eq_ignore_ascii_case("identity") || e.is_empty() => false,
        Some(Ok(e)) if e.eq_ignore_ascii_case("gzip") => true,
        Some(_) => {
            return Err(Box::new(refuse(
                shared,
                encoding,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "encoding",
                "the Content-Encoding is neither gzip nor identity",
            )));
        }
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(Box::new(too_large(shared, encoding)));
    }
    Ok(Checked { encoding, gzip })
}

/// How much of a refused request's body is read and dropped before the
/// answer, so closing the connection does not reset it under the answer.
const DRAIN: usize = 64 * 1024;

async fn drain(body: Incoming) {
    let read = Limited::new(body, DRAIN).collect();
    let _ = tokio::time::timeout(Duration::from_secs(5), read).await;
}

/// Reads, decodes and journals one request that passed the checks.
async fn take(shared: &Shared, checked: Checked, body: Incoming) -> Answer {
    let Checked { encoding, gzip } = checked;
    let Ok(_permit) = shared.decoding.acquire().await else {
        return unavailable(encoding, "the receiver is stopping");
    };
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => {
            return too_large(shared, encoding);
        }
        Err(_) => {
            return refuse(
                shared,
                encoding,
                StatusCode::BAD_REQUEST,
                "body",
                "the request body could not be read to its end",
            );
        }
    };
    let decoded = if gzip {
        decode::gunzip(&body)
    } else {
        Ok(body.to_vec())
    };
    drop(body);
    let request = match decoded.and_then(|bytes| decode::request(&bytes, encoding)) {
        Ok(request) => request,
        Err(Refused::TooLarge(why)) => {
            return refuse(
                shared,
                encoding,
                StatusCode::PAYLOAD_TOO_LARGE,
                "large",
                &why,
            );
        }
        Err(Refused::Malformed(why)) => {
            return refuse(shared, encoding, StatusCode::BAD_REQUEST, "malformed", &why);
        }
    };
    let taken = {
        let mut receiver = shared.receiver.lock().unwrap_or_else(|p| p.into_inner());
        receiver.take(&request, Instant::now())
    };
    match taken {
        Ok(taken) => {
            let partial = (taken.rejected > 0).then(|| ExportTracePartialSuccess {
                rejected_spans: taken.rejected as i64,
                error_message: format!(
                    "{} tools/call span(s) had no tool name, no trace or session id, or no start time; the other spans were taken",
                    taken.rejected
                ),
            });
            let response = ExportTraceServiceResponse {
                partial_success: partial,
            };
            let body = match encoding {
                Encoding::Protobuf => response.encode_to_vec(),
                Encoding::Json => serde_json::to_vec(&response).expect("a response serializes"),
            };
            reply(StatusCode::OK, encoding, body)
        }
        Err(err) => {
            cli::warn(PROGRAM, format_args!("{err}"));
            unavailable(
                encoding,
                "the journal could not be written; try again later",
            )
        }
    }
}

/// `google.rpc.Status`, the body of every OTLP/HTTP error answer.
#[derive(Clone, PartialEq, prost::Message, serde::Serialize)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

fn reply(status: StatusCode, encoding: Encoding, body: Vec<u8>) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(body)));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(encoding.content_type()),
    );
    answer
}

fn status_body(encoding: Encoding, code: i32, message: &str) -> Vec<u8> {
    let status = Status {
        code,
        message: format!("{PROGRAM}: {message}"),
    };
    match encoding {
        Encoding::Protobuf => status.encode_to_vec(),
        Encoding::Json => serde_json::to_vec(&status).expect("a status serializes"),
    }
}

/// A refusal: not retryable, nothing kept; the first of each kind is said
/// on stderr.
fn refuse(
    shared: &Shared,
    encoding: Encoding,
    status: StatusCode,
    kind: &'static str,
    message: &str,
) -> Answer {
    shared
        .receiver
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .refused();
    let first = {
        let mut said = shared.said.lock().unwrap_or_else(|p| p.into_inner());
        let first = !said.kinds.contains(&kind);
        if first {
            said.kinds.push(kind);
        }
        first
    };
    if first {
        cli::warn(
            PROGRAM,
            format_args!(
                "refused a request with {}: {message} (further refusals of this kind are counted)",
                status.as_u16()
            ),
        );
    }
    // google.rpc.Code: INVALID_ARGUMENT, or PERMISSION_DENIED for 403.
    let code = if status == StatusCode::FORBIDDEN {
        7
    } else {
        3
    };
    reply(status, encoding, status_body(encoding, code, message))
}

fn too_large(shared: &Shared, encoding: Encoding) -> Answer {
    refuse(
        shared,
        encoding,
        StatusCode::PAYLOAD_TOO_LARGE,
        "large",
        &format!(
            "the body is over {} MiB, the most one request may hold; send smaller batches",
            MAX_BODY >> 20
        ),
    )
}

/// 503 with Retry-After: the sender keeps the spans and tries again.
fn unavailable(encoding: Encoding, message: &str) -> Answer {
    // google.rpc.Code UNAVAILABLE.
    let mut answer = reply(
        StatusCode::SERVICE_UNAVAILABLE,
        encoding,
        status_body(encoding, 14, message),
    );
    answer
        .headers_mut()
        .insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    answer
}
