//! The one integration-test crate: every binary, tested as users see it.

mod annotate;
mod capture;
mod capture_http;
mod docs;
mod front;
mod index;
mod probe;
mod probe_http;
mod promote;
mod records;
mod support;
