//! The performance bench: each of mcpeval's hot paths beside a physical
//! baseline measured in the same run, printed as a table of ratios.
//!
//! `cargo bench --bench suite` (or `scripts/bench`) runs the full sizes;
//! `-- --quick` runs small ones as a smoke test, and so does `cargo test`,
//! which runs this target without `--bench`. Workloads are generated
//! deterministically into a temporary directory that is removed afterwards.
//! The machine is usually shared, so absolute times wander: every figure is
//! the median of repeated runs, and ours and the baseline's alternate so
//! both see the same load. Nothing here asserts a time; it asserts only
//! that each program gave the right answer.

mod bare_proxy;
mod cpu;
mod everything;
mod floor;
mod http;
mod live;
mod measure;
mod otel;
mod postgres;
mod relay;
mod report;
mod sdk;
mod splice_relay;
mod store;
mod team;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::floor::Depth;
use crate::live::Live;
use crate::measure::{Run, median, percentile};
use crate::relay::Route;
use crate::report::{Row, Table, bytes, rate, secs};
use crate::store::{Store, Tools};
use crate::workload::Generator;

/// Workload sizes.
pub struct Sizes {
    round_trips: u64,
    pipelined: u64,
    /// Failed calls in the one long failure window, and its tools.
    window_calls: u64,
    window_tools: u64,
    calls: u64,
    /// The re-validation store holds at least this many journal bytes.
    revalidate_bytes: u64,
    journal_bytes: u64,
    reps: usize,
    /// Repeats of the quick figures (re-validation, relay sessions).
    short_reps: usize,
    /// Repeats of the rows timed in turns (`take_turns`): the real
    /// servers', whose pace drifts the most, and the splice relay's, whose
    /// sessions are short. Their median needs more of them to settle.
    turn_reps: usize,
    /// The team store pools `calls` from each of this many stores.
    team_stores: u64,
    team_reps: usize,
    /// `tools/call` spans the otel receiver ingests.
    otel_spans: u64,
}

const FULL: Sizes = Sizes {
    round_trips: 10_000,
    pipelined: 100_000,
    window_calls: 6_000,
    window_tools: 3_000,
    calls: 1_000_000,
    revalidate_bytes: 1_000_000_000,
    journal_bytes: 60_000_000,
    // Other work on a shared two-core machine moves single runs by 30%.
    reps: 5,
    short_reps: 5,
    turn_reps: 11,
    team_stores: 10,
    // Each repeat uploads and pulls a million calls.
    team_reps: 3,
    otel_spans: 1_000_000,
};

const QUICK: Sizes = Sizes {
    round_trips: 200,
    pipelined: 2_000,
    window_calls: 600,
    window_tools: 300,
    calls: 3_000,
    revalidate_bytes: 3_000_000,
    journal_bytes: 1_000_000,
    reps: 1,
    short_reps: 1,
    turn_reps: 1,
    team_stores: 2,
    team_reps: 1,
    otel_spans: 4_096,
};

/// The "now" promotion scores against: just after the generated traffic,
/// so scores do not depend on the day the bench runs.
pub const NOW: &str = "2026-11-05T00:00:00Z";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--echo-server") => return relay::serve(),
        Some("--floor") => return floor::main(&args[1..]),
        Some("--measure") => return measure::runner_main(&args[1..]),
        Some("--http-echo-server") => return http::serve(),
        Some("--splice-relay") => return splice_relay::main(&args[1..]),
        Some("--bare-proxy") => return bare_proxy::main(&args[1..]),
        _ => {}
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    // `cargo bench` passes --bench; `cargo test` runs this target without
    // it, and then only a quick smoke run makes sense.
    let quick = has("--quick") || !has("--bench");
    let mut sizes = if quick { QUICK } else { FULL };
    if quick {
        watch_quick_run();
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    // `--team-stores N`: pool fewer stores' calls where the disk is short
    // (each million pooled calls takes about 1.5 GB in the database, the
    // view's journals and its index).
    if let Some(n) = value("--team-stores") {
        sizes.team_stores = n.parse().expect("--team-stores takes a count");
    }
    // `--revalidate-bytes N`: re-validate and append to a store of N
    // journal bytes (a +1% append's fixed cost shows best on a smaller one).
    if let Some(n) = value("--revalidate-bytes") {
        sizes.revalidate_bytes = n.parse().expect("--revalidate-bytes takes a count");
    }
    let only: Vec<&str> = value("--only")
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    let wants = |section: &str| only.is_empty() || only.contains(&section);
    // `--keep DIR` works in DIR and leaves the stores there, to profile
    // the programs on them afterwards.
    let (_temporary, scratch) = match value("--keep") {
        Some(dir) => {
            std::fs::create_dir_all(dir).expect("--keep directory");
            (None, PathBuf::from(dir))
        }
        None => {
            let dir = tempfile::Builder::new()
                .prefix("mcpeval-bench-")
                .tempdir()
                .expect("scratch directory");
            let path = dir.path().to_owned();
            (Some(dir), path)
        }
    };
    let scratch = scratch.as_path();
    let tools = Tools::find();
    let mut table = Table::new(quick);
    table.describe_tools(&tools);

    if wants("capture") {
        capture(&sizes, scratch, &mut table);
    }
    if wants("checks") {
        capture_checks(&sizes, scratch, &mut table);
    }
    if wants("relays") {
        relays(&sizes, scratch, &mut table);
    }
    if wants("index") || wants("promote") {
        let store = generate(scratch, "full", 1, sizes.calls, 0, sizes.journal_bytes);
        if wants("index") {
            index_full(&store, &sizes, &tools, scratch, &mut table);
        } else {
            store::index(&store, scratch);
        }
        if wants("promote") {
            promote(&store, &sizes, &tools, scratch, &mut table);
        }
    }
    if wants("revalidate") {
        revalidate(&sizes, &tools, scratch, &mut table);
    }
    if wants("windows") {
        long_window(&sizes, scratch, &mut table);
    }
    if wants("team") {
        team::bench(&sizes, scratch, &mut table);
    }
    if wants("otel") {
        otel::bench(&sizes, scratch, &mut table);
    }
    table.print();
}

