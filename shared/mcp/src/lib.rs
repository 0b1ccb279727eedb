//! The MCP client probes speak through: JSON-RPC 2.0 over a server's
//! stdin/stdout, or over Streamable HTTP (module `http`), on
//! `serde_json::Value`, so that it can say exactly what a server sent.
//! Both transports deliver what arrives as `Incoming` items on one
//! channel, so the request loop, the era logic and the classification
//! below are the same for both.
//!
//! Era: `server/discover` first (the 2026-07-28 revision, with the protocol
//! data in `_meta`); on *any* other answer — an error of any code, a result
//! without that version, garbage, silence until the timeout, or an exit —
//! the legacy `initialize` handshake (2025-11-25) follows. The fallback
//! always starts a fresh server process: a legacy server is in an undefined
//! state after an unknown request before `initialize` (some exit, some
//! ignore it, some answer late), and a clean start costs one process
//! launch, which is cheap next to a wrong verdict.
//!
//! Every request has a deadline; an expired call is cancelled with
//! `notifications/cancelled` (over 2026-07-28 HTTP by closing its response
//! stream, which that revision defines as the cancellation) and its late
//! answer ignored. Server requests are answered (`ping`, an empty
//! `roots/list`, a declined elicitation, method-not-found otherwise) so a
//! server never waits on us; over 2026-07-28 HTTP one is a protocol break,
//! since that revision carries input requests inside results.
//!
//! What the server writes is never echoed: a line that is not JSON is
//! dropped in the reader with only its line number kept, and the errors of
//! this module describe what was wrong, never the bytes. The server's
//! stderr reaches ours when the caller asks for it to be inherited;
//! otherwise only its last [`STDERR_LINES`] lines are kept, in memory, so
//! that a handshake that fails can say what the server wrote before it
//! stopped (the caller escapes them: they are the server's bytes).
//!
//! Shutdown: close stdin, wait, SIGTERM to the server's process group,
//! wait, SIGKILL. The server runs in its own process group so helpers it
//! started (an `npx` wrapper's node, a shell's child) go with it. Over
//! HTTP nothing is started; the era fallback opens a fresh client instead
//! of a fresh process, and a legacy session ends with a DELETE.

mod http;

pub mod connector;
pub mod probe;
pub mod sse;

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use shared::probe_result::Reason;
use store::endpoint::Endpoint;

/// The modern protocol revision tried first.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The legacy revision asked for in `initialize`.
pub const LEGACY_VERSION: &str = "2025-11-25";

const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// How long each handshake request waits unless told otherwise. Server
/// start-up (an interpreter, `npx`) happens inside it, and a silent legacy
/// server costs one of these before the fallback.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A stdout line longer than this (64 MiB) breaks the protocol.
pub const MAX_LINE: u64 = 64 * 1024 * 1024;
/// How long a server may take to exit after its stdin closes, and again
/// after SIGTERM.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How many of the server's last stderr lines a failed handshake keeps.
pub const STDERR_LINES: usize = 20;
/// A kept stderr line is cut to this many bytes.
pub const STDERR_LINE_BYTES: usize = 1024;

/// Whether the environment variable `name` is kept from a server the
/// probe starts. The server is the code under test, not a part of the
/// suite: it gets the user's environment without the suite's own
/// variables (`MCPEVAL`, `MCPEVAL_*`: the store, the team database's URL
/// with any password in it, an endpoint verify passed on) and without
/// libpq's (`PG*`: `PGPASSWORD`, `PGPASSFILE`, …), which hold or point at
/// the team database's password.
pub fn withheld(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name == b"MCPEVAL" || name.starts_with(b"MCPEVAL_") || name.starts_with(b"PG")
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The executable to run (already resolved).
    pub program: PathBuf,
    /// `argv[0]` as the user wrote it.
    pub arg0: OsString,
    /// The arguments after it.
    pub args: Vec<OsString>,
    /// Whether the server's stderr reaches ours.
    pub inherit_stderr: bool,
    /// `clientInfo` name and version.
    pub client: (String, String),
}

/// How to reach a server over Streamable HTTP.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The endpoint and the extra headers every request carries.
    pub endpoint: Endpoint,
    /// `clientInfo` name and version.
    pub client: (String, String),
}

