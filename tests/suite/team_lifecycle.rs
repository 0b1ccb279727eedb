//! One lifecycle for a team (SPEC §11): a verification counts on whichever
//! store of the team ran it, lifecycle changes from many stores at once
//! all land, and a store or database the team cannot trust is refused
//! before anything is written.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::postgres::{Database, Postgres};
use crate::records::{self, Rec};
use crate::support::{Store, fixture, text};
use crate::team::{ok, run, store_with};
use crate::verify::{AS_OF, FIXTURE_SERVER, status_case};

/// A team of three stores sharing one salt and one database, in which
/// tool `status` of the fixture server is a promoted finding, and a
/// manifest whose case `status` proves it.
struct Team {
    db: Database,
    stores: Vec<Store>,
    /// A store with the team salt alone that reads through a role with
    /// SELECT rights only: what every store reads, it reads.
    reader: Store,
    finding: String,
    server: PathBuf,
    manifest: PathBuf,
    log: PathBuf,
}

/// One run of a binary: (status, stdout, stderr).
type Out = (i32, String, String);

impl Team {
    fn new() -> Team {
        let db = crate::postgres::database();
        let first = store_with(None, &[]);
        let mut recs = Vec::new();
        for session in 1..=2 {
            for seq in 1..=10 {
                recs.push(
                    Rec::error(session * 100 + seq, session, seq, "status", Some(1))
                        .server(FIXTURE_SERVER),
                );
            }
        }
        records::write(&first, 1, &records::lines(&recs));
        // The first store to index brings the team's salt.
        ok(&first, Some(&db), "mcpeval-index", &[]);
        let salt = first.home().join(".salt");
        let mut stores = vec![first];
        stores.extend((0..2).map(|_| store_with(Some(&salt), &[])));
        // A machine reads the team once it has indexed (with nothing of
        // its own yet).
        for store in &stores[1..] {
            ok(store, Some(&db), "mcpeval-index", &[]);
        }
        ok(
            &stores[0],
            Some(&db),
            "mcpeval-promote",
            &["--threshold", "0", "--now", AS_OF],
        );
        let all = findings_of(&stores[1], &db);
        assert_eq!(all.len(), 1, "{all:#?}");
        let finding = all[0]["id"].as_str().unwrap().to_owned();
        let dir = stores[0].scratch().to_path_buf();
        let server = dir.join("server.py");
        std::fs::copy(fixture("probe_server.py"), &server).unwrap();
        let manifest = dir.join("mcp-eval.manifest.json");
        let doc = json!({"manifest_version": 1,
            "sandboxes": {"fixture": {"declaration": "a private copy of the fixture; no network"}},
            "cases": [status_case(&finding)]});
        std::fs::write(&manifest, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        Team {
            db,
            reader: store_with(Some(&stores[0].home().join(".salt")), &[]),
            stores,
            finding,
            server,
            manifest,
            log: dir.join("server.log"),
        }
    }

    /// `python3 server.py ARGS…`
    fn argv(&self, server_args: &[&str]) -> Vec<String> {
        let mut argv = vec!["python3".to_owned(), self.server.display().to_string()];
        argv.extend(server_args.iter().map(|a| a.to_string()));
        argv
    }

    /// `mcpeval verify` of case `status` on store `k` against the fixture
    /// started with `server_args`.
    fn verify(&self, k: usize, server_args: &[&str]) -> Out {
        let mut cmd = self.stores[k].cmd("mcpeval-verify");
        cmd.env("MCPEVAL_DATABASE_URL", &self.db.url)
            .env("PROBE_FIXTURE_LOG", &self.log)
            .args(["--finding", &self.finding, "--case", "status", "--manifest"])
            .arg(&self.manifest)
            .arg("--")
            .args(self.argv(server_args));
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            text(&out.stdout),
            text(&out.stderr),
        )
    }

    /// `name ARGS…` on store `k` and the team database, as a duct
    /// expression (its environment is the store's and `env`, no more).
    fn duct(&self, k: usize, name: &str, args: &[&str], env: &[(&str, &str)]) -> duct::Expression {
        let mut pairs = self.stores[k].env_pairs();
        pairs.push(("MCPEVAL_DATABASE_URL".into(), self.db.url.clone()));
        pairs.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        duct::cmd(crate::support::bin(name), args).full_env(pairs)
    }

    /// The verify line a run prints, for the run id it printed.
    fn line(&self, out: &Out, result: &str, state: &str, streak: u32) -> String {
        let at = out
            .1
            .find(" run=")
            .unwrap_or_else(|| panic!("no run id in {out:?}"));
        let run = &out.1[at + 5..at + 5 + 36];
        let mut line = format!(
            "{} case=status result={result} state={state} streak={streak}/3 run={run}",
            self.finding
        );
        if result == "red" {
            line.push_str(" reason=not-equal\n  hint: A result field differs from the value the case expects: return what the contract promises.");
        }
        line + "\n"
    }

    #[track_caller]
    fn expect(&self, out: &Out, status: i32, result: &str, state: &str, streak: u32) {
        assert_eq!(
            (out.0, out.1.clone()),
            (status, self.line(out, result, state, streak)),
            "stderr: {}",
            out.2
        );
    }

    /// (state, streak, reopened) of the finding as store `k` reads it.
    fn lifecycle(&self, k: usize) -> (String, u64, u64) {
        let all = findings_of(&self.stores[k], &self.db);
        let f = all
            .iter()
            .find(|f| f["id"] == self.finding.as_str())
            .unwrap_or_else(|| panic!("store {k} lost the finding: {all:#?}"));
        (
            f["state"].as_str().unwrap().to_owned(),
            f["streak"].as_u64().unwrap(),
            f["reopened"].as_u64().unwrap(),
        )
    }

