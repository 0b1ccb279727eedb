//! Timing child processes, with their peak memory, and summarising repeats.
//!
//! Each measured program is started by a small runner (this binary with
//! `--measure`), which times it and reaps it with `wait4`, whose resource
//! usage is that program's alone (and its own reaped children's, so a shell
//! pipeline reports its largest stage). Started by the bench itself, a
//! program's peak would start at the bench's: a child spawned with
//! `posix_spawn` is a view of its parent's memory until `exec`, and Linux
//! keeps that high-water mark in the child's `ru_maxrss`, so late in a full
//! run (the bench holds over a GB by then) every peak read high. The
//! runner is a fresh process of a few MB. Output goes to files, never
//! pipes, so a chatty program cannot stall on a full pipe while the clock
//! runs.

use std::ffi::OsString;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One finished run of a program.
#[derive(Debug, Clone)]
pub struct Run {
    pub time: Duration,
    /// Peak resident memory, bytes.
    pub peak: u64,
    pub stdout: String,
}

/// Runs `cmd` to completion with output captured in `scratch`; a failing
/// program stops the bench, since its time would mean nothing.
pub fn run(cmd: &mut Command, scratch: &Path) -> Run {
    let out_path = scratch.join("stdout");
    let err_path = scratch.join("stderr");
    let out = File::create(&out_path).expect("stdout file");
    let err = File::create(&err_path).expect("stderr file");
    let report_path = scratch.join("measured");
    let _ = std::fs::remove_file(&report_path);
    let mut runner = through_runner(cmd, &report_path);
    runner
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let child = runner
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let (status, _) = reap(child);
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status == 0,
        "{cmd:?} failed (wait status {status}):\n{stderr}"
    );
    let report = std::fs::read_to_string(&report_path).unwrap_or_default();
    let (time, peak) = parse_report(&report)
        .unwrap_or_else(|| panic!("the runner of {cmd:?} reported {report:?}"));
    Run { time, peak, stdout }
}

/// `cmd` started by the runner, which writes its time and peak to
/// `report`: the same program, arguments, environment and directory.
fn through_runner(cmd: &Command, report: &Path) -> Command {
    let me = std::env::current_exe().expect("the bench's own path");
    let mut runner = Command::new(me);
    runner.arg("--measure").arg(report);
    mcpeval_testkit::wrap::through(runner, cmd)
}

/// `--measure REPORT PROGRAM ARGS…`: runs the program with this process's
/// standard streams, writes to REPORT its wall time in nanoseconds and its
/// peak resident bytes, and exits with its status (128 + N when signal N
/// ended it).
pub fn runner_main(args: &[String]) {
    let [report, program, rest @ ..] = args else {
        panic!("--measure REPORT PROGRAM ARGS…, not {args:?}");
    };
    let started = Instant::now();
    let child = Command::new(program)
        .args(rest.iter().map(OsString::from))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let (status, peak) = reap(child);
    let time = started.elapsed();
    std::fs::write(report, format!("{} {peak}\n", time.as_nanos()))
        .unwrap_or_else(|e| panic!("cannot write {report}: {e}"));
    let code = if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        libc::WEXITSTATUS(status)
    };
    std::process::exit(code);
}

/// The time and peak a runner wrote.
fn parse_report(report: &str) -> Option<(Duration, u64)> {
    let mut fields = report.split_whitespace();
    let nanos: u64 = fields.next()?.parse().ok()?;
    let peak = fields.next()?.parse().ok()?;
    Some((Duration::from_nanos(nanos), peak))
}

/// Waits for `child` with `wait4`, since `Child::wait` cannot tell its
/// resource usage; returns its wait status and peak resident bytes.
pub fn reap(child: Child) -> (i32, u64) {
    let (status, usage) = wait(child);
    // Linux reports ru_maxrss in KiB.
    (status, usage.ru_maxrss as u64 * 1024)
}

/// The CPU time the running process `pid` has had so far, its own
/// threads' and not its children's: the sum of each thread's run time as
/// the scheduler counts it (`/proc/PID/task/*/schedstat`, nanoseconds).
/// None where that is not readable.
pub fn threads_cpu(pid: u32) -> Option<Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        nanos += stat.split(' ').next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(nanos))
}

/// Waits for `child`; returns its wait status and the CPU time (user +
/// system) it and its reaped children took.
pub fn reap_cpu(child: Child) -> (i32, Duration) {
    let (status, usage) = wait(child);
    (status, crate::cpu::total(&usage))
}

fn wait(child: Child) -> (i32, libc::rusage) {
    let pid = child.id();
    let mut status = 0;
    // SAFETY: rusage is plain data, fully written by a successful wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; pid is our own unreaped child.
        let got = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if got == pid as libc::pid_t {
            break;
        }
        let err = std::io::Error::last_os_error();
        assert!(
            err.kind() == std::io::ErrorKind::Interrupted,
            "wait4: {err}"
        );
    }
    (status, usage)
}

/// The median of `values` (the lower middle for an even count).
pub fn median<T: Copy + PartialOrd>(values: &[T]) -> T {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[(v.len() - 1) / 2]
}

/// The `p`-th percentile (0–100) of sorted `values`, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Median time and median peak of several runs.
pub fn summary(runs: &[Run]) -> (Duration, u64) {
    let times: Vec<Duration> = runs.iter().map(|r| r.time).collect();
    let peaks: Vec<u64> = runs.iter().map(|r| r.peak).collect();
    (median(&times), median(&peaks))
}
