//! The team store (SPEC §11) on a PostgreSQL server of the bench's own:
//! uploading a store's calls beside `psql \copy` of the same rows, and
//! promoting over many stores' pooled calls, with what bringing a fresh
//! team view up to date costs.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::measure::{self, Run, median};
use crate::postgres::Server;
use crate::report::{self, Row, Table, bytes, rate, secs};
use crate::store::{self, Store};
use crate::{NOW, Sizes, generate, progress};

/// What one `mcpeval-index --format json` run with a database reported.
struct Synced {
    run: Run,
    uploaded: u64,
    /// Calls the team view holds.
    view_calls: u64,
    upload: Duration,
    pull: Duration,
    view_index: Duration,
}

pub fn bench(sizes: &Sizes, scratch: &Path, table: &mut Table) {
    progress(format_args!("starting PostgreSQL"));
    let server = match Server::start() {
        Ok(server) => server,
        Err(why) => {
            table.note(format!(
                "team store skipped: PostgreSQL did not start: {why}"
            ));
            return;
        }
    };
    table.note(format!(
        "team store: {} on loopback, a fresh cluster with fsync=off and max_wal_size=1GB",
        server.version
    ));
    let (store, pooled) = upload(&server, sizes, scratch, table);
    promote(&server, &store, &pooled, sizes, scratch, table);
}

/// `mcpeval-index` on `store` with the database `url`.
fn index(store: &Store, url: &str, scratch: &Path) -> Synced {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpeval-index"));
    cmd.arg("--home")
        .arg(&store.home)
        .args(["--format", "json"])
        .env("MCPEVAL_DATABASE_URL", url);
    let run = measure::run(&mut cmd, scratch);
    let summary: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("index summary {:?}: {e}", run.stdout));
    let team = &summary["team"];
    let count = |key: &str| team[key].as_u64().expect("a count");
    let seconds =
        |key: &str| Duration::from_secs_f64(team["seconds"][key].as_f64().expect("team.seconds"));
    Synced {
        uploaded: count("uploaded"),
        view_calls: count("calls"),
        upload: seconds("upload"),
        pull: seconds("pull"),
        view_index: seconds("index"),
        run,
    }
}

/// Forgets the store's team view, so the next run pulls every call anew.
fn forget_view(store: &Store) {
    let view = store.home.join("team");
    if view.exists() {
        std::fs::remove_dir_all(&view).expect("removing the team view");
    }
}

