//! The one integration-test crate: every binary, tested as users see it.

mod capture;
mod docs;
mod front;
mod probe;
mod support;