/// Where the server is: a command to start, or an endpoint to reach.
#[derive(Debug, Clone)]
pub enum Target {
    /// Start this command and speak over its stdin/stdout.
    Stdio(Launch),
    /// POST to this Streamable HTTP endpoint.
    Http(Remote),
}

impl Target {
    /// The transport name journal records carry.
    pub fn transport(&self) -> shared::record::Transport {
        match self {
            Target::Stdio(_) => shared::record::Transport::Stdio,
            Target::Http(_) => shared::record::Transport::Http,
        }
    }
}

/// The protocol era the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: `server/discover`, protocol data in every `_meta`.
    Modern,
    /// `initialize` and `notifications/initialized`.
    Legacy,
}

/// How the conversation with the server broke down. Descriptions say what
/// was wrong, never what the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// The command could not be started.
    Start(String),
    /// Neither handshake succeeded; what the legacy one got.
    Handshake(String),
    /// The server closed stdout (usually: exited) while a request waited.
    Exited(String),
    /// A stdout line (1-based) was not JSON, or was too long.
    NonJson(u64),
    /// A response carried an id no pending request had.
    IdMismatch,
    /// JSON that is not a JSON-RPC message; what was wrong with it.
    InvalidMessage(&'static str),
    /// The HTTP endpoint could not be reached; why, with its origin only.
    Unreachable(String),
    /// An HTTP error status, or no body where a response was due.
    HttpStatus(String),
    /// An HTTP body or event that is not JSON; which one.
    NonJsonBody(String),
    /// An HTTP answer that ended or broke off before its response.
    StreamEnded(String),
}

impl Broken {
    /// The transport reason code for a probe result.
    pub fn reason(&self) -> Reason {
        match self {
            Broken::Start(_) => Reason::ServerStart,
            Broken::Handshake(_) => Reason::Handshake,
            Broken::Exited(_) => Reason::ServerExited,
            Broken::NonJson(_) => Reason::NonJsonLine,
            Broken::IdMismatch => Reason::IdMismatch,
            Broken::InvalidMessage(_) => Reason::InvalidMessage,
            Broken::Unreachable(_) => Reason::Unreachable,
            Broken::HttpStatus(_) => Reason::HttpStatus,
            Broken::NonJsonBody(_) => Reason::NonJsonBody,
            Broken::StreamEnded(_) => Reason::StreamEnded,
        }
    }

    /// A short description for people, free of server bytes.
    pub fn describe(&self) -> String {
        match self {
            Broken::Start(what)
            | Broken::Handshake(what)
            | Broken::Exited(what)
            | Broken::Unreachable(what)
            | Broken::HttpStatus(what)
            | Broken::NonJsonBody(what)
            | Broken::StreamEnded(what) => what.clone(),
            Broken::NonJson(line) => format!("stdout line {line} is not a JSON message"),
            Broken::IdMismatch => "a response carried an id no pending request had".into(),
            Broken::InvalidMessage(what) => (*what).into(),
        }
    }
}

/// What a stdio server wrote last on its stderr: raw text (lossy UTF-8),
/// to be escaped wherever it is shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StderrTail {
    /// The last [`STDERR_LINES`] lines at most, in the order written,
    /// without their line ends, each cut to [`STDERR_LINE_BYTES`].
    pub lines: Vec<String>,
    /// How many lines the server wrote in all.
    pub total: u64,
}

/// Why no conversation could be opened: how it broke and, for a stdio
/// server whose stderr was not inherited, what it wrote there last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unopened {
    /// How the handshake (or the start) failed.
    pub broken: Broken,
    /// The server's last stderr lines; `None` over HTTP, with inherited
    /// stderr, or when the server never started.
    pub stderr: Option<StderrTail>,
}

impl From<Broken> for Unopened {
    fn from(broken: Broken) -> Unopened {
        Unopened {
            broken,
            stderr: None,
        }
    }
}

/// The kept end of a server's stderr, filled by a reader thread.
struct Tail {
    kept: Arc<Mutex<(VecDeque<Vec<u8>>, u64)>>,
    /// Disconnects when the reader thread ends (stderr closed).
    ended: Receiver<()>,
}

impl Tail {
    /// Waits up to `wait` for stderr to close, then copies what is kept.
    fn snapshot(&self, wait: Duration) -> StderrTail {
        let _ = self.ended.recv_timeout(wait);
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        StderrTail {
            lines: kept
                .0
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect(),
            total: kept.1,
        }
    }
}