pub fn progress(what: std::fmt::Arguments<'_>) {
    let line = format!("bench: {what}");
    eprintln!("{line}");
    *AT.lock().unwrap_or_else(|e| e.into_inner()) = line;
}

/// The last progress line: what a stuck run was doing.
static AT: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// How long a quick run may take (it takes seconds): past this it is
/// stuck, and ends failing with the step it was at rather than holding
/// the test run that started it.
const QUICK_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

fn watch_quick_run() {
    std::thread::spawn(|| {
        std::thread::sleep(QUICK_LIMIT);
        let at = AT.lock().unwrap_or_else(|e| e.into_inner()).clone();
        eprintln!(
            "bench: the quick run did not finish within {} s; it was at:\n{at}",
            QUICK_LIMIT.as_secs()
        );
        // The servers it started read from pipes this exit closes.
        std::process::exit(1);
    });
}

/// Generates a store under `scratch/name`.
pub fn generate(
    scratch: &Path,
    name: &str,
    seed: u64,
    calls: u64,
    min_bytes: u64,
    journal_bytes: u64,
) -> Store {
    let home = scratch.join(name);
    progress(format_args!("generating journals for {name}"));
    let mut generator = Generator::new(seed);
    let journals = generator
        .journals(&home.join("journals"), calls, min_bytes, journal_bytes)
        .expect("write journals");
    let calls = workload::count_lines(&journals);
    Store {
        home,
        journals,
        calls,
    }
}

/// Sequential round trips and a pipelined session, direct and through
/// capture, alternately.
fn capture(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let home = scratch.join("capture");
    let route = Route::Capture { home: &home };
    let (mut direct_p, mut ours_p) = (Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{} sequential round trips, direct and through capture ({} of {})",
            sizes.round_trips,
            rep + 1,
            sizes.short_reps
        ));
        let direct = relay::sequential(&Route::Direct, sizes.round_trips);
        let ours = relay::sequential(&route, sizes.round_trips);
        direct_p.push((percentile(&direct, 50.0), percentile(&direct, 99.0)));
        ours_p.push((percentile(&ours, 50.0), percentile(&ours, 99.0)));
    }
    let (mut direct_t, mut ours_t, mut drained) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{} pipelined requests, direct and through capture ({} of {})",
            sizes.pipelined,
            rep + 1,
            sizes.short_reps
        ));
        direct_t.push(relay::pipelined(&Route::Direct, sizes.pipelined).0);
        let (replied, exited) = relay::pipelined(&route, sizes.pipelined);
        ours_t.push(replied);
        drained.push(exited);
    }
    let expected = sizes.short_reps as u64 * (sizes.round_trips + sizes.pipelined);
    assert_eq!(
        relay::journaled(&home),
        expected,
        "calls journaled by capture"
    );

    // Differences of paired runs, so load shared by both cancels out.
    let added = |pick: fn(&(Duration, Duration)) -> Duration| {
        let diffs: Vec<f64> = direct_p
            .iter()
            .zip(&ours_p)
            .map(|(d, o)| pick(o).as_secs_f64() - pick(d).as_secs_f64())
            .collect();
        median(&diffs)
    };
    let p50 = |p: &(Duration, Duration)| p.0;
    let p99 = |p: &(Duration, Duration)| p.1;
    for (name, pick, target) in [("p50", p50 as fn(&_) -> _, Some(50e-6)), ("p99", p99, None)] {
        let ours = median(&ours_p.iter().map(pick).collect::<Vec<_>>());
        let direct = median(&direct_p.iter().map(pick).collect::<Vec<_>>());
        let extra = added(pick);
        table.push(Row {
            figure: format!(
                "capture: round trip {name}, {} sequential calls",
                report::count(sizes.round_trips)
            ),
            ours: secs(ours),
            baseline: format!("{} direct", secs(direct)),
            ratio: format!("{:+.0} µs", extra * 1e6),
            target: target.map_or("-".into(), |t| format!("≤ +{:.0} µs", t * 1e6)),
            met: target.map(|t| extra <= t),
        });
    }
    let ours = median(&ours_t);
    let direct = median(&direct_t);
    let kept = direct.as_secs_f64() / ours.as_secs_f64();
    // Against an echo that answers millions of calls a second, faster than
    // any real server, this measures the echo: for information only. The
    // CPU rows below and the real servers' rows carry the targets.
    table.push(Row {
        figure: format!(
            "capture: {} pipelined calls to a trivial echo, all replies in",
            report::count(sizes.pipelined)
        ),
        ours: secs(ours),
        baseline: format!("{} direct", secs(direct)),
        ratio: format!("{:.0}% of direct", kept * 100.0),
        target: "for information".into(),
        met: None,
    });
    table.note(format!(
        "capture, pipelined: {} until capture exited with every call journaled",
        secs(median(&drained))
    ));
    table.note(format!(
        "capture, added latency: the median over {} alternating pairs of (ours - direct), \
         so it need not equal the difference of the two medians shown",
        sizes.short_reps
    ));
    capture_cpu(sizes, scratch, table);
    capture_sdk(sizes, scratch, table);
    capture_http(sizes, scratch, table);
}