/// `mcpeval index` with a database on a fresh database each time, beside
/// the same index without one and `psql \copy` of the same rows. Returns
/// the store and the name of the last database, which keeps its calls.
fn upload(server: &Server, sizes: &Sizes, scratch: &Path, table: &mut Table) -> (Store, String) {
    let store = generate(scratch, "team", 1, sizes.calls, 0, sizes.journal_bytes);
    let csv = scratch.join("calls.csv");
    let csv_arg = csv.display().to_string().replace('\'', "''");
    let (mut local, mut synced, mut copies) = (vec![], vec![], vec![]);
    let mut name = String::new();
    for rep in 0..sizes.team_reps {
        progress(format_args!(
            "indexing {} calls without a database, with one, and psql \\copy of the rows ({} of {})",
            store.calls,
            rep + 1,
            sizes.team_reps
        ));
        if rep > 0 {
            server.psql("postgres", &format!("DROP DATABASE {name}"));
        }
        name = format!("upload_{rep}");
        server.psql("postgres", &format!("CREATE DATABASE {name}"));
        store.forget_index();
        forget_view(&store);
        let indexed = store::index(&store, scratch);
        assert_eq!(indexed.calls, store.calls, "calls indexed");
        local.push(indexed.run);

        let team = index(&store, &server.url(&name), scratch);
        assert_eq!(
            (team.uploaded, team.view_calls),
            (store.calls, store.calls),
            "calls uploaded and in the team view"
        );
        synced.push(team);

        // The baseline: the rows just uploaded, as CSV, copied into a
        // plain table of the same columns and unique index.
        if rep == 0 {
            server.psql(
                &name,
                &format!("\\copy (SELECT * FROM mcpeval.calls) TO '{csv_arg}' CSV"),
            );
        }
        server.psql(
            &name,
            "CREATE TABLE public.mcpeval_bench (LIKE mcpeval.calls);
             CREATE UNIQUE INDEX ON public.mcpeval_bench(store_id, journal, line, month, dist_key)",
        );
        let copy = measure::run(
            &mut server.psql_cmd(
                &name,
                &format!("\\copy public.mcpeval_bench FROM '{csv_arg}' CSV"),
            ),
            scratch,
        );
        copies.push(copy.time);
        let copied = server.psql(&name, "SELECT count(*) FROM public.mcpeval_bench");
        assert_eq!(copied, store.calls.to_string(), "rows copied");
        server.psql(&name, "DROP TABLE public.mcpeval_bench");
    }
    let pick = |f: fn(&Synced) -> Duration| median(&synced.iter().map(f).collect::<Vec<_>>());
    let ours = pick(|s| s.upload);
    let copy = median(&copies);
    let csv_size = csv.metadata().map_or(0, |m| m.len());
    table.push(Row {
        figure: format!(
            "team: upload of {} calls (`index` with a database)",
            report::count(store.calls)
        ),
        ours: format!(
            "{} = {}",
            secs(ours),
            rate(store.calls as f64 / ours.as_secs_f64())
        ),
        baseline: format!(
            "{} psql \\copy of the rows ({})",
            secs(copy),
            bytes(csv_size)
        ),
        ratio: report::times(ours, copy),
        target: "≤ 1.5×".into(),
        met: Some(ours.as_secs_f64() <= 1.5 * copy.as_secs_f64()),
    });
    let (whole, peak) = measure::summary(&synced.iter().map(|s| s.run.clone()).collect::<Vec<_>>());
    let (alone, alone_peak) = measure::summary(&local);
    table.push(Row {
        figure: format!(
            "team: `index` of {} calls with a database, first run",
            report::count(store.calls)
        ),
        ours: secs(whole),
        baseline: format!("{} without a database (SQLite alone)", secs(alone)),
        ratio: report::times(whole, alone),
        target: "-".into(),
        met: None,
    });
    table.note(format!(
        "team index with a database (store already indexed): upload {}, pull into the view {}, \
         the view's own index {}; peak memory {} (without a database {}); the \\copy baseline's \
         table has the calls' columns and unique index, unpartitioned",
        secs(ours),
        secs(pick(|s| s.pull)),
        secs(pick(|s| s.view_index)),
        bytes(peak),
        bytes(alone_peak)
    ));
    (store, name)
}

