//! A Streamable HTTP endpoint as `--url` and `--header` configure it:
//! parsed and checked once, then kept from ever being shown whole.
//!
//! Header values usually hold tokens, and some services put their keys in
//! the URL's path or query, so this module treats both as secrets: no
//! error, `Debug` output or display of it shows a header value, a path or a
//! query. What may be shown is the origin (`scheme://host:port`) and header
//! names. Credentials in the URL itself are refused, with a pointer to
//! `--header`, so they cannot travel where a URL is shown. It must never
//! format the text it was given into a message.

use std::fmt;
use std::path::Path;

use http::header::{HeaderName, HeaderValue};
use http::uri::{Scheme, Uri};

use shared::error::{Error, Result};

/// Header names the probe client sets itself; `--header` may not.
pub const RESERVED: [&str; 14] = [
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// A checked endpoint: the URL and the extra request headers.
#[derive(Clone)]
pub struct Endpoint {
    text: String,
    uri: Uri,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("origin", &self.origin())
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Parses `--url` (an absolute `http` or `https` URL) and each
    /// `--header` argument (`Name: value`). Errors are usage errors (status
    /// 2) that name the flag and, where safe, the origin or header name.
    pub fn parse(url: &str, headers: &[String]) -> Result<Endpoint> {
        let uri = parse_url(url)?;
        let mut parsed = Vec::with_capacity(headers.len());
        for (i, arg) in headers.iter().enumerate() {
            parsed.push(parse_header(arg, i + 1)?);
        }
        Ok(Endpoint {
            text: url.to_owned(),
            uri,
            headers: parsed,
        })
    }

    /// The same endpoint with the headers of each `--header-file` added
    /// after those of `--header` (see [`read_header_file`]).
    pub fn with_header_files(mut self, files: &[impl AsRef<Path>]) -> Result<Endpoint> {
        for file in files {
            self.headers.extend(read_header_file(file.as_ref())?);
        }
        Ok(self)
    }

    /// The whole configuration, URL and header values included, as the
    /// text `mcpeval-verify` hands `mcpeval-probe` in
    /// [`shared::ENDPOINT_ENV`]: never an argument, which every user of the
    /// machine may read. A JSON object, `{"url": …, "headers": ["name:
    /// value", …]}`, that [`Endpoint::from_env`] reads back into an equal
    /// endpoint (and so an equal credit binding).
    pub fn to_env(&self) -> String {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(name, value)| {
                // Values were checked to be visible ASCII when parsed.
                format!("{name}: {}", value.to_str().unwrap_or_default())
            })
            .collect();
        serde_json::json!({"url": self.text, "headers": headers}).to_string()
    }

    /// Reads what [`Endpoint::to_env`] wrote, with the checks of
    /// [`Endpoint::parse`]. Errors are usage errors that show no value.
    pub fn from_env(text: &str) -> Result<Endpoint> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Passed {
            url: String,
            headers: Vec<String>,
        }
        let passed: Passed = serde_json::from_str(text).map_err(|_| {
            Error::usage(format!(
                "{} does not hold an endpoint as mcpeval-verify writes it",
                shared::ENDPOINT_ENV
            ))
        })?;
        Endpoint::parse(&passed.url, &passed.headers)
    }

    /// The URI every request goes to.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The URL exactly as given. It may hold a token: bind or hash it,
    /// never print or store it.
    pub fn url_text(&self) -> &str {
        &self.text
    }

    /// The extra headers in the order given; values are marked sensitive.
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }

    /// `scheme://host[:port]`: all of the URL that may be shown.
    pub fn origin(&self) -> String {
        let scheme = self.uri.scheme_str().unwrap_or("http");
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        format!("{scheme}://{authority}")
    }

    /// `host:port`, with the scheme's default port filled in: the server's
    /// name when its handshake reports none.
    pub fn host_port(&self) -> String {
        let https = self.uri.scheme() == Some(&Scheme::HTTPS);
        let port = self.uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        format!("{}:{port}", self.uri.host().unwrap_or_default())
    }

    /// Whether the endpoint speaks TLS.
    pub fn is_https(&self) -> bool {
        self.uri.scheme() == Some(&Scheme::HTTPS)
    }
}

