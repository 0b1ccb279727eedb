//! A PostgreSQL server of the bench's own, for the team store's figures:
//! a fresh cluster in a temporary directory on a free loopback port, with
//! trust authentication for the superuser `mcpeval`, stopped and removed
//! when dropped. As root (where PostgreSQL refuses to run) its programs run
//! as the `postgres` system user, which then owns the directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use mcpeval_testkit::pg_host::{free_port, is_root, newest_packaged_initdb, postgres_user};

/// The superuser every bench database belongs to.
pub const USER: &str = "mcpeval";

pub struct Server {
    initdb: PathBuf,
    pg_ctl: PathBuf,
    pub psql: PathBuf,
    /// `data/`, `sock/`, `log`.
    dir: PathBuf,
    port: u16,
    /// `postgres --version`.
    pub version: String,
}

impl Server {
    /// Initializes and starts a server, or says why it cannot.
    pub fn start() -> Result<Server, String> {
        let initdb = find_initdb().ok_or("no initdb on PATH or under /usr/lib/postgresql/*/bin")?;
        let bin = initdb.parent().ok_or("initdb has no directory")?;
        let (pg_ctl, psql) = (bin.join("pg_ctl"), bin.join("psql"));
        if !pg_ctl.is_file() || !psql.is_file() {
            return Err(format!("no pg_ctl or psql beside {}", initdb.display()));
        }
        if is_root() && postgres_user().is_none() {
            return Err(
                "running as root, and there is no `postgres` user to run PostgreSQL".into(),
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("mcpeval-bench-pg-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?
            .keep();
        let version = Command::new(bin.join("postgres"))
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let mut server = Server {
            initdb,
            pg_ctl,
            psql,
            dir,
            port: 0,
            version,
        };
        let sock = server.dir.join("sock");
        std::fs::create_dir(&sock).map_err(|e| format!("{}: {e}", sock.display()))?;
        if let Some((uid, gid)) = is_root().then(postgres_user).flatten() {
            for path in [&server.dir, &sock] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(|e| format!("giving {} to postgres: {e}", path.display()))?;
            }
        }
        let data = server.dir.join("data");
        server.run(
            &server.initdb,
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
        server.port = free_port();
        // As the tests run it (fsync off), with room for bulk loads
        // between checkpoints.
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_wal_size=1GB",
            server.port,
            sock.display()
        );
        server.run(
            &server.pg_ctl,
            &[
                "-D".into(),
                data.into(),
                "-o".into(),
                options.into(),
                "-l".into(),
                server.dir.join("log").into(),
                "-w".into(),
                "start".into(),
            ],
        )?;
        Ok(server)
    }

    /// `postgres://mcpeval@127.0.0.1:PORT/NAME`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// `psql` on database `name`, without the caller's `PG*` settings.
    pub fn psql_cmd(&self, name: &str, sql: &str) -> Command {
        let mut cmd = Command::new(&self.psql);
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg(self.url(name));
        clear_pg_env(&mut cmd);
        cmd
    }

    /// Runs `sql` in database `name`; returns its rows (unaligned).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let out = self.psql_cmd(name, sql).output().expect("running psql");
        assert!(
            out.status.success(),
            "psql in {name} failed on {sql}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Bytes the cluster's files take.
    pub fn disk(&self) -> u64 {
        self.psql(
            "postgres",
            "SELECT sum(pg_database_size(datname)) FROM pg_database",
        )
        .parse()
        .unwrap_or(0)
    }

    fn run(&self, program: &Path, args: &[OsString]) -> Result<(), String> {
        let mut cmd = match is_root() {
            true => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", "postgres", "--"]).arg(program).args(args);
                cmd
            }
            false => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                cmd
            }
        };
        cmd.current_dir(&self.dir).env("LC_ALL", "C");
        clear_pg_env(&mut cmd);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!(
                "{cmd:?} failed ({}): {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
            )),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        if data.join("postmaster.pid").exists() {
            let _ = self.run(
                &self.pg_ctl,
                &[
                    "-D".into(),
                    data.into(),
                    "-m".into(),
                    "immediate".into(),
                    "-w".into(),
                    "stop".into(),
                ],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn clear_pg_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
}

/// `initdb` on PATH, else the newest packaged one.
fn find_initdb() -> Option<PathBuf> {
    let initdb = crate::store::which("initdb").or_else(newest_packaged_initdb)?;
    Some(std::fs::canonicalize(&initdb).unwrap_or(initdb))
}