/// Capture's own CPU per call, and the server's CPU under capture against
/// behind plain pipes, over the pipelined session, alternately.
fn capture_cpu(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let home = scratch.join("capture-cpu");
    let input = cpu::requests(sizes.pipelined);
    let (mut own, mut under, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{} pipelined calls to a Python echo server, behind plain pipes and through \
             capture, CPU time ({} of {})",
            sizes.pipelined,
            rep + 1,
            sizes.short_reps
        ));
        plain.push(cpu::session(&input, None, scratch, cpu::Results::Plain).server);
        let captured = cpu::session(&input, Some(&home), scratch, cpu::Results::Plain);
        own.push(cpu::per_call(
            captured.capture.expect("capture's CPU"),
            sizes.pipelined,
        ));
        under.push(captured.server);
    }
    assert_eq!(
        relay::journaled(&home),
        sizes.short_reps as u64 * sizes.pipelined,
        "calls journaled by capture"
    );
    let server_per_call: Vec<f64> = under
        .iter()
        .map(|&s| cpu::per_call(s, sizes.pipelined))
        .collect();
    let ours = median(&own);
    table.push(Row {
        figure: format!(
            "capture: own CPU per call, {} pipelined calls (10% errors) to a Python echo server",
            report::count(sizes.pipelined)
        ),
        ours: format!("{ours:.2} µs"),
        baseline: format!("{:.2} µs the server's", median(&server_per_call)),
        ratio: format!("{:.2}×", ours / median(&server_per_call)),
        target: "≤ 2.5 µs".into(),
        met: Some(ours <= 2.5),
    });
    // Paired ratios, so load shared by both runs of a pair cancels out.
    let ratios: Vec<f64> = under.iter().zip(&plain).map(|(u, p)| u / p).collect();
    let ratio = median(&ratios);
    table.push(Row {
        figure: "capture: the server's CPU under capture".into(),
        ours: secs(Duration::from_secs_f64(median(&under))),
        baseline: format!(
            "{} behind plain pipes",
            secs(Duration::from_secs_f64(median(&plain)))
        ),
        ratio: format!("{ratio:.2}×"),
        target: "≤ 1.10×".into(),
        met: Some(ratio <= 1.10),
    });
    let (lo, hi) = cpu::range(&own);
    let (rlo, rhi) = cpu::range(&ratios);
    table.note(format!(
        "capture's own CPU: its user + system time less the server's, {lo:.2}–{hi:.2} µs a call \
         over {} runs; the server's CPU under capture over behind plain pipes, {rlo:.2}–{rhi:.2}×",
        sizes.short_reps
    ));
}

/// Capture's own CPU per call when every success is checked against the
/// tool's declared outputSchema, beside the same structured results with
/// no schema declared, alternately.
fn capture_checks(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let input = cpu::requests(sizes.pipelined);
    let (mut unchecked, mut checked, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{} pipelined calls through capture, results with and without a declared \
             outputSchema, CPU time ({} of {})",
            sizes.pipelined,
            rep + 1,
            sizes.short_reps
        ));
        for (results, into) in [
            (cpu::Results::Structured, &mut unchecked),
            (cpu::Results::Checked, &mut checked),
        ] {
            let home = scratch.join("capture-checks");
            let _ = std::fs::remove_dir_all(&home);
            let cpu = cpu::session(&input, Some(&home), scratch, results);
            into.push(cpu::per_call(
                cpu.capture.expect("capture's CPU"),
                sizes.pipelined,
            ));
            if let cpu::Results::Checked = results {
                // Calls sent before the tools/list answer came back are
                // judged by no list: pipelined, the first thousand or so
                // are (how many the note says).
                let (kept, broken) = relay::contracts(&home);
                assert_eq!(broken, 0, "no success breaks the schema");
                assert!(kept > 0, "successes checked");
                checks.push(kept);
            }
        }
    }
    let (on, off) = (median(&checked), median(&unchecked));
    table.push(Row {
        figure: "capture: own CPU per call, every success checked against its outputSchema".into(),
        ours: format!("{on:.2} µs"),
        baseline: format!("{off:.2} µs with no schema declared"),
        ratio: format!("{:+.2} µs", on - off),
        target: "for information".into(),
        met: None,
    });
    let (lo, hi) = cpu::range(&checked);
    let (ulo, uhi) = cpu::range(&unchecked);
    table.note(format!(
        "capture's own CPU with outputSchema checks: {lo:.2}–{hi:.2} µs a call over {} runs \
         ({}–{} of {} successes checked: the calls sent before the tools/list answer are \
         judged by no list), {ulo:.2}–{uhi:.2} µs for the same results with no schema declared",
        sizes.short_reps,
        checks.iter().min().unwrap_or(&0),
        checks.iter().max().unwrap_or(&0),
        sizes.pipelined * 9 / 10
    ));
}