/// Clones the store's calls and partial aggregates in the database `name`
/// into more stores (new store ids, journal names, event ids and
/// sessions), brings a fresh store's team view up to date with them, and
/// promotes over them, beside the same promote on the view's SQLite files
/// without the database.
fn promote(
    server: &Server,
    store: &Store,
    name: &str,
    sizes: &Sizes,
    scratch: &Path,
    table: &mut Table,
) {
    // Only the store's id and salt are needed from here on: free the disk.
    let _ = std::fs::remove_file(scratch.join("calls.csv"));
    forget_view(store);
    store.forget_index();
    let _ = std::fs::remove_dir_all(store.home.join("journals"));
    let original = std::fs::read_to_string(store.home.join("store-id")).expect("store-id");
    let original = original.trim().replace('\'', "''");
    for k in 1..sizes.team_stores {
        progress(format_args!(
            "pooling: store {} of {} in the database",
            k + 1,
            sizes.team_stores
        ));
        // The two hex digits at `from` in the journal's random part, the
        // event id's last group and the session token, plus k (mod 256):
        // still well formed, and unique, since the originals are.
        let id = format!("00000000-0000-4000-8000-{k:012x}");
        let bump = |column: &str, from: u32| {
            format!(
                "overlay({column} placing lpad(to_hex(((('x' || substr({column}, {from}, 2))::bit(8)::int + {k}) % 256)), 2, '0') from {from} for 2)"
            )
        };
        let (journal, event, session) = (
            bump("journal", 22),
            bump("event_id", 25),
            bump("session", 3),
        );
        let name_of = bump("name", 22);
        server.psql(
            name,
            &format!(
                "BEGIN;
                 INSERT INTO mcpeval.stores(store_id, first_seen) VALUES ('{id}', '{NOW}');
                 INSERT INTO mcpeval.journals(store_id, name, length, sha256, lines, size, epoch)
                   SELECT '{id}', {name_of}, length, sha256,
                          lines, size, epoch
                   FROM mcpeval.journals WHERE store_id = '{original}';
                 INSERT INTO mcpeval.calls
                   SELECT dist_key, month, '{id}', {journal}, line, schema, {event}, {session}, seq, origin, transport,
                          server, tool, started_at, duration_ms, advertised, args_shape, outcome,
                          unknown, channel, code, template_id, retryable
                   FROM mcpeval.calls WHERE store_id = '{original}';
                 INSERT INTO mcpeval.daily
                   SELECT '{id}', {journal}, day, server, tool, calls, failures
                   FROM mcpeval.daily WHERE store_id = '{original}';
                 INSERT INTO mcpeval.part_calls
                   SELECT '{id}', server, tool, day, calls
                   FROM mcpeval.part_calls WHERE store_id = '{original}';
                 INSERT INTO mcpeval.part_failures
                   SELECT '{id}', kind, server, tool, template_id, day, failures, first_seen,
                          last_seen, retryable_true, retryable_false, retryable_unreported,
                          unadvertised
                   FROM mcpeval.part_failures WHERE store_id = '{original}';
                 INSERT INTO mcpeval.part_details
                   SELECT '{id}', kind, server, tool, template_id, what, value, n
                   FROM mcpeval.part_details WHERE store_id = '{original}';
                 INSERT INTO mcpeval.part_streams
                   SELECT '{id}', {session}, server
                   FROM mcpeval.part_streams WHERE store_id = '{original}';
                 UPDATE mcpeval.stores SET partials = true WHERE store_id = '{id}';
                 UPDATE mcpeval.meta SET value = (value::bigint + 1)::text WHERE key = 'generation';
                 COMMIT;"
            ),
        );
    }
    let pooled = store.calls * sizes.team_stores;
    let held: u64 = server
        .psql(name, "SELECT count(*) FROM mcpeval.calls")
        .parse()
        .expect("a count");
    assert_eq!(held, pooled, "calls pooled");

    // A machine that joins the team: its own store is empty.
    let fresh = Store {
        home: scratch.join("team-joined"),
        journals: vec![],
        calls: 0,
    };
    for dir in [fresh.home.clone(), fresh.home.join("journals")] {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .expect("store directory");
    }
    std::fs::copy(store.home.join(".salt"), fresh.home.join(".salt")).expect("team salt");
    progress(format_args!(
        "bringing a fresh team view up to date with {pooled} calls"
    ));
    let url = server.url(name);
    let joined = index(&fresh, &url, scratch);
    assert_eq!((joined.uploaded, joined.view_calls), (0, pooled));

    // The baseline promotes the view as a store of its own, with the salt.
    let view = Store {
        home: fresh.home.join("team"),
        journals: vec![],
        calls: pooled,
    };
    std::fs::copy(fresh.home.join(".salt"), view.home.join(".salt")).expect("salt");
    let (mut ours, mut alone) = (vec![], vec![]);
    for rep in 0..sizes.team_reps {
        progress(format_args!(
            "promote over {pooled} pooled calls, with the database and on the view alone ({} of {})",
            rep + 1,
            sizes.team_reps
        ));
        // Alternately first, so neither always finds the view's files
        // in the page cache after the other read them.
        if rep % 2 == 1 {
            alone.push(store::promote(&view, NOW, scratch));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpeval-promote"));
        cmd.arg("--home")
            .arg(&fresh.home)
            .args(["--now", NOW])
            .env("MCPEVAL_DATABASE_URL", &url);
        let run = measure::run(&mut cmd, scratch);
        assert!(run.stdout.starts_with("promoted "), "{:?}", run.stdout);
        ours.push(run);
        if rep % 2 == 0 {
            alone.push(store::promote(&view, NOW, scratch));
        }
    }
    let promoted: u64 = server
        .psql(name, "SELECT count(*) FROM mcpeval.cat_findings")
        .parse()
        .expect("a count");
    assert!(promoted > 0, "no findings in the database");
    let (time, peak) = measure::summary(&ours);
    let (base, _) = measure::summary(&alone);
    table.push(Row {
        figure: format!(
            "team: promote over {} pooled calls ({} stores)",
            report::count(pooled),
            sizes.team_stores
        ),
        ours: secs(time),
        baseline: format!("{} the same promote on the view alone (SQLite)", secs(base)),
        ratio: report::times(time, base),
        target: "≤ 3 s".into(),
        met: Some(time.as_secs_f64() <= 3.0),
    });
    let whole = joined.run.time;
    table.push(Row {
        figure: format!(
            "team: a fresh view of {} calls brought up to date (pull + view index)",
            report::count(pooled)
        ),
        ours: format!(
            "{} = {}",
            secs(whole),
            rate(pooled as f64 / whole.as_secs_f64())
        ),
        baseline: format!("{} its index alone", secs(joined.view_index)),
        ratio: report::times(whole, joined.view_index),
        target: "-".into(),
        met: None,
    });
    table.note(format!(
        "fresh team view: pull {}, index {}, peak memory {}; promote's peak memory {}; {} \
         findings; the database took {}, the view's files {}",
        secs(joined.pull),
        secs(joined.view_index),
        bytes(joined.run.peak),
        bytes(peak),
        promoted,
        bytes(server.disk()),
        bytes(dir_bytes(&view.home))
    ));
    read(
        server,
        name,
        &fresh.home.join(".salt"),
        pooled,
        sizes,
        scratch,
        table,
    );
}

/// A machine that only reads the team (a CI runner): the team salt in an
/// otherwise empty store, a role with SELECT rights only, no index and
/// no view; the readers' times over the pooled calls, and what the
/// machine keeps.
fn read(
    server: &Server,
    name: &str,
    salt: &Path,
    pooled: u64,
    sizes: &Sizes,
    scratch: &Path,
    table: &mut Table,
) {
    server.psql(
        name,
        &format!(
            "DO $$ BEGIN
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_reader') THEN
                 CREATE ROLE bench_reader LOGIN;
               END IF;
             END $$;
             GRANT CONNECT ON DATABASE {name} TO bench_reader;
             GRANT USAGE ON SCHEMA mcpeval TO bench_reader;
             GRANT SELECT ON ALL TABLES IN SCHEMA mcpeval TO bench_reader;"
        ),
    );
    let url = server
        .url(name)
        .replacen(&format!("{}@", crate::postgres::USER), "bench_reader@", 1);
    let reader = scratch.join("team-reader");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&reader)
        .expect("store directory");
    std::fs::copy(salt, reader.join(".salt")).expect("team salt");
    let page = scratch.join("report.html");
    let commands: [(&str, &str, Vec<String>, f64); 3] = [
        (
            "findings --format json",
            env!("CARGO_BIN_EXE_mcpeval-findings"),
            vec!["--format".into(), "json".into()],
            1.0,
        ),
        (
            "readiness --format json",
            env!("CARGO_BIN_EXE_mcpeval-readiness"),
            vec!["--format".into(), "json".into(), "--now".into(), NOW.into()],
            3.0,
        ),
        (
            "report",
            env!("CARGO_BIN_EXE_mcpeval-report"),
            vec![
                "--output".into(),
                page.display().to_string(),
                "--now".into(),
                NOW.into(),
            ],
            3.0,
        ),
    ];
    for (what, program, args, target) in commands {
        let runs: Vec<Run> = (0..sizes.team_reps)
            .map(|rep| {
                progress(format_args!(
                    "a read-only reader's {what} over {pooled} pooled calls ({} of {})",
                    rep + 1,
                    sizes.team_reps
                ));
                let mut cmd = Command::new(program);
                cmd.arg("--home")
                    .arg(&reader)
                    .args(&args)
                    .env("MCPEVAL_DATABASE_URL", &url);
                measure::run(&mut cmd, scratch)
            })
            .collect();
        let (time, peak) = measure::summary(&runs);
        table.push(Row {
            figure: format!(
                "team: a fresh read-only reader's `{what}` over {} pooled calls",
                report::count(pooled)
            ),
            ours: secs(time),
            baseline: format!("peak memory {}", bytes(peak)),
            ratio: "-".into(),
            target: format!("≤ {target} s"),
            met: Some(time.as_secs_f64() <= target),
        });
    }
    let _ = std::fs::remove_file(&page);
    let kept = dir_bytes(&reader);
    table.push(Row {
        figure: "team: disk on a reader machine (its store after reading)".into(),
        ours: bytes(kept),
        baseline: "the salt alone; each reader's transient copy of the lifecycle and findings is removed when it ends".into(),
        ratio: "-".into(),
        target: "≤ 10 MB".into(),
        met: Some(kept <= 10_000_000),
    });
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                _ => e.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}
