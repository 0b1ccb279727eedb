//! `mcpeval-index` on journals written by the tests: incremental refresh,
//! every reason for a full rebuild, rejection that leaves index.db byte for
//! byte as it was, failure windows against hand-computed values, and the
//! index under concurrent writers and SIGKILL.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use predicates::str::{contains, starts_with};
use rusqlite::Connection;

use crate::records::{self, Rec, append, journal, journal_name, lines, write};
use crate::support::{Store, text};

/// Runs `mcpeval-index ARGS` in `store`.
pub fn index(store: &Store, args: &[&str]) -> Output {
    store.cmd("mcpeval-index").args(args).output().unwrap()
}

/// The one summary line of a successful run, its seconds replaced by `S`.
pub fn summary(out: &Output) -> String {
    let err = text(&out.stderr);
    assert!(out.status.success(), "status {:?}: {err}", out.status);
    let line = err
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("no line: {err:?}"));
    assert!(!line.contains('\n'), "more than one line: {err}");
    let (head, rest) = line.split_once(" in ").unwrap();
    let (seconds, tail) = rest.split_once(" s").unwrap();
    assert!(
        seconds.parse::<f64>().is_ok() && seconds.split_once('.').unwrap().1.len() == 2,
        "{line}"
    );
    format!("{head} in S s{tail}")
}

/// Indexes and returns the summary.
pub fn indexed(store: &Store) -> String {
    summary(&index(store, &[]))
}

pub fn db(store: &Store) -> Connection {
    Connection::open(store.home().join("index.db")).unwrap()
}

pub fn number(store: &Store, sql: &str) -> i64 {
    db(store).query_row(sql, [], |r| r.get(0)).unwrap()
}

fn calls(n: u64, session: u64) -> Vec<Rec> {
    (1..=n)
        .map(|i| Rec::ok(session * 1000 + i, session, i, "get_forecast"))
        .collect()
}

#[test]
fn appending_to_the_last_journal_reads_only_the_new_lines() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(3, 1)));
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (3 new) from 1 journals in S s; full rebuild: no previous index"
    );
    append(&store, 1, &lines(&calls(5, 1)[3..]));
    assert_eq!(
        indexed(&store),
        "indexed 5 calls (2 new) from 1 journals in S s"
    );
    write(&store, 2, &lines(&calls(2, 2)));
    assert_eq!(
        indexed(&store),
        "indexed 7 calls (2 new) from 2 journals in S s"
    );
    assert_eq!(
        indexed(&store),
        "indexed 7 calls (0 new) from 2 journals in S s"
    );
    // Appended lines keep their line numbers in the file.
    let placed: Vec<(String, i64, i64)> = db(&store)
        .prepare("SELECT j.name, c.line, c.seq FROM calls c JOIN journals j ON j.id = c.journal_id ORDER BY c.id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want: Vec<(String, i64, i64)> = (1..=5)
        .map(|i| (journal_name(1), i, i))
        .chain((1..=2).map(|i| (journal_name(2), i, i)))
        .collect();
    assert_eq!(placed, want);
    let mode = fs::metadata(store.home().join("index.db"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_changed_byte_in_an_indexed_region_rebuilds() {
    let store = Store::new();
    let path = write(&store, 1, &lines(&calls(3, 1)));
    write(&store, 2, &lines(&calls(1, 2)));
    indexed(&store);
    // get_forecast -> get_forecasT in the second record: still valid.
    let mut bytes = fs::read(&path).unwrap();
    let second = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let at = second + text(&bytes[second..]).find("get_forecast").unwrap() + 11;
    bytes[at] = b'T';
    fs::write(&path, bytes).unwrap();
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 4 calls (0 new) from 2 journals in S s; full rebuild: bytes changed in {}",
            journal_name(1)
        )
    );
    assert_eq!(
        number(
            &store,
            "SELECT count(*) FROM calls WHERE tool = 'get_forecasT'"
        ),
        1
    );
}

#[test]
fn a_changed_byte_in_an_earlier_journal_beside_an_append_rebuilds() {
    // The new lines of the last journal are read while the earlier one is
    // hashed: its changed byte must still rebuild, with its reason.
    let store = Store::new();
    let path = write(&store, 1, &lines(&calls(3, 1)));
    write(&store, 2, &lines(&calls(1, 2)));
    indexed(&store);
    let mut bytes = fs::read(&path).unwrap();
    let at = text(&bytes).find("get_forecast").unwrap() + 11;
    bytes[at] = b'T';
    fs::write(&path, bytes).unwrap();
    append(&store, 2, &lines(&calls(2, 3)));
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 6 calls (2 new) from 2 journals in S s; full rebuild: bytes changed in {}",
            journal_name(1)
        )
    );
    assert_eq!(
        number(
            &store,
            "SELECT count(*) FROM calls WHERE tool = 'get_forecasT'"
        ),
        1
    );
    assert_eq!(
        indexed(&store),
        "indexed 6 calls (0 new) from 2 journals in S s"
    );
}

#[test]
fn a_changed_prefix_of_a_grown_last_journal_rebuilds() {
    let store = Store::new();
    let path = write(&store, 1, &lines(&calls(3, 1)));
    indexed(&store);
    // Changes the `nth` remaining get_forecast of the journal to
    // get_forecasT (still a valid record).
    let flip = |nth: usize| {
        let mut bytes = fs::read(&path).unwrap();
        let at = text(&bytes)
            .match_indices("get_forecast")
            .nth(nth)
            .unwrap()
            .0
            + 11;
        bytes[at] = b'T';
        fs::write(&path, bytes).unwrap();
    };
    let rebuilt = |calls: u64| {
        format!(
            "indexed {calls} calls (0 new) from 1 journals in S s; full rebuild: bytes changed in {}",
            journal_name(1)
        )
    };
    // Grown by an unfinished line only: no new call, yet the prefix counts.
    flip(1);
    let next = Rec::ok(1004, 1, 4, "get_forecast").line();
    append(&store, 1, &next[..10]);
    assert_eq!(indexed(&store), rebuilt(3));
    // Grown by a new call (the third record changes now).
    flip(1);
    append(&store, 1, &next[10..]);
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 4 calls (1 new) from 1 journals in S s; full rebuild: bytes changed in {}",
            journal_name(1)
        )
    );
    assert_eq!(
        number(
            &store,
            "SELECT count(*) FROM calls WHERE tool = 'get_forecasT'"
        ),
        2
    );
    let recorded: Vec<u8> = db(&store)
        .query_row("SELECT sha256 FROM journals", [], |r| r.get(0))
        .unwrap();
    assert_eq!(recorded, store::hash::sha256(&fs::read(&path).unwrap()));
}