/// Pipelined calls to the MCP Python SDK server, directly and through
/// capture, alternately; skipped when the test peers are not installed.
fn capture_sdk(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let Some(python) = sdk::python() else {
        table.note(
            "capture against the MCP Python SDK server: skipped, .deps/venv is not installed \
             (scripts/test-deps installs it)"
                .into(),
        );
        return;
    };
    let calls = sizes.round_trips / 5;
    pipelined_real(
        sizes,
        &scratch.join("capture-sdk"),
        calls,
        ("the MCP Python SDK server", "start-up excluded"),
        table,
        |home| sdk::start(&python, scratch, home),
    );
}

/// Bursts of pipelined calls each route of a row timed in turns answers
/// per repeat.
const BURSTS: u64 = 8;

/// The pause before each burst of a row timed in turns: longer than
/// capture gathers records before it appends them (10 ms), so no burst
/// pays for the one before it.
const PAUSE: Duration = Duration::from_millis(30);

/// What the repeats of a row timed in turns measured.
#[derive(Default)]
struct Turns {
    /// Per repeat, each route's bursts summed.
    baseline: Vec<Duration>,
    ours: Vec<Duration>,
    /// Per repeat, our session's own CPU a call (µs) inside the bursts and
    /// in the pauses between them, where its process reports it.
    inside: Vec<f64>,
    between: Vec<f64>,
}

impl Turns {
    /// Per repeat, the baseline's time over ours.
    fn kept(&self) -> Vec<f64> {
        self.baseline
            .iter()
            .zip(&self.ours)
            .map(|(b, o)| b.as_secs_f64() / o.as_secs_f64())
            .collect()
    }
}

/// Two routes to one server timed in turns, so both meet the same drift of
/// the machine's pace: per repeat, a session of each (`start(false)` the
/// baseline's, `start(true)` ours) is started and the two take turns
/// answering `BURSTS` bursts of `burst` pipelined calls (baseline, ours,
/// ours, baseline, … or the mirror, alternating by repeat, as the order
/// the two start in does), each after a `PAUSE`. `what` names the
/// sessions in the progress line.
fn take_turns(reps: usize, burst: u64, what: &str, start: impl Fn(bool) -> Live) -> Turns {
    let mut turns = Turns::default();
    let per_call = |cpu: Duration| cpu.as_secs_f64() * 1e6 / (burst * BURSTS) as f64;
    for rep in 0..reps {
        progress(format_args!(
            "{} pipelined calls to {what} in alternating bursts ({} of {reps})",
            burst * BURSTS,
            rep + 1,
        ));
        // Started in either order, alternating by repeat like the bursts.
        let mut sessions = if rep % 2 == 0 {
            let baseline = start(false);
            [baseline, start(true)]
        } else {
            let ours = start(true);
            [start(false), ours]
        };
        let mut times = [Duration::ZERO; 2];
        let first = sessions[1].cpu();
        let mut timed = Duration::ZERO;
        for turn in 0..2 * BURSTS {
            let ours = matches!(turn % 4, 1 | 2) != (rep % 2 == 1);
            let session = &mut sessions[usize::from(ours)];
            std::thread::sleep(PAUSE);
            let before = session.cpu();
            times[usize::from(ours)] += session.burst(burst);
            if let (true, Some(before), Some(after)) = (ours, before, session.cpu()) {
                timed += after - before;
            }
        }
        std::thread::sleep(PAUSE);
        if let (Some(first), Some(last)) = (first, sessions[1].cpu()) {
            turns.inside.push(per_call(timed));
            turns
                .between
                .push(per_call(last.saturating_sub(first + timed)));
        }
        let [baseline, ours] = times;
        turns.baseline.push(baseline);
        turns.ours.push(ours);
        for session in sessions {
            session.finish();
        }
    }
    turns
}

/// Notes capture's own CPU a call inside the timed bursts and in the
/// pauses, against `server`.
fn note_turns_cpu(turns: &Turns, server: &str, table: &mut Table) {
    if turns.inside.is_empty() {
        return;
    }
    let (lo, hi) = cpu::range(&turns.inside);
    let (plo, phi) = cpu::range(&turns.between);
    table.note(format!(
        "capture's own CPU against {server}: {lo:.2}–{hi:.2} µs a call inside the timed \
         bursts, {plo:.2}–{phi:.2} µs a call in the pauses (work the times leave out), its \
         threads' run time"
    ));
}

