//! A property over random journal histories: after every step, the index
//! that `mcpeval-index` refreshed incrementally holds exactly what a fresh
//! `--rebuild` of the same journals holds — calls, checkpoints, windows,
//! annotation links and, after `mcpeval-promote`, findings — or the refresh
//! was rejected (status 4), the rebuild was rejected too, and index.db is
//! byte for byte what it was before.
//!
//! A history mixes what happens to a real store: captures appending whole
//! lines and torn halves of lines, new journals sorting first, last or in
//! between, flipped bytes, truncations, removals, identical rewrites (in
//! place and by rename), exact and conflicting repeats of a call, annotations
//! of known, unknown and legacy targets, and the odd oversized line.
//!
//! The binaries run as processes, as users run them. `PROPTEST_CASES` sets
//! the number of histories (200 unless set; `scripts/proptest` runs 10,000).
//! A failing history is shrunk and printed; keep it as a named test below.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use shared::home::Home;
use store::lifecycle::{self, Kind, Target};

use crate::dump::{everything, evidence, findings, same, scratch};
use crate::records::{event, journal_name, session, template};
use crate::support::{SYSTEM_PATH, bin, text};

/// Histories run in CI; `PROPTEST_CASES` overrides it.
const CASES: u32 = 200;

/// The fixed clock and threshold promotion runs with on both sides.
const NOW: &str = "2026-12-01T00:00:00Z";

/// One call to write, in small ranges so that sessions, seqs, tools and
/// templates collide across journals and steps.
#[derive(Debug, Clone)]
struct Spec {
    session: u64,
    seq: u64,
    tool: u8,
    server: u8,
    /// 0–1 ok, 2–3 error with template 1 or 2, 4 error without a
    /// template (code -32602), 5 malformed, 6 unanswered.
    outcome: u8,
    legacy: bool,
    probe: bool,
}

/// Where a new journal's name sorts.
#[derive(Debug, Clone)]
enum Place {
    First,
    Last,
    /// Between the i-th and the next journal, when their names leave room.
    Between(usize),
}

/// One thing that happens to the store. Indexes into the journals and
/// lines written so far are taken modulo their count when applied.
#[derive(Debug, Clone)]
enum Op {
    NewFile(Place, Vec<Spec>),
    Append(usize, Vec<Spec>),
    /// The first `keep` bytes of a record line, without its newline.
    Tear(usize, Spec, usize),
    /// The rest of the line torn last in this journal.
    Mend(usize),
    /// Changes one byte: 0 a newline, 1 a quote, 2 a brace, else the next
    /// letter (a letter inside a value keeps the line a valid record).
    Flip(usize, usize, u8),
    Truncate(usize, usize),
    Remove(usize),
    /// Writes the same bytes again, in place or by renaming a copy over it.
    Rewrite(usize, bool),
    /// Appends an exact copy of a line written before.
    Repeat(usize, usize),
    /// Appends a line written before with the same event id and another tool.
    Conflict(usize, usize),
    /// Annotates a written call (or, past their count, an unknown event id
    /// or legacy coordinates); `true` is false-success.
    Annotate(usize, bool),
    /// A line over the 64 KiB record limit.
    Oversized(usize),
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..3u64,
        1..7u64,
        0..3u8,
        0..2u8,
        0..7u8,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(session, seq, tool, server, outcome, legacy, probe)| Spec {
                session,
                seq,
                tool,
                server,
                outcome,
                legacy,
                probe,
            },
        )
}

fn specs() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec(spec(), 1..6)
}

fn op() -> impl Strategy<Value = Op> {
    let place = prop_oneof![
        1 => Just(Place::First),
        3 => Just(Place::Last),
        1 => any::<usize>().prop_map(Place::Between),
    ];
    let n = any::<usize>;
    prop_oneof![
        4 => (place, specs()).prop_map(|(p, s)| Op::NewFile(p, s)),
        8 => (n(), specs()).prop_map(|(f, s)| Op::Append(f, s)),
        3 => (n(), spec(), n()).prop_map(|(f, s, k)| Op::Tear(f, s, k)),
        3 => n().prop_map(Op::Mend),
        3 => (n(), n(), 0..8u8).prop_map(|(f, at, to)| Op::Flip(f, at, to)),
        2 => (n(), n()).prop_map(|(f, at)| Op::Truncate(f, at)),
        1 => n().prop_map(Op::Remove),
        2 => (n(), any::<bool>()).prop_map(|(f, r)| Op::Rewrite(f, r)),
        2 => (n(), n()).prop_map(|(l, f)| Op::Repeat(l, f)),
        1 => (n(), n()).prop_map(|(l, f)| Op::Conflict(l, f)),
        3 => (n(), prop::bool::weighted(0.7)).prop_map(|(t, k)| Op::Annotate(t, k)),
        1 => n().prop_map(Op::Oversized),
    ]
}