#[test]
fn a_last_journal_replaced_by_longer_lines_rebuilds_rather_than_rejects() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(1, 1)));
    indexed(&store);
    // The old checkpoint now falls inside the first line: what follows it
    // is no record, yet nothing is wrong with the journal.
    let longer: Vec<Rec> = (1..=2)
        .map(|i| Rec::ok(2000 + i, 2, i, "get_forecast_for_the_whole_week"))
        .collect();
    write(&store, 1, &lines(&longer));
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 2 calls (2 new) from 1 journals in S s; full rebuild: bytes changed in {}",
            journal_name(1)
        )
    );
}

#[test]
fn a_truncated_journal_rebuilds() {
    let store = Store::new();
    let text = lines(&calls(3, 1));
    let path = write(&store, 1, &text);
    indexed(&store);
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    fs::write(&path, &text[..cut]).unwrap();
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 2 calls (0 new) from 1 journals in S s; full rebuild: {} truncated",
            journal_name(1)
        )
    );
}

#[test]
fn a_removed_journal_rebuilds() {
    let store = Store::new();
    let first = write(&store, 1, &lines(&calls(2, 1)));
    write(&store, 2, &lines(&calls(3, 2)));
    indexed(&store);
    fs::remove_file(first).unwrap();
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 3 calls (0 new) from 1 journals in S s; full rebuild: {} removed",
            journal_name(1)
        )
    );
}

#[test]
fn a_journal_sorting_before_indexed_ones_rebuilds() {
    let store = Store::new();
    write(&store, 2, &lines(&calls(2, 2)));
    write(&store, 4, &lines(&calls(2, 4)));
    indexed(&store);
    write(&store, 3, &lines(&calls(1, 3)));
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 5 calls (1 new) from 3 journals in S s; full rebuild: {} sorts before indexed files",
            journal_name(3)
        )
    );
    write(&store, 1, &lines(&calls(1, 1)));
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 6 calls (1 new) from 4 journals in S s; full rebuild: {} sorts before indexed files",
            journal_name(1)
        )
    );
}

#[test]
fn an_append_to_an_earlier_journal_rebuilds() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(2, 1)));
    write(&store, 2, &lines(&calls(2, 2)));
    indexed(&store);
    append(&store, 1, &lines(&calls(3, 1)[2..]));
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 5 calls (1 new) from 2 journals in S s; full rebuild: {} grew after later journals were indexed",
            journal_name(1)
        )
    );
}

#[test]
fn identical_replacement_bytes_reuse_the_index() {
    let store = Store::new();
    let path = write(&store, 1, &lines(&calls(3, 1)));
    indexed(&store);
    let before = fs::metadata(&path).unwrap();
    // A new file (new inode) with the same bytes and a later time stamp.
    let copy = path.with_extension("tmp");
    fs::copy(&path, &copy).unwrap();
    fs::rename(&copy, &path).unwrap();
    let later = SystemTime::now() + Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let after = fs::metadata(&path).unwrap();
    assert_ne!(
        std::os::unix::fs::MetadataExt::ino(&before),
        std::os::unix::fs::MetadataExt::ino(&after)
    );
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 1 journals in S s"
    );
}

#[test]
fn an_unfinished_last_line_waits_for_its_newline() {
    let store = Store::new();
    let third = Rec::ok(3, 1, 3, "get_forecast").line();
    let (head, tail) = third.split_at(40);
    write(&store, 1, &(lines(&calls(2, 1)) + head));
    assert_eq!(
        indexed(&store),
        "indexed 2 calls (2 new) from 1 journals in S s; full rebuild: no previous index"
    );
    assert_eq!(
        indexed(&store),
        "indexed 2 calls (0 new) from 1 journals in S s"
    );
    append(&store, 1, tail);
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (1 new) from 1 journals in S s"
    );
    assert_eq!(number(&store, "SELECT max(line) FROM calls"), 3);
}

#[test]
fn an_earlier_journals_unfinished_line_finished_in_place_rebuilds() {
    // Found by the history property: only the last journal is read past its
    // checkpoint, so an earlier journal whose unfinished line became a
    // complete record without growing was never read again, while a
    // rebuild indexed that record.
    let store = Store::new();
    let third = Rec::ok(3, 1, 3, "get_forecast").line();
    let torn = format!("{}x", third.trim_end());
    let path = write(&store, 1, &(lines(&calls(2, 1)) + &torn));
    write(&store, 2, &lines(&calls(1, 2)));
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (3 new) from 2 journals in S s; full rebuild: no previous index"
    );
    // The same size: the stray byte becomes the newline.
    fs::write(&path, lines(&calls(2, 1)) + &third).unwrap();
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 4 calls (1 new) from 2 journals in S s; full rebuild: {} changed after later journals were indexed",
            journal_name(1)
        )
    );

    // Shorter: a long unfinished line replaced by a short complete one.
    let store = Store::new();
    let mut long = Rec::ok(3, 1, 3, "get_forecast");
    long.0["args_shape"] =
        serde_json::json!({"a_long_argument_name_to_outgrow_the_record": "string"});
    let long = long.line();
    let path = write(&store, 1, &(lines(&calls(2, 1)) + long.trim_end()));
    write(&store, 2, &lines(&calls(1, 2)));
    indexed(&store);
    fs::write(&path, lines(&calls(3, 1))).unwrap();
    assert!(
        fs::metadata(&path).unwrap().len() < (lines(&calls(2, 1)).len() + long.len() - 1) as u64
    );
    assert_eq!(
        indexed(&store),
        format!(
            "indexed 4 calls (1 new) from 2 journals in S s; full rebuild: {} changed after later journals were indexed",
            journal_name(1)
        )
    );
    // An unfinished line that stays unfinished costs no rebuild.
    let store = Store::new();
    let path = write(&store, 1, &(lines(&calls(2, 1)) + &torn));
    write(&store, 2, &lines(&calls(1, 2)));
    indexed(&store);
    fs::write(
        &path,
        lines(&calls(2, 1)) + &torn.replace("get_forecast", "get_forecasT"),
    )
    .unwrap();
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 2 journals in S s"
    );
}