/// Pipelined calls to a real server, directly and through capture
/// (journaling in `home`), timed in turns (`take_turns`) in bursts of
/// `calls / BURSTS`. `server` names the server and `excluded` what the
/// time leaves out. Target: 97% of direct.
fn pipelined_real(
    sizes: &Sizes,
    home: &Path,
    calls: u64,
    (server, excluded): (&str, &str),
    table: &mut Table,
    start: impl Fn(Option<&Path>) -> Live,
) {
    let burst = (calls / BURSTS).max(1);
    let what = format!("{server}, direct and through capture,");
    let turns = take_turns(sizes.turn_reps, burst, &what, |ours| {
        start(ours.then_some(home))
    });
    assert_eq!(
        relay::journaled(home),
        sizes.turn_reps as u64 * burst * BURSTS,
        "calls journaled by capture"
    );
    let kept = turns.kept();
    let ratio = median(&kept);
    table.push(Row {
        figure: format!(
            "capture: {} pipelined calls to {server}, all replies in",
            report::count(burst * BURSTS)
        ),
        ours: secs(median(&turns.ours)),
        baseline: format!("{} direct", secs(median(&turns.baseline))),
        ratio: format!("{:.0}% of direct", ratio * 100.0),
        target: "≥ 97%".into(),
        met: Some(ratio >= 0.97),
    });
    let (lo, hi) = cpu::range(&kept);
    table.note(format!(
        "capture against {server}: from the first call of each burst until its every reply is \
         in, {excluded}, summed over {BURSTS} bursts a route, the routes' sessions alive at once \
         and taking turns after a {} ms pause; {:.0}–{:.0}% of direct over {} repeats",
        PAUSE.as_millis(),
        lo * 100.0,
        hi * 100.0,
        sizes.turn_reps
    ));
    note_turns_cpu(&turns, server, table);
}

/// Sequential POSTs over one keep-alive connection, straight to an HTTP
/// server and through `capture --listen`, alternately.
fn capture_http(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let home = scratch.join("capture-http");
    let server = http::Server::start();
    let calls = sizes.round_trips / 2;
    let (mut direct_p, mut ours_p) = (Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{calls} sequential HTTP requests, direct and through capture --listen ({} of {})",
            rep + 1,
            sizes.short_reps
        ));
        direct_p.push(percentile(&http::direct(&server, calls), 50.0));
        ours_p.push(percentile(&http::captured(&server, &home, calls), 50.0));
    }
    let expected = sizes.short_reps as u64 * calls;
    assert_eq!(relay::journaled(&home), expected, "HTTP calls journaled");
    let diffs: Vec<f64> = direct_p
        .iter()
        .zip(&ours_p)
        .map(|(d, o)| o.as_secs_f64() - d.as_secs_f64())
        .collect();
    let extra = median(&diffs);
    table.push(Row {
        figure: format!(
            "capture --listen (HTTP): round trip p50, {} sequential calls",
            report::count(calls)
        ),
        ours: secs(median(&ours_p)),
        baseline: format!("{} direct", secs(median(&direct_p))),
        ratio: format!("{:+.0} µs", extra * 1e6),
        target: "≤ +100 µs".into(),
        met: Some(extra <= 100e-6),
    });
}

/// Capture beside other relays of the same sessions: a real Node server
/// reached directly, the least a splice relay does, and a bare reverse
/// proxy on capture's own HTTP stack.
fn relays(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    relays_everything(sizes, scratch, table);
    relays_splice(sizes, scratch, table);
    relays_bare_proxy(sizes, scratch, table);
}

/// Pipelined calls to server-everything, directly and through capture,
/// alternately; skipped when the test peers are not installed.
fn relays_everything(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let Some(server) = everything::server() else {
        table.note(
            "capture against server-everything: skipped, .deps/node is not installed \
             (scripts/test-deps installs it)"
                .into(),
        );
        return;
    };
    // Bursts of 1,250 calls: at its pace about 60 ms, so the last few
    // milliseconds of journaling each leaves to the pause are a small part.
    let calls = sizes.round_trips;
    pipelined_real(
        sizes,
        &scratch.join("relays-everything"),
        calls,
        (
            "server-everything (Node)",
            "start-up, handshake and tools/list excluded",
        ),
        table,
        |home| everything::start(&server, home),
    );
}

