//! Which requests a listener on loopback answers (capture's HTTP relay,
//! the OpenTelemetry receiver): those addressed to a loopback name, from no
//! browser page or from a loopback one.
//!
//! A web page can reach a loopback port through DNS rebinding (its own name
//! made to resolve to 127.0.0.1) or by a plain cross-origin request. Capture
//! names the upstream in `Host`, so the upstream's own check of `Host` sees
//! only capture's rewrite; capture therefore checks first, as the MCP
//! transport rules ask of local servers, and the receiver checks the same
//! way so no web page can write spans into the store. A request passes when its `Host`
//! (or, lacking one, its target's authority) is `localhost`, an address in
//! 127.0.0.0/8 or `[::1]`, with any port, and its `Origin`, if any, is an
//! http or https origin on such a host. This module only decides; it never
//! reads a body or shows the values it was given.

use std::net::IpAddr;

use http::header::{self, HeaderMap};
use http::uri::{Authority, Uri};

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` names no loopback host (DNS rebinding).
    Host,
    /// `Origin` is a browser page that is not on a loopback host.
    Origin,
}

impl Refusal {
    /// What the client and the listener's stderr are told; `who` names
    /// the listener (`capture`, `the receiver`).
    pub fn reason(self, who: &str) -> String {
        match self {
            Refusal::Host => format!(
                "the request's Host is not a loopback name; {who} listens on loopback and answers only requests for localhost, 127.0.0.0/8 or [::1]"
            ),
            Refusal::Origin => format!(
                "the request's Origin is a web page that is not on a loopback host; {who} listens on loopback and answers no other page"
            ),
        }
    }
}

/// Checks one request's `Host` and `Origin`.
pub fn check(headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
    let host = match headers.get(header::HOST) {
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.parse::<Authority>().ok()),
        None => uri.authority().cloned(),
    };
    if !host.as_ref().is_some_and(is_loopback) {
        return Err(Refusal::Host);
    }
    // Several Origin headers are as suspect as a foreign one.
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        let local = origins.next().is_none()
            && origin
                .to_str()
                .ok()
                .and_then(|v| v.parse::<Uri>().ok())
                .is_some_and(|uri| is_loopback_origin(&uri));
        if !local {
            return Err(Refusal::Origin);
        }
    }
    Ok(())
}

/// `scheme://host[:port]` of a web page on a loopback host; `null` (an
/// opaque origin) and every other scheme are not.
fn is_loopback_origin(uri: &Uri) -> bool {
    let web = matches!(uri.scheme_str(), Some("http" | "https"));
    let bare = uri.path_and_query().is_none_or(|p| p.as_str() == "/");
    web && bare && uri.authority().is_some_and(is_loopback)
}

/// Whether a listener bound to `ip` is on loopback, and so must check
/// `Host` and `Origin`: 127.0.0.0/8, `::1`, and 127.0.0.0/8 mapped into
/// IPv6 (`::ffff:127.0.0.1`), which is the same IPv4 address a rebound
/// page reaches just as well.
pub fn is_loopback_listener(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

fn is_loopback(authority: &Authority) -> bool {
    if authority.as_str().contains('@') {
        return false;
    }
    let host = authority.host();
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<IpAddr>()
        .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn verdict(host: Option<&str>, origins: &[&str]) -> Result<(), Refusal> {
        let mut headers = HeaderMap::new();
        if let Some(h) = host {
            headers.insert(header::HOST, HeaderValue::from_str(h).unwrap());
        }
        for o in origins {
            headers.append(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        check(&headers, &Uri::from_static("/mcp"))
    }

    #[test]
    fn loopback_hosts_pass_with_any_port() {
        for host in [
            "localhost",
            "LocalHost:8931",
            "127.0.0.1",
            "127.0.0.1:0",
            "127.200.3.4:65535",
            "[::1]",
            "[::1]:8931",
        ] {
            assert_eq!(verdict(Some(host), &[]), Ok(()), "{host}");
        }
    }

    #[test]
    fn other_hosts_are_refused() {
        for host in [
            "evil.example",
            "evil.example:8931",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "128.0.0.1",
            "0.0.0.0:8931",
            "[::2]",
            "127.1",
            "user@127.0.0.1",
            "",
            "bad host",
        ] {
            assert_eq!(verdict(Some(host), &[]), Err(Refusal::Host), "{host:?}");
        }
        assert_eq!(verdict(None, &[]), Err(Refusal::Host));
        // Without a Host header the target's authority counts.
        let absolute = Uri::from_static("http://127.0.0.1:9/mcp");
        assert_eq!(check(&HeaderMap::new(), &absolute), Ok(()));
    }

    #[test]
    fn loopback_listeners_include_mapped_and_v6_loopback() {
        for ip in [
            "127.0.0.1",
            "127.3.2.1",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:127.9.8.7",
        ] {
            assert!(is_loopback_listener(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "0.0.0.0",
            "::",
            "10.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:0.0.0.0",
            "fd00::2",
        ] {
            assert!(!is_loopback_listener(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn only_loopback_pages_pass() {
        let host = Some("127.0.0.1:8931");
        for origin in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:5173",
        ] {
            assert_eq!(verdict(host, &[origin]), Ok(()), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "chrome-extension://abcdef",
            "http://localhost:3000/page",
        ] {
            assert_eq!(verdict(host, &[origin]), Err(Refusal::Origin), "{origin}");
        }
        assert_eq!(
            verdict(host, &["http://localhost", "https://evil.example"]),
            Err(Refusal::Origin)
        );
    }
}
