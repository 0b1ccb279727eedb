//! Secrets never reach a command line or a server under test (SPEC §4).
//!
//! A process's command line is readable by every user of the machine, so
//! header values and the URL's query travel from verify to its probe in the
//! environment; `--header-file` keeps them off verify's own command line;
//! and a server the probe starts inherits none of the suite's variables,
//! nor libpq's, nor the team database's URL with its password.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::probe_http::Fixture;
use crate::records::{self, Rec};
use crate::support::{Store, children_of, command_lines_with, fixture, measure, text};
use crate::verify::{AS_OF, FIXTURE_SERVER, promoted_store_of, status_case};

/// A marker no other test uses: a fresh one per call.
fn secret(what: &str) -> String {
    format!("{what}-{}", uuid::Uuid::new_v4().simple())
}

/// A store whose finding is tool `status` of the HTTP fixture, and a
/// manifest whose case proves it, with time to look at the processes of
/// a run while the fixture holds its call.
fn http_bench(store: &Store) -> (String, PathBuf) {
    let finding = promoted_store_of(store, "probe-http-fixture", "status");
    let manifest = store.scratch().join("mcp-eval.manifest.json");
    let mut case = status_case(&finding);
    case["timeout_ms"] = json!(60_000);
    let doc = json!({"manifest_version": 1,
        "sandboxes": {"fixture": {"declaration": "a private fixture on loopback"}},
        "cases": [case]});
    std::fs::write(&manifest, doc.to_string()).unwrap();
    (finding, manifest)
}

/// What the machine's processes showed while a run was in flight.
struct Seen {
    out: Output,
    verify: u32,
    /// Every process whose command line held a secret.
    holding: Vec<(u32, String)>,
    /// The command lines of verify's children then (its probe).
    children: Vec<String>,
}

/// Runs verify with `args` against `fixture` (started with `--hold
/// hold`), and once the fixture holds the case's call, so that verify and
/// its probe are both running, reads every process's command line for
/// each of `secrets`; then lets the call go and waits for verify.
fn in_flight(
    store: &Store,
    fixture: &Fixture,
    hold: &Path,
    args: &[String],
    secrets: &[&str],
) -> Seen {
    let mut cmd = store.cmd("mcpeval-verify");
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let verify = child.0.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fixture.entries().iter().any(|e| e["event"] == "held") {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("verify ended ({status}) before its call was held: {err}");
        }
        assert!(Instant::now() < deadline, "the fixture never held a call");
        std::thread::sleep(Duration::from_millis(20));
    }
    let holding = secrets.iter().flat_map(|s| command_lines_with(s)).collect();
    let children = children_of(verify)
        .into_iter()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|c| text(&c).replace('\0', " "))
        .collect();
    std::fs::write(hold, "").unwrap();
    let out = wait(child);
    Seen {
        out,
        verify,
        holding,
        children,
    }
}