/// index.db's bytes and what a reader sees in it.
fn snapshot(store: &Store) -> (Vec<u8>, Vec<(String, i64)>) {
    let bytes = fs::read(store.home().join("index.db")).unwrap();
    let rows = db(store)
        .prepare("SELECT coalesce(event_id, ''), line FROM calls ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (bytes, rows)
}

#[test]
fn a_bad_line_rejects_the_whole_run_and_changes_nothing() {
    let good = Rec::ok(900, 9, 1, "get_forecast").line();
    let oversized = {
        let mut rec = Rec::ok(901, 9, 2, "get_forecast");
        rec.0["args_shape"] = serde_json::json!({"k": "x".repeat(70_000)});
        rec.line()
    };
    let unknown_field = Rec::ok(902, 9, 2, "get_forecast").line().replacen(
        "\"origin\"",
        "\"colour\":\"red\",\"origin\"",
        1,
    );
    let colour_ends = unknown_field.find("\"colour\"").unwrap() + "\"colour\"".len();
    let mismatched = Rec::ok(903, 9, 2, "get_forecast")
        .line()
        .replace("\"outcome\":\"ok\"", "\"outcome\":\"error\"");
    let cases = [
        ("{\"schema\":\"mcpeval.call/1\",\n".to_owned(), "not valid JSON: EOF while parsing a value (column 27)".to_owned()),
        ("\n".to_owned(), "blank line: every line must be one record".to_owned()),
        (
            oversized.clone(),
            format!("oversized record: the line is {} bytes, over the limit of 65536", oversized.len() - 1),
        ),
        (
            unknown_field.clone(),
            format!(
                "invalid mcpeval.call/1 record: unknown field `colour`, expected one of `schema`, `identity`, \
                 `origin`, `transport`, `server`, `tool`, `started_at`, `duration_ms`, `advertised`, \
                 `args_shape`, `outcome`, `unknown`, `error`, `contract` (column {colour_ends})"
            ),
        ),
        (
            mismatched,
            "invalid mcpeval.call/1 record: outcome Error does not match the presence of \"error\" and \"unknown\"".to_owned(),
        ),
        ("{\"schema\":\"mcpeval.call/2\"}\n".to_owned(), "unknown schema \"mcpeval.call/2\"; expected \"mcpeval.call/1\" or \"mcpeval.call/0\"".to_owned()),
    ];
    for (bad, reason) in cases {
        let store = Store::new();
        let path = write(&store, 1, &lines(&calls(3, 1)));
        indexed(&store);
        let before = snapshot(&store);
        // One good line, the bad one (line 5), and another good one.
        append(
            &store,
            1,
            &format!("{good}{bad}{}", Rec::ok(904, 9, 3, "get_forecast").line()),
        );
        store.bin("mcpeval-index").assert().code(4).stdout("").stderr(format!(
            "mcpeval-index: error: {}:5: {reason}\n  hint: index.db was left unchanged; repair that line \
             (or move the journal out of journals/), then run `mcpeval index` again\n",
            path.display()
        ));
        assert!(
            before == snapshot(&store),
            "index.db changed after rejecting {reason}"
        );
    }
}

#[test]
fn a_rejected_rebuild_keeps_the_previous_index_and_its_checkpoints() {
    let store = Store::new();
    let original = lines(&calls(3, 1));
    let path = write(&store, 1, &original);
    indexed(&store);
    let before = snapshot(&store);
    // Damage the first record: the bytes changed, so the run rebuilds, and
    // the rebuild meets the bad line.
    fs::write(&path, original.replacen("{", "[", 1)).unwrap();
    for _ in 0..2 {
        store
            .bin("mcpeval-index")
            .assert()
            .code(4)
            .stderr(contains(format!("{}:1: not valid JSON", path.display())));
        assert!(before == snapshot(&store), "index.db changed");
    }
    // Restored bytes match the kept checkpoint: no rebuild is needed.
    fs::write(&path, &original).unwrap();
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 1 journals in S s"
    );
}

#[test]
fn a_rejected_run_does_not_even_checkpoint_an_earlier_runs_wal() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(3, 1)));
    indexed(&store);
    // Leave committed frames in the WAL, as a run killed after its commit
    // would: closing this connection must not checkpoint them.
    let conn = db(&store);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    conn.execute("UPDATE state SET indexed_at = 'earlier'", [])
        .unwrap();
    drop(conn);
    let wal = store.home().join("index.db-wal");
    assert!(fs::metadata(&wal).unwrap().len() > 0);
    let main = fs::read(store.home().join("index.db")).unwrap();
    append(&store, 1, "{}\n");
    assert_eq!(index(&store, &[]).status.code(), Some(4));
    assert!(
        main == fs::read(store.home().join("index.db")).unwrap(),
        "index.db changed"
    );
    assert_eq!(
        db(&store)
            .query_row("SELECT indexed_at FROM state", [], |r| r
                .get::<_, String>(0))
            .unwrap(),
        "earlier"
    );
}

/// Two versions of one journal of the same length: 2,000 calls to tool
/// `alpha`, or the same calls to `beta_`.
fn two_versions() -> (String, String) {
    let version = |tool: &str| {
        lines(
            &(1..=2000)
                .map(|i| Rec::ok(i, 1, i, tool))
                .collect::<Vec<_>>(),
        )
    };
    let (alpha, beta) = (version("alpha"), version("beta_"));
    assert_eq!(alpha.len(), beta.len());
    (alpha, beta)
}

