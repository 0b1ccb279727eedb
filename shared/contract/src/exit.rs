//! Exit statuses shared by every binary of the suite.
//!
//! Scripts branch on these numbers, so they never change meaning.

/// Success; also "no findings" (explained on stderr).
pub const SUCCESS: u8 = 0;
/// A verification or probe ran and was red.
pub const RED: u8 = 1;
/// Bad flags, unknown subcommand, missing confirmation, bad threshold flag.
pub const USAGE: u8 = 2;
/// Evidence unavailable: the index is missing, corrupt or incomplete.
pub const UNAVAILABLE: u8 = 3;
/// Input rejected (journal record, manifest, expect file, config); nothing changed.
pub const REJECTED: u8 = 4;
/// The server could not be started or reached, or broke the protocol.
pub const TRANSPORT: u8 = 5;
/// Refused to record: conflicting run id, changed binding, newer database.
pub const REFUSED: u8 = 6;
/// An operating-system I/O failure outside the cases above (disk full,
/// permission denied on the store); the value follows sysexits' EX_IOERR.
pub const IO: u8 = 74;
