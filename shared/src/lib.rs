//! The stable contract of the mcpeval suite.
//!
//! Every `mcpeval-*` binary, including third-party ones, can build on this
//! crate: the store layout and its environment variables, the journal record
//! types, the sanitizer that keeps raw values out of the store, the SQLite
//! plumbing and the exit statuses. Logic that one binary alone needs lives in
//! that binary, never here.

pub mod atomic_file;
pub mod binding;
pub mod canonical;
pub mod catalog;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod connector;
pub mod credit;
pub mod db;
pub mod endpoint;
pub mod envelope;
pub mod error;
pub mod escape;
pub mod evidence;
pub mod exit;
pub mod fault;
pub mod finding;
pub mod hash;
pub mod home;
pub mod id;
pub mod index_db;
pub mod journal;
pub mod lifecycle;
pub mod lock;
pub mod manifest;
pub mod mcp;
pub mod outcome;
pub mod probe;
pub mod probe_result;
pub mod record;
pub mod salt;
pub mod sanitize;
pub mod score;
#[cfg(feature = "run")]
pub mod sibling;
mod spelling;
pub mod sse;
pub mod time;
pub mod verification;

pub use error::{Error, Result};

/// Environment variable naming the store directory; `--home` overrides it.
pub const HOME_ENV: &str = "MCPEVAL_HOME";

/// Environment variable the `mcpeval` front sets to its own path before it
/// runs a subcommand, so a plugin can call back into the suite.
pub const FRONT_ENV: &str = "MCPEVAL";