/// Writes the versions over the start of `path` in turn, one every
/// millisecond, until `stop` is set.
fn rewrite_in_turn(path: &Path, versions: [&str; 2], stop: &AtomicBool) {
    use std::os::unix::fs::FileExt;
    let file = fs::File::options().write(true).open(path).unwrap();
    for turn in 0.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        file.write_all_at(versions[turn % 2].as_bytes(), 0).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sets its flag when dropped, so a rewriting thread stops however the
/// test's own thread leaves its scope, a failed assertion included.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_journal_rewritten_during_runs_is_never_committed_as_a_mix() {
    let store = Store::new();
    let (alpha, beta) = two_versions();
    let path = write(&store, 1, &alpha);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| rewrite_in_turn(&path, [&beta, &alpha], &stop));
        let _stop = Stop(&stop);
        let mut gave_up = 0;
        for _ in 0..12 {
            let out = index(&store, &[]);
            match out.status.code() {
                Some(0) => {}
                Some(3) => gave_up += 1,
                other => panic!("status {other:?}: {}", text(&out.stderr)),
            }
            if out.status.code() == Some(3) {
                assert_eq!(
                    text(&out.stderr),
                    format!(
                        "mcpeval-index: error: {} changed while it was being indexed, 3 times in a row; \
                         index.db was left unchanged\n  hint: run `mcpeval index` again once the program \
                         rewriting it has stopped, or index a stable copy\n",
                        path.display()
                    )
                );
            }
            if store.home().join("index.db").exists() {
                let tools = number(&store, "SELECT count(DISTINCT tool) FROM calls");
                assert!(tools <= 1, "a mix of two versions was committed");
            }
        }
        eprintln!("{gave_up} of 12 runs gave up on the changing journal");
    });
    // Once the writer stops, the index settles on the file's bytes.
    let settled = indexed(&store);
    assert!(settled.starts_with("indexed 2000 calls ("), "{settled}");
    assert_eq!(number(&store, "SELECT count(DISTINCT tool) FROM calls"), 1);
}

#[test]
fn a_grown_journal_rewritten_during_runs_is_never_committed_as_a_mix() {
    let store = Store::new();
    let (alpha, beta) = two_versions();
    let path = write(&store, 1, &alpha);
    indexed(&store);
    let mut appended = String::new();
    // The checkpoint must hash exactly the bytes whose calls are indexed:
    // the prefix version the calls come from, then the appended lines.
    let consistent = |appended: &str| {
        let (tools, length, sha256): (String, usize, Vec<u8>) = db(&store)
            .query_row(
                "SELECT (SELECT group_concat(DISTINCT tool) FROM calls WHERE line <= 2000), \
                 length, sha256 FROM journals",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        let prefix = match tools.as_str() {
            "alpha" => &alpha,
            "beta_" => &beta,
            _ => panic!("a mix of two versions was committed: {tools}"),
        };
        let bytes = format!("{prefix}{}", &appended[..length - prefix.len()]);
        assert_eq!(
            sha256,
            store::hash::sha256(bytes.as_bytes()),
            "calls of one version were committed with the checkpoint of another"
        );
        tools
    };
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| rewrite_in_turn(&path, [&beta, &alpha], &stop));
        let _stop = Stop(&stop);
        for round in 0..12u64 {
            let more = lines(
                &(1..=50)
                    .map(|i| {
                        let seq = 2000 + round * 50 + i;
                        Rec::ok(seq, 1, seq, "gamma")
                    })
                    .collect::<Vec<_>>(),
            );
            records::append_to(&path, &more);
            appended.push_str(&more);
            let out = index(&store, &[]);
            match out.status.code() {
                Some(0 | 3) => {}
                other => panic!("status {other:?}: {}", text(&out.stderr)),
            }
            consistent(&appended);
        }
    });
    // Once the writer stops, the index settles on the file's bytes.
    let settled = indexed(&store);
    assert!(settled.starts_with("indexed 2600 calls ("), "{settled}");
    let tools = consistent(&appended);
    assert!(
        fs::read_to_string(&path)
            .unwrap()
            .starts_with(if tools == "alpha" { &alpha } else { &beta })
    );
}

#[test]
fn a_rejected_first_run_leaves_no_index() {
    let store = Store::new();
    write(&store, 1, &format!("{}not json\n", lines(&calls(2, 1))));
    store
        .bin("mcpeval-index")
        .assert()
        .code(4)
        .stderr(contains(format!("{}:3: not valid JSON", journal_name(1))));
    // The first index is built aside: nothing of it is left.
    let left: Vec<_> = fs::read_dir(store.home())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("index.db"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_killed_first_run_leaves_nothing_in_the_way() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(3, 1)));
    // What a first run killed while building index.db aside leaves.
    crate::support::private_dir(&store.home());
    fs::write(store.home().join("index.db.new"), b"half a database").unwrap();
    fs::write(store.home().join("index.db.new-wal"), b"half a log").unwrap();
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (3 new) from 1 journals in S s; full rebuild: no previous index"
    );
    assert_eq!(number(&store, "SELECT count(*) FROM calls"), 3);
    // Left by a run killed after the first one: the next run removes it.
    fs::write(store.home().join("index.db.new"), b"half a database").unwrap();
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 1 journals in S s"
    );
    assert!(!store.home().join("index.db.new").exists());
    assert!(!store.home().join("index.db.new-wal").exists());
}

#[test]
fn a_run_waits_for_the_first_index_another_run_builds() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(20, 1)));
    // As another first run holds the file it builds index.db in.
    let held = store::lock::LockFile::try_exclusive(&store.home().join("index.db.new"))
        .unwrap()
        .expect("no one builds yet");
    let run = store
        .cmd("mcpeval-index")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    // Created in place now, index.db would have its WAL cleared by the
    // other run's install.
    assert!(!store.home().join("index.db").exists());
    drop(held);
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(number(&store, "SELECT count(*) FROM calls"), 20);
    assert!(!store.home().join("index.db.new").exists());
}