/// A history: steps of one to three operations, each step followed by the
/// comparison.
fn history() -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(prop::collection::vec(op(), 1..4), 1..6)
}

/// What the test knows about the store it changes.
struct Model {
    home: PathBuf,
    /// Journal numbers on disk, with their bytes.
    files: BTreeMap<u32, Vec<u8>>,
    /// The unwritten rest of the line torn last in a journal.
    torn: BTreeMap<u32, Vec<u8>>,
    /// Every complete record line written, for repeats.
    lines: Vec<Value>,
    /// Event numbers written, for annotations.
    events: Vec<u64>,
    next_event: u64,
}

impl Model {
    fn new(home: PathBuf) -> Model {
        crate::support::private_dir(&home.join("journals"));
        // Finding ids are salted: both sides must share one salt.
        store::salt::Salt::load_or_create(&Home::at(&home)).unwrap();
        Model {
            home,
            files: BTreeMap::new(),
            torn: BTreeMap::new(),
            lines: Vec::new(),
            events: Vec::new(),
            next_event: 1,
        }
    }

    fn path(&self, n: u32) -> PathBuf {
        self.home.join("journals").join(journal_name(n))
    }

    /// The journal number at `i` (modulo), if there is any journal.
    fn pick(&self, i: usize) -> Option<u32> {
        let n = self.files.len();
        (n > 0).then(|| *self.files.keys().nth(i % n).unwrap())
    }

    fn record(&mut self, s: &Spec) -> Value {
        let tool = ["search", "fetch", "list"][usize::from(s.tool)];
        let server = ["weather", "files"][usize::from(s.server)];
        let n = self.next_event;
        self.next_event += 1;
        let started_at = format!(
            "2026-11-{:02}T07:{:02}:{:02}.000Z",
            20 + s.session,
            s.seq,
            n % 60
        );
        if s.legacy {
            let (outcome, code) = match s.outcome {
                0 | 1 => ("ok", None),
                4 => ("error", Some(-32602)),
                _ => ("error", None),
            };
            return json!({
                "schema": "mcpeval.call/0", "session": session(s.session), "seq": s.seq,
                "server": server, "tool": tool, "ts": started_at, "outcome": outcome,
                "err_code": code, "template_id": null, "retryable": null,
                "args_shape": {"q": "string"}
            });
        }
        self.events.push(n);
        let mut rec = json!({
            "schema": "mcpeval.call/1",
            "identity": {"event_id": event(n), "session": session(s.session), "seq": s.seq},
            "origin": if s.probe { "probe" } else { "capture" },
            "transport": "stdio", "server": server, "tool": tool,
            "started_at": started_at, "duration_ms": 7, "advertised": s.outcome != 4,
            "args_shape": {"city": "string"}, "outcome": "ok"
        });
        match s.outcome {
            2..=4 => {
                rec["outcome"] = json!("error");
                rec["error"] = json!({
                    "channel": if s.outcome == 4 { "jsonrpc" } else { "tool" },
                    "code": if s.outcome == 4 { json!(-32602) } else { Value::Null },
                    "template_id": if s.outcome == 4 { Value::Null } else { json!(template(u64::from(s.outcome))) },
                    "retryable": s.outcome == 3
                });
            }
            5 | 6 => {
                rec["outcome"] = json!("unknown");
                rec["unknown"] = json!(if s.outcome == 5 {
                    "malformed"
                } else {
                    "unanswered"
                });
            }
            _ => {}
        }
        rec
    }

    fn line(&mut self, s: &Spec) -> Vec<u8> {
        let rec = self.record(s);
        let line = format!("{rec}\n").into_bytes();
        self.lines.push(rec);
        line
    }

    fn append(&mut self, n: u32, bytes: &[u8]) {
        self.files.entry(n).or_default().extend_from_slice(bytes);
        crate::records::append_to(&self.path(n), &String::from_utf8_lossy(bytes));
    }

    fn write(&mut self, n: u32, bytes: Vec<u8>) {
        fs::write(self.path(n), &bytes).unwrap();
        self.files.insert(n, bytes);
    }