/// The most `tools/list` pages [`Client::list_tools`] reads.
pub const MAX_LIST_PAGES: usize = 64;

/// What a server's `tools/list` said of the tools a caller wanted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    /// Each wanted tool the list named, with its whole tool object (its
    /// schemas are the server's: judge them, never echo them), in the
    /// order listed; a name listed twice keeps its first.
    pub tools: Vec<(String, Value)>,
    /// Why the list is missing or partial (an error, silence, too many
    /// pages), in words free of server bytes; `None` when every page was
    /// read.
    pub incomplete: Option<String>,
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The whole response object (with `result` or `error`).
    Response(Value),
    /// No answer before the deadline; the request was cancelled.
    Timeout,
}

/// What arrived from the server, in order.
enum Incoming {
    Message(Value),
    /// stdio: this stdout line was not JSON.
    NotJson(u64),
    /// stdio: stdout closed.
    Closed,
    /// HTTP: the exchange of this request (`None`: a reply or notice we
    /// sent) failed; the loop ignores failures of requests it no longer
    /// waits for.
    Failed(Option<i64>, Broken),
}

/// The channel to the server.
enum Link {
    Stdio(Process),
    Http(Box<http::Http>),
}

/// A started server process and its pipes. Lines for its stdin go
/// through a writer thread, so a server that stops reading can never block
/// the probe past its deadlines. Its stdout is read by a thread that hands
/// over one message at a time: while the probe is not waiting for an
/// answer the server waits on its pipe, so what it writes then never
/// piles up in the probe's memory.
struct Process {
    child: Child,
    stdin: Option<mpsc::Sender<Vec<u8>>>,
    rx: Receiver<Incoming>,
    done: bool,
    /// The end of its stderr, unless stderr is inherited.
    tail: Option<Tail>,
}

/// A connected server.
pub struct Client {
    link: Link,
    era: Era,
    next_id: i64,
    /// Requests given up on; their late answers are ignored once.
    abandoned: HashSet<i64>,
    server_name: Option<String>,
    client: (String, String),
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("era", &self.era)
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Reaches the server of `target` and completes a handshake, modern
    /// first. Each handshake request waits at most `timeout`.
    pub fn open(target: &Target, timeout: Duration) -> Result<Client, Unopened> {
        match target {
            Target::Stdio(launch) => Client::connect(launch, timeout),
            Target::Http(remote) => Ok(Client::connect_http(remote, timeout)?),
        }
    }

    /// Starts the server and completes a handshake, modern first. Each
    /// handshake request waits at most `timeout`. A failed legacy
    /// handshake ends the server and keeps the end of its stderr.
    pub fn connect(launch: &Launch, timeout: Duration) -> Result<Client, Unopened> {
        let mut first = Client::start(launch)?;
        if first.discover(timeout).unwrap_or(false) {
            first.era = Era::Modern;
            return Ok(first);
        }
        first.shutdown();
        let mut second = Client::start(launch)?;
        if let Err(broken) = second.initialize(timeout) {
            second.shutdown();
            let stderr = match &second.link {
                Link::Stdio(Process {
                    tail: Some(tail), ..
                }) => Some(tail.snapshot(Duration::from_millis(500))),
                _ => None,
            };
            return Err(Unopened { broken, stderr });
        }
        Ok(second)
    }

    /// Completes a handshake with a Streamable HTTP endpoint, modern
    /// first; the legacy attempt gets a fresh client (no connection or
    /// state of the first is reused). An endpoint that cannot be reached
    /// at all gets no second attempt: nothing answered, so there is no
    /// era to fall back from.
    pub fn connect_http(remote: &Remote, timeout: Duration) -> Result<Client, Broken> {
        let mut first = Client::dial(remote, timeout)?;
        match first.discover(timeout) {
            Ok(true) => {
                first.era = Era::Modern;
                return Ok(first);
            }
            Err(broken @ Broken::Unreachable(_)) => return Err(broken),
            _ => {}
        }
        first.shutdown();
        let mut second = Client::dial(remote, timeout)?;
        second.initialize(timeout)?;
        Ok(second)
    }

    fn dial(remote: &Remote, timeout: Duration) -> Result<Client, Broken> {
        Ok(Client {
            link: Link::Http(Box::new(http::Http::open(&remote.endpoint, timeout)?)),
            era: Era::Legacy,
            next_id: 1,
            abandoned: HashSet::new(),
            server_name: None,
            client: remote.client.clone(),
        })
    }