#[test]
fn concurrent_first_runs_both_succeed() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(2000, 1)));
    let runs: Vec<_> = (0..3)
        .map(|_| {
            store
                .cmd("mcpeval-index")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert_eq!(number(&store, "SELECT count(*) FROM calls"), 2000);
    assert_eq!(number(&store, "SELECT calls FROM state"), 2000);
    assert!(!store.home().join("index.db.new").exists());
}

#[test]
fn a_known_event_id_with_different_content_rejects() {
    // Incremental (row by row) and rebuilt (bulk, resolved after the load).
    for rebuild in [false, true] {
        let store = Store::new();
        let first = write(&store, 1, &lines(&calls(40, 1)));
        if !rebuild {
            indexed(&store);
        }
        let changed = Rec::ok(1002, 1, 2, "get_forecast").server("other");
        let second = write(
            &store,
            2,
            &format!("{}{}", Rec::ok(7, 7, 1, "x").line(), changed.line()),
        );
        let want = format!(
            "mcpeval-index: error: {}:2: event id {} was already indexed from {}:2 with different content\n",
            second.display(),
            records::event(1002),
            journal_name(1)
        );
        store
            .bin("mcpeval-index")
            .assert()
            .code(4)
            .stderr(starts_with(want));
        assert!(first.exists());
    }
}

#[test]
fn an_exact_repeat_of_a_call_is_indexed_once() {
    for rebuild in [false, true] {
        let store = Store::new();
        write(&store, 1, &lines(&calls(3, 1)));
        if !rebuild {
            indexed(&store);
        }
        // A copied journal: every record repeated, plus one new call.
        write(
            &store,
            2,
            &(lines(&calls(3, 1)) + &Rec::ok(5, 5, 1, "x").line()),
        );
        let want = if rebuild {
            "indexed 4 calls (4 new) from 2 journals in S s; full rebuild: no previous index"
        } else {
            "indexed 4 calls (1 new) from 2 journals in S s"
        };
        assert_eq!(indexed(&store), want);
        assert_eq!(
            number(&store, "SELECT count(DISTINCT event_id) FROM calls"),
            4
        );
    }
}

#[test]
fn legacy_records_are_read() {
    let store = Store::new();
    write(
        &store,
        1,
        &(records::legacy(1, 1, "files", "read", "error", Some(-32602))
            + &records::legacy(1, 2, "files", "read", "ok", None)),
    );
    assert_eq!(
        indexed(&store),
        "indexed 2 calls (2 new) from 1 journals in S s; full rebuild: no previous index"
    );
    let row: (i64, Option<String>, String, Option<String>, i64, String, String) = db(&store)
        .query_row(
            "SELECT schema, event_id, origin, transport, code, started_at, args_shape FROM calls WHERE seq = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            0,
            None,
            "capture".into(),
            None,
            -32602,
            "2026-11-30T07:00:00.000Z".into(),
            "{\"q\":\"string\"}".into()
        )
    );
    assert_eq!(number(&store, "SELECT turns FROM windows"), 1);
}

type WindowRow = (i64, String, Option<String>, i64, i64, bool, i64, i64);

fn windows(store: &Store) -> Vec<WindowRow> {
    db(store)
        .prepare(
            "SELECT CAST(substr(session, 3) AS INTEGER), tool, template_id, open_seq, close_seq, recovered,
                    turns, failures FROM windows ORDER BY session, open_seq, tool",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn blast(store: &Store) -> Vec<(String, Option<String>, i64, i64)> {
    db(store)
        .prepare("SELECT tool, template_id, windows, blast_radius FROM group_blast ORDER BY tool")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn failure_windows_turns_and_blast_radius_match_hand_computed_values() {
    let store = Store::new();
    let t = |n| Some(records::template(n));
    // Session 1:
    //  1 search error t1   opens A
    //  2 fetch  error t2   opens B; A sees fetch fail
    //  3 search error t1   extends A; A and B see search fail
    //  4 fetch  ok         closes B: turns 4-2 = 2, tools {fetch, search}
    //  5 lookup error t3   opens C; A sees lookup fail
    //  6 search ok         closes A: turns 6-1 = 5, 2 failures, tools {search, fetch, lookup}
    //  7 lookup unanswered neither fails nor recovers
    //  8 other  ok
    //  end: C unrecovered: turns 8-5+1 = 4
    // Session 2: search error t1, then search ok: turns 1.
    let session1 = [
        Rec::error(1, 1, 1, "search", Some(1)),
        Rec::error(2, 1, 2, "fetch", Some(2)),
        Rec::error(3, 1, 3, "search", Some(1)),
        Rec::ok(4, 1, 4, "fetch"),
        Rec::error(5, 1, 5, "lookup", Some(3)),
        Rec::ok(6, 1, 6, "search"),
        Rec::unanswered(7, 1, 7, "lookup"),
        Rec::ok(8, 1, 8, "other"),
    ];
    // Session 2 is split across two journals, and its records arrive out of
    // seq order, as two rotated files of one capture never would: windows
    // follow seq, not file order.
    write(
        &store,
        1,
        &(lines(&session1[..5]) + &Rec::ok(22, 2, 2, "search").line()),
    );
    write(
        &store,
        2,
        &(lines(&session1[5..]) + &Rec::error(21, 2, 1, "search", Some(1)).line()),
    );
    indexed(&store);
    let want: Vec<WindowRow> = vec![
        (1, "search".into(), t(1), 1, 6, true, 5, 2),
        (1, "fetch".into(), t(2), 2, 4, true, 2, 1),
        (1, "lookup".into(), t(3), 5, 8, false, 4, 1),
        (2, "search".into(), t(1), 1, 2, true, 1, 1),
    ];
    assert_eq!(windows(&store), want);
    let tools: Vec<String> = db(&store)
        .prepare(
            "SELECT (SELECT group_concat(tool, ',') FROM (SELECT tool FROM window_tools
                     WHERE window_id = w.id ORDER BY tool))
             FROM windows w ORDER BY session, open_seq",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        tools,
        ["fetch,lookup,search", "fetch,search", "lookup", "search"]
    );
    assert_eq!(
        blast(&store),
        vec![
            ("fetch".into(), t(2), 1, 2),
            ("lookup".into(), t(3), 1, 1),
            ("search".into(), t(1), 2, 3),
        ]
    );
    // A later call to session 1 recovers C: only that session is redone.
    append(&store, 2, &Rec::ok(9, 1, 9, "lookup").line());
    assert_eq!(
        indexed(&store),
        "indexed 11 calls (1 new) from 2 journals in S s"
    );
    let redone = windows(&store);
    assert_eq!(redone[2], (1, "lookup".into(), t(3), 5, 9, true, 4, 1));
    assert_eq!(redone.len(), 4);
}