/// Pipelined calls to the trivial echo through capture with its observer
/// switched off and through a minimal splice relay, timed in turns
/// (`take_turns`).
fn relays_splice(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let home = scratch.join("relays-unobserved");
    let unobserved = Route::Unobserved { home: &home };
    let burst = (sizes.pipelined / BURSTS).max(1);
    let what = "the trivial echo, through a splice relay and through capture with observation off,";
    let turns = take_turns(sizes.turn_reps, burst, what, |ours| {
        relay::start(if ours { &unobserved } else { &Route::Splice })
    });
    assert_eq!(
        relay::journaled(&home),
        0,
        "nothing journaled with observation off"
    );
    let kept = turns.kept();
    let ratio = median(&kept);
    table.push(Row {
        figure: format!(
            "capture, observation off: {} pipelined calls to a trivial echo, all replies in",
            report::count(burst * BURSTS)
        ),
        ours: secs(median(&turns.ours)),
        baseline: format!("{} minimal splice relay", secs(median(&turns.baseline))),
        ratio: format!("{:.0}% of the splice relay", ratio * 100.0),
        target: "≥ 90%".into(),
        met: Some(ratio >= 0.90),
    });
    let (lo, hi) = cpu::range(&kept);
    table.note(format!(
        "capture with observation off (`MCPEVAL_CAPTURE_BENCH_UNOBSERVED=1`: the same relays, \
         the observer drops what they hand it) against a relay that only splices each \
         direction: summed over {BURSTS} bursts a route, the sessions alive at once and taking \
         turns after a {} ms pause; {:.0}–{:.0}% of it over {} repeats",
        PAUSE.as_millis(),
        lo * 100.0,
        hi * 100.0,
        sizes.turn_reps
    ));
    note_turns_cpu(&turns, "the trivial echo, observation off", table);
}

/// Sequential POSTs straight to the HTTP echo server, through `capture
/// --listen` and through a bare hyper reverse proxy, alternately: what
/// each adds to the direct p50.
fn relays_bare_proxy(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let home = scratch.join("relays-http");
    let server = http::Server::start();
    let calls = sizes.round_trips / 2;
    let (mut direct, mut bare, mut ours) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "{calls} sequential HTTP requests, direct, through a bare reverse proxy and \
             through capture --listen ({} of {})",
            rep + 1,
            sizes.short_reps
        ));
        direct.push(percentile(&http::direct(&server, calls), 50.0));
        if rep % 2 == 0 {
            bare.push(percentile(&http::bare(&server, calls), 50.0));
            ours.push(percentile(&http::captured(&server, &home, calls), 50.0));
        } else {
            ours.push(percentile(&http::captured(&server, &home, calls), 50.0));
            bare.push(percentile(&http::bare(&server, calls), 50.0));
        }
    }
    assert_eq!(
        relay::journaled(&home),
        sizes.short_reps as u64 * calls,
        "HTTP calls journaled"
    );
    // Differences of paired runs, so load shared by a rep cancels out.
    let added = |route: &[Duration]| {
        let diffs: Vec<f64> = direct
            .iter()
            .zip(route)
            .map(|(d, r)| r.as_secs_f64() - d.as_secs_f64())
            .collect();
        median(&diffs)
    };
    let (ours_added, bare_added) = (added(&ours), added(&bare));
    let ratio = ours_added / bare_added;
    // A bare proxy that adds nothing measurable leaves no ratio to meet.
    let within = bare_added > 0.0 && ratio <= 1.5;
    table.push(Row {
        figure: format!(
            "capture --listen (HTTP): added round trip p50 against a bare hyper reverse proxy, \
             {} sequential calls",
            report::count(calls)
        ),
        ours: format!("{:+.0} µs", ours_added * 1e6),
        baseline: format!(
            "{:+.0} µs bare proxy ({} direct)",
            bare_added * 1e6,
            secs(median(&direct))
        ),
        ratio: match bare_added > 0.0 {
            true => format!("{ratio:.2}×"),
            false => "-".into(),
        },
        target: "≤ 1.5×, ≤ +100 µs".into(),
        met: Some(within && ours_added <= 100e-6),
    });
    table.note(format!(
        "capture --listen against a bare reverse proxy (hyper and hyper-util as capture uses \
         them, the suite's connector, forwarding only): p50 {} through capture, {} through the \
         bare proxy; the added figures are medians over {} alternating triples of (route - \
         direct)",
        secs(median(&ours)),
        secs(median(&bare)),
        sizes.short_reps
    ));
}