    /// The journal to append to: the picked one, or a first journal.
    fn target(&mut self, i: usize) -> u32 {
        self.pick(i).unwrap_or(100)
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::NewFile(place, specs) => {
                let keys: Vec<u32> = self.files.keys().copied().collect();
                let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else {
                    let bytes: Vec<u8> = specs.iter().flat_map(|s| self.line(s)).collect();
                    return self.write(100, bytes);
                };
                // A gap between two neighbours leaves room for a name between.
                let gap = |i: usize| {
                    let at = i % (keys.len() - 1);
                    (keys[at + 1] - keys[at] > 1).then(|| (keys[at] + keys[at + 1]) / 2)
                };
                let n = match place {
                    Place::First if first > 1 => first - 1,
                    Place::Between(i) if keys.len() > 1 => gap(*i).unwrap_or(last + 10),
                    _ => last + 10,
                };
                let bytes: Vec<u8> = specs.iter().flat_map(|s| self.line(s)).collect();
                self.write(n, bytes);
            }
            Op::Append(i, specs) => {
                let n = self.target(*i);
                let bytes: Vec<u8> = specs.iter().flat_map(|s| self.line(s)).collect();
                self.append(n, &bytes);
            }
            Op::Tear(i, spec, keep) => {
                let n = self.target(*i);
                let line = self.line(spec);
                let keep = keep % line.len();
                self.append(n, &line[..keep]);
                self.torn.insert(n, line[keep..].to_vec());
            }
            Op::Mend(i) => {
                if let Some(n) = self.pick(*i)
                    && let Some(rest) = self.torn.remove(&n)
                {
                    self.append(n, &rest);
                }
            }
            Op::Flip(i, at, to) => {
                if let Some(n) = self.pick(*i) {
                    let mut bytes = self.files[&n].clone();
                    if !bytes.is_empty() {
                        let at = at % bytes.len();
                        bytes[at] = match (to, bytes[at]) {
                            (0, _) => b'\n',
                            (1, _) => b'"',
                            (2, _) => b'}',
                            (_, b @ b'a'..=b'z') => b'a' + (b - b'a' + 1) % 26,
                            _ => b'x',
                        };
                        self.write(n, bytes);
                    }
                }
            }
            Op::Truncate(i, at) => {
                if let Some(n) = self.pick(*i) {
                    let mut bytes = self.files[&n].clone();
                    bytes.truncate(at % (bytes.len() + 1));
                    self.write(n, bytes);
                }
            }
            Op::Remove(i) => {
                if let Some(n) = self.pick(*i) {
                    fs::remove_file(self.path(n)).unwrap();
                    self.files.remove(&n);
                    self.torn.remove(&n);
                }
            }
            Op::Rewrite(i, rename) => {
                if let Some(n) = self.pick(*i) {
                    let bytes = self.files[&n].clone();
                    if *rename {
                        let tmp = self.home.join("journals/rewrite.tmp");
                        fs::write(&tmp, &bytes).unwrap();
                        fs::rename(&tmp, self.path(n)).unwrap();
                    } else {
                        self.write(n, bytes);
                    }
                }
            }
            Op::Repeat(l, i) | Op::Conflict(l, i) => {
                if !self.lines.is_empty() {
                    let mut rec = self.lines[l % self.lines.len()].clone();
                    if matches!(op, Op::Conflict(..)) {
                        rec["tool"] = json!("conflicting");
                    }
                    let n = self.target(*i);
                    self.append(n, format!("{rec}\n").as_bytes());
                }
            }
            Op::Annotate(t, false_success) => {
                let kind = if *false_success {
                    Kind::FalseSuccess
                } else {
                    Kind::Workaround
                };
                let target = match t % (self.events.len() + 2) {
                    k if k < self.events.len() => Target::event_id(&event(self.events[k])).unwrap(),
                    k if k == self.events.len() => Target::event_id(&event(999_999)).unwrap(),
                    _ => Target::coordinates(&session(*t as u64 % 3), 1 + *t as u64 % 6).unwrap(),
                };
                let home = Home::at(&self.home);
                let mut conn = lifecycle::open(&home).unwrap();
                lifecycle::insert(&mut conn, kind, &target, "seen by the operator").unwrap();
            }
            Op::Oversized(i) => {
                let n = self.target(*i);
                let mut line = vec![b'x'; shared::record::MAX_LINE + 1];
                line.push(b'\n');
                self.append(n, &line);
            }
        }
    }
}

fn run(home: &Path, name: &str, args: &[&str]) -> Output {
    Command::new(bin(name))
        .args(args)
        .env_clear()
        .env("MCPEVAL_HOME", home)
        .env("NO_COLOR", "1")
        .env("PATH", SYSTEM_PATH)
        .output()
        .unwrap()
}

