//! TLS to the team database as libpq's `sslmode` and `sslrootcert` ask.
//!
//! - `disable`: no TLS.
//! - `allow`, `prefer` (the default): TLS when the server offers it;
//!   `require`: TLS or no connection. None of them checks the server's
//!   certificate, as libpq does not, unless a root certificate file is
//!   given (`sslrootcert`) or `~/.postgresql/root.crt` exists: then the
//!   chain is checked against it, as for `verify-ca`.
//! - `verify-ca`: TLS, and the certificate chains to a root of the file.
//! - `verify-full`: that, and the certificate names the host.
//!
//! `sslrootcert=system` takes the public web roots.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error as TlsError, RootCertStore};

use shared::error::{Error, Result};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    pub fn parse(text: &str) -> Option<Mode> {
        Some(match text {
            "disable" => Mode::Disable,
            "allow" => Mode::Allow,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            _ => return None,
        })
    }

    /// What the client library is told: whether TLS may be skipped.
    pub fn library(self) -> postgres::config::SslMode {
        use postgres::config::SslMode;
        match self {
            Mode::Disable => SslMode::Disable,
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }
}

/// The TLS settings of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: Mode,
    /// `sslrootcert`: a PEM file, or `system`.
    pub root: Option<String>,
}

impl Default for Tls {
    fn default() -> Tls {
        Tls {
            mode: Mode::Prefer,
            root: None,
        }
    }
}

/// How the server's certificate is checked.
enum Check {
    Nothing,
    Chain(RootCertStore),
    ChainAndName(RootCertStore),
}

impl Tls {
    /// The connector for these settings; a root file that cannot be read
    /// is an error naming it.
    pub fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let default_root = std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
            .filter(|p| p.is_file());
        let named = self.root.as_deref();
        let check = match self.mode {
            Mode::VerifyFull => Check::ChainAndName(roots(named, default_root.as_deref())?),
            Mode::VerifyCa => Check::Chain(roots(named, default_root.as_deref())?),
            _ if named.is_some() || default_root.is_some() => {
                Check::Chain(roots(named, default_root.as_deref())?)
            }
            _ => Check::Nothing,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions");
        let algorithms = provider.signature_verification_algorithms;
        let config = match check {
            Check::ChainAndName(roots) => {
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Check::Chain(roots) => {
                let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| Error::usage(format!("sslrootcert holds no usable root: {e}")))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyName { inner }))
                    .with_no_client_auth()
            }
            Check::Nothing => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked { algorithms }))
                .with_no_client_auth(),
        };
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }
}

/// The roots of `sslrootcert` (or libpq's default file): PEM
/// certificates, or `system` for the public web roots.
fn roots(named: Option<&str>, default: Option<&Path>) -> Result<RootCertStore> {
    if named == Some("system") {
        return Ok(RootCertStore::from_iter(
            webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
        ));
    }
    let path = match (named, default) {
        (Some(file), _) => PathBuf::from(file),
        (None, Some(file)) => file.to_path_buf(),
        (None, None) => {
            return Err(Error::usage(
                "sslmode verify-ca and verify-full need the server's root certificate: \
                 sslrootcert=FILE (PEM), sslrootcert=system, or ~/.postgresql/root.crt",
            ));
        }
    };
    let shown = path.display().to_string();
    let mut store = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(&path)
        .map_err(|e| Error::usage(format!("cannot read the root certificates in {shown}: {e}")))?;
    for cert in certs {
        let cert = cert.map_err(|e| {
            Error::usage(format!("cannot read the root certificates in {shown}: {e}"))
        })?;
        store.add(cert).map_err(|e| {
            Error::usage(format!(
                "{shown} holds a certificate that is not a usable root: {e}"
            ))
        })?;
    }
    if store.is_empty() {
        return Err(Error::usage(format!("{shown} holds no PEM certificate")));
    }
    Ok(store)
}

/// `verify-ca`: the chain must hold; the name need not match.
#[derive(Debug)]
struct AnyName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, TlsError> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a root file: encryption only, as in
/// libpq; the handshake's signatures are still checked.
#[derive(Debug)]
struct Unchecked {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Takes `sslmode` and `sslrootcert` out of a connection string (the
/// client library knows neither `verify-*` nor `sslrootcert`) and returns
/// the rest with what they said.
pub fn split(text: &str) -> std::result::Result<(String, Option<Mode>, Option<String>), String> {
    let mut mode = None;
    let mut root = None;
    let mut take = |key: &str, value: String| -> std::result::Result<bool, String> {
        match key {
            "sslmode" => {
                mode = Some(Mode::parse(&value).ok_or_else(|| {
                    format!(
                        "sslmode {} is none of disable, allow, prefer, require, verify-ca, verify-full",
                        shared::escape::quoted(&value)
                    )
                })?);
                Ok(true)
            }
            "sslrootcert" => {
                root = Some(value);
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let rest = if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        match text.split_once('?') {
            None => text.to_owned(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&') {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(key, percent_decode(value))? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        let mut kept = Vec::new();
        for (key, value, raw) in pairs(text) {
            if !take(&key, value)? {
                kept.push(raw);
            }
        }
        kept.join(" ")
    };
    Ok((rest, mode, root))
}

/// `key=value` pairs of a libpq connection string, values unquoted, with
/// the text each came from.
fn pairs(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut raw = String::new();
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            raw.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'=') {
            raw.push('=');
            chars.next();
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            if chars.peek() == Some(&'\'') {
                raw.push('\'');
                chars.next();
                while let Some(c) = chars.next() {
                    raw.push(c);
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                raw.push(n);
                                value.push(n);
                            }
                        }
                        '\'' => break,
                        c => value.push(c),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    chars.next();
                    raw.push(c);
                    if c == '\\' {
                        if let Some(n) = chars.next() {
                            raw.push(n);
                            value.push(n);
                        }
                    } else {
                        value.push(c);
                    }
                }
            }
        }
        out.push((key, value, raw));
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_are_taken_out_of_both_spellings() {
        let (rest, mode, root) =
            split("host=db sslmode=verify-full sslrootcert='/etc/team ca.pem' dbname=t").unwrap();
        assert_eq!(rest, "host=db dbname=t");
        assert_eq!(mode, Some(Mode::VerifyFull));
        assert_eq!(root.as_deref(), Some("/etc/team ca.pem"));
        let (rest, mode, root) = split(
            "postgres://ana@db/t?sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        )
        .unwrap();
        assert_eq!(rest, "postgres://ana@db/t?application_name=x");
        assert_eq!(mode, Some(Mode::VerifyCa));
        assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
        let (rest, mode, root) = split("postgres://ana@db/t").unwrap();
        assert_eq!(
            (rest.as_str(), mode, root),
            ("postgres://ana@db/t", None, None)
        );
        let err = split("host=db sslmode=sometimes").unwrap_err();
        assert!(err.contains("\"sometimes\" is none of"), "{err}");
    }
}