/// Waits for the guarded child and takes its output.
fn wait(mut child: crate::support::Guard) -> Output {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(child.0.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    std::io::Read::read_to_end(child.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let status = child.0.wait().unwrap();
    Output {
        status,
        stdout,
        stderr,
    }
}

fn verify_args(finding: &str, manifest: &Path, url: &str) -> Vec<String> {
    [
        "--finding",
        finding,
        "--case",
        "status",
        "--manifest",
        manifest.to_str().unwrap(),
        "--url",
        url,
    ]
    .map(str::to_owned)
    .to_vec()
}

#[track_caller]
fn green(seen: &Seen, finding: &str, streak: u32) {
    let (stdout, stderr) = (text(&seen.out.stdout), text(&seen.out.stderr));
    assert_eq!(seen.out.status.code(), Some(0), "{stdout}{stderr}");
    let want = format!("{finding} case=status result=green state=verifying streak={streak}/3 run=");
    assert!(stdout.starts_with(&want), "want {want:?}, got {stdout:?}");
}

/// A private file of `mode` holding `text`.
fn write_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn header_values_and_the_query_reach_the_probe_through_its_environment_not_its_command_line() {
    let store = Store::new();
    let (finding, manifest) = http_bench(&store);
    let hold = store.scratch().join("release");
    let fixture = Fixture::start(&store, &["--hold", hold.to_str().unwrap()]);
    let (token, key) = (secret("tok"), secret("key"));
    let url = format!("{}?key={key}", fixture.url());
    let mut args = verify_args(&finding, &manifest, &url);
    args.extend(["--header".into(), format!("Authorization: Bearer {token}")]);

    let seen = in_flight(&store, &fixture, &hold, &args, &[&token, &key]);
    green(&seen, &finding, 1);
    assert!(
        seen.children.iter().any(|c| c.contains("mcpeval-probe")),
        "the probe was not running when the processes were read: {:?}",
        seen.children
    );
    // The user put both on verify's own command line; no other process
    // of the machine shows either.
    let others: Vec<_> = seen
        .holding
        .iter()
        .filter(|(pid, _)| *pid != seen.verify)
        .collect();
    assert!(others.is_empty(), "secrets on a command line: {others:?}");
    assert_eq!(
        seen.holding
            .iter()
            .filter(|(pid, _)| *pid == seen.verify)
            .count(),
        2,
        "verify's own command line was not read: {:?}",
        seen.holding
    );
    // And the endpoint got both.
    let entries = fixture.entries();
    let call = entries
        .iter()
        .find(|e| e["body"]["method"] == "tools/call")
        .unwrap();
    assert_eq!(call["headers"]["authorization"], format!("Bearer {token}"));
    assert!(
        call["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("?key={key}"))
    );
}

#[test]
fn a_header_file_keeps_secrets_off_every_command_line_and_binds_as_the_flag_does() {
    let store = Store::new();
    let (finding, manifest) = http_bench(&store);
    let hold = store.scratch().join("release");
    let fixture = Fixture::start(&store, &["--hold", hold.to_str().unwrap()]);
    let token = secret("tok");
    let file = store.scratch().join("mcp.headers");
    write_mode(
        &file,
        &format!("# the service's token\n\nAuthorization: Bearer {token}\r\n  X-Team: blue\n"),
        0o600,
    );
    let mut args = verify_args(&finding, &manifest, &fixture.url());
    args.extend(["--header-file".into(), file.display().to_string()]);

    let seen = in_flight(&store, &fixture, &hold, &args, &[&token]);
    green(&seen, &finding, 1);
    assert!(
        seen.children.iter().any(|c| c.contains("mcpeval-probe")),
        "{:?}",
        seen.children
    );
    assert!(seen.holding.is_empty(), "{:?}", seen.holding);
    let call = fixture
        .entries()
        .into_iter()
        .find(|e| e["body"]["method"] == "tools/call")
        .unwrap();
    assert_eq!(call["headers"]["authorization"], format!("Bearer {token}"));
    assert_eq!(call["headers"]["x-team"], "blue");

    // The same headers given as flags are the same binding: the streak
    // goes on.
    let mut flags = verify_args(&finding, &manifest, &fixture.url());
    flags.extend([
        "--header".into(),
        "x-team: blue".into(),
        "--header".into(),
        format!("Authorization: Bearer {token}"),
    ]);
    let out = store.cmd("mcpeval-verify").args(&flags).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!(
            "{finding} case=status result=green state=verifying streak=2/3"
        )),
        "{stdout}{}",
        text(&out.stderr)
    );
    // probe takes the file too.
    let probe = store
        .cmd("mcpeval-probe")
        .args(["--case", "status", "--manifest"])
        .arg(&manifest)
        .args(["--url", &fixture.url(), "--header-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(probe.status.code(), Some(0), "{}", text(&probe.stderr));
    assert!(!crate::support::contains(&store.all_bytes(), &token));
}

#[test]
fn a_header_file_others_may_read_or_that_is_not_a_file_is_refused() {
    let store = Store::new();
    let token = secret("tok");
    let url = format!("http://127.0.0.1:{}/mcp", crate::support::free_port());
    let manifest = store.scratch().join("m.json");
    let finding = "finding-0123456789abcdef";
    let run = |bin: &str, file: &Path| {
        let mut cmd = store.cmd(bin);
        if bin == "mcpeval-verify" {
            cmd.args(["--finding", finding]);
        }
        cmd.args(["--case", "status", "--manifest"])
            .arg(&manifest)
            .args(["--url", &url, "--header-file"])
            .arg(file);
        // A FIFO must be refused, not waited on.
        let out = measure(cmd, None, Duration::from_secs(30));
        let stderr = text(&out.stderr);
        assert!(!stderr.contains(&token), "{stderr}");
        assert_eq!(out.stdout, b"");
        (out.status, stderr)
    };

    let open = store.scratch().join("open.headers");
    write_mode(&open, &format!("Authorization: Bearer {token}\n"), 0o640);
    for bin in ["mcpeval-verify", "mcpeval-probe"] {
        let (status, stderr) = run(bin, &open);
        assert_eq!(status, 4, "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "{bin}: error: --header-file {} may be read or written by other users (mode 0640); it holds secrets, so it was not read\n  hint: run `chmod 600 {}`",
                open.display(),
                open.display()
            )),
            "{stderr}"
        );
    }
    write_mode(&open, &format!("Authorization: Bearer {token}\n"), 0o602);
    assert_eq!(run("mcpeval-verify", &open).0, 4);

    let fifo = store.scratch().join("fifo.headers");
    let made = Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for bin in ["mcpeval-verify", "mcpeval-probe"] {
        let (status, stderr) = run(bin, &fifo);
        assert_eq!(status, 4, "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "{bin}: error: --header-file {} is not a regular file\n",
                fifo.display()
            )),
            "{stderr}"
        );
    }

    let big = store.scratch().join("big.headers");
    write_mode(&big, &format!("X-Pad: {}\n", "a".repeat(70_000)), 0o600);
    let (status, stderr) = run("mcpeval-probe", &big);
    assert_eq!(status, 4, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "mcpeval-probe: error: --header-file {} is over 65536 bytes; it holds headers, one a line\n",
            big.display()
        )),
        "{stderr}"
    );

    let torn = store.scratch().join("torn.headers");
    write_mode(&torn, &format!("X-Team: blue\nBearer {token}\n"), 0o600);
    let (status, stderr) = run("mcpeval-verify", &torn);
    assert_eq!(status, 4, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "mcpeval-verify: error: --header-file {}:2: it has no colon; write one \"Name: value\" a line\n",
            torn.display()
        )),
        "{stderr}"
    );
    assert!(!store.home().join("lifecycle.db").exists());
}

