//! Running the suite's binaries the way users do, but hermetically: a
//! cleared environment, a private temporary store, `NO_COLOR`, and a known
//! `PATH`, so no test reads or writes the developer's own store.
//!
//! `Store::bin` gives every test an `assert_cmd` command to assert on with
//! `predicates`; `Store::duct` gives the stages of a shell pipeline, joined
//! with `pipe` (a failing stage fails the pipeline, as under `-o pipefail`);
//! `Store::redact` makes output with store paths fit for a snapshot.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Creates `dir` and its missing parents private (mode 0700), as the
/// binaries create a store: a store directory open to others is tightened
/// with a warning, which a fixture should not provoke by accident.
pub fn private_dir(dir: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .unwrap();
}

/// Copies the built binary `name` to `dest`, ready to run. The copy is
/// written by a child `cp`, not by this process: a file this process
/// held open for writing could be inherited by a child another test
/// forks at that moment, and exec'ing the copy would then fail with
/// "Text file busy" until that child execs.
pub fn copy_bin(name: &str, dest: &Path) {
    let status = Command::new("cp")
        .arg(bin(name))
        .arg(dest)
        .status()
        .unwrap();
    assert!(status.success(), "cp {name} {}", dest.display());
}

/// Writes `text` to a new file `dest` with mode `mode`, ready to run. As
/// with [`copy_bin`], a child writes it, so that no child another test
/// forks meanwhile holds it open for writing when it is run.
pub fn write_executable(dest: &Path, text: &str, mode: u32) {
    use std::io::Write;
    let mut child = Command::new("sh")
        .args(["-c", "cat >\"$1\" && chmod \"$2\" \"$1\"", "sh"])
        .arg(dest)
        .arg(format!("{mode:o}"))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "writing {}", dest.display());
}

/// The directory holding every built binary (`target/<profile>/`), as
/// cargo names it for this test crate.
pub fn bin_dir() -> PathBuf {
    bin("mcpeval")
        .parent()
        .expect("a binary lies in a directory")
        .to_path_buf()
}

