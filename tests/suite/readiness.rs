//! `mcpeval-readiness`: daily figures checked by hand on a journal written
//! here, the verdict rule (which findings count, by lifecycle state, through
//! real verify runs), and the trends.db cache: validated by bytes, extended
//! on append, rebuilt on change, never trusted blindly.

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::names::{INJECTED, SERVER, TOOL, has_raw_control, hostile_store};
use crate::records::{self, Rec};
use crate::seeded::{ok, set_state};
use crate::serve::{call, client};
use crate::support::{Store, text};
use crate::verify::{Bench, FIXTURE_SERVER};

const NOW: &str = "2026-11-30T12:00:00Z";

/// The day after the verify bench's journal: no calls on the last day, so
/// only the findings decide the verdict.
const AFTER_BENCH: &str = "2026-12-01T12:00:00Z";

fn at(rec: Rec, day: u32, second: u32) -> Rec {
    let mut rec = rec;
    rec.0["started_at"] = json!(format!("2026-11-{day:02}T07:00:{second:02}.000Z"));
    rec
}

fn report(store: &Store, extra: &[&str]) -> (Value, String) {
    report_at(store, NOW, extra)
}

fn report_at(store: &Store, now: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["--format", "json", "--now", now];
    args.extend_from_slice(extra);
    let out = store
        .bin("mcpeval-readiness")
        .args(&args)
        .assert()
        .success();
    let out = out.get_output();
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        text(&out.stderr),
    )
}

fn server<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {report}"))
}

fn tool<'a>(server: &'a Value, name: &str) -> &'a Value {
    server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name)
        .unwrap()
}

