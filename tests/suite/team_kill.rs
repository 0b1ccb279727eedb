//! Crash safety of the team store: `index`, `promote` and `verify` killed
//! with SIGKILL at the statements they send the team database (the debug
//! builds' fault hook with `MCPEVAL_FAULT_COUNT=team`, see
//! `shared/store/src/fault.rs`: statements, transaction starts, commits and the
//! moments after them, and rows inside a `COPY` or a pull), sampled at a
//! fixed stride and always at a run's last statements; and `index` killed
//! at the statements of every database, so inside the team view's own
//! index too.
//!
//! After each kill the database holds the state before the run or the
//! state after it, never a mixture, and every journal's calls are what its
//! checkpoint says; the next run, unhindered, reaches exactly the database
//! of a run that was never killed (every `mcpeval` table, time stamps
//! aside); and the store's team view serves the next command the same
//! findings as a view that was never interrupted.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use store::fault::{FAULT_COUNT_ENV, FAULT_ENV, FAULT_IN_ENV};

use crate::postgres::Database;
use crate::support::{SYSTEM_PATH, bin, private_dir, text};
use crate::team::{NOW, seed_journals};
use crate::verify::Bench;

/// A team as it stands before the command under test: store homes under
/// one directory and a database, put back as they were for every kill.
struct Template {
    root: tempfile::TempDir,
    db: Database,
    saved: bool,
}

/// One copy of a [`Template`]'s stores, with its database put back.
struct Copy<'a> {
    root: tempfile::TempDir,
    db: &'a Database,
}

impl Template {
    fn new() -> Template {
        Template {
            root: scratch(),
            db: crate::postgres::database(),
            saved: false,
        }
    }

    fn home(&self, store: &str) -> PathBuf {
        self.root.path().join(store)
    }

    /// Fresh copies of the stores, and the database as it was when the
    /// first copy was made since the last [`changed`](Template::changed)
    /// (every `mcpeval` table; kept in schema `saved`).
    fn copy(&mut self) -> Copy<'_> {
        if self.saved {
            self.restore();
        } else {
            let mut sql = "DROP SCHEMA IF EXISTS saved CASCADE; CREATE SCHEMA saved;".to_owned();
            for (table, _) in TABLES {
                sql.push_str(&format!(
                    "CREATE TABLE saved.{table} AS TABLE mcpeval.{table};"
                ));
            }
            self.db.psql(&sql);
            self.saved = true;
        }
        let root = scratch();
        copy_dir(self.root.path(), root.path());
        Copy { root, db: &self.db }
    }

    /// Puts the database back as the last copy found it.
    fn restore(&self) {
        let all: Vec<String> = TABLES.iter().map(|(t, _)| format!("mcpeval.{t}")).collect();
        let mut sql = format!("TRUNCATE {};", all.join(", "));
        for (table, _) in TABLES {
            sql.push_str(&format!(
                "INSERT INTO mcpeval.{table} SELECT * FROM saved.{table};"
            ));
        }
        self.db.psql(&sql);
    }

    /// The stores or the database changed: the next copy saves them anew.
    fn changed(&mut self) {
        self.saved = false;
    }
}

impl Copy<'_> {
    fn home(&self, store: &str) -> PathBuf {
        self.root.path().join(store)
    }
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mcpeval-test-")
        .tempdir()
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    private_dir(to);
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Which statements a sweep kills at.
#[derive(Debug, Clone, Copy)]
enum Sweep {
    /// The team database's statements 1, 1 + n, 1 + 2n, … and the run's
    /// last [`TAIL`].
    Team(u64),
    /// The statements of every database, the store's SQLite files too,
    /// 1, 1 + n, 1 + 2n, …: kills inside the indexing of the team view.
    All(u64),
}

/// Runs `name ARGS` in the store `home` against `db`, killed at the
/// `fault`-th statement of the binary `armed`.
fn run_in(
    home: &Path,
    db: &Database,
    name: &str,
    args: &[&str],
    fault: Option<(u64, Sweep)>,
    armed: &str,
) -> Output {
    let mut cmd = Command::new(bin(name));
    cmd.args(args)
        .env_clear()
        .env("MCPEVAL_HOME", home)
        .env("HOME", home.parent().unwrap())
        .env("MCPEVAL_DATABASE_URL", &db.url)
        .env("NO_COLOR", "1")
        .env("PATH", SYSTEM_PATH)
        .env("LANG", "C.UTF-8");
    if let Some((n, sweep)) = fault {
        cmd.env(FAULT_ENV, n.to_string()).env(FAULT_IN_ENV, armed);
        if let Sweep::Team(_) = sweep {
            cmd.env(FAULT_COUNT_ENV, "team");
        }
    }
    cmd.output().unwrap()
}

