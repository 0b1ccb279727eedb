//! Streamable HTTP capture: a reverse proxy in front of one MCP endpoint.
//!
//! Only this mode starts an async runtime (tokio, hyper); the stdio relay
//! never does. Each client connection is served by hyper on the runtime,
//! each request is forwarded by [`proxy`], and copies of the JSON-RPC
//! messages go to one observer thread ([`sessions`]) that owns the journal.
//! On SIGINT or SIGTERM capture stops accepting, ends every session (its
//! unanswered calls are recorded) and exits 0. Nothing is written to stdout.
//!
//! Whatever clients send, what capture holds is bounded ([`crate::limits`]):
//! a message is observed only up to [`OBSERVE_LIMIT`], all connections
//! together hold at most [`OBSERVE_BUDGET`] for observation ([`budget`]),
//! at most [`MAX_CONNECTIONS`] are served at once (another gets `503`), and
//! the sessions tracked are bounded in number and bytes ([`sessions`]). The
//! upstream is only ever shown as `scheme://host:port`.
//!
//! [`OBSERVE_LIMIT`]: crate::limits::OBSERVE_LIMIT

mod body;
mod budget;
mod json;
mod outgoing;
mod proxy;
mod queue;
mod sessions;
pub mod upstream;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use shared::Error;
use shared::Result;
use shared::home::Home;
use store::journal::Writer;
use store::loopback;
use store::salt::Salt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{SignalKind, signal};

use crate::PROGRAM;
use crate::args::Http;
use crate::http::budget::Budget;
use crate::http::proxy::Proxy;
use crate::http::sessions::{Key, Observer, Tally};
use crate::limits::{
    CONNECTION_BUFFER, MAX_CONNECTIONS, MAX_SESSIONS, OBSERVE_BUDGET, SESSIONS_BYTES,
};

/// Serves `http` until SIGINT or SIGTERM.
pub fn run(home: &Home, server: Option<String>, http: Http) -> Result<()> {
    // Prepare the store first, so a capture that cannot journal fails
    // before any client connects.
    let salt = Salt::load_or_create(home)?;
    let writer = Writer::new(home)?;
    // One worker. A request's body is read inside its connection's own
    // task, which wakes that task while it runs; with a second worker idle,
    // tokio hands every such task over to it, and each request crossed
    // threads twice. Relaying is light; the journal has its own thread.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("capture-http")
        .build()
        .map_err(|err| Error::io("cannot start the HTTP runtime", err))?;
    let fallback = http.upstream.host_port();
    let budget = Budget::new(OBSERVE_BUDGET);
    let (observer, journal) = Observer::start(salt, writer, server, fallback, budget.clone());
    let served = runtime.block_on(serve(http, observer.clone(), budget));
    // Connections still open are cut; their sessions end below.
    runtime.shutdown_background();
    observer.shutdown();
    let tally = journal.join().map_err(|_| {
        Error::new(
            shared::error::Kind::Io,
            "the journal writer stopped unexpectedly",
        )
    })?;
    served?;
    summary(&tally);
    Ok(())
}

