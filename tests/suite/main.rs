//! The one integration-test crate: every binary, tested as users see it.

mod annotate;
mod capture;
mod capture_http;
mod close;
mod docs;
mod export_issues;
mod front;
mod generate;
mod index;
mod probe;
mod probe_all;
mod probe_http;
mod promote;
mod readiness;
mod records;
mod seeded;
mod serve;
mod share;
mod support;
mod verify;
mod verify_http;