/// A window: session, server, tool, template, open and close seq,
/// recovered, turns, failures and its tools joined by commas.
type WindowWithTools = (
    String,
    String,
    String,
    Option<String>,
    i64,
    i64,
    bool,
    i64,
    i64,
    String,
);

/// Every window with its tools, in a stable order.
fn windows_with_tools(store: &Store) -> Vec<WindowWithTools> {
    db(store)
        .prepare(
            "SELECT session, server, tool, template_id, open_seq, close_seq, recovered, turns, failures,
                    (SELECT group_concat(tool, ',') FROM (SELECT tool FROM window_tools
                        WHERE window_id = w.id ORDER BY tool))
             FROM windows w ORDER BY session, server, open_seq, tool, template_id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn windows_derived_while_reading_match_windows_read_back() {
    // A rebuild derives windows from the calls as it reads them; when it
    // removes an exact repeat it reads them back from index.db instead.
    // Both must give the same windows on an irregular workload: sessions
    // interleaved across journals, seqs out of order, several servers,
    // probe and unanswered calls.
    let mut state = 12345u64;
    let mut next = |below: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % below
    };
    let mut records = Vec::new();
    for n in 0..3000u64 {
        let session = next(40);
        let seq = 1 + next(120);
        let tool = ["a", "b", "c", "d", "e"][next(5) as usize];
        let rec = match next(10) {
            0..=3 => Rec::error(
                n,
                session,
                seq,
                tool,
                [None, Some(1), Some(2)][next(3) as usize],
            ),
            4 => Rec::unanswered(n, session, seq, tool),
            _ => Rec::ok(n, session, seq, tool),
        };
        let rec = rec.server(["weather", "search"][next(2) as usize]);
        records.push(if next(20) == 0 { rec.probe() } else { rec });
    }
    let read = Store::new();
    let repeated = Store::new();
    for (i, part) in records.chunks(1000).enumerate() {
        write(&read, i as u32 + 1, &lines(part));
        write(&repeated, i as u32 + 1, &lines(part));
    }
    append(&repeated, 3, &records[0].line());
    indexed(&read);
    indexed(&repeated);
    let derived = windows_with_tools(&read);
    assert!(derived.len() > 300, "{} windows", derived.len());
    assert_eq!(derived, windows_with_tools(&repeated));
    assert_eq!(blast(&read).len(), blast(&repeated).len());
}

#[test]
fn probe_calls_never_open_extend_or_close_a_window() {
    let store = Store::new();
    write(
        &store,
        1,
        &lines(&[
            Rec::error(1, 1, 1, "search", Some(1)),
            Rec::ok(2, 1, 2, "search").probe(),
            Rec::error(3, 1, 3, "fetch", Some(2)).probe(),
            Rec::ok(4, 1, 4, "search"),
            Rec::error(5, 2, 1, "search", Some(1)).probe(),
        ]),
    );
    indexed(&store);
    assert_eq!(
        windows(&store),
        vec![(
            1,
            "search".into(),
            Some(records::template(1)),
            1,
            4,
            true,
            3,
            1
        )]
    );
    assert_eq!(
        blast(&store),
        vec![("search".into(), Some(records::template(1)), 1, 1)]
    );
}

#[test]
fn an_empty_store_indexes_to_an_empty_complete_index() {
    let store = Store::new();
    assert_eq!(
        indexed(&store),
        "indexed 0 calls (0 new) from 0 journals in S s; full rebuild: no previous index"
    );
    assert_eq!(
        indexed(&store),
        "indexed 0 calls (0 new) from 0 journals in S s"
    );
    assert_eq!(number(&store, "SELECT count(*) FROM state"), 1);
}

#[test]
fn json_format_reports_the_same_facts_on_stdout() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(2, 1)));
    let out = index(&store, &["--format", "json"]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["seconds"].as_f64().unwrap() >= 0.0);
    let mut v = v;
    v["seconds"] = serde_json::json!(0);
    assert_eq!(
        v,
        serde_json::json!({"calls": 2, "new": 2, "journals": 1, "seconds": 0, "rebuild": "no previous index"})
    );
    let again: serde_json::Value =
        serde_json::from_slice(&index(&store, &["--format", "json"]).stdout).unwrap();
    assert_eq!(
        (again["new"].as_i64(), again["rebuild"].is_null()),
        (Some(0), true)
    );
}

#[test]
fn a_corrupt_or_foreign_index_db_is_reported_and_rebuild_recreates_it() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(3, 1)));
    indexed(&store);
    let path = store.home().join("index.db");
    fs::write(&path, vec![7u8; 8192]).unwrap();
    store
        .bin("mcpeval-index")
        .assert()
        .code(3)
        .stderr(starts_with(format!("mcpeval-index: error: {}", path.display())))
        .stderr(contains(
            "hint: index.db is derived from the journals: `mcpeval index --rebuild` deletes and recreates it",
        ));
    assert_eq!(
        summary(&index(&store, &["--rebuild"])),
        "indexed 3 calls (3 new) from 1 journals in S s; full rebuild: --rebuild"
    );
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 1 journals in S s"
    );

    fs::remove_file(&path).unwrap();
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE other(x);")
        .unwrap();
    store
        .bin("mcpeval-index")
        .assert()
        .code(3)
        .stderr(contains("is not an mcpeval index.db"));
    assert_eq!(
        summary(&index(&store, &["--rebuild"])),
        "indexed 3 calls (3 new) from 1 journals in S s; full rebuild: --rebuild"
    );
    // A healthy index is rebuilt in place and knows its calls.
    assert_eq!(
        summary(&index(&store, &["--rebuild"])),
        "indexed 3 calls (0 new) from 1 journals in S s; full rebuild: --rebuild"
    );
}

