//! The floor for capture's HTTP proxy: a reverse proxy on the same stack
//! (hyper and hyper-util on a tokio runtime of one worker, the suite's
//! connector, the same server and client settings as capture's) that only
//! forwards.
//!
//! It runs as this bench binary re-executed with `--bare-proxy PORT`,
//! prints the loopback port it listens on, and forwards every request to
//! `127.0.0.1:PORT` until killed. What capture adds over it (reading a
//! body whole, the loopback checks, sessions, observing) is what the
//! bench's row weighs; so it must never do more than readdress a request
//! and stream both bodies through.

use std::io::Write;
use std::time::Duration;

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use mcp::connector::Connector;
use tokio::net::TcpListener;

/// capture's `limits::CONNECTION_BUFFER`.
const CONNECTION_BUFFER: usize = 64 * 1024;

/// `--bare-proxy PORT`: serves until killed.
pub fn main(args: &[String]) {
    let port: u16 = args
        .first()
        .and_then(|p| p.parse().ok())
        .expect("--bare-proxy takes the upstream's port");
    // The runtime capture builds: one worker.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(serve(port));
}

async fn serve(port: u16) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    println!("{}", listener.local_addr().expect("address").port());
    std::io::stdout().flush().expect("port");
    let connector: Connector =
        mcp::connector::connector(false, Some(Duration::from_secs(10))).expect("connector");
    // As capture's `Proxy::new` builds its client.
    let client: Client<Connector, Incoming> = Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .http1_preserve_header_case(true)
        .http1_max_buf_size(CONNECTION_BUFFER)
        .build(connector);
    let authority = format!("127.0.0.1:{port}");
    let host = HeaderValue::from_str(&authority).expect("host");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (client, authority, host) = (client.clone(), authority.clone(), host.clone());
        let service = service_fn(move |request| {
            forward(client.clone(), authority.clone(), host.clone(), request)
        });
        // As capture serves a connection.
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .preserve_header_case(true)
                .auto_date_header(false)
                .max_buf_size(CONNECTION_BUFFER)
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Readdresses `request` to the upstream and hands back its response, both
/// bodies streamed.
async fn forward(
    client: Client<Connector, Incoming>,
    authority: String,
    host: HeaderValue,
    request: Request<Incoming>,
) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
    let (mut parts, body) = request.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    parts.uri = Uri::builder()
        .scheme("http")
        .authority(authority)
        .path_and_query(target)
        .build()
        .expect("a valid URI");
    parts.headers.insert(header::HOST, host);
    parts.version = Version::HTTP_11;
    client.request(Request::from_parts(parts, body)).await
}
