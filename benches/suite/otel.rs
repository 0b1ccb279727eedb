//! `mcpeval otel`: spans ingested per second, beside the same calls
//! appended by capture's journal writer alone, in the same run.
//!
//! Ours is the receiver's whole path after a body is read: a protobuf
//! request of 512 `tools/call` spans (an SDK exporter's default batch) is
//! weighed, decoded, read into records, paired and journaled. The baseline
//! appends the very records it made, already built, through
//! `store::journal::Writer`, the writer capture uses: what journaling
//! costs on this disk, below which no ingestion can go.

use std::path::Path;
use std::time::{Duration, Instant};

use mcpeval_otel::decode::{self, Encoding};
use mcpeval_otel::receiver::Receiver;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;
use shared::home::Home;
use shared::record::Call;
use store::journal::Writer;
use store::salt::Salt;

use crate::measure::median;
use crate::report::{Row, Table, count};
use crate::{Sizes, progress};

/// Spans an SDK's batch span processor sends at most per request.
const BATCH: usize = 512;

/// Eight calls a session (one trace each), a tool error every tenth call
/// and a JSON-RPC error with a message every twentieth.
fn requests(spans: u64) -> Vec<Vec<u8>> {
    let kv = |key: &str, value: String| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value)),
        }),
        ..Default::default()
    };
    let service = kv("service.name", "weather".into());
    let all: Vec<Span> = (0..spans)
        .map(|i| {
            let mut attributes = vec![
                kv("mcp.method.name", "tools/call".into()),
                kv("gen_ai.operation.name", "execute_tool".into()),
                kv("gen_ai.tool.name", format!("tool_{}", i % 20)),
                kv("jsonrpc.request.id", (i % 8).to_string()),
                kv("mcp.protocol.version", "2025-11-25".into()),
            ];
            let mut status = None;
            if i % 10 == 3 {
                attributes.push(kv("error.type", "tool_error".into()));
                status = Some(Status {
                    code: 2,
                    ..Default::default()
                });
            } else if i % 20 == 7 {
                attributes.push(kv("error.type", "-32602".into()));
                attributes.push(kv("rpc.response.status_code", "-32602".into()));
                status = Some(Status {
                    code: 2,
                    message: format!("unknown city '{}' (request {i})", i % 97),
                });
            }
            Span {
                trace_id: (i / 8 + 1).to_be_bytes().repeat(2),
                span_id: (i + 1).to_be_bytes().to_vec(),
                name: format!("tools/call tool_{}", i % 20),
                kind: 2,
                start_time_unix_nano: 1_764_662_400_000_000_000 + i * 1_000_000,
                end_time_unix_nano: 1_764_662_400_000_000_000 + i * 1_000_000 + 400_000,
                attributes,
                status,
                ..Default::default()
            }
        })
        .collect();
    all.chunks(BATCH)
        .map(|spans| {
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    resource: Some(opentelemetry_proto::tonic::resource::v1::Resource {
                        attributes: vec![service.clone()],
                        ..Default::default()
                    }),
                    scope_spans: vec![ScopeSpans {
                        spans: spans.to_vec(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            }
            .encode_to_vec()
        })
        .collect()
}

/// Ingests every request into a new store at `home`; the time taken.
fn ingest(home: &Path, bodies: &[Vec<u8>]) -> (Duration, u64) {
    let home = Home::at(home);
    let salt = Salt::from_bytes([7; 32]);
    let start = Instant::now();
    let mut receiver = Receiver::new(salt, Writer::new(&home).expect("journal"), None);
    for body in bodies {
        let request = decode::request(body, Encoding::Protobuf).expect("a good request");
        receiver.take(&request, Instant::now()).expect("journaled");
    }
    let tally = receiver.finish().expect("finished");
    (start.elapsed(), tally.journaled)
}

/// The records of one run's journal, read back (not timed).
fn records(home: &Path) -> Vec<Vec<Call<'static>>> {
    let mut calls = Vec::new();
    for path in store::journal::files(&home.join("journals")).expect("journals") {
        for line in std::fs::read_to_string(path).expect("journal").lines() {
            let call: Call<'_> = serde_json::from_str(line).expect("a record");
            calls.push(Call {
                schema: call.schema.into_owned().into(),
                identity: shared::record::Identity {
                    event_id: call.identity.event_id.into_owned().into(),
                    session: call.identity.session.into_owned().into(),
                    seq: call.identity.seq,
                },
                server: call.server.into_owned().into(),
                tool: call.tool.into_owned().into(),
                started_at: call.started_at.into_owned().into(),
                error: call.error.map(|e| shared::record::CallError {
                    template_id: e.template_id.map(|t| t.into_owned().into()),
                    ..e
                }),
                contract: call.contract.map(shared::record::Contract::into_owned),
                ..call
            });
        }
    }
    calls.chunks(BATCH).map(<[Call<'static>]>::to_vec).collect()
}

/// The same records appended by capture's journal writer alone.
fn append(home: &Path, batches: &[Vec<Call<'static>>]) -> Duration {
    let home = Home::at(home);
    let start = Instant::now();
    let mut writer = Writer::new(&home).expect("journal");
    for batch in batches {
        let (_, failed) = writer.append_all(batch);
        assert!(failed.is_none(), "{failed:?}");
    }
    start.elapsed()
}

pub fn bench(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let spans = sizes.otel_spans;
    progress(format_args!(
        "making {} tools/call spans in batches of {BATCH}",
        count(spans)
    ));
    let bodies = requests(spans);
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for rep in 0..sizes.reps {
        progress(format_args!(
            "ingesting {} spans, then appending their records alone ({} of {})",
            count(spans),
            rep + 1,
            sizes.reps
        ));
        let home = scratch.join(format!("otel-{rep}"));
        let (took, journaled) = ingest(&home, &bodies);
        assert_eq!(journaled, spans, "one record per span");
        ours.push(took);
        let batches = records(&home);
        let again = scratch.join(format!("otel-writer-{rep}"));
        base.push(append(&again, &batches));
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::remove_dir_all(&again);
    }
    let (ours, base) = (median(&ours), median(&base));
    let per_s = |d: Duration| spans as f64 / d.as_secs_f64();
    let rate = |d: Duration| format!("{:.0}k spans/s", per_s(d) / 1e3);
    table.push(Row {
        figure: format!(
            "otel: {} tools/call spans ingested (protobuf, {BATCH} a request: decode, read, pair, journal)",
            count(spans)
        ),
        ours: rate(ours),
        baseline: format!("{} (capture's journal writer, records prebuilt)", rate(base)),
        ratio: crate::report::times(ours, base),
        target: "≥ 100k spans/s".into(),
        met: Some(per_s(ours) >= 100_000.0),
    });
}
