//! What capture itself costs in CPU per call, and what it costs the server.
//!
//! Wall-clock time through capture says little on a shared machine, and
//! against an echo faster than any real server it measures the echo. CPU
//! time is what a busy server's machine pays: a fast Python echo server
//! (`echo_server.py`, which reports its own CPU time at exit) answers
//! pipelined calls, one in ten a tool error with a templated text, once
//! behind plain pipes (this process writing its stdin and reading its
//! stdout, as `cat in | server | cat` would) and once through capture.
//! Capture's own CPU is its user + system time, its children's included,
//! less the server's; the server's CPU under capture is set beside its CPU
//! behind plain pipes, so a relay that makes the server pay shows.
//!
//! The server is started as the interpreter itself ([`python`]), not as
//! `python3` found on `PATH`: that may be a launcher (a version manager's
//! shim is a shell script that runs a few programs to choose the
//! interpreter), and what those programs spend would be counted among
//! capture's children though it is neither capture's work nor the
//! server's.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::measure;

/// CPU times of one session, in seconds.
pub struct Cpu {
    /// The server's own user + system time.
    pub server: f64,
    /// Capture's user + system time less the server's (`None` for a
    /// session without capture).
    pub capture: Option<f64>,
}

/// What the echo server's successes are (its second argument).
#[derive(Debug, Clone, Copy)]
pub enum Results {
    /// Text only; the tool declares no outputSchema.
    Plain,
    /// With structuredContent; no outputSchema declared.
    Structured,
    /// With structuredContent, and the tool declares an outputSchema that
    /// every success keeps: capture checks each one.
    Checked,
}

/// The requests of a pipelined session: `initialize` and `tools/list`,
/// then `calls` tool calls, every tenth failing.
pub fn requests(calls: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(calls as usize * 140);
    out.extend_from_slice(crate::relay::INITIALIZE);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"list\",\"method\":\"tools/list\"}\n");
    let mut line = Vec::new();
    for id in 1..=calls {
        crate::relay::request(&mut line, id);
        out.extend_from_slice(&line);
    }
    out
}

/// Runs one session of `input` against the echo server in `scratch`,
/// through capture (storing in `home`) or behind plain pipes.
pub fn session(input: &[u8], capture: Option<&Path>, scratch: &Path, results: Results) -> Cpu {
    let script = scratch.join("echo_server.py");
    std::fs::write(&script, include_str!("echo_server.py")).expect("write the echo server");
    let report = scratch.join("echo-cpu");
    let _ = std::fs::remove_file(&report);
    let mut cmd = crate::relay::server_command(python(), capture);
    let mut child = cmd
        .arg(&script)
        .arg(&report)
        .arg(match results {
            Results::Plain => "plain",
            Results::Structured => "structured",
            Results::Checked => "checked",
        })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the echo server");
    let answers = pump(&mut child, input);
    let (status, cpu) = measure::reap_cpu(child);
    assert_eq!(
        status, 0,
        "the echo session exited with wait status {status}"
    );
    assert_eq!(
        answers,
        input.iter().filter(|&&b| b == b'\n').count(),
        "every request answered"
    );
    let text = std::fs::read_to_string(&report).expect("the echo server's CPU report");
    let server: f64 = text
        .split_whitespace()
        .map(|s| s.parse::<f64>().expect("seconds"))
        .sum();
    Cpu {
        server,
        capture: capture.map(|_| cpu.as_secs_f64() - server),
    }
}

/// The Python interpreter `python3` on `PATH` runs, by its own path
/// (`sys.executable`), asked once.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("run python3");
        assert!(out.status.success(), "python3 -c failed: {out:?}");
        let path = String::from_utf8(out.stdout).expect("a UTF-8 path");
        let path = PathBuf::from(path.trim_end());
        assert!(path.is_absolute(), "python3 names no interpreter: {path:?}");
        path
    })
}

/// Writes `input` to the child's stdin from a thread of its own and reads
/// its stdout to the end, as `cat` on both sides would; returns the lines
/// read.
fn pump(child: &mut Child, input: &[u8]) -> usize {
    let mut to = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        to.write_all(&input).expect("requests");
    });
    let mut from = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0;
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lines += buf[..n].iter().filter(|&&b| b == b'\n').count(),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => panic!("reading the answers: {err}"),
        }
    }
    writer.join().expect("writer");
    lines
}

/// `s` seconds per call, in microseconds.
pub fn per_call(s: f64, calls: u64) -> f64 {
    s * 1e6 / calls as f64
}

/// The smallest and largest of `values`.
pub fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// Total CPU time of a rusage.
pub fn total(usage: &libc::rusage) -> Duration {
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}
