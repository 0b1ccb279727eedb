//! `-` as a file argument, and the suite's commands piped into each other
//! as a shell would: `probe --all | verify --record -`, generate into
//! `probe --manifest -`, and `share --output - | findings --from -`; outputs
//! that are FIFOs, devices or links to them; and the Makefile of docs/ci.md
//! gating CI on the statuses.

use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::records::{self, Rec};
use crate::support::{SYSTEM_PATH, Store, bin_dir, repo, text};
use crate::verify::{Bench, Run, finish, status_case};

/// `case` of the bench's finding, red against the default fixture: its
/// status is "ready", never "done".
fn done_case(finding: &str) -> Value {
    let mut case = status_case(finding);
    case["id"] = json!("done");
    case["expect"] = json!({"outcome": "ok", "equals": {"status": "done"}});
    case
}

fn server_argv(b: &Bench, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["python3".to_owned(), b.server.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    let mut all = head.to_vec();
    all.extend(tail.iter().map(String::as_str));
    all
}

/// Runs `expression` with stdout and stderr captured, whatever its status.
fn run(expression: duct::Expression) -> Run {
    finish(
        expression
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .unwrap(),
    )
}

fn verifications(store: &Store) -> i64 {
    Connection::open(store.home().join("lifecycle.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM verifications", [], |r| r.get(0))
        .unwrap()
}

/// The JSON Lines `probe --all` prints for the bench's manifest.
fn probe_all(b: &Bench, server: &[&str]) -> String {
    let argv = server_argv(b, server);
    let manifest = b.manifest.display().to_string();
    let out = run(b.store.duct(
        "mcpeval-probe",
        &args(&["--manifest", &manifest, "--all", "--"], &argv),
    ));
    assert!(!out.stdout.is_empty(), "{}", out.stderr);
    out.stdout
}

fn record_stdin(b: &Bench, input: &str) -> Run {
    run(b
        .store
        .duct("mcpeval-verify", &["--record", "-"])
        .stdin_bytes(input.as_bytes().to_vec()))
}

#[test]
fn probe_all_piped_into_verify_records_every_case() {
    let b = Bench::new();
    b.cases(json!([status_case(&b.finding), done_case(&b.finding)]));
    let argv = server_argv(&b, &[]);
    let manifest = b.manifest.display().to_string();
    let probe = b.store.duct(
        "mcpeval-probe",
        &args(&["--manifest", &manifest, "--all", "--"], &argv),
    );
    let out = run(probe.pipe(b.store.duct("mcpeval-verify", &["--record", "-"])));
    assert_eq!(out.status, 1, "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    let f = &b.finding;
    assert!(
        lines[0].starts_with(&format!(
            "{f} case=status result=green state=verifying streak=1/3 run="
        )),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&format!(
            "{f} case=done result=red state=open streak=0/3 run="
        )) && lines[1].ends_with(" reason=not-equal"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("  hint: "), "{}", lines[2]);
    assert!(
        out.stderr.ends_with(
            "mcpeval-verify: recorded 2 of 2 results from standard input (1 green, 1 red); \
             0 already recorded, 0 not recorded\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(verifications(&b.store), 2);

    // --format json: one object a line, as JSON Lines again.
    let results = probe_all(&b, &[]);
    let out = run(b
        .store
        .duct("mcpeval-verify", &["--record", "-", "--format", "json"])
        .stdin_bytes(results.into_bytes()));
    assert_eq!(out.status, 1, "{}", out.stderr);
    let facts: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str)> = facts
        .iter()
        .map(|v| (v["case"].as_str().unwrap(), v["result"].as_str().unwrap()))
        .collect();
    assert_eq!(summary, vec![("status", "green"), ("done", "red")]);
    assert_eq!(verifications(&b.store), 4);
}

#[test]
fn a_bad_line_among_the_results_records_nothing() {
    let b = Bench::new();
    b.cases(json!([status_case(&b.finding), done_case(&b.finding)]));
    let results = probe_all(&b, &[]);
    let mut lines: Vec<&str> = results.lines().collect();
    lines.insert(1, "");
    lines.push("{\"schema\": \"mcpeval.probe/1\"");
    let out = record_stdin(&b, &(lines.join("\n") + "\n"));
    assert_eq!((out.status, out.stdout.as_str()), (4, ""), "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            "mcpeval-verify: error: standard input:4: not an mcpeval.probe/1 result: "
        ) && out.stderr.contains("; nothing was recorded"),
        "{}",
        out.stderr
    );
    assert_eq!(verifications(&b.store), 0);
    assert_eq!(b.lifecycle().0, "open");

    // A line too long to be a result: refused by its number, unread.
    let long = format!("{}\n{}\n", lines[0], "x".repeat(70_000));
    let out = record_stdin(&b, &long);
    assert_eq!(out.status, 4, "{}", out.stderr);
    assert!(
        out.stderr.starts_with(
            "mcpeval-verify: error: standard input:2: larger than 65536 bytes: not a probe result; \
             nothing was recorded"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(verifications(&b.store), 0);

    // Nothing at all: the message names standard input, not "-".
    let out = record_stdin(&b, "\n\n");
    assert_eq!(out.status, 4);
    assert!(
        out.stderr
            .starts_with("mcpeval-verify: error: standard input: empty: no probe result to record"),
        "{}",
        out.stderr
    );
}

#[test]
fn each_result_is_held_to_the_recording_rules_and_the_worst_sets_the_status() {
    let b = Bench::new();
    b.cases(json!([status_case(&b.finding), done_case(&b.finding)]));
    let results = probe_all(&b, &[]);
    let lines: Vec<&str> = results.lines().collect();
    let (green, red) = (lines[0], lines[1]);
    let edited = red
        .replace("\"result\":\"red\"", "\"result\":\"green\"")
        .replace("\"reason\":\"not-equal\"", "\"reason\":null")
        .replace(
            "\"detail\":\"/structuredContent/status\"",
            "\"detail\":null",
        );
    assert_ne!(edited, red);

    // A replay adds nothing; an edited result is refused, the rest recorded.
    let input = [green, edited.as_str(), red, green].join("\n");
    let out = record_stdin(&b, &input);
    assert_eq!(out.status, 6, "{}{}", out.stdout, out.stderr);
    let printed: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(printed.len(), 4, "{}", out.stdout);
    assert!(printed[0].contains(" case=status result=green state=verifying streak=1/3 "));
    assert!(printed[1].contains(" case=done result=red state=open "));
    assert!(
        printed[3].contains(" already recorded: no credit added (state=open streak=0/3)"),
        "{}",
        printed[3]
    );
    assert!(
        out.stderr.starts_with(
            "mcpeval-verify: error: standard input:2: the result's mac does not verify with this \
             store's salt"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.ends_with(
            "mcpeval-verify: recorded 2 of 4 results from standard input (1 green, 1 red); \
             1 already recorded, 1 not recorded\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(verifications(&b.store), 2);

    // Red beats a transport error, as for probe --all; a transport error
    // alone is status 5, and records nothing.
    let missing = b.store.scratch().join("no-such-server");
    let manifest = b.manifest.display().to_string();
    let broken = run(b.store.duct(
        "mcpeval-probe",
        &[
            "--manifest",
            &manifest,
            "--all",
            "--",
            missing.to_str().unwrap(),
        ],
    ));
    assert_eq!(broken.status, 5, "{}", broken.stderr);
    let broken_lines: Vec<&str> = broken.stdout.lines().collect();
    assert_eq!(broken_lines.len(), 2);
    let fresh = probe_all(&b, &[]);
    let fresh_red = fresh.lines().nth(1).unwrap();
    let out = record_stdin(&b, &format!("{}\n{fresh_red}\n", broken_lines[0]));
    assert_eq!(out.status, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("mcpeval-verify: error: standard input:1: run ")
            && out
                .stderr
                .contains("ended in a transport error (server-start)"),
        "{}",
        out.stderr
    );
    let out = record_stdin(&b, &broken.stdout);
    assert_eq!((out.status, out.stdout.as_str()), (5, ""), "{}", out.stderr);
    assert_eq!(verifications(&b.store), 3);
}

#[test]
fn a_manifest_from_standard_input_is_probed_and_verified() {
    let b = Bench::new();
    let manifest = std::fs::read(&b.manifest).unwrap();
    let argv = server_argv(&b, &[]);
    let probe = run(b
        .store
        .duct(
            "mcpeval-probe",
            &args(&["--manifest", "-", "--case", "status", "--"], &argv),
        )
        .stdin_bytes(manifest.clone()));
    assert_eq!(probe.status, 0, "{}", probe.stderr);
    let result: Value = serde_json::from_str(probe.stdout.trim()).unwrap();
    assert_eq!(
        (result["case"].as_str(), result["result"].as_str()),
        (Some("status"), Some("green"))
    );

    // verify hands its standard input on to the probe it runs.
    let verify = run(b
        .store
        .duct(
            "mcpeval-verify",
            &args(
                &[
                    "--finding",
                    &b.finding,
                    "--case",
                    "status",
                    "--manifest",
                    "-",
                    "--",
                ],
                &argv,
            ),
        )
        .stdin_bytes(manifest));
    assert_eq!(verify.status, 0, "{}", verify.stderr);
    assert!(
        verify.stdout.starts_with(&format!(
            "{} case=status result=green state=verifying streak=1/3 run=",
            b.finding
        )),
        "{}",
        verify.stdout
    );

    // A bad manifest on standard input is named as such.
    let bad = json!({"manifest_version": 1, "cases": [{"id": "x", "retries": 3}]}).to_string();
    let out = run(b
        .store
        .duct(
            "mcpeval-probe",
            &args(&["--manifest", "-", "--case", "x", "--"], &argv),
        )
        .stdin_bytes(bad.into_bytes()));
    assert_eq!(out.status, 4, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("mcpeval-probe: error: standard input: at /cases/0"),
        "{}",
        out.stderr
    );
}

#[test]
fn generate_writes_standard_output_and_reads_its_expect_from_standard_input() {
    let b = Bench::new();
    let dir = b.store.scratch();
    let generate = |extra: &[&str]| {
        let mut all = vec!["--finding", b.finding.as_str(), "--confirm-read-only"];
        all.extend_from_slice(extra);
        b.store.duct("mcpeval-generate", &all).dir(dir)
    };
    let out = run(generate(&["--output", "-"]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["cases"][0]["id"], b.finding.as_str());
    assert!(
        out.stderr.starts_with(&format!(
            "mcpeval-generate: wrote standard output: case {} (",
            b.finding
        )),
        "{}",
        out.stderr
    );
    assert!(!dir.join("-").exists(), "a file named - was written");

    // Piped straight into the probe, which reads the manifest it was
    // given and names it: the captured argument values are still to fill.
    let argv = server_argv(&b, &[]);
    let out = run(generate(&["--output", "-"]).pipe(b.store.duct(
        "mcpeval-probe",
        &args(&["--manifest", "-", "--case", &b.finding, "--"], &argv),
    )));
    assert_eq!((out.status, out.stdout.as_str()), (4, ""), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "mcpeval-probe: error: standard input: case \"{}\" still has 2 placeholder(s) to fill: ",
            b.finding
        )),
        "{}",
        out.stderr
    );

    // --expect - reads the expect object from standard input.
    let expect = r#"{"outcome":"ok","equals_paths":{"/structuredContent/status":"ready"}}"#;
    let out =
        run(generate(&["--expect", "-", "--output", "m.json"])
            .stdin_bytes(expect.as_bytes().to_vec()));
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("m.json")).unwrap()).unwrap();
    assert_eq!(
        doc["cases"][0]["expect"]["equals_paths"]["/structuredContent/status"],
        "ready"
    );
    let out = run(generate(&["--expect", "-", "--output", "n.json"])
        .stdin_bytes(br#"{"outcome":"ok","note":"x"}"#.to_vec()));
    assert_eq!(out.status, 4, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("mcpeval-generate: error: standard input: at /note: unknown field"),
        "{}",
        out.stderr
    );
    assert!(!dir.join("n.json").exists());
}

#[test]
fn share_pipes_into_findings_from_standard_input() {
    let b = Bench::new();
    let dir = b.store.scratch();
    let receiver = Store::new();
    let share = b.store.duct("mcpeval-share", &["--output", "-"]).dir(dir);
    let findings = receiver.duct("mcpeval-findings", &["--from", "-", "--format", "json"]);
    let out = run(share.pipe(findings));
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b.finding.as_str()]);
    assert!(
        out.stderr
            .contains("mcpeval-share: wrote standard output: 1 finding")
    );
    assert!(!dir.join("-").exists(), "a file named - was written");

    let out = run(receiver
        .duct("mcpeval-findings", &["--from", "-"])
        .stdin_bytes(b"{\"schema\":".to_vec()));
    assert_eq!((out.status, out.stdout.as_str()), (4, ""));
    assert!(
        out.stderr
            .starts_with("mcpeval-findings: error: standard input: not valid JSON: "),
        "{}",
        out.stderr
    );
}

/// A FIFO at `path`, made by the system's mkfifo.
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Runs `writer` while a child `cat` reads `fifo`; returns what the
/// writer did and what `cat` read. A writer that fails before it opens
/// the FIFO would leave `cat` waiting, so then `cat` is killed.
fn through_fifo(fifo: &Path, writer: duct::Expression) -> (Run, String) {
    let reader = duct::cmd("cat", [fifo])
        .stdout_capture()
        .unchecked()
        .start()
        .unwrap();
    let wrote = run(writer);
    if wrote.status != 0 {
        reader.kill().unwrap();
        panic!("the writer failed: {}", wrote.stderr);
    }
    let read = reader.wait().unwrap();
    (wrote, text(&read.stdout))
}

#[test]
fn outputs_that_are_not_regular_files_are_written_in_place() {
    let b = Bench::new();
    let dir = b.store.scratch().to_path_buf();
    let generate = |output: &Path, force: bool| {
        let mut all = vec![
            "--finding".to_owned(),
            b.finding.clone(),
            "--confirm-read-only".to_owned(),
            "--output".to_owned(),
            output.display().to_string(),
        ];
        if force {
            all.push("--force".to_owned());
        }
        b.store
            .duct(
                "mcpeval-generate",
                &all.iter().map(String::as_str).collect::<Vec<_>>(),
            )
            .dir(&dir)
    };
    let manifest = run(generate(Path::new("-"), false)).stdout;

    // A FIFO, with and without --force: written into, still a FIFO.
    let fifo = dir.join("manifest.fifo");
    mkfifo(&fifo);
    for force in [false, true] {
        let (_, read) = through_fifo(&fifo, generate(&fifo, force));
        assert_eq!(read, manifest);
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    // A link to a FIFO: share writes through it, and the link stays.
    let link = dir.join("share.json");
    symlink(&fifo, &link).unwrap();
    let (wrote, read) = through_fifo(
        &link,
        b.store
            .duct("mcpeval-share", &["--output", link.to_str().unwrap()]),
    );
    assert!(wrote.stderr.contains(&format!("wrote {}", link.display())));
    let envelope: Value = serde_json::from_str(&read).unwrap();
    assert_eq!(envelope["schema"], "mcpeval.share/1");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());

    // Links to /dev/null and to /dev/stdout, forced: the bytes go where
    // the link points, and neither the link nor the device is replaced.
    let null = dir.join("null.json");
    symlink("/dev/null", &null).unwrap();
    let out = run(generate(&null, true));
    assert_eq!((out.status, out.stdout.as_str()), (0, ""), "{}", out.stderr);
    assert_eq!(
        std::fs::read_link(&null).unwrap(),
        PathBuf::from("/dev/null")
    );
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    let stdout = dir.join("stdout.json");
    symlink("/dev/stdout", &stdout).unwrap();
    let out = run(generate(&stdout, true));
    assert_eq!(
        (out.status, out.stdout.clone()),
        (0, manifest.clone()),
        "{}",
        out.stderr
    );
    assert!(std::fs::symlink_metadata(&stdout).unwrap().is_symlink());
    assert!(
        std::fs::symlink_metadata("/dev/stdout")
            .unwrap()
            .is_symlink()
    );

    // A regular file is still replaced only with --force, and whole.
    let file = dir.join("m.json");
    std::fs::write(&file, "mine").unwrap();
    let out = run(generate(&file, false));
    assert_eq!(out.status, 2);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let out = run(generate(&file, true));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), manifest);

    // So is a regular file at the end of a link: the link's target is
    // what would be overwritten. Forced, it is written through the link.
    std::fs::write(&file, "mine").unwrap();
    let to_file = dir.join("to-m.json");
    symlink(&file, &to_file).unwrap();
    let out = run(generate(&to_file, false));
    assert_eq!(out.status, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("exists; nothing was written"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let out = run(generate(&to_file, true));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert!(std::fs::symlink_metadata(&to_file).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), manifest);
}

/// The ```make block of docs/ci.md, as a file in `dir`.
fn documented_makefile(dir: &Path) -> PathBuf {
    let page = std::fs::read_to_string(repo().join("docs/ci.md")).unwrap();
    let start = page
        .find("```make\n")
        .expect("docs/ci.md has a ```make block")
        + 8;
    let len = page[start..].find("```\n").unwrap();
    let path = dir.join("Makefile");
    std::fs::write(&path, &page[start..start + len]).unwrap();
    path
}

/// One way a CI run can go, and what the documented gate makes of it.
struct Gate {
    name: &'static str,
    /// Prepares the bench and returns the server command.
    server: fn(&Bench) -> String,
    /// The recipe's status (make itself then exits 2), or 0 for a pass.
    status: i32,
    /// What the gate says, on stdout for a pass, on stderr for a failure.
    says: &'static str,
}

fn fixture_server(b: &Bench, args: &str) -> String {
    format!("python3 {} {args}", b.server.display())
}

/// A session of ok calls in a journal of its own, indexed and not
/// promoted: the findings are out of date.
fn out_of_date(b: &Bench) -> String {
    let recs: Vec<Rec> = (1..=3)
        .map(|seq| Rec::ok(900 + seq, 9, seq, "status").server(crate::verify::FIXTURE_SERVER))
        .collect();
    records::write(&b.store, 2, &records::lines(&recs));
    crate::verify::succeed(&b.store, "mcpeval-index", &[]);
    let out = b.store.cmd("mcpeval-findings").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    fixture_server(b, "")
}

/// The gates the test runs.
fn gates() -> Vec<Gate> {
    vec![
        Gate {
            name: "out of date",
            server: out_of_date,
            status: 0,
            says: "mcpeval: findings are out of date: running mcpeval promote",
        },
        Gate {
            name: "green",
            server: |b| fixture_server(b, ""),
            status: 0,
            says: "mcpeval: every case is green",
        },
        Gate {
            name: "red",
            server: |b| fixture_server(b, "--status pending"),
            status: 1,
            says: "mcpeval: a case is red: the defect is still there",
        },
        Gate {
            name: "transport",
            server: |b| {
                b.store
                    .scratch()
                    .join("no-such-server")
                    .display()
                    .to_string()
            },
            status: 5,
            says: "mcpeval: transport failure: the server could not be started or reached",
        },
    ]
}

#[test]
fn the_documented_makefile_gates_ci_on_the_statuses() {
    for gate in gates() {
        let b = Bench::new();
        // Two cases, so verify records JSON Lines, as it does in CI.
        let mut again = status_case(&b.finding);
        again["id"] = json!("again");
        b.cases(json!([status_case(&b.finding), again]));
        let makefile = documented_makefile(b.store.scratch());
        let server = (gate.server)(&b);
        let path = format!("{}:{SYSTEM_PATH}", bin_dir().display());
        let mut env = b.store.env_pairs();
        env.retain(|(k, _)| k != "PATH");
        env.push(("PATH".into(), path));
        let out = run(duct::cmd(
            "make",
            [
                "--no-print-directory".to_owned(),
                "-f".to_owned(),
                makefile.display().to_string(),
                "mcpeval-gate".to_owned(),
                format!("MANIFEST={}", b.manifest.display()),
                format!("SERVER={server}"),
            ],
        )
        .dir(b.store.scratch())
        .full_env(env));
        let name = gate.name;
        if gate.status == 0 {
            assert_eq!(out.status, 0, "{name}: {}{}", out.stdout, out.stderr);
            assert!(out.stdout.contains(gate.says), "{name}: {}", out.stdout);
        } else {
            assert_eq!(
                out.status, 2,
                "{name}: make fails: {}{}",
                out.stdout, out.stderr
            );
            assert!(out.stderr.contains(gate.says), "{name}: {}", out.stderr);
            assert!(
                out.stderr
                    .contains(&format!("mcpeval-gate] Error {}", gate.status)),
                "{name}: {}",
                out.stderr
            );
        }
    }
}
