//! A real PostgreSQL server for the tests of the team store: one server
//! per test process, started on first use, each test in a database of its
//! own.
//!
//! The server lives in a fresh temporary directory (data directory, Unix
//! socket and log) and listens on a fresh loopback port, with trust
//! authentication for the superuser `mcpeval`, so a test connects with
//! `postgres://mcpeval@127.0.0.1:PORT/NAME` and no password. It is stopped
//! (`pg_ctl stop -m immediate`) and its directory removed when the test
//! process exits, from an `atexit` handler: statics are never dropped.
//!
//! A test process that is killed leaves its server running. That server is
//! harmless to later runs (they use another directory and another port),
//! and the next run that starts a server stops it: each directory records
//! the id of the process that owns it, and a directory whose owner is gone
//! is swept before a new server starts.
//!
//! When the tests run as root, `initdb` and `postgres` refuse to run, so
//! they run as the `postgres` system user (`runuser`, else `su`), which
//! then owns the temporary directory.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use mcpeval_testkit::pg_host::{
    free_port, is_executable, is_root, newest_packaged_initdb, postgres_user,
};

/// The superuser every test database belongs to.
pub const USER: &str = "mcpeval";

/// How the temporary directories of this harness are named.
const PREFIX: &str = "mcpeval-pg-";

/// The one server of this test process.
pub struct Postgres {
    bins: Bins,
    /// The temporary directory: `data/`, `sock/`, `log`, `owner`.
    dir: PathBuf,
    port: u16,
}

/// A database of its own for one test, on the process's server.
pub struct Database {
    /// `postgres://mcpeval@127.0.0.1:PORT/NAME`
    pub url: String,
    pub name: String,
}

/// Whether this machine can run the server: its programs are installed
/// (on `PATH` or under `/usr/lib/postgresql/*/bin`) and, when the tests
/// run as root, there is a `postgres` user to run them as. This does not
/// start the server.
pub fn available() -> bool {
    Bins::find().is_some() && (!is_root() || postgres_user().is_some())
}

