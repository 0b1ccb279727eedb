//! Command-line flags of `mcpeval-close`.

use clap::Parser;
pub use cli::Format;
use cli::StoreArgs;

/// Close a finding by hand.
#[derive(Debug, Parser)]
#[command(
    name = "mcpeval-close",
    version,
    about = "Close a finding by hand, with a reason kept in its history",
    long_about = "Close a finding by hand, with a reason kept in its history.\n\n\
This is the only way to close a finding that has no attached probe (no manifest case was ever \
verified against it), for example a defect fixed by removing the tool, or one you decided to \
accept. Any finding can be closed this way; its streak and binding are kept. The reason is \
stored in lifecycle.db's history: at most 240 characters, no control characters. It is prose \
and is not redacted, so never put credentials, private paths or raw payloads in it. A later red \
verification reopens the finding as usual.\n\n\
The finding must be known: promoted in the current catalog, or tracked in lifecycle.db. \
Closing a closed finding changes nothing and records nothing.\n\n\
Prints: FINDING state=closed (was S), or FINDING state=closed (already closed).",
    after_help = cli::footer(
        "Examples:\n  \
mcpeval close --finding finding-0123456789abcdef --reason \"tool removed in 3.0\"\n  \
mcpeval close --finding finding-0123456789abcdef --reason \"accepted: upstream limit\" --format json"
    )
)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,

    /// The finding to close
    #[arg(long, value_name = "ID")]
    pub finding: String,

    /// Why it is closed (at most 240 characters, one line)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,

    /// Output: one line for people, or one JSON object
    #[arg(long, value_enum, default_value_t = Format::Text, value_name = "FORMAT")]
    pub format: Format,
}
