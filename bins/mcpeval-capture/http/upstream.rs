//! The upstream Streamable HTTP endpoint capture stands in for, and how a
//! client's request target maps onto it.
//!
//! The client's path and query pass through unchanged, so capture stands in
//! for the upstream's origin; only a request for `/` itself goes to the
//! upstream URL's path, so `http://ADDR` alone reaches the MCP endpoint.
//! This module never rewrites anything but the target and the authority.
//!
//! Some services put a key in the URL's path or query, so the URL is shown
//! only as its origin, `scheme://host:port`: that is what `Display` and
//! `Debug` print, and no error about a refused URL repeats any of its text.

use std::fmt;

use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};
use shared::Error;
use shared::Result;

/// A checked `--upstream` URL.
#[derive(Clone)]
pub struct Upstream {
    scheme: Scheme,
    authority: Authority,
    path: PathAndQuery,
}

impl Upstream {
    /// Parses `http[s]://HOST[:PORT][/PATH]`. The error never quotes the
    /// text: it may hold credentials or a key.
    pub fn parse(text: &str) -> Result<Upstream> {
        let bad = |why: &str| {
            Error::usage(format!(
                "invalid --upstream: {why}; use the server's endpoint URL such as http://127.0.0.1:3001/mcp"
            ))
        };
        let uri: Uri = text
            .parse()
            .map_err(|_| bad("it is not an absolute http or https URL"))?;
        let authority = uri.authority().cloned();
        // Before anything that could show the authority.
        if authority.as_ref().is_some_and(|a| a.as_str().contains('@')) {
            return Err(bad(
                "credentials in the URL are not passed on; let the client send its Authorization header",
            ));
        }
        let scheme = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP || *s == Scheme::HTTPS => s.clone(),
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = authority
            .filter(|a| !a.host().is_empty())
            .ok_or_else(|| bad("it names no host"))?;
        let path = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        Ok(Upstream {
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

/// `scheme://host:port`: all of the URL that is ever shown.
impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host_port())
    }
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("origin", &self.to_string())
            .finish_non_exhaustive()
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
    fn shows_the_origin_alone() {
        let up = Upstream::parse("https://mcp.example.com/v1/k-Quokka?api_key=k-Quokka").unwrap();
        assert_eq!(up.to_string(), "https://mcp.example.com:443");
        assert_eq!(
            format!("{up:?}"),
            r#"Upstream { origin: "https://mcp.example.com:443", .. }"#
        );
        let up = Upstream::parse("http://[::1]:9/mcp").unwrap();
        assert_eq!(up.to_string(), "http://[::1]:9");
    }

    #[test]
    fn refuses_what_it_cannot_reach_without_quoting_it() {
        for (url, why) in [
            ("ftp://h/x?k=k-Quokka", "scheme"),
            ("ftp://u:k-Quokka@h/x", "credentials"),
            ("http://u:k-Quokka@h/", "credentials"),
            ("http://k-Quokka@h/", "credentials"),
            ("/mcp?k-Quokka", "scheme"),
            ("not a url k-Quokka", "not an absolute"),
        ] {
            let err = Upstream::parse(url).unwrap_err();
            assert!(err.message().contains(why), "{url}: {err}");
            assert!(!err.message().contains("Quokka"), "{url}: {err}");
            assert_eq!(err.status(), shared::exit::USAGE);
        }
    }
}