    /// Store `k`'s `findings --history --format json`.
    fn history(&self, k: usize) -> Value {
        let json = ok(
            &self.stores[k],
            Some(&self.db),
            "mcpeval-findings",
            &["--history", "--format", "json"],
        );
        serde_json::from_str(&json).unwrap()
    }

    /// `ARGS…` of `mcpeval-findings` on the read-only reader.
    fn read_only(&self, args: &[&str]) -> Value {
        let out = self
            .reader
            .cmd("mcpeval-findings")
            .env("MCPEVAL_DATABASE_URL", self.db.read_only_url())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_str(&text(&out.stdout)).unwrap()
    }

    /// Every store, and the read-only reader, reads the same history; its
    /// runs are (run id, result).
    fn runs(&self) -> Vec<(String, String)> {
        let first = self.history(0);
        for k in 1..self.stores.len() {
            assert_eq!(self.history(k), first, "store {k}");
        }
        assert_eq!(
            self.read_only(&["--history", "--format", "json"]),
            first,
            "the read-only reader"
        );
        let entry = &first["history"][0];
        assert_eq!(entry["finding"], self.finding.as_str(), "{first}");
        entry["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["run_id"].as_str().unwrap().to_owned(),
                    r["result"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    #[track_caller]
    fn everywhere(&self, state: &str, streak: u64, reopened: u64) {
        for k in 0..self.stores.len() {
            assert_eq!(
                self.lifecycle(k),
                (state.to_owned(), streak, reopened),
                "store {k}"
            );
        }
        let all = self.read_only(&["--format", "json"]);
        let f = all["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == self.finding.as_str())
            .unwrap_or_else(|| panic!("the read-only reader lost the finding: {all:#}"));
        assert_eq!(
            (
                f["state"].as_str().unwrap(),
                f["streak"].as_u64().unwrap(),
                f["reopened"].as_u64().unwrap()
            ),
            (state, streak, reopened),
            "the read-only reader"
        );
    }
}

fn findings_of(store: &Store, db: &Database) -> Vec<Value> {
    let json = ok(store, Some(db), "mcpeval-findings", &["--format", "json"]);
    serde_json::from_str::<Value>(&json).unwrap()["findings"]
        .as_array()
        .unwrap()
        .clone()
}

fn run_id(out: &Out) -> String {
    let at = out.1.find(" run=").unwrap();
    out.1[at + 5..at + 5 + 36].to_owned()
}

#[test]
fn a_verification_begun_on_one_store_and_closed_on_another_closes_it_for_all() {
    let team = Team::new();
    team.everywhere("open", 0, 0);

    let on_a = team.verify(0, &[]);
    team.expect(&on_a, 0, "green", "verifying", 1);
    let on_b = team.verify(1, &[]);
    team.expect(&on_b, 0, "green", "verifying", 2);
    // A result probed on B and piped into `verify --record -` on C is the
    // third green.
    let mut probe_args = vec!["--case", "status", "--manifest"];
    probe_args.push(team.manifest.to_str().unwrap());
    probe_args.push("--");
    let argv = team.argv(&[]);
    probe_args.extend(argv.iter().map(String::as_str));
    let log = team.log.display().to_string();
    let piped = team
        .duct(
            1,
            "mcpeval-probe",
            &probe_args,
            &[("PROBE_FIXTURE_LOG", &log)],
        )
        .pipe(team.duct(2, "mcpeval-verify", &["--record", "-"], &[]))
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .unwrap();
    let on_c: Out = (
        piped.status.code().unwrap_or(-1),
        text(&piped.stdout),
        text(&piped.stderr),
    );
    team.expect(&on_c, 0, "green", "closed", 3);

    team.everywhere("closed", 3, 0);
    let green = |out: &Out| (run_id(out), "green".to_owned());
    assert_eq!(team.runs(), [green(&on_a), green(&on_b), green(&on_c)]);

    // A red run on any store reopens the finding for every store, and the
    // next streak starts from nothing wherever it is run.
    let red = team.verify(2, &["--status", "pending"]);
    team.expect(&red, 1, "red", "open", 0);
    team.everywhere("open", 0, 1);
    let again = team.verify(0, &[]);
    team.expect(&again, 0, "green", "verifying", 1);
    team.everywhere("verifying", 1, 1);
    assert_eq!(
        team.runs(),
        [
            green(&on_a),
            green(&on_b),
            green(&on_c),
            (run_id(&red), "red".to_owned()),
            green(&again),
        ]
    );
}

/// Every row of every table of the team database (partitions included)
/// and its catalog of tables, as text: equal dumps are equal databases.
fn dump(db: &Database) -> String {
    let tables = db.psql(
        "SELECT schemaname || '.' || tablename FROM pg_tables
         WHERE schemaname = 'mcpeval' ORDER BY 1",
    );
    assert!(tables.contains("mcpeval.life_history"), "{tables}");
    let mut out = tables.clone();
    for table in tables.lines() {
        out += &db.psql(&format!(
            "SELECT '{table}', count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), ''))
             FROM {table} t"
        ));
    }
    out + &db.psql("SELECT key, value FROM mcpeval.meta ORDER BY key")
}

/// Runs [`every_command`] on `store`: each exits 6 with nothing on stdout
/// and exactly `stderr(binary)` on stderr.
fn each_command_is_refused(
    team: &Team,
    store: &Store,
    result: &Path,
    stderr: impl Fn(&str) -> String,
) {
    for (name, args) in every_command(team, store, result) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, stdout, got) = run(store, Some(&team.db), name, &args);
        assert_eq!(
            (status, stdout.as_str(), got.as_str()),
            (6, "", stderr(name).as_str()),
            "{name} {args:?}"
        );
    }
}

/// Every command that uses the team database, run on `store`: (binary,
/// arguments).
fn every_command(team: &Team, store: &Store, result: &Path) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let out = |name: &str| store.scratch().join(name).display().to_string();
    let mut verify = s(&["--finding", &team.finding, "--case", "status", "--manifest"]);
    verify.push(team.manifest.display().to_string());
    verify.push("--".into());
    verify.extend(team.argv(&[]));
    let mut probe = s(&["--case", "status", "--manifest"]);
    probe.push(team.manifest.display().to_string());
    probe.push("--".into());
    probe.extend(team.argv(&[]));
    vec![
        ("mcpeval-index", vec![]),
        ("mcpeval-findings", s(&["--format", "json"])),
        ("mcpeval-promote", s(&["--threshold", "0", "--now", AS_OF])),
        (
            "mcpeval-annotate",
            s(&[
                "--event-id",
                &records::event(101),
                "--kind",
                "other",
                "--note",
                "seen",
            ]),
        ),
        (
            "mcpeval-close",
            s(&["--finding", &team.finding, "--reason", "accepted"]),
        ),
        ("mcpeval-verify", verify),
        (
            "mcpeval-verify",
            vec!["--record".into(), result.display().to_string()],
        ),
        ("mcpeval-probe", probe),
        (
            "mcpeval-generate",
            s(&[
                "--finding",
                &team.finding,
                "--confirm-read-only",
                "--output",
                &out("m.json"),
            ]),
        ),
        ("mcpeval-export-issues", s(&["--dir", &out("issues")])),
        ("mcpeval-readiness", vec![]),
        ("mcpeval-report", s(&["--output", &out("report.html")])),
        ("mcpeval-share", s(&["--output", &out("team.share.json")])),
    ]
}

/// A green result of case `status`, probed on store 0 and signed with the
/// team's salt.
fn signed_result(team: &Team) -> PathBuf {
    let out = team.stores[0]
        .cmd("mcpeval-probe")
        .env("MCPEVAL_DATABASE_URL", &team.db.url)
        .env("PROBE_FIXTURE_LOG", &team.log)
        .args(["--case", "status", "--manifest"])
        .arg(&team.manifest)
        .arg("--")
        .args(team.argv(&[]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = team.stores[0].scratch().join("result.json");
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

/// `postgres://mcpeval@127.0.0.1:PORT/NAME`, as every message shows it.
fn shown(db: &Database) -> &str {
    &db.url
}

#[test]
fn a_store_with_another_salt_or_none_is_refused_before_anything_is_written() {
    let team = Team::new();
    let result = signed_result(&team);
    // A store with a salt of its own, and one with none yet; both have a
    // journal to upload and a manifest case to run.
    let other = store_with(None, &[]);
    ok(
        &other,
        None,
        "mcpeval-salt",
        &[
            "--export",
            other.scratch().join("own.salt").to_str().unwrap(),
        ],
    );
    let bare = store_with(None, &[]);
    for store in [&other, &bare] {
        std::fs::copy(
            team.stores[0]
                .home()
                .join("journals")
                .join(records::journal_name(1)),
            records::journal(store, 1),
        )
        .unwrap();
    }
    let before = dump(&team.db);
    let other_salt = std::fs::read(other.home().join(".salt")).unwrap();
    for (store, words) in [
        (
            &other,
            format!(
                "this store's salt ({}) is not the team's salt of {}: its ids would never match the team's; nothing was written",
                other.home().join(".salt").display(),
                shown(&team.db)
            ),
        ),
        (
            &bare,
            format!(
                "this store ({}) has no salt yet, and the team database {} has one; nothing was written",
                bare.home().display(),
                shown(&team.db)
            ),
        ),
    ] {
        each_command_is_refused(&team, store, &result, |name| {
            format!(
                "{name}: error: {words}\n  hint: every machine of a team shares one salt: on a machine of the team run `mcpeval salt --export FILE`, then here `mcpeval salt --import FILE` (before this store's first capture)\n"
            )
        });
    }
    assert_eq!(dump(&team.db), before, "the database changed");
    assert_eq!(
        std::fs::read(other.home().join(".salt")).unwrap(),
        other_salt
    );
    assert!(!bare.home().join(".salt").exists(), "a salt was made");
    for store in [&other, &bare] {
        // Neither probe nor verify ran the server: nothing was journaled.
        assert_eq!(store.journals().len(), 1);
    }
}

#[test]
fn a_database_from_a_newer_release_is_refused_by_every_command() {
    let team = Team::new();
    let result = signed_result(&team);
    let version: i64 = team
        .db
        .psql("SELECT value FROM mcpeval.meta WHERE key = 'schema_version'")
        .trim()
        .parse()
        .unwrap();
    team.db.psql(&format!(
        "UPDATE mcpeval.meta SET value = '{}' WHERE key = 'schema_version'",
        version + 1
    ));
    let before = dump(&team.db);
    let store = &team.stores[1];
    let journals = store.journals();
    each_command_is_refused(&team, store, &result, |name| {
        format!(
            "{name}: error: the team database {} has schema version {}; this mcpeval knows versions up to {version}: the database is from a newer release; nothing was written\n  hint: upgrade mcpeval on this machine to the release the team uses\n",
            shown(&team.db),
            version + 1
        )
    });
    assert_eq!(dump(&team.db), before, "the database changed");
    assert_eq!(store.journals(), journals, "a probe was journaled");
}

#[test]
fn lifecycle_changes_from_many_stores_at_once_all_land() {
    let team = Team::new();
    // Ten annotations and a closing, from three stores at the same moment.
    std::thread::scope(|scope| {
        for n in 0..10u64 {
            let team = &team;
            scope.spawn(move || {
                let store = &team.stores[n as usize % 3];
                let note = format!("note {n}");
                ok(
                    store,
                    Some(&team.db),
                    "mcpeval-annotate",
                    &[
                        "--event-id",
                        &records::event(101 + n),
                        "--kind",
                        "other",
                        "--note",
                        &note,
                    ],
                )
            });
        }
        let team = &team;
        scope.spawn(move || {
            ok(
                &team.stores[1],
                Some(&team.db),
                "mcpeval-close",
                &["--finding", &team.finding, "--reason", "accepted"],
            )
        });
    });
    let rows = team
        .db
        .psql("SELECT count(*), count(DISTINCT id), string_agg(note, ',' ORDER BY note) FROM mcpeval.life_annotations");
    let notes: Vec<String> = {
        let mut v: Vec<String> = (0..10).map(|n| format!("note {n}")).collect();
        v.sort();
        v
    };
    assert_eq!(rows, format!("10|10|{}\n", notes.join(",")));
    let closed = team.db.psql(&format!(
        "SELECT s.state, count(h.*) FROM mcpeval.life_finding_state s
         JOIN mcpeval.life_history h USING (finding_id)
         WHERE finding_id = '{}' AND h.to_state = 'closed' GROUP BY s.state",
        team.finding
    ));
    assert_eq!(closed, "closed|1\n");
    // Annotations are evidence: after the next index and promote, every
    // store reads the finding closed.
    ok(&team.stores[2], Some(&team.db), "mcpeval-index", &[]);
    ok(
        &team.stores[2],
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    team.everywhere("closed", 0, 0);
}

const PASSWORD: &str = "pw-Zq8v3Kx1";

/// A role of `db` that must give `PASSWORD` (scram-sha-256) when it
/// connects over TCP, as a team's server would ask; returns its name.
/// The line that asks is put first in the server's pg_hba.conf, and
/// names this database and role alone, so other tests keep trust.
fn password_role(db: &Database) -> String {
    let role = format!("pw_{}", db.name);
    db.psql(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'; ALTER DATABASE {} OWNER TO {role}",
        db.name
    ));
    db.prepend_hba(&format!(
        "host {} {role} 127.0.0.1/32 scram-sha-256",
        db.name
    ));
    role
}

/// `run` with extra environment and no database but what `env` and `args`
/// give.
fn run_env(store: &Store, name: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = store.cmd(name);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn a_password_in_config_json_is_refused_without_showing_it() {
    let db = crate::postgres::database();
    let port = Postgres::get().port();
    let store = store_with(None, &[]);
    let config = store.home().join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"database_url": "postgres://mcpeval:{PASSWORD}@127.0.0.1:{port}/{}"}}"#,
            db.name
        ),
    )
    .unwrap();
    let before = db.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'mcpeval'");
    for name in ["mcpeval-index", "mcpeval-findings", "mcpeval-annotate"] {
        let args: &[&str] = match name {
            "mcpeval-annotate" => &[
                "--event-id",
                "6f1c2a3b-4d5e-4f60-8a7b-000000000001",
                "--kind",
                "other",
                "--note",
                "x",
            ],
            _ => &[],
        };
        let (status, stdout, stderr) = run(&store, None, name, args);
        assert_eq!(
            (status, stdout.as_str(), stderr.as_str()),
            (
                4,
                "",
                format!(
                    "{name}: error: database_url in {} is not a usable connection string or postgres:// URL: it carries a password; keep passwords in PGPASSWORD or ~/.pgpass\n",
                    config.display()
                )
                .as_str()
            )
        );
        assert!(!stderr.contains(PASSWORD));
    }
    assert_eq!(
        db.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'mcpeval'"),
        before
    );
}

#[test]
fn passwords_come_from_the_flag_the_environment_pgpassword_and_pgpass_and_are_never_shown() {
    let db = crate::postgres::database();
    let port = Postgres::get().port();
    let role = password_role(&db);
    let bare = format!("postgres://{role}@127.0.0.1:{port}/{}", db.name);
    let with = format!("postgres://{role}:{PASSWORD}@127.0.0.1:{port}/{}", db.name);
    let store = store_with(None, &[]);
    records::write(&store, 1, &records::lines(&[Rec::ok(1, 1, 1, "status")]));
    let never_shown = |out: &Out| {
        assert!(
            !out.1.contains(PASSWORD) && !out.2.contains(PASSWORD),
            "{out:?}"
        );
        assert!(!out.1.contains("pw-") && !out.2.contains("pw-"), "{out:?}");
    };
    let refused = |out: &Out, shown: &str| {
        never_shown(out);
        assert_eq!(out.0, 3, "{out:?}");
        let start = format!("mcpeval-index: error: cannot reach the team database {shown}: ");
        assert!(out.2.starts_with(&start), "{out:?}");
        assert!(
            out.2.ends_with("\n  hint: check that the server runs and lets this user in (password from PGPASSWORD or ~/.pgpass)\n"),
            "{out:?}"
        );
    };

    // Without a password, or with a wrong one, the server lets nobody in.
    refused(
        &run_env(
            &store,
            "mcpeval-index",
            &[],
            &[("MCPEVAL_DATABASE_URL", &bare)],
        ),
        &bare,
    );
    refused(
        &run_env(
            &store,
            "mcpeval-index",
            &[],
            &[("MCPEVAL_DATABASE_URL", &bare), ("PGPASSWORD", "not-it")],
        ),
        &bare,
    );
    assert_eq!(
        db.psql("SELECT to_regclass('mcpeval.meta') IS NULL").trim(),
        "t"
    );

    // The flag and the environment may carry the password.
    let shown = format!("team {bare}: uploaded");
    let index = |args: &[&str], env: &[(&str, &str)]| {
        let out = run_env(&store, "mcpeval-index", args, env);
        assert_eq!(out.0, 0, "{args:?} {env:?}: {out:?}");
        never_shown(&out);
        assert!(
            out.1.contains("\"team\"") || out.2.contains(&shown),
            "{out:?}"
        );
    };
    index(&["--database", &with], &[]);
    index(&["--format", "json"], &[("MCPEVAL_DATABASE_URL", &with)]);
    // So may PGPASSWORD and the password file, which must be private.
    index(
        &[],
        &[("MCPEVAL_DATABASE_URL", &bare), ("PGPASSWORD", PASSWORD)],
    );
    let pgpass = store.scratch().join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{port}:{}:{role}:{PASSWORD}\n", db.name),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    index(&[], &[("MCPEVAL_DATABASE_URL", &bare)]);
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    refused(
        &run_env(
            &store,
            "mcpeval-index",
            &[],
            &[("MCPEVAL_DATABASE_URL", &bare)],
        ),
        &bare,
    );
    assert_eq!(db.psql("SELECT count(*) FROM mcpeval.calls").trim(), "1");

    // A server that is not there: the URL is shown without its password.
    let gone = crate::support::free_port();
    refused(
        &run_env(
            &store,
            "mcpeval-index",
            &[
                "--database",
                &format!("postgres://{role}:{PASSWORD}@127.0.0.1:{gone}/{}", db.name),
            ],
            &[],
        ),
        &format!("postgres://{role}@127.0.0.1:{gone}/{}", db.name),
    );
}

/// Why a row lacking the team salt's MAC is refused.
const NO_MAC: &str =
    "does not carry a valid MAC of the team salt: it was not written by a store of this team";

/// What `name` prints on stderr when it stops at `row` of `table`, for
/// `why` (status 3).
fn refusal(team: &Team, name: &str, row: &str, table: &str, why: &str) -> String {
    let hint = if table.starts_with("mcpeval.cat_") {
        "run `mcpeval promote`, which recomputes the team's findings and replaces this row"
    } else {
        "restore the row as a store of the team wrote it (from a backup of the database), or \
         delete it; only mcpeval, with the team salt, writes the team's lifecycle"
    };
    format!(
        "{name}: error: team database {}: row {row} of {table} {why}; nothing was written\n  hint: {hint}\n",
        shown(&team.db)
    )
}

#[test]
fn a_state_forged_in_the_database_is_refused_and_never_shown_as_closed() {
    let team = Team::new();
    let result = signed_result(&team);
    let state = |team: &Team| {
        team.db.psql(&format!(
            "SELECT state, streak FROM mcpeval.life_finding_state WHERE finding_id = '{}'",
            team.finding
        ))
    };
    assert_eq!(state(&team), "open|0\n");
    // Someone who can write the database, but has no salt.
    team.db.psql(&format!(
        "UPDATE mcpeval.life_finding_state SET state = 'closed', streak = 3 WHERE finding_id = '{}'",
        team.finding
    ));
    let row = format!("finding_id=\"{}\"", team.finding);
    let table = "mcpeval.life_finding_state";
    for format in ["agent", "json", "md"] {
        let (status, stdout, stderr) = run(
            &team.stores[1],
            Some(&team.db),
            "mcpeval-findings",
            &["--format", format],
        );
        assert_eq!(
            (status, stdout.as_str(), stderr.as_str()),
            (
                3,
                "",
                refusal(&team, "mcpeval-findings", &row, table, NO_MAC).as_str()
            ),
            "{format}"
        );
    }
    // Every command that reads the finding stops at it, and changes
    // nothing; indexing and annotating read no row of it, and go on.
    let before = dump(&team.db);
    let store = &team.stores[1];
    for (name, args) in every_command(&team, store, &result) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, stdout, stderr) = run(store, Some(&team.db), name, &args);
        assert!(!stdout.contains("consecutive green"), "{name}: {stdout}");
        match name {
            "mcpeval-index" | "mcpeval-annotate" => assert_eq!(status, 0, "{name}: {stderr}"),
            "mcpeval-report" => {
                assert_eq!(status, 3, "{name}: {stderr}");
                assert!(
                    stderr.contains(&format!("row {row} of {table} {NO_MAC}")),
                    "{stderr}"
                );
            }
            _ => assert_eq!(
                (status, stdout.as_str(), stderr.as_str()),
                (3, "", refusal(&team, name, &row, table, NO_MAC).as_str()),
                "{name} {args:?}"
            ),
        }
    }
    let after = dump(&team.db);
    let annotation_only = |dump: &str| {
        dump.lines()
            .filter(|l| {
                !l.starts_with("mcpeval.life_annotations|")
                    && !l.starts_with("mcpeval.meta|")
                    && !l.starts_with("generation|")
                    && !l.starts_with("changed_at|")
                    && !l.starts_with("mcpeval.stores|")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(annotation_only(&after), annotation_only(&before));
    // The forged row is still there, as it was written.
    assert_eq!(state(&team), "closed|3\n");

    // Restored as the team wrote it (its MAC never changed), it reads
    // again.
    team.db.psql(&format!(
        "UPDATE mcpeval.life_finding_state SET state = 'open', streak = 0 WHERE finding_id = '{}'",
        team.finding
    ));
    ok(&team.stores[1], Some(&team.db), "mcpeval-index", &[]);
    ok(
        &team.stores[1],
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    team.everywhere("open", 0, 0);
}

#[test]
fn a_forged_run_or_finding_row_is_refused_alike() {
    let team = Team::new();
    let findings = |format: &str| {
        run(
            &team.stores[2],
            Some(&team.db),
            "mcpeval-findings",
            &["--format", format],
        )
    };
    let refused = |row: &str, table: &str, why: &str| {
        for format in ["agent", "json"] {
            let (status, stdout, stderr) = findings(format);
            assert_eq!(
                (status, stdout.as_str(), stderr.as_str()),
                (
                    3,
                    "",
                    refusal(&team, "mcpeval-findings", row, table, why).as_str()
                ),
                "{format}"
            );
            assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
        }
    };

    // A green run nobody ran.
    team.db.psql(&format!(
        "INSERT INTO mcpeval.life_verifications(id, run_id, finding_id, case_id, result,
             started_at, finished_at, recorded_at, legacy)
         VALUES (7, '6f1c2a3b-4d5e-4f60-8a7b-0000000000aa', '{}', 'status', 'green',
             '2026-11-30T07:00:00Z', '2026-11-30T07:00:01Z', '2026-11-30T07:00:02Z', 0)",
        team.finding
    ));
    refused("id=7", "mcpeval.life_verifications", NO_MAC);
    team.db
        .psql("DELETE FROM mcpeval.life_verifications WHERE id = 7");
    team.everywhere("open", 0, 0);

    // A finding whose tool name would clear an agent's terminal, or whose
    // argument shapes carry a value.
    let row = format!("id=\"{}\"", team.finding);
    let finding = |set: &str| {
        team.db.psql(&format!(
            "UPDATE mcpeval.cat_findings SET {set} WHERE id = '{}'",
            team.finding
        ))
    };
    finding("tool = E'get\\x1b[2Jstatus'");
    refused(
        &row,
        "mcpeval.cat_findings",
        "holds a tool name capture never writes, \"get\\u001b[2Jstatus\" (the name holds the \
         control, bidirectional or invisible character U+001B at byte 3)",
    );
    finding("tool = 'status', args_shapes = '[{\"city\": \"Paris\"}]'");
    refused(
        &row,
        "mcpeval.cat_findings",
        "holds argument shapes capture never writes (/0/city: a shape holds JSON type names \
         (string, integer, number, boolean, null, object, array), never a value)",
    );
    // Names and shapes as capture writes them, but not the team's.
    finding("args_shapes = '[]'");
    refused(&row, "mcpeval.cat_findings", NO_MAC);
    // promote recomputes the team's findings, and the row with them.
    ok(
        &team.stores[0],
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    team.everywhere("open", 0, 0);
}

#[test]
fn a_forged_row_of_one_finding_stops_nothing_that_reads_another() {
    let team = Team::new();
    // Rows about finding G, which no store of the team wrote: its state
    // closed, a green run and a history line, on the ids the team's own
    // next run and history line would take; and an annotation on the id
    // the next annotation would take.
    let g = "finding-0123456789abcdef";
    assert_ne!(team.finding, g);
    let bad = "ab".repeat(32);
    team.db.psql(&format!(
        "INSERT INTO mcpeval.life_finding_state(finding_id, state, streak, probe_attached,
             reopened, updated_at, server, tool, mac)
         VALUES ('{g}', 'closed', 3, 1, 0, '2026-11-30T07:00:00Z', 'probe-fixture', 'status', '{bad}');
         INSERT INTO mcpeval.life_verifications(id, run_id, finding_id, case_id, result,
             recorded_at, legacy, mac)
         SELECT coalesce(max(id), 0) + 1, '6f1c2a3b-4d5e-4f60-8a7b-0000000000aa', '{g}',
             'status', 'green', '2026-11-30T07:00:00Z', 0, '{bad}'
         FROM mcpeval.life_verifications;
         INSERT INTO mcpeval.life_history(id, finding_id, at, event, from_state, to_state, mac)
         SELECT coalesce(max(id), 0) + 1, '{g}', '2026-11-30T07:00:00Z', 'closed', 'open',
             'closed', '{bad}'
         FROM mcpeval.life_history;
         INSERT INTO mcpeval.life_annotations(id, created_at, kind, note, event_id, mac)
         SELECT coalesce(max(id), 0) + 1, '2026-11-30T07:00:00Z', 'other', 'forged', '{}', '{bad}'
         FROM mcpeval.life_annotations",
        records::event(102)
    ));
    let forged = || {
        team.db.psql(&format!(
            "SELECT 'state', finding_id, state, mac FROM mcpeval.life_finding_state WHERE finding_id = '{g}'
             UNION ALL SELECT 'run', id::text, result, mac FROM mcpeval.life_verifications WHERE finding_id = '{g}'
             UNION ALL SELECT 'history', id::text, event, mac FROM mcpeval.life_history WHERE finding_id = '{g}'
             UNION ALL SELECT 'note', id::text, note, mac FROM mcpeval.life_annotations WHERE note = 'forged'
             ORDER BY 1"
        ))
    };
    let before = forged();
    assert_eq!(before.lines().count(), 4, "{before}");

    // What reads every finding stops at the first of them.
    let (status, stdout, stderr) = run(
        &team.stores[1],
        Some(&team.db),
        "mcpeval-findings",
        &["--format", "json"],
    );
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (
            3,
            "",
            refusal(
                &team,
                "mcpeval-findings",
                "id=1",
                "mcpeval.life_annotations",
                &format!("{NO_MAC} (and 3 more rows of the team database this command reads)"),
            )
            .as_str()
        )
    );

    // What reads F alone goes on: a run, a probed result recorded on
    // another store, an annotation, a closing by hand.
    let on_a = team.verify(0, &[]);
    team.expect(&on_a, 0, "green", "verifying", 1);
    let result = signed_result(&team);
    let recorded = ok(
        &team.stores[1],
        Some(&team.db),
        "mcpeval-verify",
        &["--record", result.to_str().unwrap()],
    );
    assert!(
        recorded.contains("result=green state=verifying streak=2/3"),
        "{recorded}"
    );
    // The annotation's id, as printed, is past the forged one's.
    let annotation = ok(
        &team.stores[2],
        Some(&team.db),
        "mcpeval-annotate",
        &[
            "--event-id",
            &records::event(101),
            "--kind",
            "other",
            "--note",
            "seen",
        ],
    );
    let stored = team
        .db
        .psql("SELECT id FROM mcpeval.life_annotations WHERE note = 'seen'");
    assert_eq!((annotation.as_str(), stored.as_str()), ("2\n", "2\n"));
    ok(
        &team.stores[2],
        Some(&team.db),
        "mcpeval-close",
        &["--finding", &team.finding, "--reason", "accepted"],
    );
    // The forged rows are still there, each with the MAC it came with.
    assert_eq!(forged(), before);

    // Deleted, as the hint says, the team reads F's runs and its closing.
    team.db.psql(&format!(
        "DELETE FROM mcpeval.life_finding_state WHERE finding_id = '{g}';
         DELETE FROM mcpeval.life_verifications WHERE finding_id = '{g}';
         DELETE FROM mcpeval.life_history WHERE finding_id = '{g}';
         DELETE FROM mcpeval.life_annotations WHERE note = 'forged'"
    ));
    // (The annotation is evidence: the findings are promoted again first.)
    ok(&team.stores[0], Some(&team.db), "mcpeval-index", &[]);
    ok(
        &team.stores[0],
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let results: Vec<String> = team.runs().into_iter().map(|(_, r)| r).collect();
    assert_eq!(results, ["green", "green"]);
    for k in 0..3 {
        assert_eq!(team.lifecycle(k).0, "closed", "store {k}");
    }
    assert_eq!(
        team.db
            .psql("SELECT count(*) FROM mcpeval.life_annotations")
            .trim(),
        "1"
    );
}

/// The mirrored tables of the team database.
const MIRRORED: [&str; 7] = [
    "life_annotations",
    "life_finding_state",
    "life_verifications",
    "life_history",
    "life_imports",
    "cat_findings",
    "cat_promotion",
];

#[test]
fn rows_from_before_row_macs_are_signed_once_then_held_to_them() {
    let team = Team::new();
    // A run and an annotation, so every table of the lifecycle has rows.
    let on_a = team.verify(0, &[]);
    team.expect(&on_a, 0, "green", "verifying", 1);
    ok(
        &team.stores[2],
        Some(&team.db),
        "mcpeval-annotate",
        &[
            "--event-id",
            &records::event(101),
            "--kind",
            "other",
            "--note",
            "seen",
        ],
    );
    ok(&team.stores[0], Some(&team.db), "mcpeval-index", &[]);
    ok(
        &team.stores[0],
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let read = || {
        ok(
            &team.stores[1],
            Some(&team.db),
            "mcpeval-findings",
            &["--format", "json"],
        )
    };
    let history = team.history(1);
    let expected = read();
    let unsigned = || {
        MIRRORED
            .iter()
            .map(|t| {
                team.db
                    .psql(&format!(
                        "SELECT count(*) FILTER (WHERE mac IS NULL), count(*) FROM mcpeval.{t}"
                    ))
                    .trim()
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    let counts = unsigned();
    for (table, count) in MIRRORED.iter().zip(&counts) {
        let (nulls, rows) = count.split_once('|').unwrap();
        assert_eq!(nulls, "0", "{table}");
        // (A team view imports nothing: its index.db never had evidence.)
        if *table != "life_imports" {
            assert_ne!(rows, "0", "{table} has no rows to sign");
        }
    }

    // The database as the release before rows were signed left it.
    for table in MIRRORED {
        team.db
            .psql(&format!("ALTER TABLE mcpeval.{table} DROP COLUMN mac"));
    }
    team.db
        .psql("UPDATE mcpeval.meta SET value = '2' WHERE key = 'schema_version'");
    // A reader changes nothing, the schema included: it says who can.
    let (status, _, stderr) = run(
        &team.stores[1],
        Some(&team.db),
        "mcpeval-findings",
        &["--format", "json"],
    );
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("schema version 2"), "{stderr}");
    assert!(stderr.contains("run `mcpeval index` once"), "{stderr}");
    // The first command of this release that may write signs every row,
    // trusting it, and they read as before.
    ok(&team.stores[0], Some(&team.db), "mcpeval-index", &[]);
    assert_eq!(read(), expected);
    assert_eq!(unsigned(), counts);
    assert_eq!(team.history(1), history);
    let newest = team
        .db
        .psql("SELECT value FROM mcpeval.meta WHERE key = 'schema_version'");
    assert!(newest.trim().parse::<i64>().unwrap() >= 3, "{newest}");

    // Once: a row that loses its MAC later is refused, not signed again.
    team.db.psql(&format!(
        "UPDATE mcpeval.life_finding_state SET mac = NULL WHERE finding_id = '{}'",
        team.finding
    ));
    let (status, stdout, stderr) = run(
        &team.stores[1],
        Some(&team.db),
        "mcpeval-findings",
        &["--format", "json"],
    );
    assert_eq!(
        (status, stdout.as_str(), stderr.as_str()),
        (
            3,
            "",
            refusal(
                &team,
                "mcpeval-findings",
                &format!("finding_id=\"{}\"", team.finding),
                "mcpeval.life_finding_state",
                NO_MAC
            )
            .as_str()
        )
    );
    let nulls = team.db.psql(&format!(
        "SELECT count(*) FROM mcpeval.life_finding_state WHERE mac IS NULL AND finding_id = '{}'",
        team.finding
    ));
    assert_eq!(nulls.trim(), "1");
}

/// The team's settings may ask for witnessed closures (the row
/// `require_witnessed` of `mcpeval.meta`): then three greens on any store
/// leave the finding verifying for all, as `require_witnessed` in one
/// store's config.json does on its own.
#[test]
fn the_teams_require_witnessed_keeps_an_unwitnessed_streak_verifying_everywhere() {
    let team = Team::new();
    team.db.psql(
        "INSERT INTO mcpeval.meta(key, value) VALUES ('require_witnessed', 'true')
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    );
    for k in 0..3 {
        let out = team.verify(k, &[]);
        team.expect(&out, 0, "green", "verifying", k as u32 + 1);
        assert_eq!(
            out.2.contains("stays verifying: require_witnessed is set"),
            k == 2,
            "{}",
            out.2
        );
    }
    team.everywhere("verifying", 3, 0);
    // Without the setting, the next green closes it, unwitnessed.
    team.db
        .psql("UPDATE mcpeval.meta SET value = 'false' WHERE key = 'require_witnessed'");
    let out = team.verify(1, &[]);
    team.expect(&out, 0, "green", "closed", 3);
    let f = &findings_of(&team.stores[2], &team.db)[0];
    assert_eq!(f["witnessed"], json!(false), "{f}");
}

#[test]
fn a_store_with_a_verifying_finding_joins_with_its_runs_streak_and_state() {
    let team = Team::new();
    // A store with the team's salt that worked alone: failures of the same
    // tool in sessions of its own, in a journal named as the first
    // store's (names need not be unique across stores), promoted, and
    // two green runs.
    let loner = store_with(Some(&team.stores[0].home().join(".salt")), &[]);
    let recs: Vec<Rec> = (1..=2)
        .flat_map(|session| {
            (1..=10).map(move |seq| {
                Rec::error(
                    5000 + session * 100 + seq,
                    session + 50,
                    seq,
                    "status",
                    Some(1),
                )
                .server(FIXTURE_SERVER)
            })
        })
        .collect();
    records::write(&loner, 1, &records::lines(&recs));
    ok(&loner, None, "mcpeval-index", &[]);
    ok(
        &loner,
        None,
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let verify_alone = || -> Out {
        let out = loner
            .cmd("mcpeval-verify")
            .env("PROBE_FIXTURE_LOG", &team.log)
            .args(["--finding", &team.finding, "--case", "status", "--manifest"])
            .arg(&team.manifest)
            .arg("--")
            .args(team.argv(&[]))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            text(&out.stdout),
            text(&out.stderr),
        )
    };
    let first = verify_alone();
    team.expect(&first, 0, "green", "verifying", 1);
    let second = verify_alone();
    team.expect(&second, 0, "green", "verifying", 2);

    // It joins by the README's steps: index, then promote.
    let (status, _, stderr) = run(&loner, Some(&team.db), "mcpeval-index", &[]);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains(
            "joined with a lifecycle of its own: 2 runs and 0 annotations added, 1 finding states recomputed"
        ),
        "{stderr}"
    );
    ok(
        &loner,
        Some(&team.db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    // Every store of the team reads the runs, streak and state it had.
    team.everywhere("verifying", 2, 0);
    let green = |out: &Out| (run_id(out), "green".to_owned());
    assert_eq!(team.runs(), [green(&first), green(&second)]);
    let read = ok(
        &loner,
        Some(&team.db),
        "mcpeval-findings",
        &["--history", "--format", "json"],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&read).unwrap(),
        team.history(0)
    );

    // Its history is brought once; the streak goes on on any store.
    let (status, _, stderr) = run(&loner, Some(&team.db), "mcpeval-index", &[]);
    assert_eq!(status, 0, "{stderr}");
    assert!(!stderr.contains("joined"), "{stderr}");
    let third = team.verify(1, &[]);
    team.expect(&third, 0, "green", "closed", 3);
    team.everywhere("closed", 3, 0);
    assert_eq!(team.runs().len(), 3);
}