/// `(calls, failures)` of each reported day of a tool.
fn daily(tool: &Value) -> Vec<(u64, u64)> {
    tool["daily"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["calls"].as_u64().unwrap(),
                d["failures"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// weather/forecast: 2026-11-28 four calls, one failed; 2026-11-30 ten
/// calls, one failed (10% > 5%: at-risk), one unanswered (a call, not a
/// failure), one malformed (a failure) — so 12 calls, 2 failed; probe
/// calls and a call before the window never count. maps/route: twenty
/// calls on 2026-11-30, one failed (5%, not over the limit).
fn journal() -> Vec<Rec> {
    let mut recs = Vec::new();
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    recs.push(at(Rec::error(next(), 9, 1, "forecast", Some(1)), 20, 0));
    for i in 0..4 {
        let r = if i == 0 {
            Rec::error(next(), 1, i + 1, "forecast", Some(1))
        } else {
            Rec::ok(next(), 1, i + 1, "forecast")
        };
        recs.push(at(r, 28, i as u32));
    }
    for i in 0..10 {
        let r = if i == 3 {
            Rec::error(next(), 2, i + 1, "forecast", Some(1))
        } else {
            Rec::ok(next(), 2, i + 1, "forecast")
        };
        recs.push(at(r, 30, i as u32));
    }
    recs.push(at(Rec::unanswered(next(), 2, 11, "forecast"), 30, 11));
    let mut malformed = Rec::unanswered(next(), 2, 12, "forecast");
    malformed.0["unknown"] = json!("malformed");
    recs.push(at(malformed, 30, 12));
    recs.push(at(
        Rec::error(next(), 2, 13, "forecast", Some(1)).probe(),
        30,
        13,
    ));
    recs.push(at(Rec::ok(next(), 2, 14, "alerts"), 30, 14));
    for i in 0..20 {
        let r = if i == 0 {
            Rec::error(next(), 3, i + 1, "route", Some(2))
        } else {
            Rec::ok(next(), 3, i + 1, "route")
        };
        recs.push(at(r.server("maps"), 30, i as u32));
    }
    recs
}

#[test]
fn daily_figures_and_verdicts_match_a_hand_count() {
    let store = Store::new();
    let path = records::write(&store, 1, &records::lines(&journal()));
    let (r, stderr) = report(&store, &[]);
    assert_eq!(stderr, "");
    assert_eq!(r["as_of"], "2026-11-30");
    assert_eq!(
        r["days"],
        json!([
            "2026-11-24",
            "2026-11-25",
            "2026-11-26",
            "2026-11-27",
            "2026-11-28",
            "2026-11-29",
            "2026-11-30"
        ])
    );
    assert_eq!(r["findings"], "no-index");
    let weather = server(&r, "weather");
    let forecast = tool(weather, "forecast");
    assert_eq!(
        daily(forecast),
        vec![(0, 0), (0, 0), (0, 0), (0, 0), (4, 1), (0, 0), (12, 2)]
    );
    assert_eq!(
        (forecast["calls"].as_u64(), forecast["failures"].as_u64()),
        (Some(16), Some(3))
    );
    let last = &forecast["daily"][6];
    assert!((last["failure_rate"].as_f64().unwrap() - 2.0 / 12.0).abs() < 1e-12);
    assert_eq!(forecast["daily"][0]["failure_rate"], Value::Null);
    assert_eq!(daily(tool(weather, "alerts"))[6], (1, 0));
    assert_eq!(weather["verdict"], "at-risk");
    assert_eq!(weather["open_findings"], Value::Null);
    assert_eq!(
        weather["reasons"],
        json!([
            "forecast failed 2 of 12 calls (16.7%) on 2026-11-30, over 5%",
            "open findings unknown: no index yet (run `mcpeval index` and `mcpeval promote`)"
        ])
    );
    let maps = server(&r, "maps");
    assert_eq!(daily(tool(maps, "route"))[6], (20, 1));
    assert_eq!(maps["verdict"], "ready");
    assert_eq!(r["cache"]["rebuilt"], Value::Null);
    assert_eq!(
        r["cache"]["bytes_read"].as_u64().unwrap(),
        std::fs::metadata(&path).unwrap().len()
    );

    // --days and --server narrow the window and the servers.
    let (one, _) = report(&store, &["--days", "1", "--server", "maps"]);
    assert_eq!(one["days"], json!(["2026-11-30"]));
    assert_eq!(one["servers"].as_array().unwrap().len(), 1);

    // Markdown shows the same figures.
    let md = ok(&store, "mcpeval-readiness", &["--now", NOW]);
    assert!(md.contains("## `weather`: at-risk\n"), "{md}");
    assert!(
        md.contains("- `forecast` failed 2 of 12 calls (16.7%) on 2026-11-30, over 5%\n"),
        "{md}"
    );
    assert!(
        md.contains("| `forecast` | - | - | - | - | 1/4 | - | 2/12 |"),
        "{md}"
    );
    // readiness never needed the index.
    assert!(!store.home().join("index.db").exists());
}

#[test]
fn the_cache_grows_with_an_append_and_rebuilds_on_a_change() {
    let store = Store::new();
    let recs = journal();
    let path = records::write(&store, 1, &records::lines(&recs));
    let (first, _) = report(&store, &[]);
    let (again, stderr) = report(&store, &[]);
    assert_eq!(stderr, "");
    assert_eq!(again["cache"]["bytes_read"], 0);
    assert_eq!(again["servers"], first["servers"]);

    // An unfinished line is left for later; once complete, only it is read.
    let extra = at(
        Rec::error(900, 3, 21, "route", Some(2)).server("maps"),
        30,
        40,
    )
    .line();
    let (head, tail) = extra.split_at(20);
    records::append(&store, 1, head);
    let (partial, _) = report(&store, &[]);
    assert_eq!(partial["cache"]["calls_added"], 0);
    records::append(&store, 1, tail);
    let (grown, stderr) = report(&store, &[]);
    assert_eq!(stderr, "");
    assert_eq!(grown["cache"]["rebuilt"], Value::Null);
    assert_eq!(grown["cache"]["calls_added"], 1);
    assert_eq!(
        grown["cache"]["bytes_read"].as_u64().unwrap(),
        (head.len() + tail.len()) as u64
    );
    assert_eq!(daily(tool(server(&grown, "maps"), "route"))[6], (21, 2));

    // A new journal sorting last is read whole; the old one is only hashed.
    let newer = records::write(
        &store,
        2,
        &at(Rec::ok(901, 4, 1, "route").server("maps"), 30, 41).line(),
    );
    let (two, _) = report(&store, &[]);
    assert_eq!(two["cache"]["journals"], 2);
    assert_eq!(
        two["cache"]["bytes_read"].as_u64().unwrap(),
        std::fs::metadata(&newer).unwrap().len()
    );
    assert_eq!(daily(tool(server(&two, "maps"), "route"))[6], (22, 2));

    // The same length, different bytes: a failure turned into a success.
    let old = std::fs::read_to_string(&path).unwrap();
    let changed = old.replacen("\"tool\":\"route\"", "\"tool\":\"rout3\"", 1);
    assert_eq!(changed.len(), old.len());
    std::fs::write(&path, changed).unwrap();
    let (rebuilt, stderr) = report(&store, &[]);
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        stderr,
        format!("mcpeval-readiness: trends.db rebuilt: bytes changed in {name}\n")
    );
    assert_eq!(
        rebuilt["cache"]["rebuilt"],
        format!("bytes changed in {name}")
    );
    let maps = server(&rebuilt, "maps");
    assert_eq!(daily(tool(maps, "route"))[6], (21, 1));
    assert_eq!(daily(tool(maps, "rout3"))[6], (1, 1));

    // An earlier journal grows after a later one was cached: rebuild.
    records::append(
        &store,
        1,
        &at(Rec::ok(902, 5, 1, "route").server("maps"), 30, 42).line(),
    );
    let (_, stderr) = report(&store, &[]);
    assert!(
        stderr.ends_with(&format!(
            "rebuilt: {name} grew after later journals were cached\n"
        )),
        "{stderr}"
    );

    // A journal removed: rebuild, and its counts are gone.
    std::fs::remove_file(&newer).unwrap();
    let (gone, stderr) = report(&store, &[]);
    assert!(stderr.contains("removed"), "{stderr}");
    assert_eq!(daily(tool(server(&gone, "maps"), "route"))[6], (21, 1));
}

#[test]
fn an_earlier_journals_unfinished_line_finished_in_place_rebuilds_the_cache() {
    // As in the index: only the last journal is read past its checkpoint,
    // so a torn line in an earlier one that became a record without the
    // file growing was never counted.
    let store = Store::new();
    let line = at(
        Rec::error(900, 3, 21, "route", Some(2)).server("maps"),
        30,
        40,
    )
    .line();
    let torn = format!("{}x", line.trim_end());
    let path = records::write(&store, 1, &(records::lines(&journal()) + &torn));
    records::write(
        &store,
        2,
        &at(Rec::ok(901, 4, 1, "route").server("maps"), 30, 41).line(),
    );
    let (before, _) = report(&store, &[]);
    assert_eq!(daily(tool(server(&before, "maps"), "route"))[6], (21, 1));
    std::fs::write(&path, records::lines(&journal()) + &line).unwrap();
    let (after, stderr) = report(&store, &[]);
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        stderr,
        format!(
            "mcpeval-readiness: trends.db rebuilt: {name} changed after later journals were cached\n"
        )
    );
    assert_eq!(daily(tool(server(&after, "maps"), "route"))[6], (22, 2));
}

#[test]
fn a_bad_line_is_refused_and_the_cache_kept() {
    let store = Store::new();
    records::write(&store, 1, &records::lines(&journal()));
    let (before, _) = report(&store, &[]);
    let db = store.home().join("trends.db");
    let bytes = std::fs::read(&db).unwrap();
    let path = records::append(&store, 1, "{\"schema\":\"mcpeval.call/1\"}\n");
    let lines = journal().len() + 1;
    store
        .bin("mcpeval-readiness")
        .args(["--format", "json", "--now", NOW])
        .assert()
        .code(4)
        .stderr(
            predicate::str::starts_with(format!(
                "mcpeval-readiness: error: {}:{lines}: invalid mcpeval.call/1 record",
                path.display()
            ))
            .and(predicate::str::contains("trends.db was left unchanged")),
        );
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
    assert!(!before["servers"].as_array().unwrap().is_empty());
}

#[test]
fn open_findings_decide_the_verdict_when_an_index_exists() {
    let store = Store::new();
    // weather/search failed every call on 2026-11-29 in two sessions.
    let mut recs = Vec::new();
    let mut n = 0;
    for s in 1..=2 {
        for seq in 1..=30 {
            n += 1;
            recs.push(at(
                Rec::error(n, s, seq, "search", Some(1)),
                29,
                (seq % 60) as u32,
            ));
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    ok(&store, "mcpeval-index", &[]);
    // Indexed, never promoted: no verdict on findings that do not exist yet.
    store
        .bin("mcpeval-readiness")
        .args(["--format", "json", "--now", NOW])
        .assert()
        .code(3)
        .stdout("")
        .stderr(
            "mcpeval-readiness: error: findings are not promoted yet: the index holds 60 calls \
             but promote never ran on this store; run mcpeval promote\n",
        );
    ok(
        &store,
        "mcpeval-promote",
        &["--threshold", "0", "--now", "2026-11-29T08:00:00Z"],
    );
    let f: Value =
        serde_json::from_str(&ok(&store, "mcpeval-findings", &["--format", "json"])).unwrap();
    let id = f["findings"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(f["findings"][0]["severity"], "medium");

    let (r, _) = report(&store, &[]);
    assert_eq!(r["findings"], "index");
    let weather = server(&r, "weather");
    assert_eq!(weather["verdict"], "at-risk");
    // The finding is named with its tool: one tool may have several.
    assert_eq!(
        weather["reasons"],
        json!([format!("open medium finding {id} on search")])
    );
    let md = ok(&store, "mcpeval-readiness", &["--now", NOW]);
    assert!(
        md.contains(&format!("\n- open medium finding `{id}` on `search`\n")),
        "{md}"
    );
    assert_eq!(
        weather["open_findings"],
        json!({"high": 0, "medium": 1, "low": 0})
    );
    assert_eq!(daily(tool(weather, "search"))[5], (60, 60));

    // With an attached probe the same score is high: not ready.
    let home = shared::home::Home::at(&store.home());
    let conn = store::lifecycle::open(&home).unwrap();
    conn.execute(
        "UPDATE finding_state SET probe_attached = 1 WHERE finding_id = ?1",
        [&id],
    )
    .unwrap();
    let (r, _) = report(&store, &[]);
    assert_eq!(server(&r, "weather")["verdict"], "not-ready");
    assert_eq!(
        server(&r, "weather")["reasons"],
        json!([format!("open high finding {id} on search")])
    );

    // Closed: nothing open, and no calls on the last day.
    set_state(&store, &id, "closed");
    let (r, _) = report(&store, &[]);
    assert_eq!(server(&r, "weather")["verdict"], "ready");
    assert_eq!(
        server(&r, "weather")["reasons"],
        json!(["no open high or medium finding; no captured calls on 2026-11-30"])
    );

    // A damaged index is the CLI's status 3.
    std::fs::write(store.home().join("index.db"), vec![7u8; 8192]).unwrap();
    store
        .bin("mcpeval-readiness")
        .args(["--now", NOW])
        .assert()
        .code(3);
}

/// A CI gate pointed at the wrong directory must fail, not read "no
/// calls, ready": a store that is not there is status 3 and stays not
/// there, in every format; one that is there and empty is an empty report.
#[test]
fn a_store_that_does_not_exist_is_refused_and_left_uncreated() {
    let store = Store::new();
    let missing = format!(
        "mcpeval-readiness: error: no store at {}\n  hint: check --home and MCPEVAL_HOME, or \
         run `mcpeval index` after a capture\n",
        store.home().display()
    );
    for format in ["json", "md"] {
        store
            .bin("mcpeval-readiness")
            .args(["--format", format, "--now", NOW])
            .assert()
            .code(3)
            .stdout("")
            .stderr(missing.clone());
    }
    // The same for a typo'd --home beside a store that does exist.
    crate::support::private_dir(&store.home());
    let typo = store.scratch().join("hoem");
    store
        .bin("mcpeval-readiness")
        .args(["--now", NOW, "--home", typo.to_str().unwrap()])
        .assert()
        .code(3)
        .stdout("")
        .stderr(format!(
            "mcpeval-readiness: error: no store at {}\n  hint: check --home and MCPEVAL_HOME, \
             or run `mcpeval index` after a capture\n",
            typo.display()
        ));
    assert!(!typo.exists());

    let (r, _) = report(&store, &[]);
    assert_eq!(r["servers"], json!([]));
    store
        .bin("mcpeval-readiness")
        .args(["--format", "md", "--now", NOW])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "No captured calls in these days and no open findings.",
        ));
    store
        .bin("mcpeval-readiness")
        .args(["--now", "yesterday"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid --now \"yesterday\""));
}

/// The bench's server as readiness reports it after the bench's last day.
fn bench_server(b: &Bench) -> Value {
    let (r, _) = report_at(&b.store, AFTER_BENCH, &[]);
    server(&r, FIXTURE_SERVER).clone()
}

/// (state, severity, probe_attached) as `mcpeval findings` shows them.
fn standing(b: &Bench) -> (String, String, bool) {
    let f = b.finding_json();
    (
        f["state"].as_str().unwrap().to_owned(),
        f["severity"].as_str().unwrap().to_owned(),
        f["probe_attached"].as_bool().unwrap(),
    )
}

fn standing_is(state: &str, severity: &str, probe_attached: bool) -> (String, String, bool) {
    (state.to_owned(), severity.to_owned(), probe_attached)
}

/// The first green run attaches a probe, which lifts the severity cap: the
/// same finding is high from then on. While it is verifying it is shown,
/// never counted, so the green run cannot turn at-risk into not-ready; a
/// red run makes it count again (reopened, then fix-claimed), and once
/// closed it is left out.
#[test]
fn a_green_run_never_makes_a_server_look_worse_and_a_red_one_counts_again() {
    let b = Bench::new();
    let id = b.finding.clone();
    let ready = json!(["no open high or medium finding; no captured calls on 2026-12-01"]);
    let none = json!({"high": 0, "medium": 0, "low": 0});

    // Open, capped at medium without a probe: at-risk.
    assert_eq!(standing(&b), standing_is("open", "medium", false));
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "at-risk");
    assert_eq!(
        s["reasons"],
        json!([format!("open medium finding {id} on status")])
    );
    assert_eq!(
        s["open_findings"],
        json!({"high": 0, "medium": 1, "low": 0})
    );

    // One green run: verifying, a probe attached, high by its score. Not
    // a reason, not counted; listed as verifying with its streak.
    b.green();
    assert_eq!(standing(&b), standing_is("verifying", "high", true));
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "ready", "{s}");
    assert_eq!(s["reasons"], ready);
    assert_eq!(s["open_findings"], none);
    assert_eq!(
        s["verifying"],
        json!([{"id": id, "tool": "status", "severity": "high", "streak": 1}])
    );
    let md = ok(&b.store, "mcpeval-readiness", &["--now", AFTER_BENCH]);
    assert!(
        md.contains(&format!(
            "## `{FIXTURE_SERVER}`: ready\n\n\
             - no open high or medium finding; no captured calls on 2026-12-01\n\n\
             Open findings: 0 high, 0 medium, 0 low.\n\n\
             Verifying, not counted against the verdict:\n\n\
             - high finding `{id}` on `status`: verifying, streak 1/3\n\n| tool |"
        )),
        "{md}"
    );

    // A second green run: the streak grows, the verdict stays.
    b.green();
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "ready");
    assert_eq!(s["verifying"][0]["streak"], 2);

    // Red: reopened, so it counts again, now at high.
    b.red();
    assert_eq!(standing(&b), standing_is("open", "high", true));
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "not-ready");
    assert_eq!(
        s["reasons"],
        json!([format!("open high finding {id} on status")])
    );
    assert_eq!(
        s["open_findings"],
        json!({"high": 1, "medium": 0, "low": 0})
    );
    assert_eq!(s["verifying"], json!([]));

    // Red again: fix-claimed, which counts as open does.
    b.red();
    assert_eq!(standing(&b), standing_is("fix-claimed", "high", true));
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "not-ready");
    assert_eq!(
        s["reasons"],
        json!([format!("fix-claimed high finding {id} on status")])
    );
    assert_eq!(
        s["open_findings"],
        json!({"high": 1, "medium": 0, "low": 0})
    );

    // Three greens in a row close it: closed is neither counted nor shown.
    for _ in 0..3 {
        b.green();
    }
    assert_eq!(standing(&b).0, "closed");
    let s = bench_server(&b);
    assert_eq!(s["verdict"], "ready");
    assert_eq!(s["reasons"], ready);
    assert_eq!(s["open_findings"], none);
    assert_eq!(s["verifying"], json!([]));
    let md = ok(&b.store, "mcpeval-readiness", &["--now", AFTER_BENCH]);
    assert!(!md.contains("Verifying"), "{md}");
}

