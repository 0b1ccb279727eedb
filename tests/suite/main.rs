//! The one integration-test crate: every binary, tested as users see it.

mod annotate;
mod capture;
mod capture_http;
mod close;
mod crash;
mod docs;
mod dump;
mod export_issues;
mod front;
mod fuzz;
mod generate;
mod index;
mod probe;
mod probe_all;
mod probe_http;
mod promote;
mod property;
mod readiness;
mod records;
mod seeded;
mod serve;
mod share;
mod soak;
mod support;
mod verify;
mod verify_http;