#[test]
fn a_server_started_by_verify_inherits_none_of_the_suites_variables_nor_the_database_password() {
    let db = crate::postgres::database();
    let store = crate::team::store_with(None, &[]);
    let mut recs = Vec::new();
    for session in 1..=2 {
        for seq in 1..=10 {
            recs.push(
                Rec::error(session * 100 + seq, session, seq, "status", Some(1))
                    .server(FIXTURE_SERVER),
            );
        }
    }
    records::write(&store, 1, &records::lines(&recs));
    crate::team::ok(&store, Some(&db), "mcpeval-index", &[]);
    crate::team::ok(
        &store,
        Some(&db),
        "mcpeval-promote",
        &["--threshold", "0", "--now", AS_OF],
    );
    let finding = crate::team::findings(&store, Some(&db))["findings"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let server = store.scratch().join("server.py");
    std::fs::copy(fixture("probe_server.py"), &server).unwrap();
    let manifest = store.scratch().join("mcp-eval.manifest.json");
    let doc = json!({"manifest_version": 1,
        "sandboxes": {"fixture": {"declaration": "a private copy of the fixture; no network"}},
        "cases": [status_case(&finding)]});
    std::fs::write(&manifest, doc.to_string()).unwrap();

    // The database lets this user in without a password (trust): the one
    // in the URL is there to be leaked, and must not be.
    let password = secret("pw");
    let with_password = db
        .url
        .replacen("mcpeval@", &format!("mcpeval:{password}@"), 1);
    let (pgpassword, pgpassfile) = (secret("pgpw"), secret("pgpass"));
    let dump = store.scratch().join("server-env.json");
    let out = store
        .cmd("mcpeval-verify")
        .args(["--database", &with_password])
        .args(["--finding", &finding, "--case", "status", "--manifest"])
        .arg(&manifest)
        .arg("--")
        .arg("python3")
        .arg(fixture("env_dump.py"))
        .arg("python3")
        .arg(&server)
        .env("ENV_DUMP_FILE", &dump)
        .env("PGPASSWORD", &pgpassword)
        .env("PGPASSFILE", store.scratch().join(&pgpassfile))
        .env("MCPEVAL", "/usr/local/bin/mcpeval")
        .env("KEPT_FOR_THE_SERVER", "kept")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with(&format!("{finding} case=status result=green")),
        "{stdout}"
    );
    assert!(!stdout.contains(&password) && !stderr.contains(&password));

    let env: Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    let env = env.as_object().unwrap();
    let suite: Vec<&String> = env
        .keys()
        .filter(|k| k.starts_with("MCPEVAL") || k.starts_with("PG"))
        .collect();
    assert!(suite.is_empty(), "the server inherited {suite:?}");
    let all = serde_json::to_string(env).unwrap();
    for leaked in [&password, &pgpassword, &pgpassfile] {
        assert!(
            !all.contains(leaked.as_str()),
            "{leaked} reached the server"
        );
    }
    // Everything else of the user's environment is the server's.
    assert_eq!(env["KEPT_FOR_THE_SERVER"], "kept");
    assert_eq!(env["PATH"], crate::support::SYSTEM_PATH);
    assert_eq!(env["ENV_DUMP_FILE"], dump.display().to_string());
}