fn parse_url(text: &str) -> Result<Uri> {
    let example = "write it as http://HOST:PORT/PATH, such as http://127.0.0.1:3001/mcp";
    let uri: Uri = text.parse().map_err(|_| {
        Error::usage(format!(
            "invalid --url: it is not an absolute http or https URL; {example}"
        ))
    })?;
    let Some(authority) = uri.authority() else {
        return Err(Error::usage(format!(
            "invalid --url: it names no host; {example}"
        )));
    };
    // The authority is shown only once it holds no credentials.
    if authority.as_str().contains('@') {
        return Err(Error::usage(
            "invalid --url: credentials in the URL are not sent; pass them with --header \"Authorization: …\"",
        ));
    }
    match uri.scheme() {
        Some(s) if *s == Scheme::HTTP || *s == Scheme::HTTPS => {}
        Some(s) => {
            return Err(Error::usage(format!(
                "invalid --url {s}://{authority}: the scheme must be http or https"
            )));
        }
        None => {
            return Err(Error::usage(format!(
                "invalid --url: it has no scheme; {example}"
            )));
        }
    }
    if authority.host().is_empty() {
        return Err(Error::usage(format!(
            "invalid --url: it names no host; {example}"
        )));
    }
    Ok(uri)
}

/// What is wrong with one header's text, in words that never hold its
/// value (the name, once it is known to be a header name, may be shown).
enum Fault {
    NoColon,
    BadName,
    Reserved(HeaderName),
    BadValue(HeaderName),
}

impl Fault {
    /// The fault as a sentence; `form` says how a header is written.
    fn describe(&self, form: &str) -> String {
        match self {
            Fault::NoColon => format!("it has no colon; {form}"),
            Fault::BadName => format!(
                "the text before the colon is not a header name \
                 (letters, digits and !#$%&'*+-.^_`|~, no spaces); {form}"
            ),
            Fault::Reserved(_) => "the probe sets this header itself; leave it out".to_owned(),
            Fault::BadValue(_) => "its value holds a control or non-ASCII character; \
                 header values are visible ASCII, spaces and tabs"
                .to_owned(),
        }
    }

    /// The header's name, once the text had one.
    fn name(&self) -> Option<&HeaderName> {
        match self {
            Fault::Reserved(name) | Fault::BadValue(name) => Some(name),
            Fault::NoColon | Fault::BadName => None,
        }
    }
}

/// One `--header NAME: VALUE`; `n` counts from 1 for messages that cannot
/// show the name.
fn parse_header(arg: &str, n: usize) -> Result<(HeaderName, HeaderValue)> {
    header(arg).map_err(|fault| {
        let which = match fault.name() {
            Some(name) => name.to_string(),
            None => format!("(number {n})"),
        };
        Error::usage(format!(
            "invalid --header {which}: {}",
            fault.describe("write it as \"Name: value\"")
        ))
    })
}

/// `Name: value`, the value trimmed of spaces and tabs and marked
/// sensitive.
fn header(text: &str) -> std::result::Result<(HeaderName, HeaderValue), Fault> {
    let (name, value) = text.split_once(':').ok_or(Fault::NoColon)?;
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| Fault::BadName)?;
    if RESERVED.contains(&name.as_str()) {
        return Err(Fault::Reserved(name));
    }
    let value = value.trim_matches([' ', '\t']);
    let visible = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
    let (true, Ok(mut value)) = (visible, HeaderValue::from_str(value)) else {
        return Err(Fault::BadValue(name));
    };
    value.set_sensitive(true);
    Ok((name, value))
}

/// A header file is refused past this size (64 KiB): it holds a few
/// headers, and is read whole.
pub const MAX_HEADER_FILE: u64 = 64 * 1024;

