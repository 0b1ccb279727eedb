//! `mcpeval-annotate`: annotations are stored durably, bounded, and linked
//! by the next index run only when their target identifies one call.

use rusqlite::Connection;

use crate::index::{db, indexed, number};
use crate::records::{self, Rec, legacy, lines, write};
use crate::support::{Store, text};

/// Annotates and returns (stdout, stderr), asserting success.
fn annotated(store: &Store, args: &[&str]) -> (String, String) {
    let out = store.bin("mcpeval-annotate").args(args).assert().success();
    let out = out.get_output();
    (text(&out.stdout), text(&out.stderr))
}

fn lifecycle_rows(store: &Store) -> i64 {
    let path = store.home().join("lifecycle.db");
    if !path.exists() {
        return 0;
    }
    Connection::open(path)
        .unwrap()
        .query_row("SELECT count(*) FROM annotations", [], |r| r.get(0))
        .unwrap()
}

fn links(store: &Store) -> Vec<(i64, String, String, Option<i64>)> {
    db(store)
        .prepare(
            "SELECT a.annotation_id, a.kind, a.status, c.seq FROM annotation_links a
             LEFT JOIN calls c ON c.id = a.call_id ORDER BY a.annotation_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn an_event_id_links_to_its_call() {
    let store = Store::new();
    write(
        &store,
        1,
        &lines(&[
            Rec::ok(1, 1, 1, "book"),
            Rec::ok(2, 1, 2, "book"),
            Rec::error(3, 1, 3, "book", Some(1)),
        ]),
    );
    indexed(&store);
    let (out, err) = annotated(
        &store,
        &[
            "--event-id",
            &records::event(2).to_uppercase(),
            "--kind",
            "false-success",
            "--note",
            "said booked; nothing was",
        ],
    );
    assert_eq!(out, "1\n");
    assert_eq!(
        err,
        format!(
            "annotation 1 stored and linked to the call weather/book at {}:2; the next `mcpeval index` records the link for promote\n",
            records::journal_name(1)
        )
    );
    // The journals did not change, but the annotations did.
    assert_eq!(
        indexed(&store),
        "indexed 3 calls (0 new) from 1 journals in S s"
    );
    assert_eq!(
        links(&store),
        vec![(1, "false-success".into(), "linked".into(), Some(2))]
    );
    // Annotating the same call again counts once downstream.
    annotated(
        &store,
        &[
            "--event-id",
            &records::event(2),
            "--kind",
            "false-success",
            "--note",
            "again",
        ],
    );
    annotated(
        &store,
        &[
            "--event-id",
            &records::event(2),
            "--kind",
            "slow",
            "--note",
            "and slow",
        ],
    );
    indexed(&store);
    assert_eq!(number(&store, "SELECT count(*) FROM annotation_links"), 3);
    assert_eq!(number(&store, "SELECT count(*) FROM call_annotations"), 2);
    assert_eq!(
        number(&store, "SELECT count(*) FROM false_success_calls"),
        1
    );
    // Notes stay in lifecycle.db.
    assert!(!crate::support::contains(
        &std::fs::read(store.home().join("index.db")).unwrap(),
        "nothing was"
    ));
}

#[test]
fn legacy_coordinates_link_only_when_one_call_has_them() {
    let store = Store::new();
    // Session 1 seq 1 exists on two servers; seq 2 on one only.
    let text = legacy(1, 1, "files", "read", "ok", None)
        + &legacy(1, 1, "mail", "send", "ok", None)
        + &legacy(1, 2, "files", "read", "ok", None);
    write(&store, 1, &text);
    indexed(&store);
    let session = records::session(1);
    let (_, err) = annotated(
        &store,
        &[
            "--session",
            &session,
            "--seq",
            "1",
            "--kind",
            "workaround",
            "--note",
            "retried by hand",
        ],
    );
    assert_eq!(
        err,
        format!(
            "annotation 1 stored unlinked: several indexed calls have session {session} seq 1, and legacy coordinates \
             must identify one call; the next `mcpeval index` resolves it again\n"
        )
    );
    let (_, err) = annotated(
        &store,
        &[
            "--session",
            &session,
            "--seq",
            "2",
            "--kind",
            "other",
            "--note",
            "fine",
        ],
    );
    assert!(
        err.starts_with("annotation 2 stored and linked to the call files/read at "),
        "{err}"
    );
    indexed(&store);
    assert_eq!(
        links(&store),
        vec![
            (1, "workaround".into(), "ambiguous".into(), None),
            (2, "other".into(), "linked".into(), Some(2))
        ]
    );
}

#[test]
fn an_annotation_made_before_its_call_is_indexed_links_later() {
    let store = Store::new();
    let (out, err) = annotated(
        &store,
        &[
            "--event-id",
            &records::event(9),
            "--kind",
            "slow",
            "--note",
            "took a minute",
        ],
    );
    assert_eq!(out, "1\n");
    assert_eq!(
        err,
        "annotation 1 stored unlinked: there is no index yet; the next `mcpeval index` links it\n"
    );
    write(&store, 1, &Rec::ok(8, 1, 1, "get").line());
    indexed(&store);
    assert_eq!(
        links(&store),
        vec![(1, "slow".into(), "unknown".into(), None)]
    );
    let (_, err) = annotated(
        &store,
        &[
            "--event-id",
            &records::event(9),
            "--kind",
            "slow",
            "--note",
            "again",
        ],
    );
    assert_eq!(
        err,
        format!(
            "annotation 2 stored unlinked: no indexed call has event id {}; the next `mcpeval index` links it once that call is indexed\n",
            records::event(9)
        )
    );
    records::append(&store, 1, &Rec::ok(9, 1, 2, "get").line());
    assert_eq!(
        indexed(&store),
        "indexed 2 calls (1 new) from 1 journals in S s"
    );
    assert_eq!(
        links(&store),
        vec![
            (1, "slow".into(), "linked".into(), Some(2)),
            (2, "slow".into(), "linked".into(), Some(2))
        ]
    );
    // A rebuilt index resolves them again, from lifecycle.db.
    std::fs::remove_file(store.home().join("index.db")).unwrap();
    indexed(&store);
    assert_eq!(
        number(
            &store,
            "SELECT count(*) FROM annotation_links WHERE status = 'linked'"
        ),
        2
    );
}

#[test]
fn bad_notes_and_targets_are_usage_errors_and_store_nothing() {
    let store = Store::new();
    let id = records::event(1);
    let long = "é".repeat(241);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--event-id", &id, "--kind", "slow", "--note", &long],
            "mcpeval-annotate: error: --note: the note has 241 characters; the limit is 240; nothing was stored\n",
        ),
        (
            vec!["--event-id", &id, "--kind", "slow", "--note", "line\nbreak"],
            "mcpeval-annotate: error: --note: the note contains the control character U+000A at character 5; \
             use plain text on one line; nothing was stored\n",
        ),
        (
            vec![
                "--event-id",
                &id,
                "--kind",
                "slow",
                "--note",
                "esc\u{1b}[31m",
            ],
            "mcpeval-annotate: error: --note: the note contains the control character U+001B at character 4; \
             use plain text on one line; nothing was stored\n",
        ),
        (
            vec!["--event-id", "nope", "--kind", "slow", "--note", "x"],
            "mcpeval-annotate: error: event id 'nope' is not a UUID; copy identity.event_id from the journal; nothing was stored\n",
        ),
        (
            vec![
                "--session",
                "s-12",
                "--seq",
                "1",
                "--kind",
                "slow",
                "--note",
                "x",
            ],
            "mcpeval-annotate: error: session 's-12' is not \"s-\" followed by 16 lower-case hex digits; copy it from \
             the journal; nothing was stored\n",
        ),
    ];
    for (args, want) in cases {
        store
            .bin("mcpeval-annotate")
            .args(&args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(want);
    }
    // clap's own checks: both target forms, neither, a seq without session, an unknown kind.
    for args in [
        vec![
            "--event-id",
            &id,
            "--session",
            "s-0000000000000001",
            "--seq",
            "1",
            "--kind",
            "slow",
            "--note",
            "x",
        ],
        vec!["--kind", "slow", "--note", "x"],
        vec!["--seq", "1", "--kind", "slow", "--note", "x"],
        vec!["--event-id", &id, "--kind", "great", "--note", "x"],
    ] {
        store.bin("mcpeval-annotate").args(&args).assert().code(2);
    }
    assert_eq!(lifecycle_rows(&store), 0);
    // The limit is in characters: 240 two-byte characters are fine.
    annotated(
        &store,
        &[
            "--event-id",
            &id,
            "--kind",
            "other",
            "--note",
            &"é".repeat(240),
        ],
    );
    assert_eq!(lifecycle_rows(&store), 1);
}

#[test]
fn an_unreadable_index_does_not_lose_the_annotation() {
    let store = Store::new();
    write(&store, 1, &Rec::ok(1, 1, 1, "get").line());
    indexed(&store);
    std::fs::write(store.home().join("index.db"), vec![7u8; 8192]).unwrap();
    let (out, err) = annotated(
        &store,
        &[
            "--event-id",
            &records::event(1),
            "--kind",
            "other",
            "--note",
            "x",
        ],
    );
    assert_eq!(out, "1\n");
    assert!(
        err.starts_with("annotation 1 stored unlinked: the index cannot be read ("),
        "{err}"
    );
    assert!(
        err.ends_with("); the next `mcpeval index` links it\n"),
        "{err}"
    );
    assert_eq!(lifecycle_rows(&store), 1);
}
