//! The mcpeval store on one machine (`MCPEVAL_HOME`): its SQLite files
//! (`index.db`, `lifecycle.db`), its salt and the MACs made with it, the
//! journal writer and reader, the sanitizer that turns raw values into
//! shapes and templates, the lifecycle rules and the proof rules.
//!
//! The formats other programs read are the contract's (`mcpeval-shared`);
//! this crate is how the suite's own binaries keep and change the store.

pub mod binding;
pub mod catalog;
pub mod checkpoint;
pub mod credit;
pub mod db;
pub mod dir;
pub mod endpoint;
pub mod envelope;
pub mod evidence;
pub mod fault;
pub mod hash;
pub mod ids;
pub mod index_db;
pub mod journal;
pub mod json_cost;
pub mod lifecycle;
pub mod lock;
pub mod loopback;
pub mod outcome;
pub mod output_schema;
pub mod partial;
pub mod raw;
pub mod record_line;
pub mod salt;
pub mod sanitize;
pub mod signed;
pub mod verification;
pub mod warning;
