//! Stdio capture: run the server as a child and relay its stdin and stdout.
//!
//! The client talks to capture exactly as to the server. Nothing of
//! capture's own ever goes to stdout: that stream belongs to the server's
//! bytes. This mode never starts an async runtime.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::mpsc::TryRecvError;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use shared::Error;
use shared::Result;
use shared::home::Home;
use shared::record::Transport;
use store::journal::Writer;
use store::salt::Salt;

use crate::PROGRAM;
use crate::args;
use crate::relay::{self, Event, Lines};
use crate::session::{self, Done, Session, Side};
use crate::signals;
use crate::warnings;

/// Runs the server command and relays until it exits; exits like it.
pub fn run(home: &Home, server: Option<String>, config: args::Stdio) -> Result<()> {
    // Prepare the store before starting the server, so a capture that
    // cannot journal fails before the client's session begins.
    let salt = Salt::load_or_create(home)?;
    let mut writer = Writer::new(home)?;
    let mut session = Session::new(salt, Transport::Stdio, server, config.fallback_server);

    let mut child = Command::new(&config.program)
        .args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|err| {
            Error::transport(format!(
                "cannot start the server {:?}: {err}",
                config.program.to_string_lossy()
            ))
        })?;
    signals::forward_to(child.id())?;

    let stdin = dup(std::io::stdin().as_fd(), "stdin")?;
    let stdout = dup(std::io::stdout().as_fd(), "stdout")?;
    let server_in = File::from(OwnedFd::from(child.stdin.take().expect("piped stdin")));
    let server_out = File::from(OwnedFd::from(child.stdout.take().expect("piped stdout")));
    let mut observed = relay::start(stdin, server_in, server_out, stdout);

    // The observer: journaling can wait for a pause in the session.
    relay::lower_priority();
    if config.unobserved {
        // The bench knob (`args::BENCH_UNOBSERVED`): the relays above run
        // as always, and what they hand over is dropped unread, so a bench
        // can time relaying apart from observing. Nothing is journaled.
        cli::warn(
            PROGRAM,
            format_args!(
                "{} is set: observing nothing, journaling nothing",
                args::BENCH_UNOBSERVED
            ),
        );
        while let Some(event) = observed.next() {
            if matches!(event, Event::Closed(Side::Server)) {
                break;
            }
        }
        let status = child
            .wait()
            .map_err(|err| Error::transport(format!("cannot wait for the server: {err}")))?;
        return signals::exit_like(status);
    }
    let mut journaled = 0u64;
    let mut failed_write = false;
    // The calls completed while the relays had more for the observer are
    // appended together, under one hold of the journal lock, once the
    // observer has caught up and [`GATHER_FOR`] has passed since it first
    // did (or it has gathered [`GATHER`] of them): a record is on disk
    // within milliseconds of its call's end, and a server answering a
    // call a millisecond costs one append and two wake-ups of the
    // observer per ten calls, not one append and one wake-up each.
    let mut append = |writer: &mut Writer, calls: &mut Vec<Done>| {
        let (done, failed) = session::append(writer, calls);
        journaled += done as u64;
        calls.clear();
        match failed {
            // Keep relaying: the client's session matters more than the
            // journal. Say so once, loudly.
            Some(err) if !failed_write => {
                failed_write = true;
                cli::warn(PROGRAM, format_args!("{err}; further records are lost"));
            }
            _ => {}
        }
    };
    let mut completed = Vec::new();
    // When the records gathered are appended, once the observer caught up.
    let mut due: Option<Instant> = None;
    let (mut client, mut server) = (Lines::default(), Lines::default());
    loop {
        if completed.is_empty() {
            due = None;
        }
        let event = match observed.try_next() {
            Ok(event) => event,
            Err(TryRecvError::Empty) if completed.is_empty() => match observed.wait() {
                Some(event) => event,
                None => break,
            },
            Err(TryRecvError::Empty) => {
                let due = *due.get_or_insert_with(|| Instant::now() + GATHER_FOR);
                let left = due.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    append(&mut writer, &mut completed);
                } else {
                    // Asleep rather than waiting on the channel, so the
                    // events sent meanwhile wake nobody: they are read
                    // together when it is time.
                    std::thread::sleep(left);
                }
                continue;
            }
            Err(TryRecvError::Disconnected) => break,
        };
        match event {
            Event::Chunk {
                side,
                bytes,
                at,
                now,
            } => {
                let lines = match side {
                    Side::Client => &mut client,
                    Side::Server => &mut server,
                };
                lines.feed(&bytes, |line| {
                    session.observe_into(side, line, at, now, &mut completed);
                });
                // Its place in the backlog is free once it is cut into lines.
                drop(bytes);
                if completed.len() >= GATHER {
                    append(&mut writer, &mut completed);
                }
            }
            Event::Lost { side, missed } => match side {
                Side::Client => client.lose(missed.take()),
                Side::Server => server.lose(missed.take()),
            },
            Event::Closed(side) => {
                let lines = match side {
                    Side::Client => &mut client,
                    Side::Server => &mut server,
                };
                if let Some(last) = lines.finish() {
                    completed.extend(session.observe(
                        side,
                        &last,
                        Timestamp::now(),
                        Instant::now(),
                    ));
                }
                append(&mut writer, &mut completed);
                if side == Side::Server {
                    break;
                }
            }
        }
    }
    completed.extend(session.finish());
    append(&mut writer, &mut completed);

    let status = child
        .wait()
        .map_err(|err| Error::transport(format!("cannot wait for the server: {err}")))?;
    let oversized = client.oversized + server.oversized;
    warnings::bounded(oversized, client.lost + server.lost, session.bounded);
    let unparsed = session.unparsed;
    if unparsed > 0 {
        cli::warn(
            PROGRAM,
            format_args!(
                "{unparsed} message(s) were not JSON-RPC that capture could read; they were relayed unobserved"
            ),
        );
    }
    if cli::decorate_stderr() {
        let place = writer.path().map(|p| p.display().to_string());
        eprintln!(
            "{PROGRAM}: journaled {journaled} tool call(s){}",
            place.map(|p| format!(" to {p}")).unwrap_or_default()
        );
    }
    signals::exit_like(status)
}

/// The most completed records the observer holds before it writes them,
/// however far behind the relays it is.
const GATHER: usize = 1024;

/// How long records wait, once the observer has caught up, for the calls
/// that complete after them, so they are appended together.
const GATHER_FOR: Duration = Duration::from_millis(10);

fn dup(fd: std::os::fd::BorrowedFd<'_>, name: &str) -> Result<File> {
    fd.try_clone_to_owned()
        .map(File::from)
        .map_err(|err| Error::io(format_args!("cannot use {name}"), err))
}