/// Creates a fresh, uniquely named database on the server (starting the
/// server on first use) and returns how to reach it.
pub fn database() -> Database {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let server = Postgres::get();
    let name = format!(
        "t_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    server.psql("postgres", &format!("CREATE DATABASE {name}"));
    Database {
        url: server.url(&name),
        name,
    }
}

impl Database {
    /// Runs `sql` with `psql -X -q -A -t -v ON_ERROR_STOP=1` in this
    /// database and returns its stdout (the rows, unaligned, `|` between
    /// columns, no command tags); panics with its stderr when it fails.
    pub fn psql(&self, sql: &str) -> String {
        Postgres::get().psql(&self.name, sql)
    }

    /// The URL of a role of this database that may only read the team's
    /// tables, as the README's read-only role is set up (created on first
    /// use; run again after new tables appear).
    pub fn read_only_url(&self) -> String {
        let role = format!("{}_reader", self.name);
        self.psql(&format!(
            "DO $$ BEGIN
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                 CREATE ROLE {role} LOGIN;
               END IF;
             END $$;
             GRANT CONNECT ON DATABASE {name} TO {role};
             GRANT USAGE ON SCHEMA mcpeval TO {role};
             GRANT SELECT ON ALL TABLES IN SCHEMA mcpeval TO {role};",
            name = self.name
        ));
        self.url
            .replacen(&format!("{USER}@"), &format!("{role}@"), 1)
    }

    /// Puts `line` first in the server's pg_hba.conf and waits for the
    /// server to reload it. The line should name this database alone, so
    /// other tests keep trust; edits are made one at a time.
    pub fn prepend_hba(&self, line: &str) {
        static HBA: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = HBA.lock().unwrap_or_else(|e| e.into_inner());
        let loaded = self.psql("SELECT pg_conf_load_time()");
        // The file is read whole before COPY opens it for writing.
        self.psql(&format!(
            "CREATE TEMP TABLE hba AS
                 SELECT 0::bigint AS n, '{line}' AS line
                 UNION ALL
                 SELECT n, line FROM regexp_split_to_table(pg_read_file(current_setting('hba_file')), E'\\n')
                     WITH ORDINALITY AS l(line, n);
             COPY (SELECT line FROM hba ORDER BY n) TO '{}'",
            self.psql("SELECT current_setting('hba_file')").trim()
        ));
        let errors = self.psql("SELECT count(*) FROM pg_hba_file_rules WHERE error IS NOT NULL");
        assert_eq!(errors.trim(), "0", "pg_hba.conf no longer parses");
        self.psql("SELECT pg_reload_conf()");
        self.wait_for_reload(&loaded);
    }

    /// Waits until the server has reloaded its configuration after the
    /// load time `loaded`.
    pub fn wait_for_reload(&self, loaded: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.psql("SELECT pg_conf_load_time()") == loaded {
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not reload its configuration"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Postgres {
    /// The server, started on the first call. A failure to start panics
    /// in every test that asks, with the same account of what went wrong.
    pub fn get() -> &'static Postgres {
        static SERVER: OnceLock<Result<Postgres, String>> = OnceLock::new();
        let server = SERVER.get_or_init(|| {
            let started = Postgres::start();
            if let Ok(server) = &started {
                let _ = STARTED.set(ServerDir {
                    bins: server.bins.clone(),
                    dir: server.dir.clone(),
                });
                // SAFETY: `stop_at_exit` is an `extern "C" fn()` that only
                // reads a static set above.
                unsafe { libc::atexit(stop_at_exit) };
            }
            started
        });
        match server {
            Ok(server) => server,
            Err(why) => panic!("{why}"),
        }
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// Runs `sql` in database `name` (see [`Database::psql`]).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let mut cmd = Command::new(&self.bins.psql);
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg(self.url(name));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PG") {
                cmd.env_remove(key);
            }
        }
        let out = cmd.output().expect("running psql");
        assert!(
            out.status.success(),
            "psql in {name} failed ({}) on:\n{sql}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("psql printed UTF-8")
    }

    fn start() -> Result<Postgres, String> {
        let bins = Bins::find().ok_or(
            "PostgreSQL is not installed: no initdb on PATH or under \
             /usr/lib/postgresql/*/bin (scripts/test-deps installs it)",
        )?;
        let owner = if is_root() {
            Some(postgres_user().ok_or(
                "the tests run as root, where PostgreSQL refuses to run, \
                 and there is no `postgres` user to run it as",
            )?)
        } else {
            None
        };
        sweep_leftovers(&bins);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir()
            .map_err(|e| format!("creating a temporary directory: {e}"))?
            .keep();
        let server = ServerDir { bins, dir };
        let started = server.start(owner);
        if started.is_err() {
            server.stop();
        }
        let port = started?;
        let ServerDir { bins, dir } = server;
        Ok(Postgres { bins, dir, port })
    }
}

/// The programs of one PostgreSQL installation.
#[derive(Clone)]
struct Bins {
    initdb: PathBuf,
    pg_ctl: PathBuf,
    psql: PathBuf,
}

impl Bins {
    /// `initdb` on PATH, else the newest `/usr/lib/postgresql/*/bin`; the
    /// other programs from the directory `initdb` really lives in.
    fn find() -> Option<Bins> {
        let on_path = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("initdb"))
                .find(|p| is_executable(p))
        });
        let initdb = on_path.or_else(newest_packaged_initdb)?;
        let initdb = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        let dir = initdb.parent()?.to_path_buf();
        let pg_ctl = dir.join("pg_ctl");
        if !is_executable(&pg_ctl) || !is_executable(&dir.join("postgres")) {
            return None;
        }
        let psql = Some(dir.join("psql"))
            .filter(|p| is_executable(p))
            .or_else(|| {
                std::env::split_paths(&std::env::var_os("PATH")?)
                    .map(|d| d.join("psql"))
                    .find(|p| is_executable(p))
            })?;
        Some(Bins {
            initdb,
            pg_ctl,
            psql,
        })
    }
}

/// A server's directory, as the `atexit` handler and the sweep of
/// leftovers know it.
struct ServerDir {
    bins: Bins,
    dir: PathBuf,
}

static STARTED: OnceLock<ServerDir> = OnceLock::new();

extern "C" fn stop_at_exit() {
    if let Some(server) = STARTED.get() {
        server.stop();
    }
}

