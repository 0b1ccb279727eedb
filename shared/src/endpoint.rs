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

use http::header::{HeaderName, HeaderValue};
use http::uri::{Scheme, Uri};

use crate::error::{Error, Result};

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

/// One `--header NAME: VALUE`; `n` counts from 1 for messages that cannot
/// show the name.
fn parse_header(arg: &str, n: usize) -> Result<(HeaderName, HeaderValue)> {
    let form = "write it as \"Name: value\"";
    let Some((name, value)) = arg.split_once(':') else {
        return Err(Error::usage(format!(
            "invalid --header (number {n}): it has no colon; {form}"
        )));
    };
    let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
        return Err(Error::usage(format!(
            "invalid --header (number {n}): the text before the colon is not a header name \
             (letters, digits and !#$%&'*+-.^_`|~, no spaces); {form}"
        )));
    };
    if RESERVED.contains(&name.as_str()) {
        return Err(Error::usage(format!(
            "invalid --header {name}: the probe sets this header itself; leave it out"
        )));
    }
    let value = value.trim_matches([' ', '\t']);
    let visible = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
    let (true, Ok(mut value)) = (visible, HeaderValue::from_str(value)) else {
        return Err(Error::usage(format!(
            "invalid --header {name}: its value holds a control or non-ASCII character; \
             header values are visible ASCII, spaces and tabs"
        )));
    };
    value.set_sensitive(true);
    Ok((name, value))
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
            assert_eq!(err.status(), crate::exit::USAGE);
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
            assert_eq!(err.status(), crate::exit::USAGE);
            assert!(err.message().contains(why), "{arg:?}: {}", err.message());
            assert!(!err.message().contains("Quokka"), "{}", err.message());
        }
    }
}
