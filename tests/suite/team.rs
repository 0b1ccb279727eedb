//! The team store (SPEC §11): stores of one team index into one PostgreSQL
//! database, and every command reads and writes the team as one store.

use crate::support::OutputWithin;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use shared::record::COLUMN_NAMES;

use crate::postgres::{self, Database};
use crate::records::{self, Rec};
use crate::serve::{call, client};
use crate::support::{Deps, Store, private_dir, repo, text};

/// The promotion time every store is promoted at.
pub const NOW: &str = "2026-12-07T07:00:02.123Z";

/// The seed corpus's journals, in name order.
pub fn seed_journals() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(repo().join("corpus/seed/journals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// A store with `salt` (copied from another store) and `journals`.
pub fn store_with(salt: Option<&Path>, journals: &[PathBuf]) -> Store {
    let store = Store::new();
    let dir = store.home().join("journals");
    private_dir(&store.home());
    private_dir(&dir);
    if let Some(salt) = salt {
        fs::copy(salt, store.home().join(".salt")).unwrap();
    }
    for path in journals {
        fs::copy(path, dir.join(path.file_name().unwrap())).unwrap();
    }
    store
}

/// The salt file of `store`, made by exporting the salt once (the way a
/// team's first store hands it on), for [`store_with`] to copy.
pub fn salt_of(store: &Store) -> PathBuf {
    let exported = store.scratch().join("team.salt");
    ok(
        store,
        None,
        "mcpeval-salt",
        &["--export", exported.to_str().unwrap()],
    );
    store.home().join(".salt")
}

/// Runs `name ARGS…` on `store` against `db` (through `MCPEVAL_DATABASE_URL`)
/// and returns (status, stdout, stderr).
pub fn run(
    store: &Store,
    db: Option<&Database>,
    name: &str,
    args: &[&str],
) -> (i32, String, String) {
    let mut cmd = store.cmd(name);
    if let Some(db) = db {
        cmd.env("MCPEVAL_DATABASE_URL", &db.url);
    }
    let out = cmd.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Like [`run`], and the command must succeed.
pub fn ok(store: &Store, db: Option<&Database>, name: &str, args: &[&str]) -> String {
    let (status, stdout, stderr) = run(store, db, name, args);
    assert_eq!(status, 0, "{name} {args:?}: {stderr}");
    stdout
}

/// `findings --format json` without its promotion time (the clock's, not
/// `--now`'s).
pub fn findings(store: &Store, db: Option<&Database>) -> serde_json::Value {
    let json = ok(store, db, "mcpeval-findings", &["--format", "json"]);
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value.as_object_mut().unwrap().remove("promoted_at");
    value
}

/// `findings --format json` as [`findings`] gives it, read through the
/// database at `url` (a role of its own).
pub fn findings_at(store: &Store, url: &str) -> serde_json::Value {
    let out = store
        .cmd("mcpeval-findings")
        .env("MCPEVAL_DATABASE_URL", url)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut value: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    value.as_object_mut().unwrap().remove("promoted_at");
    value
}

/// What a reader's store holds: its files, by name.
pub fn files_of(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(store.home())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn three_stores_in_one_database_have_the_findings_of_one_store_with_every_journal() {
    let journals = seed_journals();
    assert!(journals.len() > 30, "{}", journals.len());
    let db = postgres::database();

    // The first store brings the team's salt; the others import it.
    let first = store_with(None, &[]);
    let salt = salt_of(&first);
    let parts: Vec<Vec<PathBuf>> = (0..3)
        .map(|k| journals.iter().skip(k).step_by(3).cloned().collect())
        .collect();
    let stores: Vec<Store> = parts.iter().map(|p| store_with(Some(&salt), p)).collect();

    // They index at the same moment.
    std::thread::scope(|scope| {
        for store in &stores {
            let db = &db;
            scope.spawn(move || ok(store, Some(db), "mcpeval-index", &[]));
        }
    });
    // One of them, indexing again, sees every store's calls.
    ok(&stores[1], Some(&db), "mcpeval-index", &[]);
    ok(&stores[1], Some(&db), "mcpeval-promote", &["--now", NOW]);

    let single = store_with(Some(&salt), &journals);
    ok(&single, None, "mcpeval-index", &[]);
    ok(&single, None, "mcpeval-promote", &["--now", NOW]);
    let expected = findings(&single, None);
    assert!(
        expected["findings"].as_array().unwrap().len() >= 5,
        "{expected}"
    );

    // Every store reads the team's findings, equal field for field.
    for store in &stores {
        // A store that has not indexed since the others uploaded still
        // reads the team's findings; indexing changes nothing in them.
        assert_eq!(findings(store, Some(&db)), expected);
    }
    let calls: i64 = db
        .psql("SELECT count(*) FROM mcpeval.calls")
        .trim()
        .parse()
        .unwrap();
    let single_calls = journals
        .iter()
        .map(|p| fs::read_to_string(p).unwrap().lines().count() as i64)
        .sum::<i64>();
    assert_eq!(calls, single_calls, "every call once");
}

/// The calls each store's machine makes through `mcpeval-capture` to two
/// real servers, each server one session: an ok call, and calls that fail
/// (an unknown time zone, missing or mistyped arguments, an unknown tool).
const TIME_SCRIPT: &str = r#"[
  {"tool": "get_current_time", "arguments": {"timezone": "Europe/Paris"}},
  {"tool": "get_current_time", "arguments": {"timezone": "Mars/Olympus_Mons"}},
  {"tool": "convert_time", "arguments": {"source_timezone": "UTC"}}
]"#;
const EVERYTHING_SCRIPT: &str = r#"[
  {"tool": "echo", "arguments": {"message": "hello"}},
  {"tool": "get-sum", "arguments": {"a": "four", "b": 2}},
  {"tool": "no-such-tool", "arguments": {}}
]"#;

/// Runs `script` through the Python SDK client against `server` behind
/// `mcpeval-capture`, journaling into `store`: one session.
fn capture_session(store: &Store, script: &str, server: &Path) {
    let file = store.scratch().join(format!(
        "script-{}.json",
        server.file_name().unwrap().display()
    ));
    fs::write(&file, script).unwrap();
    let mut cmd = std::process::Command::new(Deps::python());
    store.env(&mut cmd);
    let out = cmd
        .arg(repo().join("tests/clients/session.py"))
        .arg(&file)
        .arg("--")
        .arg(crate::support::bin("mcpeval-capture"))
        .arg("--")
        .arg(server)
        .output_within(crate::support::SESSION_LIMIT);
    assert!(out.status.success(), "session: {}", text(&out.stderr));
}

/// Generated calls on server `tides` for store `k`: two sessions of
/// its own, failing with a template every store's sessions share, and
/// breaking a tool's declared outputSchema the same way.
fn generated(k: u64, sessions: std::ops::Range<u64>) -> String {
    let mut recs = Vec::new();
    for s in sessions {
        let base = 10_000 * (k + 1) + 10 * s;
        let session = 100 * (k + 1) + s;
        recs.push(Rec::ok(base, session, 1, "forecast"));
        recs.push(Rec::error(base + 1, session, 2, "forecast", Some(7)));
        recs.push(Rec::error(base + 2, session, 3, "alerts", Some(8)));
        recs.push(Rec::ok(base + 3, session, 4, "forecast"));
        recs.push(Rec::ok(base + 4, session, 5, "tide_table").contract(Some(("/high", "type"))));
        recs.push(Rec::ok(base + 5, session, 6, "tide_table").contract(None));
    }
    let recs: Vec<Rec> = recs.into_iter().map(|r| r.server("tides")).collect();
    records::lines(&recs)
}

/// Three stores of one team, each with a third of the seed corpus, a
/// generated journal and two sessions captured from real servers, and the
/// one SQLite store to hold copies of all their journals.
struct Team {
    db: Database,
    stores: Vec<Store>,
    single: Store,
    /// A CI runner's store: the team salt and nothing else; it reads
    /// through a role that may only SELECT.
    reader: Store,
}

/// The sessions three stores' machines captured from real servers, made
/// once per test process and copied into every [`Team`]: starting the
/// client and the servers twice per store was most of a team test's
/// time. Every team's stores share the salt these were captured under.
struct Captured {
    salt: Vec<u8>,
    /// Each store's captured journals: file name and bytes.
    journals: Vec<Vec<(std::ffi::OsString, Vec<u8>)>>,
}

fn captured() -> &'static Captured {
    static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    CAPTURED.get_or_init(|| {
        let first = store_with(None, &[]);
        let salt = salt_of(&first);
        let mut stores = vec![first];
        stores.extend((1..3).map(|_| store_with(Some(&salt), &[])));
        let (time, everything) = (Deps::server_time(), Deps::server_everything());
        std::thread::scope(|scope| {
            for store in &stores {
                let (time, everything) = (&time, &everything);
                scope.spawn(move || {
                    capture_session(store, TIME_SCRIPT, time);
                    capture_session(store, EVERYTHING_SCRIPT, everything);
                });
            }
        });
        Captured {
            salt: fs::read(&salt).unwrap(),
            journals: stores
                .iter()
                .map(|store| {
                    store
                        .journals()
                        .into_iter()
                        .map(|path| {
                            (
                                path.file_name().unwrap().to_owned(),
                                fs::read(&path).unwrap(),
                            )
                        })
                        .collect()
                })
                .collect(),
        }
    })
}

impl Team {
    fn new() -> Team {
        let db = postgres::database();
        let seed = seed_journals();
        let captured = captured();
        let salt_dir = tempfile::tempdir().unwrap();
        let salt = salt_dir.path().join("team.salt");
        fs::write(&salt, &captured.salt).unwrap();
        let part = |k: usize| -> Vec<PathBuf> { seed.iter().skip(k).step_by(3).cloned().collect() };
        let stores: Vec<Store> = (0..3).map(|k| store_with(Some(&salt), &part(k))).collect();
        for (k, store) in stores.iter().enumerate() {
            records::write(store, k as u32 + 1, &generated(k as u64, 0..2));
            for (name, bytes) in &captured.journals[k] {
                fs::write(store.home().join("journals").join(name), bytes).unwrap();
            }
        }
        for store in &stores {
            let captured = store
                .records()
                .into_iter()
                .filter(|r| r["server"] == "mcp-time" || r["server"] == "mcp-servers/everything")
                .count();
            assert_eq!(captured, 6, "each store captured its own two sessions");
        }
        Team {
            db,
            single: store_with(Some(&salt), &[]),
            reader: store_with(Some(&salt), &[]),
            stores,
        }
    }

    /// Every store indexes at the same moment; their summaries.
    fn index_all(&self) -> Vec<String> {
        std::thread::scope(|scope| {
            let runs: Vec<_> = self
                .stores
                .iter()
                .map(|store| {
                    let db = &self.db;
                    scope.spawn(move || {
                        let (status, _, stderr) = run(store, Some(db), "mcpeval-index", &[]);
                        assert_eq!(status, 0, "index: {stderr}");
                        stderr
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        })
    }

    /// The single store, holding a copy of every store's journals as they
    /// are now, indexed and promoted: its promote line and findings.
    fn expected(&self) -> (String, serde_json::Value) {
        let dir = self.single.home().join("journals");
        for store in &self.stores {
            for path in store.journals() {
                fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
            }
        }
        ok(&self.single, None, "mcpeval-index", &[]);
        let promoted = ok(&self.single, None, "mcpeval-promote", &["--now", NOW]);
        (promoted, findings(&self.single, None))
    }

    /// Indexes and promotes on store `k` (its team view then holds every
    /// upload so far) and checks that every store reads, field for
    /// field, the findings of the single store.
    fn assert_same_findings(&self, k: usize, what: &str) -> serde_json::Value {
        ok(&self.stores[k], Some(&self.db), "mcpeval-index", &[]);
        let promoted = ok(
            &self.stores[k],
            Some(&self.db),
            "mcpeval-promote",
            &["--now", NOW],
        );
        let (single_promoted, expected) = self.expected();
        assert_eq!(promoted, single_promoted, "{what}: promote");
        for (n, store) in self.stores.iter().enumerate() {
            assert_eq!(
                findings(store, Some(&self.db)),
                expected,
                "{what}: the findings store {n} reads"
            );
        }
        self.assert_reader_reads(&expected, what);
        expected
    }

    /// A store that never indexed reads `expected` through a role with
    /// SELECT rights only, and neither the database nor its store keeps
    /// a trace of it.
    fn assert_reader_reads(&self, expected: &serde_json::Value, what: &str) {
        let url = self.db.read_only_url();
        let registered = self
            .db
            .psql("SELECT store_id FROM mcpeval.stores ORDER BY 1");
        let kept = files_of(&self.reader);
        assert_eq!(
            &findings_at(&self.reader, &url),
            expected,
            "{what}: the findings a fresh read-only reader reads"
        );
        assert_eq!(
            self.db
                .psql("SELECT store_id FROM mcpeval.stores ORDER BY 1"),
            registered,
            "{what}: a reader registers no store"
        );
        assert_eq!(
            files_of(&self.reader),
            kept,
            "{what}: a reader keeps no view"
        );

        // Its readiness is the single store's: the same servers, verdicts,
        // findings and daily counts, from as many journals.
        let readiness = |store: &Store, url: Option<&str>| -> serde_json::Value {
            let mut cmd = store.cmd("mcpeval-readiness");
            if let Some(url) = url {
                cmd.env("MCPEVAL_DATABASE_URL", url);
            }
            let out = cmd
                .args(["--format", "json", "--days", "30", "--now", NOW])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            serde_json::from_str(&text(&out.stdout)).unwrap()
        };
        let (ours, single) = (
            readiness(&self.reader, Some(&url)),
            readiness(&self.single, None),
        );
        assert_eq!(ours["servers"], single["servers"], "{what}: {ours}");
        assert!(
            !single["servers"].as_array().unwrap().is_empty(),
            "{single}"
        );
        assert_eq!(ours["findings"], single["findings"], "{what}");
        assert_eq!(
            ours["cache"]["journals"], single["cache"]["journals"],
            "{what}"
        );
    }

    /// `mcpeval.journals` as (store id, name) → (epoch, sha256, lines).
    fn journal_rows(&self) -> BTreeMap<(String, String), (i64, String, i64)> {
        self.db
            .psql(
                "SELECT store_id, name, epoch, encode(sha256, 'hex'), lines FROM mcpeval.journals",
            )
            .lines()
            .map(|row| {
                let f: Vec<&str> = row.split('|').collect();
                (
                    (f[0].to_owned(), f[1].to_owned()),
                    (
                        f[2].parse().unwrap(),
                        f[3].to_owned(),
                        f[4].parse().unwrap(),
                    ),
                )
            })
            .collect()
    }

    /// Per (store id, journal): the calls' lines and the transaction that
    /// wrote each row, so a row written anew shows.
    fn call_rows(&self) -> BTreeMap<(String, String), String> {
        self.db
            .psql(
                "SELECT store_id, journal, md5(string_agg(line || ':' || xmin::text, ',' ORDER BY line))
                 FROM mcpeval.calls GROUP BY store_id, journal",
            )
            .lines()
            .map(|row| {
                let f: Vec<&str> = row.split('|').collect();
                ((f[0].to_owned(), f[1].to_owned()), f[2].to_owned())
            })
            .collect()
    }

    fn calls_in_db(&self) -> usize {
        self.db
            .psql("SELECT count(*) FROM mcpeval.calls")
            .trim()
            .parse()
            .unwrap()
    }

    fn calls_in_single(&self) -> usize {
        self.single.records().len()
    }
}

/// The journals in a store's team view.
fn in_view(store: &Store) -> usize {
    fs::read_dir(store.home().join("team/journals"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count()
}

fn store_id(store: &Store) -> String {
    fs::read_to_string(store.home().join("store-id"))
        .unwrap()
        .trim()
        .to_owned()
}

/// The findings of `server`, by tool.
fn of_server(findings: &serde_json::Value, server: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["server"] == server)
        .map(|f| {
            (
                f["tool"].as_str().unwrap().to_owned(),
                f["defect_class"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn captured_and_generated_journals_of_three_stores_give_the_findings_of_one_store() {
    let team = Team::new();
    team.index_all();
    let expected = team.assert_same_findings(0, "first index");
    assert_eq!(
        team.calls_in_db(),
        team.calls_in_single(),
        "every call once"
    );

    // Failures seen once per store are findings of the team.
    assert_eq!(
        of_server(&expected, "mcp-time"),
        [
            ("convert_time".to_owned(), "tool-error".to_owned()),
            ("get_current_time".to_owned(), "tool-error".to_owned())
        ],
        "{expected}"
    );
    assert_eq!(
        of_server(&expected, "mcp-servers/everything"),
        [
            ("get-sum".to_owned(), "invalid-arguments".to_owned()),
            ("no-such-tool".to_owned(), "unknown-tool".to_owned())
        ],
        "{expected}"
    );
    assert_eq!(of_server(&expected, "tides").len(), 3, "{expected}");
    assert!(
        of_server(&expected, "tides")
            .contains(&("tide_table".to_owned(), "contract-violation".to_owned())),
        "{expected}"
    );

    // Indexing again uploads nothing and reports the team in JSON (what
    // is new to its view depends on which store finished first).
    let json = ok(
        &team.stores[2],
        Some(&team.db),
        "mcpeval-index",
        &["--format", "json"],
    );
    let summary: serde_json::Value = serde_json::from_str(&json).unwrap();
    let t = &summary["team"];
    assert_eq!(t["database"], team.db.url.as_str(), "{summary}");
    assert_eq!(t["uploaded"], 0, "{summary}");
    assert_eq!(t["stores"], 3, "{summary}");
    assert_eq!(t["calls"], team.calls_in_single(), "{summary}");
    assert_eq!(t["journals"], team.single.journals().len(), "{summary}");
    assert!(t["new"].is_u64(), "{summary}");
    assert_eq!(findings(&team.stores[2], Some(&team.db)), expected);

    assert_eq!(
        files_of(&team.reader),
        [".salt", "journals"],
        "no view kept"
    );

    // A store of the team that names no database is told so, with the
    // store id it is known by and where to name the database; it is not
    // shown its own files as the team's findings.
    let (status, _, stderr) = run(&team.stores[2], None, "mcpeval-findings", &[]);
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("belongs to a team"), "{stderr}");
    assert!(stderr.contains(&store_id(&team.stores[2])), "{stderr}");
    assert!(stderr.contains("\"database_url\" in"), "{stderr}");

    // serve, started by an MCP client with a small environment (no
    // MCPEVAL_DATABASE_URL), answers with those words; with database_url
    // in config.json, a reader's serve lists the team's findings.
    let list = json!([call("list_findings", json!({}))]);
    let out = client(&team.stores[2], "auto", list.clone());
    assert_eq!(out["calls"][0]["is_error"], true, "{out}");
    assert_eq!(out["calls"][0]["text"], stderr.trim_end(), "{out}");
    let url = team.db.read_only_url();
    fs::write(
        team.reader.home().join("config.json"),
        json!({ "database_url": url }).to_string(),
    )
    .unwrap();
    let out = client(&team.reader, "auto", list);
    assert_eq!(out["calls"][0]["is_error"], false, "{out}");
    let ids = |findings: &serde_json::Value| -> Vec<String> {
        findings
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&out["calls"][0]["structured"]["findings"]),
        ids(&expected["findings"]),
        "{out}"
    );
}

#[test]
fn appends_in_two_stores_give_the_findings_of_one_store_with_the_same_bytes() {
    let team = Team::new();
    team.index_all();
    team.assert_same_findings(1, "first index");
    let before = team.journal_rows();

    // A new session in store 0's generated journal, and one appended to
    // the journal store 2 captured last.
    records::append(&team.stores[0], 1, &generated(0, 2..3));
    let last = team.stores[2].journals().pop().unwrap();
    records::append_to(&last, &generated(2, 5..6));
    let summaries = team.index_all();
    for (n, uploaded) in [(0, 6), (1, 0), (2, 6)] {
        assert!(
            summaries[n].contains(&format!(": uploaded {uploaded} calls;")),
            "store {n}: {}",
            summaries[n]
        );
    }
    let expected = team.assert_same_findings(0, "after appends");
    assert_eq!(
        team.calls_in_db(),
        team.calls_in_single(),
        "every call once"
    );

    // The grown journals kept their epoch and gained the new lines.
    let after = team.journal_rows();
    assert_eq!(before.len(), after.len());
    let grown: Vec<(&str, i64)> = before
        .iter()
        .filter(|(key, old)| after[*key] != **old)
        .map(|(key, old)| {
            let new = &after[key];
            assert_eq!(new.0, old.0, "{key:?} appended to, not replaced");
            (key.1.as_str(), new.2 - old.2)
        })
        .collect();
    let generated_name = records::journal_name(1);
    let last_name = last.file_name().unwrap().to_str().unwrap();
    let mut want = vec![(generated_name.as_str(), 6), (last_name, 6)];
    want.sort();
    let mut grown = grown;
    grown.sort();
    assert_eq!(grown, want);
    let sessions = |f: &serde_json::Value, tool: &str| {
        f["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["server"] == "tides" && f["tool"] == tool)
            .unwrap()["sessions"]
            .clone()
    };
    assert_eq!(sessions(&expected, "forecast"), 8, "{expected}");
}

#[test]
fn a_rewritten_journal_replaces_that_journals_calls_alone() {
    let team = Team::new();
    team.index_all();
    team.assert_same_findings(2, "first index");
    let (journals, calls) = (team.journal_rows(), team.call_rows());

    // Store 1's generated journal is written anew: its calls now succeed,
    // save one failure with another template.
    let mut recs = vec![
        Rec::ok(20_000, 200, 1, "forecast"),
        Rec::ok(20_001, 200, 2, "alerts"),
    ];
    recs.push(Rec::error(20_002, 201, 1, "alerts", Some(9)));
    let recs: Vec<Rec> = recs.into_iter().map(|r| r.server("tides")).collect();
    records::write(&team.stores[1], 2, &records::lines(&recs));
    let name = records::journal_name(2);
    let (status, _, stderr) = run(&team.stores[1], Some(&team.db), "mcpeval-index", &[]);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("full rebuild: {name}")),
        "{stderr}"
    );

    let rewritten = (store_id(&team.stores[1]), name);
    let (after, after_calls) = (team.journal_rows(), team.call_rows());
    assert_eq!(journals.len(), after.len());
    for (key, old) in &journals {
        let new = &after[key];
        if *key == rewritten {
            assert_eq!(new.0, old.0 + 1, "a new epoch for {key:?}");
            assert_ne!(new.1, old.1);
            assert_eq!(new.2, 3);
            assert_ne!(after_calls[key], calls[key], "{key:?}'s calls written anew");
        } else {
            assert_eq!(new, old, "{key:?} unchanged");
            assert_eq!(after_calls[key], calls[key], "{key:?}'s calls untouched");
        }
    }

    // Only store 1 indexed; the others read the team's findings as they are.
    team.assert_same_findings(1, "after the rewrite");
    assert_eq!(
        team.calls_in_db(),
        team.calls_in_single(),
        "every call once"
    );
}

#[test]
fn an_annotation_made_on_another_machine_counts_as_on_one_store() {
    let team = Team::new();
    team.index_all();
    let before = team.assert_same_findings(0, "first index");
    assert!(
        of_server(&before, "mcp-time")
            .iter()
            .all(|(_, class)| class != "false-success")
    );

    // Store 2, its view up to date, annotates ok calls that stores 0 and 1
    // captured: its view links them as the single store links them.
    ok(&team.stores[2], Some(&team.db), "mcpeval-index", &[]);
    let ok_call = |store: &Store| {
        store
            .records()
            .into_iter()
            .find(|r| r["server"] == "mcp-time" && r["outcome"] == "ok")
            .unwrap()["identity"]["event_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let targets = [ok_call(&team.stores[0]), ok_call(&team.stores[1])];
    let annotate = |store: &Store, db: Option<&Database>, id: &str| {
        let (status, _, stderr) = run(
            store,
            db,
            "mcpeval-annotate",
            &[
                "--event-id",
                id,
                "--kind",
                "false-success",
                "--note",
                "The time was an hour off",
            ],
        );
        assert_eq!(status, 0, "{stderr}");
        stderr
    };
    for id in &targets {
        let said = annotate(&team.stores[2], Some(&team.db), id);
        let single = annotate(&team.single, None, id);
        assert!(
            said.contains(" and linked to the call mcp-time/get_current_time at "),
            "{said}"
        );
        assert_eq!(
            said.split_once(" stored").unwrap().1,
            single.split_once(" stored").unwrap().1
        );
    }

    // Store 0 indexes (linking the annotations) and promotes.
    let expected = team.assert_same_findings(0, "after the annotation");
    assert!(
        of_server(&expected, "mcp-time")
            .contains(&("get_current_time".to_owned(), "false-success".to_owned())),
        "{expected}"
    );
}

#[test]
fn a_password_in_the_database_url_is_never_shown() {
    let db = postgres::database();
    let password = "Pw-7c1e-nOt-sHoWn";
    let url = db
        .url
        .replacen("mcpeval@", &format!("mcpeval:{password}@"), 1);
    assert_ne!(url, db.url);
    let store = store_with(None, &seed_journals()[..6]);
    let check = |name: &str, args: &[&str], want: i32| -> (String, String) {
        let mut all = vec!["--database", url.as_str()];
        all.extend_from_slice(args);
        let (status, stdout, stderr) = run(&store, None, name, &all);
        assert_eq!(status, want, "{name} {args:?}: {stderr}");
        for out in [&stdout, &stderr] {
            assert!(
                !out.contains(password),
                "{name} {args:?} showed the password: {out}"
            );
            assert!(!out.contains("Pw-7c1e"), "{name} {args:?}: {out}");
        }
        (stdout, stderr)
    };
    let (_, stderr) = check("mcpeval-index", &[], 0);
    let team_line = stderr.lines().nth(1).unwrap_or_default();
    assert!(team_line.starts_with("team postgres://"), "{stderr}");
    assert!(
        team_line.starts_with(&format!("team {}: uploaded ", db.url)),
        "{stderr}"
    );
    let (stdout, _) = check("mcpeval-index", &["--format", "json"], 0);
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["team"]["database"], db.url.as_str(), "{summary}");
    check("mcpeval-promote", &["--now", NOW], 0);
    check("mcpeval-findings", &[], 0);
    check("mcpeval-findings", &["--format", "json"], 0);

    // Refusals name the database without it too: a store of another team,
    // and a server that is not there.
    let stranger = store_with(None, &seed_journals()[..1]);
    let (status, stdout, stderr) = run(&stranger, None, "mcpeval-index", &["--database", &url]);
    assert_eq!(status, 6, "{stderr}");
    assert!(stderr.contains(&db.url), "{stderr}");
    assert!(
        !stderr.contains(password) && !stdout.contains(password),
        "{stderr}"
    );
    let gone = format!(
        "postgres://mcpeval:{password}@127.0.0.1:{}/x",
        crate::support::free_port()
    );
    let (status, stdout, stderr) = run(&store, None, "mcpeval-findings", &["--database", &gone]);
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("postgres://mcpeval@127.0.0.1:"), "{stderr}");
    assert!(
        !stderr.contains(password) && !stdout.contains(password),
        "{stderr}"
    );
}

#[test]
fn a_promote_from_a_view_behind_the_database_merges_the_stores_aggregates() {
    let db = postgres::database();
    let seed = seed_journals();
    let half = |k: usize| -> Vec<PathBuf> { seed.iter().skip(k).step_by(2).cloned().collect() };
    let a = store_with(None, &half(0));
    let salt = salt_of(&a);
    let b = store_with(Some(&salt), &half(1));
    ok(&a, Some(&db), "mcpeval-index", &[]);
    ok(&b, Some(&db), "mcpeval-index", &[]);
    ok(&b, Some(&db), "mcpeval-promote", &["--now", NOW]);
    let team = findings(&b, Some(&db));
    assert!(!team["findings"].as_array().unwrap().is_empty(), "{team}");
    let single = store_with(Some(&salt), &seed);
    ok(&single, None, "mcpeval-index", &[]);
    ok(&single, None, "mcpeval-promote", &["--now", NOW]);
    assert_eq!(team, findings(&single, None));

    // Store a's view lacks b's calls, and its promote reads no call: it
    // merges every store's aggregates, so it promotes the team's
    // findings, not those of half its calls, and leaves its view as it
    // was.
    assert_eq!(in_view(&a), half(0).len());
    ok(&a, Some(&db), "mcpeval-promote", &["--now", NOW]);
    assert_eq!(in_view(&a), half(0).len());
    assert_eq!(findings(&a, Some(&db)), team);
    assert_eq!(findings(&b, Some(&db)), team);

    // A store last indexed by an earlier release uploaded no aggregates:
    // promote then reads the calls, bringing its view up to date first,
    // and promotes the same findings.
    db.psql(&format!(
        "UPDATE mcpeval.stores SET partials = false WHERE store_id = '{}';
         DELETE FROM mcpeval.part_failures WHERE store_id = '{}';",
        store_id(&b),
        store_id(&b)
    ));
    ok(&a, Some(&db), "mcpeval-promote", &["--now", NOW]);
    assert_eq!(in_view(&a), seed.len());
    assert_eq!(findings(&a, Some(&db)), team);
    // Its next index uploads them, and the merge is exact again.
    ok(&b, Some(&db), "mcpeval-index", &[]);
    let uploaded = db.psql(&format!(
        "SELECT partials, (SELECT count(*) > 0 FROM mcpeval.part_failures WHERE store_id = '{0}')
         FROM mcpeval.stores WHERE store_id = '{0}'",
        store_id(&b)
    ));
    assert_eq!(uploaded.trim(), "t|t");
    ok(&b, Some(&db), "mcpeval-promote", &["--now", NOW]);
    assert_eq!(findings(&b, Some(&db)), team);
}

#[test]
fn a_journal_copied_between_stores_is_promoted_from_the_calls() {
    let db = postgres::database();
    let seed = seed_journals();
    let a = store_with(None, &seed[..4]);
    let salt = salt_of(&a);
    // Store b holds the other journals and a copy of one of a's: its
    // sessions are in two stores, whose session counts would not add up.
    let b = store_with(Some(&salt), &[&seed[4..], &seed[..1]].concat());
    ok(&a, Some(&db), "mcpeval-index", &[]);
    ok(&b, Some(&db), "mcpeval-index", &[]);
    let single = store_with(Some(&salt), &seed);
    ok(&single, None, "mcpeval-index", &[]);
    ok(&single, None, "mcpeval-promote", &["--now", NOW]);

    // Promote sees that the aggregates cannot merge exactly and reads the
    // calls of a's view, which it brings up to date first.
    assert_eq!(in_view(&a), 4);
    ok(&a, Some(&db), "mcpeval-promote", &["--now", NOW]);
    assert_eq!(in_view(&a), seed.len() + 1);
    assert_eq!(findings(&a, Some(&db)), findings(&single, None));
}

#[test]
fn index_json_with_a_database_tells_the_seconds_of_upload_pull_and_view_index() {
    let db = postgres::database();
    let store = store_with(None, &seed_journals()[..3]);
    let json = ok(&store, Some(&db), "mcpeval-index", &["--format", "json"]);
    let summary: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let team = &summary["team"];
    assert!(team["uploaded"].as_u64().unwrap() > 0, "{json}");
    let seconds = team["seconds"].as_object().expect("team.seconds");
    let keys: Vec<&str> = seconds.keys().map(String::as_str).collect();
    assert_eq!(keys, ["index", "pull", "upload"], "{json}");
    for (key, value) in seconds {
        let s = value.as_f64().unwrap_or(-1.0);
        assert!(
            (0.0..60.0).contains(&s),
            "team.seconds.{key} = {value} in {json}"
        );
    }
}

#[test]
fn the_team_calls_table_holds_a_row_s_columns_in_order() {
    let db = postgres::database();
    let store = store_with(None, &[]);
    ok(&store, Some(&db), "mcpeval-index", &[]);
    let names = db.psql(
        "SELECT column_name FROM information_schema.columns
         WHERE table_schema = 'mcpeval' AND table_name = 'calls' ORDER BY ordinal_position",
    );
    // The team's own columns, where the call was read, then the row.
    let mut want = vec!["dist_key", "month", "store_id", "journal", "line"];
    want.extend(COLUMN_NAMES);
    assert_eq!(names.lines().collect::<Vec<_>>(), want);
}

#[test]
fn a_database_column_of_another_type_is_refused_not_a_crash() {
    let db = postgres::database();
    let store = store_with(None, &seed_journals()[..3]);
    ok(&store, Some(&db), "mcpeval-index", &[]);
    // Someone altered the schema: the lifecycle's history details are
    // numbers now, and a journal's line count is text.
    db.psql("ALTER TABLE mcpeval.life_history ALTER COLUMN detail TYPE integer USING 0");
    db.psql("INSERT INTO mcpeval.life_history(id, detail) VALUES (1, 7)");
    let (status, stdout, stderr) = run(&store, Some(&db), "mcpeval-findings", &[]);
    assert_eq!(status, 3, "{stdout}{stderr}");
    assert!(
        stderr.starts_with("mcpeval-findings: error: team database postgres://"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    db.psql("DELETE FROM mcpeval.life_history WHERE id = 1");
    db.psql("ALTER TABLE mcpeval.life_history ALTER COLUMN detail TYPE text USING detail::text");
    ok(&store, Some(&db), "mcpeval-promote", &["--now", NOW]);
    db.psql("ALTER TABLE mcpeval.journals ALTER COLUMN lines TYPE text");
    let (status, _, stderr) = run(&store, Some(&db), "mcpeval-index", &[]);
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("team database postgres://"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_copied_store_is_refused_with_the_way_out_and_journal_names_may_repeat_across_stores() {
    let db = postgres::database();
    let seed = seed_journals();
    let a = store_with(None, &seed[..4]);
    // A reader changes nothing: before any store indexed, there is no
    // team to read, and it says who makes one.
    let (status, _, stderr) = run(&a, Some(&db), "mcpeval-findings", &[]);
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("holds no team yet"), "{stderr}");
    assert_eq!(
        db.psql("SELECT to_regclass('mcpeval.meta') IS NULL").trim(),
        "t"
    );
    ok(&a, Some(&db), "mcpeval-index", &[]);
    // The whole store copied to another machine, which indexes after the
    // original indexed again.
    let b = Store::new();
    private_dir(&b.home());
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(a.home().join("."))
        .arg(b.home())
        .status()
        .unwrap();
    assert!(copied.success());
    ok(&a, Some(&db), "mcpeval-index", &[]);
    let before = db.psql("SELECT store_id, name, epoch, lines FROM mcpeval.journals ORDER BY 1, 2");
    let (status, _, stderr) = run(&b, Some(&db), "mcpeval-index", &[]);
    assert_eq!(status, 6, "{stderr}");
    assert!(stderr.contains("is a copy of the other"), "{stderr}");
    assert!(stderr.contains(&store_id(&a)), "{stderr}");
    assert!(
        stderr.contains("give the copy an id of its own: on the copy, delete"),
        "{stderr}"
    );
    assert_eq!(
        db.psql("SELECT store_id, name, epoch, lines FROM mcpeval.journals ORDER BY 1, 2"),
        before,
        "nothing uploaded"
    );
    // The original goes on as before.
    ok(&a, Some(&db), "mcpeval-index", &[]);

    // The way out: the copy gets an id of its own and keeps only its own
    // journal, which has the name of one of the original's.
    for name in ["store-id", "upload-token"] {
        fs::remove_file(b.home().join(name)).unwrap();
    }
    for path in b.journals() {
        fs::remove_file(path).unwrap();
    }
    let name = seed[0].file_name().unwrap();
    fs::copy(&seed[5], b.home().join("journals").join(name)).unwrap();
    ok(&b, Some(&db), "mcpeval-index", &[]);
    ok(&b, Some(&db), "mcpeval-promote", &["--now", NOW]);
    assert_ne!(store_id(&a), store_id(&b));

    // The team's findings are those of one store holding every journal.
    let salt = a.home().join(".salt");
    let mut every: Vec<PathBuf> = seed[..4].to_vec();
    every.push(seed[5].clone());
    let single = store_with(Some(&salt), &every);
    ok(&single, None, "mcpeval-index", &[]);
    ok(&single, None, "mcpeval-promote", &["--now", NOW]);
    assert_eq!(findings(&a, Some(&db)), findings(&single, None));
    let lines: usize = every
        .iter()
        .map(|p| fs::read_to_string(p).unwrap().lines().count())
        .sum();
    assert_eq!(
        db.psql("SELECT count(*) FROM mcpeval.calls").trim(),
        lines.to_string()
    );
}