/// `PRAGMA quick_check`'s first answer on the file at `path`.
fn quick_check(path: &Path) -> String {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .unwrap()
}

/// Where page `page` (numbered from 1) of a database file starts.
fn page_at(bytes: &[u8], page: usize) -> usize {
    let size = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    (page - 1) * size
}

/// A varint of SQLite's record format at `at`: its value and length.
fn varint(bytes: &[u8], at: usize) -> (u64, usize) {
    let mut value = 0u64;
    for (i, &b) in bytes[at..at + 8].iter().enumerate() {
        value = (value << 7) | u64::from(b & 0x7f);
        if b < 0x80 {
            return (value, i + 1);
        }
    }
    ((value << 8) | u64::from(bytes[at + 8]), 9)
}

#[test]
fn a_rebuild_recreates_an_index_db_that_opens_but_has_damaged_pages() {
    let store = Store::new();
    write(&store, 1, &lines(&calls(2000, 1)));
    indexed(&store);
    let path = store.home().join("index.db");
    let root = number(
        &store,
        "SELECT rootpage FROM sqlite_master WHERE name = 'calls'",
    ) as usize;
    let pristine = fs::read(&path).unwrap();
    let rebuilt = |store: &Store| {
        assert_eq!(
            summary(&index(store, &["--rebuild"])),
            "indexed 2000 calls (2000 new) from 1 journals in S s; full rebuild: --rebuild"
        );
        assert_eq!(quick_check(&path), "ok");
        assert_eq!(
            indexed(store),
            "indexed 2000 calls (0 new) from 1 journals in S s"
        );
    };

    // A row id out of order in a leaf of `calls`: nothing the rebuild
    // reads notices, only the structural check does.
    let mut bytes = pristine.clone();
    assert_eq!(bytes[page_at(&bytes, root)], 0x05, "an interior page");
    let pointers = page_at(&bytes, root) + 12;
    let first_cell = usize::from(u16::from_be_bytes([bytes[pointers], bytes[pointers + 1]]));
    let at = page_at(&bytes, root) + first_cell;
    let leaf = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let leaf = page_at(&bytes, leaf);
    assert_eq!(bytes[leaf], 0x0d, "a table leaf");
    let cell = leaf + usize::from(u16::from_be_bytes([bytes[leaf + 8], bytes[leaf + 9]]));
    let (_, payload) = varint(&bytes, cell);
    let (rowid, len) = varint(&bytes, cell + payload);
    assert_eq!(len, 1, "row id {rowid} in one byte");
    bytes[cell + payload] = 0x7f;
    fs::write(&path, &bytes).unwrap();
    assert_ne!(quick_check(&path), "ok");
    rebuilt(&store);

    // A leaf of `calls` that is garbage: reading it fails, and the check
    // says why.
    let mut bytes = pristine;
    let at = page_at(&bytes, root);
    let child = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let leaf = page_at(&bytes, child);
    bytes[leaf..leaf + 64].fill(0xee);
    fs::write(&path, &bytes).unwrap();
    assert_ne!(quick_check(&path), "ok");
    rebuilt(&store);
}

/// A deterministic pseudo-random sequence (the seed is printed on failure).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

fn seed() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn writers_appending_during_indexing_never_get_a_torn_record_committed() {
    let store = Store::new();
    let lock = store.home().join("journals/.lock");
    journal(&store, 0);
    const PER_WRITER: u64 = 300;
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writers: Vec<_> = (1..=2u32)
            .map(|w| {
                let path = journal(&store, w);
                let lock = store::lock::LockFile::open(&lock).unwrap();
                scope.spawn(move || {
                    for seq in 1..=PER_WRITER {
                        let mut rec =
                            Rec::ok(u64::from(w) * 100_000 + seq, u64::from(w), seq, "search");
                        if seq % 7 == 0 {
                            // Lines spanning many pages make a torn read likely.
                            let keys: serde_json::Map<_, _> = (0..1500)
                                .map(|k| (format!("key{k:05}"), "string".into()))
                                .collect();
                            rec.0["args_shape"] = keys.into();
                        }
                        let guard = lock.shared().unwrap();
                        records::append_to(&path, &rec.line());
                        drop(guard);
                        std::thread::sleep(Duration::from_micros(500));
                    }
                })
            })
            .collect();
        let checker = scope.spawn(|| {
            let mut runs = 0;
            while !done.load(Ordering::SeqCst) || runs < 3 {
                let out = index(&store, &[]);
                assert!(out.status.success(), "run {runs}: {}", text(&out.stderr));
                // Every committed call is exactly one of the written ones.
                let wrong = number(
                    &store,
                    "SELECT count(*) FROM calls WHERE event_id <> printf('6f1c2a3b-4d5e-4f60-8a7b-%012x', \
                     CAST(substr(session, 3) AS INTEGER) * 100000 + seq)",
                );
                assert_eq!(wrong, 0);
                runs += 1;
            }
            runs
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        assert!(checker.join().unwrap() >= 3);
    });
    let last = indexed(&store);
    assert!(
        last.starts_with(&format!("indexed {} calls (", 2 * PER_WRITER)),
        "{last}"
    );
    assert_eq!(
        number(&store, "SELECT count(*) FROM calls"),
        2 * PER_WRITER as i64
    );
}

fn kill_after(store: &Store, args: &[&str], delay: Duration) -> bool {
    let mut child = store
        .cmd("mcpeval-index")
        .args(args)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    child.wait().unwrap();
    finished
}