fn ok(home: &Path, db: &Database, name: &str, args: &[&str]) -> String {
    let out = run_in(home, db, name, args, None, name);
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `findings --format json` without the promotion time (the clock's).
fn findings(home: &Path, db: &Database) -> Value {
    let json = ok(home, db, "mcpeval-findings", &["--format", "json"]);
    let mut value: Value = serde_json::from_str(&json).unwrap();
    value.as_object_mut().unwrap().remove("promoted_at");
    value
}

/// The tables of the `mcpeval` schema and the columns of each that hold
/// a clock's time (different from run to run), a row's MAC over one, or
/// a random token (a store's upload token: that a new run after a kill
/// is not taken for a copy shows it is kept right).
const TABLES: &[(&str, &[&str])] = &[
    ("meta", &[]),
    (
        "stores",
        &["first_seen", "last_upload", "joined_at", "upload_token"],
    ),
    ("journals", &[]),
    ("calls", &[]),
    ("daily", &[]),
    ("life_annotations", &["created_at", "mac"]),
    ("life_finding_state", &["updated_at", "streak_since", "mac"]),
    ("life_verifications", &["recorded_at", "mac"]),
    ("life_history", &["at", "mac"]),
    ("life_imports", &["at", "mac"]),
    ("cat_findings", &[]),
    ("cat_promotion", &["promoted_at", "outdated_at", "mac"]),
];

/// The evidence an upload changes, and what a lifecycle write changes.
const EVIDENCE: &[&str] = &["journals", "calls", "daily", "meta"];
const LIFECYCLE: &[&str] = &[
    "life_annotations",
    "life_finding_state",
    "life_verifications",
    "life_history",
    "life_imports",
    "cat_findings",
    "cat_promotion",
    "meta",
];

/// Every row of `tables` (all when empty), one line each, sorted, without
/// clock times and without the columns `volatile` names.
fn dump(db: &Database, tables: &[&str], volatile: &[&str]) -> String {
    let parts: Vec<String> = TABLES
        .iter()
        .filter(|(t, _)| tables.is_empty() || tables.contains(t))
        .map(|(table, times)| {
            let mut drop = String::new();
            for column in times.iter().chain(volatile) {
                drop.push_str(&format!(" - '{column}'"));
            }
            let filter = if *table == "meta" {
                " WHERE key <> 'changed_at'"
            } else {
                ""
            };
            format!("SELECT '{table} ' || (to_jsonb(t){drop})::text AS line FROM mcpeval.{table} t{filter}")
        })
        .collect();
    db.psql(&format!(
        "SELECT coalesce(string_agg(line, E'\\n' ORDER BY line), '') FROM ({}) x",
        parts.join(" UNION ALL ")
    ))
}

/// Per store and journal, the calls the `journals` row says: as many as
/// its `lines`, numbered 1 to `lines`.
fn calls_match_checkpoints(db: &Database) {
    let wrong = db.psql(
        "SELECT j.store_id, j.name, j.lines, count(c.line), coalesce(max(c.line), 0)
         FROM mcpeval.journals j
         LEFT JOIN mcpeval.calls c ON c.store_id = j.store_id AND c.journal = j.name
         GROUP BY j.store_id, j.name, j.lines
         HAVING count(c.line) <> j.lines OR coalesce(max(c.line), 0) <> j.lines
         UNION ALL
         SELECT c.store_id, c.journal, NULL, count(*), max(c.line) FROM mcpeval.calls c
         WHERE NOT EXISTS (SELECT 1 FROM mcpeval.journals j
                           WHERE j.store_id = c.store_id AND j.name = c.journal)
         GROUP BY c.store_id, c.journal",
    );
    assert_eq!(
        wrong, "",
        "calls that their journal's checkpoint does not say"
    );
}

/// How the dump `seen` differs from `want`: the lines of each the other
/// lacks (a few), and the counts.
fn difference(seen: &str, want: &str) -> Option<String> {
    if seen == want {
        return None;
    }
    let (seen, want): (Vec<&str>, Vec<&str>) = (seen.lines().collect(), want.lines().collect());
    let lacking = |a: &[&str], b: &[&str]| -> Vec<String> {
        a.iter()
            .filter(|l| !b.contains(l))
            .take(6)
            .map(|l| l.to_string())
            .collect()
    };
    Some(format!(
        "{} lines, not {}; extra: {:#?}; missing: {:#?}",
        seen.len(),
        want.len(),
        lacking(&seen, &want),
        lacking(&want, &seen)
    ))
}

/// Fails, showing the lines that differ, unless `seen` is `want`.
#[track_caller]
fn same(seen: &str, want: &str, what: &str) {
    if let Some(diff) = difference(seen, want) {
        panic!("{what} differs: {diff}");
    }
}

/// Whether the dump `seen` is `before` or `after`, else fails showing how
/// it differs from each.
#[track_caller]
fn before_or_after(seen: &str, before: &str, after: &str, what: &str) {
    if let (Some(from_before), Some(from_after)) =
        (difference(seen, before), difference(seen, after))
    {
        panic!(
            "{what} is neither before nor after the run:\nfrom before: {from_before}\nfrom after: {from_after}"
        );
    }
}

fn killed(out: &Output) -> bool {
    out.status.signal() == Some(libc::SIGKILL)
}

/// How many of a run's last statements are swept whatever the stride.
const TAIL: u64 = 3;

/// What a run reaches unhindered: the whole database and what the
/// `after` step reads from the stores afterwards.
struct Reference {
    dump: String,
    seen: Value,
}

/// Kills `name ARGS`, run in store `store` of copies of `template`, at
/// the statements `sweep` names until a run finishes. After each
/// kill, `between` checks the copy and says whether its database holds the
/// whole run; then (unless it did and the command is not `repeatable`)
/// the command runs again; `after` runs the next commands and reads what
/// a user sees, and both that and the whole database (without `volatile`
/// columns) must equal what a run never killed reaches. Returns the
/// number of statements of a whole run (with [`Sweep::All`], the last
/// one killed at).
#[allow(clippy::too_many_arguments)]
fn killed_everywhere(
    template: &mut Template,
    store: &str,
    name: &str,
    args: &[&str],
    armed: &str,
    sweep: Sweep,
    repeatable: bool,
    volatile: &[&str],
    between: impl Fn(&Copy) -> bool,
    after: impl Fn(&Copy) -> Value,
) -> u64 {
    let reference = {
        let copy = template.copy();
        ok(&copy.home(store), copy.db, name, args);
        let seen = after(&copy);
        Reference {
            dump: dump(copy.db, &[], volatile),
            seen,
        }
    };
    let mut kill_at = |n: u64| -> bool {
        let copy = template.copy();
        let out = run_in(
            &copy.home(store),
            copy.db,
            name,
            args,
            Some((n, sweep)),
            armed,
        );
        if out.status.success() {
            return false;
        }
        assert!(killed(&out), "killed at {n}: {}", text(&out.stderr));
        let whole = between(&copy);
        // What a command prints tells of work the database holds: a run
        // killed before its work landed printed nothing on stdout.
        assert!(
            whole || out.stdout.is_empty(),
            "killed at {n} before its work landed, {name} printed: {}",
            text(&out.stdout)
        );
        if repeatable || !whole {
            let again = run_in(&copy.home(store), copy.db, name, args, None, name);
            assert!(
                again.status.success(),
                "after a kill at {n}, {name} {args:?}: {}",
                text(&again.stderr)
            );
        }
        let seen = after(&copy);
        same(
            &dump(copy.db, &[], volatile),
            &reference.dump,
            &format!("the database after a kill at {n} and a new run"),
        );
        assert_eq!(seen, reference.seen, "after a kill at {n}");
        true
    };
    let every = match sweep {
        Sweep::Team(every) => every,
        Sweep::All(every) => {
            let mut n = 1;
            while kill_at(n) {
                n += every;
            }
            return n - every;
        }
    };
    let mut n = 1;
    while kill_at(n) {
        n += every;
    }
    let last_killed = n.saturating_sub(every);
    let mut total = n - 1;
    for m in last_killed + 1..n {
        if !kill_at(m) {
            total = m - 1;
            break;
        }
    }
    // The run's last statements (its final commit and the moment after
    // it) are swept whatever the stride.
    for m in total.saturating_sub(TAIL - 1).max(1)..=total {
        if m < last_killed && (m - 1) % every != 0 {
            assert!(kill_at(m), "the run finished before statement {m}");
        }
    }
    total
}

/// A team of two stores sharing one salt, `a` and `b`, each with its
/// share of `journals`.
fn two_stores(template: &mut Template, journals: &[PathBuf]) {
    let (a, b) = (template.home("a"), template.home("b"));
    for (k, home) in [&a, &b].into_iter().enumerate() {
        private_dir(home);
        private_dir(&home.join("journals"));
        for path in journals.iter().skip(k).step_by(2) {
            fs::copy(path, home.join("journals").join(path.file_name().unwrap())).unwrap();
        }
    }
    let exported = template.root.path().join("team.salt");
    ok(
        &a,
        &template.db,
        "mcpeval-salt",
        &["--export", exported.to_str().unwrap()],
    );
    fs::copy(a.join(".salt"), b.join(".salt")).unwrap();
    // Their ids in the team, as their first contact would make them (the
    // same in every copy).
    fs::write(a.join("store-id"), "6f1e1d5a-3d4c-4a57-9a7e-0d3c1b2a4e01\n").unwrap();
    fs::write(b.join("store-id"), "6f1e1d5a-3d4c-4a57-9a7e-0d3c1b2a4e02\n").unwrap();
}

/// A few journals of the seed corpus: enough for findings, few enough
/// that a sweep stays short.
fn some_seed_journals() -> Vec<PathBuf> {
    seed_journals().into_iter().step_by(15).collect()
}

/// Index, promote and the findings a store then reads.
fn promoted_findings(copy: &Copy, store: &str) -> Value {
    let home = copy.home(store);
    ok(&home, copy.db, "mcpeval-promote", &["--now", NOW]);
    findings(&home, copy.db)
}

#[test]
fn index_killed_at_any_team_statement_uploads_all_or_nothing_and_the_view_recovers() {
    let mut template = Template::new();
    let journals = some_seed_journals();
    two_stores(&mut template, &journals);
    let (a, b) = (template.home("a"), template.home("b"));
    // Store a is in the team and promoted, with the first half of one
    // journal so far; store b uploads for the first time.
    let growing = a.join("journals").join(journals[0].file_name().unwrap());
    let whole = fs::read_to_string(&journals[0]).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    let half: String = lines[..lines.len() / 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&growing, half).unwrap();
    ok(&a, &template.db, "mcpeval-index", &[]);
    ok(&a, &template.db, "mcpeval-promote", &["--now", NOW]);
    let before = dump(&template.db, EVIDENCE, &[]);
    let evidence_after = |copy: &Copy| dump(copy.db, EVIDENCE, &[]);
    let after = {
        let copy = template.copy();
        ok(&copy.home("b"), copy.db, "mcpeval-index", &[]);
        evidence_after(&copy)
    };
    assert!(before != after, "the run must change the evidence");
    let between = |copy: &Copy| {
        calls_match_checkpoints(copy.db);
        let seen = dump(copy.db, EVIDENCE, &[]);
        before_or_after(&seen, &before, &after, "the evidence after a kill");
        seen == after
    };
    let points = killed_everywhere(
        &mut template,
        "b",
        "mcpeval-index",
        &[],
        "mcpeval-index",
        Sweep::Team(8),
        true,
        &[],
        between,
        |copy| promoted_findings(copy, "b"),
    );
    eprintln!("{points} statements");
    assert!(points >= 40, "only {points} statements");

    // Then a's journal grows (b's view appends to its copy) and one of
    // b's journals is gone (its calls leave the database, its copy the
    // view).
    template.restore();
    ok(&b, &template.db, "mcpeval-index", &[]);
    fs::write(&growing, &whole).unwrap();
    ok(&a, &template.db, "mcpeval-index", &[]);
    let mine: Vec<PathBuf> = {
        let mut files: Vec<PathBuf> = fs::read_dir(b.join("journals"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        files
    };
    fs::remove_file(&mine[0]).unwrap();
    template.changed();
    let before = dump(&template.db, EVIDENCE, &[]);
    let after = {
        let copy = template.copy();
        ok(&copy.home("b"), copy.db, "mcpeval-index", &[]);
        evidence_after(&copy)
    };
    assert!(before != after, "the run must change the evidence");
    let between = |copy: &Copy| {
        calls_match_checkpoints(copy.db);
        let seen = dump(copy.db, EVIDENCE, &[]);
        before_or_after(&seen, &before, &after, "the evidence after a kill");
        seen == after
    };
    killed_everywhere(
        &mut template,
        "b",
        "mcpeval-index",
        &[],
        "mcpeval-index",
        Sweep::Team(12),
        true,
        &[],
        between,
        |copy| promoted_findings(copy, "b"),
    );
}

#[test]
fn promote_killed_at_any_team_statement_replaces_the_findings_and_lifecycle_whole() {
    let mut template = Template::new();
    two_stores(&mut template, &some_seed_journals());
    let (a, b) = (template.home("a"), template.home("b"));
    ok(&a, &template.db, "mcpeval-index", &[]);
    ok(&b, &template.db, "mcpeval-index", &[]);
    let before = dump(&template.db, LIFECYCLE, &[]);
    let after = {
        let copy = template.copy();
        ok(&copy.home("b"), copy.db, "mcpeval-promote", &["--now", NOW]);
        dump(copy.db, LIFECYCLE, &[])
    };
    assert!(before != after, "the run must change the findings");
    let points = killed_everywhere(
        &mut template,
        "b",
        "mcpeval-promote",
        &["--now", NOW],
        "mcpeval-promote",
        Sweep::Team(4),
        true,
        &[],
        |copy| {
            let seen = dump(copy.db, LIFECYCLE, &[]);
            before_or_after(
                &seen,
                &before,
                &after,
                "findings and lifecycle after a kill",
            );
            seen == after
        },
        |copy| findings(&copy.home("a"), copy.db),
    );
    eprintln!("{points} statements");
    assert!(points >= 30, "only {points} statements");
}

/// A verification run's columns that differ from run to run.
const RUN_COLUMNS: &[&str] = &["run_id", "started_at", "finished_at", "digest", "detail"];

#[test]
fn verify_killed_at_any_team_statement_records_the_run_wholly_or_not_at_all() {
    let bench = Bench::new();
    let mut template = Template::new();
    let (a, b) = (template.home("a"), template.home("b"));
    copy_dir(&bench.store.home(), &a);
    private_dir(&b);
    private_dir(&b.join("journals"));
    for path in some_seed_journals().iter().take(2) {
        fs::copy(path, b.join("journals").join(path.file_name().unwrap())).unwrap();
    }
    fs::copy(a.join(".salt"), b.join(".salt")).unwrap();
    fs::write(a.join("store-id"), "6f1e1d5a-3d4c-4a57-9a7e-0d3c1b2a4e01\n").unwrap();
    fs::write(b.join("store-id"), "6f1e1d5a-3d4c-4a57-9a7e-0d3c1b2a4e02\n").unwrap();
    ok(&b, &template.db, "mcpeval-index", &[]);
    ok(&a, &template.db, "mcpeval-index", &[]);
    ok(
        &a,
        &template.db,
        "mcpeval-promote",
        &["--threshold", "0", "--now", NOW],
    );

    let finding = bench.finding.clone();
    let credit = |db: &Database| {
        db.psql(&format!(
            "SELECT (SELECT count(*) FROM mcpeval.life_verifications WHERE finding_id = '{finding}'),
                    (SELECT state || ' ' || streak FROM mcpeval.life_finding_state
                     WHERE finding_id = '{finding}'),
                    (SELECT count(*) FROM mcpeval.life_history
                     WHERE finding_id = '{finding}' AND event = 'verified')"
        ))
    };
    assert_eq!(credit(&template.db), "0|open 0|0\n");
    let args = [
        "--finding",
        &finding,
        "--case",
        "status",
        "--manifest",
        bench.manifest.to_str().unwrap(),
        "--",
        "python3",
        bench.server.to_str().unwrap(),
    ];
    let before = dump(&template.db, LIFECYCLE, RUN_COLUMNS);
    let after = {
        let copy = template.copy();
        ok(&copy.home("a"), copy.db, "mcpeval-verify", &args);
        assert_eq!(credit(copy.db), "1|verifying 1|1\n");
        dump(copy.db, LIFECYCLE, RUN_COLUMNS)
    };
    let points = killed_everywhere(
        &mut template,
        "a",
        "mcpeval-verify",
        &args,
        "mcpeval-verify",
        Sweep::Team(8),
        false,
        RUN_COLUMNS,
        |copy| {
            let seen = credit(copy.db);
            assert!(
                seen == "0|open 0|0\n" || seen == "1|verifying 1|1\n",
                "partial credit: {seen}"
            );
            let seen = dump(copy.db, LIFECYCLE, RUN_COLUMNS);
            before_or_after(&seen, &before, &after, "the lifecycle after a kill");
            seen == after
        },
        |copy| findings(&copy.home("b"), copy.db),
    );
    eprintln!("{points} statements");
    assert!(points >= 30, "only {points} statements");
}

#[test]
fn index_killed_inside_the_team_views_own_index_leaves_a_view_the_next_run_completes() {
    let mut template = Template::new();
    two_stores(&mut template, &some_seed_journals());
    let a = template.home("a");
    ok(&a, &template.db, "mcpeval-index", &[]);
    ok(&a, &template.db, "mcpeval-promote", &["--now", NOW]);
    let before = dump(&template.db, EVIDENCE, &[]);
    let after = {
        let copy = template.copy();
        ok(&copy.home("b"), copy.db, "mcpeval-index", &[]);
        dump(copy.db, EVIDENCE, &[])
    };
    let in_view = std::cell::Cell::new(0);
    let last = killed_everywhere(
        &mut template,
        "b",
        "mcpeval-index",
        &[],
        "mcpeval-index",
        Sweep::All(37),
        true,
        &[],
        |copy| {
            calls_match_checkpoints(copy.db);
            let seen = dump(copy.db, EVIDENCE, &[]);
            before_or_after(&seen, &before, &after, "the evidence after a kill");
            // The view's journals were rebuilt: the kill came later.
            let pulled = copy.home("b").join("team/pulled.json");
            in_view.set(in_view.get() + u32::from(pulled.exists()));
            seen == after
        },
        |copy| promoted_findings(copy, "b"),
    );
    // Past the store's own index and the upload, into the view's.
    assert!(last >= 200, "the run ended after {last} statements");
    assert!(in_view.get() >= 2, "{} kills after the pull", in_view.get());
}

/// Runs `name ARGS…` on the store at `home` with no team database.
fn alone(home: &Path, name: &str, args: &[&str]) -> String {
    let out = Command::new(bin(name))
        .args(args)
        .env_clear()
        .env("MCPEVAL_HOME", home)
        .env("HOME", home.parent().unwrap())
        .env("NO_COLOR", "1")
        .env("PATH", SYSTEM_PATH)
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn index_killed_while_a_store_joins_with_its_lifecycle_brings_it_wholly_and_once() {
    let mut template = Template::new();
    let journals = some_seed_journals();
    two_stores(&mut template, &journals);
    let (a, b) = (template.home("a"), template.home("b"));
    ok(&a, &template.db, "mcpeval-index", &[]);
    ok(&a, &template.db, "mcpeval-promote", &["--now", NOW]);
    // Store b worked alone before it joins: it promoted its findings,
    // closed one by hand and annotated a call.
    let id = fs::read_to_string(b.join("store-id")).unwrap();
    fs::remove_file(b.join("store-id")).unwrap();
    alone(&b, "mcpeval-index", &[]);
    alone(&b, "mcpeval-promote", &["--threshold", "0", "--now", NOW]);
    let listed: Value =
        serde_json::from_str(&alone(&b, "mcpeval-findings", &["--format", "json"])).unwrap();
    let finding = listed["findings"][0]["id"].as_str().unwrap().to_owned();
    alone(
        &b,
        "mcpeval-close",
        &["--finding", &finding, "--reason", "fixed upstream"],
    );
    let first = fs::read_to_string(&journals[1]).unwrap();
    let record: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let event = record["identity"]["event_id"].as_str().unwrap();
    alone(
        &b,
        "mcpeval-annotate",
        &[
            "--event-id",
            event,
            "--kind",
            "other",
            "--note",
            "seen alone",
        ],
    );
    fs::write(b.join("store-id"), id).unwrap();
    template.changed();

    // The lifecycle holds b's history wholly or not at all after a kill,
    // and the next run brings it exactly once (the dump of a run never
    // killed): the join is marked in the transaction that brings it.
    const JOINED: &[&str] = &["life_annotations", "life_finding_state", "life_history"];
    let before = dump(&template.db, JOINED, &[]);
    let after = {
        let copy = template.copy();
        ok(&copy.home("b"), copy.db, "mcpeval-index", &[]);
        dump(copy.db, JOINED, &[])
    };
    assert!(after.contains("seen alone"), "{after}");
    assert!(after.contains("fixed upstream"), "{after}");
    assert!(before != after, "the run must bring b's lifecycle");
    let between = |copy: &Copy| {
        let seen = dump(copy.db, JOINED, &[]);
        before_or_after(&seen, &before, &after, "the lifecycle after a kill");
        seen == after
    };
    killed_everywhere(
        &mut template,
        "b",
        "mcpeval-index",
        &[],
        "mcpeval-index",
        Sweep::Team(8),
        true,
        &[],
        between,
        |copy| promoted_findings(copy, "b"),
    );
}
