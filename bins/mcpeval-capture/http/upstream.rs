//! The upstream Streamable HTTP endpoint capture stands in for, and how a
//! client's request target maps onto it.
//!
//! The client's path and query pass through unchanged, so capture stands in
//! for the upstream's origin; only a request for `/` itself goes to the
//! upstream URL's path, so `http://ADDR` alone reaches the MCP endpoint.
//! This module never rewrites anything but the target and the authority.

use std::fmt;

use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};
use shared::{Error, Result};

/// A checked `--upstream` URL.
#[derive(Debug, Clone)]
pub struct Upstream {
    text: String,
    scheme: Scheme,
    authority: Authority,
    path: PathAndQuery,
}

impl Upstream {
    /// Parses `http[s]://HOST[:PORT][/PATH]`.
    pub fn parse(text: &str) -> Result<Upstream> {
        let bad = |why: &str| {
            Error::usage(format!(
                "invalid --upstream {text:?}: {why}; use the server's endpoint URL such as http://127.0.0.1:3001/mcp"
            ))
        };
        let uri: Uri = text.parse().map_err(|_| bad("not a URL"))?;
        let scheme = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP || *s == Scheme::HTTPS => s.clone(),
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = uri.authority().cloned().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad(
                "credentials in the URL are not passed on; let the client send its Authorization header",
            ));
        }
        if authority.host().is_empty() {
            return Err(bad("no host"));
        }
        let path = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        Ok(Upstream {
            text: text.to_owned(),
            scheme,
            authority,
            path,
        })
    }

    /// The absolute URI to send a client's request for `target` to.
    pub fn target(&self, target: Option<&PathAndQuery>) -> Uri {
        let path = match target {
            Some(t) if t.path() == "/" && t.query().is_some() => {
                let joined = format!("{}?{}", self.path.path(), t.query().unwrap_or(""));
                joined.parse().unwrap_or_else(|_| self.path.clone())
            }
            Some(t) if t.path() != "/" && !t.path().is_empty() => t.clone(),
            _ => self.path.clone(),
        };
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path)
            .build()
            .expect("parts of a valid URI")
    }

    /// Whether the upstream speaks TLS.
    pub fn is_https(&self) -> bool {
        self.scheme == Scheme::HTTPS
    }

    /// The authority the upstream expects in `Host`.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// `host:port`, the server name when nothing else names it.
    pub fn host_port(&self) -> String {
        let default = if self.is_https() { 443 } else { 80 };
        let port = self.authority.port_u16().unwrap_or(default);
        format!("{}:{port}", self.authority.host())
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(up: &str, client: &str) -> String {
        let pq: PathAndQuery = client.parse().unwrap();
        Upstream::parse(up).unwrap().target(Some(&pq)).to_string()
    }

    #[test]
    fn maps_targets() {
        assert_eq!(target("http://h:3001/mcp", "/"), "http://h:3001/mcp");
        assert_eq!(
            target("http://h:3001/mcp", "/mcp?x=1"),
            "http://h:3001/mcp?x=1"
        );
        assert_eq!(
            target("http://h:3001/mcp", "/?x=1"),
            "http://h:3001/mcp?x=1"
        );
        assert_eq!(target("http://h", "/other"), "http://h/other");
        assert_eq!(target("https://h/mcp", "/"), "https://h/mcp");
        assert_eq!(Upstream::parse("https://h").unwrap().host_port(), "h:443");
        assert_eq!(Upstream::parse("http://h").unwrap().host_port(), "h:80");
        assert_eq!(
            Upstream::parse("http://[::1]:9/x").unwrap().host_port(),
            "[::1]:9"
        );
    }

    #[test]
    fn refuses_what_it_cannot_reach() {
        for (url, why) in [
            ("ftp://h/x", "scheme"),
            ("http://u:p@h/", "credentials"),
            ("/mcp", "scheme"),
        ] {
            let err = Upstream::parse(url).unwrap_err();
            assert!(err.message().contains(why), "{url}: {err}");
            assert_eq!(err.status(), shared::exit::USAGE);
        }
    }
}
