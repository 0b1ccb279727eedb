//! The one integration-test crate: every binary, tested as users see it.

mod support;
mod docs;