#[test]
fn sigkill_during_a_large_refresh_never_damages_the_index() {
    let store = Store::new();
    let seed = seed();
    let mut rng = Lcg(seed);
    let mut total = 0u64;
    let mut batch = |store: &Store, journal_no: u32, sessions: std::ops::Range<u64>| {
        let mut text = String::new();
        for s in sessions {
            for seq in 1..=50 {
                let rec = if seq % 5 == 0 {
                    Rec::error(s * 100 + seq, s, seq, "search", Some(seq % 3))
                } else {
                    Rec::ok(s * 100 + seq, s, seq, "search")
                };
                text.push_str(&rec.line());
                total += 1;
            }
        }
        append(store, journal_no, &text);
    };
    batch(&store, 1, 0..2000);
    batch(&store, 2, 2000..4000);
    let mut finished = 0;
    for round in 0..6 {
        let delay = Duration::from_millis(20 + rng.next(1500));
        let args: &[&str] = if round == 3 { &["--rebuild"] } else { &[] };
        if kill_after(&store, args, delay) {
            finished += 1;
        }
        if round % 2 == 1 {
            batch(
                &store,
                2,
                (10_000 + round * 1000)..(10_000 + round * 1000 + 400),
            );
        }
    }
    let out = index(&store, &[]);
    let line = summary(&out);
    assert!(
        line.starts_with(&format!("indexed {total} calls (")),
        "seed {seed}: {line}"
    );
    assert_eq!(
        number(&store, "SELECT count(*) FROM calls") as u64,
        total,
        "seed {seed}"
    );
    let check: String = db(&store)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok", "seed {seed}");
    // Only capture calls of failing sessions open windows: 10 per session.
    assert_eq!(
        number(&store, "SELECT count(*) FROM windows") as u64,
        total / 5,
        "seed {seed}"
    );
    eprintln!("seed {seed}: {finished} of 6 killed runs had already finished");
}

#[test]
fn help_teaches_the_command() {
    let out = Command::new(crate::support::bin("mcpeval-index"))
        .arg("--help")
        .output()
        .unwrap();
    let help = text(&out.stdout);
    for needle in [
        "--rebuild",
        "--format",
        "full rebuild: REASON",
        "Exit status:",
        "mcpeval index --rebuild",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}");
    }
}

/// Every row of `table` in the order of `order`, every column.
fn table(store: &Store, table: &str, order: &str) -> Vec<Vec<rusqlite::types::Value>> {
    let conn = db(store);
    let mut stmt = conn
        .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
        .unwrap();
    let width = stmt.column_count();
    stmt.query_map([], |r| (0..width).map(|i| r.get(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The seeded corpus and four sessions of 60 calls more, failing in
/// windows: some hundreds of rows, for statements of 64 rows and single
/// ones.
fn many_records() -> Vec<Rec> {
    let mut recs = crate::seeded::seeded_records();
    for session in 1..=4 {
        for seq in 1..=60 {
            let event = 50_000 + session * 100 + seq;
            recs.push(match seq % 5 {
                1 | 2 => Rec::error(event, 500 + session, seq, "route", Some(seq % 3)),
                _ => Rec::ok(event, 500 + session, seq, "route"),
            });
        }
    }
    recs
}

#[test]
fn a_rebuild_over_calls_rewrites_what_differs_and_removes_what_is_extra() {
    let store = Store::new();
    records::write(&store, 1, &records::lines(&many_records()));
    indexed(&store);
    let calls = table(&store, "calls", "id");
    let windows = table(&store, "windows", "id");
    let sessions = table(&store, "sessions", "1");
    let n = calls.len();
    assert!(n > 200, "rows both in statements of 64 and one at a time");

    // One column of one row changed for every column but the id, spread
    // over the table; a row gone from the middle; rows past the end.
    let conn = db(&store);
    let columns: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info('calls')")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let changed: Vec<&String> = columns.iter().filter(|c| *c != "id").collect();
    let step = (n - 2) / changed.len();
    for (i, column) in changed.iter().enumerate() {
        let id = 2 + i * step;
        let set = conn
            .execute(
                &format!("UPDATE calls SET {column} = x'00' WHERE id = ?1"),
                [id],
            )
            .unwrap();
        assert_eq!(set, 1, "{column} of call {id}");
    }
    conn.execute("DELETE FROM calls WHERE id = ?1", [n / 2 + 1])
        .unwrap();
    for id in [n + 1, n + 7] {
        conn.execute(
            "INSERT INTO calls(id, journal_id, line, schema, session, seq, origin, server, tool, \
             started_at, args_shape, outcome) VALUES (?1, 1, 1, 1, 's', 1, 'capture', 'x', 'y', \
             'z', '{}', 'ok')",
            [id],
        )
        .unwrap();
    }
    drop(conn);
    assert_ne!(table(&store, "calls", "id"), calls);

    assert_eq!(
        summary(&index(&store, &["--rebuild"])),
        format!("indexed {n} calls (2 new) from 1 journals in S s; full rebuild: --rebuild")
    );
    assert!(
        table(&store, "calls", "id") == calls,
        "calls differ after the rebuild"
    );
    assert!(table(&store, "windows", "id") == windows, "windows differ");
    assert!(
        table(&store, "sessions", "1") == sessions,
        "sessions differ"
    );
    assert_eq!(
        number(
            &store,
            "SELECT count(*) FROM sqlite_master WHERE tbl_name = 'calls' AND type = 'index'"
        ),
        2
    );
    let integrity: String = db(&store)
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    assert_eq!(
        indexed(&store),
        format!("indexed {n} calls (0 new) from 1 journals in S s")
    );
}

#[test]
fn a_rebuild_after_a_line_is_removed_equals_a_fresh_index() {
    // Line 1 removed: the first statement's rows all differ, and the table
    // is emptied. Line 101: the first 100 rows stay, the rest move up by
    // one, and the table is cut where they start to differ.
    for removed in [0, 100] {
        let mut recs = many_records();
        let store = Store::new();
        records::write(&store, 1, &records::lines(&recs));
        indexed(&store);
        recs.remove(removed);
        let shifted = records::lines(&recs);
        records::write(&store, 1, &shifted);
        let fresh = Store::new();
        records::write(&fresh, 1, &shifted);
        indexed(&fresh);
        let summary = indexed(&store);
        assert!(summary.contains("; full rebuild: "), "{summary}");
        for (name, order) in [("calls", "id"), ("windows", "id"), ("sessions", "1")] {
            assert!(
                table(&store, name, order) == table(&fresh, name, order),
                "line {} removed: {name} differ from a fresh index's",
                removed + 1
            );
        }
        let integrity: String = db(&store)
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(integrity, "ok");
    }
}