/// A fresh store that sees the same journals, annotations and salt.
fn mirror(a: &Path, root: &Path, step: usize) -> PathBuf {
    let b = root.join(format!("rebuild-{step}"));
    crate::support::private_dir(&b);
    symlink(a.join("journals"), b.join("journals")).unwrap();
    for name in ["lifecycle.db", "lifecycle.db-wal", ".salt"] {
        if a.join(name).exists() {
            fs::copy(a.join(name), b.join(name)).unwrap();
        }
    }
    b
}

/// Runs `name ARGS` in both stores at once (the machine has two cores).
fn both(a: &Path, b: &Path, name: &str, args_a: &[&str], args_b: &[&str]) -> (Output, Output) {
    std::thread::scope(|s| {
        let other = s.spawn(|| run(b, name, args_b));
        let mine = run(a, name, args_a);
        (mine, other.join().unwrap())
    })
}

/// The first number of `indexed N calls (…`.
fn indexed_calls(out: &Output) -> String {
    text(&out.stderr)
        .split(" calls")
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn check(history: &[Vec<Op>]) -> Result<(), TestCaseError> {
    let root = scratch();
    let a = root.path().join("incremental");
    let mut model = Model::new(a.clone());
    let promote = ["--threshold", "0", "--now", NOW];
    for (step, ops) in history.iter().enumerate() {
        for op in ops {
            model.apply(op);
        }
        let before = everything(&a);
        let b = mirror(&a, root.path(), step);
        let (inc, reb) = both(&a, &b, "mcpeval-index", &[], &["--rebuild"]);
        let what = format!("step {step}");
        match (inc.status.code(), reb.status.code()) {
            (Some(0), Some(0)) => {}
            (Some(4), Some(4)) => {
                match (before, everything(&a)) {
                    (Some((bytes_before, before)), Some((bytes_after, after))) => {
                        same(&format!("{what} (rejected)"), &after, &before)?;
                        prop_assert!(
                            bytes_after == bytes_before,
                            "{what}: rejected run changed index.db"
                        );
                    }
                    // A first run may leave the schema, never a complete index.
                    (None, Some((_, after))) => {
                        let state = &after
                            .iter()
                            .find(|(name, _)| *name == "raw state")
                            .unwrap()
                            .1;
                        prop_assert!(state.is_empty(), "{what}: a rejected first run completed");
                    }
                    (before, after) => prop_assert!(
                        before.is_none() && after.is_none(),
                        "{what}: index.db vanished"
                    ),
                }
                continue;
            }
            (x, y) => {
                return Err(TestCaseError::fail(format!(
                    "{what}: incremental exited {x:?}, rebuild {y:?}\n  incremental: {}\n  rebuild: {}",
                    text(&inc.stderr),
                    text(&reb.stderr)
                )));
            }
        }
        prop_assert_eq!(indexed_calls(&inc), indexed_calls(&reb), "{}", what);
        same(&what, &evidence(&a), &evidence(&b))?;

        // Findings left from an earlier promotion must be those a promotion
        // of this evidence makes, or gone.
        let kept = !findings(&a)[1].1.is_empty();
        let (pa, pb) = if kept {
            (None, run(&b, "mcpeval-promote", &promote))
        } else {
            let (pa, pb) = both(&a, &b, "mcpeval-promote", &promote, &promote);
            (Some(pa), pb)
        };
        prop_assert!(pb.status.success(), "{what}: promote: {}", text(&pb.stderr));
        if let Some(pa) = pa {
            prop_assert!(pa.status.success(), "{what}: promote: {}", text(&pa.stderr));
            prop_assert_eq!(text(&pa.stdout), text(&pb.stdout), "{}", what);
        }
        same(&format!("{what} (promoted)"), &findings(&a), &findings(&b))?;
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

#[test]
fn incremental_index_equals_a_fresh_rebuild_after_every_step() {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    if let Err(err) = runner.run(&history(), |h| check(&h)) {
        panic!("{err}");
    }
}

/// A history, as a test, for the regressions the property found.
fn replay(history: Vec<Vec<Op>>) {
    if let Err(err) = check(&history) {
        panic!("{err}");
    }
}

fn ok_call() -> Spec {
    Spec {
        session: 0,
        seq: 1,
        tool: 0,
        server: 0,
        outcome: 0,
        legacy: false,
        probe: false,
    }
}

#[test]
fn regression_an_earlier_journals_unfinished_line_cut_short() {
    // An oversized line, cut to an unfinished one in a journal that is no
    // longer the last, then cut again: the checkpoint kept the old size.
    replay(vec![
        vec![Op::Oversized(0), Op::NewFile(Place::Last, vec![ok_call()])],
        vec![Op::Truncate(2115751512838703204, 15615444120)],
        vec![Op::Truncate(378730186053009590, 0)],
    ]);
}
