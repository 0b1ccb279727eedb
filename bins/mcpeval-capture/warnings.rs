//! What capture says at exit about what its bounds made it give up
//! ([`crate::limits`]): both transports say it in the same words.

use crate::PROGRAM;
use crate::limits::{
    MAX_DECLARED_BYTES, MAX_OUTPUT_SCHEMA_BYTES, MAX_PENDING_BYTES, MAX_PENDING_CALLS,
    OBSERVE_BUDGET, OBSERVE_LIMIT, PARSE_BUDGET,
};
use crate::session::Bounded;

/// Warns with `message` when `count` is not zero.
pub fn say(count: u64, message: std::fmt::Arguments<'_>) {
    if count > 0 {
        cli::warn(PROGRAM, message);
    }
}

/// Warns of `oversized` messages, `lost` bytes and what sessions gave up.
pub fn bounded(oversized: u64, lost: u64, bounded: Bounded) {
    say(
        oversized,
        format_args!(
            "{oversized} message(s) were longer than the {} MiB capture observes; they were relayed unobserved and their calls not recorded",
            OBSERVE_LIMIT >> 20
        ),
    );
    say(
        bounded.costly,
        format_args!(
            "{} message(s) would have taken more than {} MiB to parse; they were relayed unobserved and their calls not recorded",
            bounded.costly,
            PARSE_BUDGET >> 20
        ),
    );
    say(
        lost,
        format_args!(
            "{lost} byte(s) were relayed while capture's observer was more than {} MiB behind; the messages among them were not observed",
            OBSERVE_BUDGET >> 20
        ),
    );
    say(
        bounded.evicted_calls,
        format_args!(
            "{} unanswered call(s) were recorded as unknown before their session ended, to track at most {MAX_PENDING_CALLS} calls ({} MiB) a session, oldest first",
            bounded.evicted_calls,
            MAX_PENDING_BYTES >> 20
        ),
    );
    say(
        bounded.schemaless + bounded.long_lists,
        format_args!(
            "{} tool(s) were kept without their declared schema and {} tools/list result(s) named more tools than capture keeps, to hold at most {} MiB of schemas a session; their argument keys were judged by the field-name rule",
            bounded.schemaless,
            bounded.long_lists,
            MAX_DECLARED_BYTES >> 20
        ),
    );
    say(
        bounded.unchecked_schemas,
        format_args!(
            "{} declared outputSchema(s) were skipped: too costly to check (over {} nodes with their references expanded, or nested over {} deep), not checkable offline (a reference outside the schema, or one looping back on itself), or past {} MiB of compiled schemas a session; their tools' calls carry no contract",
            bounded.unchecked_schemas,
            store::output_schema::MAX_EXPANDED_NODES,
            store::output_schema::MAX_SCHEMA_DEPTH,
            MAX_OUTPUT_SCHEMA_BYTES >> 20
        ),
    );
    say(
        bounded.unchecked_results,
        format_args!(
            "{} result(s) of a tool with an outputSchema were left unchecked (structuredContent nested too deep to read, or the schema dropped by a later tools/list); they carry no contract",
            bounded.unchecked_results
        ),
    );
}
