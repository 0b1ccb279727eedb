//! TLS to the team database as libpq's `sslmode` and `sslrootcert` ask,
//! against the test server with TLS turned on and a database that takes
//! TLS connections only.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::postgres::{self, Database};
use crate::support::Store;
use crate::team::{run, store_with};

/// Makes a CA and a certificate it signed for `127.0.0.1` (by address
/// only, so `localhost` does not match it) with `openssl`.
fn certificates(dir: &Path, name: &str) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (scripts/test-deps installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ca = format!("{name}-ca");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        &format!("/CN={ca}"),
        "-keyout",
        &format!("{ca}.key"),
        "-out",
        &format!("{ca}.pem"),
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=team-db",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        &format!("{ca}.pem"),
        "-CAkey",
        &format!("{ca}.key"),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    ]);
}

/// Writes `text` into the server's data directory as `name`, through the
/// server itself (so the server's user owns it, mode 0600), and returns
/// its path.
fn server_file(db: &Database, name: &str, text: &str) -> String {
    let path = format!(
        "{}/{name}",
        db.psql("SELECT current_setting('data_directory')").trim()
    );
    let rows: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(n, line)| format!("({n}, '{line}')"))
        .collect();
    db.psql(&format!(
        "CREATE TEMP TABLE pem(n int, line text); INSERT INTO pem VALUES {};
         COPY (SELECT line FROM pem ORDER BY n) TO '{path}'",
        rows.join(", ")
    ));
    path
}

/// Writes the server's private key into its data directory as the server
/// accepts it: 0600 and its own when it runs as us, else (the tests run as
/// root, the server as `postgres`) 0640, owned by root, group the server's.
fn private_key(db: &Database, pem: &[u8]) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = format!(
        "{}/tls-test.key",
        db.psql("SELECT current_setting('data_directory')").trim()
    );
    fs::write(&path, pem).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: a NUL-terminated name; the entry is read at once.
        let group = unsafe {
            let entry = libc::getpwnam(c"postgres".as_ptr());
            assert!(!entry.is_null(), "no postgres user");
            (*entry).pw_gid
        };
        std::os::unix::fs::chown(&path, Some(0), Some(group)).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    } else {
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// Turns TLS on with `dir`'s server certificate (once per test process).
fn tls_on(db: &Database, dir: &Path) {
    let cert = server_file(
        db,
        "tls-test.crt",
        &fs::read_to_string(dir.join("server.crt")).unwrap(),
    );
    let key = private_key(db, &fs::read(dir.join("server.key")).unwrap());
    let loaded = db.psql("SELECT pg_conf_load_time()");
    db.psql(&format!("ALTER SYSTEM SET ssl_cert_file = '{cert}'"));
    db.psql(&format!("ALTER SYSTEM SET ssl_key_file = '{key}'"));
    db.psql("ALTER SYSTEM SET ssl = on");
    db.psql("SELECT pg_reload_conf()");
    db.wait_for_reload(&loaded);
    let log = postgres::Postgres::get().log();
    assert!(
        !log.contains("SSL configuration was not reloaded"),
        "{}",
        &log[log.len().saturating_sub(2000)..]
    );
    // Only TLS connections reach this test's database.
    db.prepend_hba(&format!("hostnossl {} all 127.0.0.1/32 reject", db.name));
}

#[test]
fn sslmode_and_sslrootcert_mean_what_they_mean_to_libpq() {
    let db = postgres::database();
    let certs = tempfile::tempdir().unwrap();
    let others = tempfile::tempdir().unwrap();
    certificates(certs.path(), "team");
    certificates(others.path(), "other");
    tls_on(&db, certs.path());
    let ca = certs.path().join("team-ca.pem");
    let other = others.path().join("other-ca.pem");
    let store = store_with(None, &crate::team::seed_journals()[..2]);
    let url = |host: &str, query: &str| {
        format!(
            "postgres://{}@{host}:{}/{}?{query}",
            postgres::USER,
            postgres::Postgres::get().port(),
            db.name
        )
    };
    let index = |store: &Store, url: &str| run(store, None, "mcpeval-index", &["--database", url]);

    // Without TLS the server turns the connection away: it takes TLS only.
    let (status, _, stderr) = index(&store, &url("127.0.0.1", "sslmode=disable"));
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("no encryption"), "{stderr}");

    // prefer and require encrypt without checking the certificate, as libpq.
    for mode in ["prefer", "require"] {
        let (status, _, stderr) = index(&store, &url("127.0.0.1", &format!("sslmode={mode}")));
        assert_eq!(status, 0, "sslmode={mode}: {stderr}");
    }
    // verify-full: the chain and the name; verify-ca: the chain alone.
    let root = |file: &Path| format!("sslrootcert={}", file.display());
    let cases = [
        ("127.0.0.1", "verify-full", &ca, 0),
        ("localhost", "verify-full", &ca, 3),
        ("localhost", "verify-ca", &ca, 0),
        ("127.0.0.1", "verify-ca", &other, 3),
        ("127.0.0.1", "require", &other, 3),
    ];
    for (host, mode, file, want) in cases {
        let (status, _, stderr) = index(
            &store,
            &url(host, &format!("sslmode={mode}&{}", root(file))),
        );
        assert_eq!(
            status,
            want,
            "{host} sslmode={mode} {}: {stderr}",
            file.display()
        );
        if want == 3 {
            assert!(
                stderr.contains("cannot reach the team database"),
                "{stderr}"
            );
        }
    }
    // The key=value spelling and PGSSLMODE say the same.
    let text = format!(
        "host=127.0.0.1 port={} user={} dbname={} sslmode=verify-full sslrootcert='{}'",
        postgres::Postgres::get().port(),
        postgres::USER,
        db.name,
        ca.display()
    );
    let (status, _, stderr) = index(&store, &text);
    assert_eq!(status, 0, "{stderr}");
    let (status, _, stderr) = index(&store, &url("127.0.0.1", "sslmode=verify-full"));
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.contains("need the server's root certificate"),
        "{stderr}"
    );
    let (status, _, stderr) = index(&store, &url("127.0.0.1", "sslmode=sometimes"));
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("\"sometimes\" is none of"), "{stderr}");
}