async fn serve(http: Http, observer: Observer, budget: Budget) -> Result<()> {
    let upstream = http.upstream.to_string();
    let listener = TcpListener::bind(http.listen).await.map_err(|err| {
        Error::io(format_args!("cannot listen on {}", http.listen), err)
            .with_hint("choose another address, or port 0 for any free port")
    })?;
    let local = listener
        .local_addr()
        .map_err(|err| Error::io("cannot read the listening address", err))?;
    let loopback = loopback::is_loopback_listener(local.ip());
    let proxy = Arc::new(Proxy::new(
        http.upstream,
        http.session_header,
        observer.clone(),
        budget,
        loopback,
    )?);
    if !loopback {
        cli::warn(
            PROGRAM,
            format_args!(
                "{local} is not a loopback address: anyone who can reach it can use the upstream server through capture"
            ),
        );
    }
    eprintln!("{PROGRAM}: listening on http://{local} (upstream {upstream})");

    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|err| Error::io("cannot install signal handlers", err))?;
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|err| Error::io("cannot install signal handlers", err))?;
    let mut connections = 0u64;
    let open = Arc::new(AtomicUsize::new(0));
    let mut said_full = false;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS => {
                    observer.turned_away();
                    if !std::mem::replace(&mut said_full, true) {
                        cli::warn(
                            PROGRAM,
                            format_args!("{MAX_CONNECTIONS} connections are open: a new one got 503 (further ones are counted)"),
                        );
                    }
                    tokio::spawn(turn_away(stream));
                }
                Ok((stream, _)) => {
                    connections += 1;
                    let _ = stream.set_nodelay(true);
                    let slot = Slot::take(&open);
                    tokio::spawn(connection(connections, stream, proxy.clone(), observer.clone(), slot));
                }
                Err(err) => {
                    // Out of descriptors and the like: wait, then go on.
                    cli::warn(PROGRAM, format_args!("cannot accept a connection: {err}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        }
    }
    Ok(())
}

/// One open connection, counted until it is dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::Relaxed);
        Slot(open.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How long a connection may take to send a request's headers (or stay
/// idle between requests) before it is closed and its slot freed.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Serves one client connection; its connection-keyed session ends with it.
async fn connection(id: u64, stream: TcpStream, proxy: Arc<Proxy>, observer: Observer, slot: Slot) {
    let service = service_fn(move |request| {
        let proxy = proxy.clone();
        async move { proxy.handle(id, request).await }
    });
    // A client that opens a connection and sends no request keeps a slot
    // of the connection cap: without a deadline, enough silent sockets
    // would turn every real client away.
    let _ = http1::Builder::new()
        .preserve_header_case(true)
        .auto_date_header(false)
        .max_buf_size(CONNECTION_BUFFER)
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    drop(slot);
    observer.end(Key::Connection(id));
}

/// How long a turned-away client may stay silent while what it sends is
/// read and dropped, and how long it is given in all: closing at once, with
/// its request unread, would reset the connection before it could read the
/// answer.
const TURN_AWAY_IDLE: Duration = Duration::from_secs(5);
const TURN_AWAY_GRACE: Duration = Duration::from_secs(60);

/// Answers a connection beyond [`MAX_CONNECTIONS`] with 503 and a JSON-RPC
/// error, without reading its request, and closes it once the client has
/// sent what it was sending. It holds no more than a small buffer, for at
/// most [`TURN_AWAY_GRACE`].
async fn turn_away(mut stream: TcpStream) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!("{PROGRAM}: {MAX_CONNECTIONS} connections are open, the most capture serves at once; try again when one closes"),
        },
    })
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let drain = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut buf = [0u8; 4096];
        while tokio::time::timeout(TURN_AWAY_IDLE, stream.read(&mut buf)).await?? > 0 {}
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(TURN_AWAY_GRACE, drain).await;
}

fn summary(tally: &Tally) {
    use crate::warnings::say;
    crate::warnings::bounded(tally.oversized, 0, tally.bounded);
    say(
        tally.over_budget,
        format_args!(
            "{} message(s) were relayed unobserved while connections held the {} MiB capture observes at once; their calls were not recorded",
            tally.over_budget,
            OBSERVE_BUDGET >> 20
        ),
    );
    say(
        tally.evicted,
        format_args!(
            "{} session(s) were ended early to keep at most {MAX_SESSIONS} at once ({} MiB), least recently active first; their unanswered calls were recorded as unknown",
            tally.evicted,
            SESSIONS_BYTES >> 20
        ),
    );
    say(
        tally.unnoted,
        format_args!(
            "{} session end(s) or new session id(s) came while connections held the {} MiB capture observes at once; those sessions were ended when evicted or at exit",
            tally.unnoted,
            OBSERVE_BUDGET >> 20
        ),
    );
    say(
        tally.turned_away,
        format_args!(
            "{} connection(s) got 503 because {MAX_CONNECTIONS} were open; none of their requests reached the upstream",
            tally.turned_away
        ),
    );
    say(
        tally.refused,
        format_args!(
            "{} request(s) were refused with 403 because their Host or Origin was not loopback; none reached the upstream",
            tally.refused
        ),
    );
    say(
        tally.unparsed,
        format_args!(
            "{} message(s) were not JSON-RPC that capture could read; they were relayed unobserved",
            tally.unparsed
        ),
    );
    if cli::decorate_stderr() {
        eprintln!(
            "{PROGRAM}: journaled {} tool call(s){}",
            tally.journaled,
            tally
                .journal
                .as_ref()
                .map(|p| format!(" to {}", p.display()))
                .unwrap_or_default()
        );
    }
}
