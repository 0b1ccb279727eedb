//! The one way the suite opens HTTP connections to an MCP endpoint: TCP
//! with no Nagle delay, and TLS for https checked against the system's
//! trusted roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` name others, as for
//! OpenSSL). A plain http endpoint never loads them. Capture's proxy and
//! the probe client both use it, so they trust exactly the same servers.

use std::io;
use std::time::Duration;

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;

/// A connector for http and https endpoints.
pub type Connector = HttpsConnector<HttpConnector>;

/// A connector for an endpoint that is `https` or not. The error is why
/// the trusted certificates could not be loaded.
pub fn connector(https: bool, connect_timeout: Option<Duration>) -> io::Result<Connector> {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(connect_timeout);
    tcp.enforce_http(false);
    let tls = if https {
        HttpsConnectorBuilder::new().with_native_roots()?
    } else {
        let none = rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        HttpsConnectorBuilder::new().with_tls_config(none)
    };
    Ok(tls.https_or_http().enable_http1().wrap_connector(tcp))
}
