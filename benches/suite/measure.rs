//! Timing child processes, with their peak memory, and summarising repeats.
//!
//! Each measured program runs as its own child and is reaped with `wait4`,
//! whose resource usage is that child's alone (and its own reaped
//! children's, so a shell pipeline reports its largest stage). Output goes
//! to files, never pipes, so a chatty program cannot stall on a full pipe
//! while the clock runs.

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
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let started = Instant::now();
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let (status, peak) = reap(child);
    let time = started.elapsed();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status == 0,
        "{cmd:?} failed (wait status {status}):\n{stderr}"
    );
    Run { time, peak, stdout }
}

/// Waits for `child` with `wait4`, since `Child::wait` cannot tell its
/// resource usage; returns its wait status and peak resident bytes.
pub fn reap(child: Child) -> (i32, u64) {
    let (status, usage) = wait(child);
    // Linux reports ru_maxrss in KiB.
    (status, usage.ru_maxrss as u64 * 1024)
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

/// The peak resident bytes of this process's own memory so far: what a
/// child started with `posix_spawn` (which shares it until `exec`) can
/// carry into its `ru_maxrss`. Read from `VmHWM`, since `ru_maxrss` of
/// this process would in turn include whatever started it (cargo).
pub fn own_peak() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
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
