//! The stable contract of the mcpeval suite, and a plugin author's guide.
//!
//! mcpeval is a suite of small binaries (`mcpeval-capture`, `mcpeval-index`,
//! `mcpeval-findings`, …) behind a front, `mcpeval SUB ARGS…`, that runs
//! `mcpeval-SUB` from its own directory or from `PATH`. A third party adds a
//! command by putting an executable `mcpeval-foo` on `PATH`: `mcpeval foo`
//! then runs it with two variables set, [`HOME_ENV`] (`MCPEVAL_HOME`, the
//! store directory) and [`FRONT_ENV`] (`MCPEVAL`, the front's own path, to
//! call back into the suite). This crate is what such a command builds on.
//!
//! # What the contract holds
//!
//! The crate depends on serde, serde_json, camino and duct (and the few
//! small crates its records parse with), so a plugin builds in seconds. It
//! has no cargo features.
//!
//! - [`record`]: the journal record, `mcpeval.call/1` (and the legacy
//!   `mcpeval.call/0`), one JSON object a line; [`record::Record::parse`]
//!   reads and checks one line and never echoes it in an error.
//! - [`id`]: typed identifiers, checked once when parsed or deserialized
//!   (`FindingId`, `EventId`, `SessionToken`, `TemplateId`, `RunId`): a bad
//!   id in JSON is an error naming the field, never a value.
//! - [`finding`]: finding kinds, probes, defect classes and lifecycle
//!   states, with their one spelling each ([`spelled!`]).
//! - [`findings`]: the findings JSON (`mcpeval.findings/1`) that `mcpeval
//!   findings --format json` prints; [`probe_result`]: the result
//!   (`mcpeval.probe/1`) that `mcpeval probe` prints; [`history`]: a
//!   finding's lifecycle history, as `findings --history` prints it;
//!   [`readiness`]: the readiness report; [`index_summary`]: what `index
//!   --format json` prints.
//! - [`sibling`]: finding and running another `mcpeval-SUB` the way the
//!   front does.
//! - [`manifest`]: the probe manifest a server's maintainer writes.
//! - [`home`]: the store and the paths inside it; [`config`]: its
//!   `config.json`.
//! - [`file_arg`]: file arguments where `-` is standard input or output,
//!   written whole or not at all ([`atomic_file`]); [`lines`]:
//!   newline-delimited input read with a bound on each line.
//! - [`exit`]: the exit statuses every binary shares; [`error`]: the error
//!   type that carries one; [`escape`] and [`canonical`]: printing untrusted
//!   text safely and canonical JSON; [`score`], [`time`];
//!   [`tool_group`]: the findings of one tool grouped, and told apart by
//!   the part of their argument shapes that differs.
//!
//! The suite's own plumbing (the store's SQLite files and salt, the MCP
//! client, the team database, the command-line entry point) lives in
//! crates of its own, which a plugin does not need.
//!
//! # Reading a journal
//!
//! Journals are `MCPEVAL_HOME/journals/*.jsonl` ([`home::Home::journals`]);
//! the byte order of their names is creation order, a finished file is never
//! rewritten, and each line is one record. Read a file line by line and give
//! each line to [`record::Record::parse`]; read it with
//! [`lines::BoundedLines`] and a limit of [`record::MAX_LINE`], as the
//! suite's readers do, so a huge line is measured rather than held. Skip a
//! name that is not a regular file (a FIFO would block the open). Records
//! hold shapes and salted ids only, never raw argument values or raw error
//! text. Open journals for reading only; the capture appends under
//! `journals/.lock`.
//!
//! # Reading findings
//!
//! `mcpeval findings --format json` prints one [`findings::Findings`]
//! object on one line: `{"schema": "mcpeval.findings/1", "promoted_at":
//! …, "findings": [...]}`. Parse it with [`findings::Findings::parse`], or
//! deserialize the fields you use into your own struct: every type ignores
//! keys it does not know, as the format grows by adding fields. For the same
//! reason the contract's enums that may grow ([`finding::Kind`],
//! [`finding::DefectClass`], [`manifest::Unmet`]) are `#[non_exhaustive]`:
//! match them with a wildcard arm. The journal's enums are exhaustive on
//! purpose: a new variant there is a new schema version, and the suite's
//! own readers (the index, `share`'s re-keying) must handle every one.
//!
//! # Behaving like a member of the suite
//!
//! - Data on stdout, diagnostics on stderr as `mcpeval-foo: error: …`; a
//!   closed pipe ends a reader quietly with status 0.
//! - Exit with the statuses of [`exit`]: 0 success, 1 red, 2 usage, 3
//!   evidence unavailable, 4 input rejected, 5 transport, 6 refused, 74 I/O.
//! - Take `--home DIR` over `MCPEVAL_HOME` over the default store
//!   ([`home::Home::resolve`] does this), and never print an untrusted value
//!   raw ([`escape`]).
//!
//! `examples/plugin/` in the repository is a complete plugin,
//! `mcpeval-hello`, built on this crate alone.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod atomic_file;
pub mod canonical;
pub mod config;
pub mod error;
pub mod escape;
pub mod exit;
pub mod file_arg;
pub mod finding;
pub mod findings;
pub mod history;
pub mod home;
pub mod id;
pub mod index_summary;
pub mod lines;
pub mod manifest;
pub mod probe_result;
pub mod readiness;
pub mod record;
pub mod score;
pub mod sibling;
mod spelling;
pub mod time;
pub mod tool_group;

pub use error::{Error, Result};

/// Environment variable naming the store directory; `--home` overrides it.
pub const HOME_ENV: &str = "MCPEVAL_HOME";

/// Environment variable naming the team database (SPEC §11); `--database`
/// overrides it, and it overrides `database_url` in `config.json`.
pub const DATABASE_ENV: &str = "MCPEVAL_DATABASE_URL";

/// Environment variable in which `mcpeval-verify` hands `mcpeval-probe`
/// the Streamable HTTP endpoint (URL and header values, which may hold
/// tokens), so that they never appear on a command line, where every user
/// of the machine can read them. The probe takes it out of its own
/// environment when it starts, and no server it starts inherits it.
pub const ENDPOINT_ENV: &str = "MCPEVAL_PROBE_ENDPOINT";

/// Environment variable the `mcpeval` front sets to its own path before it
/// runs a subcommand, so a plugin can call back into the suite.
pub const FRONT_ENV: &str = "MCPEVAL";