/// The path of one of the suite's binaries, as cargo gives it.
pub fn bin(name: &str) -> PathBuf {
    let path = match name {
        "mcpeval" => env!("CARGO_BIN_EXE_mcpeval"),
        "mcpeval-capture" => env!("CARGO_BIN_EXE_mcpeval-capture"),
        "mcpeval-index" => env!("CARGO_BIN_EXE_mcpeval-index"),
        "mcpeval-promote" => env!("CARGO_BIN_EXE_mcpeval-promote"),
        "mcpeval-findings" => env!("CARGO_BIN_EXE_mcpeval-findings"),
        "mcpeval-annotate" => env!("CARGO_BIN_EXE_mcpeval-annotate"),
        "mcpeval-probe" => env!("CARGO_BIN_EXE_mcpeval-probe"),
        "mcpeval-export-issues" => env!("CARGO_BIN_EXE_mcpeval-export-issues"),
        "mcpeval-readiness" => env!("CARGO_BIN_EXE_mcpeval-readiness"),
        "mcpeval-share" => env!("CARGO_BIN_EXE_mcpeval-share"),
        "mcpeval-salt" => env!("CARGO_BIN_EXE_mcpeval-salt"),
        "mcpeval-serve" => env!("CARGO_BIN_EXE_mcpeval-serve"),
        "mcpeval-verify" => env!("CARGO_BIN_EXE_mcpeval-verify"),
        "mcpeval-close" => env!("CARGO_BIN_EXE_mcpeval-close"),
        "mcpeval-generate" => env!("CARGO_BIN_EXE_mcpeval-generate"),
        "mcpeval-report" => env!("CARGO_BIN_EXE_mcpeval-report"),
        "mcpeval-otel" => env!("CARGO_BIN_EXE_mcpeval-otel"),
        other => panic!("{other} is not a binary of the suite"),
    };
    PathBuf::from(path)
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

/// The PATH every test starts from: system directories only.
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Real peers installed by `scripts/test-deps` under `.deps/`.
pub struct Deps;

impl Deps {
    fn path(rel: &str) -> PathBuf {
        let p = repo().join(".deps").join(rel);
        assert!(
            p.exists(),
            "{} is missing: run scripts/test-deps (scripts/test does) before cargo test",
            p.display()
        );
        p
    }

    /// The venv's Python, with the pinned `mcp` SDK and `mcp-server-time`,
    /// for `python SCRIPT ARGS...`: a launcher whose script runs in a
    /// child of a process that imported the SDK once (see
    /// `tests/clients/forkserver.py`), so each SDK client does not spend
    /// a second of CPU importing it again.
    pub fn python() -> PathBuf {
        static LAUNCHER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        LAUNCHER.get_or_init(start_fork_server).clone()
    }

    /// The venv's Python itself, for what a launcher cannot run: a
    /// process that instruments itself at start-up, for one.
    pub fn venv_python() -> PathBuf {
        Deps::path("venv/bin/python")
    }

    /// A program the venv installed (`venv/bin/NAME`).
    pub fn venv_bin(name: &str) -> PathBuf {
        Deps::path(&format!("venv/bin/{name}"))
    }

    /// `mcp-server-time` from PyPI.
    pub fn server_time() -> PathBuf {
        Deps::path("venv/bin/mcp-server-time")
    }

    /// `mcp-server-everything` from npm.
    pub fn server_everything() -> PathBuf {
        Deps::path("node/node_modules/.bin/mcp-server-everything")
    }

    /// `mcp-server-filesystem` from npm: give it the directories it may
    /// touch as arguments.
    pub fn server_filesystem() -> PathBuf {
        Deps::path("node/node_modules/.bin/mcp-server-filesystem")
    }

    /// `mcp-server-memory` from npm: it keeps its graph in the file named
    /// by `MEMORY_FILE_PATH` (without it, beside its own code under .deps).
    pub fn server_memory() -> PathBuf {
        Deps::path("node/node_modules/.bin/mcp-server-memory")
    }

    /// Node 22 (an npm package of its own), for the clients that need it.
    pub fn node22() -> PathBuf {
        Deps::path("node22/node_modules/.bin/node")
    }

    /// The MCP Inspector's launcher script (`inspector --cli ...`); run it
    /// with [`Deps::node22`].
    pub fn inspector() -> PathBuf {
        Deps::path(
            "node/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
        )
    }

    /// The MCP conformance suite's entry script; run it with [`Deps::node22`].
    pub fn conformance() -> PathBuf {
        Deps::path("node/node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }
}

/// Starts `tests/clients/forkserver.py` for [`Deps::python`]; the path
/// of the launcher it writes. The server lives as long as this test
/// binary: it holds the write end of the server's stdin, which closes at
/// exit, and the server then kills the children left and removes its
/// directory.
fn start_fork_server() -> PathBuf {
    use std::io::BufRead;
    let dir = tempfile::Builder::new()
        .prefix("mcpeval-python")
        .tempdir()
        .unwrap()
        .keep();
    let mut child = Command::new(Deps::venv_python())
        .arg(repo().join("tests/clients/forkserver.py"))
        .arg(&dir)
        .env_clear()
        .env("HOME", &dir)
        .env("PATH", SYSTEM_PATH)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n", "tests/clients/forkserver.py did not start");
    // Held until exit, never written: its end is the server's signal.
    std::mem::forget(child.stdin.take());
    std::mem::forget(child);
    dir.join("python")
}

/// `@modelcontextprotocol/server-everything` over Streamable HTTP on a
/// free loopback port, running until the guard drops; its endpoint URL.
pub fn everything_over_http(store: &Store) -> (Guard, String) {
    let port = free_port();
    let mut cmd = Command::new(Deps::server_everything());
    store.env(&mut cmd);
    cmd.arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let guard = Guard(cmd.spawn().unwrap());
    wait_for_port(port, "mcp-server-everything");
    (guard, format!("http://127.0.0.1:{port}/mcp"))
}

/// A private store in a temporary directory, removed when dropped.
pub struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    pub fn new() -> Store {
        Store {
            dir: tempfile::Builder::new()
                .prefix("mcpeval-test-")
                .tempdir()
                .expect("temp dir"),
        }
    }

    /// The scratch directory (the store is `home()`, inside it).
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// `MCPEVAL_HOME` for commands run through this store.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn journals(&self) -> Vec<PathBuf> {
        let dir = self.home().join("journals");
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }

    /// Every journal record, parsed, in file then line order.
    pub fn records(&self) -> Vec<serde_json::Value> {
        self.read_records(false)
    }

    /// The records a running capture has finished writing: a journal's last
    /// line without its newline is one still being written, and is left out.
    pub fn finished_records(&self) -> Vec<serde_json::Value> {
        self.read_records(true)
    }

    fn read_records(&self, finished_only: bool) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for file in self.journals() {
            let mut bytes = std::fs::read(&file).unwrap();
            if finished_only {
                let end = bytes
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |at| at + 1);
                bytes.truncate(end);
            }
            let text = String::from_utf8(bytes).unwrap();
            for line in text.lines() {
                out.push(serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")));
            }
        }
        out
    }

    /// Every journal's bytes, in file order.
    pub fn journal_bytes(&self) -> Vec<u8> {
        self.journals()
            .iter()
            .flat_map(|j| std::fs::read(j).unwrap())
            .collect()
    }

    /// Every byte stored under the home, for "nothing raw was kept" checks.
    pub fn all_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut stack = vec![self.home()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.extend(std::fs::read(&path).unwrap());
                }
            }
        }
        out
    }

    /// A command for binary `name` with the hermetic environment.
    pub fn cmd(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin(name));
        self.env(&mut cmd);
        cmd
    }

    /// The same hermetic command as an `assert_cmd` command: `.assert()`
    /// checks status, stdout and stderr with `predicates`, `.write_stdin()`
    /// feeds it. Processes that must be driven while they run (pipes, kills)
    /// keep to `cmd`.
    pub fn bin(&self, name: &str) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.cmd(name))
    }

    /// `text` with this store's temporary directory written `[SCRATCH]`, so
    /// a snapshot does not depend on where the test ran.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.scratch().display().to_string(), "[SCRATCH]")
    }

    /// `redact` and then every finding id numbered by first appearance
    /// (`[finding-1]`, ...): ids hash the store's own salt, so they differ
    /// from store to store, while which line names which finding must not.
    pub fn redact_ids(&self, text: &str) -> String {
        let text = self.redact(text);
        let mut seen: Vec<&str> = Vec::new();
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find("finding-") {
            let id = rest[at..].get(..24).filter(|id| {
                id[8..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
            out.push_str(&rest[..at]);
            match id {
                Some(id) => {
                    let n = match seen.iter().position(|s| *s == id) {
                        Some(n) => n + 1,
                        None => {
                            seen.push(id);
                            seen.len()
                        }
                    };
                    out.push_str(&format!("[finding-{n}]"));
                    rest = &rest[at + 24..];
                }
                None => {
                    out.push_str("finding-");
                    rest = &rest[at + 8..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// Applies the hermetic environment to any command.
    pub fn env(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("MCPEVAL_HOME", self.home())
            .env("HOME", self.scratch())
            .env("NO_COLOR", "1")
            .env("PATH", SYSTEM_PATH)
            .env("LANG", "C.UTF-8");
    }

    /// A duct expression for `name` with the hermetic environment.
    pub fn duct(&self, name: &str, args: &[&str]) -> duct::Expression {
        duct::cmd(bin(name), args).full_env(self.env_pairs())
    }

    /// The hermetic environment as pairs.
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        vec![
            ("MCPEVAL_HOME".into(), self.home().display().to_string()),
            ("HOME".into(), self.scratch().display().to_string()),
            ("NO_COLOR".into(), "1".into()),
            ("PATH".into(), SYSTEM_PATH.into()),
            ("LANG".into(), "C.UTF-8".into()),
        ]
    }
}

/// Contains `needle` as a byte substring?
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

/// The first of many `needles` found in `haystack`, if any: one pass per
/// distinct needle length, each window looked up in a set, so tens of
/// thousands of needles cost no more than a few.
pub fn first_found<'a>(
    haystack: &[u8],
    needles: &'a std::collections::BTreeSet<String>,
) -> Option<&'a str> {
    let set: std::collections::HashMap<&[u8], &str> =
        needles.iter().map(|n| (n.as_bytes(), n.as_str())).collect();
    let lengths: std::collections::BTreeSet<usize> = needles.iter().map(String::len).collect();
    lengths.into_iter().find_map(|len| {
        haystack
            .windows(len.max(1))
            .find_map(|w| set.get(w).copied())
    })
}

/// Stdout/stderr as text, for assertion messages.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A child process killed when dropped, so no test leaves a server behind,
/// even when it fails half-way.
pub struct Guard(pub std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub use mcpeval_testkit::pg_host::free_port;

/// Waits (at most 20 s) until something accepts connections on `port`.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// How a child run by [`measure`] ended, what it wrote, and the most
/// memory it ever held.
pub struct Measured {
    /// Its exit status, or 128 + the signal that ended it.
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Its peak resident set size in bytes.
    pub peak: u64,
}

/// Runs `cmd` (a command of [`Store::cmd`]: a cleared environment plus
/// what it sets) with stdout and stderr captured and stdin fed by `feed`
/// (in a thread of its own; closed when `feed` returns) or null, and
/// measures its peak resident memory. It runs under
/// `tests/fixtures/peak_rss.py`, which forks it from a small process and
/// reaps it with `wait4`: spawned from this test process directly, its
/// figure would start from this process's own high-water mark. A child
/// still running after `limit` is killed and the test fails: a hang is a
/// failure, never a stuck suite.
pub fn measure(
    cmd: Command,
    feed: Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>>,
    limit: std::time::Duration,
) -> Measured {
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut runner = Command::new("python3");
    runner
        .env_clear()
        .arg(fixture("peak_rss.py"))
        .arg(report.path());
    let mut wrapped = mcpeval_testkit::wrap::through(runner, &cmd);
    wrapped
        .stdin(if feed.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Guard(wrapped.spawn().unwrap());
    let (stdout, stderr) = read_outputs(&mut child.0);
    if let (Some(feed), Some(stdin)) = (feed, child.0.stdin.take()) {
        std::thread::spawn(move || feed(stdin));
    }
    // The pipes close when the command and its children are done.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send((stdout.join().unwrap(), stderr.join().unwrap()));
    });
    let Ok((stdout, stderr)) = rx.recv_timeout(limit) else {
        // The guard kills the wrapper; the command is its child.
        for pid in children_of(child.0.id()) {
            // SAFETY: a signal to a process this test started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        panic!("{cmd:?} did not finish within {limit:?}");
    };
    let status = child.0.wait().unwrap();
    let peak = std::fs::read_to_string(report.path())
        .unwrap_or_else(|_| panic!("{cmd:?}: no peak reported ({status})"));
    Measured {
        status: status.code().unwrap_or(-1),
        stdout,
        stderr,
        peak: peak.trim().parse().unwrap(),
    }
}

/// Every process of the machine whose command line holds `needle`, as
/// (pid, command line with NULs shown as spaces). A process that ends
/// while it is looked at is skipped.
pub fn command_lines_with(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if contains(&cmdline, needle) {
            found.push((pid, text(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces and parentheses.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// Capture's bound on its own memory, which the memory tests hold it to.
pub const CAPTURE_PEAK: u64 = 256 << 20;

/// The peak resident memory of process `pid` so far, in bytes (`VmHWM`),
/// or `None` once it has exited.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())?;
    Some(kib * 1024)
}

/// Watches a process's peak resident memory until it exits: the last
/// `VmHWM` read before it is gone, polled every 10 ms (a peak only grows).
pub struct PeakWatch {
    thread: std::thread::JoinHandle<u64>,
}

impl PeakWatch {
    pub fn start(pid: u32) -> PeakWatch {
        let thread = std::thread::spawn(move || {
            let mut last = 0;
            while let Some(peak) = peak_rss(pid) {
                last = peak;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            last
        });
        PeakWatch { thread }
    }

    /// The process's peak, once it has exited (or been reaped).
    pub fn finish(self) -> u64 {
        self.thread.join().unwrap()
    }
}

/// Writes `start`, then `a` up to `total` bytes less `end`, then `end`, in
/// pieces: nothing holds it whole.
pub fn write_padded(
    out: &mut impl std::io::Write,
    start: &str,
    end: &str,
    total: usize,
) -> std::io::Result<()> {
    write_padded_range(out, start, end, total, 0..total)
}

/// Writes the bytes `range` of what [`write_padded`] writes.
pub fn write_padded_range(
    out: &mut impl std::io::Write,
    start: &str,
    end: &str,
    total: usize,
    range: std::ops::Range<usize>,
) -> std::io::Result<()> {
    let padding = vec![b'a'; 1 << 18];
    let pad_end = total - end.len();
    let mut at = range.start;
    while at < range.end {
        let n = if at < start.len() {
            let n = start.len().min(range.end) - at;
            out.write_all(&start.as_bytes()[at..at + n])?;
            n
        } else if at < pad_end {
            let n = (pad_end.min(range.end) - at).min(padding.len());
            out.write_all(&padding[..n])?;
            n
        } else {
            let from = at - pad_end;
            let n = range.end - at;
            out.write_all(&end.as_bytes()[from..from + n])?;
            n
        };
        at += n;
    }
    Ok(())
}

/// How long a scripted client session (an SDK client driving a server,
/// perhaps through capture) may take before it counts as hung: many
/// times what one takes on a loaded two-core machine.
pub const SESSION_LIMIT: std::time::Duration = std::time::Duration::from_secs(180);

/// `Command::output` with a deadline.
pub trait OutputWithin {
    /// Runs the command with stdin null, stdout and stderr captured. A
    /// command still running after `limit` is killed with the processes
    /// it started and the test fails naming it and showing what it wrote
    /// to stderr, so a hang is a failure, never a stuck suite.
    fn output_within(&mut self, limit: std::time::Duration) -> std::process::Output;
}

impl OutputWithin for Command {
    fn output_within(&mut self, limit: std::time::Duration) -> std::process::Output {
        output_within(self, limit)
    }
}

fn output_within(cmd: &mut Command, limit: std::time::Duration) -> std::process::Output {
    use std::time::{Duration, Instant};
    let mut child = Guard(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("{cmd:?}: {err}")),
    );
    let (stdout, stderr) = read_outputs(&mut child.0);
    let deadline = Instant::now() + limit;
    // Done when the command has exited and both pipes are closed: a
    // process it started may hold them after it exits, and waiting on
    // them is bounded too.
    let mut status = None;
    while status.is_none() || !(stdout.is_finished() && stderr.is_finished()) {
        if status.is_none() {
            status = child.0.try_wait().unwrap();
        }
        if Instant::now() >= deadline {
            // Only a tree still rooted in the command can be found; what
            // it left behind after exiting keeps its pipes, unread.
            if status.is_none() {
                kill_tree(child.0.id());
            }
            let closing = Instant::now() + Duration::from_secs(5);
            while !stderr.is_finished() && Instant::now() < closing {
                std::thread::sleep(Duration::from_millis(20));
            }
            let said = match stderr.is_finished() {
                true => text(&stderr.join().unwrap()),
                false => "(its stderr is still held open)".to_owned(),
            };
            panic!("{cmd:?} did not finish within {limit:?}; its stderr:\n{said}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::process::Output {
        status: status.expect("the command exited"),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Kills `pid` and every process below it, children first seen first.
pub fn kill_tree(pid: u32) {
    // Stopped first, so that none starts another while the tree is read.
    // SAFETY: signals to processes this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
    for child in children_of(pid) {
        kill_tree(child);
    }
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

/// Reads a child's piped stdout and stderr to their ends, each on a thread
/// of its own, so neither pipe can fill and stall the child.
fn read_outputs(
    child: &mut std::process::Child,
) -> (
    std::thread::JoinHandle<Vec<u8>>,
    std::thread::JoinHandle<Vec<u8>>,
) {
    fn read_all(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    }
    (
        read_all(child.stdout.take().unwrap()),
        read_all(child.stderr.take().unwrap()),
    )
}

#[test]
#[should_panic(expected = "did not finish within")]
fn a_command_past_its_deadline_is_killed_and_fails_the_test() {
    Command::new("sh")
        .args(["-c", "echo started >&2; exec sleep 100"])
        .output_within(std::time::Duration::from_millis(500));
}

#[test]
#[should_panic(expected = "did not finish within")]
fn a_pipe_held_open_after_the_command_exits_is_waited_on_only_until_the_deadline() {
    // The background sleep keeps stdout and stderr open past the shell.
    Command::new("sh")
        .args(["-c", "sleep 3 & exit 0"])
        .output_within(std::time::Duration::from_millis(500));
}