/// Without an index nothing is known of findings: verifying is null, as
/// open_findings is.
#[test]
fn verifying_is_unknown_without_an_index() {
    let store = Store::new();
    records::write(&store, 1, &records::lines(&journal()));
    let (r, _) = report(&store, &[]);
    let weather = server(&r, "weather");
    assert_eq!(weather["open_findings"], Value::Null);
    assert_eq!(weather["verifying"], Value::Null);
}

/// A verifying finding's tool name is as untrusted as a reason's: a code
/// span in markdown, quoted in serve's text, exact in JSON.
#[test]
fn verifying_lines_escape_hostile_names() {
    let store = hostile_store();
    let f: Value =
        serde_json::from_str(&ok(&store, "mcpeval-findings", &["--format", "json"])).unwrap();
    let id = f["findings"][0]["id"].as_str().unwrap().to_owned();
    set_state(&store, &id, "verifying");

    let args = ["--days", "2", "--now", NOW];
    let md = ok(&store, "mcpeval-readiness", &args);
    assert!(!has_raw_control(&md), "{md:?}");
    assert!(
        md.lines()
            .all(|l| !l.trim_start().starts_with(INJECTED)
                && !l.trim_start().starts_with("# Heading")),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "\nVerifying, not counted against the verdict:\n\n\
             - medium finding `{id}` on ``get\\u{{1b}}[2J|`x`\\n# Heading <img src=x \
             onerror=alert(1)>\\u{{85}}``: verifying, streak 0/3\n"
        )),
        "{md}"
    );

    let (r, _) = report(&store, &["--days", "2"]);
    let s = &r["servers"][0];
    assert_eq!(s["server"], SERVER);
    assert_eq!(s["verifying"][0]["tool"], TOOL);
    assert_eq!(
        s["open_findings"],
        json!({"high": 0, "medium": 0, "low": 0})
    );
    // Its tool failing is still a reason; the finding is not.
    assert!(
        s["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r.as_str().unwrap().contains(&id)),
        "{s}"
    );

    let out = client(
        &store,
        "auto",
        json!([call("readiness", json!({"days": 2}))]),
    );
    let text = out["calls"][0]["text"].as_str().unwrap();
    assert!(!has_raw_control(text), "{text:?}");
    assert!(
        text.lines().all(|l| !l.trim_start().starts_with(INJECTED)),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\n  verifying, not counted: medium finding {id} on \
             \"get\\u001b[2J|`x`\\n# Heading <img src=x onerror=alert(1)>\\u0085\", streak 0/3"
        )),
        "{text}"
    );
}