    fn start(launch: &Launch) -> Result<Client, Broken> {
        let mut cmd = Command::new(&launch.program);
        cmd.arg0(&launch.arg0)
            .args(&launch.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if launch.inherit_stderr {
                Stdio::inherit()
            } else {
                Stdio::piped()
            })
            .process_group(0);
        for (name, _) in std::env::vars_os() {
            if withheld(&name) {
                cmd.env_remove(name);
            }
        }
        let mut child = cmd.spawn().map_err(|err| {
            Broken::Start(format!(
                "cannot start {}: {err}",
                launch.arg0.to_string_lossy()
            ))
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let tail = child.stderr.take().map(|stderr| {
            let kept = Arc::new(Mutex::new((VecDeque::new(), 0)));
            let (alive, ended) = mpsc::channel();
            let shared = Arc::clone(&kept);
            std::thread::spawn(move || read_tail(stderr, &shared, alive));
            Tail { kept, ended }
        });
        let (tx, rx) = mpsc::sync_channel(1);
        std::thread::spawn(move || read_lines(stdout, &tx));
        let (to_server, lines) = mpsc::channel();
        std::thread::spawn(move || write_lines(stdin, &lines));
        Ok(Client {
            link: Link::Stdio(Process {
                child,
                stdin: Some(to_server),
                rx,
                done: false,
                tail,
            }),
            era: Era::Legacy,
            next_id: 1,
            abandoned: HashSet::new(),
            server_name: None,
            client: launch.client.clone(),
        })
    }

    /// The era the handshake settled on.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The server's name as its handshake reported it.
    pub fn server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// Tries `server/discover`; true when the server speaks our modern
    /// revision, false for any other answer or silence; a broken
    /// conversation is its error.
    fn discover(&mut self, timeout: Duration) -> Result<bool, Broken> {
        let Reply::Response(response) =
            self.request("server/discover", Map::new(), timeout, true)?
        else {
            return Ok(false);
        };
        let Some(result) = response.get("result").and_then(Value::as_object) else {
            return Ok(false);
        };
        let speaks = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|x| x == MODERN_VERSION));
        if speaks {
            self.server_name = result
                .get("serverInfo")
                .or_else(|| result.get("_meta").and_then(|m| m.get(SERVER_INFO_META)))
                .and_then(|info| info.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        Ok(speaks)
    }

    fn initialize(&mut self, timeout: Duration) -> Result<(), Broken> {
        let mut params = Map::new();
        params.insert("protocolVersion".into(), json!(LEGACY_VERSION));
        params.insert("capabilities".into(), json!({}));
        params.insert(
            "clientInfo".into(),
            json!({"name": self.client.0, "version": self.client.1}),
        );
        let response = match self.request("initialize", params, timeout, false)? {
            Reply::Response(response) => response,
            Reply::Timeout => {
                return Err(Broken::Handshake(format!(
                    "no answer to server/discover or to initialize within {} ms",
                    timeout.as_millis()
                )));
            }
        };
        if let Some(code) = response.get("error").map(|e| e.get("code")) {
            let code = code.and_then(Value::as_i64);
            return Err(Broken::Handshake(format!(
                "server/discover failed and initialize was answered with JSON-RPC error {}",
                code.map_or_else(|| "without a code".to_owned(), |c| c.to_string())
            )));
        }
        let Some(result) = response.get("result").and_then(Value::as_object) else {
            return Err(Broken::Handshake(
                "server/discover failed and the initialize result is not an object".into(),
            ));
        };
        self.server_name = result
            .get("serverInfo")
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Link::Http(http) = &mut self.link {
            let version = result.get("protocolVersion").and_then(Value::as_str);
            http.negotiated(version.unwrap_or(LEGACY_VERSION));
        }
        self.notify("notifications/initialized", Map::new())
    }

    /// Calls a tool. A timeout is a [`Reply::Timeout`]; a broken
    /// conversation is an error.
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<Reply, Broken> {
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        params.insert("arguments".into(), Value::Object(arguments.clone()));
        self.request("tools/call", params, timeout, self.era == Era::Modern)
    }

    /// Lists the server's tools (`tools/list`, following `nextCursor` for
    /// at most [`MAX_LIST_PAGES`] pages, each waiting at most `timeout`)
    /// and keeps the tool objects of the names `wanted` asks for, the
    /// first a name is listed with. A list the server refuses (an error,
    /// an HTTP error status, silence, a result that is not a list) is
    /// [`Listed::incomplete`], not an error: a server owes a probe no
    /// list. Only a broken conversation is an error.
    pub fn list_tools(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Listed, Broken> {
        let mut listed = Listed::default();
        let mut cursor: Option<String> = None;
        for page in 1..=MAX_LIST_PAGES {
            let mut params = Map::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".into(), json!(cursor));
            }
            let reply = match self.request("tools/list", params, timeout, self.era == Era::Modern) {
                Ok(reply) => reply,
                // An HTTP server may refuse a method it lacks by status.
                Err(Broken::HttpStatus(why)) => {
                    listed.incomplete = Some(format!("tools/list was refused: {why}"));
                    return Ok(listed);
                }
                Err(broken) => return Err(broken),
            };
            let response = match reply {
                Reply::Response(response) => response,
                Reply::Timeout => {
                    listed.incomplete = Some(format!(
                        "tools/list got no answer within {} ms",
                        timeout.as_millis()
                    ));
                    return Ok(listed);
                }
            };
            let result = response.get("result");
            let Some(tools) = result
                .and_then(|r| r.get("tools"))
                .and_then(Value::as_array)
            else {
                listed.incomplete = Some(match response.get("error") {
                    Some(_) => "tools/list was answered with an error".to_owned(),
                    None => "the tools/list result holds no list of tools".to_owned(),
                });
                return Ok(listed);
            };
            for tool in tools {
                let Some(name) = tool.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if wanted(name) && !listed.tools.iter().any(|(n, _)| n == name) {
                    listed.tools.push((name.to_owned(), tool.clone()));
                }
            }
            let next = result
                .and_then(|r| r.get("nextCursor"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            match next {
                None => return Ok(listed),
                // A cursor that leads back to itself would never end.
                Some(next) if cursor.as_deref() == Some(&next) => {
                    listed.incomplete =
                        Some(format!("tools/list page {page} gave its own cursor again"));
                    return Ok(listed);
                }
                Some(next) => cursor = Some(next),
            }
        }
        listed.incomplete = Some(format!(
            "tools/list has more than {MAX_LIST_PAGES} pages; the rest were not read"
        ));
        Ok(listed)
    }

    fn meta(&self) -> Value {
        json!({
            VERSION_META: MODERN_VERSION,
            CAPABILITIES_META: {},
            CLIENT_INFO_META: {"name": self.client.0, "version": self.client.1},
        })
    }

    /// Sends a request and waits for its response until `timeout`.
    fn request(
        &mut self,
        method: &str,
        mut params: Map<String, Value>,
        timeout: Duration,
        modern: bool,
    ) -> Result<Reply, Broken> {
        let id = self.next_id;
        self.next_id += 1;
        if modern {
            params.insert("_meta".into(), self.meta());
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.abandoned.insert(id);
                // Over 2026-07-28 HTTP, closing the response stream is the
                // cancellation; everywhere else it is a notice.
                let modern_http = modern && matches!(self.link, Link::Http(_));
                if !modern_http {
                    let mut cancel = Map::new();
                    cancel.insert("requestId".into(), json!(id));
                    cancel.insert("reason".into(), json!("timeout"));
                    if modern {
                        cancel.insert("_meta".into(), self.meta());
                    }
                    // A server that cannot take the notice will show it on
                    // the next request; the timeout is the verdict here.
                    let _ = self.notify("notifications/cancelled", cancel);
                }
                if let Link::Http(http) = &mut self.link {
                    http.abandon(id);
                }
                return Ok(Reply::Timeout);
            }
            let received = match &self.link {
                Link::Stdio(process) => process.rx.recv_timeout(left),
                Link::Http(http) => http.recv_timeout(left),
            };
            let incoming = match received {
                Ok(incoming) => incoming,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => Incoming::Closed,
            };
            match incoming {
                Incoming::Message(message) => {
                    if let Some(response) = self.dispatch(message, id)? {
                        return Ok(Reply::Response(response));
                    }
                }
                Incoming::NotJson(line) => return Err(Broken::NonJson(line)),
                Incoming::Closed => {
                    return Err(Broken::Exited(format!(
                        "the server {} before answering {method}",
                        self.exit_description()
                    )));
                }
                Incoming::Failed(exchange, broken) => {
                    if exchange.is_none_or(|e| e == id) {
                        return Err(broken);
                    }
                }
            }
        }
    }

    /// Handles one message; returns the response to `waiting` if it is one.
    fn dispatch(&mut self, message: Value, waiting: i64) -> Result<Option<Value>, Broken> {
        let Value::Object(map) = &message else {
            if let Value::Array(batch) = message {
                // Batches were dropped from MCP, but their parts are
                // still ordinary messages.
                let mut found = None;
                for part in batch {
                    if let Some(response) = self.dispatch(part, waiting)? {
                        found = Some(response);
                    }
                }
                return Ok(found);
            }
            return Err(Broken::InvalidMessage("a message is not a JSON object"));
        };
        let id = map.get("id").filter(|id| !id.is_null());
        match (map.get("method"), id) {
            (Some(Value::String(method)), Some(id)) => {
                if self.era == Era::Modern && matches!(self.link, Link::Http(_)) {
                    // 2026-07-28 HTTP has no way to answer: input requests
                    // travel inside results.
                    return Err(Broken::InvalidMessage(
                        "a server request arrived on a 2026-07-28 response stream, which carries none",
                    ));
                }
                let reply = answer(method, id.clone());
                self.send(&reply)?;
                Ok(None)
            }
            (Some(Value::String(_)), None) => Ok(None),
            (Some(_), _) => Err(Broken::InvalidMessage("a message's method is not a string")),
            (None, Some(id)) => {
                let result = map.get("result");
                let error = map.get("error");
                match (result, error) {
                    (Some(_), None) => {}
                    (None, Some(Value::Object(e))) if e.get("code").is_some_and(Value::is_i64) => {}
                    (None, Some(_)) => {
                        return Err(Broken::InvalidMessage(
                            "an error response lacks an integer error code",
                        ));
                    }
                    _ => {
                        return Err(Broken::InvalidMessage(
                            "a response has neither or both of result and error",
                        ));
                    }
                }
                match id.as_i64() {
                    Some(n) if n == waiting => Ok(Some(message)),
                    Some(n) if self.abandoned.remove(&n) => Ok(None),
                    _ => Err(Broken::IdMismatch),
                }
            }
            (None, None) => Err(Broken::InvalidMessage(
                "a message has neither a method nor an id",
            )),
        }
    }

    fn notify(&mut self, method: &str, params: Map<String, Value>) -> Result<(), Broken> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    fn send(&mut self, message: &Value) -> Result<(), Broken> {
        let process = match &mut self.link {
            Link::Stdio(process) => process,
            Link::Http(http) => return http.send(message),
        };
        let mut line = serde_json::to_vec(message).expect("messages serialize");
        line.push(b'\n');
        // The writer thread ends at the first failed write (the server
        // stopped reading); sending to it then fails.
        let sent = match &process.stdin {
            Some(stdin) => stdin.send(line).is_ok(),
            None => false,
        };
        sent.then_some(()).ok_or_else(|| {
            Broken::Exited(format!(
                "the server {} and stopped reading its stdin",
                process.exit_description()
            ))
        })
    }

    fn exit_description(&mut self) -> String {
        match &mut self.link {
            Link::Stdio(process) => process.exit_description(),
            Link::Http(_) => "closed the connection".into(),
        }
    }

    /// Ends the conversation. stdio: close stdin, wait, SIGTERM, wait,
    /// SIGKILL, and return how the server ended, when known. HTTP: end a
    /// legacy session with DELETE; `None`.
    pub fn shutdown(&mut self) -> Option<ExitStatus> {
        match &mut self.link {
            Link::Stdio(process) => process.shutdown(),
            Link::Http(http) => {
                http.shutdown();
                None
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl Process {
    fn shutdown(&mut self) -> Option<ExitStatus> {
        if self.done {
            return self.child.try_wait().ok().flatten();
        }
        self.done = true;
        drop(self.stdin.take());
        // Nothing the server says now is read: with the receiver gone the
        // reading thread drops the rest unparsed, so a server still writing
        // on its way out is never blocked on a full pipe.
        self.rx = mpsc::sync_channel(0).1;
        if let Some(status) = self.wait_until(Instant::now() + EXIT_GRACE) {
            return Some(status);
        }
        self.signal(libc::SIGTERM);
        if let Some(status) = self.wait_until(Instant::now() + EXIT_GRACE) {
            return Some(status);
        }
        self.signal(libc::SIGKILL);
        self.child.wait().ok()
    }

    /// Signals the server's process group (it leads one of its own).
    fn signal(&self, signal: libc::c_int) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) has no memory effects; the group is ours and
            // its leader is not yet reaped, so the id cannot be reused.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
    }

    fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }

    /// "exited with status 3", "was killed by signal 9", or "closed its
    /// stdout" when it is still running.
    fn exit_description(&mut self) -> String {
        match self.wait_until(Instant::now() + Duration::from_millis(200)) {
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                _ => "exited".into(),
            },
            None => "closed its stdout".into(),
        }
    }
}

/// The reply to a server's request: enough for it to carry on.
fn answer(method: &str, id: Value) -> Value {
    let result = match method {
        "ping" => json!({}),
        "roots/list" => json!({"roots": []}),
        "elicitation/create" => json!({"action": "decline"}),
        _ => {
            return json!({"jsonrpc": "2.0", "id": id,
                          "error": {"code": -32601, "message": "Method not found"}});
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Writes queued lines to the server's stdin until the queue closes (the
/// client shut down: stdin closes with it) or a write fails.
fn write_lines(mut stdin: ChildStdin, lines: &Receiver<Vec<u8>>) {
    for line in lines {
        if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
            return;
        }
    }
}

/// Keeps the last [`STDERR_LINES`] lines of the server's stderr until it
/// closes, each cut to [`STDERR_LINE_BYTES`], so a server that writes
/// without end costs bounded memory and is never blocked on a full pipe.
/// `alive` is dropped when stderr closes.
fn read_tail(stderr: ChildStderr, kept: &Mutex<(VecDeque<Vec<u8>>, u64)>, alive: mpsc::Sender<()>) {
    let keep = |mut line: Vec<u8>| {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.push_back(line);
        if kept.0.len() > STDERR_LINES {
            kept.0.pop_front();
        }
        kept.1 += 1;
    };
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        let buf = match reader.fill_buf() {
            Ok([]) => break,
            Ok(buf) => buf,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let (part, used, ends) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        reader.consume(used);
        if ends {
            keep(std::mem::take(&mut line));
        }
    }
    if !line.is_empty() {
        keep(line);
    }
    drop(alive);
}

/// Reads stdout line by line until it closes. Raw lines never leave this
/// function: a line that is not JSON becomes its line number. Once the
/// client stops listening, the rest is read and dropped.
fn read_lines(stdout: ChildStdout, tx: &SyncSender<Incoming>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        number += 1;
        if line.len() as u64 > MAX_LINE {
            let _ = tx.send(Incoming::NotJson(number));
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let incoming = match serde_json::from_slice(&line) {
            Ok(value) => Incoming::Message(value),
            Err(_) => Incoming::NotJson(number),
        };
        if tx.send(incoming).is_err() {
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
            return;
        }
    }
    let _ = tx.send(Incoming::Closed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_requests_get_replies() {
        assert_eq!(
            answer("ping", json!(7)),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}})
        );
        assert_eq!(
            answer("roots/list", json!("r")),
            json!({"jsonrpc": "2.0", "id": "r", "result": {"roots": []}})
        );
        assert_eq!(
            answer("sampling/createMessage", json!(1))["error"]["code"],
            -32601
        );
    }

    #[test]
    fn broken_maps_to_transport_reasons() {
        use shared::probe_result::Verdict;
        let all = [
            Broken::Start(String::new()),
            Broken::Handshake(String::new()),
            Broken::Exited(String::new()),
            Broken::NonJson(1),
            Broken::IdMismatch,
            Broken::InvalidMessage(""),
            Broken::Unreachable(String::new()),
            Broken::HttpStatus(String::new()),
            Broken::NonJsonBody(String::new()),
            Broken::StreamEnded(String::new()),
        ];
        for b in all {
            assert_eq!(b.reason().verdict(), Verdict::TransportError, "{b:?}");
        }
        assert_eq!(
            Broken::NonJson(3).describe(),
            "stdout line 3 is not a JSON message"
        );
    }
}
