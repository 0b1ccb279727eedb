//! HTTP capture (`--listen`/`--upstream`) against a direct connection to
//! the same server.
//!
//! The server is this bench binary, re-executed with `--http-echo-server`:
//! a minimal HTTP/1.1 keep-alive server on loopback that answers each
//! JSON-RPC POST at once with a fixed JSON result, so the time a request
//! takes is the transport's. The client is this process, one connection,
//! one request at a time. Both routes run alternately under the same load.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::measure;

/// Serves on a free loopback port, printing it first, until killed.
pub fn serve() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("address").port());
    std::io::stdout().flush().expect("port");
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut out = stream;
            while let Some(body) = read_message(&mut reader) {
                let id = request_id(&body).unwrap_or(b"null").to_vec();
                let mut reply = Vec::with_capacity(128);
                reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                reply.extend_from_slice(&id);
                reply.extend_from_slice(
                    b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"sunny\"}]}}",
                );
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    reply.len()
                );
                let mut all = head.into_bytes();
                all.extend_from_slice(&reply);
                if out.write_all(&all).is_err() {
                    break;
                }
            }
        });
    }
}

/// Reads one HTTP message (request or response) and returns its body,
/// whether sized by content-length or chunked; `None` at end of stream.
fn read_message(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = None;
    let mut chunked = false;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some((name, value)) = trimmed.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                line.clear();
                reader.read_line(&mut line).ok()?;
                break;
            }
            let at = body.len();
            body.resize(at + size, 0);
            reader.read_exact(&mut body[at..]).ok()?;
            line.clear();
            reader.read_line(&mut line).ok()?;
        }
    } else {
        body.resize(length.unwrap_or(0), 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some(body)
}

fn request_id(body: &[u8]) -> Option<&[u8]> {
    let at = memchr::memmem::find(body, b"\"id\":")? + 5;
    let len = body[at..].iter().position(|&b| b == b',' || b == b'}')?;
    Some(&body[at..at + len])
}

/// The echo server, started once for a whole figure, or the bare proxy
/// in front of it: this binary re-executed, printing its port first,
/// killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    pub fn start() -> Server {
        Server::spawn(&["--http-echo-server".into()])
    }

    fn spawn(args: &[String]) -> Server {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {args:?}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("port");
        let port = line.trim().parse().expect("a port");
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Round-trip times of `calls` sequential tools/call POSTs to `port`.
fn session(port: u16, calls: u64) -> Vec<Duration> {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    let mut times = Vec::with_capacity(calls as usize);
    for id in 1..=calls {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_forecast","arguments":{{"city":"Paris","days":3}}}}}}"#
        );
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let started = Instant::now();
        out.write_all(request.as_bytes()).expect("request");
        let reply = read_message(&mut reader).expect("reply");
        times.push(started.elapsed());
        assert!(
            memchr::memmem::find(&reply, format!("\"id\":{id},").as_bytes()).is_some(),
            "reply to {id}: {}",
            String::from_utf8_lossy(&reply)
        );
    }
    times.sort();
    times
}

/// Direct: straight to the echo server.
pub fn direct(server: &Server, calls: u64) -> Vec<Duration> {
    session(server.port, calls)
}

/// Through the bare reverse proxy (`bare_proxy.rs`), started for this
/// session as capture is.
pub fn bare(server: &Server, calls: u64) -> Vec<Duration> {
    let proxy = Server::spawn(&["--bare-proxy".into(), server.port.to_string()]);
    session(proxy.port, calls)
}

/// Through `mcpeval-capture --listen 127.0.0.1:0 --upstream URL`, which is
/// then stopped with SIGTERM so it writes its journal.
pub fn captured(server: &Server, home: &Path, calls: u64) -> Vec<Duration> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpeval-capture"))
        .arg("--home")
        .arg(home)
        .args(["--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("http://127.0.0.1:{}/mcp", server.port))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start capture");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("listening line");
    let port: u16 = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split([' ', '/']).next())
        .and_then(|addr| addr.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("capture said {line:?}"));
    let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let times = session(port, calls);
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let (status, _) = measure::reap(child);
    let _ = drain.join();
    assert!(
        status == 0 || libc::WIFSIGNALED(status),
        "capture exited with wait status {status}"
    );
    times
}