impl ServerDir {
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Initializes the cluster and starts the server; returns its port.
    fn start(&self, owner: Option<(u32, u32)>) -> Result<u16, String> {
        std::fs::write(self.dir.join("owner"), std::process::id().to_string())
            .map_err(|e| format!("writing {}/owner: {e}", self.dir.display()))?;
        let sock = self.dir.join("sock");
        std::fs::create_dir(&sock).map_err(|e| format!("creating {}: {e}", sock.display()))?;
        if let Some((uid, gid)) = owner {
            for path in [&self.dir, &sock] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(|e| format!("giving {} to postgres: {e}", path.display()))?;
            }
        }
        let data = self.data();
        self.run(
            &self.bins.initdb,
            &[
                "-D".into(),
                data.clone().into(),
                "-U".into(),
                USER.into(),
                "--auth=trust".into(),
                "-E".into(),
                "UTF8".into(),
                "--locale=C".into(),
                "--no-sync".into(),
            ],
        )?;
        // The port is free when picked, but another program may take it
        // before the server binds it: pick again a few times.
        let mut failure = String::new();
        for _ in 0..3 {
            let port = free_port();
            let options = format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c max_connections=200",
                sock.display()
            );
            let log = self.dir.join("log");
            match self.run(
                &self.bins.pg_ctl,
                &[
                    "-D".into(),
                    data.clone().into(),
                    "-o".into(),
                    options.into(),
                    "-l".into(),
                    log.into(),
                    "-w".into(),
                    "start".into(),
                ],
            ) {
                Ok(()) => return Ok(port),
                Err(why) => failure = why,
            }
            if !self.log_tail().contains("could not bind") {
                break;
            }
        }
        Err(failure)
    }

    /// Stops the server, if one runs, and removes the directory.
    fn stop(&self) {
        if self.data().join("postmaster.pid").exists() {
            let _ = self.run(
                &self.bins.pg_ctl,
                &[
                    "-D".into(),
                    self.data().into(),
                    "-m".into(),
                    "immediate".into(),
                    "-w".into(),
                    "stop".into(),
                ],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// Runs a PostgreSQL program, as the `postgres` user when this process
    /// is root, from the server's directory (the program may not be
    /// allowed to read the test's working directory).
    fn run(&self, program: &Path, args: &[OsString]) -> Result<(), String> {
        let mut cmd = if is_root() {
            if let Some(runuser) = find_program("runuser") {
                let mut cmd = Command::new(runuser);
                cmd.args(["-u", "postgres", "--"]).arg(program).args(args);
                cmd
            } else {
                let mut line = format!("exec {}", shell_quote(program.as_os_str()));
                for arg in args {
                    line.push(' ');
                    line.push_str(&shell_quote(arg));
                }
                let mut cmd = Command::new("su");
                cmd.args(["postgres", "-s", "/bin/sh", "-c", &line]);
                cmd
            }
        } else {
            let mut cmd = Command::new(program);
            cmd.args(args);
            cmd
        };
        cmd.current_dir(&self.dir).env("LC_ALL", "C");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("PG") {
                cmd.env_remove(key);
            }
        }
        let shown = format!("{cmd:?}");
        let out: Output = cmd
            .output()
            .map_err(|e| format!("could not run {shown}: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "PostgreSQL did not start: {shown} failed ({})\nstderr:\n{}\nstdout:\n{}\n\
             last lines of the server log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
            self.log_tail()
        ))
    }

    /// The last 30 lines of the server log.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

/// Stops the servers and removes the directories that test processes
/// which no longer exist left behind (a run that was killed).
fn sweep_leftovers(bins: &Bins) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = entry.path();
        let Some(owner) = std::fs::read_to_string(dir.join("owner"))
            .ok()
            .and_then(|pid| pid.trim().parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(owner, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            ServerDir {
                bins: bins.clone(),
                dir,
            }
            .stop();
        }
    }
}

/// `name` on PATH or in the system administrator's directories.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn shell_quote(arg: &std::ffi::OsStr) -> String {
    format!("'{}'", arg.to_string_lossy().replace('\'', r"'\''"))
}

#[test]
fn a_fresh_server_takes_a_database_and_answers_sql() {
    let one = database();
    let other = database();
    assert_ne!(one.name, other.name);
    let port = Postgres::get().port();
    assert_eq!(
        one.url,
        format!("postgres://mcpeval@127.0.0.1:{port}/{}", one.name)
    );

    let rows = one
        .psql("CREATE TABLE t(x int); INSERT INTO t VALUES (1), (2); SELECT x FROM t ORDER BY x");
    assert_eq!(rows, "1\n2\n");
    assert_eq!(one.psql("SELECT current_database()").trim(), one.name);
    assert_eq!(one.psql("SELECT current_user").trim(), "mcpeval");
    let seen = other.psql("SELECT count(*) FROM pg_tables WHERE tablename = 't'");
    assert_eq!(seen.trim(), "0", "a table of one database shows in another");

    // Loopback only: the server is bound to 127.0.0.1 itself, so another
    // loopback address (which a server on every address would answer)
    // finds nobody there.
    assert_eq!(one.psql("SHOW listen_addresses").trim(), "127.0.0.1");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let elsewhere = std::net::TcpStream::connect(("127.0.0.2", port));
    assert!(
        elsewhere.is_err(),
        "the server answers on 127.0.0.2:{port}, not on loopback alone"
    );
}
