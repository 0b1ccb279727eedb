//! Which team database, how to reach it, and how it is shown.
//!
//! `--database URL` › `MCPEVAL_DATABASE_URL` › `database_url` in
//! `config.json`. The text is a libpq connection string (`host=… dbname=…`)
//! or a `postgres://` URL. Passwords come from libpq's usual places —
//! `PGPASSWORD`, then the password file (`PGPASSFILE`, else `~/.pgpass`) —
//! and never from `config.json`. What the suite prints is
//! `postgres://USER@HOST:PORT/DBNAME`: never a password.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::str::FromStr;

use postgres::config::Host;
use postgres::{Client, Config};

use super::tls::{Mode, Tls};

use shared::error::{Error, Result};
use shared::escape;
use shared::home::Home;

pub use shared::DATABASE_ENV;

/// A team database, resolved and ready to connect to.
#[derive(Clone)]
pub struct Database {
    config: Config,
    tls: Tls,
    shown: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Database {
    /// The store's team database, if it has one.
    pub fn resolve(home: &Home) -> Result<Option<Database>> {
        match shared::config::database_url(home)? {
            Some(url) => Database::parse(&url.text, &url.source, url.from_user).map(Some),
            None => Ok(None),
        }
    }

    /// Parses a connection string from `source`. A password is taken from
    /// the text only where the user typed it (`from_user`), never from a
    /// file of settings.
    pub fn parse(text: &str, source: &str, from_user: bool) -> Result<Database> {
        let bad = |why: String| {
            let err =
                format!("{source} is not a usable connection string or postgres:// URL: {why}");
            if from_user {
                Error::usage(err)
            } else {
                Error::rejected(err)
            }
        };
        // The client library knows neither sslrootcert nor the verify-*
        // modes: they are taken out first (see `tls`).
        let (rest, mode, root) = super::tls::split(text).map_err(bad)?;
        // The parser's message never repeats a value; escape it anyway.
        let mut config = Config::from_str(&rest)
            .map_err(|e| bad(escape::terminal(&e.to_string()).into_owned()))?;
        if config.get_password().is_some() && !from_user {
            return Err(bad(
                "it carries a password; keep passwords in PGPASSWORD or ~/.pgpass".to_owned(),
            ));
        }
        defaults(&mut config);
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mode = match mode {
            Some(mode) => mode,
            None => match var("PGSSLMODE") {
                Some(text) => Mode::parse(&text).ok_or_else(|| {
                    bad(format!(
                        "PGSSLMODE {} is none of disable, allow, prefer, require, verify-ca, verify-full",
                        escape::quoted(&text)
                    ))
                })?,
                None => Mode::Prefer,
            },
        };
        config.ssl_mode(mode.library());
        let tls = Tls {
            mode,
            root: root.or_else(|| var("PGSSLROOTCERT")),
        };
        let shown = shown(&config);
        if config.get_password().is_none()
            && let Some(password) = password(&config)
        {
            config.password(password);
        }
        Ok(Database { config, tls, shown })
    }

    /// `postgres://USER@HOST:PORT/DBNAME`, for messages.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Connects; an unreachable or refusing server is status 3, naming
    /// the database without its password.
    pub fn connect(&self) -> Result<Client> {
        let result = match self.tls.mode {
            Mode::Disable => self.config.connect(postgres::NoTls),
            _ => self.config.connect(self.tls.connector()?),
        };
        result.map_err(|e| {
            // The server's own words when it answered; else the client's,
            // with what it ran into (a refused connection, a certificate).
            let why = match (e.as_db_error(), std::error::Error::source(&e)) {
                (Some(db), _) => db.message().to_owned(),
                (None, Some(source)) => format!("{e}: {source}"),
                (None, None) => e.to_string(),
            };
            Error::unavailable(format!(
                "cannot reach the team database {}: {}",
                self.shown,
                escape::terminal(&why)
            ))
            .with_hint("check that the server runs and lets this user in (password from PGPASSWORD or ~/.pgpass)")
        })
    }
}

/// libpq's defaults for what the text left out: `PGHOST`, `PGPORT`,
/// `PGUSER`, `PGDATABASE`, else a local socket, 5432, the login name, and
/// a database named after the user.
fn defaults(config: &mut Config) {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        let hosts = var("PGHOST").unwrap_or_else(|| "/var/run/postgresql".to_owned());
        for host in hosts.split(',') {
            config.host(host);
        }
    }
    if config.get_ports().is_empty()
        && let Some(port) = var("PGPORT").and_then(|p| p.parse().ok())
    {
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = var("PGUSER")
            .or_else(|| var("USER"))
            .or_else(|| var("LOGNAME"))
            .unwrap_or_else(|| "postgres".to_owned());
        config.user(&user);
    }
    if config.get_dbname().is_none() {
        let name = var("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").to_owned());
        config.dbname(&name);
    }
}

fn host_text(host: &Host) -> String {
    match host {
        Host::Tcp(name) => name.clone(),
        Host::Unix(path) => path.display().to_string(),
    }
}

fn port(config: &Config) -> u16 {
    config.get_ports().first().copied().unwrap_or(5432)
}

fn shown(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(host_text)
        .unwrap_or_default();
    let text = format!(
        "postgres://{}@{}:{}/{}",
        config.get_user().unwrap_or(""),
        host,
        port(config),
        config.get_dbname().unwrap_or("")
    );
    escape::terminal(&text).into_owned()
}

/// `PGPASSWORD`, else the first matching line of the password file.
fn password(config: &Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    // libpq ignores a password file others can read.
    let meta = fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = fs::read_to_string(&file).ok()?;
    let host = config
        .get_hosts()
        .first()
        .map(host_text)
        .unwrap_or_default();
    let host = if host.starts_with('/') {
        "localhost".to_owned()
    } else {
        host
    };
    let wanted = [
        host,
        port(config).to_string(),
        config.get_dbname().unwrap_or("").to_owned(),
        config.get_user().unwrap_or("").to_owned(),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let fields = pgpass_fields(line);
            if fields.len() != 5 {
                return None;
            }
            let matches = fields[..4]
                .iter()
                .zip(&wanted)
                .all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        })
}

/// The `:`-separated fields of a password file line, `\` escaping.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("one field at least").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field at least").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        let db = Database::parse(
            "postgres://ana:s3cret@db.example:6543/team",
            "--database",
            true,
        )
        .unwrap();
        assert_eq!(db.shown(), "postgres://ana@db.example:6543/team");
        let db = Database::parse(
            "host=db.example user=ana password=s3cret dbname=team",
            "--database",
            true,
        )
        .unwrap();
        assert_eq!(db.shown(), "postgres://ana@db.example:5432/team");
        assert!(!format!("{db:?}").contains("s3cret"));
    }

    #[test]
    fn a_settings_file_may_not_carry_a_password() {
        let err =
            Database::parse("postgres://ana:s3cret@db/team", "database_url", false).unwrap_err();
        assert_eq!(err.status(), shared::exit::REJECTED);
        assert!(err.to_string().contains("carries a password"), "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn password_file_lines_split_on_unescaped_colons() {
        assert_eq!(
            pgpass_fields(r"db:5432:*:ana:pa\:ss\\word"),
            ["db", "5432", "*", "ana", r"pa:ss\word"]
        );
        assert_eq!(pgpass_fields("a:b:c:d:e:f"), ["a", "b", "c", "d", "e:f"]);
    }
}