/// A full index of the store into a new index.db, beside the parse-only
/// floor and the naive loader.
fn index_full(store: &Store, sizes: &Sizes, tools: &Tools, scratch: &Path, table: &mut Table) {
    let (mut ours, mut records, mut syntax, mut naive) = (vec![], vec![], vec![], vec![]);
    let mut in_place = vec![];
    for rep in 0..sizes.reps {
        progress(format_args!(
            "indexing {} calls into a new index and again in place, parse-only floors ({} of {})",
            store.calls,
            rep + 1,
            sizes.reps
        ));
        store.forget_index();
        let indexed = store::index(store, scratch);
        assert_eq!((indexed.calls, indexed.new), (store.calls, store.calls));
        ours.push(indexed.run);
        records.push(store::floor(store, Depth::Records, scratch));
        syntax.push(store::floor(store, Depth::Syntax, scratch));
        let rebuilt = store::index_with(store, &["--rebuild"], scratch);
        assert_eq!((rebuilt.calls, rebuilt.new), (store.calls, 0));
        in_place.push(rebuilt.run);
    }
    // The naive loader is slow and its figure only has to be beaten.
    for rep in 0..sizes.reps.min(2) {
        progress(format_args!(
            "naive loader: jq into sqlite3 .import ({} of {})",
            rep + 1,
            sizes.reps.min(2)
        ));
        naive.extend(store::naive(store, tools, scratch));
    }
    let (time, peak) = measure::summary(&ours);
    let (floor_time, floor_peak) = measure::summary(&records);
    let per_s = store.calls as f64 / time.as_secs_f64();
    let mb = store.bytes() as f64 / 1e6;
    table.push(Row {
        figure: format!(
            "index, full: {} calls ({mb:.0} MB, {} journals)",
            report::count(store.calls),
            store.journals.len()
        ),
        ours: format!("{} = {}", secs(time), rate(per_s)),
        baseline: format!(
            "{} = {} parse-only floor",
            secs(floor_time),
            rate(store.calls as f64 / floor_time.as_secs_f64())
        ),
        ratio: report::times(time, floor_time),
        target: "≥ 250k/s, ≤ 2×".into(),
        met: Some(per_s >= 250_000.0 && time.as_secs_f64() <= 2.0 * floor_time.as_secs_f64()),
    });
    let (rebuild_time, rebuild_peak) = measure::summary(&in_place);
    table.push(Row {
        figure: "index, `--rebuild` in place of an existing index".into(),
        ours: format!(
            "{} = {}",
            secs(rebuild_time),
            rate(store.calls as f64 / rebuild_time.as_secs_f64())
        ),
        baseline: format!("{} parse-only floor", secs(floor_time)),
        ratio: report::times(rebuild_time, floor_time),
        target: "≤ 3×".into(),
        met: Some(rebuild_time.as_secs_f64() <= 3.0 * floor_time.as_secs_f64()),
    });
    table.note(format!(
        "a first index is built aside and linked into place; `--rebuild` works inside one \
         transaction on index.db, through its WAL (peak memory {})",
        bytes(rebuild_peak)
    ));
    let (syntax_time, _) = measure::summary(&syntax);
    table.note(format!(
        "parse-only floor: read + serde_json::from_slice into shared::record::Call per line; \
         syntax only (IgnoredAny): {}, our time is {} of it",
        secs(syntax_time),
        report::times(time, syntax_time)
    ));
    match naive.is_empty() {
        true => table.note("naive loader skipped: jq or sqlite3 not found".into()),
        false => {
            let (naive_time, naive_peak) = measure::summary(&naive);
            table.push(Row {
                figure: "index, full: against the naive loader".into(),
                ours: secs(time),
                baseline: format!(
                    "{} = {} jq into sqlite3 .import",
                    secs(naive_time),
                    rate(store.calls as f64 / naive_time.as_secs_f64())
                ),
                ratio: report::times(time, naive_time),
                target: "< 1×".into(),
                met: Some(time < naive_time),
            });
            table.note(format!("naive loader peak memory: {}", bytes(naive_peak)));
        }
    }
    table.push(Row {
        figure: format!(
            "index, full: peak memory at {} calls",
            report::count(store.calls)
        ),
        ours: bytes(peak),
        baseline: format!("{} floor", bytes(floor_peak)),
        ratio: format!("{:.1}×", peak as f64 / floor_peak as f64),
        target: "≤ 100 MB".into(),
        met: Some(peak <= 100_000_000),
    });
}

/// `promote` then `findings --format md` over the full index, beside one
/// SQLite scan of the calls.
fn promote(store: &Store, sizes: &Sizes, tools: &Tools, scratch: &Path, table: &mut Table) {
    let (mut ours, mut promote, mut findings, mut scans) = (vec![], vec![], vec![], vec![]);
    for rep in 0..sizes.reps {
        progress(format_args!(
            "promote and findings over {} calls ({} of {})",
            store.calls,
            rep + 1,
            sizes.reps
        ));
        let (p, f) = store::promote_and_findings(store, NOW, scratch);
        ours.push(p.time + f.time);
        promote.push(p.time);
        findings.push(f.time);
        if let Some(sqlite3) = &tools.sqlite3 {
            // The least any reader of every call must do: one table scan.
            let scan = store::sql(
                sqlite3,
                &store.home.join("index.db"),
                "SELECT count(*) FROM calls WHERE outcome = 'error'",
                scratch,
            );
            scans.push(scan.time);
        }
    }
    let time = median(&ours);
    let (baseline, ratio) = match scans.is_empty() {
        true => ("sqlite3 not found".to_owned(), "-".to_owned()),
        false => {
            let scan = median(&scans);
            (
                format!("{} one scan (sqlite3)", secs(scan)),
                report::times(time, scan),
            )
        }
    };
    table.push(Row {
        figure: format!(
            "promote + findings over {} calls",
            report::count(store.calls)
        ),
        ours: secs(time),
        baseline,
        ratio,
        target: "≤ 2 s".into(),
        met: Some(time.as_secs_f64() <= 2.0),
    });
    table.note(format!(
        "promote {}, findings {}",
        secs(median(&promote)),
        secs(median(&findings))
    ));
}

