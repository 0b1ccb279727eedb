//! The stable contract of the mcpeval suite.
//!
//! Every `mcpeval-*` binary, including third-party ones, can build on this
//! crate: the store layout and its environment variables, the journal record
//! types, the sanitizer that keeps raw values out of the store, the SQLite
//! plumbing and the exit statuses. Logic that one binary alone needs lives in
//! that binary, never here.

#[cfg(feature = "store")]
pub mod atomic_file;
#[cfg(feature = "store")]
pub mod binding;
pub mod canonical;
#[cfg(feature = "store")]
pub mod catalog;
#[cfg(feature = "store")]
pub mod checkpoint;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
#[cfg(feature = "http")]
pub mod connector;
#[cfg(feature = "store")]
pub mod credit;
#[cfg(feature = "store")]
pub mod db;
#[cfg(feature = "store")]
pub mod endpoint;
#[cfg(feature = "store")]
pub mod envelope;
pub mod error;
pub mod escape;
#[cfg(feature = "store")]
pub mod evidence;
pub mod exit;
#[cfg(feature = "store")]
pub mod fault;
pub mod finding;
#[cfg(feature = "store")]
pub mod hash;
pub mod home;
pub mod id;
#[cfg(feature = "store")]
pub mod index_db;
#[cfg(feature = "store")]
pub mod journal;
#[cfg(feature = "store")]
pub mod lifecycle;
#[cfg(feature = "store")]
pub mod lock;
pub mod manifest;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "store")]
pub mod outcome;
#[cfg(feature = "mcp")]
pub mod probe;
#[cfg(feature = "store")]
pub mod probe_result;
pub mod record;
#[cfg(feature = "store")]
pub mod salt;
#[cfg(feature = "store")]
pub mod sanitize;
pub mod score;
#[cfg(feature = "http")]
pub mod sse;
pub mod time;
#[cfg(feature = "store")]
pub mod verification;

pub use error::{Error, Result};

/// Environment variable naming the store directory; `--home` overrides it.
pub const HOME_ENV: &str = "MCPEVAL_HOME";

/// Environment variable the `mcpeval` front sets to its own path before it
/// runs a subcommand, so a plugin can call back into the suite.
pub const FRONT_ENV: &str = "MCPEVAL";