/// The headers of a `--header-file`: one `Name: value` a line, blank
/// lines and lines starting with `#` ignored. Refused (status 4, naming
/// the file) unless it is a regular file that only its owner may read or
/// write: it holds secrets, and one readable by others has leaked them
/// already. It is opened without blocking, so a FIFO put in its place is
/// refused, not waited on. Messages name the file, the line and at most
/// the header's name, never a value.
pub fn read_header_file(path: &Path) -> Result<Vec<(HeaderName, HeaderValue)>> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => {
                Error::rejected(format!("--header-file {shown}: no such file"))
            }
            _ => Error::rejected(format!("--header-file {shown}: cannot open it: {err}")),
        })?;
    // The handle's own metadata: what was opened is what is judged.
    let meta = file
        .metadata()
        .map_err(|err| Error::rejected(format!("--header-file {shown}: cannot stat it: {err}")))?;
    if !meta.is_file() {
        return Err(
            Error::rejected(format!("--header-file {shown} is not a regular file"))
                .with_hint("write the headers into a file of their own, mode 0600"),
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::rejected(format!(
            "--header-file {shown} may be read or written by other users (mode {mode:04o}); \
             it holds secrets, so it was not read"
        ))
        .with_hint(format!(
            "run `chmod 600 {shown}` (and replace the secrets if others may have read them)"
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_HEADER_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| Error::rejected(format!("--header-file {shown}: cannot read it: {err}")))?;
    if bytes.len() as u64 > MAX_HEADER_FILE {
        return Err(Error::rejected(format!(
            "--header-file {shown} is over {MAX_HEADER_FILE} bytes; it holds headers, one a line"
        )));
    }
    let mut headers = Vec::new();
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let fault =
            |why: String| Error::rejected(format!("--header-file {shown}:{}: {why}", n + 1));
        let Ok(line) = std::str::from_utf8(line) else {
            return Err(fault("the line is not UTF-8 text".to_owned()));
        };
        let text = line.trim_matches([' ', '\t']);
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        headers.push(header(text).map_err(|f| {
            let which = f
                .name()
                .map(|n| format!("header {n}: "))
                .unwrap_or_default();
            fault(format!(
                "{which}{}",
                f.describe("write one \"Name: value\" a line")
            ))
        })?);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "tok-Quokka-991";

    fn headers(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn parses_urls_and_headers() {
        let e = Endpoint::parse(
            "https://mcp.example.com/v1/mcp?key=tok-Quokka-991",
            &headers(&["authorization:  Bearer tok-Quokka-991\t", "X-Empty:"]),
        )
        .unwrap();
        assert_eq!(e.origin(), "https://mcp.example.com");
        assert_eq!(e.host_port(), "mcp.example.com:443");
        assert!(e.is_https());
        assert_eq!(e.headers()[0].0, "authorization");
        assert_eq!(e.headers()[0].1, "Bearer tok-Quokka-991");
        assert!(e.headers()[0].1.is_sensitive());
        assert_eq!(e.headers()[1].1, "");
        let shown = format!("{e:?}");
        assert!(!shown.contains(TOKEN) && !shown.contains("/v1"), "{shown}");
        let plain = Endpoint::parse("http://127.0.0.1:3001", &[]).unwrap();
        assert_eq!(plain.host_port(), "127.0.0.1:3001");
        assert_eq!(plain.uri().path(), "/");
        assert_eq!(
            Endpoint::parse("http://[::1]/mcp", &[])
                .unwrap()
                .host_port(),
            "[::1]:80"
        );
    }

    #[test]
    fn refusals_never_show_secrets() {
        let bad_urls = [
            (
                "ftp://h.example/x?k=tok-Quokka-991",
                "ftp://h.example: the scheme",
            ),
            ("http://user:tok-Quokka-991@h/", "credentials in the URL"),
            ("/mcp?tok-Quokka-991", "no host"),
            ("not a url tok-Quokka-991", "not an absolute"),
        ];
        for (url, why) in bad_urls {
            let err = Endpoint::parse(url, &[]).unwrap_err();
            assert_eq!(err.status(), shared::exit::USAGE);
            assert!(err.message().contains(why), "{url}: {}", err.message());
            assert!(!err.message().contains(TOKEN), "{}", err.message());
        }
        let bad_headers = [
            ("Bearer tok-Quokka-991", "(number 2): it has no colon"),
            (
                "Bad Name: tok-Quokka-991",
                "(number 2): the text before the colon",
            ),
            (
                "Content-Type: tok-Quokka-991",
                "--header content-type: the probe sets",
            ),
            (
                "X-Key: tok-Quokka-991\r\nX: y",
                "--header x-key: its value holds",
            ),
            ("X-Key: tök-Quokka-991", "--header x-key: its value holds"),
        ];
        for (arg, why) in bad_headers {
            let err = Endpoint::parse("http://h/", &headers(&["A: 1", arg])).unwrap_err();
            assert_eq!(err.status(), shared::exit::USAGE);
            assert!(err.message().contains(why), "{arg:?}: {}", err.message());
            assert!(!err.message().contains("Quokka"), "{}", err.message());
        }
    }
}