/// Re-validating unchanged journals beside `sha256sum`, and a 1% append
/// beside the unchanged case.
fn revalidate(sizes: &Sizes, tools: &Tools, scratch: &Path, table: &mut Table) {
    let mut generator = Generator::new(2);
    let home = scratch.join("large");
    progress(format_args!(
        "generating at least {} of journals",
        bytes(sizes.revalidate_bytes)
    ));
    let journals = generator
        .journals(
            &home.join("journals"),
            0,
            sizes.revalidate_bytes,
            sizes.journal_bytes,
        )
        .expect("write journals");
    let mut store = Store {
        calls: workload::count_lines(&journals),
        home,
        journals,
    };
    progress(format_args!("indexing {} calls", store.calls));
    let first = store::index(&store, scratch);
    assert_eq!(first.calls, store.calls);

    let appended = store.calls / 100;
    let last = store.journals.last().cloned().expect("a journal");
    let (mut unchanged, mut sums, mut grown): (Vec<Run>, Vec<Run>, Vec<Run>) =
        (vec![], vec![], vec![]);
    for rep in 0..sizes.short_reps {
        progress(format_args!(
            "re-validating {}: index, sha256sum, index after a 1% append ({} of {})",
            bytes(store.bytes()),
            rep + 1,
            sizes.short_reps
        ));
        let same = store::index(&store, scratch);
        assert_eq!((same.calls, same.new), (store.calls, 0));
        unchanged.push(same.run);
        sums.push(store::sha256sum(&store, tools, scratch));
        generator.append(&last, appended).expect("append");
        store.calls += appended;
        let more = store::index(&store, scratch);
        assert_eq!((more.calls, more.new), (store.calls, appended));
        grown.push(more.run);
    }
    let (same, _) = measure::summary(&unchanged);
    let (sum, _) = measure::summary(&sums);
    let (more, _) = measure::summary(&grown);
    let size = store.bytes();
    table.push(Row {
        figure: format!(
            "index, unchanged: {} in {} journals",
            bytes(size),
            store.journals.len()
        ),
        ours: format!(
            "{} = {}/s",
            secs(same),
            bytes((size as f64 / same.as_secs_f64()) as u64)
        ),
        baseline: format!("{} sha256sum", secs(sum)),
        ratio: report::times(same, sum),
        target: "≤ 1.3×".into(),
        met: Some(same.as_secs_f64() <= 1.3 * sum.as_secs_f64()),
    });
    table.push(Row {
        figure: format!("index, +1% appended ({} calls)", report::count(appended)),
        ours: secs(more),
        baseline: format!("{} unchanged", secs(same)),
        ratio: report::times(more, same),
        target: "≤ 1.2×".into(),
        met: Some(more.as_secs_f64() <= 1.2 * same.as_secs_f64()),
    });
    table.note(format!(
        "first index of the {} calls re-validated: {} = {}, peak memory {}",
        report::count(first.calls),
        secs(first.run.time),
        rate(first.calls as f64 / first.run.time.as_secs_f64()),
        bytes(first.run.peak)
    ));
}

/// One long failure window over many tools beside the same failed calls
/// to one tool: index then promote (which counts the blast radius), each
/// store indexed anew every time.
fn long_window(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    let stores: Vec<Store> = [sizes.window_tools, 1]
        .iter()
        .map(|&tools| {
            let home = scratch.join(format!("window-{tools}"));
            let dir = home.join("journals");
            std::fs::create_dir_all(&dir).expect("journals directory");
            let journal = dir.join("20261101T000000.000Z-0000000a.jsonl");
            workload::failure_window(&journal, sizes.window_calls, tools).expect("write journal");
            Store {
                home,
                journals: vec![journal],
                calls: sizes.window_calls,
            }
        })
        .collect();
    let (mut many, mut one) = (vec![], vec![]);
    let (mut many_peak, mut one_peak) = (vec![], vec![]);
    for rep in 0..sizes.reps {
        progress(format_args!(
            "one failure window of {} calls over {} tools and over one ({} of {})",
            sizes.window_calls,
            sizes.window_tools,
            rep + 1,
            sizes.reps
        ));
        for (store, times, peaks) in [
            (&stores[0], &mut many, &mut many_peak),
            (&stores[1], &mut one, &mut one_peak),
        ] {
            store.forget_index();
            let indexed = store::index(store, scratch);
            assert_eq!(indexed.calls, store.calls);
            let promote = store::promote(store, NOW, scratch);
            times.push(indexed.run.time + promote.time);
            peaks.push(indexed.run.peak.max(promote.peak));
        }
    }
    let (ours, base) = (median(&many), median(&one));
    let budget = 2.0 * base.as_secs_f64() + 0.1;
    table.push(Row {
        figure: format!(
            "index + promote, one failure window: {} failed calls over {} tools",
            report::count(sizes.window_calls),
            report::count(sizes.window_tools)
        ),
        ours: secs(ours),
        baseline: format!("{} same calls to one tool", secs(base)),
        ratio: report::times(ours, base),
        target: "≤ 2× + 0.1 s".into(),
        met: Some(ours.as_secs_f64() <= budget),
    });
    let (ours_peak, base_peak) = (median(&many_peak), median(&one_peak));
    table.push(Row {
        figure: "index + promote, one failure window: peak memory".into(),
        ours: bytes(ours_peak),
        baseline: format!("{} one tool", bytes(base_peak)),
        ratio: format!("{:.1}×", ours_peak as f64 / base_peak as f64),
        target: "≤ 2×".into(),
        met: Some(ours_peak <= 2 * base_peak),
    });
}
